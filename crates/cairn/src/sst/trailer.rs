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
    let bad = |what: String| Error::corruption(path, handle.offset, format!("{} block: {what}", kind.name()));
    let total = handle
        .size
        .checked_add(TRAILER_LEN as u64)
        .filter(|&t| handle.offset.checked_add(t).is_some_and(|end| end <= file.size()))
        .ok_or_else(|| {
            bad(format!(
                "handle (size {}) extends past the end of the file",
                handle.size
            ))
        })?;
    let total = usize::try_from(total)
        .ok()
        .filter(|&t| t <= MAX_BLOCK_LEN)
        .ok_or_else(|| bad("block too large".into()))?;
    let mut buf = vec![0u8; total];
    file.read_exact_at(handle.offset, &mut buf)?;
    stats.record_read(kind, total as u64);
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
