//! A transaction's own writes: every operation in the order it was made (what the commit
//! writes, and what a savepoint cuts back to), and per key the positions of its operations
//! (what the transaction's reads see first).

use crate::format::ikey::ValueKind;
use crate::merge::MergeOperator;
use std::collections::BTreeMap;
use std::ops::Bound;

#[derive(Debug)]
struct Op {
    tree: u32,
    key: Vec<u8>,
    kind: ValueKind,
    value: Vec<u8>,
}

/// What the transaction's own writes say about one key.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Own<'a> {
    /// Nothing: the database's version is the answer.
    Untouched,
    /// Set to this value.
    Value(&'a [u8]),
    /// Deleted.
    Deleted,
    /// Merge operands (oldest first) over the value below: the transaction's own when
    /// `base` is `Some` (`Some(None)`: deleted), else the database's.
    Merged {
        base: Option<Option<&'a [u8]>>,
        operands: Vec<&'a [u8]>,
    },
}

impl Own<'_> {
    /// The key's value for the transaction, given the database's (asked only when needed)
    /// and the merge operator.
    pub(crate) fn resolve(
        &self,
        key: &[u8],
        op: Option<&dyn MergeOperator>,
        db_value: impl FnOnce() -> crate::Result<Option<Vec<u8>>>,
    ) -> crate::Result<Option<Vec<u8>>> {
        match self {
            Own::Untouched => db_value(),
            Own::Value(v) => Ok(Some(v.to_vec())),
            Own::Deleted => Ok(None),
            Own::Merged { base, operands } => {
                let below = match base {
                    Some(b) => b.map(<[u8]>::to_vec),
                    None => db_value()?,
                };
                let op = op.ok_or_else(|| crate::merge::missing_operator(key))?;
                crate::merge::resolve(op, key, below.as_deref(), operands).map(Some)
            }
        }
    }
}

/// The writes, with their savepoints.
#[derive(Debug, Default)]
pub(crate) struct Writes {
    ops: Vec<Op>,
    index: BTreeMap<(u32, Vec<u8>), Vec<usize>>,
    /// Bytes of keys and values, against the batch limit.
    bytes: usize,
    savepoints: Vec<usize>,
}

impl Writes {
    pub(crate) fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn push(&mut self, tree: u32, kind: ValueKind, key: &[u8], value: &[u8]) {
        let at = self.ops.len();
        self.index.entry((tree, key.to_vec())).or_default().push(at);
        self.bytes += key.len() + value.len();
        self.ops.push(Op {
            tree,
            key: key.to_vec(),
            kind,
            value: value.to_vec(),
        });
    }

    /// The key's state after the transaction's operations on it.
    pub(crate) fn view(&self, tree: u32, key: &[u8]) -> Own<'_> {
        // A transaction that has written nothing (a read-only one) pays no key copy here.
        if self.index.is_empty() {
            return Own::Untouched;
        }
        match self.index.get(&(tree, key.to_vec())) {
            Some(positions) => self.fold(positions),
            None => Own::Untouched,
        }
    }

    fn fold(&self, positions: &[usize]) -> Own<'_> {
        let last_set = positions.iter().rposition(|&p| self.ops[p].kind != ValueKind::Merge);
        let base = last_set.map(|i| match self.ops[positions[i]].kind {
            ValueKind::Delete => None,
            _ => Some(self.ops[positions[i]].value.as_slice()),
        });
        let operands: Vec<&[u8]> = positions[last_set.map_or(0, |i| i + 1)..]
            .iter()
            .map(|&p| self.ops[p].value.as_slice())
            .collect();
        match (base, operands.is_empty()) {
            (Some(Some(v)), true) => Own::Value(v),
            (Some(None), true) => Own::Deleted,
            (base, _) => Own::Merged { base, operands },
        }
    }

    /// Every key of `tree` the transaction wrote within `(lo, hi)`, in order, with its state.
    pub(crate) fn within(&self, tree: u32, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> Vec<(Vec<u8>, Own<'_>)> {
        let lo = match lo {
            Bound::Included(k) => Bound::Included((tree, k.clone())),
            Bound::Excluded(k) => Bound::Excluded((tree, k.clone())),
            Bound::Unbounded => Bound::Included((tree, Vec::new())),
        };
        let hi = match hi {
            Bound::Included(k) => Bound::Included((tree, k.clone())),
            Bound::Excluded(k) => Bound::Excluded((tree, k.clone())),
            Bound::Unbounded if tree == u32::MAX => Bound::Unbounded,
            Bound::Unbounded => Bound::Excluded((tree + 1, Vec::new())),
        };
        self.index
            .range((lo, hi))
            .map(|((_, k), positions)| (k.clone(), self.fold(positions)))
            .collect()
    }

    /// The operations in order, as a batch writes them: (tree, kind, key, value).
    pub(crate) fn ops(&self) -> impl Iterator<Item = (u32, ValueKind, &[u8], &[u8])> {
        self.ops
            .iter()
            .map(|o| (o.tree, o.kind, o.key.as_slice(), o.value.as_slice()))
    }

    /// Every key written, once.
    pub(crate) fn keys(&self) -> impl Iterator<Item = (u32, &[u8])> {
        self.index.keys().map(|(t, k)| (*t, k.as_slice()))
    }

    /// Marks a savepoint.
    pub(crate) fn set_savepoint(&mut self) {
        self.savepoints.push(self.ops.len());
    }

    /// Undoes every write since the last savepoint and removes it; `None` when there is none.
    pub(crate) fn rollback_to_savepoint(&mut self) -> Option<()> {
        let len = self.savepoints.pop()?;
        for op in self.ops.drain(len..) {
            self.bytes -= op.key.len() + op.value.len();
            let entry = (op.tree, op.key);
            if let Some(positions) = self.index.get_mut(&entry) {
                positions.retain(|&p| p < len);
                if positions.is_empty() {
                    self.index.remove(&entry);
                }
            }
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;
    use crate::merge::StringAppend;

    #[test]
    fn reads_fold_a_keys_operations_and_savepoints_cut_them_back() {
        let mut w = Writes::default();
        assert_eq!(w.view(0, b"a"), Own::Untouched);
        w.push(0, ValueKind::Merge, b"a", b"x");
        assert_eq!(
            w.view(0, b"a"),
            Own::Merged {
                base: None,
                operands: vec![b"x".as_slice()]
            }
        );
        w.push(0, ValueKind::Put, b"a", b"1");
        w.set_savepoint();
        w.push(0, ValueKind::Merge, b"a", b"2");
        w.push(1, ValueKind::Delete, b"a", b"");
        w.push(0, ValueKind::Put, b"b", b"v");
        let op = StringAppend::default();
        let merged = w
            .view(0, b"a")
            .resolve(b"a", Some(&op), || panic!("the base is the transaction's"));
        assert_eq!(merged.unwrap(), Some(b"1,2".to_vec()));
        assert_eq!(w.view(1, b"a"), Own::Deleted);
        let keys: Vec<Vec<u8>> = w
            .within(0, &Bound::Unbounded, &Bound::Unbounded)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(w.rollback_to_savepoint(), Some(()));
        assert_eq!(w.view(0, b"a"), Own::Value(b"1"));
        assert_eq!(w.view(1, b"a"), Own::Untouched);
        assert_eq!(w.view(0, b"b"), Own::Untouched);
        assert_eq!(w.ops().count(), 2);
        assert_eq!(w.bytes(), 4);
        assert_eq!(w.rollback_to_savepoint(), None);
    }
}
