//! The database: a thin orchestrator over the WAL, memtables, versions, flush and compaction.
//!
//! Locks, always taken in this order: the write queue (held only to enqueue or hand results
//! back), `wal` (held by the write leader for a whole group, and by anything that switches
//! memtables), `state`. Background threads take only `state`. Readers take none of them:
//! they clone the tree's [`SuperVersion`] under a read lock.

mod compact;
mod flush;
mod iter;
mod open;
mod read;
mod stats;
mod write;

pub use iter::Range;
pub use stats::{DbStats, FileAccessStats, LevelInfo, LevelStats, TreeLevels, TreeStatsSnapshot};

use crate::batch::WriteBatch;
use crate::cache::{BlockCache, TableCache};
use crate::compaction::MergePolicy;
use crate::env::{FileLock, FileSystem};
use crate::error::{Error, Result};
use crate::memtable::Memtable;
use crate::options::{Options, WriteOptions};
use crate::sst::{TableOptions, TableReader};
use crate::stats::IoStats;
use crate::tuning::bpk::BpkAllocator;
use crate::version::FileMeta;
use crate::version::{manifest, Version, VersionEdit};
use crate::wal::WalWriter;
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

/// What a reader of one tree pins: its memtables and the version of its files.
#[derive(Debug)]
pub(crate) struct SuperVersion {
    pub mem: Arc<Memtable>,
    /// Immutable memtables, newest first.
    pub imm: Vec<Arc<Memtable>>,
    pub version: Arc<Version>,
}

/// One tree's memtables.
#[derive(Debug)]
pub(crate) struct TreeMems {
    pub active: Arc<Memtable>,
    /// Waiting to be flushed, oldest first.
    pub imm: VecDeque<Arc<Memtable>>,
}

impl TreeMems {
    fn new() -> Self {
        TreeMems {
            active: Arc::new(Memtable::new()),
            imm: VecDeque::new(),
        }
    }
    /// Oldest WAL holding data of this tree's memtables (`u64::MAX` if none).
    fn first_wal(&self) -> u64 {
        self.imm
            .iter()
            .map(|m| m.first_wal())
            .chain([self.active.first_wal()])
            .min()
            .unwrap_or(u64::MAX)
    }
    fn bytes(&self) -> usize {
        self.active.approximate_bytes() + self.imm.iter().map(|m| m.approximate_bytes()).sum::<usize>()
    }
}

/// Mutable engine state, under `DbInner::state`.
pub(crate) struct State {
    pub version: Arc<Version>,
    pub live_versions: Vec<Weak<Version>>,
    pub tree_names: Vec<String>,
    pub mems: Vec<TreeMems>,
    pub next_file_number: u64,
    pub manifest: WalWriter,
    pub manifest_number: u64,
    /// Files being written by running jobs (not yet in a version): never deleted as obsolete.
    pub pending_outputs: BTreeSet<u64>,
    /// Files that are inputs of running compactions.
    pub busy: HashSet<u64>,
    /// Current WAL number, and sizes of the older WALs still on disk.
    pub wal_number: u64,
    /// Each tree's log number as the manifest records it (the oldest WAL recovery would read
    /// for it). WALs are deleted only below the smallest, so the WAL every tree's durable log
    /// number names always exists (recovery checks this).
    pub log_numbers: Vec<u64>,
    pub old_wals: BTreeMap<u64, u64>,
    pub running_compactions: usize,
    pub flushing: bool,
}

impl State {
    /// Records log numbers that just became durable in the manifest.
    fn note_log_numbers(&mut self, logs: &[(u32, u64)]) {
        for &(t, n) in logs {
            let t = t as usize;
            if self.log_numbers.len() <= t {
                self.log_numbers.resize(t + 1, n);
            }
            self.log_numbers[t] = n;
        }
    }
}

/// The WAL, owned by the write leader.
pub(crate) struct WalState {
    pub writer: WalWriter,
}

pub(crate) struct WriteQueue {
    pub tickets: VecDeque<u64>,
    pub batches: BTreeMap<u64, (WriteBatch, WriteOptions)>,
    pub results: BTreeMap<u64, Result<()>>,
    pub next_ticket: u64,
}

/// Shared engine internals.
pub(crate) struct DbInner {
    /// Random identity written in the manifest and in every WAL's header record.
    pub db_id: u64,
    pub dir: PathBuf,
    pub fs: Arc<dyn FileSystem>,
    pub opts: Options,
    pub policy: Box<dyn MergePolicy>,
    pub bpk: Box<dyn BpkAllocator>,
    pub cache: Arc<BlockCache>,
    pub tables: TableCache,
    pub io: Arc<IoStats>,
    /// Reads by compactions (kept apart from user reads).
    pub compaction_io: Arc<IoStats>,
    pub stats: stats::Stats,
    pub state: Mutex<State>,
    /// Wakes background threads (work may be available).
    pub bg_cv: Condvar,
    /// Wakes stalled writers and callers waiting for background work.
    pub done_cv: Condvar,
    pub queue: Mutex<WriteQueue>,
    pub queue_cv: Condvar,
    pub wal: Mutex<WalState>,
    /// Largest sequence number visible to readers.
    pub last_seq: AtomicU64,
    pub supers: RwLock<Vec<Arc<SuperVersion>>>,
    /// Live snapshots: seqno → count.
    pub snapshots: Mutex<BTreeMap<u64, usize>>,
    /// Set once a durable write failed; the database is read-only from then on.
    pub poison: Mutex<Option<String>>,
    pub poisoned: AtomicBool,
    pub shutdown: AtomicBool,
    pub threads: Mutex<Vec<JoinHandle<()>>>,
    pub lock: Mutex<Option<Box<dyn FileLock>>>,
    /// Number of the OPTIONS file written at open; older ones are obsolete.
    pub options_number: u64,
}

impl std::fmt::Debug for DbInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("dir", &self.dir).finish()
    }
}

/// How a table for `tree` at `level` is written (also used by recovery, before `DbInner` exists).
pub(crate) fn table_options(opts: &Options, bpk: &dyn BpkAllocator, tree: u32, level: usize) -> TableOptions {
    TableOptions {
        block_size: opts.block_size,
        restart_interval: opts.block_restart_interval,
        compression: opts.compression,
        segment_size: opts.segment_size,
        filter: bpk.decide(crate::tuning::bpk::FileContext { tree, level }),
    }
}

impl DbInner {
    /// Fails with `Poisoned` once a durable write has failed.
    pub fn check_writable(&self) -> Result<()> {
        if self.shutdown.load(Ordering::Acquire) {
            return Err(Error::InvalidArgument("the database is closed".into()));
        }
        if self.poisoned.load(Ordering::Acquire) {
            let why = self.poison.lock().clone().unwrap_or_default();
            return Err(Error::Poisoned(why));
        }
        Ok(())
    }

    /// Turns the database read-only after a failed durable write (never retried).
    pub fn set_poison(&self, e: &Error) {
        let mut p = self.poison.lock();
        if p.is_none() {
            tracing::error!(error = %e, "durable write failed; the database is now read-only");
            *p = Some(e.to_string());
        }
        self.poisoned.store(true, Ordering::Release);
        self.done_cv.notify_all();
        self.bg_cv.notify_all();
    }

    /// Head of a background thread's loop: waits on `bg_cv` until `find` yields work; `None` at
    /// shutdown. Nothing is picked while the database is poisoned.
    pub fn wait_for_work<T>(&self, mut find: impl FnMut(&mut State) -> Option<T>) -> Option<T> {
        let mut st = self.state.lock();
        loop {
            if self.shutdown.load(Ordering::Acquire) {
                return None;
            }
            if !self.poisoned.load(Ordering::Acquire) {
                if let Some(job) = find(&mut st) {
                    return Some(job);
                }
            }
            self.bg_cv.wait(&mut st);
        }
    }

    /// The oldest seqno a reader may read at.
    pub fn oldest_snapshot(&self) -> u64 {
        let last = self.last_seq.load(Ordering::Acquire);
        self.snapshots.lock().keys().next().copied().unwrap_or(last).min(last)
    }

    pub fn super_version(&self, tree: u32) -> Result<Arc<SuperVersion>> {
        self.supers
            .read()
            .get(tree as usize)
            .cloned()
            .ok_or_else(|| Error::InvalidArgument(format!("unknown tree id {tree}")))
    }

    /// Publishes a new super-version for `tree` from the current state.
    pub fn install_super_version(&self, st: &State, tree: usize) {
        let m = &st.mems[tree];
        let sv = Arc::new(SuperVersion {
            mem: m.active.clone(),
            imm: m.imm.iter().rev().cloned().collect(),
            version: st.version.clone(),
        });
        let mut supers = self.supers.write();
        if supers.len() <= tree {
            supers.resize_with(tree + 1, || sv.clone());
        }
        supers[tree] = sv;
    }

    pub fn table_options(&self, tree: u32, level: usize) -> TableOptions {
        table_options(&self.opts, &*self.bpk, tree, level)
    }

    /// Opens (or finds cached) the table `f` describes, and checks that the file is the one the
    /// manifest recorded: size, key range, sequence-number range and entry count must match, so
    /// a table substituted from another database (same number, other contents) is corruption.
    pub fn open_table(&self, f: &FileMeta) -> Result<Arc<TableReader>> {
        self.tables.get_or_open(f.number, || {
            let path = crate::filename::table(&self.dir, f.number);
            let t = TableReader::open(
                &*self.fs,
                &path,
                Some(f.number),
                crate::sst::ReaderOptions {
                    direct: self.opts.use_direct_reads,
                    cache: Some(self.cache.clone()),
                    stats: self.io.clone(),
                },
            )?;
            let p = t.properties();
            let matches = t.file_size() == f.size
                && p.smallest_key == f.smallest
                && p.largest_key == f.largest
                && p.smallest_seqno == f.smallest_seqno
                && p.largest_seqno == f.largest_seqno
                && p.entries == f.entries;
            if !matches {
                return Err(Error::corruption(
                    &path,
                    0,
                    format!(
                        "table does not match the manifest (size {} vs {}, {} vs {} entries): \
                         not this database's file",
                        t.file_size(),
                        f.size,
                        p.entries,
                        f.entries
                    ),
                ));
            }
            Ok(t)
        })
    }

    pub fn allocate_file_number(st: &mut State) -> u64 {
        let n = st.next_file_number;
        st.next_file_number += 1;
        n
    }

    /// Allocates a file number for a job's output, protected from obsolete-file deletion until
    /// the job removes it from `pending_outputs`.
    pub fn allocate_output(&self) -> u64 {
        let mut st = self.state.lock();
        let n = Self::allocate_file_number(&mut st);
        st.pending_outputs.insert(n);
        n
    }

    /// Logs `edit` durably in the manifest, then installs the resulting version and every
    /// tree's super-version. A failure poisons the database.
    pub fn log_and_apply(&self, st: &mut State, mut edit: VersionEdit) -> Result<()> {
        edit.next_file_number = Some(st.next_file_number);
        edit.last_seqno = Some(self.last_seq.load(Ordering::Acquire));
        let next = st
            .version
            .apply(&edit)
            .map_err(|e| Error::corruption(&self.dir, 0, format!("version edit does not apply: {e}")))?;
        let logged = manifest::append_durably(&mut st.manifest, &edit.encode());
        if let Err(e) = logged {
            self.set_poison(&e);
            return Err(e);
        }
        st.note_log_numbers(&edit.log_numbers);
        self.io.record_sync();
        let next = Arc::new(next);
        st.live_versions.retain(|w| w.strong_count() > 0);
        st.live_versions.push(Arc::downgrade(&next));
        st.version = next;
        for t in 0..st.mems.len() {
            self.install_super_version(st, t);
        }
        if st.manifest.len() > self.opts.max_manifest_size {
            self.rotate_manifest(st)?;
        }
        Ok(())
    }

    /// Starts a new manifest holding a snapshot of the current version, and points CURRENT at
    /// it. The old manifest is deleted with the other obsolete files.
    pub fn rotate_manifest(&self, st: &mut State) -> Result<()> {
        let number = Self::allocate_file_number(st);
        let r = (|| {
            let path = crate::filename::manifest(&self.dir, number);
            let mut w = WalWriter::new(self.fs.create(&path)?, number);
            let mut snap = st.version.snapshot_edit(&st.tree_names);
            snap.db_id = Some(self.db_id);
            snap.next_file_number = Some(st.next_file_number);
            snap.last_seqno = Some(self.last_seq.load(Ordering::Acquire));
            for (t, m) in st.mems.iter().enumerate() {
                let first = m.first_wal();
                snap.log_numbers
                    .push((t as u32, if first == u64::MAX { st.wal_number } else { first }));
            }
            manifest::append_durably(&mut w, &snap.encode())?;
            self.fs.sync_dir(&self.dir)?;
            manifest::set_current(&*self.fs, &self.dir, number)?;
            Ok::<_, Error>((w, snap.log_numbers))
        })();
        match r {
            Ok((w, logs)) => {
                st.note_log_numbers(&logs);
                st.manifest = w;
                st.manifest_number = number;
                Ok(())
            }
            Err(e) => {
                self.set_poison(&e);
                Err(e)
            }
        }
    }

    /// Deletes files no live version, pending job, or current log needs: tables, old WALs
    /// (all trees flushed past them), old manifests and OPTIONS files.
    ///
    /// Nothing is deleted once the database is poisoned: after a failed manifest append or
    /// sync the manifest's content on disk is unknown (the edit's bytes may be there, naming
    /// outputs this process would think unreferenced), and after any failed durable write the
    /// next open, not this process, decides what is obsolete (DESIGN §4).
    pub fn delete_obsolete_files(&self) {
        if self.poisoned.load(Ordering::Acquire) {
            return;
        }
        // Only files numbered before this snapshot are candidates: a job may create (and
        // register) a file after the lock is released.
        let (live, pending, min_wal, manifest_number, next_file) = {
            let mut st = self.state.lock();
            st.live_versions.retain(|w| w.strong_count() > 0);
            let mut live: HashSet<u64> = st.version.file_numbers().collect();
            for v in st.live_versions.iter().filter_map(|w| w.upgrade()) {
                live.extend(v.file_numbers());
            }
            // Every tree's logged log number is at most the oldest WAL its memtables use
            // (flushes log exactly that), so this is also below all in-memory data.
            let min_wal = st.log_numbers.iter().copied().min().unwrap_or(st.wal_number);
            st.old_wals.retain(|&n, _| n >= min_wal);
            (
                live,
                st.pending_outputs.clone(),
                min_wal,
                st.manifest_number,
                st.next_file_number,
            )
        };
        let Ok(names) = self.fs.list(&self.dir) else {
            return;
        };
        use crate::filename::FileKind;
        for name in names {
            let obsolete = match crate::filename::parse(&name) {
                FileKind::Table(n) => n < next_file && !live.contains(&n) && !pending.contains(&n),
                FileKind::Wal(n) => n < min_wal,
                FileKind::Manifest(n) => n < manifest_number,
                FileKind::Options(n) => n < self.options_number,
                // Temporary files belong to a write in progress (CURRENT.tmp of a manifest
                // rotation, a WAL being created); open removes those a failure left behind.
                FileKind::Temp | FileKind::Current | FileKind::Lock | FileKind::Other => false,
            };
            // A durable write may fail while this runs: stop at once.
            if !obsolete || self.poisoned.load(Ordering::Acquire) {
                continue;
            }
            if let FileKind::Table(n) = crate::filename::parse(&name) {
                self.tables.evict(n);
                self.stats.forget_file(n);
            }
            if let Err(e) = self.fs.remove_file(&self.dir.join(&name)) {
                tracing::warn!(file = %name, error = %e, "could not delete obsolete file");
            }
        }
    }

    fn stop_background(&self) {
        self.shutdown.store(true, Ordering::Release);
        {
            // Wake threads waiting on either condition variable.
            let _st = self.state.lock();
            self.bg_cv.notify_all();
            self.done_cv.notify_all();
        }
        let threads = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            let _ = t.join();
        }
    }
}

/// Closes the database when the last handle goes away.
#[derive(Debug)]
struct DbHandle {
    inner: Arc<DbInner>,
}

impl Drop for DbHandle {
    fn drop(&mut self) {
        let _ = close_inner(&self.inner);
    }
}

fn close_inner(inner: &Arc<DbInner>) -> Result<()> {
    if inner.shutdown.load(Ordering::Acquire) && inner.threads.lock().is_empty() && inner.lock.lock().is_none() {
        return Ok(());
    }
    inner.stop_background();
    // Push every acknowledged write to the OS and to disk; a failure here is reported.
    let r = {
        let mut wal = inner.wal.lock();
        if inner.poisoned.load(Ordering::Acquire) {
            Ok(())
        } else {
            wal.writer.sync()
        }
    };
    inner.lock.lock().take();
    r
}

/// An open database: the default tree plus database-wide operations. Cloning is cheap (all
/// clones share one engine); the engine closes when the last clone and the last [`Tree`]
/// handle are dropped, or at [`Db::close`].
#[derive(Debug, Clone)]
pub struct Db {
    default: Tree,
}

/// A named tree (column family). Every tree has the same key/value API; a batch is atomic
/// across trees. The default tree is the [`Db`] itself.
#[derive(Debug, Clone)]
pub struct Tree {
    handle: Arc<DbHandle>,
    id: u32,
    name: Arc<str>,
}

impl std::ops::Deref for Db {
    type Target = Tree;
    fn deref(&self) -> &Tree {
        &self.default
    }
}

impl Db {
    /// Opens (creating if missing and allowed) the database in `path`.
    ///
    /// # Errors
    /// `InvalidOptions` naming a bad option, `Locked` if another handle holds the directory,
    /// `Corruption` for damaged files, I/O errors.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        let inner = open::open(path.as_ref(), opts)?;
        let handle = Arc::new(DbHandle { inner });
        Ok(Db {
            default: Tree {
                handle,
                id: 0,
                name: Arc::from("default"),
            },
        })
    }

    fn inner(&self) -> &Arc<DbInner> {
        &self.default.handle.inner
    }

    /// Applies a batch atomically (across trees).
    ///
    /// # Errors
    /// `InvalidArgument` for oversized keys, values or batches (nothing is written);
    /// `Poisoned` after an earlier durable-write failure; `Busy` with `no_slowdown` during a
    /// stall; I/O errors (the database then turns read-only).
    pub fn write(&self, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
        write::write(self.inner(), batch, opts)
    }

    /// The tree named `name`, created if missing.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty or over-long name; manifest write errors.
    pub fn tree(&self, name: &str) -> Result<Tree> {
        let id = open::create_tree(self.inner(), name)?;
        Ok(Tree {
            handle: self.default.handle.clone(),
            id,
            name: Arc::from(name),
        })
    }

    /// Names of all trees, by id.
    pub fn tree_names(&self) -> Vec<String> {
        self.inner().state.lock().tree_names.clone()
    }

    /// A consistent read view of every tree at the current sequence number, held until dropped.
    pub fn snapshot(&self) -> Snapshot {
        let inner = self.inner();
        let mut snaps = inner.snapshots.lock();
        let seq = inner.last_seq.load(Ordering::Acquire);
        *snaps.entry(seq).or_insert(0) += 1;
        Snapshot { db: self.clone(), seq }
    }

    /// Flushes every tree's memtables to L0 tables and waits for it.
    ///
    /// # Errors
    /// Write and flush errors.
    pub fn flush(&self) -> Result<()> {
        flush::flush_trees(self.inner(), None)
    }

    /// I/O and engine counters (DESIGN §7).
    pub fn stats(&self) -> DbStats {
        stats::snapshot(self.inner())
    }

    /// Files, bytes and entries per level of every tree.
    pub fn levels(&self) -> Vec<TreeLevels> {
        stats::levels(self.inner())
    }

    /// A named property: `cairn.stats` (text dump of [`Db::stats`] and [`Db::levels`]).
    pub fn property(&self, name: &str) -> Option<String> {
        match name {
            "cairn.stats" => Some(stats::text(self.inner())),
            _ => None,
        }
    }

    /// Waits until no flush or compaction is pending (tests and benchmarks).
    pub fn wait_for_background(&self) -> Result<()> {
        compact::wait_idle(self.inner())
    }

    /// Stops background work, syncs the WAL and releases the directory lock. Other handles to
    /// this database get errors afterwards.
    ///
    /// # Errors
    /// The final WAL sync failed.
    pub fn close(self) -> Result<()> {
        close_inner(self.inner())
    }
}

impl Tree {
    fn inner(&self) -> &Arc<DbInner> {
        &self.handle.inner
    }

    /// The tree's id (its index in batches and the manifest).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The tree's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sets `key` to `value`.
    ///
    /// # Errors
    /// See [`Db::write`].
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.push(
            self.id,
            crate::format::ikey::ValueKind::Put,
            key.as_ref(),
            value.as_ref(),
        );
        write::write(self.inner(), b, &WriteOptions::default())
    }

    /// Deletes `key`.
    ///
    /// # Errors
    /// See [`Db::write`].
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.push(self.id, crate::format::ikey::ValueKind::Delete, key.as_ref(), &[]);
        write::write(self.inner(), b, &WriteOptions::default())
    }

    /// The value of `key`, if present.
    ///
    /// # Errors
    /// Read and corruption errors (never a wrong answer).
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        read::get(self.inner(), self.id, key.as_ref(), None)
    }

    /// Entries with keys in `range`, in key order; reversible with `.rev()`.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Range {
        Range::new(self.inner().clone(), self.id, None, &range)
    }

    /// Every entry.
    pub fn iter(&self) -> Range {
        self.range::<&[u8], _>(..)
    }

    /// Flushes this tree's memtables and waits.
    ///
    /// # Errors
    /// Write and flush errors.
    pub fn flush(&self) -> Result<()> {
        flush::flush_trees(self.inner(), Some(self.id))
    }

    /// Compacts every file of this tree overlapping `range` down to the deepest level.
    ///
    /// # Errors
    /// Flush and compaction errors.
    pub fn compact_range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<()> {
        compact::compact_range(self.inner(), self.id, &range)
    }
}

/// A point-in-time view of every tree; released when dropped.
#[derive(Debug)]
pub struct Snapshot {
    db: Db,
    seq: u64,
}

impl Snapshot {
    /// The snapshot's sequence number.
    pub fn seqno(&self) -> u64 {
        self.seq
    }

    /// `key` in the default tree as of the snapshot.
    ///
    /// # Errors
    /// Read errors.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        read::get(self.db.inner(), 0, key.as_ref(), Some(self.seq))
    }

    /// `key` in `tree` as of the snapshot.
    ///
    /// # Errors
    /// Read errors.
    pub fn get_in(&self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        read::get(self.db.inner(), tree.id, key.as_ref(), Some(self.seq))
    }

    /// Default-tree entries in `range` as of the snapshot.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Range {
        Range::new(self.db.inner().clone(), 0, Some(self.seq), &range)
    }

    /// `tree` entries in `range` as of the snapshot.
    pub fn range_in<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, tree: &Tree, range: R) -> Range {
        Range::new(self.db.inner().clone(), tree.id, Some(self.seq), &range)
    }

    /// Every default-tree entry as of the snapshot.
    pub fn iter(&self) -> Range {
        self.range::<&[u8], _>(..)
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut snaps = self.db.inner().snapshots.lock();
        if let Some(c) = snaps.get_mut(&self.seq) {
            *c -= 1;
            if *c == 0 {
                snaps.remove(&self.seq);
            }
        }
    }
}
