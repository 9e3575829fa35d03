//! Iterator over a table: the index block positions a data-block iterator (a two-level
//! iterator, `iter::two_level`).

use super::block::BlockIter;
use super::footer::BlockHandle;
use super::reader::{IterOptions, TableReader};
use super::trailer::Readahead;
use crate::error::{Error, Result};
use crate::format::coding::Decoder;
use crate::format::ikey::KeyOrder;
use crate::iter::{InternalIterator, TwoLevelIndex, TwoLevelIter};
use crate::stats::IoStats;
use std::sync::Arc;

/// Iterator over one table; data blocks come through the block cache.
pub type TableIter = TwoLevelIter<TableIndex>;

/// The index block of a table, as the outer level of [`TableIter`].
#[derive(Debug)]
pub struct TableIndex {
    table: Arc<TableReader>,
    index: BlockIter,
    fill_cache: bool,
    stats: Option<Arc<IoStats>>,
    readahead: Readahead,
}

/// The largest chunk a user iterator's auto-readahead reads (RocksDB's
/// `max_auto_readahead_size`).
const AUTO_READAHEAD_MAX: usize = 256 << 10;

impl TableIter {
    pub(crate) fn new(table: Arc<TableReader>, opts: IterOptions) -> Self {
        TwoLevelIter::over(TableIndex {
            index: table.index_block().iter(KeyOrder::Internal),
            table,
            fill_cache: opts.fill_cache,
            stats: opts.stats,
            readahead: if opts.readahead > 0 {
                Readahead::new(opts.readahead)
            } else {
                Readahead::auto(AUTO_READAHEAD_MAX)
            },
        })
    }
}

impl TwoLevelIndex for TableIndex {
    type Child = BlockIter;

    fn valid(&self) -> bool {
        self.index.valid()
    }
    fn seek_to_first(&mut self) {
        self.index.seek_to_first();
    }
    fn seek_to_last(&mut self) {
        self.index.seek_to_last();
    }
    fn seek(&mut self, target: &[u8]) {
        // The first block whose last key is ≥ target.
        self.index.seek(target);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        // The last key ≤ target is in the first block whose last key is ≥ target, or in an
        // earlier one; past every block's last key it is the table's last key.
        self.index.seek(target);
        if !self.index.valid() && self.index.status().is_ok() {
            self.index.seek_to_last();
        }
    }
    fn next(&mut self) {
        self.index.next();
    }
    fn prev(&mut self) {
        self.index.prev();
    }
    fn open(&mut self) -> Result<Option<BlockIter>> {
        let handle = BlockHandle::decode(&mut Decoder::new(self.index.value())).map_err(|e| {
            Error::corruption(
                self.table.path(),
                self.table.index_block().file_offset(),
                format!("index entry: {e}"),
            )
        })?;
        let stats = self.stats.as_deref().unwrap_or(self.table.stats());
        let ra = self
            .readahead
            .sequential(handle, handle.size + super::trailer::TRAILER_LEN as u64)
            .then_some(&mut self.readahead);
        let (block, _) = self.table.data_block_with(handle, self.fill_cache, stats, ra)?;
        Ok(Some(block.iter(KeyOrder::Internal)))
    }
    fn status(&self) -> Result<()> {
        self.index.status()
    }
}
