//! cairn: an embedded LSM-tree key-value engine, read-optimized and memory-adaptive. Given one
//! memory budget ([`Options::with_memory`]) it spends each byte — write buffers, block cache,
//! point filters, range filters — where it saves the most I/O for the workload it serves.
//!
//! ```
//! use cairn::{Db, Options, WriteBatch, WriteOptions};
//!
//! # fn main() -> cairn::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("db");
//! let db = Db::open(&path, Options::with_memory(64 << 20))?;
//! db.put(b"apple", b"red")?;
//! let users = db.tree("users")?; // a named tree (column family)
//! let mut batch = WriteBatch::new(); // atomic across trees
//! batch.delete(b"apple");
//! batch.put_in(&users, b"alice", b"admin");
//! db.write(batch, &WriteOptions { sync: true, ..Default::default() })?;
//! assert_eq!(db.get(b"apple")?, None);
//! let keys: Vec<Vec<u8>> = users.iter().map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
//! assert_eq!(keys, vec![b"alice".to_vec()]);
//! db.close()?;
//! # Ok(())
//! # }
//! ```
//!
//! - [`Options`]: every setting in groups (`memory`, `filters`, `compaction`, …), the
//!   alternatives as enums ([`Memory`], [`FilterPolicy`]), validated at open; by name with
//!   [`Options::set`] (`"filters.policy"`, `"memory.budget"`); a reopen keeps the stored
//!   configuration. The default is the adaptive engine: a 256 MiB budget ([`DEFAULT_BUDGET`])
//!   with the memory tuner, Mnemosyne point filters and range filters by workload;
//!   [`Options::with_fixed_memory`] sizes the regions by hand instead.
//! - [`Db`] and [`Tree`]: reads, writes, iterators, snapshots; [`Db::stats`], [`Db::levels`],
//!   [`Db::memory`] (their types in [`stats`]) and [`Db::property`] for what the engine decided
//!   and what it cost.
//! - [`Error`]: one error type; a failed fsync turns the database read-only
//!   ([`Error::Poisoned`]).

/// The README's examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

/// Declares the engine's internal modules: crate-private in a normal build; public but hidden
/// from the docs with the `test-util` feature, which the crate's own integration tests,
/// benchmarks and examples enable (they exercise tables, filters and iterators directly).
/// They are not part of the API and may change in any release.
macro_rules! internal_modules {
    ($($(#[$attr:meta])* $name:ident),* $(,)?) => {
        $(
            $(#[$attr])*
            #[cfg(feature = "test-util")]
            #[doc(hidden)]
            pub mod $name;
            $(#[$attr])*
            #[cfg(not(feature = "test-util"))]
            pub(crate) mod $name;
        )*
    };
}

internal_modules!(
    batch,
    /// The CLOCK cache (generic), the ghost cache and an LRU.
    cache,
    compaction,
    filter,
    format,
    iter,
    /// Memory regions as run-time values.
    memory,
    memtable,
    /// Range tombstones, fragmented.
    range_del,
    sst,
    tuning,
    version,
    wal,
);

pub mod compaction_filter;
mod db;
pub mod env;
mod error;
mod external;
mod filename;
#[doc(hidden)]
pub mod fuzzing;
pub mod inspect;
mod io_pool;
pub mod merge;
mod options;
pub mod stats;
pub mod ttl;

#[cfg(any(test, feature = "test-util"))]
pub mod testutil;

pub use batch::WriteBatch;
pub use cache::CacheCounters;
pub use compaction_filter::{CompactionFilter, FilterContext, FilterDecision};
pub use db::{
    BackupInfo, CheckpointInfo, Concurrency, Db, IngestInfo, IngestOptions, IngestedTable, Isolation, Range,
    RestoreInfo, Snapshot, Transaction, TransactionOptions, TransactionRange, Tree,
};
pub use error::{Error, Result};
pub use external::{ExternalTable, TableWriter};
pub use memory::MemoryLimits;
pub use merge::MergeOperator;
#[cfg(feature = "test-util")]
#[doc(hidden)]
pub use options::options_table;
pub use options::{
    BackgroundOptions, BpkPolicy, Budget, CacheOptions, CacheSource, CompactionOptions, ElasticUnits, FileOptions,
    FilterOptions, FilterPolicy, FixedMemory, FlushPolicy, LevelTargets, Limits, Memory, MemoryComponent,
    MemtableOptions, MergePolicyKind, Options, RangeFilterKind, RangeFilterOptions, TableFormat, Tuner, UnitFormat,
    WalOptions, WriteOptions, WriteStallOptions, DEFAULT_BUDGET, MIN_BUDGET,
};
pub use sst::BlockCache;
pub use sst::Compression;
/// The statistics types where they were before `cairn::stats`, for programs that name them
/// here.
#[doc(hidden)]
pub use stats::{
    BlockKind, DbStats, ElasticStats, FileAccessStats, IoSnapshot, KindSnapshot, LevelInfo, LevelStats, MemoryUsage,
    MerlinAccuracy, TreeLevels, TreeStatsSnapshot, TunerRecord, TunerRule,
};
pub use ttl::{Clock, ManualClock, SystemClock, TreeTtls};
pub use wal::RecoveryMode;
