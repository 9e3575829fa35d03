//! Checkpoints: a consistent copy of the database at one moment, taken while writes continue,
//! that `Db::open` opens as it is.
//!
//! Under the WAL and state locks (held for no I/O, so writers wait microseconds) it takes the
//! installed version, every tree's log number, the WALs from the oldest one needed, the
//! active WAL's length and the last sequence number, and pins those WALs against deletion
//! (the version pins its tables). Then, with no lock: tables are hard-linked (copied where
//! the file system cannot link), the older WALs copied whole and the active one up to the
//! length taken (whole records: the write path hands each group to the OS under the WAL lock),
//! the OPTIONS file copied, and a new manifest written holding the version as one edit, with
//! CURRENT pointing at it; the directory is synced last. The copy opens at the state of that
//! moment: replaying the WALs rebuilds what the memtables held.

use super::inner::DbInner;
use crate::env::{copy_prefix, FileSystem};
use crate::error::{Error, Result};
use crate::filename;
use crate::version::manifest;
use crate::wal::WalWriter;
use std::path::Path;
use std::sync::Arc;

/// What a checkpoint took.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// Tables in the copy.
    pub tables: usize,
    /// Tables linked rather than copied.
    pub linked: usize,
    /// Bytes copied (tables that could not be linked, WALs, OPTIONS, the manifest).
    pub bytes_copied: u64,
    /// The last sequence number the copy holds.
    pub last_seqno: u64,
    /// Microseconds writers could not write (the locks held to take the state).
    pub writer_pause_micros: u64,
}

/// The state a checkpoint copies, taken under the locks.
pub(super) struct Taken {
    version: Arc<crate::version::Version>,
    tree_names: Vec<String>,
    log_numbers: Vec<(u32, u64)>,
    /// WAL numbers to copy, with the bytes to copy of each.
    wals: Vec<(u64, u64)>,
    last_seq: u64,
    next_file: u64,
    pin: u64,
}

pub(super) fn checkpoint(inner: &Arc<DbInner>, dir: &Path) -> Result<CheckpointInfo> {
    prepare_dir(&*inner.fs, dir)?;
    with_state(inner, |taken| {
        copy(inner, dir, taken, |from, to, f| {
            Ok(if inner.fs.hard_link(from, to).is_ok() {
                (true, 0)
            } else {
                (false, copy_prefix(&*inner.fs, from, to, f.size)?)
            })
        })
    })
}

/// Takes the state to copy (see the module comment), runs `f` on it with its WALs pinned,
/// then unpins them.
pub(super) fn with_state(
    inner: &Arc<DbInner>,
    f: impl FnOnce(&Taken) -> Result<CheckpointInfo>,
) -> Result<CheckpointInfo> {
    inner.check_writable()?;
    let t0 = std::time::Instant::now();
    let taken = {
        let wal = inner.wal.lock();
        let mut st = inner.state.lock();
        let active = wal.writer.as_ref().ok_or(Error::ReadOnly)?;
        let log_numbers = st.log_numbers(&[]);
        let oldest = log_numbers.iter().map(|&(_, n)| n).min().unwrap_or(st.wal_number);
        let mut wals: Vec<(u64, u64)> = st
            .old_wals
            .iter()
            .filter(|&(&n, _)| n >= oldest)
            .map(|(&n, &size)| (n, size))
            .collect();
        wals.push((active.log_number(), active.size()));
        *st.wal_pins.entry(oldest).or_insert(0) += 1;
        Taken {
            version: st.version().clone(),
            tree_names: st.versions.tree_names().to_vec(),
            log_numbers,
            wals,
            last_seq: inner.last_seq.load(std::sync::atomic::Ordering::Acquire),
            next_file: st.versions.next_file_number(),
            pin: oldest,
        }
    };
    let pause = t0.elapsed();
    let r = f(&taken);
    {
        let mut st = inner.state.lock();
        if let Some(n) = st.wal_pins.get_mut(&taken.pin) {
            *n -= 1;
            if *n == 0 {
                st.wal_pins.remove(&taken.pin);
            }
        }
    }
    let mut info = r?;
    info.writer_pause_micros = pause.as_micros() as u64;
    Ok(info)
}

/// The target must not exist or be an empty directory: a checkpoint never mixes with files
/// already there.
pub(super) fn prepare_dir(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    if fs.exists(dir)? {
        let names = fs.list(dir)?;
        if !names.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "checkpoint directory {} is not empty ({} entries): give a new or empty directory",
                dir.display(),
                names.len()
            )));
        }
    }
    fs.create_dir_all(dir)?;
    if let Some(parent) = dir.parent() {
        fs.sync_dir(parent)?;
    }
    Ok(())
}

/// Writes the copy of `t` into `dir`; each table goes through `table(from, to, meta)`, which
/// returns whether it linked it and the bytes it copied.
pub(super) fn copy(
    inner: &DbInner,
    dir: &Path,
    t: &Taken,
    mut table: impl FnMut(&Path, &Path, &crate::version::FileMeta) -> Result<(bool, u64)>,
) -> Result<CheckpointInfo> {
    let fs = &*inner.fs;
    let mut info = CheckpointInfo {
        last_seqno: t.last_seq,
        ..CheckpointInfo::default()
    };
    for f in t.version.trees.iter().flat_map(|tv| tv.levels.iter().flatten()) {
        let (from, to) = (filename::table(&inner.dir, f.number), filename::table(dir, f.number));
        info.tables += 1;
        let (linked, bytes) = table(&from, &to, f)?;
        info.linked += usize::from(linked);
        info.bytes_copied += bytes;
    }
    for &(n, len) in &t.wals {
        info.bytes_copied += copy_prefix(fs, &filename::wal(&inner.dir, n), &filename::wal(dir, n), len)?;
    }
    let options = filename::options(&inner.dir, inner.options_number);
    if fs.exists(&options)? {
        let len = fs.file_size(&options)?;
        info.bytes_copied += copy_prefix(fs, &options, &filename::options(dir, inner.options_number), len)?;
    }
    // The manifest takes a number above every file copied.
    let number = t.next_file.max(inner.options_number + 1);
    let mut edit = t.version.snapshot_edit(&t.tree_names);
    edit.db_id = Some(inner.db_id);
    edit.next_file_number = Some(number + 1);
    edit.last_seqno = Some(t.last_seq);
    edit.log_numbers = t.log_numbers.clone();
    let mut w = WalWriter::new(fs.create(&filename::manifest(dir, number))?, number);
    manifest::append_durably(&mut w, &edit.encode())?;
    info.bytes_copied += w.size();
    fs.sync_dir(dir)?;
    manifest::set_current(fs, dir, number)?;
    Ok(info)
}
