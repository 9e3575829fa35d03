//! The options a user holds: settings in groups, and the alternatives that exclude each other
//! (one budget or fixed region sizes; the tuner on or off; an own or a shared block cache;
//! each filter policy with its parameters) as enums, so that such a conflict cannot be
//! written.
//!
//! The option table in `mod.rs` stays the one list of names, defaults, ranges and docs: these
//! types convert to and from its flat [`Settings`] (the text form of `Options::set` and the
//! OPTIONS file, and what the engine reads), and every default here is taken from it.

use super::{invalid, BpkPolicy, FlushPolicy, LevelTargets, MemoryComponent, MergePolicyKind, Settings};
use crate::cache::BlockCache;
use crate::env::FileSystem;
use crate::error::Result;
use crate::sst::Compression;
use crate::wal::RecoveryMode;
use std::path::Path;
use std::sync::Arc;

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
/// (for example filter memory for a policy that loads no filter units), fails with
/// [`Error::InvalidOptions`](crate::Error::InvalidOptions) naming it.
///
/// **Reopening.** The database's configuration (every setting whose scope is "stored" in
/// `docs/options.md`: filters, range filter, memory, memtable, compaction, table format,
/// limits) is kept from its OPTIONS file for each setting these options leave at its default;
/// a setting given another value replaces the stored one. `keep_stored = false` applies these
/// options exactly as given. [`crate::Db::options`] shows what an open used.
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
    /// The merge operator `Db::merge` operands are combined with (`merge_operator`; default
    /// none). Built-ins: [`UInt64Add`](crate::merge::UInt64Add),
    /// [`StringAppend`](crate::merge::StringAppend), also by name with
    /// `Options::set("merge_operator", "uint64add")`.
    pub merge_operator: Option<Arc<dyn crate::merge::MergeOperator>>,
    /// Times to live by tree (`ttl`, e.g. `Options::set("ttl", "sessions=30m")`).
    pub ttl: crate::ttl::TreeTtls,
    /// Where expiry reads the time (default [`SystemClock`](crate::ttl::SystemClock); tests
    /// give a [`ManualClock`](crate::ttl::ManualClock)).
    pub clock: Arc<dyn crate::ttl::Clock>,
    /// Asked about values during compactions ([`crate::compaction_filter`]); not stored: give
    /// it at every open.
    pub compaction_filter: Option<Arc<dyn crate::compaction_filter::CompactionFilter>>,
}

/// How memory is sized.
#[derive(Debug, Clone)]
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
#[derive(Debug, Clone)]
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

/// The block cache's pools and the ghost cache.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheOptions {
    /// Share of the engine's own block cache reserved for filter units and other meta blocks
    /// (`cache.high_pri_pool_ratio`).
    pub high_pri_pool_ratio: f64,
    /// Cached blocks in transparent huge pages from a 256 MiB cache (`cache.huge_pages`).
    pub huge_pages: bool,
    /// Simulated bytes of the ghost cache; 0: off, or 128 MiB with the tuner
    /// (`memory.ghost_cache`).
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
    pub unit_format: super::UnitFormat,
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
    pub kind: super::RangeFilterKind,
    /// Bits by the empty range reads each table's data received (`range_filter.by_workload`).
    pub by_workload: bool,
    /// Key bytes skipped before the 8-byte projection (`range_filter.key_offset`).
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
}

/// A policy of that kind with its parameters at their defaults.
impl From<BpkPolicy> for FilterPolicy {
    fn from(kind: BpkPolicy) -> Self {
        let s = Settings {
            bpk_policy: kind,
            ..Settings::default()
        };
        FilterPolicy::of(&s)
    }
}

impl FilterPolicy {
    fn of(s: &Settings) -> FilterPolicy {
        match s.bpk_policy {
            BpkPolicy::Uniform => FilterPolicy::Uniform,
            BpkPolicy::Monkey => FilterPolicy::Monkey,
            BpkPolicy::Mnemosyne => FilterPolicy::Mnemosyne,
            BpkPolicy::Optimal => FilterPolicy::Optimal,
            BpkPolicy::Elastic => FilterPolicy::Elastic(ElasticUnits::of(s)),
            BpkPolicy::MnemosyneElastic => FilterPolicy::MnemosyneElastic {
                units: ElasticUnits::of(s),
                solve_every: s.elastic_solve_every,
            },
        }
    }
}

impl Memory {
    fn of(s: &Settings) -> Memory {
        if s.memory_budget > 0 {
            Memory::Budget(Budget::of(s))
        } else {
            Memory::Fixed(FixedMemory::of(s))
        }
    }
}

impl Budget {
    fn of(s: &Settings) -> Budget {
        Budget {
            bytes: s.memory_budget,
            write_share: s.memory_write_share,
            filter_share: s.memory_filter_share,
            tuner: s.memory_tuner.then(|| Tuner::of(s)),
        }
    }
}

impl FixedMemory {
    fn of(s: &Settings) -> FixedMemory {
        FixedMemory {
            write_memory: s.write_memory_budget,
            memtable_size: s.write_buffer_size,
            block_cache: match &s.block_cache {
                Some(c) => CacheSource::Shared(c.clone()),
                None => CacheSource::Own(s.block_cache_size),
            },
            filter_memory: s.filter_memory,
            index_in_block_cache: s.index_in_block_cache,
        }
    }
}

/// The defaults of each group, from the option table.
macro_rules! defaults_from_table {
    ($($t:ty => $of:expr),* $(,)?) => {$(
        impl Default for $t {
            fn default() -> Self {
                $of(&Settings::default())
            }
        }
    )*};
}
defaults_from_table!(
    Options => Options::of,
    Budget => Budget::of,
    FixedMemory => FixedMemory::of,
    FilterOptions => FilterOptions::of,
);

/// The groups whose fields map one to one onto settings, each pair listed once: `of` reads
/// the group from the settings, `store` writes it back, and its defaults are the table's.
macro_rules! plain_groups {
    ($($ty:ident { $($field:ident: $setting:ident),* $(,)? })*) => {$(
        impl $ty {
            fn of(s: &Settings) -> $ty {
                $ty { $($field: s.$setting),* }
            }

            fn store(&self, s: &mut Settings) {
                $(s.$setting = self.$field;)*
            }
        }

        impl Default for $ty {
            fn default() -> Self {
                $ty::of(&Settings::default())
            }
        }
    )*};
}
plain_groups! {
    Tuner {
        period_ms: memory_tuner_period_ms,
        floor: memory_tuner_floor,
        write_weight: memory_tuner_write_weight,
        filters: memory_tuner_filters,
    }
    ElasticUnits {
        units: elastic_units,
        unit_bits_per_key: elastic_unit_bpk,
        life_time: elastic_life_time,
        interval_ms: elastic_interval_ms,
    }
    CacheOptions {
        high_pri_pool_ratio: high_pri_pool_ratio,
        huge_pages: cache_huge_pages,
        ghost_cache: ghost_cache_size,
    }
    MemtableOptions {
        flush_policy: flush_policy,
        component: memory_component,
        partitioned_size_ratio: memory_size_ratio,
        partitioned_flush_beta: memory_flush_beta,
    }
    WalOptions {
        max_size: max_wal_size,
        recovery_mode: wal_recovery_mode,
    }
    TableFormat {
        block_size: block_size,
        restart_interval: block_restart_interval,
        index_restart_interval: index_restart_interval,
        hash_index: data_block_hash_index,
        compression: compression,
    }
    RangeFilterOptions {
        bits_per_key: range_filter_bits_per_key,
        kind: range_filter_kind,
        by_workload: range_filter_by_workload,
        key_offset: range_filter_key_offset,
        max_depth: range_filter_max_depth,
        probe_budget: range_filter_probe_budget,
        memory_share: range_filter_memory_share,
        round_ms: range_filter_round_ms,
    }
    CompactionOptions {
        merge_policy: merge_policy,
        size_ratio: size_ratio,
        l0_trigger: l0_compaction_trigger,
        max_bytes_for_level_base: max_bytes_for_level_base,
        level_targets: level_targets,
        target_file_size: target_file_size,
        max_levels: max_levels,
    }
    BackgroundOptions {
        compaction_threads: compaction_threads,
        max_subcompactions: max_subcompactions,
        compaction_nice: compaction_nice,
    }
    WriteStallOptions {
        l0_slowdown_trigger: l0_slowdown_trigger,
        l0_stop_trigger: l0_stop_trigger,
        soft_pending_compaction_bytes: soft_pending_compaction_bytes,
        hard_pending_compaction_bytes: hard_pending_compaction_bytes,
        delayed_write_rate: delayed_write_rate,
    }
    FileOptions {
        max_open_files: max_open_files,
        use_direct_reads: use_direct_reads,
        max_manifest_size: max_manifest_size,
    }
    Limits {
        max_key_size: max_key_size,
        max_value_size: max_value_size,
        max_batch_size: max_batch_size,
    }
}

impl FilterOptions {
    fn of(s: &Settings) -> FilterOptions {
        FilterOptions {
            bits_per_key: s.bloom_bits_per_key,
            policy: FilterPolicy::of(s),
            segment_size: s.segment_size,
            merlin_window: s.merlin_window,
            unit_format: s.filter_unit_format,
        }
    }
}

impl Options {
    /// The options of these settings (taken through `sizing`, so that a budget and fixed
    /// sizes are not both set): a setting the chosen alternatives leave out is dropped.
    pub(crate) fn of(s: &Settings) -> Options {
        Options {
            fs: s.fs.clone(),
            create_if_missing: s.create_if_missing,
            error_if_exists: s.error_if_exists,
            keep_stored: s.keep_stored,
            malloc_mmap_threshold: s.malloc_mmap_threshold,
            memory: Memory::of(s),
            cache: CacheOptions::of(s),
            memtable: MemtableOptions::of(s),
            wal: WalOptions::of(s),
            table: TableFormat::of(s),
            filters: FilterOptions::of(s),
            range_filter: RangeFilterOptions::of(s),
            compaction: CompactionOptions::of(s),
            background: BackgroundOptions::of(s),
            write_stalls: WriteStallOptions::of(s),
            files: FileOptions::of(s),
            limits: Limits::of(s),
            merge_operator: s.merge_op.clone().or_else(|| crate::merge::by_name(&s.merge_operator)),
            ttl: s.ttl.clone(),
            clock: s.clock.clone(),
            compaction_filter: s.compaction_filter.clone(),
        }
    }

    /// These options as the table's flat settings; the alternatives not chosen keep their
    /// defaults. A budget of 0 bytes is refused: fixed sizes are `Memory::Fixed`.
    pub(crate) fn settings(&self) -> Result<Settings> {
        let mut s = Settings {
            fs: self.fs.clone(),
            create_if_missing: self.create_if_missing,
            error_if_exists: self.error_if_exists,
            keep_stored: self.keep_stored,
            malloc_mmap_threshold: self.malloc_mmap_threshold,
            merge_op: self.merge_operator.clone().filter(|op| !op.is_stand_in()),
            merge_operator: crate::merge::MergeName(
                self.merge_operator.as_ref().map_or_else(String::new, |op| op.name()),
            ),
            ttl: self.ttl.clone(),
            clock: self.clock.clone(),
            compaction_filter: self.compaction_filter.clone(),
            ..Settings::default()
        };
        match &self.memory {
            Memory::Budget(b) => {
                if b.bytes == 0 {
                    return Err(invalid(
                        "memory_budget",
                        "memory.budget = 0 B: a budget needs bytes; for regions sized by hand use Memory::Fixed",
                    ));
                }
                s.memory_budget = b.bytes;
                s.memory_write_share = b.write_share;
                s.memory_filter_share = b.filter_share;
                s.memory_tuner = b.tuner.is_some();
                if let Some(t) = &b.tuner {
                    t.store(&mut s);
                }
            }
            Memory::Fixed(f) => {
                s.memory_budget = 0;
                s.memory_tuner = false;
                s.write_memory_budget = f.write_memory;
                s.write_buffer_size = f.memtable_size;
                match &f.block_cache {
                    CacheSource::Own(n) => s.block_cache_size = *n,
                    CacheSource::Shared(c) => s.block_cache = Some(c.clone()),
                }
                s.filter_memory = f.filter_memory;
                s.index_in_block_cache = f.index_in_block_cache;
            }
        }
        self.cache.store(&mut s);
        self.memtable.store(&mut s);
        self.wal.store(&mut s);
        self.table.store(&mut s);
        let f = &self.filters;
        s.bloom_bits_per_key = f.bits_per_key;
        s.bpk_policy = f.policy.kind();
        s.segment_size = f.segment_size;
        s.merlin_window = f.merlin_window;
        s.filter_unit_format = f.unit_format;
        if let FilterPolicy::Elastic(u) | FilterPolicy::MnemosyneElastic { units: u, .. } = &f.policy {
            u.store(&mut s);
        }
        if let FilterPolicy::MnemosyneElastic { solve_every, .. } = f.policy {
            s.elastic_solve_every = solve_every;
        }
        self.range_filter.store(&mut s);
        self.compaction.store(&mut s);
        self.background.store(&mut s);
        self.write_stalls.store(&mut s);
        self.files.store(&mut s);
        self.limits.store(&mut s);
        Ok(s)
    }

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

    /// Sets the option `name` from its text form. `name` is the option's name in OPTIONS and
    /// `docs/options.md` (`memory.budget`, `filters.policy`) or its flat name of earlier
    /// releases (`memory_budget`, `bpk_policy`). Sizes take binary units (`64MiB`, `1.5 GiB`,
    /// `4k`), enums their names (`mnemosyne-elastic`). Setting a region's size by hand
    /// (`memory.write_memory`, `memtable.size`, `memory.block_cache`, …) while the budget is
    /// at its default selects fixed sizes; `memory.budget = 0` does too.
    /// `format_version` and `comparator` are accepted only with the values this build writes.
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown name (with the closest known names);
    /// `InvalidOptions` naming the option when the value does not parse (an enum's error lists
    /// its valid names), or when it has no place under the alternatives chosen (an elastic
    /// unit setting under `filters.policy = mnemosyne`: set the policy first; a region size
    /// beside an explicit budget). Ranges and the other combinations are checked by
    /// [`validate`](Self::validate) at open.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        self.set_all([(name, value)])
    }

    /// [`set`](Self::set) for several options at once, in any order: the alternatives are
    /// chosen after all of them are applied (`filters.elastic_units` may come before
    /// `filters.policy = elastic`). Nothing changes when one fails.
    ///
    /// # Errors
    /// As [`set`](Self::set), for the first option that fails.
    pub fn set_all<'a>(&mut self, options: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<()> {
        let mut s = self.settings()?;
        for (name, value) in options {
            s.set(name, value)?;
        }
        *self = Options::held(s.sizing())?;
        Ok(())
    }

    /// The options of `s`, refusing a setting the chosen alternatives cannot hold (it would be
    /// dropped): the error names it and says why it has no effect.
    fn held(s: Settings) -> Result<Options> {
        let o = Options::of(&s);
        let back = o.settings()?;
        for sp in super::SPECS {
            if (sp.get)(&s) != (sp.get)(&back) {
                return Err(invalid(
                    sp.field,
                    format!("{} = {} has no effect: {}", sp.name, sp.show(&s), sp.when.why_not(&s)),
                ));
            }
        }
        Ok(o)
    }

    /// The value of the option `name` as OPTIONS writes it (names as for
    /// [`set`](Self::set)); `None` for an unknown name.
    pub fn get(&self, name: &str) -> Option<String> {
        let s = self.settings().ok()?;
        super::file::find(name).map(|sp| (sp.get)(&s))
    }

    /// Checks every option as given: each value in its range, no setting that has no effect
    /// under the others away from its default, and the settings that relate to each other
    /// consistent. The error names the option (the one the caller changed, where several are
    /// involved), shows the values and, for an enum, its valid choices.
    pub fn validate(&self) -> Result<()> {
        self.settings()?.validate()
    }

    /// These options with every setting stored in the newest OPTIONS file of the database in
    /// `dir` applied (what the database was last opened with); unchanged when it has none.
    /// Settings this build does not know (written by a newer one) are skipped, and so are
    /// those about one open (`create_if_missing`, `error_if_exists`, `keep_stored`).
    ///
    /// # Errors
    /// `Corruption` for a damaged OPTIONS file or a stored value that does not parse; I/O
    /// errors.
    pub fn with_stored(self, dir: &Path) -> Result<Options> {
        Ok(Options::of(&self.settings()?.with_stored(dir)?.sizing()))
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

impl Memory {
    /// The budget, switching to the default budget first when memory is sized by hand.
    pub fn budget_mut(&mut self) -> &mut Budget {
        match self {
            Memory::Budget(b) => b,
            Memory::Fixed(_) => {
                *self = Memory::Budget(Budget::default());
                self.budget_mut()
            }
        }
    }

    /// The regions sized by hand, switching to fixed sizes (at their defaults) first when
    /// memory is a budget.
    pub fn fixed_mut(&mut self) -> &mut FixedMemory {
        match self {
            Memory::Fixed(f) => f,
            Memory::Budget(_) => {
                *self = Memory::Fixed(FixedMemory::default());
                self.fixed_mut()
            }
        }
    }
}

impl Budget {
    /// The tuner's parameters, turning it on (at its defaults) first when it is off.
    pub fn tuner_mut(&mut self) -> &mut Tuner {
        self.tuner.get_or_insert_with(Tuner::default)
    }
}

impl FilterPolicy {
    /// The elastic policies' units; `None` for the other policies.
    pub fn units_mut(&mut self) -> Option<&mut ElasticUnits> {
        match self {
            FilterPolicy::Elastic(u) | FilterPolicy::MnemosyneElastic { units: u, .. } => Some(u),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::SPECS;
    use super::*;
    use crate::error::Error;

    fn refused(e: Result<()>) -> (&'static str, String) {
        match e {
            Err(Error::InvalidOptions { option, reason }) => (option, reason),
            other => panic!("accepted: {other:?}"),
        }
    }

    /// The typed defaults are the table's, and every setting survives typed → flat → typed:
    /// each one given a value other than its default (with the alternative that holds it
    /// chosen) reads back the same through `Options`.
    #[test]
    fn every_setting_round_trips_through_the_groups() {
        let flat = |o: &Options| o.settings().unwrap().to_map();
        assert_eq!(flat(&Options::default()), Settings::default().to_map());
        let budget = [("filters.policy", "mnemosyne-elastic")];
        let fixed = [("memory.budget", "0"), ("filters.policy", "elastic")];
        for sp in SPECS {
            let mut o = Options::default();
            let select: &[(&str, &str)] = if sp.when.label().contains("memory.budget = 0") {
                &fixed
            } else {
                &budget
            };
            o.set_all(select.iter().copied()).unwrap();
            let other = match sp.kind {
                super::super::spec::Kind::Bool => ((sp.get)(&o.settings().unwrap()) == "false").to_string(),
                super::super::spec::Kind::Choice => sp
                    .choices
                    .last()
                    .map_or("", |c| c.split(' ').next().unwrap_or(c))
                    .replace(":C", ":0.5"),
                _ => "3".into(),
            };
            let other = if sp.field == "merge_policy" {
                "garnering:0.5".to_string()
            } else {
                other
            };
            if sp.field == "memory_budget" {
                continue; // covered by the budget tests below
            }
            // The flat name of earlier releases sets the same setting.
            let mut by_alias = o.clone();
            by_alias
                .set(sp.field, &other)
                .unwrap_or_else(|e| panic!("{}: {e}", sp.field));
            assert_eq!(by_alias.get(sp.name).as_deref(), Some(other.as_str()), "{}", sp.field);
            o.set(sp.name, &other).unwrap_or_else(|e| panic!("{}: {e}", sp.name));
            let s = o.settings().unwrap();
            assert_eq!((sp.get)(&s), other, "{} through the groups", sp.name);
            assert_eq!(o.get(sp.name).as_deref(), Some(other.as_str()));
            assert_eq!(o.get(sp.field).as_deref(), Some(other.as_str()));
            assert_eq!(Options::of(&s).settings().unwrap().to_map(), s.to_map(), "{}", sp.name);
        }
        assert_eq!(Options::default().get("no.such"), None);
    }

    /// What the types cannot hold is refused by name, naming the setting and why; in one
    /// `set_all` the order does not matter.
    #[test]
    fn set_refuses_what_the_alternatives_cannot_hold() {
        let mut o = Options::default();
        let (option, why) = refused(o.set("filters.elastic_units", "8"));
        assert_eq!(option, "elastic_units");
        assert!(why.contains("filters.policy = mnemosyne"), "{why}");
        assert_eq!(o.filters.policy, FilterPolicy::Mnemosyne, "nothing changed");
        o.set_all([("filters.elastic_units", "8"), ("filters.policy", "elastic")])
            .unwrap();
        assert_eq!(o.filters.policy.units_mut().map(|u| u.units), Some(8));

        // A region by hand beside an explicit budget (the budget used to win silently).
        let mut o = Options::default();
        o.set("memory.budget", "64MiB").unwrap();
        let (option, why) = refused(o.set("memory.write_memory", "512MiB"));
        assert_eq!(option, "write_memory_budget");
        assert!(
            why.contains("512 MiB") && why.contains("memory.budget = 64 MiB"),
            "{why}"
        );
        // With the budget at its default, a region by hand selects fixed sizes.
        let mut o = Options::default();
        o.set_all([("write_memory_budget", "512MiB"), ("block_cache_size", "1GiB")])
            .unwrap();
        match &o.memory {
            Memory::Fixed(f) => {
                assert_eq!(f.write_memory, 512 << 20);
                assert!(matches!(f.block_cache, CacheSource::Own(n) if n == 1 << 30));
            }
            Memory::Budget(_) => panic!("a region by hand selects fixed sizes"),
        }
        // ... and `memory.budget` then switches back, refusing the regions set by hand.
        let (option, _) = refused(o.clone().set("memory.budget", "64MiB"));
        assert_eq!(option, "write_memory_budget");
        // The tuner's parameters without the tuner.
        let mut o = Options::default();
        o.set("memory.tuner", "false").unwrap();
        assert!(matches!(&o.memory, Memory::Budget(b) if b.tuner.is_none()));
        assert_eq!(
            refused(o.set("memory.tuner_period_ms", "5")).0,
            "memory_tuner_period_ms"
        );
        // A budget of no bytes.
        let o = Options {
            memory: Memory::Budget(Budget {
                bytes: 0,
                ..Budget::default()
            }),
            ..Options::default()
        };
        let (option, why) = refused(o.validate());
        assert_eq!(option, "memory_budget");
        assert!(why.contains("Memory::Fixed"), "{why}");
    }

    /// The combinations the types leave possible are refused at validation, naming the
    /// setting: the cases the flat options used to ignore.
    #[test]
    fn what_the_types_allow_is_validated() {
        // Filter memory with a policy that loads no units.
        let mut o = Options::with_fixed_memory(128 << 20, 64 << 20, 32 << 20);
        o.memory.fixed_mut().filter_memory = 8 << 20;
        let (option, why) = refused(o.validate());
        assert_eq!(option, "filter_memory");
        assert!(why.contains("filters.policy = mnemosyne"), "{why}");
        // No bits per key with an elastic policy and nothing else to size filter memory.
        let mut o = Options::with_fixed_memory(128 << 20, 64 << 20, 32 << 20);
        o.filters.bits_per_key = 0.0;
        o.filters.policy = BpkPolicy::MnemosyneElastic.into();
        assert_eq!(refused(o.validate()).0, "bloom_bits_per_key");
        // A tuner floor above a starting region.
        let mut o = Options::with_memory(64 << 20);
        o.memory.budget_mut().tuner_mut().floor = 32 << 20;
        let (option, why) = refused(o.validate());
        assert_eq!(option, "memory_tuner_floor");
        assert!(why.contains("32 MiB") && why.contains("16 MiB"), "{why}");
        // Partitioned parameters with a monolithic component.
        let mut o = Options::default();
        o.memtable.partitioned_size_ratio = 4;
        assert_eq!(refused(o.validate()).0, "memory_size_ratio");
        o.memtable.component = MemoryComponent::Partitioned;
        o.validate().unwrap();
        // glibc's mmap threshold is at most 32 MiB.
        let o = Options {
            malloc_mmap_threshold: 64 << 20,
            ..Options::default()
        };
        let (option, why) = refused(o.validate());
        assert_eq!(option, "malloc_mmap_threshold");
        assert!(why.contains("64 MiB") && why.contains("32 MiB"), "{why}");
    }
}
