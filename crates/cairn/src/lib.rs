#![doc = include_str!("../../../README.md")]

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
    /// The block cache and the table cache.
    cache,
    compaction,
    filter,
    format,
    iter,
    /// Memory regions as run-time values.
    memory,
    memtable,
    sst,
    /// Counters: I/O, per tree and level, per file.
    stats,
    tuning,
    version,
    wal,
);

mod db;
pub mod env;
mod error;
mod filename;
#[doc(hidden)]
pub mod fuzzing;
pub mod inspect;
mod options;

#[cfg(any(test, feature = "test-util"))]
pub mod testutil;

pub use batch::WriteBatch;
pub use cache::{BlockCache, BlockKey, CacheCounters, EvictionListener};
pub use db::{
    Db, DbStats, ElasticStats, FileAccessStats, LevelInfo, MerlinAccuracy, Range, Snapshot, Tree, TreeLevels,
    TunerRecord,
};
pub use error::{Error, Result};
pub use memory::{MemoryLimits, MemoryUsage};
pub use options::{BpkPolicy, FlushPolicy, LevelTargets, MemoryComponent, MergePolicyKind, Options, WriteOptions};
pub use sst::Compression;
pub use stats::{BlockKind, IoSnapshot, KindSnapshot, LevelStats, TreeStatsSnapshot};
pub use wal::RecoveryMode;
