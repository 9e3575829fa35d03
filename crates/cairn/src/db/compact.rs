//! Compaction orchestration: a merge policy's decision (or a manual compaction's pick) becomes
//! a [`Job`]; moves and level growth are installed at once, merges run outside the state lock
//! (`compaction_run.rs`).

use super::compaction_run::Job;
use super::inner::{DbInner, State};
use crate::compaction::{pick_range, Choice, Decision, FileView, LevelView, LsmView};
use crate::error::{Error, Result};
use crate::version::{TreeVersion, VersionEdit};
use std::collections::HashSet;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use std::time::Duration;

impl Job {
    /// A job from a policy's or a manual pick; `None` when it names files no longer there.
    fn from_choice(tree: usize, tv: &TreeVersion, decision: &Decision) -> Option<Self> {
        let find = |level: usize, n: &u64| tv.level(level).iter().find(|f| f.number == *n).cloned();
        let (level, output_level, inputs, overlaps) = match &decision.choice {
            Choice::DoNothing | Choice::AddLevel | Choice::RemoveLevel => (0, 0, Vec::new(), Vec::new()),
            Choice::Move { from, file } => (*from, from + 1, vec![find(*from, file)?], Vec::new()),
            Choice::Merge {
                level,
                inputs,
                output_level,
                overlaps,
            } => {
                let i: Vec<_> = inputs.iter().filter_map(|n| find(*level, n)).collect();
                let o: Vec<_> = overlaps.iter().filter_map(|n| find(*output_level, n)).collect();
                if i.len() != inputs.len() || o.len() != overlaps.len() {
                    return None;
                }
                (*level, *output_level, i, o)
            }
        };
        Some(Job {
            tree,
            level,
            output_level,
            inputs,
            overlaps,
            deepest: decision.deepest,
        })
    }
}

/// The edit that moves every file of levels `from..` one level deeper (`AddLevel`, from L1) or
/// one level up (`RemoveLevel`, from L2, L1 being empty), with the tree's new deepest level.
fn renumber(tree: usize, tv: &TreeVersion, add: bool, deepest: u32) -> VersionEdit {
    let t = tree as u32;
    let mut e = VersionEdit::default();
    for level in if add { 1 } else { 2 }..tv.levels.len() {
        let to = if add { level + 1 } else { level - 1 } as u32;
        for f in tv.level(level) {
            e.deleted.push((t, level as u32, f.number));
            e.added.push((t, to, (**f).clone()));
        }
    }
    e.deepest.push((t, deepest));
    e
}

/// A tree's share of write memory for level targets that follow it: write memory in the
/// proportion of the tree's recent writes (the paper's optimal allocation), in the bytes it
/// becomes on disk. The paper's memory components update in place, so its `M_w` is distinct
/// data; our memtables keep every version, and under skewed updates a memtable flushes a
/// fraction of its size — sizing levels by the raw size would remove an L1 that is absorbing
/// the hot keys' rewrites. `None` for a tree not written to recently or not flushed since the
/// open (the ratio is unknown): its shape stays.
fn write_share(inner: &DbInner, st: &State, tree: usize) -> Option<u64> {
    if inner.opts.compaction.level_targets != crate::options::LevelTargets::WriteMemory {
        return None;
    }
    let mine = *st.recent_writes.get(tree)?;
    let all: u64 = st.recent_writes.iter().sum();
    let on_disk = inner.counters.tree(tree).flushed_per_switched()?;
    (mine > 0).then(|| (inner.memory.write_budget() as f64 * on_disk * mine as f64 / all as f64) as u64)
}

fn view(t: &TreeVersion, busy: &HashSet<u64>, write_memory: Option<u64>) -> LsmView {
    LsmView {
        write_memory,
        levels: t
            .levels
            .iter()
            .map(|files| LevelView {
                files: files
                    .iter()
                    .map(|f| FileView {
                        number: f.number,
                        size: f.size,
                        smallest: f.smallest_user_key().to_vec(),
                        largest: f.largest_user_key().to_vec(),
                        busy: busy.contains(&f.number),
                        group: f.l0_group,
                    })
                    .collect(),
            })
            .collect(),
        deepest: t.deepest,
    }
}

/// Picks work for some tree, installing level growth and trivial moves at once (they rewrite
/// nothing); returns a merge to run, claimed (inputs busy, counted as running), if any.
pub(super) fn pick(inner: &DbInner, st: &mut State) -> Result<Option<Job>> {
    for tree in 0..st.version().trees.len() {
        loop {
            let tv = &st.version().trees[tree];
            let decision = inner.policy.pick(&view(tv, &st.busy, write_share(inner, st, tree)));
            if let (Choice::AddLevel | Choice::RemoveLevel, Some(d)) = (&decision.choice, decision.deepest) {
                let add = decision.choice == Choice::AddLevel;
                let edit = renumber(tree, tv, add, d);
                inner.log_and_apply(st, edit, &[])?;
                inner.counters.tree(tree).record_reshape(add);
                continue;
            }
            let Some(job) = Job::from_choice(tree, tv, &decision) else {
                break;
            };
            match decision.choice {
                Choice::DoNothing | Choice::AddLevel | Choice::RemoveLevel if job.deepest.is_none() => break,
                Choice::DoNothing | Choice::AddLevel | Choice::RemoveLevel => {
                    inner.log_and_apply(st, job.edit(Vec::new()), &[])?
                }
                Choice::Move { from, .. } => {
                    let moved = job.inputs.iter().map(|f| (**f).clone()).collect();
                    inner.log_and_apply(st, job.edit(moved), &[])?;
                    inner.counters.tree(tree).record_move(from);
                }
                Choice::Merge { .. } => {
                    claim(st, &job);
                    return Ok(Some(job));
                }
            }
        }
        if let Some(job) = expired_job(inner, st, tree) {
            claim(st, &job);
            return Ok(Some(job));
        }
        if let Some(job) = drain_job(inner, st, tree) {
            claim(st, &job);
            return Ok(Some(job));
        }
    }
    Ok(None)
}

/// A file of `tree` holding values whose deadline passed (the one that passed first, not
/// busy): the first step of what `compact_range` over its key range would do (merged into the
/// next level, or rewritten in place at the bottom). Its outputs hold no expired value (they
/// become tombstones), so a tree that takes no writes still gets its expired bytes off the
/// disk, one file at a time.
fn expired_job(inner: &DbInner, st: &State, tree: usize) -> Option<Job> {
    let now = inner.opts.clock.now_ms();
    let tv = st.version().trees.get(tree)?;
    let (level, f) = tv
        .levels
        .iter()
        .enumerate()
        .flat_map(|(l, fs)| fs.iter().map(move |f| (l, f)))
        .filter(|(_, f)| f.min_deadline != 0 && f.min_deadline <= now && !st.busy.contains(&f.number))
        .min_by_key(|(_, f)| f.min_deadline)?;
    let range = (Some(f.smallest_user_key()), Some(f.largest_user_key()));
    range_job(st, tree, tv, level, range).filter(|job| is_free(st, job))
}

/// `compact_range`'s step at `level` for the user keys in `[lo, hi]` (`None`: unbounded): its
/// files there merged into the next level, or rewritten in place at the bottom; `None` when
/// the level holds none of them.
fn range_job(
    st: &State,
    tree: usize,
    tv: &TreeVersion,
    level: usize,
    (lo, hi): (Option<&[u8]>, Option<&[u8]>),
) -> Option<Job> {
    let choice = pick_range(&view(tv, &st.busy, None), level, tv.deepest_nonempty(), lo, hi);
    let Choice::Merge { output_level, .. } = choice else {
        return None;
    };
    let decision = Decision {
        deepest: (output_level as u32 > tv.deepest).then_some(output_level as u32),
        choice,
    };
    Job::from_choice(tree, tv, &decision)
}

/// Whether no running job holds any of `job`'s files.
fn is_free(st: &State, job: &Job) -> bool {
    job.inputs
        .iter()
        .chain(&job.overlaps)
        .all(|f| !st.busy.contains(&f.number))
}

/// How long until the next file's earliest deadline passes (`None`: no file expires).
pub(super) fn until_next_expiry(inner: &DbInner, st: &State) -> Option<Duration> {
    let now = inner.opts.clock.now_ms();
    st.version()
        .trees
        .iter()
        .flat_map(|t| t.levels.iter().flatten())
        .filter(|f| f.min_deadline > now)
        .map(|f| Duration::from_millis(f.min_deadline - now))
        .min()
}

/// Whether the policy would pick anything now (ignoring what is running), or an L0 drain is
/// asked for and no write came since.
pub(super) fn work_pending(inner: &DbInner, st: &State) -> bool {
    let asked = st.quiet.asked
        && st
            .quiet
            .sample
            .is_some_and(|(seen, _)| seen == inner.counters.writes().user_ops);
    st.version().trees.iter().enumerate().any(|(i, t)| {
        let d = inner.policy.pick(&view(t, &st.busy, write_share(inner, st, i)));
        d.deepest.is_some()
            || d.choice != Choice::DoNothing
            || expired_job(inner, st, i).is_some()
            || (asked && drains(inner, st, t) && range_job(st, i, t, 0, (None, None)).is_some())
    })
}

/// Whether writes have stopped: the L0 drain's clock.
#[derive(Debug, Default)]
pub(crate) struct Quiet {
    /// The user writes counted when the count was last seen to change, and when.
    pub sample: Option<(u64, std::time::Instant)>,
    /// A wait for background work asked for the drain now (until the next write).
    pub asked: bool,
    /// Range reads (all trees) at the last drain: once more came, a lone L0 file drains too
    /// (counted from the last drain, not from the sample, which may come after the reads).
    pub ranges: u64,
}

/// Fewest L0 files a drain merges while only point lookups come (one file costs a lookup a
/// filter probe, worth less than the L0 → L1 batching the trigger buys). Once range reads came
/// (since the last drain) a lone file drains too: every seek reads a block of it
/// (`scans-lent`: seeks with 100 nexts read 4.7 data blocks with the one file a load left,
/// 3.7 without).
const DRAIN_MIN_FILES: usize = 2;

/// Whether `tv`'s L0 would be drained once writes stop (`compaction.l0_drain_ms`).
fn drains(inner: &DbInner, st: &State, tv: &TreeVersion) -> bool {
    let files = tv.level(0).len();
    inner.opts.compaction.l0_drain_ms > 0
        && !inner.life.is_read_only()
        && (files >= DRAIN_MIN_FILES || (files == 1 && range_reads(inner) > st.quiet.ranges))
}

/// Range reads opened so far, all trees.
pub(super) fn range_reads(inner: &DbInner) -> u64 {
    inner.counters.trees().iter().map(|t| t.ranges()).sum()
}

/// How long until no user write has come for `compaction.l0_drain_ms` (zero: none has, or a
/// wait asked for the drain), from the last sample; `None` before the first one.
fn quiet_left(inner: &DbInner, st: &State) -> Option<Duration> {
    let (_, since) = st.quiet.sample?;
    if st.quiet.asked {
        return Some(Duration::ZERO);
    }
    Some(Duration::from_millis(inner.opts.compaction.l0_drain_ms).saturating_sub(since.elapsed()))
}

/// Takes a new sample of the user writes when they moved (a write since the last one, with or
/// without the WAL), which also withdraws a wait's ask.
pub(super) fn sample_writes(inner: &DbInner, st: &mut State) {
    let ops = inner.counters.writes().user_ops;
    if st.quiet.sample.is_none_or(|(seen, _)| seen != ops) {
        st.quiet.sample = Some((ops, std::time::Instant::now()));
        st.quiet.asked = false;
    }
}

/// A wait for background work (`Db::wait_for_background`) asks for the L0 drain now: the
/// caller expects no more writes for a while. A write withdraws it.
pub(super) fn ask_drain(inner: &DbInner, st: &mut State) {
    sample_writes(inner, st);
    st.quiet.asked = true;
}

/// Once writes have stopped for `compaction.l0_drain_ms`, `tree`'s L0 files (at least
/// [`DRAIN_MIN_FILES`], or one once range reads came) merged into L1 — what `compact_range`'s
/// first step does — although they are fewer than the trigger: a load leaves between none and trigger − 1 of them, and the
/// reads that follow probe each one (docs/design.md §3, L0 drain).
fn drain_job(inner: &DbInner, st: &mut State, tree: usize) -> Option<Job> {
    if !drains(inner, st, st.version().trees.get(tree)?) {
        return None;
    }
    sample_writes(inner, st);
    if !quiet_left(inner, st)?.is_zero() {
        return None;
    }
    let tv = st.version().trees.get(tree)?;
    let job = range_job(st, tree, tv, 0, (None, None)).filter(|job| is_free(st, job))?;
    st.quiet.ranges = range_reads(inner);
    Some(job)
}

/// How long the compaction thread may sleep before an L0 drain falls due (`None`: none is
/// waiting for writes to stay quiet).
pub(super) fn until_drain(inner: &DbInner, st: &State) -> Option<Duration> {
    if !st.version().trees.iter().any(|t| drains(inner, st, t)) {
        return None;
    }
    quiet_left(inner, st).filter(|d| !d.is_zero())
}

/// Marks a job's inputs busy and counts it as running.
fn claim(st: &mut State, job: &Job) {
    for f in job.inputs.iter().chain(&job.overlaps) {
        st.busy.insert(f.number);
    }
    st.writing.push(writes(job));
    st.running_compactions += 1;
}

/// What `job` writes: its tree, output level and the user-key span of its inputs.
fn writes(job: &Job) -> (usize, usize, Vec<u8>, Vec<u8>) {
    let files = || job.inputs.iter().chain(&job.overlaps);
    let lo = files().map(|f| f.smallest_user_key()).min().unwrap_or_default();
    let hi = files().map(|f| f.largest_user_key()).max().unwrap_or_default();
    (job.tree, job.output_level, lo.to_vec(), hi.to_vec())
}

/// Runs a claimed job, then releases its inputs, deletes what became obsolete and wakes
/// waiters.
pub(super) fn run_and_release(inner: &Arc<DbInner>, job: &Job) -> Result<()> {
    let r = super::compaction_run::run(inner, job);
    {
        let mut st = inner.state.lock();
        st.running_compactions -= 1;
        for f in job.inputs.iter().chain(&job.overlaps) {
            st.busy.remove(&f.number);
        }
        let w = writes(job);
        if let Some(i) = st.writing.iter().position(|x| *x == w) {
            st.writing.swap_remove(i);
        }
    }
    inner.delete_obsolete_files();
    inner.done_cv.notify_all();
    r
}

fn bound_key<K: AsRef<[u8]>>(b: Bound<&K>) -> Option<Vec<u8>> {
    match b {
        Bound::Included(k) | Bound::Excluded(k) => Some(k.as_ref().to_vec()),
        Bound::Unbounded => None,
    }
}

/// Flushes the tree, then merges every level's files overlapping `range` into the next level,
/// top to bottom, until they sit in the deepest non-empty level, and finally rewrites those
/// bottom files in place so that shadowed versions and tombstones are purged (RocksDB's
/// forced bottommost compaction).
pub(super) fn compact_range<K: AsRef<[u8]>, R: RangeBounds<K>>(
    inner: &Arc<DbInner>,
    tree: u32,
    range: &R,
) -> Result<()> {
    super::flush::flush_trees(inner, Some(tree))?;
    let lo = bound_key(range.start_bound());
    let hi = bound_key(range.end_bound());
    let mut level = 0usize;
    loop {
        let job = {
            let mut st = inner.state.lock();
            loop {
                inner.check_writable()?;
                let tv = st.version().trees.get(tree as usize).cloned().unwrap_or_default();
                if level > tv.deepest_nonempty() {
                    return Ok(());
                }
                let Some(job) = range_job(&st, tree as usize, &tv, level, (lo.as_deref(), hi.as_deref())) else {
                    level += 1;
                    continue;
                };
                if !is_free(&st, &job) {
                    // A background compaction holds some of these files: wait for it.
                    inner.done_cv.wait_for(&mut st, Duration::from_millis(20));
                    continue;
                }
                claim(&mut st, &job);
                break job;
            }
        };
        run_and_release(inner, &job).map_err(|e| {
            if !matches!(e, Error::Poisoned(_)) {
                inner.set_poison(&e);
            }
            e
        })?;
        level += 1;
    }
}
