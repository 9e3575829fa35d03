//! The range-deletion block of a table (spec: `docs/format/sst.md` § Range deletions): the
//! table's tombstones, fragmented, in one block listed in the metaindex as `cairn.range_del`.
//!
//! ```text
//! block    := version:u8 (= 1) count:varint fragment*count
//! fragment := start:lp end:lp nseqs:varint seq:varint*nseqs
//! ```
//! Fragments are sorted by start and disjoint (`end ≤` the next `start`), `start < end`; each
//! has 1 or more sequence numbers, strictly descending, each ≤ 2^56 − 1. Like every block it is
//! followed by the 5-byte trailer (compression type 0, masked CRC32C). A decoder checks all of
//! it and allocates only for bytes present.

use super::{Fragment, Fragments};
use crate::format::coding::{put_len_prefixed, put_varint64, DecodeError, Decoder};
use crate::format::ikey::MAX_SEQNO;

/// The block's layout version.
pub const VERSION: u8 = 1;

/// Encodes `f`.
pub fn encode(f: &Fragments) -> Vec<u8> {
    let mut out = vec![VERSION];
    put_varint64(&mut out, f.len() as u64);
    for frag in f.fragments() {
        put_len_prefixed(&mut out, &frag.start);
        put_len_prefixed(&mut out, &frag.end);
        put_varint64(&mut out, frag.seqs.len() as u64);
        for &s in &frag.seqs {
            put_varint64(&mut out, s);
        }
    }
    out
}

/// Decodes and checks a block.
pub fn decode(b: &[u8]) -> Result<Fragments, DecodeError> {
    let mut d = Decoder::new(b);
    if d.u8("range-deletion block version")? != VERSION {
        return Err("unknown range-deletion block version");
    }
    // A fragment takes at least 4 bytes (two empty keys, a count, a seqno).
    let count = d.len(d.remaining() / 4, "range-deletion fragment count")?;
    let mut frags: Vec<Fragment> = Vec::with_capacity(count);
    for _ in 0..count {
        let start = d.len_prefixed("range-deletion start")?.to_vec();
        let end = d.len_prefixed("range-deletion end")?.to_vec();
        if start >= end {
            return Err("range-deletion fragment is empty or inverted");
        }
        if frags.last().is_some_and(|p| p.end > start) {
            return Err("range-deletion fragments overlap or are out of order");
        }
        let n = d.len(d.remaining(), "range-deletion seqno count")?;
        if n == 0 {
            return Err("range-deletion fragment without a seqno");
        }
        let mut seqs = Vec::with_capacity(n);
        for _ in 0..n {
            let s = d.varint64("range-deletion seqno")?;
            if s > MAX_SEQNO || seqs.last().is_some_and(|&p| p <= s) {
                return Err("range-deletion seqnos out of range or not descending");
            }
            seqs.push(s);
        }
        frags.push(Fragment { start, end, seqs });
    }
    if !d.is_empty() {
        return Err("bytes after the range-deletion fragments");
    }
    Ok(Fragments::from_fragments(frags))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::super::RangeTombstone;
    use super::*;

    fn sample() -> Fragments {
        Fragments::new([
            RangeTombstone {
                start: b"a".to_vec(),
                end: b"c".to_vec(),
                seq: 7,
            },
            RangeTombstone {
                start: b"b".to_vec(),
                end: b"d".to_vec(),
                seq: 300,
            },
        ])
    }

    /// The layout of `docs/format/sst.md`, byte for byte.
    #[test]
    fn golden_bytes() {
        let b = encode(&sample());
        let want: &[u8] = &[
            1, 3, // version, 3 fragments
            1, b'a', 1, b'b', 1, 7, // [a,b) @7
            1, b'b', 1, b'c', 2, 0xac, 0x02, 7, // [b,c) @300,7
            1, b'c', 1, b'd', 1, 0xac, 0x02, // [c,d) @300
        ];
        assert_eq!(b, want);
        assert_eq!(decode(&b).unwrap(), sample());
    }

    #[test]
    fn every_truncation_and_bad_field_is_an_error() {
        let b = encode(&sample());
        for n in 0..b.len() {
            assert!(decode(&b[..n]).is_err(), "prefix of {n} bytes decoded");
        }
        let mut extra = b.clone();
        extra.push(0);
        assert!(decode(&extra).is_err());
        let bad: &[&[u8]] = &[
            &[2, 0],                                   // version
            &[1, 1, 1, b'b', 1, b'a', 1, 1],           // inverted
            &[1, 1, 1, b'a', 1, b'a', 1, 1],           // empty
            &[1, 1, 1, b'a', 1, b'b', 0],              // no seqno
            &[1, 1, 1, b'a', 1, b'b', 2, 3, 5],        // ascending seqnos
            &[1, 2, 1, b'a', 1, b'c', 1, 1, 1, b'b', 1, b'd', 1, 1], // overlap
            &[1, 200, 1],                              // count beyond the bytes
        ];
        for b in bad {
            assert!(decode(b).is_err(), "{b:?} decoded");
        }
    }
}
