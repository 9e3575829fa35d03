//! Range tombstones: `[start, end) @ seq` deletes every version with a smaller sequence number
//! of every user key `start ≤ k < end`.
//!
//! Tombstones are kept **fragmented** ([`Fragments`]): cut at every start and end so that any
//! two fragments are disjoint, each fragment carrying the sequence numbers of the tombstones
//! over it (newest first). A point query is then one binary search, whatever the number of
//! tombstones: [`Fragments::covering`] gives the newest tombstone a reader at `read_seq` sees
//! over a key. Memtables publish theirs as an immutable fragment list (rebuilt per
//! `delete_range`, which readers load with one atomic load); tables store theirs in one block
//! (`block.rs`) and keep it decoded while open.
//!
//! A table's key range includes its tombstones: `[start, end)` widens it to `start` and to the
//! largest key it covers, which is `end` without its last byte when that byte is 0 (the key just
//! before `k ‖ 0x00` is `k`), else `end` itself (one key too many: a lookup of `end` probes a
//! table that does not hold it, which is harmless). Compaction outputs are cut between point
//! keys `a < b` at `a ‖ 0x00`, so each output's tombstones end exactly where its range ends
//! and the outputs stay disjoint.

pub mod block;

use crate::format::ikey::{self, InternalKey, ValueKind, MAX_SEQNO};
use std::sync::Arc;


/// One range tombstone.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RangeTombstone {
    /// First user key deleted.
    pub start: Vec<u8>,
    /// First user key after the range (exclusive).
    pub end: Vec<u8>,
    /// Its sequence number: versions below it are deleted.
    pub seq: u64,
}

/// One fragment: disjoint from every other of its list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fragment {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    /// Sequence numbers of the tombstones over it, strictly descending, never empty.
    pub seqs: Vec<u64>,
}

/// Fragmented tombstones, sorted by start, pairwise disjoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fragments {
    frags: Vec<Fragment>,
}

impl Fragments {
    /// The same ranges, each at sequence number `seq` (an ingested table's).
    pub fn with_seqno(&self, seq: u64) -> Fragments {
        Fragments::new(self.tombstones().map(|t| RangeTombstone { seq, ..t }))
    }

    /// Fragments `tombstones` (any order, overlapping or not; empty ranges are ignored).
    pub fn new(tombstones: impl IntoIterator<Item = RangeTombstone>) -> Self {
        let mut ts: Vec<RangeTombstone> = tombstones.into_iter().filter(|t| t.start < t.end).collect();
        if ts.is_empty() {
            return Fragments::default();
        }
        ts.sort_by(|a, b| a.start.cmp(&b.start));
        // Every boundary, in order; each gap between two boundaries is a candidate fragment.
        let mut bounds: Vec<&[u8]> = ts.iter().flat_map(|t| [t.start.as_slice(), t.end.as_slice()]).collect();
        bounds.sort_unstable();
        bounds.dedup();
        let mut frags: Vec<Fragment> = Vec::new();
        // Tombstones started so far (by start order) and not yet ended, as (end, seq).
        let mut active: Vec<(&[u8], u64)> = Vec::new();
        let mut next = 0;
        for w in bounds.windows(2) {
            let (lo, hi) = (w[0], w[1]);
            active.retain(|&(end, _)| end > lo);
            while next < ts.len() && ts[next].start.as_slice() <= lo {
                if ts[next].end.as_slice() > lo {
                    active.push((&ts[next].end, ts[next].seq));
                }
                next += 1;
            }
            if active.is_empty() {
                continue;
            }
            let mut seqs: Vec<u64> = active.iter().map(|&(_, s)| s).collect();
            seqs.sort_unstable_by(|a, b| b.cmp(a));
            seqs.dedup();
            push_coalesced(
                &mut frags,
                Fragment {
                    start: lo.to_vec(),
                    end: hi.to_vec(),
                    seqs,
                },
            );
        }
        Fragments { frags }
    }

    /// A list already fragmented (from a decoded block; checked by the decoder).
    pub(crate) fn from_fragments(frags: Vec<Fragment>) -> Self {
        Fragments { frags }
    }

    pub(crate) fn fragments(&self) -> &[Fragment] {
        &self.frags
    }

    /// True when there is no tombstone.
    pub fn is_empty(&self) -> bool {
        self.frags.is_empty()
    }

    /// Fragments held.
    pub fn len(&self) -> usize {
        self.frags.len()
    }

    /// The newest tombstone over `key` with a sequence number ≤ `read_seq` (0 when none): every
    /// version of `key` below it is deleted for that reader.
    pub fn covering(&self, key: &[u8], read_seq: u64) -> u64 {
        let i = self.frags.partition_point(|f| f.end.as_slice() <= key);
        match self.frags.get(i) {
            Some(f) if f.start.as_slice() <= key => f.seqs.iter().copied().find(|&s| s <= read_seq).unwrap_or(0),
            _ => 0,
        }
    }

    /// [`covering`](Self::covering) for readers that walk keys in order: `hint` (any value at
    /// first) remembers where the last key fell, and a key in the same fragment or gap costs
    /// two comparisons instead of a binary search.
    #[inline]
    pub fn covering_near(&self, key: &[u8], read_seq: u64, hint: &mut usize) -> u64 {
        let f = &self.frags;
        let i = *hint;
        let fits = i <= f.len()
            && (i == 0 || f[i - 1].end.as_slice() <= key)
            && (i == f.len() || key < f[i].end.as_slice());
        if !fits {
            *hint = f.partition_point(|x| x.end.as_slice() <= key);
        }
        match f.get(*hint) {
            Some(x) if x.start.as_slice() <= key => x.seqs.iter().copied().find(|&s| s <= read_seq).unwrap_or(0),
            _ => 0,
        }
    }

    /// The run of adjacent fragments around `key` that a reader at `read_seq` sees a tombstone
    /// over, from the one over `key` onwards (`forward`) or backwards: where the run ends (its
    /// last fragment's end, or its first one's start) and the oldest of the newest tombstones
    /// over its fragments (a version older than that is deleted anywhere in the run).
    pub fn covered_run(&self, key: &[u8], read_seq: u64, forward: bool) -> Option<(&[u8], u64)> {
        let i = self.frags.partition_point(|f| f.end.as_slice() <= key);
        self.frags.get(i).filter(|f| f.start.as_slice() <= key)?;
        self.run_from(i, read_seq, forward)
    }

    /// [`covered_run`](Self::covered_run) walking backwards from the keys just below `key`
    /// (an excluded upper bound): the run of the fragment holding them.
    pub fn covered_run_below(&self, key: &[u8], read_seq: u64) -> Option<(&[u8], u64)> {
        let i = self.frags.partition_point(|f| f.start.as_slice() < key).checked_sub(1)?;
        self.frags.get(i).filter(|f| key <= f.end.as_slice())?;
        self.run_from(i, read_seq, false)
    }

    /// The run of adjacent visible fragments from fragment `i` on, in the direction given.
    fn run_from(&self, i: usize, read_seq: u64, forward: bool) -> Option<(&[u8], u64)> {
        let visible = |f: &Fragment| f.seqs.iter().copied().find(|&s| s <= read_seq);
        let mut min = visible(&self.frags[i])?;
        let mut j = i;
        loop {
            let next = if forward { j + 1 } else { j.wrapping_sub(1) };
            let Some(n) = self.frags.get(next) else { break };
            let adjacent = if forward {
                n.start == self.frags[j].end
            } else {
                n.end == self.frags[j].start
            };
            let Some(s) = visible(n).filter(|_| adjacent) else { break };
            min = min.min(s);
            j = next;
        }
        let f = &self.frags[j];
        Some((if forward { &f.end } else { &f.start }, min))
    }

    /// The tombstones, one per fragment and sequence number.
    pub fn tombstones(&self) -> impl Iterator<Item = RangeTombstone> + '_ {
        self.frags.iter().flat_map(|f| {
            f.seqs.iter().map(|&seq| RangeTombstone {
                start: f.start.clone(),
                end: f.end.clone(),
                seq,
            })
        })
    }

    /// The tombstones of every list, fragmented together.
    pub fn merged<'a>(lists: impl IntoIterator<Item = &'a Fragments>) -> Fragments {
        Fragments::new(lists.into_iter().flat_map(Fragments::tombstones))
    }

    /// [`merged`](Self::merged) for shared lists: none is `None`, one is itself (no copy).
    pub fn union(mut lists: Vec<Arc<Fragments>>) -> Option<Arc<Fragments>> {
        match lists.len() {
            0 | 1 => lists.pop(),
            _ => Some(Arc::new(Fragments::merged(lists.iter().map(|l| &**l)))),
        }
    }

    /// The smallest start and the largest covered user key (see the module comment).
    pub fn key_bounds(&self) -> Option<(&[u8], &[u8])> {
        let first = self.frags.first()?;
        let last = self.frags.last()?;
        Some((&first.start, last_covered(&last.end)))
    }

    /// Widens a table's range to its tombstones: `smallest`/`largest` internal keys (ignored
    /// when `empty`: the table has no entry) to a tombstone's start (before every version of
    /// it) and to the last key a tombstone covers (after every version of it); `seqnos` (lowest,
    /// highest) to theirs.
    pub fn widen(&self, empty: bool, smallest: &mut Vec<u8>, largest: &mut Vec<u8>, seqnos: &mut (u64, u64)) {
        let (Some((lo, hi)), Some((slo, shi))) = (self.key_bounds(), self.seq_bounds()) else {
            return;
        };
        let lo = InternalKey::new(lo, MAX_SEQNO, ValueKind::RangeDelete).encoded().to_vec();
        let hi = InternalKey::new(hi, 0, ValueKind::Delete).encoded().to_vec();
        if empty || ikey::compare(&lo, smallest).is_lt() {
            *smallest = lo;
        }
        if empty || ikey::compare(&hi, largest).is_gt() {
            *largest = hi;
        }
        *seqnos = if empty {
            (slo, shi)
        } else {
            (seqnos.0.min(slo), seqnos.1.max(shi))
        };
    }

    /// Tombstones held: one per fragment and sequence number.
    pub fn count(&self) -> u64 {
        self.frags.iter().map(|f| f.seqs.len() as u64).sum()
    }

    /// Smallest and largest sequence numbers.
    pub fn seq_bounds(&self) -> Option<(u64, u64)> {
        let seqs = self.frags.iter().flat_map(|f| f.seqs.iter().copied());
        let (lo, hi) = seqs.fold((u64::MAX, 0), |(lo, hi), s| (lo.min(s), hi.max(s)));
        (lo <= hi).then_some((lo, hi))
    }

    /// The part within `[lo, hi)` (`None`: unbounded on that side).
    pub fn clipped(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Fragments {
        let frags = self
            .frags
            .iter()
            .filter_map(|f| {
                let start = match lo {
                    Some(lo) if lo > f.start.as_slice() => lo,
                    _ => f.start.as_slice(),
                };
                let end = match hi {
                    Some(hi) if hi < f.end.as_slice() => hi,
                    _ => f.end.as_slice(),
                };
                (start < end).then(|| Fragment {
                    start: start.to_vec(),
                    end: end.to_vec(),
                    seqs: f.seqs.clone(),
                })
            })
            .collect();
        Fragments { frags }
    }

    /// Keeps, per fragment, the tombstones some reader may still need: every one above
    /// `oldest_snapshot`, and the newest at or below it (which every reader sees, so the older
    /// ones delete nothing more) — unless `drop_visible(start, end)` says nothing below can hold
    /// a key of the fragment, when the ones at or below it go too.
    pub fn compacted(&self, oldest_snapshot: u64, mut drop_visible: impl FnMut(&[u8], &[u8]) -> bool) -> Fragments {
        let mut frags = Vec::with_capacity(self.frags.len());
        for f in &self.frags {
            let above = f.seqs.iter().take_while(|&&s| s > oldest_snapshot).count();
            let mut seqs = f.seqs[..above].to_vec();
            if let Some(&visible) = f.seqs.get(above) {
                if !drop_visible(&f.start, &f.end) {
                    seqs.push(visible);
                }
            }
            if !seqs.is_empty() {
                push_coalesced(
                    &mut frags,
                    Fragment {
                        start: f.start.clone(),
                        end: f.end.clone(),
                        seqs,
                    },
                );
            }
        }
        Fragments { frags }
    }

    /// Memory a decoded list occupies (charged to the region of pinned table metadata).
    pub fn memory_usage(&self) -> usize {
        self.frags
            .iter()
            .map(|f| f.start.len() + f.end.len() + 8 * f.seqs.len() + std::mem::size_of::<Fragment>())
            .sum()
    }
}

/// Appends `f`, or extends the last fragment when it ends where `f` starts with the same
/// tombstones.
fn push_coalesced(frags: &mut Vec<Fragment>, f: Fragment) {
    match frags.last_mut() {
        Some(prev) if prev.end == f.start && prev.seqs == f.seqs => prev.end = f.end,
        _ => frags.push(f),
    }
}

/// The largest user key `[_, end)` covers: `end` without its last byte when that byte is 0,
/// else `end` itself (one too many; see the module comment).
pub fn last_covered(end: &[u8]) -> &[u8] {
    match end.split_last() {
        Some((0, before)) => before,
        _ => end,
    }
}

/// The key just after `key`: `key ‖ 0x00`, where compaction outputs with tombstones are cut.
pub fn successor(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.extend_from_slice(key);
    k.push(0);
    k
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;
    use proptest::prelude::*;

    fn t(start: &str, end: &str, seq: u64) -> RangeTombstone {
        RangeTombstone {
            start: start.into(),
            end: end.into(),
            seq,
        }
    }

    fn show(f: &Fragments) -> String {
        f.fragments()
            .iter()
            .map(|f| {
                let seqs: Vec<String> = f.seqs.iter().map(u64::to_string).collect();
                format!(
                    "[{},{})@{}",
                    String::from_utf8_lossy(&f.start),
                    String::from_utf8_lossy(&f.end),
                    seqs.join(",")
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn fragments_are_disjoint_with_the_seqnos_over_them() {
        let f = Fragments::new([t("a", "e", 5), t("c", "g", 9), t("x", "x", 7), t("f", "h", 5)]);
        assert_eq!(show(&f), "[a,c)@5 [c,e)@9,5 [e,f)@9 [f,g)@9,5 [g,h)@5");
        assert_eq!(f.covering(b"b", 100), 5);
        assert_eq!(f.covering(b"c", 100), 9);
        assert_eq!(f.covering(b"c", 8), 5);
        assert_eq!(f.covering(b"c", 4), 0);
        assert_eq!(f.covering(b"h", 100), 0);
        assert_eq!(f.covering(b"0", 100), 0);
        assert_eq!(f.key_bounds(), Some((&b"a"[..], &b"h"[..])));
        assert_eq!(f.seq_bounds(), Some((5, 9)));
        // Adjacent fragments with the same tombstones are one.
        assert_eq!(show(&Fragments::new([t("a", "c", 3), t("c", "e", 3)])), "[a,e)@3");
    }

    #[test]
    fn clipping_and_compacting() {
        let f = Fragments::new([t("a", "e", 5), t("c", "g", 9), t("c", "g", 2)]);
        assert_eq!(show(&f.clipped(Some(b"b"), Some(b"d"))), "[b,c)@5 [c,d)@9,5,2");
        assert_eq!(show(&f.clipped(None, Some(b"a"))), "");
        // Snapshot at 4: 9 and 5 above it stay, 2 is the newest at or below it.
        assert_eq!(show(&f.compacted(4, |_, _| false)), "[a,c)@5 [c,e)@9,5,2 [e,g)@9,2");
        // At the bottom the ones every reader sees go.
        assert_eq!(show(&f.compacted(4, |_, _| true)), "[a,c)@5 [c,e)@9,5 [e,g)@9");
        // No snapshot: only the newest of each fragment stays (or none at the bottom).
        assert_eq!(show(&f.compacted(100, |_, _| false)), "[a,c)@5 [c,g)@9");
        assert_eq!(show(&f.compacted(100, |_, _| true)), "");
    }

    #[test]
    fn covered_runs_span_adjacent_fragments() {
        let f = Fragments::new([t("a", "e", 5), t("c", "g", 9), t("h", "k", 7)]);
        // [a,c)@5 [c,e)@9,5 [e,g)@9, then a gap, then [h,k)@7.
        assert_eq!(f.covered_run(b"b", 100, true), Some((&b"g"[..], 5)));
        assert_eq!(f.covered_run(b"f", 100, false), Some((&b"a"[..], 5)));
        assert_eq!(f.covered_run(b"d", 8, true), Some((&b"e"[..], 5)), "9 is not visible at 8");
        assert_eq!(f.covered_run(b"i", 100, true), Some((&b"k"[..], 7)));
        assert_eq!(f.covered_run(b"g", 100, true), None);
        // Below an excluded bound: the keys just below `key`.
        assert_eq!(f.covered_run_below(b"g", 100), Some((&b"a"[..], 5)), "[e,g) holds the keys below g");
        assert_eq!(f.covered_run_below(b"e", 100), Some((&b"a"[..], 5)));
        assert_eq!(f.covered_run_below(b"k", 100), Some((&b"h"[..], 7)));
        assert_eq!(f.covered_run_below(b"h", 100), None, "below h is the gap");
        assert_eq!(f.covered_run_below(b"a", 100), None);
        assert_eq!(f.covered_run_below(b"z", 100), None);
        assert_eq!(f.covered_run_below(b"f", 8), None, "[e,g)@9 is not visible at 8");
    }

    #[test]
    fn bounds_of_ends() {
        assert_eq!(last_covered(b"k\0"), b"k");
        assert_eq!(last_covered(b"k"), b"k");
        assert_eq!(last_covered(b""), b"");
        assert_eq!(successor(b"k"), b"k\0");
    }

    proptest! {
        /// Queries with a hint, in any order, answer as without.
        #[test]
        fn hinted_queries_agree(
            ts in prop::collection::vec((0u8..20, 0u8..20, 1u64..50), 0..30),
            keys in prop::collection::vec(0u8..21, 1..60),
        ) {
            let f = Fragments::new(ts.into_iter().map(|(a, b, s)| RangeTombstone { start: vec![a], end: vec![b], seq: s }));
            let mut hint = 0;
            for k in keys {
                prop_assert_eq!(f.covering_near(&[k], 40, &mut hint), f.covering(&[k], 40));
            }
        }

        /// The fragments answer every point query as the tombstones do.
        #[test]
        fn covering_matches_a_scan(
            ts in prop::collection::vec((0u8..20, 0u8..20, 1u64..50), 0..30),
            read in 0u64..60,
        ) {
            let ts: Vec<RangeTombstone> = ts
                .into_iter()
                .map(|(a, b, s)| RangeTombstone { start: vec![a], end: vec![b], seq: s })
                .collect();
            let f = Fragments::new(ts.clone());
            for w in f.fragments().windows(2) {
                prop_assert!(w[0].end <= w[1].start);
            }
            for k in 0u8..21 {
                let want = ts
                    .iter()
                    .filter(|t| t.start.as_slice() <= [k].as_slice() && [k].as_slice() < t.end.as_slice() && t.seq <= read)
                    .map(|t| t.seq)
                    .max()
                    .unwrap_or(0);
                prop_assert_eq!(f.covering(&[k], read), want);
            }
        }
    }
}
