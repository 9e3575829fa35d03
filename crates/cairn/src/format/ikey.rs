//! Internal keys: `user_key ‖ trailer`, trailer = `(seqno << 8) | kind` as a little-endian u64.
//!
//! Ordering: user key ascending (bytewise), then trailer *descending*, so the newest version of
//! a user key comes first. `ValueKind` values are part of the file format and never renumbered.

use std::cmp::Ordering;

/// Largest sequence number (56 bits).
pub const MAX_SEQNO: u64 = (1 << 56) - 1;

/// Size of the trailer appended to every user key.
pub const TRAILER_LEN: usize = 8;

/// What an entry is. On-disk values; never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ValueKind {
    /// A tombstone.
    Delete = 0,
    /// A value.
    Put = 1,
    /// A range tombstone: in a batch (and so in the WAL), the key is its start and the value its
    /// end; never in a memtable's or a table's entries (they keep tombstones apart,
    /// `range_del/`).
    RangeDelete = 2,
    /// A merge operand (`Db::merge`): combined with the versions below it by the merge
    /// operator.
    Merge = 3,
    /// A value with a deadline (`ttl.rs`): the value is `deadline u64 LE ‖ value`; from the
    /// deadline on it reads as a deletion.
    Expiring = 4,
}

impl ValueKind {
    /// The highest kind value: a seek key carries it, so that among entries of one sequence
    /// number it sorts first and a seek lands on any of them. Every kind must stay at or
    /// below it.
    pub const SEEK: ValueKind = ValueKind::Expiring;

    /// Decodes a kind byte; `None` for values this version does not know.
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(ValueKind::Delete),
            1 => Some(ValueKind::Put),
            2 => Some(ValueKind::RangeDelete),
            3 => Some(ValueKind::Merge),
            4 => Some(ValueKind::Expiring),
            _ => None,
        }
    }
}

/// Packs a trailer.
#[inline]
pub fn pack_trailer(seqno: u64, kind: ValueKind) -> u64 {
    debug_assert!(seqno <= MAX_SEQNO);
    (seqno << 8) | kind as u64
}

/// An owned internal key.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct InternalKey(Vec<u8>);

impl std::fmt::Debug for InternalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match split(&self.0) {
            Some((u, s, k)) => write!(f, "{:?}@{}#{:?}", String::from_utf8_lossy(u), s, k),
            None => write!(f, "<bad ikey {:?}>", self.0),
        }
    }
}

impl InternalKey {
    /// Builds `user_key ‖ trailer(seqno, kind)`.
    pub fn new(user_key: &[u8], seqno: u64, kind: ValueKind) -> Self {
        let mut v = Vec::with_capacity(user_key.len() + TRAILER_LEN);
        v.extend_from_slice(user_key);
        v.extend_from_slice(&pack_trailer(seqno, kind).to_le_bytes());
        InternalKey(v)
    }
    /// The key that sorts before every version of `user_key` visible at `seqno`: seeking to it
    /// lands on the newest version with sequence number ≤ `seqno`.
    pub fn for_seek(user_key: &[u8], seqno: u64) -> Self {
        Self::new(user_key, seqno, ValueKind::SEEK)
    }
    /// The encoded bytes.
    pub fn encoded(&self) -> &[u8] {
        &self.0
    }
    /// The user-key part.
    #[cfg(test)]
    pub fn user_key(&self) -> &[u8] {
        user_key(&self.0)
    }
}

impl Ord for InternalKey {
    fn cmp(&self, other: &Self) -> Ordering {
        compare(&self.0, &other.0)
    }
}
impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Everything a point lookup needs, computed once per lookup and shared by every memtable and
/// table it probes: the seek key (newest version at or below `seqno`) and the filter hash.
/// Keys up to [`LookupKey::INLINE`] bytes are built on the stack (no allocation per lookup).
#[derive(Debug, Clone)]
pub struct LookupKey {
    inline: [u8; LookupKey::INLINE + TRAILER_LEN],
    /// The encoded key when it does not fit `inline` (empty otherwise).
    heap: Vec<u8>,
    len: usize,
    hash: u64,
}

impl LookupKey {
    /// Longest user key built without allocating.
    pub const INLINE: usize = 64;

    /// The lookup of `user_key` as of `seqno`.
    pub fn new(user_key: &[u8], seqno: u64) -> Self {
        let len = user_key.len() + TRAILER_LEN;
        let mut k = LookupKey {
            inline: [0; Self::INLINE + TRAILER_LEN],
            heap: Vec::new(),
            len,
            hash: key_hash(user_key),
        };
        let trailer = pack_trailer(seqno, ValueKind::SEEK).to_le_bytes();
        match k.inline.get_mut(..len) {
            Some(buf) => {
                buf[..user_key.len()].copy_from_slice(user_key);
                buf[user_key.len()..].copy_from_slice(&trailer);
            }
            None => k.heap = InternalKey::for_seek(user_key, seqno).0,
        }
        k
    }
    /// The encoded internal seek key.
    #[inline]
    pub fn encoded(&self) -> &[u8] {
        self.inline.get(..self.len).unwrap_or(&self.heap)
    }
    /// The user key.
    #[inline]
    pub fn user_key(&self) -> &[u8] {
        user_key(self.encoded())
    }
    /// The sequence number the lookup reads at.
    #[inline]
    pub fn seqno(&self) -> u64 {
        split(self.encoded()).map_or(0, |(_, s, _)| s)
    }
    /// `key_hash(user_key)`.
    pub fn hash(&self) -> u64 {
        self.hash
    }
}

/// Splits an encoded internal key into `(user_key, seqno, kind)`; `None` if it is too short or
/// the kind is unknown.
#[inline]
pub fn split(ikey: &[u8]) -> Option<(&[u8], u64, ValueKind)> {
    let n = ikey.len().checked_sub(TRAILER_LEN)?;
    let t = crate::format::coding::read_u64(ikey, n)?;
    Some((&ikey[..n], t >> 8, ValueKind::from_u8(t as u8)?))
}

/// Gives internal key `ikey` sequence number `seqno`, keeping its kind; false (unchanged) if
/// it is shorter than a trailer.
#[inline]
pub fn set_seqno(ikey: &mut [u8], seqno: u64) -> bool {
    let Some(n) = ikey.len().checked_sub(TRAILER_LEN) else {
        return false;
    };
    let kind = ikey[n];
    ikey[n..].copy_from_slice(&((seqno << 8) | u64::from(kind)).to_le_bytes());
    true
}

/// Stored key `stored` as read from a table whose global sequence number is `global` (0: as
/// stored; `sst/block.rs`).
pub fn read_as(stored: &[u8], global: u64) -> Vec<u8> {
    let mut k = stored.to_vec();
    if global != 0 {
        set_seqno(&mut k, global);
    }
    k
}

/// The user-key part of an encoded internal key (all of it if shorter than a trailer; callers
/// validate keys when they are decoded).
#[inline]
pub fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(TRAILER_LEN)]
}

#[inline]
fn trailer(ikey: &[u8]) -> u64 {
    let n = ikey.len().saturating_sub(TRAILER_LEN);
    crate::format::coding::read_u64(ikey, n).unwrap_or(0)
}

/// Bytewise comparison, 8 bytes at a time: keys are short, and a libc `memcmp` call per
/// comparison costs more than the comparison itself on skiplist and block searches.
#[inline]
pub fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_be_bytes([
            a[i],
            a[i + 1],
            a[i + 2],
            a[i + 3],
            a[i + 4],
            a[i + 5],
            a[i + 6],
            a[i + 7],
        ]);
        let y = u64::from_be_bytes([
            b[i],
            b[i + 1],
            b[i + 2],
            b[i + 3],
            b[i + 4],
            b[i + 5],
            b[i + 6],
            b[i + 7],
        ]);
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    a[i..].cmp(&b[i..])
}

/// Compares two encoded internal keys.
#[inline]
pub fn compare(a: &[u8], b: &[u8]) -> Ordering {
    match compare_bytes(user_key(a), user_key(b)) {
        Ordering::Equal => trailer(b).cmp(&trailer(a)),
        o => o,
    }
}

/// How keys in a block are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOrder {
    /// Plain bytewise order (metaindex).
    Bytewise,
    /// Internal-key order (data and index blocks).
    Internal,
}

impl KeyOrder {
    /// Compares two keys under this order.
    #[inline]
    pub fn compare(self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            KeyOrder::Bytewise => compare_bytes(a, b),
            KeyOrder::Internal => compare(a, b),
        }
    }
}

/// Writes to `out` a short internal key `s` with `last ≤ s < next` (`last < next`, internal
/// keys): the index key of a data block whose last key is `last` and whose successor block
/// starts at `next`, which needs only to separate the two (RocksDB's shortest separator). With
/// the user keys `a` of `last` and `b` of `next` first differing at byte `i`: `a` cut after
/// byte `i` raised by one, if that stays below `b`; else (`b[i] = a[i] + 1`) `a` cut after the
/// first byte past `i` that can be raised, raised — above `a` at that byte, below `b` at byte
/// `i`. Taken only when shorter than `a`; otherwise `s = last`.
pub fn separator(last: &[u8], next: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let (a, b) = (user_key(last), user_key(next));
    let i = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let cut = if i < a.len() && i < b.len() && a[i] < b[i] {
        if a[i] + 1 < b[i] {
            Some(i)
        } else {
            (i + 1..a.len()).find(|&j| a[j] < 0xff)
        }
    } else {
        None // equal user keys, or `a` a prefix of `b`
    };
    match cut {
        Some(j) if j + 1 < a.len() => {
            out.extend_from_slice(&a[..=j]);
            out[j] += 1;
            // Above `a` and below `b` by its user key alone, so any trailer will do.
            out.extend_from_slice(&pack_trailer(MAX_SEQNO, ValueKind::Put).to_le_bytes());
        }
        _ => out.extend_from_slice(last),
    }
}


/// The per-key hash the point filters and the memtables' filters share: filters are over
/// *user* keys, and a lookup computes it once.
#[inline]
pub fn key_hash(user_key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(user_key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The separator lies between the two keys, is no longer than the first, and is a
        /// valid internal key.
        #[test]
        fn separator_separates(
            a in proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(0xfe), Just(0xff), any::<u8>()], 0..10),
            b in proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(0xfe), Just(0xff), any::<u8>()], 0..10),
            sa in 0..MAX_SEQNO, sb in 0..MAX_SEQNO, ka in any::<bool>(), kb in any::<bool>(),
        ) {
            let kind = |k| if k { ValueKind::Put } else { ValueKind::Delete };
            let (x, y) = (InternalKey::new(&a, sa, kind(ka)), InternalKey::new(&b, sb, kind(kb)));
            let (last, next) = if x < y { (x, y) } else { (y, x) };
            prop_assume!(last < next);
            let mut s = Vec::new();
            separator(last.encoded(), next.encoded(), &mut s);
            prop_assert!(compare(last.encoded(), &s).is_le(), "{:?} {:?} {:?}", last, s, next);
            prop_assert!(compare(&s, next.encoded()).is_lt(), "{:?} {:?} {:?}", last, s, next);
            prop_assert!(s.len() <= last.encoded().len());
            prop_assert!(split(&s).is_some());
        }
    }

    #[test]
    fn separator_shortens_where_it_can() {
        let k = |u: &[u8]| InternalKey::new(u, 7, ValueKind::Put);
        let mut s = Vec::new();
        separator(k(b"abcdef").encoded(), k(b"abzzzz").encoded(), &mut s);
        assert_eq!(user_key(&s), b"abd");
        // One apart at the first difference: the next byte that can be raised is.
        separator(k(b"key-00120-xyz").encoded(), k(b"key-00130-abc").encoded(), &mut s);
        assert_eq!(user_key(&s), b"key-00121");
        separator(k(b"ab\xff\xffcd").encoded(), k(b"ac").encoded(), &mut s);
        assert_eq!(user_key(&s), b"ab\xff\xffd");
        // Differing in the last byte, a prefix of the next key, equal user keys, or nothing
        // to raise before the last byte: kept whole.
        for (a, b) in [(&b"abc"[..], &b"abz"[..]), (b"ab", b"abc"), (b"ab", b"ab"), (b"a\xff\xffb", b"b")] {
            separator(k(a).encoded(), k(b).encoded(), &mut s);
            assert_eq!(s, k(a).encoded(), "{a:?} {b:?}");
        }
    }

    #[test]
    fn ordering_newest_first() {
        let a = InternalKey::new(b"k", 5, ValueKind::Put);
        let b = InternalKey::new(b"k", 3, ValueKind::Put);
        let c = InternalKey::new(b"k", 5, ValueKind::Delete);
        let d = InternalKey::new(b"ka", 9, ValueKind::Put);
        assert!(a < b && a < c && c < b && b < d);
        assert!(InternalKey::for_seek(b"k", 5) <= a);
    }

    #[test]
    fn compare_bytes_matches_slice_order() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for _ in 0..20_000 {
            let a: Vec<u8> = (0..rng.gen_range(0..20)).map(|_| rng.gen_range(0..3)).collect();
            let b: Vec<u8> = (0..rng.gen_range(0..20)).map(|_| rng.gen_range(0..3)).collect();
            assert_eq!(compare_bytes(&a, &b), a.cmp(&b), "{a:?} {b:?}");
        }
    }

    #[test]
    fn golden_trailer_bytes() {
        let k = InternalKey::new(b"ab", 0x0102, ValueKind::Put);
        assert_eq!(k.encoded(), &[b'a', b'b', 0x01, 0x02, 0x01, 0, 0, 0, 0, 0]);
        assert_eq!(split(k.encoded()), Some((&b"ab"[..], 0x0102, ValueKind::Put)));
        assert_eq!(split(&[1, 2, 3]), None);
        let mut bad = k.encoded().to_vec();
        bad[2] = 7; // unknown kind
        assert_eq!(split(&bad), None);
    }
}
