//! The version set: the current [`Version`], the versions readers still hold, the trees, the
//! file-number counter, and the manifest that makes every change durable before it is
//! installed (spec: `docs/format/manifest.md`).
//!
//! A failed manifest append or sync is returned to the caller, which must poison the database:
//! the edit's bytes may be in the file, so nothing it could reference may be deleted.

use super::{manifest, Version, VersionEdit};
use crate::env::{FileSystem, ReadOptions};
use crate::error::{Error, Result};
use crate::filename;
use crate::wal::{RecoveryMode, WalReader, WalWriter};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

/// What replaying a manifest yields.
#[derive(Debug)]
pub(crate) struct Recovered {
    pub version: Version,
    pub tree_names: Vec<String>,
    /// Per tree, the oldest WAL it needs (trees never flushed have none).
    pub log_numbers: BTreeMap<u32, u64>,
    pub next_file: u64,
    pub last_seq: u64,
    /// None for a database created before ids existed: it gets one now.
    pub db_id: Option<u64>,
    /// The manifest replayed, and its number.
    pub manifest: PathBuf,
    pub manifest_number: u64,
}

/// Replays the manifest CURRENT names, and checks that every live table exists with the size
/// the manifest recorded: a manifest that lost edits (damage that reads as a torn tail) names
/// tables compactions already deleted; a manifest from another database names files of other
/// sizes. Both are corruption here, before recovery deletes "obsolete" files and makes the loss
/// permanent.
///
/// # Errors
/// `Corruption` naming the manifest or the table; I/O errors.
pub(crate) fn recover(fs: &dyn FileSystem, dir: &Path) -> Result<Recovered> {
    let r = replay(fs, dir)?;
    let path = &r.manifest;
    for f in r.version.trees.iter().flat_map(|t| t.levels.iter().flatten()) {
        let table = filename::table(dir, f.number);
        match fs.file_size(&table) {
            Ok(size) if size == f.size => {}
            Ok(size) => {
                return Err(Error::corruption(
                    &table,
                    size,
                    format!(
                        "{} lists this table with {} bytes; the file has {size}",
                        path.display(),
                        f.size
                    ),
                ))
            }
            Err(e) => {
                return Err(Error::corruption(
                    &table,
                    0,
                    format!("{} lists this table, which cannot be read: {e}", path.display()),
                ))
            }
        }
    }
    Ok(r)
}

/// Replays the manifest CURRENT names into the version it describes (tables unchecked).
///
/// # Errors
/// `Corruption` naming CURRENT or the manifest; I/O errors.
pub(crate) fn replay(fs: &dyn FileSystem, dir: &Path) -> Result<Recovered> {
    let (number, path) = manifest::read_current(fs, dir)?;
    let file = fs.open_read(&path, ReadOptions::default()).map_err(|e| match e {
        // CURRENT names a manifest that is not there: CURRENT is damaged or from elsewhere.
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => Error::corruption(
            filename::current(dir),
            0,
            format!("CURRENT names {}, which does not exist", path.display()),
        ),
        e => e,
    })?;
    let mut reader = WalReader::new(file, &path, number, RecoveryMode::PointInTime);
    let mut r = Recovered {
        version: Version::default(),
        tree_names: Vec::new(),
        log_numbers: BTreeMap::new(),
        next_file: 2,
        last_seq: 0,
        db_id: None,
        manifest: path.clone(),
        manifest_number: number,
    };
    let mut records = 0;
    while let Some(rec) = reader.next_record()? {
        records += 1;
        let bad = |what: String| Error::corruption(&path, rec.offset, what);
        let edit = VersionEdit::decode(&rec.body).map_err(|e| bad(format!("version edit: {e}")))?;
        r.version = r.version.apply(&edit).map_err(bad)?;
        apply_names(&mut r.tree_names, &edit).map_err(bad)?;
        r.log_numbers.extend(edit.log_numbers.iter().copied());
        if let Some(n) = edit.next_file_number {
            r.next_file = r.next_file.max(n);
        }
        if let Some(s) = edit.last_seqno {
            r.last_seq = r.last_seq.max(s);
        }
        if let Some(id) = edit.db_id {
            if r.db_id.is_some_and(|old| old != id) {
                return Err(bad(format!("database id changes from {:?} to {id}", r.db_id)));
            }
            r.db_id = Some(id);
        }
    }
    if records == 0 || r.tree_names.is_empty() {
        return Err(Error::corruption(&path, 0, "manifest holds no database description"));
    }
    r.next_file = r.next_file.max(number + 1);
    Ok(r)
}

/// Whether tree `tree` of `names` (by id) was dropped: its name is empty (names never are).
pub(crate) fn is_dropped(names: &[String], tree: usize) -> bool {
    names.get(tree).is_some_and(String::is_empty)
}

/// Applies `edit`'s tree creations and drops to the names by id, in id order (a snapshot edit
/// creates the trees around a dropped id). An empty name marks a dropped id: names are never
/// empty, and ids are never reused.
fn apply_names(names: &mut Vec<String>, edit: &VersionEdit) -> Result<(), String> {
    let mut changes: Vec<(u32, Option<&String>)> = edit.new_trees.iter().map(|(id, name)| (*id, Some(name))).collect();
    changes.extend(edit.dropped_trees.iter().map(|&id| (id, None)));
    // Stable: a creation before a drop of the same id.
    changes.sort_by_key(|&(id, _)| id);
    for (id, name) in changes {
        let at = id as usize;
        match name {
            // Created again in a later snapshot (it lists every tree): nothing changes.
            Some(name) if names.get(at) == Some(name) => {}
            Some(name) if at == names.len() => names.push(name.clone()),
            Some(name) => return Err(format!("tree {id} ({name}) created out of order")),
            None if at < names.len() => names[at].clear(),
            // A snapshot's dropped id, in its place.
            None if at == names.len() => names.push(String::new()),
            None => return Err(format!("edit drops tree {id}, which was never created")),
        }
    }
    Ok(())
}

/// The current version, the manifest and the file-number counter.
#[derive(Debug)]
pub(crate) struct VersionSet {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    db_id: u64,
    current: Arc<Version>,
    /// Versions handed out (readers may still hold them; their files stay).
    live: Vec<Weak<Version>>,
    tree_names: Vec<String>,
    next_file_number: u64,
    /// The manifest being appended to; `None` in a read-only open, which never writes.
    manifest: Option<WalWriter>,
    manifest_number: u64,
    /// Each tree's log number as the manifest records it (the oldest WAL recovery would read
    /// for it). WALs are deleted only below the smallest, so the WAL every tree's durable log
    /// number names always exists (recovery checks this).
    log_numbers: Vec<u64>,
    max_manifest_size: u64,
}

/// Everything a new manifest starts from.
#[derive(Debug)]
pub(crate) struct Initial {
    pub db_id: u64,
    pub version: Version,
    pub tree_names: Vec<String>,
    pub manifest_number: u64,
    /// The counter after every number allocated so far (this manifest's included).
    pub next_file_number: u64,
    pub last_seq: u64,
    /// Every tree's log number.
    pub log_number: u64,
    pub max_manifest_size: u64,
}

impl VersionSet {
    /// Writes a new manifest holding a snapshot of `init` and syncs it. CURRENT is not touched:
    /// the caller points it at [`manifest_number`](Self::manifest_number) with
    /// [`make_current`](Self::make_current) once everything else the new state needs is
    /// durable.
    ///
    /// # Errors
    /// I/O errors.
    pub fn create(fs: Arc<dyn FileSystem>, dir: &Path, init: Initial) -> Result<Self> {
        let mut snap = init.version.snapshot_edit(&init.tree_names);
        snap.db_id = Some(init.db_id);
        snap.next_file_number = Some(init.next_file_number);
        snap.last_seqno = Some(init.last_seq);
        let trees = init.tree_names.len();
        snap.log_numbers = (0..trees as u32).map(|t| (t, init.log_number)).collect();
        let mut manifest = WalWriter::new(
            fs.create(&filename::manifest(dir, init.manifest_number))?,
            init.manifest_number,
        );
        manifest::append_durably(&mut manifest, &snap.encode())?;
        let current = Arc::new(init.version);
        Ok(VersionSet {
            fs,
            dir: dir.to_path_buf(),
            db_id: init.db_id,
            live: vec![Arc::downgrade(&current)],
            current,
            tree_names: init.tree_names,
            next_file_number: init.next_file_number,
            manifest: Some(manifest),
            manifest_number: init.manifest_number,
            log_numbers: vec![init.log_number; trees],
            max_manifest_size: init.max_manifest_size,
        })
    }

    /// The recovered state as it is, with no manifest to append to: every
    /// [`log_and_apply`](Self::log_and_apply) fails with `ReadOnly`.
    pub fn read_only(fs: Arc<dyn FileSystem>, dir: &Path, rec: Recovered, db_id: u64) -> Self {
        let current = Arc::new(rec.version);
        let log_numbers = (0..rec.tree_names.len() as u32)
            .map(|t| rec.log_numbers.get(&t).copied().unwrap_or(0))
            .collect();
        VersionSet {
            fs,
            dir: dir.to_path_buf(),
            db_id,
            live: vec![Arc::downgrade(&current)],
            current,
            tree_names: rec.tree_names,
            next_file_number: rec.next_file,
            manifest: None,
            manifest_number: rec.manifest_number,
            log_numbers,
            max_manifest_size: u64::MAX,
        }
    }

    /// Points CURRENT at this set's manifest, durably.
    ///
    /// # Errors
    /// I/O errors.
    pub fn make_current(&self) -> Result<()> {
        manifest::set_current(&*self.fs, &self.dir, self.manifest_number)
    }

    /// The installed version.
    pub fn current(&self) -> &Arc<Version> {
        &self.current
    }

    /// Tree names by id.
    pub fn tree_names(&self) -> &[String] {
        &self.tree_names
    }

    /// Whether tree `tree` was dropped.
    pub fn is_dropped(&self, tree: usize) -> bool {
        is_dropped(&self.tree_names, tree)
    }

    /// Allocates a file number.
    pub fn new_file_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number += 1;
        n
    }

    /// The next number [`new_file_number`](Self::new_file_number) would return.
    pub fn next_file_number(&self) -> u64 {
        self.next_file_number
    }

    /// The live manifest's number.
    pub fn manifest_number(&self) -> u64 {
        self.manifest_number
    }

    /// The smallest log number any tree's durable state names: WALs below it hold nothing
    /// recovery needs.
    pub fn min_logged_wal(&self) -> Option<u64> {
        self.log_numbers.iter().copied().min()
    }

    /// Numbers of the files of the current version and of every version a reader still holds.
    pub fn live_files(&mut self) -> HashSet<u64> {
        self.live.retain(|w| w.strong_count() > 0);
        let mut live: HashSet<u64> = self.current.file_numbers().collect();
        for v in self.live.iter().filter_map(|w| w.upgrade()) {
            live.extend(v.file_numbers());
        }
        live
    }

    /// Logs `edit` durably in the manifest (with the file counter and `last_seq`), then
    /// installs the version it produces; starts a new manifest when this one passed
    /// `max_manifest_size`, taking every tree's log number from `log_numbers`.
    ///
    /// # Errors
    /// `Corruption` if the edit does not apply; I/O errors from the manifest (the caller must
    /// poison the database: the edit may or may not be in the file). When the rotation fails
    /// the edit is already installed.
    pub fn log_and_apply(
        &mut self,
        mut edit: VersionEdit,
        last_seq: u64,
        log_numbers: impl FnOnce() -> Vec<(u32, u64)>,
    ) -> Result<()> {
        edit.next_file_number = Some(self.next_file_number);
        edit.last_seqno = Some(last_seq);
        let next = self
            .current
            .apply(&edit)
            .map_err(|e| Error::corruption(&self.dir, 0, format!("version edit does not apply: {e}")))?;
        // The names as the edit leaves them, checked before the manifest is written.
        let names = if edit.new_trees.is_empty() && edit.dropped_trees.is_empty() {
            None
        } else {
            let mut names = self.tree_names.clone();
            apply_names(&mut names, &edit)
                .map_err(|e| Error::corruption(&self.dir, 0, format!("version edit does not apply: {e}")))?;
            Some(names)
        };
        let manifest = self.manifest.as_mut().ok_or(Error::ReadOnly)?;
        manifest::append_durably(manifest, &edit.encode())?;
        self.note_log_numbers(&edit.log_numbers);
        if let Some(names) = names {
            self.tree_names = names;
        }
        let next = Arc::new(next);
        self.live.retain(|w| w.strong_count() > 0);
        self.live.push(Arc::downgrade(&next));
        self.current = next;
        if self.manifest.as_ref().is_some_and(|m| m.size() > self.max_manifest_size) {
            self.rotate(last_seq, log_numbers())?;
        }
        Ok(())
    }

    fn note_log_numbers(&mut self, logs: &[(u32, u64)]) {
        for &(t, n) in logs {
            let t = t as usize;
            if self.log_numbers.len() <= t {
                self.log_numbers.resize(t + 1, n);
            }
            self.log_numbers[t] = n;
        }
    }

    /// Starts a new manifest holding a snapshot of the current version and points CURRENT at
    /// it. The old manifest is deleted with the other obsolete files.
    fn rotate(&mut self, last_seq: u64, log_numbers: Vec<(u32, u64)>) -> Result<()> {
        let number = self.new_file_number();
        let mut w = WalWriter::new(self.fs.create(&filename::manifest(&self.dir, number))?, number);
        let mut snap = self.current.snapshot_edit(&self.tree_names);
        snap.db_id = Some(self.db_id);
        snap.next_file_number = Some(self.next_file_number);
        snap.last_seqno = Some(last_seq);
        snap.log_numbers = log_numbers;
        manifest::append_durably(&mut w, &snap.encode())?;
        self.fs.sync_dir(&self.dir)?;
        manifest::set_current(&*self.fs, &self.dir, number)?;
        self.note_log_numbers(&snap.log_numbers);
        self.manifest = Some(w);
        self.manifest_number = number;
        Ok(())
    }
}
