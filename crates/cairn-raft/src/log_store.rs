//! The Raft log on cairn: entries in `{group}.log` keyed by their 8-byte big-endian index
//! (so key order is log order), encoded with postcard; the vote, the committed log id and the
//! last purged log id in `{group}.meta` under `vote`, `committed` and `purged`.
//!
//! Appends are written without a WAL sync and handed to a syncer thread, which acknowledges
//! every append waiting after one `Db::sync_wal` (group commit). Truncation and purging are
//! `delete_range`s; a purge writes its range tombstone and the new purged id in one batch.

use crate::{any, meta_tree};
use cairn::{Db, Tree, WriteBatch};
use openraft::storage::{LogFlushed, LogState, RaftLogReader, RaftLogStorage};
use openraft::{Entry, LogId, OptionalSend, RaftLogId, RaftTypeConfig, StorageError, StorageIOError, Vote};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::mpsc;

const VOTE: &[u8] = b"vote";
const COMMITTED: &[u8] = b"committed";
const PURGED: &[u8] = b"purged";

/// The log's trees; cheap to clone.
#[derive(Debug, Clone)]
struct Trees {
    log: Tree,
    meta: Tree,
}

/// Reads log entries (openraft's `RaftLogReader`); replication streams get one each.
#[derive(Debug, Clone)]
pub struct LogReader<C> {
    trees: Trees,
    _c: PhantomData<C>,
}

/// The Raft log storage of one group (openraft's `RaftLogStorage`).
#[derive(Debug)]
pub struct LogStore<C: RaftTypeConfig> {
    db: Db,
    reader: LogReader<C>,
    /// Appends waiting for the WAL sync that covers them (`None` only while dropping).
    syncer: Option<mpsc::Sender<LogFlushed<C>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl<C: RaftTypeConfig> Drop for LogStore<C> {
    /// Stops the syncer after it has acknowledged every append, so that the store's `Db`
    /// handle is gone when the drop returns (the database can be reopened at once).
    fn drop(&mut self) {
        self.syncer = None;
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                tracing::error!("the raft log's syncer thread panicked");
            }
        }
    }
}

fn key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

fn encode<T: Serialize>(v: &T) -> Result<Vec<u8>, postcard::Error> {
    postcard::to_allocvec(v)
}

fn decode<T: DeserializeOwned>(b: &[u8]) -> Result<T, postcard::Error> {
    postcard::from_bytes(b)
}

type KeyRange = (Bound<[u8; 8]>, Bound<[u8; 8]>);

/// The key range of log indexes `range` (`None` if empty).
fn key_range(range: &impl RangeBounds<u64>) -> Option<KeyRange> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1)?,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => Bound::Included(key(e)),
        Bound::Excluded(&e) => Bound::Excluded(key(e)),
        Bound::Unbounded => Bound::Unbounded,
    };
    Some((Bound::Included(key(start)), end))
}

impl<C> LogStore<C>
where
    C: RaftTypeConfig<Entry = Entry<C>>,
    C::D: Serialize + DeserializeOwned,
{
    /// Opens (creating if missing) the log of `group` on `db` and starts its syncer thread,
    /// which ends when the store is dropped.
    ///
    /// # Errors
    /// cairn errors creating the trees; failure to start the thread.
    pub fn open(db: &Db, group: &str) -> Result<Self, StorageError<C::NodeId>> {
        let trees = Trees {
            log: db
                .tree(&format!("{group}.log"))
                .map_err(|e| StorageIOError::write_logs(any(e)))?,
            meta: db
                .tree(&meta_tree(group))
                .map_err(|e| StorageIOError::write_logs(any(e)))?,
        };
        let (tx, rx) = mpsc::channel::<LogFlushed<C>>();
        let sync_db = db.clone();
        let thread = std::thread::Builder::new()
            .name(format!("cairn-raft-sync-{group}"))
            .spawn(move || {
                // Every append queued by the time a sync starts is covered by it.
                while let Ok(first) = rx.recv() {
                    let mut waiting = vec![first];
                    waiting.extend(rx.try_iter());
                    let synced = sync_db.sync_wal();
                    for cb in waiting {
                        cb.log_io_completed(match &synced {
                            Ok(()) => Ok(()),
                            Err(e) => Err(std::io::Error::other(e.to_string())),
                        });
                    }
                }
            })
            .map_err(|e| StorageIOError::write_logs(any(e)))?;
        Ok(LogStore {
            db: db.clone(),
            reader: LogReader { trees, _c: PhantomData },
            syncer: Some(tx),
            thread: Some(thread),
        })
    }

    fn trees(&self) -> &Trees {
        &self.reader.trees
    }

    fn read_meta<T: DeserializeOwned>(&self, name: &[u8]) -> Result<Option<T>, StorageError<C::NodeId>> {
        let err = |e: &dyn std::fmt::Display| StorageIOError::read(any(format!("log meta {name:?}: {e}")));
        match self.trees().meta.get(name).map_err(|e| err(&e))? {
            Some(b) => Ok(Some(decode(&b).map_err(|e| err(&e))?)),
            None => Ok(None),
        }
    }

    fn write(&self, batch: WriteBatch, sync: bool) -> cairn::Result<()> {
        crate::write(&self.db, batch, sync)
    }
}

impl<C> RaftLogReader<C> for LogReader<C>
where
    C: RaftTypeConfig<Entry = Entry<C>>,
    C::D: Serialize + DeserializeOwned,
{
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<C::Entry>, StorageError<C::NodeId>> {
        let Some(keys) = key_range(&range) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for item in self.trees.log.range(keys) {
            let (k, v) = item.map_err(|e| StorageIOError::read_logs(any(e)))?;
            let entry: Entry<C> =
                decode(&v).map_err(|e| StorageIOError::read_logs(any(format!("entry {k:?}: {e}"))))?;
            out.push(entry);
        }
        Ok(out)
    }
}

impl<C> RaftLogReader<C> for LogStore<C>
where
    C: RaftTypeConfig<Entry = Entry<C>>,
    C::D: Serialize + DeserializeOwned,
{
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<C::Entry>, StorageError<C::NodeId>> {
        self.reader.try_get_log_entries(range).await
    }
}

impl<C> RaftLogStorage<C> for LogStore<C>
where
    C: RaftTypeConfig<Entry = Entry<C>>,
    C::D: Serialize + DeserializeOwned,
{
    type LogReader = LogReader<C>;

    async fn get_log_state(&mut self) -> Result<LogState<C>, StorageError<C::NodeId>> {
        let last_purged_log_id: Option<LogId<C::NodeId>> = self.read_meta(PURGED)?;
        let last = match self.trees().log.iter().next_back() {
            None => None,
            Some(item) => {
                let (_, v) = item.map_err(|e| StorageIOError::read_logs(any(e)))?;
                let entry: Entry<C> = decode(&v).map_err(|e| StorageIOError::read_logs(any(e)))?;
                Some(entry.get_log_id().clone())
            }
        };
        Ok(LogState {
            last_log_id: last.or_else(|| last_purged_log_id.clone()),
            last_purged_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.reader.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<C::NodeId>) -> Result<(), StorageError<C::NodeId>> {
        // A vote must survive power loss before it is acted on: written with a sync.
        let mut batch = WriteBatch::new();
        batch.put_in(
            &self.trees().meta,
            VOTE,
            encode(vote).map_err(|e| StorageIOError::write_vote(any(e)))?,
        );
        self.write(batch, true)
            .map_err(|e| StorageIOError::write_vote(any(e)).into())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<C::NodeId>>, StorageError<C::NodeId>> {
        self.read_meta(VOTE)
    }

    async fn save_committed(&mut self, committed: Option<LogId<C::NodeId>>) -> Result<(), StorageError<C::NodeId>> {
        // Not synced: a committed id lost in a crash is learned again from the leader.
        let mut batch = WriteBatch::new();
        batch.put_in(
            &self.trees().meta,
            COMMITTED,
            encode(&committed).map_err(|e| StorageIOError::write(any(e)))?,
        );
        self.write(batch, false)
            .map_err(|e| StorageIOError::write(any(e)).into())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<C::NodeId>>, StorageError<C::NodeId>> {
        Ok(self.read_meta::<Option<LogId<C::NodeId>>>(COMMITTED)?.flatten())
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<C>) -> Result<(), StorageError<C::NodeId>>
    where
        I: IntoIterator<Item = C::Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut batch = WriteBatch::new();
        for entry in entries {
            let log_id = entry.get_log_id().clone();
            let value = encode(&entry).map_err(|e| StorageIOError::write_log_entry(log_id.clone(), any(e)))?;
            batch.put_in(&self.trees().log, key(log_id.index), value);
        }
        // Readable once written; acknowledged after the sync that covers it.
        self.write(batch, false)
            .map_err(|e| StorageIOError::write_logs(any(e)))?;
        self.syncer
            .as_ref()
            .and_then(|s| s.send(callback).ok())
            .ok_or_else(|| StorageIOError::write_logs(any("the log's syncer thread has stopped")).into())
    }

    async fn truncate(&mut self, log_id: LogId<C::NodeId>) -> Result<(), StorageError<C::NodeId>> {
        // Entries from `log_id` on conflict with the leader's; synced so that they cannot
        // come back after a power loss once later entries replace them.
        let mut batch = WriteBatch::new();
        batch.delete_range_in(&self.trees().log, key(log_id.index), [0xff; 9]);
        self.write(batch, true)
            .map_err(|e| StorageIOError::write_logs(any(e)).into())
    }

    async fn purge(&mut self, log_id: LogId<C::NodeId>) -> Result<(), StorageError<C::NodeId>> {
        // The purged id and the deletion in one batch: after a crash both or neither.
        // The end bound: the first key after `log_id.index`'s.
        let mut end = key(log_id.index).to_vec();
        end.push(0);
        let mut batch = WriteBatch::new();
        batch.put_in(
            &self.trees().meta,
            PURGED,
            encode(&log_id).map_err(|e| StorageIOError::write(any(e)))?,
        );
        batch.delete_range_in(&self.trees().log, key(0), end);
        self.write(batch, false)
            .map_err(|e| StorageIOError::write_logs(any(e)).into())
    }
}
