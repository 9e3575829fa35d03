//! Options: what a user holds ([`Options`], in groups, with enums for the alternatives that
//! exclude each other) and what the engine reads, validated at open (`check.rs`) and persisted
//! in an OPTIONS file (`file.rs`; spec: `docs/format/options.md`).
//!
//! Each setting is declared once, in its group (`groups.rs`: doc, type, default, and its one
//! name `group.setting` with its text form, range and scope); `table.rs` lists the rows for
//! `Options::set`/`get`, the OPTIONS file and the generated `docs/options.md`. The engine
//! reads the fields, and the region sizes an open starts with from [`Regions`].

mod check;
mod file;
mod groups;
mod table;
mod value;

pub(crate) use file::{check_compatible, merge_stored, parse_options_file, read_stored};
/// `docs/options.md`, generated from the table of settings.
#[cfg(feature = "test-util")]
#[doc(hidden)]
pub use table::options_table;
pub(crate) use value::show_bytes;

pub use groups::{
    BackgroundOptions, Budget, CacheOptions, CompactionOptions, ElasticUnits, FileOptions, FilterOptions, FixedMemory,
    Limits, MemtableOptions, Options, RangeFilterOptions, TableFormat, Tuner, WalOptions, WriteStallOptions,
};

pub use crate::compaction::policy::{LevelTargets, MergePolicyKind};
pub use crate::filter::bloom::UnitFormat;
pub use crate::filter::range::RangeFilterKind;
pub use crate::memtable::MemoryComponent;
pub use crate::tuning::bpk::BpkPolicy;
pub use crate::tuning::write_control::FlushPolicy;

use crate::error::Error;
use crate::sst::BlockCache;
use std::sync::Arc;

/// How memory is sized.
#[derive(Debug, Clone, PartialEq)]
pub enum Memory {
    /// One budget (`memory.budget`) split between write memory, the block cache and filter
    /// memory, with the memory tuner moving memory between them (the default).
    Budget(Budget),
    /// Each region sized by hand (`memory.budget = 0`), as in RocksDB.
    Fixed(FixedMemory),
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

/// The mnemosyne-elastic policy's default lookups between solves.
const SOLVE_EVERY: u64 = 100_000;

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
}

/// The regions' starting sizes, derived from `Options::memory` at open: what the engine sizes
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
    pub shared_cache: Option<Arc<crate::sst::BlockCache>>,
    pub index_in_block_cache: bool,
    /// The key-value cache's capacity (0: none).
    pub kv_cache: usize,
    /// Simulated bytes of the key-value cache's ghost: an eighth of the budget (at least 1
    /// MiB) while the tuner prices the cache, else 0.
    pub kv_ghost: usize,
    /// Simulated bytes of the ghost cache (128 MiB for the tuner when not set).
    pub ghost_cache: usize,
    /// The tuner, with its floor resolved.
    pub tuner: Option<Tuner>,
}

impl Regions {
    /// The region sizes options `o` start with: under a budget, its split (write memory,
    /// memtables at half of it, filter memory for the elastic policies, the rest block cache
    /// holding the index blocks), the tuner's floor and its ghost cache; otherwise the sizes
    /// given.
    pub(crate) fn of(o: &Options) -> Regions {
        let ghost = o.cache.ghost_cache;
        match &o.memory {
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
                kv_cache: f.kv_cache,
                kv_ghost: 0,
                ghost_cache: ghost,
                tuner: None,
            },
            Memory::Budget(b) => {
                let budget = b.bytes as f64;
                let write = ((budget * b.write_share) as usize).max(2);
                let filter = if o.filters.policy.kind().is_elastic() {
                    (budget * b.filter_share) as usize
                } else {
                    0
                };
                let memtable_size = match o.memtable.component {
                    MemoryComponent::Monolithic => write / 2,
                    // A partitioned component keeps levels of runs this size (M1 holds 10).
                    MemoryComponent::Partitioned => (write / 16).max(1),
                };
                let kv_cache = (budget * b.kv_cache_share) as usize;
                let tuner = b.tuner.clone().map(|t| Tuner {
                    floor: if t.floor == 0 { auto_floor(b.bytes) } else { t.floor },
                    ..t
                });
                Regions {
                    budget: b.bytes,
                    write_memory: write,
                    memtable_size,
                    filter_memory: filter,
                    block_cache: b.bytes.saturating_sub(write + filter + kv_cache),
                    shared_cache: None,
                    index_in_block_cache: true,
                    kv_cache,
                    kv_ghost: if tuner.as_ref().is_some_and(|t| t.kv_cache) && kv_cache > 0 {
                        (b.bytes / 8).max(1 << 20)
                    } else {
                        0
                    },
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

/// The error for the option `option`.
pub(crate) fn invalid(option: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidOptions {
        option,
        reason: reason.into(),
    }
}
