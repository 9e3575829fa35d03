//! Options: what a user holds ([`Options`], in groups, with enums for the alternatives that
//! exclude each other) and what the engine reads, validated at open (`check.rs`) and persisted
//! in an OPTIONS file (`file.rs`; spec: `docs/format/options.md`).
//!
//! Each setting has one name, `group.setting`: the table in `table.rs` lists it once with its
//! text form, valid range, scope and description, for `Options::set`/`get`, the OPTIONS file
//! and the generated `docs/options.md`. The engine reads the fields here, and the region
//! sizes an open starts with from [`Regions`].

mod check;
mod file;
mod table;
mod value;

pub(crate) use file::{check_compatible, merge_stored, parse_options_file};
/// `docs/options.md`, generated from the table of settings.
#[cfg(feature = "test-util")]
#[doc(hidden)]
pub use table::options_table;
pub(crate) use value::show_bytes;

use crate::cache::BlockCache;
use crate::env::{FileSystem, StdFs};
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

/// The kind of a [`FilterPolicy`], as OPTIONS names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BpkPolicy {
    /// The same bits per key for every file (RocksDB's way).
    Uniform,
    /// Monkey: fewer bits per key in larger levels, optimal for empty lookups spread evenly.
    Monkey,
    /// Mnemosyne: per file, from the lookups Merlin estimates each file receives.
    Mnemosyne,
    /// An oracle for benchmarks: Mnemosyne's optimum for the exact per-file counts.
    Optimal,
    /// ElasticBF: filter units on disk, loaded by each segment's hotness at run time.
    Elastic,
    /// Elastic units loaded by Mnemosyne's optimum over segments.
    MnemosyneElastic,
}

impl BpkPolicy {
    /// Whether filter units are loaded and unloaded at run time (ElasticBF).
    pub fn is_elastic(self) -> bool {
        matches!(self, BpkPolicy::Elastic | BpkPolicy::MnemosyneElastic)
    }
}

/// Which tree a memory-triggered flush picks (Luo & Carey §4.2). A log-triggered flush (the
/// WALs passed `wal.max_size`) always picks the tree holding the oldest WAL data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlushPolicy {
    /// The largest active memtable (RocksDB's and HBase's choice).
    #[default]
    MaxMemory,
    /// The tree holding the oldest WAL data.
    MinLsn,
    /// The tree whose share of write memory most exceeds its share of the recent write rate
    /// (the paper's optimum).
    Optimal,
}

/// How a tree's write memory is organized (Luo & Carey §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryComponent {
    /// One active memtable; full memtables are flushed whole (RocksDB's).
    #[default]
    Monolithic,
    /// The active memtable plus memory levels of immutable sorted runs merged in memory,
    /// flushed a run at a time into grouped L0.
    Partitioned,
}

/// The layout of point-filter units in new tables (tables record it per unit, so both are
/// read whatever the setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnitFormat {
    /// Probes spread over the whole unit (up to one cache line each).
    Standard,
    /// Every probe of a key in one 64-byte line (`docs/format/sst.md`, filter units).
    #[default]
    CacheLocal,
}

impl UnitFormat {
    /// How fast the layout's false-positive rate falls per bit per key (the allocation
    /// policies' model: `e^(−decay · bpk)`).
    pub(crate) fn decay(self) -> f64 {
        match self {
            UnitFormat::Standard => crate::tuning::bpk::LN2_SQ,
            UnitFormat::CacheLocal => crate::tuning::bpk::LOCAL_DECAY,
        }
    }
}

/// The kind of range filter new tables get (the metaindex records each table's, so both are
/// read whatever the setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RangeFilterKind {
    /// Rosetta: prefix Bloom filters per height, probed over a range's dyadic intervals.
    #[default]
    Rosetta,
    /// Grafite: one hash and one Elias–Fano successor search per range whatever its length,
    /// false-positive rate at most ℓ / 2^(bits_per_key − 2) for ℓ projection values.
    Grafite,
}

impl RangeFilterKind {
    /// How fast the kind's false-positive rate falls per bit per key: Rosetta's levels are
    /// Bloom filters, Grafite's bound halves per bit.
    pub(crate) fn decay(self) -> f64 {
        match self {
            RangeFilterKind::Rosetta => crate::tuning::bpk::LN2_SQ,
            RangeFilterKind::Grafite => std::f64::consts::LN_2,
        }
    }
}

/// How the sorted levels' capacities are set (leveling only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LevelTargets {
    /// L1 holds `max_bytes_for_level_base`, each level below `size_ratio` times more.
    #[default]
    Fixed,
    /// Luo & Carey §4.1.3: capacities anchored at the deepest level, and L1 added or removed
    /// as the tree's share of write memory shrinks or grows. Meant for the memory tuner.
    WriteMemory,
}

/// Engine options, in groups. Construct with `Options::default()` (the memory-adaptive engine
/// at a 256 MiB budget) or [`Options::with_memory`], then change what you need, by field or
/// by name with [`Options::set`] (`"memory.budget"`, `"64MiB"`). Every setting with its
/// name, default and valid values: `docs/options.md`.
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
pub struct Options {
    /// File system (default: real files). Tests pass `MemFs` or `FaultFs`.
    pub fs: Arc<dyn FileSystem>,
    /// Create the directory and database if missing (`create_if_missing`).
    pub create_if_missing: bool,
    /// Fail if the database exists (`error_if_exists`).
    pub error_if_exists: bool,
    /// Keep the stored configuration for the settings left at their defaults (`keep_stored`).
    pub keep_stored: bool,
    /// glibc's malloc: fix its mmap threshold at open; 0: leave it (`malloc_mmap_threshold`).
    pub malloc_mmap_threshold: usize,
    /// How memory is sized: one budget, or each region by hand.
    pub memory: Memory,
    /// The block cache and the ghost cache.
    pub cache: CacheOptions,
    /// Memtables and which tree a flush picks.
    pub memtable: MemtableOptions,
    /// The write-ahead log.
    pub wal: WalOptions,
    /// The table format.
    pub table: TableFormat,
    /// Point filters.
    pub filters: FilterOptions,
    /// The range filter.
    pub range_filter: RangeFilterOptions,
    /// The merge policy and the shape of the levels.
    pub compaction: CompactionOptions,
    /// Background threads.
    pub background: BackgroundOptions,
    /// When writes slow down and stop.
    pub write_stalls: WriteStallOptions,
    /// Open files, direct I/O, the manifest.
    pub files: FileOptions,
    /// The largest key, value and batch accepted.
    pub limits: Limits,
    /// The operator `Db::merge` operands are combined with (`merge.operator`; default none).
    /// Built-ins: [`UInt64Add`](crate::merge::UInt64Add),
    /// [`StringAppend`](crate::merge::StringAppend), also by name with
    /// `Options::set("merge.operator", "uint64add")`.
    pub merge_operator: Option<Arc<dyn crate::merge::MergeOperator>>,
    /// Times to live by tree (`ttl.trees`, e.g. `Options::set("ttl.trees", "sessions=30m")`).
    pub ttl: crate::ttl::TreeTtls,
    /// Where expiry reads the time (default [`SystemClock`](crate::ttl::SystemClock); tests
    /// give a [`ManualClock`](crate::ttl::ManualClock)).
    pub clock: Arc<dyn crate::ttl::Clock>,
    /// Asked about values during compactions ([`crate::compaction_filter`]); not stored: give
    /// it at every open.
    pub compaction_filter: Option<Arc<dyn crate::compaction_filter::CompactionFilter>>,
}

/// How memory is sized.
#[derive(Debug, Clone, PartialEq)]
pub enum Memory {
    /// One budget (`memory.budget`) split between write memory, the block cache and filter
    /// memory, with the memory tuner moving memory between them (the default).
    Budget(Budget),
    /// Each region sized by hand (`memory.budget = 0`), as in RocksDB.
    Fixed(FixedMemory),
}

/// One memory budget (`memory.*` in `docs/options.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    /// Bytes for write memory, the block cache (with the index blocks) and filter memory
    /// (`memory.budget`; at least 256 KiB).
    pub bytes: usize,
    /// Write memory's starting share (`memory.write_share`).
    pub write_share: f64,
    /// Filter memory's starting share under an elastic filter policy (`memory.filter_share`).
    pub filter_share: f64,
    /// The memory tuner (`memory.tuner`); `None`: the starting split stays.
    pub tuner: Option<Tuner>,
}

/// The memory tuner's parameters (`memory.tuner_*`).
#[derive(Debug, Clone, PartialEq)]
pub struct Tuner {
    /// Milliseconds between timer cycles (`memory.tuner_period_ms`).
    pub period_ms: u64,
    /// The least it leaves write memory and the block cache; 0: automatic
    /// (`memory.tuner_floor`).
    pub floor: usize,
    /// ω, a page write's weight against a page read (`memory.tuner_write_weight`).
    pub write_weight: f64,
    /// Tune the elastic policies' filter memory as a third region (`memory.tuner_filters`).
    pub filters: bool,
}

/// Regions sized by hand.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedMemory {
    /// Write memory shared by all trees' memtables (`memory.write_memory`).
    pub write_memory: usize,
    /// Memtable size at which a tree's memtable is flushed (`memtable.size`).
    pub memtable_size: usize,
    /// The block cache: the engine's own of a size, or one shared between databases.
    pub block_cache: CacheSource,
    /// Loaded filter units of the elastic policies; 0: bits per key per live key
    /// (`memory.filter_memory`).
    pub filter_memory: usize,
    /// Keep index blocks and filter units in the block cache at high priority
    /// (`cache.index_in_block_cache`).
    pub index_in_block_cache: bool,
}

/// Where the block cache comes from under fixed sizes.
#[derive(Clone)]
pub enum CacheSource {
    /// The engine's own cache of this many bytes (`memory.block_cache`).
    Own(usize),
    /// A cache shared with other databases, with its own capacity and pools.
    Shared(Arc<BlockCache>),
}

impl PartialEq for CacheSource {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (CacheSource::Own(a), CacheSource::Own(b)) => a == b,
            (CacheSource::Shared(a), CacheSource::Shared(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl std::fmt::Debug for CacheSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CacheSource::Own(n) => f.debug_tuple("Own").field(n).finish(),
            CacheSource::Shared(c) => write!(f, "Shared(capacity {})", c.capacity()),
        }
    }
}

/// The block cache's pools and the ghost cache (`cache.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct CacheOptions {
    /// Share of the engine's own block cache reserved for filter units and other meta blocks
    /// (`cache.high_pri_pool_ratio`).
    pub high_pri_pool_ratio: f64,
    /// Cached blocks in transparent huge pages from a 256 MiB cache (`cache.huge_pages`).
    pub huge_pages: bool,
    /// Simulated bytes of the ghost cache; 0: off, or 128 MiB with the tuner
    /// (`cache.ghost_cache`).
    pub ghost_cache: usize,
}

/// Memtables (`memtable.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct MemtableOptions {
    /// Which tree a memory-triggered flush picks (`memtable.flush_policy`).
    pub flush_policy: FlushPolicy,
    /// Monolithic or partitioned memory components (`memtable.component`).
    pub component: MemoryComponent,
    /// Size ratio between memory levels of a partitioned component
    /// (`memtable.partitioned_size_ratio`).
    pub partitioned_size_ratio: usize,
    /// Luo & Carey's β for a partitioned component (`memtable.partitioned_flush_beta`).
    pub partitioned_flush_beta: f64,
}

/// The write-ahead log (`wal.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct WalOptions {
    /// WAL bytes after which the oldest data is flushed; 0: 4 × write memory (`wal.max_size`).
    pub max_size: u64,
    /// How a damaged WAL is treated at open (`wal.recovery_mode`).
    pub recovery_mode: RecoveryMode,
}

/// The table format (`table.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct TableFormat {
    /// Target data block size (`table.block_size`).
    pub block_size: usize,
    /// Entries between restart points (`table.restart_interval`).
    pub restart_interval: usize,
    /// Entries between restart points in index blocks (`table.index_restart_interval`).
    pub index_restart_interval: usize,
    /// A hash index in each data block (`table.hash_index`).
    pub hash_index: bool,
    /// Data block compression (`table.compression`).
    pub compression: Compression,
}

/// Point filters (`filters.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct FilterOptions {
    /// Bits per key on average over a tree's files; 0: no filters (`filters.bits_per_key`).
    pub bits_per_key: f64,
    /// How those bits are spread over files (`filters.policy`).
    pub policy: FilterPolicy,
    /// Data bytes per filter segment (`filters.segment_size`).
    pub segment_size: u64,
    /// Probes in Merlin's per-file window (`filters.merlin_window`).
    pub merlin_window: usize,
    /// The layout of new tables' filter units (`filters.unit_format`).
    pub unit_format: UnitFormat,
}

/// How point-filter bits are spread over files, with each policy's parameters
/// (`filters.policy`; `docs/design.md`, the point filters).
#[derive(Debug, Clone, PartialEq)]
pub enum FilterPolicy {
    /// The same bits per key for every file (RocksDB's way).
    Uniform,
    /// Monkey: fewer bits per key in larger levels.
    Monkey,
    /// Mnemosyne: per file, from the lookups Merlin estimates each file receives (the default).
    Mnemosyne,
    /// An oracle for benchmarks: Mnemosyne's optimum for the exact per-file counts.
    Optimal,
    /// ElasticBF: filter units on disk, loaded by each segment's hotness at run time.
    Elastic(ElasticUnits),
    /// Elastic units loaded by Mnemosyne's optimum over segments, re-solved every
    /// `solve_every` lookups (`filters.elastic_solve_every`).
    MnemosyneElastic {
        /// The units.
        units: ElasticUnits,
        /// Lookups between solves of the optimum.
        solve_every: u64,
    },
}

/// The elastic policies' filter units (`filters.elastic_*`).
#[derive(Debug, Clone, PartialEq)]
pub struct ElasticUnits {
    /// Filter units per segment on disk (`filters.elastic_units`).
    pub units: u32,
    /// Bits per key of each unit (`filters.elastic_unit_bits_per_key`).
    pub unit_bits_per_key: f64,
    /// Gets after its last access at which a segment expires; 0: the live segments
    /// (`filters.elastic_life_time`).
    pub life_time: u64,
    /// Milliseconds between the background adjuster's rounds; 0: none
    /// (`filters.elastic_interval_ms`).
    pub interval_ms: u64,
}

/// The range filter (`range_filter.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct RangeFilterOptions {
    /// Bits per key on average over a tree's tables; 0: no range filter
    /// (`range_filter.bits_per_key`).
    pub bits_per_key: f64,
    /// Rosetta or Grafite, for new tables (`range_filter.kind`).
    pub kind: RangeFilterKind,
    /// Bits by the empty range reads each table's data received (`range_filter.by_workload`).
    pub by_workload: bool,
    /// Key bytes skipped before the 8-byte projection; 0: per table (`range_filter.key_offset`).
    pub key_offset: usize,
    /// Heights a probe may descend below a dyadic interval (`range_filter.max_depth`).
    pub max_depth: u32,
    /// Probes one range read may spend on one table (`range_filter.probe_budget`).
    pub probe_budget: u32,
    /// The share of the block cache range filters may hold (`range_filter.memory_share`).
    pub memory_share: f64,
    /// Milliseconds between rounds of range-filter memory (`range_filter.round_ms`).
    pub round_ms: u64,
}

/// The merge policy and the levels (`compaction.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionOptions {
    /// Leveling or Garnering (`compaction.merge_policy`).
    pub merge_policy: MergePolicyKind,
    /// Size ratio T between levels (`compaction.size_ratio`).
    pub size_ratio: f64,
    /// L0 files that trigger a compaction (`compaction.l0_trigger`).
    pub l0_trigger: usize,
    /// Capacity of L1 with fixed level targets (`compaction.max_bytes_for_level_base`).
    pub max_bytes_for_level_base: u64,
    /// Fixed level capacities or following write memory (`compaction.level_targets`).
    pub level_targets: LevelTargets,
    /// Target size of compaction output files (`compaction.target_file_size`).
    pub target_file_size: u64,
    /// Levels including L0 (`compaction.max_levels`).
    pub max_levels: usize,
}

/// Background threads (`background.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct BackgroundOptions {
    /// Compaction threads (`background.compaction_threads`).
    pub compaction_threads: usize,
    /// Pieces a large L0 → L1 compaction is split into (`background.max_subcompactions`).
    pub max_subcompactions: usize,
    /// The compaction threads' nice value (`background.compaction_nice`).
    pub compaction_nice: usize,
}

/// When writes slow down and stop (`write_stalls.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct WriteStallOptions {
    /// L0 files at which writes are delayed (`write_stalls.l0_slowdown_trigger`).
    pub l0_slowdown_trigger: usize,
    /// L0 files at which writes stop (`write_stalls.l0_stop_trigger`).
    pub l0_stop_trigger: usize,
    /// Pending compaction bytes at which writes slow down
    /// (`write_stalls.soft_pending_compaction_bytes`).
    pub soft_pending_compaction_bytes: u64,
    /// ... and stop (`write_stalls.hard_pending_compaction_bytes`).
    pub hard_pending_compaction_bytes: u64,
    /// Bytes per second when writes start being delayed (`write_stalls.delayed_write_rate`).
    pub delayed_write_rate: u64,
}

/// Files (`files.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct FileOptions {
    /// Table readers kept open (`files.max_open_files`).
    pub max_open_files: usize,
    /// O_DIRECT reads of tables (`files.use_direct_reads`).
    pub use_direct_reads: bool,
    /// Manifest size after which a new one is started (`files.max_manifest_size`).
    pub max_manifest_size: u64,
}

/// The largest key, value and batch accepted (`limits.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Largest key (`limits.max_key_size`).
    pub max_key_size: usize,
    /// Largest value (`limits.max_value_size`).
    pub max_value_size: usize,
    /// Largest encoded write batch (`limits.max_batch_size`).
    pub max_batch_size: usize,
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

/// The on-disk format version recorded in OPTIONS; a database written with another version is
/// refused at open.
pub const FORMAT_VERSION: u32 = 1;

/// `memory.budget`'s default: about what an embedded engine of this kind is given (RocksDB's
/// default write buffers and a small cache come to about as much).
pub const DEFAULT_BUDGET: usize = 256 << 20;

/// The least `memory.budget`.
pub const MIN_BUDGET: usize = 256 << 10;

/// The ghost cache the memory tuner simulates when `cache.ghost_cache` is 0 (the paper's).
pub const TUNER_GHOST_BYTES: usize = 128 << 20;

impl Default for Options {
    fn default() -> Self {
        Options {
            fs: Arc::new(StdFs::new()),
            create_if_missing: true,
            error_if_exists: false,
            keep_stored: true,
            malloc_mmap_threshold: 128 << 10,
            memory: Memory::Budget(Budget::default()),
            cache: CacheOptions::default(),
            memtable: MemtableOptions::default(),
            wal: WalOptions::default(),
            table: TableFormat::default(),
            filters: FilterOptions::default(),
            range_filter: RangeFilterOptions::default(),
            compaction: CompactionOptions::default(),
            background: BackgroundOptions::default(),
            write_stalls: WriteStallOptions::default(),
            files: FileOptions::default(),
            limits: Limits::default(),
            merge_operator: None,
            ttl: crate::ttl::TreeTtls::default(),
            clock: Arc::new(crate::ttl::SystemClock),
            compaction_filter: None,
        }
    }
}

/// `Default` from the listed field values.
macro_rules! defaults {
    ($($t:ident { $($field:ident: $v:expr),* $(,)? })*) => {$(
        impl Default for $t {
            fn default() -> Self {
                $t { $($field: $v),* }
            }
        }
    )*};
}

defaults! {
    Budget { bytes: DEFAULT_BUDGET, write_share: 0.25, filter_share: 0.1, tuner: Some(Tuner::default()) }
    Tuner { period_ms: 1000, floor: 0, write_weight: 1.0, filters: true }
    FixedMemory {
        write_memory: 128 << 20,
        memtable_size: 64 << 20,
        block_cache: CacheSource::Own(32 << 20),
        filter_memory: 0,
        index_in_block_cache: false,
    }
    CacheOptions { high_pri_pool_ratio: 0.5, huge_pages: true, ghost_cache: 0 }
    MemtableOptions {
        flush_policy: FlushPolicy::MaxMemory,
        component: MemoryComponent::Monolithic,
        partitioned_size_ratio: 10,
        partitioned_flush_beta: 0.5,
    }
    WalOptions { max_size: 0, recovery_mode: RecoveryMode::PointInTime }
    TableFormat {
        block_size: 4096,
        restart_interval: 16,
        index_restart_interval: 8,
        hash_index: true,
        compression: Compression::None,
    }
    FilterOptions {
        bits_per_key: 10.0,
        policy: FilterPolicy::Mnemosyne,
        segment_size: 4 << 20,
        merlin_window: 64,
        unit_format: UnitFormat::CacheLocal,
    }
    ElasticUnits { units: 6, unit_bits_per_key: 4.0, life_time: 0, interval_ms: 5 }
    RangeFilterOptions {
        bits_per_key: 10.0,
        kind: RangeFilterKind::Rosetta,
        by_workload: true,
        key_offset: 0,
        max_depth: 32,
        probe_budget: 100,
        memory_share: 0.5,
        round_ms: 1000,
    }
    CompactionOptions {
        merge_policy: MergePolicyKind::Leveling,
        size_ratio: 10.0,
        l0_trigger: 4,
        max_bytes_for_level_base: 256 << 20,
        level_targets: LevelTargets::Fixed,
        target_file_size: 64 << 20,
        max_levels: 7,
    }
    BackgroundOptions { compaction_threads: default_threads(), max_subcompactions: default_threads(), compaction_nice: 0 }
    WriteStallOptions {
        l0_slowdown_trigger: 8,
        l0_stop_trigger: 16,
        soft_pending_compaction_bytes: 64 << 30,
        hard_pending_compaction_bytes: 256 << 30,
        delayed_write_rate: 64 << 20,
    }
    FileOptions { max_open_files: 1000, use_direct_reads: false, max_manifest_size: 64 << 20 }
    Limits { max_key_size: 64 << 10, max_value_size: 256 << 20, max_batch_size: 1 << 30 }
}

/// The mnemosyne-elastic policy's default lookups between solves.
const SOLVE_EVERY: u64 = 100_000;

/// The machine's cores, at most 4: background threads beyond that mostly contend for the disk.
fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

impl FilterPolicy {
    /// The policy's kind, as OPTIONS names it.
    pub fn kind(&self) -> BpkPolicy {
        match self {
            FilterPolicy::Uniform => BpkPolicy::Uniform,
            FilterPolicy::Monkey => BpkPolicy::Monkey,
            FilterPolicy::Mnemosyne => BpkPolicy::Mnemosyne,
            FilterPolicy::Optimal => BpkPolicy::Optimal,
            FilterPolicy::Elastic(_) => BpkPolicy::Elastic,
            FilterPolicy::MnemosyneElastic { .. } => BpkPolicy::MnemosyneElastic,
        }
    }

    /// The elastic policies' units; `None` for the other policies.
    pub fn units(&self) -> Option<&ElasticUnits> {
        match self {
            FilterPolicy::Elastic(u) | FilterPolicy::MnemosyneElastic { units: u, .. } => Some(u),
            _ => None,
        }
    }

    /// The elastic policies' units, to change; `None` for the other policies.
    pub fn units_mut(&mut self) -> Option<&mut ElasticUnits> {
        match self {
            FilterPolicy::Elastic(u) | FilterPolicy::MnemosyneElastic { units: u, .. } => Some(u),
            _ => None,
        }
    }
}

/// A policy of that kind with its parameters at their defaults.
impl From<BpkPolicy> for FilterPolicy {
    fn from(kind: BpkPolicy) -> Self {
        match kind {
            BpkPolicy::Uniform => FilterPolicy::Uniform,
            BpkPolicy::Monkey => FilterPolicy::Monkey,
            BpkPolicy::Mnemosyne => FilterPolicy::Mnemosyne,
            BpkPolicy::Optimal => FilterPolicy::Optimal,
            BpkPolicy::Elastic => FilterPolicy::Elastic(ElasticUnits::default()),
            BpkPolicy::MnemosyneElastic => FilterPolicy::MnemosyneElastic {
                units: ElasticUnits::default(),
                solve_every: SOLVE_EVERY,
            },
        }
    }
}

impl Memory {
    /// The budget, switching to the default budget first when memory is sized by hand.
    pub fn budget_mut(&mut self) -> &mut Budget {
        if let Memory::Fixed(_) = self {
            *self = Memory::Budget(Budget::default());
        }
        match self {
            Memory::Budget(b) => b,
            Memory::Fixed(_) => unreachable!("switched above"),
        }
    }

    /// The regions sized by hand, switching to fixed sizes (at their defaults) first when
    /// memory is a budget.
    pub fn fixed_mut(&mut self) -> &mut FixedMemory {
        if let Memory::Budget(_) = self {
            *self = Memory::Fixed(FixedMemory::default());
        }
        match self {
            Memory::Fixed(f) => f,
            Memory::Budget(_) => unreachable!("switched above"),
        }
    }

    fn budget(&self) -> Option<&Budget> {
        match self {
            Memory::Budget(b) => Some(b),
            Memory::Fixed(_) => None,
        }
    }

    fn fixed(&self) -> Option<&FixedMemory> {
        match self {
            Memory::Fixed(f) => Some(f),
            Memory::Budget(_) => None,
        }
    }
}

impl Budget {
    /// The tuner's parameters, turning it on (at its defaults) first when it is off.
    pub fn tuner_mut(&mut self) -> &mut Tuner {
        self.tuner.get_or_insert_with(Tuner::default)
    }
}

impl Options {
    /// The memory-adaptive configuration for one budget: `bytes` split between write memory,
    /// the block cache and filter memory, and the memory tuner moving memory between them at
    /// run time. Other settings as in `Options::default()`.
    pub fn with_memory(bytes: usize) -> Options {
        Options {
            memory: Memory::Budget(Budget {
                bytes,
                ..Budget::default()
            }),
            ..Options::default()
        }
    }

    /// Fixed region sizes: `write_memory` for all memtables, memtables of `memtable_size`,
    /// and a block cache of `block_cache` bytes; the other settings as in
    /// `Options::default()`.
    pub fn with_fixed_memory(write_memory: usize, memtable_size: usize, block_cache: usize) -> Options {
        Options {
            memory: Memory::Fixed(FixedMemory {
                write_memory,
                memtable_size,
                block_cache: CacheSource::Own(block_cache),
                ..FixedMemory::default()
            }),
            ..Options::default()
        }
    }

    /// The region sizes these options start with: under a budget, its split (write memory,
    /// memtables at half of it, filter memory for the elastic policies, the rest block cache
    /// holding the index blocks), the tuner's floor and its ghost cache; otherwise the sizes
    /// given.
    pub(crate) fn regions(&self) -> Regions {
        let ghost = self.cache.ghost_cache;
        match &self.memory {
            Memory::Fixed(f) => Regions {
                budget: 0,
                write_memory: f.write_memory,
                memtable_size: f.memtable_size,
                filter_memory: f.filter_memory,
                block_cache: match &f.block_cache {
                    CacheSource::Own(n) => *n,
                    CacheSource::Shared(c) => c.capacity(),
                },
                shared_cache: match &f.block_cache {
                    CacheSource::Own(_) => None,
                    CacheSource::Shared(c) => Some(c.clone()),
                },
                index_in_block_cache: f.index_in_block_cache,
                ghost_cache: ghost,
                tuner: None,
            },
            Memory::Budget(b) => {
                let budget = b.bytes as f64;
                let write = ((budget * b.write_share) as usize).max(2);
                let filter = if self.filters.policy.kind().is_elastic() {
                    (budget * b.filter_share) as usize
                } else {
                    0
                };
                let memtable_size = match self.memtable.component {
                    MemoryComponent::Monolithic => write / 2,
                    // A partitioned component keeps levels of runs this size (M1 holds 10).
                    MemoryComponent::Partitioned => (write / 16).max(1),
                };
                let tuner = b.tuner.clone().map(|t| Tuner {
                    floor: if t.floor == 0 { auto_floor(b.bytes) } else { t.floor },
                    ..t
                });
                Regions {
                    budget: b.bytes,
                    write_memory: write,
                    memtable_size,
                    filter_memory: filter,
                    block_cache: b.bytes.saturating_sub(write + filter),
                    shared_cache: None,
                    index_in_block_cache: true,
                    ghost_cache: if tuner.is_some() && ghost == 0 {
                        TUNER_GHOST_BYTES
                    } else {
                        ghost
                    },
                    tuner,
                }
            }
        }
    }
}

/// The tuner's floor when `memory.tuner_floor` is 0: the paper's 32 MiB, or a sixteenth of
/// the budget when that is smaller.
fn auto_floor(budget: usize) -> usize {
    (32 << 20).min(budget / 16)
}

/// The regions' starting sizes, derived from [`Options::memory`] at open: what the engine sizes
/// its memtables, block cache, filter memory and tuner from (the tuner moves them later).
#[derive(Debug, Clone)]
pub(crate) struct Regions {
    /// The budget; 0 with fixed sizes.
    pub budget: usize,
    pub write_memory: usize,
    pub memtable_size: usize,
    pub filter_memory: usize,
    /// The block cache's capacity (a shared cache's own).
    pub block_cache: usize,
    pub shared_cache: Option<Arc<BlockCache>>,
    pub index_in_block_cache: bool,
    /// Simulated bytes of the ghost cache (128 MiB for the tuner when not set).
    pub ghost_cache: usize,
    /// The tuner, with its floor resolved.
    pub tuner: Option<Tuner>,
}
