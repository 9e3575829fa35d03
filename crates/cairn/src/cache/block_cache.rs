//! The shared block cache: a CLOCK cache whose hit path takes no lock.
//!
//! Lookups go through a concurrent hash map (`papaya`: lock-free reads, epoch-based
//! reclamation), so a hit is a map probe, a clone of the block's `Arc` and, at most, one store
//! to the entry's clock counter — never a mutex, and never a write to a line other readers of
//! other blocks touch. Inserts, erases and evictions take the mutex of one shard (by key hash),
//! which keeps the shard's entries in a ring swept by a CLOCK hand (RocksDB's HyperClockCache
//! makes the same trade): an entry's counter is set on every hit — 3 for high-priority (meta)
//! entries while they fit the high-priority share, 1 otherwise — and the hand decrements
//! counters until it finds one at 0 to evict, so meta blocks survive three sweeps and data
//! blocks one. A data block enters at 0: it survives the hand only if it is hit before the
//! hand reaches it, so blocks read once (a false positive's, a cold key's) leave before blocks
//! that were read again, as they do from an LRU list. Entering at 1 gave one-time blocks two
//! sweeps: at 5% of the data as cache, uniform lookups at 2 bits per key, the data hit rate
//! was 28.7% against RocksDB's 35.7% with the same bytes of data cached; entering at 0, 31.6%.
//! A new entry joins the ring after room is made, so an insert never evicts what it inserts.
//! Charges are exact bytes; capacity changes and reservations evict at once; evictions for
//! space are reported to the listener outside any lock.

use super::lru::FxBuild;
use crate::filter::BloomFilter;
use crate::sst::Block;
use crate::stats::stripe::{Stripe, Striped};
use crate::stats::BlockKind;
use parking_lot::{Mutex, RwLock};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// Identifies a cached block: a per-open-table id (unique within the process, so several
/// databases can share one cache) and the block's file offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockKey {
    /// The table's cache id (unique per open table reader).
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

/// Cache priority of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// Meta blocks (index, filter units): evicted last.
    High,
    /// Data blocks.
    Low,
}

/// One cached block (held in the map itself: a hit follows no further pointer).
#[derive(Debug)]
struct Slot {
    value: CachedBlock,
    kind: BlockKind,
    charge: usize,
    high: bool,
    /// CLOCK counter: sweeps left before eviction.
    clock: AtomicU8,
    /// Which insert of its key this is: tells the key's live queue entry from stale ones.
    generation: u64,
}

/// Sweeps a high-priority entry survives (RocksDB's HyperClockCache gives high priority 3).
const HIGH_CLOCK: u8 = 3;
const LOW_CLOCK: u8 = 1;

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

/// Smallest per-shard capacity worth splitting for. RocksDB splits down to 512 KiB, where one
/// 64 MiB table's filter block (~700 KB at 10 bits per key) is larger than a shard and is then
/// never cached: every lookup reads it from storage. 2 MiB holds a few of them.
const MIN_SHARD_BYTES: usize = 2 << 20;
const MAX_SHARDS: usize = 64;

/// One shard's eviction state: its keys in CLOCK order (a FIFO queue where a swept entry
/// with sweeps left goes to the back: the CLOCK hand is the queue's front) and their charges.
/// A key erased or replaced leaves a stale queue entry (its generation no longer matches the
/// map's), dropped when the hand reaches it or when stale entries are over half the queue.
#[derive(Debug, Default)]
struct Shard {
    queue: VecDeque<(BlockKey, u64)>,
    /// Stale entries in `queue`.
    stale: usize,
    generation: u64,
    usage: usize,
    high_usage: usize,
    /// `usage` by block kind.
    kind_usage: [usize; 6],
    capacity: usize,
    high_capacity: usize,
}

/// An entry evicted for space: key, kind, charge.
type Evicted = (BlockKey, BlockKind, usize);

impl Shard {
    /// Takes out the charge of `slot`, removed from the map (its queue entry is now stale).
    fn unlink(&mut self, slot: &Slot) {
        self.usage -= slot.charge;
        self.kind_usage[slot.kind as usize] -= slot.charge;
        if slot.high {
            self.high_usage -= slot.charge;
        }
        self.stale += 1;
    }

    fn is_live(map: &Map<'_>, key: &BlockKey, generation: u64) -> bool {
        map.get(key).is_some_and(|s| s.generation == generation)
    }

    /// Drops stale queue entries once they are over half the queue.
    fn compact(&mut self, map: &Map<'_>) {
        if self.stale > 64 && self.stale > self.queue.len() / 2 {
            self.queue.retain(|(k, g)| Self::is_live(map, k, *g));
            self.stale = 0;
        }
    }

    /// Evicts the next entry whose counter is 0, decrementing the others on the way; `None`
    /// when the shard holds no entry.
    fn evict(&mut self, map: &Map<'_>) -> Option<Evicted> {
        while let Some((k, g)) = self.queue.pop_front() {
            let Some(s) = map.get(&k).filter(|s| s.generation == g) else {
                self.stale = self.stale.saturating_sub(1);
                continue;
            };
            let c = s.clock.load(Relaxed);
            if c > 0 {
                s.clock.store(c - 1, Relaxed);
                self.queue.push_back((k, g));
                continue;
            }
            let out = (k, s.kind, s.charge);
            if let Some(s) = map.remove(&k) {
                self.unlink(s);
                self.stale -= 1; // its queue entry is already gone
            }
            return Some(out);
        }
        None
    }
}

type Map<'a> = papaya::HashMapRef<'a, BlockKey, Slot, FxBuild, papaya::LocalGuard<'a>>;

/// A sharded CLOCK block cache charged in bytes, with lock-free hits.
pub struct BlockCache {
    map: papaya::HashMap<BlockKey, Slot, FxBuild>,
    shards: Box<[Mutex<Shard>]>,
    capacity: AtomicUsize,
    /// Part of the capacity reserved for memory held outside the cache.
    reserved: AtomicUsize,
    high_pri_ratio: f64,
    /// Striped per thread: a hit writes only its own line.
    counters: Striped<[AtomicCounters; 6]>,
    /// Eviction listeners by id (0: the one [`set_eviction_listener`](Self::set_eviction_listener)
    /// manages).
    listeners: RwLock<Vec<(u64, EvictionListener)>>,
    next_listener: AtomicU64,
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

/// An associated function that is `pub` with the `test-util` feature (the crate's benchmarks
/// and tests drive the cache directly) and crate-private otherwise: users share a cache, size
/// it and read its counters; the engine alone inserts and looks up blocks.
macro_rules! internal_fn {
    ($(#[$m:meta])* fn $($rest:tt)*) => {
        #[cfg(feature = "test-util")]
        #[doc(hidden)]
        $(#[$m])* pub fn $($rest)*
        #[cfg(not(feature = "test-util"))]
        #[allow(dead_code, reason = "some serve only the crate's tests and benchmarks")]
        $(#[$m])* pub(crate) fn $($rest)*
    };
}

impl BlockCache {
    /// A cache of `capacity` bytes, reserving up to `high_pri_ratio` of it for high-priority
    /// (meta) blocks. The shard count is fixed at creation from the initial capacity.
    pub fn new(capacity: usize, high_pri_ratio: f64) -> Self {
        Self::with_least(capacity, capacity, high_pri_ratio)
    }

    internal_fn! {
        /// A cache of `capacity` bytes that may be resized down to `least` (the memory tuner's
        /// floor): the shard count, fixed at creation, comes from `least`, so that shrinking the
        /// cache never leaves shards too small for a meta block.
        fn with_least(capacity: usize, least: usize, high_pri_ratio: f64) -> Self {
            let n = (least.min(capacity) / MIN_SHARD_BYTES).clamp(1, MAX_SHARDS);
            let n = if n.is_power_of_two() {
                n
            } else {
                n.next_power_of_two() / 2
            };
            let cache = BlockCache {
                map: papaya::HashMap::builder().hasher(FxBuild::default()).build(),
                shards: (0..n).map(|_| Mutex::new(Shard::default())).collect(),
                capacity: AtomicUsize::new(capacity),
                reserved: AtomicUsize::new(0),
                high_pri_ratio: high_pri_ratio.clamp(0.0, 1.0),
                counters: Striped::default(),
                listeners: RwLock::new(Vec::new()),
                next_listener: AtomicU64::new(1),
            };
            cache.apply_capacity();
            cache
        }
    }

    #[inline]
    fn shard(&self, key: &BlockKey) -> &Mutex<Shard> {
        let h = key
            .table
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .wrapping_add(key.offset)
            .wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
        &self.shards[(h >> 40) as usize % self.shards.len()]
    }

    internal_fn! {
        /// Looks a block up, counting a hit or a miss for `kind`. Takes no lock.
        #[inline]
        fn get(&self, key: &BlockKey, kind: BlockKind) -> Option<CachedBlock> {
            self.with(key, kind, CachedBlock::clone)
        }
    }

    internal_fn! {
        /// Looks a block up and, on a hit, calls `f` on it in place, counting a hit or a miss for
        /// `kind`. The entry stays alive through `f` by the map's epoch, not by a reference count:
        /// a point lookup's search within its block then writes nothing to the block's shared
        /// count (two locked instructions per lookup). `f` should be short: it delays the reclamation
        /// of whatever is evicted meanwhile.
        #[inline]
        fn with<R>(&self, key: &BlockKey, kind: BlockKind, f: impl FnOnce(&CachedBlock) -> R) -> Option<R> {
            let found = {
                let map = self.map.pin();
                map.get(key).map(|s| {
                    let want = if s.high { HIGH_CLOCK } else { LOW_CLOCK };
                    // Store only when it changes: a hot block's line stays shared, not bounced.
                    if s.clock.load(Relaxed) < want {
                        s.clock.store(want, Relaxed);
                    }
                    f(&s.value)
                })
            };
            let s = Stripe::current();
            let c = &self.counters.at(s)[kind as usize];
            s.add(if found.is_some() { &c.hits } else { &c.misses }, 1);
            found
        }
    }

    internal_fn! {
        /// Inserts a block charged `charge` bytes (replacing any block under `key`). A block
        /// larger than its shard's whole capacity is not cached.
        fn insert(&self, key: BlockKey, value: CachedBlock, kind: BlockKind, charge: usize, prio: Priority) {
            let s = Stripe::current();
            s.add(&self.counters.at(s)[kind as usize].inserts, 1);
            let mut evicted = Vec::new();
            {
                let mut sh = self.shard(&key).lock();
                let map = self.map.pin();
                if charge > sh.capacity {
                    if let Some(old) = map.remove(&key) {
                        sh.unlink(old);
                    }
                    return;
                }
                let high = prio == Priority::High && sh.high_usage + charge <= sh.high_capacity;
                sh.generation += 1;
                let generation = sh.generation;
                let slot = Slot {
                    value,
                    kind,
                    charge,
                    high,
                    clock: AtomicU8::new(if high { HIGH_CLOCK } else { 0 }),
                    generation,
                };
                if let Some(old) = map.insert(key, slot) {
                    sh.unlink(old);
                }
                sh.usage += charge;
                sh.kind_usage[kind as usize] += charge;
                if high {
                    sh.high_usage += charge;
                }
                // Room is made before the new entry joins the ring: when every other entry was
                // referenced, the hand clears them all and would otherwise reach the new one
                // first (LRU never evicts what it just inserted).
                Self::enforce(&mut sh, &map, &mut evicted);
                sh.queue.push_back((key, generation));
                sh.compact(&map);
            }
            self.report(evicted);
        }
    }

    /// Evicts from `sh` down to its capacity.
    fn enforce(sh: &mut Shard, map: &Map<'_>, out: &mut Vec<Evicted>) {
        while sh.usage > sh.capacity {
            match sh.evict(map) {
                Some(e) => out.push(e),
                None => break,
            }
        }
    }

    internal_fn! {
        /// Drops a block (e.g. its file was deleted).
        fn erase(&self, key: &BlockKey) {
            let mut sh = self.shard(key).lock();
            let map = self.map.pin();
            if let Some(old) = map.remove(key) {
                sh.unlink(old);
                sh.compact(&map);
            }
        }
    }

    fn report(&self, evicted: Vec<Evicted>) {
        if evicted.is_empty() {
            return;
        }
        let listeners: Vec<EvictionListener> = self.listeners.read().iter().map(|(_, l)| l.clone()).collect();
        let s = Stripe::current();
        let c = self.counters.at(s);
        for (key, kind, charge) in evicted {
            s.add(&c[kind as usize].evictions, 1);
            for l in &listeners {
                l(key, kind, charge);
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

    internal_fn! {
        /// Reserves `bytes` of the capacity for memory held outside the cache (index blocks pinned
        /// by table readers, when they are charged to the cache): blocks are evicted to make room.
        /// Undone by [`release`](Self::release).
        fn reserve(&self, bytes: usize) {
            self.reserved.fetch_add(bytes, Relaxed);
            self.apply_capacity();
        }
    }

    internal_fn! {
        /// Gives back a reservation.
        fn release(&self, bytes: usize) {
            // Saturating: a release never exceeds its reservation, but never wrap if it did.
            let _ = self
                .reserved
                .fetch_update(Relaxed, Relaxed, |r| Some(r.saturating_sub(bytes)));
            self.apply_capacity();
        }
    }

    internal_fn! {
        /// Bytes reserved for memory held outside the cache.
        fn reserved(&self) -> usize {
            self.reserved.load(Relaxed)
        }
    }

    fn apply_capacity(&self) {
        let usable = self.capacity().saturating_sub(self.reserved());
        let per = usable / self.shards.len();
        for s in self.shards.iter() {
            let mut evicted = Vec::new();
            {
                let mut sh = s.lock();
                sh.capacity = per;
                sh.high_capacity = (per as f64 * self.high_pri_ratio) as usize;
                Self::enforce(&mut sh, &self.map.pin(), &mut evicted);
            }
            self.report(evicted);
        }
    }

    /// Bytes currently charged.
    pub fn usage(&self) -> usize {
        self.shards.iter().map(|s| s.lock().usage).sum()
    }

    /// Bytes charged to cached blocks of `kind`.
    pub fn usage_of(&self, kind: BlockKind) -> usize {
        self.shards.iter().map(|s| s.lock().kind_usage[kind as usize]).sum()
    }

    /// Bytes charged to high-priority entries.
    pub fn high_pri_usage(&self) -> usize {
        self.shards.iter().map(|s| s.lock().high_usage).sum()
    }

    /// Entries cached.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| {
            let sh = s.lock();
            sh.queue.len() - sh.stale
        }).sum()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    internal_fn! {
        /// Subscribes to evictions, replacing the listener an earlier call set (`None`: removes
        /// it). Listeners added with [`add_eviction_listener`](Self::add_eviction_listener) stay.
        fn set_eviction_listener(&self, l: Option<EvictionListener>) {
            let mut ls = self.listeners.write();
            ls.retain(|(id, _)| *id != 0);
            if let Some(l) = l {
                ls.push((0, l));
            }
        }
    }

    internal_fn! {
        /// Adds an eviction listener beside the others; returns its id for
        /// [`remove_eviction_listener`](Self::remove_eviction_listener).
        fn add_eviction_listener(&self, l: EvictionListener) -> u64 {
            let id = self.next_listener.fetch_add(1, Relaxed);
            self.listeners.write().push((id, l));
            id
        }
    }

    internal_fn! {
        /// Removes the listener `id` returned.
        fn remove_eviction_listener(&self, id: u64) {
            self.listeners.write().retain(|(i, _)| *i != id);
        }
    }

    /// Checks the shards against the map: every ring entry is the map's entry for its key at
    /// its recorded position, charges add up, and nothing else is in the map.
    #[cfg(test)]
    fn check(&self) {
        let map = self.map.pin();
        let mut entries = 0;
        for s in self.shards.iter() {
            let sh = s.lock();
            let (mut usage, mut high, mut stale) = (0, 0, 0);
            let mut kinds = [0; 6];
            for (k, g) in &sh.queue {
                match map.get(k).filter(|e| e.generation == *g) {
                    Some(e) => {
                        usage += e.charge;
                        kinds[e.kind as usize] += e.charge;
                        high += if e.high { e.charge } else { 0 };
                        entries += 1;
                    }
                    None => stale += 1,
                }
            }
            assert_eq!((sh.usage, sh.high_usage, sh.stale, sh.kind_usage), (usage, high, stale, kinds));
            assert!(sh.usage <= sh.capacity);
        }
        assert_eq!(map.len(), entries);
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

    /// A block read again outlives blocks read once after it (LRU's order for a block hit
    /// once), and `usage_of` follows the kinds.
    #[test]
    fn blocks_read_once_leave_before_blocks_read_again() {
        let cache = BlockCache::new(4000, 0.5);
        let key = |i| BlockKey { table: 1, offset: i };
        for i in 0..4 {
            cache.insert(key(i), filter(), BlockKind::Data, 1000, Priority::Low);
        }
        assert!(cache.get(&key(0), BlockKind::Data).is_some());
        for i in 4..7 {
            cache.insert(key(i), filter(), BlockKind::Data, 1000, Priority::Low);
        }
        // Block 0, hit once, stayed; blocks 1..3 (never hit) made room for 4..6.
        assert!(cache.get(&key(0), BlockKind::Data).is_some());
        assert!((1..4).all(|i| cache.get(&key(i), BlockKind::Data).is_none()));
        assert_eq!((cache.usage_of(BlockKind::Data), cache.usage_of(BlockKind::Index)), (4000, 0));
        // Every entry referenced: the new one still stays (an older one leaves).
        for i in [0, 4, 5, 6] {
            assert!(cache.get(&key(i), BlockKind::Data).is_some());
        }
        cache.insert(key(7), filter(), BlockKind::Data, 1000, Priority::Low);
        assert!(cache.get(&key(7), BlockKind::Data).is_some());
        cache.check();
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

    fn key(i: u64) -> BlockKey {
        BlockKey { table: 1, offset: i }
    }

    #[test]
    fn hits_and_priority_buy_sweeps() {
        let cache = BlockCache::new(10_000, 0.5);
        let put = |i: u64, prio| cache.insert(key(i), filter(), BlockKind::Data, 1000, prio);
        // A high-priority entry outlives low-priority entries inserted after it, not hit since.
        put(100, Priority::High);
        for i in 0..15 {
            put(i, Priority::Low);
        }
        assert!(cache.get(&key(0), BlockKind::Data).is_none());
        assert!(cache.get(&key(100), BlockKind::Data).is_some());
        assert_eq!(cache.high_pri_usage(), 1000);
        cache.check();
        // A hit gives a low entry a second chance over entries not hit since the last sweep.
        let c = BlockCache::new(5000, 0.0);
        for i in 0..5 {
            c.insert(key(i), filter(), BlockKind::Data, 1000, Priority::Low);
        }
        c.insert(key(5), filter(), BlockKind::Data, 1000, Priority::Low); // sweeps all, evicts 0
        assert!(c.get(&key(0), BlockKind::Data).is_none());
        assert!(c.get(&key(1), BlockKind::Data).is_some());
        c.insert(key(6), filter(), BlockKind::Data, 1000, Priority::Low);
        assert!(c.get(&key(1), BlockKind::Data).is_some(), "the hit entry survives");
        assert!(c.get(&key(2), BlockKind::Data).is_none(), "the next unhit one goes");
        c.check();
        // With no high-priority share, high entries are cached as low ones.
        c.insert(key(7), filter(), BlockKind::FilterUnit, 1000, Priority::High);
        assert_eq!(c.high_pri_usage(), 0);
    }

    #[test]
    fn concurrent_use_keeps_charges_exact() {
        let cache = Arc::new(BlockCache::new(2 << 20, 0.25));
        let evicted = Arc::new(AtomicU64::new(0));
        let e2 = evicted.clone();
        cache.set_eviction_listener(Some(Arc::new(move |_, _, _| {
            e2.fetch_add(1, Relaxed);
        })));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let cache = cache.clone();
                std::thread::spawn(move || {
                    let mut x = t.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                    for n in 0..20_000u64 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let k = key(x % 3000);
                        match n % 8 {
                            0 => cache.erase(&k),
                            1..=3 => {
                                let prio = if x % 5 == 0 { Priority::High } else { Priority::Low };
                                cache.insert(k, filter(), BlockKind::Data, 512 + (x % 4096) as usize, prio);
                            }
                            4 if t == 0 => cache.set_capacity(if n % 16 == 4 { 1 << 20 } else { 2 << 20 }),
                            _ => {
                                cache.get(&k, BlockKind::Data);
                            }
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        cache.check();
        assert!(cache.usage() <= cache.capacity());
        let c = cache.counters(BlockKind::Data);
        assert_eq!(c.evictions, evicted.load(Relaxed));
        assert_eq!(c.hits + c.misses, (0..4).map(|t| 20_000 / 8 * (4 - u64::from(t == 0))).sum::<u64>());
    }

    #[test]
    fn shard_count_follows_capacity() {
        assert_eq!(BlockCache::new(0, 0.5).shards.len(), 1);
        assert_eq!(BlockCache::new(8 << 20, 0.5).shards.len(), 4);
        assert_eq!(BlockCache::new(7 << 20, 0.5).shards.len(), 2);
        assert_eq!(BlockCache::new(1 << 40, 0.5).shards.len(), 64);
        // A cache the tuner may shrink to 4 MiB: shards sized for that.
        assert_eq!(BlockCache::with_least(192 << 20, 4 << 20, 0.5).shards.len(), 2);
    }

    /// A shard holds a 64 MiB table's whole-key filter (~700 KB at 10 bits per key) even at
    /// the least capacity the cache may be shrunk to.
    #[test]
    fn a_large_meta_block_fits_a_shard_at_the_least_capacity() {
        let least = 4 << 20;
        let cache = BlockCache::with_least(192 << 20, least, 0.5);
        cache.set_capacity(least);
        let key = BlockKey { table: 1, offset: 0 };
        cache.insert(key, filter(), BlockKind::FilterUnit, 700_000, Priority::High);
        assert!(cache.get(&key, BlockKind::FilterUnit).is_some());
    }
}
