//! The memtable: an arena skiplist of internal keys (one writer, concurrent readers), charged
//! by the bytes its entries occupy — or, in a partitioned memory component, an immutable
//! sorted run built by a memory merge. Readers see both through the same type.

mod arena;
mod component;
mod filter;
pub(crate) mod level;
pub(crate) mod run;

pub(crate) use component::{FlushJob, FlushKind, MemComponent, MergeJob};
pub use component::MemoryComponent;

use crate::error::Result;
use crate::format::ikey::{self, ValueKind};
use crate::iter::InternalIterator;
use crate::range_del::{Fragments, RangeTombstone};
use arc_swap::{ArcSwap, ArcSwapOption};
use arena::ArenaSkipList;
use filter::MemFilter;
use run::{MergeScratch, SortedRun};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// The bytes a tree's next memtable's whole-key filter is sized for (the filter takes a 64th
/// of them): twice what the tree's last memtable held when it was switched (`last`; a tree's
/// memtables switch at similar sizes), at least `share` (the tree's even share of write
/// memory), at most `write_buffer_size`. Sizing every filter for a full memtable charged 1 MiB
/// per tree at the defaults: 128 trees held the whole write budget in empty filters, and
/// every write group then flushed a memtable.
pub fn filter_target(last: usize, write_buffer_size: usize, share: usize) -> usize {
    last.saturating_mul(2).max(share).min(write_buffer_size)
}

/// Entries from which a lookup asks the whole-key filter before the skiplist (a descent of a
/// list this small stays in the CPU cache; the filter's line, sized for the full memtable,
/// often does not).
const FILTERED_FROM: usize = 4096;

/// One memtable: an arena skiplist written by one thread at a time (the group-commit leader)
/// and read concurrently. Readers see entries as soon as they are inserted and filter by
/// sequence number.
#[derive(Debug)]
pub struct Memtable {
    body: Body,
    /// The oldest WAL holding any of this memtable's entries (`u64::MAX` while empty): the
    /// WALs from it on are needed to recover the memtable.
    first_wal: AtomicU64,
    /// Largest seqno inserted.
    max_seqno: AtomicU64,
    /// A run's: where its pages go when it is dropped (the merges of its component reuse them).
    recycle: Option<Arc<MergeScratch>>,
    /// A skiplist's whole-key filter: lookups of keys it does not hold skip the descent.
    filter: Option<MemFilter>,
    /// Range tombstones written here (never in a run: a partitioned component flushes a
    /// memtable holding them rather than merge it).
    range_dels: MemRangeDels,
}

/// A memtable's range tombstones, as fragment lists of doubling sizes (a binary counter:
/// a tombstone is a list of one, and the last two lists merge while the newer is at least half
/// the older), so a `delete_range` costs O(log n) amortized instead of refragmenting all; a
/// lookup asks each list (one load for a memtable without any: `count`). Iterators and flushes
/// take all of them as one list, merged once after each change and kept.
#[derive(Debug, Default)]
struct MemRangeDels {
    /// Serializes writers (the group-commit leader, or recovery).
    write: Mutex<()>,
    lists: ArcSwap<Vec<Arc<Fragments>>>,
    merged: ArcSwapOption<Fragments>,
    count: AtomicUsize,
    bytes: AtomicUsize,
}

impl Drop for Memtable {
    fn drop(&mut self) {
        if let (Body::Run(run), Some(s)) = (&mut self.body, &self.recycle) {
            s.spare.offer(run.take_data());
        }
    }
}

#[derive(Debug)]
enum Body {
    /// Written by inserts.
    List(ArenaSkipList),
    /// Immutable, from a memory merge.
    Run(SortedRun),
}

impl Memtable {
    /// An empty memtable.
    pub fn new() -> Self {
        Memtable {
            body: Body::List(ArenaSkipList::new()),
            first_wal: AtomicU64::new(u64::MAX),
            max_seqno: AtomicU64::new(0),
            recycle: None,
            filter: None,
            range_dels: MemRangeDels::default(),
        }
    }

    /// An empty memtable that will hold about `bytes`, with a whole-key filter sized for it
    /// (a 64th of that; none for 0).
    pub fn with_filter(bytes: usize) -> Self {
        let mut m = Memtable::new();
        m.filter = (bytes > 0).then(|| MemFilter::for_memtable(bytes));
        m
    }

    /// A memory run holding data first logged in WAL `first_wal` (the oldest of its inputs').
    pub fn from_run(run: SortedRun, first_wal: u64, max_seqno: u64) -> Self {
        Memtable {
            body: Body::Run(run),
            first_wal: AtomicU64::new(first_wal),
            max_seqno: AtomicU64::new(max_seqno),
            recycle: None,
            filter: None,
            range_dels: MemRangeDels::default(),
        }
    }

    /// This run, giving its pages to `scratch`'s spare when dropped.
    pub(crate) fn recycled_into(mut self, scratch: Arc<MergeScratch>) -> Self {
        self.recycle = Some(scratch);
        self
    }

    /// Inserts one entry logged in WAL `wal` (a range tombstone `[user_key, value)` for
    /// `RangeDelete`). Only active memtables (skiplists) are written.
    pub fn insert(&self, user_key: &[u8], seqno: u64, kind: ValueKind, value: &[u8], wal: u64) {
        let Body::List(list) = &self.body else {
            debug_assert!(false, "insert into a memory run");
            return;
        };
        self.first_wal.fetch_min(wal, Ordering::Relaxed);
        if kind == ValueKind::RangeDelete {
            self.insert_range_del(user_key, value, seqno);
            return;
        }
        // The filter line loads during the skiplist's search; its bits are set before the
        // sequence number is published, which is all readers need (filter.rs).
        let filter = self.filter.as_ref().map(|f| {
            let h = crate::filter::key_hash(user_key);
            f.prefetch(h);
            (f, h)
        });
        list.insert(user_key, ikey::pack_trailer(seqno, kind), value);
        if let Some((f, h)) = filter {
            f.insert(h);
        }
        self.max_seqno.fetch_max(seqno, Ordering::Relaxed);
    }

    fn insert_range_del(&self, start: &[u8], end: &[u8], seq: u64) {
        let rd = &self.range_dels;
        let _w = rd.write.lock();
        let mut lists = Vec::clone(&rd.lists.load());
        lists.push(Arc::new(Fragments::new([RangeTombstone {
            start: start.to_vec(),
            end: end.to_vec(),
            seq,
        }])));
        while let [.., older, newer] = lists.as_slice() {
            if newer.len() * 2 < older.len() {
                break;
            }
            let merged = Arc::new(Fragments::merged([&**older, &**newer]));
            lists.truncate(lists.len() - 2);
            lists.push(merged);
        }
        rd.lists.store(Arc::new(lists));
        rd.merged.store(None);
        rd.bytes.fetch_add(start.len() + end.len() + 32, Ordering::Relaxed);
        rd.count.fetch_add(1, Ordering::Release);
        self.max_seqno.fetch_max(seq, Ordering::Relaxed);
    }

    /// The range tombstones, fragmented together (`None` when there are none: one load).
    pub fn range_dels(&self) -> Option<Arc<Fragments>> {
        let rd = &self.range_dels;
        if rd.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        if let Some(m) = rd.merged.load_full() {
            return Some(m);
        }
        let lists = rd.lists.load();
        let merged = Fragments::union(Vec::clone(&lists))?;
        // Kept unless a tombstone came meanwhile (then the next reader merges again).
        let _w = rd.write.lock();
        if Arc::ptr_eq(&rd.lists.load(), &lists) {
            rd.merged.store(Some(merged.clone()));
        }
        Some(merged)
    }

    /// The newest range tombstone over `key` a reader at `read_seq` sees (0: none).
    #[inline]
    pub fn range_del_covering(&self, key: &[u8], read_seq: u64) -> u64 {
        if self.range_dels.count.load(Ordering::Acquire) == 0 {
            return 0;
        }
        self.range_dels
            .lists
            .load()
            .iter()
            .map(|l| l.covering(key, read_seq))
            .max()
            .unwrap_or(0)
    }

    /// Whether range tombstones were written here.
    pub fn has_range_dels(&self) -> bool {
        self.range_dels.count.load(Ordering::Acquire) > 0
    }

    /// The user-key range `[smallest, largest]` of the point entries (`None` when there are
    /// none).
    pub fn key_bounds(&self) -> Option<(&[u8], &[u8])> {
        if self.point_count_is_zero() {
            return None;
        }
        Some(match &self.body {
            Body::List(list) => (
                ikey::user_key(list.entry(list.first()).0),
                ikey::user_key(list.entry(list.last()).0),
            ),
            Body::Run(run) => (run.smallest(), run.largest()),
        })
    }

    /// Whether an entry of any kind and sequence number has a user key within `bounds`.
    pub(crate) fn holds_within(self: &Arc<Self>, bounds: &crate::iter::KeyBounds) -> bool {
        if !self.key_bounds().is_some_and(|(lo, hi)| bounds.overlaps(lo, hi)) {
            return false;
        }
        let mut it = self.iter();
        match &bounds.lo {
            std::ops::Bound::Included(k) => it.seek(ikey::InternalKey::for_seek(k, ikey::MAX_SEQNO).encoded()),
            std::ops::Bound::Excluded(k) => it.seek(ikey::InternalKey::new(k, 0, ValueKind::Delete).encoded()),
            std::ops::Bound::Unbounded => it.seek_to_first(),
        }
        // (k, 0, Delete) is `k`'s last internal key: past it, the next user key.
        while it.valid() {
            let uk = ikey::user_key(it.key());
            if matches!(&bounds.lo, std::ops::Bound::Excluded(k) if uk == k.as_slice()) {
                it.next();
                continue;
            }
            return bounds.below_hi(uk);
        }
        false
    }

    /// The user-key range of the point entries and the range tombstones (the largest key a
    /// tombstone covers: `range_del/`), copied.
    pub fn key_range(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let points = self.key_bounds().map(|(lo, hi)| (lo.to_vec(), hi.to_vec()));
        let Some(rd) = self.range_dels() else {
            return points;
        };
        let Some((lo, hi)) = rd.key_bounds() else {
            return points;
        };
        Some(match points {
            None => (lo.to_vec(), hi.to_vec()),
            Some((plo, phi)) => (plo.min(lo.to_vec()), phi.max(hi.to_vec())),
        })
    }

    /// Newest version of `user_key` with seqno ≤ `seqno`: `(kind, value)`.
    #[cfg(any(test, feature = "test-util"))]
    pub fn get(&self, user_key: &[u8], seqno: u64) -> Option<(ValueKind, Vec<u8>)> {
        self.lookup(&ikey::LookupKey::new(user_key, seqno))
    }

    /// [`get`](Self::get) with a prepared lookup key.
    pub fn lookup(&self, key: &ikey::LookupKey) -> Option<(ValueKind, Vec<u8>)> {
        let mut v = Vec::new();
        self.lookup_into(key, &mut v).map(|kind| (kind, v))
    }

    /// [`lookup`](Self::lookup) writing the value into `value` (replacing its contents).
    pub fn lookup_into(&self, key: &ikey::LookupKey, value: &mut Vec<u8>) -> Option<ValueKind> {
        self.lookup_entry(key, value).map(|(kind, _)| kind)
    }

    /// [`lookup_into`](Self::lookup_into), with the entry's sequence number.
    pub fn lookup_entry(&self, key: &ikey::LookupKey, value: &mut Vec<u8>) -> Option<(ValueKind, u64)> {
        let (k, v) = match &self.body {
            Body::List(list) => {
                // A small list is searched faster than the filter's line is loaded.
                if list.len() >= FILTERED_FROM && self.filter.as_ref().is_some_and(|f| !f.may_contain(key.hash())) {
                    return None;
                }
                let off = list.seek(key.encoded());
                if off == 0 {
                    return None;
                }
                list.entry(off)
            }
            Body::Run(run) => {
                if !run.may_contain(key.user_key()) {
                    return None;
                }
                let i = run.seek(key.encoded());
                if i == run.len() {
                    return None;
                }
                run.entry(i)
            }
        };
        let (uk, seq, kind) = ikey::split(k)?;
        if uk != key.user_key() {
            return None;
        }
        value.clear();
        value.extend_from_slice(v);
        Some((kind, seq))
    }

    /// The sorted run, when this is one (not a skiplist).
    pub fn as_run(&self) -> Option<&SortedRun> {
        match &self.body {
            Body::List(_) => None,
            Body::Run(run) => Some(run),
        }
    }

    /// Bytes charged: exactly what the entries' nodes occupy in the arena, and the filter.
    pub fn approximate_bytes(&self) -> usize {
        self.entry_bytes() + self.filter.as_ref().map_or(0, MemFilter::bytes)
    }

    /// Bytes of the entries and range tombstones alone (without the filter).
    pub fn entry_bytes(&self) -> usize {
        match &self.body {
            Body::List(list) => list.used_bytes() + self.range_dels.bytes.load(Ordering::Relaxed),
            Body::Run(run) => run.bytes(),
        }
    }

    /// Entries held.
    #[cfg(any(test, feature = "test-util"))]
    pub fn len(&self) -> usize {
        match &self.body {
            Body::List(list) => list.len(),
            Body::Run(run) => run.len(),
        }
    }

    /// True when it holds neither entries nor range tombstones.
    pub fn is_empty(&self) -> bool {
        self.point_count_is_zero() && !self.has_range_dels()
    }

    fn point_count_is_zero(&self) -> bool {
        match &self.body {
            Body::List(list) => list.is_empty(),
            Body::Run(run) => run.is_empty(),
        }
    }

    /// The oldest WAL holding an entry of this memtable (`u64::MAX` when empty).
    pub fn first_wal(&self) -> u64 {
        self.first_wal.load(Ordering::Relaxed)
    }

    /// Largest seqno inserted (0 when empty).
    pub fn max_seqno(&self) -> u64 {
        self.max_seqno.load(Ordering::Relaxed)
    }

    /// An iterator in internal-key order.
    pub fn iter(self: &Arc<Self>) -> MemtableIter {
        MemtableIter {
            mem: self.clone(),
            cur: 0,
        }
    }
}

impl Default for Memtable {
    fn default() -> Self {
        // Not derived: an empty memtable needs no WAL (`first_wal = u64::MAX`), not WAL 0.
        Self::new()
    }
}

/// Cursor over a memtable; stable under concurrent inserts (it sees a node once linked).
/// Moving backwards is a search from the top, as nodes have no back links.
#[derive(Debug)]
pub struct MemtableIter {
    mem: Arc<Memtable>,
    /// Current node (skiplist) or entry index + 1 (run); 0 when invalid.
    cur: u32,
}

impl MemtableIter {
    fn entry(&self) -> (&[u8], &[u8]) {
        match (&self.mem.body, self.cur) {
            (_, 0) => (&[], &[]),
            (Body::List(list), c) => list.entry(c),
            (Body::Run(run), c) => run.entry(c as usize - 1),
        }
    }
}

/// Index + 1 of run entry `i` (0 when past either end).
fn run_pos(run: &SortedRun, i: Option<usize>) -> u32 {
    i.filter(|&i| i < run.len()).map_or(0, |i| i as u32 + 1)
}

impl InternalIterator for MemtableIter {
    fn valid(&self) -> bool {
        self.cur != 0
    }
    fn seek_to_first(&mut self) {
        self.cur = match &self.mem.body {
            Body::List(list) => list.first(),
            Body::Run(run) => run_pos(run, Some(0)),
        };
    }
    fn seek_to_last(&mut self) {
        self.cur = match &self.mem.body {
            Body::List(list) => list.last(),
            Body::Run(run) => run_pos(run, run.len().checked_sub(1)),
        };
    }
    fn seek(&mut self, target: &[u8]) {
        self.cur = match &self.mem.body {
            Body::List(list) => list.seek(target),
            Body::Run(run) => run_pos(run, Some(run.seek(target))),
        };
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.cur = match &self.mem.body {
            Body::List(list) => list.seek_before(target, true),
            Body::Run(run) => {
                // The last entry ≤ target: one before the first entry > target.
                let i = run.seek(target);
                let at = (i < run.len() && ikey::compare(run.entry(i).0, target) == std::cmp::Ordering::Equal)
                    .then_some(i)
                    .or_else(|| i.checked_sub(1));
                run_pos(run, at)
            }
        };
    }
    fn next(&mut self) {
        if self.cur != 0 {
            self.cur = match &self.mem.body {
                Body::List(list) => list.successor(self.cur),
                Body::Run(run) => run_pos(run, Some(self.cur as usize)),
            };
        }
    }
    fn prev(&mut self) {
        if self.cur != 0 {
            self.cur = match &self.mem.body {
                Body::List(list) => list.predecessor(self.cur),
                Body::Run(run) => run_pos(run, (self.cur as usize - 1).checked_sub(1)),
            };
        }
    }
    fn key(&self) -> &[u8] {
        self.entry().0
    }
    fn value(&self) -> &[u8] {
        self.entry().1
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::format::ikey::InternalKey;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

    /// A memtable of seqnos `1..end` over short keys of `a`..`f` (several versions of most
    /// keys, a fifth of them deletions), with the same entries in a model. It has a small
    /// whole-key filter (64 KiB of memtable: 16 lines), so lookups go through both of its
    /// answers.
    pub(crate) fn random_memtable(rng: &mut impl Rng, end: u64) -> (Arc<Memtable>, BTreeMap<InternalKey, Vec<u8>>) {
        let m = Arc::new(Memtable::with_filter(64 << 10));
        let mut model = BTreeMap::new();
        for seq in 1..end {
            let uk: Vec<u8> = (0..rng.gen_range(1..4)).map(|_| rng.gen_range(b'a'..b'g')).collect();
            let kind = if rng.gen_bool(0.2) {
                ValueKind::Delete
            } else {
                ValueKind::Put
            };
            let v: Vec<u8> = if kind == ValueKind::Put {
                seq.to_le_bytes().to_vec()
            } else {
                Vec::new()
            };
            m.insert(&uk, seq, kind, &v, 1);
            model.insert(InternalKey::new(&uk, seq, kind), v);
        }
        (m, model)
    }

    #[test]
    fn get_and_conformance() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        // Past FILTERED_FROM entries, so lookups ask the filter first.
        let (m, model) = random_memtable(&mut rng, 6000);
        assert_eq!(m.len(), model.len());
        assert!(m.len() >= FILTERED_FROM);
        assert_eq!(m.max_seqno(), 5999);
        for (k, v) in model.iter().step_by(13) {
            let (uk, seq, kind) = ikey::split(k.encoded()).unwrap();
            assert_eq!(m.get(uk, seq), Some((kind, v.clone())));
        }
        assert_eq!(m.get(b"zz", 7000), None);
        // Keys with a `g` were never inserted: the filter rules most out, the skiplist the rest.
        let f = m.filter.as_ref().unwrap();
        let mut ruled_out = 0;
        for a in b'a'..=b'g' {
            for b in b'a'..=b'g' {
                for k in [vec![b'g', a, b], vec![a, b'g', b], vec![a, b, b'g']] {
                    assert_eq!(m.get(&k, 7000), None);
                    ruled_out += usize::from(!f.may_contain(crate::filter::key_hash(&k)));
                }
            }
        }
        assert!(ruled_out > 100, "the filter ruled out {ruled_out} of 147 absent keys");
        for k in model.keys() {
            assert!(f.may_contain(crate::filter::key_hash(k.user_key())));
        }
        let mut it = m.iter();
        crate::iter::conformance::check(&mut it, &model, &mut rng, 300, 20, |r| {
            let uk: Vec<u8> = (0..r.gen_range(1..4)).map(|_| r.gen_range(b'a'..b'h')).collect();
            InternalKey::new(&uk, r.gen_range(0..6100), ValueKind::Put)
        });
    }
}
