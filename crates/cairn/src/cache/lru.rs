//! One LRU shard: a slab of entries threaded on two intrusive lists (high and low priority),
//! charged in caller-defined units (bytes for blocks, 1 for tables).
//!
//! Eviction follows RocksDB's LRU cache with a high-priority pool: high-priority entries stay
//! in their own list while that list's charge is within `high_pri_capacity`; the excess is
//! demoted (oldest first) to the low-priority list; eviction takes the least recently used
//! low-priority entry first, then high-priority ones.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// FxHash (the Firefox/rustc hash): one multiply per word. Cache keys are small integers
/// chosen by us, not by an adversary, so SipHash's DoS resistance buys nothing here.
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
        self.0
    }
}

type FxBuild = BuildHasherDefault<FxHasher>;

/// Cache priority of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// Meta blocks (index, filter units): evicted last.
    High,
    /// Data blocks.
    Low,
}

const NIL: u32 = u32::MAX;

#[derive(Debug)]
struct Node<K, V> {
    key: K,
    value: V,
    charge: usize,
    high: bool, // currently on the high-priority list
    prev: u32,
    next: u32,
}

#[derive(Debug, Clone, Copy)]
struct List {
    head: u32, // most recently used
    tail: u32, // least recently used
    charge: usize,
}

impl List {
    const EMPTY: List = List {
        head: NIL,
        tail: NIL,
        charge: 0,
    };
}

/// An evicted or replaced entry.
#[derive(Debug)]
pub struct Evicted<K, V> {
    pub key: K,
    pub value: V,
    pub charge: usize,
}

#[derive(Debug)]
pub struct LruShard<K, V> {
    slab: Vec<Option<Node<K, V>>>,
    free: Vec<u32>,
    map: HashMap<K, u32, FxBuild>,
    lists: [List; 2], // [high, low]
    capacity: usize,
    high_pri_capacity: usize,
}

impl<K: Hash + Eq + Clone, V: Clone> LruShard<K, V> {
    pub fn new(capacity: usize, high_pri_ratio: f64) -> Self {
        let mut s = LruShard {
            slab: Vec::new(),
            free: Vec::new(),
            map: HashMap::default(),
            lists: [List::EMPTY; 2],
            capacity: 0,
            high_pri_capacity: 0,
        };
        s.set_capacity_no_evict(capacity, high_pri_ratio);
        s
    }

    fn set_capacity_no_evict(&mut self, capacity: usize, high_pri_ratio: f64) {
        self.capacity = capacity;
        self.high_pri_capacity = (capacity as f64 * high_pri_ratio.clamp(0.0, 1.0)) as usize;
    }

    pub fn usage(&self) -> usize {
        self.lists[0].charge + self.lists[1].charge
    }

    pub fn high_pri_usage(&self) -> usize {
        self.lists[0].charge
    }

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
        let (prev, next, charge, li) = (n.prev, n.next, n.charge, usize::from(!n.high));
        if let Some(p) = self.node_mut(prev) {
            p.next = next;
        } else {
            self.lists[li].head = next;
        }
        if let Some(nx) = self.node_mut(next) {
            nx.prev = prev;
        } else {
            self.lists[li].tail = prev;
        }
        self.lists[li].charge -= charge;
    }

    fn push_front(&mut self, i: u32, high: bool) {
        let li = usize::from(!high);
        let head = self.lists[li].head;
        let Some(n) = self.node_mut(i) else { return };
        n.high = high;
        n.prev = NIL;
        n.next = head;
        let charge = n.charge;
        if let Some(h) = self.node_mut(head) {
            h.prev = i;
        } else {
            self.lists[li].tail = i;
        }
        self.lists[li].head = i;
        self.lists[li].charge += charge;
    }

    /// Looks up `key`, making it the most recently used.
    pub fn get(&mut self, key: &K) -> Option<V> {
        let i = *self.map.get(key)?;
        let high = self.node(i)?.high;
        self.unlink(i);
        self.push_front(i, high);
        self.node(i).map(|n| n.value.clone())
    }

    fn take(&mut self, i: u32) -> Option<Evicted<K, V>> {
        self.unlink(i);
        let n = self.slab.get_mut(i as usize)?.take()?;
        self.map.remove(&n.key);
        self.free.push(i);
        Some(Evicted {
            key: n.key,
            value: n.value,
            charge: n.charge,
        })
    }

    /// Removes `key`.
    pub fn remove(&mut self, key: &K) -> Option<Evicted<K, V>> {
        let i = *self.map.get(key)?;
        self.take(i)
    }

    /// Inserts (or replaces) an entry, then evicts down to capacity. An entry whose charge
    /// exceeds the whole capacity is not cached. Returns what was evicted or replaced.
    pub fn insert(&mut self, key: K, value: V, charge: usize, prio: Priority) -> Vec<Evicted<K, V>> {
        let mut out = Vec::new();
        if let Some(old) = self.remove(&key) {
            out.push(old);
        }
        if charge > self.capacity {
            return out;
        }
        let node = Node {
            key: key.clone(),
            value,
            charge,
            high: false,
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
        self.push_front(i, prio == Priority::High);
        self.enforce(&mut out);
        out
    }

    fn enforce(&mut self, out: &mut Vec<Evicted<K, V>>) {
        // Demote the oldest high-priority entries beyond the pool's share.
        while self.lists[0].charge > self.high_pri_capacity {
            let t = self.lists[0].tail;
            if t == NIL {
                break;
            }
            self.unlink(t);
            self.push_front(t, false);
        }
        while self.usage() > self.capacity {
            let t = if self.lists[1].tail != NIL {
                self.lists[1].tail
            } else {
                self.lists[0].tail
            };
            match self.take(t) {
                Some(e) => out.push(e),
                None => break,
            }
        }
    }

    /// Changes the capacity; shrinking evicts at once.
    pub fn set_capacity(&mut self, capacity: usize, high_pri_ratio: f64) -> Vec<Evicted<K, V>> {
        self.set_capacity_no_evict(capacity, high_pri_ratio);
        let mut out = Vec::new();
        self.enforce(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_order_priority_and_resize() {
        let mut s: LruShard<u32, u32> = LruShard::new(100, 0.5);
        for k in 0..5 {
            assert!(s.insert(k, k, 20, Priority::Low).is_empty());
        }
        assert_eq!(s.usage(), 100);
        s.get(&0); // 0 becomes MRU: 1 is now the LRU
        let ev = s.insert(9, 9, 20, Priority::High);
        assert_eq!(ev.iter().map(|e| e.key).collect::<Vec<_>>(), vec![1]);
        // High-priority entries survive low-priority pressure.
        for k in 10..20 {
            s.insert(k, k, 20, Priority::Low);
        }
        assert!(s.get(&9).is_some());
        assert_eq!(s.high_pri_usage(), 20);
        // Over the high pool's share, the oldest high entry is demoted then evicted first.
        s.insert(30, 30, 20, Priority::High);
        s.insert(31, 31, 20, Priority::High);
        s.insert(32, 32, 20, Priority::High);
        assert!(s.high_pri_usage() <= 50);
        // Shrinking evicts immediately.
        let ev = s.set_capacity(40, 0.5);
        assert!(!ev.is_empty());
        assert!(s.usage() <= 40);
        // Too large for the cache: not inserted.
        assert!(s.insert(99, 99, 41, Priority::Low).is_empty());
        assert!(s.get(&99).is_none());
        // Replacement reports the old value.
        s.insert(32, 320, 10, Priority::Low);
        let ev = s.insert(32, 321, 10, Priority::Low);
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].value, 320);
        assert_eq!(s.get(&32), Some(321));
        assert!(s.remove(&32).is_some());
        assert_eq!(s.len(), s.map.len());
    }
}
