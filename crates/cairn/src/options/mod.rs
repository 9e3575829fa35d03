//! Options: plain fields with documented defaults (and the RocksDB equivalent), validated at
//! open, persisted in an OPTIONS file (spec: `docs/format/options.md`).

mod file;

pub(crate) use file::check_compatible;
pub use file::parse_options_file;

use crate::cache::BlockCache;
use crate::env::{FileSystem, StdFs};
use crate::error::{Error, Result};
use crate::sst::Compression;
use crate::wal::RecoveryMode;
use std::sync::Arc;

/// Which merge policy shapes the trees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MergePolicyKind {
    /// RocksDB-like leveling with size ratio `size_ratio`.
    Leveling,
    /// Autumn's Garnering with scaling factor `c ∈ (0, 1]` (paper default 0.8).
    Garnering {
        /// The scaling factor.
        c: f64,
    },
}

/// How point-filter memory is spread over files (docs/design.md §1 [C]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BpkPolicy {
    /// `bloom_bits_per_key` for every file (RocksDB's way).
    Uniform,
    /// Monkey: fewer bits per key in larger levels, optimal for empty lookups spread evenly.
    Monkey,
    /// Mnemosyne: per file, from the lookups Merlin estimates each file receives; files whose
    /// filter no longer pays are not probed.
    Mnemosyne,
    /// An oracle for benchmarks: Mnemosyne's optimum for the exact per-file counts.
    Optimal,
    /// ElasticBF: every segment gets `elastic_units` units of `elastic_unit_bpk` bits per key
    /// on disk; the units loaded in `filter_memory` follow each segment's hotness at run time.
    Elastic,
    /// Elastic units whose loaded counts follow Mnemosyne's optimum over segments (Merlin's
    /// estimates under `filter_memory`), re-solved every `elastic_solve_every` lookups and when
    /// the tree changes; ElasticBF's rule between solves.
    MnemosyneElastic,
}

/// Which tree's memtable a memory-triggered flush picks (Luo & Carey §4.2). A log-triggered
/// flush (the WALs passed `max_wal_size`) always picks the tree holding the oldest WAL data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlushPolicy {
    /// The largest active memtable (RocksDB's and HBase's choice).
    #[default]
    MaxMemory,
    /// The tree holding the oldest WAL data: each tree is flushed about as often as it is
    /// written, and the log is truncated as a side effect.
    MinLsn,
    /// The tree whose share of write memory most exceeds its share of the recent write rate
    /// (the paper's optimum: memory proportional to write rate), measured over the last one to
    /// two `max_wal_size` of writes.
    Optimal,
}

/// How a tree's write memory is organized (Luo & Carey §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryComponent {
    /// One active memtable; full memtables are flushed whole (RocksDB's).
    #[default]
    Monolithic,
    /// The active memtable plus memory levels of immutable sorted runs merged in memory
    /// (`memory_size_ratio` apart; runs of `write_buffer_size`), flushed a run at a time into
    /// grouped L0: memory stays full and flushes carry the hot keys' updates absorbed.
    Partitioned,
}

impl MemoryComponent {
    /// The setting's name (as in OPTIONS).
    pub fn name(self) -> &'static str {
        match self {
            MemoryComponent::Monolithic => "monolithic",
            MemoryComponent::Partitioned => "partitioned",
        }
    }

    /// The setting named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        [MemoryComponent::Monolithic, MemoryComponent::Partitioned]
            .into_iter()
            .find(|p| p.name() == name)
    }
}

/// How the sorted levels' capacities are set (leveling only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LevelTargets {
    /// L1 holds `max_bytes_for_level_base`, each level below `size_ratio` times more.
    #[default]
    Fixed,
    /// Luo & Carey §4.1.3: capacities anchored at the deepest level (each level above
    /// `size_ratio` times smaller), and L1 added or removed as the tree's share of write memory
    /// shrinks or grows (an L1 whose target exceeds write memory × `size_ratio` gets a new L1
    /// above it; L1 goes when L2's target falls below write memory × `size_ratio` / 1.5). Meant
    /// for the memory tuner, which moves write memory at run time.
    WriteMemory,
}

impl LevelTargets {
    /// The setting's name (as in OPTIONS).
    pub fn name(self) -> &'static str {
        match self {
            LevelTargets::Fixed => "fixed",
            LevelTargets::WriteMemory => "write-memory",
        }
    }

    /// The setting named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        [LevelTargets::Fixed, LevelTargets::WriteMemory]
            .into_iter()
            .find(|p| p.name() == name)
    }
}

impl FlushPolicy {
    /// The policy's name (as in OPTIONS).
    pub fn name(self) -> &'static str {
        match self {
            FlushPolicy::MaxMemory => "max-memory",
            FlushPolicy::MinLsn => "min-lsn",
            FlushPolicy::Optimal => "optimal",
        }
    }

    /// The policy named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        [FlushPolicy::MaxMemory, FlushPolicy::MinLsn, FlushPolicy::Optimal]
            .into_iter()
            .find(|p| p.name() == name)
    }
}

impl BpkPolicy {
    /// The policy's name (as in OPTIONS and in each table's properties).
    pub fn name(self) -> &'static str {
        match self {
            BpkPolicy::Uniform => "uniform",
            BpkPolicy::Monkey => "monkey",
            BpkPolicy::Mnemosyne => "mnemosyne",
            BpkPolicy::Optimal => "optimal",
            BpkPolicy::Elastic => "elastic",
            BpkPolicy::MnemosyneElastic => "mnemosyne-elastic",
        }
    }

    /// Whether filter units are loaded and unloaded at run time (ElasticBF).
    pub fn is_elastic(self) -> bool {
        matches!(self, BpkPolicy::Elastic | BpkPolicy::MnemosyneElastic)
    }

    /// The policy named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        [
            BpkPolicy::Uniform,
            BpkPolicy::Monkey,
            BpkPolicy::Mnemosyne,
            BpkPolicy::Optimal,
            BpkPolicy::Elastic,
            BpkPolicy::MnemosyneElastic,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }
}

/// Engine options. Construct with `Options::default()` and set fields.
#[derive(Clone)]
pub struct Options {
    /// File system (default: real files). Tests pass `MemFs` or `FaultFs`.
    pub fs: Arc<dyn FileSystem>,
    /// Create the directory and database if missing (default true).
    pub create_if_missing: bool,
    /// Fail if the database exists (default false).
    pub error_if_exists: bool,
    /// Memtable size at which a tree's memtable is flushed (default 64 MiB; RocksDB
    /// `write_buffer_size`).
    pub write_buffer_size: usize,
    /// Write memory shared by all trees' memtables: when the mutable memtables reach 7/8 of it
    /// (or all memtables reach it with at least half mutable) the largest tree's memtable is
    /// switched and flushed (default 128 MiB; RocksDB `db_write_buffer_size`). Changeable at
    /// run time with `Db::resize_memory`.
    pub write_memory_budget: usize,
    /// Which tree a memory-triggered flush picks (default max-memory; see [`FlushPolicy`]).
    pub flush_policy: FlushPolicy,
    /// Monolithic or partitioned memory components (default monolithic; see
    /// [`MemoryComponent`]). With `partitioned`, `write_buffer_size` is the active memtable's
    /// size and the size memory runs are cut at.
    pub memory_component: MemoryComponent,
    /// Size ratio between memory levels of a partitioned component (default 10).
    pub memory_size_ratio: usize,
    /// Luo & Carey's β: a log-triggered flush of a partitioned component writes everything
    /// unless more than this fraction of its memory was flushed for memory since the oldest
    /// live WAL was started (then only the oldest data and what it overlaps; default 0.5).
    pub memory_flush_beta: f64,
    /// Total WAL bytes after which the tree holding the oldest WAL data is flushed; 0 (the
    /// default) means 4 × the current write memory, following its resizes (RocksDB
    /// `max_total_wal_size`, whose 0 means the same).
    pub max_wal_size: u64,
    /// Target data block size (default 4096; RocksDB `block_size`).
    pub block_size: usize,
    /// Entries between restart points in data blocks (default 16).
    pub block_restart_interval: usize,
    /// Write a hash index in each data block so a point lookup skips the block's binary search
    /// (default true; RocksDB's `data_block_index_type = kDataBlockBinaryAndHash`).
    pub data_block_hash_index: bool,
    /// Data block compression (default none).
    pub compression: Compression,
    /// Data bytes per filter segment (default 4 MiB).
    pub segment_size: u64,
    /// Bloom filter bits per key on average over a tree's files (default 10; 0 = no filters).
    pub bloom_bits_per_key: f64,
    /// How those bits are spread over files (default uniform). May change between opens: new
    /// files follow the new policy.
    pub bpk_policy: BpkPolicy,
    /// Probes in Merlin's per-file window (2..=64, default 64; the paper's default).
    pub merlin_window: usize,
    /// Elastic policies: bytes of loaded filter units (default 0: `bloom_bits_per_key` bits
    /// per live key, following the data). Changeable at run time with `Db::resize_memory`.
    pub filter_memory: usize,
    /// Elastic policies: filter units per segment on disk (1..=16, default 6; the paper's).
    pub elastic_units: u32,
    /// Elastic policies: bits per key of each unit (0 < b ≤ 16, default 4; the paper's).
    pub elastic_unit_bpk: f64,
    /// Elastic policies: Gets after its last access at which a segment expires and may lose
    /// units (default 0: the number of live segments, the paper's rule; the authors' code
    /// uses 20,000).
    pub elastic_life_time: u64,
    /// `mnemosyne-elastic`: lookups between solves of the optimum (default 100,000).
    pub elastic_solve_every: u64,
    /// Elastic policies: milliseconds between the background adjuster's rounds while lookups
    /// arrive (default 5; 0: no background adjuster, rounds only through `Db::adjust_filters`).
    pub elastic_interval_ms: u64,
    /// Range-filter (Rosetta) bits per key in every new table (default 0: no range filter, and
    /// range reads consult none). Tables written before it was set have none; bounded range
    /// reads consult the filters of the tables that have one.
    pub range_filter_bits_per_key: f64,
    /// Give tables that more empty range reads reach a larger share of the range-filter bits
    /// (default true; the same solver as Mnemosyne's point filters, over per-file counts of
    /// empty range reads); false: every table gets `range_filter_bits_per_key`.
    pub range_filter_by_workload: bool,
    /// User-key bytes the range filter skips before its 8-byte key projection (default 0; set
    /// it to the length of a prefix all keys share, such as a table tag, so the projection
    /// covers the bytes that differ). At most 255.
    pub range_filter_key_offset: usize,
    /// Heights a range-filter probe may descend below a dyadic interval (1..=64, default 32,
    /// the Rosetta authors' value).
    pub range_filter_max_depth: u32,
    /// Bloom probes one range read may spend on one table's range filter before it answers
    /// "maybe" (default 100, the Rosetta authors' value).
    pub range_filter_probe_budget: u32,
    /// Block cache capacity in bytes when `block_cache` is not given (default 32 MiB).
    pub block_cache_size: usize,
    /// Simulated bytes of the ghost cache: the ids of the blocks most recently evicted from
    /// the block cache, so storage reads a larger cache would have saved are counted
    /// (`KindSnapshot::ghost_hits`, user and compaction reads apart). The memory tuner's read
    /// cost comes from it. Default 0: off (the paper's tuner simulates 128 MiB; about 40 bytes
    /// per id of memory).
    pub ghost_cache_size: usize,
    /// One memory budget (Luo & Carey §3; default 0: off, the regions are sized by
    /// `write_memory_budget`, `block_cache_size` and `filter_memory`). When set, it is split
    /// into write memory (`memory_write_share` of it; memtables switch at half of it), filter
    /// memory for the elastic policies (`memory_filter_share`) and the block cache (the rest,
    /// which also holds the index blocks and, for the other policies, the filter units):
    /// those three options are then derived from it, and `block_cache` must not be given.
    pub memory_budget: usize,
    /// Write memory's starting share of `memory_budget` (default 0.25).
    pub memory_write_share: f64,
    /// Filter memory's starting share of `memory_budget` under an elastic `bpk_policy`
    /// (default 0.1; ignored by the other policies).
    pub memory_filter_share: f64,
    /// Run the memory tuner (default false; needs `memory_budget`): every `max_wal_size` of
    /// log, or every `memory_tuner_period_ms` without that much, move memory between write
    /// memory, the block cache and (elastic policies) filter memory where it saves the most
    /// I/O per operation. Turns on a 128 MiB ghost cache when `ghost_cache_size` is 0.
    pub memory_tuner: bool,
    /// The tuner's timer cycle in milliseconds (default 10 000).
    pub memory_tuner_period_ms: u64,
    /// The least any region keeps under the tuner (default 32 MiB, the paper's).
    pub memory_tuner_floor: usize,
    /// ω: the weight of a page write against a page read in the tuner's cost (default 1; the
    /// paper uses 2 on SSDs whose writes cost twice their reads).
    pub memory_tuner_write_weight: f64,
    /// Tune filter memory too, as a third region (★ ours; default true; only the elastic
    /// policies have a filter region to tune): false keeps its starting share.
    pub memory_tuner_filters: bool,
    /// A block cache to share between databases.
    pub block_cache: Option<Arc<BlockCache>>,
    /// Share of the cache reserved for filter units and other meta blocks (default 0.5).
    pub high_pri_pool_ratio: f64,
    /// Charge the index blocks table readers pin to the block cache (default false): the cache
    /// then holds data blocks and filter units in what the pinned indexes leave, so the block
    /// cache size bounds all three (RocksDB's `cache_index_and_filter_blocks`).
    pub index_in_block_cache: bool,
    /// Table readers kept open (default 1000; RocksDB `max_open_files`).
    pub max_open_files: usize,
    /// Merge policy (default leveling).
    pub merge_policy: MergePolicyKind,
    /// Size ratio T between levels (default 10).
    pub size_ratio: f64,
    /// L0 files that trigger a compaction (default 4).
    pub l0_compaction_trigger: usize,
    /// L0 files at which writes are delayed (default 8, twice the compaction trigger; RocksDB's
    /// 20 lets a fast load leave a deep L0 that the reads after it pay for). Delayed writes go
    /// at a rate that adapts to whether compaction is catching up (`delayed_write_rate`).
    pub l0_slowdown_trigger: usize,
    /// L0 files at which writes stop until compaction catches up (default 16).
    pub l0_stop_trigger: usize,
    /// Capacity of L1 (default 256 MiB; RocksDB `max_bytes_for_level_base`) with fixed
    /// `level_targets`.
    pub max_bytes_for_level_base: u64,
    /// Whether level capacities are fixed or follow write memory (default fixed; see
    /// [`LevelTargets`]).
    pub level_targets: LevelTargets,
    /// Target size of compaction output files (default 64 MiB).
    pub target_file_size: u64,
    /// Levels including L0 (default 7; RocksDB `num_levels`).
    pub max_levels: usize,
    /// Estimated pending compaction bytes at which writes slow down (default 64 GiB).
    pub soft_pending_compaction_bytes: u64,
    /// ... and stop (default 256 GiB).
    pub hard_pending_compaction_bytes: u64,
    /// Background compaction threads (default: the machine's cores, at most 4; RocksDB
    /// `max_background_compactions`). Flushes have a thread of their own.
    pub compaction_threads: usize,
    /// Key-range pieces a large L0 → L1 compaction is split into, each merged by its own
    /// thread into one output run (default: as `compaction_threads`; RocksDB
    /// `max_subcompactions`).
    pub max_subcompactions: usize,
    /// Write rate, in bytes per second, when writes start being delayed; it then falls while
    /// L0 and the compaction debt grow and rises while they shrink (default 64 MiB/s; RocksDB
    /// `delayed_write_rate`, 16 MiB/s).
    pub delayed_write_rate: u64,
    /// How a damaged WAL is treated at open (default point-in-time).
    pub wal_recovery_mode: RecoveryMode,
    /// O_DIRECT reads of tables (default false).
    pub use_direct_reads: bool,
    /// Manifest size after which a new manifest (a snapshot of the current version) is started
    /// (default 64 MiB; RocksDB `max_manifest_file_size`).
    pub max_manifest_size: u64,
    /// Largest key accepted (default 64 KiB).
    pub max_key_size: usize,
    /// Largest value accepted (default 256 MiB).
    pub max_value_size: usize,
    /// Largest write batch accepted, encoded (default 1 GiB).
    pub max_batch_size: usize,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Options");
        for (k, v) in self.to_map() {
            d.field(k, &v);
        }
        d.finish()
    }
}

/// The machine's cores, at most 4: background threads beyond that mostly contend for the disk.
fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fs: Arc::new(StdFs::new()),
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 64 << 20,
            write_memory_budget: 128 << 20,
            flush_policy: FlushPolicy::MaxMemory,
            memory_component: MemoryComponent::Monolithic,
            memory_size_ratio: 10,
            memory_flush_beta: 0.5,
            max_wal_size: 0,
            block_size: 4096,
            block_restart_interval: 16,
            data_block_hash_index: true,
            compression: Compression::None,
            segment_size: 4 << 20,
            bloom_bits_per_key: 10.0,
            range_filter_bits_per_key: 0.0,
            range_filter_by_workload: true,
            range_filter_key_offset: 0,
            range_filter_max_depth: 32,
            range_filter_probe_budget: 100,
            bpk_policy: BpkPolicy::Uniform,
            merlin_window: 64,
            filter_memory: 0,
            elastic_units: 6,
            elastic_unit_bpk: 4.0,
            elastic_life_time: 0,
            elastic_solve_every: 100_000,
            elastic_interval_ms: 5,
            block_cache_size: 32 << 20,
            ghost_cache_size: 0,
            memory_budget: 0,
            memory_write_share: 0.25,
            memory_filter_share: 0.1,
            memory_tuner: false,
            memory_tuner_period_ms: 10_000,
            memory_tuner_floor: 32 << 20,
            memory_tuner_write_weight: 1.0,
            memory_tuner_filters: true,
            block_cache: None,
            high_pri_pool_ratio: 0.5,
            index_in_block_cache: false,
            max_open_files: 1000,
            merge_policy: MergePolicyKind::Leveling,
            size_ratio: 10.0,
            l0_compaction_trigger: 4,
            l0_slowdown_trigger: 8,
            l0_stop_trigger: 16,
            max_bytes_for_level_base: 256 << 20,
            level_targets: LevelTargets::Fixed,
            target_file_size: 64 << 20,
            max_levels: 7,
            soft_pending_compaction_bytes: 64 << 30,
            hard_pending_compaction_bytes: 256 << 30,
            compaction_threads: default_threads(),
            max_subcompactions: default_threads(),
            delayed_write_rate: 64 << 20,
            wal_recovery_mode: RecoveryMode::PointInTime,
            use_direct_reads: false,
            max_manifest_size: 64 << 20,
            max_key_size: 64 << 10,
            max_value_size: 256 << 20,
            max_batch_size: 1 << 30,
        }
    }
}

fn invalid(option: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidOptions {
        option,
        reason: reason.into(),
    }
}

/// The on-disk format version recorded in OPTIONS; a database written with another version is
/// refused at open.
pub const FORMAT_VERSION: u32 = 1;

/// The ghost cache the memory tuner simulates when `ghost_cache_size` is 0 (the paper's).
pub const TUNER_GHOST_BYTES: usize = 128 << 20;

impl Options {
    /// The options the engine runs with: with `memory_budget`, the region sizes derived from
    /// it (write memory, memtable size, filter memory, block cache, index blocks charged to
    /// the cache) and the tuner's ghost cache.
    pub(crate) fn resolved(mut self) -> Options {
        if self.memory_budget == 0 {
            return self;
        }
        let budget = self.memory_budget as f64;
        let write = ((budget * self.memory_write_share) as usize).max(2);
        let filter = if self.bpk_policy.is_elastic() {
            (budget * self.memory_filter_share) as usize
        } else {
            0
        };
        self.write_memory_budget = write;
        // A partitioned component keeps levels of runs this size (M1 holds 10 of them).
        self.write_buffer_size = match self.memory_component {
            MemoryComponent::Monolithic => write / 2,
            MemoryComponent::Partitioned => (write / 16).max(1),
        };
        self.filter_memory = filter;
        self.block_cache_size = self.memory_budget - write - filter;
        self.index_in_block_cache = true;
        if self.memory_tuner && self.ghost_cache_size == 0 {
            self.ghost_cache_size = TUNER_GHOST_BYTES;
        }
        self
    }

    /// Checks every option; the error names the first invalid one.
    pub fn validate(&self) -> Result<()> {
        if self.memory_budget > 0 {
            if self.memory_budget < 4 << 20 {
                return Err(invalid("memory_budget", "must be 0 (off) or at least 4 MiB"));
            }
            if self.block_cache.is_some() {
                return Err(invalid(
                    "memory_budget",
                    "sizes its own block cache: do not also give block_cache",
                ));
            }
            let filter = if self.bpk_policy.is_elastic() {
                self.memory_filter_share
            } else {
                0.0
            };
            if !(self.memory_write_share > 0.0 && self.memory_write_share < 1.0) {
                return Err(invalid("memory_write_share", "must be in (0, 1)"));
            }
            if !(0.0..1.0).contains(&filter) || self.memory_write_share + filter > 0.95 {
                return Err(invalid(
                    "memory_filter_share",
                    "must be in [0, 1) and leave the block cache at least 5% with memory_write_share",
                ));
            }
        }
        if self.memory_tuner && self.memory_budget == 0 {
            return Err(invalid("memory_tuner", "needs memory_budget"));
        }
        if self.memory_tuner_period_ms == 0 {
            return Err(invalid("memory_tuner_period_ms", "must be at least 1"));
        }
        if !(self.memory_tuner_write_weight >= 0.0 && self.memory_tuner_write_weight.is_finite()) {
            return Err(invalid("memory_tuner_write_weight", "must be a non-negative number"));
        }
        let pos = |name, v: usize| {
            if v == 0 {
                Err(invalid(name, "must be at least 1"))
            } else {
                Ok(())
            }
        };
        pos("write_buffer_size", self.write_buffer_size)?;
        if self.write_memory_budget < self.write_buffer_size {
            return Err(invalid("write_memory_budget", "must be at least write_buffer_size"));
        }
        if !(64..=(64 << 20)).contains(&self.block_size) {
            return Err(invalid("block_size", "must be between 64 B and 64 MiB"));
        }
        pos("block_restart_interval", self.block_restart_interval)?;
        if self.segment_size == 0 {
            return Err(invalid("segment_size", "must be at least 1"));
        }
        if !(0.0..=64.0).contains(&self.bloom_bits_per_key) {
            return Err(invalid("bloom_bits_per_key", "must be between 0 and 64"));
        }
        if !(0.0..=64.0).contains(&self.range_filter_bits_per_key) {
            return Err(invalid("range_filter_bits_per_key", "must be between 0 and 64"));
        }
        if self.range_filter_key_offset > 255 {
            return Err(invalid("range_filter_key_offset", "must be at most 255"));
        }
        if !(1..=64).contains(&self.range_filter_max_depth) {
            return Err(invalid("range_filter_max_depth", "must be between 1 and 64"));
        }
        if self.range_filter_probe_budget == 0 {
            return Err(invalid("range_filter_probe_budget", "must be at least 1"));
        }
        if !(2..=64).contains(&self.merlin_window) {
            return Err(invalid("merlin_window", "must be between 2 and 64"));
        }
        if !(1..=16).contains(&self.elastic_units) {
            return Err(invalid("elastic_units", "must be between 1 and 16"));
        }
        if !(self.elastic_unit_bpk > 0.0 && self.elastic_unit_bpk <= 16.0) {
            return Err(invalid("elastic_unit_bpk", "must be above 0 and at most 16"));
        }
        if self.elastic_solve_every == 0 {
            return Err(invalid("elastic_solve_every", "must be at least 1"));
        }
        if !(0.0..=1.0).contains(&self.high_pri_pool_ratio) {
            return Err(invalid("high_pri_pool_ratio", "must be between 0 and 1"));
        }
        pos("max_open_files", self.max_open_files)?;
        if let MergePolicyKind::Garnering { c } = self.merge_policy {
            if !(c > 0.0 && c <= 1.0) {
                return Err(invalid("merge_policy", format!("Garnering c = {c} must be in (0, 1]")));
            }
        }
        if self.size_ratio.is_nan() || self.size_ratio < 2.0 {
            return Err(invalid("size_ratio", "must be at least 2"));
        }
        pos("l0_compaction_trigger", self.l0_compaction_trigger)?;
        if self.l0_slowdown_trigger < self.l0_compaction_trigger {
            return Err(invalid("l0_slowdown_trigger", "must be at least l0_compaction_trigger"));
        }
        if self.l0_stop_trigger < self.l0_slowdown_trigger {
            return Err(invalid("l0_stop_trigger", "must be at least l0_slowdown_trigger"));
        }
        if self.max_bytes_for_level_base == 0 {
            return Err(invalid("max_bytes_for_level_base", "must be at least 1"));
        }
        if self.memory_size_ratio < 2 {
            return Err(invalid("memory_size_ratio", "must be at least 2"));
        }
        if !(0.0..=1.0).contains(&self.memory_flush_beta) {
            return Err(invalid("memory_flush_beta", "must be in [0, 1]"));
        }
        if self.level_targets == LevelTargets::WriteMemory && self.merge_policy != MergePolicyKind::Leveling {
            return Err(invalid(
                "level_targets",
                "write-memory needs merge_policy leveling (Garnering sets its own capacities)",
            ));
        }
        if self.target_file_size == 0 {
            return Err(invalid("target_file_size", "must be at least 1"));
        }
        if !(2..=32).contains(&self.max_levels) {
            return Err(invalid("max_levels", "must be between 2 and 32"));
        }
        if self.hard_pending_compaction_bytes < self.soft_pending_compaction_bytes {
            return Err(invalid(
                "hard_pending_compaction_bytes",
                "must be at least soft_pending_compaction_bytes",
            ));
        }
        if !(1..=64).contains(&self.compaction_threads) {
            return Err(invalid("compaction_threads", "must be between 1 and 64"));
        }
        if !(1..=64).contains(&self.max_subcompactions) {
            return Err(invalid("max_subcompactions", "must be between 1 and 64"));
        }
        if self.delayed_write_rate < 1024 {
            return Err(invalid("delayed_write_rate", "must be at least 1 KiB/s"));
        }
        if self.max_manifest_size < 1024 {
            return Err(invalid("max_manifest_size", "must be at least 1 KiB"));
        }
        if self.max_key_size == 0 || self.max_key_size > (64 << 20) {
            return Err(invalid("max_key_size", "must be between 1 B and 64 MiB"));
        }
        if self.max_value_size > (1 << 30) {
            return Err(invalid("max_value_size", "must be at most 1 GiB"));
        }
        if self.max_batch_size < self.max_key_size || self.max_batch_size > (1 << 30) {
            return Err(invalid("max_batch_size", "must be between max_key_size and 1 GiB"));
        }
        Ok(())
    }
}

/// Options of one write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// fdatasync the WAL before acknowledging (survives power loss); otherwise the write
    /// survives a process crash only.
    pub sync: bool,
    /// Fail with `Busy` instead of waiting when writes are stalled.
    pub no_slowdown: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_option() {
        assert!(Options::default().validate().is_ok());
        type Set = Box<dyn Fn(&mut Options)>;
        let cases: Vec<(&str, Set)> = vec![
            ("write_buffer_size", Box::new(|o| o.write_buffer_size = 0)),
            ("block_size", Box::new(|o| o.block_size = 10)),
            ("bloom_bits_per_key", Box::new(|o| o.bloom_bits_per_key = -1.0)),
            (
                "range_filter_bits_per_key",
                Box::new(|o| o.range_filter_bits_per_key = 65.0),
            ),
            ("range_filter_key_offset", Box::new(|o| o.range_filter_key_offset = 256)),
            (
                "range_filter_probe_budget",
                Box::new(|o| o.range_filter_probe_budget = 0),
            ),
            (
                "merge_policy",
                Box::new(|o| o.merge_policy = MergePolicyKind::Garnering { c: 1.5 }),
            ),
            ("l0_stop_trigger", Box::new(|o| o.l0_stop_trigger = 1)),
            ("max_levels", Box::new(|o| o.max_levels = 1)),
            ("write_memory_budget", Box::new(|o| o.write_memory_budget = 1)),
        ];
        for (name, set) in cases {
            let mut o = Options::default();
            set(&mut o);
            match o.validate() {
                Err(Error::InvalidOptions { option, .. }) => assert_eq!(option, name),
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    /// Every field is in the OPTIONS file, except the two that are objects rather than settings.
    /// The destructuring is exhaustive: a new field does not compile until it is listed here.
    #[test]
    fn the_options_file_covers_every_field() {
        let Options {
            fs: _,
            block_cache: _,
            create_if_missing: _,
            error_if_exists: _,
            write_buffer_size: _,
            write_memory_budget: _,
            flush_policy: _,
            memory_component: _,
            memory_size_ratio: _,
            memory_flush_beta: _,
            max_wal_size: _,
            block_size: _,
            block_restart_interval: _,
            data_block_hash_index: _,
            compression: _,
            segment_size: _,
            bloom_bits_per_key: _,
            bpk_policy: _,
            merlin_window: _,
            filter_memory: _,
            elastic_units: _,
            elastic_unit_bpk: _,
            elastic_life_time: _,
            elastic_solve_every: _,
            elastic_interval_ms: _,
            range_filter_bits_per_key: _,
            range_filter_by_workload: _,
            range_filter_key_offset: _,
            range_filter_max_depth: _,
            range_filter_probe_budget: _,
            block_cache_size: _,
            ghost_cache_size: _,
            memory_budget: _,
            memory_write_share: _,
            memory_filter_share: _,
            memory_tuner: _,
            memory_tuner_period_ms: _,
            memory_tuner_floor: _,
            memory_tuner_write_weight: _,
            memory_tuner_filters: _,
            high_pri_pool_ratio: _,
            index_in_block_cache: _,
            max_open_files: _,
            merge_policy: _,
            size_ratio: _,
            l0_compaction_trigger: _,
            l0_slowdown_trigger: _,
            l0_stop_trigger: _,
            max_bytes_for_level_base: _,
            level_targets: _,
            target_file_size: _,
            max_levels: _,
            soft_pending_compaction_bytes: _,
            hard_pending_compaction_bytes: _,
            compaction_threads: _,
            max_subcompactions: _,
            delayed_write_rate: _,
            wal_recovery_mode: _,
            use_direct_reads: _,
            max_manifest_size: _,
            max_key_size: _,
            max_value_size: _,
            max_batch_size: _,
        } = Options::default();
        let fields = [
            "create_if_missing",
            "error_if_exists",
            "write_buffer_size",
            "write_memory_budget",
            "flush_policy",
            "memory_component",
            "memory_size_ratio",
            "memory_flush_beta",
            "max_wal_size",
            "block_size",
            "block_restart_interval",
            "data_block_hash_index",
            "compression",
            "segment_size",
            "bloom_bits_per_key",
            "bpk_policy",
            "merlin_window",
            "filter_memory",
            "elastic_units",
            "elastic_unit_bpk",
            "elastic_life_time",
            "elastic_solve_every",
            "elastic_interval_ms",
            "range_filter_bits_per_key",
            "range_filter_by_workload",
            "range_filter_key_offset",
            "range_filter_max_depth",
            "range_filter_probe_budget",
            "block_cache_size",
            "ghost_cache_size",
            "memory_budget",
            "memory_write_share",
            "memory_filter_share",
            "memory_tuner",
            "memory_tuner_period_ms",
            "memory_tuner_floor",
            "memory_tuner_write_weight",
            "memory_tuner_filters",
            "high_pri_pool_ratio",
            "index_in_block_cache",
            "max_open_files",
            "merge_policy",
            "size_ratio",
            "l0_compaction_trigger",
            "l0_slowdown_trigger",
            "l0_stop_trigger",
            "max_bytes_for_level_base",
            "level_targets",
            "target_file_size",
            "max_levels",
            "soft_pending_compaction_bytes",
            "hard_pending_compaction_bytes",
            "compaction_threads",
            "max_subcompactions",
            "delayed_write_rate",
            "wal_recovery_mode",
            "use_direct_reads",
            "max_manifest_size",
            "max_key_size",
            "max_value_size",
            "max_batch_size",
        ];
        let map = Options::default().to_map();
        for f in fields {
            assert!(map.contains_key(f), "{f} is missing from the OPTIONS file");
        }
        assert_eq!(
            map.len(),
            fields.len() + 2,
            "format_version and comparator besides the fields"
        );
    }

    /// The OPTIONS file of the default options, pinned (`docs/format/options.md`).
    #[test]
    fn golden_options_file() {
        // Thread counts default to the machine's cores: pinned here.
        let o = Options {
            compaction_threads: 2,
            max_subcompactions: 2,
            ..Options::default()
        };
        let text = String::from_utf8(o.encode_file()).unwrap();
        crate::testutil::check_golden("golden/OPTIONS-default", &text);
    }

    #[test]
    fn options_file_round_trip_and_checksum() {
        let o = Options::default();
        let bytes = o.encode_file();
        let m = parse_options_file(&bytes).unwrap();
        assert_eq!(m["block_size"], "4096");
        assert!(check_compatible(&m, &o).is_ok());
        let mut bad = bytes.clone();
        bad[40] ^= 1;
        assert!(parse_options_file(&bad).is_err());
        let mut m2 = m.clone();
        m2.insert("comparator".into(), "reverse".into());
        let e = check_compatible(&m2, &o).unwrap_err();
        assert!(e.to_string().contains("comparator"), "{e}");
    }

    /// Every option set from its stored text reproduces it: a non-default value of each
    /// (the map's keys are exactly the fields, checked above) survives `to_map` → `set`.
    #[test]
    fn set_reads_back_every_stored_option() {
        let o = Options {
            create_if_missing: false,
            write_buffer_size: 12345,
            compression: Compression::Zstd,
            bloom_bits_per_key: 7.5,
            bpk_policy: BpkPolicy::MnemosyneElastic,
            merge_policy: MergePolicyKind::Garnering { c: 0.6 },
            flush_policy: FlushPolicy::Optimal,
            memory_component: MemoryComponent::Partitioned,
            memory_size_ratio: 4,
            memory_flush_beta: 0.25,
            level_targets: LevelTargets::WriteMemory,
            wal_recovery_mode: RecoveryMode::AbsoluteConsistency,
            high_pri_pool_ratio: 0.25,
            use_direct_reads: true,
            range_filter_by_workload: true,
            elastic_unit_bpk: 3.25,
            max_levels: 9,
            ..Options::default()
        };
        let mut back = Options::default();
        for (k, v) in o.to_map() {
            back.set(k, &v).unwrap_or_else(|e| panic!("{k}={v}: {e}"));
        }
        assert_eq!(back.to_map(), o.to_map());
        let bad = [
            ("block_size", "big"),
            ("compression", "snappy"),
            ("merge_policy", "tiering"),
            ("merge_policy", "garnering:x"),
            ("bpk_policy", "dense"),
            ("flush_policy", "largest"),
            ("level_targets", "dynamic"),
            ("memory_component", "tiered"),
            ("wal_recovery_mode", "Skip"),
            ("comparator", "reverse"),
        ];
        for (k, v) in bad {
            let e = back.set(k, v).unwrap_err();
            assert!(
                matches!(&e, Error::InvalidOptions { option, .. } if *option == k),
                "{k}={v}: {e}"
            );
        }
        assert!(matches!(
            back.set("no_such_option", "1"),
            Err(Error::InvalidArgument(_))
        ));
    }
}
