//! The range filter on the read path (docs/design.md §2, range filter): before a bounded range
//! read opens a table's index, the table's range filter is asked whether any key lies within
//! the bounds. "Empty" skips the table; a Rosetta filter's "maybe" narrows it at the end the
//! read moves toward, so the data block past its last possible key is not read (a
//! [`BlockWindow`]); a Grafite filter's "maybe" reads the table as it is. Each file counts the
//! range reads that asked it and those it held no key for (its filter said so, or the read
//! returned nothing): what its share of the range-filter budget is sized by when it is
//! rewritten.
//!
//! A filter is consulted only when both bounds are given and share the filter's key offset
//! (the projection is monotone only among keys sharing those bytes); a Rosetta filter only
//! when the range is short enough for its probe budget to settle it: at most `budget × 2^top`
//! projection values where `top` is the filter's highest stored height (the **cost rule**; past
//! it every probe would end in "maybe" and only cost time).

use super::inner::SuperVersion;
use crate::error::Result;
use crate::filter::range::RangeFilter;
use crate::filter::rosetta::{
    is_smallest_of_projection, project, smallest_key_of, ProbeCounts, ProbeLimits, RosettaFilter,
};
use crate::format::ikey;
use crate::iter::{KeyBounds, TableAccess, TableSkip};
use crate::sst::{BlockWindow, TableReader};
use crate::stats::stripe::Stripe;
use crate::stats::{FileState, TreeCounters};
use crate::version::FileMeta;
use parking_lot::Mutex;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// The projection interval `[a, b]` of a range read and the key prefix it shares, or `None`
/// when a range filter with key offset `offset` cannot answer for these bounds. `Some(None)`:
/// the bounds hold no key at all.
fn projected(bounds: &KeyBounds, offset: usize) -> Option<Option<(&[u8], u64, u64)>> {
    let (Bound::Included(lo) | Bound::Excluded(lo)) = &bounds.lo else {
        return None;
    };
    let (hi, hi_excluded) = match &bounds.hi {
        Bound::Included(h) => (h, false),
        Bound::Excluded(h) => (h, true),
        Bound::Unbounded => return None,
    };
    if lo.len() < offset || hi.len() < offset || lo[..offset] != hi[..offset] {
        return None;
    }
    let prefix = &lo[..offset];
    let a = project(lo, offset);
    let mut b = project(hi, offset);
    // An excluded upper bound that is the smallest key of its projection: every key below it
    // (sharing the prefix) projects lower.
    if hi_excluded && is_smallest_of_projection(&hi[offset..]) {
        match b.checked_sub(1) {
            Some(x) => b = x,
            None => return Some(None),
        }
    }
    Some((a <= b).then_some((prefix, a, b)))
}

/// Records the size of a bounded range read in `counters` (what new tables' range filters are
/// laid out for).
pub(super) fn record_size(counters: &TreeCounters, bounds: &KeyBounds, offset: usize) {
    if let Some(Some((_, a, b))) = projected(bounds, offset) {
        counters.record_range_size(Stripe::current(), a, b);
    }
}

/// What one range read's filters said, for what it learns once it ends: the filters that
/// answered "maybe", per level, and the files not ruled out. If the read returns nothing, each
/// "maybe" was a false positive and each of those files held no key in the range.
#[derive(Debug)]
pub(super) struct MaybeLog {
    per_level: Box<[AtomicU64]>,
    files: Mutex<Vec<Arc<FileState>>>,
    /// One read in [`SAMPLE_EVERY`] also counts its filter probes per height.
    sampled: bool,
}

/// Range reads per sampled one (per thread).
const SAMPLE_EVERY: u32 = 64;

thread_local! {
    static READS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

impl MaybeLog {
    pub(super) fn new(levels: usize) -> Arc<Self> {
        let sampled = READS.with(|r| {
            let n = r.get().wrapping_add(1);
            r.set(n);
            n % SAMPLE_EVERY == 0
        });
        Arc::new(MaybeLog {
            per_level: (0..levels).map(|_| AtomicU64::new(0)).collect(),
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
            f.record_range_empty(s);
        }
    }
}

/// Whether `filter` can settle `[a, b]` within the probe budget (the cost rule).
fn within_cost(filter: &RosettaFilter, a: u64, b: u64, limits: ProbeLimits) -> bool {
    let Some(top) = filter.top_height() else {
        return false;
    };
    u128::from(b - a) < u128::from(limits.budget) << top
}

/// What a range read moving `forward` (or backward) does with `table` (runtime state `file`)
/// in `level`.
#[expect(
    clippy::too_many_arguments,
    reason = "one private helper of the hook; a struct would only rename them"
)]
fn access(
    forward: bool,
    table: &TableReader,
    file: Option<&Arc<FileState>>,
    bounds: &KeyBounds,
    level: usize,
    limits: ProbeLimits,
    counters: &TreeCounters,
    log: &MaybeLog,
) -> Result<TableAccess> {
    let s = Stripe::current();
    // Not ruled out: whether the file held a key is known once the read ends.
    let unknown = |access: TableAccess| {
        if let Some(f) = file {
            f.record_range_probe(s, false);
            log.files.lock().push(f.clone());
        }
        Ok(access)
    };
    let Some(filter) = table.range_filter()? else {
        return unknown(TableAccess::Read);
    };
    let (prefix, a, b) = match projected(bounds, filter.key_offset()) {
        None => return unknown(TableAccess::Read),
        Some(None) => return Ok(TableAccess::Skip),
        Some(Some(p)) => p,
    };
    let filter = match filter {
        RangeFilter::Rosetta(f) => f,
        // One successor search whatever the range's length: no cost rule, no window.
        RangeFilter::Grafite(g) => {
            let empty = !g.may_contain_range(a, b);
            counters.record_range_probe(s, level, empty);
            if empty {
                if let Some(f) = file {
                    f.record_range_probe(s, true);
                }
                return Ok(TableAccess::Skip);
            }
            if let Some(n) = log.per_level.get(level) {
                n.fetch_add(1, Relaxed);
            }
            return unknown(TableAccess::Read);
        }
    };
    if !within_cost(filter, a, b, limits) {
        return unknown(TableAccess::Read);
    }
    // One search, from the end the read moves away from: it says whether the table is empty,
    // and where its keys in the range end (forward) or start (backward) — the bound that
    // saves a data block. (The other bound never does: a seek already lands past it.)
    let mut sample = log.sampled.then(ProbeCounts::default);
    let edge = if forward {
        filter.last_maybe(a, b, limits, sample.as_mut())
    } else {
        filter.first_maybe(a, b, limits, sample.as_mut())
    };
    if let Some(c) = &sample {
        counters.record_height_probes(c);
    }
    counters.record_range_probe(s, level, edge.is_none());
    let Some(t) = edge else {
        if let Some(f) = file {
            f.record_range_probe(s, true);
        }
        return Ok(TableAccess::Skip);
    };
    if let Some(n) = log.per_level.get(level) {
        n.fetch_add(1, Relaxed);
    }
    unknown(TableAccess::Window(if forward {
        BlockWindow {
            lo: None,
            hi_excl: t.checked_add(1).map(|x| smallest_key_of(prefix, x)),
        }
    } else {
        BlockWindow {
            lo: Some(smallest_key_of(prefix, t)),
            hi_excl: None,
        }
    }))
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
        access(forward, table, file, bounds, level, limits, &sv.counters, &log)
    })
}

/// The side-table entry of `meta` in `level` (the super-version's files are parallel to its
/// version's levels; a sorted level is ordered by key, L0 is short).
fn file_state<'a>(sv: &'a SuperVersion, tree: usize, level: usize, meta: &FileMeta) -> Option<&'a Arc<FileState>> {
    let metas = sv.version.trees.get(tree)?.levels.get(level)?;
    let states = sv.files.get(level)?;
    let i = if level == 0 {
        metas.iter().position(|m| m.number == meta.number)?
    } else {
        metas.partition_point(|m| ikey::compare(&m.smallest, &meta.smallest) == Ordering::Less)
    };
    states.get(i).filter(|s| s.number().0 == meta.number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> KeyBounds {
        let own = |b: Bound<&[u8]>| match b {
            Bound::Included(k) => Bound::Included(k.to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        KeyBounds {
            lo: own(lo),
            hi: own(hi),
        }
    }

    #[test]
    fn projection_of_bounds() {
        use Bound::{Excluded, Included, Unbounded};
        let p = |lo, hi, o| projected(&bounds(lo, hi), o).map(|x| x.map(|(p, a, b)| (p.to_vec(), a, b)));
        assert_eq!(p(Unbounded, Included(&b"b"[..]), 0), None, "both bounds are needed");
        assert_eq!(p(Included(&b"a"[..]), Unbounded, 0), None);
        let (a, b) = (project(b"a", 0), project(b"b", 0));
        assert_eq!(
            p(Included(&b"a"[..]), Included(&b"b"[..]), 0),
            Some(Some((vec![], a, b)))
        );
        // "b" is the smallest key projecting to b: an excluded "b" ends the range at b − 1.
        assert_eq!(
            p(Included(&b"a"[..]), Excluded(&b"b"[..]), 0),
            Some(Some((vec![], a, b - 1)))
        );
        // "b\0" projects to b too, but "b" < "b\0": b stays in the range.
        assert_eq!(
            p(Included(&b"a"[..]), Excluded(&b"b\0"[..]), 0),
            Some(Some((vec![], a, b)))
        );
        // 16-byte keys: the projection is their first 8 bytes, and no tightening of hi.
        let k = |x: u64| [x.to_be_bytes(), [0; 8]].concat();
        let (k5, k9) = (k(5), k(9));
        assert_eq!(p(Included(&k5[..]), Excluded(&k9[..]), 0), Some(Some((vec![], 5, 9))));
        // Offsets: the bounds must share the skipped bytes.
        assert_eq!(p(Included(&b"u1xx"[..]), Included(&b"u2yy"[..]), 2), None);
        assert_eq!(
            p(Included(&b"u1xx"[..]), Included(&b"u1yy"[..]), 2),
            Some(Some((b"u1".to_vec(), project(b"xx", 0), project(b"yy", 0))))
        );
        assert_eq!(
            p(Included(&b"u"[..]), Included(&b"u1yy"[..]), 2),
            None,
            "a bound shorter than the offset"
        );
        assert_eq!(
            p(Included(&b""[..]), Excluded(&b""[..]), 0),
            Some(None),
            "nothing below the empty key"
        );
    }
}
