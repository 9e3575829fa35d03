//! Flush: writes the oldest immutable memtable of a tree to an L0 table, logs the edit, and
//! retires the WALs no tree needs any more.

use super::DbInner;
use crate::compaction::iter::CompactionFilter;
use crate::compaction::job::{write_outputs, Outputs};
use crate::error::{Error, Result};
use crate::memtable::Memtable;
use crate::version::VersionEdit;
use std::sync::Arc;

/// Body of the flush thread.
pub(super) fn flush_loop(inner: Arc<DbInner>) {
    while let Some((t, mem)) = inner.wait_for_work(|st| {
        let t = (0..st.mems.len()).find(|&t| !st.mems[t].imm.is_empty())?;
        st.flushing = true;
        st.mems[t].imm.front().cloned().map(|m| (t, m))
    }) {
        if let Err(e) = flush_one(&inner, t, &mem) {
            tracing::error!(error = %e, "flush failed");
            inner.set_poison(&e);
        }
        inner.state.lock().flushing = false;
        inner.done_cv.notify_all();
        inner.bg_cv.notify_all();
    }
}

fn flush_one(inner: &Arc<DbInner>, tree: usize, mem: &Arc<Memtable>) -> Result<()> {
    let table = inner.table_options(tree as u32, 0);
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
        for f in &out.files {
            edit.added.push((tree as u32, 0, f.clone()));
        }
        inner.stats.record_flush(tree, out.bytes_written);
        // The tree needs WALs from its oldest remaining memtable data on.
        let rest = st.mems[tree]
            .imm
            .iter()
            .skip(1)
            .map(|m| m.first_wal())
            .chain([st.mems[tree].active.first_wal()])
            .min()
            .unwrap_or(u64::MAX);
        edit.log_numbers
            .push((tree as u32, if rest == u64::MAX { st.wal_number } else { rest }));
        // Trees with no memtable data need no WAL before the current one; logging that lets
        // older WALs go (they are deleted only below every tree's logged number).
        for (t, m) in st.mems.iter().enumerate() {
            if t != tree && m.first_wal() == u64::MAX {
                edit.log_numbers.push((t as u32, st.wal_number));
            }
        }
        inner.log_and_apply(&mut st, edit)?;
        if st.mems[tree].imm.front().is_some_and(|m| Arc::ptr_eq(m, mem)) {
            st.mems[tree].imm.pop_front();
        }
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
        super::write::switch_memtables(inner, &mut wal, &mut st, &trees)?;
    }
    let mut st = inner.state.lock();
    loop {
        inner.check_writable()?;
        let waiting = match tree {
            Some(t) => !st.mems[t as usize].imm.is_empty(),
            None => st.mems.iter().any(|m| !m.imm.is_empty()),
        };
        if !waiting {
            return Ok(());
        }
        inner.bg_cv.notify_all();
        inner.done_cv.wait(&mut st);
    }
}
