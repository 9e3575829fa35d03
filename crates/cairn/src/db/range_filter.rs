//! The range filter on the read path (docs/design.md §2, range filter): before a bounded range
//! read opens a table's index, the table's range filter is asked whether any key lies within
//! the bounds. "Empty" skips the table; a Rosetta filter's "maybe" narrows it at the end the
//! read moves toward, so the data block past its last possible key is not read (a
//! [`BlockWindow`]); a Grafite filter's "maybe" reads the table as it is. Each file counts the
//! range reads that asked it and those it held no key for (its filter said so, or the read
//! returned nothing): what its share of the range-filter budget is sized by when it is
//! rewritten.
//!
//! A filter is consulted only when both bounds are given and its table's key projection maps
//! them to an interval (`filter/projection.rs`: always for a per-table projection, only for
//! bounds sharing the skipped bytes for a fixed one); a Rosetta filter only when the interval
//! is short enough for its probe budget to settle it: at most `budget × 2^top` projection
//! values where `top` is the filter's highest stored height (the **cost rule**; past it every
//! probe would end in "maybe" and only cost time). The first table that maps a read records
//! the interval's length in the tree's size histogram (what Rosetta layouts are chosen by).
//!
//! Before a read builds its iterators, [`settles_empty`] asks the filters of every table
//! overlapping the bounds: when all rule their table out and no memtable holds an entry
//! within the bounds, the read ends empty there — no cursor, level iterators or hooks are
//! built (they were most of an empty read's cost once the filters answered in a microsecond).
//! Otherwise nothing of what it asked is recorded and the iterators' hooks ask again.

use super::inner::{DbInner, SuperVersion};
use super::live_files::LiveFile;
use crate::error::Result;
use crate::filter::projection::Projection;
use crate::filter::range::{Kind, RangeFilter};
use crate::filter::rosetta::{ProbeCounts, ProbeLimits, RosettaFilter};
use crate::format::ikey;
use crate::iter::KeyBounds;
use crate::sst::{BlockWindow, TableReader};
use crate::sst::{TableAccess, TableSkip};
use crate::stats::stripe::Stripe;
use crate::stats::TreeCounters;
use crate::version::FileMeta;
use parking_lot::Mutex;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// What one range read's filters said, for what it learns once it ends: the filters that
/// answered "maybe", per level, and the files not ruled out. If the read returns nothing, each
/// "maybe" was a false positive and each of those files held no key in the range.
#[derive(Debug)]
pub(super) struct MaybeLog {
    per_level: Box<[AtomicU64]>,
    /// The read's size was recorded (in the projection of the first table that mapped it:
    /// what new tables' range filters are laid out for).
    sized: AtomicBool,
    files: Mutex<Vec<Arc<LiveFile>>>,
    /// One read in [`SAMPLE_EVERY`] also counts its filter probes per height.
    sampled: bool,
}

/// Range reads per sampled one (per thread).
const SAMPLE_EVERY: u32 = 64;

thread_local! {
    static READS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Whether this range read is one of the sampled ones (1 in [`SAMPLE_EVERY`] per thread).
pub(super) fn sample_this_read() -> bool {
    READS.with(|r| {
        let n = r.get().wrapping_add(1);
        r.set(n);
        n % SAMPLE_EVERY == 0
    })
}

impl MaybeLog {
    /// The log of a read over `levels` levels; `sized`: its size was recorded already.
    pub(super) fn new(levels: usize, sampled: bool, sized: bool) -> Arc<Self> {
        Arc::new(MaybeLog {
            per_level: (0..levels).map(|_| AtomicU64::new(0)).collect(),
            sized: AtomicBool::new(sized),
            files: Mutex::new(Vec::new()),
            sampled,
        })
    }

    /// The read returned nothing.
    pub(super) fn record_empty_result(&self, counters: &TreeCounters) {
        let s = Stripe::current();
        for (level, n) in self.per_level.iter().enumerate() {
            let n = n.swap(0, Relaxed);
            if n > 0 {
                counters.record_range_false_positives(s, level, n);
            }
        }
        for f in self.files.lock().drain(..) {
            f.stats().record_range_empty(s);
        }
    }
}

/// The options' limits on a Rosetta search.
pub(super) fn probe_limits(inner: &DbInner) -> ProbeLimits {
    ProbeLimits {
        max_depth: inner.opts.range_filter.max_depth,
        budget: inner.opts.range_filter.probe_budget,
    }
}

/// Whether `filter` can settle `[a, b]` within the probe budget (the cost rule).
fn within_cost(filter: &RosettaFilter, a: u64, b: u64, limits: ProbeLimits) -> bool {
    let Some(top) = filter.top_height() else {
        return false;
    };
    u128::from(b - a) < u128::from(limits.budget) << top
}

/// The read's bounds, narrowed to the table's key range when its projection records a common
/// prefix (a bound outside the prefix's keys would otherwise clamp to the projection's end and
/// lose how close it lies to the table's first or last key). A fixed projection keeps the
/// read's own bounds: it answers only bounds sharing its skipped bytes.
fn within_table<'a>(
    projection: &Projection,
    meta: &'a FileMeta,
    bounds: &'a KeyBounds,
) -> (Bound<&'a [u8]>, Bound<&'a [u8]>) {
    let (lo, hi) = (
        bounds.lo.as_ref().map(Vec::as_slice),
        bounds.hi.as_ref().map(Vec::as_slice),
    );
    if projection.prefix().is_none() {
        return (lo, hi);
    }
    let (first, last) = (meta.smallest_user_key(), meta.largest_user_key());
    let lo = match lo {
        Bound::Included(k) | Bound::Excluded(k) if k >= first => lo,
        _ => Bound::Included(first),
    };
    let hi = match hi {
        Bound::Included(k) | Bound::Excluded(k) if k <= last => hi,
        _ => Bound::Included(last),
    };
    (lo, hi)
}

/// What a table's range filter says about a read, before anything is recorded.
struct Verdict {
    access: TableAccess,
    /// The filter was asked (its answer is `access`: `Skip` or not).
    asked: bool,
    /// The projection interval the bounds mapped to.
    interval: Option<(u64, u64)>,
}

impl Verdict {
    /// Read the table whole: no filter, or bounds it does not answer.
    const UNKNOWN: Verdict = Verdict {
        access: TableAccess::Read,
        asked: false,
        interval: None,
    };
}

/// What a range read moving `forward` (or backward) does with `table`, as its filter says;
/// a sampled read counts the Rosetta probes per height into `sample`.
fn verdict(
    forward: bool,
    meta: &FileMeta,
    table: &TableReader,
    file: Option<&Arc<LiveFile>>,
    bounds: &KeyBounds,
    limits: ProbeLimits,
    sample: Option<&mut ProbeCounts>,
) -> Result<Verdict> {
    // A filter not pinned is read only if the file is admitted to range-filter memory
    // (`db/control/range_filter_memory.rs`) and the region has room; without it the table is read.
    let admit = file.is_none_or(|f| f.range_admitted());
    Ok(table
        .with_range_filter(admit, |filter| {
            verdict_of(forward, meta, filter, bounds, limits, sample)
        })?
        .unwrap_or(Verdict::UNKNOWN))
}

/// [`verdict`] of the table's filter `filter`.
#[inline(always)]
fn verdict_of(
    forward: bool,
    meta: &FileMeta,
    filter: &RangeFilter,
    bounds: &KeyBounds,
    limits: ProbeLimits,
    sample: Option<&mut ProbeCounts>,
) -> Verdict {
    let projection = filter.projection();
    let (lo, hi) = within_table(projection, meta, bounds);
    let (prefix, a, b) = match projection.interval_of(lo, hi) {
        None => return Verdict::UNKNOWN,
        // No projection value lies within the bounds: no key can.
        Some(None) => {
            return Verdict {
                access: TableAccess::Skip,
                asked: false,
                interval: None,
            }
        }
        Some(Some(p)) => p,
    };
    let asked = |access| Verdict {
        access,
        asked: true,
        interval: Some((a, b)),
    };
    let filter = match filter.kind() {
        Kind::Rosetta(f) => f,
        // One successor search whatever the range's length: no cost rule, no window.
        Kind::Grafite(g) if g.may_contain_range(a, b) => return asked(TableAccess::Read),
        Kind::Grafite(_) => return asked(TableAccess::Skip),
    };
    if !within_cost(filter, a, b, limits) {
        return Verdict {
            interval: Some((a, b)),
            ..Verdict::UNKNOWN
        };
    }
    // One search, from the end the read moves away from: it says whether the table is empty,
    // and where its keys in the range end (forward) or start (backward) — the bound that
    // saves a data block. (The other bound never does: a seek already lands past it.)
    let edge = if forward {
        filter.last_maybe(a, b, limits, sample)
    } else {
        filter.first_maybe(a, b, limits, sample)
    };
    let Some(t) = edge else {
        return asked(TableAccess::Skip);
    };
    asked(TableAccess::Window(if forward {
        BlockWindow {
            lo: None,
            hi_excl: (t < projection.max_value()).then(|| projection.smallest_key_of(prefix, t + 1)),
        }
    } else {
        BlockWindow {
            lo: Some(projection.smallest_key_of(prefix, t)),
            hi_excl: None,
        }
    }))
}

/// Records a filter's answer that ruled a table out: in the level's counters and the file's.
fn record_ruled_out(level: usize, file: Option<&Arc<LiveFile>>, counters: &TreeCounters, s: Stripe) {
    counters.record_range_probe(s, level, true);
    if let Some(f) = file {
        f.stats().record_range_probe(s, true);
    }
}

/// What a range read moving `forward` (or backward) does with `table` (runtime state `file`)
/// in `level`, with what the read learns recorded.
#[expect(
    clippy::too_many_arguments,
    reason = "one private helper of the hook; a struct would only rename them"
)]
fn access(
    forward: bool,
    meta: &FileMeta,
    table: &TableReader,
    file: Option<&Arc<LiveFile>>,
    bounds: &KeyBounds,
    level: usize,
    limits: ProbeLimits,
    counters: &TreeCounters,
    log: &MaybeLog,
) -> Result<TableAccess> {
    let s = Stripe::current();
    let mut sample = log.sampled.then(ProbeCounts::default);
    let v = verdict(forward, meta, table, file, bounds, limits, sample.as_mut())?;
    if let Some(c) = &sample {
        counters.record_height_probes(c);
    }
    if let Some((a, b)) = v.interval {
        if !log.sized.load(Relaxed) && !log.sized.swap(true, Relaxed) {
            counters.record_range_size(s, a, b);
        }
    }
    match (&v.access, v.asked) {
        (TableAccess::Skip, true) => record_ruled_out(level, file, counters, s),
        (TableAccess::Skip, false) => {}
        (_, asked) => {
            if asked {
                counters.record_range_probe(s, level, false);
                if let Some(n) = log.per_level.get(level) {
                    n.fetch_add(1, Relaxed);
                }
            }
            // Not ruled out: whether the file held a key is known once the read ends.
            if let Some(f) = file {
                f.stats().record_range_probe(s, false);
                log.files.lock().push(f.clone());
            }
        }
    }
    Ok(v.access)
}

/// Tables a read may have ruled out before building its iterators (more go the usual way).
const RULED_OUT_MAX: usize = 16;

/// Whether a bounded read of `tree` in `sv` is settled empty before any iterator is built:
/// no memtable holds an entry within the bounds and every table overlapping them is ruled out
/// by its range filter (range tombstones need not be read: they delete, never add). Records
/// what the filters said only when it is; otherwise the read's iterators ask them (and record)
/// as usual. `sized` says whether the read's size was recorded here.
pub(super) fn settles_empty(
    inner: &DbInner,
    tree: usize,
    sv: &SuperVersion,
    bounds: &KeyBounds,
    forward: bool,
    sampled: bool,
    sized: &mut bool,
) -> Result<bool> {
    if sv.mems.iter().any(|m| m.holds_within(bounds)) {
        return Ok(false);
    }
    let Some(tv) = sv.version.trees.get(tree) else {
        return Ok(true);
    };
    let limits = probe_limits(inner);
    let s = Stripe::current();
    let mut sample = sampled.then(ProbeCounts::default);
    let mut ruled: [(usize, Option<&Arc<LiveFile>>); RULED_OUT_MAX] = [(0, None); RULED_OUT_MAX];
    let mut count = 0;
    for level in 0..tv.levels.len() {
        let files = tv.level(level);
        // L0 files overlap: each is checked; a sorted level's overlapping files are adjacent.
        let from = if level == 0 {
            0
        } else {
            files.partition_point(|f| !bounds.above_lo(f.largest_user_key()))
        };
        for (i, f) in files.iter().enumerate().skip(from) {
            if !bounds.overlaps(f.smallest_user_key(), f.largest_user_key()) {
                if level == 0 {
                    continue;
                }
                break;
            }
            if count == RULED_OUT_MAX {
                return Ok(false);
            }
            let state = sv
                .files
                .get(level)
                .and_then(|l| l.get(i))
                .filter(|st| st.stats().number().0 == f.number);
            let v = inner.with_table(f, state, |table| {
                verdict(forward, f, table, state, bounds, limits, sample.as_mut())
            })?;
            if let (false, Some((a, b))) = (*sized, v.interval) {
                *sized = true;
                sv.counters.record_range_size(s, a, b);
            }
            if v.access != TableAccess::Skip {
                return Ok(false);
            }
            if v.asked {
                ruled[count] = (level, state);
                count += 1;
            }
        }
    }
    for &(level, file) in &ruled[..count] {
        record_ruled_out(level, file, &sv.counters, s);
    }
    if let Some(c) = &sample {
        sv.counters.record_height_probes(c);
    }
    Ok(true)
}

/// The hook the level iterator for `level` of tree `tree` in `sv` asks before each table, for
/// a range read moving `forward` (or backward).
pub(super) fn table_skip(
    sv: Arc<SuperVersion>,
    tree: usize,
    level: usize,
    forward: bool,
    limits: ProbeLimits,
    log: Arc<MaybeLog>,
) -> TableSkip {
    Arc::new(move |meta, table, bounds| {
        let file = file_state(&sv, tree, level, meta);
        access(forward, meta, table, file, bounds, level, limits, &sv.counters, &log)
    })
}

/// The side-table entry of `meta` in `level` (the super-version's files are parallel to its
/// version's levels; a sorted level is ordered by key, L0 is short).
fn file_state<'a>(sv: &'a SuperVersion, tree: usize, level: usize, meta: &FileMeta) -> Option<&'a Arc<LiveFile>> {
    let metas = sv.version.trees.get(tree)?.levels.get(level)?;
    let states = sv.files.get(level)?;
    let i = if level == 0 {
        metas.iter().position(|m| m.number == meta.number)?
    } else {
        metas.partition_point(|m| ikey::compare(&m.smallest, &meta.smallest) == Ordering::Less)
    };
    states.get(i).filter(|s| s.stats().number().0 == meta.number)
}
