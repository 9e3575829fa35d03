//! The shared block cache.

use super::lru::{Evicted, LruShard, Priority};
use crate::filter::BloomFilter;
use crate::sst::Block;
use crate::stats::stripe::{Stripe, Striped};
use crate::stats::BlockKind;
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// Identifies a cached block: a per-open-table id (unique within the process, so several
/// databases can share one cache) and the block's file offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockKey {
    /// [`TableReader::cache_id`](crate::sst::TableReader::cache_id).
    pub table: u64,
    /// Offset of the block in its file.
    pub offset: u64,
}

/// What the cache holds.
#[derive(Debug, Clone)]
pub enum CachedBlock {
    /// A decoded data (or index) block.
    Block(Arc<Block>),
    /// A decoded filter unit.
    Filter(Arc<BloomFilter>),
}

/// Called (outside any cache lock) for each entry evicted for lack of space, with its key,
/// kind and charge. The memory tuner's ghost cache subscribes here.
pub type EvictionListener = Arc<dyn Fn(BlockKey, BlockKind, usize) + Send + Sync>;

#[derive(Debug, Clone)]
struct Entry {
    value: CachedBlock,
    kind: BlockKind,
}

/// Hit, miss, insert and eviction counts for one block kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheCounters {
    /// Lookups that found the block.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Blocks inserted.
    pub inserts: u64,
    /// Blocks evicted for space.
    pub evictions: u64,
}

#[derive(Debug, Default)]
#[repr(align(64))]
struct AtomicCounters {
    hits: AtomicU64,
    misses: AtomicU64,
    inserts: AtomicU64,
    evictions: AtomicU64,
}

/// Smallest per-shard capacity worth splitting for (RocksDB uses the same 512 KiB floor).
const MIN_SHARD_BYTES: usize = 512 * 1024;
const MAX_SHARDS: usize = 64;

/// A sharded LRU block cache charged in bytes.
pub struct BlockCache {
    shards: Box<[Mutex<LruShard<BlockKey, Entry>>]>,
    capacity: AtomicUsize,
    /// Part of the capacity reserved for memory held outside the cache.
    reserved: AtomicUsize,
    high_pri_ratio: f64,
    /// Striped per CPU: a hit writes only its core's line.
    counters: Striped<[AtomicCounters; 6]>,
    listener: RwLock<Option<EvictionListener>>,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.capacity())
            .field("usage", &self.usage())
            .field("shards", &self.shards.len())
            .finish()
    }
}

impl BlockCache {
    /// A cache of `capacity` bytes, reserving up to `high_pri_ratio` of it for high-priority
    /// (meta) blocks. The shard count is fixed at creation from the initial capacity.
    pub fn new(capacity: usize, high_pri_ratio: f64) -> Self {
        let n = (capacity / MIN_SHARD_BYTES).clamp(1, MAX_SHARDS);
        let n = if n.is_power_of_two() {
            n
        } else {
            n.next_power_of_two() / 2
        };
        let per = capacity / n;
        BlockCache {
            shards: (0..n).map(|_| Mutex::new(LruShard::new(per, high_pri_ratio))).collect(),
            capacity: AtomicUsize::new(capacity),
            reserved: AtomicUsize::new(0),
            high_pri_ratio,
            counters: Default::default(),
            listener: RwLock::new(None),
        }
    }

    #[inline]
    fn shard(&self, key: &BlockKey) -> &Mutex<LruShard<BlockKey, Entry>> {
        let h = key
            .table
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .wrapping_add(key.offset)
            .wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
        &self.shards[(h >> 40) as usize % self.shards.len()]
    }

    /// Looks a block up, counting a hit or a miss for `kind`.
    pub fn get(&self, key: &BlockKey, kind: BlockKind) -> Option<CachedBlock> {
        let found = self.shard(key).lock().get(key);
        let c = &self.counters.at(Stripe::current())[kind as usize];
        match found {
            Some(e) => {
                c.hits.fetch_add(1, Relaxed);
                Some(e.value)
            }
            None => {
                c.misses.fetch_add(1, Relaxed);
                None
            }
        }
    }

    /// Inserts a block charged `charge` bytes.
    pub fn insert(&self, key: BlockKey, value: CachedBlock, kind: BlockKind, charge: usize, prio: Priority) {
        self.counters.at(Stripe::current())[kind as usize].inserts.fetch_add(1, Relaxed);
        let evicted = self.shard(&key).lock().insert(key, Entry { value, kind }, charge, prio);
        self.report(evicted, Some(key));
    }

    /// Drops a block (e.g. its file was deleted).
    pub fn erase(&self, key: &BlockKey) {
        self.shard(key).lock().remove(key);
    }

    fn report(&self, evicted: Vec<Evicted<BlockKey, Entry>>, replaced: Option<BlockKey>) {
        if evicted.is_empty() {
            return;
        }
        let listener = self.listener.read().clone();
        for e in evicted {
            if Some(e.key) == replaced {
                continue; // a replacement is not an eviction for space
            }
            self.counters.at(Stripe::current())[e.value.kind as usize].evictions.fetch_add(1, Relaxed);
            if let Some(l) = &listener {
                l(e.key, e.value.kind, e.charge);
            }
        }
    }

    /// Total capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity.load(Relaxed)
    }

    /// Resizes the cache; shrinking evicts at once (eviction listeners are called).
    pub fn set_capacity(&self, capacity: usize) {
        self.capacity.store(capacity, Relaxed);
        self.apply_capacity();
    }

    /// Reserves `bytes` of the capacity for memory held outside the cache (index blocks pinned
    /// by table readers, when they are charged to the cache): blocks are evicted to make room.
    /// Undone by [`release`](Self::release).
    pub fn reserve(&self, bytes: usize) {
        self.reserved.fetch_add(bytes, Relaxed);
        self.apply_capacity();
    }

    /// Gives back a reservation.
    pub fn release(&self, bytes: usize) {
        // Saturating: a release never exceeds its reservation, but never wrap if it did.
        let _ = self
            .reserved
            .fetch_update(Relaxed, Relaxed, |r| Some(r.saturating_sub(bytes)));
        self.apply_capacity();
    }

    /// Bytes reserved for memory held outside the cache.
    pub fn reserved(&self) -> usize {
        self.reserved.load(Relaxed)
    }

    fn apply_capacity(&self) {
        let usable = self.capacity().saturating_sub(self.reserved());
        let per = usable / self.shards.len();
        for s in self.shards.iter() {
            let evicted = s.lock().set_capacity(per, self.high_pri_ratio);
            self.report(evicted, None);
        }
    }

    /// Bytes currently charged.
    pub fn usage(&self) -> usize {
        self.shards.iter().map(|s| s.lock().usage()).sum()
    }

    /// Bytes charged to high-priority entries.
    pub fn high_pri_usage(&self) -> usize {
        self.shards.iter().map(|s| s.lock().high_pri_usage()).sum()
    }

    /// Entries cached.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Subscribes to evictions (replaces any earlier listener).
    pub fn set_eviction_listener(&self, l: Option<EvictionListener>) {
        *self.listener.write() = l;
    }

    /// Counters of one block kind.
    pub fn counters(&self, kind: BlockKind) -> CacheCounters {
        let k = kind as usize;
        CacheCounters {
            hits: self.counters.sum(|c| c[k].hits.load(Relaxed)),
            misses: self.counters.sum(|c| c[k].misses.load(Relaxed)),
            inserts: self.counters.sum(|c| c[k].inserts.load(Relaxed)),
            evictions: self.counters.sum(|c| c[k].evictions.load(Relaxed)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter() -> CachedBlock {
        let bytes = crate::filter::bloom::build(&[1, 2, 3], 10.0, 0);
        CachedBlock::Filter(Arc::new(BloomFilter::decode(bytes).unwrap()))
    }

    #[test]
    fn counts_hits_misses_and_reports_evictions() {
        let cache = BlockCache::new(10_000, 0.5);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        cache.set_eviction_listener(Some(Arc::new(move |k, kind, charge| {
            s2.lock().push((k.offset, kind, charge));
        })));
        for i in 0..20u64 {
            let key = BlockKey { table: 1, offset: i };
            assert!(cache.get(&key, BlockKind::FilterUnit).is_none());
            cache.insert(key, filter(), BlockKind::FilterUnit, 1000, Priority::Low);
        }
        assert!(cache.usage() <= 10_000);
        let c = cache.counters(BlockKind::FilterUnit);
        assert_eq!((c.misses, c.inserts), (20, 20));
        assert_eq!(c.evictions, 10);
        assert_eq!(seen.lock().len(), 10);
        assert!(cache
            .get(&BlockKey { table: 1, offset: 19 }, BlockKind::FilterUnit)
            .is_some());
        assert_eq!(cache.counters(BlockKind::FilterUnit).hits, 1);
        cache.set_capacity(3000);
        assert!(cache.usage() <= 3000);
        assert_eq!(seen.lock().len(), 17);
        // A reservation shrinks the room for blocks; releasing it gives the room back.
        cache.reserve(2000);
        assert!(cache.usage() <= 1000, "{}", cache.usage());
        cache.release(2000);
        assert_eq!(cache.reserved(), 0);
        cache.insert(BlockKey { table: 2, offset: 0 }, filter(), BlockKind::FilterUnit, 1000, Priority::Low);
        cache.insert(BlockKey { table: 2, offset: 1 }, filter(), BlockKind::FilterUnit, 1000, Priority::Low);
        assert!(cache.usage() >= 2000);
        assert_eq!(cache.counters(BlockKind::Data), CacheCounters::default());
    }

    #[test]
    fn shard_count_follows_capacity() {
        assert_eq!(BlockCache::new(0, 0.5).shards.len(), 1);
        assert_eq!(BlockCache::new(8 << 20, 0.5).shards.len(), 16);
        assert_eq!(BlockCache::new(3 << 20, 0.5).shards.len(), 4);
        assert_eq!(BlockCache::new(1 << 40, 0.5).shards.len(), 64);
    }
}
