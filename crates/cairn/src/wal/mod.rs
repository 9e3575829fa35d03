//! The write-ahead log: 32 KiB blocks of checksummed fragments (spec: `docs/format/wal.md`).
//!
//! ```text
//! block    := fragment* padding          (BLOCK_SIZE bytes; the last block may be partial)
//! fragment := crc:u32le  len:u16le  type:u8  payload[len]
//!             crc = masked CRC32C over (type ‖ payload); type ∈ {FULL=1, FIRST=2, MIDDLE=3, LAST=4}
//! padding  := 0..6 zero bytes when fewer than HEADER_LEN bytes remain in a block
//! record   := log_number:u64le  synced_offset:u64le  body     (reassembled from fragments)
//! ```
//! `synced_offset` is the file length that was durable (fdatasync'd) when the record was
//! written. Recovery uses it to tell a torn unsynced tail (normal after power loss) from damage
//! to bytes that had been synced (corruption).
//!
//! The first record of every database WAL is a header, `"cairnWAL" ‖ db_id:u64le`, binding the
//! log to its database: a log with another database's id (a file copied in from elsewhere,
//! which carries a plausible log number) is corruption.

mod reader;
mod writer;

pub use reader::{RecoveryMode, WalEnd, WalReader};
#[cfg(feature = "test-util")]
pub use reader::WalRecord;
pub use writer::WalWriter;

/// Size of a WAL block.
pub const BLOCK_SIZE: usize = 32 * 1024;
/// Fragment header: crc (4) + length (2) + type (1).
pub const HEADER_LEN: usize = 7;
/// Per-record prefix: log number (8) + synced offset (8).
pub const RECORD_PREFIX_LEN: usize = 16;

/// Fragment types (on-disk values; never renumber). 0 is reserved: zeroed space is never a
/// valid fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum FragmentType {
    Full = 1,
    First = 2,
    Middle = 3,
    Last = 4,
}

impl FragmentType {
    fn from_u8(b: u8) -> Option<Self> {
        match b {
            1 => Some(Self::Full),
            2 => Some(Self::First),
            3 => Some(Self::Middle),
            4 => Some(Self::Last),
            _ => None,
        }
    }
}

const HEADER_MAGIC: &[u8; 8] = b"cairnWAL";

/// What a WAL's header record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalHeader {
    /// The database's identity.
    pub db_id: u64,
    /// The sequence number of the log's first write (absent in logs written before it was
    /// recorded): recovery checks that it follows on from the previous log, so a log that lost
    /// its whole unsynced end is not taken for complete.
    pub first_seq: Option<u64>,
}

/// The header record body for database `db_id`, whose first write will be `first_seq`
/// (`None`: not known when the log is made — a spare log made ahead of its switch — and the
/// 16-byte form is written; its first batch's sequence number says the same).
pub fn header_record(db_id: u64, first_seq: Option<u64>) -> Vec<u8> {
    let mut b = HEADER_MAGIC.to_vec();
    b.extend_from_slice(&db_id.to_le_bytes());
    if let Some(s) = first_seq {
        b.extend_from_slice(&s.to_le_bytes());
    }
    b
}

/// The header if `body` is a header record (16 bytes before the first sequence number was
/// recorded, 24 since).
pub fn parse_header(body: &[u8]) -> Option<WalHeader> {
    let rest = body.strip_prefix(HEADER_MAGIC.as_slice())?;
    let u64_at = |i: usize| rest.get(i..i + 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
    match rest.len() {
        8 => Some(WalHeader {
            db_id: u64_at(0)?,
            first_seq: None,
        }),
        16 => Some(WalHeader {
            db_id: u64_at(0)?,
            first_seq: Some(u64_at(8)?),
        }),
        _ => None,
    }
}

const SKIP_MAGIC: &[u8; 8] = b"cairnSEQ";

/// The body of a record saying that sequence numbers `first..=last` were given to tables an
/// ingestion added (`db/ingest.rs`), not to write batches: the next batch carries `last + 1`.
pub fn skip_record(first: u64, last: u64) -> Vec<u8> {
    let mut b = SKIP_MAGIC.to_vec();
    b.extend_from_slice(&first.to_le_bytes());
    b.extend_from_slice(&last.to_le_bytes());
    b
}

/// `(first, last)` if `body` is a sequence-skip record ([`skip_record`]).
pub fn parse_skip(body: &[u8]) -> Option<(u64, u64)> {
    let rest = body.strip_prefix(SKIP_MAGIC.as_slice())?;
    let u64_at = |i: usize| rest.get(i..i + 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
    (rest.len() == 16).then_some(())?;
    let (first, last) = (u64_at(0)?, u64_at(8)?);
    (first <= last).then_some((first, last))
}

#[cfg(test)]
mod tests;
