//! Every setting once, by its one name (`group.setting`): where [`Options`] holds it, its text
//! form, valid range, scope and description. It serves the text forms only — `Options::set`
//! and `get`, the OPTIONS file, range checks and the generated `docs/options.md`; the engine
//! reads `Options`' fields.
//!
//! A setting inside an alternative (the budget, the tuner, fixed sizes, elastic units) has no
//! value while another alternative is chosen: `get` answers `None`, and `set` refuses it
//! naming the choice that leaves it no place. The rows that choose an alternative (`memory.budget`,
//! `memory.tuner`, `filters.policy`) come before the settings they hold, so that applying rows
//! in table order never refuses a setting for an alternative chosen later in the same call.

use super::value::{above, within, Kind, Range, Value, ANY};
use super::{
    BackgroundOptions, Budget, CacheOptions, CacheSource, CompactionOptions, ElasticUnits, FileOptions, FilterOptions,
    FilterPolicy, FixedMemory, Limits, Memory, MemtableOptions, Options, RangeFilterOptions, TableFormat, Tuner,
    WalOptions, WriteStallOptions,
};
use crate::error::{Error, Result};

/// Whether a reopen keeps the stored value when the caller leaves the setting at its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The database's configuration: a reopen keeps the stored value unless the caller sets
    /// another one.
    Stored,
    /// About one open of one process: the caller's value always applies.
    Open,
}

/// Why `set` did not take a value.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The text is not a value of the setting.
    Parse(String),
    /// The alternatives chosen have no place for the setting; the text says which.
    NoPlace(String),
}

/// One row of the table. What only the generated docs read is kept in every build, so that the
/// table stays one list.
#[cfg_attr(
    not(any(test, feature = "test-util")),
    expect(dead_code, reason = "place, path, doc and choices are read by the docs table")
)]
pub(crate) struct Setting {
    pub name: &'static str,
    /// Where `Options` holds it: the group's path (empty for the rows that spell it whole)
    /// and the field.
    pub place: &'static str,
    pub path: &'static str,
    pub kind: Kind,
    pub range: Range,
    pub scope: Scope,
    /// Chooses an alternative (switching it drops the settings of the other).
    pub selector: bool,
    pub doc: &'static str,
    pub choices: fn() -> &'static [&'static str],
    /// The value as OPTIONS writes it; `None` where the alternatives chosen leave no place.
    pub get: fn(&Options) -> Option<String>,
    pub set: fn(&mut Options, &str) -> std::result::Result<(), Refusal>,
    /// The value of `Options::default()`, or of the alternative's defaults.
    pub default: fn() -> String,
}

impl Setting {
    /// The value shown to a person: sizes with units.
    pub(crate) fn show(&self, o: &Options) -> String {
        let v = (self.get)(o).unwrap_or_default();
        match (self.kind, v.parse::<u64>()) {
            (Kind::Bytes, Ok(n)) => super::show_bytes(n),
            _ => v,
        }
    }

    /// The value as a number, for range checks (`None` for booleans, enums and no place).
    pub(crate) fn number(&self, o: &Options) -> Option<f64> {
        match self.kind {
            Kind::Bytes | Kind::Count | Kind::Float => (self.get)(o)?.parse().ok(),
            Kind::Bool | Kind::Choice => None,
        }
    }

    /// Whether the caller changed it: it has a value, and not the default one.
    pub(crate) fn is_set(&self, o: &Options) -> bool {
        (self.get)(o).is_some_and(|v| v != (self.default)())
    }
}

/// Where a group of settings lives in `Options`.
trait Place {
    type G: Default;
    const PATH: &'static str;
    fn of(o: &Options) -> Option<&Self::G>;
    fn of_mut(o: &mut Options) -> std::result::Result<&mut Self::G, String>;
}

macro_rules! plain_places {
    ($($place:ident: $g:ty = $field:ident;)*) => {$(
        struct $place;
        impl Place for $place {
            type G = $g;
            const PATH: &'static str = concat!("o.", stringify!($field));
            fn of(o: &Options) -> Option<&$g> {
                Some(&o.$field)
            }
            fn of_mut(o: &mut Options) -> std::result::Result<&mut $g, String> {
                Ok(&mut o.$field)
            }
        }
    )*};
}
plain_places! {
    Cache: CacheOptions = cache;
    Memtable: MemtableOptions = memtable;
    Wal: WalOptions = wal;
    Table: TableFormat = table;
    Filters: FilterOptions = filters;
    RangeFilter: RangeFilterOptions = range_filter;
    Compaction: CompactionOptions = compaction;
    Background: BackgroundOptions = background;
    WriteStalls: WriteStallOptions = write_stalls;
    Files: FileOptions = files;
    LimitsPlace: Limits = limits;
}

struct Top;
impl Place for Top {
    type G = Options;
    const PATH: &'static str = "o";
    fn of(o: &Options) -> Option<&Options> {
        Some(o)
    }
    fn of_mut(o: &mut Options) -> std::result::Result<&mut Options, String> {
        Ok(o)
    }
}

const NO_BUDGET: &str = "it applies only with memory.budget set (memory.budget = 0)";

struct InBudget;
impl Place for InBudget {
    type G = Budget;
    const PATH: &'static str = "Budget";
    fn of(o: &Options) -> Option<&Budget> {
        o.memory.budget()
    }
    fn of_mut(o: &mut Options) -> std::result::Result<&mut Budget, String> {
        match &mut o.memory {
            Memory::Budget(b) => Ok(b),
            Memory::Fixed(_) => Err(NO_BUDGET.into()),
        }
    }
}

struct InTuner;
impl Place for InTuner {
    type G = Tuner;
    const PATH: &'static str = "Tuner";
    fn of(o: &Options) -> Option<&Tuner> {
        o.memory.budget()?.tuner.as_ref()
    }
    fn of_mut(o: &mut Options) -> std::result::Result<&mut Tuner, String> {
        InBudget::of_mut(o)?
            .tuner
            .as_mut()
            .ok_or_else(|| "it applies only with memory.tuner = true (memory.tuner = false)".into())
    }
}

/// Fixed sizes; a region sized by hand while the budget is at its default selects them (a
/// program that sizes its memtables or cache as with RocksDB keeps doing so).
struct InFixed;
impl Place for InFixed {
    type G = FixedMemory;
    const PATH: &'static str = "FixedMemory";
    fn of(o: &Options) -> Option<&FixedMemory> {
        o.memory.fixed()
    }
    fn of_mut(o: &mut Options) -> std::result::Result<&mut FixedMemory, String> {
        match &o.memory {
            Memory::Budget(b) if *b != Budget::default() => Err(format!(
                "memory.budget = {} sizes write memory, the block cache and filter memory itself (change their \
                 split with memory.write_share and memory.filter_share, or set memory.budget = 0)",
                super::show_bytes(b.bytes as u64)
            )),
            _ => Ok(o.memory.fixed_mut()),
        }
    }
}

struct InElastic;
impl Place for InElastic {
    type G = ElasticUnits;
    const PATH: &'static str = "ElasticUnits";
    fn of(o: &Options) -> Option<&ElasticUnits> {
        o.filters.policy.units()
    }
    fn of_mut(o: &mut Options) -> std::result::Result<&mut ElasticUnits, String> {
        let policy = o.filters.policy.kind().name();
        o.filters.policy.units_mut().ok_or_else(|| {
            format!(
                "only the elastic policies (elastic, mnemosyne-elastic) load filter units (filters.policy = {policy})"
            )
        })
    }
}

fn choices_of<T: Value>(_: &T) -> &'static [&'static str] {
    T::CHOICES
}

/// A row for a field that maps one to one onto its text.
macro_rules! plain {
    ($name:literal, $kind:ident, $range:expr, $scope:ident, $place:ident . $field:ident, $doc:literal) => {
        Setting {
            name: $name,
            place: <$place as Place>::PATH,
            path: stringify!($field),
            kind: Kind::$kind,
            range: $range,
            scope: Scope::$scope,
            selector: false,
            doc: $doc,
            choices: || choices_of(&<<$place as Place>::G as Default>::default().$field),
            get: |o| <$place as Place>::of(o).map(|g| Value::show(&g.$field)),
            set: |o, v| {
                let x = Value::parse(v, Kind::$kind).map_err(Refusal::Parse)?;
                <$place as Place>::of_mut(o).map_err(Refusal::NoPlace)?.$field = x;
                Ok(())
            },
            default: || Value::show(&<<$place as Place>::G as Default>::default().$field),
        }
    };
}

const MIB: f64 = (1u64 << 20) as f64;
const GIB: f64 = (1u64 << 30) as f64;
const INF: f64 = f64::INFINITY;

fn bytes(v: &str) -> std::result::Result<usize, Refusal> {
    Value::parse(v, Kind::Bytes).map_err(Refusal::Parse)
}

/// Every setting, selectors before the settings they hold.
pub(crate) static SETTINGS: &[Setting] = &[
    plain!(
        "create_if_missing",
        Bool,
        ANY,
        Open,
        Top.create_if_missing,
        "Create the directory and database if missing."
    ),
    plain!(
        "error_if_exists",
        Bool,
        ANY,
        Open,
        Top.error_if_exists,
        "Fail if the database exists."
    ),
    plain!(
        "keep_stored",
        Bool,
        ANY,
        Open,
        Top.keep_stored,
        "Keep the database's stored configuration for the settings these options leave at their defaults; \
         false: use these options exactly as given."
    ),
    plain!(
        "malloc_mmap_threshold",
        Bytes,
        within(0.0, 32.0 * MIB),
        Open,
        Top.malloc_mmap_threshold,
        "glibc only: fix malloc's mmap threshold at this many bytes at open (0: leave the allocator alone). \
         glibc raises the threshold each time a large block is freed, after which such blocks stay with the \
         process: a load at a 64 MiB budget peaked at 102-117 MB of RSS with it, 71 MB without. Process-wide: \
         the first open that applies it decides, and MALLOC_MMAP_THRESHOLD_ in the environment wins. Above 0, \
         free heap memory is also returned when the block cache or filter memory shrinks."
    ),
    plain!(
        "merge.operator",
        Choice,
        ANY,
        Stored,
        Top.merge_operator,
        "The operator Db::merge operands are combined with: uint64add (8-byte little-endian sums), \
         stringappend (joined with ,), stringappend:DELIMITER, or the name of the operator given as \
         Options.merge_operator. A database written with one opens again only with an operator of the same name."
    ),
    plain!(
        "ttl.trees",
        Choice,
        ANY,
        Stored,
        Top.ttl,
        "Times to live by tree: TREE=DURATION pairs, e.g. sessions=30m,default=7d (units ms, s, m, h, d). Each \
         put into such a tree expires that long after it is written: reads no longer return it and compactions \
         drop it. Applies to values written while it is set; Db::put_with_ttl gives one put its own."
    ),
    Setting {
        place: "",
        name: "memory.budget",
        path: "memory: Memory::Budget(Budget { bytes })",
        kind: Kind::Bytes,
        range: ANY,
        scope: Scope::Stored,
        selector: true,
        doc: "One memory budget for write memory, the block cache and filter memory (Luo & Carey §3). It is \
              split into write memory (memory.write_share; memtables switch at half of it), filter memory for the \
              elastic policies (memory.filter_share) and the block cache (the rest, which also holds the index \
              blocks and the filters), and the memory tuner moves memory between them. 0: fixed sizes \
              (memory.write_memory, memtable.size, memory.block_cache, memory.filter_memory); sizing one of \
              those while the budget is at its default selects fixed sizes too. At least 256 KiB.",
        choices: || &[],
        get: |o| Some(o.memory.budget().map_or(0, |b| b.bytes).to_string()),
        set: |o, v| {
            match bytes(v)? {
                0 => drop(o.memory.fixed_mut()),
                n => o.memory.budget_mut().bytes = n,
            }
            Ok(())
        },
        default: || super::DEFAULT_BUDGET.to_string(),
    },
    plain!(
        "memory.write_share",
        Float,
        above(0.0, 0.95),
        Stored,
        InBudget.write_share,
        "Write memory's starting share of memory.budget."
    ),
    plain!(
        "memory.filter_share",
        Float,
        within(0.0, 0.95),
        Stored,
        InBudget.filter_share,
        "Filter memory's starting share of memory.budget under an elastic filters.policy."
    ),
    Setting {
        place: "",
        name: "memory.tuner",
        path: "Budget.tuner: Option<Tuner>",
        kind: Kind::Bool,
        range: ANY,
        scope: Scope::Stored,
        selector: true,
        doc: "Run the memory tuner: every wal.max_size of log, or every memory.tuner_period_ms without that much, \
              move memory between write memory, the block cache and (elastic policies) filter memory where it \
              saves the most I/O per operation. Turns on a 128 MiB ghost cache when cache.ghost_cache is 0.",
        choices: || &[],
        get: |o| InBudget::of(o).map(|b| b.tuner.is_some().to_string()),
        set: |o, v| {
            let on: bool = Value::parse(v, Kind::Bool).map_err(Refusal::Parse)?;
            let b = InBudget::of_mut(o).map_err(Refusal::NoPlace)?;
            match on {
                true => drop(b.tuner_mut()),
                false => b.tuner = None,
            }
            Ok(())
        },
        default: || "true".into(),
    },
    plain!(
        "memory.tuner_period_ms",
        Count,
        within(1.0, INF),
        Stored,
        InTuner.period_ms,
        "The tuner's timer cycle in milliseconds (the paper's 10 minutes suit hour-long phases; a read phase \
         after a load must not wait that long for its cache)."
    ),
    plain!(
        "memory.tuner_floor",
        Bytes,
        ANY,
        Stored,
        InTuner.floor,
        "The least the tuner leaves write memory and the block cache (0: 32 MiB, the paper's, or a sixteenth \
         of memory.budget when that is smaller). An explicit floor must not exceed the regions' starting sizes."
    ),
    plain!(
        "memory.tuner_write_weight",
        Float,
        within(0.0, INF),
        Stored,
        InTuner.write_weight,
        "ω: the weight of a page write against a page read in the tuner's cost (the paper uses 2 on SSDs whose \
         writes cost twice their reads)."
    ),
    plain!(
        "memory.tuner_filters",
        Bool,
        ANY,
        Stored,
        InTuner.filters,
        "Tune filter memory too, as a third region (only the elastic policies have one); false keeps its \
         starting share."
    ),
    plain!(
        "memory.write_memory",
        Bytes,
        within(1.0, INF),
        Stored,
        InFixed.write_memory,
        "Write memory shared by all trees' memtables with fixed sizes: when the mutable memtables reach 7/8 of \
         it the largest tree's memtable is switched and flushed (RocksDB db_write_buffer_size). Changeable at \
         run time with Db::resize_memory."
    ),
    plain!(
        "memtable.size",
        Bytes,
        within(1.0, INF),
        Stored,
        InFixed.memtable_size,
        "Memtable size at which a tree's memtable is flushed, with fixed sizes (RocksDB write_buffer_size). With \
         a partitioned component, the active memtable's size and the size memory runs are cut at."
    ),
    Setting {
        place: "",
        name: "memory.block_cache",
        path: "FixedMemory.block_cache: CacheSource::Own(bytes)",
        kind: Kind::Bytes,
        range: ANY,
        scope: Scope::Stored,
        selector: false,
        doc: "Block cache capacity with fixed sizes and no shared block cache.",
        choices: || &[],
        get: |o| match InFixed::of(o)?.block_cache {
            CacheSource::Own(n) => Some(n.to_string()),
            CacheSource::Shared(_) => None,
        },
        set: |o, v| {
            let n = bytes(v)?;
            let f = InFixed::of_mut(o).map_err(Refusal::NoPlace)?;
            if let CacheSource::Shared(_) = f.block_cache {
                return Err(Refusal::NoPlace(
                    "the shared block cache given has its own capacity".into(),
                ));
            }
            f.block_cache = CacheSource::Own(n);
            Ok(())
        },
        default: || (32u64 << 20).to_string(),
    },
    plain!(
        "memory.filter_memory",
        Bytes,
        ANY,
        Stored,
        InFixed.filter_memory,
        "Bytes of loaded filter units for the elastic policies with fixed sizes (0: filters.bits_per_key bits \
         per live key, following the data). Changeable at run time with Db::resize_memory."
    ),
    plain!(
        "cache.index_in_block_cache",
        Bool,
        ANY,
        Stored,
        InFixed.index_in_block_cache,
        "Keep index blocks and filter units in the block cache at high priority with fixed sizes (always so \
         with memory.budget): an index or unit evicted is read again when needed, and what table readers still \
         pin is reserved in it (RocksDB's cache_index_and_filter_blocks). Without it, they are pinned in their \
         table readers."
    ),
    plain!(
        "cache.ghost_cache",
        Bytes,
        ANY,
        Stored,
        Cache.ghost_cache,
        "Simulated bytes of the ghost cache: the ids of the blocks most recently evicted from the block cache, \
         so storage reads a larger cache would have saved are counted. The memory tuner's read cost comes from \
         it. 0: off (the tuner then simulates 128 MiB, the paper's; about 40 bytes per id)."
    ),
    plain!(
        "cache.high_pri_pool_ratio",
        Float,
        within(0.0, 1.0),
        Stored,
        Cache.high_pri_pool_ratio,
        "Share of the engine's own block cache reserved for filter units and other meta blocks."
    ),
    plain!(
        "cache.huge_pages",
        Bool,
        ANY,
        Stored,
        Cache.huge_pages,
        "Put cached data and index blocks in transparent huge pages while the engine's own block cache is at \
         least 256 MiB: 2 MiB chunks of equal slots, so that a lookup among many cached blocks misses the TLB \
         less. The chunks' free slots are counted in MemoryUsage::cache_huge_page_slack."
    ),
    plain!(
        "memtable.flush_policy",
        Choice,
        ANY,
        Stored,
        Memtable.flush_policy,
        "Which tree a memory-triggered flush picks (see FlushPolicy)."
    ),
    plain!(
        "memtable.component",
        Choice,
        ANY,
        Stored,
        Memtable.component,
        "Monolithic or partitioned memory components (see MemoryComponent)."
    ),
    plain!(
        "memtable.partitioned_size_ratio",
        Count,
        within(2.0, INF),
        Stored,
        Memtable.partitioned_size_ratio,
        "Size ratio between memory levels of a partitioned component."
    ),
    plain!(
        "memtable.partitioned_flush_beta",
        Float,
        within(0.0, 1.0),
        Stored,
        Memtable.partitioned_flush_beta,
        "Luo & Carey's β: a log-triggered flush of a partitioned component writes everything unless more than \
         this fraction of its memory was flushed for memory since the oldest live WAL was started."
    ),
    plain!(
        "wal.max_size",
        Bytes,
        ANY,
        Stored,
        Wal.max_size,
        "Total WAL bytes after which the tree holding the oldest WAL data is flushed; 0: 4 × the current write \
         memory (RocksDB max_total_wal_size)."
    ),
    plain!(
        "wal.recovery_mode",
        Choice,
        ANY,
        Open,
        Wal.recovery_mode,
        "How a damaged WAL is treated at open."
    ),
    plain!(
        "table.block_size",
        Bytes,
        within(64.0, 64.0 * MIB),
        Stored,
        Table.block_size,
        "Target data block size."
    ),
    plain!(
        "table.restart_interval",
        Count,
        within(1.0, 65_535.0),
        Stored,
        Table.restart_interval,
        "Entries between restart points in data blocks."
    ),
    plain!(
        "table.index_restart_interval",
        Count,
        within(1.0, 65_535.0),
        Stored,
        Table.index_restart_interval,
        "Entries between restart points in index blocks (RocksDB index_block_restart_interval, 1 there). \
         Entries within an interval share key prefixes and leave out their block's offset: about a third of \
         the index bytes of one entry per restart point."
    ),
    plain!(
        "table.hash_index",
        Bool,
        ANY,
        Stored,
        Table.hash_index,
        "Write a hash index in each data block so a point lookup skips the block's binary search (RocksDB's \
         kDataBlockBinaryAndHash)."
    ),
    plain!(
        "table.compression",
        Choice,
        ANY,
        Stored,
        Table.compression,
        "Data block compression."
    ),
    plain!(
        "filters.bits_per_key",
        Float,
        within(0.0, 64.0),
        Stored,
        Filters.bits_per_key,
        "Bloom filter bits per key on average over a tree's files (0: no filters; the elastic policies: the \
         default filter memory, per live key)."
    ),
    Setting {
        place: "",
        name: "filters.policy",
        path: "filters.policy: FilterPolicy",
        kind: Kind::Choice,
        range: ANY,
        scope: Scope::Stored,
        selector: true,
        doc: "How those bits are spread over files (see FilterPolicy). May change between opens: new files \
              follow the new policy.",
        choices: || <super::BpkPolicy as Value>::CHOICES,
        get: |o| Some(o.filters.policy.kind().name().into()),
        set: |o, v| {
            let kind: super::BpkPolicy = Value::parse(v, Kind::Choice).map_err(Refusal::Parse)?;
            if o.filters.policy.kind() != kind {
                o.filters.policy = kind.into();
            }
            Ok(())
        },
        default: || FilterPolicy::Mnemosyne.kind().name().into(),
    },
    plain!(
        "filters.segment_size",
        Bytes,
        within(1.0, INF),
        Stored,
        Filters.segment_size,
        "Data bytes per filter segment."
    ),
    plain!(
        "filters.unit_format",
        Choice,
        ANY,
        Stored,
        Filters.unit_format,
        "Layout of the filter units of new tables (cache-local: every probe of a key in one 64-byte line; \
         standard: probes spread over the unit). Tables record it per unit: both are read."
    ),
    plain!(
        "filters.merlin_window",
        Count,
        within(2.0, 64.0),
        Stored,
        Filters.merlin_window,
        "Probes in Merlin's per-file window (the paper's default)."
    ),
    plain!(
        "filters.elastic_units",
        Count,
        within(1.0, 16.0),
        Stored,
        InElastic.units,
        "Elastic policies: filter units per segment on disk (the paper's)."
    ),
    plain!(
        "filters.elastic_unit_bits_per_key",
        Float,
        above(0.0, 16.0),
        Stored,
        InElastic.unit_bits_per_key,
        "Elastic policies: bits per key of each unit (the paper's)."
    ),
    plain!(
        "filters.elastic_life_time",
        Count,
        ANY,
        Stored,
        InElastic.life_time,
        "Elastic policies: Gets after its last access at which a segment expires and may lose units (0: the \
         number of live segments, the paper's rule; the authors' code uses 20,000)."
    ),
    plain!(
        "filters.elastic_interval_ms",
        Count,
        ANY,
        Stored,
        InElastic.interval_ms,
        "Elastic policies: milliseconds between the background adjuster's rounds while lookups arrive (0: no \
         background adjuster; filter units then move only when the tree changes)."
    ),
    Setting {
        place: "",
        name: "filters.elastic_solve_every",
        path: "FilterPolicy::MnemosyneElastic { solve_every }",
        kind: Kind::Count,
        range: within(1.0, INF),
        scope: Scope::Stored,
        selector: false,
        doc: "mnemosyne-elastic: lookups between solves of the optimum.",
        choices: || &[],
        get: |o| match o.filters.policy {
            FilterPolicy::MnemosyneElastic { solve_every, .. } => Some(solve_every.to_string()),
            _ => None,
        },
        set: |o, v| {
            let n: u64 = Value::parse(v, Kind::Count).map_err(Refusal::Parse)?;
            match &mut o.filters.policy {
                FilterPolicy::MnemosyneElastic { solve_every, .. } => *solve_every = n,
                p => {
                    return Err(Refusal::NoPlace(format!(
                        "it applies only with filters.policy = mnemosyne-elastic (filters.policy = {})",
                        p.kind().name()
                    )))
                }
            }
            Ok(())
        },
        default: || super::SOLVE_EVERY.to_string(),
    },
    plain!(
        "range_filter.bits_per_key",
        Float,
        within(0.0, 64.0),
        Stored,
        RangeFilter.bits_per_key,
        "Range-filter bits per key, on average over a tree's tables (0: no range filter). With \
         range_filter.by_workload a table gets bits only when empty bounded range reads have reached the data \
         it is written from. A table's filter is loaded at its first range read and charged to the block \
         cache. Tables written before it was set have none."
    ),
    plain!(
        "range_filter.kind",
        Choice,
        ANY,
        Stored,
        RangeFilter.kind,
        "The kind of range filter new tables get (grafite: a bound on its false-positive rate for every \
         workload, and a cost per range read independent of its length). Needs range filters on."
    ),
    plain!(
        "range_filter.by_workload",
        Bool,
        ANY,
        Stored,
        RangeFilter.by_workload,
        "Give tables that more empty range reads reach a larger share of the range-filter bits, and none to \
         tables no empty range read reached (Mnemosyne's solver over per-file counts of empty range reads); \
         false: every table gets range_filter.bits_per_key."
    ),
    plain!(
        "range_filter.key_offset",
        Count,
        within(0.0, 255.0),
        Stored,
        RangeFilter.key_offset,
        "0: each table's range filter indexes its keys by the bytes after the table's common prefix, up to the \
         last byte where two of its keys first differ (at most 8). Above 0: every table indexes the 8 bytes \
         after this many bytes, and a range read is asked only when its bounds share them. Needs range filters on."
    ),
    plain!(
        "range_filter.max_depth",
        Count,
        within(1.0, 64.0),
        Stored,
        RangeFilter.max_depth,
        "Rosetta: heights a range-filter probe may descend below a dyadic interval (the authors' value)."
    ),
    plain!(
        "range_filter.probe_budget",
        Count,
        within(1.0, INF),
        Stored,
        RangeFilter.probe_budget,
        "Rosetta: Bloom probes one range read may spend on one table's range filter before it answers maybe \
         (the authors' value)."
    ),
    plain!(
        "range_filter.memory_share",
        Float,
        above(0.0, 1.0),
        Stored,
        RangeFilter.memory_share,
        "The share of the block cache that range filters may hold: a table's filter is pinned at its first \
         bounded read while they hold less, and a round every range_filter.round_ms keeps this memory for the \
         filters with the most empty range reads per byte. Applies where range filters are charged to the \
         block cache (memory.budget, or cache.index_in_block_cache)."
    ),
    plain!(
        "range_filter.round_ms",
        Count,
        ANY,
        Stored,
        RangeFilter.round_ms,
        "Milliseconds between rounds of range-filter memory while range reads arrive (0: rounds only when the \
         block cache is resized). Applies where range filters are charged to the block cache."
    ),
    plain!(
        "compaction.merge_policy",
        Choice,
        ANY,
        Stored,
        Compaction.merge_policy,
        "Merge policy: leveling, or garnering:C for Autumn's Garnering."
    ),
    plain!(
        "compaction.size_ratio",
        Float,
        within(2.0, INF),
        Stored,
        Compaction.size_ratio,
        "Size ratio T between levels."
    ),
    plain!(
        "compaction.l0_trigger",
        Count,
        within(1.0, INF),
        Stored,
        Compaction.l0_trigger,
        "L0 files that trigger a compaction."
    ),
    plain!(
        "compaction.max_bytes_for_level_base",
        Bytes,
        within(1.0, INF),
        Stored,
        Compaction.max_bytes_for_level_base,
        "Capacity of L1 with fixed compaction.level_targets (RocksDB max_bytes_for_level_base)."
    ),
    plain!(
        "compaction.level_targets",
        Choice,
        ANY,
        Stored,
        Compaction.level_targets,
        "Whether level capacities are fixed or follow write memory (leveling only; see LevelTargets)."
    ),
    plain!(
        "compaction.target_file_size",
        Bytes,
        within(1.0, INF),
        Stored,
        Compaction.target_file_size,
        "Target size of compaction output files."
    ),
    plain!(
        "compaction.max_levels",
        Count,
        within(2.0, 32.0),
        Stored,
        Compaction.max_levels,
        "Levels including L0 (RocksDB num_levels)."
    ),
    plain!(
        "background.compaction_threads",
        Count,
        within(1.0, 64.0),
        Open,
        Background.compaction_threads,
        "Background compaction threads (RocksDB max_background_compactions). Flushes have a thread of their own."
    ),
    plain!(
        "background.max_subcompactions",
        Count,
        within(1.0, 64.0),
        Open,
        Background.max_subcompactions,
        "Key-range pieces a large L0 → L1 compaction is split into, each merged by its own thread."
    ),
    plain!(
        "background.compaction_nice",
        Count,
        within(0.0, 19.0),
        Open,
        Background.compaction_nice,
        "How far below the foreground's CPU priority the compaction threads run: their nice value, from 0 \
         (the same, as RocksDB's) to 19 (they take the cores the foreground leaves). Linux only."
    ),
    plain!(
        "write_stalls.l0_slowdown_trigger",
        Count,
        within(1.0, INF),
        Stored,
        WriteStalls.l0_slowdown_trigger,
        "L0 files at which writes are delayed (twice the compaction trigger; RocksDB's 20 lets a fast load leave \
         a deep L0 that the reads after it pay for). Delayed writes go at a rate that adapts to whether \
         compaction is catching up."
    ),
    plain!(
        "write_stalls.l0_stop_trigger",
        Count,
        within(1.0, INF),
        Stored,
        WriteStalls.l0_stop_trigger,
        "L0 files at which writes stop until compaction catches up."
    ),
    plain!(
        "write_stalls.soft_pending_compaction_bytes",
        Bytes,
        ANY,
        Stored,
        WriteStalls.soft_pending_compaction_bytes,
        "Estimated pending compaction bytes at which writes slow down."
    ),
    plain!(
        "write_stalls.hard_pending_compaction_bytes",
        Bytes,
        ANY,
        Stored,
        WriteStalls.hard_pending_compaction_bytes,
        "Estimated pending compaction bytes at which writes stop."
    ),
    plain!(
        "write_stalls.delayed_write_rate",
        Bytes,
        within(1024.0, INF),
        Stored,
        WriteStalls.delayed_write_rate,
        "Write rate in bytes per second when writes start being delayed; it then falls while L0 and the \
         compaction debt grow and rises while they shrink (RocksDB's: 16 MiB/s)."
    ),
    plain!(
        "files.max_open_files",
        Count,
        within(1.0, INF),
        Open,
        Files.max_open_files,
        "Table readers kept open."
    ),
    plain!(
        "files.use_direct_reads",
        Bool,
        ANY,
        Open,
        Files.use_direct_reads,
        "O_DIRECT reads of tables."
    ),
    plain!(
        "files.max_manifest_size",
        Bytes,
        within(1024.0, INF),
        Stored,
        Files.max_manifest_size,
        "Manifest size after which a new manifest (a snapshot of the current version) is started."
    ),
    plain!(
        "limits.max_key_size",
        Bytes,
        within(1.0, 64.0 * MIB),
        Stored,
        LimitsPlace.max_key_size,
        "Largest key accepted."
    ),
    plain!(
        "limits.max_value_size",
        Bytes,
        within(0.0, GIB),
        Stored,
        LimitsPlace.max_value_size,
        "Largest value accepted."
    ),
    plain!(
        "limits.max_batch_size",
        Bytes,
        within(1.0, GIB),
        Stored,
        LimitsPlace.max_batch_size,
        "Largest write batch accepted, encoded."
    ),
];

/// The setting called `name`.
pub(crate) fn find(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name)
}

/// The position of `name` in the table, or the unknown-option error.
fn position(name: &str) -> Result<usize> {
    SETTINGS
        .iter()
        .position(|s| s.name == name)
        .ok_or_else(|| Error::InvalidArgument(unknown(name)))
}

/// The error for a value `set` refused.
pub(crate) fn refused(s: &Setting, value: &str, why: Refusal) -> Error {
    match why {
        Refusal::Parse(why) => super::check::invalid(s.name, format!("{} = {value:?}: {why}", s.name)),
        Refusal::NoPlace(why) => super::check::invalid(s.name, format!("{} = {value} has no effect: {why}", s.name)),
    }
}

impl Options {
    /// Sets the option `name` (`group.setting`, as in `docs/options.md` and OPTIONS) from its
    /// text form. Sizes take binary units (`64MiB`, `1.5 GiB`, `4k`), enums their names
    /// (`mnemosyne-elastic`). Sizing a region by hand (`memory.write_memory`, `memtable.size`,
    /// `memory.block_cache`, …) while the budget is at its default selects fixed sizes;
    /// `memory.budget = 0` does too.
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown name (with the closest known names); `InvalidOptions`
    /// naming the option when the value does not parse (an enum's error lists its valid
    /// names), when the alternatives chosen have no place for it (an elastic unit setting
    /// under `filters.policy = mnemosyne`: set the policy first), or when it would drop a
    /// setting made before (`memory.budget` after regions sized by hand). Ranges and the other
    /// combinations are checked by [`validate`](Self::validate) at open.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        self.set_all([(name, value)])
    }

    /// [`set`](Self::set) for several options at once, in any order: the settings that choose
    /// an alternative are applied first (`filters.elastic_units` may come before
    /// `filters.policy = elastic`). Nothing changes when one fails.
    ///
    /// # Errors
    /// As [`set`](Self::set), for the first option that fails.
    pub fn set_all<'a>(&mut self, options: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<()> {
        let mut rows = Vec::new();
        for (name, value) in options {
            rows.push((position(name)?, value));
        }
        rows.sort_by_key(|(i, _)| *i);
        let mut o = self.clone();
        for (i, value) in rows {
            let s = &SETTINGS[i];
            let before = o.clone();
            (s.set)(&mut o, value).map_err(|why| refused(s, value, why))?;
            // A setting made before that this one changed (its alternative switched away):
            // refused, naming the setting that would have no effect.
            if let Some(d) = SETTINGS
                .iter()
                .find(|d| d.name != s.name && d.is_set(&before) && (d.get)(&o) != (d.get)(&before))
            {
                let (named, other, other_value) = if s.selector {
                    (d, s, value.to_string())
                } else {
                    (s, d, d.show(&before))
                };
                let shown = if named.name == s.name {
                    value.to_string()
                } else {
                    named.show(&before)
                };
                return Err(super::check::invalid(
                    named.name,
                    format!(
                        "{} = {shown} has no effect with {} = {other_value}",
                        named.name, other.name
                    ),
                ));
            }
        }
        *self = o;
        Ok(())
    }

    /// The value of the option `name` as OPTIONS writes it; `None` for an unknown name, or
    /// where the alternatives chosen leave it no place.
    pub fn get(&self, name: &str) -> Option<String> {
        (find(name)?.get)(self)
    }
}

/// "unknown option", with the known names that share a word with it.
fn unknown(name: &str) -> String {
    let words: Vec<&str> = name.split(['.', '_']).filter(|w| w.len() > 2).collect();
    let near: Vec<&str> = SETTINGS
        .iter()
        .filter(|s| words.iter().any(|w| s.name.contains(w)))
        .map(|s| s.name)
        .take(6)
        .collect();
    if near.is_empty() {
        format!("unknown option {name:?} (every option: docs/options.md)")
    } else {
        format!(
            "unknown option {name:?}; options with a similar name: {}",
            near.join(", ")
        )
    }
}

/// `docs/options.md`: every setting with where `Options` holds it, its type, default, valid
/// values and scope (generated; a test keeps the file current).
#[cfg(any(test, feature = "test-util"))]
pub fn options_table() -> String {
    let mut s = String::from(
        "# Options\n\n\
         Generated from the table in `crates/cairn/src/options/table.rs` (`CAIRN_REWRITE=1 cargo test -p cairn \
         --test options` rewrites it). In Rust a setting is a field of `Options` (column *in Options*): most in \
         their group (`o.filters.bits_per_key`); the memory settings inside `o.memory`, which is either \
         `Memory::Budget(Budget { .., tuner: Some(Tuner { .. }) })` or `Memory::Fixed(FixedMemory { .. })`; the \
         elastic units inside `o.filters.policy` (`FilterPolicy::Elastic(ElasticUnits { .. })`). \
         `Options::set(name, value)` and OPTIONS files take the name. Sizes take binary units (`64MiB`, \
         `1.5 GiB`, `4k`).\n\n\
         Scope: **stored** settings are the database's configuration; a reopen keeps the stored value of each one \
         the caller leaves at its default (`keep_stored = false` turns that off). **open** settings are about one \
         open and always come from the caller. A setting that has no effect under the others must stay at its \
         default: the open fails otherwise, naming it.\n\n\
         | name | in Options | type | default | valid | scope | description |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for sp in SETTINGS {
        let valid = match sp.kind {
            Kind::Choice => (sp.choices)().join(", "),
            Kind::Bool => "true, false".into(),
            _ => sp.range.describe(sp.kind),
        };
        let default = match sp.name {
            "background.compaction_threads" | "background.max_subcompactions" => "cores, at most 4".to_string(),
            _ => match (sp.kind, (sp.default)().parse::<u64>()) {
                (Kind::Bytes, Ok(n)) => super::show_bytes(n),
                (_, _) => (sp.default)(),
            },
        };
        let path = match sp.place {
            "" => sp.path.to_string(),
            place => format!("{place}.{}", sp.path),
        };
        s.push_str(&format!(
            "| `{}` | `{}` | {} | {} | {} | {} | {} |\n",
            sp.name,
            path,
            sp.kind.name(),
            default,
            valid,
            if sp.scope == Scope::Stored { "stored" } else { "open" },
            sp.doc.replace('|', "\\|"),
        ));
    }
    s
}
