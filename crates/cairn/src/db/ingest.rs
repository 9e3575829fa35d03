//! Ingestion of external tables (`external.rs`), all or none:
//!
//! 1. Every table is read in full and checked (checksums, order, external marks) before
//!    anything changes.
//! 2. Each is linked (`move_files`) or copied into the directory under a new file number,
//!    synced, and the directory synced: files no manifest names yet, deleted by the next open
//!    if the process dies now.
//! 3. Under the WAL lock (writers wait): a table overlapping data still in memory has the
//!    tree's memtables flushed first, so every older version of its keys is on disk.
//! 4. Under the state lock: the tables get the next sequence numbers (one each, in the order
//!    given: a later table's version of a key wins), are placed (`compaction/ingest.rs`) and
//!    logged in one manifest edit with the last sequence number; the readers' sequence number
//!    is published after the install. The edit is the commit point.

use super::inner::DbInner;
use crate::compaction::ingest::ingest_level;
use crate::error::{Error, Result};
use crate::external::{self, Checked};
use crate::filename;
use crate::format::ikey;
use crate::iter::KeyBounds;
use crate::version::{FileMeta, VersionEdit};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// How [`Tree::ingest`](crate::Tree::ingest) (and `Db::ingest`, through the default tree) adds tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestOptions {
    /// Link each table into the database and remove its source path once ingested (a copy
    /// where the file system cannot link); `false` (the default): copy, leaving the source.
    pub move_files: bool,
    /// Flush the tree's memtables when a table overlaps data still in memory (the default);
    /// `false`: refuse such an ingestion with `Busy` instead of stalling writes for a flush.
    pub allow_blocking_flush: bool,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            move_files: false,
            allow_blocking_flush: true,
        }
    }
}

/// What an ingestion did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IngestInfo {
    /// Each table, in the order given.
    pub tables: Vec<IngestedTable>,
    /// The tree's memtables were flushed first (a table overlapped them).
    pub flushed: bool,
}

/// One ingested table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestedTable {
    /// The path it was ingested from.
    pub source: PathBuf,
    /// Its file number in the database.
    pub file_number: u64,
    /// The level it was placed at.
    pub level: u32,
    /// The sequence number its entries were given.
    pub seqno: u64,
    /// Linked rather than copied.
    pub linked: bool,
}

/// Ingests the external tables at `paths` into `tree`.
pub(super) fn ingest(inner: &Arc<DbInner>, tree: u32, paths: &[PathBuf], opts: &IngestOptions) -> Result<IngestInfo> {
    inner.check_writable()?;
    for (i, p) in paths.iter().enumerate() {
        if paths[..i].contains(p) {
            return Err(Error::InvalidArgument(format!("{} is named twice", p.display())));
        }
    }
    let checked = check_all(inner, paths)?;
    if checked.is_empty() {
        return Ok(IngestInfo::default());
    }
    let mut placed: Vec<(u64, bool)> = Vec::new();
    let r = bring_in(inner, &checked, opts.move_files, &mut placed)
        .and_then(|()| commit(inner, tree, &checked, &placed, opts));
    let committed = r.is_ok();
    {
        let mut st = inner.state.lock();
        for (n, _) in &placed {
            st.pending_outputs.remove(n);
        }
    }
    if !committed && !inner.life.is_poisoned() {
        // Nothing names them (a failed manifest write poisons, and then nothing is deleted).
        for (n, _) in &placed {
            let _ = inner.fs.remove_file(&filename::table(&inner.dir, *n));
        }
    }
    let info = r?;
    if opts.move_files {
        // Ingested: the sources' names go (a failure leaves a name, never loses data).
        for c in &checked {
            let _ = inner.fs.remove_file(&c.path);
        }
    }
    inner.bg_cv.notify_all();
    Ok(info)
}

/// Checks every table (`external::check`), on as many threads as the machine has cores.
fn check_all(inner: &DbInner, paths: &[PathBuf]) -> Result<Vec<Checked>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(paths.len())
        .max(1);
    let per = paths.len().div_ceil(threads).max(1);
    let fs = &*inner.fs;
    std::thread::scope(|s| {
        let parts: Vec<_> = paths
            .chunks(per)
            .map(|chunk| s.spawn(move || chunk.iter().map(|p| external::check(fs, p)).collect::<Result<Vec<_>>>()))
            .collect();
        let mut all = Vec::with_capacity(paths.len());
        for p in parts {
            all.extend(p.join().unwrap_or_else(|e| std::panic::resume_unwind(e))?);
        }
        Ok(all)
    })
}

/// Links or copies each table into the directory under a new number (kept from deletion as a
/// pending output), synced, then syncs the directory.
fn bring_in(inner: &DbInner, checked: &[Checked], link: bool, placed: &mut Vec<(u64, bool)>) -> Result<()> {
    let fs = &*inner.fs;
    for c in checked {
        let n = inner.allocate_output();
        let to = filename::table(&inner.dir, n);
        let linked = link && fs.hard_link(&c.path, &to).is_ok();
        placed.push((n, linked));
        if linked {
            // The writer synced it; a link adds no data, but the file may come from elsewhere.
            fs.open_append(&to)?.sync_data()?;
        } else {
            crate::env::copy_prefix(fs, &c.path, &to, c.meta.size)?;
        }
    }
    fs.sync_dir(&inner.dir)
}

/// Whether memory component data of the tree lies within `[lo, hi]`: a point entry or a range
/// tombstone of any memtable.
fn memory_overlaps(mems: &[Arc<crate::memtable::Memtable>], lo: &[u8], hi: &[u8]) -> bool {
    let bounds = KeyBounds {
        lo: Bound::Included(lo.to_vec()),
        hi: Bound::Included(hi.to_vec()),
    };
    mems.iter().any(|m| {
        m.holds_within(&bounds)
            || m.range_dels().is_some_and(|rd| {
                rd.tombstones()
                    .any(|t| t.start.as_slice() <= hi && lo < t.end.as_slice())
            })
    })
}

/// Steps 3 and 4: makes memory hold nothing in the tables' ranges, then places and logs them.
fn commit(
    inner: &Arc<DbInner>,
    tree: u32,
    checked: &[Checked],
    placed: &[(u64, bool)],
    opts: &IngestOptions,
) -> Result<IngestInfo> {
    let t = tree as usize;
    let mut wal = inner.wal.lock();
    let mut st = inner.state.lock();
    let mut flushed = false;
    loop {
        if st.versions.is_dropped(t) {
            return Err(Error::TreeDropped { tree });
        }
        let mems = st
            .mems
            .get(t)
            .ok_or_else(|| Error::InvalidArgument(format!("unknown tree id {tree}")))?
            .read_view();
        if !checked.iter().any(|c| {
            let (lo, hi) = c.user_range();
            memory_overlaps(&mems, lo, hi)
        }) {
            break;
        }
        if flushed {
            // Writers wait on the WAL lock: nothing new came, and the flush left nothing.
            return Err(Error::Busy(
                "memory still overlaps the ingested tables after a flush".into(),
            ));
        }
        if !opts.allow_blocking_flush {
            return Err(Error::Busy(
                "an ingested table overlaps writes still in memory (flush first, or allow_blocking_flush)".into(),
            ));
        }
        super::write::switch_memtables(inner, &mut wal, &mut st, &[t])?;
        super::flush::wait_flushed(inner, &mut st, &[t])?;
        flushed = true;
    }
    // The WAL says the next numbers go to tables, ahead of the next batch (recovery checks
    // that batches follow on), and is synced with every log before it: after a power cut the
    // history is a prefix, as a flush keeps it. Outside the state lock (background jobs need
    // it); writers still wait on the WAL lock. From here the numbers are spent, whatever
    // becomes of the edit.
    drop(st);
    let first = inner.last_seq.load(Ordering::Acquire) + 1;
    let last = first + checked.len() as u64 - 1;
    let writer = wal.writer()?;
    let logged = writer
        .add_record(&crate::wal::skip_record(first, last))
        .and_then(|_| writer.flush())
        .and_then(|()| super::write::sync_logs(inner, writer));
    if let Err(e) = logged {
        inner.set_poison(&e);
        return Err(e);
    }
    let mut st = inner.state.lock();
    let tv = st.version().trees.get(t).cloned().unwrap_or_default();
    let deepest = tv.deepest as usize;
    // The tables placed so far by this ingestion count as files of their levels.
    let mut ours: Vec<(usize, Vec<u8>, Vec<u8>)> = Vec::new();
    let mut next_group = tv.level(0).iter().map(|f| f.l0_group).max().unwrap_or(0) + 1;
    let mut edit = VersionEdit::default();
    let mut info = IngestInfo {
        tables: Vec::new(),
        flushed,
    };
    for (i, (c, &(number, linked))) in checked.iter().zip(placed).enumerate() {
        let seqno = first + i as u64;
        let (lo, hi) = c.user_range();
        let level = ingest_level(lo, hi, deepest, |l| {
            let files = tv
                .level(l)
                .iter()
                .map(|f| (f.smallest_user_key(), f.largest_user_key()));
            let running = st
                .writing
                .iter()
                .filter(move |w| w.0 == t && w.1 == l)
                .map(|w| (w.2.as_slice(), w.3.as_slice()));
            let mine = ours
                .iter()
                .filter(move |o| o.0 == l)
                .map(|o| (o.1.as_slice(), o.2.as_slice()));
            files.chain(running).chain(mine).collect::<Vec<_>>()
        });
        ours.push((level, lo.to_vec(), hi.to_vec()));
        let l0_group = if level == 0 {
            next_group += 1;
            next_group - 1
        } else {
            0
        };
        edit.added.push((
            tree,
            level as u32,
            FileMeta {
                number,
                smallest: ikey::read_as(&c.meta.smallest, seqno),
                largest: ikey::read_as(&c.meta.largest, seqno),
                smallest_seqno: seqno,
                largest_seqno: seqno,
                l0_group,
                global_seqno: seqno,
                ..c.meta.clone()
            },
        ));
        info.tables.push(IngestedTable {
            source: c.path.clone(),
            file_number: number,
            level: level as u32,
            seqno,
            linked,
        });
    }
    edit.last_seqno = Some(last);
    // The tables' answers change for keys the key-value cache may hold: no fill is taken from
    // here until the new sequence number is what readers load (`cache/kv.rs`).
    if let Some(kv) = &inner.kv {
        kv.begin_change(tree);
    }
    let r = inner.log_and_apply(&mut st, edit, &[]);
    inner.last_seq.store(last, Ordering::Release);
    if let Some(kv) = &inner.kv {
        kv.end_change(tree);
    }
    drop(st);
    drop(wal);
    r.map(|()| info)
}

/// The paths of `tables`, for [`ingest`].
pub(super) fn paths<P: AsRef<Path>>(tables: &[P]) -> Vec<PathBuf> {
    tables.iter().map(|p| p.as_ref().to_path_buf()).collect()
}
