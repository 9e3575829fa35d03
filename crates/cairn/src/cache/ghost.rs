//! The ghost cache (Luo & Carey §5.3): the ids of the blocks most recently evicted from the
//! block cache, up to a simulated capacity in bytes, and nothing else. A block read from
//! storage whose id is here would have been a hit in a cache larger by that capacity: the
//! memory tuner's read'(x) is the count of such reads per simulated byte.
//!
//! It subscribes to the block cache's evictions ([`GhostCache::attach`]). Ids are kept in
//! eviction order per shard (a FIFO: the oldest eviction leaves first) with their charges;
//! memory is about 40 bytes per id, so ≈ 1.3 MB for the paper's 128 MiB of 4 KiB blocks.
//! A probe takes one shard's mutex: it happens only on a cache miss, which reads storage.

use super::{BlockKey, ClockCache};
use crate::stats::BlockKind;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

const SHARDS: usize = 16;

#[derive(Debug, Default)]
struct Shard {
    /// Key → (generation, charge) of its live entry.
    ids: HashMap<BlockKey, (u64, usize)>,
    /// Eviction order; entries whose generation no longer matches `ids` are stale.
    order: VecDeque<(BlockKey, u64)>,
    generation: u64,
    bytes: usize,
    capacity: usize,
}

impl Shard {
    fn trim(&mut self) {
        while self.bytes > self.capacity {
            let Some((k, g)) = self.order.pop_front() else {
                break;
            };
            if self.ids.get(&k).is_some_and(|&(live, _)| live == g) {
                if let Some((_, charge)) = self.ids.remove(&k) {
                    self.bytes -= charge;
                }
            }
        }
        // Stale entries (ids taken by probes) are dropped once they are most of the queue.
        if self.order.len() > 2 * self.ids.len() + 64 {
            let ids = &self.ids;
            self.order.retain(|(k, g)| ids.get(k).is_some_and(|&(live, _)| live == *g));
        }
    }
}

/// Ids of recently evicted blocks within a simulated capacity.
#[derive(Debug)]
pub struct GhostCache {
    shards: Box<[Mutex<Shard>]>,
    capacity: usize,
}

impl GhostCache {
    /// A ghost of `capacity` simulated bytes.
    pub fn new(capacity: usize) -> Self {
        GhostCache {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        capacity: capacity / SHARDS,
                        ..Shard::default()
                    })
                })
                .collect(),
            capacity,
        }
    }

    /// A ghost subscribed to `cache`'s evictions (until [`detach`](Self::detach)); returns it
    /// with the subscription's id.
    pub fn attach<V: Clone + Send + Sync + 'static>(cache: &ClockCache<V>, capacity: usize) -> (Arc<GhostCache>, u64) {
        let ghost = Arc::new(GhostCache::new(capacity));
        let g = ghost.clone();
        let id = cache.add_eviction_listener(Arc::new(move |key, _kind: BlockKind, charge| g.evicted(key, charge)));
        (ghost, id)
    }

    /// The simulated capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn shard(&self, key: &BlockKey) -> &Mutex<Shard> {
        let h = key.table.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ key.offset.wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
        &self.shards[(h >> 59) as usize % SHARDS]
    }

    /// Block `key` of `charge` bytes left the real cache.
    pub fn evicted(&self, key: BlockKey, charge: usize) {
        let mut sh = self.shard(&key).lock();
        if charge > sh.capacity {
            return;
        }
        sh.generation += 1;
        let g = sh.generation;
        if let Some((_, old)) = sh.ids.insert(key, (g, charge)) {
            sh.bytes -= old;
        }
        sh.bytes += charge;
        sh.order.push_back((key, g));
        sh.trim();
    }

    /// Whether block `key`, about to be read from storage, was evicted recently enough for the
    /// simulated capacity to hold it (a read a larger cache would have saved). With `taken`
    /// the id leaves: the read puts the block back in the real cache.
    pub fn probe(&self, key: &BlockKey, taken: bool) -> bool {
        let mut sh = self.shard(key).lock();
        if !taken {
            return sh.ids.contains_key(key);
        }
        match sh.ids.remove(key) {
            Some((_, charge)) => {
                sh.bytes -= charge;
                true
            }
            None => false,
        }
    }

    /// Ids held and their simulated bytes.
    pub fn usage(&self) -> (usize, usize) {
        self.shards.iter().fold((0, 0), |(n, b), s| {
            let s = s.lock();
            (n + s.ids.len(), b + s.bytes)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::Priority;

    fn key(offset: u64) -> BlockKey {
        BlockKey { table: 1, offset }
    }

    #[test]
    fn remembers_the_most_recent_evictions_within_its_capacity() {
        // 16 shards of 1000 simulated bytes each.
        let g = GhostCache::new(16_000);
        for o in 0..1000 {
            g.evicted(key(o), 100);
        }
        let (ids, bytes) = g.usage();
        assert!(ids <= 160 && bytes <= 16_000, "{ids} ids, {bytes} bytes");
        // The newest are all there; the oldest are gone.
        assert!((990..1000).all(|o| g.probe(&key(o), false)));
        assert!((0..100).all(|o| !g.probe(&key(o), false)));
        // A probe that takes the id removes it; one that does not leaves it.
        assert!(g.probe(&key(999), true));
        assert!(!g.probe(&key(999), true));
        assert!(g.probe(&key(998), false) && g.probe(&key(998), false));
        // Evicted again: counted once, the newest position.
        g.evicted(key(998), 100);
        assert_eq!(g.usage().1, g.shards.iter().map(|s| s.lock().bytes).sum::<usize>());
        for s in g.shards.iter() {
            let s = s.lock();
            assert_eq!(s.ids.values().map(|&(_, c)| c).sum::<usize>(), s.bytes);
            assert!(s.order.len() <= 2 * s.ids.len() + 64 + 1);
        }
    }

    #[test]
    fn follows_the_block_cache_evictions() {
        let cache = ClockCache::<Arc<u64>>::new(4096, 0.0);
        let (g, id) = GhostCache::attach(&cache, 1 << 20);
        let block = || Arc::new(7u64);
        for o in 0..20 {
            cache.insert(key(o), block(), BlockKind::Data, 1000, Priority::Low);
        }
        // 4 fit; the rest of the first 20 were evicted into the ghost.
        let evicted = (0..20).filter(|&o| g.probe(&key(o), false)).count();
        assert_eq!(evicted, 20 - cache.len());
        cache.remove_eviction_listener(id);
        cache.insert(key(100), block(), BlockKind::Data, 1000, Priority::Low);
        cache.insert(key(101), block(), BlockKind::Data, 1000, Priority::Low);
        cache.insert(key(102), block(), BlockKind::Data, 1000, Priority::Low);
        cache.insert(key(103), block(), BlockKind::Data, 1000, Priority::Low);
        cache.insert(key(104), block(), BlockKind::Data, 1000, Priority::Low);
        assert!(!(100..105).any(|o| g.probe(&key(o), false)), "detached");
    }
}
