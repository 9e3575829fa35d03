//! Open table readers, kept in an LRU bounded by a count of files.

use super::lru::{LruShard, Priority};
use crate::error::Result;
use crate::sst::TableReader;
use parking_lot::Mutex;
use std::sync::Arc;

/// Caches open [`TableReader`]s by file number.
#[derive(Debug)]
pub struct TableCache {
    lru: Mutex<LruShard<u64, Arc<TableReader>>>,
}

impl TableCache {
    /// Keeps at most `max_open` readers open.
    pub fn new(max_open: usize) -> Self {
        TableCache {
            lru: Mutex::new(LruShard::new(max_open.max(1), 0.0)),
        }
    }

    /// The reader of `file_number`, opened with `open` on a miss. Two threads missing at once
    /// may both open the file; one reader wins the slot, both are valid.
    pub fn get_or_open(
        &self,
        file_number: u64,
        open: impl FnOnce() -> Result<TableReader>,
    ) -> Result<Arc<TableReader>> {
        if let Some(r) = self.lru.lock().get(&file_number) {
            return Ok(r);
        }
        let r = Arc::new(open()?);
        self.lru.lock().insert(file_number, r.clone(), 1, Priority::Low);
        Ok(r)
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
        self.lru.lock().remove(&file_number);
    }
}
