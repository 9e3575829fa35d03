//! Range-filter memory at run time (docs/design.md §5): when range filters are charged to the
//! block cache, they may hold `range_filter.memory_share` of its capacity. A bounded read pins a
//! table's filter (`TableReader::with_range_filter`) only while the region has room and the
//! file is admitted; a round every `range_filter.round_ms` while range reads arrive — and at
//! once when the cache is resized — keeps the region for the filters with the most recent empty range reads
//! per byte (`tuning/range_memory.rs`), unloads the others and clears their admission. A
//! table whose filter is out is read as if it had none; its empty reads are still counted in
//! its side-table entry, so a round can bring it back. Rounds also build filters for tables
//! whose filter falls short of their share (`db/range_filter_round.rs`); their reads and
//! results are counted here.

use crate::options::RangeFilterOptions;
use crate::options::{Options, Regions};
use crate::stats::{IoStats, RangeBuildStats};
use crate::tuning::range_memory::{Growth, Kind};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Weight of the previous rounds' empty reads in a file's score (halved each round).
pub(crate) const DECAY: f64 = 0.5;

/// What range filters may hold with a block cache of `cache_capacity` bytes: a share of it
/// when they are reserved in it, else no bound.
pub(crate) fn capacity(opts: &Options, regions: &Regions, cache_capacity: usize) -> usize {
    if opts.range_filter.bits_per_key > 0.0 && regions.index_in_block_cache {
        (cache_capacity as f64 * opts.range_filter.memory_share) as usize
    } else {
        usize::MAX
    }
}

/// The round's state: per live file with an open reader, its empty range reads at the last
/// round and its score (behind a mutex only rounds take, held for a whole round so that a
/// resize's round and the timer's do not interleave their admissions).
#[derive(Debug, Default)]
pub(crate) struct RangeMemory {
    pub(crate) files: Mutex<HashMap<u64, (f64, f64)>>,
    /// What builds read (outside the block cache).
    pub(crate) io: Arc<IoStats>,
    built: AtomicU64,
    built_bytes: AtomicU64,
    failed: AtomicU64,
    /// The filters' average bits per key (`f64` bits; 0: not grown, `range_filter.bits_per_key`).
    average: AtomicU64,
    /// [`Kind::margin`] (`f64` bits; 0: none learned, 1).
    margin: AtomicU64,
    /// Builds whose filter did not fit the room their round planned for it.
    misfits: AtomicU64,
    /// What grows it (`tuning::range_memory::grow`) and the counters at the round that last
    /// looked: operations, range-filter false positives, negatives.
    pub(crate) growth: Mutex<Option<(Growth, [u64; 3])>>,
}

impl RangeMemory {
    /// A filter of `bytes` was built and pinned.
    pub(crate) fn record_build(&self, bytes: u64) {
        self.built.fetch_add(1, Relaxed);
        self.built_bytes.fetch_add(bytes, Relaxed);
    }

    /// A build failed (its table could not be read).
    pub(crate) fn record_failure(&self) {
        self.failed.fetch_add(1, Relaxed);
    }

    /// A built filter of `bytes` did not fit where the round reserved `planned`: later rounds
    /// reserve that much more for every build.
    pub(crate) fn record_misfit(&self, bytes: u64, planned: u64) {
        self.misfits.fetch_add(1, Relaxed);
        let margin = self.kind_margin() * bytes as f64 / planned.max(1) as f64;
        if margin > self.kind_margin() {
            self.margin.store(margin.to_bits(), Relaxed);
        }
    }

    fn kind_margin(&self) -> f64 {
        f64::from_bits(self.margin.load(Relaxed)).max(1.0)
    }

    /// The rounds' view of the configured kind (with the margin builds taught them).
    pub(crate) fn kind(&self, rf: &RangeFilterOptions) -> Kind {
        Kind {
            decay: rf.kind.decay(),
            min_bpk: rf.kind.min_bits_per_key(),
            extra_bpk: rf.kind.memory_extra_bits_per_key(),
            fixed_bytes: rf.kind.memory_fixed_bytes(),
            margin: self.kind_margin(),
        }
    }

    /// The range filters' average bits per key: `configured` until a round grew it.
    pub(crate) fn average(&self, configured: f64) -> f64 {
        match f64::from_bits(self.average.load(Relaxed)) {
            a if a > 0.0 => a,
            _ => configured,
        }
    }

    pub(crate) fn set_average(&self, bpk: f64) {
        self.average.store(bpk.to_bits(), Relaxed);
    }

    /// The builds so far, and the average bits per key of `configured` grown.
    pub(crate) fn builds(&self, configured: f64) -> RangeBuildStats {
        RangeBuildStats {
            bits_per_key: self.average(configured),
            built: self.built.load(Relaxed),
            filter_bytes: self.built_bytes.load(Relaxed),
            failed: self.failed.load(Relaxed),
            misfits: self.misfits.load(Relaxed),
            read_bytes: self.io.snapshot().data.bytes,
        }
    }
}
