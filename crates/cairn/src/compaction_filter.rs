//! Compaction filters: user code that compactions ask about each value they carry, to keep it,
//! remove it or change it — garbage collection of data the application no longer needs
//! (expired sessions, superseded index entries) without a read and a delete for each key.
//!
//! Which values a filter sees: in each compaction, the newest version of each key, when it is a
//! value that no live snapshot sees (newer than the newest snapshot; every value when none is
//! held), as RocksDB does: a snapshot never sees a filter's effect. Merge operands, the values
//! under them and tombstones are not passed. Flushes do not call the filter. A filter's decision shows
//! from the compaction on: reads before it still return the old value (for data that must be
//! gone at a known time, write it with a time to live, which reads honour at once).
//!
//! [`FilterDecision::Remove`] writes a tombstone in the value's place, so an older version in a
//! deeper level does not come back.
//!
//! A filter is not stored with the database: give it at every open (`Options.compaction_filter`).

/// What a compaction does with one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterDecision {
    /// Write it out as it is.
    Keep,
    /// Delete it (and with it every older version of the key).
    Remove,
    /// Write this value instead (an expiring value keeps its deadline).
    ChangeValue(Vec<u8>),
}

/// Where the value stands.
#[derive(Debug, Clone, Copy)]
pub struct FilterContext<'a> {
    /// The tree's name.
    pub tree: &'a str,
    /// The level the compaction writes to.
    pub level: usize,
}

/// Decides, during compactions, what happens to each value (see the module documentation for
/// which values it is asked about). Called from background threads, concurrently for
/// different compactions; it must not call back into the database.
pub trait CompactionFilter: Send + Sync + std::fmt::Debug {
    /// A name for logs and statistics.
    fn name(&self) -> &str;

    /// The decision for `key` holding `value` (without any deadline).
    fn filter(&self, ctx: &FilterContext<'_>, key: &[u8], value: &[u8]) -> FilterDecision;
}
