//! The data of memory SSTables (memory-merge outputs) in pages mapped straight from the OS
//! rather than taken from malloc.
//!
//! Why: glibc raises its mmap threshold to the size of the largest mmapped block freed (up to
//! 32 MiB), so once one run-sized buffer has been freed, the next ones come from malloc's heaps,
//! and runs come in every size a merge step cuts: the heaps fragment and their freed space stays
//! in the process. With 256 MiB of partitioned write memory (8M-key load plus 3M zipf updates,
//! 64 MiB block cache) peak RSS was 371 MB through malloc and 254 MB mapped; at 64 MiB, 169–177
//! against 116 MB. The price is a page fault and zeroing per page of every new run (a 6M-key
//! load at 64 MiB: memory merges 5.6 → 7.4 s, process CPU +9%; huge pages where the kernel
//! allows cut the fault count). So a memory merge reuses the pages of the runs it retires: one
//! mapping is kept (a [`Spare`], charged to write memory) for the next run it builds, and a
//! buffer grows by remapping rather than copying. Other mappings go back to the OS when
//! dropped, and an unused tail without copying (`PageVec::shrink_to_fit`).
//! Skiplist chunks stay in malloc: they are all one size, so freed ones are reused whole.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// `len` rounded up to whole pages (at least one).
fn round_up(len: usize) -> usize {
    len.max(1).next_multiple_of(page_size())
}

/// A fresh private anonymous mapping of `len` bytes (`MAP_FAILED` when refused).
fn map(len: usize) -> *mut libc::c_void {
    // SAFETY: no existing memory is touched.
    unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    }
}

/// A zeroed, page-aligned anonymous mapping, unmapped on drop.
#[derive(Debug)]
pub(crate) struct Pages {
    ptr: NonNull<u8>,
    /// Mapped bytes (whole pages).
    len: usize,
}

// SAFETY: plain memory owned by this value; access goes through `&`/`&mut` as for a Vec.
unsafe impl Send for Pages {}
unsafe impl Sync for Pages {}

impl Pages {
    /// At least `len` zeroed bytes. Failure to map is treated as the global allocator treats
    /// out-of-memory (`handle_alloc_error`).
    fn new(len: usize) -> Pages {
        let len = round_up(len);
        let p = map(len);
        match NonNull::new(p as *mut u8) {
            Some(ptr) if p != libc::MAP_FAILED => {
                if len >= 2 << 20 {
                    // Huge pages: one fault per 2 MiB instead of 512. SAFETY: advice on our own
                    // mapping.
                    unsafe { libc::madvise(p, len, libc::MADV_HUGEPAGE) };
                }
                Pages { ptr, len }
            }
            _ => std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(len, 1).unwrap_or(std::alloc::Layout::new::<u8>()),
            ),
        }
    }

    /// `len` bytes (whole pages) at a multiple of `align` (a power of two, at least a page),
    /// advised for huge pages; `None` when the kernel refuses the mapping (the caller falls
    /// back to the heap). Maps `len + align` and gives back the unaligned ends.
    pub(crate) fn aligned(len: usize, align: usize) -> Option<Pages> {
        let len = round_up(len);
        let span = len + align;
        let p = map(span);
        if p == libc::MAP_FAILED {
            return None;
        }
        let start = p as usize;
        let head = start.next_multiple_of(align) - start;
        // SAFETY: both ends lie inside the mapping just made and nothing points into them; the
        // advice is on the part kept.
        unsafe {
            if head > 0 {
                libc::munmap(p, head);
            }
            let kept = p.cast::<u8>().add(head);
            if span > head + len {
                libc::munmap(kept.add(len).cast(), span - head - len);
            }
            // Advice only: without it the pages still work, small.
            libc::madvise(kept.cast(), len, libc::MADV_HUGEPAGE);
            NonNull::new(kept).map(|ptr| Pages { ptr, len })
        }
    }

    /// Mapped bytes.
    fn len(&self) -> usize {
        self.len
    }

    /// The first byte; valid for `len()` bytes while `self` lives.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Gives back the whole pages past `keep` bytes.
    fn truncate(&mut self, keep: usize) {
        let keep = round_up(keep);
        if keep < self.len {
            // SAFETY: the range is page-aligned, inside this mapping and no longer used.
            unsafe { libc::munmap(self.ptr.as_ptr().add(keep) as *mut libc::c_void, self.len - keep) };
            self.len = keep;
        }
    }

    /// Resizes the mapping to `len` bytes (whole pages), moving it if it must: the pages kept
    /// keep their bytes and are not faulted in again. False (mapping unchanged) if refused.
    fn resize(&mut self, len: usize) -> bool {
        let len = round_up(len);
        if len == self.len {
            return true;
        }
        // SAFETY: our own mapping of `self.len` bytes; on success only the returned address is
        // used from here on.
        let p = unsafe { libc::mremap(self.ptr.as_ptr() as *mut libc::c_void, self.len, len, libc::MREMAP_MAYMOVE) };
        match NonNull::new(p as *mut u8) {
            Some(ptr) if p != libc::MAP_FAILED => {
                self.ptr = ptr;
                self.len = len;
                true
            }
            _ => false,
        }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new` (less any truncated tail), not used after this.
        unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len) };
    }
}

/// Buffers smaller than this stay in malloc (well under its default threshold, and a page per
/// tiny run would charge write memory for nothing).
const MAP_MIN: usize = 64 << 10;

/// A growable byte buffer: a `Vec<u8>` while small, [`Pages`] from `MAP_MIN` bytes on.
#[derive(Debug, Default)]
pub(crate) struct PageVec(Store);

#[derive(Debug)]
enum Store {
    Heap(Vec<u8>),
    Mapped { pages: Pages, len: usize },
}

impl Default for Store {
    fn default() -> Self {
        Store::Heap(Vec::new())
    }
}

impl PageVec {
    /// An empty buffer with room for `cap` bytes.
    pub fn with_capacity(cap: usize) -> PageVec {
        PageVec(if cap < MAP_MIN {
            Store::Heap(Vec::with_capacity(cap))
        } else {
            Store::Mapped {
                pages: Pages::new(cap),
                len: 0,
            }
        })
    }

    /// An empty buffer with room for `cap` bytes in the pages of `old` when it has some (the
    /// ones kept are not faulted in and zeroed again), else in fresh ones.
    fn reuse(old: PageVec, cap: usize) -> PageVec {
        if let Store::Mapped { mut pages, .. } = old.0 {
            if cap >= MAP_MIN && pages.resize(cap) {
                return PageVec(Store::Mapped { pages, len: 0 });
            }
        }
        PageVec::with_capacity(cap)
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        match &self.0 {
            Store::Heap(v) => v.len(),
            Store::Mapped { len, .. } => *len,
        }
    }

    /// Bytes allocated.
    pub fn capacity(&self) -> usize {
        match &self.0 {
            Store::Heap(v) => v.capacity(),
            Store::Mapped { pages, .. } => pages.len(),
        }
    }

    /// Appends `bytes`; a full buffer grows to twice its size (mapped once past `MAP_MIN`).
    #[inline]
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        let need = self.len() + bytes.len();
        if need > self.capacity() && need >= MAP_MIN {
            let want = need.max(2 * self.capacity());
            // A mapping grows by remapping (its pages neither copied nor faulted in again).
            let remapped = match &mut self.0 {
                Store::Mapped { pages, .. } => pages.resize(want),
                Store::Heap(_) => false,
            };
            if !remapped {
                let mut bigger = PageVec::with_capacity(want);
                bigger.extend_from_slice(self);
                *self = bigger;
            }
        }
        match &mut self.0 {
            Store::Heap(v) => v.extend_from_slice(bytes),
            Store::Mapped { pages, len } => {
                debug_assert!(*len + bytes.len() <= pages.len());
                // SAFETY: in bounds of the mapping (it was grown above); `bytes` cannot alias
                // the unwritten tail, which nothing has borrowed.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), pages.as_ptr().add(*len), bytes.len()) };
                *len += bytes.len();
            }
        }
    }

    /// Frees the unused capacity (mapped: returns the whole unused pages, no copy).
    pub fn shrink_to_fit(&mut self) {
        match &mut self.0 {
            Store::Heap(v) => v.shrink_to_fit(),
            Store::Mapped { len: 0, .. } => *self = PageVec::default(),
            Store::Mapped { pages, len } => pages.truncate(*len),
        }
    }

    /// The bytes held.
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Store::Heap(v) => v,
            // SAFETY: the first `len` bytes of the mapping were written by `extend_from_slice`.
            Store::Mapped { pages, len } => unsafe { std::slice::from_raw_parts(pages.as_ptr(), *len) },
        }
    }
}

impl std::ops::Deref for PageVec {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

/// One mapping kept from a dropped buffer for the next buffer made: a run's worth of pages
/// that the kernel need not fault in and zero again (on a 16M-key load with 64 MiB of
/// partitioned write memory, merges build about 15 GB of runs). Keeps nothing while closed;
/// whoever owns it charges [`bytes`](Self::bytes).
#[derive(Debug, Default)]
pub(crate) struct Spare {
    slot: parking_lot::Mutex<Option<PageVec>>,
    bytes: AtomicUsize,
    open: AtomicBool,
}

impl Spare {
    /// Keeps `v`'s pages if open and holding none (else they go back to the OS).
    pub fn offer(&self, v: PageVec) {
        if !matches!(v.0, Store::Mapped { .. }) || !self.open.load(Ordering::Relaxed) {
            return;
        }
        let mut slot = self.slot.lock();
        if slot.is_none() {
            self.bytes.store(v.capacity(), Ordering::Relaxed);
            *slot = Some(v);
        }
    }

    /// An empty buffer with room for `cap` bytes, in the kept pages if there are some.
    pub fn take(&self, cap: usize) -> PageVec {
        match self.kept() {
            Some(v) => PageVec::reuse(v, cap),
            None => PageVec::with_capacity(cap),
        }
    }

    /// Opens (pages offered are kept) or closes (and frees what is kept).
    pub fn set_open(&self, open: bool) {
        self.open.store(open, Ordering::Relaxed);
        if !open {
            drop(self.kept());
        }
    }

    /// Takes what is kept (freed outside the lock by the caller).
    fn kept(&self) -> Option<PageVec> {
        let mut slot = self.slot.lock();
        self.bytes.store(0, Ordering::Relaxed);
        slot.take()
    }

    /// Bytes kept.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_shrinks_and_keeps_bytes() {
        let mut v = PageVec::with_capacity(10);
        assert!(matches!(v.0, Store::Heap(_)));
        let mut model = Vec::new();
        for i in 0..100_000u32 {
            v.extend_from_slice(&i.to_le_bytes());
            model.extend_from_slice(&i.to_le_bytes());
        }
        assert_eq!(&v[..], &model[..]);
        assert!(matches!(v.0, Store::Mapped { .. }), "mapped once past MAP_MIN");
        assert!(v.capacity() >= v.len() && v.capacity() % page_size() == 0);
        v.shrink_to_fit();
        assert_eq!(v.capacity(), round_up(model.len()));
        assert_eq!(&v[..], &model[..]);
        let mut empty = PageVec::default();
        assert!(empty.is_empty() && empty.capacity() == 0);
        empty.extend_from_slice(b"abc");
        assert_eq!(&empty[..], b"abc");
        let mut unused = PageVec::with_capacity(1 << 20);
        assert_eq!(unused.capacity(), 1 << 20);
        unused.shrink_to_fit();
        assert_eq!(unused.capacity(), 0);
    }

    #[test]
    fn a_spare_reuses_pages_while_open() {
        let spare = Spare::default();
        let mut v = PageVec::with_capacity(1 << 20);
        v.extend_from_slice(&[7; 1000]);
        spare.offer(v);
        assert_eq!(spare.bytes(), 0, "closed: nothing kept");
        spare.set_open(true);
        let mut v = PageVec::with_capacity(1 << 20);
        v.extend_from_slice(&[7; 1000]);
        v.shrink_to_fit();
        spare.offer(v);
        assert_eq!(spare.bytes(), page_size());
        spare.offer(PageVec::with_capacity(1 << 20));
        assert_eq!(spare.bytes(), page_size(), "one mapping kept");
        // Taken back larger: the kept page comes along, the buffer starts empty.
        let mut w = spare.take(1 << 20);
        assert_eq!((w.len(), w.capacity(), spare.bytes()), (0, 1 << 20, 0));
        let model: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        w.extend_from_slice(&model);
        assert_eq!(&w[..], &model[..]);
        spare.offer(w);
        assert_eq!(spare.bytes(), 1 << 20);
        spare.set_open(false);
        assert_eq!(spare.bytes(), 0, "closing frees what is kept");
        let fresh = spare.take(1 << 20);
        assert!(fresh.is_empty() && fresh.capacity() == 1 << 20);
    }

    #[test]
    fn pages_are_zeroed_and_truncate() {
        let mut p = Pages::new(3 * page_size());
        // SAFETY: inside the mapping.
        let s = unsafe { std::slice::from_raw_parts(p.as_ptr(), p.len()) };
        assert!(s.iter().all(|&b| b == 0));
        p.truncate(1);
        assert_eq!(p.len(), page_size());
    }
}
