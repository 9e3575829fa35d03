//! The database: a thin orchestrator over the WAL, memtables, versions, flush and compaction.
//! This file holds the database handle ([`Db`]) and close; `tree.rs` the [`Tree`] and
//! [`Snapshot`] handles; `inner.rs` the shared state (each field with what guards it),
//! `lifecycle.rs` closing, poison and the background threads, `commit.rs` the group commit,
//! `open.rs` recovery (`replay.rs` the WAL replay), `write.rs` the write path, `read.rs`
//! the point path, `iter.rs` and `cursor.rs` iteration, `flush.rs`, `compact.rs` (picking) and
//! `compaction_run.rs` (a compaction job, and running a merge) the jobs, `background.rs` their
//! threads, `stats.rs` gathers the reports (their types and text are in `crate::stats`),
//! `live_files.rs` holds each table's run-time handle (reader slot, loaded filter units,
//! range-filter admission, statistics).
//!
//! The jobs depend one way: `background` → `compact` → `compaction_run` → `flush` → `write` →
//! `inner`. The run-time controllers (`control/`: the memory tuner, ElasticBF's adjuster,
//! range-filter memory) keep their state in `DbInner` and import nothing of `db/` but the live
//! files: the adjuster sees the engine through its narrow `Host` trait, which `adapters.rs`
//! implements; the memory tuner takes counters and a shape as plain values, which `regions.rs`
//! gathers before it applies the tuner's sizes (through `write` when write memory shrinks), and
//! runs the range-filter memory's rounds. `background` runs them on their own threads. `closed_wals.rs`
//! (WALs synced off the write path) sees the engine through its `Durability` trait.

mod adapters;
mod background;
mod backup;
mod checkpoint;
mod closed_wals;
mod commit;
mod compact;
mod compaction_run;
mod control;
mod cursor;
mod filters;
mod flush;
mod ingest;
mod inner;
mod iter;
mod lifecycle;
mod live_files;
mod multi_get;
mod open;
mod range_filter;
mod range_filter_round;
mod read;
mod regions;
mod replay;
mod stats;
mod table_cache;
mod tree;
mod txn;
mod write;

pub use backup::{BackupInfo, RestoreInfo};
pub use checkpoint::CheckpointInfo;
pub(crate) use filters::external_table_options;
pub use ingest::{IngestInfo, IngestOptions, IngestedTable};
pub use iter::Range;
pub use tree::Snapshot;
pub use txn::{Concurrency, Isolation, Transaction, TransactionOptions, TransactionRange};

use crate::batch::WriteBatch;
use crate::error::Result;
use crate::memory::{MemoryLimits, MemoryUsage};
use crate::options::{Options, WriteOptions};
use crate::stats::{DbStats, TreeLevels, TunerRecord};
use inner::DbInner;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

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
    if inner.life.is_closed() {
        return Ok(());
    }
    // A partitioned component's WALs hold far more than its memory (every version its merges
    // dropped, and what partial flushes already wrote): writing the memory now is cheaper than
    // replaying those WALs at the next open.
    let flushed = {
        let partitioned = inner
            .state
            .lock()
            .mems
            .iter()
            .any(|m| m.is_partitioned() && m.holds_unflushed());
        if partitioned && inner.check_writable().is_ok() {
            flush::flush_trees(inner, None)
        } else {
            Ok(())
        }
    };
    inner.stop_background();
    // The spare WAL, never named, holds nothing (the next open removes it if this cannot).
    let spare = inner.state.lock().spare_wal.take();
    if let Some(w) = spare {
        let tmp = crate::filename::temp(&crate::filename::wal(&inner.dir, w.log_number()));
        drop(w);
        let _ = inner.fs.remove_file(&tmp);
    }
    // Push every acknowledged write to the OS and to disk; a failure here is reported.
    let r = {
        let mut wal = inner.wal.lock();
        match &mut wal.writer {
            Some(w) if !inner.life.is_poisoned() => inner.closed_wals.sync_all(&**inner).and_then(|()| w.sync()),
            _ => Ok(()),
        }
    };
    inner.life.release_lock();
    flushed.and(r)
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
    /// Reopening keeps the database's stored configuration for the settings `opts` leaves at
    /// their defaults (see [`Options`]).
    ///
    /// # Errors
    /// `InvalidOptions` naming a bad option, `Locked` if another handle holds the directory,
    /// `Corruption` for damaged files, I/O errors.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        let inner = open::open(path.as_ref(), opts)?;
        Ok(Db::from_inner(inner))
    }

    /// Opens the database in `path` read-only: no lock is taken and nothing is written, so it
    /// can run beside a process that has the database open for writing. It sees the state
    /// that process had pushed to the OS when this open ran (tables plus what the WALs hold)
    /// and nothing later; a table the writer deletes afterwards (after a compaction) reads as
    /// an error. Every write, flush, compaction and tree creation fails with `ReadOnly`.
    ///
    /// # Errors
    /// `InvalidArgument` when the directory holds no database, `Corruption` for damaged
    /// files, I/O errors.
    pub fn open_read_only(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        let inner = open::open_read_only(path.as_ref(), opts)?;
        Ok(Db::from_inner(inner))
    }

    /// The options this open configured: the caller's, with the database's stored settings
    /// merged in where the caller left them at their defaults ([`Options`]' reopen rule).
    /// Region sizes are as configured, not as the memory tuner has moved them
    /// ([`Db::memory`](Db::memory) has those).
    pub fn options(&self) -> Options {
        self.handle.inner.opts.clone()
    }

    fn from_inner(inner: Arc<DbInner>) -> Db {
        Db {
            default: Tree {
                handle: Arc::new(DbHandle { inner }),
                id: 0,
                name: Arc::from("default"),
            },
        }
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

    /// Makes every write acknowledged so far survive power loss (one WAL sync), as if each
    /// had been written with `sync: true`. Writers are not held up longer than by a sync
    /// write. For callers that acknowledge a run of non-sync writes at once (group commit in a
    /// replication log).
    ///
    /// # Errors
    /// `ReadOnly` in a read-only open; `Poisoned` after an earlier durable-write failure; the
    /// sync's I/O error (the database then turns read-only).
    pub fn sync_wal(&self) -> Result<()> {
        write::sync_wal(self.inner())
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

    /// Drops the tree named `name` and everything in it, durably (RocksDB's
    /// `DropColumnFamily`). Its files are deleted once no iterator or snapshot read holds
    /// them; handles to it get [`TreeDropped`](crate::Error::TreeDropped); a tree created
    /// later under the name starts empty. A flush or compaction of the tree that is running
    /// installs nothing.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = cairn::Db::open(dir.path(), cairn::Options::default())?;
    /// let logs = db.tree("logs")?;
    /// logs.put("k", "v")?;
    /// db.drop_tree("logs")?;
    /// assert!(matches!(logs.get("k"), Err(cairn::Error::TreeDropped { .. })));
    /// assert_eq!(db.tree("logs")?.get("k")?, None);
    /// # Ok::<(), cairn::Error>(())
    /// ```
    ///
    /// # Errors
    /// `InvalidArgument` when no tree has that name, or for the default tree; `ReadOnly`,
    /// `Poisoned`; manifest write errors (the database then turns read-only).
    pub fn drop_tree(&self, name: &str) -> Result<()> {
        open::drop_tree(self.inner(), name)
    }

    /// Names of the trees, by id (dropped trees left out).
    pub fn tree_names(&self) -> Vec<String> {
        self.inner()
            .state
            .lock()
            .versions
            .tree_names()
            .iter()
            .filter(|n| !n.is_empty())
            .cloned()
            .collect()
    }

    /// A consistent read view of every tree at the current sequence number, held until dropped.
    pub fn snapshot(&self) -> Snapshot {
        let inner = self.inner();
        let mut snaps = inner.snapshots.lock();
        let seq = inner.last_seq.load(Ordering::Acquire);
        *snaps.entry(seq).or_insert(0) += 1;
        Snapshot { db: self.clone(), seq }
    }

    /// Flushes every tree's memtables to L0 tables and waits for it. (One tree:
    /// [`Tree::flush`], e.g. `db.tree("users")?.flush()`.)
    ///
    /// # Errors
    /// Write and flush errors.
    pub fn flush_all(&self) -> Result<()> {
        flush::flush_trees(self.inner(), None)
    }

    /// Flushes every tree, as [`flush_all`](Self::flush_all) does. Deprecated because the
    /// name hides [`Tree::flush`] (one tree) behind `Db`'s deref to the default tree.
    ///
    /// # Errors
    /// Write and flush errors.
    #[deprecated(note = "flushes every tree: call `flush_all` (or `tree.flush()` for one tree)")]
    pub fn flush(&self) -> Result<()> {
        self.flush_all()
    }

    /// Capacity and usage of every memory region.
    pub fn memory(&self) -> MemoryUsage {
        stats::memory(self.inner())
    }

    /// Moves memory between regions while the database runs: the write budget and memtable
    /// size apply from the next write group (a smaller budget switches and flushes
    /// memtables), a smaller block cache evicts at once, and range filters charged to the
    /// cache keep their share of it (`range_filter.memory_share`: a smaller share unloads the
    /// filters with the fewest empty range reads per byte at once).
    ///
    /// # Errors
    /// `InvalidArgument` when the result would be inconsistent (a zero budget or memtable size,
    /// or a memtable size above the write budget); nothing changes then.
    pub fn resize_memory(&self, limits: MemoryLimits) -> Result<()> {
        self.inner().resize_memory(limits)
    }

    /// A test hook (`test-util` feature): runs one memory-tuner cycle now (the tuner thread runs one every
    /// `max_wal_size` of log or `memory_tuner_period_ms`): the step taken, or `None` without
    /// `memory_tuner`, at the first call (which starts the first cycle) or when no operation
    /// ran since the last one.
    #[cfg(any(test, feature = "test-util"))]
    #[doc(hidden)]
    pub fn tune_memory(&self) -> Option<TunerRecord> {
        self.inner().tune_memory()
    }

    /// Every cycle the memory tuner ran, oldest first (empty without `memory_tuner`).
    pub fn tuner_history(&self) -> Vec<TunerRecord> {
        self.inner().tuner.as_ref().map(|t| t.history()).unwrap_or_default()
    }

    /// A test hook (`test-util` feature): runs one round of the elastic filter adjuster now
    /// (ElasticBF: load and unload filter
    /// units by hotness); the background adjuster runs one every few milliseconds while
    /// lookups arrive. Does nothing unless `bpk_policy` is elastic. A unit or table it cannot
    /// read is left unloaded (lookups read the data instead) and counted in
    /// [`ElasticStats::load_errors`].
    #[cfg(any(test, feature = "test-util"))]
    #[doc(hidden)]
    pub fn adjust_filters(&self) {
        self.inner().adjust_filters();
    }

    /// A test hook (`test-util` feature): runs one round of range-filter memory now (which
    /// filters it keeps, by empty range reads per byte) and the builds it admits; the
    /// background round runs every second while range reads arrive. Does nothing unless range
    /// filters are charged to the block cache.
    #[cfg(any(test, feature = "test-util"))]
    #[doc(hidden)]
    pub fn keep_range_filters(&self) {
        let builds = self.inner().keep_range_filters();
        self.inner().build_range_filters(builds);
    }

    /// A test hook (`test-util` feature): runs one period of the seek-readahead controller
    /// now (how far each level's forward seeks read ahead, from what its recent seeks went on
    /// to read); the background controller runs one every 250 ms.
    #[cfg(any(test, feature = "test-util"))]
    #[doc(hidden)]
    pub fn tune_readahead(&self) {
        self.inner().tune_readahead();
    }

    /// I/O and engine counters (docs/design.md §5).
    pub fn stats(&self) -> DbStats {
        stats::snapshot(self.inner())
    }

    /// Files, bytes and entries per level of every tree.
    pub fn levels(&self) -> Vec<TreeLevels> {
        stats::levels(self.inner())
    }

    /// A named property: `cairn.stats` (text dump of [`Db::stats`], [`Db::levels`] and
    /// [`Db::memory`]), `cairn.tuner` (the memory tuner's cycles: time, operations, cost and
    /// derivatives, step and rule, region sizes), `cairn.filters` (the filter allocation: per
    /// file its bits per key, whether its filter is probed, and Merlin's estimates beside the
    /// exact counts).
    pub fn property(&self, name: &str) -> Option<String> {
        match name {
            "cairn.stats" => Some(stats::text(self.inner())),
            "cairn.filters" => Some(stats::filters_text(self.inner())),
            "cairn.tuner" => Some(stats::tuner_text(self.inner())),
            _ => None,
        }
    }

    /// Waits until no flush or compaction is pending (and the next WAL is made): after a bulk
    /// load, so that reads and measurements start on a settled tree (RocksDB's
    /// `WaitForCompact`). Two or more L0 files are merged into L1 first, as when writes stop
    /// (`compaction.l0_drain_ms`), unless a write comes meanwhile.
    pub fn wait_for_background(&self) -> Result<()> {
        background::wait_idle(self.inner())
    }

    /// Writes a consistent copy of the database as it is now into `dir` (new, or an empty
    /// directory), which [`Db::open`] opens: tables are hard-linked where the file system
    /// allows (copied otherwise), the WALs holding what memtables hold are copied, and a new
    /// manifest names it all. Writes continue meanwhile; they wait only while the state is
    /// taken (microseconds, reported in the result).
    ///
    /// # Errors
    /// `InvalidArgument` for a directory that holds anything; `ReadOnly` for a read-only open;
    /// I/O errors (the copy is then incomplete: delete it).
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<CheckpointInfo> {
        checkpoint::checkpoint(self.inner(), dir.as_ref())
    }

    /// Backs the database up into `dir` as backup number N + 1 (N: the newest there), sharing
    /// with the backups already in `dir` every table they have, so only tables written since
    /// are copied. Writes continue meanwhile. [`Db::restore`] brings a backup back.
    ///
    /// # Errors
    /// `ReadOnly` for a read-only open; I/O errors (the backup is then incomplete, and ignored
    /// by a restore).
    pub fn backup(&self, dir: impl AsRef<Path>) -> Result<BackupInfo> {
        backup::backup(self.inner(), dir.as_ref())
    }

    /// Restores the newest complete backup in `backup_dir` into `db_dir` (new, or an empty
    /// directory), on the real file system; [`Db::open`] then opens it.
    ///
    /// # Errors
    /// See [`Db::restore_with`].
    pub fn restore(backup_dir: impl AsRef<Path>, db_dir: impl AsRef<Path>) -> Result<RestoreInfo> {
        backup::restore(&crate::env::StdFs::new(), backup_dir.as_ref(), db_dir.as_ref())
    }

    /// [`Db::restore`] on the file system `fs`.
    ///
    /// # Errors
    /// `InvalidArgument` when `db_dir` holds anything or `backup_dir` has no complete backup;
    /// `Corruption` for a damaged table list or a shared table of the wrong size; I/O errors.
    pub fn restore_with(
        fs: &dyn crate::env::FileSystem,
        backup_dir: impl AsRef<Path>,
        db_dir: impl AsRef<Path>,
    ) -> Result<RestoreInfo> {
        backup::restore(fs, backup_dir.as_ref(), db_dir.as_ref())
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
