//! A transaction's commit check, run by the group's leader under the WAL lock (`write.rs`),
//! where every earlier group is in the memtables: a key the transaction read is refused when a
//! version newer than the read exists — in the database or in an earlier batch of the same
//! group — and a range it iterated when any entry or range tombstone in it is newer than its
//! snapshot. The check reads the newest versions, not a log of commits, so writes made outside
//! transactions (`Db::put`, batches, `delete_range`) conflict too.
//!
//! A table whose largest sequence number is at most the read's holds nothing newer and is
//! skipped: most checks end in the memtables.

use crate::batch::WriteBatch;
use crate::db::commit::Pending;
use crate::db::inner::DbInner;
use crate::error::{Error, Result};
use crate::format::ikey::{self, InternalKey, ValueKind, MAX_SEQNO};
use crate::format::LookupKey;
use crate::iter::{InternalIterator, KeyBounds};
use crate::range_del::Fragments;
use crate::sst::UnitSelection;
use std::ops::Bound;

/// What a transaction read: the check its commit must pass.
#[derive(Debug, Default)]
pub(crate) struct Validation {
    /// Keys, each with the sequence number it was read at.
    pub keys: Vec<(u32, Vec<u8>, u64)>,
    /// Key ranges its iterators covered, each with the sequence number it was read at.
    pub ranges: Vec<(u32, KeyBounds, u64)>,
}

/// Runs the check of every transaction in the group, in order; a refused batch gets its
/// reason in `refused` and is invisible to the checks after it.
pub(crate) fn validate_group(inner: &DbInner, batches: &mut [Pending]) {
    for i in 0..batches.len() {
        let Some(check) = batches[i].check.take() else {
            continue;
        };
        let (earlier, rest) = batches.split_at_mut(i);
        let earlier: Vec<&WriteBatch> = earlier
            .iter()
            .filter(|p| p.refused.is_none())
            .map(|p| &p.batch)
            .collect();
        if let Err(e) = conflict(inner, &check, &earlier) {
            rest[0].refused = Some(e);
        }
    }
}

/// `Err(Conflict)` when something `v` read has changed; other errors from reading the tables.
fn conflict(inner: &DbInner, v: &Validation, earlier: &[&WriteBatch]) -> Result<()> {
    for (tree, key, seq) in &v.keys {
        let written = earlier.iter().flat_map(|b| b.ops()).any(|op| {
            op.tree == *tree
                && match op.kind {
                    ValueKind::RangeDelete => op.key <= key.as_slice() && key.as_slice() < op.value,
                    _ => op.key == key.as_slice(),
                }
        });
        if written || newer_at(inner, *tree, key, *seq)? {
            return Err(refusal(*tree, key.clone()));
        }
    }
    for (tree, bounds, seq) in &v.ranges {
        let written = earlier.iter().flat_map(|b| b.ops()).any(|op| {
            op.tree == *tree
                && match op.kind {
                    ValueKind::RangeDelete => overlaps(bounds, op.key, op.value),
                    _ => bounds.above_lo(op.key) && bounds.below_hi(op.key),
                }
        });
        if written || newer_within(inner, *tree, bounds, *seq)? {
            let key = match &bounds.lo {
                Bound::Included(k) | Bound::Excluded(k) => k.clone(),
                Bound::Unbounded => Vec::new(),
            };
            return Err(refusal(*tree, key));
        }
    }
    Ok(())
}

fn refusal(tree: u32, key: Vec<u8>) -> Error {
    Error::Conflict { tree, key }
}

/// Whether `[start, end)` may hold a key within `bounds` (an empty overlap at a bound's edge
/// counts: a false conflict, never a missed one).
fn overlaps(bounds: &KeyBounds, start: &[u8], end: &[u8]) -> bool {
    let after_lo = match &bounds.lo {
        Bound::Included(l) | Bound::Excluded(l) => l.as_slice() < end,
        Bound::Unbounded => true,
    };
    after_lo && bounds.below_hi(start) && start < end
}

/// Whether a range tombstone of `frags` newer than `seq` lies over part of `bounds`.
fn tombstone_within(frags: &Fragments, bounds: &KeyBounds, seq: u64) -> bool {
    frags
        .tombstones()
        .any(|t| t.seq > seq && overlaps(bounds, &t.start, &t.end))
}

/// Whether `tree` holds a version of `key` (or a range tombstone over it) newer than `seq`.
fn newer_at(inner: &DbInner, tree: u32, key: &[u8], seq: u64) -> Result<bool> {
    let sv = inner.super_version(tree)?;
    let lookup = LookupKey::new(key, MAX_SEQNO);
    let mut scratch = Vec::new();
    if sv.mems.iter().any(|m| m.range_del_covering(key, MAX_SEQNO) > seq) {
        return Ok(true);
    }
    // The newest version in memory is newer than any on disk.
    for m in &sv.mems {
        if let Some((_, found)) = m.lookup_entry(&lookup, &mut scratch) {
            return Ok(found > seq);
        }
    }
    let Some(tv) = sv.version.trees.get(tree as usize) else {
        return Ok(false);
    };
    for (level, i) in crate::db::read::tables(tv, key) {
        let f = &tv.level(level)[i];
        // Nothing newer in it. (Had it an older version of the key, every deeper one would be
        // older still: a newer version found deeper means it has none.)
        if f.largest_seqno <= seq {
            continue;
        }
        let state = sv.files.get(level).and_then(|l| l.get(i));
        let (covering, found) = inner.with_table(f, state, |t| {
            let covering = t.range_del_covering(key, MAX_SEQNO);
            Ok((
                covering,
                t.lookup_into(&lookup, UnitSelection::All, &mut scratch)?.found,
            ))
        })?;
        match found {
            Some(found) if found.seqno > covering => return Ok(found.seqno > seq),
            _ if covering > 0 => return Ok(covering > seq),
            _ => {}
        }
    }
    Ok(false)
}

/// Whether `tree` holds an entry within `bounds`, or a range tombstone over part of them,
/// newer than `seq`.
fn newer_within(inner: &DbInner, tree: u32, bounds: &KeyBounds, seq: u64) -> Result<bool> {
    let sv = inner.super_version(tree)?;
    for m in &sv.mems {
        if m.range_dels().is_some_and(|f| tombstone_within(&f, bounds, seq)) || scan_newer(&mut m.iter(), bounds, seq) {
            return Ok(true);
        }
    }
    let Some(tv) = sv.version.trees.get(tree as usize) else {
        return Ok(false);
    };
    for level in 0..tv.levels.len() {
        for (i, f) in tv.level(level).iter().enumerate() {
            if f.largest_seqno <= seq || !bounds.overlaps(f.smallest_user_key(), f.largest_user_key()) {
                continue;
            }
            let state = sv.files.get(level).and_then(|l| l.get(i));
            let t = inner.open_table_for(f, state)?;
            if tombstone_within(t.range_dels(), bounds, seq) {
                return Ok(true);
            }
            let mut it = t.iter();
            let newer = scan_newer(&mut it, bounds, seq);
            it.status()?;
            if newer {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Whether `it` holds an entry within `bounds` newer than `seq`.
fn scan_newer(it: &mut dyn InternalIterator, bounds: &KeyBounds, seq: u64) -> bool {
    match &bounds.lo {
        Bound::Included(k) | Bound::Excluded(k) => it.seek(InternalKey::for_seek(k, MAX_SEQNO).encoded()),
        Bound::Unbounded => it.seek_to_first(),
    }
    while it.valid() {
        // An entry that does not parse is refused as changed: a false conflict, never a miss.
        let Some((k, s, _)) = ikey::split(it.key()) else {
            return true;
        };
        if !bounds.below_hi(k) {
            break;
        }
        if s > seq && bounds.above_lo(k) {
            return true;
        }
        it.next();
    }
    false
}
