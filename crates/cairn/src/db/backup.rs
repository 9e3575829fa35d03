//! Incremental backups (layout: `docs/format/backup.md`): successive backups into one
//! directory share the tables they have in common, so each copies only the tables written
//! since the last one.
//!
//! ```text
//! DIR/shared/NNNNNN-IIIIIIIIIIIIIIII.sst   a table (file number, database id in hex), copied once
//! DIR/backup-KKKKKK/                       backup K: a checkpoint without its tables
//!     CURRENT  MANIFEST-*  OPTIONS-*  *.wal
//!     TABLES                               "<number> <size> <shared name>\n" per table, then
//!                                          "end <count>\n": written last, so a backup whose
//!                                          TABLES lacks that line is incomplete and ignored
//! ```
//! A backup takes the state as a checkpoint does (writers pause only while it is taken) and
//! copies each table the shared directory lacks through a temporary name, synced, then renamed.
//! A restore copies the newest complete backup's files and its tables into an empty
//! directory, checking each table's size, and the result opens as the database did.

use super::checkpoint::{copy, prepare_dir, with_state, CheckpointInfo};
use super::inner::DbInner;
use crate::env::{copy_prefix, read_all, FileSystem};
use crate::error::{Error, Result};
use crate::filename;
use std::path::Path;
use std::sync::Arc;

/// What a backup did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackupInfo {
    /// Its id: backups of one directory count up from 1.
    pub id: u64,
    /// Tables it needs.
    pub tables: usize,
    /// Of those, the ones an earlier backup had already copied.
    pub tables_shared: usize,
    /// Bytes copied (new tables, WALs, OPTIONS, the manifest).
    pub bytes_copied: u64,
    /// The last sequence number it holds.
    pub last_seqno: u64,
    /// Microseconds writers could not write while the state was taken.
    pub writer_pause_micros: u64,
}

/// What a restore did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestoreInfo {
    /// The backup restored.
    pub id: u64,
    /// Tables copied.
    pub tables: usize,
    /// Bytes copied.
    pub bytes_copied: u64,
}

const PREFIX: &str = "backup-";

fn backup_path(dir: &Path, id: u64) -> std::path::PathBuf {
    dir.join(format!("{PREFIX}{id:06}"))
}

/// Ids of the backups in `dir` (complete or not), ascending.
fn ids(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<u64>> {
    if !fs.exists(dir)? {
        return Ok(Vec::new());
    }
    let mut ids: Vec<u64> = fs
        .list(dir)?
        .iter()
        .filter_map(|n| n.strip_prefix(PREFIX)?.parse().ok())
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

pub(super) fn backup(inner: &Arc<DbInner>, dir: &Path) -> Result<BackupInfo> {
    let fs = &*inner.fs;
    let shared = dir.join("shared");
    fs.create_dir_all(&shared)?;
    let id = ids(fs, dir)?.last().map_or(1, |l| l + 1);
    let target = backup_path(dir, id);
    prepare_dir(fs, &target)?;
    let mut lines = String::new();
    let mut shared_count = 0usize;
    let info: CheckpointInfo = with_state(inner, |taken| {
        let info = copy(inner, &target, taken, |from, _, f| {
            let name = format!("{:06}-{:016x}.sst", f.number, inner.db_id);
            lines.push_str(&format!("{} {} {name}\n", f.number, f.size));
            let at = shared.join(&name);
            if fs.exists(&at)? && fs.file_size(&at)? == f.size {
                shared_count += 1;
                return Ok((false, 0));
            }
            let tmp = shared.join(format!("{name}.tmp"));
            let n = copy_prefix(fs, from, &tmp, f.size)?;
            fs.rename(&tmp, &at)?;
            Ok((false, n))
        })?;
        fs.sync_dir(&shared)?;
        Ok(info)
    })?;
    // The list last: its final line makes the backup complete.
    lines.push_str(&format!("end {}\n", info.tables));
    filename::write_atomically(fs, &target.join("TABLES"), lines.as_bytes())?;
    fs.sync_dir(&target)?;
    Ok(BackupInfo {
        id,
        tables: info.tables,
        tables_shared: shared_count,
        bytes_copied: info.bytes_copied + lines.len() as u64,
        last_seqno: info.last_seqno,
        writer_pause_micros: info.writer_pause_micros,
    })
}

/// The tables a complete backup lists: (number, size, shared name); `None` when incomplete.
fn tables(fs: &dyn FileSystem, backup: &Path) -> Result<Option<Vec<(u64, u64, String)>>> {
    let path = backup.join("TABLES");
    if !fs.exists(&path)? {
        return Ok(None);
    }
    let text = String::from_utf8(read_all(fs, &path)?).map_err(|_| Error::corruption(&path, 0, "not UTF-8"))?;
    let mut out = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["end", n] => {
                return match n.parse::<usize>() {
                    Ok(n) if n == out.len() => Ok(Some(out)),
                    _ => Err(Error::corruption(
                        &path,
                        0,
                        format!("the list ends with {line:?} after {} tables", out.len()),
                    )),
                };
            }
            [number, size, name] if name.ends_with(".sst") && !name.contains('/') => {
                let parse = |w: &str| {
                    w.parse::<u64>()
                        .map_err(|_| Error::corruption(&path, 0, format!("bad line {line:?}")))
                };
                out.push((parse(number)?, parse(size)?, (*name).to_string()));
            }
            _ => return Err(Error::corruption(&path, 0, format!("bad line {line:?}"))),
        }
    }
    Ok(None)
}

/// Restores the newest complete backup in `backup_dir` into `db_dir` (new, or an empty
/// directory); `Db::open(db_dir)` then opens the database as it was when that backup was taken.
///
/// # Errors
/// `InvalidArgument` when `db_dir` holds anything or `backup_dir` has no complete backup;
/// `Corruption` for a damaged list or a shared table of the wrong size; I/O errors.
pub fn restore(fs: &dyn FileSystem, backup_dir: &Path, db_dir: &Path) -> Result<RestoreInfo> {
    let mut newest = None;
    for id in ids(fs, backup_dir)?.into_iter().rev() {
        if let Some(list) = tables(fs, &backup_path(backup_dir, id))? {
            newest = Some((id, list));
            break;
        }
    }
    let Some((id, list)) = newest else {
        return Err(Error::InvalidArgument(format!(
            "{} holds no complete backup",
            backup_dir.display()
        )));
    };
    prepare_dir(fs, db_dir)?;
    let from = backup_path(backup_dir, id);
    let mut info = RestoreInfo {
        id,
        ..RestoreInfo::default()
    };
    for name in fs.list(&from)? {
        if name == "TABLES" {
            continue;
        }
        let len = fs.file_size(&from.join(&name))?;
        info.bytes_copied += copy_prefix(fs, &from.join(&name), &db_dir.join(&name), len)?;
    }
    for (number, size, name) in list {
        let src = backup_dir.join("shared").join(&name);
        let found = fs.file_size(&src)?;
        if found != size {
            return Err(Error::corruption(
                &src,
                0,
                format!("backup {id} needs {size} bytes of table {number}, the shared copy has {found}"),
            ));
        }
        info.bytes_copied += copy_prefix(fs, &src, &filename::table(db_dir, number), size)?;
        info.tables += 1;
    }
    fs.sync_dir(db_dir)?;
    Ok(info)
}
