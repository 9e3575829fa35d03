//! Byte-level building blocks shared by every on-disk structure: integer coding, checksums,
//! internal keys, and bounds-checked decoding.

pub mod coding;
pub mod ikey;

pub use ikey::LookupKey;
#[cfg(feature = "test-util")]
pub use {
    coding::masked_crc,
    ikey::{InternalKey, ValueKind},
};
