//! The memtable: a concurrent skiplist of internal keys, with its memory charge.

use crate::error::Result;
mod key;

#[cfg(test)]
use crate::format::ikey::InternalKey;
use crate::format::ikey::{self, ValueKind};
use crate::iter::InternalIterator;
use crossbeam_skiplist::SkipMap;
use key::{IKey, MemKey};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Bytes charged per entry beyond key and value: skiplist node, tower pointers and the two
/// heap allocations (measured order of magnitude for crossbeam-skiplist on 64-bit).
const ENTRY_OVERHEAD: usize = 80;

/// One memtable. Inserts are concurrent; readers see entries as soon as they are inserted and
/// filter by sequence number.
#[derive(Debug)]
pub struct Memtable {
    map: SkipMap<MemKey, Vec<u8>>,
    bytes: AtomicUsize,
    /// The oldest WAL holding any of this memtable's entries (`u64::MAX` while empty): the
    /// WALs from it on are needed to recover the memtable.
    first_wal: AtomicU64,
    /// Largest seqno inserted.
    max_seqno: AtomicU64,
}

impl Memtable {
    /// An empty memtable.
    pub fn new() -> Self {
        Memtable {
            map: SkipMap::new(),
            bytes: AtomicUsize::new(0),
            first_wal: AtomicU64::new(u64::MAX),
            max_seqno: AtomicU64::new(0),
        }
    }

    /// Inserts one entry logged in WAL `wal`; returns the bytes charged.
    pub fn insert(&self, user_key: &[u8], seqno: u64, kind: ValueKind, value: &[u8], wal: u64) -> usize {
        let charge = user_key.len() + 8 + value.len() + ENTRY_OVERHEAD;
        self.first_wal.fetch_min(wal, Ordering::Relaxed);
        self.map.insert(
            MemKey::from_parts(user_key, ikey::pack_trailer(seqno, kind)),
            value.to_vec(),
        );
        self.bytes.fetch_add(charge, Ordering::Relaxed);
        self.max_seqno.fetch_max(seqno, Ordering::Relaxed);
        charge
    }

    /// Newest version of `user_key` with seqno ≤ `seqno`: `(kind, value)`.
    pub fn get(&self, user_key: &[u8], seqno: u64) -> Option<(ValueKind, Vec<u8>)> {
        self.lookup(&ikey::LookupKey::new(user_key, seqno))
    }

    /// [`get`](Self::get) with a prepared lookup key.
    pub fn lookup(&self, key: &ikey::LookupKey) -> Option<(ValueKind, Vec<u8>)> {
        let e = self
            .map
            .lower_bound(Bound::Included(IKey::new(key.internal_key().encoded())))?;
        let (uk, _, kind) = ikey::split(e.key().bytes())?;
        (uk == key.user_key()).then(|| (kind, e.value().clone()))
    }

    /// Bytes charged.
    pub fn approximate_bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
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
            cur: None,
        }
    }
}

impl Default for Memtable {
    fn default() -> Self {
        Self::new()
    }
}

/// Cursor over a memtable. It holds a copy of the current entry and re-seeks the skiplist to
/// move (O(log n) per step), which keeps it independent of skiplist lifetimes and stable under
/// concurrent inserts.
#[derive(Debug)]
pub struct MemtableIter {
    mem: Arc<Memtable>,
    cur: Option<(MemKey, Vec<u8>)>,
}

type Entry<'a> = crossbeam_skiplist::map::Entry<'a, MemKey, Vec<u8>>;

fn owned(e: Option<Entry<'_>>) -> Option<(MemKey, Vec<u8>)> {
    e.map(|e| (e.key().clone(), e.value().clone()))
}

impl InternalIterator for MemtableIter {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn seek_to_first(&mut self) {
        self.cur = owned(self.mem.map.front());
    }
    fn seek_to_last(&mut self) {
        self.cur = owned(self.mem.map.back());
    }
    fn seek(&mut self, target: &[u8]) {
        self.cur = owned(self.mem.map.lower_bound(Bound::Included(IKey::new(target))));
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.cur = owned(self.mem.map.upper_bound(Bound::Included(IKey::new(target))));
    }
    fn next(&mut self) {
        if let Some((k, _)) = self.cur.take() {
            self.cur = owned(self.mem.map.lower_bound(Bound::Excluded(IKey::new(k.bytes()))));
        }
    }
    fn prev(&mut self) {
        if let Some((k, _)) = self.cur.take() {
            self.cur = owned(self.mem.map.upper_bound(Bound::Excluded(IKey::new(k.bytes()))));
        }
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |(k, _)| k.bytes())
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |(_, v)| v)
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

    #[test]
    fn get_and_conformance() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let m = Arc::new(Memtable::new());
        let mut model = BTreeMap::new();
        for seq in 1..2000u64 {
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
        assert_eq!(m.len(), model.len());
        assert_eq!(m.max_seqno(), 1999);
        for (k, v) in model.iter().step_by(13) {
            let (uk, seq, kind) = ikey::split(k.encoded()).unwrap();
            assert_eq!(m.get(uk, seq), Some((kind, v.clone())));
        }
        assert_eq!(m.get(b"zz", 5000), None);
        let mut it = m.iter();
        crate::iter::conformance::check(&mut it, &model, &mut rng, 300, 20, |r| {
            let uk: Vec<u8> = (0..r.gen_range(1..4)).map(|_| r.gen_range(b'a'..b'h')).collect();
            InternalKey::new(&uk, r.gen_range(0..2100), ValueKind::Put)
        });
    }
}
