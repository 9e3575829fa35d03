//! Compaction orchestration: a merge policy's decision (or a manual compaction's pick) becomes
//! a [`Job`]; moves and level growth are installed at once, merges run outside the state lock;
//! [`Job::edit`] is the one place a job turns into a version edit.

use super::filters::JobFilter;
use super::inner::{DbInner, State};
use crate::compaction::iter::Retention;
use crate::compaction::job::{split_points, write_outputs, JobOutput, Outputs, RangeIter};
use crate::compaction::rewrite::{Rewriter, UserFilter};
use crate::compaction::{pick_range, Choice, Decision, FileView, LevelView, LsmView};
use crate::error::{Error, Result};
use crate::iter::{BoxedIter, LevelIter, MergingIter};
use crate::range_del::Fragments;
use crate::version::{FileMeta, TreeVersion, VersionEdit};
use std::collections::HashSet;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use std::time::Duration;

/// Compaction inputs are read front to back in chunks of up to this size (RocksDB's
/// `compaction_readahead_size` with direct I/O) ...
const COMPACTION_READAHEAD: usize = 2 << 20;
/// ... within this much per job, shared by its pieces and their open inputs: an L0 merge of
/// 8 files in 2 pieces would otherwise hold 36 MiB of buffers, outside every memory region.
const COMPACTION_READAHEAD_PER_JOB: usize = 8 << 20;

/// The chunk size of each input iterator of a job with `pieces` pieces of `inputs` inputs each
/// open at once: the per-job total spread over them, at least 128 KiB.
fn readahead_chunk(pieces: usize, inputs: usize) -> usize {
    (COMPACTION_READAHEAD_PER_JOB / (pieces * inputs).max(1)).clamp(128 << 10, COMPACTION_READAHEAD)
}

/// Work on one tree: `inputs` of `level` (with the `overlaps` of `output_level`) become new
/// files of `output_level`; `deepest` grows the tree's L (Garnering's delay).
#[derive(Debug)]
pub(super) struct Job {
    pub tree: usize,
    pub level: usize,
    pub output_level: usize,
    pub inputs: Vec<Arc<FileMeta>>,
    pub overlaps: Vec<Arc<FileMeta>>,
    pub deepest: Option<u32>,
}

impl Job {
    /// What the outputs' filter decisions inherit from: the inputs probed first (`upper`) and
    /// the others. Into a deeper level, the job's level is probed first; an intra-L0 merge's
    /// oldest input is probed after the newer ones; a level rewritten in place has no upper.
    fn filter(&self) -> JobFilter<'_> {
        let (upper, deeper): (&[Arc<FileMeta>], &[Arc<FileMeta>]) = if self.output_level > self.level {
            (&self.inputs, &self.overlaps)
        } else if self.level == 0 {
            // L0 inputs are listed oldest first (by file number).
            let (oldest, newer) = self.inputs.split_at(self.inputs.len().min(1));
            (newer, oldest)
        } else {
            (&[], &self.inputs)
        };
        JobFilter {
            level: self.output_level,
            upper,
            deeper,
            flush: false,
        }
    }

    /// The edit that installs this job with `outputs` written to `output_level` (for a trivial
    /// move: the input itself).
    fn edit(&self, outputs: Vec<FileMeta>) -> VersionEdit {
        let t = self.tree as u32;
        let mut e = VersionEdit::default();
        e.deleted
            .extend(self.inputs.iter().map(|f| (t, self.level as u32, f.number)));
        e.deleted
            .extend(self.overlaps.iter().map(|f| (t, self.output_level as u32, f.number)));
        // An intra-L0 output takes its newest input group's place (whole groups are merged).
        let group = match self.output_level {
            0 => self.inputs.iter().map(|f| f.l0_group).max().unwrap_or(0),
            _ => 0,
        };
        e.added.extend(
            outputs
                .into_iter()
                .map(|f| (t, self.output_level as u32, FileMeta { l0_group: group, ..f })),
        );
        e.deepest.extend(self.deepest.map(|d| (t, d)));
        e
    }

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
    if inner.opts.level_targets != crate::options::LevelTargets::WriteMemory {
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

/// Whether the policy would pick anything now (ignoring what is running).
pub(super) fn work_pending(inner: &DbInner, st: &State) -> bool {
    st.version().trees.iter().enumerate().any(|(i, t)| {
        let d = inner.policy.pick(&view(t, &st.busy, write_share(inner, st, i)));
        d.deepest.is_some() || d.choice != Choice::DoNothing || expired_job(inner, st, i).is_some()
    })
}

/// Marks a job's inputs busy and counts it as running.
fn claim(st: &mut State, job: &Job) {
    for f in job.inputs.iter().chain(&job.overlaps) {
        st.busy.insert(f.number);
    }
    st.running_compactions += 1;
}

/// Runs a claimed job, then releases its inputs, deletes what became obsolete and wakes
/// waiters.
pub(super) fn run_and_release(inner: &Arc<DbInner>, job: &Job) -> Result<()> {
    let r = run(inner, job);
    {
        let mut st = inner.state.lock();
        st.running_compactions -= 1;
        for f in job.inputs.iter().chain(&job.overlaps) {
            st.busy.remove(&f.number);
        }
    }
    inner.delete_obsolete_files();
    inner.done_cv.notify_all();
    r
}

/// Merges `job.inputs` with `job.overlaps` into `job.output_level`. A large L0 → L1 job is cut
/// into key ranges (`max_subcompactions`) merged by threads of their own into one output run.
fn run(inner: &Arc<DbInner>, job: &Job) -> Result<()> {
    let table = inner.job_table_options(job.tree, job.filter())?;
    let (deeper, user) = {
        let st = inner.state.lock();
        // The user's compaction filter, told where it runs.
        let user = inner.opts.compaction_filter.clone().map(|filter| UserFilter {
            filter,
            tree: Arc::from(st.versions.tree_names().get(job.tree).map_or("", String::as_str)),
            level: job.output_level,
            newest_snapshot: inner.newest_snapshot(),
        });
        let tv = st.version().trees.get(job.tree).cloned().unwrap_or_default();
        // Files that may hold older versions of the job's keys: every file at or below the
        // output level that the job does not rewrite (for an intra-L0 job, the older L0 files).
        let mine: std::collections::HashSet<u64> = job.inputs.iter().chain(&job.overlaps).map(|f| f.number).collect();
        let deeper: Vec<Arc<FileMeta>> = (job.output_level..tv.levels.len())
            .flat_map(|l| tv.level(l).iter().filter(|f| !mine.contains(&f.number)).cloned())
            .collect();
        (deeper, user)
    };
    let upper_bytes: u64 = job.inputs.iter().map(|f| f.size).sum();
    let input_bytes: u64 = upper_bytes + job.overlaps.iter().map(|f| f.size).sum::<u64>();
    let pieces = if job.level == 0 && job.output_level > 0 && input_bytes >= 2 * inner.opts.target_file_size {
        inner.opts.max_subcompactions
    } else {
        1
    };
    let cuts = if pieces > 1 {
        let tables = job
            .inputs
            .iter()
            .chain(&job.overlaps)
            .map(|f| inner.open_table(f))
            .collect::<Result<Vec<_>>>()?;
        split_points(&tables, pieces)
    } else {
        Vec::new()
    };
    let mut bounds: Vec<Option<Vec<u8>>> = vec![None];
    bounds.extend(cuts.into_iter().map(Some));
    bounds.push(None);
    let ranges: Vec<_> = bounds.windows(2).map(|w| (w[0].clone(), w[1].clone())).collect();
    let oldest_snapshot = inner.oldest_snapshot();
    // Open at once per piece: every L0 input (or one file of a sorted level) and one overlap.
    let open = if job.level == 0 { job.inputs.len() } else { 1 } + 1;
    let readahead = readahead_chunk(ranges.len(), open);
    let rewriter = || Rewriter::new(inner.opts.clock.now_ms(), user.clone());
    let merge = |lo, hi, table| {
        merge_range(
            inner,
            job,
            (lo, hi),
            table,
            &deeper,
            (oldest_snapshot, rewriter()),
            readahead,
        )
    };
    let pieces: Vec<(Result<JobOutput>, Vec<u64>)> = if ranges.len() == 1 {
        vec![merge(None, None, table)]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = ranges
                .into_iter()
                .map(|(lo, hi)| {
                    let table = table.clone();
                    s.spawn(move || {
                        crate::stats::stripe::Stripe::background();
                        merge(lo, hi, table)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        (
                            Err(Error::InvalidArgument("a subcompaction thread panicked".into())),
                            Vec::new(),
                        )
                    })
                })
                .collect()
        })
    };
    let mut allocated = Vec::new();
    let mut out = JobOutput::default();
    let mut failed = None;
    for (r, numbers) in pieces {
        allocated.extend(numbers);
        match r {
            Ok(o) => {
                out.files.extend(o.files);
                out.bytes_written += o.bytes_written;
                out.rewritten += o.rewritten;
            }
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    let mut st = inner.state.lock();
    let r = match failed {
        Some(e) => Err(e),
        None => (|| {
            inner.log_and_apply(&mut st, job.edit(out.files), &[])?;
            let counters = inner.counters.tree(job.tree);
            counters.record_compaction(job.output_level, input_bytes, upper_bytes, out.bytes_written);
            counters.record_rewritten(out.rewritten);
            Ok(())
        })(),
    };
    for n in allocated {
        st.pending_outputs.remove(&n);
    }
    r
}

/// Merges the job's entries with user keys in `[lo, hi)` into new tables; returns what it
/// wrote and every file number it allocated (pending until the job ends).
fn merge_range(
    inner: &Arc<DbInner>,
    job: &Job,
    (lo, hi): (Option<Vec<u8>>, Option<Vec<u8>>),
    table: crate::sst::TableOptions,
    deeper: &[Arc<FileMeta>],
    (oldest_snapshot, mut rw): (u64, Rewriter),
    readahead: usize,
) -> (Result<JobOutput>, Vec<u64>) {
    let mut allocated = Vec::new();
    // Compaction inputs do not fill the block cache, and their reads are counted apart.
    let read = crate::sst::IterOptions {
        fill_cache: false,
        stats: Some(inner.compaction_io.clone()),
        readahead,
    };
    // Each sorted run of the inputs (an L0 group, or the one level) and the overlapped files.
    let mut runs = match job.level {
        0 => crate::version::l0_sorted_runs(&job.inputs),
        _ => vec![job.inputs.clone()],
    };
    runs.push(job.overlaps.clone());
    let children: Vec<BoxedIter> = runs
        .into_iter()
        .map(|run| Box::new(LevelIter::with_options(run, opener(inner), read.clone())) as BoxedIter)
        .collect();
    // The inputs' range tombstones within this range: the ones some reader still needs go to
    // the outputs (at the bottom of their range, the ones every reader sees have nothing left
    // to delete).
    let range_dels = match input_range_dels(inner, job, lo.as_deref(), hi.as_deref()) {
        Ok(r) => r,
        Err(e) => return (Err(e), allocated),
    };
    let kept = range_dels.compacted(oldest_snapshot, |start, end| {
        let last = crate::range_del::last_covered(end);
        !deeper
            .iter()
            .any(|f| f.smallest_user_key() <= last && f.largest_user_key() >= start)
    });
    let mut merged = RangeIter::new(MergingIter::new(children), lo, hi);
    let mut filter = Retention::new(oldest_snapshot, |uk: &[u8]| {
        !deeper
            .iter()
            .any(|f| f.smallest_user_key() <= uk && f.largest_user_key() >= uk)
    })
    .with_range_dels(range_dels);
    let mut alloc = || {
        let n = inner.allocate_output();
        allocated.push(n);
        n
    };
    let r = write_outputs(
        &mut merged,
        &mut filter,
        &mut rw,
        &kept,
        &mut Outputs {
            fs: &*inner.fs,
            dir: &inner.dir,
            table,
            target_file_size: inner.opts.target_file_size,
            stats: inner.io.clone(),
            new_file_number: &mut alloc,
            merge: inner.opts.merge_op.clone(),
        },
    );
    (r, allocated)
}

/// The range tombstones of a job's input files, clipped to `[lo, hi)`.
fn input_range_dels(inner: &DbInner, job: &Job, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<Fragments> {
    let mut lists = Vec::new();
    for f in job.inputs.iter().chain(&job.overlaps) {
        if f.range_deletions > 0 {
            lists.push(inner.open_table(f)?.range_dels().clone());
        }
    }
    Ok(Fragments::union(lists).map_or_else(Fragments::default, |f| f.clipped(lo, hi)))
}

fn opener(inner: &Arc<DbInner>) -> crate::iter::TableOpener {
    let i = inner.clone();
    Arc::new(move |f: &FileMeta| i.open_table(f))
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
