//! Merge operators: `Db::merge(key, operand)` records an operand instead of a value; reads
//! combine the operands with the value below them (a **full merge**), and flushes and
//! compactions fold operands together when no reader needs them apart — into a value when the
//! base is known, or into one operand (a **partial merge**) when it may lie deeper.
//!
//! An operator has a name, stored in OPTIONS (`merge.operator`): a database written with one
//! opens again only with an operator of that name (the built-ins are made from their names).

use std::sync::Arc;

/// Combines a key's merge operands, oldest first, with the value below them.
pub trait MergeOperator: Send + Sync + std::fmt::Debug {
    /// The name stored in OPTIONS (`merge.operator`); a reopen needs an operator of this name.
    fn name(&self) -> String;

    /// The value after applying `operands` (oldest first) to `existing` (`None`: no value, or
    /// deleted). `None` when the operands cannot be applied: the read fails with `Corruption`.
    fn full_merge(&self, key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>>;

    /// One operand equivalent to `operands` (oldest first, at least two), whatever lies below
    /// them; `None` (the default) keeps them apart.
    fn partial_merge(&self, _key: &[u8], _operands: &[&[u8]]) -> Option<Vec<u8>> {
        None
    }

    /// The engine's stand-in for an operator known only by name (not for implementors).
    #[doc(hidden)]
    fn is_stand_in(&self) -> bool {
        false
    }
}

/// Adds 8-byte little-endian unsigned integers, wrapping (RocksDB's `uint64add`). A value or
/// operand of another length counts as 0.
#[derive(Debug, Clone, Copy, Default)]
pub struct UInt64Add;

fn as_u64(b: &[u8]) -> u64 {
    b.try_into().map_or(0, u64::from_le_bytes)
}

impl MergeOperator for UInt64Add {
    fn name(&self) -> String {
        "uint64add".into()
    }

    fn full_merge(&self, _key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        let sum = operands
            .iter()
            .fold(existing.map_or(0, as_u64), |acc, o| acc.wrapping_add(as_u64(o)));
        Some(sum.to_le_bytes().to_vec())
    }

    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        self.full_merge(key, None, operands)
    }
}

/// Appends each operand to the value, separated by a delimiter (default `,`; RocksDB's
/// `stringappend`).
#[derive(Debug, Clone)]
pub struct StringAppend {
    delimiter: Vec<u8>,
}

impl Default for StringAppend {
    fn default() -> Self {
        StringAppend::new(b",")
    }
}

impl StringAppend {
    /// Joins with `delimiter` (any bytes, possibly none).
    pub fn new(delimiter: impl Into<Vec<u8>>) -> Self {
        StringAppend {
            delimiter: delimiter.into(),
        }
    }

    fn join<'a>(&self, parts: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, p) in parts.enumerate() {
            if i > 0 {
                out.extend_from_slice(&self.delimiter);
            }
            out.extend_from_slice(p);
        }
        out
    }
}

impl MergeOperator for StringAppend {
    /// `stringappend` with the default delimiter, else `stringappend:` and the delimiter.
    fn name(&self) -> String {
        if self.delimiter == b"," {
            "stringappend".into()
        } else {
            format!("stringappend:{}", String::from_utf8_lossy(&self.delimiter))
        }
    }

    fn full_merge(&self, _key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        Some(self.join(existing.into_iter().chain(operands.iter().copied())))
    }

    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        Some(self.join(operands.iter().copied()))
    }
}

/// The built-in names `merge.operator` accepts (a custom operator's name is accepted too, and
/// needs the operator itself at open).
pub(crate) const BUILT_IN: &[&str] = &["none", "uint64add", "stringappend", "stringappend:DELIMITER"];

/// The built-in operator called `name` (`None` for none or an unknown name).
pub(crate) fn built_in(name: &str) -> Option<Arc<dyn MergeOperator>> {
    match name {
        "uint64add" => Some(Arc::new(UInt64Add)),
        "stringappend" => Some(Arc::new(StringAppend::default())),
        _ => name
            .strip_prefix("stringappend:")
            .map(|d| Arc::new(StringAppend::new(d.as_bytes())) as Arc<dyn MergeOperator>),
    }
}

/// The operator a name stands for when nothing makes it: every merge with it fails. Options
/// read from a database written with a custom operator hold one, until the operator is given.
#[derive(Debug)]
pub(crate) struct Unresolved(pub String);

impl MergeOperator for Unresolved {
    fn name(&self) -> String {
        self.0.clone()
    }
    fn full_merge(&self, _: &[u8], _: Option<&[u8]>, _: &[&[u8]]) -> Option<Vec<u8>> {
        None
    }
    fn is_stand_in(&self) -> bool {
        true
    }
}

/// The operator of `name`: the built-in, else a stand-in that needs the real one at open.
pub(crate) fn by_name(name: &str) -> Arc<dyn MergeOperator> {
    built_in(name).unwrap_or_else(|| Arc::new(Unresolved(name.to_string())))
}

/// The operator a database opens with: `given` unless it stands for an operator known only by
/// name, which must then be built in. `stored`: the name in the database's OPTIONS, which a
/// database written with an operator needs again.
pub(crate) fn for_open(
    given: Option<&Arc<dyn MergeOperator>>,
    stored: Option<&str>,
) -> crate::Result<Option<Arc<dyn MergeOperator>>> {
    let refuse = |reason: String| crate::Error::InvalidOptions {
        option: "merge.operator",
        reason,
    };
    let stored = stored.filter(|s| !s.is_empty() && *s != "none");
    let Some(op) = given else {
        return match stored {
            Some(s) => Err(refuse(format!(
                "the database was written with merge.operator = {s} and may hold its operands: open it with \
                 that operator (merge.operator = {s}, or Options.merge_operator for one of your own)"
            ))),
            None => Ok(None),
        };
    };
    if !op.is_stand_in() {
        return Ok(Some(op.clone()));
    }
    built_in(&op.name()).map(Some).ok_or_else(|| {
        refuse(format!(
            "merge.operator = {} is not built in ({}): give the operator itself as Options.merge_operator",
            op.name(),
            BUILT_IN.join(", ")
        ))
    })
}

/// A key's operands as reads meet them, newest first, end to end in one buffer: a hot counter
/// holds thousands, and one allocation each would cost more than reading them.
#[derive(Debug, Default)]
pub(crate) struct Operands {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Operands {
    /// Adds the next older operand.
    pub(crate) fn push(&mut self, operand: &[u8]) {
        self.bytes.extend_from_slice(operand);
        self.ends.push(self.bytes.len());
    }

    /// Applies them (oldest first) to `base` with `op` ([`resolve`]).
    pub(crate) fn resolve(&self, op: &dyn MergeOperator, key: &[u8], base: Option<&[u8]>) -> crate::Result<Vec<u8>> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        let mut oldest_first: Vec<&[u8]> = starts.zip(&self.ends).map(|(a, &b)| &self.bytes[a..b]).collect();
        oldest_first.reverse();
        resolve(op, key, base, &oldest_first)
    }
}

/// The error of a read that meets merge operands in a database without an operator.
pub(crate) fn missing_operator(key: &[u8]) -> crate::Error {
    crate::Error::InvalidArgument(format!(
        "key {:?} holds merge operands and the database has no merge operator",
        String::from_utf8_lossy(key)
    ))
}

/// Applies a key's operands (oldest first) to `base`; an operator that cannot is corruption.
pub(crate) fn resolve(
    op: &dyn MergeOperator,
    key: &[u8],
    base: Option<&[u8]>,
    operands: &[&[u8]],
) -> crate::Result<Vec<u8>> {
    op.full_merge(key, base, operands).ok_or_else(|| {
        crate::Error::corruption(
            "",
            0,
            format!(
                "merge operator {} could not merge {} operand(s) of key {:?}",
                op.name(),
                operands.len(),
                String::from_utf8_lossy(key)
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn uint64add_sums_and_wraps() {
        let op = UInt64Add;
        let v = |n: u64| n.to_le_bytes().to_vec();
        let got = op.full_merge(b"k", Some(&v(5)), &[&v(1), &v(2)]).unwrap();
        assert_eq!(got, v(8));
        assert_eq!(op.full_merge(b"k", None, &[&v(u64::MAX), &v(2)]).unwrap(), v(1));
        assert_eq!(op.full_merge(b"k", Some(b"bad"), &[&v(3)]).unwrap(), v(3));
        assert_eq!(op.partial_merge(b"k", &[&v(3), &v(4)]).unwrap(), v(7));
        assert_eq!(op.name(), "uint64add");
    }

    #[test]
    fn stringappend_joins_oldest_first() {
        let op = StringAppend::default();
        assert_eq!(op.full_merge(b"k", Some(b"a"), &[b"b", b"c"]).unwrap(), b"a,b,c");
        assert_eq!(op.full_merge(b"k", None, &[b"b"]).unwrap(), b"b");
        assert_eq!(op.partial_merge(b"k", &[b"b", b"c"]).unwrap(), b"b,c");
        let semi = StringAppend::new(";");
        assert_eq!(semi.name(), "stringappend:;");
        assert_eq!(built_in(&semi.name()).unwrap().name(), "stringappend:;");
        assert_eq!(built_in("stringappend").unwrap().name(), "stringappend");
        assert!(built_in("nope").is_none());
    }

    #[test]
    fn resolve_applies_oldest_first() {
        let op = StringAppend::default();
        let got = resolve(&op, b"k", Some(b"base"), &[b"old", b"new"]).unwrap();
        assert_eq!(got, b"base,old,new");
        // Gathered newest first, as reads meet them (an empty operand included).
        let mut ops = Operands::default();
        for o in [&b"new"[..], b"", b"old"] {
            ops.push(o);
        }
        assert_eq!(ops.resolve(&op, b"k", Some(b"base")).unwrap(), b"base,old,,new");
        assert_eq!(ops.resolve(&op, b"k", None).unwrap(), b"old,,new");
    }
}
