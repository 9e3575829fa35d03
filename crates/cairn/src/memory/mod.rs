//! Memory as run-time values (docs/design.md §5): the budget of each region lives in atomics that the
//! write path and the caches read when they act, so a tuner (or the user) can move memory
//! between regions while the database runs.
//!
//! Regions today: **write memory** (all trees' memtables; `make_room` reads the budget and the
//! per-memtable size on every write group), the **block cache** (its capacity is the cache's
//! own, resizable), **pinned meta** (index blocks and properties held by open table readers:
//! counted exactly, not yet bounded), and **filter memory** (filter units: pinned in their
//! table readers and charged to the pinned-filter region, or — with `index_in_block_cache` —
//! charged to the block cache's high-priority pool).

pub(crate) mod pages;

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// Fixes glibc malloc's mmap threshold at `bytes` (`malloc_mmap_threshold`; 0: leave it),
/// once per process and not over `MALLOC_MMAP_THRESHOLD_`. A fixed threshold turns off glibc's
/// raising it as large blocks are freed, so a freed memtable arena or compaction buffer goes
/// back to the system instead of staying in a heap.
pub(crate) fn fix_malloc_threshold(bytes: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        if bytes == 0 || std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some() {
            return;
        }
        let Ok(value) = i32::try_from(bytes) else {
            return;
        };
        ONCE.call_once(|| {
            // SAFETY: mallopt changes malloc's parameters under malloc's own lock; any thread
            // may call it at any time.
            if unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, value) } != 1 {
                tracing::warn!(bytes, "malloc refused the mmap threshold");
            }
        });
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = bytes;
}

/// Returns the free memory of glibc malloc's heaps to the system (`malloc_trim`), when the
/// allocator is managed (`malloc_mmap_threshold` above 0): called after a region shrinks, off
/// the read path.
pub(crate) fn trim_malloc(threshold: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if threshold > 0 {
        // SAFETY: malloc_trim works under malloc's own locks; any thread may call it.
        unsafe {
            libc::malloc_trim(0);
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = threshold;
}

/// A hint to load the cache line holding `p` into the CPU cache: it reads nothing and cannot
/// fault, whatever the address. Used where a lookup would otherwise take its memory misses one
/// after another (each address known only from the previous load).
#[inline(always)]
pub(crate) fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: no access is made, so no address can make it fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// One memory region: a capacity and the bytes charged to it.
#[derive(Debug, Default)]
pub struct Region {
    capacity: AtomicUsize,
    usage: AtomicUsize,
}

impl Region {
    /// A region of `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        Region {
            capacity: AtomicUsize::new(capacity),
            usage: AtomicUsize::new(0),
        }
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity.load(Relaxed)
    }

    /// Sets the capacity (what shrinking frees is up to the region's owner).
    pub fn set_capacity(&self, bytes: usize) {
        self.capacity.store(bytes, Relaxed);
    }

    /// Bytes charged.
    pub fn usage(&self) -> usize {
        self.usage.load(Relaxed)
    }

    /// Charges `bytes`, released when the returned guard drops.
    pub fn charge(self: &Arc<Self>, bytes: usize) -> Charge {
        self.usage.fetch_add(bytes, Relaxed);
        Charge {
            region: self.clone(),
            bytes,
        }
    }
}

/// Bytes charged to a region for as long as the value lives.
#[derive(Debug)]
pub struct Charge {
    region: Arc<Region>,
    bytes: usize,
}

impl Charge {
    /// Bytes held.
    #[cfg(any(test, feature = "test-util"))]
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.region.usage.fetch_sub(self.bytes, Relaxed);
    }
}

/// The engine's memory regions (the block cache is held beside them: its capacity is its own).
#[derive(Debug)]
pub struct MemoryRegions {
    /// Write memory: capacity = the budget shared by every tree's memtables (usage is read
    /// from the memtables themselves).
    pub write: Region,
    /// Size at which one tree's active memtable is switched.
    pub write_buffer_size: AtomicUsize,
    /// Index blocks and properties pinned by open table readers (with
    /// `index_in_block_cache`, what they pin beside the index: fences, properties).
    pub pinned_meta: Arc<Region>,
    /// The index blocks of open table readers, wherever they are (pinned, cached or out):
    /// an unbounded count, the index working set the memory tuner keeps room for.
    pub table_index: Arc<Region>,
    /// Filter units pinned by open table readers (unbounded unless a tuner bounds it: units
    /// read while it is full go through the block cache).
    pub pinned_filters: Arc<Region>,
    /// Range filters pinned by open table readers: a share of the block cache when they are
    /// charged to it (`range_filter.memory_share`), else unbounded.
    pub range_filters: Arc<Region>,
}

impl MemoryRegions {
    /// Regions with the given write budget, memtable size and range-filter capacity.
    pub fn new(write_memory_budget: usize, write_buffer_size: usize, range_filters: usize) -> Self {
        MemoryRegions {
            write: Region::new(write_memory_budget),
            write_buffer_size: AtomicUsize::new(write_buffer_size),
            pinned_meta: Arc::new(Region::new(usize::MAX)),
            table_index: Arc::new(Region::new(usize::MAX)),
            pinned_filters: Arc::new(Region::new(usize::MAX)),
            range_filters: Arc::new(Region::new(range_filters)),
        }
    }

    /// The write-memory budget.
    pub fn write_budget(&self) -> usize {
        self.write.capacity()
    }

    /// The memtable size at which a tree's active memtable is switched.
    pub fn write_buffer_size(&self) -> usize {
        self.write_buffer_size.load(Relaxed)
    }
}

/// New memory limits for [`Db::resize_memory`](crate::Db::resize_memory); `None` keeps a limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryLimits {
    /// Write memory shared by all trees' memtables.
    pub write_memory_budget: Option<usize>,
    /// Size at which one tree's memtable is switched (≤ the write budget).
    pub write_buffer_size: Option<usize>,
    /// Block cache capacity (shrinking evicts at once).
    pub block_cache: Option<usize>,
    /// Filter memory of the elastic policies (shrinking unloads units at once).
    pub filter_memory: Option<usize>,
    /// The key-value cache's capacity (shrinking evicts at once; a database opened without
    /// one refuses to start one).
    pub kv_cache: Option<usize>,
}

/// Capacity and usage of every region.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    /// Write-memory budget.
    pub write_capacity: usize,
    /// Bytes held by every tree's memtables.
    pub write_usage: usize,
    /// Size at which a tree's active memtable is switched.
    pub write_buffer_size: usize,
    /// Block-cache capacity.
    pub cache_capacity: usize,
    /// Bytes the block cache holds (data blocks, filter units, index blocks).
    pub cache_usage: usize,
    /// Of `cache_usage`, data blocks.
    pub cache_data_usage: usize,
    /// Of `cache_usage`, index blocks (`cache.index_in_block_cache`: they are cached at high
    /// priority, not pinned; 0 otherwise).
    pub cache_index_usage: usize,
    /// Of `cache_capacity`, the part reserved for what open table readers pin beside the
    /// index (fences, properties; `cache.index_in_block_cache`; 0 when they are not charged to
    /// the cache).
    pub cache_reserved: usize,
    /// Huge-page chunks holding cached blocks (`cache.huge_pages`; 0 when none is used).
    pub cache_huge_pages: usize,
    /// Of `cache_huge_pages`, the free slots: memory held beyond `cache_usage` (counted in
    /// [`total_usage`](Self::total_usage)).
    pub cache_huge_page_slack: usize,
    /// The index blocks of every open table reader, cached or not.
    pub table_index_bytes: usize,
    /// Filter memory of the elastic policies (0 for the others, whose filter units live in the
    /// block cache at high priority).
    pub filter_capacity: usize,
    /// Filter units: pinned in table readers, plus those in the block cache.
    pub filter_usage: usize,
    /// Index blocks and properties pinned by open table readers (without
    /// `cache.index_in_block_cache`; with it, fences and properties only).
    pub pinned_meta_usage: usize,
    /// Filter units pinned by open table readers (part of `filter_usage`, not of the cache's).
    pub pinned_filter_usage: usize,
    /// What range filters may hold (`range_filter.memory_share` of the block cache when they
    /// are charged to it; `usize::MAX`: not bounded).
    pub range_filter_capacity: usize,
    /// Range filters pinned by open table readers (reserved in the block cache when charged
    /// to it, like the index blocks).
    pub range_filter_usage: usize,
    /// The ghost cache's simulated capacity (0: off).
    pub ghost_capacity: usize,
    /// Block ids the ghost cache holds (each about 40 bytes of real memory).
    pub ghost_ids: usize,
    /// The key-value cache's capacity (0: none).
    pub kv_cache_capacity: usize,
    /// Bytes the key-value cache holds (entries and their overhead).
    pub kv_cache_usage: usize,
}

impl MemoryUsage {
    /// Filter units in the block cache (the part of `filter_usage` not pinned in readers).
    pub fn cached_filter_usage(&self) -> usize {
        self.filter_usage.saturating_sub(self.pinned_filter_usage)
    }

    /// Every byte the engine accounts for.
    pub fn total_usage(&self) -> usize {
        self.write_usage
            + self.cache_usage
            + self.cache_huge_page_slack
            + self.pinned_meta_usage
            + self.pinned_filter_usage
            + self.range_filter_usage
            + self.kv_cache_usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_are_released_on_drop() {
        let r = Arc::new(Region::new(100));
        let a = r.charge(30);
        let b = r.charge(20);
        assert_eq!((r.usage(), a.bytes()), (50, 30));
        drop(a);
        assert_eq!(r.usage(), 20);
        drop(b);
        assert_eq!(r.usage(), 0);
        r.set_capacity(7);
        assert_eq!(r.capacity(), 7);
    }
}
