//! How a block is stored: `contents ‖ compression:u8 ‖ crc:u32le`, crc = masked CRC32C over
//! `contents ‖ compression`. Compressed contents carry the uncompressed length first:
//! `uncompressed_len:u32le ‖ lz4 block | zstd frame`.

use super::footer::BlockHandle;
use super::prefetch::{self, Ahead};
use crate::env::RandomAccessFile;
use crate::error::{Error, Result};
use crate::format::coding::{masked_crc, read_u32};
use crate::stats::{BlockKind, IoStats};
use std::path::Path;
use std::sync::Arc;

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
/// read one block or thousands): a read takes the block it needs and a chunk beyond it. After a
/// jump (a seek), the first read takes `seek_ahead` bytes beyond its block — what the level's
/// recent seeks went on to read (`tuning/readahead.rs`) — or, with none, blocks are read alone
/// until the iterator has read two in a row in file order, then with chunks of 8 KiB (RocksDB's
/// auto-readahead). Each chunk doubles the last, up to `size`. The chunk doubles per chunk, not
/// per block: doubling per block read, a 100-entry scan (4 blocks) read 22 KiB ahead per seek
/// and left 14 KiB of it unused (`docs/results/2026-12-07/scans`).
///
/// Backward runs (an iterator stepping back through the blocks in reverse file order) get the
/// same, mirrored: after two blocks in a row, each read takes the block and a chunk before it,
/// growing the same way (a seek's readahead is learned from forward runs only).
///
/// Once an auto run's chunks have reached `size`, the run is long: the chunk after the one held
/// (before it, backward) is read on another thread while this one is consumed
/// (`prefetch.rs`), and a block that spans the two chunks is put together from both.
#[derive(Debug, Default)]
pub struct Readahead {
    size: usize,
    auto: bool,
    /// Consecutive sequential blocks read (auto mode).
    run: u32,
    /// The next chunk's size (auto mode).
    next_chunk: usize,
    /// Bytes the first read after a jump takes beyond its block (auto mode; 0: none).
    seek_ahead: usize,
    /// Where the next sequential block starts (backward: where the last one started, which
    /// is where the next one ends).
    next: u64,
    /// The run goes backward (auto mode).
    back: bool,
    start: u64,
    buf: Vec<u8>,
    /// The chunk after `buf` (before it, backward), being read (auto mode, long runs).
    ahead: Option<Ahead>,
}

/// The first auto-readahead chunk without a seek readahead.
const AUTO_INITIAL: usize = crate::tuning::readahead::FIRST_CHUNK as usize;

impl Readahead {
    /// Fixed chunks of `size` bytes.
    pub fn new(size: usize) -> Self {
        Readahead {
            size,
            ..Readahead::default()
        }
    }

    /// Chunks that grow up to `max` bytes, from `seek_ahead` bytes beyond a seek's block
    /// (with 0: from once reads turn sequential).
    pub fn auto(max: usize, seek_ahead: usize) -> Self {
        Readahead {
            size: max,
            auto: true,
            next: u64::MAX,
            seek_ahead: seek_ahead.min(max),
            next_chunk: Self::first_chunk(seek_ahead.min(max), max),
            ..Readahead::default()
        }
    }

    fn first_chunk(seek_ahead: usize, max: usize) -> usize {
        if seek_ahead > 0 {
            seek_ahead
        } else {
            AUTO_INITIAL.min(max)
        }
    }

    /// Ends the current run of sequential blocks (the next block read counts as a jump): the
    /// blocks read in file order after the run's first, if a run was under way (auto mode).
    pub fn take_run(&mut self) -> Option<u32> {
        if !self.auto || self.next == u64::MAX {
            return None;
        }
        let run = self.run;
        self.next = u64::MAX;
        self.run = 0;
        self.ahead = None;
        Some(run)
    }

    /// Notes a read of the block at `handle` (`total` bytes with its trailer) by an iterator
    /// moving `forward` (or back); whether it should come through the readahead buffer.
    pub fn sequential(&mut self, handle: BlockHandle, total: u64, forward: bool) -> bool {
        if !self.auto {
            return true;
        }
        let follows = if forward {
            handle.offset == self.next
        } else {
            handle.offset.checked_add(total) == Some(self.next)
        };
        if follows && self.back != forward {
            self.run = self.run.saturating_add(1);
        } else {
            self.run = 0;
            self.back = !forward;
            self.buf.clear();
            self.ahead = None;
            self.next_chunk = if forward {
                Self::first_chunk(self.seek_ahead, self.size)
            } else {
                AUTO_INITIAL.min(self.size)
            };
        }
        self.next = if forward { handle.offset + total } else { handle.offset };
        self.run >= 2 || (forward && self.seek_ahead > 0)
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
    /// chunk that holds the block when it is not there.
    ///
    /// # Errors
    /// `Corruption` for a handle past the end of the file; I/O errors.
    pub fn block(
        &mut self,
        file: &Arc<dyn RandomAccessFile>,
        path: &Path,
        handle: BlockHandle,
        kind: BlockKind,
        stats: &IoStats,
    ) -> Result<Vec<u8>> {
        let total = stored_len(file.size(), path, handle, kind)?;
        let end = handle.offset + total as u64;
        if handle.offset >= self.start && end <= self.start + self.buf.len() as u64 {
            return Ok(self.served(handle.offset, total, kind, stats));
        }
        if let Some(ahead) = self.ahead.take() {
            // The run went on past the chunk held, into the one read ahead, unless the block
            // lies elsewhere; it may span both.
            if let Some(joined) = self.join(ahead, file, path, handle.offset, end, stats)? {
                stats.record_read_ahead(kind, total as u64);
                return Ok(joined);
            }
        }
        // Auto: the block and a chunk beyond it (before it, backward; a chunk from the block's
        // start would hold one 4 KiB block of an 8 KiB chunk, with its trailer). Fixed: the
        // chunk.
        let chunk = if self.auto { total + self.chunk() } else { self.chunk().max(total) };
        let (from, want) = if self.back {
            let want = end.min(chunk as u64);
            (end - want, want as usize)
        } else {
            (handle.offset, (file.size() - handle.offset).min(chunk as u64) as usize)
        };
        self.buf.resize(want, 0);
        file.read_exact_at(from, &mut self.buf)?;
        self.start = from;
        stats.record_readahead(want as u64);
        if self.auto {
            if self.next_chunk == self.size {
                self.read_ahead(file, Vec::new(), stats);
            }
            self.next_chunk = (self.next_chunk * 2).min(self.size);
        }
        Ok(self.served(handle.offset, total, kind, stats))
    }

    /// The `total` bytes at `offset`, from the chunk held, counted as served by readahead.
    fn served(&self, offset: u64, total: usize, kind: BlockKind, stats: &IoStats) -> Vec<u8> {
        stats.record_read_ahead(kind, total as u64);
        let at = (offset - self.start) as usize;
        self.buf[at..at + total].to_vec()
    }

    /// The block `[offset, end)` from the chunk held and `ahead` when it lies in the two (the
    /// chunk read ahead then becomes the one held, and the next is started), or `None`.
    fn join(
        &mut self,
        ahead: Ahead,
        file: &Arc<dyn RandomAccessFile>,
        path: &Path,
        offset: u64,
        end: u64,
        stats: &IoStats,
    ) -> Result<Option<Vec<u8>>> {
        let held = self.start + self.buf.len() as u64;
        let ahead_end = ahead.start + ahead.len as u64;
        let inside = if self.back {
            // [ahead][held]: the block starts in the chunk ahead and ends in the one held.
            ahead_end == self.start && offset >= ahead.start && end >= self.start && end <= held
        } else {
            // [held][ahead]: the block starts in the chunk held and ends in the one ahead.
            ahead.start == held && offset >= self.start && offset <= held && end <= ahead_end
        };
        if !inside {
            return Ok(None);
        }
        let start = ahead.start;
        let chunk = ahead.wait(path)?;
        let mut out = Vec::with_capacity((end - offset) as usize);
        if self.back {
            out.extend_from_slice(&chunk[(offset - start) as usize..]);
            out.extend_from_slice(&self.buf[..(end - self.start) as usize]);
        } else {
            out.extend_from_slice(&self.buf[(offset - self.start) as usize..]);
            out.extend_from_slice(&chunk[..(end - held) as usize]);
        }
        let used = std::mem::replace(&mut self.buf, chunk);
        self.start = start;
        self.read_ahead(file, used, stats);
        Ok(Some(out))
    }

    /// Starts reading the chunk after the one held (before it, backward), into `reuse`'s
    /// memory.
    fn read_ahead(&mut self, file: &Arc<dyn RandomAccessFile>, reuse: Vec<u8>, stats: &IoStats) {
        let (start, len) = if self.back {
            let len = self.start.min(self.size as u64);
            (self.start - len, len)
        } else {
            let start = self.start + self.buf.len() as u64;
            (start, file.size().saturating_sub(start).min(self.size as u64))
        };
        if len == 0 {
            return;
        }
        stats.record_readahead(len);
        self.ahead = Some(prefetch::read(Arc::clone(file), start, len as usize, reuse));
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

    /// A file of `blocks` blocks of `len` bytes with their trailers, each byte telling its
    /// offset apart (a block put together from two chunks in the wrong order would show).
    fn file(blocks: u64, len: u64) -> Arc<dyn RandomAccessFile> {
        use crate::env::{FileSystem, MemFs};
        let fs = MemFs::new();
        let mut w = fs.create(Path::new("/t")).unwrap();
        w.append(&(0..blocks * len).map(|i| (i % 251) as u8).collect::<Vec<_>>()).unwrap();
        w.sync_all().unwrap();
        drop(w);
        fs.open_read(Path::new("/t"), crate::env::ReadOptions::default()).unwrap()
    }

    /// The KiB each read through `ra` took (the ones read ahead counted when they start),
    /// reading blocks `blocks` of 4 KiB of a 64-block file.
    fn chunks(ra: &mut Readahead, blocks: std::ops::Range<u64>, stats: &IoStats) -> Vec<u64> {
        let file = file(64, 4096);
        let mut chunks = Vec::new();
        for b in blocks {
            let off = b * 4096;
            if ra.sequential(h(off), 4096, true) {
                let before = stats.snapshot().readahead.bytes;
                let block = ra.block(&file, Path::new("/t"), h(off), BlockKind::Data, stats).unwrap();
                assert_eq!(block[0], (off % 251) as u8);
                let read = stats.snapshot().readahead.bytes - before;
                if read > 0 {
                    chunks.push(read / 1024);
                }
            }
        }
        chunks
    }

    #[test]
    fn auto_readahead_starts_on_the_third_sequential_block_and_grows_per_chunk() {
        let stats = IoStats::new();
        let mut ra = Readahead::auto(64 << 10, 0);
        // Blocks 0 and 1 alone; then the block and 8, 16, 32 KiB beyond it, then 64 KiB: one
        // chunk each time the last one is used up, not one per block. The 64 KiB chunk is the
        // largest: the next 64 KiB are read ahead with it, and the next (48 KiB, to the end of
        // the file) when the scan moves into them.
        assert_eq!(chunks(&mut ra, 0..40, &stats), vec![12, 20, 36, 68 + 64, 48]);
        let ra_stats = stats.snapshot().readahead;
        assert_eq!(ra_stats.served, 38 * 4096);
        assert_eq!(ra_stats.wasted(), (12 + 20 + 36 + 68 + 64 + 48 - 38 * 4) * 1024);
        assert_eq!(ra.take_run(), Some(39));
        assert_eq!(ra.take_run(), None);
        // A jump starts over.
        assert!(!ra.sequential(h(1 << 20), 4096, true));
        assert!(!ra.sequential(h((1 << 20) + 4096), 4096, true));
        assert!(ra.sequential(h((1 << 20) + 8192), 4096, true));
        assert_eq!(ra.take_run(), Some(2));
        // Fixed readahead always reads chunks of its size.
        let mut fixed = Readahead::new(2 << 20);
        assert!(fixed.sequential(h(12345), 4096, true));
        assert_eq!(fixed.chunk(), 2 << 20);
        assert_eq!(fixed.take_run(), None);
    }

    #[test]
    fn a_seek_readahead_reads_ahead_with_the_first_block() {
        let stats = IoStats::new();
        let mut ra = Readahead::auto(64 << 10, 8 << 10);
        // The seek's block and 8 KiB; then the block and 16, 32, 64 KiB beyond (and 64 KiB
        // read ahead).
        assert_eq!(chunks(&mut ra, 0..20, &stats), vec![12, 20, 36, 68 + 64]);
        assert_eq!(ra.take_run(), Some(19));
        // After a jump, the seek's read again.
        assert_eq!(chunks(&mut ra, 40..41, &stats), vec![12]);
        assert_eq!(ra.take_run(), Some(0));
    }

    #[test]
    fn a_long_run_reads_ahead_and_joins_blocks_across_chunks() {
        // 3,000-byte blocks never line up with 16 KiB chunks: blocks span two.
        let (len, blocks) = (3000u64, 200u64);
        let file = file(blocks, len);
        let stats = IoStats::new();
        let mut ra = Readahead::auto(16 << 10, 0);
        let handle = |b: u64| BlockHandle {
            offset: b * len,
            size: len - TRAILER_LEN as u64,
        };
        let read = |ra: &mut Readahead, b: u64, forward: bool| {
            if !ra.sequential(handle(b), len, forward) {
                return; // read alone, not through the readahead
            }
            let block = ra.block(&file, Path::new("/t"), handle(b), BlockKind::Data, &stats).unwrap();
            let want: Vec<u8> = (b * len..(b + 1) * len).map(|i| (i % 251) as u8).collect();
            assert_eq!(block, want, "block {b}");
        };
        for b in 0..120 {
            read(&mut ra, b, true);
        }
        assert!(ra.ahead.is_some(), "a long run reads ahead");
        // A jump drops the chunk read ahead; the run starts over.
        read(&mut ra, 150, true);
        assert!(ra.ahead.is_none());
        for b in 151..blocks {
            read(&mut ra, b, true);
        }
        let s = stats.snapshot().readahead;
        assert_eq!(s.served, (120 - 2 + 50 - 2) * len);
        // Unused: what the jump left behind (read ahead up to 16 KiB past block 119, and
        // the rest of the chunk it was in) and nothing at the end of the file.
        assert!(s.wasted() <= 2 * (16 << 10) + len, "{}", s.wasted());

        // Backward, mirrored: from the last block to the first, then the same blocks again
        // after turning (a turn is a jump).
        let stats = IoStats::new();
        let mut ra = Readahead::auto(16 << 10, 0);
        let read = |ra: &mut Readahead, b: u64, forward: bool| {
            if !ra.sequential(handle(b), len, forward) {
                return false;
            }
            let block = ra.block(&file, Path::new("/t"), handle(b), BlockKind::Data, &stats).unwrap();
            let want: Vec<u8> = (b * len..(b + 1) * len).map(|i| (i % 251) as u8).collect();
            assert_eq!(block, want, "block {b} backward");
            true
        };
        let through_readahead = (0..blocks).rev().filter(|&b| read(&mut ra, b, false)).count();
        assert_eq!(through_readahead as u64, blocks - 2, "all but the first two");
        let s = stats.snapshot().readahead;
        assert_eq!(s.served, (blocks - 2) * len);
        // Nothing past block 0 to read ahead: unused are only the parts of blocks that a
        // chunk read before it grew to read ahead (the block is read again whole with the next).
        assert!(s.wasted() < 3 * len, "{}", s.wasted());
        assert!(ra.ahead.is_none());
        assert!(!read(&mut ra, 0, true), "turning is a jump");
    }
}
