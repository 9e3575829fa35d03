//! The block arena: cached blocks' bytes in 2 MiB chunks backed by transparent huge pages.
//!
//! A cached lookup's time is mostly waiting for loads, and with every 4 KiB block on a page of
//! its own, a lookup among thousands of cached blocks misses the TLB on each block it touches.
//! An experiment that placed the blocks in huge pages (never freeing them) measured 1.10–1.13×
//! faster cached lookups; this arena, on a noisier day, 1.02–1.09× (design.md, "Block arena").
//! RocksDB does not do this by default.
//!
//! Layout: each chunk is one 2 MiB-aligned `mmap` region advised `MADV_HUGEPAGE`, cut into
//! equal slots of one size class. Classes step by 1/128 of the size's power of two (64 bytes
//! up to 8 KiB, 128 up to 16 KiB): a block loses under 1/64 of itself to rounding, and
//! the class's whole slot is what the cache charges. Each chunk keeps a free list and a live
//! count; a chunk whose last slot is freed is unmapped at once, so the arena holds the cache's
//! blocks plus the free slots of partly used chunks (`held - live`: about half a chunk per
//! class in use, reported as the arena's slack). Blocks go to the heap instead when the class
//! would need a new chunk and the arena already holds the cache's capacity, when the block is
//! over [`MAX_SLOT`], or when the kernel has transparent huge pages off.
//!
//! Allocation and freeing take one mutex: they happen on a cache miss (next to a storage read)
//! and at eviction, never on a hit.

use crate::memory::pages::Pages;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// Bytes of a chunk: one huge page on x86-64 and aarch64 with 4 KiB pages.
pub const CHUNK: usize = 2 << 20;
/// Largest slot: a chunk holds at least 16 slots.
pub const MAX_SLOT: usize = CHUNK / 16;

/// The slot size of a block of `len` bytes (`len` ≥ 1).
pub fn slot_size(len: usize) -> usize {
    let step = (len.next_power_of_two() / 128).max(64);
    len.div_ceil(step) * step
}

/// Whether the kernel would back an advised region with huge pages (THP not `never`).
fn huge_pages_possible() -> bool {
    static POSSIBLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *POSSIBLE.get_or_init(|| {
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .is_ok_and(|s| !s.contains("[never]"))
    })
}

/// One mapped chunk cut into slots of one class.
#[derive(Debug)]
struct Chunk {
    /// The chunk's mapping, unmapped when the chunk is dropped.
    pages: Pages,
    slot: usize,
    /// Freed slot indexes, reused first.
    free: Vec<u32>,
    /// Slots past this index were never handed out.
    unused_from: u32,
    live: u32,
}

impl Chunk {
    fn has_room(&self) -> bool {
        (self.live as usize) < CHUNK / self.slot
    }
}

#[derive(Debug, Default)]
struct State {
    /// By chunk id; `None` where a chunk was unmapped (its id is in `spare_ids`).
    chunks: Vec<Option<Chunk>>,
    spare_ids: Vec<u32>,
    /// Class (slot size) → ids of its chunks with a free slot.
    with_room: HashMap<usize, Vec<u32>>,
}

/// Cached blocks' memory (see the module comment). Shared by the blocks it holds.
#[derive(Debug, Default)]
pub struct BlockArena {
    state: Mutex<State>,
    /// Bytes of mapped chunks.
    held: AtomicUsize,
    /// Bytes of slots in use.
    live: AtomicUsize,
}

impl BlockArena {
    /// An arena, or `None` when the kernel has transparent huge pages off (the chunks would
    /// only add slack).
    pub fn new() -> Option<Arc<Self>> {
        huge_pages_possible().then(|| Arc::new(Self::default()))
    }

    /// Bytes of mapped chunks.
    pub fn held(&self) -> usize {
        self.held.load(Relaxed)
    }

    /// Bytes of slots holding blocks.
    pub fn live(&self) -> usize {
        self.live.load(Relaxed)
    }

    /// A slot holding a copy of `bytes`, or `None` (the caller keeps the bytes on the heap)
    /// when `bytes` is empty or over [`MAX_SLOT`], or when a new chunk is needed and the arena
    /// already holds `limit` bytes or the kernel refuses the mapping.
    pub fn copy_in(self: &Arc<Self>, bytes: &[u8], limit: usize) -> Option<BlockBytes> {
        if bytes.is_empty() || bytes.len() > MAX_SLOT {
            return None;
        }
        let slot = slot_size(bytes.len());
        let (id, index, base) = {
            let mut guard = self.state.lock();
            let st = &mut *guard;
            let id = match st.with_room.get(&slot).and_then(|ids| ids.last()) {
                Some(&id) => id,
                None => {
                    if self.held() + CHUNK > limit {
                        return None;
                    }
                    let id = self.map_chunk(st, slot)?;
                    st.with_room.entry(slot).or_default().push(id);
                    id
                }
            };
            // A chunk listed with room is mapped; were it not, the block would go to the heap.
            let Some(Some(chunk)) = st.chunks.get_mut(id as usize) else {
                debug_assert!(false, "chunk {id} listed with room is not mapped");
                return None;
            };
            let index = chunk.free.pop().unwrap_or_else(|| {
                chunk.unused_from += 1;
                chunk.unused_from - 1
            });
            chunk.live += 1;
            if !chunk.has_room() {
                if let Some(ids) = st.with_room.get_mut(&slot) {
                    ids.retain(|&i| i != id);
                }
            }
            (id, index, chunk.pages.as_ptr())
        };
        self.live.fetch_add(slot, Relaxed);
        // SAFETY: slot `index` of chunk `id` lies inside its mapping (index < CHUNK / slot)
        // and was just taken off the free slots: nobody else holds it.
        let ptr = unsafe {
            let p = base.add(index as usize * slot);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
            NonNull::new_unchecked(p)
        };
        Some(BlockBytes {
            ptr,
            len: bytes.len(),
            slot: Some((self.clone(), id, index)),
        })
    }

    /// Maps a chunk for class `slot`; `None` when the kernel refuses.
    fn map_chunk(&self, st: &mut State, slot: usize) -> Option<u32> {
        let chunk = Chunk {
            pages: Pages::aligned(CHUNK, CHUNK)?,
            slot,
            free: Vec::new(),
            unused_from: 0,
            live: 0,
        };
        self.held.fetch_add(CHUNK, Relaxed);
        Some(match st.spare_ids.pop() {
            Some(id) => {
                st.chunks[id as usize] = Some(chunk);
                id
            }
            None => {
                st.chunks.push(Some(chunk));
                (st.chunks.len() - 1) as u32
            }
        })
    }

    /// Returns slot `index` of chunk `id`; unmaps the chunk when it was its last.
    fn free(&self, id: u32, index: u32) {
        let mut guard = self.state.lock();
        let st = &mut *guard;
        let Some(entry) = st.chunks.get_mut(id as usize) else {
            debug_assert!(false, "slot of chunk {id}, which never was");
            return;
        };
        let Some(chunk) = entry.as_mut() else {
            debug_assert!(false, "slot of chunk {id}, unmapped while the slot lived");
            return;
        };
        let (slot, was_full) = (chunk.slot, !chunk.has_room());
        chunk.free.push(index);
        chunk.live -= 1;
        self.live.fetch_sub(slot, Relaxed);
        if chunk.live == 0 {
            *entry = None; // unmaps the chunk
            self.held.fetch_sub(CHUNK, Relaxed);
            st.spare_ids.push(id);
            if let Some(ids) = st.with_room.get_mut(&slot) {
                ids.retain(|&i| i != id);
            }
        } else if was_full {
            st.with_room.entry(slot).or_default().push(id);
        }
    }
}

impl Drop for BlockArena {
    fn drop(&mut self) {
        // Every slot holds the arena: none is live here, so no chunk is left mapped.
        debug_assert!(self.state.get_mut().chunks.iter().all(Option::is_none));
    }
}

/// A block's bytes: on the heap, or in a slot of a [`BlockArena`] (freed on drop). The
/// pointer and length are kept apart from the owner, so reading the bytes takes no branch.
pub struct BlockBytes {
    ptr: NonNull<u8>,
    len: usize,
    /// The arena and the slot's chunk and index; `None`: a boxed slice of the heap.
    slot: Option<(Arc<BlockArena>, u32, u32)>,
}

// SAFETY: the bytes are written once before the value exists and only read after; an arena
// slot is freed through the arena's mutex.
unsafe impl Send for BlockBytes {}
unsafe impl Sync for BlockBytes {}

impl BlockBytes {
    /// Bytes on the heap.
    pub fn heap(bytes: Box<[u8]>) -> Self {
        let len = bytes.len();
        let ptr = NonNull::from(Box::leak(bytes)).cast::<u8>();
        Self { ptr, len, slot: None }
    }

    /// Bytes the block takes: its slot's class size in an arena (what the cache charges),
    /// else its length.
    pub fn charge(&self) -> usize {
        match self.slot {
            Some(_) => slot_size(self.len),
            None => self.len,
        }
    }

    /// Whether the bytes are in an arena slot.
    pub fn in_arena(&self) -> bool {
        self.slot.is_some()
    }
}

impl std::ops::Deref for BlockBytes {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` bytes at `ptr` are the box's or were copied into the slot by
        // `copy_in`; either stays allocated until this value is dropped.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::fmt::Debug for BlockBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockBytes").field("len", &self.len).field("in_arena", &self.in_arena()).finish()
    }
}

impl Drop for BlockBytes {
    fn drop(&mut self) {
        match self.slot.take() {
            Some((arena, id, index)) => arena.free(id, index),
            // SAFETY: `ptr` and `len` came from `Box::into_raw` of a boxed slice in `heap`.
            None => unsafe {
                drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.len)));
            },
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail by panicking")]

    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// An arena whether or not the kernel has THP on: the allocator works in small pages too.
    fn arena() -> Arc<BlockArena> {
        Arc::new(BlockArena::default())
    }

    fn bytes(seed: u64, len: usize) -> Vec<u8> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..len).map(|_| rng.gen()).collect()
    }

    #[test]
    fn slot_sizes_round_up_by_under_a_64th() {
        for len in 1..=MAX_SLOT {
            let s = slot_size(len);
            assert!(s >= len && s % 64 == 0, "{len} -> {s}");
            assert!(s - len < 64 || (s - len) * 64 < len, "{len} -> {s}");
        }
        assert_eq!(slot_size(4096), 4096);
        assert_eq!(slot_size(4097), 4160);
        assert_eq!(slot_size(8193), 8192 + 128);
    }

    /// Random copies and frees against a model: every live block keeps its bytes, the counts
    /// match the live slots, and a chunk is unmapped as its last slot goes.
    #[test]
    fn copies_keep_their_bytes_and_chunks_are_released() {
        let a = arena();
        let mut rng = StdRng::seed_from_u64(7);
        let mut live: Vec<(u64, BlockBytes)> = Vec::new();
        for step in 0..20_000u64 {
            if live.len() < 2000 && rng.gen_bool(0.55) {
                let len = if rng.gen_bool(0.9) { rng.gen_range(4000..4600) } else { rng.gen_range(1..70_000) };
                let b = a.copy_in(&bytes(step, len), usize::MAX).expect("no limit");
                assert!(b.in_arena() && b.charge() == slot_size(len) && b.len() == len);
                live.push((step, b));
            } else if !live.is_empty() {
                let i = rng.gen_range(0..live.len());
                let (seed, b) = live.swap_remove(i);
                assert_eq!(&*b, &bytes(seed, b.len())[..], "step {step}");
            }
            if step % 1000 == 0 {
                assert_eq!(a.live(), live.iter().map(|(_, b)| b.charge()).sum::<usize>());
                assert_eq!(a.held() % CHUNK, 0);
                assert!(a.held() >= a.live());
            }
        }
        for (seed, b) in &live {
            assert_eq!(&**b, &bytes(*seed, b.len())[..]);
        }
        drop(live);
        assert_eq!((a.held(), a.live()), (0, 0), "every chunk is unmapped once empty");
    }

    #[test]
    fn slots_are_reused_before_a_chunk_is_added() {
        let a = arena();
        let per_chunk = CHUNK / 4096;
        let copy = |fill: usize| (fill as u8, a.copy_in(&[fill as u8; 4096], usize::MAX).unwrap());
        let mut v: Vec<_> = (0..per_chunk).map(copy).collect();
        assert_eq!(a.held(), CHUNK);
        v.push(copy(1));
        assert_eq!(a.held(), 2 * CHUNK, "a full chunk makes the class map another");
        v.swap_remove(3);
        v.push(copy(2));
        v.push(copy(3));
        assert_eq!(a.held(), 2 * CHUNK, "the freed slot and the second chunk's room are used");
        // Another class takes its own chunk, unmapped with its last block.
        let other = a.copy_in(&[4; 4500], usize::MAX).unwrap();
        assert_eq!(a.held(), 3 * CHUNK);
        drop(other);
        assert_eq!(a.held(), 2 * CHUNK);
        assert!(v.iter().all(|(fill, b)| b.iter().all(|x| x == fill)));
    }

    #[test]
    fn the_limit_sends_blocks_to_the_heap() {
        let a = arena();
        assert!(a.copy_in(&[0; 100], CHUNK - 1).is_none(), "no chunk fits the limit");
        let first = a.copy_in(&[0; 100], CHUNK).unwrap();
        assert!(a.copy_in(&[0; 100], CHUNK).is_some(), "a free slot needs no new chunk");
        assert!(a.copy_in(&[0; 200], CHUNK).is_none(), "a new class would pass the limit");
        assert!(a.copy_in(&[], usize::MAX).is_none() && a.copy_in(&vec![0; MAX_SLOT + 1], usize::MAX).is_none());
        drop(first);
    }

    #[test]
    fn heap_bytes_read_back() {
        let b = BlockBytes::heap(vec![1, 2, 3].into_boxed_slice());
        assert_eq!((&*b, b.charge(), b.in_arena()), (&[1u8, 2, 3][..], 3, false));
        let empty = BlockBytes::heap(Box::new([]));
        assert!(empty.is_empty());
    }

    /// Threads copying in and dropping at once, and a thread dropping blocks the others
    /// copied in: no slot is handed out twice (each block keeps its bytes), and the arena ends
    /// empty.
    #[test]
    fn concurrent_copies_and_frees() {
        let a = arena();
        let (send, recv) = std::sync::mpsc::channel::<(u64, BlockBytes)>();
        std::thread::scope(|s| {
            for t in 0..3u64 {
                let (a, send) = (a.clone(), send.clone());
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(t);
                    let mut mine: Vec<(u64, BlockBytes)> = Vec::new();
                    for step in 0..5000u64 {
                        let seed = t << 32 | step;
                        if mine.len() < 300 && rng.gen_bool(0.6) {
                            let len = rng.gen_range(4000..4400);
                            mine.push((seed, a.copy_in(&bytes(seed, len), usize::MAX).unwrap()));
                        } else if !mine.is_empty() {
                            let entry = mine.swap_remove(rng.gen_range(0..mine.len()));
                            if rng.gen_bool(0.5) {
                                send.send(entry).unwrap();
                            } else {
                                assert_eq!(&*entry.1, &bytes(entry.0, entry.1.len())[..]);
                            }
                        }
                    }
                    for entry in mine {
                        send.send(entry).unwrap();
                    }
                });
            }
            drop(send);
            s.spawn(move || {
                for (seed, b) in recv {
                    assert_eq!(&*b, &bytes(seed, b.len())[..]);
                }
            });
        });
        assert_eq!((a.held(), a.live()), (0, 0));
    }
}
