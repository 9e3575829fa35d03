//! Two-level iterator over a table: the index block positions a data-block iterator.

use super::block::{clone_error, BlockIter};
use super::footer::BlockHandle;
use super::reader::{IterOptions, TableReader};
use crate::error::{Error, Result};
use crate::format::coding::Decoder;
use crate::format::ikey::KeyOrder;
use crate::iter::InternalIterator;
use std::sync::Arc;

/// Iterator over one table; data blocks come through the block cache.
#[derive(Debug)]
pub struct TableIter {
    table: Arc<TableReader>,
    index: BlockIter,
    data: Option<BlockIter>,
    err: Option<Error>,
    fill_cache: bool,
    stats: Option<Arc<crate::stats::IoStats>>,
}

impl TableIter {
    pub(crate) fn new(table: Arc<TableReader>, opts: IterOptions) -> Self {
        TableIter {
            index: table.index_block().iter(KeyOrder::Internal),
            table,
            data: None,
            err: None,
            fill_cache: opts.fill_cache,
            stats: opts.stats,
        }
    }

    /// Loads the data block the index is positioned on; false at the end or on error.
    fn load(&mut self) -> bool {
        self.data = None;
        if self.err.is_some() || !self.index.valid() {
            return false;
        }
        let handle = match BlockHandle::decode(&mut Decoder::new(self.index.value())) {
            Ok(h) => h,
            Err(e) => {
                self.err = Some(Error::corruption(
                    self.table.path(),
                    self.table.index_block().file_offset(),
                    format!("index entry: {e}"),
                ));
                return false;
            }
        };
        let stats = self.stats.as_deref().unwrap_or(self.table.stats());
        match self.table.data_block_with(handle, self.fill_cache, stats) {
            Ok((b, _)) => {
                self.data = Some(b.iter(KeyOrder::Internal));
                true
            }
            Err(e) => {
                self.err = Some(e);
                false
            }
        }
    }

    fn data_failed(&mut self) -> bool {
        if let Some(Err(e)) = self.data.as_ref().map(|d| d.status()) {
            self.err = Some(e);
            self.data = None;
            return true;
        }
        false
    }

    /// Moves across exhausted (or empty) data blocks until positioned on an entry, the end
    /// of the table, or an error.
    fn skip(&mut self, forward: bool) {
        while !self.data.as_ref().is_some_and(|d| d.valid()) {
            if self.data_failed() || self.data.is_none() {
                return;
            }
            if forward {
                self.index.next();
            } else {
                self.index.prev();
            }
            if !self.load() {
                return;
            }
            if let Some(d) = &mut self.data {
                if forward {
                    d.seek_to_first();
                } else {
                    d.seek_to_last();
                }
            }
        }
    }
}

impl InternalIterator for TableIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.data.as_ref().is_some_and(|d| d.valid())
    }

    fn seek_to_first(&mut self) {
        self.err = None;
        self.index.seek_to_first();
        if self.load() {
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
        }
        self.skip(true);
    }

    fn seek_to_last(&mut self) {
        self.err = None;
        self.index.seek_to_last();
        if self.load() {
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
        }
        self.skip(false);
    }

    fn seek(&mut self, target: &[u8]) {
        self.err = None;
        self.index.seek(target);
        if self.load() {
            if let Some(d) = &mut self.data {
                d.seek(target);
            }
        }
        self.skip(true);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.err = None;
        self.index.seek(target);
        if !self.index.valid() {
            if self.index.status().is_err() {
                return;
            }
            self.index.seek_to_last();
        }
        if self.load() {
            if let Some(d) = &mut self.data {
                d.seek_for_prev(target);
            }
        }
        self.skip(false);
    }

    fn next(&mut self) {
        if let Some(d) = &mut self.data {
            d.next();
        }
        self.skip(true);
    }

    fn prev(&mut self) {
        if let Some(d) = &mut self.data {
            d.prev();
        }
        self.skip(false);
    }

    fn key(&self) -> &[u8] {
        match &self.data {
            Some(d) if self.err.is_none() => d.key(),
            _ => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match &self.data {
            Some(d) if self.err.is_none() => d.value(),
            _ => &[],
        }
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(clone_error(e));
        }
        self.index.status()?;
        match &self.data {
            Some(d) => d.status(),
            None => Ok(()),
        }
    }
}
