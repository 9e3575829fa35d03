//! Write batches: the unit of atomicity, and the body of one WAL record.
//!
//! ```text
//! batch  := seqno:u64le count:u32le op*count
//! op     := kind:u8 tree:varint key:lp [value:lp unless kind = Delete]
//! ```
//! `seqno` is the sequence number of the first op; op *i* gets `seqno + i`. Kinds are the
//! internal-key kinds (`Delete = 0`, `Put = 1`, `RangeDelete = 2`: key = start, value = end,
//! `Merge = 3`: value = the operand, `Expiring = 4`: value = `u64le ‖ value`, the eight bytes
//! holding the time to live in milliseconds until the write turns them into the deadline,
//! which is what the WAL records; `ttl.rs`).

use crate::error::{Error, Result};
use crate::format::coding::{put_len_prefixed, put_varint32, Decoder};
use crate::format::ikey::ValueKind;

const HEADER: usize = 12;

/// An atomic group of puts, deletes and range deletes, possibly across trees.
#[derive(Debug, Clone)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
    /// Whether an op holds a time to live still to be turned into a deadline.
    ttls: bool,
}

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch {
            rep: vec![0; HEADER],
            count: 0,
            ttls: false,
        }
    }
}

/// One operation of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOp<'a> {
    /// Tree id.
    pub tree: u32,
    /// Put, delete or range delete.
    pub kind: ValueKind,
    /// User key (a range delete's start).
    pub key: &'a [u8],
    /// Value (empty for a delete; a range delete's end).
    pub value: &'a [u8],
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts `key → value` in the default tree.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        self.push(0, ValueKind::Put, key.as_ref(), value.as_ref())
    }

    /// Puts `key → value` in the default tree, to expire `ttl` after the batch is written: from
    /// then on reads do not return it (nor any older version of the key) and compactions drop
    /// it. A `ttl` of zero writes a value that is already gone.
    pub fn put_with_ttl(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, ttl: std::time::Duration) -> &mut Self {
        self.push_with_ttl(0, key.as_ref(), value.as_ref(), crate::ttl::duration_ms(ttl))
    }

    /// [`put_with_ttl`](Self::put_with_ttl) in `tree`.
    pub fn put_with_ttl_in(
        &mut self,
        tree: &crate::Tree,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        ttl: std::time::Duration,
    ) -> &mut Self {
        self.push_with_ttl(tree.id(), key.as_ref(), value.as_ref(), crate::ttl::duration_ms(ttl))
    }

    pub(crate) fn push_with_ttl(&mut self, tree: u32, key: &[u8], value: &[u8], ttl_ms: u64) -> &mut Self {
        self.ttls = true;
        self.push_expiring(tree, key, value, ttl_ms)
    }

    /// An expiring put whose eight leading value bytes are `when` (a time to live, or a
    /// deadline once stamped).
    fn push_expiring(&mut self, tree: u32, key: &[u8], value: &[u8], when: u64) -> &mut Self {
        self.rep.push(ValueKind::Expiring as u8);
        put_varint32(&mut self.rep, tree);
        put_len_prefixed(&mut self.rep, key);
        crate::format::coding::put_varint64(&mut self.rep, (crate::ttl::DEADLINE_LEN + value.len()) as u64);
        self.rep.extend_from_slice(&when.to_le_bytes());
        self.rep.extend_from_slice(value);
        self.count += 1;
        self
    }

    /// The batch as the WAL records it: each time to live turned into the deadline `now_ms`
    /// plus it, and each put into a tree with a time to live (`tree_ttl(tree)`, in
    /// milliseconds) made an expiring one. The batch itself when there is nothing to do.
    pub(crate) fn stamped(self, now_ms: u64, tree_ttl: impl Fn(u32) -> Option<u64>) -> WriteBatch {
        if !self.ttls && self.ops().all(|op| op.kind != ValueKind::Put || tree_ttl(op.tree).is_none()) {
            return self;
        }
        let mut out = WriteBatch::new();
        out.rep.reserve(self.rep.len() + 8 * self.count as usize);
        for op in self.ops() {
            match (op.kind, tree_ttl(op.tree)) {
                (ValueKind::Expiring, _) => {
                    let (ttl, v) = crate::ttl::split(op.value).unwrap_or((0, op.value));
                    out.push_expiring(op.tree, op.key, v, now_ms.saturating_add(ttl))
                }
                (ValueKind::Put, Some(ttl)) => out.push_expiring(op.tree, op.key, op.value, now_ms.saturating_add(ttl)),
                (kind, _) => out.push(op.tree, kind, op.key, op.value),
            };
        }
        out
    }

    /// Deletes `key` from the default tree.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        self.push(0, ValueKind::Delete, key.as_ref(), &[])
    }

    /// Puts `key → value` in `tree`.
    pub fn put_in(&mut self, tree: &crate::Tree, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        self.push(tree.id(), ValueKind::Put, key.as_ref(), value.as_ref())
    }

    /// Deletes `key` from `tree`.
    pub fn delete_in(&mut self, tree: &crate::Tree, key: impl AsRef<[u8]>) -> &mut Self {
        self.push(tree.id(), ValueKind::Delete, key.as_ref(), &[])
    }

    /// Merges `operand` into `key` of the default tree (the database's merge operator combines
    /// it with the value below; a write of a batch holding merges fails with
    /// [`Error::InvalidArgument`] when the database has no operator).
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> &mut Self {
        self.push(0, ValueKind::Merge, key.as_ref(), operand.as_ref())
    }

    /// [`merge`](Self::merge) in `tree`.
    pub fn merge_in(&mut self, tree: &crate::Tree, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> &mut Self {
        self.push(tree.id(), ValueKind::Merge, key.as_ref(), operand.as_ref())
    }

    /// Deletes every key `start ≤ k < end` of the default tree. An empty range (`start == end`)
    /// adds nothing; an inverted one (`start > end`) makes the write fail with
    /// [`Error::InvalidArgument`] before anything is logged.
    pub fn delete_range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> &mut Self {
        self.push_range(0, start.as_ref(), end.as_ref())
    }

    /// [`delete_range`](Self::delete_range) in `tree`.
    pub fn delete_range_in(&mut self, tree: &crate::Tree, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> &mut Self {
        self.push_range(tree.id(), start.as_ref(), end.as_ref())
    }

    pub(crate) fn push_range(&mut self, tree: u32, start: &[u8], end: &[u8]) -> &mut Self {
        if start == end {
            return self;
        }
        self.push(tree, ValueKind::RangeDelete, start, end)
    }

    pub(crate) fn push(&mut self, tree: u32, kind: ValueKind, key: &[u8], value: &[u8]) -> &mut Self {
        self.rep.push(kind as u8);
        put_varint32(&mut self.rep, tree);
        put_len_prefixed(&mut self.rep, key);
        if kind != ValueKind::Delete {
            put_len_prefixed(&mut self.rep, value);
        }
        self.count += 1;
        self
    }

    /// Whether an op holds a time to live (the write must stamp it).
    pub(crate) fn has_ttls(&self) -> bool {
        self.ttls
    }

    /// Operations in the batch.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True when the batch holds nothing.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Encoded size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.rep.len()
    }

    /// Removes every operation.
    pub fn clear(&mut self) {
        self.rep.truncate(HEADER);
        self.count = 0;
        self.ttls = false;
    }

    pub(crate) fn set_seqno(&mut self, seqno: u64) {
        self.rep[..8].copy_from_slice(&seqno.to_le_bytes());
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
    }

    pub(crate) fn encoded(&self) -> &[u8] {
        &self.rep
    }

    /// Iterates the operations (the batch was built in memory, so it is well formed).
    pub(crate) fn ops(&self) -> impl Iterator<Item = BatchOp<'_>> {
        decode_ops(&self.rep[HEADER..], self.count).filter_map(|r| r.ok())
    }

    /// Checks the limits of docs/design.md §3 before anything reaches the WAL (`tree_ok`: each
    /// op's tree exists and was not dropped; `has_merge`: the database has a merge operator,
    /// which merge operands need).
    pub(crate) fn validate(
        &self,
        max_key: usize,
        max_value: usize,
        max_batch: usize,
        tree_ok: impl Fn(u32) -> Result<()>,
        has_merge: bool,
    ) -> Result<()> {
        if self.rep.len() > max_batch {
            return Err(Error::InvalidArgument(format!(
                "write batch of {} bytes exceeds limits.max_batch_size {max_batch}",
                self.rep.len()
            )));
        }
        for op in self.ops() {
            if op.key.len() > max_key {
                return Err(Error::InvalidArgument(format!(
                    "key of {} bytes exceeds limits.max_key_size {max_key}",
                    op.key.len()
                )));
            }
            if op.kind == ValueKind::RangeDelete {
                if op.value.len() > max_key {
                    return Err(Error::InvalidArgument(format!(
                        "delete_range end of {} bytes exceeds limits.max_key_size {max_key}",
                        op.value.len()
                    )));
                }
                if op.key > op.value {
                    return Err(Error::InvalidArgument(format!(
                        "delete_range start {:?} is after its end {:?} (the range is [start, end))",
                        String::from_utf8_lossy(op.key),
                        String::from_utf8_lossy(op.value)
                    )));
                }
            } else {
                let len = match op.kind {
                    ValueKind::Expiring => op.value.len().checked_sub(crate::ttl::DEADLINE_LEN).ok_or_else(|| {
                        Error::InvalidArgument("an expiring put without its deadline".into())
                    })?,
                    _ => op.value.len(),
                };
                if len > max_value {
                    return Err(Error::InvalidArgument(format!(
                        "value of {len} bytes exceeds limits.max_value_size {max_value}"
                    )));
                }
            }
            tree_ok(op.tree)?;
            if op.kind == ValueKind::Merge && !has_merge {
                return Err(Error::InvalidArgument(
                    "merge without a merge operator: set merge.operator (uint64add, stringappend, \
                     stringappend:DELIMITER) or Options.merge_operator when opening the database"
                        .into(),
                ));
            }
        }
        Ok(())
    }
}

/// A batch decoded from a WAL record.
#[derive(Debug)]
pub(crate) struct DecodedBatch<'a> {
    pub seqno: u64,
    pub count: u32,
    ops: &'a [u8],
}

impl<'a> DecodedBatch<'a> {
    /// Validates the header; ops are validated as they are iterated.
    pub fn parse(b: &'a [u8]) -> Result<Self, &'static str> {
        let mut d = Decoder::new(b);
        let seqno = d.u64("batch seqno")?;
        let count = d.u32("batch count")?;
        let ops = &b[HEADER..];
        // Every op takes at least 3 bytes: bounds the count by the bytes present.
        if count as usize > ops.len() / 3 + 1 {
            return Err("batch count larger than its bytes allow");
        }
        Ok(DecodedBatch { seqno, count, ops })
    }

    pub fn ops(&self) -> impl Iterator<Item = Result<BatchOp<'a>, &'static str>> {
        decode_ops(self.ops, self.count)
    }
}

fn decode_ops(b: &[u8], count: u32) -> impl Iterator<Item = Result<BatchOp<'_>, &'static str>> {
    let mut d = Decoder::new(b);
    let mut left = count;
    let mut failed = false;
    std::iter::from_fn(move || {
        if left == 0 || failed {
            if !failed && !d.is_empty() {
                failed = true;
                return Some(Err("trailing bytes after batch ops"));
            }
            return None;
        }
        left -= 1;
        let r = (|| {
            let kind = ValueKind::from_u8(d.u8("op kind")?).ok_or("unknown op kind")?;
            let tree = d.varint32("op tree")?;
            let key = d.len_prefixed("op key")?;
            let value = if kind != ValueKind::Delete {
                d.len_prefixed("op value")?
            } else {
                &[][..]
            };
            Ok(BatchOp { tree, kind, key, value })
        })();
        if r.is_err() {
            failed = true;
        }
        Some(r)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trees `0..n` exist.
    fn trees(n: u32) -> impl Fn(u32) -> Result<()> {
        move |t| if t < n { Ok(()) } else { Err(Error::InvalidArgument(format!("unknown tree id {t}"))) }
    }

    #[test]
    fn golden_and_round_trip() {
        let mut b = WriteBatch::new();
        b.put(b"k", b"v").delete(b"d");
        b.push(3, ValueKind::Put, b"x", b"");
        b.set_seqno(0x10);
        let expect: Vec<u8> = [
            &[0x10, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0][..],
            &[1, 0, 1, b'k', 1, b'v'],
            &[0, 0, 1, b'd'],
            &[1, 3, 1, b'x', 0],
        ]
        .concat();
        assert_eq!(b.encoded(), &expect[..]);
        let d = DecodedBatch::parse(b.encoded()).unwrap();
        assert_eq!(d.seqno, 0x10);
        let ops: Vec<_> = d.ops().collect::<Result<_, _>>().unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!(
            ops[2],
            BatchOp {
                tree: 3,
                kind: ValueKind::Put,
                key: b"x",
                value: b""
            }
        );
        assert!(b.validate(1, 1, 100, trees(4), false).is_ok());
        assert!(b.validate(1, 1, 100, trees(3), false).is_err());
        assert!(b
            .validate(0, 1, 100, trees(4), false)
            .unwrap_err()
            .to_string()
            .contains("max_key_size"));
    }

    #[test]
    fn merges_need_an_operator() {
        let mut b = WriteBatch::new();
        b.merge(b"k", b"+1");
        b.set_seqno(1);
        let expect: Vec<u8> = [&[1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0][..], &[3, 0, 1, b'k', 2, b'+', b'1']].concat();
        assert_eq!(b.encoded(), &expect[..]);
        let e = b.validate(8, 8, 100, trees(1), false).unwrap_err().to_string();
        assert!(e.contains("merge without a merge operator"), "{e}");
        assert!(b.validate(8, 8, 100, trees(1), true).is_ok());
        let ops: Vec<_> = DecodedBatch::parse(b.encoded()).unwrap().ops().collect::<Result<_, _>>().unwrap();
        assert_eq!((ops[0].kind, ops[0].value), (ValueKind::Merge, &b"+1"[..]));
    }

    #[test]
    fn range_deletes_golden_empty_and_inverted() {
        let mut b = WriteBatch::new();
        b.delete_range(b"a", b"c").delete_range(b"x", b"x");
        b.set_seqno(1);
        assert_eq!(b.len(), 1, "an empty range adds nothing");
        let expect: Vec<u8> = [&[1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0][..], &[2, 0, 1, b'a', 1, b'c']].concat();
        assert_eq!(b.encoded(), &expect[..]);
        let ops: Vec<_> = DecodedBatch::parse(b.encoded()).unwrap().ops().collect::<Result<_, _>>().unwrap();
        assert_eq!((ops[0].kind, ops[0].key, ops[0].value), (ValueKind::RangeDelete, &b"a"[..], &b"c"[..]));
        assert!(b.validate(1, 0, 100, trees(1), false).is_ok(), "the end is a key, not a value");
        let mut inv = WriteBatch::new();
        inv.delete_range(b"b", b"a");
        let e = inv.validate(8, 8, 100, trees(1), false).unwrap_err().to_string();
        assert!(e.contains("after its end"), "{e}");
        let mut long = WriteBatch::new();
        long.delete_range(b"a", b"zzz");
        assert!(long.validate(2, 8, 100, trees(1), false).unwrap_err().to_string().contains("max_key_size"));
    }

    #[test]
    fn expiring_puts_golden_and_stamped_before_the_wal() {
        let mut b = WriteBatch::new();
        b.put_with_ttl(b"k", b"v", std::time::Duration::from_millis(5)).put(b"p", b"q");
        b.push(1, ValueKind::Put, b"t", b"u");
        b.push(2, ValueKind::Delete, b"d", b"");
        assert!(b.has_ttls());
        // Tree 1 has a time to live of 7 ms; the clock reads 1000.
        let mut s = b.stamped(1000, |t| (t == 1).then_some(7));
        s.set_seqno(1);
        let expect: Vec<u8> = [
            &[1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0][..],
            // Expiring: kind 4, tree 0, key, value of 9 bytes = deadline 1005 ‖ "v".
            &[4, 0, 1, b'k', 9, 0xed, 0x03, 0, 0, 0, 0, 0, 0, b'v'],
            &[1, 0, 1, b'p', 1, b'q'],
            // A put into tree 1 became expiring: deadline 1007.
            &[4, 1, 1, b't', 9, 0xef, 0x03, 0, 0, 0, 0, 0, 0, b'u'],
            &[0, 2, 1, b'd'],
        ]
        .concat();
        assert_eq!(s.encoded(), &expect[..]);
        let ops: Vec<_> = DecodedBatch::parse(s.encoded()).unwrap().ops().collect::<Result<_, _>>().unwrap();
        assert_eq!(ops[0].kind, ValueKind::Expiring);
        // The value limit is on the value, not its deadline; a deadline is required.
        assert!(s.validate(1, 1, 100, trees(3), false).is_ok());
        let mut short = WriteBatch::new();
        short.push(0, ValueKind::Expiring, b"k", b"1234567");
        assert!(short.validate(8, 8, 100, trees(1), false).unwrap_err().to_string().contains("deadline"));
        // Nothing to stamp: the same bytes.
        let mut plain = WriteBatch::new();
        plain.put(b"a", b"b");
        let before = plain.encoded().to_vec();
        assert_eq!(plain.stamped(5, |_| None).encoded(), &before[..]);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut b = WriteBatch::new();
        b.put(b"key", b"value");
        b.set_seqno(1);
        let enc = b.encoded().to_vec();
        for cut in 0..enc.len() {
            if let Ok(d) = DecodedBatch::parse(&enc[..cut]) {
                assert!(d.ops().any(|r| r.is_err()) || d.count == 0);
            }
        }
        let mut bad = enc.clone();
        bad[8] = 200; // count far beyond the bytes
        assert!(DecodedBatch::parse(&bad).is_err());
    }
}
