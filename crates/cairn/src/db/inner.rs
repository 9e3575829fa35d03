//! The engine's shared state and the operations every part of `db/` uses: poisoning,
//! super-versions, table opening, logging version edits, deleting obsolete files.
//!
//! Locks, always taken in this order: the write queue (held only to enqueue or hand results
//! back), `wal` (held by the write leader for a whole group, and by anything that switches
//! memtables), `state`. Background threads take only `state`. Readers take none of them:
//! they clone the tree's [`SuperVersion`] under a read lock.

use super::live_files::{LiveFile, LiveFiles};
use super::table_cache::TableCache;
use crate::compaction::MergePolicy;
use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::memory::MemoryRegions;
use crate::memtable::{MemComponent, Memtable};
use crate::options::{Options, Regions};
use crate::sst::BlockCache;
use crate::sst::TableReader;
use crate::stats::{EngineCounters, FileNumber, IoStats, TreeCounters};
use crate::tuning::bpk::BpkAllocator;
use crate::tuning::FilterPlan;
use crate::version::set::VersionSet;
use crate::version::{FileMeta, Version, VersionEdit};
use crate::wal::WalWriter;
use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What a reader of one tree pins: its memtables, the version of its files, and handles to the
/// side-table state of those files and to the tree's counters (so the read path records
/// without any lock).
#[derive(Debug)]
pub(crate) struct SuperVersion {
    /// The tree's id.
    pub tree: usize,
    /// Every memtable, newest first.
    pub mems: Vec<Arc<Memtable>>,
    pub version: Arc<Version>,
    /// Runtime state of this tree's files, parallel to `version.trees[tree].levels`.
    pub files: Vec<Vec<Arc<LiveFile>>>,
    pub counters: Arc<TreeCounters>,
    /// This tree's tables that hold range tombstones (iterators gather theirs).
    pub range_del_files: Vec<Arc<FileMeta>>,
    /// The tree's time to live in milliseconds (`ttl`), if any.
    pub ttl_ms: Option<u64>,
    /// The tree was dropped: reads and writes get `TreeDropped`.
    pub dropped: bool,
}

impl SuperVersion {
    /// `TreeDropped` when the tree was dropped.
    pub fn check_live(&self) -> Result<()> {
        if self.dropped {
            return Err(Error::TreeDropped { tree: self.tree as u32 });
        }
        Ok(())
    }
}

/// Mutable engine state, under `DbInner::state`.
#[derive(Debug)]
pub(crate) struct State {
    pub versions: VersionSet,
    /// Per tree, its memory component.
    pub mems: Vec<MemComponent>,
    /// Files being written by running jobs (not yet in a version): never deleted as obsolete.
    pub pending_outputs: BTreeSet<u64>,
    /// Files that are inputs of running compactions.
    pub busy: HashSet<u64>,
    /// What running compactions write: (tree, output level, user-key span of their inputs),
    /// where an ingested table may not go (`ingest.rs`).
    pub writing: Vec<(usize, usize, Vec<u8>, Vec<u8>)>,
    /// The next WAL, made and synced ahead by the WAL thread (`background.rs`): a memtable
    /// switch then starts a log without a file creation, a header sync and a directory sync
    /// on the write path (up to 40 ms under compaction I/O).
    pub spare_wal: Option<WalWriter>,
    /// A switch took the spare (or none was made yet): the WAL thread makes the next one.
    pub spare_wanted: bool,
    /// The WAL being written, and the sizes of the older WALs still on disk.
    pub wal_number: u64,
    pub old_wals: BTreeMap<u64, u64>,
    /// WALs a checkpoint is copying: from each key on, none is deleted (count of holders).
    pub wal_pins: BTreeMap<u64, usize>,
    pub running_compactions: usize,
    pub flushing: bool,
    /// Per tree, bytes written over the last one to two `max_wal_size` windows, as the write
    /// leader last saw them (level targets that follow write memory split it by these).
    pub recent_writes: Vec<u64>,
    /// Whether writes have stopped, for the L0 drain (`compact.rs`).
    pub quiet: super::compact::Quiet,
}

impl State {
    /// The installed version.
    pub fn version(&self) -> &Arc<Version> {
        self.versions.current()
    }

    /// Per tree, the log number a manifest edit written now records: the oldest WAL holding
    /// data of its memtables — except `flushed`, the memtables or runs whose flush the edit
    /// installs — or, with none, the current WAL. The one place this is computed.
    pub fn log_numbers(&self, flushed: &[Arc<Memtable>]) -> Vec<(u32, u64)> {
        self.mems
            .iter()
            .enumerate()
            .map(|(t, m)| (t as u32, m.oldest_wal(flushed).unwrap_or(self.wal_number)))
            .collect()
    }
}

/// The WAL and the write controller's delay, owned by the write leader.
#[derive(Debug)]
pub(crate) struct WalState {
    /// `None` in a read-only open, which never writes.
    pub writer: Option<WalWriter>,
    pub delay: Option<crate::tuning::write_control::DelayState>,
    /// Recent bytes written per tree (the optimal flush policy's write rates).
    pub rates: crate::tuning::write_control::WriteRates,
    /// What the last full decision of the write controller left to write without another
    /// (`write.rs`); `State::recent_writes`, copied at full decisions, lags by at most this.
    pub room: Option<Room>,
    /// The active memtables by tree, as of the last switch (emptied by each switch and by a
    /// new tree; switches happen only under the WAL lock, so these stay the active ones).
    pub actives: Vec<Arc<Memtable>>,
}

/// A full write decision's [`Headroom`](crate::tuning::write_control::Headroom), valid while
/// the limits and the state epoch are the ones it was computed with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Room {
    pub epoch: u64,
    pub limits: crate::tuning::write_control::WriteLimits,
    pub left: crate::tuning::write_control::Headroom,
}

impl WalState {
    /// The WAL being written.
    pub fn writer(&mut self) -> Result<&mut WalWriter> {
        self.writer.as_mut().ok_or(Error::ReadOnly)
    }
}

/// Shared engine internals. Each field says what guards it: *fixed* (set at open, never
/// changed), *atomic*, *own lock* (a type that locks inside), or the lock it is read under.
pub(crate) struct DbInner {
    /// Random identity written in the manifest and in every WAL's header record. Fixed.
    pub(super) db_id: u64,
    /// Fixed.
    pub(super) dir: PathBuf,
    /// Fixed.
    pub(super) fs: Arc<dyn FileSystem>,
    /// The options of this open: the caller's with the stored configuration merged, validated
    /// (what OPTIONS records and `Db::options` shows). Fixed.
    pub(super) opts: Options,
    /// The regions' starting sizes, derived from `opts.memory`. Fixed (the current sizes are
    /// in `memory` and `cache`).
    pub(super) regions: Regions,
    /// The merge policy's decider. Fixed; asked under `state`.
    pub(super) policy: Box<dyn MergePolicy>,
    /// The point-filter allocation policy. Fixed.
    pub(super) bpk: Arc<dyn BpkAllocator>,
    /// Own lock (sharded).
    pub(super) cache: Arc<BlockCache>,
    /// The ghost cache subscribed to `cache` (`cache.ghost_cache` > 0), with its listener id.
    /// Own lock.
    pub(super) ghost: Option<(Arc<crate::cache::GhostCache>, u64)>,
    /// The key-value cache (`cache/kv.rs`), when it has memory. Own locks (lanes).
    pub(super) kv: Option<crate::cache::KvCache>,
    /// Open table readers. Own lock.
    pub(super) tables: TableCache,
    /// Reads and writes of user operations and flushes. Atomic.
    pub(super) io: Arc<IoStats>,
    /// Reads by compactions (kept apart from user reads). Atomic.
    pub(super) compaction_io: Arc<IoStats>,
    /// Atomic.
    pub(super) counters: EngineCounters,
    /// Live files' run-time handles (`db/live_files.rs`). Own lock (handles atomic).
    pub(super) files: LiveFiles,
    /// The regions' current sizes. Atomic.
    pub(super) memory: MemoryRegions,
    /// What the read path asks each file's filter, published by deciders. Atomic swap.
    pub(super) filter_plan: ArcSwap<FilterPlan>,
    /// ElasticBF's adjuster (`db/control/elastic_adjuster.rs`). Own lock.
    pub(super) elastic: super::control::elastic_adjuster::Elastic,
    /// What range-filter memory keeps (`db/control/range_filter_memory.rs`). Own lock.
    pub(super) range_memory: super::control::range_filter_memory::RangeMemory,
    /// How far seeks read ahead (`db/control/readahead.rs`).
    pub(super) readahead: Mutex<super::control::readahead::SeekReadahead>,
    /// The memory tuner (`db/control/memory_tuner.rs`), with `memory.tuner`. Own lock.
    pub(super) tuner: Option<super::control::memory_tuner::MemoryTuner>,
    /// Versions, memtables, running jobs, WAL numbers: the lock background threads take (last
    /// in the lock order).
    pub(super) state: Mutex<State>,
    /// Wakes background threads (work may be available). Waited on under `state`.
    pub(super) bg_cv: Condvar,
    /// Wakes stalled writers and callers waiting for background work. Waited on under `state`.
    pub(super) done_cv: Condvar,
    /// Group commit: the writers' queue (`commit.rs`). Own lock, first in the lock order.
    pub(super) commits: super::commit::CommitPipeline,
    /// Transactions' lock table and outcome counters.
    pub(super) txns: super::txn::TxnShared,
    /// The WAL being written and the write controller's state: held by a group's leader for
    /// the whole group, and by anything that switches memtables (before `state`).
    pub(super) wal: Mutex<WalState>,
    /// WALs closed by switches, synced off the write path (`closed_wals.rs`). Own lock.
    pub(super) closed_wals: super::closed_wals::ClosedWals,
    /// Largest sequence number visible to readers. Atomic; stored by the group leader under
    /// `wal` after its inserts.
    pub(super) last_seq: AtomicU64,
    /// Bumped at every published change of a tree's super-version (switches, flushes,
    /// compactions, new trees): the write path's [`Room`] is stale once it moves. Atomic,
    /// bumped under `state`.
    pub(super) state_epoch: AtomicU64,
    /// Every tree's current super-version. Readers load it without a lock or a reference-count
    /// write (an `arc_swap` guard); installs replace the whole list under `state`.
    pub(super) supers: ArcSwap<Vec<Arc<SuperVersion>>>,
    /// Live snapshots: seqno → count. Own lock (taken alone).
    pub(super) snapshots: Mutex<BTreeMap<u64, usize>>,
    /// Closing, poison, background threads and the directory lock (`lifecycle.rs`).
    pub(super) life: super::lifecycle::Lifecycle,
    /// Number of the OPTIONS file written at open; older ones are obsolete. Fixed.
    pub(super) options_number: u64,
}

impl Drop for DbInner {
    fn drop(&mut self) {
        // The block cache may be shared and outlive this engine.
        if let Some((_, id)) = &self.ghost {
            self.cache.remove_eviction_listener(*id);
        }
    }
}

impl std::fmt::Debug for DbInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("dir", &self.dir).finish()
    }
}

impl DbInner {
    /// The WAL bytes after which the oldest data is flushed: `max_wal_size`, or 4 × the
    /// current write memory when it is 0.
    pub fn max_wal_size(&self) -> u64 {
        match self.opts.wal.max_size {
            0 => 4 * self.memory.write_budget() as u64,
            n => n,
        }
    }

    /// `Closed`, `ReadOnly` or `Poisoned` where a write cannot proceed.
    pub fn check_writable(&self) -> Result<()> {
        self.life.check_writable()
    }

    /// Turns the database read-only after a failed durable write (never retried), and wakes
    /// the writers waiting for background work.
    pub fn set_poison(&self, e: &Error) {
        self.life.poison(e);
        self.done_cv.notify_all();
        self.bg_cv.notify_all();
    }

    /// The oldest seqno a reader may read at.
    pub fn oldest_snapshot(&self) -> u64 {
        let last = self.last_seq.load(Ordering::Acquire);
        self.snapshots.lock().keys().next().copied().unwrap_or(last).min(last)
    }

    /// The newest live snapshot's sequence number (0: none).
    pub fn newest_snapshot(&self) -> u64 {
        self.snapshots.lock().keys().next_back().copied().unwrap_or(0)
    }

    /// `tree`'s current super-version, owned (for iterators, which outlive one call).
    pub fn super_version(&self, tree: u32) -> Result<Arc<SuperVersion>> {
        let sv = self
            .supers
            .load()
            .get(tree as usize)
            .cloned()
            .ok_or_else(|| unknown_tree(tree))?;
        sv.check_live()?;
        Ok(sv)
    }

    /// Every tree's super-version, borrowed for one operation (a point read): no shared write.
    pub fn super_versions(&self) -> arc_swap::Guard<Arc<Vec<Arc<SuperVersion>>>> {
        self.supers.load()
    }

    /// Publishes a new super-version for `tree` from the current state. The files' registry
    /// entries are created here when the version is the first to hold them.
    pub fn install_super_version(&self, st: &State, tree: usize) {
        let version = st.version().clone();
        let files = version.trees.get(tree).map_or_else(Vec::new, |tv| {
            tv.levels
                .iter()
                .map(|fs| fs.iter().map(|f| self.files.register(tree as u32, f)).collect())
                .collect()
        });
        let range_del_files = version.trees.get(tree).map_or_else(Vec::new, |tv| {
            tv.levels
                .iter()
                .flatten()
                .filter(|f| f.range_deletions > 0)
                .cloned()
                .collect()
        });
        let sv = Arc::new(SuperVersion {
            tree,
            mems: st.mems[tree].read_view(),
            version,
            files,
            counters: self.counters.tree(tree),
            range_del_files,
            ttl_ms: st
                .versions
                .tree_names()
                .get(tree)
                .and_then(|name| self.opts.ttl.get(name))
                .map(crate::ttl::duration_ms),
            dropped: st.versions.is_dropped(tree),
        });
        // Installs happen under the state lock, so read-modify-store loses no update.
        let mut supers = Vec::clone(&self.supers.load());
        if supers.len() <= tree {
            supers.resize_with(tree + 1, || sv.clone());
        }
        supers[tree] = sv;
        self.supers.store(Arc::new(supers));
        self.state_epoch.fetch_add(1, Ordering::Release);
    }

    /// One round of ElasticBF's adjuster (`db/control/elastic_adjuster.rs`).
    pub fn adjust_filters(&self) {
        self.elastic.adjust(self);
    }

    /// Opens (or finds cached) the table `f` describes, and checks that the file is the one the
    /// manifest recorded: size, key range, sequence-number range and entry count must match, so
    /// a table substituted from another database (same number, other contents) is corruption.
    pub fn open_table(&self, f: &FileMeta) -> Result<Arc<TableReader>> {
        self.open_table_for(f, None)
    }

    /// Runs `op` on the reader of `f`: the one published in the slot of its runtime state
    /// `state` (no lock and no reference-count write), else the table cache's (which publishes
    /// it for the next read).
    #[inline]
    pub fn with_table<R>(
        &self,
        f: &FileMeta,
        state: Option<&Arc<LiveFile>>,
        op: impl FnOnce(&TableReader) -> Result<R>,
    ) -> Result<R> {
        let slot = state.map(|st| st.reader_slot().load());
        match slot.as_ref().and_then(|g| g.as_ref()) {
            Some(t) => op(t),
            None => op(&*self.open_table_for(f, state)?),
        }
    }

    /// [`open_table`](Self::open_table), also publishing the reader in the slot of the file's
    /// handle `state` (where point reads find it without the table cache's lock).
    pub fn open_table_for(&self, f: &FileMeta, state: Option<&Arc<LiveFile>>) -> Result<Arc<TableReader>> {
        self.tables.get_or_open(f.number, state, || {
            let path = filename::table(&self.dir, f.number);
            let t = TableReader::open(
                &*self.fs,
                &path,
                Some(f.number),
                crate::sst::ReaderOptions {
                    direct: self.opts.files.use_direct_reads,
                    cache: Some(self.cache.clone()),
                    stats: self.io.clone(),
                    meta_region: Some(self.memory.pinned_meta.clone()),
                    index_region: Some(self.memory.table_index.clone()),
                    range_region: Some(self.memory.range_filters.clone()),
                    reserve_in_cache: self.regions.index_in_block_cache,
                    filter_region: (!self.regions.index_in_block_cache).then(|| self.memory.pinned_filters.clone()),
                    ghost: self.ghost.as_ref().map(|(g, _)| g.clone()),
                    global_seqno: f.global_seqno,
                },
            )?;
            let p = t.properties();
            if p.written_by_other(self.db_id) {
                return Err(Error::corruption(
                    &path,
                    0,
                    format!(
                        "table written by another database (id {:016x}; this database is {:016x})",
                        p.db_id, self.db_id
                    ),
                ));
            }
            // An ingested table's keys and sequence numbers are read with its global one.
            let same = |stored: &[u8], meta: &[u8]| match f.global_seqno {
                0 => stored == meta,
                g => crate::format::ikey::read_as(stored, g) == meta,
            };
            let seqnos = match f.global_seqno {
                0 => (p.smallest_seqno, p.largest_seqno),
                g => (g, g),
            };
            let matches = t.file_size() == f.size
                && same(&p.smallest_key, &f.smallest)
                && same(&p.largest_key, &f.largest)
                && seqnos == (f.smallest_seqno, f.largest_seqno)
                && (f.global_seqno == 0 || p.largest_seqno == 0)
                && p.entries == f.entries
                && p.range_deletions == f.range_deletions;
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

    /// Allocates a file number for a job's output, protected from obsolete-file deletion until
    /// the job removes it from `pending_outputs`.
    pub fn allocate_output(&self) -> u64 {
        let mut st = self.state.lock();
        let n = st.versions.new_file_number();
        st.pending_outputs.insert(n);
        n
    }

    /// Logs `edit` durably in the manifest, then installs the resulting version and every
    /// tree's super-version. `flushed` holds the memtables or runs whose flush the edit installs
    /// (their data no longer needs the WAL). A failure poisons the database.
    pub fn log_and_apply(&self, st: &mut State, edit: VersionEdit, flushed: &[Arc<Memtable>]) -> Result<()> {
        self.log_and_apply_then(st, edit, flushed, |_| {})
    }

    /// [`log_and_apply`](Self::log_and_apply), running `then` once the edit is applied and
    /// before the new super-versions are published: a flush takes its memtables out of the
    /// read view in the same publication that adds their tables, so no reader ever sees an
    /// entry in both (a merge operand would count twice).
    pub fn log_and_apply_then(
        &self,
        st: &mut State,
        edit: VersionEdit,
        flushed: &[Arc<Memtable>],
        then: impl FnOnce(&mut State),
    ) -> Result<()> {
        // An ingestion logs the sequence numbers it gives before readers may load them.
        let last_seq = self.last_seq.load(Ordering::Acquire).max(edit.last_seqno.unwrap_or(0));
        // A flush or compaction of a tree dropped while it ran installs nothing: its outputs
        // are left unreferenced (and deleted as obsolete), its inputs are gone already.
        let mut edit = edit;
        edit.forget_trees(|t| st.versions.is_dropped(t as usize));
        let logs = st.log_numbers(flushed);
        let before = st.version().clone();
        let r = st.versions.log_and_apply(edit, last_seq, || logs);
        // Applied even when only the manifest rotation after it failed.
        if !Arc::ptr_eq(&before, st.version()) {
            then(st);
        }
        if let Err(e) = &r {
            if !matches!(e, Error::Corruption { .. }) {
                self.set_poison(e);
            }
        }
        if r.is_ok() {
            self.io.record_sync();
        }
        // Installed even when only the rotation after it failed.
        for t in 0..st.mems.len() {
            self.install_super_version(st, t);
        }
        r
    }

    /// Deletes files no live version, pending job, or current log needs: tables, old WALs
    /// (all trees flushed past them), old manifests and OPTIONS files.
    ///
    /// Nothing is deleted once the database is poisoned: after a failed manifest append or
    /// sync the manifest's content on disk is unknown (the edit's bytes may be there, naming
    /// outputs this process would think unreferenced), and after any other failed durable
    /// write the next open, not this process, decides what is obsolete (docs/design.md §4).
    pub fn delete_obsolete_files(&self) {
        if self.life.is_poisoned() {
            return;
        }
        // Only files numbered before this snapshot are candidates: a job may create (and
        // register) a file after the lock is released.
        let (live, pending, min_wal, manifest_number, next_file) = {
            let mut st = self.state.lock();
            // Every tree's logged log number is at most the oldest WAL its memtables use
            // (flushes log exactly that), so this is also below all in-memory data.
            let min_wal = st.versions.min_logged_wal().unwrap_or(st.wal_number);
            let min_wal = st.wal_pins.keys().next().map_or(min_wal, |&p| p.min(min_wal));
            st.old_wals.retain(|&n, _| n >= min_wal);
            self.closed_wals.forget_below(min_wal);
            (
                st.versions.live_files(),
                st.pending_outputs.clone(),
                min_wal,
                st.versions.manifest_number(),
                st.versions.next_file_number(),
            )
        };
        let Ok(names) = self.fs.list(&self.dir) else {
            return;
        };
        for name in names {
            let kind = filename::parse(&name);
            let obsolete = match kind {
                FileKind::Table(n) => n < next_file && !live.contains(&n) && !pending.contains(&n),
                FileKind::Wal(n) => n < min_wal,
                FileKind::Manifest(n) => n < manifest_number,
                FileKind::Options(n) => n < self.options_number,
                // Temporary files belong to a write in progress (CURRENT.tmp of a manifest
                // rotation, a WAL being created); open removes those a failure left behind.
                FileKind::Temp | FileKind::Current | FileKind::Lock | FileKind::Other => false,
            };
            // A durable write may fail while this runs: stop deleting at once.
            if !obsolete || self.life.is_poisoned() {
                continue;
            }
            if let FileKind::Table(n) = kind {
                self.tables.evict(n);
                self.files.remove(FileNumber(n));
            }
            if let Err(e) = self.fs.remove_file(&self.dir.join(&name)) {
                tracing::warn!(file = %name, error = %e, "could not delete obsolete file");
            }
        }
    }

    /// Calls `f` with every table of the current read views: its tree, its metadata and its
    /// run-time state.
    pub fn for_each_live_file(&self, mut f: impl FnMut(usize, &Arc<FileMeta>, &Arc<LiveFile>)) {
        for sv in self.super_versions().iter() {
            let Some(tv) = sv.version.trees.get(sv.tree) else {
                continue;
            };
            for (level, metas) in tv.levels.iter().enumerate() {
                for (meta, state) in metas.iter().zip(sv.files.get(level).into_iter().flatten()) {
                    f(sv.tree, meta, state);
                }
            }
        }
    }

    pub fn stop_background(&self) {
        self.life.shut_down();
        {
            // Wake threads waiting on either condition variable.
            let _st = self.state.lock();
            self.bg_cv.notify_all();
            self.done_cv.notify_all();
        }
        self.life.join_threads();
    }
}

/// The error for a tree id no tree has.
pub fn unknown_tree(tree: u32) -> Error {
    Error::InvalidArgument(format!("unknown tree id {tree}"))
}
