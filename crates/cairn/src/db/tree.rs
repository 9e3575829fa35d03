//! The handles of one tree ([`Tree`]: its reads, writes and iterators) and of a point in time
//! ([`Snapshot`]).

use super::inner::DbInner;
use super::{compact, flush, iter::Range, multi_get, read, write, Db, Tree};
use crate::batch::WriteBatch;
use crate::error::Result;
use crate::options::WriteOptions;
use std::ops::RangeBounds;
use std::sync::Arc;

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
        self.write_one(crate::format::ikey::ValueKind::Put, key.as_ref(), value.as_ref())
    }

    /// Sets `key` to `value` until `ttl` from now: from then on reads do not return it (nor an
    /// older version of the key) and compactions drop it. Overrides the tree's `ttl`.
    ///
    /// # Errors
    /// See [`Db::write`].
    pub fn put_with_ttl(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, ttl: std::time::Duration) -> Result<()> {
        let mut b = WriteBatch::new();
        b.push_with_ttl(self.id, key.as_ref(), value.as_ref(), crate::ttl::duration_ms(ttl));
        write::write(self.inner(), b, &WriteOptions::default())
    }

    /// Writes one operation of this tree as a batch of its own.
    fn write_one(&self, kind: crate::format::ikey::ValueKind, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.push(self.id, kind, key, value);
        write::write(self.inner(), b, &WriteOptions::default())
    }

    /// Adds the external tables at `tables` (written by [`TableWriter`](crate::TableWriter))
    /// to this tree atomically, without the write path: after a crash all of them are in or
    /// none. Each table's entries get one sequence number newer than every write before the
    /// call (a later table's, in the order given, newer still), so they shadow older versions
    /// of their keys and are shadowed by later writes; snapshots taken before do not see them.
    /// Each table goes to the deepest level it can without overlapping newer data; a table
    /// overlapping writes still in memory has the tree's memtables flushed first (writes wait
    /// meanwhile). Every table is read in full and checked before anything changes.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let opts = cairn::Options::default();
    /// let path = dir.path().join("load.sst");
    /// let mut w = cairn::TableWriter::create(&path, &opts)?;
    /// w.put(b"a", b"1")?;
    /// w.put(b"b", b"2")?;
    /// w.finish()?;
    /// let db = cairn::Db::open(dir.path().join("db"), opts)?;
    /// db.ingest(&[&path], &cairn::IngestOptions::default())?;
    /// assert_eq!(db.get("b")?.as_deref(), Some(&b"2"[..]));
    /// # Ok::<(), cairn::Error>(())
    /// ```
    ///
    /// # Errors
    /// `Corruption` when a table fails its checks, `InvalidArgument` for a path named twice,
    /// `Busy` when a table overlaps memory and `allow_blocking_flush` is off; `ReadOnly`,
    /// `Poisoned`, `TreeDropped`; I/O errors (nothing is ingested), and manifest write errors
    /// (the database then turns read-only).
    pub fn ingest<P: AsRef<std::path::Path>>(
        &self,
        tables: &[P],
        opts: &super::IngestOptions,
    ) -> Result<super::IngestInfo> {
        super::ingest::ingest(self.inner(), self.id, &super::ingest::paths(tables), opts)
    }

    /// Deletes `key`.
    ///
    /// # Errors
    /// See [`Db::write`].
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.write_one(crate::format::ikey::ValueKind::Delete, key.as_ref(), &[])
    }

    /// Merges `operand` into `key`: the database's merge operator (`merge_operator`) combines
    /// it with the value below when the key is read, and flushes and compactions fold
    /// operands together — a counter or an append without reading first.
    ///
    /// # Errors
    /// `InvalidArgument` when the database has no merge operator (nothing is written); see
    /// [`Db::write`].
    pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.write_one(crate::format::ikey::ValueKind::Merge, key.as_ref(), operand.as_ref())
    }

    /// Deletes every key `start ≤ k < end`, with one range tombstone: its cost does not grow
    /// with the number of keys deleted, and later reads of the range stay as fast (a lookup
    /// asks each table's tombstones with one binary search). Compactions drop the deleted
    /// entries, and the tombstone once no deeper level holds its range. An empty range
    /// (`start == end`) does nothing.
    ///
    /// # Errors
    /// `InvalidArgument` when `start > end` (nothing is written); see [`Db::write`].
    pub fn delete_range(&self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        let (start, end) = (start.as_ref(), end.as_ref());
        if start == end {
            return Ok(());
        }
        self.write_one(crate::format::ikey::ValueKind::RangeDelete, start, end)
    }

    /// The value of `key`, if present.
    ///
    /// # Errors
    /// Read and corruption errors (never a wrong answer).
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        read::get(self.inner(), self.id, key.as_ref(), None)
    }

    /// [`get`](Self::get) into a caller's buffer: `value` is replaced by the value and `true`
    /// returned when `key` is present (`value` is left unspecified otherwise). Reusing one
    /// buffer, a lookup allocates nothing.
    ///
    /// # Errors
    /// Read and corruption errors (never a wrong answer).
    pub fn get_into(&self, key: impl AsRef<[u8]>, value: &mut Vec<u8>) -> Result<bool> {
        read::get_into(self.inner(), self.id, key.as_ref(), None, value)
    }

    /// The values of `keys`, in the keys' order (RocksDB's `MultiGet`): one read view for all
    /// of them, the keys looked up in sorted order, and the lookups that must read from
    /// storage overlapped on a pool of threads, so a batch of uncached keys waits for about
    /// one read per thread instead of one per key.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = cairn::Db::open(dir.path(), cairn::Options::default())?;
    /// db.put("a", "1")?;
    /// db.put("c", "3")?;
    /// let got = db.multi_get(&["c", "b", "a"])?;
    /// assert_eq!(got, vec![Some(b"3".to_vec()), None, Some(b"1".to_vec())]);
    /// # Ok::<(), cairn::Error>(())
    /// ```
    ///
    /// # Errors
    /// The first lookup's error (read and corruption errors; [`multi_get_each`](Self::multi_get_each)
    /// keeps every answer beside the errors); `TreeDropped`, `Closed`.
    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        first_error(multi_get::multi_get(self.inner(), self.id, keys, None)?)
    }

    /// [`multi_get`](Self::multi_get) with each key's own result: one lookup's error (a
    /// corrupt block) leaves the other answers.
    ///
    /// # Errors
    /// `TreeDropped`, `Closed` (for the whole call).
    pub fn multi_get_each<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Result<Option<Vec<u8>>>>> {
        multi_get::multi_get(self.inner(), self.id, keys, None)
    }

    /// The tables a lookup of `key` would probe now with every filter off, each with whether
    /// it holds the key: for experiments that need the exact per-file lookups of a replayed
    /// workload (Merlin's accuracy). Not part of the API.
    ///
    /// # Errors
    /// Read and corruption errors.
    #[doc(hidden)]
    pub fn trace_lookup(&self, key: impl AsRef<[u8]>) -> Result<Vec<(u64, bool)>> {
        read::trace(self.inner(), self.id, key.as_ref())
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

/// The answers, or the first lookup's error.
fn first_error(answers: Vec<multi_get::Answer>) -> Result<Vec<Option<Vec<u8>>>> {
    answers.into_iter().collect()
}

/// A point-in-time view of every tree; released when dropped.
#[derive(Debug)]
pub struct Snapshot {
    pub(super) db: Db,
    pub(super) seq: u64,
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

    /// [`Tree::multi_get`] of the default tree as of the snapshot.
    ///
    /// # Errors
    /// As [`Tree::multi_get`].
    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        first_error(multi_get::multi_get(self.db.inner(), 0, keys, Some(self.seq))?)
    }

    /// [`Tree::multi_get`] of `tree` as of the snapshot.
    ///
    /// # Errors
    /// As [`Tree::multi_get`].
    pub fn multi_get_in<K: AsRef<[u8]>>(&self, tree: &Tree, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        first_error(multi_get::multi_get(self.db.inner(), tree.id, keys, Some(self.seq))?)
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
