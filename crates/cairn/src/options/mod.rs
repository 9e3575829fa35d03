//! Options: what a user holds ([`Options`], in groups, with enums for the alternatives that
//! exclude each other; `groups.rs`) and the flat settings behind it, validated at open and
//! persisted in an OPTIONS file (spec: `docs/format/options.md`; every option:
//! `docs/options.md`).
//!
//! One table (the `options!` invocation below) lists every setting once: its field, default,
//! name in OPTIONS and `Options::set` (`group.setting`; the field's name is an alias), where
//! `Options` holds it, how its text is read, its valid range, whether a reopen keeps the stored
//! value, and when it has an effect. The flat `Settings`, its `Default`, `set`, the OPTIONS
//! file, range validation and the generated docs table all come from it; `validate` adds the
//! checks that relate several settings.

mod file;
mod groups;
mod spec;

pub(crate) use file::check_compatible;
pub use file::parse_options_file;
pub use groups::{
    BackgroundOptions, Budget, CacheOptions, CacheSource, CompactionOptions, ElasticUnits, FileOptions, FilterOptions,
    FilterPolicy, FixedMemory, Limits, Memory, MemtableOptions, Options, RangeFilterOptions, TableFormat, Tuner,
    WalOptions, WriteStallOptions,
};
pub(crate) use spec::{show_bytes, Spec};

use crate::cache::BlockCache;
use crate::env::{FileSystem, StdFs};
use crate::error::{Error, Result};
use crate::sst::Compression;
use crate::wal::RecoveryMode;
use spec::{above, within, Cond, Kind, OptionValue, Scope, ANY};
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

/// The kind of a [`FilterPolicy`], as OPTIONS names it: how point-filter memory is spread over
/// files (`docs/design.md`, the point filters).
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

/// The layout of point-filter units in new tables (`filters.unit_format`; tables record it
/// per unit, so both are read whatever the setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnitFormat {
    /// Probes spread over the whole unit (up to one cache line each).
    Standard,
    /// Every probe of a key in one 64-byte line: one cache miss per unit, a slightly higher
    /// false-positive rate at the same bits (`docs/format/sst.md`, filter units). The default.
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

/// The kind of range filter new tables get (`range_filter.kind`; the metaindex records each
/// table's, so both are read whatever the setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RangeFilterKind {
    /// Rosetta: prefix Bloom filters per height, probed over a range's dyadic intervals; can
    /// narrow a read to the data blocks that may hold the range's keys. The default.
    #[default]
    Rosetta,
    /// Grafite: one hash and one Elias–Fano successor search per range whatever its length,
    /// false-positive rate at most ℓ / 2^(bits_per_key − 2) for ℓ projection values, whatever
    /// the keys and queries (`docs/format/sst.md`, range filter).
    Grafite,
}

impl RangeFilterKind {
    /// How fast the kind's false-positive rate falls per bit per key (the by-workload
    /// allocation's model, `e^(−decay · bpk)` up to a factor): Rosetta's levels are Bloom
    /// filters, Grafite's bound halves per bit.
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
    /// Luo & Carey §4.1.3: capacities anchored at the deepest level (each level above
    /// `size_ratio` times smaller), and L1 added or removed as the tree's share of write memory
    /// shrinks or grows (an L1 whose target exceeds write memory × `size_ratio` gets a new L1
    /// above it; L1 goes when L2's target falls below write memory × `size_ratio` / 1.5). Meant
    /// for the memory tuner, which moves write memory at run time.
    WriteMemory,
}

/// `name()` (as OPTIONS spells it) and `parse(name)` for the setting enums.
macro_rules! named {
    ($($t:ty),*) => {$(
        impl $t {
            /// The setting's name (as in OPTIONS).
            pub fn name(self) -> &'static str {
                self.label()
            }

            /// The setting named `name`.
            pub fn parse(name: &str) -> Option<Self> {
                <Self as OptionValue>::parse(name, Kind::Choice).ok()
            }
        }
    )*};
}
named!(
    BpkPolicy,
    FlushPolicy,
    MemoryComponent,
    LevelTargets,
    UnitFormat,
    RangeFilterKind
);

impl BpkPolicy {
    /// Whether filter units are loaded and unloaded at run time (ElasticBF).
    pub fn is_elastic(self) -> bool {
        matches!(self, BpkPolicy::Elastic | BpkPolicy::MnemosyneElastic)
    }
}

/// The struct, its defaults and the option table from one list. Each setting:
/// `field: type = default => "group.name", kind, valid range, scope, when it has an effect`,
/// and where [`Options`] holds it when that is not at `group.name`.
macro_rules! options {
    (
        $(#[doc = $sdoc:literal])*
        pub struct Settings {
            $( $(#[doc = $fdoc:literal])* pub $fixed:ident : $fixed_ty:ty = $fixed_default:expr, )*
            ;
            $(
                $(#[doc = $doc:literal])*
                pub $field:ident: $ty:ty = $default:expr
                    => $name:literal, $kind:ident, $range:expr, $scope:ident, $when:ident $(, $path:literal)?;
            )*
        }
    ) => {
        $(#[doc = $sdoc])*
        #[derive(Clone)]
        pub(crate) struct Settings {
            $( $(#[doc = $fdoc])* pub $fixed: $fixed_ty, )*
            $( $(#[doc = $doc])* pub $field: $ty, )*
        }

        impl Default for Settings {
            fn default() -> Self {
                Settings { $($fixed: $fixed_default,)* $($field: $default,)* }
            }
        }

        /// Every setting, in the order of the struct.
        pub(crate) static SPECS: &[Spec] = &[$(
            Spec {
                name: $name,
                field: stringify!($field),
                path: [$($path,)? $name][0],
                kind: Kind::$kind,
                range: $range,
                scope: Scope::$scope,
                when: Cond::$when,
                doc: concat!($($doc, "\n"),*),
                get: |o| OptionValue::show(&o.$field),
                number: |o| OptionValue::number(&o.$field),
                set: |o, v| {
                    o.$field = OptionValue::parse(v, Kind::$kind)?;
                    Ok(())
                },
                choices: <$ty as OptionValue>::CHOICES,
            },
        )*];
    };
}

const MIB: f64 = (1u64 << 20) as f64;
const GIB: f64 = (1u64 << 30) as f64;
const INF: f64 = f64::INFINITY;

options! {
    /// Every setting, flat, as the option table lists it: the text form (`Options::set`, the
    /// OPTIONS file) and what the engine reads. Users hold [`Options`], which converts to and
    /// from it.
    pub struct Settings {
        /// File system (default: real files). Tests pass `MemFs` or `FaultFs`.
        pub fs: Arc<dyn FileSystem> = Arc::new(StdFs::new()),
        /// A block cache to share between databases (default none: the engine makes its own of
        /// `memory.block_cache`, or of its share of `memory.budget`).
        pub block_cache: Option<Arc<BlockCache>> = None,
        /// The merge operator (`Db::merge`), when given as an object; otherwise the engine makes
        /// the built-in `merge_operator` names.
        pub merge_op: Option<Arc<dyn crate::merge::MergeOperator>> = None,
        /// Where expiry reads the time (default: the system clock).
        pub clock: Arc<dyn crate::ttl::Clock> = Arc::new(crate::ttl::SystemClock),
        /// The user's compaction filter (default none).
        pub compaction_filter: Option<Arc<dyn crate::compaction_filter::CompactionFilter>> = None,
        ;
        /// Create the directory and database if missing (default true).
        pub create_if_missing: bool = true => "create_if_missing", Bool, ANY, Open, Always;
        /// Fail if the database exists (default false).
        pub error_if_exists: bool = false => "error_if_exists", Bool, ANY, Open, Always;
        /// Keep the database's stored configuration for the settings these options leave at
        /// their defaults (default true); false: use these options exactly as given.
        pub keep_stored: bool = true => "keep_stored", Bool, ANY, Open, Always;
        /// glibc only: fix malloc's mmap threshold at this many bytes at open (default 128 KiB,
        /// glibc's starting value; 0: leave the allocator alone). glibc raises the threshold
        /// each time a large block (a memtable's arena, a compaction's buffer) is freed, after
        /// which such blocks come from its heaps and stay with the process: a load at a 64 MiB
        /// budget peaked at 102-117 MB of RSS with it, 71 MB without. Process-wide: the first
        /// open that applies it decides, and `MALLOC_MMAP_THRESHOLD_` in the environment wins.
        /// Above 0, the heaps' free memory is also returned (`malloc_trim`) when the memory
        /// tuner or `Db::resize_memory` shrinks the block cache or filter memory.
        pub malloc_mmap_threshold: usize = 128 << 10
            => "malloc_mmap_threshold", Bytes, within(0.0, 32.0 * MIB), Open, Glibc;

        /// The merge operator that `Db::merge` operands are combined with (default none: merges
        /// are refused): `uint64add` (8-byte little-endian sums), `stringappend` (joined with
        /// `,`), `stringappend:DELIMITER`, or the name of the operator given as
        /// `Options.merge_operator`. Stored: a database written with one opens again only with
        /// an operator of the same name (built-ins are made from their names).
        pub merge_operator: crate::merge::MergeName = crate::merge::MergeName::default()
            => "merge.operator", Choice, ANY, Stored, Always, "merge_operator: Option<Arc<dyn MergeOperator>>";
        /// Times to live by tree (default none): `TREE=DURATION` pairs, e.g.
        /// `sessions=30m,default=7d` (units `ms`, `s`, `m`, `h`, `d`). Each put into such a tree
        /// expires that long after it is written: from then on reads do not return it and
        /// compactions drop it. Applies to values written while it is set; `Db::put_with_ttl`
        /// gives one put its own. Stored.
        pub ttl: crate::ttl::TreeTtls = crate::ttl::TreeTtls::default()
            => "ttl.trees", Choice, ANY, Stored, Always, "ttl: TreeTtls";

        /// One memory budget for write memory, the block cache and filter memory (Luo & Carey
        /// §3; default 256 MiB). It is split into write memory (`memory.write_share` of it;
        /// memtables switch at half of it), filter memory for the elastic policies
        /// (`memory.filter_share`) and the block cache (the rest, which also holds the index
        /// blocks and, for the other policies, the filters), and the memory tuner moves memory
        /// between them. 0: fixed sizes, from `memory.write_memory`, `memtable.size`,
        /// `memory.block_cache` and `memory.filter_memory`; setting one of those (or giving a shared
        /// `block_cache`) and leaving this at its default selects fixed sizes too. 0, or at
        /// least 256 KiB (small budgets are for tests and tiny devices).
        pub memory_budget: usize = DEFAULT_BUDGET => "memory.budget", Bytes, ANY, Stored, Always, "memory: Memory::Budget(Budget { bytes })";
        /// Write memory's starting share of `memory.budget` (default 0.25).
        pub memory_write_share: f64 = 0.25 => "memory.write_share", Float, above(0.0, 0.95), Stored, Budget, "Budget.write_share";
        /// Filter memory's starting share of `memory.budget` under an elastic `filters.policy`
        /// (default 0.1).
        pub memory_filter_share: f64 = 0.1
            => "memory.filter_share", Float, within(0.0, 0.95), Stored, BudgetElastic, "Budget.filter_share";
        /// Run the memory tuner (default true; needs `memory.budget`): every `wal.max_size` of
        /// log, or every `memory.tuner_period_ms` without that much, move memory between write
        /// memory, the block cache and (elastic policies) filter memory where it saves the most
        /// I/O per operation. Turns on a 128 MiB ghost cache when `memory.ghost_cache` is 0.
        pub memory_tuner: bool = true => "memory.tuner", Bool, ANY, Stored, Budget, "Budget.tuner: Some(Tuner)";
        /// The tuner's timer cycle in milliseconds (default 1000; the paper's 10 minutes suit
        /// hour-long phases, and a read phase after a load must not wait that long for its
        /// cache).
        pub memory_tuner_period_ms: u64 = 1000
            => "memory.tuner_period_ms", Count, within(1.0, INF), Stored, Tuner, "Tuner.period_ms";
        /// The least the tuner leaves write memory and the block cache (default 0: 32 MiB, the
        /// paper's, or a sixteenth of `memory.budget` when that is smaller). An explicit floor
        /// must not exceed the regions' starting sizes.
        pub memory_tuner_floor: usize = 0 => "memory.tuner_floor", Bytes, ANY, Stored, Tuner, "Tuner.floor";
        /// ω: the weight of a page write against a page read in the tuner's cost (default 1;
        /// the paper uses 2 on SSDs whose writes cost twice their reads).
        pub memory_tuner_write_weight: f64 = 1.0
            => "memory.tuner_write_weight", Float, within(0.0, INF), Stored, Tuner, "Tuner.write_weight";
        /// Tune filter memory too, as a third region (★ ours; default true; only the elastic
        /// policies have a filter region to tune): false keeps its starting share.
        pub memory_tuner_filters: bool = true => "memory.tuner_filters", Bool, ANY, Stored, TunerElastic, "Tuner.filters";
        /// Write memory shared by all trees' memtables without `memory.budget`: when the
        /// mutable memtables reach 7/8 of it (or all memtables reach it with at least half
        /// mutable) the largest tree's memtable is switched and flushed (default 128 MiB;
        /// RocksDB `db_write_buffer_size`). Changeable at run time with `Db::resize_memory`.
        pub write_memory_budget: usize = 128 << 20
            => "memory.write_memory", Bytes, within(1.0, INF), Stored, NoBudget, "memory: Memory::Fixed(FixedMemory { write_memory })";
        /// Block cache capacity without `memory.budget` and `block_cache` (default 32 MiB).
        pub block_cache_size: usize = 32 << 20 => "memory.block_cache", Bytes, ANY, Stored, OwnCache, "FixedMemory.block_cache: CacheSource::Own(bytes)";
        /// Bytes of loaded filter units for the elastic policies without `memory.budget`
        /// (default 0: `filters.bits_per_key` bits per live key, following the data). Changeable
        /// at run time with `Db::resize_memory`.
        pub filter_memory: usize = 0 => "memory.filter_memory", Bytes, ANY, Stored, NoBudgetElastic, "FixedMemory.filter_memory";
        /// Simulated bytes of the ghost cache: the ids of the blocks most recently evicted from
        /// the block cache, so storage reads a larger cache would have saved are counted
        /// (`KindSnapshot::ghost_hits`, user and compaction reads apart). The memory tuner's
        /// read cost comes from it. Default 0: off (the tuner then simulates 128 MiB, the
        /// paper's; about 40 bytes per id of memory).
        pub ghost_cache_size: usize = 0 => "memory.ghost_cache", Bytes, ANY, Stored, Always, "cache.ghost_cache";

        /// Share of the block cache reserved for filter units and other meta blocks (default
        /// 0.5).
        pub high_pri_pool_ratio: f64 = 0.5
            => "cache.high_pri_pool_ratio", Float, within(0.0, 1.0), Stored, NoSharedCache;
        /// Put cached data and index blocks in transparent huge pages while the block cache is
        /// at least 256 MiB (default true): 2 MiB chunks of equal slots, so that a lookup among
        /// many cached blocks misses the TLB less (see design.md, "Block arena", for what it
        /// measured). The cost is the chunks' free slots, counted in
        /// `MemoryUsage::cache_huge_page_slack` and the total. Nothing changes when the kernel's
        /// transparent huge pages are `never`. RocksDB has no such option (its users give the
        /// whole heap huge pages through the allocator).
        pub cache_huge_pages: bool = true => "cache.huge_pages", Bool, ANY, Stored, NoSharedCache;
        /// Keep index blocks and filter units in the block cache at high priority (default
        /// false; always so with `memory.budget`): they compete with data blocks for it, an
        /// index or unit evicted is read again when needed, and what table readers still pin
        /// (fences, properties) is reserved in it, so the block cache size bounds all of them
        /// (RocksDB's `cache_index_and_filter_blocks`). Without it, indexes and filter units
        /// are pinned in their table readers.
        pub index_in_block_cache: bool = false => "cache.index_in_block_cache", Bool, ANY, Stored, NoBudget, "FixedMemory.index_in_block_cache";

        /// Memtable size at which a tree's memtable is flushed, without `memory.budget`
        /// (default 64 MiB; RocksDB `memtable.size`). With a partitioned component, the
        /// active memtable's size and the size memory runs are cut at.
        pub write_buffer_size: usize = 64 << 20 => "memtable.size", Bytes, within(1.0, INF), Stored, NoBudget, "FixedMemory.memtable_size";
        /// Which tree a memory-triggered flush picks (default max-memory; see [`FlushPolicy`]).
        pub flush_policy: FlushPolicy = FlushPolicy::MaxMemory => "memtable.flush_policy", Choice, ANY, Stored, Always;
        /// Monolithic or partitioned memory components (default monolithic; see
        /// [`MemoryComponent`]).
        pub memory_component: MemoryComponent = MemoryComponent::Monolithic
            => "memtable.component", Choice, ANY, Stored, Always;
        /// Size ratio between memory levels of a partitioned component (default 10).
        pub memory_size_ratio: usize = 10
            => "memtable.partitioned_size_ratio", Count, within(2.0, INF), Stored, Partitioned;
        /// Luo & Carey's β: a log-triggered flush of a partitioned component writes everything
        /// unless more than this fraction of its memory was flushed for memory since the oldest
        /// live WAL was started (then only the oldest data and what it overlaps; default 0.5).
        pub memory_flush_beta: f64 = 0.5
            => "memtable.partitioned_flush_beta", Float, within(0.0, 1.0), Stored, Partitioned;

        /// Total WAL bytes after which the tree holding the oldest WAL data is flushed; 0 (the
        /// default) means 4 × the current write memory, following its resizes (RocksDB
        /// `max_total_wal_size`, whose 0 means the same).
        pub max_wal_size: u64 = 0 => "wal.max_size", Bytes, ANY, Stored, Always;
        /// How a damaged WAL is treated at open (default point-in-time).
        pub wal_recovery_mode: RecoveryMode = RecoveryMode::PointInTime
            => "wal.recovery_mode", Choice, ANY, Open, Always;

        /// Target data block size (default 4096; RocksDB `table.block_size`).
        pub block_size: usize = 4096 => "table.block_size", Bytes, within(64.0, 64.0 * MIB), Stored, Always;
        /// Entries between restart points in data blocks (default 16).
        pub block_restart_interval: usize = 16
            => "table.restart_interval", Count, within(1.0, 65_535.0), Stored, Always;
        /// Entries between restart points in index blocks (default 8: the fence pointers keep
        /// one key prefix per restart point; RocksDB `index_block_restart_interval`, default 1
        /// there). Entries within an interval share key prefixes and leave out their block's
        /// offset: about a third of the index bytes of one entry per restart point.
        pub index_restart_interval: usize = 8
            => "table.index_restart_interval", Count, within(1.0, 65_535.0), Stored, Always;
        /// Write a hash index in each data block so a point lookup skips the block's binary
        /// search (default true; RocksDB's `data_block_index_type = kDataBlockBinaryAndHash`).
        pub data_block_hash_index: bool = true => "table.hash_index", Bool, ANY, Stored, Always;
        /// Data block compression (default none).
        pub compression: Compression = Compression::None => "table.compression", Choice, ANY, Stored, Always;

        /// Bloom filter bits per key on average over a tree's files (default 10; 0 = no
        /// filters; the elastic policies: the default filter memory, per live key).
        pub bloom_bits_per_key: f64 = 10.0 => "filters.bits_per_key", Float, within(0.0, 64.0), Stored, BitsPerKey;
        /// How those bits are spread over files (default mnemosyne: by the lookups each file
        /// sees; see `BpkPolicy`). May change between opens: new files follow the new policy.
        pub bpk_policy: BpkPolicy = BpkPolicy::Mnemosyne => "filters.policy", Choice, ANY, Stored, Always;
        /// Data bytes per filter segment (default 4 MiB).
        pub segment_size: u64 = 4 << 20 => "filters.segment_size", Bytes, within(1.0, INF), Stored, Always;
        /// Layout of the filter units of new tables (default cache-local: every probe of a key
        /// in one 64-byte line; standard: probes spread over the unit). Tables record it per
        /// unit: both are read.
        pub filter_unit_format: UnitFormat = UnitFormat::CacheLocal
            => "filters.unit_format", Choice, ANY, Stored, Always;
        /// Probes in Merlin's per-file window (2..=64, default 64; the paper's default).
        pub merlin_window: usize = 64 => "filters.merlin_window", Count, within(2.0, 64.0), Stored, Always;
        /// Elastic policies: filter units per segment on disk (1..=16, default 6; the paper's).
        pub elastic_units: u32 = 6 => "filters.elastic_units", Count, within(1.0, 16.0), Stored, Elastic, "ElasticUnits.units";
        /// Elastic policies: bits per key of each unit (0 < b ≤ 16, default 4; the paper's).
        pub elastic_unit_bpk: f64 = 4.0
            => "filters.elastic_unit_bits_per_key", Float, above(0.0, 16.0), Stored, Elastic, "ElasticUnits.unit_bits_per_key";
        /// Elastic policies: Gets after its last access at which a segment expires and may
        /// lose units (default 0: the number of live segments, the paper's rule; the authors'
        /// code uses 20,000).
        pub elastic_life_time: u64 = 0 => "filters.elastic_life_time", Count, ANY, Stored, Elastic, "ElasticUnits.life_time";
        /// `mnemosyne-elastic`: lookups between solves of the optimum (default 100,000).
        pub elastic_solve_every: u64 = 100_000
            => "filters.elastic_solve_every", Count, within(1.0, INF), Stored, MnemosyneElastic, "FilterPolicy::MnemosyneElastic { solve_every }";
        /// Elastic policies: milliseconds between the background adjuster's rounds while
        /// lookups arrive (default 5; 0: no background adjuster, rounds only through
        /// `Db::adjust_filters`).
        pub elastic_interval_ms: u64 = 5 => "filters.elastic_interval_ms", Count, ANY, Stored, Elastic, "ElasticUnits.interval_ms";

        /// Range-filter bits per key, on average over a tree's tables (default 10;
        /// 0: no range filter, and range reads consult none). With `range_filter.by_workload`
        /// (the default) a table gets bits only when empty bounded range reads have reached
        /// the data it is written from: where such reads do not happen, the range filter
        /// costs nothing. A table's filter is loaded at its first range read and charged to
        /// the block cache (so to `memory.budget`). Tables written before it was set have
        /// none; bounded range reads consult the filters of the tables that have one.
        pub range_filter_bits_per_key: f64 = 10.0
            => "range_filter.bits_per_key", Float, within(0.0, 64.0), Stored, Always;
        /// The kind of range filter new tables get (default rosetta; grafite: a bound on its
        /// false-positive rate for every workload, and a cost per range read independent of
        /// the range's length). Tables keep the kind they were written with.
        pub range_filter_kind: RangeFilterKind = RangeFilterKind::Rosetta
            => "range_filter.kind", Choice, ANY, Stored, RangeFilter;
        /// Give tables that more empty range reads reach a larger share of the range-filter
        /// bits, and none to tables that no empty range read reached (default true; the same
        /// solver as Mnemosyne's point filters, over per-file counts of empty range reads);
        /// false: every table gets `range_filter.bits_per_key`.
        pub range_filter_by_workload: bool = true
            => "range_filter.by_workload", Bool, ANY, Stored, RangeFilter;
        /// 0 (the default): each table's range filter indexes its keys by the bytes after the
        /// table's common prefix, up to the last byte where two of its keys first differ (at
        /// most 8; string keys such as `user:00012345` are served by their differing digits).
        /// Above 0: every table indexes the 8 bytes after this many bytes (the layout before
        /// per-table projections), and a range read is asked only when its bounds share them.
        /// At most 255.
        pub range_filter_key_offset: usize = 0
            => "range_filter.key_offset", Count, within(0.0, 255.0), Stored, RangeFilter;
        /// The share of the block cache that range filters may hold (default 0.5; above 0, at
        /// most 1): a table's filter is pinned at its first bounded read while they hold less,
        /// and a round every `range_filter.round_ms` keeps this memory for the filters with the most empty range
        /// reads per byte, unloading the others. It follows the cache when the cache is resized
        /// (by `Db::resize_memory` or the memory tuner). Applies when range filters are charged
        /// to the block cache (`memory.budget`, or `cache.index_in_block_cache`); otherwise
        /// they are not bounded.
        pub range_filter_memory_share: f64 = 0.5
            => "range_filter.memory_share", Float, above(0.0, 1.0), Stored, RangeFilterCharged;
        /// Milliseconds between rounds of range-filter memory while range reads arrive
        /// (default 1000; 0: rounds only when the block cache is resized).
        pub range_filter_round_ms: u64 = 1000
            => "range_filter.round_ms", Count, ANY, Stored, RangeFilterCharged;
        /// Heights a range-filter probe may descend below a dyadic interval (1..=64, default
        /// 32, the Rosetta authors' value).
        pub range_filter_max_depth: u32 = 32
            => "range_filter.max_depth", Count, within(1.0, 64.0), Stored, Rosetta;
        /// Bloom probes one range read may spend on one table's range filter before it
        /// answers "maybe" (default 100, the Rosetta authors' value).
        pub range_filter_probe_budget: u32 = 100
            => "range_filter.probe_budget", Count, within(1.0, INF), Stored, Rosetta;

        /// Merge policy (default leveling; `garnering:C` for Autumn's Garnering).
        pub merge_policy: MergePolicyKind = MergePolicyKind::Leveling
            => "compaction.merge_policy", Choice, ANY, Stored, Always;
        /// Size ratio T between levels (default 10).
        pub size_ratio: f64 = 10.0 => "compaction.size_ratio", Float, within(2.0, INF), Stored, Always;
        /// L0 files that trigger a compaction (default 4).
        pub l0_compaction_trigger: usize = 4
            => "compaction.l0_trigger", Count, within(1.0, INF), Stored, Always;
        /// Capacity of L1 (default 256 MiB; RocksDB `compaction.max_bytes_for_level_base`) with fixed
        /// `compaction.level_targets`.
        pub max_bytes_for_level_base: u64 = 256 << 20
            => "compaction.max_bytes_for_level_base", Bytes, within(1.0, INF), Stored, FixedTargets;
        /// Whether level capacities are fixed or follow write memory (default fixed; leveling
        /// only; see [`LevelTargets`]).
        pub level_targets: LevelTargets = LevelTargets::Fixed
            => "compaction.level_targets", Choice, ANY, Stored, Leveling;
        /// Target size of compaction output files (default 64 MiB).
        pub target_file_size: u64 = 64 << 20
            => "compaction.target_file_size", Bytes, within(1.0, INF), Stored, Always;
        /// Levels including L0 (default 7; RocksDB `num_levels`).
        pub max_levels: usize = 7 => "compaction.max_levels", Count, within(2.0, 32.0), Stored, Always;
        /// Background compaction threads (default: the machine's cores, at most 4; RocksDB
        /// `max_background_compactions`). Flushes have a thread of their own.
        pub compaction_threads: usize = default_threads()
            => "background.compaction_threads", Count, within(1.0, 64.0), Open, Always;
        /// Key-range pieces a large L0 → L1 compaction is split into, each merged by its own
        /// thread into one output run (default: as `background.compaction_threads`; RocksDB
        /// `background.max_subcompactions`).
        pub max_subcompactions: usize = default_threads()
            => "background.max_subcompactions", Count, within(1.0, 64.0), Open, Always;
        /// How far below the writers' and readers' CPU priority the compaction threads run:
        /// their nice value, from 0 (the same; the default, as RocksDB's) to 19 (they take the
        /// cores the foreground leaves; flushes keep the normal priority). Linux only.
        pub compaction_nice: usize = 0
            => "background.compaction_nice", Count, within(0.0, 19.0), Open, Always;

        /// L0 files at which writes are delayed (default 8, twice the compaction trigger;
        /// RocksDB's 20 lets a fast load leave a deep L0 that the reads after it pay for).
        /// Delayed writes go at a rate that adapts to whether compaction is catching up
        /// (`write_stalls.delayed_write_rate`).
        pub l0_slowdown_trigger: usize = 8
            => "write_stalls.l0_slowdown_trigger", Count, within(1.0, INF), Stored, Always;
        /// L0 files at which writes stop until compaction catches up (default 16).
        pub l0_stop_trigger: usize = 16 => "write_stalls.l0_stop_trigger", Count, within(1.0, INF), Stored, Always;
        /// Estimated pending compaction bytes at which writes slow down (default 64 GiB).
        pub soft_pending_compaction_bytes: u64 = 64 << 30
            => "write_stalls.soft_pending_compaction_bytes", Bytes, ANY, Stored, Always;
        /// ... and stop (default 256 GiB).
        pub hard_pending_compaction_bytes: u64 = 256 << 30
            => "write_stalls.hard_pending_compaction_bytes", Bytes, ANY, Stored, Always;
        /// Write rate, in bytes per second, when writes start being delayed; it then falls
        /// while L0 and the compaction debt grow and rises while they shrink (default 64
        /// MiB/s; RocksDB `write_stalls.delayed_write_rate`, 16 MiB/s).
        pub delayed_write_rate: u64 = 64 << 20
            => "write_stalls.delayed_write_rate", Bytes, within(1024.0, INF), Stored, Always;

        /// Table readers kept open (default 1000; RocksDB `files.max_open_files`).
        pub max_open_files: usize = 1000 => "files.max_open_files", Count, within(1.0, INF), Open, Always;
        /// O_DIRECT reads of tables (default false).
        pub use_direct_reads: bool = false => "files.use_direct_reads", Bool, ANY, Open, Always;
        /// Manifest size after which a new manifest (a snapshot of the current version) is
        /// started (default 64 MiB; RocksDB `max_manifest_file_size`).
        pub max_manifest_size: u64 = 64 << 20
            => "files.max_manifest_size", Bytes, within(1024.0, INF), Stored, Always;

        /// Largest key accepted (default 64 KiB).
        pub max_key_size: usize = 64 << 10 => "limits.max_key_size", Bytes, within(1.0, 64.0 * MIB), Stored, Always;
        /// Largest value accepted (default 256 MiB).
        pub max_value_size: usize = 256 << 20 => "limits.max_value_size", Bytes, within(0.0, GIB), Stored, Always;
        /// Largest write batch accepted, encoded (default 1 GiB).
        pub max_batch_size: usize = 1 << 30 => "limits.max_batch_size", Bytes, within(1.0, GIB), Stored, Always;
    }
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Settings");
        for s in SPECS {
            d.field(s.field, &(s.get)(self));
        }
        d.field("block_cache", &self.block_cache.as_ref().map(|c| c.capacity()));
        d.finish()
    }
}

/// The machine's cores, at most 4: background threads beyond that mostly contend for the disk.
fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
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

/// `memory_budget`'s default: what a user who sets nothing gets, about what an embedded
/// engine of this kind is given (RocksDB's default write buffers and a small cache come to
/// about as much).
pub const DEFAULT_BUDGET: usize = 256 << 20;

/// The least `memory_budget`.
pub const MIN_BUDGET: usize = 256 << 10;

/// The ghost cache the memory tuner simulates when `ghost_cache_size` is 0 (the paper's).
pub const TUNER_GHOST_BYTES: usize = 128 << 20;

/// The tuner's floor when `memory_tuner_floor` is 0: the paper's 32 MiB, or a sixteenth of
/// the budget when that is smaller.
fn auto_floor(budget: usize) -> usize {
    (32 << 20).min(budget / 16)
}

/// Settings that size the regions by hand. Setting one of them (or sharing a `block_cache`)
/// while `memory_budget` is left at its default selects fixed region sizes: the budget, and
/// the tuner when left at its default, are off (`Settings::sizing`).
const BY_HAND: [&str; 5] = [
    "write_memory_budget",
    "block_cache_size",
    "filter_memory",
    "write_buffer_size",
    "index_in_block_cache",
];

/// The spec of the setting whose field is `field`.
pub(crate) fn spec(field: &str) -> &'static Spec {
    SPECS.iter().find(|s| s.field == field).unwrap_or(&SPECS[0])
}

impl Settings {
    /// The sizing these options choose: one budget (the default), or fixed region sizes when
    /// a region is sized by hand (`BY_HAND`) and the budget left at its default — a program
    /// that sizes its memtables or cache as before keeps doing so. Setting both the budget and
    /// a region is refused by `validate`.
    pub(crate) fn sizing(mut self) -> Settings {
        let default = Settings::default();
        let by_hand =
            self.block_cache.is_some() || BY_HAND.iter().any(|f| (spec(f).get)(&self) != (spec(f).get)(&default));
        if by_hand && self.memory_budget == default.memory_budget {
            self.memory_budget = 0;
        }
        // The tuner (on by default) tunes a budget: without one there is nothing to tune.
        if self.memory_budget == 0 {
            self.memory_tuner = false;
        }
        self
    }

    /// The options the engine runs with: with `memory_budget`, the region sizes derived from
    /// it (write memory, memtable size, filter memory, block cache, index blocks charged to
    /// the cache), the tuner's floor and its ghost cache. Takes options already through
    /// [`sizing`](Self::sizing) (`validate` and the open do that).
    pub(crate) fn resolved(mut self) -> Settings {
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
        if self.memory_tuner {
            if self.ghost_cache_size == 0 {
                self.ghost_cache_size = TUNER_GHOST_BYTES;
            }
            if self.memory_tuner_floor == 0 {
                self.memory_tuner_floor = auto_floor(self.memory_budget);
            }
        }
        self
    }

    /// Checks every option as given: each value in its range, no setting that has no effect
    /// under the others left away from its default, and the settings that relate to each
    /// other consistent. The error names the option (the one the caller changed, where several
    /// are involved), shows the values and, for an enum, its valid choices.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.compaction_nice != 0 && !cfg!(target_os = "linux") {
            return Err(invalid(
                "compaction_nice",
                format!(
                    "{} asks for a thread's own CPU priority, which cairn sets on Linux only; use 0 here",
                    self.compaction_nice
                ),
            ));
        }
        self.clone().sizing().check()
    }

    /// [`validate`](Self::validate) of options already through [`sizing`](Self::sizing).
    pub(crate) fn check(&self) -> Result<()> {
        self.check_ranges()?;
        let default = Settings::default();
        for s in SPECS {
            if !s.is_off(self) && !s.when.holds(self) && (s.get)(self) != (s.get)(&default) {
                return Err(invalid(
                    s.field,
                    format!("{} = {} has no effect: {}", s.name, s.show(self), s.when.why_not(self)),
                ));
            }
        }
        self.check_relations(&default)
    }

    fn check_ranges(&self) -> Result<()> {
        for s in SPECS {
            if let Some(x) = (s.number)(self) {
                if !s.range.contains(x) {
                    return Err(invalid(
                        s.field,
                        format!("{} = {} must be {}", s.name, s.show(self), s.range.describe(s.kind)),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks between settings. Where two are involved, the error names the one that differs
    /// from its default (the one the caller set), or the first when both do.
    fn check_relations(&self, default: &Settings) -> Result<()> {
        let set = |field: &str| (spec(field).get)(self) != (spec(field).get)(default);
        let pair = |a: &'static str, b: &'static str, why: String| -> Error {
            let named = if set(a) || !set(b) { a } else { b };
            let show = |f: &str| format!("{} = {}", spec(f).name, spec(f).show(self));
            invalid(named, format!("{} with {}: {why}", show(a), show(b)))
        };
        if self.memory_budget > 0 {
            if self.memory_budget < MIN_BUDGET {
                return Err(invalid(
                    "memory_budget",
                    format!(
                        "memory.budget = {} must be 0 (off) or at least 256 KiB",
                        show_bytes(self.memory_budget as u64)
                    ),
                ));
            }
            if self.block_cache.is_some() {
                return Err(invalid(
                    "memory_budget",
                    "memory.budget sizes its own block cache: do not also give block_cache",
                ));
            }
            let filter = if self.bpk_policy.is_elastic() {
                self.memory_filter_share
            } else {
                0.0
            };
            if self.memory_write_share + filter > 0.95 {
                return Err(pair(
                    "memory_write_share",
                    "memory_filter_share",
                    "together at most 0.95, so the block cache keeps at least 5% of the budget".into(),
                ));
            }
            if self.memory_tuner && self.memory_tuner_floor > 0 {
                let start = self.clone().resolved();
                let (write, cache) = (start.write_memory_budget, start.block_cache_size);
                let (region, share, least) = if write <= cache {
                    ("write memory", "memory.write_share", write)
                } else {
                    ("block cache", "what the other shares leave", cache)
                };
                if self.memory_tuner_floor > least {
                    return Err(invalid(
                        "memory_tuner_floor",
                        format!(
                            "memory.tuner_floor = {} exceeds the starting {region} of {} ({share} of memory.budget = {}): \
                             lower the floor, or leave it 0 for the automatic one",
                            show_bytes(self.memory_tuner_floor as u64),
                            show_bytes(least as u64),
                            show_bytes(self.memory_budget as u64),
                        ),
                    ));
                }
            }
        } else if self.write_memory_budget < self.write_buffer_size {
            return Err(pair(
                "write_buffer_size",
                "write_memory_budget",
                "a memtable must fit in write memory".into(),
            ));
        }
        if self.bpk_policy.is_elastic()
            && self.bloom_bits_per_key == 0.0
            && self.filter_memory == 0
            && self.memory_budget == 0
        {
            return Err(pair(
                "bloom_bits_per_key",
                "bpk_policy",
                "the elastic policies write filter units and load them into filter memory sized by \
                 bits per key (or memory.filter_memory, or memory.budget); 0 bits per key would load none: \
                 set filters.policy = uniform for no filters, or bits per key above 0"
                    .into(),
            ));
        }
        if let MergePolicyKind::Garnering { c } = self.merge_policy {
            if !(c > 0.0 && c <= 1.0) {
                return Err(invalid(
                    "merge_policy",
                    format!("compaction.merge_policy = garnering:{c}: Garnering's c must be above 0 and at most 1"),
                ));
            }
        }
        if self.l0_slowdown_trigger < self.l0_compaction_trigger {
            return Err(pair(
                "l0_slowdown_trigger",
                "l0_compaction_trigger",
                "writes would slow down before a compaction starts".into(),
            ));
        }
        if self.l0_stop_trigger < self.l0_slowdown_trigger {
            return Err(pair(
                "l0_stop_trigger",
                "l0_slowdown_trigger",
                "writes would stop before they slow down".into(),
            ));
        }
        if self.hard_pending_compaction_bytes < self.soft_pending_compaction_bytes {
            return Err(pair(
                "hard_pending_compaction_bytes",
                "soft_pending_compaction_bytes",
                "writes would stop before they slow down".into(),
            ));
        }
        if self.max_batch_size < self.max_key_size {
            return Err(pair(
                "max_batch_size",
                "max_key_size",
                "a batch must hold at least one key".into(),
            ));
        }
        Ok(())
    }

    /// Checks what `resolved` derived (the ranges; the regions of a budget must hold too).
    pub(crate) fn validate_resolved(&self) -> Result<()> {
        self.check_ranges()?;
        if self.write_memory_budget < self.write_buffer_size {
            return Err(invalid(
                "memory_budget",
                "write memory derived from memory.budget is smaller than a memtable",
            ));
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

    fn with_memory(bytes: usize) -> Settings {
        Options::with_memory(bytes).settings().unwrap()
    }

    #[test]
    fn validation_names_the_option() {
        assert!(Settings::default().validate().is_ok());
        type Set = Box<dyn Fn(&mut Settings)>;
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
            let mut o = Settings::default();
            set(&mut o);
            match o.validate() {
                Err(Error::InvalidOptions { option, .. }) => assert_eq!(option, name),
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    /// One row per setting: names unique, grouped (`group.setting`) except the per-open flags,
    /// and the OPTIONS file holds each one.
    #[test]
    fn the_table_names_every_setting_once() {
        let mut names = std::collections::BTreeSet::new();
        for s in SPECS {
            assert!(names.insert(s.name), "{} twice", s.name);
            assert!(names.insert(s.field) || s.field == s.name, "{} twice", s.field);
            assert!(
                s.name.contains('.') || s.scope == Scope::Open,
                "{}: stored settings have a group",
                s.name
            );
            assert!(!s.doc.trim().is_empty(), "{} has no doc", s.name);
        }
        let map = Settings::default().to_map();
        assert_eq!(
            map.len(),
            SPECS.len() + 2,
            "format_version and comparator besides the settings"
        );
    }

    /// `docs/options.md` is generated from the table (`CAIRN_REWRITE=1` rewrites it).
    #[test]
    fn docs_table_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/options.md");
        let actual = file::options_table();
        if crate::testutil::rewrite() {
            std::fs::write(&path, &actual).unwrap();
        }
        let golden = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            golden == actual,
            "docs/options.md is stale: run CAIRN_REWRITE=1 cargo test -p cairn --lib options"
        );
    }

    fn refused(o: &Settings) -> (&'static str, String) {
        match o.validate() {
            Err(Error::InvalidOptions { option, reason }) => (option, reason),
            other => panic!("accepted: {other:?}"),
        }
    }

    /// Each combination that used to be ignored or overridden without a word is refused,
    /// naming the setting the caller changed and showing the values.
    #[test]
    fn ignored_combinations_are_refused() {
        // A budget with fixed region sizes: the budget used to win silently.
        let (option, why) = refused(&Settings {
            memory_budget: 64 << 20,
            write_memory_budget: 512 << 20,
            block_cache_size: 1 << 30,
            ..Settings::default()
        });
        assert_eq!(option, "write_memory_budget");
        assert!(
            why.contains("512 MiB") && why.contains("memory.budget = 64 MiB"),
            "{why}"
        );
        let (option, _) = refused(&Settings {
            memory_budget: 64 << 20,
            block_cache_size: 1 << 30,
            ..Settings::default()
        });
        assert_eq!(option, "block_cache_size");
        // Filter memory with a policy that loads no units.
        let (option, why) = refused(&Settings {
            filter_memory: 8 << 20,
            ..Settings::default()
        });
        assert_eq!(option, "filter_memory");
        assert!(why.contains("filters.policy = mnemosyne"), "{why}");
        // No bits per key with an elastic policy and nothing else to size filter memory.
        let (option, why) = refused(&Settings {
            bloom_bits_per_key: 0.0,
            bpk_policy: BpkPolicy::MnemosyneElastic,
            ..Settings::default()
        });
        assert_eq!(option, "bloom_bits_per_key");
        assert!(why.contains("mnemosyne-elastic"), "{why}");
        // Bits per key that filter memory overrides.
        let (option, _) = refused(&Settings {
            bloom_bits_per_key: 6.0,
            bpk_policy: BpkPolicy::Elastic,
            filter_memory: 1 << 20,
            ..Settings::default()
        });
        assert_eq!(option, "bloom_bits_per_key");
        // A tuner floor above a starting region; the automatic floor fits every budget.
        let (option, why) = refused(&Settings {
            memory_tuner_floor: 32 << 20,
            ..with_memory(64 << 20)
        });
        assert_eq!(option, "memory_tuner_floor");
        assert!(why.contains("32 MiB") && why.contains("16 MiB"), "{why}");
        for budget in [MIN_BUDGET, 4 << 20, 64 << 20, 1 << 30, 16 << 30] {
            let o = with_memory(budget);
            o.validate().unwrap();
            let r = o.resolved();
            assert!(
                r.memory_tuner_floor <= r.write_memory_budget.min(r.block_cache_size),
                "{budget}"
            );
        }
        // Settings of a feature that is off, set by name.
        let fixed = || Settings {
            memory_budget: 0,
            ..Settings::default()
        };
        for (base, name, value, field) in [
            (fixed(), "memory.tuner_period_ms", "5", "memory_tuner_period_ms"),
            (fixed(), "memory.write_share", "0.5", "memory_write_share"),
            (Settings::default(), "filters.elastic_units", "8", "elastic_units"),
            (
                Settings::default(),
                "memtable.partitioned_size_ratio",
                "4",
                "memory_size_ratio",
            ),
            (
                Settings {
                    range_filter_bits_per_key: 0.0,
                    ..Settings::default()
                },
                "range_filter.key_offset",
                "4",
                "range_filter_key_offset",
            ),
            (
                with_memory(64 << 20),
                "cache.index_in_block_cache",
                "true",
                "index_in_block_cache",
            ),
            (
                Settings::default(),
                "compaction.merge_policy",
                "garnering:0.8",
                "level_targets",
            ),
        ] {
            let mut o = base;
            o.set(name, value).unwrap();
            if field == "level_targets" {
                o.level_targets = LevelTargets::WriteMemory;
            }
            assert_eq!(refused(&o).0, field, "{name} = {value}");
        }
    }

    /// The error names the option the caller set, with both values.
    #[test]
    fn relations_name_the_option_set() {
        let (option, why) = refused(&Settings {
            write_buffer_size: 256 << 20,
            ..Settings::default()
        });
        assert_eq!(option, "write_buffer_size");
        assert!(
            why.contains("memtable.size = 256 MiB") && why.contains("memory.write_memory = 128 MiB"),
            "{why}"
        );
        let (option, _) = refused(&Settings {
            write_memory_budget: 32 << 20,
            ..Settings::default()
        });
        assert_eq!(option, "write_memory_budget");
        let (option, why) = refused(&Settings {
            block_size: 10,
            ..Settings::default()
        });
        assert_eq!(option, "block_size");
        assert_eq!(why, "table.block_size = 10 B must be between 64 B and 64 MiB");
    }

    /// An OPTIONS file written before `ttl.trees` and `filters.unit_format` existed (the
    /// default configuration of that build) reads back as today's defaults: the new settings
    /// take their defaults, and a reopen keeping it changes nothing.
    #[test]
    fn options_files_before_ttl_still_apply() {
        let text = std::fs::read(crate::testutil::testdata("golden/OPTIONS-before-ttl")).unwrap();
        let stored = parse_options_file(&text).unwrap();
        assert!(!stored.contains_key("ttl.trees") && !stored.contains_key("filters.unit_format"));
        for (k, v) in &stored {
            Settings::default().set(k, v).unwrap_or_else(|e| panic!("{k}={v}: {e}"));
        }
        let mut o = Settings::default();
        o.apply_stored(&stored, false).unwrap();
        assert_eq!(o.to_map(), Settings::default().to_map());
    }

    /// OPTIONS files written before the names had groups (flat names; with a budget, the
    /// derived region sizes too) still apply: to a default configuration exactly, and with a
    /// budget to the budget without the sizes it derived.
    #[test]
    fn options_files_before_groups_still_apply() {
        let text = std::fs::read(crate::testutil::testdata("golden/OPTIONS-before-groups")).unwrap();
        let mut stored = parse_options_file(&text).unwrap();
        // Every name of that file is still a name `set` takes, with the value it wrote.
        for (k, v) in &stored {
            Settings::default().set(k, v).unwrap_or_else(|e| panic!("{k}={v}: {e}"));
        }
        let mut o = Settings::default();
        o.apply_stored(&stored, false).unwrap();
        // The defaults of that time: fixed sizes, uniform filters, no range filter (its tuner timer had no
        // effect without the tuner, and goes back to the default).
        let want = Settings {
            compaction_threads: 2,
            max_subcompactions: 2,
            memory_budget: 0,
            memory_tuner: false,
            bpk_policy: BpkPolicy::Uniform,
            range_filter_bits_per_key: 0.0,
            ..Settings::default()
        };
        assert_eq!(o.to_map(), want.to_map());
        // What the old writer stored for a 64 MiB budget with the tuner and elastic units.
        for (k, v) in [
            ("memory_budget", "67108864"),
            ("memory_tuner", "true"),
            ("bpk_policy", "elastic"),
            ("write_memory_budget", "16777216"),
            ("write_buffer_size", "8388608"),
            ("filter_memory", "6710886"),
            ("block_cache_size", "43620762"),
            ("index_in_block_cache", "true"),
            ("ghost_cache_size", "134217728"),
            ("memory_tuner_floor", "33554432"),
            ("wal_recovery_mode", "TolerateCorruptedTail"),
        ] {
            stored.insert(k.into(), v.into());
        }
        let mut o = Settings::default();
        let taken = o.merge_stored(&stored).unwrap();
        o.validate().unwrap();
        assert_eq!(
            (o.memory_budget, o.memory_tuner, o.bpk_policy),
            (64 << 20, true, BpkPolicy::Elastic)
        );
        assert_eq!(o.write_memory_budget, 128 << 20, "derived sizes are not taken");
        assert_eq!(
            o.memory_tuner_floor, 0,
            "the old default floor becomes the automatic one"
        );
        assert_eq!(
            o.wal_recovery_mode,
            RecoveryMode::PointInTime,
            "per-open settings are the caller's"
        );
        assert!(
            taken.contains(&"memory.budget") && !taken.contains(&"memory.write_memory"),
            "{taken:?}"
        );
    }

    #[test]
    fn set_takes_names_aliases_and_units() {
        let mut o = Settings::default();
        o.set("memory.budget", "64MiB").unwrap();
        assert_eq!(o.memory_budget, 64 << 20);
        o.set("memory_budget", "1.5 GiB").unwrap();
        assert_eq!(o.memory_budget, 3 << 29);
        o.set("table.block_size", "8k").unwrap();
        assert_eq!(o.block_size, 8192);
        o.set("filters.policy", "mnemosyne-elastic").unwrap();
        o.set("wal_recovery_mode", "AbsoluteConsistency").unwrap();
        assert_eq!(o.wal_recovery_mode, RecoveryMode::AbsoluteConsistency);
        o.set("compression", "Zstd").unwrap();
        assert_eq!(o.compression, Compression::Zstd);
        for s in SPECS {
            let now = (s.get)(&o);
            o.set(s.field, &now).unwrap_or_else(|e| panic!("{}: {e}", s.field));
            o.set(s.name, &now).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        }
        let e = o.set("bpk_policy", "elastik").unwrap_err().to_string();
        assert!(
            e.contains("bpk_policy") && e.contains("\"elastik\"") && e.contains("uniform, monkey, mnemosyne"),
            "{e}"
        );
        let e = o.set("memory.budget", "64 MB/s").unwrap_err().to_string();
        assert!(e.contains("not a size"), "{e}");
        let e = o.set("bloom_bits", "4").unwrap_err().to_string();
        assert!(e.contains("filters.bits_per_key"), "{e}");
        let e = o.set("cache.huge_pages", "maybe").unwrap_err().to_string();
        assert!(
            e.contains("cache.huge_pages") && e.contains("\"maybe\"") && e.contains("true") && e.contains("false"),
            "{e}"
        );
        o.set("cache_huge_pages", "false").unwrap();
        assert!(!o.cache_huge_pages);
    }

    /// The settings of the engine's own cache, beside a shared cache that has its own: refused,
    /// naming the setting and why.
    #[test]
    fn own_cache_settings_beside_a_shared_cache_are_refused() {
        let shared = || Settings {
            block_cache: Some(Arc::new(crate::cache::BlockCache::new(1 << 20, 0.5))),
            ..Settings::default()
        };
        shared().validate().unwrap();
        for (name, value, field) in [
            ("cache.huge_pages", "false", "cache_huge_pages"),
            ("cache.high_pri_pool_ratio", "0.25", "high_pri_pool_ratio"),
        ] {
            let mut o = shared();
            o.set(name, value).unwrap();
            let (option, why) = refused(&o);
            assert_eq!(option, field, "{name}");
            assert!(why.contains(name) && why.contains("shared block_cache"), "{why}");
        }
    }

    /// The OPTIONS file of the default options, pinned (`docs/format/options.md`).
    #[test]
    fn golden_options_file() {
        // Thread counts default to the machine's cores: pinned here.
        let o = Settings {
            compaction_threads: 2,
            max_subcompactions: 2,
            ..Settings::default()
        };
        let text = String::from_utf8(o.encode_file()).unwrap();
        crate::testutil::check_golden("golden/OPTIONS-default", &text);
    }

    #[test]
    fn options_file_round_trip_and_checksum() {
        let o = Settings::default();
        let bytes = o.encode_file();
        let m = parse_options_file(&bytes).unwrap();
        assert_eq!(m["table.block_size"], "4096");
        assert!(check_compatible(&m).is_ok());
        let mut bad = bytes.clone();
        bad[40] ^= 1;
        assert!(parse_options_file(&bad).is_err());
        let mut m2 = m.clone();
        m2.insert("comparator".into(), "reverse".into());
        let e = check_compatible(&m2).unwrap_err();
        assert!(e.to_string().contains("comparator"), "{e}");
    }

    /// Every option set from its stored text reproduces it: a non-default value of each
    /// (the map's keys are exactly the fields, checked above) survives `to_map` → `set`.
    #[test]
    fn set_reads_back_every_stored_option() {
        let o = Settings {
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
            ..Settings::default()
        };
        let mut back = Settings::default();
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
