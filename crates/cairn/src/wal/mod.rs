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

/// The header record body for database `db_id`.
pub fn header_record(db_id: u64) -> Vec<u8> {
    let mut b = HEADER_MAGIC.to_vec();
    b.extend_from_slice(&db_id.to_le_bytes());
    b
}

/// The database id if `body` is a header record.
pub fn parse_header(body: &[u8]) -> Option<u64> {
    let id = body.strip_prefix(HEADER_MAGIC.as_slice())?;
    Some(u64::from_le_bytes(id.try_into().ok()?))
}

#[cfg(test)]
mod tests;
