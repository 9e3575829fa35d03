//! Opens a table and answers point lookups.

use super::block::{Block, BlockIter, HashHint};
use super::fences::{self, Fences, INDEX_STRIDE};
use super::footer::{BlockHandle, Footer, FOOTER_LEN};
use super::properties::Properties;
use super::trailer::{decode_block, read_block, Readahead, TRAILER_LEN};
use super::{METAINDEX_PROPERTIES, METAINDEX_RANGE_DEL, METAINDEX_RANGE_FILTER};
use crate::range_del::{self, Fragments};
use super::{BlockCache, CachedBlock};
use crate::cache::{BlockBytes, BlockKey, GhostCache, Priority};
use crate::env::{FileSystem, RandomAccessFile, ReadOptions};
use crate::error::{Error, Result};
use crate::filter::range::RangeFilter;
use crate::filter::{BloomFilter, LoadedUnits};
use crate::format::coding::Decoder;
use crate::format::ikey::{self, KeyOrder, LookupKey, ValueKind};
use crate::iter::InternalIterator;
use crate::memory::{Charge, Region};
use arc_swap::ArcSwapOption;
use crate::stats::{BlockKind, IoStats, Probe};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// How a table is read.
#[derive(Debug, Clone, Default)]
pub struct ReaderOptions {
    /// O_DIRECT reads.
    pub direct: bool,
    /// Shared block cache for data blocks and filter units (none: every read goes to storage).
    pub cache: Option<Arc<BlockCache>>,
    /// Where reads are counted.
    pub stats: Arc<IoStats>,
    /// The region charged with what the reader pins (index block, properties) while it is open.
    pub meta_region: Option<Arc<Region>>,
    /// Keep the index block in the block cache (`cache`) at high priority rather than pinned,
    /// and reserve what the reader still pins (fences, properties) in the cache, so that data,
    /// filter and index blocks share its capacity and an index competes for it (RocksDB's
    /// `cache_index_and_filter_blocks` without pinning). Without a cache the index is pinned.
    pub reserve_in_cache: bool,
    /// Charged with the size of the reader's index block while it is open, wherever the block
    /// lives (the memory tuner's view of the index working set); `None`: nowhere.
    pub index_region: Option<Arc<Region>>,
    /// The region a range filter is charged to once read and pinned: it is read only while
    /// the region has room for it, and [`TableReader::unload_range_filter`] frees it again
    /// (`None`: read and pinned on first use, charged nowhere).
    pub range_region: Option<Arc<Region>>,
    /// Pin filter units in the reader once read, charged to this region while it has room
    /// (RocksDB's filters held by the table reader); `None`: units go through the block cache
    /// at high priority (`cache_index_and_filter_blocks`).
    pub filter_region: Option<Arc<Region>>,
    /// Ids of blocks recently evicted from `cache`: a storage read of one is counted as a
    /// ghost hit in the read's statistics.
    pub ghost: Option<Arc<GhostCache>>,
    /// An ingested table's sequence number (its manifest entry's; 0: none): every entry and
    /// range tombstone of the table, written with 0, is read with it (`BlockIter`).
    pub global_seqno: u64,
}

/// Which filter units a point lookup consults.
#[derive(Clone, Copy)]
pub enum UnitSelection<'a> {
    /// Every unit of the segment.
    All,
    /// None: go straight to the data block.
    None,
    /// The first `n` units (fewer if the segment has fewer).
    #[cfg_attr(
        not(feature = "test-util"),
        expect(dead_code, reason = "tests and benchmarks probe a prefix of the units")
    )]
    First(u32),
    /// The units loaded outside the reader (ElasticBF's filter memory), per segment.
    Loaded(&'a dyn LoadedUnits),
}


impl std::fmt::Debug for UnitSelection<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnitSelection::All => write!(f, "All"),
            UnitSelection::None => write!(f, "None"),
            UnitSelection::First(n) => write!(f, "First({n})"),
            UnitSelection::Loaded(_) => write!(f, "Loaded"),
        }
    }
}

/// The newest version of a key visible at the lookup's sequence number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Put or tombstone.
    pub kind: ValueKind,
    /// Its sequence number.
    pub seqno: u64,
    /// The value (empty for a tombstone).
    pub value: Vec<u8>,
}

/// What a point lookup did in one table (the per-file access record of docs/design.md §5).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GetOutcome {
    /// The entry, if the table holds a version of the key visible at the lookup's seqno.
    pub found: Option<Found>,
    /// A filter unit ruled the key out.
    pub filter_negative: bool,
    /// Filter units probed.
    pub units_probed: u32,
    /// A data block was read (from cache or storage).
    pub data_block_read: bool,
    /// ... and it came from the block cache.
    pub data_block_cached: bool,
    /// The segment whose filter units (and data) the lookup consulted; `None` when the key is
    /// past the table's last key.
    pub segment: Option<usize>,
}

impl GetOutcome {
    /// What the lookup did, as the access counters record it.
    #[inline]
    pub fn probe(&self) -> Probe {
        Probe {
            found: self.found.is_some(),
            filter_negative: self.filter_negative,
            units_probed: self.units_probed,
            data_block_read: self.data_block_read,
            data_block_cached: self.data_block_cached,
            segment: self.segment,
        }
    }
}

static NEXT_CACHE_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// Point lookups' key buffer, reused by every lookup of the thread.
    static KEY_BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// An open table.
#[derive(Debug)]
pub struct TableReader {
    file: Arc<dyn RandomAccessFile>,
    path: Arc<Path>,
    cache_id: u64,
    /// [`ReaderOptions::global_seqno`].
    global_seqno: u64,
    /// The index block, pinned; `None`: it lives in the block cache at high priority (read
    /// again from storage when evicted).
    index: Option<Arc<Block>>,
    /// The index block's size, charged to the index region while the reader lives.
    _index_charge: Option<Charge>,
    props: Properties,
    range_filter: Option<(u8, BlockHandle)>,
    footer: Footer,
    cache: Option<Arc<BlockCache>>,
    ghost: Option<Arc<GhostCache>>,
    stats: Arc<IoStats>,
    file_size: u64,
    /// What this reader pins, charged to the pinned-meta region while it lives.
    _pinned: Option<Charge>,
    /// Bytes reserved in the block cache for what this reader pins (released on drop).
    reserved: usize,
    /// The range filter, read on first use while `range_region` has room and then pinned
    /// with its charge until [`unload_range_filter`](Self::unload_range_filter): one block per
    /// table, needed by every bounded read of the table, and costly to read again (a 64 MiB
    /// table's filter is ~1 MB at 16 bits per key) — kept in a cache it would be evicted and
    /// read from storage by every range read. Readers find it with one atomic load.
    range_pinned: ArcSwapOption<PinnedRange>,
    range_region: Option<Arc<Region>>,
    reserve_in_cache: bool,
    /// Pinned filter units, per segment then unit (`segment × units + unit`): filled on first
    /// use when `filter_region` has room, then read on every probe with one atomic load (no
    /// lock, no guard to release; elastic units will need unloading and a guard).
    units: Box<[OnceLock<PinnedUnit>]>,
    filter_region: Option<Arc<Region>>,
    /// Prefixes of the index's keys and of the segments' last keys (`sst/fences.rs`): point
    /// lookups search these instead of the blocks (`None` for a table they cannot describe).
    index_fences: Option<Fences>,
    segment_fences: Option<Fences>,
    /// The range tombstones (`range_del/`), read at open and kept: every lookup of a key in
    /// the table's range asks them before any filter.
    range_dels: Arc<Fragments>,
}

/// A range filter pinned in its reader, with its charge and its reservation in the block
/// cache (both given back when the last reader of it drops it).
#[derive(Debug)]
struct PinnedRange {
    filter: RangeFilter,
    _charge: Option<Charge>,
    reserved: Option<(Arc<BlockCache>, usize)>,
}

impl Drop for PinnedRange {
    fn drop(&mut self) {
        if let Some((cache, bytes)) = &self.reserved {
            cache.release(*bytes);
        }
    }
}

/// A filter unit pinned in its reader, with its charge.
#[derive(Debug)]
struct PinnedUnit {
    filter: BloomFilter,
    _charge: Charge,
}

impl Drop for TableReader {
    fn drop(&mut self) {
        if let Some(cache) = &self.cache {
            if self.reserved > 0 {
                cache.release(self.reserved);
            }
            // No other reader will look for this reader's index block (cache ids are not
            // reused): give its high-priority space back now rather than after three sweeps.
            if self.index.is_none() {
                cache.erase(&self.block_key(self.footer.index.offset));
            }
        }
    }
}

/// The data block a cache entry holds, if it holds one.
fn as_block(c: &CachedBlock) -> Option<&Arc<Block>> {
    match c {
        CachedBlock::Block(b) => Some(b),
        CachedBlock::Filter(_) => None,
    }
}

thread_local! {
    /// Nanoseconds this thread has spent reading blocks from storage inside
    /// [`timing_storage`]; `None` outside it (block reads then read no clock).
    static STORAGE_NANOS: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Runs `f`, returning with its result the nanoseconds its block reads from storage (not from
/// a cache) took on this thread: a `multi_get` tells a lookup that waited for the device from
/// one the caches answered, and only its lookups pay the clock reads.
pub(crate) fn timing_storage<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let outer = STORAGE_NANOS.with(|n| n.replace(Some(0)));
    let r = f();
    let waited = STORAGE_NANOS.with(|n| n.replace(outer)).unwrap_or(0);
    (r, waited)
}

impl TableReader {
    /// Opens the table at `path`: footer, metaindex, properties and index are read and
    /// cross-checked. `file_number`, when given, must match the number the table was written
    /// as (a file copied from elsewhere is refused).
    ///
    /// # Errors
    /// `Corruption` naming the file and offset for truncated, garbage or inconsistent files.
    pub fn open(fs: &dyn FileSystem, path: &Path, file_number: Option<u64>, opts: ReaderOptions) -> Result<Self> {
        let file = fs.open_read(path, ReadOptions { direct: opts.direct })?;
        let path: Arc<Path> = Arc::from(path);
        let size = file.size();
        let stats = opts.stats.clone();
        let bad = |offset: u64, what: String| Error::corruption(&*path, offset, what);
        if size < FOOTER_LEN as u64 {
            return Err(bad(0, format!("file is {size} bytes, too short to be a table")));
        }
        let footer_at = size - FOOTER_LEN as u64;
        let mut fb = [0u8; FOOTER_LEN];
        file.read_exact_at(footer_at, &mut fb)?;
        stats.record_read(BlockKind::Meta, FOOTER_LEN as u64);
        let footer = Footer::decode(&fb).map_err(|e| bad(footer_at, e))?;

        let meta_raw = read_block(&*file, &path, footer.metaindex, BlockKind::Meta, &stats)?;
        let meta = Arc::new(Block::new(meta_raw, path.clone(), footer.metaindex.offset)?);
        let mut props_handle = None;
        let mut range_filter = None;
        let mut range_del_handle = None;
        let mut it = meta.iter(KeyOrder::Bytewise);
        it.seek_to_first();
        while it.valid() {
            let mut d = Decoder::new(it.value());
            let mb = |e: &str| bad(footer.metaindex.offset, format!("metaindex: {e}"));
            if it.key() == METAINDEX_PROPERTIES {
                props_handle = Some(BlockHandle::decode(&mut d).map_err(mb)?);
            } else if it.key() == METAINDEX_RANGE_DEL {
                range_del_handle = Some(BlockHandle::decode(&mut d).map_err(mb)?);
            } else if it.key() == METAINDEX_RANGE_FILTER {
                let version = d.u8("range filter version").map_err(mb)?;
                let handle = BlockHandle::decode(&mut d).map_err(mb)?;
                // A range filter of a later version is left unread: the table is read
                // without it (a filter only ever lets a read skip work).
                if RangeFilter::readable(version) {
                    range_filter = Some((version, handle));
                }
            }
            it.next();
        }
        it.status()?;
        let props_handle =
            props_handle.ok_or_else(|| bad(footer.metaindex.offset, "metaindex has no properties entry".into()))?;
        let props_raw = read_block(&*file, &path, props_handle, BlockKind::Properties, &stats)?;
        let props = Properties::decode(&props_raw).map_err(|e| bad(props_handle.offset, format!("properties: {e}")))?;
        // A table written outside any database (`external.rs`) is file 0 wherever it lands.
        if let Some(n) = file_number.filter(|_| props.file_number != 0) {
            if props.file_number != n {
                return Err(bad(
                    props_handle.offset,
                    format!("table was written as file {}, found as file {n}", props.file_number),
                ));
            }
        }
        let range_dels = match range_del_handle {
            None => Fragments::default(),
            Some(h) => {
                let raw = read_block(&*file, &path, h, BlockKind::Meta, &stats)?;
                range_del::block::decode(&raw).map_err(|e| bad(h.offset, format!("range deletions: {e}")))?
            }
        };
        let index_raw = read_block(&*file, &path, footer.index, BlockKind::Index, &stats)?;
        let index = Arc::new(Block::new_index(index_raw, path.clone(), footer.index.offset, props.index_delta_handles)?);
        let mut reader = TableReader {
            file,
            path,
            cache_id: NEXT_CACHE_ID.fetch_add(1, Ordering::Relaxed),
            global_seqno: opts.global_seqno,
            index: Some(index),
            _index_charge: None,
            props,
            range_filter,
            footer,
            cache: opts.cache,
            ghost: opts.ghost,
            stats,
            file_size: size,
            _pinned: None,
            reserved: 0,
            range_pinned: ArcSwapOption::empty(),
            range_region: opts.range_region.clone(),
            reserve_in_cache: opts.reserve_in_cache,
            units: Box::default(),
            filter_region: opts.filter_region,
            index_fences: None,
            segment_fences: None,
            range_dels: Arc::new(range_dels),
        };
        reader.validate(footer)?;
        if opts.global_seqno != 0 {
            // Checked against the properties as stored, then read as ingested.
            reader.range_dels = Arc::new(reader.range_dels.with_seqno(opts.global_seqno));
        }
        reader.build_fences()?;
        if reader.filter_region.is_some() {
            // One slot per unit handle the (already decoded) properties hold.
            let n = reader.props.segments.len() * reader.props.filter.units.len();
            reader.units = (0..n).map(|_| OnceLock::new()).collect();
        }
        reader._index_charge = opts.index_region.map(|r| r.charge(footer.index.size as usize));
        if let (Some(cache), true) = (&reader.cache, opts.reserve_in_cache) {
            // Validated and fenced: the index now goes to the cache, the rest is reserved.
            if let Some(index) = reader.index.take() {
                let charge = index.size();
                cache.insert(reader.block_key(footer.index.offset), CachedBlock::Block(index), BlockKind::Index, charge, Priority::High);
            }
            reader.reserved = reader.memory_usage();
            cache.reserve(reader.reserved);
        }
        reader._pinned = opts.meta_region.map(|r| r.charge(reader.memory_usage()));
        Ok(reader)
    }

    /// Cross-checks properties, segments and index so later reads can trust them.
    fn validate(&self, footer: Footer) -> Result<()> {
        let p = &self.props;
        let bad = |what: String| Error::corruption(&*self.path, footer.index.offset, what);
        // Segments tile the data section in order.
        let (mut block, mut offset) = (0u64, 0u64);
        for (i, s) in p.segments.iter().enumerate() {
            if s.first_block != block || s.data_offset != offset || s.block_count == 0 {
                return Err(bad(format!(
                    "segment {i} does not follow segment {}",
                    i.wrapping_sub(1)
                )));
            }
            if s.units.len() != p.filter.units.len() {
                return Err(bad(format!(
                    "segment {i} has {} filter units, expected {}",
                    s.units.len(),
                    p.filter.units.len()
                )));
            }
            for u in &s.units {
                let end = u.offset.checked_add(u.size + TRAILER_LEN as u64);
                if u.offset < p.data_size || end.is_none_or(|e| e > footer.index.offset) {
                    return Err(bad(format!("segment {i} has a filter unit outside the filter section")));
                }
            }
            block += s.block_count;
            offset = offset.saturating_add(s.data_len);
        }
        if let Some((_, h)) = self.range_filter {
            let end = h.offset.checked_add(h.size + TRAILER_LEN as u64);
            if h.offset < p.data_size || end.is_none_or(|e| e > footer.index.offset) {
                return Err(bad("range filter outside the filter section".into()));
            }
        }
        if block != p.data_blocks || offset != p.data_size {
            return Err(bad("segments do not cover the data blocks".into()));
        }
        // The range tombstones are the ones the properties count, within the table's range.
        let rd = &self.range_dels;
        let count = rd.count();
        let within = rd.key_bounds().is_none_or(|(lo, hi)| {
            lo >= ikey::user_key(&p.smallest_key) && range_del::last_covered(hi) <= ikey::user_key(&p.largest_key)
        }) && rd
            .seq_bounds()
            .is_none_or(|(lo, hi)| lo >= p.smallest_seqno && hi <= p.largest_seqno);
        if count != p.range_deletions || !within {
            return Err(bad(format!(
                "{count} range tombstones (properties say {}), or outside the table's key or seqno range",
                p.range_deletions
            )));
        }
        if p.data_size > footer.index.offset || footer.index.offset >= self.file_size {
            return Err(bad("data section overlaps the index".into()));
        }
        // The index has one fence pointer per data block, contiguous from offset 0.
        let index = self.index.as_ref().ok_or_else(|| bad("index block not loaded".into()))?;
        let mut it = index.iter(self.index_order());
        it.seek_to_first();
        let (mut n, mut expect) = (0u64, 0u64);
        let mut prev: Option<Vec<u8>> = None;
        while it.valid() {
            let h =
                BlockHandle::decode(&mut Decoder::new(it.value())).map_err(|e| bad(format!("index entry {n}: {e}")))?;
            if h.offset != expect || (!p.index_user_keys && ikey::split(it.key()).is_none()) {
                return Err(bad(format!("index entry {n} is not the next data block")));
            }
            if prev.as_deref().is_some_and(|pk| self.index_order().compare(pk, it.key()).is_ge()) {
                return Err(bad(format!("index entry {n} out of order")));
            }
            prev = Some(it.key().to_vec());
            expect = h.offset + h.size + TRAILER_LEN as u64;
            n += 1;
            it.next();
        }
        it.status()?;
        if n != p.data_blocks || expect != p.data_size {
            return Err(bad(format!("index has {n} entries for {} data blocks", p.data_blocks)));
        }
        Ok(())
    }

    /// Builds the fences of a validated table: over the index's restart points (none when one
    /// is damaged or keys do not share the table's common prefix). An index of one entry per
    /// restart point (tables before delta handles) keeps every [`INDEX_STRIDE`]-th.
    fn build_fences(&mut self) -> Result<()> {
        let p = &self.props;
        let common = fences::common_prefix(ikey::user_key(&p.smallest_key), ikey::user_key(&p.largest_key));
        let index = self.index_block()?;
        let keys: Option<Vec<&[u8]>> = (0..index.num_restarts())
            .map(|i| index.restart_key(i).map(|k| self.index_user_key(k)))
            .collect();
        let stride = if index.num_restarts() as u64 == p.data_blocks { INDEX_STRIDE } else { 1 };
        self.index_fences = keys.and_then(|k| Fences::new(common, k, stride));
        self.segment_fences = Fences::new(common, self.props.segments.iter().map(|s| &s.largest_user_key), 1);
        Ok(())
    }

    /// The first segment whose last key is ≥ `user_key` (`segments.len()` past the last).
    #[inline]
    fn segment_for(&self, user_key: &[u8]) -> usize {
        let segs = &self.props.segments;
        let (lo, hi) = match &self.segment_fences {
            Some(f) => f.candidates(user_key),
            None => (0, segs.len()),
        };
        lo + segs[lo..hi].partition_point(|s| s.largest_user_key.as_slice() < user_key)
    }

    /// The sequence number an ingested table's entries are read with (0: their own).
    pub fn global_seqno(&self) -> u64 {
        self.global_seqno
    }

    /// The table's range tombstones (empty for most tables).
    pub fn range_dels(&self) -> &Arc<Fragments> {
        &self.range_dels
    }

    /// The newest range tombstone of this table over `key` a reader at `read_seq` sees (0:
    /// none).
    #[inline]
    pub fn range_del_covering(&self, key: &[u8], read_seq: u64) -> u64 {
        if self.range_dels.is_empty() {
            return 0;
        }
        self.range_dels.covering(key, read_seq)
    }

    /// The table's properties.
    pub fn properties(&self) -> &Properties {
        &self.props
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// File size in bytes.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The range-filter slot: `(version, handle)` if the table has a range filter this
    /// version reads.
    pub fn range_filter_slot(&self) -> Option<(u8, BlockHandle)> {
        self.range_filter
    }

    /// `f` of the table's range filter: `None` if it has none, or if it is not pinned and
    /// `admit` is false or the range region has no room for it. Read on first use (when
    /// admitted), then pinned in the reader, charged to the range region and reserved in the
    /// block cache like the index.
    ///
    /// # Errors
    /// Read errors; `Corruption` for a damaged filter (never treated as absent). Neither is
    /// remembered: the next call reads again.
    #[inline]
    pub fn with_range_filter<R>(&self, admit: bool, f: impl FnOnce(&RangeFilter) -> R) -> Result<Option<R>> {
        if let Some(p) = &*self.range_pinned.load() {
            return Ok(Some(f(&p.filter)));
        }
        match self.pin_range_filter(admit)? {
            Some(p) => Ok(Some(f(&p.filter))),
            None => Ok(None),
        }
    }

    /// Reads and pins the range filter if the table has one, `admit` is set and the range
    /// region has room (the block's size stands for its decoded size, which it is within a
    /// few percent of).
    #[cold]
    fn pin_range_filter(&self, admit: bool) -> Result<Option<Arc<PinnedRange>>> {
        let Some((version, handle)) = self.range_filter else {
            return Ok(None);
        };
        let room = |r: &Region| r.usage().saturating_add(handle.size as usize) <= r.capacity();
        if !admit || !self.range_region.as_deref().is_none_or(room) {
            return Ok(None);
        }
        let pinned = self.charged(self.decode_range_filter(version, handle)?);
        // Two first readers may race: the loser's copy (with its charge) is dropped.
        let prev = self.range_pinned.compare_and_swap(&None::<Arc<PinnedRange>>, Some(pinned.clone()));
        Ok(Some(match &*prev {
            Some(p) => p.clone(),
            None => pinned,
        }))
    }

    /// The table's range filter read from storage and decoded, not pinned (`None` without
    /// one): for checks and reports, which must not change what is in memory.
    ///
    /// # Errors
    /// Read errors; `Corruption` for a damaged filter.
    pub fn read_range_filter(&self) -> Result<Option<RangeFilter>> {
        self.range_filter
            .map(|(version, handle)| self.decode_range_filter(version, handle))
            .transpose()
    }

    fn decode_range_filter(&self, version: u8, handle: BlockHandle) -> Result<RangeFilter> {
        let raw = read_block(&*self.file, &self.path, handle, BlockKind::RangeFilter, &self.stats)?;
        RangeFilter::decode(version, raw)
            .map_err(|e| Error::corruption(&*self.path, handle.offset, format!("range filter: {e}")))
    }

    /// Unpins the range filter (the next bounded read reads it again if admitted); returns the
    /// bytes freed (0 if it was not pinned). A read probing it meanwhile keeps its copy.
    pub fn unload_range_filter(&self) -> usize {
        self.range_pinned.swap(None).map_or(0, |p| p.filter.memory_usage())
    }

    /// Pins `filter`, built from the table's keys at run time, in place of the one pinned
    /// (charged and reserved as a filter read from the table). It lives only in memory: once
    /// unloaded, the next read pins the table's own filter, if it has one. `false` (nothing
    /// pinned) when the range region has no room for it beside what it replaces.
    pub fn install_range_filter(&self, filter: RangeFilter) -> bool {
        if !self.range_filter_fits(filter.memory_usage() as u64) {
            return false;
        }
        self.range_pinned.store(Some(self.charged(filter)));
        true
    }

    /// Whether the range region has room for a filter of `bytes` in place of the one pinned.
    pub fn range_filter_fits(&self, bytes: u64) -> bool {
        self.range_region.as_ref().is_none_or(|r| {
            let freed = self.range_filter_bytes();
            r.usage().saturating_sub(freed).saturating_add(bytes as usize) <= r.capacity()
        })
    }

    /// `filter` as this reader pins it: charged to the range region and reserved in the block
    /// cache like the index (both given back when the last holder drops it).
    fn charged(&self, filter: RangeFilter) -> Arc<PinnedRange> {
        let size = filter.memory_usage();
        let reserved = match (&self.cache, self.reserve_in_cache) {
            (Some(cache), true) => {
                cache.reserve(size);
                Some((cache.clone(), size))
            }
            _ => None,
        };
        Arc::new(PinnedRange {
            filter,
            _charge: self.range_region.as_ref().map(|r| r.charge(size)),
            reserved,
        })
    }

    /// Bytes of the pinned range filter (0 when it is not pinned).
    pub fn range_filter_bytes(&self) -> usize {
        self.range_pinned.load().as_ref().map_or(0, |p| p.filter.memory_usage())
    }

    /// Bits of the range filter in use: the pinned one's, else its block's size (0 without
    /// one).
    pub fn range_filter_bits(&self) -> u64 {
        match &*self.range_pinned.load() {
            Some(p) => p.filter.bits(),
            None => self.range_filter_block_size() * 8,
        }
    }

    /// The size of the table's range filter block (0 without one): about what pinning it
    /// charges.
    pub fn range_filter_block_size(&self) -> u64 {
        self.range_filter.map_or(0, |(_, h)| h.size)
    }

    /// Bytes this reader pins in memory: the index block (unless it is in the block cache),
    /// the fences, the reader itself and the decoded properties (segment metadata with its key
    /// ranges and unit handles), the range tombstones; the range filter, once read, is charged
    /// on its own.
    pub fn memory_usage(&self) -> usize {
        let p = &self.props;
        let segments: usize = p
            .segments
            .iter()
            .map(|s| {
                std::mem::size_of::<super::SegmentMeta>()
                    + s.smallest_user_key.len()
                    + s.largest_user_key.len()
                    + s.units.len() * std::mem::size_of::<BlockHandle>()
            })
            .sum();
        self.index.as_ref().map_or(0, |i| i.size())
            + self.index_fences.as_ref().map_or(0, Fences::memory_usage)
            + self.segment_fences.as_ref().map_or(0, Fences::memory_usage)
            + std::mem::size_of::<Self>()
            + std::mem::size_of::<Properties>()
            + p.smallest_key.len()
            + p.largest_key.len()
            + self.range_dels.memory_usage()
            + segments
    }

    /// The I/O counters this reader records into.
    pub fn stats(&self) -> &Arc<IoStats> {
        &self.stats
    }

    /// The decoded footer.
    pub(crate) fn footer(&self) -> Footer {
        self.footer
    }

    /// Calls `f` with each index entry: the data block's index key (a key separating it from
    /// the next block: at or after its last key, before the next block's first) and handle.
    ///
    /// # Errors
    /// `Corruption` for an entry whose handle does not decode (`open` validated them, so only a
    /// bug makes this fail).
    pub(crate) fn for_each_index_entry(&self, mut f: impl FnMut(&[u8], BlockHandle)) -> Result<()> {
        let mut it = self.index_block()?.iter(self.index_order());
        it.seek_to_first();
        while it.valid() {
            let h = BlockHandle::decode(&mut Decoder::new(it.value()))
                .map_err(|e| Error::corruption(&*self.path, self.footer.index.offset, format!("index: {e}")))?;
            f(it.key(), h);
            it.next();
        }
        it.status()
    }

    /// The index block: the pinned one, or through the block cache (read from storage and
    /// cached at high priority when it was evicted).
    ///
    /// # Errors
    /// Read and corruption errors of the index block.
    pub(crate) fn index_block(&self) -> Result<Arc<Block>> {
        self.with_index(|b| b.clone())
    }

    /// `f` of the index block: the pinned one, or the cached one in place (under the cache's
    /// epoch: keep `f` short, no I/O).
    #[inline]
    fn with_index<R>(&self, mut f: impl FnMut(&Arc<Block>) -> R) -> Result<R> {
        if let Some(b) = &self.index {
            return Ok(f(b));
        }
        let handle = self.footer.index;
        self.cached_or_read(
            handle,
            BlockKind::Index,
            Priority::High,
            true,
            &self.stats,
            None,
            as_block,
            |raw, fill| self.cache_block(raw, fill, handle, self.props.index_delta_handles),
            |b, _| f(b),
        )
    }

    #[inline]
    fn block_key(&self, offset: u64) -> BlockKey {
        BlockKey {
            table: self.cache_id,
            offset,
        }
    }

    /// The order of the index block's keys: user keys bytewise (properties version 4 on, when
    /// no user key spans two data blocks), else internal keys.
    #[inline]
    pub(crate) fn index_order(&self) -> KeyOrder {
        if self.props.index_user_keys {
            KeyOrder::Bytewise
        } else {
            KeyOrder::Internal
        }
    }

    /// What an index search for the internal key `target` seeks: `target`, or its user key in
    /// a user-key index (the first block whose index key is at or after it holds every
    /// version of that user key).
    #[inline]
    pub(crate) fn index_target<'a>(&self, target: &'a [u8]) -> &'a [u8] {
        if self.props.index_user_keys {
            ikey::user_key(target)
        } else {
            target
        }
    }

    /// The user key of index key `k`.
    #[inline]
    pub(crate) fn index_user_key<'a>(&self, k: &'a [u8]) -> &'a [u8] {
        if self.props.index_user_keys {
            k
        } else {
            ikey::user_key(k)
        }
    }

    /// Calls `f` with the user key of each data block's index key, in order (the block
    /// boundaries the index holds, with no I/O: each at or after its block's last user key and
    /// at or before the next block's first).
    ///
    /// # Errors
    /// Read and corruption errors of the index block (when it is read from storage).
    pub(crate) fn for_each_block_key(&self, mut f: impl FnMut(&[u8])) -> Result<()> {
        let mut it = self.index_block()?.iter(self.index_order());
        it.seek_to_first();
        while it.valid() {
            f(self.index_user_key(it.key()));
            it.next();
        }
        Ok(())
    }

    /// The block at `handle` through the block cache, handed to `use_block` with whether it
    /// was cached: a hit in place, under the cache's epoch (no reference-count write), a miss
    /// after reading it (filling the cache when `fill_cache`).
    #[expect(clippy::too_many_arguments, reason = "one private helper for both block kinds; a struct would only rename the arguments")]
    fn cached_or_read<T, R>(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        prio: Priority,
        fill_cache: bool,
        stats: &IoStats,
        readahead: Option<&mut Readahead>,
        from_cache: impl Fn(&CachedBlock) -> Option<&Arc<T>>,
        decode: impl FnOnce(Vec<u8>, bool) -> Result<(Arc<T>, CachedBlock, usize)>,
        mut use_block: impl FnMut(&Arc<T>, bool) -> R,
    ) -> Result<R> {
        let key = self.block_key(handle.offset);
        if let Some(cache) = &self.cache {
            let hit = cache.with(&key, kind, |c| from_cache(c).map(|v| use_block(v, true)));
            if let Some(Some(r)) = hit {
                stats.record_cache_hit(kind);
                return Ok(r);
            }
            // A read that fills the cache takes the id out of the ghost (the block is back).
            if self.ghost.as_ref().is_some_and(|g| g.probe(&key, fill_cache)) {
                stats.record_ghost_hit(kind);
            }
        }
        let t0 = STORAGE_NANOS.with(|n| n.get().is_some()).then(std::time::Instant::now);
        let raw = match readahead {
            Some(ra) => decode_block(ra.block(&self.file, &self.path, handle, kind, stats)?, &self.path, handle, kind)?,
            None => read_block(&*self.file, &self.path, handle, kind, stats)?,
        };
        if let Some(t0) = t0 {
            let waited = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
            STORAGE_NANOS.with(|n| n.set(n.get().map(|sum| sum.saturating_add(waited))));
        }
        let (v, entry, charge) = decode(raw, fill_cache && self.cache.is_some())?;
        if let (Some(cache), true) = (&self.cache, fill_cache) {
            cache.insert(key, entry, kind, charge, prio);
        }
        Ok(use_block(&v, false))
    }

    /// The data block at `handle`, through the block cache (`true` when it was cached),
    /// choosing whether a miss fills the cache and where the read is counted.
    pub(crate) fn data_block_with(
        &self,
        handle: BlockHandle,
        fill_cache: bool,
        stats: &IoStats,
        readahead: Option<&mut Readahead>,
    ) -> Result<(Arc<Block>, bool)> {
        self.cached_or_read(
            handle,
            BlockKind::Data,
            Priority::Low,
            fill_cache,
            stats,
            readahead,
            as_block,
            |raw, fill| self.cache_block(raw, fill, handle, false),
            |b, cached| (b.clone(), cached),
        )
    }

    /// Decodes a block read from storage, in the cache's memory when it `fills` the cache
    /// (`delta_handles`: an index block whose entries carry delta handles).
    fn cache_block(&self, raw: Vec<u8>, fills: bool, handle: BlockHandle, delta_handles: bool) -> Result<(Arc<Block>, CachedBlock, usize)> {
        let bytes = match (&self.cache, fills) {
            (Some(cache), true) => cache.block_bytes(raw),
            _ => BlockBytes::heap(raw.into_boxed_slice()),
        };
        let b = Arc::new(Block::from_bytes(bytes, self.path.clone(), handle.offset)?.with_delta_handles(delta_handles));
        let charge = b.size();
        Ok((b.clone(), CachedBlock::Block(b), charge))
    }

    /// Filter unit `unit` of segment `segment`, through the block cache (high priority).
    ///
    /// # Errors
    /// `InvalidArgument` for an out-of-range segment or unit; read and corruption errors.
    pub fn filter_unit(&self, segment: usize, unit: usize) -> Result<Arc<BloomFilter>> {
        self.cached_or_read(
            self.unit_handle(segment, unit)?,
            BlockKind::FilterUnit,
            Priority::High,
            true,
            &self.stats,
            None,
            |c| match c {
                CachedBlock::Filter(f) => Some(f),
                CachedBlock::Block(_) => None,
            },
            |raw, _| {
                let f = Arc::new(self.decode_unit(raw, segment, unit)?);
                let charge = f.memory_usage();
                Ok((f.clone(), CachedBlock::Filter(f), charge))
            },
            |f, _| f.clone(),
        )
    }

    /// Filter unit `unit` of `segment` read from storage, bypassing the cache (ElasticBF's
    /// load: one read, counted as a filter-unit read).
    ///
    /// # Errors
    /// `InvalidArgument` for an out-of-range segment or unit; read and corruption errors.
    pub fn read_filter_unit(&self, segment: usize, unit: usize) -> Result<BloomFilter> {
        let raw = read_block(&*self.file, &self.path, self.unit_handle(segment, unit)?, BlockKind::FilterUnit, &self.stats)?;
        self.decode_unit(raw, segment, unit)
    }

    fn unit_handle(&self, segment: usize, unit: usize) -> Result<BlockHandle> {
        self.props
            .segments
            .get(segment)
            .and_then(|s| s.units.get(unit))
            .copied()
            .ok_or_else(|| Error::InvalidArgument(format!("no filter unit {unit} in segment {segment}")))
    }

    fn decode_unit(&self, raw: Vec<u8>, segment: usize, unit: usize) -> Result<BloomFilter> {
        BloomFilter::decode(raw).map_err(|e| {
            let offset = self.unit_handle(segment, unit).map_or(0, |h| h.offset);
            Error::corruption(&*self.path, offset, format!("filter unit: {e}"))
        })
    }

    /// Whether unit `unit` of `segment` may hold the key hashed `h`: from the unit pinned in
    /// this reader (no lock, no shared write), else read and pinned while the filter region has
    /// room, else through the block cache.
    fn unit_may_contain(&self, segment: usize, unit: usize, h: u64) -> Result<bool> {
        let Some(region) = &self.filter_region else {
            return Ok(self.filter_unit(segment, unit)?.may_contain_hash(h));
        };
        let units = self.props.filter.units.len();
        let Some(slot) = self.units.get(segment * units + unit) else {
            return Err(Error::InvalidArgument(format!("no filter unit {unit} in segment {segment}")));
        };
        if let Some(p) = slot.get() {
            return Ok(p.filter.may_contain_hash(h));
        }
        let handle = self.unit_handle(segment, unit)?;
        if region.usage().saturating_add(handle.size as usize) > region.capacity() {
            return Ok(self.filter_unit(segment, unit)?.may_contain_hash(h));
        }
        let raw = read_block(&*self.file, &self.path, handle, BlockKind::FilterUnit, &self.stats)?;
        let filter = self.decode_unit(raw, segment, unit)?;
        let answer = filter.may_contain_hash(h);
        let charge = region.charge(filter.memory_usage());
        // Two first readers may race: the loser's copy (and its charge) is dropped.
        let _ = slot.set(PinnedUnit { filter, _charge: charge });
        Ok(answer)
    }

    /// Point lookup of the newest version of `user_key` with seqno ≤ `seqno`, consulting the
    /// filter units chosen by `units` first.
    ///
    /// # Errors
    /// Read and corruption errors (never a wrong answer).
    #[cfg(any(test, feature = "test-util"))]
    pub fn get(&self, user_key: &[u8], seqno: u64, units: UnitSelection<'_>) -> Result<GetOutcome> {
        self.lookup(&LookupKey::new(user_key, seqno), units)
    }

    /// [`get`](Self::get) with a lookup key prepared once for all tables a read probes.
    ///
    /// # Errors
    /// Read and corruption errors (never a wrong answer).
    pub fn lookup(&self, key: &LookupKey, units: UnitSelection<'_>) -> Result<GetOutcome> {
        let mut value = Vec::new();
        let mut out = self.lookup_into(key, units, &mut value)?;
        if let Some(f) = &mut out.found {
            f.value = value;
        }
        Ok(out)
    }

    /// [`lookup`](Self::lookup) writing the value into `value` (replacing its contents) rather
    /// than into [`Found::value`], which stays empty: no allocation when `value` has room.
    ///
    /// # Errors
    /// Read and corruption errors (never a wrong answer).
    pub fn lookup_into(&self, key: &LookupKey, units: UnitSelection<'_>, value: &mut Vec<u8>) -> Result<GetOutcome> {
        let mut out = GetOutcome::default();
        let user_key = key.user_key();
        // The filter goes first, so a key it rules out costs no index search: the segment is
        // the first whose largest user key is ≥ the key (a key whose versions span segments is
        // in the filters of both, and a key in no segment's range is in none).
        let segment = self.segment_for(user_key);
        if segment == self.props.segments.len() {
            return Ok(out); // past the table's last key
        }
        out.segment = Some(segment);
        let available = self.props.filter.units.len() as u32;
        let k = match units {
            UnitSelection::All => available,
            UnitSelection::None => 0,
            UnitSelection::First(n) => n.min(available),
            UnitSelection::Loaded(l) => {
                let (probed, negative) = l.probe(segment, key.hash());
                out.units_probed = probed;
                if negative {
                    out.filter_negative = true;
                    return Ok(out);
                }
                0
            }
        };
        if k > 0 {
            let h = key.hash();
            for u in 0..k as usize {
                out.units_probed += 1;
                if !self.unit_may_contain(segment, u, h)? {
                    out.filter_negative = true;
                    return Ok(out);
                }
            }
        } else if available == 0 && matches!(units, UnitSelection::All | UnitSelection::First(_)) {
            // No point filter: the range filter's height-0 level (Rosetta's B_L) answers for
            // the key's projection instead, when the table has one.
            // (Loaded here too when the range region has room: a table's own point lookups
            // need it as much as its range reads.)
            if let Some(may) = self.with_range_filter(true, |f| f.may_contain_key(user_key))? {
                out.units_probed += 1;
                if !may {
                    out.filter_negative = true;
                    return Ok(out);
                }
            }
        }
        // Both searches borrow their blocks and build keys in this thread's buffer: no
        // reference-count write on a shared block and no allocation. The index search runs
        // within the index block's borrow (a cached one's epoch), the data block's read after.
        KEY_BUFFER.with(|buf| {
            let mut kb = buf.take();
            let r = self
                .with_index(|index| {
                    let mut idx = index.iter_ref(self.index_order(), std::mem::take(&mut kb));
                    let r = self.index_search(index, &mut idx, key);
                    kb = idx.into_key_buffer();
                    r
                })
                .and_then(|r| r)
                .and_then(|handle| match handle {
                    Some(h) => self.search_data(h, key, &mut out, value, &mut kb),
                    None => Ok(()),
                });
            buf.set(kb);
            r
        })?;
        Ok(out)
    }

    /// The index search of a point lookup: the handle of the data block that may hold the key
    /// (`None` past the table's last key).
    fn index_search(&self, index: &Block, idx: &mut BlockIter<&Block>, key: &LookupKey) -> Result<Option<BlockHandle>> {
        let (seek, user_key) = (key.encoded(), key.user_key());
        let target = self.index_target(seek);
        match &self.index_fences {
            Some(f) => {
                // Restart points before `lo` are below the key and those from `hi` on above
                // it: the search starts at the last one below (`lo - 1`), and only the ones
                // in between are compared in full.
                let (lo, hi) = f.candidates(user_key);
                idx.seek_among_restarts(lo.saturating_sub(1), hi, target);
            }
            None => idx.seek(target),
        }
        if !idx.valid() {
            // Past the table's last key (all its versions are newer than the read).
            return idx.status().map(|()| None);
        }
        BlockHandle::decode(&mut Decoder::new(idx.value()))
            .map(Some)
            .map_err(|e| Error::corruption(&*self.path, index.file_offset(), format!("index entry: {e}")))
    }

    /// The data-block search of a point lookup (`buf`: the key buffer to build keys in).
    fn search_data(&self, handle: BlockHandle, key: &LookupKey, out: &mut GetOutcome, value: &mut Vec<u8>, buf: &mut Vec<u8>) -> Result<()> {
        out.data_block_read = true;
        self.cached_or_read(
            handle,
            BlockKind::Data,
            Priority::Low,
            true,
            &self.stats,
            None,
            as_block,
            |raw, fill| self.cache_block(raw, fill, handle, false),
            |b, cached| {
                out.data_block_cached = cached;
                self.search_block(b, handle, key, out, value, buf)
            },
        )?
    }

    /// The search within a point lookup's data block (`buf`: the key buffer to build keys in).
    fn search_block(
        &self,
        block: &Block,
        handle: BlockHandle,
        key: &LookupKey,
        out: &mut GetOutcome,
        value: &mut Vec<u8>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        let (seek, user_key) = (key.encoded(), key.user_key());
        let mut it = block
            .iter_ref(KeyOrder::Internal, std::mem::take(buf))
            .with_global_seqno(self.global_seqno);
        match block.hash_hint(key.hash()) {
            HashHint::Absent => {}
            HashHint::Restart(r) => it.seek_from_restart(r, seek),
            HashHint::Search => it.seek(seek),
        }
        if it.valid() {
            let (uk, s, kind) = ikey::split(it.key()).ok_or_else(|| {
                Error::corruption(&*self.path, handle.offset, "data block holds a malformed internal key")
            })?;
            if uk == user_key {
                value.clear();
                value.extend_from_slice(it.value());
                out.found = Some(Found {
                    kind,
                    seqno: s,
                    value: Vec::new(),
                });
            }
        }
        let r = it.status();
        *buf = it.into_key_buffer();
        r
    }
}
