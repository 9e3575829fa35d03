//! Data, index and metaindex blocks (spec: `docs/format/sst.md` § Blocks).
//!
//! ```text
//! block   := entry* restart:u32le[num_restarts] [hash_index] packed:u32le
//! entry   := shared:varint32 unshared:varint32 value_len:varint32 key_suffix[unshared] value[value_len]
//! hash_index := bucket:u8[num_buckets] num_buckets:u16le        (data blocks, table format 2)
//! packed  := num_restarts | 0x8000_0000 if a hash index is present
//! ```
//! `shared` bytes of the key are taken from the previous entry's key; at a restart point
//! `shared = 0`. Restart offsets point at entries, ascending. An empty block is just
//! `packed = 0` (4 bytes).
//!
//! An index block with **delta handles** (properties version 5) writes its entries without the
//! value length, and the block handle as its value: the full handle at a restart point, the
//! size alone elsewhere (the offset is the previous block's end, data blocks being contiguous);
//! RocksDB's index `format_version` 4. Readers hand out the handle re-encoded as `varint offset ‖
//! varint size`, so that every index value reads alike:
//!
//! ```text
//! index entry := shared:varint32 unshared:varint32 key_suffix[unshared] [offset:varint64] size:varint64
//! ```
//!
//! The hash index (RocksDB's data-block hash index) maps each user key of a data block to the
//! restart interval holding its first entry: bucket `b(h) = ⌊(h >> 32) · num_buckets / 2³²⌋`
//! of `h = xxh3_64(user_key)` (the filter hash) holds that restart index (0..=253), or
//! [`BUCKET_COLLISION`] when two user keys share the bucket, or [`BUCKET_EMPTY`]. A point
//! lookup reads its bucket: empty means the key is not in the block, a restart index means a
//! scan from that restart (no binary search), a collision means the binary search. Built only
//! for blocks of at most 254 restart points, with `num_buckets = ⌈distinct keys / 0.75⌉`.

use crate::cache::BlockBytes;
use crate::error::{Error, Result};
use super::footer::BlockHandle;
use super::trailer::TRAILER_LEN;
use crate::format::coding::{get_varint32, get_varint64, put_varint32, put_varint64, read_u32};
use crate::format::ikey::{self, KeyOrder};
use crate::iter::InternalIterator;
use std::cmp::Ordering;
use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

/// Bucket value: two user keys share the bucket (search the block).
pub const BUCKET_COLLISION: u8 = 254;
/// Bucket value: no user key of the block hashes here.
pub const BUCKET_EMPTY: u8 = 255;
/// Restart points a hash-indexed block may have (indexes 0..=253 fit a bucket).
const MAX_HASHED_RESTARTS: usize = 254;
const HASH_FLAG: u32 = 0x8000_0000;
/// Keys per bucket the index is sized for (RocksDB's default utilization ratio).
const HASH_UTILIZATION: f64 = 0.75;

/// What a block's hash index says of a user key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashHint {
    /// The block holds no entry of the key.
    Absent,
    /// The key's first entry is in this restart interval.
    Restart(usize),
    /// No hint (collision, or the block has no hash index): binary search.
    Search,
}

const CACHE_LINE: usize = 64;
/// Bytes of a restart interval a seek prefetches (the whole interval of 16 entries of 100-byte
/// values; the first entries of an interval of larger ones).
const PREFETCH_LIMIT: usize = 2048;

/// The bucket of hash `h` among `n` buckets.
#[inline]
fn bucket(h: u64, n: usize) -> usize {
    (((h >> 32) * n as u64) >> 32) as usize
}

/// Builds one block.
#[derive(Debug)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    since_restart: usize,
    interval: usize,
    last_key: Vec<u8>,
    entries: usize,
    /// With a hash index (data blocks of internal keys): each distinct user key's hash and the
    /// restart interval of its first entry.
    hashed: Option<Vec<(u64, u8)>>,
    /// An index block with delta handles: where the last handle's block ends (with its
    /// trailer), the offset a next entry may leave out.
    handle_end: Option<u64>,
}

impl BlockBuilder {
    /// A builder putting a restart point every `restart_interval` entries.
    pub fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: Vec::new(),
            since_restart: 0,
            interval: restart_interval.max(1),
            last_key: Vec::new(),
            entries: 0,
            hashed: None,
            handle_end: None,
        }
    }

    /// A builder of data blocks (internal keys) that also writes a hash index.
    pub fn with_hash_index(restart_interval: usize) -> Self {
        BlockBuilder {
            hashed: Some(Vec::new()),
            ..Self::new(restart_interval)
        }
    }

    /// Appends an entry; keys must be added in order (the table builder checks).
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let first_of_user_key = self.entries == 0 || ikey::user_key(&self.last_key) != ikey::user_key(key);
        let (shared, _) = self.begin(key, false);
        if let (Some(h), true) = (&mut self.hashed, first_of_user_key) {
            // Restart indexes past a bucket's range only occur in blocks left unindexed.
            let restart = u8::try_from(self.restarts.len() - 1).unwrap_or(BUCKET_COLLISION);
            h.push((crate::filter::key_hash(ikey::user_key(key)), restart));
        }
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, (key.len() - shared) as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.end(key, shared);
    }

    /// Appends an index entry with a delta handle (an index block takes entries only from
    /// this, a data block only from [`add`](Self::add)). A handle that does not start where the previous one's block ended starts a restart
    /// point, where the full handle is written.
    pub fn add_handle(&mut self, key: &[u8], handle: BlockHandle) {
        let contiguous = self.handle_end == Some(handle.offset);
        let (shared, restart) = self.begin(key, !contiguous);
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, (key.len() - shared) as u32);
        self.buf.extend_from_slice(&key[shared..]);
        if restart {
            put_varint64(&mut self.buf, handle.offset);
        }
        put_varint64(&mut self.buf, handle.size);
        self.handle_end = handle.offset.checked_add(handle.size).and_then(|e| e.checked_add(TRAILER_LEN as u64));
        self.end(key, shared);
    }

    /// Starts an entry: `(shared key bytes, whether it is a restart point)`.
    fn begin(&mut self, key: &[u8], force_restart: bool) -> (usize, bool) {
        if force_restart || self.since_restart == self.interval || self.entries == 0 {
            self.restarts.push(self.buf.len() as u32);
            self.since_restart = 0;
            (0, true)
        } else {
            (key.iter().zip(&self.last_key).take_while(|(a, b)| a == b).count(), false)
        }
    }

    fn end(&mut self, key: &[u8], shared: usize) {
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.since_restart += 1;
        self.entries += 1;
    }

    /// Size of the finished block if finished now.
    pub fn size_estimate(&self) -> usize {
        let index = self
            .hashed
            .as_ref()
            .map_or(0, |h| 2 + (h.len() as f64 / HASH_UTILIZATION).ceil() as usize);
        self.buf.len() + 4 * self.restarts.len() + 4 + index
    }

    /// True when no entry was added.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Appends the restart array and returns the block bytes; `reset` before reuse.
    pub fn finish(&mut self) -> &[u8] {
        for r in &self.restarts {
            self.buf.extend_from_slice(&r.to_le_bytes());
        }
        let mut packed = self.restarts.len() as u32;
        if let Some(keys) = self.hashed.as_ref().filter(|k| !k.is_empty() && self.restarts.len() <= MAX_HASHED_RESTARTS) {
            let n = ((keys.len() as f64 / HASH_UTILIZATION).ceil() as usize).clamp(1, usize::from(u16::MAX));
            let mut buckets = vec![BUCKET_EMPTY; n];
            for &(h, restart) in keys {
                let b = &mut buckets[bucket(h, n)];
                *b = if *b == BUCKET_EMPTY { restart } else { BUCKET_COLLISION };
            }
            self.buf.extend_from_slice(&buckets);
            self.buf.extend_from_slice(&(n as u16).to_le_bytes());
            packed |= HASH_FLAG;
        }
        self.buf.extend_from_slice(&packed.to_le_bytes());
        &self.buf
    }

    /// Clears the builder for the next block.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.since_restart = 0;
        self.last_key.clear();
        self.entries = 0;
        if let Some(h) = &mut self.hashed {
            h.clear();
        }
        self.handle_end = None;
    }
}

/// A decoded block whose restart array was validated.
#[derive(Debug)]
pub struct Block {
    data: BlockBytes,
    restarts_offset: usize,
    num_restarts: usize,
    /// Where the hash index's buckets are (`start..end` of `data`; empty without an index).
    buckets: (usize, usize),
    /// An index block whose entries carry delta handles, not values.
    delta_handles: bool,
    file: Arc<Path>,
    file_offset: u64,
}

impl Block {
    /// Validates the restart array of `data`, the block stored at `file_offset` of `file`.
    ///
    /// # Errors
    /// `Corruption` when the trailer or restart array does not fit.
    pub fn new(data: Vec<u8>, file: Arc<Path>, file_offset: u64) -> Result<Self> {
        Self::from_bytes(BlockBytes::heap(data.into_boxed_slice()), file, file_offset)
    }

    /// [`Block::new`] of bytes on the heap or in the block arena.
    pub(crate) fn from_bytes(data: BlockBytes, file: Arc<Path>, file_offset: u64) -> Result<Self> {
        let origin = file.clone();
        let bad = |what: &str| Error::corruption(&*origin, file_offset, format!("block: {what}"));
        let packed = data
            .len()
            .checked_sub(4)
            .and_then(|p| read_u32(&data, p))
            .ok_or_else(|| bad("shorter than its restart count"))?;
        let n = (packed & !HASH_FLAG) as usize;
        // The hash index, if any, sits between the restart array and the packed count.
        let (buckets, restarts_end) = if packed & HASH_FLAG != 0 {
            let count_at = data.len().checked_sub(6).ok_or_else(|| bad("hash index count missing"))?;
            let nb = usize::from(u16::from_le_bytes([data[count_at], data[count_at + 1]]));
            let start = count_at
                .checked_sub(nb)
                .ok_or_else(|| bad("hash index larger than the block"))?;
            if nb == 0 || n == 0 || n > MAX_HASHED_RESTARTS {
                return Err(bad("hash index over no bucket or an unindexable restart count"));
            }
            if data[start..count_at].iter().any(|&b| usize::from(b) >= n && b < BUCKET_COLLISION) {
                return Err(bad("hash bucket names a restart point the block does not have"));
            }
            ((start, count_at), start)
        } else {
            ((0, 0), data.len() - 4)
        };
        let restarts_offset = n
            .checked_mul(4)
            .and_then(|r| restarts_end.checked_sub(r))
            .ok_or_else(|| bad("restart array larger than the block"))?;
        if n == 0 && restarts_offset != 0 {
            return Err(bad("entries without restart points"));
        }
        let block = Block {
            data,
            restarts_offset,
            num_restarts: n,
            buckets,
            delta_handles: false,
            file,
            file_offset,
        };
        // Restart points must be ascending and inside the entry area; the first must be 0.
        let mut prev = None;
        for i in 0..n {
            let r = block
                .restart_point(i)
                .ok_or_else(|| bad("restart point out of range"))?;
            if (i == 0 && r != 0) || prev.is_some_and(|p| r <= p) {
                return Err(bad("restart points not ascending from 0"));
            }
            prev = Some(r);
        }
        Ok(block)
    }

    /// An index block: with `delta_handles`, its entries are read as index entries with delta
    /// handles (properties version 5), else as any block's.
    ///
    /// # Errors
    /// As [`Block::new`].
    pub fn new_index(data: Vec<u8>, file: Arc<Path>, file_offset: u64, delta_handles: bool) -> Result<Self> {
        Ok(Self::new(data, file, file_offset)?.with_delta_handles(delta_handles))
    }

    /// The block read as an index block whose entries carry delta handles, when
    /// `delta_handles`.
    pub(crate) fn with_delta_handles(mut self, delta_handles: bool) -> Self {
        self.delta_handles = delta_handles;
        self
    }

    /// Key at restart point `i` (restart entries share nothing); `None` if it is damaged.
    pub(crate) fn restart_key(&self, i: usize) -> Option<&[u8]> {
        let r = self.restart_point(i)?;
        let data = &self.data[..self.restarts_offset];
        let (shared, n1) = get_varint32(data.get(r..)?)?;
        let (unshared, n2) = get_varint32(data.get(r + n1..)?)?;
        let n3 = if self.delta_handles { 0 } else { get_varint32(data.get(r + n1 + n2..)?)?.1 };
        let start = r + n1 + n2 + n3;
        if shared != 0 {
            return None;
        }
        data.get(start..start.checked_add(unshared as usize)?)
    }

    /// Restart points.
    pub(crate) fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// What the hash index says of the user key hashed `h` (`Search` without an index).
    #[inline]
    pub fn hash_hint(&self, h: u64) -> HashHint {
        let buckets = &self.data[self.buckets.0..self.buckets.1];
        if buckets.is_empty() {
            return HashHint::Search;
        }
        match buckets[bucket(h, buckets.len())] {
            BUCKET_EMPTY => HashHint::Absent,
            BUCKET_COLLISION => HashHint::Search,
            r => HashHint::Restart(usize::from(r)),
        }
    }

    #[cfg(any(test, feature = "test-util"))]
    /// True when the block carries a hash index.
    pub fn has_hash_index(&self) -> bool {
        self.buckets.1 > self.buckets.0
    }

    /// Starts loading the cache lines of restart interval `i` (at most [`PREFETCH_LIMIT`] bytes
    /// of it). A seek scans the interval entry by entry, and where an entry starts is known only
    /// once the previous one is decoded: without this, each entry of a block not in the CPU
    /// cache is one more memory miss in a chain (with 100-byte values, one per entry).
    #[inline]
    fn prefetch_interval(&self, i: usize) {
        let (Some(start), end) = (self.restart_point(i), self.restart_point(i + 1)) else {
            return;
        };
        let end = end.unwrap_or(self.restarts_offset).min(start + PREFETCH_LIMIT);
        let base = self.data.as_ptr() as usize;
        let mut line = (base + start) & !(CACHE_LINE - 1);
        while line < base + end {
            crate::memory::prefetch(line as *const u8);
            line += CACHE_LINE;
        }
    }

    fn restart_point(&self, i: usize) -> Option<usize> {
        let r = read_u32(&self.data, self.restarts_offset + 4 * i)? as usize;
        (r < self.restarts_offset).then_some(r)
    }

    /// Offset of the block in its file (for error reports).
    pub fn file_offset(&self) -> u64 {
        self.file_offset
    }

    /// Bytes held (the cache charges this): the block's length, or its slot's in the block
    /// arena.
    pub fn size(&self) -> usize {
        self.data.charge()
    }

    /// An iterator over the block in `order`.
    pub fn iter(self: &Arc<Self>, order: KeyOrder) -> BlockIter {
        BlockIter::new(self.clone(), order, Vec::new())
    }

    /// A cursor borrowing the block (no reference-count write) and building keys in `key`
    /// (its allocation reused; give it back with [`BlockIter::into_key_buffer`]): what a point
    /// lookup uses.
    pub fn iter_ref(&self, order: KeyOrder, key: Vec<u8>) -> BlockIter<&Block> {
        BlockIter::new(self, order, key)
    }

    fn corruption(&self, entry_offset: usize, what: &str) -> Error {
        Error::corruption(
            &*self.file,
            self.file_offset,
            format!("block entry at +{entry_offset}: {what}"),
        )
    }
}

/// Cursor over one [`Block`], owning it (`Arc`) or borrowing it (`&Block`).
#[derive(Debug)]
pub struct BlockIter<B: Deref<Target = Block> = Arc<Block>> {
    block: B,
    order: KeyOrder,
    /// Offset of the current entry; `restarts_offset` when invalid.
    current: usize,
    /// Offset of the entry after the current one.
    next: usize,
    restart_idx: usize,
    key: Vec<u8>,
    /// An ingested table's sequence number (0: none), which every key of its entries stands
    /// for (they are written with 0, `external.rs`); the keys are then handed out from `real`,
    /// `key` staying as stored (the next entry's shared prefix may reach into its trailer).
    global_seqno: u64,
    real: Vec<u8>,
    value: (usize, usize),
    /// In a block with delta handles: the current entry's handle, encoded (the value), and
    /// where its block ends (the next entry's offset when it leaves it out).
    handle: ([u8; 20], u8),
    handle_end: u64,
    err: Option<Error>,
}

impl BlockIter {
    /// A cursor over no entry whose status is `err`: what stands for a block that could not
    /// be read.
    pub(crate) fn failed(err: Error, order: KeyOrder) -> Self {
        let empty = Block {
            data: BlockBytes::heap(Box::new([0; 4])),
            restarts_offset: 0,
            num_restarts: 0,
            buckets: (0, 0),
            delta_handles: false,
            file: Arc::from(Path::new("")),
            file_offset: 0,
        };
        let mut it = BlockIter::new(Arc::new(empty), order, Vec::new());
        it.err = Some(err);
        it
    }
}

impl<B: Deref<Target = Block>> BlockIter<B> {
    fn new(block: B, order: KeyOrder, mut key: Vec<u8>) -> Self {
        key.clear();
        let end = block.restarts_offset;
        BlockIter {
            current: end,
            next: end,
            block,
            order,
            restart_idx: 0,
            key,
            global_seqno: 0,
            real: Vec::new(),
            value: (0, 0),
            handle: ([0; 20], 0),
            handle_end: 0,
            err: None,
        }
    }

    /// The cursor's key buffer, for the next cursor to reuse.
    pub fn into_key_buffer(self) -> Vec<u8> {
        self.key
    }

    /// Reads every entry's key with sequence number `seqno` (an ingested table's; 0: as
    /// stored). Searches compare the keys so read: the order is the same, the table holding
    /// each user key once.
    pub(crate) fn with_global_seqno(mut self, seqno: u64) -> Self {
        self.global_seqno = seqno;
        self
    }

    /// The current key as read (stored, or with the global sequence number).
    #[inline]
    fn current_key(&self) -> &[u8] {
        if self.global_seqno == 0 {
            &self.key
        } else {
            &self.real
        }
    }

    fn invalidate(&mut self) {
        self.current = self.block.restarts_offset;
        self.next = self.block.restarts_offset;
    }

    fn fail(&mut self, at: usize, what: &str) {
        if self.err.is_none() {
            self.err = Some(self.block.corruption(at, what));
        }
        self.invalidate();
    }

    fn seek_to_restart(&mut self, i: usize) {
        self.key.clear();
        self.restart_idx = i;
        match self.block.restart_point(i) {
            Some(r) => self.next = r,
            None => self.fail(0, "restart point out of range"),
        }
    }

    /// Decodes the entry at `self.next`; false at the end or on corruption.
    fn parse_next(&mut self) -> bool {
        let at = self.next;
        let end = self.block.restarts_offset;
        if at >= end {
            self.invalidate();
            return false;
        }
        let data = &self.block.data[..end];
        let mut p = at;
        let mut field = || -> Option<usize> {
            let (v, n) = get_varint32(data.get(p..)?)?;
            p += n;
            Some(v as usize)
        };
        let (Some(shared), Some(unshared)) = (field(), field()) else {
            self.fail(at, "truncated entry header");
            return false;
        };
        let vlen = if self.block.delta_handles {
            Some(0)
        } else {
            field()
        };
        let key_end = p.checked_add(unshared);
        let val_end = key_end.zip(vlen).and_then(|(k, v)| k.checked_add(v));
        let (Some(ke), Some(mut ve)) = (key_end, val_end) else {
            self.fail(at, "truncated entry header");
            return false;
        };
        if ve > end || shared > self.key.len() {
            self.fail(at, "entry extends past the block or shares more than the previous key");
            return false;
        }
        while self.restart_idx + 1 < self.block.num_restarts
            && self.block.restart_point(self.restart_idx + 1).is_some_and(|r| r <= at)
        {
            self.restart_idx += 1;
        }
        if self.block.delta_handles {
            let restart = self.block.restart_point(self.restart_idx) == Some(at);
            let known = if restart { None } else { Some(self.handle_end) };
            let Some((h, n)) = delta_handle(&data[ke..], known) else {
                self.fail(at, "index entry's block handle is damaged");
                return false;
            };
            ve = ke + n;
            self.handle_end = h.offset + h.size + TRAILER_LEN as u64;
            self.handle.1 = encode_handle(&mut self.handle.0, h) as u8;
        }
        self.key.truncate(shared);
        self.key.extend_from_slice(&data[p..ke]);
        if self.global_seqno != 0 {
            self.real.clear();
            self.real.extend_from_slice(&self.key);
            if !ikey::set_seqno(&mut self.real, self.global_seqno) {
                self.fail(at, "entry key shorter than its trailer");
                return false;
            }
        }
        self.value = (ke, ve);
        self.current = at;
        self.next = ve;
        true
    }

    /// Positions the cursor on the first entry ≥ `target` at or after restart point `i` (the
    /// scan a hash-index hint starts; invalid past the block's end).
    pub fn seek_from_restart(&mut self, i: usize, target: &[u8]) {
        if i >= self.block.num_restarts {
            self.invalidate();
            return;
        }
        self.block.prefetch_interval(i);
        self.seek_to_restart(i);
        while self.parse_next() {
            if self.order.compare(self.current_key(), target) != Ordering::Less {
                return;
            }
        }
    }

    /// Positions the cursor on the first entry ≥ `target`, knowing that every entry before
    /// restart point `a` is smaller and that the entry of restart point `b` (if any) is not:
    /// only restart points `a..b` are searched (the range fence pointers give).
    pub(crate) fn seek_among_restarts(&mut self, a: usize, b: usize, target: &[u8]) {
        let n = self.block.num_restarts;
        if n == 0 {
            self.invalidate();
            return;
        }
        // The last restart point in a..b whose key is < target (else a). Restart keys compare
        // as stored: under a global sequence number a stored key below the target is below it
        // as read too (a user key appears once), so the search can only start earlier.
        let mut lo = a.min(n - 1);
        let mut hi = b.saturating_sub(1).clamp(lo, n - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            match self.block.restart_key(mid) {
                Some(k) if self.order.compare(k, target) == Ordering::Less => lo = mid,
                Some(_) => hi = mid - 1,
                None => {
                    let at = self.block.restart_point(mid).unwrap_or(0);
                    self.fail(at, "bad restart entry");
                    return;
                }
            }
        }
        self.seek_from_restart(lo, target);
    }
}

impl<B: Deref<Target = Block>> InternalIterator for BlockIter<B> {
    fn valid(&self) -> bool {
        self.current < self.block.restarts_offset
    }

    fn seek_to_first(&mut self) {
        if self.block.num_restarts == 0 {
            self.invalidate();
            return;
        }
        self.seek_to_restart(0);
        self.parse_next();
    }

    fn seek_to_last(&mut self) {
        if self.block.num_restarts == 0 {
            self.invalidate();
            return;
        }
        self.seek_to_restart(self.block.num_restarts - 1);
        while self.parse_next() && self.next < self.block.restarts_offset {}
    }

    fn seek(&mut self, target: &[u8]) {
        self.seek_among_restarts(0, usize::MAX, target);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if !self.valid() {
            if self.err.is_some() {
                return;
            }
            self.seek_to_last();
        }
        while self.valid() && self.order.compare(self.current_key(), target) == Ordering::Greater {
            self.prev();
        }
    }

    fn next(&mut self) {
        if self.valid() {
            self.parse_next();
        }
    }

    fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        let original = self.current;
        while self
            .block
            .restart_point(self.restart_idx)
            .is_some_and(|r| r >= original)
        {
            if self.restart_idx == 0 {
                self.invalidate();
                return;
            }
            self.restart_idx -= 1;
        }
        self.seek_to_restart(self.restart_idx);
        while self.parse_next() && self.next < original {}
        if self.valid() && self.next != original {
            self.fail(original, "entries do not chain to the previous position");
        }
    }

    fn key(&self) -> &[u8] {
        if self.valid() {
            self.current_key()
        } else {
            &[]
        }
    }

    fn value(&self) -> &[u8] {
        if self.valid() && self.block.delta_handles {
            &self.handle.0[..usize::from(self.handle.1)]
        } else if self.valid() {
            &self.block.data[self.value.0..self.value.1]
        } else {
            &[]
        }
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            None => Ok(()),
            Some(e) => Err(e.clone()),
        }
    }
}

/// Decodes a delta handle from the start of `bytes`: with `offset` known (inside a restart
/// interval), the size alone, else the offset and the size. The handle and the bytes it took;
/// `None` if damaged, or if its block would end past `u64::MAX`.
fn delta_handle(bytes: &[u8], offset: Option<u64>) -> Option<(BlockHandle, usize)> {
    let (offset, n) = match offset {
        Some(o) => (o, 0),
        None => get_varint64(bytes)?,
    };
    let (size, m) = get_varint64(bytes.get(n..)?)?;
    offset.checked_add(size)?.checked_add(TRAILER_LEN as u64)?;
    Some((BlockHandle { offset, size }, n + m))
}

/// Writes `h` as `varint offset ‖ varint size` (what [`BlockHandle::decode`] reads) into `out`
/// (two varints of at most 10 bytes); the bytes written.
fn encode_handle(out: &mut [u8; 20], h: BlockHandle) -> usize {
    let mut n = 0;
    for mut v in [h.offset, h.size] {
        while v >= 0x80 {
            out[n] = (v as u8) | 0x80;
            v >>= 7;
            n += 1;
        }
        out[n] = v as u8;
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ikey::{InternalKey, ValueKind};
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    fn path() -> Arc<Path> {
        Arc::from(PathBuf::from("test.sst").as_path())
    }

    #[test]
    fn golden_block_bytes() {
        let mut b = BlockBuilder::new(2);
        b.add(b"apple", b"1");
        b.add(b"apply", b"22");
        b.add(b"banana", b"");
        let bytes = b.finish().to_vec();
        let expect: Vec<u8> = [
            &[0u8, 5, 1][..],
            b"apple",
            b"1", // restart 0
            &[4, 1, 2],
            b"y",
            b"22", // shares "appl"
            &[0, 6, 0],
            b"banana", // restart 1 (interval 2)
            &[0, 0, 0, 0],
            &[15, 0, 0, 0], // restart offsets 0 and 15 (9 + 6 bytes)
            &[2, 0, 0, 0],  // two restarts
        ]
        .concat();
        assert_eq!(bytes, expect);
        let mut e = BlockBuilder::new(16);
        assert_eq!(e.finish(), &[0, 0, 0, 0]);
        let blk = Arc::new(Block::new(vec![0, 0, 0, 0], path(), 0).unwrap());
        let mut it = blk.iter(KeyOrder::Bytewise);
        it.seek_to_first();
        assert!(!it.valid());
        it.seek(b"x");
        assert!(!it.valid() && it.status().is_ok());
    }

    /// A hash-indexed block: the buckets between the restart array and the packed count, the
    /// flag in the count's top bit, each user key's bucket naming its restart interval.
    #[test]
    fn golden_hash_indexed_block() {
        let mut b = BlockBuilder::with_hash_index(1);
        let k = |uk: &[u8], seq| InternalKey::new(uk, seq, ValueKind::Put);
        b.add(k(b"a", 2).encoded(), b"x");
        b.add(k(b"a", 1).encoded(), b"y"); // same user key: not hashed again
        b.add(k(b"b", 1).encoded(), b"z");
        let bytes = b.finish().to_vec();
        let n = bytes.len();
        // Two distinct user keys → ⌈2 / 0.75⌉ = 3 buckets; three restarts (interval 1).
        assert_eq!(&bytes[n - 4..], &(3u32 | HASH_FLAG).to_le_bytes());
        assert_eq!(&bytes[n - 6..n - 4], &3u16.to_le_bytes());
        let buckets = &bytes[n - 9..n - 6];
        let (ha, hb) = (crate::filter::key_hash(b"a"), crate::filter::key_hash(b"b"));
        let mut expect = [BUCKET_EMPTY; 3];
        expect[bucket(ha, 3)] = 0;
        expect[bucket(hb, 3)] = if bucket(ha, 3) == bucket(hb, 3) { BUCKET_COLLISION } else { 2 };
        assert_eq!(buckets, &expect);
        assert_eq!(&bytes[n - 21..n - 9], &[0, 0, 0, 0, 13, 0, 0, 0, 26, 0, 0, 0]); // 13-byte entries
        let blk = Block::new(bytes, path(), 0).unwrap();
        assert!(blk.has_hash_index());
        assert_eq!(blk.hash_hint(ha), HashHint::Restart(0));
    }

    /// Hinted point seeks land where the binary search lands for every present key and every
    /// version, and an "absent" hint is only ever given for keys the block does not hold.
    #[test]
    fn hash_hints_agree_with_the_binary_search() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for round in 0..60 {
            let interval = [1, 2, 4, 16][round % 4];
            let mut model = BTreeMap::new();
            for _ in 0..rng.gen_range(1..200) {
                let uk: Vec<u8> = (0..rng.gen_range(0..5)).map(|_| rng.gen_range(b'a'..b'f')).collect();
                model.insert(InternalKey::new(&uk, rng.gen_range(1..20), ValueKind::Put), vec![1u8]);
            }
            let mut b = BlockBuilder::with_hash_index(interval);
            for (k, v) in &model {
                b.add(k.encoded(), v);
            }
            let blk = Arc::new(Block::new(b.finish().to_vec(), path(), 0).unwrap());
            let restarts = model.len().div_ceil(interval);
            assert_eq!(blk.has_hash_index(), restarts <= MAX_HASHED_RESTARTS, "round {round}");
            let mut plain = blk.iter(KeyOrder::Internal);
            let mut hinted = blk.iter(KeyOrder::Internal);
            for _ in 0..300 {
                let uk: Vec<u8> = (0..rng.gen_range(0..5)).map(|_| rng.gen_range(b'a'..b'g')).collect();
                let target = InternalKey::for_seek(&uk, rng.gen_range(0..22));
                let present = model.keys().any(|k| crate::format::ikey::user_key(k.encoded()) == &uk[..]);
                plain.seek(target.encoded());
                match blk.hash_hint(crate::filter::key_hash(&uk)) {
                    HashHint::Absent => assert!(!present, "round {round}: {uk:?} ruled out but present"),
                    HashHint::Restart(r) => {
                        hinted.seek_from_restart(r, target.encoded());
                        // Same entry when the key is present (a foreign key's hint may land
                        // past the target for an absent key: then the user key differs).
                        if present {
                            assert_eq!(hinted.key(), plain.key(), "round {round}");
                        } else if hinted.valid() {
                            assert_ne!(crate::format::ikey::user_key(hinted.key()), &uk[..]);
                        }
                    }
                    HashHint::Search => {}
                }
            }
        }
    }

    #[test]
    fn damaged_hash_indexes_are_refused() {
        let mut b = BlockBuilder::with_hash_index(1);
        b.add(InternalKey::new(b"a", 1, ValueKind::Put).encoded(), b"x");
        b.add(InternalKey::new(b"b", 1, ValueKind::Put).encoded(), b"y");
        let good = b.finish().to_vec();
        let n = good.len();
        assert!(Block::new(good.clone(), path(), 0).is_ok());
        // A bucket naming a restart the block does not have.
        let mut bad = good.clone();
        bad[n - 7] = 5;
        assert!(Block::new(bad, path(), 0).is_err());
        // Zero buckets, or more buckets than bytes.
        let mut bad = good.clone();
        bad[n - 6..n - 4].copy_from_slice(&0u16.to_le_bytes());
        assert!(Block::new(bad, path(), 0).is_err());
        let mut bad = good.clone();
        bad[n - 6..n - 4].copy_from_slice(&u16::MAX.to_le_bytes());
        assert!(Block::new(bad, path(), 0).is_err());
        // The flag on a block too short to hold the count, or with zero restarts.
        assert!(Block::new(HASH_FLAG.to_le_bytes().to_vec(), path(), 0).is_err());
        assert!(Block::new([&[1u8, 0xff, 1, 0][..], &HASH_FLAG.to_le_bytes()].concat(), path(), 0).is_err());
    }

    /// Random seek/next/prev in both directions against a BTreeMap.
    #[test]
    fn conformance_with_btreemap() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for round in 0..40 {
            let interval = [1, 2, 3, 16][round % 4];
            let mut model = BTreeMap::new();
            for _ in 0..rng.gen_range(0..300) {
                let uk: Vec<u8> = (0..rng.gen_range(0..6)).map(|_| rng.gen_range(b'a'..b'e')).collect();
                let seq = rng.gen_range(0..50);
                let v: Vec<u8> = (0..rng.gen_range(0..20)).map(|_| rng.gen()).collect();
                model.insert(InternalKey::new(&uk, seq, ValueKind::Put), v);
            }
            let mut b = BlockBuilder::new(interval);
            for (k, v) in &model {
                b.add(k.encoded(), v);
            }
            let blk = Arc::new(Block::new(b.finish().to_vec(), path(), 0).unwrap());
            let mut it = blk.iter(KeyOrder::Internal);
            crate::iter::conformance::check(&mut it, &model, &mut rng, 200, 8, |r| {
                let uk: Vec<u8> = (0..r.gen_range(0..6)).map(|_| r.gen_range(b'a'..b'f')).collect();
                InternalKey::new(&uk, r.gen_range(0..55), ValueKind::Put)
            });
        }
    }

    #[test]
    fn malformed_blocks_error_without_panicking() {
        let mut b = BlockBuilder::new(4);
        for i in 0..50u32 {
            b.add(format!("key{i:04}").as_bytes(), &i.to_le_bytes());
        }
        let good = b.finish().to_vec();
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for _ in 0..3000 {
            let mut d = good.clone();
            for _ in 0..rng.gen_range(1..4) {
                let i = rng.gen_range(0..d.len());
                d[i] = rng.gen();
            }
            if rng.gen_bool(0.2) {
                d.truncate(rng.gen_range(0..d.len()));
            }
            let Ok(blk) = Block::new(d, path(), 0) else {
                continue;
            };
            let blk = Arc::new(blk);
            let mut it = blk.iter(KeyOrder::Bytewise);
            it.seek_to_first();
            let mut n = 0;
            while it.valid() && n < 100 {
                it.next();
                n += 1;
            }
            it.seek(b"key0025");
            it.seek_for_prev(b"key0031");
            it.seek_to_last();
            while it.valid() && n < 200 {
                it.prev();
                n += 1;
            }
            let _ = it.status();
        }
    }

    /// An index block with delta handles, byte for byte (`docs/format/sst.md`): the offset only
    /// at restart points and after a gap; values read back as full handles.
    #[test]
    fn golden_delta_handle_block() {
        let mut b = BlockBuilder::new(2);
        b.add_handle(b"apple", BlockHandle { offset: 0, size: 100 });
        b.add_handle(b"apply", BlockHandle { offset: 105, size: 300 });
        b.add_handle(b"banana", BlockHandle { offset: 410, size: 7 });
        b.add_handle(b"cherry", BlockHandle { offset: 500, size: 2 }); // a gap: a restart
        let bytes = b.finish().to_vec();
        let expect: Vec<u8> = [
            &[0u8, 5][..],
            b"apple",
            &[0, 100], // restart 0: offset 0, size 100
            &[4, 1],
            b"y",
            &[0xac, 0x02], // size 300 (offset 105 left out)
            &[0, 6],
            b"banana",
            &[0x9a, 0x03, 7], // restart 1 (interval 2): offset 410, size 7
            &[0, 6],
            b"cherry",
            &[0xf4, 0x03, 2], // restart 2 (offset 500 is not 410 + 7 + 5)
            &[0, 0, 0, 0],
            &[14, 0, 0, 0], // 9 + 5 bytes
            &[25, 0, 0, 0], // + 11
            &[3, 0, 0, 0],
        ]
        .concat();
        assert_eq!(bytes, expect);
        let blk = Arc::new(Block::new_index(bytes, path(), 0, true).unwrap());
        let handles = |it: &BlockIter| BlockHandle::decode(&mut crate::format::coding::Decoder::new(it.value())).unwrap();
        let mut it = blk.iter(KeyOrder::Bytewise);
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            got.push((it.key().to_vec(), handles(&it)));
            it.next();
        }
        let want: Vec<(Vec<u8>, BlockHandle)> = [("apple", 0, 100), ("apply", 105, 300), ("banana", 410, 7), ("cherry", 500, 2)]
            .iter()
            .map(|&(k, offset, size)| (k.as_bytes().to_vec(), BlockHandle { offset, size }))
            .collect();
        assert_eq!(got, want);
        it.seek(b"applz");
        assert_eq!((it.key(), handles(&it)), (&b"banana"[..], want[2].1));
        it.prev();
        assert_eq!((it.key(), handles(&it)), (&b"apply"[..], want[1].1));
        assert_eq!(blk.restart_key(1), Some(&b"banana"[..]));
    }

    /// Index blocks with delta handles against a model, at several restart intervals and with
    /// gaps between blocks: every way in (seek, restart-range seek, next, prev) reads the same
    /// keys and handles.
    #[test]
    fn delta_handle_blocks_match_their_handles() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(17);
        for round in 0..40 {
            let interval = [1, 2, 8, 16][round % 4];
            let keys: std::collections::BTreeSet<InternalKey> = (0..rng.gen_range(0..300))
                .map(|_| {
                    let uk: Vec<u8> = (0..rng.gen_range(0..6)).map(|_| rng.gen_range(b'a'..b'e')).collect();
                    InternalKey::new(&uk, rng.gen_range(0..50), ValueKind::Put)
                })
                .collect();
            let mut offset = rng.gen_range(0..1u64 << 40);
            let mut model = BTreeMap::new();
            let mut b = BlockBuilder::new(interval);
            for k in keys {
                let h = BlockHandle { offset, size: rng.gen_range(0..70_000) };
                b.add_handle(k.encoded(), h);
                let mut v = Vec::new();
                h.encode_to(&mut v);
                model.insert(k, v);
                offset += h.size + TRAILER_LEN as u64 + if rng.gen_bool(0.05) { rng.gen_range(1..9) } else { 0 };
            }
            let blk = Arc::new(Block::new_index(b.finish().to_vec(), path(), 0, true).unwrap());
            let mut it = blk.iter(KeyOrder::Internal);
            let target = |r: &mut dyn rand::RngCore| {
                let uk: Vec<u8> = (0..r.gen_range(0..6)).map(|_| r.gen_range(b'a'..b'f')).collect();
                InternalKey::new(&uk, r.gen_range(0..55), ValueKind::Put)
            };
            crate::iter::conformance::check(&mut it, &model, &mut rng, 200, 8, target);
            // A seek among any range of restarts that brackets the answer finds it.
            let n = blk.num_restarts();
            for _ in 0..100 {
                let t = target(&mut rng);
                it.seek(t.encoded());
                let want = it.valid().then(|| it.key().to_vec());
                let below = (0..n)
                    .filter(|&i| KeyOrder::Internal.compare(blk.restart_key(i).unwrap(), t.encoded()) == Ordering::Less)
                    .count();
                let a = rng.gen_range(0..=below.saturating_sub(1));
                let b = rng.gen_range(below..=n);
                it.seek_among_restarts(a, b, t.encoded());
                assert_eq!(it.valid().then(|| it.key().to_vec()), want, "round {round}");
            }
        }
    }

    #[test]
    fn damaged_delta_handles_error_without_panicking() {
        let mut b = BlockBuilder::new(4);
        let mut offset = 0;
        for i in 0..50u64 {
            b.add_handle(format!("key{i:04}").as_bytes(), BlockHandle { offset, size: 4000 + i });
            offset += 4005 + i;
        }
        let good = b.finish().to_vec();
        // A handle whose block would end past u64::MAX is refused.
        let mut huge = BlockBuilder::new(4);
        huge.add_handle(b"k", BlockHandle { offset: u64::MAX - 2, size: 1 });
        let blk = Arc::new(Block::new_index(huge.finish().to_vec(), path(), 0, true).unwrap());
        let mut it = blk.iter(KeyOrder::Bytewise);
        it.seek_to_first();
        assert!(!it.valid() && it.status().is_err());
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for _ in 0..3000 {
            let mut d = good.clone();
            for _ in 0..rng.gen_range(1..4) {
                let i = rng.gen_range(0..d.len());
                d[i] = rng.gen();
            }
            if rng.gen_bool(0.2) {
                d.truncate(rng.gen_range(0..d.len()));
            }
            let Ok(blk) = Block::new_index(d, path(), 0, true) else {
                continue;
            };
            let blk = Arc::new(blk);
            let mut it = blk.iter(KeyOrder::Bytewise);
            it.seek_to_first();
            let mut n = 0;
            while it.valid() && n < 100 {
                let _ = BlockHandle::decode(&mut crate::format::coding::Decoder::new(it.value()));
                it.next();
                n += 1;
            }
            it.seek_among_restarts(2, 9, b"key0025");
            it.seek_for_prev(b"key0031");
            it.seek_to_last();
            while it.valid() && n < 200 {
                it.prev();
                n += 1;
            }
            let _ = it.status();
        }
    }
}
