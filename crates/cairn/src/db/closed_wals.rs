//! WALs closed by a memtable switch whose tail may not be durable yet.
//!
//! A switch used to fdatasync the old WAL on the write path, holding the WAL lock: with 64 MiB
//! memtables that sync took 50–110 ms under compaction I/O, and every writer waited for it.
//! Now the old WAL is parked here and synced off the write path, by whichever comes first
//! (RocksDB's `SyncClosedLogs` and its sync-write rule):
//! - a flush, before the manifest edit that commits its tables (a table built from a WAL's
//!   data must not outlive that WAL's older records on power loss, or another tree's older
//!   writes could be lost while newer ones survive);
//! - a `sync = true` write group, before it syncs the current WAL (a synced write implies every
//!   earlier write is durable);
//! - `close`.
//!
//! Until then a power loss may cut a closed WAL short; recovery stops at the first WAL that
//! ends early (`replay.rs`), so what survives is still a prefix of the acknowledged writes —
//! the promise for `sync = false` writes. Each entry has its own lock, held while syncing: a
//! second caller waits for a sync in progress instead of trusting it, and a failed sync
//! poisons the database and is never retried (the writer is dropped).

use super::inner::DbInner;
use crate::error::Result;
use crate::wal::WalWriter;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One closed WAL: `Some` until synced (or until its sync failed).
type Entry = Arc<Mutex<Option<WalWriter>>>;

#[derive(Debug, Default)]
pub(crate) struct ClosedWals {
    by_number: Mutex<BTreeMap<u64, Entry>>,
}

impl ClosedWals {
    /// Parks `writer`, closed by a switch (its records are already with the OS).
    pub fn push(&self, writer: WalWriter) {
        self.by_number
            .lock()
            .insert(writer.log_number(), Arc::new(Mutex::new(Some(writer))));
    }

    /// Syncs every parked WAL, oldest first, waiting for syncs other threads have started.
    /// Holds no engine lock of its own but the entries': callers may hold the WAL lock (a sync
    /// write) or nothing (a flush).
    ///
    /// # Errors
    /// The first failed sync, after poisoning the database; `Poisoned` when another thread's
    /// sync of a parked WAL failed.
    pub fn sync_all(&self, inner: &DbInner) -> Result<()> {
        let entries: Vec<(u64, Entry)> = self.by_number.lock().iter().map(|(&n, e)| (n, e.clone())).collect();
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
                inner.io.record_sync();
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

    /// Numbers of the WALs parked now (for tests).
    #[cfg(test)]
    pub fn numbers(&self) -> Vec<u64> {
        self.by_number.lock().keys().copied().collect()
    }
}
