//! A compaction job ([`Job`]; [`Job::edit`] is the one place a job turns into a version edit)
//! and how a merge job runs: the inputs (each L0 group, the upper level's files, the overlapped
//! files) are read through level iterators into one merging iterator, rewritten (retention,
//! range tombstones, TTL, the user's compaction filter, merge folding) and cut into output
//! tables; a large L0 → L1 job is split into key ranges merged by threads of their own.

use super::filters::JobFilter;
use super::inner::DbInner;
use crate::compaction::iter::Retention;
use crate::compaction::job::{split_points, write_outputs, JobOutput, Outputs, RangeIter};
use crate::compaction::rewrite::{Rewriter, UserFilter};
use crate::error::{Error, Result};
use crate::iter::{BoxedIter, MergingIter};
use crate::range_del::Fragments;
use crate::sst::LevelIter;
use crate::version::{FileMeta, VersionEdit};
use std::sync::Arc;

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
    pub(super) fn filter(&self) -> JobFilter<'_> {
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
    pub(super) fn edit(&self, outputs: Vec<FileMeta>) -> VersionEdit {
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
}

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

/// Merges `job.inputs` with `job.overlaps` into `job.output_level`. A large L0 → L1 job is cut
/// into key ranges (`max_subcompactions`) merged by threads of their own into one output run.
pub(super) fn run(inner: &Arc<DbInner>, job: &Job) -> Result<()> {
    let table = inner.job_table_options(job.tree, job.filter())?;
    let (deeper, grandparents, user) = {
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
        // Outputs of a sorted level are aligned to the files of the level below it.
        let grandparents: Vec<Vec<u8>> = match job.output_level {
            0 => Vec::new(),
            l => tv.level(l + 1).iter().map(|f| f.smallest_user_key().to_vec()).collect(),
        };
        (deeper, grandparents, user)
    };
    let upper_bytes: u64 = job.inputs.iter().map(|f| f.size).sum();
    let input_bytes: u64 = upper_bytes + job.overlaps.iter().map(|f| f.size).sum::<u64>();
    let pieces = if job.level == 0 && job.output_level > 0 && input_bytes >= 2 * inner.opts.compaction.target_file_size
    {
        inner.opts.background.max_subcompactions
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
        split_points(&tables, pieces)?
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
            (&deeper, &grandparents),
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
    // The user's compaction filter may have changed what the tables answer: the key-value
    // cache retires the tree's entries, and takes none until the outputs are installed.
    let kv = inner
        .kv
        .as_ref()
        .filter(|_| failed.is_none() && inner.opts.compaction_filter.is_some());
    if let Some(kv) = kv {
        kv.begin_change(job.tree as u32);
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
    // Before the state lock goes: whoever waits for this job sees the cache take fills again.
    if let Some(kv) = kv {
        kv.end_change(job.tree as u32);
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
    (deeper, grandparents): (&[Arc<FileMeta>], &[Vec<u8>]),
    (oldest_snapshot, mut rw): (u64, Rewriter),
    readahead: usize,
) -> (Result<JobOutput>, Vec<u64>) {
    let mut allocated = Vec::new();
    // Compaction inputs do not fill the block cache, and their reads are counted apart.
    let read = crate::sst::IterOptions {
        fill_cache: false,
        stats: Some(inner.compaction_io.clone()),
        readahead,
        ..crate::sst::IterOptions::default()
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
            target_file_size: inner.opts.compaction.target_file_size,
            grandparents: grandparents.to_vec(),
            stats: inner.io.clone(),
            new_file_number: &mut alloc,
            merge: inner.opts.merge_operator.clone(),
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

fn opener(inner: &Arc<DbInner>) -> crate::sst::TableOpener {
    let i = inner.clone();
    Arc::new(move |f: &FileMeta| i.open_table(f))
}
