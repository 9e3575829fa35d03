//! WALs closed by a memtable switch whose tail may not be durable yet.
//!
//! A switch used to fdatasync the old WAL on the write path, holding the WAL lock: with 64 MiB
//! memtables that sync took 50–110 ms under compaction I/O, and every writer waited for it.
//! Now the old WAL is parked here and synced off the write path when something needs it
//! durable (RocksDB's rules: `SyncClosedLogs` and a sync write's syncing of earlier logs):
//! - a flush, before the manifest edit that commits its tables, syncs the closed WALs that
//!   stay needed after it and hold writes older than the tables' newest — otherwise a power
//!   loss could keep the tables while losing older writes of another tree. A closed WAL whose
//!   data all goes into the tables (one tree) becomes obsolete unsynced, as in RocksDB, and a
//!   needed one holding only newer writes may lose its end without breaking the prefix;
//! - a `sync = true` write group, before it syncs the current WAL (a synced write implies every
//!   earlier write is durable);
//! - `close`.
//!
//! The same callers make the WALs' names durable: a switch renames the new WAL into place
//! without syncing the directory (up to 13 ms on the write path), and one directory sync
//! before anything relies on a WAL covers every rename before it.
//!
//! Until then a power loss may cut a closed WAL anywhere in its unsynced end; recovery stops at
//! the first WAL that ends early or breaks the sequence numbers (`replay.rs`), so what survives
//! is a prefix of the acknowledged writes — the promise for `sync = false` writes. Each entry
//! has its own lock, held while syncing: a second caller waits for a sync in progress instead of
//! trusting it, and a failed sync poisons the database and is never retried (the writer is
//! dropped).

use crate::error::{Error, Result};
use crate::wal::WalWriter;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What syncing closed WALs needs of the engine (`DbInner` in `inner.rs`).
pub(crate) trait Durability {
    /// Syncs the database directory.
    fn sync_dir(&self) -> Result<()>;
    /// Turns the database read-only after a failed durable write (never retried).
    fn set_poison(&self, e: &Error);
    /// `Poisoned` once a durable write has failed.
    fn check_poisoned(&self) -> Result<()>;
    /// Counts one sync.
    fn record_sync(&self);
}

/// One closed WAL: `Some` until synced (or until its sync failed).
type Entry = Arc<Mutex<Option<WalWriter>>>;

#[derive(Debug, Default)]
pub(crate) struct ClosedWals {
    /// By log number: the sequence number of the log's first write, and the log.
    by_number: Mutex<BTreeMap<u64, (u64, Entry)>>,
    /// WALs renamed into place by switches, and how many of those renames a directory sync
    /// covered (its lock held while syncing: a second caller waits rather than trusts).
    renamed: AtomicU64,
    names_synced: Mutex<u64>,
}

impl ClosedWals {
    /// Parks `writer`, closed by a switch (its records are already with the OS).
    pub fn push(&self, writer: WalWriter) {
        let first = writer.first_seq();
        self.by_number
            .lock()
            .insert(writer.log_number(), (first, Arc::new(Mutex::new(Some(writer)))));
    }

    /// Syncs every parked WAL, oldest first, waiting for syncs other threads have started.
    /// Holds no engine lock of its own but the entries': callers may hold the WAL lock (a sync
    /// write) or nothing (a flush).
    ///
    /// # Errors
    /// The first failed sync, after poisoning the database; `Poisoned` when another thread's
    /// sync of a parked WAL failed.
    pub fn sync_all(&self, inner: &dyn Durability) -> Result<()> {
        self.sync_where(inner, |_, _| true)?;
        self.sync_names(inner)
    }

    /// A switch renamed a new WAL into place without syncing the directory.
    pub fn renamed(&self) {
        self.renamed.fetch_add(1, Ordering::Release);
    }

    /// Makes the names of every WAL renamed so far durable: one directory sync covers them.
    fn sync_names(&self, inner: &dyn Durability) -> Result<()> {
        let mut synced = self.names_synced.lock();
        let target = self.renamed.load(Ordering::Acquire);
        if *synced >= target {
            return Ok(());
        }
        // A failed directory sync is never retried.
        inner.check_poisoned()?;
        if let Err(e) = inner.sync_dir() {
            inner.set_poison(&e);
            return Err(e);
        }
        inner.record_sync();
        *synced = target;
        Ok(())
    }

    /// Before a flush commits tables whose newest write is `newest`: syncs the parked WALs
    /// numbered `needed_from` or above (still needed once the flush commits) that hold a write
    /// at or below `newest` (their first is ≤ it). A log with an unknown first write (0) counts
    /// as holding one.
    ///
    /// # Errors
    /// As [`sync_all`](Self::sync_all).
    pub fn sync_for_flush(&self, inner: &dyn Durability, needed_from: u64, newest: u64) -> Result<()> {
        self.sync_where(inner, |n, first| n >= needed_from && first <= newest)?;
        // Also when another thread synced those logs and has yet to sync their names.
        self.sync_names(inner)
    }

    fn sync_where(&self, inner: &dyn Durability, pick: impl Fn(u64, u64) -> bool) -> Result<()> {
        let entries: Vec<(u64, Entry)> = self
            .by_number
            .lock()
            .iter()
            .filter(|&(&n, &(first, _))| pick(n, first))
            .map(|(&n, (_, e))| (n, e.clone()))
            .collect();
        for (n, entry) in entries {
            let mut slot = entry.lock();
            if let Some(w) = slot.as_mut() {
                let r = w.sync();
                // Synced, or failed and never to be retried: the writer goes either way.
                *slot = None;
                if let Err(e) = r {
                    inner.set_poison(&e);
                    return Err(e);
                }
                inner.record_sync();
            }
            drop(slot);
            self.by_number.lock().remove(&n);
        }
        // A sync that failed in another thread took its writer: that WAL is not durable.
        inner.check_poisoned()
    }

    /// Forgets the parked WALs numbered below `min_wal` (obsolete: every tree has flushed past
    /// them, so their tails no longer matter).
    pub fn forget_below(&self, min_wal: u64) {
        let mut m = self.by_number.lock();
        let keep = m.split_off(&min_wal);
        *m = keep;
    }
}
