//! The shared block cache: a CLOCK cache whose hit path takes no lock.
//!
//! Lookups go through a concurrent hash map (`papaya`: lock-free reads, epoch-based
//! reclamation), so a hit is a map probe, a clone of the block's `Arc` and, at most, one store
//! to the entry's clock counter — never a mutex, and never a write to a line other readers of
//! other blocks touch. Inserts, erases and evictions take the mutex of one shard (by key hash).
//!
//! Each shard keeps two CLOCK rings, the pools of RocksDB's LRU cache with a high-priority
//! pool: meta blocks (filter units) and data blocks that were hit live in the **protected**
//! ring, bounded by the high-priority share; a data block enters the **probation** ring with
//! its counter at 0. A hit sets the counter (3 for meta entries, 1 for data: RocksDB's
//! HyperClockCache counts), and nothing else happens on the hit path. Space is made at the
//! probation ring's hand: an entry that was hit since it entered moves to the protected ring,
//! one that was not is evicted. When the protected ring passes its share, its hand decrements
//! counters and moves an entry found at 0 back to probation. So a block read once (a false
//! positive's, a cold key's) lives one pass of the probation ring, and a block read again lives
//! in the protected ring for as long as it keeps being read. With one CLOCK ring (a hit bought
//! one more sweep), blocks read once crowded out blocks read again: at 2 bits per key and 2–5%
//! of the data as cache, cairn read 1.06–1.15× RocksDB's data blocks per lookup; with the two
//! rings, 0.89–1.01×. A new entry joins its ring after room is made, so an insert
//! never evicts what it inserts. Charges are exact bytes; capacity changes and reservations
//! evict at once; evictions for space are reported to the listener outside any lock.

use super::arena::{BlockArena, BlockBytes};
use super::lru::FxBuild;
use crate::stats::stripe::{Stripe, Striped};
use crate::stats::BlockKind;
use parking_lot::{Mutex, RwLock};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed};
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
struct Slot<V> {
    value: V,
    kind: BlockKind,
    charge: usize,
    /// A meta block cached with high priority: a hit gives it `HIGH_CLOCK` sweeps.
    meta: bool,
    /// CLOCK counter: sweeps left before eviction.
    clock: AtomicU8,
    /// In the protected ring (changed only under the shard's lock).
    protected: AtomicBool,
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

/// One shard's eviction state: its keys in two CLOCK rings (FIFO queues where a swept entry
/// with sweeps left goes to the back: each ring's hand is its queue's front) and their charges.
/// A key erased or replaced leaves a stale queue entry (its generation no longer matches the
/// map's), dropped when a hand reaches it or when stale entries are over half the queues.
#[derive(Debug, Default)]
struct Shard {
    probation: VecDeque<(BlockKey, u64)>,
    protected: VecDeque<(BlockKey, u64)>,
    /// Stale entries in the two queues.
    stale: usize,
    generation: u64,
    usage: usize,
    /// Bytes in the protected ring.
    protected_usage: usize,
    /// `usage` by block kind.
    kind_usage: [usize; 6],
    capacity: usize,
    high_capacity: usize,
}

/// An entry evicted for space: key, kind, charge.
type Evicted = (BlockKey, BlockKind, usize);

impl Shard {
    /// Takes out the charge of `slot`, removed from the map (its queue entry is now stale).
    fn unlink<V>(&mut self, slot: &Slot<V>) {
        self.usage -= slot.charge;
        self.kind_usage[slot.kind as usize] -= slot.charge;
        if slot.protected.load(Relaxed) {
            self.protected_usage -= slot.charge;
        }
        self.stale += 1;
    }

    /// Drops stale queue entries once they are over half the queues.
    fn compact<V>(&mut self, map: &Map<'_, V>) {
        if self.stale > 64 && self.stale > (self.probation.len() + self.protected.len()) / 2 {
            let live = |(k, g): &(BlockKey, u64)| map.get(k).is_some_and(|s| s.generation == *g);
            self.probation.retain(live);
            self.protected.retain(live);
            self.stale = 0;
        }
    }

    /// The live slot at the front of `ring` (popped), dropping stale entries on the way.
    fn pop<'m, V>(&mut self, map: &'m Map<'_, V>, protected: bool) -> Option<(BlockKey, u64, &'m Slot<V>)> {
        loop {
            let ring = if protected { &mut self.protected } else { &mut self.probation };
            let (k, g) = ring.pop_front()?;
            match map.get(&k).filter(|s| s.generation == g) {
                Some(s) => return Some((k, g, s)),
                None => self.stale = self.stale.saturating_sub(1),
            }
        }
    }

    /// Moves `slot` to the back of the protected ring (`true`) or the probation ring.
    fn push<V>(&mut self, key: BlockKey, generation: u64, slot: &Slot<V>, protected: bool) {
        if slot.protected.swap(protected, Relaxed) != protected {
            if protected {
                self.protected_usage += slot.charge;
            } else {
                self.protected_usage -= slot.charge;
            }
        }
        let ring = if protected { &mut self.protected } else { &mut self.probation };
        ring.push_back((key, generation));
    }

    /// Sweeps the protected ring back within the high-priority share: entries with sweeps left
    /// lose one, entries at 0 go back to probation.
    fn demote<V>(&mut self, map: &Map<'_, V>) {
        while self.protected_usage > self.high_capacity {
            let Some((k, g, s)) = self.pop(map, true) else { break };
            let c = s.clock.load(Relaxed);
            if c > 0 {
                s.clock.store(c - 1, Relaxed);
            }
            self.push(k, g, s, c > 0);
        }
    }

    /// Evicts the next entry whose counter is 0 at the probation hand (the protected ring's,
    /// when probation is empty), promoting the probation entries hit since they entered;
    /// `None` when the shard holds no entry.
    fn evict<V>(&mut self, map: &Map<'_, V>) -> Option<Evicted> {
        loop {
            let (k, g, s) = match self.pop(map, false) {
                Some(front) => front,
                None => self.pop(map, true)?,
            };
            let c = s.clock.load(Relaxed);
            if c > 0 {
                s.clock.store(c - 1, Relaxed);
                self.push(k, g, s, true);
                self.demote(map);
                continue;
            }
            let out = (k, s.kind, s.charge);
            if let Some(s) = map.remove(&k) {
                self.unlink(s);
                self.stale -= 1; // its queue entry is already gone
            }
            return Some(out);
        }
    }
}

type Map<'a, V> = papaya::HashMapRef<'a, BlockKey, Slot<V>, FxBuild, papaya::LocalGuard<'a>>;

/// A sharded CLOCK cache of `V`s (the engine's [`BlockCache`](crate::BlockCache) holds decoded
/// blocks and filter units), charged in bytes, with lock-free hits.
pub struct ClockCache<V> {
    map: papaya::HashMap<BlockKey, Slot<V>, FxBuild>,
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
    /// Where cached blocks' bytes go while the capacity is at least `.1` (`None`: the heap).
    arena: Option<(Arc<BlockArena>, usize)>,
}

impl<V: Clone + Send + Sync + 'static> std::fmt::Debug for ClockCache<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClockCache")
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

impl<V: Clone + Send + Sync + 'static> ClockCache<V> {
    /// The capacity from which a cache puts its blocks in huge pages by default: at 256 MiB,
    /// the arena's slack (about half a 2 MiB chunk per size class in use, a handful of classes)
    /// is a few percent of the cache.
    pub const HUGE_PAGES_FROM: usize = 256 << 20;

    /// Bytes the cache spends per entry besides what the entry's value owns: its slot in the
    /// map with the key, the map's allocation header and bucket, and its place in a ring.
    pub const SLOT_BYTES: usize = std::mem::size_of::<Slot<V>>()
        + std::mem::size_of::<BlockKey>()
        + 3 * std::mem::size_of::<usize>()
        + std::mem::size_of::<(BlockKey, u64)>();

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
            let cache = ClockCache {
                map: papaya::HashMap::builder().hasher(FxBuild::default()).build(),
                shards: (0..n).map(|_| Mutex::new(Shard::default())).collect(),
                capacity: AtomicUsize::new(capacity),
                reserved: AtomicUsize::new(0),
                high_pri_ratio: high_pri_ratio.clamp(0.0, 1.0),
                counters: Striped::default(),
                listeners: RwLock::new(Vec::new()),
                next_listener: AtomicU64::new(1),
                arena: BlockArena::new().map(|a| (a, Self::HUGE_PAGES_FROM)),
            };
            cache.apply_capacity();
            cache
        }
    }

    /// Puts cached data and index blocks in transparent huge pages (2 MiB chunks of the
    /// block arena) while the capacity is at least `from` bytes; `None`: always on the heap.
    /// New caches do from [`HUGE_PAGES_FROM`](Self::HUGE_PAGES_FROM) (256 MiB) when the
    /// kernel's transparent huge pages are not off. A cached lookup then misses the TLB less;
    /// the cost is the arena's free slots, reported as [`huge_page_slack`](Self::huge_page_slack).
    #[must_use]
    pub fn huge_pages_from(mut self, from: Option<usize>) -> Self {
        self.arena = from.and_then(|from| BlockArena::new().map(|a| (a, from)));
        self
    }

    /// Bytes of huge-page chunks the cache's blocks are placed in (0: none).
    pub fn huge_page_bytes(&self) -> usize {
        self.arena.as_ref().map_or(0, |(a, _)| a.held())
    }

    /// Of [`huge_page_bytes`](Self::huge_page_bytes), the free slots: memory held beyond the
    /// blocks' charges.
    pub fn huge_page_slack(&self) -> usize {
        self.arena.as_ref().map_or(0, |(a, _)| a.held().saturating_sub(a.live()))
    }

    internal_fn! {
        /// The bytes of a block read for this cache: in a slot of the arena (charged its slot
        /// size) while the capacity allows and a slot is free or the arena holds less than the
        /// capacity, else on the heap.
        fn block_bytes(&self, raw: Vec<u8>) -> BlockBytes {
            let capacity = self.capacity();
            match &self.arena {
                Some((arena, from)) if capacity >= *from => {
                    arena.copy_in(&raw, capacity).unwrap_or_else(|| BlockBytes::heap(raw.into_boxed_slice()))
                }
                _ => BlockBytes::heap(raw.into_boxed_slice()),
            }
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
        fn get(&self, key: &BlockKey, kind: BlockKind) -> Option<V> {
            self.with(key, kind, V::clone)
        }
    }

    internal_fn! {
        /// Looks a block up and, on a hit, calls `f` on it in place, counting a hit or a miss for
        /// `kind`. The entry stays alive through `f` by the map's epoch, not by a reference count:
        /// a point lookup's search within its block then writes nothing to the block's shared
        /// count (two locked instructions per lookup). `f` should be short: it delays the reclamation
        /// of whatever is evicted meanwhile.
        #[inline]
        fn with<R>(&self, key: &BlockKey, kind: BlockKind, f: impl FnOnce(&V) -> R) -> Option<R> {
            let found = {
                let map = self.map.pin();
                map.get(key).map(|s| {
                    let want = if s.meta { HIGH_CLOCK } else { LOW_CLOCK };
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
        fn insert(&self, key: BlockKey, value: V, kind: BlockKind, charge: usize, prio: Priority) {
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
                // With no high-priority share, meta blocks are cached as data blocks.
                let meta = prio == Priority::High && sh.high_capacity > 0;
                sh.generation += 1;
                let generation = sh.generation;
                let slot = Slot {
                    value,
                    kind,
                    charge,
                    meta,
                    clock: AtomicU8::new(if meta { HIGH_CLOCK } else { 0 }),
                    protected: AtomicBool::new(meta),
                    generation,
                };
                if let Some(old) = map.insert(key, slot) {
                    sh.unlink(old);
                }
                sh.usage += charge;
                sh.kind_usage[kind as usize] += charge;
                if meta {
                    sh.protected_usage += charge;
                }
                // Room is made before the new entry joins its ring: when every other entry was
                // referenced, the hands clear them all and would otherwise reach the new one
                // first (LRU never evicts what it just inserted).
                Self::enforce(&mut sh, &map, &mut evicted);
                let ring = if meta { &mut sh.protected } else { &mut sh.probation };
                ring.push_back((key, generation));
                sh.demote(&map);
                sh.compact(&map);
            }
            self.report(evicted);
        }
    }

    /// Evicts from `sh` down to its capacity.
    fn enforce(sh: &mut Shard, map: &Map<'_, V>, out: &mut Vec<Evicted>) {
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
        // Listeners (ghosts) neither add nor remove listeners: they run under the read lock,
        // which spares a miss a copy of the list.
        let listeners = self.listeners.read();
        let s = Stripe::current();
        let c = self.counters.at(s);
        for (key, kind, charge) in evicted {
            s.add(&c[kind as usize].evictions, 1);
            for (_, l) in listeners.iter() {
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
                let map = self.map.pin();
                sh.demote(&map);
                Self::enforce(&mut sh, &map, &mut evicted);
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

    /// Bytes in the high-priority (protected) pool: meta blocks and data blocks that were hit.
    pub fn high_pri_usage(&self) -> usize {
        self.shards.iter().map(|s| s.lock().protected_usage).sum()
    }

    /// Entries cached.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| {
            let sh = s.lock();
            sh.probation.len() + sh.protected.len() - sh.stale
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
            let (mut usage, mut protected, mut stale) = (0, 0, 0);
            let mut kinds = [0; 6];
            for (ring, in_protected) in [(&sh.probation, false), (&sh.protected, true)] {
                for (k, g) in ring {
                    match map.get(k).filter(|e| e.generation == *g) {
                        Some(e) => {
                            assert_eq!(e.protected.load(Relaxed), in_protected);
                            usage += e.charge;
                            kinds[e.kind as usize] += e.charge;
                            protected += if in_protected { e.charge } else { 0 };
                            entries += 1;
                        }
                        None => stale += 1,
                    }
                }
            }
            assert_eq!((sh.usage, sh.protected_usage, sh.stale, sh.kind_usage), (usage, protected, stale, kinds));
            assert!(sh.usage <= sh.capacity);
            assert!(sh.protected_usage <= sh.high_capacity);
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

    /// The cache's policy does not look at what it holds.
    type BlockCache = ClockCache<Arc<u64>>;

    fn filter() -> Arc<u64> {
        Arc::new(7)
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

    /// Blocks read again stay in the protected pool however many blocks are read once after
    /// them (one CLOCK ring evicted them after a sweep of the cache), the pool keeps to its
    /// share, and a protected block that stops being read goes back to probation, then out.
    #[test]
    fn blocks_read_again_survive_a_stream_of_blocks_read_once() {
        let cache = BlockCache::new(10_000, 0.5);
        let put = |i: u64| cache.insert(key(i), filter(), BlockKind::Data, 1000, Priority::Low);
        for i in 0..4 {
            put(i);
            assert!(cache.get(&key(i), BlockKind::Data).is_some());
        }
        for i in 100..200 {
            put(i);
        }
        assert!((0..4).all(|i| cache.get(&key(i), BlockKind::Data).is_some()));
        assert_eq!(cache.high_pri_usage(), 4000);
        cache.check();
        // Six more blocks read twice: the pool holds five; the ones not read again go.
        for i in 10..16 {
            put(i);
            assert!(cache.get(&key(i), BlockKind::Data).is_some());
        }
        for i in 200..300 {
            put(i);
        }
        assert!(cache.high_pri_usage() <= 5000);
        let kept = (0..4).chain(10..16).filter(|&i| cache.get(&key(i), BlockKind::Data).is_some()).count();
        assert_eq!(kept, 5);
        cache.check();
    }

    /// Blocks go to huge-page slots from the capacity set, are charged their slot, and go
    /// back to the heap below it or when the arena holds the capacity.
    #[test]
    fn blocks_in_huge_pages_from_a_capacity() {
        let Some(from) = BlockArena::new().map(|_| 4 << 20) else {
            // The kernel has THP off: the cache keeps every block on the heap.
            let cache = BlockCache::new(8 << 20, 0.5).huge_pages_from(Some(0));
            assert_eq!(cache.block_bytes(vec![0; 4100]).charge(), 4100);
            return;
        };
        let cache = BlockCache::new(8 << 20, 0.5).huge_pages_from(Some(from));
        let b = cache.block_bytes(vec![7; 4100]);
        assert!(b.in_arena() && b.charge() == 4160 && b.iter().all(|&x| x == 7));
        assert_eq!((cache.huge_page_bytes(), cache.huge_page_slack()), (2 << 20, (2 << 20) - 4160));
        // The arena may hold the capacity (8 MiB, four chunks): a fifth class is refused.
        let classes: Vec<_> = [4200, 4300, 4400, 4500].iter().map(|&n| cache.block_bytes(vec![1; n])).collect();
        assert_eq!(classes.iter().filter(|b| b.in_arena()).count(), 3);
        assert!(!classes[3].in_arena() && classes[3].charge() == 4500);
        cache.set_capacity(from - 1);
        assert!(!cache.block_bytes(vec![0; 4100]).in_arena(), "below the capacity set: the heap");
        drop((b, classes));
        assert_eq!(cache.huge_page_bytes(), 0);
        assert!(!BlockCache::new(8 << 20, 0.5).huge_pages_from(None).block_bytes(vec![0; 4100]).in_arena());
        assert!(!BlockCache::new(8 << 20, 0.5).block_bytes(vec![0; 4100]).in_arena(), "8 MiB is below the default");
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
