#![doc = include_str!("../../../README.md")]
pub mod batch;
pub mod cache;
pub mod compaction;
mod db;
pub mod env;
pub mod error;
pub(crate) mod filename;
pub mod filter;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
pub mod iter;
pub mod memory;
pub mod memtable;
pub mod options;
pub mod sst;
pub mod stats;
pub mod tuning;
pub mod version;
pub mod wal;

#[cfg(test)]
mod testutil;

pub use batch::WriteBatch;
pub use db::{Db, DbStats, FileAccessStats, LevelInfo, Range, Snapshot, Tree, TreeLevels};
pub use error::{Error, Result};
pub use memory::{MemoryLimits, MemoryUsage};
pub use options::{MergePolicyKind, Options, WriteOptions};
pub use sst::Compression;
pub use stats::{LevelStats, TreeStatsSnapshot};
pub use wal::RecoveryMode;
