//! Fixed-width little-endian integers, LEB128 varints, and masked CRC32C.
//!
//! Checksum choice (docs/design.md §2): **CRC32C** (Castagnoli, hardware accelerated through the
//! `crc32c` crate). Stored checksums are *masked* like LevelDB's: a CRC computed over bytes that
//! themselves contain CRCs is weak, so the stored value is `rotr(crc, 15) + 0xa282ead8`.

/// Masks a CRC32C for storage (see module docs).
#[inline]
pub fn mask_crc(crc: u32) -> u32 {
    // 0xa282ead8 is LevelDB's mask delta; any odd-looking constant would do.
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// CRC32C over the concatenation of `parts`, masked for storage.
#[inline]
pub fn masked_crc(parts: &[&[u8]]) -> u32 {
    let mut crc = 0u32;
    for p in parts {
        crc = crc32c::crc32c_append(crc, p);
    }
    mask_crc(crc)
}

/// Appends `v` as a LEB128 varint (at most 10 bytes).
#[inline]
pub fn put_varint64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` as a LEB128 varint (at most 5 bytes).
#[inline]
pub fn put_varint32(out: &mut Vec<u8>, v: u32) {
    put_varint64(out, u64::from(v));
}

/// Appends a length-prefixed byte string.
pub fn put_len_prefixed(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint64(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Decodes a varint from the front of `buf`: `(value, bytes consumed)`, or `None` when it is
/// truncated or longer than a u64 allows.
#[inline]
pub fn get_varint64(buf: &[u8]) -> Option<(u64, usize)> {
    // Fast path: most lengths in blocks are below 128 and fit one byte.
    if let Some(&b) = buf.first() {
        if b < 0x80 {
            return Some((u64::from(b), 1));
        }
    }
    get_varint64_slow(buf)
}

#[inline(never)]
fn get_varint64_slow(buf: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &b) in buf.iter().enumerate().take(10) {
        let part = u64::from(b & 0x7f);
        if i == 9 && b > 1 {
            return None; // would overflow 64 bits
        }
        v |= part << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// Decodes a varint that must fit in 32 bits.
#[inline]
pub fn get_varint32(buf: &[u8]) -> Option<(u32, usize)> {
    let (v, n) = get_varint64(buf)?;
    Some((u32::try_from(v).ok()?, n))
}

/// Reads a little-endian u32 at `pos`, `None` when out of range.
#[inline]
pub fn read_u32(buf: &[u8], pos: usize) -> Option<u32> {
    let b = buf.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Reads a little-endian u64 at `pos`, `None` when out of range.
#[inline]
pub fn read_u64(buf: &[u8], pos: usize) -> Option<u64> {
    let b = buf.get(pos..pos.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

/// A cursor over untrusted bytes. Every read is bounds-checked; failures carry a short
/// description of the field that did not fit, which callers turn into `Error::Corruption`.
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// Why a [`Decoder`] read failed: the field name.
pub type DecodeError = &'static str;

impl<'a> Decoder<'a> {
    /// Starts decoding `buf` from its first byte.
    pub fn new(buf: &'a [u8]) -> Self {
        Decoder { buf, pos: 0 }
    }
    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    /// True when every byte was consumed.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }
    /// Reads one byte.
    pub fn u8(&mut self, what: DecodeError) -> Result<u8, DecodeError> {
        let b = *self.buf.get(self.pos).ok_or(what)?;
        self.pos += 1;
        Ok(b)
    }
    /// Reads a little-endian u32.
    pub fn u32(&mut self, what: DecodeError) -> Result<u32, DecodeError> {
        let v = read_u32(self.buf, self.pos).ok_or(what)?;
        self.pos += 4;
        Ok(v)
    }
    /// Reads a little-endian u64.
    pub fn u64(&mut self, what: DecodeError) -> Result<u64, DecodeError> {
        let v = read_u64(self.buf, self.pos).ok_or(what)?;
        self.pos += 8;
        Ok(v)
    }
    /// Reads a little-endian IEEE-754 f64 that must be finite.
    pub fn f64(&mut self, what: DecodeError) -> Result<f64, DecodeError> {
        let v = f64::from_bits(self.u64(what)?);
        if v.is_finite() {
            Ok(v)
        } else {
            Err(what)
        }
    }
    /// Reads a varint.
    pub fn varint64(&mut self, what: DecodeError) -> Result<u64, DecodeError> {
        let rest = self.buf.get(self.pos..).ok_or(what)?;
        let (v, n) = get_varint64(rest).ok_or(what)?;
        self.pos += n;
        Ok(v)
    }
    /// Reads a varint that must fit a u32.
    pub fn varint32(&mut self, what: DecodeError) -> Result<u32, DecodeError> {
        u32::try_from(self.varint64(what)?).map_err(|_| what)
    }
    /// Reads a varint used as a count or length; it must not exceed `max` (which callers derive
    /// from the bytes actually present, so nothing is allocated from an unchecked length).
    pub fn len(&mut self, max: usize, what: DecodeError) -> Result<usize, DecodeError> {
        let v = self.varint64(what)?;
        match usize::try_from(v) {
            Ok(n) if n <= max => Ok(n),
            _ => Err(what),
        }
    }
    /// Reads `n` raw bytes.
    pub fn bytes(&mut self, n: usize, what: DecodeError) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).ok_or(what)?;
        let b = self.buf.get(self.pos..end).ok_or(what)?;
        self.pos = end;
        Ok(b)
    }
    /// Reads a varint length followed by that many bytes.
    pub fn len_prefixed(&mut self, what: DecodeError) -> Result<&'a [u8], DecodeError> {
        let n = self.len(self.remaining(), what)?;
        self.bytes(n, what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip_and_bounds() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX - 1, u64::MAX] {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            assert_eq!(b.len(), (64 - v.leading_zeros() as usize).div_ceil(7).max(1));
            assert_eq!(get_varint64(&b), Some((v, b.len())));
            assert_eq!(get_varint64(&b[..b.len() - 1]), None, "truncated {v}");
        }
        // 10th byte carrying more than one bit overflows.
        let over = [0xffu8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert_eq!(get_varint64(&over), None);
        assert_eq!(get_varint32(&[0x80, 0x80, 0x80, 0x80, 0x10]), None);
    }

    #[test]
    fn masked_crc_golden() {
        // CRC32C("123456789") = 0xe3069283 (the standard check value).
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(masked_crc(&[b"1234", b"56789"]), mask_crc(0xe306_9283));
        assert_eq!(mask_crc(0), 0xa282_ead8);
    }

    #[test]
    fn decoder_refuses_lengths_beyond_the_buffer() {
        let mut b = Vec::new();
        put_varint64(&mut b, 1 << 40);
        let mut d = Decoder::new(&b);
        assert_eq!(d.len_prefixed("x"), Err("x"));
        let mut d = Decoder::new(&[1, 2]);
        assert!(d.u32("u32").is_err());
        assert_eq!(d.u8("a"), Ok(1));
    }
}
