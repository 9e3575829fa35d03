//! A memory SSTable (Luo & Carey §4.1.1): an immutable sorted run of internal keys kept in
//! write memory, built by a memory merge. Denser than the skiplist it came from (no tower
//! pointers, no arena slack) and searched by binary search.
//!
//! ```text
//! data    := entry*
//! entry   := ikey_len:u32le value_len:u32le ikey value
//! offsets := u32 per entry (where it starts in data), in internal-key order
//! ```
//! Runs are built only from entries already in memory, so lengths are trusted; a run is cut
//! before `data` would pass `u32::MAX`. `data` lives in a [`PageVec`] (mapped, not malloc'd:
//! see `memory::pages`).

use crate::compaction::iter::Retention;
use crate::format::ikey;
use crate::iter::InternalIterator;
use crate::memory::pages::{PageVec, Spare};
use std::cmp::Ordering;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

/// One immutable sorted run.
#[derive(Debug, Default)]
pub struct SortedRun {
    data: PageVec,
    offsets: Vec<u32>,
}

impl SortedRun {
    /// Entries.
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    /// True when the run holds nothing.
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// Bytes the run occupies (what write memory is charged).
    pub fn bytes(&self) -> usize {
        self.data.capacity() + self.offsets.capacity() * 4
    }

    /// Smallest user key (empty for an empty run).
    pub fn smallest(&self) -> &[u8] {
        if self.is_empty() {
            &[]
        } else {
            ikey::user_key(self.entry(0).0)
        }
    }

    /// Largest user key (empty for an empty run).
    pub fn largest(&self) -> &[u8] {
        self.len().checked_sub(1).map_or(&[], |i| ikey::user_key(self.entry(i).0))
    }

    /// `(internal key, value)` of entry `i < len()`.
    pub fn entry(&self, i: usize) -> (&[u8], &[u8]) {
        let at = self.offsets[i] as usize;
        let klen = u32::from_le_bytes(self.data[at..at + 4].try_into().unwrap_or_default()) as usize;
        let vlen = u32::from_le_bytes(self.data[at + 4..at + 8].try_into().unwrap_or_default()) as usize;
        let k = at + 8;
        (&self.data[k..k + klen], &self.data[k + klen..k + klen + vlen])
    }

    /// Index of the first entry with internal key ≥ `target` (`len()` if none).
    pub fn seek(&self, target: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if ikey::compare(self.entry(mid).0, target) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Index of the first entry at or after `from` with internal key ≥ `target`, galloping from
    /// `from` (cheap when the answer is near, as it is for successive keys of a merge).
    pub fn seek_from(&self, from: usize, target: &[u8]) -> usize {
        let less = |i: usize| ikey::compare(self.entry(i).0, target) == Ordering::Less;
        if from >= self.len() || !less(from) {
            return from;
        }
        // less(lo) holds; the answer is in (lo, hi], found by doubling the step, then bisecting.
        let (mut lo, mut step) = (from, 1);
        let mut hi = loop {
            let probe = lo + step;
            if probe >= self.len() || !less(probe) {
                break probe.min(self.len());
            }
            lo = probe;
            step *= 2;
        };
        lo += 1;
        while lo < hi {
            let mid = (lo + hi) / 2;
            if less(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Bytes of entries `i..j` (`i ≤ j ≤ len()`): they are contiguous in `data`.
    fn span_bytes(&self, i: usize, j: usize) -> usize {
        let at = |x: usize| self.offsets.get(x).map_or(self.data.len(), |&o| o as usize);
        at(j) - at(i)
    }

    /// Whether `user_key` is within the run's key range (a lookup outside it is skipped).
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        !self.is_empty() && user_key >= self.smallest() && user_key <= self.largest()
    }

    fn push(&mut self, key: &[u8], value: &[u8]) {
        self.offsets.push(self.data.len() as u32);
        let lens = (key.len() as u64) | (value.len() as u64) << 32;
        self.data.extend_from_slice(&lens.to_le_bytes());
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(value);
    }

    /// Frees the capacity a complete run does not use.
    fn shrink(mut self) -> Self {
        self.data.shrink_to_fit();
        self.offsets.shrink_to_fit();
        self
    }

    /// Appends `other`, whose keys all sort after this run's; gives back `other`'s buffer.
    fn append(&mut self, other: SortedRun) -> PageVec {
        let base = self.data.len() as u32;
        self.offsets.extend(other.offsets.iter().map(|o| o + base));
        self.data.extend_from_slice(&other.data);
        other.data
    }

    /// Takes the run's data buffer (for reuse), leaving it empty.
    pub(crate) fn take_data(&mut self) -> PageVec {
        self.offsets.clear();
        std::mem::take(&mut self.data)
    }
}

/// A memory merge's memory outside the memory levels, charged to write memory: the runs the
/// running step has built so far, and one mapping kept from a dropped run for the next run to
/// be built in.
#[derive(Debug, Default)]
pub(crate) struct MergeScratch {
    pub building: AtomicUsize,
    pub spare: Spare,
}

impl MergeScratch {
    /// Bytes charged.
    pub fn bytes(&self) -> usize {
        self.building.load(AtomicOrdering::Relaxed) + self.spare.bytes()
    }
}

/// Runs being built, cut once one reaches `target` bytes — never between two versions of one
/// user key, so the runs of a level never share a user key. `scratch` tracks the bytes built so
/// far (a merge's memory, charged to write memory while it runs) and lends its spare pages.
struct RunsBuilder<'s> {
    out: Vec<SortedRun>,
    cur: SortedRun,
    target: usize,
    reserve: usize,
    done_bytes: usize,
    charged: usize,
    scratch: &'s MergeScratch,
}

impl<'s> RunsBuilder<'s> {
    fn new(target: usize, scratch: &'s MergeScratch) -> Self {
        // Runs are built in place: `data` is reserved once (growing it by doubling would copy
        // every run about once more), with room for the entry that passes the target, capped
        // for callers that want one run of everything.
        let reserve = target.min(64 << 20);
        let reserve = reserve + reserve / 16;
        let mut b = RunsBuilder {
            out: Vec::new(),
            cur: SortedRun::default(),
            target,
            reserve,
            done_bytes: 0,
            charged: 0,
            scratch,
        };
        b.cur = b.fresh();
        b
    }

    fn fresh(&self) -> SortedRun {
        SortedRun {
            data: self.scratch.spare.take(self.reserve),
            ..SortedRun::default()
        }
    }

    /// Cuts the current run if it is full and an entry of `bytes` with internal key `next`
    /// would not continue its last user key.
    fn make_room(&mut self, next: &[u8], bytes: usize) {
        let len = self.cur.data.len();
        let full = len >= self.target || len + bytes > u32::MAX as usize;
        if full && !self.cur.is_empty() && self.cur.largest() != ikey::user_key(next) {
            let fresh = self.fresh();
            let run = std::mem::replace(&mut self.cur, fresh).shrink();
            self.done_bytes += run.bytes();
            self.out.push(run);
        }
    }

    fn push(&mut self, k: &[u8], v: &[u8]) {
        self.make_room(k, 8 + k.len() + v.len());
        self.cur.push(k, v);
        self.recharge();
    }

    /// Copies entries `i..j` of `run` unfiltered, cutting where [`push`](Self::push) would:
    /// byte ranges at a time, not entry by entry.
    fn push_span(&mut self, run: &SortedRun, mut i: usize, j: usize) {
        while i < j {
            self.make_room(run.entry(i).0, run.span_bytes(i, i + 1));
            // Entries i..m: up to the one that fills the current run (or all of them).
            let room = self.target.saturating_sub(self.cur.data.len());
            let mut m = if room == 0 {
                i + 1
            } else {
                i + 1 + run.offsets[i + 1..j].partition_point(|&o| ((o - run.offsets[i]) as usize) < room)
            };
            if self.cur.data.len() + run.span_bytes(i, m) > u32::MAX as usize {
                // Offsets are u32: entry by entry, so that `make_room` cuts before the limit.
                m = i + 1;
            }
            let base = self.cur.data.len() as u32;
            let from = run.offsets[i];
            self.cur.offsets.extend(run.offsets[i..m].iter().map(|&o| o - from + base));
            self.cur.data.extend_from_slice(&run.data[from as usize..from as usize + run.span_bytes(i, m)]);
            self.recharge();
            i = m;
        }
    }

    fn recharge(&mut self) {
        recharge(&self.scratch.building, &mut self.charged, self.done_bytes + self.cur.bytes());
    }

    fn finish(mut self) -> Vec<SortedRun> {
        let mut cur = std::mem::take(&mut self.cur);
        if cur.is_empty() {
            self.scratch.spare.offer(cur.take_data());
        } else {
            // A small remainder joins the run before it rather than stay a small run of its
            // own (merges cut one run of a level at a time: remainders would fragment it).
            match self.out.last_mut() {
                Some(last) if cur.data.len() < self.target / 2 && last.data.len() + cur.data.len() <= u32::MAX as usize => {
                    let mut joined = std::mem::take(last);
                    self.scratch.spare.offer(joined.append(cur));
                    *last = joined.shrink();
                }
                _ => self.out.push(cur.shrink()),
            }
        }
        recharge(&self.scratch.building, &mut self.charged, self.out.iter().map(SortedRun::bytes).sum());
        self.out
    }

    fn abandon(mut self) {
        self.scratch.spare.offer(self.cur.take_data());
        recharge(&self.scratch.building, &mut self.charged, 0);
    }
}

/// Builds runs from `input` (positioned anywhere; read from its first entry) keeping what
/// `filter` keeps, cut at `target_bytes` as [`RunsBuilder`] cuts.
pub fn build_runs(
    input: &mut dyn InternalIterator,
    filter: &mut Retention<'_>,
    target_bytes: usize,
    scratch: &MergeScratch,
) -> crate::error::Result<Vec<SortedRun>> {
    let mut b = RunsBuilder::new(target_bytes, scratch);
    input.seek_to_first();
    while input.valid() {
        let (k, v) = (input.key(), input.value());
        if filter.keep(k) {
            b.push(k, v);
        }
        input.next();
    }
    if let Err(e) = input.status() {
        b.abandon();
        return Err(e);
    }
    Ok(b.finish())
}

/// [`build_runs`] over `upper` (newer; positioned anywhere, read from its first entry) merged
/// with the whole of run `lower` (older), without a merging iterator: the stretches of `lower`
/// between two entries of `upper` are found by galloping and copied as byte ranges. Only the
/// entries of `lower` that share a user key with the entry of `upper` before them (the older
/// versions a merge drops) go through `filter`; within a stretch, `lower`'s entries already
/// passed a filter when it was built, so the only thing skipped is re-dropping versions of one
/// key that a snapshot released since then — kept one merge longer, never lost. The upper
/// side's entries all go through `filter`.
pub fn merge_runs(
    upper: &mut dyn InternalIterator,
    lower: &SortedRun,
    filter: &mut Retention<'_>,
    target_bytes: usize,
    scratch: &MergeScratch,
) -> crate::error::Result<Vec<SortedRun>> {
    let mut b = RunsBuilder::new(target_bytes, scratch);
    let mut li = 0;
    // The user key of the last entry taken from `upper` (its older versions in `lower` are
    // filtered).
    let mut last_upper: Option<Vec<u8>> = None;
    upper.seek_to_first();
    while upper.valid() {
        let k = upper.key();
        let end = lower.seek_from(li, k);
        take_lower(&mut b, lower, &mut li, end, last_upper.as_deref(), filter);
        if filter.keep(k) {
            b.push(k, upper.value());
        }
        let last = last_upper.get_or_insert_with(Vec::new);
        last.clear();
        last.extend_from_slice(ikey::user_key(k));
        upper.next();
    }
    if let Err(e) = upper.status() {
        b.abandon();
        return Err(e);
    }
    take_lower(&mut b, lower, &mut li, lower.len(), last_upper.as_deref(), filter);
    Ok(b.finish())
}

/// Entries `*li..end` of `lower` into `b`: first, one by one through `filter`, those of the
/// user key `last_upper` (older versions of what `upper` just gave), then the rest as a span.
fn take_lower(
    b: &mut RunsBuilder<'_>,
    lower: &SortedRun,
    li: &mut usize,
    end: usize,
    last_upper: Option<&[u8]>,
    filter: &mut Retention<'_>,
) {
    while *li < end && last_upper.is_some_and(|u| ikey::user_key(lower.entry(*li).0) == u) {
        let (k, v) = lower.entry(*li);
        if filter.keep(k) {
            b.push(k, v);
        }
        *li += 1;
    }
    if *li < end {
        b.push_span(lower, *li, end);
        filter.skip_to(lower.entry(end - 1).0);
        *li = end;
    }
}

/// Moves `scratch` from the `charged` bytes to `now`.
fn recharge(scratch: &AtomicUsize, charged: &mut usize, now: usize) {
    if now > *charged {
        scratch.fetch_add(now - *charged, AtomicOrdering::Relaxed);
    } else if now < *charged {
        scratch.fetch_sub(*charged - now, AtomicOrdering::Relaxed);
    }
    *charged = now;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ikey::{InternalKey, ValueKind};
    use crate::memtable::Memtable;
    use std::sync::Arc;

    #[test]
    fn build_cut_and_seek() {
        let m = Arc::new(Memtable::new());
        for i in 0..1000u64 {
            let k = format!("k{:04}", i % 300);
            m.insert(k.as_bytes(), i + 1, ValueKind::Put, &i.to_le_bytes(), 1);
        }
        let scratch = MergeScratch::default();
        // A snapshot at 0 keeps every version.
        let mut keep_all = Retention::new(0, |_| false);
        let runs = build_runs(&mut m.iter(), &mut keep_all, 4096, &scratch).unwrap();
        assert!(runs.len() > 3);
        let sizes: Vec<usize> = runs.iter().map(|r| r.data.len()).collect();
        assert!(sizes.iter().all(|&s| s >= 2048), "no small remainder run: {sizes:?}");
        assert_eq!(runs.iter().map(SortedRun::len).sum::<usize>(), 1000);
        assert_eq!(scratch.bytes(), runs.iter().map(SortedRun::bytes).sum::<usize>());
        for w in runs.windows(2) {
            assert!(w[0].largest() < w[1].smallest(), "runs share no user key");
        }
        // Newest version only, with the last seqno as the oldest snapshot.
        let mut newest = Retention::new(1000, |_| false);
        let one = build_runs(&mut m.iter(), &mut newest, usize::MAX, &MergeScratch::default()).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].len(), 300);
        let r = &one[0];
        let target = InternalKey::new(b"k0007", ikey::MAX_SEQNO, ValueKind::Put);
        let i = r.seek(target.encoded());
        let (k, v) = r.entry(i);
        assert_eq!(ikey::user_key(k), b"k0007");
        assert_eq!(v, 907u64.to_le_bytes());
        assert!(r.may_contain(b"k0150") && !r.may_contain(b"k0300") && !r.may_contain(b"a"));
        assert_eq!(r.seek(InternalKey::new(b"z", 1, ValueKind::Put).encoded()), r.len());
    }

    fn entries(runs: &[SortedRun]) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
        runs.iter()
            .map(|r| (0..r.len()).map(|i| (r.entry(i).0.to_vec(), r.entry(i).1.to_vec())).collect())
            .collect()
    }

    #[test]
    fn seek_from_gallops_to_the_binary_search_answer() {
        let m = Arc::new(Memtable::new());
        for i in 0..500u64 {
            m.insert(format!("k{:04}", (i * 7) % 400).as_bytes(), i + 1, ValueKind::Put, b"v", 1);
        }
        let run = build_runs(&mut m.iter(), &mut Retention::new(0, |_| false), usize::MAX, &MergeScratch::default())
            .unwrap()
            .remove(0);
        for t in (0..420u64).step_by(3) {
            let target = InternalKey::new(format!("k{t:04}").as_bytes(), 250, ValueKind::Put);
            let want = run.seek(target.encoded());
            for from in [0, want / 2, want.saturating_sub(1), want] {
                assert_eq!(run.seek_from(from, target.encoded()), want, "target {t} from {from}");
            }
        }
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The galloping merge builds exactly the runs a merging iterator through the filter
        /// builds, when the lower run was filtered at the same snapshot (as the memory levels'
        /// runs are): same entries, same cuts, same charge.
        #[test]
        fn merge_runs_matches_a_filtered_merge(
            lower_ops in proptest::collection::vec((0u16..300, any::<bool>()), 0..600),
            upper_ops in proptest::collection::vec((0u16..300, any::<bool>()), 1..300),
            snapshot_at in 0.0f64..1.2,
            target in 64usize..3000,
            bounds in (0u16..320, 0u16..320),
            upper_is_run in any::<bool>(),
        ) {
            let key = |k: u16| format!("key{k:05}").into_bytes();
            let (lower_m, upper_m) = (Arc::new(Memtable::new()), Arc::new(Memtable::new()));
            let mut seq = 0u64;
            for (m, ops) in [(&lower_m, &lower_ops), (&upper_m, &upper_ops)] {
                for &(k, del) in ops.iter() {
                    seq += 1;
                    let (kind, v) = if del { (ValueKind::Delete, Vec::new()) } else { (ValueKind::Put, vec![k as u8; (k % 40) as usize]) };
                    m.insert(&key(k), seq, kind, &v, 1);
                }
            }
            let snapshot = (seq as f64 * snapshot_at) as u64;
            let filter = || Retention::new(snapshot.min(seq), |_| false);
            let lower = build_runs(&mut lower_m.iter(), &mut filter(), usize::MAX, &MergeScratch::default()).unwrap();
            let lower = Arc::new(Memtable::from_run(lower.into_iter().next().unwrap_or_default(), 1, 0));
            let upper = if upper_is_run {
                let r = build_runs(&mut upper_m.iter(), &mut filter(), usize::MAX, &MergeScratch::default()).unwrap();
                Arc::new(Memtable::from_run(r.into_iter().next().unwrap_or_default(), 1, 0))
            } else {
                upper_m.clone()
            };
            let (lo, hi) = (bounds.0.min(bounds.1), bounds.0.max(bounds.1));
            let range = || crate::compaction::job::RangeIter::new(upper.iter(), Some(key(lo)), (hi < 310).then(|| key(hi)));
            let (s1, s2) = (MergeScratch::default(), MergeScratch::default());
            let mut f1 = filter();
            let fast = merge_runs(&mut range(), lower.as_run().unwrap(), &mut f1, target, &s1).unwrap();
            let mut merged = crate::iter::MergingIter::new(vec![Box::new(range()), Box::new(lower.iter())]);
            let mut f2 = filter();
            let slow = build_runs(&mut merged, &mut f2, target, &s2).unwrap();
            prop_assert_eq!(entries(&fast), entries(&slow));
            prop_assert_eq!(f1.dropped_shadowed, f2.dropped_shadowed);
            prop_assert_eq!(s1.bytes(), fast.iter().map(SortedRun::bytes).sum::<usize>());
        }
    }
}
