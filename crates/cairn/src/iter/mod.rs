//! The iterator contract shared by block, table, memtable and merging iterators.

use crate::error::Result;

pub mod bounds;
pub mod merging;
pub mod two_level;

pub use bounds::KeyBounds;
pub use merging::{BoxedIter, MergingIter};
pub use two_level::{TwoLevelIndex, TwoLevelIter};

/// A positioned cursor over `(internal key, value)` entries in internal-key order.
///
/// Contract: after any positioning call the iterator is either valid (on an entry) or invalid
/// (past either end, or stopped by an error that [`status`](Self::status) reports). `key` and
/// `value` return empty slices when invalid; they never panic.
pub trait InternalIterator {
    /// True when positioned on an entry.
    fn valid(&self) -> bool;
    /// Positions on the first entry.
    fn seek_to_first(&mut self);
    /// Positions on the last entry.
    fn seek_to_last(&mut self);
    /// Positions on the first entry with key ≥ `target`.
    fn seek(&mut self, target: &[u8]);
    /// Positions on the last entry with key ≤ `target`.
    fn seek_for_prev(&mut self, target: &[u8]);
    /// Moves to the next entry (requires `valid()`).
    fn next(&mut self);
    /// Moves to the previous entry (requires `valid()`).
    fn prev(&mut self);
    /// Current key.
    fn key(&self) -> &[u8];
    /// Current value.
    fn value(&self) -> &[u8];
    /// The error that invalidated the iterator, if any.
    fn status(&self) -> Result<()>;
}

#[cfg(test)]
pub(crate) mod conformance;
