//! Flush: writes the oldest immutable memtable of a tree to an L0 table, logs the edit (with
//! every tree's log number, so older WALs can go), and installs it.

use super::inner::DbInner;
use crate::compaction::iter::CompactionFilter;
use crate::compaction::job::{write_outputs, Outputs};
use crate::error::{Error, Result};
use crate::memtable::Memtable;
use crate::version::VersionEdit;
use std::sync::Arc;

/// Flushes `mem`, the oldest immutable memtable of `tree`.
pub(super) fn flush_one(inner: &Arc<DbInner>, tree: usize, mem: &Arc<Memtable>) -> Result<()> {
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
    let mut filter = CompactionFilter::new(inner.oldest_snapshot(), |_| false);
    let result = write_outputs(
        &mut mem.iter(),
        &mut filter,
        &mut Outputs {
            fs: &*inner.fs,
            dir: &inner.dir,
            table,
            target_file_size: u64::MAX,
            stats: inner.io.clone(),
            new_file_number: &mut alloc,
        },
    );
    let mut st = inner.state.lock();
    let r = result.and_then(|out| {
        let mut edit = VersionEdit::default();
        edit.added.extend(out.files.into_iter().map(|f| (tree as u32, 0, f)));
        // Every tree's log number: the flushed tree needs WALs from its remaining memtable
        // data on; trees with no memtable data need none before the current one (logging that
        // lets older WALs go: they are deleted only below every tree's logged number).
        edit.log_numbers = st.log_numbers(Some(mem));
        inner.log_and_apply(&mut st, edit, Some(mem))?;
        inner.counters.tree(tree).record_flush(out.bytes_written);
        st.mems[tree].flushed(mem);
        inner.install_super_version(&st, tree);
        Ok(())
    });
    for n in outputs {
        st.pending_outputs.remove(&n);
    }
    drop(st);
    inner.delete_obsolete_files();
    r
}

/// Switches the memtables of `tree` (or all trees) and waits until they are flushed.
pub(super) fn flush_trees(inner: &Arc<DbInner>, tree: Option<u32>) -> Result<()> {
    inner.check_writable()?;
    {
        let mut wal = inner.wal.lock();
        let mut st = inner.state.lock();
        let trees: Vec<usize> = match tree {
            Some(t) if (t as usize) < st.mems.len() => vec![t as usize],
            Some(t) => return Err(Error::InvalidArgument(format!("unknown tree id {t}"))),
            None => (0..st.mems.len()).collect(),
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
    loop {
        inner.check_writable()?;
        let waiting = match tree {
            Some(t) => st.mems[t as usize].has_immutable(),
            None => st.mems.iter().any(|m| m.has_immutable()),
        };
        if !waiting {
            return Ok(());
        }
        inner.bg_cv.notify_all();
        inner.done_cv.wait_for(&mut st, std::time::Duration::from_millis(100));
    }
}
