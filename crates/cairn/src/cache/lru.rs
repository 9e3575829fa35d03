//! A least-recently-used map bounded by a count of entries (the table cache's open readers):
//! a slab of entries threaded on one intrusive list.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// FxHash (the Firefox/rustc hash, one multiply per word) with a final mix. Cache keys are
/// small integers chosen by us, not by an adversary, so SipHash's DoS resistance buys nothing.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    #[inline]
    fn write_u64(&mut self, w: u64) {
        // 0x517cc1b727220a95 is FxHash's multiplier (from π's fractional bits).
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // Murmur3's finalizer: FxHash's low bits depend only on the inputs' low bits (block
        // offsets aligned to 4 KiB would all share them), and hash tables index by low bits.
        crate::filter::bloom::fmix64(self.0)
    }
}

/// Builds [`FxHasher`]s.
pub type FxBuild = BuildHasherDefault<FxHasher>;

const NIL: u32 = u32::MAX;

#[derive(Debug)]
struct Node<K, V> {
    key: K,
    value: V,
    prev: u32,
    next: u32,
}

/// An evicted or replaced entry.
#[derive(Debug)]
pub struct Evicted<K, V> {
    pub key: K,
    pub value: V,
}

#[derive(Debug)]
pub struct LruShard<K, V> {
    slab: Vec<Option<Node<K, V>>>,
    free: Vec<u32>,
    map: HashMap<K, u32, FxBuild>,
    head: u32, // most recently used
    tail: u32, // least recently used
    capacity: usize,
}

impl<K: Hash + Eq + Clone, V: Clone> LruShard<K, V> {
    /// Holds at most `capacity` entries.
    pub fn new(capacity: usize) -> Self {
        LruShard {
            slab: Vec::new(),
            free: Vec::new(),
            map: HashMap::default(),
            head: NIL,
            tail: NIL,
            capacity,
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    fn node(&self, i: u32) -> Option<&Node<K, V>> {
        self.slab.get(i as usize).and_then(Option::as_ref)
    }

    fn node_mut(&mut self, i: u32) -> Option<&mut Node<K, V>> {
        self.slab.get_mut(i as usize).and_then(Option::as_mut)
    }

    fn unlink(&mut self, i: u32) {
        let Some(n) = self.node(i) else { return };
        let (prev, next) = (n.prev, n.next);
        match self.node_mut(prev) {
            Some(p) => p.next = next,
            None => self.head = next,
        }
        match self.node_mut(next) {
            Some(nx) => nx.prev = prev,
            None => self.tail = prev,
        }
    }

    fn push_front(&mut self, i: u32) {
        let head = self.head;
        let Some(n) = self.node_mut(i) else { return };
        n.prev = NIL;
        n.next = head;
        match self.node_mut(head) {
            Some(h) => h.prev = i,
            None => self.tail = i,
        }
        self.head = i;
    }

    /// Looks up `key`, making it the most recently used.
    pub fn get(&mut self, key: &K) -> Option<V> {
        let i = *self.map.get(key)?;
        self.unlink(i);
        self.push_front(i);
        self.node(i).map(|n| n.value.clone())
    }

    fn take(&mut self, i: u32) -> Option<Evicted<K, V>> {
        self.unlink(i);
        let n = self.slab.get_mut(i as usize)?.take()?;
        self.map.remove(&n.key);
        self.free.push(i);
        Some(Evicted { key: n.key, value: n.value })
    }

    /// Removes `key`.
    pub fn remove(&mut self, key: &K) -> Option<Evicted<K, V>> {
        let i = *self.map.get(key)?;
        self.take(i)
    }

    /// Inserts (or replaces) an entry as the most recently used, then evicts the least
    /// recently used beyond capacity. Returns what was evicted or replaced.
    pub fn insert(&mut self, key: K, value: V) -> Vec<Evicted<K, V>> {
        let mut out: Vec<_> = self.remove(&key).into_iter().collect();
        if self.capacity == 0 {
            return out;
        }
        let node = Node {
            key: key.clone(),
            value,
            prev: NIL,
            next: NIL,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(node);
                i
            }
            None => {
                self.slab.push(Some(node));
                (self.slab.len() - 1) as u32
            }
        };
        self.map.insert(key, i);
        self.push_front(i);
        while self.map.len() > self.capacity {
            match self.take(self.tail) {
                Some(e) => out.push(e),
                None => break,
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_order_capacity_and_replacement() {
        let mut s: LruShard<u32, u32> = LruShard::new(5);
        for k in 0..5 {
            assert!(s.insert(k, k).is_empty());
        }
        s.get(&0); // 0 becomes MRU: 1 is now the LRU
        let ev = s.insert(9, 9);
        assert_eq!(ev.iter().map(|e| e.key).collect::<Vec<_>>(), vec![1]);
        assert_eq!(s.len(), 5);
        // Replacement reports the old value and evicts nothing else.
        let ev = s.insert(9, 90);
        assert_eq!((ev.len(), ev[0].value), (1, 9));
        assert_eq!(s.get(&9), Some(90));
        assert!(s.remove(&9).is_some());
        assert!(s.get(&9).is_none());
        assert_eq!(s.len(), s.map.len());
        assert!(LruShard::new(0).insert(1, 1).is_empty(), "a zero-capacity map holds nothing");
    }
}
