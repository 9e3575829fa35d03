//! Reads a WAL file back during recovery, applying a [`RecoveryMode`].

use super::{FragmentType, BLOCK_SIZE, HEADER_LEN, RECORD_PREFIX_LEN};
use crate::env::RandomAccessFile;
use crate::error::{Error, Result};
use crate::format::coding::{masked_crc, read_u32, read_u64};
use std::path::PathBuf;
use std::sync::Arc;

/// What recovery does with a damaged WAL (`docs/format/wal.md`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RecoveryMode {
    /// Stop at the first bad record. Damage past the last synced offset is a torn tail (normal
    /// after power loss); damage to bytes that a later record proves were synced is reported
    /// as corruption, because acknowledged durable writes would be lost.
    #[default]
    PointInTime,
    /// Stop at the first bad record whatever it is, and open with the records before it.
    TolerateCorruptedTail,
    /// Any bad byte, including a torn tail, is an error.
    AbsoluteConsistency,
}

/// A record read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalRecord {
    /// Offset of the record's first fragment.
    pub offset: u64,
    /// Offset just past its last fragment.
    pub end_offset: u64,
    /// The record body (without the prefix).
    pub body: Vec<u8>,
}

/// How reading ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalEnd {
    /// Still reading.
    NotYet,
    /// Every byte was a valid record (or block padding).
    Clean,
    /// The log ends in damage past its last synced offset (torn by a crash). Records from
    /// `offset` on were dropped.
    TornTail {
        /// Where the damaged tail starts.
        offset: u64,
        /// What was wrong there.
        what: String,
    },
    /// `TolerateCorruptedTail` dropped everything from `offset` on.
    CorruptionTolerated {
        /// Where the damage starts.
        offset: u64,
        /// What was wrong there.
        what: String,
    },
}

enum Frag {
    Ok {
        ty: FragmentType,
        offset: u64,
        start: usize,
        len: usize,
    },
    Eof,
    Bad {
        offset: u64,
        what: String,
    },
}

/// Sequential reader of one WAL file.
#[derive(Debug)]
pub struct WalReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    log_number: u64,
    mode: RecoveryMode,
    size: u64,
    /// File offset of `block`'s first byte.
    block_start: u64,
    block: Vec<u8>,
    /// Read position within `block`.
    pos: usize,
    end: WalEnd,
    loaded: bool,
}

impl WalReader {
    /// Reads `file` (at `path`, expected to be log `log_number`) under `mode`.
    pub fn new(file: Arc<dyn RandomAccessFile>, path: impl Into<PathBuf>, log_number: u64, mode: RecoveryMode) -> Self {
        let size = file.size();
        WalReader {
            file,
            path: path.into(),
            log_number,
            mode,
            size,
            block_start: 0,
            block: Vec::new(),
            pos: 0,
            end: WalEnd::NotYet,
            loaded: false,
        }
    }

    /// How reading ended (valid once [`next_record`](Self::next_record) returned `None`).
    pub fn end(&self) -> &WalEnd {
        &self.end
    }

    /// Next record, `None` at the end of the usable log.
    ///
    /// # Errors
    /// `Corruption` (naming file and offset) when the mode refuses the damage found; I/O errors.
    pub fn next_record(&mut self) -> Result<Option<WalRecord>> {
        if self.end != WalEnd::NotYet {
            return Ok(None);
        }
        match self.read_record()? {
            Ok(rec) => Ok(Some(rec)),
            Err(None) => {
                self.end = WalEnd::Clean;
                Ok(None)
            }
            Err(Some((offset, what))) => {
                let end = match self.mode {
                    RecoveryMode::AbsoluteConsistency => {
                        return Err(Error::corruption(&self.path, offset, what));
                    }
                    RecoveryMode::TolerateCorruptedTail => WalEnd::CorruptionTolerated { offset, what },
                    RecoveryMode::PointInTime => {
                        if let Some(proof) = self.synced_beyond(offset)? {
                            return Err(Error::corruption(
                                &self.path,
                                offset,
                                format!("{what}; a later record shows the log was synced up to {proof}"),
                            ));
                        }
                        WalEnd::TornTail { offset, what }
                    }
                };
                self.end = end;
                Ok(None)
            }
        }
    }

    /// Reassembles one record: `Ok(record)`, `Err(None)` at a clean end, or
    /// `Err(Some((offset, what)))` for damage at `offset`.
    fn read_record(&mut self) -> Result<Result<WalRecord, Option<(u64, String)>>> {
        let mut body: Vec<u8> = Vec::new();
        let mut start: Option<u64> = None;
        loop {
            match self.read_fragment()? {
                Frag::Eof => {
                    return Ok(Err(start.map(|s| (s, "record truncated at end of log".to_string()))));
                }
                Frag::Bad { offset, what } => return Ok(Err(Some((start.unwrap_or(offset), what)))),
                Frag::Ok {
                    ty,
                    offset,
                    start: s,
                    len,
                } => {
                    let data = &self.block[s..s + len];
                    match (ty, start) {
                        (FragmentType::Full | FragmentType::First, Some(rs)) => {
                            return Ok(Err(Some((rs, "record interrupted by a new record".into()))));
                        }
                        (FragmentType::Middle | FragmentType::Last, None) => {
                            return Ok(Err(Some((offset, "fragment without a first fragment".into()))));
                        }
                        (FragmentType::Full | FragmentType::First, None) => start = Some(offset),
                        _ => {}
                    }
                    body.extend_from_slice(data);
                    if matches!(ty, FragmentType::Full | FragmentType::Last) {
                        let rec_start = start.unwrap_or(offset);
                        let end_offset = self.block_start + self.pos as u64;
                        return Ok(self.finish_record(rec_start, end_offset, body));
                    }
                }
            }
        }
    }

    fn finish_record(
        &self,
        offset: u64,
        end_offset: u64,
        mut body: Vec<u8>,
    ) -> Result<WalRecord, Option<(u64, String)>> {
        let (Some(log), Some(_synced)) = (read_u64(&body, 0), read_u64(&body, 8)) else {
            return Err(Some((offset, "record shorter than its prefix".into())));
        };
        if log != self.log_number {
            return Err(Some((
                offset,
                format!("record belongs to log {log}, expected {}", self.log_number),
            )));
        }
        body.drain(..RECORD_PREFIX_LEN);
        Ok(WalRecord {
            offset,
            end_offset,
            body,
        })
    }

    /// Loads the block starting at `block_start` (partial at the end of the file).
    fn load_block(&mut self, block_start: u64) -> Result<bool> {
        if block_start >= self.size {
            return Ok(false);
        }
        let n = (self.size - block_start).min(BLOCK_SIZE as u64) as usize;
        self.block.resize(n, 0);
        self.file.read_exact_at(block_start, &mut self.block)?;
        self.block_start = block_start;
        self.pos = 0;
        self.loaded = true;
        Ok(true)
    }

    fn read_fragment(&mut self) -> Result<Frag> {
        loop {
            let left = self.block.len() - self.pos;
            if left < HEADER_LEN {
                if self.loaded && self.block.len() < BLOCK_SIZE {
                    // The writer pads only blocks it then fills, so a partial last block ends
                    // exactly after a fragment; anything else is a torn header.
                    if left == 0 {
                        return Ok(Frag::Eof);
                    }
                    return Ok(Frag::Bad {
                        offset: self.block_start + self.pos as u64,
                        what: "truncated fragment header at end of log".into(),
                    });
                }
                let next = if self.loaded {
                    self.block_start + BLOCK_SIZE as u64
                } else {
                    0
                };
                if !self.load_block(next)? {
                    return Ok(Frag::Eof);
                }
                continue;
            }
            let offset = self.block_start + self.pos as u64;
            match parse_fragment(&self.block[self.pos..]) {
                Ok((ty, len)) => {
                    let start = self.pos + HEADER_LEN;
                    self.pos = start + len;
                    return Ok(Frag::Ok { ty, offset, start, len });
                }
                Err(what) => {
                    let what = if what == TOO_LONG && self.block.len() < BLOCK_SIZE {
                        "fragment truncated at end of log"
                    } else {
                        what
                    };
                    return Ok(Frag::Bad {
                        offset,
                        what: what.into(),
                    });
                }
            }
        }
    }

    /// After damage at `bad`: scans the rest of the log for an intact record whose
    /// synced-offset field exceeds `bad`, which proves the damaged bytes had been synced. The
    /// damaged fragment's own length cannot be trusted, so the scan tries every byte offset
    /// after `bad` for a fragment whose checksum holds, and jumps over each intact fragment it
    /// finds (so bytes inside intact records are never mistaken for fragments).
    fn synced_beyond(&mut self, bad: u64) -> Result<Option<u64>> {
        let block = BLOCK_SIZE as u64;
        let mut block_start = bad - bad % block;
        let mut pos = (bad - block_start) as usize + 1;
        while self.load_block(block_start)? {
            while let Some(h) = self.block.get(pos..).filter(|h| h.len() >= HEADER_LEN) {
                let Ok((ty, len)) = parse_fragment(h) else {
                    pos += 1;
                    continue;
                };
                let payload = &h[HEADER_LEN..HEADER_LEN + len];
                if matches!(ty, FragmentType::Full | FragmentType::First) {
                    if let (Some(log), Some(synced)) = (read_u64(payload, 0), read_u64(payload, 8)) {
                        if log == self.log_number && synced > bad {
                            return Ok(Some(synced));
                        }
                    }
                }
                pos += HEADER_LEN + len;
            }
            block_start += block;
            pos = 0;
        }
        Ok(None)
    }
}

const TOO_LONG: &str = "fragment length exceeds its block";

/// Validates the fragment at the start of `h`: `(type, payload length)` or what is wrong.
fn parse_fragment(h: &[u8]) -> Result<(FragmentType, usize), &'static str> {
    let crc = read_u32(h, 0).ok_or("truncated fragment header")?;
    let len = usize::from(u16::from_le_bytes([h[4], h[5]]));
    let ty = h[6];
    if crc == 0 && len == 0 && ty == 0 {
        return Err("zeroed bytes where a fragment should be");
    }
    let t = FragmentType::from_u8(ty).ok_or("unknown fragment type")?;
    let payload = h.get(HEADER_LEN..HEADER_LEN + len).ok_or(TOO_LONG)?;
    if masked_crc(&[&[ty], payload]) != crc {
        return Err("fragment checksum mismatch");
    }
    Ok((t, len))
}
