//! What the engine counts (docs/design.md §5): I/O per block kind, per tree and level, and per live
//! file (the side table of per-file runtime state that pure deciders read as a
//! [`StatsSnapshot`]).

pub mod counters;
pub mod files;
pub mod io;
pub mod merlin;
pub mod stripe;

pub use counters::{EngineCounters, LevelStats, TreeCounters, TreeStatsSnapshot};
pub use files::{FileNumber, FileRegistry, FileState, FileStatsSnapshot, Seed, StatsSnapshot};
pub use merlin::Estimate;
pub use io::{BlockKind, IoSnapshot, IoStats, KindSnapshot};
