//! Counters the engine keeps (DESIGN §7). Per-file access statistics (Merlin) come later.

pub mod io;

pub use io::{BlockKind, IoSnapshot, IoStats, KindSnapshot};
