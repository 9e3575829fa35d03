//! Data, index and metaindex blocks (spec: `docs/format/sst.md` § Blocks).
//!
//! ```text
//! block   := entry* restart:u32le[num_restarts] num_restarts:u32le
//! entry   := shared:varint32 unshared:varint32 value_len:varint32 key_suffix[unshared] value[value_len]
//! ```
//! `shared` bytes of the key are taken from the previous entry's key; at a restart point
//! `shared = 0`. Restart offsets point at entries, ascending. An empty block is just
//! `num_restarts = 0` (4 bytes).

use crate::error::{Error, Result};
use crate::format::coding::{get_varint32, put_varint32, read_u32};
use crate::format::ikey::KeyOrder;
use crate::iter::InternalIterator;
use std::cmp::Ordering;
use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

/// Builds one block.
#[derive(Debug)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    since_restart: usize,
    interval: usize,
    last_key: Vec<u8>,
    entries: usize,
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
        }
    }

    /// Appends an entry; keys must be added in order (the table builder checks).
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if self.since_restart == self.interval || self.entries == 0 {
            self.restarts.push(self.buf.len() as u32);
            self.since_restart = 0;
            0
        } else {
            key.iter().zip(&self.last_key).take_while(|(a, b)| a == b).count()
        };
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, (key.len() - shared) as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.since_restart += 1;
        self.entries += 1;
    }

    /// Size of the finished block if finished now.
    pub fn size_estimate(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
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
        self.buf.extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        &self.buf
    }

    /// Clears the builder for the next block.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.since_restart = 0;
        self.last_key.clear();
        self.entries = 0;
    }
}

/// A decoded block whose restart array was validated.
#[derive(Debug)]
pub struct Block {
    data: Box<[u8]>,
    restarts_offset: usize,
    num_restarts: usize,
    file: Arc<Path>,
    file_offset: u64,
}

impl Block {
    /// Validates the restart array of `data`, the block stored at `file_offset` of `file`.
    ///
    /// # Errors
    /// `Corruption` when the trailer or restart array does not fit.
    pub fn new(data: Vec<u8>, file: Arc<Path>, file_offset: u64) -> Result<Self> {
        let origin = file.clone();
        let bad = |what: &str| Error::corruption(&*origin, file_offset, format!("block: {what}"));
        let n = data
            .len()
            .checked_sub(4)
            .and_then(|p| read_u32(&data, p))
            .ok_or_else(|| bad("shorter than its restart count"))? as usize;
        let restarts_offset = n
            .checked_mul(4)
            .and_then(|r| data.len().checked_sub(4 + r))
            .ok_or_else(|| bad("restart array larger than the block"))?;
        if n == 0 && restarts_offset != 0 {
            return Err(bad("entries without restart points"));
        }
        let block = Block {
            data: data.into_boxed_slice(),
            restarts_offset,
            num_restarts: n,
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

    /// Key at restart point `i` (restart entries share nothing); `None` if it is damaged.
    pub(crate) fn restart_key(&self, i: usize) -> Option<&[u8]> {
        let r = self.restart_point(i)?;
        let data = &self.data[..self.restarts_offset];
        let (shared, n1) = get_varint32(data.get(r..)?)?;
        let (unshared, n2) = get_varint32(data.get(r + n1..)?)?;
        let (_, n3) = get_varint32(data.get(r + n1 + n2..)?)?;
        let start = r + n1 + n2 + n3;
        if shared != 0 {
            return None;
        }
        data.get(start..start.checked_add(unshared as usize)?)
    }

    /// Restart points (entries, in a block written with restart interval 1).
    pub(crate) fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    fn restart_point(&self, i: usize) -> Option<usize> {
        let r = read_u32(&self.data, self.restarts_offset + 4 * i)? as usize;
        (r < self.restarts_offset).then_some(r)
    }

    /// Offset of the block in its file (for error reports).
    pub fn file_offset(&self) -> u64 {
        self.file_offset
    }

    /// Bytes held (the cache charges this).
    pub fn size(&self) -> usize {
        self.data.len()
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
    value: (usize, usize),
    err: Option<Error>,
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
            value: (0, 0),
            err: None,
        }
    }

    /// The cursor's key buffer, for the next cursor to reuse.
    pub fn into_key_buffer(self) -> Vec<u8> {
        self.key
    }

    /// The key buffer, to lend (the cursor's key is garbage until its next positioning call).
    pub fn key_buffer_mut(&mut self) -> &mut Vec<u8> {
        self.invalidate();
        &mut self.key
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
        let (Some(shared), Some(unshared), Some(vlen)) = (field(), field(), field()) else {
            self.fail(at, "truncated entry header");
            return false;
        };
        let key_end = p.checked_add(unshared);
        let val_end = key_end.and_then(|k| k.checked_add(vlen));
        match (key_end, val_end) {
            (Some(ke), Some(ve)) if ve <= end && shared <= self.key.len() => {
                self.key.truncate(shared);
                self.key.extend_from_slice(&data[p..ke]);
                self.value = (ke, ve);
                self.current = at;
                self.next = ve;
                while self.restart_idx + 1 < self.block.num_restarts
                    && self.block.restart_point(self.restart_idx + 1).is_some_and(|r| r <= at)
                {
                    self.restart_idx += 1;
                }
                true
            }
            _ => {
                self.fail(at, "entry extends past the block or shares more than the previous key");
                false
            }
        }
    }

    /// Positions the cursor on the entry at restart point `i` (invalid past the last).
    pub(crate) fn seek_to_restart_entry(&mut self, i: usize) {
        if i >= self.block.num_restarts {
            self.invalidate();
            return;
        }
        self.seek_to_restart(i);
        self.parse_next();
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
        if self.block.num_restarts == 0 {
            self.invalidate();
            return;
        }
        // Last restart point whose key is < target.
        let (mut lo, mut hi) = (0usize, self.block.num_restarts - 1);
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
        self.seek_to_restart(lo);
        while self.parse_next() {
            if self.order.compare(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if !self.valid() {
            if self.err.is_some() {
                return;
            }
            self.seek_to_last();
        }
        while self.valid() && self.order.compare(&self.key, target) == Ordering::Greater {
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
            &self.key
        } else {
            &[]
        }
    }

    fn value(&self) -> &[u8] {
        if self.valid() {
            &self.block.data[self.value.0..self.value.1]
        } else {
            &[]
        }
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            None => Ok(()),
            Some(e) => Err(clone_error(e)),
        }
    }
}

/// Iterator errors are reported from `&self`; corruption errors are cloneable by value.
pub(crate) fn clone_error(e: &Error) -> Error {
    match e {
        Error::Corruption { file, offset, what } => Error::Corruption {
            file: file.clone(),
            offset: *offset,
            what: what.clone(),
        },
        Error::Io { op, path, source } => Error::Io {
            op,
            path: path.clone(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
        Error::Poisoned(s) => Error::Poisoned(s.clone()),
        Error::Busy(s) => Error::Busy(s.clone()),
        Error::InvalidArgument(s) => Error::InvalidArgument(s.clone()),
        Error::Locked(p) => Error::Locked(p.clone()),
        other => Error::InvalidArgument(other.to_string()),
    }
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
}
