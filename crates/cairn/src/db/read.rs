//! Point reads: memtables → L0 newest first → one file per sorted level. Each table probe asks
//! the published filter plan which units to consult and is recorded per level and per file
//! (through handles the super-version carries: no lock, no map lookup).

use super::inner::{unknown_tree, DbInner, SuperVersion};
use crate::error::Result;
use crate::format::ikey::ValueKind;
use crate::format::LookupKey;
use crate::sst::UnitSelection;
use crate::stats::stripe::Stripe;
use crate::tuning::{FilterPlan, UnitChoice};
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub(super) fn get(inner: &Arc<DbInner>, tree: u32, key: &[u8], snapshot: Option<u64>) -> Result<Option<Vec<u8>>> {
    let mut value = Vec::new();
    Ok(get_into(inner, tree, key, snapshot, &mut value)?.then_some(value))
}

/// [`get`] writing the value into `value` (replacing its contents); `true` when found. Takes
/// no lock, writes no shared line and allocates nothing (when `value` has room).
pub(super) fn get_into(
    inner: &Arc<DbInner>,
    tree: u32,
    key: &[u8],
    snapshot: Option<u64>,
    value: &mut Vec<u8>,
) -> Result<bool> {
    if inner.shutdown.load(Ordering::Acquire) {
        return Err(crate::Error::InvalidArgument("the database is closed".into()));
    }
    // Borrowed for this call: no lock and no reference-count write on the read path.
    let supers = inner.super_versions();
    let sv = supers.get(tree as usize).ok_or_else(|| unknown_tree(tree))?;
    let seq = snapshot.unwrap_or_else(|| inner.last_seq.load(Ordering::Acquire));
    let s = Stripe::current();
    sv.counters.record_get(s);
    let lookup = LookupKey::new(key, seq);
    // Range tombstones: the newest over the key that this read sees. Memory's first, all of
    // them (a memtable's tombstone deletes older entries of any memtable); every version on
    // disk is older than any of them.
    let mut covering = 0;
    for m in &sv.mems {
        covering = covering.max(m.range_del_covering(key, seq));
    }
    for m in &sv.mems {
        if let Some((kind, s_found)) = m.lookup_entry(&lookup, value) {
            sv.counters.record_memtable_hit(s);
            if s_found <= covering {
                return Ok(false);
            }
            return match kind {
                ValueKind::Merge => merged(inner, tree, key, snapshot, value),
                ValueKind::Expiring => Ok(unexpired(inner, value)),
                kind => Ok(kind == ValueKind::Put),
            };
        }
    }
    if covering > 0 {
        return Ok(false);
    }
    let Some(tv) = sv.version.trees.get(tree as usize) else {
        return Ok(false);
    };
    let plan = inner.filter_plan.load();
    let read = Read {
        inner,
        sv,
        plan: &plan,
        lookup: &lookup,
        // Merlin's lookup number, when this thread is the one recording windows.
        g: inner.files.recorder(),
        s,
    };
    let settled = |kind: ValueKind, value: &mut Vec<u8>| match kind {
        ValueKind::Merge => merged(inner, tree, key, snapshot, value),
        ValueKind::Expiring => Ok(unexpired(inner, value)),
        kind => Ok(kind == ValueKind::Put),
    };
    for (i, f) in tv.level(0).iter().enumerate() {
        if f.smallest_user_key() <= key && f.largest_user_key() >= key {
            if let Some(kind) = read.probe(0, i, value)? {
                return settled(kind, value);
            }
        }
    }
    for level in 1..tv.levels.len() {
        if let Some(i) = tv.index_for_key(level, key) {
            if let Some(kind) = read.probe(level, i, value)? {
                return settled(kind, value);
            }
        }
    }
    Ok(false)
}

/// An expiring version found by a get: whether it is still live (its value, without the
/// deadline, left in `value`). The clock is read only for such versions.
fn unexpired(inner: &DbInner, value: &mut Vec<u8>) -> bool {
    match crate::ttl::split(value) {
        Some((deadline, _)) if deadline > inner.opts.clock.now_ms() => {
            value.drain(..crate::ttl::DEADLINE_LEN);
            true
        }
        _ => false,
    }
}

/// A key whose newest visible version is a merge operand: its operands and the value below
/// them come from a read of the key's versions (an iterator over `[key, key]`, which knows the
/// range tombstones and the merge operator), at `snapshot` or now.
fn merged(inner: &Arc<DbInner>, tree: u32, key: &[u8], snapshot: Option<u64>, value: &mut Vec<u8>) -> Result<bool> {
    let mut r = super::iter::Range::new(inner.clone(), tree, snapshot, &(key..=key));
    match r.next() {
        Some(Ok((_, v))) => {
            *value = v;
            Ok(true)
        }
        Some(Err(e)) => Err(e),
        None => Ok(false),
    }
}

/// One point read's context, shared by the tables it probes.
struct Read<'a> {
    inner: &'a DbInner,
    sv: &'a SuperVersion,
    plan: &'a FilterPlan,
    lookup: &'a LookupKey,
    g: Option<u64>,
    s: Stripe,
}

impl Read<'_> {
    /// Probes file `i` of `level`; `Some(kind)` once the table settles the read: it holds a
    /// version of the key (its kind; `Delete` when one of the table's own range tombstones is
    /// newer; the value in `value`), or a range tombstone over the key (`Delete`: every deeper
    /// version is older than it). Range tombstones are asked before any filter, which knows
    /// point keys only.
    fn probe(&self, level: usize, i: usize, value: &mut Vec<u8>) -> Result<Option<ValueKind>> {
        let Some(f) = self
            .sv
            .version
            .trees
            .get(self.sv.tree)
            .and_then(|t| t.level(level).get(i))
        else {
            return Ok(None);
        };
        let state = self.sv.files.get(level).and_then(|l| l.get(i));
        let units = match (state, self.plan.units_for(f.number)) {
            // Elastic units: the ones loaded in filter memory.
            (Some(st), _) if !st.elastic().is_empty() => UnitSelection::Loaded(st.elastic()),
            (_, UnitChoice::All) => UnitSelection::All,
            (_, UnitChoice::Skip) => UnitSelection::None,
        };
        // The reader the table cache published in the file's slot, else through the cache
        // (which publishes it for the next read).
        let slot = state.map(|st| st.reader_slot().load());
        let opened;
        let table = match slot.as_ref().and_then(|g| g.as_ref()) {
            Some(t) => t,
            None => {
                opened = self.inner.open_table_for(f, state)?;
                &opened
            }
        };
        // Most tables hold no range tombstone: no trailer decode, no search for them.
        let covering = if table.range_dels().is_empty() {
            0
        } else {
            table.range_del_covering(self.lookup.user_key(), self.lookup.seqno())
        };
        let out = table.lookup_into(self.lookup, units, value)?;
        self.sv.counters.record_probe(self.s, level, &out);
        if let Some(state) = state {
            state.record_probe(self.s, &out);
            if let Some(g) = self.g {
                state.record_merlin(g, &out);
            }
        }
        Ok(match out.found {
            Some(found) if found.seqno > covering => Some(found.kind),
            Some(_) => Some(ValueKind::Delete),
            None => (covering > 0).then_some(ValueKind::Delete),
        })
    }
}

/// Which tables a lookup of `key` would probe now, with every filter off, and whether each
/// holds a version of the key (the last one probed does when it is found; a lookup also ends
/// at a table whose range tombstone covers the key): the replayed ground truth of Merlin's
/// accuracy experiment. Records nothing.
pub(super) fn trace(inner: &Arc<DbInner>, tree: u32, key: &[u8]) -> Result<Vec<(u64, bool)>> {
    let sv = inner.super_version(tree)?;
    let seq = inner.last_seq.load(Ordering::Acquire);
    let lookup = LookupKey::new(key, seq);
    if sv
        .mems
        .iter()
        .any(|m| m.lookup(&lookup).is_some() || m.range_del_covering(key, seq) > 0)
    {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let Some(tv) = sv.version.trees.get(tree as usize) else {
        return Ok(out);
    };
    let l0 = tv
        .level(0)
        .iter()
        .filter(|f| f.smallest_user_key() <= key && f.largest_user_key() >= key);
    let deeper = (1..tv.levels.len()).filter_map(|l| tv.index_for_key(l, key).map(|i| &tv.level(l)[i]));
    for f in l0.chain(deeper) {
        let table = inner.open_table(f)?;
        let found = table.lookup(&lookup, UnitSelection::None)?.found.is_some();
        out.push((f.number, found));
        if found || table.range_del_covering(key, seq) > 0 {
            break;
        }
    }
    Ok(out)
}
