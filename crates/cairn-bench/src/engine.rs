//! One interface over the engines a benchmark can drive: cairn always, RocksDB (Debian's
//! librocksdb 7.8.3 through the `rocksdb` crate) and fjall behind cargo features. Every adapter
//! maps the same db_bench-style flags ([`EngineArgs`]) onto its closest options, so a benchmark
//! changes engines without changing its experiment.

use std::path::Path;

#[cfg(feature = "fjall")]
mod fjall_engine;
#[cfg(feature = "fjall")]
mod fjall_txn;
#[cfg(feature = "rocksdb")]
mod rocks;
#[cfg(feature = "rocksdb")]
mod rocks_txn;

/// A transaction's decision: given the values read, the writes (index of the key, value).
pub type Update<'a> = dyn FnMut(&[Option<Vec<u8>>]) -> Vec<(usize, Vec<u8>)> + 'a;

/// Errors from any engine, as text: benchmarks only report them.
pub type EngineError = Box<dyn std::error::Error + Send + Sync>;
/// Result of an engine call.
pub type EResult<T> = Result<T, EngineError>;

/// Engine options shared by the runners, with db_bench's flag names and defaults.
#[derive(clap::Args, Debug, Clone)]
#[command(rename_all = "snake_case")]
pub struct EngineArgs {
    /// cairn | rocksdb | fjall (the last two need the cargo features of the same name).
    #[arg(long, default_value = "cairn")]
    pub engine: String,
    /// Bloom bits per key (db_bench's default −1: no filter; ≤ 0 means none).
    #[arg(long, default_value_t = -1.0, allow_hyphen_values = true)]
    pub bloom_bits: f64,
    /// Block cache bytes.
    #[arg(long, default_value_t = 8 << 20)]
    pub cache_size: usize,
    /// Memtable bytes per tree.
    #[arg(long, default_value_t = 64 << 20)]
    pub write_buffer_size: usize,
    /// Read table files with O_DIRECT (not supported by fjall: refused).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_parser = crate::flag_bool)]
    pub use_direct_reads: bool,
    /// none | lz4 | zstd
    #[arg(long, default_value = "none")]
    pub compression_type: String,
    /// Target data-block size in bytes.
    #[arg(long, default_value_t = 4096)]
    pub block_size: usize,
    /// Capacity of L1 in bytes.
    #[arg(long, default_value_t = 256 << 20)]
    pub max_bytes_for_level_base: u64,
    /// Size ratio T between levels.
    #[arg(long, default_value_t = 10.0)]
    pub max_bytes_for_level_multiplier: f64,
    /// L0 files that trigger a compaction.
    #[arg(long, default_value_t = 4)]
    pub level0_file_num_compaction_trigger: usize,
    /// Target size of compaction outputs in bytes.
    #[arg(long, default_value_t = 64 << 20)]
    pub target_file_size_base: u64,
    /// Write memory over all memtables (RocksDB's `db_write_buffer_size`; default 2 ×
    /// write_buffer_size, db_bench's max_write_buffer_number = 2).
    #[arg(long)]
    pub db_write_buffer_size: Option<usize>,
    /// One memory budget for write memory, block cache (with index and filter blocks) and
    /// filter memory (cairn: `memory_budget`, overriding --cache_size, --write_buffer_size and
    /// --db_write_buffer_size; RocksDB: its static split, 2 × --write_buffer_size of write
    /// buffers and the rest block cache with index and filter blocks charged to it).
    #[arg(long)]
    pub memory_budget: Option<usize>,
    /// Write memory's starting share of --memory_budget (cairn only; default its own, 0.25).
    #[arg(long)]
    pub memory_write_share: Option<f64>,
    /// Run cairn's memory tuner (needs --memory_budget).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_parser = crate::flag_bool)]
    pub memory_tuner: bool,
    /// The tuner's timer cycle in milliseconds (cairn only; default its own, 10 000).
    #[arg(long)]
    pub memory_tuner_period_ms: Option<u64>,
    /// The least bytes any region keeps under the tuner (cairn only; default 32 MiB).
    #[arg(long)]
    pub memory_tuner_floor: Option<usize>,
    /// Whether the tuner sizes the key-value cache (cairn only; default its own, true; false:
    /// it keeps the size --row_cache_size starts it at).
    #[arg(long, value_parser = crate::flag_bool)]
    pub memory_tuner_kv_cache: Option<bool>,
    /// The tuner's write weight ω (cairn only; default 1).
    #[arg(long)]
    pub memory_tuner_write_weight: Option<f64>,
    /// Tune filter memory as a third region (cairn's elastic policies; default 1).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_parser = crate::flag_bool)]
    pub memory_tuner_filters: bool,
    /// Filter memory's starting share of --memory_budget (cairn's elastic policies; default 0.1).
    #[arg(long)]
    pub memory_filter_share: Option<f64>,
    /// Simulated bytes of the ghost cache (cairn only; default 0, or 128 MiB with the tuner).
    #[arg(long)]
    pub ghost_cache_size: Option<usize>,
    /// Bytes of the row cache (RocksDB's flag, its `row_cache`; cairn: the key-value cache,
    /// under --memory_budget its starting share). Under --memory_budget both engines take it
    /// from the block cache's part. Default: each engine's own (cairn a tenth of a budget,
    /// none without one; RocksDB none).
    #[arg(long)]
    pub row_cache_size: Option<usize>,
    /// WAL bytes after which the oldest data is flushed (RocksDB's `max_total_wal_size`; the
    /// tuner's log cycle; default each engine's own).
    #[arg(long)]
    pub max_total_wal_size: Option<u64>,
    /// max-memory | min-lsn | optimal: which tree a memory-triggered flush picks (cairn only).
    #[arg(long, default_value = "max-memory")]
    pub flush_policy: String,
    /// leveling | garnering (cairn only).
    #[arg(long, default_value = "leveling")]
    pub merge_policy: String,
    /// none | uint64add: the merge operator mergerandom's operands go through (RocksDB's flag;
    /// RocksDB gets the same 8-byte little-endian sum as an associative operator).
    #[arg(long, default_value = "none")]
    pub merge_operator: String,
    /// fixed | write-memory: level capacities from --max_bytes_for_level_base, or anchored at
    /// the deepest level with L1 added and removed as write memory moves (cairn only).
    #[arg(long, default_value = "fixed")]
    pub level_targets: String,
    /// monolithic | partitioned: memtables flushed whole, or memory levels of runs flushed a run
    /// at a time into grouped L0 (Luo & Carey §4.1; cairn only).
    #[arg(long, default_value = "monolithic")]
    pub memory_component: String,
    /// Size ratio between memory levels of a partitioned component (cairn only; default 10).
    #[arg(long)]
    pub memory_size_ratio: Option<usize>,
    /// Garnering's capacity factor c (cairn only).
    #[arg(long, default_value_t = 0.8)]
    pub garnering_c: f64,
    /// Bits-per-key allocation across files: uniform | monkey | mnemosyne | optimal (cairn
    /// only; optimal is an oracle for experiments).
    #[arg(long, default_value = "uniform")]
    pub bpk_policy: String,
    /// Probes in Merlin's per-file window (cairn only; default its own).
    #[arg(long)]
    pub merlin_window: Option<usize>,
    /// Data bytes per filter segment (cairn only; default its own, 4 MiB).
    #[arg(long)]
    pub segment_size: Option<u64>,
    /// Layout of point-filter units: standard | cache-local (cairn only; default its own).
    #[arg(long)]
    pub filter_unit_format: Option<String>,
    /// Bytes of loaded filter units for the elastic policies (cairn only; default: bloom_bits
    /// per live key).
    #[arg(long)]
    pub filter_memory: Option<usize>,
    /// Filter units per segment of the elastic policies (cairn only; default 6).
    #[arg(long)]
    pub elastic_units: Option<u32>,
    /// Bits per key of each elastic unit (cairn only; default 4).
    #[arg(long)]
    pub elastic_unit_bpk: Option<f64>,
    /// Gets after which an unaccessed segment may lose units (cairn only; default: the number
    /// of live segments).
    #[arg(long)]
    pub elastic_life_time: Option<u64>,
    /// Charge index and filter blocks to the block cache (RocksDB: cache them there with high
    /// priority and L0's pinned; cairn: its pinned index blocks reserve cache space and filter
    /// units are cached at high priority). So both engines spend the same total memory.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_parser = crate::flag_bool)]
    pub cache_index_and_filter_blocks: bool,
    /// Data-block index type (RocksDB's flag): 0 binary search, 1 binary search and hash index
    /// (cairn; default: each engine's own — cairn writes hash indexes, RocksDB does not).
    #[arg(long)]
    pub data_block_index_type: Option<u8>,
    /// Entries between restart points in data blocks (RocksDB's flag; default: each engine's
    /// own, 16 on both).
    #[arg(long)]
    pub block_restart_interval: Option<usize>,
    /// Entries between restart points in index blocks (RocksDB's flag; default: each
    /// engine's own — cairn 8, RocksDB 1).
    #[arg(long)]
    pub index_block_restart_interval: Option<usize>,
    /// cairn: cached blocks in transparent huge pages from a 256 MiB cache (default: the
    /// engine's, true).
    #[arg(long)]
    pub cache_huge_pages: Option<bool>,
    /// Background compaction threads (default: each engine's own).
    #[arg(long)]
    pub max_background_compactions: Option<usize>,
    /// Key-range pieces of a large L0 → L1 compaction (default: each engine's own).
    #[arg(long)]
    pub subcompactions: Option<usize>,
    /// The compaction threads' nice value, 0–19 (cairn only; our flag).
    #[arg(long)]
    pub compaction_nice: Option<usize>,
    /// L0 files at which writes are delayed (default: each engine's own).
    #[arg(long)]
    pub level0_slowdown_writes_trigger: Option<usize>,
    /// L0 files at which writes stop (default: each engine's own).
    #[arg(long)]
    pub level0_stop_writes_trigger: Option<usize>,
    /// The rate delayed writes start at, bytes per second (cairn only; default: its own).
    #[arg(long)]
    pub delayed_write_rate: Option<u64>,
    /// Range-filter bits per key (cairn only; 0: none).
    #[arg(long, default_value_t = 0.0)]
    pub range_filter_bits_per_key: f64,
    /// Range-filter kind: rosetta | grafite (cairn only; default its own).
    #[arg(long)]
    pub range_filter_kind: Option<String>,
    /// Range-filter bits per table by the empty range reads it sees (cairn only; default its
    /// own, true; false: every table gets `--range_filter_bits_per_key`).
    #[arg(long, value_parser = crate::flag_bool)]
    pub range_filter_by_workload: Option<bool>,
    /// Bytes per second that building range filters for tables already written may read
    /// (cairn only; 0: none built; default its own).
    #[arg(long)]
    pub range_filter_build_rate: Option<u64>,
    /// The most bits per key, on average, range filters grow to where empty range reads pay
    /// more than cache (cairn only; default its own; `--range_filter_bits_per_key`: none).
    #[arg(long)]
    pub range_filter_max_bits_per_key: Option<f64>,
    /// Milliseconds without a write after which L0 files below the trigger are merged into L1
    /// (cairn only; 0: never; default its own).
    #[arg(long)]
    pub l0_drain_ms: Option<u64>,
    /// Transactions (the tx* benchmarks): optimistic | pessimistic. RocksDB opens an
    /// OptimisticTransactionDB or a TransactionDB, fjall its optimistic transactional database
    /// (optimistic only); cairn runs `Db::transaction_with` (our flag).
    #[arg(long, default_value = "none")]
    pub txn: String,
    /// cairn's optimistic isolation: serializable | snapshot (our flag).
    #[arg(long, default_value = "serializable")]
    pub txn_isolation: String,
    /// Collect the engine's own statistics (RocksDB: `statistics`; cairn always counts).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_parser = crate::flag_bool)]
    pub statistics: bool,
    /// cairn's starting point: `bench` (db_bench's defaults for every flag not given: no
    /// filters, an 8 MiB cache — for side-by-side runs) or `engine` (`Options::default()`,
    /// what a user of the library gets, with only the flags given applied).
    #[arg(long, default_value = "bench")]
    pub defaults: String,
    /// glibc malloc's mmap threshold cairn fixes at open (cairn only; 0: leave the allocator
    /// alone; default its own, 128 KiB).
    #[arg(long)]
    pub malloc_mmap_threshold: Option<usize>,
    /// The flags given on the command line (set by the runner from clap's matches).
    #[arg(skip)]
    pub given: std::collections::BTreeSet<String>,
}

impl EngineArgs {
    /// Whether a cairn-only filter or memory-component flag is set.
    pub fn cairn_filter_flags(&self) -> bool {
        self.segment_size.is_some()
            || self.filter_unit_format.is_some()
            || self.filter_memory.is_some()
            || self.elastic_units.is_some()
            || self.elastic_unit_bpk.is_some()
            || self.elastic_life_time.is_some()
            || self.memory_component != "monolithic"
            || self.memory_size_ratio.is_some()
    }

    /// Write memory for all memtables.
    pub fn memory(&self) -> usize {
        self.db_write_buffer_size.unwrap_or(2 * self.write_buffer_size)
    }
}

/// Blocks read from storage (cairn: its I/O counters; RocksDB: block-cache misses, which are
/// storage reads when every block goes through the cache).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BlockReads {
    /// Data blocks.
    pub data: u64,
    /// Filter blocks (cairn: filter units, elastic loads included).
    pub filter: u64,
    /// Index blocks.
    pub index: u64,
}

impl BlockReads {
    /// The reads between `before` and this count.
    pub fn since(self, before: BlockReads) -> BlockReads {
        BlockReads {
            data: self.data.saturating_sub(before.data),
            filter: self.filter.saturating_sub(before.filter),
            index: self.index.saturating_sub(before.index),
        }
    }
}

/// What an engine's range reads did so far (fields an engine does not count stay 0; the block
/// counts are the engine's, scans or not: take them over a phase of range reads only).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScanCounters {
    /// Iterators positioned (cairn: ends of range reads; RocksDB: `Seek`/`SeekForPrev` calls).
    pub seeks: u64,
    /// Entries stepped over (cairn: returned; RocksDB: `Next`/`Prev` calls).
    pub entries: u64,
    /// Sorted runs merged, summed over the seeks: memtables, L0 runs, deeper levels (cairn).
    pub memtables: u64,
    /// L0 runs merged (cairn).
    pub l0_runs: u64,
    /// Levels below L0 merged (cairn).
    pub levels: u64,
    /// Tables reached (cairn).
    pub tables: u64,
    /// Data blocks read from storage (readahead's blocks included) and served by the cache.
    pub data_reads: u64,
    /// Data blocks the block cache served.
    pub data_hits: u64,
    /// Index blocks read from storage.
    pub index_reads: u64,
    /// Index blocks the block cache served.
    pub index_hits: u64,
    /// Readahead chunks read (cairn).
    pub readahead_chunks: u64,
    /// Bytes read ahead (cairn).
    pub readahead_bytes: u64,
    /// Bytes read ahead and never served (cairn; RocksDB: `rocksdb.prefetched.bytes.discarded`).
    pub readahead_wasted: u64,
}

impl ScanCounters {
    /// The counts between `before` and this.
    pub fn since(self, b: ScanCounters) -> ScanCounters {
        let d = |x: u64, y: u64| x.saturating_sub(y);
        ScanCounters {
            seeks: d(self.seeks, b.seeks),
            entries: d(self.entries, b.entries),
            memtables: d(self.memtables, b.memtables),
            l0_runs: d(self.l0_runs, b.l0_runs),
            levels: d(self.levels, b.levels),
            tables: d(self.tables, b.tables),
            data_reads: d(self.data_reads, b.data_reads),
            data_hits: d(self.data_hits, b.data_hits),
            index_reads: d(self.index_reads, b.index_reads),
            index_hits: d(self.index_hits, b.index_hits),
            readahead_chunks: d(self.readahead_chunks, b.readahead_chunks),
            readahead_bytes: d(self.readahead_bytes, b.readahead_bytes),
            readahead_wasted: d(self.readahead_wasted, b.readahead_wasted),
        }
    }
}

/// Where an engine's read memory goes, at one moment: the block cache's contents by kind, what
/// it holds outside the cache, and the tables' index and filter bytes (all in bytes).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CacheAccounting {
    /// Block cache capacity.
    pub capacity: u64,
    /// Data blocks in the cache.
    pub data: u64,
    /// Index blocks in the cache (cairn: the cached index blocks plus the capacity reserved for
    /// what readers pin beside them: fences, properties).
    pub index: u64,
    /// Filter blocks or units in the cache.
    pub filter: u64,
    /// Everything else the cache holds or charges.
    pub other: u64,
    /// Index bytes of every live table (cairn: the index blocks of its open readers).
    pub tables_index: u64,
    /// Filter bytes of every live table.
    pub tables_filter: u64,
    /// Bytes of every live table.
    pub tables_bytes: u64,
    /// Data blocks of every live table (0: not known).
    pub tables_data_blocks: u64,
    /// Files per level (L0 first): the runs a lookup may probe.
    #[serde(default)]
    pub files_per_level: Vec<u64>,
    /// Cache hits and misses so far, by kind: data, index, filter.
    pub hits: [u64; 3],
    /// Misses (blocks read from storage through the cache).
    pub misses: [u64; 3],
}

/// Files per level, L0 first, without the empty levels below the deepest one.
pub fn files_per_level(files: impl IntoIterator<Item = u64>) -> Vec<u64> {
    let mut v: Vec<u64> = files.into_iter().collect();
    while v.len() > 1 && v.last() == Some(&0) {
        v.pop();
    }
    v
}

impl CacheAccounting {
    /// Hits in % of the lookups of kind `i` (0 data, 1 index, 2 filter).
    pub fn hit_rate(&self, i: usize) -> f64 {
        let all = self.hits[i] + self.misses[i];
        if all == 0 {
            0.0
        } else {
            100.0 * self.hits[i] as f64 / all as f64
        }
    }

    /// One line for people.
    pub fn line(&self) -> String {
        let mb = |b: u64| b as f64 / (1 << 20) as f64;
        format!(
            "cache {:.2} MiB: data {:.2}, index {:.2}, filter {:.2}, other {:.2}; tables: index {:.2} MiB, \
             filters {:.2} MiB, {} data blocks, files per level {:?}; hit rates data {:.1}%, index {:.1}%, filter {:.1}%",
            mb(self.capacity),
            mb(self.data),
            mb(self.index),
            mb(self.filter),
            mb(self.other),
            mb(self.tables_index),
            mb(self.tables_filter),
            self.tables_data_blocks,
            self.files_per_level,
            self.hit_rate(0),
            self.hit_rate(1),
            self.hit_rate(2)
        )
    }
}

/// An engine's compaction debt at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Debt {
    /// Files in level 0.
    pub l0_files: u64,
    /// The engine's estimate of bytes compaction still has to move.
    pub pending_compaction_bytes: u64,
    /// Microseconds writers have spent stopped (since open; cairn only).
    pub stall_micros: Option<u64>,
    /// Microseconds writers have spent delayed (since open; cairn only).
    pub delay_micros: Option<u64>,
}

/// Where `Engine::write_table` takes its entries: one call per entry.
pub type TableSink<'a> = dyn FnMut(&[u8], &[u8]) -> EResult<()> + 'a;

/// A key-value engine under benchmark. Values are only measured, so `get` returns a length.
pub trait Engine: Send + Sync {
    /// The adapter's name.
    fn name(&self) -> &'static str;
    /// Writes one key.
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> EResult<()>;
    /// Writes `entries` as one atomic batch (db_bench's `--batch_size`).
    fn put_batch(&self, _entries: &[(Vec<u8>, Vec<u8>)], _sync: bool) -> EResult<()> {
        Err(format!("--batch_size: the {} adapter writes one key at a time", self.name()).into())
    }
    /// Deletes one key.
    fn delete(&self, key: &[u8], sync: bool) -> EResult<()>;
    /// Writes an external table at `path` (new) with the entries `fill` hands to its sink, in
    /// increasing key order, built as the engine builds its own tables (RocksDB's
    /// `SstFileWriter`, cairn's `TableWriter`).
    fn write_table(&self, _path: &Path, _fill: &mut dyn FnMut(&mut TableSink<'_>) -> EResult<()>) -> EResult<()> {
        Err(format!("{} has no external tables here", self.name()).into())
    }
    /// Adds the external tables at `paths` to the database in one ingestion, moved (linked)
    /// or copied.
    fn ingest(&self, _paths: &[std::path::PathBuf], _move_files: bool) -> EResult<()> {
        Err(format!("{} has no ingestion here", self.name()).into())
    }
    /// The value of `key` (a copy; for read-modify-write benchmarks).
    fn get_value(&self, _key: &[u8]) -> EResult<Option<Vec<u8>>> {
        Err(format!("{} does not copy values out here", self.name()).into())
    }
    /// Writes a checkpoint into `dir` (new); the bytes it copied when the engine says.
    fn checkpoint(&self, _dir: &Path) -> EResult<Option<u64>> {
        Err(format!("{} has no checkpoint here", self.name()).into())
    }
    /// Backs the database up into `dir` (incremental when it holds earlier backups); the
    /// bytes it copied when the engine says.
    fn backup(&self, _dir: &Path) -> EResult<Option<u64>> {
        Err(format!("{} has no backup here", self.name()).into())
    }
    /// Restores the newest backup in `dir` into the new directory `to`.
    fn restore(&self, _dir: &Path, _to: &Path) -> EResult<()> {
        Err(format!("{} has no restore here", self.name()).into())
    }
    /// Merges an operand into `key` (the engine's merge operator combines it).
    fn merge(&self, _key: &[u8], _operand: &[u8]) -> EResult<()> {
        Err(format!("{} has no merge operator here", self.name()).into())
    }
    /// Deletes every key `lo ≤ key < hi` with one range tombstone.
    fn delete_range(&self, _lo: &[u8], _hi: &[u8]) -> EResult<()> {
        Err(format!("{} has no range delete", self.name()).into())
    }
    /// One read-modify-write transaction (`--txn`): reads `keys` for update, hands their
    /// values to `update`, writes what it returns (index into `keys`, value), commits. `Ok(false)`:
    /// the engine refused it (a conflict, a deadlock, a lock timeout) and wrote nothing.
    fn transact(&self, _keys: &[&[u8]], _update: &mut Update<'_>) -> EResult<bool> {
        Err(format!("{} runs no transactions here (--txn)", self.name()).into())
    }
    /// Reads `keys` at one point in time: in a read-only transaction (`transaction`) or on a
    /// snapshot; the number found.
    fn read_at_once(&self, _keys: &[&[u8]], _transaction: bool) -> EResult<usize> {
        Err(format!("{} has no snapshot reads here", self.name()).into())
    }
    /// Looks one key up: the value's length if present.
    fn get(&self, key: &[u8]) -> EResult<Option<usize>>;
    /// Looks `keys` up in one call (db_bench's multireadrandom): each value's length if
    /// present, in the keys' order. A loop of [`get`](Self::get) unless the engine batches.
    fn multi_get(&self, keys: &[Vec<u8>]) -> EResult<Vec<Option<usize>>> {
        keys.iter().map(|k| self.get(k)).collect()
    }
    /// Visits up to `limit` entries from `start` (the first key ≥ start; all keys when None)
    /// forward or backward, returning (entries, bytes).
    fn scan(&self, start: Option<&[u8]>, limit: u64, reverse: bool) -> EResult<(u64, u64)>;
    /// Visits every entry with `lo ≤ key < hi`, returning (entries, bytes).
    fn range(&self, lo: &[u8], hi: &[u8]) -> EResult<(u64, u64)>;
    /// Flushes memtables to tables.
    fn flush(&self) -> EResult<()>;
    /// Compacts the whole key space.
    fn compact(&self) -> EResult<()>;
    /// Waits until no flush or compaction is pending.
    fn wait_for_background(&self) -> EResult<()>;
    /// The engine's statistics text.
    fn stats_text(&self) -> String;
    /// Point lookups' filter false positives so far (each reads a data block the table does not
    /// hold the key in), when the engine counts them (RocksDB with `--statistics=1`).
    fn filter_false_positives(&self) -> Option<u64> {
        None
    }
    /// Blocks read from storage so far by kind (`None`: the engine does not count them).
    fn block_reads(&self) -> Option<BlockReads> {
        None
    }
    /// What its range reads did so far (`None`: the engine does not count them).
    fn scan_counters(&self) -> Option<ScanCounters> {
        None
    }
    /// L0 files and pending compaction bytes now (`None`: the engine does not say).
    fn debt(&self) -> Option<Debt> {
        None
    }
    /// Where its read memory goes (engines that report it).
    fn cache_accounting(&self) -> Option<CacheAccounting> {
        None
    }
    /// The cairn database, for cairn's own metrics.
    fn as_cairn(&self) -> Option<&cairn::Db> {
        None
    }
    /// Makes `n` trees available to [`put_in`](Self::put_in) and [`get_in`](Self::get_in)
    /// (tree 0 is the default one).
    fn open_trees(&self, n: usize) -> EResult<()> {
        if n <= 1 {
            Ok(())
        } else {
            Err(format!("--num_trees={n}: the {} adapter has one tree", self.name()).into())
        }
    }
    /// [`put`](Self::put) into tree `tree`.
    fn put_in(&self, tree: usize, key: &[u8], value: &[u8], sync: bool) -> EResult<()> {
        match tree {
            0 => self.put(key, value, sync),
            _ => Err("multiple trees are not open".into()),
        }
    }
    /// [`get`](Self::get) from tree `tree`.
    fn get_in(&self, tree: usize, key: &[u8]) -> EResult<Option<usize>> {
        match tree {
            0 => self.get(key),
            _ => Err("multiple trees are not open".into()),
        }
    }
    /// A forward [`scan`](Self::scan) of tree `tree`.
    fn scan_in(&self, tree: usize, start: &[u8], limit: u64) -> EResult<(u64, u64)> {
        match tree {
            0 => self.scan(Some(start), limit, false),
            _ => Err("multiple trees are not open".into()),
        }
    }
}

/// Counts up to `limit` entries, and their key + value bytes, over a borrowing step (each
/// entry's key and value lengths while the engine lends them): the body of the adapters'
/// `scan`; scans copy no entry out, in every engine that can lend them.
pub(crate) fn count_steps(
    mut step: impl FnMut() -> Option<EResult<(usize, usize)>>,
    limit: u64,
) -> EResult<(u64, u64)> {
    let (mut n, mut bytes) = (0u64, 0u64);
    while n < limit {
        let Some(e) = step() else { break };
        let (k, v) = e?;
        n += 1;
        bytes += (k + v) as u64;
    }
    Ok((n, bytes))
}

/// Opens the engine `args.engine` names at `dir`.
pub fn open(args: &EngineArgs, dir: &Path) -> EResult<Box<dyn Engine>> {
    match args.engine.as_str() {
        "cairn" => Ok(Box::new(CairnEngine::open(args, dir)?)),
        #[cfg(feature = "rocksdb")]
        "rocksdb" if args.txn != "none" => Ok(Box::new(rocks_txn::RocksTxEngine::open(args, dir)?)),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Ok(Box::new(rocks::RocksEngine::open(args, dir)?)),
        #[cfg(feature = "fjall")]
        "fjall" if args.txn != "none" => Ok(Box::new(fjall_txn::FjallTxEngine::open(args, dir)?)),
        #[cfg(feature = "fjall")]
        "fjall" => Ok(Box::new(fjall_engine::FjallEngine::open(args, dir)?)),
        name if name == "rocksdb" || name == "fjall" => Err(format!(
            "--engine={0}: this binary was built without the `{0}` feature (cargo build --features {0}; \
             for rocksdb run scripts/setup-rocksdb.sh first)",
            args.engine
        )
        .into()),
        other => Err(format!("--engine={other}: expected cairn, rocksdb or fjall").into()),
    }
}

/// cairn through its public API.
#[derive(Debug)]
pub struct CairnEngine {
    db: cairn::Db,
    /// Trees `t1..` of a multi-tree benchmark (tree 0 is the default tree).
    trees: std::sync::OnceLock<Vec<cairn::Tree>>,
    /// What `--txn` and `--txn_isolation` ask of a transaction.
    txn: cairn::TransactionOptions,
}

impl CairnEngine {
    /// Writes `b`, synced or not.
    fn write(&self, b: cairn::WriteBatch, sync: bool) -> EResult<()> {
        Ok(self.db.write(
            b,
            &cairn::WriteOptions {
                sync,
                ..Default::default()
            },
        )?)
    }

    /// Opens cairn with the flags mapped onto [`cairn::Options`] ([`cairn_options`]).
    pub fn open(a: &EngineArgs, dir: &Path) -> EResult<Self> {
        let txn = cairn::TransactionOptions {
            concurrency: match a.txn.as_str() {
                "none" | "optimistic" => cairn::Concurrency::Optimistic,
                "pessimistic" => cairn::Concurrency::Pessimistic,
                other => return Err(format!("--txn={other}: expected none, optimistic or pessimistic").into()),
            },
            isolation: match a.txn_isolation.as_str() {
                "serializable" => cairn::Isolation::Serializable,
                "snapshot" => cairn::Isolation::Snapshot,
                other => return Err(format!("--txn_isolation={other}: expected serializable or snapshot").into()),
            },
            ..Default::default()
        };
        Ok(CairnEngine {
            db: cairn::Db::open(dir, cairn_options(a)?)?,
            trees: std::sync::OnceLock::new(),
            txn,
        })
    }
}

/// The flags as cairn options. `--defaults=bench`: every flag at db_bench's default unless
/// given (no filters, an 8 MiB cache), as side-by-side runs with RocksDB's db_bench need.
/// `--defaults=engine`: `Options::default()` with only the flags given applied — what a user
/// of the library gets. Either way `--memory_budget` sizes the regions itself, so the region
/// flags (--cache_size, --write_buffer_size, --db_write_buffer_size) apply only without it.
pub fn cairn_options(a: &EngineArgs) -> EResult<cairn::Options> {
    let engine_defaults = match a.defaults.as_str() {
        "bench" => false,
        "engine" => true,
        other => return Err(format!("--defaults={other}: expected bench or engine").into()),
    };
    // A flag with a db_bench default applies when given, or always under bench defaults.
    let take = |flag: &str| !engine_defaults || a.given.contains(flag);
    // Settings by name (as OPTIONS spells them), applied together at the end: an unknown
    // value names its valid choices, and a region size beside a budget is refused.
    let mut set: Vec<(&str, &str, String)> = Vec::new();
    // Bench defaults name every setting: a reopen (--use_existing_db) uses exactly them.
    set.push(("defaults", "keep_stored", engine_defaults.to_string()));
    // An elastic policy given its filter memory sizes its units by it: bits per key would
    // have no effect (and be refused), so bench defaults leave it out unless it was given.
    let sized_by_memory = a.bpk_policy.contains("elastic") && a.filter_memory.is_some();
    if take("bloom_bits") && (a.given.contains("bloom_bits") || !sized_by_memory) {
        set.push(("bloom_bits", "filters.bits_per_key", a.bloom_bits.max(0.0).to_string()));
    }
    for (flag, option, value) in [
        ("bpk_policy", "filters.policy", &a.bpk_policy),
        ("flush_policy", "memtable.flush_policy", &a.flush_policy),
        ("memory_component", "memtable.component", &a.memory_component),
        ("level_targets", "compaction.level_targets", &a.level_targets),
        ("compression_type", "table.compression", &a.compression_type),
        ("merge_operator", "merge.operator", &a.merge_operator),
    ] {
        if take(flag) {
            set.push((flag, option, value.clone()));
        }
    }
    if take("merge_policy") || a.given.contains("garnering_c") {
        let policy = match a.merge_policy.as_str() {
            "garnering" => format!("garnering:{}", a.garnering_c),
            other => other.to_string(),
        };
        set.push(("merge_policy", "compaction.merge_policy", policy));
    }
    // Flags with a db_bench default, mapped as they are.
    macro_rules! taken {
        ($($flag:ident => $option:literal),* $(,)?) => {$(
            if take(stringify!($flag)) {
                set.push((stringify!($flag), $option, a.$flag.to_string()));
            }
        )*};
    }
    taken!(
        use_direct_reads => "files.use_direct_reads",
        block_size => "table.block_size",
        max_bytes_for_level_multiplier => "compaction.size_ratio",
        level0_file_num_compaction_trigger => "compaction.l0_trigger",
        target_file_size_base => "compaction.target_file_size",
        range_filter_bits_per_key => "range_filter.bits_per_key",
    );
    if take("max_bytes_for_level_base") && a.level_targets == "fixed" {
        set.push((
            "max_bytes_for_level_base",
            "compaction.max_bytes_for_level_base",
            a.max_bytes_for_level_base.to_string(),
        ));
    }
    // db_bench has no budget: bench defaults size the regions from its flags. Under engine
    // defaults a region flag given without --memory_budget selects fixed sizes, as it does
    // for `Options::set` (and with --memory_budget is refused).
    let budget = match a.memory_budget {
        Some(b) => Some(b),
        None if !engine_defaults => Some(0),
        None => None,
    };
    if let Some(b) = budget {
        set.push(("memory_budget", "memory.budget", b.to_string()));
    }
    if budget != Some(0) && take("memory_tuner") {
        set.push(("memory_tuner", "memory.tuner", a.memory_tuner.to_string()));
    }
    // Under bench defaults the region flags always have values, which a budget replaces.
    if engine_defaults || budget == Some(0) {
        if take("cache_size") {
            set.push(("cache_size", "memory.block_cache", a.cache_size.to_string()));
        }
        if take("write_buffer_size") {
            set.push(("write_buffer_size", "memtable.size", a.write_buffer_size.to_string()));
        }
        if take("write_buffer_size") || a.db_write_buffer_size.is_some() {
            set.push(("db_write_buffer_size", "memory.write_memory", a.memory().to_string()));
        }
        if take("cache_index_and_filter_blocks") {
            set.push((
                "cache_index_and_filter_blocks",
                "cache.index_in_block_cache",
                a.cache_index_and_filter_blocks.to_string(),
            ));
        }
    }
    if a.given.contains("memory_tuner_filters") {
        set.push((
            "memory_tuner_filters",
            "memory.tuner_filters",
            a.memory_tuner_filters.to_string(),
        ));
    }
    // Flags without a db_bench default: applied when given.
    macro_rules! given {
        ($($flag:ident => $option:literal),* $(,)?) => {$(
            if let Some(v) = &a.$flag {
                set.push((stringify!($flag), $option, v.to_string()));
            }
        )*};
    }
    given!(
        max_background_compactions => "background.compaction_threads",
        subcompactions => "background.max_subcompactions",
        compaction_nice => "background.compaction_nice",
        level0_slowdown_writes_trigger => "write_stalls.l0_slowdown_trigger",
        level0_stop_writes_trigger => "write_stalls.l0_stop_trigger",
        delayed_write_rate => "write_stalls.delayed_write_rate",
        merlin_window => "filters.merlin_window",
        segment_size => "filters.segment_size",
        filter_unit_format => "filters.unit_format",
        range_filter_kind => "range_filter.kind",
        range_filter_by_workload => "range_filter.by_workload",
        range_filter_build_rate => "range_filter.build_rate",
        range_filter_max_bits_per_key => "range_filter.max_bits_per_key",
        l0_drain_ms => "compaction.l0_drain_ms",
        filter_memory => "memory.filter_memory",
        elastic_units => "filters.elastic_units",
        elastic_unit_bpk => "filters.elastic_unit_bits_per_key",
        elastic_life_time => "filters.elastic_life_time",
        memory_size_ratio => "memtable.partitioned_size_ratio",
        memory_write_share => "memory.write_share",
        memory_tuner_period_ms => "memory.tuner_period_ms",
        memory_tuner_floor => "memory.tuner_floor",
        memory_tuner_kv_cache => "memory.tuner_kv_cache",
        memory_tuner_write_weight => "memory.tuner_write_weight",
        memory_filter_share => "memory.filter_share",
        ghost_cache_size => "cache.ghost_cache",
        max_total_wal_size => "wal.max_size",
        malloc_mmap_threshold => "malloc_mmap_threshold",
        block_restart_interval => "table.restart_interval",
        index_block_restart_interval => "table.index_restart_interval",
        cache_huge_pages => "cache.huge_pages",
    );
    if let Some(n) = a.row_cache_size {
        match budget {
            Some(b) if b > 0 => set.push((
                "row_cache_size",
                "memory.kv_cache_share",
                (n as f64 / b as f64).to_string(),
            )),
            _ => set.push(("row_cache_size", "memory.kv_cache", n.to_string())),
        }
    }
    if let Some(t) = a.data_block_index_type {
        set.push(("data_block_index_type", "table.hash_index", (t == 1).to_string()));
    }
    let mut o = cairn::Options::default();
    o.set_all(set.iter().map(|(_, option, value)| (*option, value.as_str())))
        .map_err(|e| {
            // Name the flag behind the option the error names.
            let flags: Vec<String> = set
                .iter()
                .filter(|(_, option, _)| e.to_string().contains(option))
                .map(|(flag, _, value)| format!("--{flag}={value}"))
                .collect();
            format!("{}: {e}", flags.join(" "))
        })?;
    Ok(o)
}

impl Engine for CairnEngine {
    fn transact(&self, keys: &[&[u8]], update: &mut Update<'_>) -> EResult<bool> {
        let mut tx = self.db.transaction_with(&self.txn);
        let run = (|| {
            let values = keys
                .iter()
                .map(|k| tx.get_for_update(k))
                .collect::<cairn::Result<Vec<_>>>()?;
            for (i, v) in update(&values) {
                tx.put(keys[i], v)?;
            }
            tx.commit()
        })();
        match run {
            Ok(()) => Ok(true),
            Err(cairn::Error::Conflict { .. } | cairn::Error::Deadlock { .. } | cairn::Error::LockTimeout { .. }) => {
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    fn read_at_once(&self, keys: &[&[u8]], transaction: bool) -> EResult<usize> {
        let mut found = 0;
        if transaction {
            let tx = self.db.transaction_with(&self.txn);
            for k in keys {
                found += usize::from(tx.get(k)?.is_some());
            }
            tx.commit()?;
        } else {
            let s = self.db.snapshot();
            for k in keys {
                found += usize::from(s.get(k)?.is_some());
            }
        }
        Ok(found)
    }

    fn name(&self) -> &'static str {
        "cairn"
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> EResult<()> {
        let mut b = cairn::WriteBatch::new();
        b.put(key, value);
        self.write(b, sync)
    }

    fn put_batch(&self, entries: &[(Vec<u8>, Vec<u8>)], sync: bool) -> EResult<()> {
        let mut b = cairn::WriteBatch::new();
        for (k, v) in entries {
            b.put(k, v);
        }
        self.write(b, sync)
    }

    fn delete(&self, key: &[u8], sync: bool) -> EResult<()> {
        let mut b = cairn::WriteBatch::new();
        b.delete(key);
        self.write(b, sync)
    }

    fn write_table(&self, path: &Path, fill: &mut dyn FnMut(&mut TableSink<'_>) -> EResult<()>) -> EResult<()> {
        let mut w = cairn::TableWriter::create(path, &self.db.options())?;
        fill(&mut |k, v| Ok(w.put(k, v)?))?;
        w.finish()?;
        Ok(())
    }

    fn ingest(&self, paths: &[std::path::PathBuf], move_files: bool) -> EResult<()> {
        let opts = cairn::IngestOptions {
            move_files,
            ..cairn::IngestOptions::default()
        };
        self.db.ingest(paths, &opts)?;
        Ok(())
    }

    fn delete_range(&self, lo: &[u8], hi: &[u8]) -> EResult<()> {
        Ok(self.db.delete_range(lo, hi)?)
    }

    fn merge(&self, key: &[u8], operand: &[u8]) -> EResult<()> {
        Ok(self.db.merge(key, operand)?)
    }

    fn checkpoint(&self, dir: &Path) -> EResult<Option<u64>> {
        Ok(Some(self.db.checkpoint(dir)?.bytes_copied))
    }

    fn backup(&self, dir: &Path) -> EResult<Option<u64>> {
        Ok(Some(self.db.backup(dir)?.bytes_copied))
    }

    fn restore(&self, dir: &Path, to: &Path) -> EResult<()> {
        cairn::Db::restore(dir, to)?;
        Ok(())
    }

    fn get_value(&self, key: &[u8]) -> EResult<Option<Vec<u8>>> {
        Ok(self.db.get(key)?)
    }

    fn multi_get(&self, keys: &[Vec<u8>]) -> EResult<Vec<Option<usize>>> {
        Ok(self
            .db
            .multi_get(keys)?
            .into_iter()
            .map(|v| v.map(|v| v.len()))
            .collect())
    }

    fn get(&self, key: &[u8]) -> EResult<Option<usize>> {
        thread_local! {
            // One value buffer per reader thread: lookups allocate nothing (RocksDB's adapter
            // reads pinned values, with no copy).
            static VALUE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        VALUE.with(|v| {
            let mut v = v.borrow_mut();
            Ok(self.db.get_into(key, &mut v)?.then_some(v.len()))
        })
    }

    fn scan(&self, start: Option<&[u8]>, limit: u64, reverse: bool) -> EResult<(u64, u64)> {
        let mut range = match start {
            None => self.db.iter(),
            Some(s) if reverse => self.db.range(..=s.to_vec()),
            Some(s) => self.db.range(s.to_vec()..),
        };
        let step = || {
            let e = if reverse {
                range.next_back_entry()
            } else {
                range.next_entry()
            };
            e.map(|kv| kv.map(|(k, v)| (k.len(), v.len())).map_err(EngineError::from))
        };
        count_steps(step, limit)
    }

    fn range(&self, lo: &[u8], hi: &[u8]) -> EResult<(u64, u64)> {
        let mut range = self.db.range(lo.to_vec()..hi.to_vec());
        let step = || {
            range
                .next_entry()
                .map(|kv| kv.map(|(k, v)| (k.len(), v.len())).map_err(EngineError::from))
        };
        count_steps(step, u64::MAX)
    }

    fn flush(&self) -> EResult<()> {
        Ok(self.db.flush_all()?)
    }

    fn compact(&self) -> EResult<()> {
        Ok(self.db.compact_range::<&[u8], _>(..)?)
    }

    fn wait_for_background(&self) -> EResult<()> {
        Ok(self.db.wait_for_background()?)
    }

    fn stats_text(&self) -> String {
        let mut s = self.db.property("cairn.stats").unwrap_or_default();
        s.push_str(&self.db.property("cairn.filters").unwrap_or_default());
        s
    }

    fn debt(&self) -> Option<Debt> {
        let s = self.db.stats();
        Some(Debt {
            l0_files: s.l0_files,
            pending_compaction_bytes: s.pending_compaction_bytes,
            stall_micros: Some(s.stall_micros),
            delay_micros: Some(s.delay_micros),
        })
    }

    fn as_cairn(&self) -> Option<&cairn::Db> {
        Some(&self.db)
    }

    fn open_trees(&self, n: usize) -> EResult<()> {
        let trees = (1..n)
            .map(|i| self.db.tree(&format!("t{i}")))
            .collect::<Result<Vec<_>, _>>()?;
        self.trees
            .set(trees)
            .map_err(|_| EngineError::from("trees are already open"))
    }

    fn put_in(&self, tree: usize, key: &[u8], value: &[u8], sync: bool) -> EResult<()> {
        if tree == 0 {
            return self.put(key, value, sync);
        }
        let t = self.trees.get().and_then(|ts| ts.get(tree - 1)).ok_or("no such tree")?;
        let mut b = cairn::WriteBatch::new();
        b.put_in(t, key, value);
        self.write(b, sync)
    }

    fn get_in(&self, tree: usize, key: &[u8]) -> EResult<Option<usize>> {
        if tree == 0 {
            return self.get(key);
        }
        let t = self.trees.get().and_then(|ts| ts.get(tree - 1)).ok_or("no such tree")?;
        Ok(t.get(key)?.map(|v| v.len()))
    }

    fn scan_in(&self, tree: usize, start: &[u8], limit: u64) -> EResult<(u64, u64)> {
        if tree == 0 {
            return self.scan(Some(start), limit, false);
        }
        let t = self.trees.get().and_then(|ts| ts.get(tree - 1)).ok_or("no such tree")?;
        let mut range = t.range(start.to_vec()..);
        let step = || {
            range
                .next_entry()
                .map(|kv| kv.map(|(k, v)| (k.len(), v.len())).map_err(EngineError::from))
        };
        count_steps(step, limit)
    }

    fn cache_accounting(&self) -> Option<CacheAccounting> {
        use cairn::BlockKind::{Data, FilterUnit, Index};
        let (m, s, trees) = (self.db.memory(), self.db.stats(), self.db.levels());
        let kinds = [Data, Index, FilterUnit];
        let filter = m.cached_filter_usage() as u64;
        Some(CacheAccounting {
            capacity: m.cache_capacity as u64,
            data: m.cache_data_usage as u64,
            index: (m.cache_index_usage + m.cache_reserved) as u64,
            filter,
            // The block arena's free slots are memory the cache holds beyond its charges.
            other: (m.cache_usage as u64).saturating_sub((m.cache_data_usage + m.cache_index_usage) as u64 + filter)
                + m.cache_huge_page_slack as u64,
            tables_index: m.table_index_bytes as u64,
            // The decided bits of each table (headers and trailers aside).
            tables_filter: s
                .files
                .iter()
                .map(|f| (f.entries as f64 * f.filter_bpk / 8.0) as u64)
                .sum(),
            tables_bytes: trees.iter().flat_map(|t| &t.levels).map(|l| l.bytes).sum(),
            tables_data_blocks: 0,
            files_per_level: trees
                .first()
                .map_or_else(Vec::new, |t| files_per_level(t.levels.iter().map(|l| l.files as u64))),
            hits: kinds.map(|k| s.io.kind(k).cache_hits),
            misses: kinds.map(|k| s.io.kind(k).reads),
        })
    }

    fn block_reads(&self) -> Option<BlockReads> {
        let io = self.db.stats().io;
        Some(BlockReads {
            data: io.kind(cairn::BlockKind::Data).reads,
            filter: io.kind(cairn::BlockKind::FilterUnit).reads,
            index: io.kind(cairn::BlockKind::Index).reads,
        })
    }

    fn scan_counters(&self) -> Option<ScanCounters> {
        let st = self.db.stats();
        let mut c = ScanCounters::default();
        for t in &st.trees {
            let sc = &t.scans;
            c.seeks += sc.seeks;
            c.entries += sc.entries;
            c.memtables += sc.memtables;
            c.l0_runs += sc.l0_runs;
            c.levels += sc.levels;
            c.tables += sc.tables;
        }
        let (data, index) = (st.io.kind(cairn::BlockKind::Data), st.io.kind(cairn::BlockKind::Index));
        c.data_reads = data.reads;
        c.data_hits = data.cache_hits;
        c.index_reads = index.reads;
        c.index_hits = index.cache_hits;
        c.readahead_chunks = st.io.readahead.chunks;
        c.readahead_bytes = st.io.readahead.bytes;
        c.readahead_wasted = st.io.readahead.wasted();
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, FromArgMatches};

    #[derive(clap::Parser)]
    struct Args {
        #[command(flatten)]
        engine: EngineArgs,
    }

    /// The flags parsed as the runners parse them (with the set of flags given).
    fn args(flags: &[&str]) -> EngineArgs {
        let m = Args::command().get_matches_from(std::iter::once("bench").chain(flags.iter().copied()));
        let mut a = Args::from_arg_matches(&m)
            .map(|a| a.engine)
            .unwrap_or_else(|e| panic!("{e}"));
        a.given = m
            .ids()
            .filter(|id| m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
            .map(|id| id.to_string())
            .collect();
        a
    }

    fn get(o: &cairn::Options, name: &str) -> String {
        o.get(name).unwrap_or_else(|| panic!("{name}"))
    }

    #[test]
    fn bench_defaults_are_db_benchs() {
        let o = cairn_options(&args(&[])).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(get(&o, "memory.budget"), "0");
        assert_eq!(get(&o, "filters.bits_per_key"), "0");
        assert_eq!(get(&o, "memory.block_cache"), (8u64 << 20).to_string());
        assert_eq!(get(&o, "keep_stored"), "false");
        let o =
            cairn_options(&args(&["--memory_budget=67108864", "--bloom_bits=10"])).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(get(&o, "memory.budget"), (64u64 << 20).to_string());
        assert_eq!(get(&o, "memory.tuner"), "false");
        assert_eq!(get(&o, "filters.bits_per_key"), "10");
        // An elastic policy sized by its filter memory: bits per key left at the engine's
        // default (open refuses one set beside the filter memory), unless given.
        let elastic = ["--bpk_policy=elastic", "--filter_memory=1000000"];
        let o = cairn_options(&args(&elastic)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(get(&o, "memory.filter_memory"), "1000000");
        assert_eq!(
            get(&o, "filters.bits_per_key"),
            get(&cairn::Options::default(), "filters.bits_per_key")
        );
        let o = cairn_options(&args(&[elastic[0], elastic[1], "--bloom_bits=4"])).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(get(&o, "filters.bits_per_key"), "4");
    }

    #[test]
    fn engine_defaults_apply_only_the_flags_given() {
        let o = cairn_options(&args(&["--defaults=engine"])).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(format!("{o:?}"), format!("{:?}", cairn::Options::default()));
        // A region flag selects fixed sizes; beside --memory_budget it is refused, naming it.
        let o = cairn_options(&args(&["--defaults=engine", "--cache_size=1048576"])).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(get(&o, "memory.budget"), "0");
        let e = cairn_options(&args(&[
            "--defaults=engine",
            "--memory_budget=67108864",
            "--cache_size=1048576",
        ]))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            e.contains("--cache_size=1048576") && e.contains("memory.block_cache"),
            "{e}"
        );
        // Elastic parameters may come before the policy on the command line.
        let o = cairn_options(&args(&[
            "--defaults=engine",
            "--elastic_units=8",
            "--bpk_policy=elastic",
        ]))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(get(&o, "filters.elastic_units"), "8");
    }
}
