//! Open table readers, kept in an LRU bounded by a count of files.

use super::live_files::LiveFile;
use crate::cache::LruShard;
use crate::error::Result;
use crate::sst::TableReader;
use parking_lot::Mutex;
use std::sync::Arc;

#[derive(Debug, Clone)]
struct Entry {
    reader: Arc<TableReader>,
    /// The file's handle, whose slot shows `reader` (once a point read has used it).
    state: Option<Arc<LiveFile>>,
}

/// Caches open [`TableReader`]s by file number.
#[derive(Debug)]
pub struct TableCache {
    lru: Mutex<LruShard<u64, Entry>>,
}

impl TableCache {
    /// Keeps at most `max_open` readers open.
    pub fn new(max_open: usize) -> Self {
        TableCache {
            lru: Mutex::new(LruShard::new(max_open.max(1))),
        }
    }

    /// The reader of `file_number`, opened with `open` on a miss. Two threads missing at once
    /// may both open the file; one reader wins, both are valid. With `state`, the reader is
    /// also published in the file's slot until the cache evicts it (slots change only under
    /// the cache's lock, so a slot holds a reader exactly while the cache does).
    pub fn get_or_open(
        &self,
        file_number: u64,
        state: Option<&Arc<LiveFile>>,
        open: impl FnOnce() -> Result<TableReader>,
    ) -> Result<Arc<TableReader>> {
        {
            let mut lru = self.lru.lock();
            if let Some(e) = lru.get(&file_number) {
                if e.state.is_none() && state.is_some() {
                    // First point read of a reader an iterator opened: publish it.
                    Self::put(&mut lru, file_number, e.reader.clone(), state);
                }
                return Ok(e.reader);
            }
        }
        let reader = Arc::new(open()?);
        Self::put(&mut self.lru.lock(), file_number, reader.clone(), state);
        Ok(reader)
    }

    /// Inserts `reader` for `file_number`, keeps the slots in step with what stays cached.
    fn put(lru: &mut LruShard<u64, Entry>, file_number: u64, reader: Arc<TableReader>, state: Option<&Arc<LiveFile>>) {
        let mut entry = Entry {
            reader,
            state: state.cloned(),
        };
        let mut evicted = Vec::new();
        for e in lru.insert(file_number, entry.clone()) {
            if e.key == file_number {
                // A racing open's entry was replaced: its slot now shows this reader.
                if entry.state.is_none() && e.value.state.is_some() {
                    entry.state = e.value.state;
                    lru.insert(file_number, entry.clone());
                }
            } else if let Some(s) = e.value.state {
                evicted.push(s);
            }
        }
        if let Some(s) = &entry.state {
            s.reader_slot().store(Some(entry.reader.clone()));
        }
        for s in evicted {
            s.reader_slot().store(None);
        }
    }

    /// Readers currently open.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lru.lock().len()
    }

    /// Forgets a reader (its file is being deleted).
    pub fn evict(&self, file_number: u64) {
        let mut lru = self.lru.lock();
        if let Some(Some(s)) = lru.remove(&file_number).map(|e| e.value.state) {
            s.reader_slot().store(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::live_files::LiveFiles;
    use crate::env::{FileSystem, MemFs};
    use crate::format::ikey::{InternalKey, ValueKind};
    use crate::sst::{ReaderOptions, TableBuilder, TableOptions};
    use crate::stats::{FileRegistry, IoStats};
    use crate::version::FileMeta;
    use std::path::{Path, PathBuf};

    /// A file system holding tables `1..=count`, each with one key.
    fn fs_with_tables(count: u64) -> MemFs {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/t")).unwrap();
        for n in 1..=count {
            let file = fs.create(Path::new(&format!("/t/{n}.sst"))).unwrap();
            let mut b = TableBuilder::new(file, n, TableOptions::default(), Arc::new(IoStats::new()));
            b.add(InternalKey::new(b"k", 1, ValueKind::Put).encoded(), b"v")
                .unwrap();
            b.finish().unwrap();
        }
        fs
    }

    fn meta(number: u64) -> FileMeta {
        FileMeta {
            number,
            entries: 1,
            segments: 1,
            ..FileMeta::default()
        }
    }

    #[test]
    fn table_cache_keeps_at_most_max_open_readers() {
        let fs = fs_with_tables(5);
        let tc = TableCache::new(3);
        let opens = std::cell::Cell::new(0);
        let get = |n: u64| {
            tc.get_or_open(n, None, || {
                opens.set(opens.get() + 1);
                TableReader::open(
                    &fs,
                    &PathBuf::from(format!("/t/{n}.sst")),
                    Some(n),
                    ReaderOptions::default(),
                )
            })
            .unwrap()
        };
        for n in [1, 2, 3, 1, 2, 3] {
            assert_eq!(get(n).properties().file_number, n);
        }
        assert_eq!(opens.get(), 3);
        get(4); // evicts the least recently used: 1
        assert_eq!(tc.len(), 3);
        get(1);
        assert_eq!(opens.get(), 5);
        tc.evict(1);
        assert_eq!(tc.len(), 2);
        assert!(tc
            .get_or_open(9, None, || TableReader::open(
                &fs,
                Path::new("/t/9.sst"),
                Some(9),
                ReaderOptions::default()
            ))
            .is_err());
    }

    /// A point read finds a file's reader in the file's slot exactly while the table cache holds
    /// it: published on open (or on the first point read of a reader an iterator opened), cleared
    /// when the cache evicts it for room or because the file is deleted.
    #[test]
    fn reader_slots_follow_the_table_cache() {
        let fs = fs_with_tables(3);
        let live = LiveFiles::new(FileRegistry::new(16), false);
        let state = |n: u64| live.register(0, &meta(n));
        let (s1, s2, s3) = (state(1), state(2), state(3));
        let tc = TableCache::new(2);
        let open = |n: u64| {
            TableReader::open(
                &fs,
                Path::new(&format!("/t/{n}.sst")),
                Some(n),
                ReaderOptions::default(),
            )
        };
        let shown = |s: &Arc<LiveFile>| s.reader_slot().load().as_ref().map(|r| r.properties().file_number);
        // Opened by an iterator (no state): not published; the first point read publishes it.
        let r1 = tc.get_or_open(1, None, || open(1)).unwrap();
        assert_eq!(shown(&s1), None);
        let again = tc.get_or_open(1, Some(&s1), || panic!("cached")).unwrap();
        assert!(Arc::ptr_eq(&r1, &again));
        assert_eq!(shown(&s1), Some(1));
        tc.get_or_open(2, Some(&s2), || open(2)).unwrap();
        assert_eq!(shown(&s2), Some(2));
        // A third reader evicts the least recently used (1): its slot empties with it.
        tc.get_or_open(3, Some(&s3), || open(3)).unwrap();
        assert_eq!((shown(&s1), shown(&s2), shown(&s3)), (None, Some(2), Some(3)));
        // A racing open without state replaces the entry but keeps the slot in step.
        tc.get_or_open(3, None, || open(3)).unwrap();
        let fresh = open(3).map(Arc::new).unwrap();
        assert!(!Arc::ptr_eq(
            &fresh,
            &tc.get_or_open(3, None, || panic!("cached")).unwrap()
        ));
        assert_eq!(shown(&s3), Some(3));
        tc.evict(3);
        assert_eq!((shown(&s2), shown(&s3)), (Some(2), None));
    }
}
