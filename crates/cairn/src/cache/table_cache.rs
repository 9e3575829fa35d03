//! Open table readers, kept in an LRU bounded by a count of files.

use super::lru::LruShard;
use crate::error::Result;
use crate::sst::TableReader;
use crate::stats::FileState;
use arc_swap::ArcSwapOption;
use parking_lot::Mutex;
use std::sync::Arc;

/// Where a live file's open reader is published for the read path (in its `FileState`): set
/// while the table cache holds the reader, cleared when it evicts it, so a point read finds the
/// reader with one atomic load and no lock, and `max_open_files` still bounds open readers.
pub type ReaderSlot = ArcSwapOption<TableReader>;

#[derive(Debug, Clone)]
struct Entry {
    reader: Arc<TableReader>,
    /// The file's runtime state, whose slot shows `reader` (once a point read has used it).
    state: Option<Arc<FileState>>,
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
        state: Option<&Arc<FileState>>,
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
    fn put(lru: &mut LruShard<u64, Entry>, file_number: u64, reader: Arc<TableReader>, state: Option<&Arc<FileState>>) {
        let mut entry = Entry { reader, state: state.cloned() };
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

    /// True when no reader is open.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets a reader (its file is being deleted).
    pub fn evict(&self, file_number: u64) {
        let mut lru = self.lru.lock();
        if let Some(Some(s)) = lru.remove(&file_number).map(|e| e.value.state) {
            s.reader_slot().store(None);
        }
    }
}
