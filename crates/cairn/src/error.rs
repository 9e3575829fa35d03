//! The one error type of the engine (docs/design.md §4).
//!
//! Every failure that comes from bytes on storage is a [`Error::Corruption`] naming the file and
//! byte offset; decoders never panic on bad input.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors returned by cairn. Cloneable: one failure can be handed to every writer of a commit
/// group, or to every reader of a table that failed to open.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O call failed.
    #[error("I/O error during {op} on {}: {source}", path.display())]
    Io {
        /// The operation that failed (`"read"`, `"append"`, `"fdatasync"`, ...).
        op: &'static str,
        /// The file or directory it was applied to.
        path: PathBuf,
        /// The underlying error (shared, so that the error can be cloned).
        #[source]
        source: Arc<io::Error>,
    },
    /// Stored bytes failed a checksum or a structural check.
    #[error("corruption in {} at offset {offset}: {what}", file.display())]
    Corruption {
        /// The damaged file.
        file: PathBuf,
        /// Byte offset of the damaged structure within the file.
        offset: u64,
        /// What was wrong.
        what: String,
    },
    /// A caller passed an argument the engine refuses (oversized key, empty tree name, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An option failed validation; the message names the option.
    #[error("invalid option `{option}`: {reason}")]
    InvalidOptions {
        /// The option's name as spelled in the builder.
        option: &'static str,
        /// Why it was refused.
        reason: String,
    },
    /// A previous durable write failed (e.g. fsync); the database is read-only from now on.
    #[error("database is read-only after an earlier failure: {0}")]
    Poisoned(String),
    /// The database was closed (`Db::close`, or its last handle dropped).
    #[error("the database is closed")]
    Closed,
    /// The database was opened read-only (`Db::open_read_only`): it writes nothing.
    #[error("the database is open read-only")]
    ReadOnly,
    /// Writes are stalled and the caller asked not to wait (`WriteOptions::no_slowdown`).
    #[error("busy: {0}")]
    Busy(String),
    /// Another handle or process holds the database lock.
    #[error("database directory is locked by another process or handle: {}", .0.display())]
    Locked(PathBuf),
    /// The request needs something this build, file or platform does not support.
    #[error("not supported: {0}")]
    NotSupported(String),
    /// A transaction's commit was refused: `key` of tree `tree` (for a range, its lower bound)
    /// changed after the transaction read it. Nothing was written; run the transaction again.
    #[error("transaction conflict on key {:?} of tree {tree}", String::from_utf8_lossy(key))]
    Conflict {
        /// The tree's id.
        tree: u32,
        /// The key, or the lower bound of the key range, that changed.
        key: Vec<u8>,
    },
    /// The tree was dropped (`Db::drop_tree`): its handles read and write nothing.
    #[error("tree {tree} was dropped")]
    TreeDropped {
        /// The dropped tree's id.
        tree: u32,
    },
    /// A pessimistic transaction waited for a key's lock longer than its `lock_timeout`.
    #[error(
        "lock wait timed out after {waited:?} on key {:?} of tree {tree}",
        String::from_utf8_lossy(key)
    )]
    LockTimeout {
        /// The tree's id.
        tree: u32,
        /// The key.
        key: Vec<u8>,
        /// How long it waited.
        waited: std::time::Duration,
    },
    /// A pessimistic transaction's lock request would have waited in a cycle of transactions
    /// each waiting for the next: refused at once (roll back and retry).
    #[error("deadlock on key {:?} of tree {tree}", String::from_utf8_lossy(key))]
    Deadlock {
        /// The tree's id.
        tree: u32,
        /// The key asked for.
        key: Vec<u8>,
    },
}

impl Error {
    /// Builds an [`Error::Corruption`].
    pub fn corruption(file: impl Into<PathBuf>, offset: u64, what: impl fmt::Display) -> Self {
        Error::Corruption {
            file: file.into(),
            offset,
            what: what.to_string(),
        }
    }

    /// Builds an [`Error::Io`].
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source: Arc::new(source),
        }
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
}
