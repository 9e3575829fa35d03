//! Byte-level building blocks shared by every on-disk structure: integer coding, checksums,
//! internal keys, and bounds-checked decoding.

pub mod coding;
pub mod ikey;

pub use coding::{masked_crc, Decoder};
pub use ikey::{InternalKey, LookupKey, ValueKind, MAX_SEQNO};
