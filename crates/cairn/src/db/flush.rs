//! Flush: writes the oldest immutable memtable (or the chosen runs of a partitioned memory
//! component) of a tree to L0, logs the edit (with every tree's log number, so older WALs can
//! go), and installs it. Memory merges of partitioned components run here too.

use super::inner::{DbInner, State};
use crate::compaction::iter::Retention;
use crate::compaction::job::{write_outputs, JobOutput, Outputs};
use crate::compaction::rewrite::Rewriter;
use crate::error::{Error, Result};
use crate::iter::{InternalIterator, KeyBounds, MergingIter};
use crate::memtable::{FlushJob, FlushKind, Memtable, MergeJob};
use crate::range_del::Fragments;
use crate::version::{FileMeta, VersionEdit};
use std::sync::Arc;

/// Writes flush `job` of `tree` (the front of its component's queue) to L0: whole memtables
/// as one table; a partitioned component's runs merged and cut at `write_buffer_size`, each
/// table in the oldest L0 group that no newer group overlaps (Luo & Carey §4.1.2).
pub(super) fn flush_one(inner: &Arc<DbInner>, tree: usize, job: &FlushJob) -> Result<()> {
    let table = inner.job_table_options(
        tree,
        super::filters::JobFilter {
            level: 0,
            upper: &[],
            deeper: &[],
            flush: true,
        },
    )?;
    let mut outputs = Vec::new();
    let mut alloc = || {
        let n = inner.allocate_output();
        outputs.push(n);
        n
    };
    let grouped = job.kind != FlushKind::Whole;
    let result = write_l0(
        &job.runs,
        inner.oldest_snapshot(),
        inner.opts.clock.now_ms(),
        &mut Outputs {
            fs: &*inner.fs,
            dir: &inner.dir,
            table,
            target_file_size: if grouped {
                inner.memory.write_buffer_size() as u64
            } else {
                u64::MAX
            },
            grandparents: Vec::new(),
            stats: inner.io.clone(),
            new_file_number: &mut alloc,
            merge: inner.opts.merge_operator.clone(),
        },
    );
    // Closed WALs still needed after this flush that hold writes older than its tables' newest
    // must be durable before the tables are (closed_wals.rs). Synced before the commit's state
    // lock (writers need it); the needed logs only shrink meanwhile.
    let result = result.and_then(|out| {
        let needed_from = inner.state.lock().log_numbers(&job.runs).iter().map(|&(_, n)| n).min();
        let newest = out.files.iter().map(|f| f.largest_seqno).max();
        if let (Some(needed_from), Some(newest)) = (needed_from, newest) {
            inner.closed_wals.sync_for_flush(&**inner, needed_from, newest)?;
        }
        Ok(out)
    });
    // The tables' answers change for every key flushed: the key-value cache forgets them
    // before the tables are installed (the memtables answer for them until then).
    let whole = result.is_ok() && job.runs.iter().any(|m| m.has_range_dels());
    if let (Some(kv), Ok(_)) = (&inner.kv, &result) {
        if whole {
            kv.begin_change(tree as u32);
        }
        for m in &job.runs {
            forget_keys(kv, tree as u32, m);
        }
    }
    let mut st = inner.state.lock();
    let r = result.and_then(|out| {
        let mut edit = VersionEdit::default();
        let tv = &st.version().trees[tree];
        let busy = |n: u64| st.busy.contains(&n);
        for f in out.files {
            let l0_group = tv.l0_group_for(f.smallest_user_key(), f.largest_user_key(), grouped, &busy);
            edit.added.push((tree as u32, 0, FileMeta { l0_group, ..f }));
        }
        // Every tree's log number: the flushed tree needs WALs from its remaining memory data
        // on; trees with no memtable data need none before the current one (logging that lets
        // older WALs go: they are deleted only below every tree's logged number).
        edit.log_numbers = st.log_numbers(&job.runs);
        inner.log_and_apply_then(&mut st, edit, &job.runs, |st| st.mems[tree].flushed(job))?;
        let counters = inner.counters.tree(tree);
        counters.record_flush(job.kind as usize, out.bytes_written);
        counters.record_rewritten(out.rewritten);
        Ok(())
    });
    for n in outputs {
        st.pending_outputs.remove(&n);
    }
    // Before the state lock goes: whoever waits for this flush sees the cache take fills again.
    if let Some(kv) = inner.kv.as_ref().filter(|_| whole) {
        kv.end_change(tree as u32);
    }
    drop(st);
    inner.delete_obsolete_files();
    r
}

/// Forgets in the key-value cache every user key memtable `m` holds.
fn forget_keys(kv: &crate::cache::KvCache, tree: u32, m: &Arc<Memtable>) {
    let mut it = m.iter();
    it.seek_to_first();
    let mut last: Option<Vec<u8>> = None;
    while it.valid() {
        let key = crate::format::ikey::user_key(it.key());
        if last.as_deref() != Some(key) {
            kv.invalidate(tree, key);
            match &mut last {
                Some(l) => {
                    l.clear();
                    l.extend_from_slice(key);
                }
                None => last = Some(key.to_vec()),
            }
        }
        it.next();
    }
}

/// Writes memtables (or a partitioned component's runs) to L0 tables: the one memtable → L0
/// writer, of flushes and of recovery. Versions a snapshot at or above `oldest_snapshot` may
/// read are kept (recovery, with no reader: each key's newest only); every range tombstone goes
/// down with the data (L0 is never the bottom); expired values become tombstones (the user's
/// compaction filter is for compactions).
pub(super) fn write_l0(
    runs: &[Arc<Memtable>],
    oldest_snapshot: u64,
    now_ms: u64,
    outputs: &mut Outputs<'_>,
) -> Result<JobOutput> {
    let range_dels = memory_range_dels(runs);
    let mut filter = Retention::new(oldest_snapshot, |_| false).with_range_dels(range_dels.clone());
    let mut rw = Rewriter::new(now_ms, None);
    write_outputs(&mut *runs_iter(runs), &mut filter, &mut rw, &range_dels, outputs)
}

/// The range tombstones of memtables, fragmented together.
fn memory_range_dels(mems: &[Arc<Memtable>]) -> Fragments {
    Fragments::union(mems.iter().filter_map(|m| m.range_dels()).collect())
        .map_or_else(Fragments::default, |f| Fragments::clone(&f))
}

/// One iterator over memtables or runs (merged when there are several; the runs of a memory
/// level read in turn, as one child).
fn runs_iter(runs: &[Arc<Memtable>]) -> Box<dyn InternalIterator + Send> {
    let mut children = crate::memtable::level::children(runs, &KeyBounds::all());
    match children.len() {
        1 => children.swap_remove(0),
        _ => Box::new(MergingIter::new(children)),
    }
}

/// Runs memory merge `job` of `tree` (claimed by its component) outside the state lock and
/// installs the runs it built. Shadowed versions no snapshot needs are dropped; tombstones are
/// kept (older data may be on disk). Each output run is charged to the oldest WAL among the
/// inputs: a run cannot tell which WAL each entry came from, so the log is released no earlier
/// than the inputs' oldest data allows — never too early.
pub(super) fn merge_one(inner: &Arc<DbInner>, tree: usize, job: &MergeJob) -> Result<()> {
    let cpu0 = crate::stats::thread_cpu_nanos();
    // Only a partitioned component, which always has scratch, makes merge jobs.
    let Some(scratch) = inner.state.lock().mems[tree].merge_scratch() else {
        return Ok(());
    };
    let first_wal = job.inputs().map(|m| m.first_wal()).min().unwrap_or(u64::MAX);
    let max_seqno = job.inputs().map(|m| m.max_seqno()).max().unwrap_or(0);
    let input: u64 = job.lower.iter().map(|m| m.approximate_bytes() as u64).sum();
    let mut filter = Retention::new(inner.oldest_snapshot(), |_| false);
    let built = job.build(&mut filter, inner.memory.write_buffer_size(), &scratch);
    let mut st = inner.state.lock();
    match built {
        Ok(runs) => {
            let runs: Vec<Arc<Memtable>> = runs
                .into_iter()
                .map(|r| Arc::new(Memtable::from_run(r, first_wal, max_seqno).recycled_into(scratch.clone())))
                .collect();
            let output: u64 = runs.iter().map(|m| m.approximate_bytes() as u64).sum();
            // The upper input counts once, at its last step.
            let input = input
                + if job.last {
                    job.upper.approximate_bytes() as u64
                } else {
                    0
                };
            st.mems[tree].merged(job, Some(runs));
            inner.install_super_version(&st, tree);
            let cpu = crate::stats::thread_cpu_nanos().saturating_sub(cpu0);
            inner.counters.tree(tree).record_memory_merge(input, output, cpu);
            Ok(())
        }
        Err(e) => {
            st.mems[tree].merged(job, None);
            Err(e)
        }
    }
}

/// Switches the memtables of `tree` (or all trees) and waits until they are flushed.
pub(super) fn flush_trees(inner: &Arc<DbInner>, tree: Option<u32>) -> Result<()> {
    inner.check_writable()?;
    {
        let mut wal = inner.wal.lock();
        let mut st = inner.state.lock();
        let trees: Vec<usize> = match tree {
            Some(t) if st.versions.is_dropped(t as usize) => return Err(Error::TreeDropped { tree: t }),
            Some(t) if (t as usize) < st.mems.len() => vec![t as usize],
            Some(t) => return Err(Error::InvalidArgument(format!("unknown tree id {t}"))),
            None => (0..st.mems.len()).filter(|&t| !st.versions.is_dropped(t)).collect(),
        };
        for &t in &trees {
            inner
                .counters
                .tree(t)
                .record_manual_switch(st.mems[t].active_bytes() as u64);
        }
        super::write::switch_memtables(inner, &mut wal, &mut st, &trees)?;
    }
    let mut st = inner.state.lock();
    let trees: Vec<usize> = match tree {
        Some(t) => vec![t as usize],
        None => (0..st.mems.len()).collect(),
    };
    wait_flushed(inner, &mut st, &trees)
}

/// Waits until `trees` hold nothing unflushed in memory (their memtables were switched).
pub(super) fn wait_flushed(
    inner: &DbInner,
    st: &mut parking_lot::MutexGuard<'_, State>,
    trees: &[usize],
) -> Result<()> {
    loop {
        inner.check_writable()?;
        // A partitioned component writes all it holds in one full flush (once no merge runs).
        for &t in trees {
            let m = &mut st.mems[t];
            if m.is_partitioned() && m.holds_unflushed() && !m.has_flush() {
                m.choose_full_flush();
            }
        }
        if !trees.iter().any(|&t| st.mems[t].holds_unflushed()) {
            return Ok(());
        }
        inner.bg_cv.notify_all();
        inner.done_cv.wait_for(st, std::time::Duration::from_millis(100));
    }
}
