//! Compaction: pure merge policies that pick work from an [`LsmView`], the merge semantics of
//! a compaction (`iter`), and the job that executes a plan (`job`).

pub mod cuts;
pub mod ingest;
pub mod iter;
pub mod job;
pub mod policies;
pub mod policy;
pub mod rewrite;

pub use policy::{pending_bytes, pick_range, Choice, Decision, FileView, LevelView, LsmView, MergePolicy};
