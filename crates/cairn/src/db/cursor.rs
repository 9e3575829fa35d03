//! One direction of a user-level read: a merging iterator over a pinned super-version,
//! filtered to the newest version of each key visible at the read's sequence number, without
//! tombstones (point and range), expired values or unresolved merge operands, within bounds.
//! `Range` (`iter.rs`) drives one cursor per end.

use super::inner::{DbInner, SuperVersion};
use super::range_filter::{self, MaybeLog};
use crate::error::Result;
use crate::format::ikey::{self, InternalKey, ValueKind, MAX_SEQNO};
use crate::iter::{BoxedIter, InternalIterator, KeyBounds, MergingIter};
use crate::merge::MergeOperator;
use crate::range_del::Fragments;
use crate::sst::LevelIter;
use crate::sst::{IterOptions, SeekRuns};
use std::ops::Bound;
use std::sync::Arc;

pub(super) type Item = Result<(Vec<u8>, Vec<u8>)>;
/// A step's result: where the entry is, `None` past the end.
pub(super) type Step = Option<Result<At>>;

pub(super) struct Cursor {
    it: MergingIter,
    seq: u64,
    _sv: Arc<SuperVersion>,
    started: bool,
    /// Reused copy of the user key being skipped (stepping must not allocate per entry).
    skip: Vec<u8>,
    /// Walking backwards: the newest visible value seen so far of the current user key; the
    /// value of an entry found [`At::Buffered`].
    value: Vec<u8>,
    /// The key of an entry found [`At::Buffered`].
    key: Vec<u8>,
    /// The range tombstones of the sources (`None`: none), or the error reading them
    /// (reported by the first step).
    range_dels: Result<Option<Arc<Fragments>>>,
    /// The merge operator, for merge operands.
    merge: Option<Arc<dyn MergeOperator>>,
    /// Walking forward: the cursor already stands past the user key it last returned (a merge
    /// read its older versions).
    past: bool,
    /// Where the last key asked about fell among the range tombstones' fragments.
    rd_hint: std::cell::Cell<usize>,
    /// Per child of `it`, the largest sequence number it may hold (`u64::MAX`: unknown): a
    /// child whose entries are all older than a range tombstone skips the tombstone's range.
    max_seqs: Vec<u64>,
    /// Expiring values are judged by this clock, read for each one met.
    clock: Arc<dyn crate::ttl::Clock>,
}

pub(super) fn cursor(
    inner: &Arc<DbInner>,
    tree: u32,
    sv: &Arc<SuperVersion>,
    seq: u64,
    bounds: &KeyBounds,
    log: Option<&Arc<MaybeLog>>,
    forward: bool,
) -> Cursor {
    let sv = sv.clone();
    let mut children = crate::memtable::level::children(&sv.mems, bounds);
    // Memtables are newest and small: never skipped.
    let mut max_seqs = vec![u64::MAX; children.len()];
    let (memtables, mut l0_runs, mut levels) = (children.len(), 0, 0);
    let newest = |files: &[Arc<crate::version::FileMeta>]| files.iter().map(|f| f.largest_seqno).max().unwrap_or(0);
    if let Some(tv) = sv.version.trees.get(tree as usize) {
        let (i, counters) = (inner.clone(), sv.counters.clone());
        let open: crate::sst::TableOpener = Arc::new(move |f| {
            counters.record_scan_table(crate::stats::stripe::Stripe::current());
            i.open_table(f)
        });
        let limits = range_filter::probe_limits(inner);
        // Every table is read through a bounded level iterator: tables whose key range misses
        // the bounds are never opened, and the range filter is asked before any other. Each L0
        // group is a level of its own.
        let bounded = |files: Vec<Arc<crate::version::FileMeta>>, level: usize| -> BoxedIter {
            // Forward seeks read ahead as far as the level's recent seeks went on reading.
            let opts = IterOptions {
                seek_ahead: sv.counters.seek_ahead(level),
                seek_runs: Some(SeekRuns {
                    counters: sv.counters.clone(),
                    level,
                }),
                ..IterOptions::default()
            };
            Box::new(LevelIter::bounded(
                files,
                open.clone(),
                opts,
                bounds.clone(),
                log.map(|log| range_filter::table_skip(sv.clone(), tree as usize, level, forward, limits, log.clone())),
            ))
        };
        for run in crate::version::l0_sorted_runs(tv.level(0)) {
            if run
                .iter()
                .any(|f| bounds.overlaps(f.smallest_user_key(), f.largest_user_key()))
            {
                max_seqs.push(newest(&run));
                children.push(bounded(run, 0));
                l0_runs += 1;
            }
        }
        for level in 1..tv.levels.len() {
            if !tv.level(level).is_empty() {
                max_seqs.push(newest(tv.level(level)));
                children.push(bounded(tv.level(level).to_vec(), level));
                levels += 1;
            }
        }
    }
    sv.counters
        .record_scan_seek(crate::stats::stripe::Stripe::current(), memtables, l0_runs, levels);
    Cursor {
        it: MergingIter::new(children),
        seq,
        range_dels: range_dels(inner, &sv, bounds),
        merge: inner.opts.merge_operator.clone(),
        past: false,
        rd_hint: std::cell::Cell::new(0),
        max_seqs,
        clock: inner.opts.clock.clone(),
        _sv: sv,
        started: false,
        skip: Vec::new(),
        value: Vec::new(),
        key: Vec::new(),
    }
}

/// Where a step left the entry it found ([`Cursor::entry`]).
#[derive(Debug, Clone, Copy)]
pub(super) enum At {
    /// Under the merging iterator: its user key, and its value from this offset on (past an
    /// expiring value's deadline).
    Iter(usize),
    /// In the cursor's `key` and `value` buffers (a merged value; any entry walking backwards).
    Buffered,
}

/// The range tombstones of the memtables and of the tables overlapping `bounds` (only tables
/// the manifest says hold some are opened for them), fragmented together. They are gathered
/// apart from the entries: a table a range filter lets the read skip still deletes.
fn range_dels(inner: &DbInner, sv: &SuperVersion, bounds: &KeyBounds) -> Result<Option<Arc<Fragments>>> {
    let mut lists: Vec<Arc<Fragments>> = sv.mems.iter().filter_map(|m| m.range_dels()).collect();
    for f in &sv.range_del_files {
        if bounds.overlaps(f.smallest_user_key(), f.largest_user_key()) {
            lists.push(inner.open_table(f)?.range_dels().clone());
        }
    }
    Ok(Fragments::union(lists))
}

fn past_hi(uk: &[u8], hi: &Bound<Vec<u8>>) -> bool {
    match hi {
        Bound::Included(h) => uk > h.as_slice(),
        Bound::Excluded(h) => uk >= h.as_slice(),
        Bound::Unbounded => false,
    }
}

fn before_lo(uk: &[u8], lo: &Bound<Vec<u8>>) -> bool {
    match lo {
        Bound::Included(l) => uk < l.as_slice(),
        Bound::Excluded(l) => uk <= l.as_slice(),
        Bound::Unbounded => false,
    }
}

/// Whether child `i` of a cursor holds only entries older than sequence number `t`.
fn older_than(max_seqs: &[u64], t: u64) -> impl Fn(usize) -> bool + '_ {
    move |i| max_seqs.get(i).is_some_and(|&m| m < t)
}

/// Versions of one user key stepped over one by one before a cursor seeks past the rest
/// (RocksDB's `max_sequential_skip_in_iterations`): a hot key overwritten thousands of times
/// costs one seek instead of thousands of steps.
const MAX_SEQUENTIAL_SKIPS: usize = 8;

impl Cursor {
    /// Whether a range tombstone the read sees deletes version `seq` of `uk`.
    fn range_deleted(&self, uk: &[u8], seq: u64) -> bool {
        let Ok(Some(r)) = &self.range_dels else {
            return false;
        };
        let mut hint = self.rd_hint.get();
        let covered = r.covering_near(uk, self.seq, &mut hint) > seq;
        self.rd_hint.set(hint);
        covered
    }

    /// The cursor stands on version `seq` of `uk`, which a range tombstone deletes: moves every
    /// source whose entries are all older than the tombstone past its range (its other side,
    /// walking backwards), so a deleted range costs a seek per source instead of a step per
    /// entry. False when no source moved (the caller steps).
    fn skip_deleted_range(&mut self, uk: &[u8], forward: bool) -> bool {
        let Ok(Some(rd)) = &self.range_dels else {
            return false;
        };
        let Some((bound, t)) = rd.covered_run(uk, self.seq, forward) else {
            return false;
        };
        let target = InternalKey::for_seek(bound, MAX_SEQNO);
        self.it.skip_children(target.encoded(), older_than(&self.max_seqs, t))
    }

    /// Seeks forward to `k`; when range tombstones cover the keys from `k` on, the sources all
    /// older than them seek straight past the covered run.
    fn seek_from(&mut self, k: &[u8]) {
        let target = InternalKey::for_seek(k, MAX_SEQNO);
        let run = match &self.range_dels {
            Ok(Some(rd)) => rd
                .covered_run(k, self.seq, true)
                .map(|(bound, t)| (InternalKey::for_seek(bound, MAX_SEQNO), t)),
            _ => None,
        };
        match run {
            Some((far, t)) => {
                self.it
                    .seek_past(target.encoded(), far.encoded(), older_than(&self.max_seqs, t));
            }
            None => self.it.seek(target.encoded()),
        }
    }

    /// Seeks backward to `target`, the last internal key of the range ending at user key `k`
    /// (`included` or not); when range tombstones cover the keys just below it, the sources all
    /// older than them go straight before the covered run.
    fn seek_back_from(&mut self, target: InternalKey, k: &[u8], included: bool) {
        let run = match &self.range_dels {
            Ok(Some(rd)) if included => rd.covered_run(k, self.seq, false),
            Ok(Some(rd)) => rd.covered_run_below(k, self.seq),
            _ => None,
        }
        .map(|(bound, t)| (InternalKey::for_seek(bound, MAX_SEQNO), t));
        match run {
            Some((far, t)) => {
                self.it
                    .seek_for_prev_past(target.encoded(), far.encoded(), older_than(&self.max_seqs, t));
            }
            None => self.it.seek_for_prev(target.encoded()),
        }
    }

    /// The error gathering the range tombstones, once.
    pub(super) fn take_error(&mut self) -> Option<crate::Error> {
        match std::mem::replace(&mut self.range_dels, Ok(None)) {
            Err(e) => Some(e),
            ok => {
                self.range_dels = ok;
                None
            }
        }
    }

    /// The value of `uk` whose newest visible version, where the cursor stands, is a merge
    /// operand: the operands down to a value, a deletion, a range tombstone or the last
    /// version, combined by the merge operator. Leaves the cursor inside or past `uk`'s
    /// versions.
    fn merged_value(&mut self, uk: &[u8]) -> Result<Vec<u8>> {
        let Some(op) = self.merge.clone() else {
            return Err(crate::merge::missing_operator(uk));
        };
        let mut operands = crate::merge::Operands::default();
        let mut base = None;
        while self.it.valid() {
            let Some((k, s, kind)) = ikey::split(self.it.key()) else {
                break;
            };
            if k != uk || self.range_deleted(uk, s) {
                break;
            }
            match kind {
                ValueKind::Merge => operands.push(self.it.value()),
                ValueKind::Put => {
                    base = Some(self.it.value().to_vec());
                    break;
                }
                ValueKind::Expiring => {
                    base = crate::ttl::live(self.it.value(), self.clock.now_ms()).map(<[u8]>::to_vec);
                    break;
                }
                _ => break,
            }
            self.it.next();
        }
        self.it.status()?;
        operands.resolve(&*op, uk, base.as_deref())
    }

    /// Steps past every version of the current entry's user key.
    fn skip_current_user_key(&mut self) {
        let mut uk = std::mem::take(&mut self.skip);
        uk.clear();
        uk.extend_from_slice(ikey::user_key(self.it.key()));
        self.skip_user_key(&uk);
        self.skip = uk;
    }

    fn skip_user_key(&mut self, uk: &[u8]) {
        let mut steps = 0;
        while self.it.valid() && ikey::user_key(self.it.key()) == uk {
            steps += 1;
            if steps == MAX_SEQUENTIAL_SKIPS {
                // (uk, seqno 0, kind 0) is the last internal key `uk` can have.
                self.it.seek(InternalKey::new(uk, 0, ValueKind::Delete).encoded());
            } else {
                self.it.next();
            }
        }
    }

    /// The entry a step found, borrowed until the next step.
    pub(super) fn entry(&self, at: At) -> (&[u8], &[u8]) {
        match at {
            At::Iter(skip) => (
                ikey::user_key(self.it.key()),
                self.it.value().get(skip..).unwrap_or_default(),
            ),
            At::Buffered => (&self.key, &self.value),
        }
    }

    /// The entry a step found, the cursor's own (a buffered one is moved out, not copied).
    pub(super) fn take(&mut self, at: At) -> (Vec<u8>, Vec<u8>) {
        match at {
            At::Iter(_) => {
                let (k, v) = self.entry(at);
                (k.to_vec(), v.to_vec())
            }
            At::Buffered => (std::mem::take(&mut self.key), std::mem::take(&mut self.value)),
        }
    }

    pub(super) fn forward(&mut self, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> Step {
        if !self.started {
            self.started = true;
            if let Some(e) = self.take_error() {
                return Some(Err(e));
            }
            match lo {
                Bound::Included(k) | Bound::Excluded(k) => self.seek_from(k),
                Bound::Unbounded => self.it.seek_to_first(),
            }
        } else if self.it.valid() && !self.past {
            self.skip_current_user_key();
        }
        self.past = false;
        loop {
            if !self.it.valid() {
                return self.it.status().err().map(Err);
            }
            let Some((uk, s, kind)) = ikey::split(self.it.key()) else {
                return Some(Err(crate::Error::corruption(
                    "",
                    0,
                    "malformed internal key in iteration",
                )));
            };
            if past_hi(uk, hi) {
                return None;
            }
            if before_lo(uk, lo) || s > self.seq {
                self.it.next();
                continue;
            }
            // The newest visible version of `uk`.
            if self.range_deleted(uk, s) {
                let uk = uk.to_vec();
                if !self.skip_deleted_range(&uk, true) {
                    self.skip_current_user_key();
                }
                continue;
            }
            match kind {
                ValueKind::Put => return Some(Ok(At::Iter(0))),
                ValueKind::Expiring => match crate::ttl::live(self.it.value(), self.clock.now_ms()) {
                    Some(_) => return Some(Ok(At::Iter(crate::ttl::DEADLINE_LEN))),
                    None => self.skip_current_user_key(),
                },
                ValueKind::Merge => {
                    let mut key = std::mem::take(&mut self.key);
                    key.clear();
                    key.extend_from_slice(uk);
                    let value = match self.merged_value(&key) {
                        Ok(v) => v,
                        Err(e) => return Some(Err(e)),
                    };
                    self.skip_user_key(&key);
                    self.past = true;
                    (self.key, self.value) = (key, value);
                    return Some(Ok(At::Buffered));
                }
                _ => self.skip_current_user_key(),
            }
        }
    }

    /// Many versions of `uk` met walking backwards: seek to its newest visible version (its
    /// value into `self.value`), then to just before its first version, instead of stepping
    /// over each.
    fn newest_visible_by_seek(&mut self, uk: &[u8]) -> Option<(ValueKind, u64)> {
        self.it.seek(InternalKey::for_seek(uk, self.seq).encoded());
        let newest = match self.it.valid().then(|| ikey::split(self.it.key())).flatten() {
            Some((k, s, kind)) if k == uk => {
                self.value.clear();
                self.value.extend_from_slice(self.it.value());
                Some((kind, s))
            }
            _ => None,
        };
        self.stand_before(uk);
        newest
    }

    /// Walking backwards: moves to the entry just before `uk`'s first version.
    fn stand_before(&mut self, uk: &[u8]) {
        // The first internal key of `uk` is (uk, MAX_SEQNO); step to the entry before it.
        self.it.seek_for_prev(InternalKey::for_seek(uk, MAX_SEQNO).encoded());
        while self.it.valid() && ikey::user_key(self.it.key()) == uk {
            self.it.prev();
        }
    }

    pub(super) fn backward(&mut self, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> Step {
        if !self.started {
            self.started = true;
            if let Some(e) = self.take_error() {
                return Some(Err(e));
            }
            match hi {
                // The last internal key of user key k is (k, seqno 0, kind 0).
                Bound::Included(k) => self.seek_back_from(InternalKey::new(k, 0, ValueKind::Delete), k, true),
                Bound::Excluded(k) => self.seek_back_from(InternalKey::for_seek(k, MAX_SEQNO), k, false),
                Bound::Unbounded => self.it.seek_to_last(),
            }
        }
        loop {
            if !self.it.valid() {
                return self.it.status().err().map(Err);
            }
            // The key buffer is reused: walking backwards allocates nothing per entry.
            let mut uk = std::mem::take(&mut self.key);
            uk.clear();
            uk.extend_from_slice(ikey::user_key(self.it.key()));
            let step = self.back_over(&uk, lo, hi);
            self.key = uk;
            if let Some(step) = step {
                return step;
            }
        }
    }

    /// Walking backwards, over the versions of `uk` (where the cursor stands): the step's
    /// result, its value in `self.value`, or `None` to go on with the key before.
    fn back_over(&mut self, uk: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> Option<Step> {
        if before_lo(uk, lo) {
            return Some(None);
        }
        // Walking backwards, versions of `uk` come oldest first: the last visible one seen is
        // the newest visible (its value is kept in `self.value`).
        let mut newest: Option<(ValueKind, u64)> = None;
        let mut steps = 0;
        while self.it.valid() && ikey::user_key(self.it.key()) == uk {
            steps += 1;
            if steps == MAX_SEQUENTIAL_SKIPS {
                newest = self.newest_visible_by_seek(uk);
                break;
            }
            if let Some((_, s, kind)) = ikey::split(self.it.key()) {
                if s <= self.seq {
                    self.value.clear();
                    self.value.extend_from_slice(self.it.value());
                    newest = Some((kind, s));
                }
            }
            self.it.prev();
        }
        if let Err(e) = self.it.status() {
            return Some(Some(Err(e)));
        }
        if newest.is_some_and(|(_, s)| self.range_deleted(uk, s)) {
            // The sources older than the tombstone skip to before its range.
            self.skip_deleted_range(uk, false);
            return None;
        }
        match newest {
            Some((ValueKind::Put, _)) if !past_hi(uk, hi) => Some(Some(Ok(At::Buffered))),
            Some((ValueKind::Expiring, _))
                if !past_hi(uk, hi) && crate::ttl::strip_if_live(&mut self.value, self.clock.now_ms()) =>
            {
                Some(Some(Ok(At::Buffered)))
            }
            Some((ValueKind::Merge, _)) if !past_hi(uk, hi) => {
                // The operands sit after the newest one in key order: read them forward, then
                // stand before `uk` again.
                self.it.seek(InternalKey::for_seek(uk, self.seq).encoded());
                let value = self.merged_value(uk);
                self.stand_before(uk);
                Some(Some(value.map(|v| {
                    self.value = v;
                    At::Buffered
                })))
            }
            _ => None,
        }
    }
}
