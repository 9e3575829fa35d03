//! External tables: cairn tables written outside any database by [`TableWriter`], for
//! `Db::ingest` to add (bulk loads, restores, snapshot installs) without the write path.
//!
//! An external table is an ordinary table (`docs/format/sst.md`) with three marks: its
//! properties name file 0 and database 0, and every entry and range tombstone carries
//! sequence number 0. Each user key appears once. Ingestion gives the table one sequence
//! number newer than everything in the database and records it in the manifest (tag 13, the
//! table's *global* sequence number); readers read every entry with it (`sst/block.rs`), so
//! the file is linked or copied into the database unchanged. A range tombstone of the table
//! deletes older data only: the table's own entries share its sequence number and stay.

use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::format::ikey::{self, ValueKind};
use crate::options::Options;
use crate::range_del::{Fragments, RangeTombstone};
use crate::sst::{TableBuilder, TableSummary};
use crate::stats::IoStats;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Writes one external table: entries in strictly increasing key order, each key once, range
/// deletions in any order; [`finish`](Self::finish) makes the file durable.
///
/// The table is built as the database with `opts` builds its tables (block size, compression,
/// restart intervals, filter bits per key and unit layout, range filter); a table written
/// with other options is still read correctly by any database.
pub struct TableWriter {
    builder: Option<TableBuilder>,
    path: PathBuf,
    last: Option<Vec<u8>>,
    tombstones: Vec<RangeTombstone>,
    max_key: usize,
    max_value: usize,
    /// The internal key being added, and an expiring value, built in place.
    key: Vec<u8>,
    value: Vec<u8>,
}

impl std::fmt::Debug for TableWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableWriter")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// What a finished external table holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalTable {
    /// Where it was written.
    pub path: PathBuf,
    /// Bytes in the file.
    pub file_size: u64,
    /// Entries (puts, deletions, merge operands).
    pub entries: u64,
    /// Range tombstones, as fragmented in the table.
    pub range_deletions: u64,
    /// The smallest user key it covers (an entry's or a range tombstone's start).
    pub smallest_key: Vec<u8>,
    /// The largest user key it covers.
    pub largest_key: Vec<u8>,
}

impl TableWriter {
    /// Creates `path` (which must not exist) in `opts`' file system for a table built with
    /// `opts`' table settings.
    ///
    /// # Errors
    /// `InvalidOptions` when `opts` fail validation; I/O errors creating the file.
    pub fn create(path: impl AsRef<Path>, opts: &Options) -> Result<Self> {
        opts.validate()?;
        let path = path.as_ref().to_path_buf();
        let fs: &dyn FileSystem = &*opts.fs;
        if fs.exists(&path)? {
            return Err(Error::InvalidArgument(format!(
                "{} exists: an external table is written to a new file",
                path.display()
            )));
        }
        let file = fs.create(&path)?;
        let table = crate::db::external_table_options(opts);
        Ok(TableWriter {
            builder: Some(TableBuilder::new(file, 0, table, Arc::new(IoStats::new()))),
            path,
            last: None,
            tombstones: Vec::new(),
            max_key: opts.limits.max_key_size,
            max_value: opts.limits.max_value_size,
            key: Vec::new(),
            value: Vec::new(),
        })
    }

    /// Adds `key` = `value`.
    ///
    /// # Errors
    /// `InvalidArgument` when the key is not greater than the previous one or a size exceeds
    /// `limits`; I/O errors (the writer is then unusable).
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.add(key, ValueKind::Put, value)
    }

    /// Adds `key` = `value`, expiring at `deadline_ms` (milliseconds since the Unix epoch, by
    /// the ingesting database's clock; a tree's `ttl` applies to writes, not to ingestion).
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub fn put_with_deadline(&mut self, key: &[u8], value: &[u8], deadline_ms: u64) -> Result<()> {
        let mut v = std::mem::take(&mut self.value);
        v.clear();
        v.extend_from_slice(&deadline_ms.to_le_bytes());
        v.extend_from_slice(value);
        let r = self.add(key, ValueKind::Expiring, &v);
        self.value = v;
        r
    }

    /// Adds a deletion of `key`: it hides the key's older versions in the database.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.add(key, ValueKind::Delete, &[])
    }

    /// Adds a merge operand for `key`, applied over the key's older versions in the database
    /// by its merge operator.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub fn merge(&mut self, key: &[u8], operand: &[u8]) -> Result<()> {
        self.add(key, ValueKind::Merge, operand)
    }

    /// Deletes every key in `[start, end)` of the database's older data (not this table's
    /// entries). Any order, overlapping or not; an empty range is ignored.
    ///
    /// # Errors
    /// `InvalidArgument` when a bound exceeds `limits.max_key_size`.
    pub fn delete_range(&mut self, start: &[u8], end: &[u8]) -> Result<()> {
        for k in [start, end] {
            self.check_key(k)?;
        }
        if start < end {
            self.tombstones.push(RangeTombstone {
                start: start.to_vec(),
                end: end.to_vec(),
                seq: 0,
            });
        }
        Ok(())
    }

    fn check_key(&self, key: &[u8]) -> Result<()> {
        if key.len() > self.max_key {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes exceeds limits.max_key_size {}",
                key.len(),
                self.max_key
            )));
        }
        Ok(())
    }

    fn add(&mut self, key: &[u8], kind: ValueKind, value: &[u8]) -> Result<()> {
        self.check_key(key)?;
        if value.len() > self.max_value {
            return Err(Error::InvalidArgument(format!(
                "value of {} bytes exceeds limits.max_value_size {}",
                value.len(),
                self.max_value
            )));
        }
        if let Some(last) = &self.last {
            if key <= last.as_slice() {
                return Err(Error::InvalidArgument(format!(
                    "external table keys must increase: {:?} after {:?}",
                    String::from_utf8_lossy(key),
                    String::from_utf8_lossy(last)
                )));
            }
        }
        let b = self.builder.as_mut().ok_or_else(unusable)?;
        self.key.clear();
        self.key.extend_from_slice(key);
        self.key.extend_from_slice(&ikey::pack_trailer(0, kind).to_le_bytes());
        if let Err(e) = b.add(&self.key, value) {
            self.builder = None;
            return Err(e);
        }
        match &mut self.last {
            Some(l) => {
                l.clear();
                l.extend_from_slice(key);
            }
            None => self.last = Some(key.to_vec()),
        }
        Ok(())
    }

    /// Writes the table's filters, index and properties and syncs the file.
    ///
    /// # Errors
    /// `InvalidArgument` when the table holds no entry and no range tombstone; I/O errors.
    pub fn finish(mut self) -> Result<ExternalTable> {
        let mut b = self.builder.take().ok_or_else(unusable)?;
        let frags = Fragments::new(std::mem::take(&mut self.tombstones));
        if self.last.is_none() && frags.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "external table {} holds nothing",
                self.path.display()
            )));
        }
        b.set_range_dels(frags);
        let s: TableSummary = b.finish()?;
        let p = &s.properties;
        Ok(ExternalTable {
            path: self.path.clone(),
            file_size: s.file_size,
            entries: p.entries,
            range_deletions: p.range_deletions,
            smallest_key: ikey::user_key(&p.smallest_key).to_vec(),
            largest_key: ikey::user_key(&p.largest_key).to_vec(),
        })
    }
}

fn unusable() -> Error {
    Error::InvalidArgument("the table writer failed earlier and writes nothing more".into())
}

/// What ingestion knows of an external table once it has read all of it.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    pub path: PathBuf,
    /// Its manifest entry as a compaction output would have it (number 0, keys and sequence
    /// numbers as stored).
    pub meta: crate::version::FileMeta,
}

impl Checked {
    /// Its smallest and largest user keys.
    pub fn user_range(&self) -> (&[u8], &[u8]) {
        (self.meta.smallest_user_key(), self.meta.largest_user_key())
    }
}

/// Reads all of external table `path` before it is ingested: every block's checksum, the
/// entries' order against the properties, and what makes it external (file 0, database 0,
/// sequence number 0 throughout, each user key once).
///
/// # Errors
/// `Corruption` naming the first thing wrong; I/O errors.
pub(crate) fn check(fs: &dyn FileSystem, path: &Path) -> Result<Checked> {
    let mut report = crate::inspect::VerifyReport::default();
    let mut last: Option<Vec<u8>> = None;
    let mut min_deadline = 0u64;
    crate::inspect::check_table_with(fs, path, None, None, &mut report, |k, v| {
        let (user, seq, kind) = ikey::split(k)?;
        if seq != 0 {
            return Some(format!("sequence number {seq}: not an external table's entry"));
        }
        if last.as_deref() == Some(user) {
            return Some("a second entry of one user key".into());
        }
        if kind == ValueKind::Expiring {
            let Some(d) = crate::format::coding::read_u64(v, 0) else {
                return Some("an expiring value shorter than its deadline".into());
            };
            min_deadline = if min_deadline == 0 { d } else { min_deadline.min(d) };
        }
        match &mut last {
            Some(l) => {
                l.clear();
                l.extend_from_slice(user);
            }
            None => last = Some(user.to_vec()),
        }
        None
    });
    if let Some(d) = report.damage.first() {
        return Err(Error::corruption(
            &d.file,
            d.offset,
            format!("external table: {}", d.what),
        ));
    }
    let t = crate::sst::TableReader::open(fs, path, None, crate::sst::ReaderOptions::default())?;
    let p = t.properties();
    let bad = |what: &str| Err(Error::corruption(path, 0, format!("not an external table: {what}")));
    if p.file_number != 0 || p.db_id != 0 {
        return bad(&format!(
            "written by a database (file {}, database {:016x})",
            p.file_number, p.db_id
        ));
    }
    if p.largest_seqno != 0 || t.range_dels().seq_bounds().is_some_and(|(_, hi)| hi != 0) {
        return bad("an entry or range tombstone with a sequence number");
    }
    if p.entries == 0 && t.range_dels().is_empty() {
        return bad("it holds nothing");
    }
    let summary = TableSummary {
        file_size: t.file_size(),
        properties: p.clone(),
        min_deadline,
    };
    Ok(Checked {
        path: path.to_path_buf(),
        meta: crate::compaction::job::meta(0, &summary),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail by panicking")]
    use super::*;
    use crate::env::MemFs;
    use crate::format::LookupKey;
    use crate::iter::InternalIterator;
    use crate::sst::{ReaderOptions, TableReader, UnitSelection};

    /// User keys where one's stored key is a prefix of the next's bytes into its trailer (the
    /// next entry shares bytes of the previous trailer): reading with a global sequence number
    /// must not disturb the shared prefix.
    fn keys() -> Vec<Vec<u8>> {
        let mut a = b"a".to_vec();
        a.extend_from_slice(&ikey::pack_trailer(0, ValueKind::Put).to_le_bytes()[..3]);
        let mut ks = vec![b"a".to_vec(), a, b"b".to_vec()];
        ks.extend((0..300).map(|i| format!("k{i:04}").into_bytes()));
        ks
    }

    fn write(fs: &MemFs) -> ExternalTable {
        let mut o = Options {
            fs: Arc::new(fs.clone()),
            ..Options::default()
        };
        o.table.block_size = 128;
        fs.create_dir_all(Path::new("/x")).unwrap();
        let mut w = TableWriter::create("/x/t.sst", &o).unwrap();
        for (i, k) in keys().iter().enumerate() {
            match i % 3 {
                0 => w.put(k, format!("v{i}").as_bytes()).unwrap(),
                1 => w.merge(k, b"m").unwrap(),
                _ => w.delete(k).unwrap(),
            }
        }
        w.delete_range(b"k0100", b"k0200").unwrap();
        w.finish().unwrap()
    }

    fn open(fs: &MemFs, g: u64) -> Arc<TableReader> {
        let opts = ReaderOptions {
            stats: Arc::new(IoStats::new()),
            global_seqno: g,
            ..ReaderOptions::default()
        };
        Arc::new(TableReader::open(fs, Path::new("/x/t.sst"), Some(9), opts).unwrap())
    }

    #[test]
    fn an_ingested_table_reads_every_key_and_tombstone_with_its_sequence_number() {
        let fs = MemFs::new();
        let info = write(&fs);
        assert_eq!(info.entries, keys().len() as u64);
        assert_eq!((info.smallest_key.as_slice(), info.range_deletions), (&b"a"[..], 1));
        let t = open(&fs, 77);
        // Every key, in order, with 77 and its kind; seeks at or above 77 find each key.
        let mut it = t.iter();
        it.seek_to_first();
        for (i, k) in keys().iter().enumerate() {
            let (uk, seq, kind) = ikey::split(it.key()).unwrap();
            assert_eq!((uk, seq), (k.as_slice(), 77));
            assert_eq!(kind, [ValueKind::Put, ValueKind::Merge, ValueKind::Delete][i % 3]);
            it.next();
        }
        assert!(!it.valid());
        it.status().unwrap();
        let ks = keys();
        for (i, k) in ks.iter().enumerate() {
            it.seek(LookupKey::new(k, 77).encoded());
            assert_eq!(ikey::user_key(it.key()), k.as_slice());
            // Below 77 the key is invisible: the seek lands on the next one.
            it.seek(LookupKey::new(k, 76).encoded());
            assert_eq!(
                it.valid().then(|| ikey::user_key(it.key())),
                ks.get(i + 1).map(|n| n.as_slice())
            );
            // The last entry at or before the key's last internal key.
            it.seek_for_prev(ikey::InternalKey::new(k, 0, ValueKind::Delete).encoded());
            assert_eq!(ikey::user_key(it.key()), k.as_slice(), "seek_for_prev {k:?}");
            let at = |s| t.lookup(&LookupKey::new(k, s), UnitSelection::All).unwrap().found;
            assert_eq!(at(77).unwrap().seqno, 77, "{k:?}");
            assert_eq!(at(u64::from(u32::MAX)).unwrap().seqno, 77);
            assert!(at(76).is_none());
        }
        assert_eq!(t.range_del_covering(b"k0150", 100), 77);
        assert_eq!(t.range_del_covering(b"k0150", 76), 0);
        // Without a global sequence number the same file reads as stored.
        let raw = open(&fs, 0);
        assert_eq!(
            raw.lookup(&LookupKey::new(b"b", 5), UnitSelection::All)
                .unwrap()
                .found
                .unwrap()
                .seqno,
            0
        );
        assert_eq!(raw.range_del_covering(b"k0150", 100), 0);
    }

    #[test]
    fn the_check_takes_external_tables_and_refuses_others() {
        let fs = MemFs::new();
        write(&fs);
        let c = check(&fs, Path::new("/x/t.sst")).unwrap();
        assert_eq!(c.user_range(), (&b"a"[..], &b"k0299"[..]));
        assert_eq!(c.meta.range_deletions, 1);
        // A table a database wrote (file 9, sequence numbers): refused.
        let mut b = TableBuilder::new(
            fs.create(Path::new("/x/000009.sst")).unwrap(),
            9,
            crate::sst::TableOptions::default(),
            Arc::new(IoStats::new()),
        );
        b.add(ikey::InternalKey::new(b"a", 3, ValueKind::Put).encoded(), b"v")
            .unwrap();
        b.finish().unwrap();
        assert!(matches!(
            check(&fs, Path::new("/x/000009.sst")),
            Err(Error::Corruption { .. })
        ));
        // Every cut of the external table is refused without a panic.
        let bytes = crate::env::read_all(&fs, Path::new("/x/t.sst")).unwrap();
        for cut in (0..bytes.len()).step_by(97) {
            crate::env::write_all_synced(&fs, Path::new("/x/cut.sst"), &bytes[..cut]).unwrap();
            assert!(check(&fs, Path::new("/x/cut.sst")).is_err(), "cut at {cut}");
        }
    }
}
