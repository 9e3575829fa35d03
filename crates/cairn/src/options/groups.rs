//! The groups of [`Options`], each field declared once: its doc (also its description in
//! `docs/options.md`), type, default and, for a setting with a text form, its name, how its text
//! is read, its valid range and scope (`table.rs` lists the rows in order).

use super::table::{Kind, Place, Refusal, Scope, Setting};
use super::value::{above, within, Value, ANY};
use super::{FilterPolicy, FlushPolicy, LevelTargets, MemoryComponent, MergePolicyKind, RangeFilterKind, UnitFormat};
use crate::sst::Compression;
use crate::wal::RecoveryMode;
use std::sync::Arc;

const MIB: f64 = (1u64 << 20) as f64;
const GIB: f64 = (1u64 << 30) as f64;
const INF: f64 = f64::INFINITY;

fn choices_of<T: Value>(_: &T) -> &'static [&'static str] {
    T::CHOICES
}

/// One field's row, when it has a text form.
macro_rules! row {
    ($rows:ident, $place:ty, $field:ident, [$($doc:literal)*]) => {};
    ($rows:ident, $place:ty, $field:ident, [$($doc:literal)*], $name:literal, $kind:ident, $range:expr, $scope:ident) => {
        $rows.push(Setting {
            name: $name,
            place: <$place as Place>::PATH,
            path: stringify!($field),
            kind: Kind::$kind,
            range: $range,
            scope: Scope::$scope,
            selector: false,
            doc: concat!($($doc, "\n"),*),
            choices: || choices_of(&<<$place as Place>::G as Default>::default().$field),
            get: |o| <$place as Place>::of(o).map(|g| Value::show(&g.$field)),
            set: |o, v| {
                let x = Value::parse(v, Kind::$kind).map_err(Refusal::Parse)?;
                <$place as Place>::of_mut(o).map_err(Refusal::NoPlace)?.$field = x;
                Ok(())
            },
            default: || Value::show(&<<$place as Place>::G as Default>::default().$field),
        });
    };
}

/// A group: the struct, its `Default`, and `rows` (its settings with a text form, in order).
macro_rules! group {
    ($(#[$attr:meta])* pub struct $name:ident in $place:ty {
        $(
            $(#[doc = $doc:literal])*
            $field:ident: $ty:ty = $default:expr $(=> $sname:literal, $kind:ident, $range:expr, $scope:ident)?;
        )*
    }) => {
        $(#[$attr])*
        pub struct $name {
            $( $(#[doc = $doc])* pub $field: $ty, )*
        }

        impl Default for $name {
            fn default() -> Self {
                $name { $($field: $default),* }
            }
        }

        impl $name {
            pub(super) fn rows(rows: &mut Vec<Setting>) {
                $( row!(rows, $place, $field, [$($doc)*] $(, $sname, $kind, $range, $scope)?); )*
            }
        }
    };
}

group! {
    /// Engine options, in groups. Construct with `Options::default()` (the memory-adaptive
    /// engine at a 256 MiB budget) or [`Options::with_memory`], then change what you need, by
    /// field or by name with [`Options::set`] (`"memory.budget"`, `"64MiB"`). Every setting with
    /// its name, default and valid values: `docs/options.md`.
    ///
    /// ```
    /// use cairn::{Budget, FilterPolicy, Memory, Options};
    /// let mut o = Options::with_memory(64 << 20);
    /// o.filters.policy = FilterPolicy::Uniform;
    /// if let Memory::Budget(Budget { tuner, .. }) = &mut o.memory {
    ///     *tuner = None; // a fixed split of the budget
    /// }
    /// o.set("table.block_size", "16KiB").unwrap();
    /// o.validate().unwrap();
    /// ```
    ///
    /// Checked at open: a value out of range, or a setting that has no effect under the others
    /// (for example a Rosetta setting for Grafite range filters), fails with
    /// [`Error::InvalidOptions`](crate::Error::InvalidOptions) naming it.
    ///
    /// **Reopening.** The database's configuration (every setting whose scope is "stored" in
    /// `docs/options.md`) is kept from its OPTIONS file for each setting these options leave at
    /// its default; a setting given another value replaces the stored one. `keep_stored = false`
    /// applies these options exactly as given. [`crate::Db::options`] shows what an open used.
    #[derive(Debug, Clone)]
    pub struct Options in super::table::Top {
        /// File system (default: real files). Tests pass `MemFs` or `FaultFs`.
        fs: Arc<dyn crate::env::FileSystem> = Arc::new(crate::env::StdFs::new());
        /// Create the directory and database if missing.
        create_if_missing: bool = true => "create_if_missing", Bool, ANY, Open;
        /// Fail if the database exists.
        error_if_exists: bool = false => "error_if_exists", Bool, ANY, Open;
        /// Keep the database's stored configuration for the settings these options leave at
        /// their defaults; false: use these options exactly as given.
        keep_stored: bool = true => "keep_stored", Bool, ANY, Open;
        /// glibc only: fix malloc's mmap threshold at this many bytes at open (0: leave the
        /// allocator alone). glibc raises the threshold each time a large block is freed, after
        /// which such blocks stay with the process: a load at a 64 MiB budget peaked at 102-117
        /// MB of RSS with it, 71 MB without. Process-wide: the first open that applies it
        /// decides, and MALLOC_MMAP_THRESHOLD_ in the environment wins. Above 0, free heap
        /// memory is also returned when the block cache or filter memory shrinks.
        malloc_mmap_threshold: usize = 128 << 10
            => "malloc_mmap_threshold", Bytes, within(0.0, 32.0 * MIB), Open;
        /// The operator `Db::merge` operands are combined with (default none): uint64add (8-byte
        /// little-endian sums), stringappend (joined with `,`), stringappend:DELIMITER
        /// ([`UInt64Add`](crate::merge::UInt64Add), [`StringAppend`](crate::merge::StringAppend)),
        /// or an operator of your own. A database written with one opens again only with an
        /// operator of the same name.
        merge_operator: Option<Arc<dyn crate::merge::MergeOperator>> = None
            => "merge.operator", Choice, ANY, Stored;
        /// Times to live by tree: TREE=DURATION pairs, e.g. sessions=30m,default=7d (units ms,
        /// s, m, h, d). Each put into such a tree expires that long after it is written: reads
        /// no longer return it and compactions drop it. Applies to values written while it is
        /// set; `Db::put_with_ttl` gives one put its own.
        ttl: crate::ttl::TreeTtls = crate::ttl::TreeTtls::default() => "ttl.trees", Choice, ANY, Stored;
        /// How memory is sized: one budget, or each region by hand.
        memory: super::Memory = super::Memory::Budget(Budget::default());
        /// The block cache and the ghost cache.
        cache: CacheOptions = CacheOptions::default();
        /// Memtables and which tree a flush picks.
        memtable: MemtableOptions = MemtableOptions::default();
        /// The write-ahead log.
        wal: WalOptions = WalOptions::default();
        /// The table format.
        table: TableFormat = TableFormat::default();
        /// Point filters.
        filters: FilterOptions = FilterOptions::default();
        /// The range filter.
        range_filter: RangeFilterOptions = RangeFilterOptions::default();
        /// The merge policy and the shape of the levels.
        compaction: CompactionOptions = CompactionOptions::default();
        /// Background threads.
        background: BackgroundOptions = BackgroundOptions::default();
        /// When writes slow down and stop.
        write_stalls: WriteStallOptions = WriteStallOptions::default();
        /// Open files, direct I/O, the manifest.
        files: FileOptions = FileOptions::default();
        /// The largest key, value and batch accepted.
        limits: Limits = Limits::default();
        /// Where expiry reads the time (default [`SystemClock`](crate::ttl::SystemClock); tests
        /// give a [`ManualClock`](crate::ttl::ManualClock)).
        clock: Arc<dyn crate::ttl::Clock> = Arc::new(crate::ttl::SystemClock);
        /// Asked about values during compactions ([`crate::compaction_filter`]); not stored:
        /// give it at every open.
        compaction_filter: Option<Arc<dyn crate::compaction_filter::CompactionFilter>> = None;
    }
}

group! {
    /// One memory budget (`memory.*` in `docs/options.md`).
    #[derive(Debug, Clone, PartialEq)]
    pub struct Budget in super::table::InBudget {
        /// Bytes for write memory, the block cache (with the index blocks) and filter memory
        /// (`memory.budget`; at least 256 KiB).
        bytes: usize = super::DEFAULT_BUDGET;
        /// Write memory's starting share of the budget.
        write_share: f64 = 0.25 => "memory.write_share", Float, above(0.0, 0.95), Stored;
        /// Filter memory's starting share of the budget under an elastic filter policy.
        filter_share: f64 = 0.1 => "memory.filter_share", Float, within(0.0, 0.95), Stored;
        /// The key-value cache's starting share of the budget, taken from the block cache's
        /// (0: no key-value cache).
        kv_cache_share: f64 = 0.1 => "memory.kv_cache_share", Float, within(0.0, 0.95), Stored;
        /// The memory tuner (`memory.tuner`); `None`: the starting split stays.
        tuner: Option<Tuner> = Some(Tuner::default());
    }
}

group! {
    /// The memory tuner's parameters (`memory.tuner_*`).
    #[derive(Debug, Clone, PartialEq)]
    pub struct Tuner in super::table::InTuner {
        /// The tuner's timer cycle in milliseconds (the paper's 10 minutes suit hour-long
        /// phases; a read phase after a load must not wait that long for its cache).
        period_ms: u64 = 1000 => "memory.tuner_period_ms", Count, within(1.0, INF), Stored;
        /// The least the tuner leaves write memory and the block cache (0: 32 MiB, the
        /// paper's, or a sixteenth of the budget when that is smaller). An explicit floor must
        /// not exceed the regions' starting sizes.
        floor: usize = 0 => "memory.tuner_floor", Bytes, ANY, Stored;
        /// ω: the weight of a page write against a page read in the tuner's cost (the paper
        /// uses 2 on SSDs whose writes cost twice their reads).
        write_weight: f64 = 1.0 => "memory.tuner_write_weight", Float, within(0.0, INF), Stored;
        /// Tune filter memory too, as a third region (only the elastic policies have one);
        /// false keeps its starting share.
        filters: bool = true => "memory.tuner_filters", Bool, ANY, Stored;
        /// Tune the key-value cache too, against the block cache (with a ghost of its evicted
        /// keys); false keeps its starting share.
        kv_cache: bool = true => "memory.tuner_kv_cache", Bool, ANY, Stored;
    }
}

group! {
    /// Regions sized by hand (`memory.budget = 0`).
    #[derive(Debug, Clone, PartialEq)]
    pub struct FixedMemory in super::table::InFixed {
        /// Write memory shared by all trees' memtables: when the mutable memtables reach 7/8
        /// of it the largest tree's memtable is switched and flushed (RocksDB
        /// db_write_buffer_size). Changeable at run time with `Db::resize_memory`.
        write_memory: usize = 128 << 20 => "memory.write_memory", Bytes, within(1.0, INF), Stored;
        /// Memtable size at which a tree's memtable is flushed (RocksDB write_buffer_size).
        /// With a partitioned component, the active memtable's size and the size memory runs
        /// are cut at.
        memtable_size: usize = 64 << 20 => "memtable.size", Bytes, within(1.0, INF), Stored;
        /// The block cache: the engine's own of a size (`memory.block_cache`), or one shared
        /// between databases.
        block_cache: super::CacheSource = super::CacheSource::Own(32 << 20);
        /// Bytes of loaded filter units for the elastic policies (0: filters.bits_per_key bits
        /// per live key, following the data). Changeable at run time with `Db::resize_memory`.
        filter_memory: usize = 0 => "memory.filter_memory", Bytes, ANY, Stored;
        /// Keep index blocks and filter units in the block cache at high priority (always so
        /// with a budget): an index or unit evicted is read again when needed, and what table
        /// readers still pin is reserved in it (RocksDB's cache_index_and_filter_blocks).
        /// Without it, they are pinned in their table readers.
        index_in_block_cache: bool = false => "cache.index_in_block_cache", Bool, ANY, Stored;
        /// Bytes of the key-value cache: the tables' answers for hot keys, asked after the
        /// memtables (RocksDB's row_cache; 0: off).
        kv_cache: usize = 0 => "memory.kv_cache", Bytes, ANY, Stored;
    }
}

group! {
    /// The block cache's pools and the ghost cache (`cache.*`).
    #[derive(Debug, Clone, PartialEq)]
    pub struct CacheOptions in super::table::Cache {
        /// Simulated bytes of the ghost cache: the ids of the blocks most recently evicted
        /// from the block cache, so storage reads a larger cache would have saved are counted.
        /// The memory tuner's read cost comes from it. 0: off (the tuner then simulates 128
        /// MiB, the paper's; about 40 bytes per id).
        ghost_cache: usize = 0 => "cache.ghost_cache", Bytes, ANY, Stored;
        /// Share of the engine's own block cache reserved for filter units and other meta
        /// blocks.
        high_pri_pool_ratio: f64 = 0.5 => "cache.high_pri_pool_ratio", Float, within(0.0, 1.0), Stored;
        /// Put cached data and index blocks in transparent huge pages while the engine's own
        /// block cache is at least 256 MiB: 2 MiB chunks of equal slots, so that a lookup among
        /// many cached blocks misses the TLB less. The chunks' free slots are counted in
        /// `MemoryUsage::cache_huge_page_slack`.
        huge_pages: bool = true => "cache.huge_pages", Bool, ANY, Stored;
        /// Values longer than this are not kept in the key-value cache (a whole block holds
        /// them about as well).
        kv_max_value: usize = 1024 => "cache.kv_max_value", Bytes, ANY, Stored;
    }
}

group! {
    /// Memtables (`memtable.*`).
    #[derive(Debug, Clone, PartialEq)]
    pub struct MemtableOptions in super::table::Memtable {
        /// Which tree a memory-triggered flush picks (see `FlushPolicy`).
        flush_policy: FlushPolicy = FlushPolicy::MaxMemory => "memtable.flush_policy", Choice, ANY, Stored;
        /// Monolithic or partitioned memory components (see `MemoryComponent`).
        component: MemoryComponent = MemoryComponent::Monolithic => "memtable.component", Choice, ANY, Stored;
        /// Size ratio between memory levels of a partitioned component.
        partitioned_size_ratio: usize = 10
            => "memtable.partitioned_size_ratio", Count, within(2.0, INF), Stored;
        /// Luo & Carey's β: a log-triggered flush of a partitioned component writes everything
        /// unless more than this fraction of its memory was flushed for memory since the oldest
        /// live WAL was started.
        partitioned_flush_beta: f64 = 0.5
            => "memtable.partitioned_flush_beta", Float, within(0.0, 1.0), Stored;
    }
}

group! {
    /// The write-ahead log (`wal.*`).
    #[derive(Debug, Clone, PartialEq)]
    pub struct WalOptions in super::table::Wal {
        /// Total WAL bytes after which the tree holding the oldest WAL data is flushed; 0: 4 ×
        /// the current write memory (RocksDB max_total_wal_size).
        max_size: u64 = 0 => "wal.max_size", Bytes, ANY, Stored;
        /// How a damaged WAL is treated at open.
        recovery_mode: RecoveryMode = RecoveryMode::PointInTime => "wal.recovery_mode", Choice, ANY, Open;
    }
}

group! {
    /// The table format (`table.*`).
    #[derive(Debug, Clone, PartialEq)]
    pub struct TableFormat in super::table::Table {
        /// Target data block size.
        block_size: usize = 4096 => "table.block_size", Bytes, within(64.0, 64.0 * MIB), Stored;
        /// Entries between restart points in data blocks.
        restart_interval: usize = 16 => "table.restart_interval", Count, within(1.0, 65_535.0), Stored;
        /// Entries between restart points in index blocks (RocksDB
        /// index_block_restart_interval, 1 there). Entries within an interval share key
        /// prefixes and leave out their block's offset: about a third of the index bytes of one
        /// entry per restart point.
        index_restart_interval: usize = 8
            => "table.index_restart_interval", Count, within(1.0, 65_535.0), Stored;
        /// Write a hash index in each data block so a point lookup skips the block's binary
        /// search (RocksDB's kDataBlockBinaryAndHash).
        hash_index: bool = true => "table.hash_index", Bool, ANY, Stored;
        /// Data block compression.
        compression: Compression = Compression::None => "table.compression", Choice, ANY, Stored;
    }
}

group! {
    /// Point filters (`filters.*`).
    #[derive(Debug, Clone, PartialEq)]
    pub struct FilterOptions in super::table::Filters {
        /// How the bits are spread over files (`filters.policy`); may change between opens: new
        /// files follow the new policy.
        policy: FilterPolicy = FilterPolicy::Mnemosyne;
        /// Bloom filter bits per key on average over a tree's files (0: no filters; the
        /// elastic policies: the default filter memory, per live key).
        bits_per_key: f64 = 10.0 => "filters.bits_per_key", Float, within(0.0, 64.0), Stored;
        /// Data bytes per filter segment.
        segment_size: u64 = 4 << 20 => "filters.segment_size", Bytes, within(1.0, INF), Stored;
        /// Layout of the filter units of new tables (cache-local: every probe of a key in one
        /// 64-byte line; standard: probes spread over the unit). Tables record it per unit:
        /// both are read.
        unit_format: UnitFormat = UnitFormat::CacheLocal => "filters.unit_format", Choice, ANY, Stored;
        /// Probes in Merlin's per-file window (the paper's default).
        merlin_window: usize = 64 => "filters.merlin_window", Count, within(2.0, 64.0), Stored;
    }
}

group! {
    /// The elastic policies' filter units (`filters.elastic_*`).
    #[derive(Debug, Clone, PartialEq)]
    pub struct ElasticUnits in super::table::InElastic {
        /// Elastic policies: filter units per segment on disk (the paper's).
        units: u32 = 6 => "filters.elastic_units", Count, within(1.0, 16.0), Stored;
        /// Elastic policies: bits per key of each unit (the paper's).
        unit_bits_per_key: f64 = 4.0 => "filters.elastic_unit_bits_per_key", Float, above(0.0, 16.0), Stored;
        /// Elastic policies: Gets after its last access at which a segment expires and may lose
        /// units (0: the number of live segments, the paper's rule; the authors' code uses
        /// 20,000).
        life_time: u64 = 0 => "filters.elastic_life_time", Count, ANY, Stored;
        /// Elastic policies: milliseconds between the background adjuster's rounds while
        /// lookups arrive (0: no background adjuster; units then move only when the tree
        /// changes).
        interval_ms: u64 = 5 => "filters.elastic_interval_ms", Count, ANY, Stored;
    }
}

group! {
    /// The range filter (`range_filter.*`).
    #[derive(Debug, Clone, PartialEq)]
    pub struct RangeFilterOptions in super::table::RangeFilter {
        /// Range-filter bits per key, on average over a tree's tables (0: no range filter).
        /// With range_filter.by_workload a table gets bits only when empty bounded range reads
        /// have reached the data it is written from. A table's filter is loaded at its first
        /// range read and charged to the block cache. Tables written before it was set have
        /// none.
        bits_per_key: f64 = 10.0 => "range_filter.bits_per_key", Float, within(0.0, 64.0), Stored;
        /// The kind of range filter new tables get: grafite (a bound on its false-positive rate
        /// for every workload, and a cost per range read independent of its length) or rosetta
        /// (Bloom filters over the prefixes of a range's dyadic intervals).
        kind: RangeFilterKind = RangeFilterKind::Grafite => "range_filter.kind", Choice, ANY, Stored;
        /// Give tables that more empty range reads reach a larger share of the range-filter
        /// bits, and none to tables no empty range read reached (Mnemosyne's solver over
        /// per-file counts of empty range reads); false: every table gets the same bits.
        by_workload: bool = true => "range_filter.by_workload", Bool, ANY, Stored;
        /// 0: each table's range filter indexes its keys by the bytes after the table's common
        /// prefix, up to the last byte where two of its keys first differ (at most 8). Above 0:
        /// every table indexes the 8 bytes after this many bytes, and a range read is asked only
        /// when its bounds share them.
        key_offset: usize = 0 => "range_filter.key_offset", Count, within(0.0, 255.0), Stored;
        /// Rosetta: heights a probe may descend below a dyadic interval (the authors' value).
        max_depth: u32 = 32 => "range_filter.max_depth", Count, within(1.0, 64.0), Stored;
        /// Rosetta: Bloom probes one range read may spend on one table's filter before it
        /// answers maybe (the authors' value).
        probe_budget: u32 = 100 => "range_filter.probe_budget", Count, within(1.0, INF), Stored;
        /// The share of the block cache that range filters may hold: a table's filter is
        /// pinned at its first bounded read while they hold less, and a round every
        /// range_filter.round_ms keeps this memory for the filters with the most empty range
        /// reads per byte. Applies where range filters are charged to the block cache (a
        /// budget, or cache.index_in_block_cache).
        memory_share: f64 = 0.5 => "range_filter.memory_share", Float, above(0.0, 1.0), Stored;
        /// Milliseconds between rounds of range-filter memory while range reads arrive (0:
        /// rounds only when the block cache is resized).
        round_ms: u64 = 1000 => "range_filter.round_ms", Count, ANY, Stored;
        /// Bytes per second that building range filters for tables already written may read
        /// (0: never built; a table's filter is then only what its flush or compaction wrote).
        /// With range_filter.by_workload, a round builds the filter of a table whose share of
        /// the bits has grown past what it has — a table written before empty range reads
        /// reached it — from the table's keys, and keeps it in range-filter memory.
        build_rate: u64 = 64 << 20 => "range_filter.build_rate", Bytes, ANY, Stored;
        /// The most bits per key, on average, range filters grow to (range_filter.bits_per_key
        /// is the least). With the memory tuner, a round raises the average while one more
        /// byte of range filters saves more storage reads per operation than one more byte of
        /// block cache (the empty range reads that reach tables against the tuner's marginal),
        /// within range_filter.memory_share, and lowers it when it saves less; tables written
        /// before get their filters built again. At range_filter.bits_per_key the average
        /// stays there (as it does when the default is below a larger range_filter.bits_per_key).
        max_bits_per_key: f64 = 22.0 => "range_filter.max_bits_per_key", Float, within(0.0, 64.0), Stored;
    }
}

group! {
    /// The merge policy and the levels (`compaction.*`).
    #[derive(Debug, Clone, PartialEq)]
    pub struct CompactionOptions in super::table::Compaction {
        /// Merge policy: leveling, or garnering:C for Autumn's Garnering.
        merge_policy: MergePolicyKind = MergePolicyKind::Leveling
            => "compaction.merge_policy", Choice, ANY, Stored;
        /// Size ratio T between levels.
        size_ratio: f64 = 10.0 => "compaction.size_ratio", Float, within(2.0, INF), Stored;
        /// L0 files that trigger a compaction.
        l0_trigger: usize = 4 => "compaction.l0_trigger", Count, within(1.0, INF), Stored;
        /// Milliseconds without a write after which a tree's L0 files, when there are two or
        /// more, are merged into L1 although fewer than compaction.l0_trigger (0: never): the
        /// reads after a load then probe no L0 file, whatever the load left.
        l0_drain_ms: u64 = 1000 => "compaction.l0_drain_ms", Count, ANY, Stored;
        /// Capacity of L1 with fixed level targets (RocksDB max_bytes_for_level_base).
        max_bytes_for_level_base: u64 = 256 << 20
            => "compaction.max_bytes_for_level_base", Bytes, within(1.0, INF), Stored;
        /// Whether level capacities are fixed or follow write memory (leveling only; see
        /// `LevelTargets`).
        level_targets: LevelTargets = LevelTargets::Fixed => "compaction.level_targets", Choice, ANY, Stored;
        /// Target size of compaction output files.
        target_file_size: u64 = 64 << 20 => "compaction.target_file_size", Bytes, within(1.0, INF), Stored;
        /// Levels including L0 (RocksDB num_levels).
        max_levels: usize = 7 => "compaction.max_levels", Count, within(2.0, 32.0), Stored;
    }
}

group! {
    /// Background threads (`background.*`).
    #[derive(Debug, Clone, PartialEq)]
    pub struct BackgroundOptions in super::table::Background {
        /// Background compaction threads (the machine's cores, at most 4; RocksDB
        /// max_background_compactions). Flushes have a thread of their own.
        compaction_threads: usize = default_threads()
            => "background.compaction_threads", Count, within(1.0, 64.0), Open;
        /// Key-range pieces a large L0 → L1 compaction is split into, each merged by its own
        /// thread.
        max_subcompactions: usize = default_threads()
            => "background.max_subcompactions", Count, within(1.0, 64.0), Open;
        /// How far below the foreground's CPU priority the compaction threads run: their nice
        /// value, from 0 (the same, as RocksDB's) to 19 (they take the cores the foreground
        /// leaves). Linux only.
        compaction_nice: usize = 0 => "background.compaction_nice", Count, within(0.0, 19.0), Open;
    }
}

group! {
    /// When writes slow down and stop (`write_stalls.*`).
    #[derive(Debug, Clone, PartialEq)]
    pub struct WriteStallOptions in super::table::WriteStalls {
        /// L0 files at which writes are delayed (twice the compaction trigger; RocksDB's 20
        /// lets a fast load leave a deep L0 that the reads after it pay for). Delayed writes go
        /// at a rate that adapts to whether compaction is catching up.
        l0_slowdown_trigger: usize = 8 => "write_stalls.l0_slowdown_trigger", Count, within(1.0, INF), Stored;
        /// L0 files at which writes stop until compaction catches up.
        l0_stop_trigger: usize = 16 => "write_stalls.l0_stop_trigger", Count, within(1.0, INF), Stored;
        /// Estimated pending compaction bytes at which writes slow down.
        soft_pending_compaction_bytes: u64 = 64 << 30
            => "write_stalls.soft_pending_compaction_bytes", Bytes, ANY, Stored;
        /// Estimated pending compaction bytes at which writes stop.
        hard_pending_compaction_bytes: u64 = 256 << 30
            => "write_stalls.hard_pending_compaction_bytes", Bytes, ANY, Stored;
        /// Write rate in bytes per second when writes start being delayed; it then falls while
        /// L0 and the compaction debt grow and rises while they shrink (RocksDB's: 16 MiB/s).
        delayed_write_rate: u64 = 64 << 20
            => "write_stalls.delayed_write_rate", Bytes, within(1024.0, INF), Stored;
    }
}

group! {
    /// Files (`files.*`).
    #[derive(Debug, Clone, PartialEq)]
    pub struct FileOptions in super::table::Files {
        /// Table readers kept open.
        max_open_files: usize = 1000 => "files.max_open_files", Count, within(1.0, INF), Open;
        /// O_DIRECT reads of tables.
        use_direct_reads: bool = false => "files.use_direct_reads", Bool, ANY, Open;
        /// Manifest size after which a new manifest (a snapshot of the current version) is
        /// started.
        max_manifest_size: u64 = 64 << 20 => "files.max_manifest_size", Bytes, within(1024.0, INF), Stored;
    }
}

group! {
    /// The largest key, value and batch accepted (`limits.*`).
    #[derive(Debug, Clone, PartialEq)]
    pub struct Limits in super::table::LimitsPlace {
        /// Largest key accepted.
        max_key_size: usize = 64 << 10 => "limits.max_key_size", Bytes, within(1.0, 64.0 * MIB), Stored;
        /// Largest value accepted.
        max_value_size: usize = 256 << 20 => "limits.max_value_size", Bytes, within(0.0, GIB), Stored;
        /// Largest write batch accepted, encoded.
        max_batch_size: usize = 1 << 30 => "limits.max_batch_size", Bytes, within(1.0, GIB), Stored;
    }
}

/// The machine's cores, at most 4: background threads beyond that mostly contend for the disk.
fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}
