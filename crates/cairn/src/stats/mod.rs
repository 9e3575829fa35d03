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

/// CPU time the calling thread has used, in nanoseconds (0 where the clock is unavailable).
pub(crate) fn thread_cpu_nanos() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
