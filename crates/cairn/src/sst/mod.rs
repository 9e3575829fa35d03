//! Sorted string tables (spec: `docs/format/sst.md`).
//!
//! ```text
//! [data block 0] … [data block n-1]       grouped into segments (default 4 MiB of data)
//! [filter unit 0 of segment 0] … [unit U-1 of segment S-1]
//! [range filter]                          optional (Rosetta, `filter/rosetta.rs`)
//! [range deletions]                       optional (fragmented tombstones, `range_del/block.rs`)
//! [index block]                           one fence pointer per data block: last key → handle
//! [properties block]
//! [metaindex block]                       name → handle ("cairn.properties", "cairn.range_filter",
//!                                         "cairn.range_del")
//! [footer]                                48 bytes, ends with the magic "cairnSST"
//! ```
//! Every block is followed by a 5-byte trailer (compression type, masked CRC32C).

mod block;
mod builder;
mod fences;
mod footer;
mod iter;
mod level;
mod properties;
mod reader;
mod prefetch;
mod trailer;

pub use block::{Block, HashHint};
pub use builder::{TableBuilder, TableSummary};
pub use iter::{BlockWindow, IterOptions, SeekRuns, TableIter};
pub use level::{LevelIter, TableAccess, TableOpener, TableSkip};
pub use properties::SegmentMeta;
pub use reader::{ReaderOptions, TableReader, UnitSelection};
pub(crate) use reader::timing_storage;
pub use trailer::Compression;
/// The bytes stored after each block's contents (compression type and checksum).
pub(crate) const BLOCK_TRAILER_LEN: usize = trailer::TRAILER_LEN;

/// What the block cache holds: decoded blocks and filter units.
#[derive(Debug, Clone)]
pub enum CachedBlock {
    /// A decoded data (or index) block.
    Block(std::sync::Arc<Block>),
    /// A decoded filter unit.
    Filter(std::sync::Arc<crate::filter::BloomFilter>),
}

/// A block cache: decoded data, index and filter blocks, by table and offset, charged in bytes.
/// One cache may be shared by several databases (`CacheSource::Shared`).
pub type BlockCache = crate::cache::ClockCache<CachedBlock>;
/// What tests, fuzz targets and benchmarks use besides.
#[cfg(feature = "test-util")]
pub use {
    block::{BlockBuilder, BlockIter},
    footer::{BlockHandle, Footer, FOOTER_LEN, FORMAT_VERSION, MAGIC},
    iter::TableIndex,
    level::LevelFiles,
    properties::Properties,
    reader::{Found, GetOutcome},
    trailer::TRAILER_LEN,
};

/// Metaindex name of the properties block.
pub const METAINDEX_PROPERTIES: &[u8] = b"cairn.properties";
/// Metaindex name of the range-deletion block (absent when the table has no range tombstone).
pub const METAINDEX_RANGE_DEL: &[u8] = b"cairn.range_del";
/// Metaindex name of the reserved range-filter slot; its value is `version:u8 ‖ handle`.
pub const METAINDEX_RANGE_FILTER: &[u8] = b"cairn.range_filter";

/// How tables are written.
#[derive(Debug, Clone)]
pub struct TableOptions {
    /// Target uncompressed data-block size in bytes (default 4096).
    pub block_size: usize,
    /// Entries between restart points in data blocks (default 16).
    pub restart_interval: usize,
    /// Entries between restart points in the index block (default 8).
    pub index_restart_interval: usize,
    /// Write a hash index in each data block (default true; `sst/block.rs`).
    pub hash_index: bool,
    /// Data-block compression (default none).
    pub compression: Compression,
    /// Data bytes per segment before a new one starts (default 4 MiB).
    pub segment_size: u64,
    /// Filter units per segment (default one 10-bit unit).
    pub filter: crate::filter::FilterDecision,
    /// Build cache-local filter units (version 2) instead of standard ones.
    pub cache_local_filters: bool,
    /// When set, decides the filter instead of `filter`, once the table's keys are known.
    pub filter_decider: Option<std::sync::Arc<dyn crate::filter::DecideFilters>>,
    /// The range filter to build (none by default).
    pub range_filter: Option<RangeFilterOptions>,
    /// The database the table belongs to, recorded in its properties (0: none).
    pub db_id: u64,
}

/// How a table's range filter is built.
#[derive(Debug, Clone)]
pub struct RangeFilterOptions {
    /// Bits per distinct user key (the table's whole range-filter budget), unless `decider`
    /// decides.
    pub bits_per_key: f64,
    /// Rosetta or Grafite.
    pub kind: crate::filter::range::RangeFilterKind,
    /// Decides the bits per key once the table's keys are known.
    pub decider: Option<std::sync::Arc<dyn crate::filter::DecideFilters>>,
    /// User-key bytes skipped before the 8-byte projection.
    pub key_offset: usize,
    /// The sampled range-query sizes its layout is decided from (`None`: the default layout).
    pub sizes: Option<std::sync::Arc<[u64; crate::filter::rosetta::SIZE_BUCKETS]>>,
    /// Where sampled range reads' bounds first differ (`filter::projection::range_end`), which
    /// a per-table projection's window is ended by (`None`: the keys decide).
    pub ends: Option<std::sync::Arc<[u64]>>,
    /// Bloom probes a query may spend on the filter (decides whether one level can serve the
    /// sampled sizes).
    pub probe_budget: u32,
}

#[cfg(test)]
mod tests;
