//! Block handles and the fixed-size footer (spec: `docs/format/sst.md` § Footer).
//!
//! ```text
//! offset size field
//! 0      8    metaindex offset   u64le
//! 8      8    metaindex size     u64le (contents, without trailer)
//! 16     8    index offset       u64le
//! 24     8    index size         u64le
//! 32     4    format version     u32le (= FORMAT_VERSION)
//! 36     4    checksum           masked CRC32C over bytes 0..36 and 40..48
//! 40     8    magic              "cairnSST" (bytes 63 61 69 72 6e 53 53 54)
//! ```

use crate::format::coding::{masked_crc, put_varint64, read_u32, read_u64, Decoder};

/// Footer length.
pub const FOOTER_LEN: usize = 48;
/// The ASCII bytes "cairnSST" read as a little-endian u64, so a hex dump of a table ends in
/// the readable name.
pub const MAGIC: u64 = u64::from_le_bytes(*b"cairnSST");
/// Table format version written by this code (2: data blocks may carry a hash index); readers
/// refuse versions outside `OLDEST_FORMAT_VERSION..=FORMAT_VERSION`.
pub const FORMAT_VERSION: u32 = 2;
/// The oldest table format version this build reads (1: data blocks without hash indexes).
pub const OLDEST_FORMAT_VERSION: u32 = 1;

/// Where a block lives: offset and size of its contents (the trailer follows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockHandle {
    /// File offset of the block.
    pub offset: u64,
    /// Size of the contents, without the 5-byte trailer.
    pub size: u64,
}

impl BlockHandle {
    /// Appends `offset:varint64 size:varint64`.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        put_varint64(out, self.offset);
        put_varint64(out, self.size);
    }
    /// Decodes a handle.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self, &'static str> {
        Ok(BlockHandle {
            offset: d.varint64("block handle offset")?,
            size: d.varint64("block handle size")?,
        })
    }
}

/// The decoded footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// The metaindex block.
    pub metaindex: BlockHandle,
    /// The index block.
    pub index: BlockHandle,
    /// Format version.
    pub version: u32,
}

impl Footer {
    /// Encodes the footer.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut b = [0u8; FOOTER_LEN];
        b[0..8].copy_from_slice(&self.metaindex.offset.to_le_bytes());
        b[8..16].copy_from_slice(&self.metaindex.size.to_le_bytes());
        b[16..24].copy_from_slice(&self.index.offset.to_le_bytes());
        b[24..32].copy_from_slice(&self.index.size.to_le_bytes());
        b[32..36].copy_from_slice(&self.version.to_le_bytes());
        b[40..48].copy_from_slice(&MAGIC.to_le_bytes());
        let crc = masked_crc(&[&b[..36], &b[40..]]);
        b[36..40].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and verifies a footer.
    pub fn decode(b: &[u8]) -> Result<Self, String> {
        if b.len() != FOOTER_LEN {
            return Err("footer has the wrong length".into());
        }
        if read_u64(b, 40) != Some(MAGIC) {
            return Err("bad magic: not a cairn table".into());
        }
        if read_u32(b, 36) != Some(masked_crc(&[&b[..36], &b[40..]])) {
            return Err("footer checksum mismatch".into());
        }
        let field = |p| read_u64(b, p).unwrap_or(0);
        let version = read_u32(b, 32).unwrap_or(0);
        if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(format!(
                "table format version {version} is not supported (this build reads versions \
                 {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION})"
            ));
        }
        Ok(Footer {
            metaindex: BlockHandle {
                offset: field(0),
                size: field(8),
            },
            index: BlockHandle {
                offset: field(16),
                size: field(24),
            },
            version,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_footer() {
        let f = Footer {
            metaindex: BlockHandle {
                offset: 0x1234,
                size: 0x56,
            },
            index: BlockHandle {
                offset: 0x1000,
                size: 0x200,
            },
            version: 1,
        };
        let b = f.encode();
        assert_eq!(&b[0..8], &[0x34, 0x12, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&b[32..36], &[1, 0, 0, 0]);
        assert_eq!(&b[40..48], b"cairnSST");
        assert_eq!(Footer::decode(&b), Ok(f));
        let mut bad = b;
        bad[3] ^= 1;
        assert_eq!(Footer::decode(&bad), Err("footer checksum mismatch".into()));
        // Version 2 (hash-indexed data blocks) is read as well; later ones are refused.
        let mut v2 = f;
        v2.version = 2;
        assert_eq!(Footer::decode(&v2.encode()), Ok(v2));
        let mut v3 = f;
        v3.version = 3;
        assert!(Footer::decode(&v3.encode()).unwrap_err().contains("version 3"));
    }
}
