//! The key-value cache: the answer the tables give for a hot key — its newest version's kind,
//! sequence number and value (a deletion too; the engine does not cache keys no table holds,
//! which the filters answer) — so a point lookup that misses the memtables skips the tables. Entries live in a [`ClockCache`] keyed by (tree, 64-bit hash of the user
//! key); an entry holds its key, and a lookup whose key differs misses.
//!
//! **What an entry is worth.** It caches the *tables'* answer, not the database's: lookups ask
//! it only after the memtables missed (a memtable holds every write newer than the tables, and
//! their range tombstones are checked first). The answer changes only when a new version of
//! the tables is installed that holds a new version of the key: a flush of a memtable holding
//! it, a flush of range tombstones, or a compaction whose compaction filter changed an entry.
//! A read at sequence number `s` may use an entry whose version is at most `s` (the newest
//! version of the tables is then the one it sees among them); a newer one falls through.
//!
//! **Invalidation, and fills that race it.** Before such a version is installed, the engine
//! [`invalidate`](KvCache::invalidate)s each flushed key (or, for range tombstones and
//! compaction filters, the whole tree: [`begin_change`](KvCache::begin_change) …
//! [`end_change`](KvCache::end_change)). A reader takes a [`Ticket`] *before* it loads its
//! read view: the epoch of its key's lane and the tree's generation. Its fill is refused when
//! either moved, checked under the lane's lock that invalidation also takes. So a reader that
//! took its ticket after an invalidation loaded a read view in which the key is still in the
//! memtables (flush: the memtable leaves the view only at install) or the new version
//! (whole-tree changes stay "in progress" until installed, and no fill is taken then).

use super::block_cache::ClockCache;
use super::{BlockKey, GhostCache, Priority};
use crate::format::ikey::{key_hash, ValueKind};
use crate::stats::stripe::{Stripe, Striped};
use crate::stats::BlockKind;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Lanes of invalidation epochs (a power of two): a flush bumps one lane per key, and refuses
/// the fills of keys in that lane that raced it.
const LANES: usize = 256;

/// Tree generations kept (trees beyond share one by id modulo this).
const TREES: usize = 64;

/// The ghost follows one key in this many (by hash), each standing for this many (Waldspurger
/// et al.'s spatial sampling, SHARDS): hits per simulated byte keep their expectation, and a
/// miss pays for the ghost's lock and map one time in this many. A uniform workload, which the
/// cache does not pay for, misses on nearly every lookup.
const GHOST_SAMPLE: u64 = 8;

/// Whether the ghost follows the key of `hash` (bits the lanes and the map do not use alone).
fn sampled(hash: u64) -> bool {
    (hash >> 20) % GHOST_SAMPLE == 0
}

/// A cached answer of the tables for one key, in one allocation (a fill allocates once, and
/// an entry costs its bytes, the reference counts and the cache's slot):
///
/// ```text
/// [generation: u64 LE] [seqno: u64 LE] [kind: u8] [key length: u32 LE] [key] [value]
/// ```
///
/// `generation` is the tree's when the entry was filled (any later change of the whole tree
/// retires it); `seqno` the version's (0: the tables hold no version).
type KvEntry = Arc<[u8]>;

/// Bytes before the key.
const HEADER: usize = 21;

fn entry(generation: u64, kind: ValueKind, seqno: u64, key: &[u8], value: &[u8]) -> KvEntry {
    let key_len = u32::try_from(key.len()).unwrap_or(u32::MAX);
    // Exact-size pieces: the Arc is allocated once, at its final size.
    generation
        .to_le_bytes()
        .iter()
        .chain(&seqno.to_le_bytes())
        .chain(&[kind as u8])
        .chain(&key_len.to_le_bytes())
        .chain(key)
        .chain(value)
        .copied()
        .collect()
}

/// An entry read back.
struct Parts<'a> {
    generation: u64,
    kind: ValueKind,
    seqno: u64,
    key: &'a [u8],
    value: &'a [u8],
}

/// An entry's parts (`None` for bytes this module did not write, which cannot happen).
fn parts(e: &[u8]) -> Option<Parts<'_>> {
    let key_len = u32::from_le_bytes(e.get(17..HEADER)?.try_into().ok()?) as usize;
    let rest = e.get(HEADER..)?;
    Some(Parts {
        generation: u64::from_le_bytes(e.get(0..8)?.try_into().ok()?),
        seqno: u64::from_le_bytes(e.get(8..16)?.try_into().ok()?),
        kind: ValueKind::from_u8(*e.get(16)?)?,
        key: rest.get(..key_len)?,
        value: rest.get(key_len..)?,
    })
}

/// What a reader takes before it loads its read view, and hands back to fill.
#[derive(Debug, Clone, Copy)]
pub struct Ticket {
    hash: u64,
    epoch: u64,
    generation: u64,
}

/// An answer found in the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cached {
    /// The version's kind (`Delete` also when the tables hold no version).
    pub kind: ValueKind,
    /// Its sequence number.
    pub seqno: u64,
}

#[derive(Debug, Default)]
#[repr(align(64))]
struct Lane {
    epoch: AtomicU64,
    lock: Mutex<()>,
}

#[derive(Debug, Default)]
#[repr(align(64))]
struct Counters {
    hits: AtomicU64,
    negative_hits: AtomicU64,
    misses: AtomicU64,
    fills: AtomicU64,
    refused: AtomicU64,
    ghost_hits: AtomicU64,
}

/// The key-value cache's counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KvCounters {
    /// Lookups answered with a value.
    pub hits: u64,
    /// Lookups answered "no live version" (a deletion).
    pub negative_hits: u64,
    /// Lookups the cache could not answer.
    pub misses: u64,
    /// Answers cached (also those the cache had no room for, which were evicted at once).
    pub fills: u64,
    /// Fills refused because an invalidation raced them.
    pub refused: u64,
    /// Misses the ghost of recently evicted keys would have answered (a larger cache's hits),
    /// estimated from the one key in eight it follows.
    pub ghost_hits: u64,
}

/// The key-value cache (see the module comment).
pub struct KvCache {
    entries: ClockCache<KvEntry>,
    lanes: Box<[Lane]>,
    /// Per tree (by id modulo [`TREES`]): even when stable, odd while a change of the whole
    /// tree is being installed.
    generations: Box<[AtomicU64]>,
    /// Values longer than this are not cached.
    max_value: usize,
    /// The keys evicted most recently, while the memory tuner prices the cache.
    ghost: Option<Arc<GhostCache>>,
    counters: Striped<Counters>,
}

impl std::fmt::Debug for KvCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KvCache")
            .field("capacity", &self.capacity())
            .field("usage", &self.usage())
            .finish()
    }
}

impl KvCache {
    /// A cache of `capacity` bytes (its shard count fixed from it) caching values of at most
    /// `max_value` bytes, with a ghost simulating `ghost` bytes more (0: none).
    pub fn new(capacity: usize, max_value: usize, ghost: usize) -> Self {
        let entries = ClockCache::new(capacity, 0.0);
        let ghost = (ghost > 0).then(|| {
            let g = Arc::new(GhostCache::new(ghost));
            let to = g.clone();
            entries.add_eviction_listener(Arc::new(move |key: BlockKey, _: BlockKind, charge| {
                if sampled(key.offset) {
                    to.evicted(key, charge * GHOST_SAMPLE as usize);
                }
            }));
            g
        });
        KvCache {
            entries,
            ghost,
            lanes: (0..LANES).map(|_| Lane::default()).collect(),
            generations: (0..TREES).map(|_| AtomicU64::new(0)).collect(),
            max_value,
            counters: Striped::default(),
        }
    }

    /// Bytes one entry of a `key`-byte key and a `value`-byte value is charged: the entry's
    /// allocation (its bytes and reference counts) and the cache's own slot.
    pub fn charge(key: usize, value: usize) -> usize {
        HEADER + key + value + 2 * std::mem::size_of::<usize>() + ClockCache::<KvEntry>::SLOT_BYTES
    }

    fn block_key(tree: u32, hash: u64) -> BlockKey {
        BlockKey {
            table: u64::from(tree),
            offset: hash,
        }
    }

    fn lane(&self, hash: u64) -> &Lane {
        &self.lanes[(hash >> 56) as usize % LANES]
    }

    fn generation(&self, tree: u32) -> &AtomicU64 {
        &self.generations[tree as usize % TREES]
    }

    /// Taken by a lookup of `key` in `tree` before it loads its read view.
    #[inline]
    pub fn ticket(&self, tree: u32, key: &[u8]) -> Ticket {
        let hash = key_hash(key);
        Ticket {
            hash,
            epoch: self.lane(hash).epoch.load(Ordering::Acquire),
            generation: self.generation(tree).load(Ordering::Acquire),
        }
    }

    /// The tables' answer for `key` in `tree`, when cached and visible at `seqno`; a value is
    /// copied into `value` (replacing its contents). `None`: look in the tables.
    #[inline]
    pub fn get(&self, t: &Ticket, tree: u32, key: &[u8], seqno: u64, value: &mut Vec<u8>) -> Option<Cached> {
        let found = if t.generation % 2 == 1 || self.entries.capacity() == 0 {
            None
        } else {
            self.entries
                .with(&Self::block_key(tree, t.hash), BlockKind::Data, |e| {
                    let p = parts(e)?;
                    (p.generation == t.generation && p.seqno <= seqno && p.key == key).then(|| {
                        value.clear();
                        value.extend_from_slice(p.value);
                        Cached {
                            kind: p.kind,
                            seqno: p.seqno,
                        }
                    })
                })
                .flatten()
        };
        let s = Stripe::current();
        let c = self.counters.at(s);
        s.add(
            match found {
                Some(Cached {
                    kind: ValueKind::Put | ValueKind::Expiring,
                    ..
                }) => &c.hits,
                Some(_) => &c.negative_hits,
                None => &c.misses,
            },
            1,
        );
        if let (None, Some(g), true) = (found, &self.ghost, sampled(t.hash)) {
            if g.probe(&Self::block_key(tree, t.hash), true) {
                s.add(&c.ghost_hits, GHOST_SAMPLE);
            }
        }
        found
    }

    /// Caches the tables' answer for `key`, read with ticket `t`: a version of `kind` at
    /// `seqno` with `value` (`Delete` and 0: the tables hold no version). Refused when an
    /// invalidation raced the read, or when the value is too long to be worth it.
    pub fn fill(&self, t: &Ticket, tree: u32, key: &[u8], kind: ValueKind, seqno: u64, value: &[u8]) {
        if value.len() > self.max_value || key.len() > u32::MAX as usize || t.generation % 2 == 1 {
            return;
        }
        let charge = Self::charge(key.len(), value.len());
        let s = Stripe::current();
        if charge > self.entries.capacity() {
            // Cached and evicted at once: the ghost still learns what a cache would have held,
            // so the tuner can grow one back from nothing.
            if let (Some(g), true) = (&self.ghost, sampled(t.hash)) {
                g.evicted(Self::block_key(tree, t.hash), charge * GHOST_SAMPLE as usize);
            }
            s.add(&self.counters.at(s).fills, 1);
            return;
        }
        let entry = entry(t.generation, kind, seqno, key, value);
        let lane = self.lane(t.hash);
        let _guard = lane.lock.lock();
        if lane.epoch.load(Ordering::Acquire) != t.epoch || self.generation(tree).load(Ordering::Acquire) != t.generation {
            s.add(&self.counters.at(s).refused, 1);
            return;
        }
        self.entries
            .insert(Self::block_key(tree, t.hash), entry, BlockKind::Data, charge, Priority::Low);
        s.add(&self.counters.at(s).fills, 1);
    }

    /// Forgets `key` in `tree`, and refuses the fills of lookups that started before: called
    /// before a version of the tables holding a new version of the key is installed.
    pub fn invalidate(&self, tree: u32, key: &[u8]) {
        let hash = key_hash(key);
        let lane = self.lane(hash);
        let _guard = lane.lock.lock();
        lane.epoch.fetch_add(1, Ordering::AcqRel);
        self.entries.erase(&Self::block_key(tree, hash));
    }

    /// A change of the whole tree (range tombstones, a compaction filter's work) is about to
    /// be installed: every entry of the tree is retired, and no fill is taken until
    /// [`end_change`](Self::end_change).
    pub fn begin_change(&self, tree: u32) {
        self.bump_generation(tree);
    }

    /// The change [`begin_change`](Self::begin_change) announced is installed.
    pub fn end_change(&self, tree: u32) {
        self.bump_generation(tree);
    }

    fn bump_generation(&self, tree: u32) {
        // Under every lane's lock in turn is not needed: a fill checks the generation under
        // its lane's lock, and the bump is one atomic step it sees or not.
        self.generation(tree).fetch_add(1, Ordering::AcqRel);
    }

    /// The ghost's simulated bytes (0: none).
    pub fn ghost_capacity(&self) -> usize {
        self.ghost.as_ref().map_or(0, |g| g.capacity())
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// Resizes the cache (evicting at once when it shrinks).
    pub fn set_capacity(&self, bytes: usize) {
        self.entries.set_capacity(bytes);
    }

    /// Bytes charged now.
    pub fn usage(&self) -> usize {
        self.entries.usage()
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is cached.
    #[allow(dead_code, reason = "len's pair, for tests")]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The counters so far.
    pub fn counters(&self) -> KvCounters {
        let sum = |f: fn(&Counters) -> &AtomicU64| self.counters.sum(|c| f(c).load(Ordering::Relaxed));
        KvCounters {
            hits: sum(|c| &c.hits),
            negative_hits: sum(|c| &c.negative_hits),
            misses: sum(|c| &c.misses),
            fills: sum(|c| &c.fills),
            refused: sum(|c| &c.refused),
            ghost_hits: sum(|c| &c.ghost_hits),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(kv: &KvCache, tree: u32, key: &[u8], seqno: u64) -> Option<(Cached, Vec<u8>)> {
        let mut v = b"stale".to_vec();
        kv.get(&kv.ticket(tree, key), tree, key, seqno, &mut v).map(|c| (c, v))
    }

    fn fill(kv: &KvCache, tree: u32, key: &[u8], kind: ValueKind, seqno: u64, value: &[u8]) {
        kv.fill(&kv.ticket(tree, key), tree, key, kind, seqno, value);
    }

    #[test]
    fn answers_what_was_filled_to_reads_that_see_it() {
        let kv = KvCache::new(1 << 20, 64, 0);
        assert_eq!(get(&kv, 0, b"a", 100), None);
        fill(&kv, 0, b"a", ValueKind::Put, 7, b"va");
        fill(&kv, 0, b"gone", ValueKind::Delete, 9, b"");
        fill(&kv, 0, b"never", ValueKind::Delete, 0, b"");
        let put = Cached {
            kind: ValueKind::Put,
            seqno: 7,
        };
        assert_eq!(get(&kv, 0, b"a", 7), Some((put, b"va".to_vec())));
        // A read older than the cached version falls through to the tables.
        assert_eq!(get(&kv, 0, b"a", 6), None);
        // Trees are apart.
        assert_eq!(get(&kv, 1, b"a", 100), None);
        assert_eq!(get(&kv, 0, b"gone", 100).map(|(c, _)| c.kind), Some(ValueKind::Delete));
        assert_eq!(get(&kv, 0, b"never", 1).map(|(c, _)| c.seqno), Some(0));
        let c = kv.counters();
        assert_eq!((c.hits, c.negative_hits, c.misses, c.fills), (1, 2, 3, 3));
        // Charged exactly what `charge` says, entry by entry.
        assert_eq!(kv.len(), 3);
        assert_eq!(
            kv.usage(),
            KvCache::charge(1, 2) + KvCache::charge(4, 0) + KvCache::charge(5, 0)
        );
    }

    #[test]
    fn long_values_are_not_cached_and_capacity_bounds_usage() {
        let kv = KvCache::new(20 * KvCache::charge(8, 32), 32, 0);
        fill(&kv, 0, b"long", ValueKind::Put, 1, &[0; 33]);
        assert!(kv.is_empty());
        for i in 0..100u64 {
            fill(&kv, 0, &i.to_be_bytes(), ValueKind::Put, 1, &[1; 32]);
        }
        assert!(kv.usage() <= kv.capacity() && kv.len() <= 20 && kv.len() >= 10, "{}", kv.len());
        kv.set_capacity(0);
        assert_eq!((kv.usage(), kv.len()), (0, 0));
    }

    #[test]
    fn the_ghost_follows_one_key_in_eight_and_learns_even_with_no_capacity() {
        let keys: Vec<[u8; 8]> = (0..4000u64).map(|i| i.to_be_bytes()).collect();
        let followed = keys.iter().filter(|k| sampled(key_hash(*k))).count();
        assert!((400..600).contains(&followed), "{followed} of 4000 followed");
        for capacity in [0, 64 * KvCache::charge(8, 32)] {
            let kv = KvCache::new(capacity, 32, 1 << 20);
            for k in &keys {
                assert!(get(&kv, 0, k, 9).is_none());
                fill(&kv, 0, k, ValueKind::Put, 1, &[1; 32]);
            }
            // Every followed key that misses was evicted (or never held) within the ghost's
            // capacity: it counts for eight; the others count nothing.
            let before = kv.counters();
            let mut expected = 0;
            for k in &keys {
                if get(&kv, 0, k, 9).is_none() && sampled(key_hash(k)) {
                    expected += GHOST_SAMPLE;
                }
            }
            let c = kv.counters();
            assert_eq!(c.ghost_hits - before.ghost_hits, expected, "capacity {capacity}");
            if capacity == 0 {
                assert_eq!((c.hits, kv.len(), expected), (0, 0, GHOST_SAMPLE * followed as u64));
            } else {
                assert!(c.hits > 0 && expected > 0, "capacity {capacity}: {c:?}");
            }
        }
    }

    #[test]
    fn an_invalidation_refuses_the_fills_of_reads_that_started_before_it() {
        let kv = KvCache::new(1 << 20, 64, 0);
        fill(&kv, 0, b"k", ValueKind::Put, 1, b"old");
        // A read takes its ticket, then a flush of a new version of k invalidates it.
        let t = kv.ticket(0, b"k");
        kv.invalidate(0, b"k");
        assert_eq!(get(&kv, 0, b"k", 100), None, "forgotten");
        kv.fill(&t, 0, b"k", ValueKind::Put, 1, b"old");
        assert_eq!(get(&kv, 0, b"k", 100), None, "the racing fill was refused");
        assert_eq!(kv.counters().refused, 1);
        // A read that starts after the invalidation fills.
        fill(&kv, 0, b"k", ValueKind::Put, 2, b"new");
        assert_eq!(get(&kv, 0, b"k", 100).map(|(_, v)| v), Some(b"new".to_vec()));
    }

    #[test]
    fn a_change_of_the_whole_tree_retires_its_entries_and_takes_no_fill_meanwhile() {
        let kv = KvCache::new(1 << 20, 64, 0);
        fill(&kv, 0, b"a", ValueKind::Put, 1, b"1");
        fill(&kv, 1, b"a", ValueKind::Put, 1, b"1");
        let before = kv.ticket(0, b"b");
        kv.begin_change(0);
        assert_eq!(get(&kv, 0, b"a", 100), None, "retired");
        assert!(get(&kv, 1, b"a", 100).is_some(), "other trees keep theirs");
        let during = kv.ticket(0, b"c");
        kv.fill(&during, 0, b"c", ValueKind::Put, 1, b"1");
        kv.end_change(0);
        kv.fill(&before, 0, b"b", ValueKind::Put, 1, b"1");
        assert_eq!((get(&kv, 0, b"b", 100), get(&kv, 0, b"c", 100)), (None, None));
        fill(&kv, 0, b"a", ValueKind::Put, 2, b"2");
        assert_eq!(get(&kv, 0, b"a", 100).map(|(_, v)| v), Some(b"2".to_vec()));
    }
}
