//! Compaction orchestration: background threads ask the merge policy for work, run the job
//! outside the state lock, and install the result.

use super::{DbInner, State};
use crate::compaction::iter::CompactionFilter;
use crate::compaction::job::{write_outputs, Outputs};
use crate::compaction::{Choice, FileView, LevelView, LsmView};
use crate::error::{Error, Result};
use crate::iter::{BoxedIter, LevelIter, MergingIter};
use crate::version::{FileMeta, TreeVersion, VersionEdit};
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// Starts the flush thread and the compaction threads.
pub(super) fn start_threads(inner: &Arc<DbInner>) -> Result<()> {
    let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name(name)
            .spawn(f)
            .map_err(|e| Error::io("spawn thread", &inner.dir, e))
    };
    let mut threads = inner.threads.lock();
    let i = inner.clone();
    threads.push(spawn(
        "cairn-flush".into(),
        Box::new(move || super::flush::flush_loop(i)),
    )?);
    for n in 0..inner.opts.compaction_threads {
        let i = inner.clone();
        threads.push(spawn(
            format!("cairn-compact-{n}"),
            Box::new(move || compaction_loop(i)),
        )?);
    }
    Ok(())
}

fn view(t: &TreeVersion, busy: &std::collections::HashSet<u64>) -> LsmView {
    LsmView {
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
                    })
                    .collect(),
            })
            .collect(),
        deepest: t.deepest,
    }
}

/// Bytes over capacity in every level (a cheap stand-in for RocksDB's pending compaction
/// bytes estimate), used for write slowdowns and stops.
pub(super) fn pending_compaction_bytes(inner: &DbInner, st: &State) -> u64 {
    let mut total = 0u64;
    for t in &st.version.trees {
        for level in 1..t.levels.len() {
            if let Some(cap) = inner.policy.capacity(level, t.deepest) {
                total += t.level_bytes(level).saturating_sub(cap as u64);
            }
        }
    }
    total
}

/// A merge to run outside the lock.
struct Job {
    tree: usize,
    level: usize,
    output_level: usize,
    inputs: Vec<Arc<FileMeta>>,
    overlaps: Vec<Arc<FileMeta>>,
    deepest: Option<u32>,
}

/// Picks work for some tree, applying level growth and trivial moves at once (they rewrite
/// nothing); returns a merge to run, if any.
fn pick(inner: &DbInner, st: &mut State) -> Result<Option<Job>> {
    for tree in 0..st.version.trees.len() {
        loop {
            let tv = &st.version.trees[tree];
            let decision = inner.policy.pick(&view(tv, &st.busy));
            let find = |level: usize, n: u64| tv.level(level).iter().find(|f| f.number == n).cloned();
            match decision.choice {
                Choice::DoNothing => {
                    if let Some(d) = decision.deepest {
                        let mut e = VersionEdit::default();
                        e.deepest.push((tree as u32, d));
                        inner.log_and_apply(st, e)?;
                        continue;
                    }
                    break;
                }
                Choice::Move { from, file } => {
                    let Some(f) = find(from, file) else { break };
                    let mut e = VersionEdit::default();
                    e.deleted.push((tree as u32, from as u32, file));
                    e.added.push((tree as u32, from as u32 + 1, (*f).clone()));
                    if let Some(d) = decision.deepest {
                        e.deepest.push((tree as u32, d));
                    }
                    inner.log_and_apply(st, e)?;
                    inner.stats.record_move(tree, from);
                    continue;
                }
                Choice::Merge {
                    level,
                    inputs,
                    output_level,
                    overlaps,
                } => {
                    let inputs: Vec<_> = inputs.iter().filter_map(|&n| find(level, n)).collect();
                    let overlaps: Vec<_> = overlaps.iter().filter_map(|&n| find(output_level, n)).collect();
                    for f in inputs.iter().chain(&overlaps) {
                        st.busy.insert(f.number);
                    }
                    return Ok(Some(Job {
                        tree,
                        level,
                        output_level,
                        inputs,
                        overlaps,
                        deepest: decision.deepest,
                    }));
                }
            }
        }
    }
    Ok(None)
}

fn compaction_loop(inner: Arc<DbInner>) {
    while let Some(job) = inner.wait_for_work(|st| {
        let found = match pick(&inner, st) {
            Ok(job) => job,
            Err(e) => {
                inner.set_poison(&e);
                None
            }
        };
        if found.is_some() {
            st.running_compactions += 1;
        } else {
            inner.done_cv.notify_all();
        }
        found
    }) {
        let r = run(&inner, &job);
        {
            let mut st = inner.state.lock();
            st.running_compactions -= 1;
            for f in job.inputs.iter().chain(&job.overlaps) {
                st.busy.remove(&f.number);
            }
        }
        if let Err(e) = r {
            tracing::error!(error = %e, "compaction failed");
            inner.set_poison(&e);
        }
        inner.delete_obsolete_files();
        inner.done_cv.notify_all();
        inner.bg_cv.notify_all();
    }
}

/// Merges `job.inputs` with `job.overlaps` into `job.output_level`.
fn run(inner: &Arc<DbInner>, job: &Job) -> Result<()> {
    // Compaction inputs do not fill the block cache, and their reads are counted apart.
    let read = crate::sst::IterOptions {
        fill_cache: false,
        stats: Some(inner.compaction_io.clone()),
    };
    let mut children: Vec<BoxedIter> = Vec::new();
    if job.level == 0 {
        for f in &job.inputs {
            children.push(Box::new(inner.open_table(f)?.iter_with(read.clone())));
        }
    } else {
        children.push(Box::new(LevelIter::with_options(
            job.inputs.clone(),
            opener(inner),
            read.clone(),
        )));
    }
    children.push(Box::new(LevelIter::with_options(
        job.overlaps.clone(),
        opener(inner),
        read,
    )));
    let mut merged = MergingIter::new(children);
    let version = inner.state.lock().version.clone();
    let tv = version.trees.get(job.tree).cloned().unwrap_or_default();
    let deeper: Vec<Arc<FileMeta>> = (job.output_level + 1..tv.levels.len())
        .flat_map(|l| tv.level(l).to_vec())
        .collect();
    let mut filter = CompactionFilter::new(inner.oldest_snapshot(), |uk: &[u8]| {
        !deeper
            .iter()
            .any(|f| f.smallest_user_key() <= uk && f.largest_user_key() >= uk)
    });
    let mut outputs = Vec::new();
    let mut alloc = || {
        let n = inner.allocate_output();
        outputs.push(n);
        n
    };
    let result = write_outputs(
        &mut merged,
        &mut filter,
        &mut Outputs {
            fs: &*inner.fs,
            dir: &inner.dir,
            table: inner.table_options(job.tree as u32, job.output_level),
            target_file_size: inner.opts.target_file_size,
            stats: inner.io.clone(),
            new_file_number: &mut alloc,
        },
    );
    let mut st = inner.state.lock();
    let r = result.and_then(|out| {
        let mut e = VersionEdit::default();
        let t = job.tree as u32;
        for f in &job.inputs {
            e.deleted.push((t, job.level as u32, f.number));
        }
        for f in &job.overlaps {
            e.deleted.push((t, job.output_level as u32, f.number));
        }
        for f in &out.files {
            e.added.push((t, job.output_level as u32, f.clone()));
        }
        if let Some(d) = job.deepest {
            e.deepest.push((t, d));
        }
        let read: u64 = job.inputs.iter().chain(&job.overlaps).map(|f| f.size).sum();
        inner.log_and_apply(&mut st, e)?;
        inner
            .stats
            .record_compaction(job.tree, job.output_level, read, out.bytes_written);
        Ok(())
    });
    for n in outputs {
        st.pending_outputs.remove(&n);
    }
    r
}

fn opener(inner: &Arc<DbInner>) -> crate::iter::TableOpener {
    let i = inner.clone();
    Arc::new(move |f: &FileMeta| i.open_table(f))
}

/// Waits until no flush or compaction is pending or running.
pub(super) fn wait_idle(inner: &Arc<DbInner>) -> Result<()> {
    let mut st = inner.state.lock();
    loop {
        inner.check_writable()?;
        let flush_due = st.flushing || st.mems.iter().any(|m| !m.imm.is_empty());
        let compaction_due = st.running_compactions > 0
            || st
                .version
                .trees
                .iter()
                .any(|t| inner.policy.pick(&view(t, &st.busy)) != NOTHING);
        if !flush_due && !compaction_due {
            return Ok(());
        }
        inner.bg_cv.notify_all();
        inner.done_cv.wait_for(&mut st, std::time::Duration::from_millis(50));
    }
}

const NOTHING: crate::compaction::Decision = crate::compaction::Decision {
    deepest: None,
    choice: Choice::DoNothing,
};

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
    let overlaps = |f: &FileMeta| {
        lo.as_deref().is_none_or(|lo| f.largest_user_key() >= lo)
            && hi.as_deref().is_none_or(|hi| f.smallest_user_key() <= hi)
    };
    let mut level = 0usize;
    loop {
        let job = {
            let mut st = inner.state.lock();
            loop {
                inner.check_writable()?;
                let tv = st.version.trees.get(tree as usize).cloned().unwrap_or_default();
                let bottom = tv.deepest_nonempty();
                if level > bottom {
                    return Ok(());
                }
                // Merge down; a sorted bottom level is rewritten in place; L0 always goes to L1.
                let output_level = if level == bottom && level > 0 { level } else { level + 1 };
                let inputs: Vec<_> = tv.level(level).iter().filter(|f| overlaps(f)).cloned().collect();
                if inputs.is_empty() {
                    level += 1;
                    continue;
                }
                // L0 files overlap each other, so all of L0 goes down together, and the range
                // of the next level to merge with is that of every input.
                let all_inputs = if level == 0 { tv.level(0).to_vec() } else { inputs };
                let lo_k = all_inputs
                    .iter()
                    .map(|f| f.smallest_user_key().to_vec())
                    .min()
                    .unwrap_or_default();
                let hi_k = all_inputs
                    .iter()
                    .map(|f| f.largest_user_key().to_vec())
                    .max()
                    .unwrap_or_default();
                let outs = if output_level == level {
                    Vec::new()
                } else {
                    tv.overlapping(output_level, &lo_k, &hi_k)
                };
                if all_inputs.iter().chain(&outs).any(|f| st.busy.contains(&f.number)) {
                    // A background compaction holds some of these files: wait for it.
                    inner.done_cv.wait_for(&mut st, std::time::Duration::from_millis(20));
                    continue;
                }
                for f in all_inputs.iter().chain(&outs) {
                    st.busy.insert(f.number);
                }
                st.running_compactions += 1;
                let deepest = (output_level as u32 > tv.deepest).then_some(output_level as u32);
                break Job {
                    tree: tree as usize,
                    level,
                    output_level,
                    inputs: all_inputs,
                    overlaps: outs,
                    deepest,
                };
            }
        };
        let r = run(inner, &job);
        {
            let mut st = inner.state.lock();
            st.running_compactions -= 1;
            for f in job.inputs.iter().chain(&job.overlaps) {
                st.busy.remove(&f.number);
            }
        }
        inner.delete_obsolete_files();
        inner.done_cv.notify_all();
        r.map_err(|e| {
            if !matches!(e, Error::Poisoned(_)) {
                inner.set_poison(&e);
            }
            e
        })?;
        level += 1;
    }
}
