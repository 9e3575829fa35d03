//! Iterator over a table: the index block positions a data-block iterator (a two-level
//! iterator, `iter::two_level`).

use super::block::BlockIter;
use super::footer::BlockHandle;
use super::reader::TableReader;
use super::trailer::Readahead;
use crate::error::{Error, Result};
use crate::format::coding::Decoder;
use crate::format::ikey::{self, KeyOrder};
use crate::iter::{InternalIterator, TwoLevelIndex, TwoLevelIter};
use crate::stats::{IoStats, TreeCounters};
use std::sync::Arc;

/// Iterator over one table; data blocks come through the block cache.
pub type TableIter = TwoLevelIter<TableIndex>;

/// The index block of a table, as the outer level of [`TableIter`].
#[derive(Debug)]
pub struct TableIndex {
    table: Arc<TableReader>,
    /// Over the index block (over none, with the error as its status, when it could not be
    /// read).
    index: BlockIter,
    fill_cache: bool,
    stats: Option<Arc<IoStats>>,
    readahead: Readahead,
    window: Option<BlockWindow>,
    /// With a window: a user key every entry still to come is ≥ (moving forward: the target of
    /// the last seek, or the index key of the block just left), when `floor_known` (not moving
    /// backward). The buffer is reused.
    floor: Vec<u8>,
    floor_known: bool,
    seek_runs: Option<SeekRuns>,
    /// The run of blocks under way was started by a forward positioning (a backward read's
    /// blocks come in reverse, and readahead does not serve them).
    forward: bool,
}

/// User keys a range read may skip in a table, from its range filter: within the read's bounds
/// the table holds no key below `lo` nor from `hi_excl` on. Data blocks that can only hold keys
/// outside the bounds are then never read: one whose index key (at or after its last key) is
/// `< lo`, and, moving forward, one whose keys all come at or after `hi_excl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockWindow {
    /// Keys below this (within the read's bounds) are absent; `None`: no lower tightening.
    pub lo: Option<Vec<u8>>,
    /// Keys from this on (within the read's bounds) are absent; `None`: no upper tightening.
    pub hi_excl: Option<Vec<u8>>,
}

/// How an iterator reads data blocks.
#[derive(Debug, Clone)]
pub struct IterOptions {
    /// Insert blocks read from storage into the block cache. Compactions read with `false`
    /// (RocksDB's `fill_cache = false`) so that they do not evict the blocks readers use.
    pub fill_cache: bool,
    /// Where reads are counted (`None`: the reader's own counters).
    pub stats: Option<Arc<IoStats>>,
    /// Read data blocks in fixed chunks of this many bytes (compactions read their inputs
    /// front to back with 2 MiB); 0: auto-readahead.
    pub readahead: usize,
    /// With auto-readahead: bytes a seek's first read takes beyond its block (0: none; reads
    /// ahead once they turn sequential).
    pub seek_ahead: usize,
    /// Where each forward seek's run of blocks is counted (user range reads).
    pub seek_runs: Option<SeekRuns>,
}

/// A level of a tree, whose forward seeks count how many blocks they went on to read in file
/// order (`TreeCounters::record_seek_run`), for the readahead its next seeks take.
#[derive(Debug, Clone)]
pub struct SeekRuns {
    pub counters: Arc<TreeCounters>,
    pub level: usize,
}

impl Default for IterOptions {
    fn default() -> Self {
        IterOptions {
            fill_cache: true,
            stats: None,
            readahead: 0,
            seek_ahead: 0,
            seek_runs: None,
        }
    }
}

impl TableReader {
    /// An iterator over every entry (fills the cache, counts in the reader's stats).
    pub fn iter(self: &Arc<Self>) -> TableIter {
        TableIter::new(self.clone(), IterOptions::default())
    }

    /// An iterator reading as `opts` says.
    pub fn iter_with(self: &Arc<Self>, opts: IterOptions) -> TableIter {
        TableIter::new(self.clone(), opts)
    }
}

/// The largest chunk a user iterator's auto-readahead reads (RocksDB's
/// `max_auto_readahead_size`).
const AUTO_READAHEAD_MAX: usize = crate::tuning::readahead::MAX_CHUNK as usize;

impl TableIter {
    pub(crate) fn new(table: Arc<TableReader>, opts: IterOptions) -> Self {
        let index = match table.index_block() {
            Ok(b) => b.iter(table.index_order()),
            Err(e) => BlockIter::failed(e, table.index_order()),
        };
        TwoLevelIter::over(TableIndex {
            index,
            table,
            fill_cache: opts.fill_cache,
            stats: opts.stats,
            readahead: if opts.readahead > 0 {
                Readahead::new(opts.readahead)
            } else {
                Readahead::auto(AUTO_READAHEAD_MAX, opts.seek_ahead)
            },
            seek_runs: opts.seek_runs,
            forward: false,
            window: None,
            floor: Vec::new(),
            floor_known: false,
        })
    }

    /// Skips the data blocks `window` rules out.
    pub(crate) fn with_window(mut self, window: BlockWindow) -> Self {
        self.index_mut().window = Some(window);
        self
    }
}

impl TableIndex {
    /// Ends the run of blocks under way, counting it when a forward seek started it.
    fn end_run(&mut self, forward_next: bool) {
        if let (Some(run), true, Some(r)) = (self.readahead.take_run(), self.forward, &self.seek_runs) {
            r.counters.record_seek_run(crate::stats::stripe::Stripe::current(), r.level, run);
        }
        self.forward = forward_next;
    }

    /// Moving forward from `user_key` on (only tracked with a window).
    fn set_floor(&mut self, user_key: &[u8]) {
        if self.window.is_some() {
            self.floor.clear();
            self.floor.extend_from_slice(user_key);
            self.floor_known = true;
        }
    }

    /// Whether the window rules out the current block.
    fn outside_window(&self) -> bool {
        let Some(w) = &self.window else {
            return false;
        };
        // The index key is at or after the block's last key.
        let last = self.table.index_user_key(self.index.key());
        if w.lo.as_deref().is_some_and(|lo| last < lo) {
            return true;
        }
        self.floor_known && w.hi_excl.as_ref().is_some_and(|h| self.floor >= *h)
    }
}

impl Drop for TableIndex {
    fn drop(&mut self) {
        self.end_run(false);
    }
}

impl TwoLevelIndex for TableIndex {
    type Child = BlockIter;

    fn valid(&self) -> bool {
        self.index.valid()
    }
    fn seek_to_first(&mut self) {
        self.end_run(true);
        self.set_floor(&[]);
        self.index.seek_to_first();
    }
    fn seek_to_last(&mut self) {
        self.end_run(false);
        self.floor_known = false;
        self.index.seek_to_last();
    }
    fn seek(&mut self, target: &[u8]) {
        self.end_run(true);
        self.set_floor(ikey::user_key(target));
        // The first block whose index key is ≥ target.
        self.index.seek(self.table.index_target(target));
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.end_run(false);
        self.floor_known = false;
        // The last key ≤ target is in the first block whose index key is ≥ target, or in an
        // earlier one; past every index key it is the table's last key (the last block's
        // index key is its last key).
        self.index.seek(self.table.index_target(target));
        if !self.index.valid() && self.index.status().is_ok() {
            self.index.seek_to_last();
        }
    }
    fn next(&mut self) {
        if self.window.is_some() && self.index.valid() {
            // Every key of the next block comes after this block's index key.
            self.floor.clear();
            self.floor.extend_from_slice(self.table.index_user_key(self.index.key()));
            self.floor_known = true;
        }
        self.index.next();
    }
    fn prev(&mut self) {
        if self.forward {
            self.end_run(false);
        }
        self.floor_known = false;
        self.index.prev();
    }
    fn open(&mut self) -> Result<Option<BlockIter>> {
        if self.outside_window() {
            return Ok(None);
        }
        let handle = BlockHandle::decode(&mut Decoder::new(self.index.value())).map_err(|e| {
            Error::corruption(
                self.table.path(),
                self.table.footer().index.offset,
                format!("index entry: {e}"),
            )
        })?;
        let stats = self.stats.as_deref().unwrap_or(self.table.stats());
        let total = handle.size + super::trailer::TRAILER_LEN as u64;
        let ra = self.readahead.sequential(handle, total, self.forward).then_some(&mut self.readahead);
        let (block, _) = self.table.data_block_with(handle, self.fill_cache, stats, ra)?;
        Ok(Some(block.iter(KeyOrder::Internal).with_global_seqno(self.table.global_seqno())))
    }
    fn status(&self) -> Result<()> {
        self.index.status()
    }
}
