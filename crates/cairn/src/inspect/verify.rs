//! Verifying a whole database directory.

use super::log::{check_manifest, check_wal};
use super::table::check_table;
use super::{Damage, VerifyReport};
use crate::env::{read_all, FileSystem};
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::options::parse_options_file;
use crate::version::{manifest, set};
use std::collections::HashSet;
use std::path::Path;

/// Verifies the database in `dir` without opening it (no lock, nothing written): CURRENT, the
/// manifest (every record's checksum and encoding, and that its edits apply), every live
/// table (every block's checksum, entries in order, filter units that hold every key of their
/// segment, properties and the manifest's entry agreeing with the data), every WAL recovery
/// would read (checksums, batch encoding, the database id), and the newest OPTIONS file.
/// Damage is collected, not returned: one damaged file does not stop the others being read.
///
/// # Errors
/// `InvalidArgument` when `dir` does not exist or holds no database; I/O errors listing it.
pub fn verify(fs: &dyn FileSystem, dir: &Path) -> Result<VerifyReport> {
    if !fs.exists(dir)? {
        return Err(Error::InvalidArgument(format!("{} does not exist", dir.display())));
    }
    let names = fs.list(dir)?;
    let kinds: Vec<FileKind> = names.iter().map(|n| filename::parse(n)).collect();
    let is_db_file = |k: &FileKind| {
        matches!(
            k,
            FileKind::Current | FileKind::Manifest(_) | FileKind::Table(_) | FileKind::Wal(_)
        )
    };
    if !kinds.iter().any(is_db_file) {
        return Err(Error::InvalidArgument(format!(
            "{} holds no cairn database (no CURRENT, manifest, table or WAL)",
            dir.display()
        )));
    }
    let mut report = VerifyReport::default();
    let current = filename::current(dir);

    // CURRENT and the manifest it names.
    let recovered = match manifest::read_current(fs, dir) {
        Ok((_, path)) => {
            report.checked.push(("current", current.clone()));
            check_manifest(fs, &path, &mut report);
            match set::replay(fs, dir) {
                Ok(r) => Some(r),
                Err(e) => {
                    report.damage.push(Damage::from_error(&path, &e));
                    None
                }
            }
        }
        Err(e) => {
            report.damage.push(Damage::from_error(&current, &e));
            None
        }
    };

    // Tables: the live ones against their manifest entries; the others alone.
    let mut live = HashSet::new();
    if let Some(r) = &recovered {
        for f in r.version.trees.iter().flat_map(|t| t.levels.iter().flatten()) {
            live.insert(f.number);
            check_table(fs, &filename::table(dir, f.number), Some(f), r.db_id, &mut report);
        }
    }
    for n in filename::numbers(&names, FileKind::Table) {
        let path = filename::table(dir, n);
        match &recovered {
            Some(_) if !live.contains(&n) => report.notes.push(format!(
                "{}: not in the manifest (left by an interrupted job or pending deletion; the next open deletes it)",
                path.display()
            )),
            Some(_) => {}
            None => check_table(fs, &path, None, None, &mut report),
        }
    }

    // WALs: those recovery replays (all of them when the manifest cannot tell which).
    let wals = filename::numbers(&names, FileKind::Wal);
    let min_log = recovered.as_ref().map_or(0, |r| {
        (0..r.tree_names.len() as u32)
            .map(|t| r.log_numbers.get(&t).copied().unwrap_or(0))
            .min()
            .unwrap_or(0)
    });
    if let Some(r) = &recovered {
        if min_log > 0 && !wals.contains(&min_log) {
            report.damage.push(Damage {
                file: r.manifest.clone(),
                offset: 0,
                what: format!(
                    "trees need {}, which is gone: the manifest has lost edits",
                    filename::wal(dir, min_log).display()
                ),
            });
        }
    }
    for n in wals {
        let path = filename::wal(dir, n);
        if n < min_log {
            report.notes.push(format!(
                "{}: obsolete (every tree is past it; the next open deletes it)",
                path.display()
            ));
            continue;
        }
        check_wal(fs, &path, recovered.as_ref().and_then(|r| r.db_id), &mut report);
    }

    // The newest OPTIONS file (older ones are obsolete and deleted at the next open).
    if let Some(&n) = filename::numbers(&names, FileKind::Options).last() {
        let path = filename::options(dir, n);
        report.checked.push(("options", path.clone()));
        match read_all(fs, &path) {
            Ok(bytes) => {
                if let Err(e) = parse_options_file(&bytes) {
                    report.damage.push(Damage {
                        file: path,
                        offset: 0,
                        what: e,
                    });
                }
            }
            Err(e) => report.damage.push(Damage::from_error(&path, &e)),
        }
    }
    // One damage found twice (the manifest's own check and its replay) is reported once.
    let mut seen = HashSet::new();
    report.damage.retain(|d| seen.insert((d.file.clone(), d.offset)));
    Ok(report)
}
