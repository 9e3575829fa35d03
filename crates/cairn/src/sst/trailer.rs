//! How a block is stored: `contents ‖ compression:u8 ‖ crc:u32le`, crc = masked CRC32C over
//! `contents ‖ compression`. Compressed contents carry the uncompressed length first:
//! `uncompressed_len:u32le ‖ lz4 block | zstd frame`.

use super::footer::BlockHandle;
use crate::env::RandomAccessFile;
use crate::error::{Error, Result};
use crate::format::coding::{masked_crc, read_u32};
use crate::stats::{BlockKind, IoStats};
use std::path::Path;

/// Bytes after every block's contents.
pub const TRAILER_LEN: usize = 5;

/// Largest uncompressed block accepted: one maximal entry (64 KiB key + 256 MiB value) plus
/// headroom. Bounds the allocation a compressed block's length prefix can cause.
pub const MAX_BLOCK_LEN: usize = 512 << 20;

/// Block compression (on-disk values; never renumber).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Compression {
    /// Stored as is.
    #[default]
    None = 0,
    /// LZ4 block format (`lz4_flex`).
    Lz4 = 1,
    /// Zstandard, level 3 (`zstd`).
    Zstd = 2,
}

impl Compression {
    /// Decodes a compression byte.
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(Compression::None),
            1 => Some(Compression::Lz4),
            2 => Some(Compression::Zstd),
            _ => None,
        }
    }
}

/// Encodes `raw` for storage: `(contents, compression actually used)`. Compression is kept
/// only when it saves at least 1/8 of the block (RocksDB's rule).
pub fn compress(raw: &[u8], c: Compression) -> (Vec<u8>, Compression) {
    let compressed = match c {
        Compression::None => None,
        Compression::Lz4 => Some(lz4_flex::block::compress(raw)),
        Compression::Zstd => zstd::bulk::compress(raw, 3).ok(),
    };
    match compressed {
        Some(body) if body.len() + 4 < raw.len() - raw.len() / 8 => {
            let mut out = Vec::with_capacity(body.len() + 4);
            out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
            out.extend_from_slice(&body);
            (out, c)
        }
        _ => (raw.to_vec(), Compression::None),
    }
}

/// Appends the trailer for `contents` stored with `c`.
pub fn trailer(contents: &[u8], c: Compression) -> [u8; TRAILER_LEN] {
    let mut t = [0u8; TRAILER_LEN];
    t[0] = c as u8;
    let crc = masked_crc(&[contents, &[c as u8]]);
    t[1..].copy_from_slice(&crc.to_le_bytes());
    t
}

/// Reads, verifies and decompresses the block at `handle`, counting the read.
///
/// # Errors
/// `Corruption` naming `path` and the block offset for any checksum, length or decompression
/// failure; I/O errors from the file.
pub fn read_block(
    file: &dyn RandomAccessFile,
    path: &Path,
    handle: BlockHandle,
    kind: BlockKind,
    stats: &IoStats,
) -> Result<Vec<u8>> {
    let total = stored_len(file.size(), path, handle, kind)?;
    let mut buf = vec![0u8; total];
    file.read_exact_at(handle.offset, &mut buf)?;
    stats.record_read(kind, total as u64);
    decode_block(buf, path, handle, kind)
}

/// Bytes a block at `handle` occupies with its trailer, checked against the file size.
///
/// # Errors
/// `Corruption` when the handle points past the end of the file or at an oversized block.
pub fn stored_len(file_size: u64, path: &Path, handle: BlockHandle, kind: BlockKind) -> Result<usize> {
    let bad = |what: String| Error::corruption(path, handle.offset, format!("{} block: {what}", kind.name()));
    let total = handle
        .size
        .checked_add(TRAILER_LEN as u64)
        .filter(|&t| handle.offset.checked_add(t).is_some_and(|end| end <= file_size))
        .ok_or_else(|| {
            bad(format!(
                "handle (size {}) extends past the end of the file",
                handle.size
            ))
        })?;
    usize::try_from(total)
        .ok()
        .filter(|&t| t <= MAX_BLOCK_LEN)
        .ok_or_else(|| bad("block too large".into()))
}

/// Sequential reads of a table's data blocks in large chunks: one read serves every block
/// inside it, instead of one read per block — with O_DIRECT, a 4 KiB block per system call is
/// what makes a big compaction or a long scan slow.
///
/// Two modes. **Fixed** (compactions, which read their inputs front to back): every chunk is
/// `size` bytes (RocksDB's `compaction_readahead_size`). **Auto** (user iterators, which may
/// read one block or thousands): blocks are read alone until the iterator has read two blocks
/// in a row in file order, then chunks of 8 KiB that double with each chunk read up to `size`
/// (RocksDB's iterator auto-readahead); a jump resets it. The chunk doubles per chunk, not per
/// block: doubling per block read, a 100-entry scan (4 blocks) read 22 KiB ahead per seek and
/// left 14 KiB of it unused, against RocksDB's 4 (`docs/results/2026-12-07/scans`).
#[derive(Debug, Default)]
pub struct Readahead {
    size: usize,
    auto: bool,
    /// Consecutive sequential blocks read (auto mode).
    run: u32,
    /// The next chunk's size (auto mode).
    next_chunk: usize,
    /// Where the next sequential block starts.
    next: u64,
    start: u64,
    buf: Vec<u8>,
}

/// The first auto-readahead chunk.
const AUTO_INITIAL: usize = 8 << 10;

impl Readahead {
    /// Fixed chunks of `size` bytes.
    pub fn new(size: usize) -> Self {
        Readahead {
            size,
            ..Readahead::default()
        }
    }

    /// Chunks that start once reads turn sequential and grow up to `max` bytes.
    pub fn auto(max: usize) -> Self {
        Readahead {
            size: max,
            auto: true,
            next: u64::MAX,
            next_chunk: AUTO_INITIAL.min(max),
            ..Readahead::default()
        }
    }

    /// Notes a read of the block at `handle` (`total` bytes with its trailer); whether it
    /// should come through the readahead buffer.
    pub fn sequential(&mut self, handle: BlockHandle, total: u64) -> bool {
        if !self.auto {
            return true;
        }
        if handle.offset == self.next {
            self.run = self.run.saturating_add(1);
        } else {
            self.run = 0;
            self.buf.clear();
            self.next_chunk = AUTO_INITIAL.min(self.size);
        }
        self.next = handle.offset + total;
        self.run >= 2
    }

    /// The chunk size for the next read.
    fn chunk(&self) -> usize {
        if self.auto {
            self.next_chunk
        } else {
            self.size
        }
    }

    /// The block at `handle` (contents and trailer, unverified) from the buffer, reading the
    /// chunk that starts at the block when it is not there.
    ///
    /// # Errors
    /// `Corruption` for a handle past the end of the file; I/O errors.
    pub fn block(
        &mut self,
        file: &dyn RandomAccessFile,
        path: &Path,
        handle: BlockHandle,
        kind: BlockKind,
        stats: &IoStats,
    ) -> Result<Vec<u8>> {
        let total = stored_len(file.size(), path, handle, kind)?;
        let end = handle.offset + total as u64;
        if handle.offset < self.start || end > self.start + self.buf.len() as u64 {
            let want = (file.size() - handle.offset).min(self.chunk().max(total) as u64) as usize;
            self.buf.resize(want, 0);
            file.read_exact_at(handle.offset, &mut self.buf)?;
            self.start = handle.offset;
            stats.record_readahead(want as u64);
            if self.auto {
                self.next_chunk = (self.next_chunk * 2).min(self.size);
            }
        }
        stats.record_read_ahead(kind, total as u64);
        let at = (handle.offset - self.start) as usize;
        Ok(self.buf[at..at + total].to_vec())
    }
}

/// Verifies and decompresses a block read whole (contents and trailer) from `handle`.
///
/// # Errors
/// `Corruption` naming `path` and the block offset for any checksum, length or decompression
/// failure.
pub fn decode_block(mut buf: Vec<u8>, path: &Path, handle: BlockHandle, kind: BlockKind) -> Result<Vec<u8>> {
    let bad = |what: String| Error::corruption(path, handle.offset, format!("{} block: {what}", kind.name()));
    let total = buf.len();
    if total < TRAILER_LEN {
        return Err(bad("shorter than its trailer".into()));
    }
    let n = total - TRAILER_LEN;
    let ctype = buf[n];
    let stored = read_u32(&buf, n + 1).unwrap_or(0);
    if masked_crc(&[&buf[..=n]]) != stored {
        return Err(bad("checksum mismatch".into()));
    }
    buf.truncate(n);
    match Compression::from_u8(ctype) {
        Some(Compression::None) => Ok(buf),
        Some(c) => {
            let raw_len = read_u32(&buf, 0).ok_or_else(|| bad("missing uncompressed length".into()))? as usize;
            if raw_len > MAX_BLOCK_LEN {
                return Err(bad(format!("uncompressed length {raw_len} too large")));
            }
            let out = match c {
                Compression::Lz4 => lz4_flex::block::decompress(&buf[4..], raw_len).map_err(|e| e.to_string()),
                _ => zstd::bulk::decompress(&buf[4..], raw_len).map_err(|e| e.to_string()),
            };
            match out {
                Ok(v) if v.len() == raw_len => Ok(v),
                Ok(v) => Err(bad(format!("decompressed to {} bytes, expected {raw_len}", v.len()))),
                Err(e) => Err(bad(format!("decompression failed: {e}"))),
            }
        }
        None => Err(bad(format!("unknown compression type {ctype}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(offset: u64) -> BlockHandle {
        BlockHandle {
            offset,
            size: 4091,
        }
    }

    #[test]
    fn auto_readahead_starts_on_the_third_sequential_block_and_grows_per_chunk() {
        use crate::env::{FileSystem, MemFs};
        let fs = MemFs::new();
        let path = Path::new("/t");
        let mut w = fs.create(path).unwrap();
        w.append(&vec![7u8; 64 * 4096]).unwrap();
        w.sync_all().unwrap();
        drop(w);
        let file = fs.open_read(path, crate::env::ReadOptions::default()).unwrap();
        let stats = IoStats::new();
        let mut ra = Readahead::auto(64 << 10);
        let mut chunks = Vec::new();
        for b in 0..40u64 {
            let off = b * 4096;
            if ra.sequential(h(off), 4096) {
                let before = stats.snapshot().readahead.bytes;
                ra.block(&*file, path, h(off), BlockKind::Data, &stats).unwrap();
                let read = stats.snapshot().readahead.bytes - before;
                if read > 0 {
                    chunks.push(read / 1024);
                }
            }
        }
        // Blocks 0 and 1 alone; then chunks of 8, 16, 32 KiB, then 64 KiB: one chunk each time
        // the last one is used up, not one per block.
        assert_eq!(chunks, vec![8, 16, 32, 64, 64]);
        let ra_stats = stats.snapshot().readahead;
        assert_eq!(ra_stats.served, 38 * 4096);
        assert_eq!(ra_stats.wasted(), (8 + 16 + 32 + 64 + 64 - 38 * 4) * 1024);
        // A jump starts over.
        assert!(!ra.sequential(h(1 << 20), 4096));
        assert!(!ra.sequential(h((1 << 20) + 4096), 4096));
        assert!(ra.sequential(h((1 << 20) + 8192), 4096));
        // Fixed readahead always reads chunks of its size.
        let mut fixed = Readahead::new(2 << 20);
        assert!(fixed.sequential(h(12345), 4096));
        assert_eq!(fixed.chunk(), 2 << 20);
    }
}
