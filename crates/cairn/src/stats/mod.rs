//! Statistics: the report types a user reads ([`DbStats`] from `Db::stats`, [`TreeLevels`]
//! from `Db::levels`, [`MemoryUsage`] from `Db::memory`, [`TunerRecord`] from
//! `Db::tuner_history`), and, crate-private, what the engine counts (docs/design.md, statistics):
//! I/O per block kind, per tree and level, and per live file (the side table of per-file
//! runtime state that pure deciders read as a `StatsSnapshot`).

internal_modules!(counters, files, io, merlin, stripe);
pub(crate) mod report;
mod types;

pub use crate::memory::MemoryUsage;
pub use counters::{FlushCount, Flushes, LevelStats, Rewritten, ScanStats, TreeStatsSnapshot};
pub use io::{BlockKind, IoSnapshot, KindSnapshot, ReadaheadSnapshot};
pub use types::{
    DbStats, ElasticStats, FileAccessStats, KvCacheStats, LevelInfo, MerlinAccuracy, RangeBuildStats, TransactionStats,
    TreeLevels, TunerRecord, TunerRule,
};

/// The engine's own counters: `pub` for the crate's tests and benchmarks (`test-util`).
#[cfg(feature = "test-util")]
#[doc(hidden)]
pub use {
    counters::{EngineCounters, Probe, TreeCounters},
    files::{counted_segments, FileNumber, FileRegistry, FileStats, FileStatsSnapshot, Seed, StatsSnapshot},
    io::IoStats,
    merlin::Estimate,
};
#[cfg(not(feature = "test-util"))]
pub(crate) use {
    counters::{EngineCounters, Probe, TreeCounters},
    files::{counted_segments, FileNumber, FileRegistry, FileStats, FileStatsSnapshot, Seed, StatsSnapshot},
    io::IoStats,
    merlin::Estimate,
};

/// CPU time the calling thread has used, in nanoseconds (0 where the clock is unavailable).
pub(crate) fn thread_cpu_nanos() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
