//! cairn as the storage of an [openraft](https://docs.rs/openraft/0.9) node: the replicated log
//! ([`LogStore`], openraft's `RaftLogStorage`) and a key-value state machine
//! ([`StateMachine`], `RaftStateMachine`) on one cairn [`Db`].
//!
//! One Raft group uses four trees named after the group: `{group}.log` (entries keyed by their
//! big-endian index), `{group}.meta` (vote, committed and purged log ids, the state machine's
//! last-applied id, membership and which data tree is live) and `{group}.sm.0` /
//! `{group}.sm.1` (the replicated data; one is live, the other receives an installed
//! snapshot). Many groups share one `Db` and its WAL: a sync covers every group's appends.
//!
//! Durability: an append is written without a sync (readable at once) and acknowledged to
//! openraft by the log's syncer thread after the WAL sync that covers it, one sync for every
//! append waiting (group commit). The vote is written with a sync. Applied entries are written
//! with their last-applied id and membership in one batch, without a sync: the WAL is one
//! ordered log, so after a crash the state machine is never ahead of the local log, and
//! openraft applies the committed rest again.
//!
//! Snapshots are files in the state machine's snapshot directory (format in `snapshot.rs`),
//! built from a cairn [`Snapshot`](cairn::Snapshot) of the live data tree while writes go on,
//! streamed by openraft in chunks, and installed into the idle data tree, which becomes live in
//! one synced write only after the whole file was read and its checksum matched.

#![expect(
    clippy::result_large_err,
    reason = "openraft's StorageError is the error of its storage traits; our constructors return it too"
)]

mod log_store;
mod snapshot;
mod state_machine;

pub use log_store::{LogReader, LogStore};
pub use snapshot::SNAPSHOT_FILE;
pub use state_machine::{KvReader, SnapshotBuilder, StateMachine};

use cairn::Db;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

openraft::declare_raft_types!(
    /// The type configuration of the replicated key-value store: node ids are `u64`, nodes
    /// are known by address, snapshots are files.
    pub TypeConfig:
        D = Request,
        R = Response,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = tokio::fs::File,
        AsyncRuntime = openraft::TokioRuntime,
);

/// A replicated write to the key-value state machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// Sets `key` to `value`.
    Put {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// Removes `key`.
    Delete {
        /// The key.
        key: Vec<u8>,
    },
    /// Removes every key in `[start, end)`.
    DeleteRange {
        /// First key removed.
        start: Vec<u8>,
        /// First key kept.
        end: Vec<u8>,
    },
}

impl Request {
    /// Checks the request against the database's key and value limits, so that a request that
    /// could never be applied is refused before it is proposed (a state machine that fails to
    /// apply a committed entry stops the node).
    ///
    /// # Errors
    /// A message naming the limit and the sizes.
    pub fn validate(&self, limits: &cairn::Limits) -> Result<(), String> {
        let key = |k: &[u8], what: &str| {
            if k.len() > limits.max_key_size {
                Err(format!(
                    "{what} of {} bytes exceeds limits.max_key_size = {}",
                    k.len(),
                    limits.max_key_size
                ))
            } else {
                Ok(())
            }
        };
        match self {
            Request::Put { key: k, value } => {
                key(k, "key")?;
                if value.len() > limits.max_value_size {
                    return Err(format!(
                        "value of {} bytes exceeds limits.max_value_size = {}",
                        value.len(),
                        limits.max_value_size
                    ));
                }
                Ok(())
            }
            Request::Delete { key: k } => key(k, "key"),
            Request::DeleteRange { start, end } => {
                key(start, "range start")?;
                key(end, "range end")
            }
        }
    }
}

/// What applying a [`Request`] returns (nothing beyond the log id openraft reports).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {}

/// Opens the log store and the state machine of Raft group `group` on `db`; snapshots go to
/// `snapshot_dir` (created if missing; one directory per group).
///
/// # Errors
/// cairn errors creating the trees or reading the state machine's state; I/O errors on the
/// snapshot directory; a corrupt current snapshot file.
pub fn open(
    db: &Db,
    group: &str,
    snapshot_dir: impl Into<PathBuf>,
) -> Result<(LogStore<TypeConfig>, StateMachine), openraft::StorageError<u64>> {
    let log = LogStore::open(db, group)?;
    let sm = StateMachine::open(db, group, snapshot_dir.into())?;
    Ok((log, sm))
}

/// The meta tree's name for `group`.
fn meta_tree(group: &str) -> String {
    format!("{group}.meta")
}

/// Writes `batch`, with a WAL sync if `sync`.
fn write(db: &Db, batch: cairn::WriteBatch, sync: bool) -> cairn::Result<()> {
    db.write(
        batch,
        &cairn::WriteOptions {
            sync,
            ..Default::default()
        },
    )
}

/// An error for openraft from anything displayable.
fn any(e: impl std::fmt::Display) -> anyerror::AnyError {
    anyerror::AnyError::error(e.to_string())
}
