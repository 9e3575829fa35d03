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

use crate::compaction::iter::CompactionFilter;
use crate::format::ikey;
use crate::iter::InternalIterator;
use crate::memory::pages::PageVec;
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

    /// Appends `other`, whose keys all sort after this run's.
    fn append(&mut self, other: SortedRun) {
        let base = self.data.len() as u32;
        self.offsets.extend(other.offsets.iter().map(|o| o + base));
        self.data.extend_from_slice(&other.data);
    }
}

/// Builds runs from `input` (positioned anywhere; read from its first entry) keeping what
/// `filter` keeps, cutting a run once it reaches `target_bytes` — never between two versions of
/// one user key, so the runs of a level never share a user key. `scratch` tracks the bytes
/// built so far (the merge's memory, charged to write memory while it runs).
pub fn build_runs(
    input: &mut dyn InternalIterator,
    filter: &mut CompactionFilter<'_>,
    target_bytes: usize,
    scratch: &AtomicUsize,
) -> crate::error::Result<Vec<SortedRun>> {
    // Runs are built in place: `data` is reserved once (growing it by doubling would copy every
    // run about once more), with room for the entry that passes the target, capped for callers
    // that want one run of everything.
    let reserve = target_bytes.min(64 << 20);
    let reserve = reserve + reserve / 16;
    let fresh = || SortedRun {
        data: PageVec::with_capacity(reserve),
        ..SortedRun::default()
    };
    let mut out: Vec<SortedRun> = Vec::new();
    let mut cur = fresh();
    let mut done_bytes = 0usize;
    let mut charged = 0usize;
    input.seek_to_first();
    while input.valid() {
        let (k, v) = (input.key(), input.value());
        if filter.keep(k) {
            let entry = 8 + k.len() + v.len();
            let full = cur.data.len() >= target_bytes || cur.data.len() + entry > u32::MAX as usize;
            if full && !cur.is_empty() && cur.largest() != ikey::user_key(k) {
                let run = std::mem::replace(&mut cur, fresh()).shrink();
                done_bytes += run.bytes();
                out.push(run);
            }
            cur.push(k, v);
            recharge(scratch, &mut charged, done_bytes + cur.bytes());
        }
        input.next();
    }
    if let Err(e) = input.status() {
        recharge(scratch, &mut charged, 0);
        return Err(e);
    }
    if !cur.is_empty() {
        // A small remainder joins the run before it rather than stay a small run of its own
        // (merges cut one run of a level at a time: remainders would fragment the level).
        match out.last_mut() {
            Some(last) if cur.data.len() < target_bytes / 2 && last.data.len() + cur.data.len() <= u32::MAX as usize => {
                let mut joined = std::mem::take(last);
                joined.append(cur);
                *last = joined.shrink();
            }
            _ => out.push(cur.shrink()),
        }
    }
    recharge(scratch, &mut charged, out.iter().map(SortedRun::bytes).sum());
    Ok(out)
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
        let scratch = AtomicUsize::new(0);
        // A snapshot at 0 keeps every version.
        let mut keep_all = CompactionFilter::new(0, |_| false);
        let runs = build_runs(&mut m.iter(), &mut keep_all, 4096, &scratch).unwrap();
        assert!(runs.len() > 3);
        let sizes: Vec<usize> = runs.iter().map(|r| r.data.len()).collect();
        assert!(sizes.iter().all(|&s| s >= 2048), "no small remainder run: {sizes:?}");
        assert_eq!(runs.iter().map(SortedRun::len).sum::<usize>(), 1000);
        assert_eq!(scratch.load(AtomicOrdering::Relaxed), runs.iter().map(SortedRun::bytes).sum::<usize>());
        for w in runs.windows(2) {
            assert!(w[0].largest() < w[1].smallest(), "runs share no user key");
        }
        // Newest version only, with the last seqno as the oldest snapshot.
        let mut newest = CompactionFilter::new(1000, |_| false);
        let one = build_runs(&mut m.iter(), &mut newest, usize::MAX, &AtomicUsize::new(0)).unwrap();
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
}
