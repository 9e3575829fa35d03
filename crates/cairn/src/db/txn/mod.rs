//! Transactions ([`Transaction`]): reads at a snapshot that see the transaction's own writes,
//! writes kept in memory until `commit` applies them as one batch through group commit.
//!
//! - **Optimistic** (the default): nothing is locked; the commit is checked, by the group's
//!   leader under the WAL lock, against the newest versions of what the transaction read
//!   (`validate.rs`). Serializable isolation checks every key read and every key range an
//!   iterator covered; snapshot isolation checks the keys written and those read with
//!   `get_for_update` (first committer wins).
//! - **Pessimistic**: writes and `get_for_update` lock their keys (`locks.rs`, with a timeout
//!   and deadlock detection); `get_for_update` reads the newest committed value, and the
//!   commit checks that no writer outside transactions changed it since.

mod iter;
mod locks;
mod validate;
mod writes;

pub use iter::TransactionRange;
pub(crate) use locks::LockTable;
pub(crate) use validate::{validate_group, Validation};

use super::{read, write, Db, Snapshot, Tree};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::format::ikey::ValueKind;
use crate::iter::KeyBounds;
use crate::options::WriteOptions;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use writes::Writes;

/// What a commit is checked against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Isolation {
    /// Every key read and every key range iterated must be unchanged at commit: the
    /// transactions run as if one after another (no lost update, no write skew).
    #[default]
    Serializable,
    /// Only the keys written (and those read with `get_for_update`) must be unchanged: fewer
    /// conflicts; write skew is possible.
    Snapshot,
}

/// How conflicting transactions are kept apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Concurrency {
    /// Nothing is locked; a commit that conflicts fails with [`Error::Conflict`].
    #[default]
    Optimistic,
    /// Keys are locked at their first write or `get_for_update`; a conflicting transaction
    /// waits (up to `lock_timeout`).
    Pessimistic,
}

/// Options of one transaction ([`Db::transaction_with`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionOptions {
    /// What an optimistic commit is checked against.
    pub isolation: Isolation,
    /// Optimistic or pessimistic.
    pub concurrency: Concurrency,
    /// How long a pessimistic transaction waits for a lock before [`Error::LockTimeout`].
    pub lock_timeout: Duration,
    /// How the commit's batch is written (`sync` for durability against power loss).
    pub write_options: WriteOptions,
}

impl Default for TransactionOptions {
    fn default() -> Self {
        TransactionOptions {
            isolation: Isolation::default(),
            concurrency: Concurrency::default(),
            lock_timeout: Duration::from_secs(1),
            write_options: WriteOptions::default(),
        }
    }
}

/// Transaction outcomes, for `Db::stats`.
#[derive(Debug, Default)]
pub(crate) struct TxnShared {
    pub locks: LockTable,
    pub commits: AtomicU64,
    pub conflicts: AtomicU64,
    pub rollbacks: AtomicU64,
}

impl TxnShared {
    pub(crate) fn stats(&self) -> crate::stats::TransactionStats {
        let l = &self.locks.counters;
        crate::stats::TransactionStats {
            commits: self.commits.load(Ordering::Relaxed),
            conflicts: self.conflicts.load(Ordering::Relaxed),
            rollbacks: self.rollbacks.load(Ordering::Relaxed),
            lock_waits: l.waits.load(Ordering::Relaxed),
            lock_timeouts: l.timeouts.load(Ordering::Relaxed),
            deadlocks: l.deadlocks.load(Ordering::Relaxed),
        }
    }
}

/// A transaction: reads see the database as of its start plus its own writes; `commit`
/// applies the writes atomically (across trees) if nothing it depended on changed, and
/// dropping it without a commit rolls it back. Not shared between threads (`Send`, not
/// `Sync`); each thread runs its own.
pub struct Transaction<'db> {
    snapshot: Snapshot,
    opts: TransactionOptions,
    writes: Writes,
    /// What the reads depended on (serializable; and `get_for_update` under either isolation).
    reads: RefCell<Validation>,
    end: Ending,
    _db: PhantomData<&'db Db>,
}

/// A transaction's locks, released when it ends; an end other than a counted commit counts as
/// a rollback.
struct Ending {
    db: Db,
    /// Pessimistic: the lock owner id.
    owner: Option<u64>,
    locked: Vec<(u32, Vec<u8>)>,
    counted: bool,
}

impl Drop for Ending {
    fn drop(&mut self) {
        let txns = &self.db.inner().txns;
        if let Some(owner) = self.owner {
            txns.locks.unlock(owner, &self.locked);
        }
        if !self.counted {
            txns.rollbacks.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl std::fmt::Debug for Transaction<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("seqno", &self.snapshot.seq)
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl Db {
    /// Starts an optimistic, serializable transaction ([`TransactionOptions::default`]).
    pub fn transaction(&self) -> Transaction<'_> {
        self.transaction_with(&TransactionOptions::default())
    }

    /// Starts a transaction with `opts`.
    pub fn transaction_with(&self, opts: &TransactionOptions) -> Transaction<'_> {
        let txns = &self.inner().txns;
        Transaction {
            snapshot: self.snapshot(),
            opts: opts.clone(),
            writes: Writes::default(),
            reads: RefCell::default(),
            end: Ending {
                db: self.clone(),
                owner: (opts.concurrency == Concurrency::Pessimistic).then(|| txns.locks.owner()),
                locked: Vec::new(),
                counted: false,
            },
            _db: PhantomData,
        }
    }
}

impl<'db> Transaction<'db> {
    /// The transaction without the borrow of its [`Db`] (it holds a handle of its own): for
    /// bindings and tasks that need a `'static` value.
    pub fn detach(self) -> Transaction<'static> {
        Transaction {
            snapshot: self.snapshot,
            opts: self.opts,
            writes: self.writes,
            reads: self.reads,
            end: self.end,
            _db: PhantomData,
        }
    }

    /// The sequence number the transaction reads at.
    pub fn seqno(&self) -> u64 {
        self.snapshot.seq
    }

    fn serializable(&self) -> bool {
        self.opts.isolation == Isolation::Serializable && self.end.owner.is_none()
    }

    /// `key` of the default tree, as the transaction sees it.
    ///
    /// # Errors
    /// Read errors; `InvalidArgument` for an unknown tree.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.read(0, key.as_ref(), false)
    }

    /// `key` of `tree`, as the transaction sees it.
    ///
    /// # Errors
    /// See [`get`](Self::get).
    pub fn get_in(&self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.read(tree.id, key.as_ref(), false)
    }

    /// [`get`](Self::get) of a key the transaction means to write: under snapshot isolation
    /// its commit is checked against the key too; a pessimistic transaction locks the key and
    /// reads its newest committed value.
    ///
    /// # Errors
    /// See [`get`](Self::get); `LockTimeout` and `Deadlock` (pessimistic).
    pub fn get_for_update(&mut self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_for_update_tree(0, key.as_ref())
    }

    /// [`get_for_update`](Self::get_for_update) in `tree`.
    ///
    /// # Errors
    /// See [`get_for_update`](Self::get_for_update).
    pub fn get_for_update_in(&mut self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_for_update_tree(tree.id, key.as_ref())
    }

    fn get_for_update_tree(&mut self, tree: u32, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.lock(tree, key)?;
        self.read(tree, key, true)
    }

    /// The transaction's view of one key; records what it depended on.
    fn read(&self, tree: u32, key: &[u8], for_update: bool) -> Result<Option<Vec<u8>>> {
        let inner = self.end.db.inner();
        let own = self.writes.view(tree, key);
        // A pessimistic read for update sees the newest committed value (its key is locked).
        let seq = match self.end.owner {
            Some(_) if for_update => inner.last_seq.load(Ordering::Acquire),
            _ => self.snapshot.seq,
        };
        let mut asked = false;
        let value = own.resolve(key, inner.opts.merge_operator.as_deref(), || {
            asked = true;
            read::get(inner, tree, key, Some(seq))
        })?;
        // A value the transaction's own writes settle depends on nothing in the database (and
        // a key it wrote is checked or locked as a write).
        if asked && (for_update || self.serializable()) {
            self.reads.borrow_mut().keys.push((tree, key.to_vec(), seq));
        }
        Ok(value)
    }

    /// Sets `key` of the default tree to `value`.
    ///
    /// # Errors
    /// `InvalidArgument` for a key or value over the limits or a transaction over
    /// `limits.max_batch_size`; `ReadOnly`; `LockTimeout` and `Deadlock` (pessimistic).
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.write(0, ValueKind::Put, key.as_ref(), value.as_ref())
    }

    /// Sets `key` of `tree` to `value`.
    ///
    /// # Errors
    /// See [`put`](Self::put).
    pub fn put_in(&mut self, tree: &Tree, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.write(tree.id, ValueKind::Put, key.as_ref(), value.as_ref())
    }

    /// Deletes `key` of the default tree.
    ///
    /// # Errors
    /// See [`put`](Self::put).
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.write(0, ValueKind::Delete, key.as_ref(), &[])
    }

    /// Deletes `key` of `tree`.
    ///
    /// # Errors
    /// See [`put`](Self::put).
    pub fn delete_in(&mut self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<()> {
        self.write(tree.id, ValueKind::Delete, key.as_ref(), &[])
    }

    /// Merges `operand` into `key` of the default tree (the transaction's reads of the key
    /// apply it).
    ///
    /// # Errors
    /// See [`put`](Self::put); `InvalidArgument` without a merge operator.
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.write(0, ValueKind::Merge, key.as_ref(), operand.as_ref())
    }

    /// Merges `operand` into `key` of `tree`.
    ///
    /// # Errors
    /// See [`merge`](Self::merge).
    pub fn merge_in(&mut self, tree: &Tree, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.write(tree.id, ValueKind::Merge, key.as_ref(), operand.as_ref())
    }

    fn write(&mut self, tree: u32, kind: ValueKind, key: &[u8], value: &[u8]) -> Result<()> {
        let inner = self.end.db.inner();
        inner.check_writable()?;
        let mut one = WriteBatch::new();
        one.push(tree, kind, key, value);
        write::validate(inner, &one, &inner.supers.load())?;
        let l = &inner.opts.limits;
        let total = self.writes.bytes() + key.len() + value.len();
        if total > l.max_batch_size {
            return Err(Error::InvalidArgument(format!(
                "transaction of {total} bytes of keys and values exceeds limits.max_batch_size {}",
                l.max_batch_size
            )));
        }
        self.lock(tree, key)?;
        self.writes.push(tree, kind, key, value);
        Ok(())
    }

    /// Pessimistic: locks `key` of `tree` (held until the transaction ends).
    fn lock(&mut self, tree: u32, key: &[u8]) -> Result<()> {
        let Some(owner) = self.end.owner else {
            return Ok(());
        };
        if self
            .end
            .db
            .inner()
            .txns
            .locks
            .lock(owner, tree, key, self.opts.lock_timeout)?
        {
            self.end.locked.push((tree, key.to_vec()));
        }
        Ok(())
    }

    /// Entries of the default tree in `range`, as the transaction sees them (its own writes
    /// merged in), forward or backward.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> TransactionRange<'_> {
        self.range_tree(0, &range)
    }

    /// Entries of `tree` in `range`, as the transaction sees them.
    pub fn range_in<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, tree: &Tree, range: R) -> TransactionRange<'_> {
        self.range_tree(tree.id, &range)
    }

    /// Every entry of the default tree, as the transaction sees it.
    pub fn iter(&self) -> TransactionRange<'_> {
        self.range::<&[u8], _>(..)
    }

    fn range_tree<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, tree: u32, range: &R) -> TransactionRange<'_> {
        let bounds = KeyBounds {
            lo: owned(range.start_bound()),
            hi: owned(range.end_bound()),
        };
        let inner = self.end.db.inner();
        let seq = self.snapshot.seq;
        let db = super::Range::new(inner.clone(), tree, Some(seq), range);
        let mut own = Vec::new();
        let mut failed = None;
        // No own write lies in empty bounds (and the map refuses inverted ones).
        let own_writes = if bounds.is_empty() {
            Vec::new()
        } else {
            self.writes.within(tree, &bounds.lo, &bounds.hi)
        };
        for (k, view) in own_writes {
            match view.resolve(&k, inner.opts.merge_operator.as_deref(), || {
                read::get(inner, tree, &k, Some(seq))
            }) {
                Ok(v) => own.push((k, v)),
                Err(e) => failed = Some(e),
            }
        }
        let record = self.serializable().then_some((&self.reads, tree, seq));
        TransactionRange::new(db, own, bounds, record, failed)
    }

    /// Marks a savepoint: [`rollback_to_savepoint`](Self::rollback_to_savepoint) undoes the
    /// writes made after it.
    pub fn set_savepoint(&mut self) {
        self.writes.set_savepoint();
    }

    /// Undoes every write since the last savepoint and removes the savepoint. Reads made since
    /// still count at commit (what they saw may have shaped the writes kept), and locks taken
    /// since are kept.
    ///
    /// # Errors
    /// `InvalidArgument` when no savepoint is set.
    pub fn rollback_to_savepoint(&mut self) -> Result<()> {
        self.writes
            .rollback_to_savepoint()
            .ok_or_else(|| Error::InvalidArgument("rollback_to_savepoint without a savepoint".into()))
    }

    /// Applies the writes as one atomic batch, if nothing the transaction depended on changed.
    /// A transaction that wrote nothing commits at once (its reads are of one snapshot).
    ///
    /// # Errors
    /// `Conflict` when a key or range it depended on changed since it read it (nothing is
    /// written; retry with a new transaction); the errors of [`Db::write`].
    pub fn commit(mut self) -> Result<()> {
        let r = self.apply();
        let txns = &self.end.db.inner().txns;
        match &r {
            Ok(()) => txns.commits.fetch_add(1, Ordering::Relaxed),
            Err(Error::Conflict { .. }) => txns.conflicts.fetch_add(1, Ordering::Relaxed),
            Err(_) => txns.rollbacks.fetch_add(1, Ordering::Relaxed),
        };
        self.end.counted = true;
        r
    }

    fn apply(&mut self) -> Result<()> {
        if self.writes.is_empty() {
            return Ok(());
        }
        let mut batch = WriteBatch::new();
        for (tree, kind, key, value) in self.writes.ops() {
            batch.push(tree, kind, key, value);
        }
        let mut check = std::mem::take(&mut *self.reads.borrow_mut());
        if self.opts.isolation == Isolation::Snapshot && self.end.owner.is_none() {
            // First committer wins: the keys written must be unchanged since the snapshot.
            let seq = self.snapshot.seq;
            check
                .keys
                .extend(self.writes.keys().map(|(tree, key)| (tree, key.to_vec(), seq)));
        }
        let check = (!check.keys.is_empty() || !check.ranges.is_empty()).then_some(check);
        write::write_checked(self.end.db.inner(), batch, &self.opts.write_options, check)
    }

    /// Drops the writes and releases the locks (as dropping the transaction does).
    pub fn rollback(self) {}
}

fn owned<K: AsRef<[u8]>>(b: Bound<&K>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}
