//! One tree's memory component. Everything the engine asks of a tree's write memory goes
//! through this type, in one of two shapes:
//!
//! - **Monolithic** (default): the active memtable and the immutable ones waiting to be
//!   flushed whole, oldest first.
//! - **Partitioned** (Luo & Carey §4.1): the active memtable; switched memtables waiting to be
//!   merged (`pending`, still skiplists); and memory levels M1.. of immutable sorted runs
//!   (memory SSTables), disjoint within a level, sized from the bottom: the deepest holds the
//!   rest of the component's memory, each level above `ratio` times less, M1 at least one run;
//!   a level over its size has one run merged into the next. Flushes
//!   take runs, not whole memtables: one run of the deepest level (memory-triggered, round-robin
//!   by key), the run holding the oldest WAL data with the deeper runs it overlaps
//!   (log-triggered), or everything (a full flush).
//!
//! Invariant (what makes reads stop at the first hit): for every key, data in memory is newer
//! than data on disk, pending memtables are newer than every level, and a shallower level is
//! newer than a deeper one. So a run may be flushed only together with every deeper run that
//! overlaps it, and a merge never takes a run chosen for a flush.

use super::run::{build_runs, merge_runs, MergeScratch, SortedRun};
use super::Memtable;
use crate::compaction::iter::Retention;
use crate::tuning::flush;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Why a flush was chosen (in the order of [`Flushes`](crate::stats::Flushes)' fields: `kind as
/// usize` indexes the counters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlushKind {
    /// A whole memtable of a monolithic component.
    Whole,
    /// One run of the deepest memory level, for memory (partial flush).
    Partial,
    /// The oldest WAL data and the deeper runs overlapping it, for log truncation.
    Log,
    /// Every run and pending memtable.
    Full,
}

/// Memory to write to L0 in one flush: disjoint from the rest of memory in the sense above.
#[derive(Debug, Clone)]
pub(crate) struct FlushJob {
    /// Runs (or memtables) to merge into the flushed tables.
    pub runs: Vec<Arc<Memtable>>,
    pub kind: FlushKind,
}

impl FlushJob {
    /// Bytes of memory the flush frees.
    pub fn bytes(&self) -> usize {
        self.runs.iter().map(|m| m.approximate_bytes()).sum()
    }
}

/// One step of a memory merge of run (or pending memtable) `upper` into memory level
/// `output_level`: `upper`'s entries in `[lo, hi)` with `lower`, the one run of the output level
/// in that range. A merge goes step by step, one run of the output level at a time, so the
/// memory it adds at once is one run's worth, not the whole overlap; `upper` stays readable
/// until the last step (its entries already merged are then in memory twice, which reads
/// cannot tell apart: same sequence numbers, same values).
#[derive(Debug, Clone)]
pub(crate) struct MergeJob {
    pub upper: Arc<Memtable>,
    pub lower: Option<Arc<Memtable>>,
    pub lo: Option<Vec<u8>>,
    pub hi: Option<Vec<u8>>,
    /// Index into the memory levels (0 = M1).
    pub output_level: usize,
    /// The last step: `upper` goes when it is installed.
    pub last: bool,
}

impl MergeJob {
    /// Builds the step's output runs, cut at `target` bytes, dropping what `filter` drops
    /// (`scratch`: where their bytes are charged while they are built). The usual step — a run
    /// into a run — merges by galloping over the lower run ([`merge_runs`]).
    pub fn build(
        &self,
        filter: &mut Retention<'_>,
        target: usize,
        scratch: &MergeScratch,
    ) -> crate::error::Result<Vec<SortedRun>> {
        use crate::iter::BoxedIter;
        let mut upper = crate::compaction::job::RangeIter::new(self.upper.iter(), self.lo.clone(), self.hi.clone());
        match self.lower.as_ref() {
            None => build_runs(&mut upper, filter, target, scratch),
            Some(lower) => match lower.as_run() {
                Some(run) => merge_runs(&mut upper, run, filter, target, scratch),
                // Levels hold merge outputs, so this is not reached today; a skiplist below
                // would still merge correctly, through a merging iterator.
                None => {
                    let children: Vec<BoxedIter> = vec![Box::new(upper), Box::new(lower.iter())];
                    build_runs(&mut crate::iter::MergingIter::new(children), filter, target, scratch)
                }
            },
        }
    }

    /// The inputs' memtables.
    pub fn inputs(&self) -> impl Iterator<Item = &Arc<Memtable>> {
        std::iter::once(&self.upper).chain(self.lower.iter())
    }
}

#[derive(Debug)]
struct Partition {
    /// Size ratio between memory levels.
    ratio: usize,
    /// M1.., each sorted by smallest key.
    levels: Vec<Vec<Arc<Memtable>>>,
    /// Chosen for flushes, in the order the flush thread writes them.
    flushes: VecDeque<FlushJob>,
    /// Inputs of the running merge step.
    merging: Vec<Arc<Memtable>>,
    /// A merge between steps: its upper input, output level and where the next step starts.
    chunked: Option<(Arc<Memtable>, usize, Option<Vec<u8>>)>,
    /// Largest user key of the last run flushed for memory (round-robin position).
    cursor: Option<Vec<u8>>,
    /// Bytes flushed for memory, with the WAL current when they were chosen (the β window).
    partial: VecDeque<(u64, usize)>,
    /// Runs being built by the running merge, and pages kept for the next (charged to write
    /// memory).
    scratch: Arc<MergeScratch>,
}

impl Partition {
    /// Chosen for a flush.
    fn chosen(&self, m: &Arc<Memtable>) -> bool {
        self.flushes.iter().any(|f| contains(&f.runs, m))
    }

    /// Held by a merge (its running step, or its upper input between steps).
    fn busy(&self, m: &Arc<Memtable>) -> bool {
        contains(&self.merging, m) || self.chunked.as_ref().is_some_and(|(u, _, _)| Arc::ptr_eq(u, m))
    }
}

/// The memtables of one tree.
#[derive(Debug)]
pub(crate) struct MemComponent {
    active: Arc<Memtable>,
    /// Monolithic: waiting to be flushed; partitioned: waiting to be merged into M1. Oldest
    /// first.
    immutable: VecDeque<Arc<Memtable>>,
    part: Option<Partition>,
}

impl Default for MemComponent {
    fn default() -> Self {
        Self::new()
    }
}

/// A user-key range `[smallest, largest]`.
type KeyRange = (Vec<u8>, Vec<u8>);
/// Memtables or runs of one tier with their ranges.
type Tier = Vec<(Arc<Memtable>, KeyRange)>;

fn contains(list: &[Arc<Memtable>], m: &Arc<Memtable>) -> bool {
    list.iter().any(|x| Arc::ptr_eq(x, m))
}

impl Partition {
    /// No memory levels yet, levels `ratio` apart.
    fn new(ratio: usize) -> Self {
        Partition {
            ratio: ratio.max(2),
            levels: Vec::new(),
            flushes: VecDeque::new(),
            merging: Vec::new(),
            chunked: None,
            cursor: None,
            partial: VecDeque::new(),
            scratch: Arc::default(),
        }
    }
}

/// Whether user-key ranges `[lo, hi]` overlap.
fn overlaps((alo, ahi): (&[u8], &[u8]), (blo, bhi): (&[u8], &[u8])) -> bool {
    alo <= bhi && blo <= ahi
}

impl MemComponent {
    /// An empty monolithic component.
    pub fn new() -> Self {
        MemComponent {
            active: Arc::new(Memtable::new()),
            immutable: VecDeque::new(),
            part: None,
        }
    }

    /// An empty component of `shape` (a partitioned one's memory levels `ratio` apart), its
    /// memtable filtered for `filtered_for` bytes (see [`filter_target`](super::filter_target)).
    pub fn shaped(shape: MemoryComponent, ratio: usize, filtered_for: usize) -> Self {
        MemComponent {
            active: Arc::new(Memtable::with_filter(filtered_for)),
            immutable: VecDeque::new(),
            part: (shape == MemoryComponent::Partitioned).then(|| Partition::new(ratio)),
        }
    }

    /// An empty partitioned component with memory levels `ratio` apart.
    #[cfg(test)]
    pub fn partitioned(ratio: usize) -> Self {
        MemComponent {
            part: Some(Partition::new(ratio)),
            ..Self::new()
        }
    }

    /// Whether memory levels are kept (partitioned).
    pub fn is_partitioned(&self) -> bool {
        self.part.is_some()
    }

    /// The memtable writes go to.
    pub fn active(&self) -> &Arc<Memtable> {
        &self.active
    }

    /// Makes the active memtable immutable and starts an empty one, its filter sized by
    /// [`filter_target`](super::filter_target) from what the switched one held (`0` for
    /// `write_buffer_size`: no filter); false (and nothing done) when the active memtable is
    /// empty. (Partitioned: it waits for a merge into M1.)
    pub fn switch(&mut self, write_buffer_size: usize, share: usize) -> bool {
        if self.active.is_empty() {
            return false;
        }
        let next = super::filter_target(self.active.entry_bytes(), write_buffer_size, share);
        let full = std::mem::replace(&mut self.active, Arc::new(Memtable::with_filter(next)));
        self.immutable.push_back(full);
        true
    }

    /// The next flush to write.
    pub fn next_flush(&self) -> Option<FlushJob> {
        match &self.part {
            None => self.immutable.front().map(|m| FlushJob {
                runs: vec![m.clone()],
                kind: FlushKind::Whole,
            }),
            Some(p) => p.flushes.front().cloned(),
        }
    }

    /// Whether a flush waits to be written.
    pub fn has_flush(&self) -> bool {
        match &self.part {
            None => !self.immutable.is_empty(),
            Some(p) => !p.flushes.is_empty(),
        }
    }

    /// Partitioned: whether a switched memtable waits for its merge into M1.
    pub fn merge_waiting(&self) -> bool {
        self.part.is_some() && !self.immutable.is_empty()
    }

    /// Whether anything but the active memtable holds data (what an explicit flush waits for).
    pub fn holds_unflushed(&self) -> bool {
        !self.immutable.is_empty() || self.part.as_ref().is_some_and(|p| p.levels.iter().any(|l| !l.is_empty()))
    }

    /// The flush `job` (the front one) is durable: drop its memory.
    pub fn flushed(&mut self, job: &FlushJob) {
        match &mut self.part {
            None => {
                if self.immutable.front().is_some_and(|m| Arc::ptr_eq(m, &job.runs[0])) {
                    self.immutable.pop_front();
                }
            }
            Some(p) => {
                p.flushes.pop_front();
                for l in &mut p.levels {
                    l.retain(|r| !contains(&job.runs, r));
                }
                while p.levels.last().is_some_and(|l| l.is_empty()) {
                    p.levels.pop();
                }
                if p.levels.is_empty() {
                    // No runs left to merge: no pages kept for merges either.
                    p.scratch.spare.set_open(false);
                }
                self.immutable.retain(|m| !contains(&job.runs, m));
            }
        }
    }

    /// Bytes of every memtable and run, and of the runs a running merge has built.
    pub fn bytes(&self) -> usize {
        self.active_bytes() + self.immutable.iter().map(|m| m.approximate_bytes()).sum::<usize>() + self.level_bytes()
    }

    fn level_bytes(&self) -> usize {
        self.part.as_ref().map_or(0, |p| {
            p.levels.iter().flatten().map(|m| m.approximate_bytes()).sum::<usize>()
                + p.scratch.bytes()
        })
    }

    /// Bytes of the active memtable.
    pub fn active_bytes(&self) -> usize {
        self.active.approximate_bytes()
    }

    /// Bytes chosen to be flushed (their memory is on its way out).
    pub fn immutable_bytes(&self) -> usize {
        match &self.part {
            None => self.immutable.iter().map(|m| m.approximate_bytes()).sum(),
            Some(p) => p.flushes.iter().map(FlushJob::bytes).sum(),
        }
    }

    /// Partitioned: bytes kept in memory outside the active memtable and not chosen for a
    /// flush (memory a flush can still free). 0 when monolithic.
    pub fn retained_bytes(&self) -> usize {
        match &self.part {
            None => 0,
            Some(p) => self.bytes() - self.active_bytes() - self.immutable_bytes() - p.scratch.spare.bytes(),
        }
    }

    /// The oldest WAL holding data of a memtable or run not in `except` (what is being flushed):
    /// the WAL recovery would have to start from for this tree once `except` is in tables.
    /// `None` when no such memtable holds data.
    pub fn oldest_wal(&self, except: &[Arc<Memtable>]) -> Option<u64> {
        self.oldest_wal_where(|m| !contains(except, m))
    }

    /// The oldest WAL holding data not yet chosen for a flush.
    pub fn oldest_unflushed_wal(&self) -> Option<u64> {
        match &self.part {
            None => self.oldest_wal_where(|m| Arc::ptr_eq(m, &self.active)),
            Some(p) => self.oldest_wal_where(|m| !p.chosen(m)),
        }
    }

    fn oldest_wal_where(&self, keep: impl Fn(&Arc<Memtable>) -> bool) -> Option<u64> {
        self.all()
            .filter(|m| keep(m))
            .map(|m| m.first_wal())
            .min()
            .filter(|&w| w != u64::MAX)
    }

    fn all(&self) -> impl Iterator<Item = &Arc<Memtable>> {
        std::iter::once(&self.active)
            .chain(self.immutable.iter())
            .chain(self.part.iter().flat_map(|p| p.levels.iter().flatten()))
    }

    /// What a reader pins: every memtable and run, newest first (within a level, by key).
    pub fn read_view(&self) -> Vec<Arc<Memtable>> {
        std::iter::once(self.active.clone())
            .chain(self.immutable.iter().rev().cloned())
            .chain(self.part.iter().flat_map(|p| p.levels.iter().flatten().cloned()))
            .collect()
    }

    /// The memory-triggered flush of a partitioned component: one run of the deepest level
    /// holding a run that may go (round-robin by key), or the oldest pending memtable when no
    /// level holds data. False when nothing may go now (a merge holds it) or monolithic.
    pub fn choose_partial_flush(&mut self, wal: u64) -> bool {
        let tiers = self.tiers();
        let Some(p) = self.part.as_mut() else {
            return false;
        };
        let Some((ti, i)) = flush::partial(&view(p, &tiers), p.cursor.as_deref()) else {
            return false;
        };
        let (run, range) = &tiers[ti][i];
        p.cursor = Some(range.1.clone());
        p.partial.push_back((wal, run.approximate_bytes()));
        p.flushes.push_back(FlushJob {
            runs: vec![run.clone()],
            kind: FlushKind::Partial,
        });
        true
    }

    /// The log-triggered flush of a partitioned component (`oldest_live_wal`: the oldest WAL on
    /// disk; `beta`: Luo & Carey's threshold): a full flush unless more than `beta` of this
    /// component's memory was flushed for memory since that WAL was written, else the run
    /// holding the oldest WAL data and every deeper run overlapping it. False when nothing may
    /// go now.
    pub fn choose_log_flush(&mut self, oldest_live_wal: u64, beta: f64) -> bool {
        let total = self.bytes();
        let tiers = self.tiers();
        let Some(p) = self.part.as_mut() else {
            return false;
        };
        while p.partial.front().is_some_and(|&(w, _)| w < oldest_live_wal) {
            p.partial.pop_front();
        }
        let recent: usize = p.partial.iter().map(|&(_, b)| b).sum();
        match flush::log(&view(p, &tiers), recent, total, beta) {
            flush::LogChoice::Full => self.choose_full_flush(),
            flush::LogChoice::Nothing => false,
            flush::LogChoice::Runs(ids) => {
                p.flushes.push_back(FlushJob {
                    runs: ids.iter().map(|&(t, i)| tiers[t][i].0.clone()).collect(),
                    kind: FlushKind::Log,
                });
                true
            }
        }
    }

    /// A full flush: every pending memtable and run not already chosen, when no merge runs.
    pub fn choose_full_flush(&mut self) -> bool {
        let everything: Vec<Arc<Memtable>> =
            self.immutable.iter().chain(self.part.iter().flat_map(|p| p.levels.iter().flatten())).cloned().collect();
        let Some(p) = self.part.as_mut() else {
            return false;
        };
        if !p.merging.is_empty() || p.chunked.is_some() {
            return false;
        }
        let runs: Vec<Arc<Memtable>> = everything
            .into_iter()
            .filter(|m| !p.flushes.iter().any(|f| contains(&f.runs, m)))
            .collect();
        if runs.is_empty() {
            return false;
        }
        p.flushes.push_back(FlushJob {
            runs,
            kind: FlushKind::Full,
        });
        true
    }

    /// Newest to oldest: each pending memtable alone (newest first), then M1, M2, … — with
    /// the user-key range of each element.
    fn tiers(&self) -> Vec<Tier> {
        let with_range = |m: &Arc<Memtable>| m.key_range().map(|r| (m.clone(), r));
        let mut t: Vec<Vec<_>> = self.immutable.iter().rev().filter_map(|m| with_range(m).map(|e| vec![e])).collect();
        if let Some(p) = &self.part {
            t.extend(p.levels.iter().map(|l| l.iter().filter_map(with_range).collect()));
        }
        t
    }

    /// The next memory merge step, if one is due and none runs (`run_size`: the size runs are
    /// cut at, the active memtable's switch size). A new merge takes one run of a level over
    /// its size ([`level_caps`]) into the next (the run whose overlap with it is smallest relative to
    /// its size; a run with nothing below it just moves), else the oldest pending memtable into
    /// M1. Runs chosen for a flush are left alone: a merge waits for them.
    ///
    /// A pending memtable holding range tombstones is never merged: runs are cut by key and
    /// flushed apart, and a tombstone must reach disk no later than the older data it covers.
    /// When it is the oldest pending one, everything is flushed instead (once no merge runs).
    pub fn next_merge(&mut self, run_size: usize) -> Option<MergeJob> {
        let front_deletes_ranges = self.immutable.front().is_some_and(|m| m.has_range_dels());
        // (A merge cut in steps finishes first.)
        if let Some(p) = self.part.as_ref().filter(|p| front_deletes_ranges && p.chunked.is_none()) {
            if !self.immutable.front().is_some_and(|m| p.chosen(m)) {
                self.choose_full_flush();
            }
            return None;
        }
        let total = self.bytes();
        let p = self.part.as_mut()?;
        if !p.merging.is_empty() {
            return None;
        }
        let chosen = |m: &Arc<Memtable>| p.chosen(m);
        let (upper, level, lo) = match p.chunked.clone() {
            Some(c) => c,
            None => {
                // An over-full level first: merging more into it would only make it fuller.
                let mut found = None;
                let caps = level_caps(total, run_size, p.ratio, p.levels.len());
                for (i, &cap) in caps.iter().enumerate() {
                    let bytes: usize = p.levels[i].iter().map(|m| m.approximate_bytes()).sum();
                    if bytes > cap {
                        let next = p.levels.get(i + 1).map_or(&[][..], |l| l.as_slice());
                        let best = p.levels[i]
                            .iter()
                            .filter(|m| !chosen(m))
                            .filter_map(|m| {
                                let under = overlapping(next, m.key_bounds()?);
                                let ratio = under.iter().map(|u| u.approximate_bytes()).sum::<usize>() as f64
                                    / m.approximate_bytes().max(1) as f64;
                                Some((ratio, m.clone(), under.is_empty()))
                            })
                            .min_by(|a, b| a.0.total_cmp(&b.0));
                        if let Some((_, m, alone)) = best {
                            found = Some((i, m, alone));
                            break;
                        }
                    }
                }
                match found {
                    Some((i, m, true)) => {
                        // Nothing below overlaps: move the run down without rewriting it.
                        p.levels[i].retain(|x| !Arc::ptr_eq(x, &m));
                        if p.levels.len() <= i + 1 {
                            p.levels.push(Vec::new());
                        }
                        insert_sorted(&mut p.levels[i + 1], m);
                        return self.next_merge(run_size);
                    }
                    Some((i, m, false)) => (m, i + 1, None),
                    None => (self.immutable.front().filter(|m| !chosen(m))?.clone(), 0, None),
                }
            }
        };
        // This step: the first run of the output level the rest of `upper` overlaps, up to the
        // start of the run after it.
        let (ulo, uhi) = upper.key_bounds()?;
        let from = lo.as_deref().unwrap_or(ulo);
        let targets: Vec<Arc<Memtable>> = p
            .levels
            .get(level)
            .map_or(Vec::new(), |l| overlapping(l, (from, uhi)));
        if targets.first().is_some_and(chosen) {
            return None;
        }
        let hi = targets.get(1).and_then(|next| next.key_range()).map(|r| r.0);
        let job = MergeJob {
            upper: upper.clone(),
            lower: targets.first().cloned(),
            lo,
            hi: hi.clone(),
            output_level: level,
            last: hi.is_none(),
        };
        p.merging = job.inputs().cloned().collect();
        p.chunked = (!job.last).then_some((upper, level, hi));
        p.scratch.spare.set_open(true);
        Some(job)
    }

    /// The bytes counter a running merge charges its outputs to.
    pub fn merge_scratch(&self) -> Option<Arc<MergeScratch>> {
        self.part.as_ref().map(|p| p.scratch.clone())
    }

    /// Installs a merge step's outputs (`None`: it failed; the merge is abandoned, its inputs
    /// stay).
    pub fn merged(&mut self, job: &MergeJob, outputs: Option<Vec<Arc<Memtable>>>) {
        let Some(p) = self.part.as_mut() else {
            return;
        };
        p.merging.clear();
        let Some(outputs) = outputs else {
            p.chunked = None;
            p.scratch.building.store(0, Ordering::Relaxed);
            return;
        };
        let out_bytes: usize = outputs.iter().map(|m| m.approximate_bytes()).sum();
        while p.levels.len() <= job.output_level {
            p.levels.push(Vec::new());
        }
        if let Some(lower) = &job.lower {
            p.levels[job.output_level].retain(|r| !Arc::ptr_eq(r, lower));
        }
        for m in outputs {
            insert_sorted(&mut p.levels[job.output_level], m);
        }
        if job.last {
            for l in &mut p.levels {
                l.retain(|r| !Arc::ptr_eq(r, &job.upper));
            }
            self.immutable.retain(|m| !Arc::ptr_eq(m, &job.upper));
        }
        let building = &p.scratch.building;
        building.fetch_sub(out_bytes.min(building.load(Ordering::Relaxed)), Ordering::Relaxed);
        while p.levels.last().is_some_and(|l| l.is_empty()) {
            p.levels.pop();
        }
    }

    /// Memory levels' run counts and bytes, M1 first.
    #[cfg(test)]
    pub fn levels(&self) -> Vec<(usize, usize)> {
        self.part.as_ref().map_or(Vec::new(), |p| {
            p.levels
                .iter()
                .map(|l| (l.len(), l.iter().map(|m| m.approximate_bytes()).sum()))
                .collect()
        })
    }
}

/// Capacities of `levels` memory levels holding `total` bytes: anchored at the bottom, as a
/// tree's levels are (the deepest holds the rest, each level above `ratio` times less, M1 at
/// least one run): so the deepest level, which memory-triggered flushes sweep, holds most of
/// memory, and a sweep — one L0 group — carries most of it.
fn level_caps(total: usize, run_size: usize, ratio: usize, levels: usize) -> Vec<usize> {
    let run = run_size.max(1);
    // Levels wanted: M1 holds at least a run.
    let mut want = 1usize;
    let mut above = total / ratio;
    while above >= run {
        want += 1;
        above /= ratio;
    }
    (0..levels)
        .map(|i| match (want - 1).checked_sub(i) {
            Some(0) | None => usize::MAX,
            Some(d) => (total / ratio.saturating_pow(d as u32)).max(run),
        })
        .collect()
}

/// Whether a deeper tier holds data overlapping `r` that is not already chosen for a flush.
/// The flush decider's view of `tiers` (`tuning::flush`).
fn view<'a>(p: &Partition, tiers: &'a [Tier]) -> Vec<Vec<flush::Run<'a>>> {
    tiers
        .iter()
        .map(|t| {
            t.iter()
                .map(|(m, r)| flush::Run {
                    lo: &r.0,
                    hi: &r.1,
                    first_wal: m.first_wal(),
                    chosen: p.chosen(m),
                    busy: p.busy(m),
                })
                .collect()
        })
        .collect()
}

fn overlapping(level: &[Arc<Memtable>], r: (&[u8], &[u8])) -> Vec<Arc<Memtable>> {
    level
        .iter()
        .filter(|m| m.key_bounds().is_some_and(|b| overlaps(b, r)))
        .cloned()
        .collect()
}

fn insert_sorted(level: &mut Vec<Arc<Memtable>>, m: Arc<Memtable>) {
    let lo = m.key_bounds().map_or(&[][..], |r| r.0);
    let at = level.partition_point(|x| x.key_bounds().is_some_and(|r| r.0 < lo));
    level.insert(at, m);
}


/// How a tree's write memory is organized (Luo & Carey §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryComponent {
    /// One active memtable; full memtables are flushed whole (RocksDB's).
    #[default]
    Monolithic,
    /// The active memtable plus memory levels of immutable sorted runs merged in memory,
    /// flushed a run at a time into grouped L0.
    Partitioned,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ikey::{self, LookupKey, ValueKind};
    use crate::iter::InternalIterator;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

    fn merge(c: &mut MemComponent, job: &MergeJob, run_size: usize) {
        let scratch = c.merge_scratch().unwrap();
        let mut keep = Retention::new(u64::MAX >> 8, |_| false);
        let runs = job.build(&mut keep, run_size, &scratch).unwrap();
        let wal = job.inputs().map(|m| m.first_wal()).min().unwrap();
        let runs = runs
            .into_iter()
            .map(|r| Arc::new(Memtable::from_run(r, wal, 0).recycled_into(scratch.clone())))
            .collect();
        c.merged(job, Some(runs));
        assert_eq!(scratch.building.load(Ordering::Relaxed), 0, "the outputs' charge moves into the levels");
    }

    #[test]
    fn levels_are_sized_from_the_bottom() {
        assert_eq!(level_caps(1600, 100, 10, 1), [160]);
        assert_eq!(level_caps(1600, 100, 10, 2), [160, usize::MAX]);
        assert_eq!(level_caps(160_000, 100, 10, 4), [160, 1600, 16_000, usize::MAX]);
        // Memory that shrank below its levels: the deeper ones take what comes.
        assert_eq!(level_caps(1600, 100, 10, 3), [160, usize::MAX, usize::MAX]);
        // Less than a run in all: one level.
        assert_eq!(level_caps(50, 100, 10, 1), [usize::MAX]);
    }

    /// Random writes, switches, merges and partial, log and full flushes against a model: a
    /// lookup through the read view (first hit wins) always finds the newest version; what is
    /// flushed is never newer than what stays in memory for the same key; the oldest WAL of
    /// what stays covers every entry that stays.
    #[test]
    fn partitioned_component_keeps_newest_first() {
        let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
        let mut deepest = 0;
        for seed in 0..24u64 {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut c = MemComponent::partitioned(rng.gen_range(2..5));
            let run_size = rng.gen_range(50..300);
            let mut newest: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
            let mut on_disk: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
            let mut wal_of: BTreeMap<u64, u64> = BTreeMap::new();
            let (mut seq, mut wal) = (0u64, 1u64);
            let mut merging: Option<MergeJob> = None;
            for step in 0..2000 {
                match rng.gen_range(0..100) {
                    0..=74 => {
                        seq += 1;
                        let k = format!("k{:03}", rng.gen_range(0..200)).into_bytes();
                        c.active().insert(&k, seq, ValueKind::Put, &seq.to_le_bytes(), wal);
                        newest.insert(k, seq);
                        wal_of.insert(seq, wal);
                    }
                    75..=79 => {
                        if c.switch(0, 0) {
                            wal += 1;
                        }
                    }
                    80..=91 => match merging.take() {
                        Some(job) => {
                            *kinds.entry(format!("merge into M{}", job.output_level + 1)).or_default() += 1;
                            merge(&mut c, &job, run_size);
                            deepest = deepest.max(c.levels().len());
                        }
                        None => merging = c.next_merge(run_size),
                    },
                    92..=93 if rng.gen_bool(0.3) => {
                        c.choose_partial_flush(wal);
                    }
                    94 if rng.gen_bool(0.5) => {
                        c.choose_log_flush(1, rng.gen_range(0.0..1.0));
                    }
                    95 if rng.gen_bool(0.2) => {
                        c.choose_full_flush();
                    }
                    _ => {
                        if let Some(job) = c.next_flush() {
                            *kinds.entry(format!("{:?} flush", job.kind)).or_default() += 1;
                            for m in &job.runs {
                                assert!(!merging.as_ref().is_some_and(|j| j.inputs().any(|i| Arc::ptr_eq(i, m))));
                                let mut it = m.iter();
                                it.seek_to_first();
                                while it.valid() {
                                    let (uk, s, _) = ikey::split(it.key()).unwrap();
                                    let d = on_disk.entry(uk.to_vec()).or_insert(0);
                                    *d = (*d).max(s);
                                    it.next();
                                }
                            }
                            c.flushed(&job);
                        }
                    }
                }
                if step % 7 != 0 {
                    continue;
                }
                // Reads: the first hit in the read view is the newest version, unless the
                // newest is on disk only.
                let view = c.read_view();
                let mut in_memory: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
                let mut oldest_wal_needed = u64::MAX;
                for m in &view {
                    let mut it = m.iter();
                    it.seek_to_first();
                    while it.valid() {
                        let (uk, s, _) = ikey::split(it.key()).unwrap();
                        let e = in_memory.entry(uk.to_vec()).or_insert(0);
                        *e = (*e).max(s);
                        oldest_wal_needed = oldest_wal_needed.min(wal_of[&s]);
                        it.next();
                    }
                }
                for (k, &s) in &newest {
                    let first_hit = view.iter().find_map(|m| m.lookup(&LookupKey::new(k, u64::MAX >> 8)));
                    match in_memory.get(k) {
                        Some(&m) => {
                            assert_eq!(m, s, "seed {seed}: memory holds the newest of {k:?}");
                            let (_, v) = first_hit.unwrap();
                            assert_eq!(v, s.to_le_bytes(), "seed {seed}: the first hit is the newest");
                            // Equal only for entries a merge step has copied down while
                            // their upper input is still in memory.
                            assert!(on_disk.get(k).is_none_or(|&d| d <= s), "seed {seed}: disk older than memory");
                        }
                        None => assert_eq!(on_disk.get(k), Some(&s), "seed {seed}: {k:?} lost"),
                    }
                }
                let chosen_or_not = c.oldest_wal(&[]);
                assert!(chosen_or_not.unwrap_or(u64::MAX) <= oldest_wal_needed, "seed {seed}: WAL released early");
                let used: usize = view.iter().map(|m| m.approximate_bytes()).sum();
                assert_eq!(c.bytes(), used, "seed {seed}: every byte charged");
            }
        }
        for k in ["merge into M1", "merge into M2", "Partial flush", "Log flush", "Full flush"] {
            assert!(kinds.get(k).is_some_and(|&n| n >= 5), "{k}: {kinds:?}");
        }
        assert!(deepest >= 3, "memory levels reached {deepest}");
    }

    /// The component as the test file shows it: the active memtable's range, the memtables
    /// waiting for a merge (oldest first), each memory level's runs, and the queued flushes.
    fn show(c: &MemComponent) -> String {
        let range = |m: &Arc<Memtable>| match m.key_bounds() {
            Some((lo, hi)) => format!("{}-{}", String::from_utf8_lossy(lo), String::from_utf8_lossy(hi)),
            None => "empty".into(),
        };
        let list = |ms: &mut dyn Iterator<Item = &Arc<Memtable>>| {
            let l = ms.map(range).collect::<Vec<_>>().join(" ");
            if l.is_empty() {
                "(none)".to_string()
            } else {
                l
            }
        };
        let mut o = format!("active: {}\n", range(&c.active));
        if !c.immutable.is_empty() {
            o.push_str(&format!("waiting: {}\n", list(&mut c.immutable.iter())));
        }
        if let Some(p) = &c.part {
            for (i, level) in p.levels.iter().enumerate() {
                o.push_str(&format!("M{}: {}\n", i + 1, list(&mut level.iter())));
            }
            for f in &p.flushes {
                o.push_str(&format!("queued {:?} flush: {}\n", f.kind, list(&mut f.runs.iter())));
            }
        }
        o
    }

    /// `testdata/memtable/component.txt`: a partitioned component driven step by step — puts,
    /// switches, merge steps, the flush choices and flushes — printing its shape after each.
    #[test]
    fn component_from_testdata() {
        let mut c = MemComponent::partitioned(2);
        let (mut seq, mut wal, mut run_size) = (0u64, 1u64, 100usize);
        crate::testutil::run_file("memtable/component.txt", |case| {
            match case.command.as_str() {
                "new" => {
                    c = MemComponent::partitioned(case.arg("ratio", 2));
                    run_size = case.arg("run", 100);
                    (seq, wal) = (0, 1);
                }
                "put" => {
                    for w in case.input.iter().flat_map(|l| l.split_whitespace()) {
                        seq += 1;
                        c.active().insert(w.as_bytes(), seq, ValueKind::Put, b"0123456789", wal);
                    }
                }
                "switch" => {
                    if c.switch(0, 0) {
                        wal += 1;
                    }
                }
                "merge" => {
                    // Every step of the merge due, to its end.
                    let mut steps = 0;
                    while let Some(job) = c.next_merge(run_size) {
                        merge(&mut c, &job, run_size);
                        steps += 1;
                        assert!(steps < 1000, "a merge that does not end");
                    }
                }
                "partial" => {
                    c.choose_partial_flush(wal);
                }
                "log" => {
                    c.choose_log_flush(case.arg("oldest", 1), case.arg("beta", 0.5));
                }
                "full" => {
                    c.choose_full_flush();
                }
                "flush" => {
                    if let Some(job) = c.next_flush() {
                        c.flushed(&job);
                    }
                }
                _ => case.unknown(),
            }
            show(&c)
        });
    }
}
