//! I/O accounting: per block kind, reads from storage (count and bytes) and cache hits; bytes
//! written; syncs. Relaxed atomics, each group on its own cache line; the read counters are
//! striped per thread (`stats/stripe.rs`), so two readers never write one line.

use super::stripe::{Stripe, Striped};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// What a read block holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockKind {
    /// Key/value data.
    Data = 0,
    /// Fence pointers.
    Index = 1,
    /// One point-filter unit.
    FilterUnit = 2,
    /// The range filter.
    RangeFilter = 3,
    /// The properties block.
    Properties = 4,
    /// Footer and metaindex.
    Meta = 5,
}

impl BlockKind {
    /// Every kind, in index order.
    pub const ALL: [BlockKind; 6] = [
        BlockKind::Data,
        BlockKind::Index,
        BlockKind::FilterUnit,
        BlockKind::RangeFilter,
        BlockKind::Properties,
        BlockKind::Meta,
    ];
    /// Short lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::Data => "data",
            BlockKind::Index => "index",
            BlockKind::FilterUnit => "filter",
            BlockKind::RangeFilter => "range-filter",
            BlockKind::Properties => "properties",
            BlockKind::Meta => "meta",
        }
    }
}

#[derive(Debug, Default)]
#[repr(align(64))]
struct KindCounters {
    reads: AtomicU64,
    bytes: AtomicU64,
    cache_hits: AtomicU64,
    ghost_hits: AtomicU64,
}

#[derive(Debug, Default)]
#[repr(align(64))]
struct WriteCounters {
    bytes_written: AtomicU64,
    syncs: AtomicU64,
}

#[derive(Debug, Default)]
#[repr(align(64))]
struct ReadaheadCounters {
    chunks: AtomicU64,
    bytes: AtomicU64,
    served: AtomicU64,
    blocks: AtomicU64,
}

/// Shared I/O counters; cheap enough to stay on in production.
#[derive(Debug, Default)]
pub struct IoStats {
    kinds: Striped<[KindCounters; 6]>,
    readahead: Striped<ReadaheadCounters>,
    writes: WriteCounters,
}

/// Readahead (`sst::Readahead`) at one moment: the chunks read ahead of the blocks, and the
/// bytes of blocks they served; what they read and never served was wasted (or is still in a
/// live iterator's buffer).
#[derive(Default, Clone, Copy, PartialEq, Eq)]
pub struct ReadaheadSnapshot {
    /// Chunks read (one storage read each).
    pub chunks: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Bytes of the blocks served from them (each block also counts as a read of its kind).
    pub served: u64,
    /// Blocks served from them.
    pub blocks: u64,
}

impl ReadaheadSnapshot {
    /// Bytes read ahead and never served.
    pub fn wasted(&self) -> u64 {
        self.bytes.saturating_sub(self.served)
    }
}

/// Counters of one block kind at one moment.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
pub struct KindSnapshot {
    /// Blocks read from storage.
    pub reads: u64,
    /// Bytes read from storage (including block trailers).
    pub bytes: u64,
    /// Blocks served by the block cache.
    pub cache_hits: u64,
    /// Blocks read from storage that the ghost cache held: reads a cache larger by the ghost's
    /// simulated capacity would have saved (0 without a ghost cache).
    pub ghost_hits: u64,
}

/// A copy of all counters; subtract two to get the I/O of an interval.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
pub struct IoSnapshot {
    /// Key/value data blocks.
    pub data: KindSnapshot,
    /// Index blocks (fence pointers).
    pub index: KindSnapshot,
    /// Point-filter units.
    pub filter: KindSnapshot,
    /// Range-filter blocks.
    pub range_filter: KindSnapshot,
    /// Properties blocks.
    pub properties: KindSnapshot,
    /// Footers and metaindex blocks.
    pub meta: KindSnapshot,
    /// Readahead chunks (their blocks are also counted by kind above).
    pub readahead: ReadaheadSnapshot,
    /// Bytes appended to files.
    pub bytes_written: u64,
    /// Syncs issued (file data and directories).
    pub syncs: u64,
}

impl IoSnapshot {
    /// Counters of one kind.
    pub fn kind(&self, k: BlockKind) -> KindSnapshot {
        match k {
            BlockKind::Data => self.data,
            BlockKind::Index => self.index,
            BlockKind::FilterUnit => self.filter,
            BlockKind::RangeFilter => self.range_filter,
            BlockKind::Properties => self.properties,
            BlockKind::Meta => self.meta,
        }
    }

    fn kind_mut(&mut self, k: BlockKind) -> &mut KindSnapshot {
        match k {
            BlockKind::Data => &mut self.data,
            BlockKind::Index => &mut self.index,
            BlockKind::FilterUnit => &mut self.filter,
            BlockKind::RangeFilter => &mut self.range_filter,
            BlockKind::Properties => &mut self.properties,
            BlockKind::Meta => &mut self.meta,
        }
    }

    /// Blocks of every kind read from storage.
    pub fn total_reads(&self) -> u64 {
        BlockKind::ALL.iter().map(|&k| self.kind(k).reads).sum()
    }
}

impl std::ops::Sub for IoSnapshot {
    type Output = IoSnapshot;
    fn sub(self, o: IoSnapshot) -> IoSnapshot {
        let mut out = self;
        for k in BlockKind::ALL {
            let (a, b) = (out.kind_mut(k), o.kind(k));
            a.reads -= b.reads;
            a.bytes -= b.bytes;
            a.cache_hits -= b.cache_hits;
            a.ghost_hits -= b.ghost_hits;
        }
        out.readahead = ReadaheadSnapshot {
            chunks: self.readahead.chunks.saturating_sub(o.readahead.chunks),
            bytes: self.readahead.bytes.saturating_sub(o.readahead.bytes),
            served: self.readahead.served.saturating_sub(o.readahead.served),
            blocks: self.readahead.blocks.saturating_sub(o.readahead.blocks),
        };
        out.bytes_written -= o.bytes_written;
        out.syncs -= o.syncs;
        out
    }
}

impl IoStats {
    /// Fresh counters at zero.
    pub fn new() -> Self {
        Self::default()
    }
    /// Records a block read from storage.
    #[inline]
    pub fn record_read(&self, kind: BlockKind, bytes: u64) {
        let s = Stripe::current();
        let k = &self.kinds.at(s)[kind as usize];
        s.add(&k.reads, 1);
        s.add(&k.bytes, bytes);
    }
    /// Records a block served by the cache.
    #[inline]
    pub fn record_cache_hit(&self, kind: BlockKind) {
        let s = Stripe::current();
        s.add(&self.kinds.at(s)[kind as usize].cache_hits, 1);
    }
    /// Records a storage read the ghost cache would have saved.
    #[inline]
    pub fn record_ghost_hit(&self, kind: BlockKind) {
        let s = Stripe::current();
        s.add(&self.kinds.at(s)[kind as usize].ghost_hits, 1);
    }
    /// Records a readahead chunk of `bytes` read from storage.
    #[inline]
    pub fn record_readahead(&self, bytes: u64) {
        let s = Stripe::current();
        let r = self.readahead.at(s);
        s.add(&r.chunks, 1);
        s.add(&r.bytes, bytes);
    }
    /// Records a block of `kind` and `bytes` read from storage through a readahead chunk (one
    /// stripe lookup for both counts: this runs per block of a scan).
    #[inline]
    pub fn record_read_ahead(&self, kind: BlockKind, bytes: u64) {
        let s = Stripe::current();
        let k = &self.kinds.at(s)[kind as usize];
        s.add(&k.reads, 1);
        s.add(&k.bytes, bytes);
        let r = self.readahead.at(s);
        s.add(&r.served, bytes);
        s.add(&r.blocks, 1);
    }
    /// Records bytes appended to a file.
    #[inline]
    pub fn record_write(&self, bytes: u64) {
        self.writes.bytes_written.fetch_add(bytes, Relaxed);
    }
    /// Records one sync.
    #[inline]
    pub fn record_sync(&self) {
        self.writes.syncs.fetch_add(1, Relaxed);
    }
    /// Copies every counter.
    pub fn snapshot(&self) -> IoSnapshot {
        let mut s = IoSnapshot::default();
        for k in BlockKind::ALL {
            let (i, out) = (k as usize, s.kind_mut(k));
            out.reads = self.kinds.sum(|k| k[i].reads.load(Relaxed));
            out.bytes = self.kinds.sum(|k| k[i].bytes.load(Relaxed));
            out.cache_hits = self.kinds.sum(|k| k[i].cache_hits.load(Relaxed));
            out.ghost_hits = self.kinds.sum(|k| k[i].ghost_hits.load(Relaxed));
        }
        s.readahead = ReadaheadSnapshot {
            chunks: self.readahead.sum(|r| r.chunks.load(Relaxed)),
            bytes: self.readahead.sum(|r| r.bytes.load(Relaxed)),
            served: self.readahead.sum(|r| r.served.load(Relaxed)),
            blocks: self.readahead.sum(|r| r.blocks.load(Relaxed)),
        };
        s.bytes_written = self.writes.bytes_written.load(Relaxed);
        s.syncs = self.writes.syncs.load(Relaxed);
        s
    }
}
