//! Point reads: memtables → L0 newest first → one file per sorted level. Each table probe asks
//! the published filter plan which units to consult and is recorded per level and per file
//! (through handles the super-version carries: no lock, no map lookup).

use super::inner::{unknown_tree, DbInner, SuperVersion};
use super::live_files::LiveFile;
use crate::cache::{KvCache, Ticket};
use crate::error::Result;
use crate::format::ikey::{self, InternalKey, ValueKind};
use crate::format::LookupKey;
use crate::iter::InternalIterator;
use crate::sst::UnitSelection;
use crate::stats::stripe::Stripe;
use crate::tuning::{FilterPlan, UnitChoice};
use crate::version::FileMeta;
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
    inner.life.check_open()?;
    // The key-value cache's ticket comes before the read view (`cache/kv.rs`).
    let ticket = inner.kv.as_ref().map(|kv| (kv, kv.ticket(tree, key)));
    // Borrowed for this call: no lock and no reference-count write on the read path.
    let supers = inner.super_versions();
    let sv = supers.get(tree as usize).ok_or_else(|| unknown_tree(tree))?;
    sv.check_live()?;
    let seq = snapshot.unwrap_or_else(|| inner.last_seq.load(Ordering::Acquire));
    lookup(inner, sv, key, seq, snapshot.is_some(), ticket.map(|(_, t)| t), value)
}

/// `key` in the tree of read view `sv` at `seq` (`at_snapshot`: an older sequence number than
/// the newest, whose answer the key-value cache does not take), with the key-value cache's
/// `ticket` taken before the view was loaded.
pub(super) fn lookup(
    inner: &Arc<DbInner>,
    sv: &SuperVersion,
    key: &[u8],
    seq: u64,
    at_snapshot: bool,
    ticket: Option<Ticket>,
    value: &mut Vec<u8>,
) -> Result<bool> {
    let tree = sv.tree as u32;
    let ticket = ticket.and_then(|t| inner.kv.as_ref().map(|kv| (kv, t)));
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
    for (mi, m) in sv.mems.iter().enumerate() {
        if let Some((kind, s_found)) = m.lookup_entry(&lookup, value) {
            sv.counters.record_memtable_hit(s);
            // A tombstone deletes what is older: an ingested table's entries and tombstones
            // share a sequence number, and its tombstones leave its entries alone.
            if s_found < covering {
                return Ok(false);
            }
            return match kind {
                ValueKind::Merge => {
                    let mut chain = Chain::new(inner, value, covering);
                    for (j, m) in sv.mems.iter().enumerate().skip(mi) {
                        let below = if j == mi { s_found.checked_sub(1) } else { Some(seq) };
                        if chain.walk(&mut m.iter(), key, below) {
                            return chain.finish(key, value);
                        }
                    }
                    match sv.version.trees.get(tree as usize) {
                        Some(tv) => {
                            let plan = inner.filter_plan.load();
                            let read = Read::new(inner, sv, &plan, &lookup, s);
                            chain.tables(&read, tables(tv, key), value)
                        }
                        None => chain.finish(key, value),
                    }
                }
                kind => Ok(settled(inner, kind, value)),
            };
        }
    }
    if covering > 0 {
        return Ok(false);
    }
    // What is left is the tables' answer: the key-value cache may hold it.
    if let Some((kv, t)) = &ticket {
        if let Some(c) = kv.get(t, tree, key, seq, value) {
            return Ok(settled(inner, c.kind, value));
        }
    }
    let Some(tv) = sv.version.trees.get(tree as usize) else {
        return Ok(false);
    };
    // Only a read at the newest sequence number sees the tables' newest versions.
    let fill = |seqno| {
        ticket.filter(|_| !at_snapshot).map(|(kv, ticket)| Fill {
            kv,
            ticket,
            tree,
            seqno,
        })
    };
    let plan = inner.filter_plan.load();
    let read = Read::new(inner, sv, &plan, &lookup, s);
    let mut candidates = tables(tv, key);
    while let Some((level, i)) = candidates.next() {
        if let Some((kind, found)) = read.probe(level, i, value)? {
            return match kind {
                ValueKind::Merge => {
                    let mut chain = Chain::new(inner, value, 0);
                    chain.fill = fill(found);
                    if chain.rest_of_table(&read, level, i, found)? {
                        return chain.finish(key, value);
                    }
                    chain.tables(&read, candidates, value)
                }
                kind => {
                    if let Some(f) = fill(found) {
                        f.answer(key, kind, value);
                    }
                    Ok(settled(inner, kind, value))
                }
            };
        }
    }
    // No version in any table: not cached. The filters answer such a key without reading a
    // block (all but their false positives), so its entry would save little I/O for its bytes.
    Ok(false)
}

/// Where a read at the newest sequence number caches the tables' answer: the version at
/// `seqno`.
#[derive(Clone, Copy)]
struct Fill<'a> {
    kv: &'a KvCache,
    ticket: Ticket,
    tree: u32,
    seqno: u64,
}

impl Fill<'_> {
    fn answer(self, key: &[u8], kind: ValueKind, value: &[u8]) {
        self.kv.fill(&self.ticket, self.tree, key, kind, self.seqno, value);
    }
}

/// The tables a lookup of `key` probes, in order: the L0 files whose range holds it (newest
/// first), then the one file of each deeper level that may. Allocates nothing.
pub(super) fn tables<'a>(
    tv: &'a crate::version::TreeVersion,
    key: &'a [u8],
) -> impl Iterator<Item = (usize, usize)> + 'a {
    let l0 = tv
        .level(0)
        .iter()
        .enumerate()
        .filter(move |(_, f)| f.smallest_user_key() <= key && f.largest_user_key() >= key)
        .map(|(i, _)| (0, i));
    let deeper = (1..tv.levels.len()).filter_map(move |l| tv.index_for_key(l, key).map(|i| (l, i)));
    l0.chain(deeper)
}

/// A key whose newest visible version is a merge operand, resolved on the point path: its
/// older versions are walked source by source, newest first, down to a value, a deletion, a
/// range tombstone or the last source, then combined by the merge operator.
struct Chain<'a> {
    inner: &'a DbInner,
    operands: crate::merge::Operands,
    /// The newest range tombstone over the key met so far: versions below it are deleted.
    covering: u64,
    /// What lies below the operands, once known (`Some(None)`: nothing).
    base: Option<Option<Vec<u8>>>,
    /// Where the merged value is cached, when the chain is the tables' answer of a read at the
    /// newest sequence number.
    fill: Option<Fill<'a>>,
    /// A version with a deadline took part: the merged value changes with time, and is not
    /// cached.
    timed: bool,
}

impl<'a> Chain<'a> {
    fn new(inner: &'a DbInner, first: &[u8], covering: u64) -> Self {
        let mut operands = crate::merge::Operands::default();
        operands.push(first);
        Chain {
            inner,
            operands,
            covering,
            base: None,
            fill: None,
            timed: false,
        }
    }

    /// Takes the next older version; true once the chain is complete.
    fn take(&mut self, kind: ValueKind, seq: u64, v: &[u8]) -> bool {
        let base = match kind {
            _ if self.covering > seq => None,
            ValueKind::Merge => {
                self.operands.push(v);
                return false;
            }
            ValueKind::Put => Some(v.to_vec()),
            ValueKind::Expiring => {
                self.timed = true;
                crate::ttl::live(v, self.inner.opts.clock.now_ms()).map(<[u8]>::to_vec)
            }
            _ => None,
        };
        self.base = Some(base);
        true
    }

    /// Takes `it`'s versions of `key` at or below `below` (`None`: none is); true once the
    /// chain is complete.
    fn walk(&mut self, it: &mut dyn InternalIterator, key: &[u8], below: Option<u64>) -> bool {
        let Some(below) = below else {
            return false;
        };
        it.seek(InternalKey::for_seek(key, below).encoded());
        while it.valid() {
            match ikey::split(it.key()) {
                Some((k, seq, kind)) if k == key => {
                    if self.take(kind, seq, it.value()) {
                        return true;
                    }
                }
                _ => break,
            }
            it.next();
        }
        false
    }

    /// After an operand at `found` in file `i` of `level`: that table's older versions; true
    /// once the chain is complete.
    fn rest_of_table(&mut self, read: &Read<'_>, level: usize, i: usize, found: u64) -> Result<bool> {
        let Some(table) = read.table(level, i)? else {
            return Ok(false);
        };
        let key = read.lookup.user_key();
        self.covering = self.covering.max(table.range_del_covering(key, read.lookup.seqno()));
        let mut it = table.iter();
        let done = self.walk(&mut it, key, found.checked_sub(1));
        it.status()?;
        Ok(done)
    }

    /// Walks the remaining `tables` (probed through their filters), then combines.
    fn tables(
        mut self,
        read: &Read<'_>,
        tables: impl Iterator<Item = (usize, usize)>,
        scratch: &mut Vec<u8>,
    ) -> Result<bool> {
        for (level, i) in tables {
            if let Some((kind, found)) = read.probe(level, i, scratch)? {
                if self.take(kind, found, scratch) || self.rest_of_table(read, level, i, found)? {
                    break;
                }
            }
        }
        self.finish(read.lookup.user_key(), scratch)
    }

    /// The merged value into `value`.
    fn finish(self, key: &[u8], value: &mut Vec<u8>) -> Result<bool> {
        let Some(op) = self.inner.opts.merge_operator.as_deref() else {
            return Err(crate::merge::missing_operator(key));
        };
        *value = self.operands.resolve(op, key, self.base.flatten().as_deref())?;
        if let Some(f) = self.fill.filter(|_| !self.timed) {
            f.answer(key, ValueKind::Put, value);
        }
        Ok(true)
    }
}

/// Whether a version of kind `kind` other than a merge operand, its value in `value`, makes
/// the key present: a value, or an expiring value before its deadline (the deadline taken off;
/// the clock is read only for those).
fn settled(inner: &DbInner, kind: ValueKind, value: &mut Vec<u8>) -> bool {
    match kind {
        ValueKind::Put => true,
        ValueKind::Expiring => crate::ttl::strip_if_live(value, inner.opts.clock.now_ms()),
        _ => false,
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

impl<'a> Read<'a> {
    fn new(inner: &'a DbInner, sv: &'a SuperVersion, plan: &'a FilterPlan, lookup: &'a LookupKey, s: Stripe) -> Self {
        Read {
            inner,
            sv,
            plan,
            lookup,
            // Merlin's lookup number, when this thread is the one recording windows.
            g: inner.files.stats().recorder(),
            s,
        }
    }

    /// File `i` of `level`, with its run-time state.
    fn file(&self, level: usize, i: usize) -> Option<(&'a FileMeta, Option<&'a Arc<LiveFile>>)> {
        let f = self.sv.version.trees.get(self.sv.tree)?.level(level).get(i)?;
        Some((f, self.sv.files.get(level).and_then(|l| l.get(i))))
    }

    /// File `i` of `level`'s reader (a merge chain reads on in it).
    fn table(&self, level: usize, i: usize) -> Result<Option<Arc<crate::sst::TableReader>>> {
        let Some((f, state)) = self.file(level, i) else {
            return Ok(None);
        };
        match state.and_then(|st| st.reader_slot().load_full()) {
            Some(t) => Ok(Some(t)),
            None => self.inner.open_table_for(f, state).map(Some),
        }
    }

    /// Probes file `i` of `level`; `Some((kind, seqno))` once the table settles the read: it
    /// holds a version of the key (its kind and sequence number; `Delete` when one of the
    /// table's own range tombstones is newer; the value in `value`), or a range tombstone over
    /// the key (`Delete`: every deeper version is older than it). Range tombstones are asked
    /// before any filter, which knows point keys only.
    fn probe(&self, level: usize, i: usize, value: &mut Vec<u8>) -> Result<Option<(ValueKind, u64)>> {
        let Some((f, state)) = self.file(level, i) else {
            return Ok(None);
        };
        let units = match (state, self.plan.units_for(f.number)) {
            // Elastic units: the ones loaded in filter memory.
            (Some(st), _) if !st.elastic().is_empty() => UnitSelection::Loaded(st.elastic()),
            (_, UnitChoice::All) => UnitSelection::All,
            (_, UnitChoice::Skip) => UnitSelection::None,
        };
        let (covering, out) = self.inner.with_table(f, state, |table| {
            // Most tables hold no range tombstone: no trailer decode, no search for them.
            let covering = if table.range_dels().is_empty() {
                0
            } else {
                table.range_del_covering(self.lookup.user_key(), self.lookup.seqno())
            };
            Ok((covering, table.lookup_into(self.lookup, units, value)?))
        })?;
        let probe = out.probe();
        self.sv.counters.record_probe(self.s, level, &probe);
        if let Some(state) = state {
            state.stats().record_probe(self.s, &probe);
            if let Some(g) = self.g {
                state.stats().record_merlin(g, &probe);
            }
        }
        Ok(match out.found {
            Some(found) if found.seqno >= covering => Some((found.kind, found.seqno)),
            Some(_) => Some((ValueKind::Delete, covering)),
            None => (covering > 0).then_some((ValueKind::Delete, covering)),
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
