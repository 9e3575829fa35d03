//! Concatenates the tables of one sorted level (non-overlapping, ordered by key), opening each
//! table only when the iterator reaches it.

use super::InternalIterator;
use crate::error::{Error, Result};
use crate::format::ikey;
use crate::sst::{IterOptions, TableIter, TableReader};
use crate::version::FileMeta;
use std::cmp::Ordering;
use std::sync::Arc;

/// Opens a table by its metadata (through the table cache).
pub type TableOpener = Arc<dyn Fn(&FileMeta) -> Result<Arc<TableReader>> + Send + Sync>;

/// Iterator over a sorted level.
pub struct LevelIter {
    files: Vec<Arc<FileMeta>>,
    open: TableOpener,
    index: usize,
    iter: Option<TableIter>,
    err: Option<Error>,
    opts: IterOptions,
}

impl std::fmt::Debug for LevelIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LevelIter")
            .field("files", &self.files.len())
            .field("index", &self.index)
            .finish()
    }
}

impl LevelIter {
    /// Iterates `files` (sorted, non-overlapping).
    pub fn new(files: Vec<Arc<FileMeta>>, open: TableOpener) -> Self {
        Self::with_options(files, open, IterOptions::default())
    }

    /// Iterates `files`, reading tables as `opts` says.
    pub fn with_options(files: Vec<Arc<FileMeta>>, open: TableOpener, opts: IterOptions) -> Self {
        LevelIter {
            files,
            open,
            index: 0,
            iter: None,
            err: None,
            opts,
        }
    }

    fn load(&mut self, index: usize) -> bool {
        self.iter = None;
        self.index = index;
        let Some(f) = self.files.get(index) else {
            return false;
        };
        match (self.open)(f) {
            Ok(t) => {
                self.iter = Some(t.iter_with(self.opts.clone()));
                true
            }
            Err(e) => {
                self.err = Some(e);
                false
            }
        }
    }

    fn skip(&mut self, forward: bool) {
        loop {
            match &self.iter {
                Some(it) if it.valid() => return,
                Some(it) if it.status().is_err() => {
                    self.err = it.status().err();
                    self.iter = None;
                    return;
                }
                None => return,
                Some(_) => {}
            }
            let next = if forward {
                self.index + 1
            } else if self.index == 0 {
                self.iter = None;
                return;
            } else {
                self.index - 1
            };
            if !self.load(next) {
                return;
            }
            if let Some(it) = &mut self.iter {
                if forward {
                    it.seek_to_first();
                } else {
                    it.seek_to_last();
                }
            }
        }
    }
}

impl InternalIterator for LevelIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.iter.as_ref().is_some_and(|i| i.valid())
    }

    fn seek_to_first(&mut self) {
        self.err = None;
        if self.load(0) {
            if let Some(it) = &mut self.iter {
                it.seek_to_first();
            }
        }
        self.skip(true);
    }

    fn seek_to_last(&mut self) {
        self.err = None;
        if !self.files.is_empty() && self.load(self.files.len() - 1) {
            if let Some(it) = &mut self.iter {
                it.seek_to_last();
            }
        }
        self.skip(false);
    }

    fn seek(&mut self, target: &[u8]) {
        self.err = None;
        let i = self
            .files
            .partition_point(|f| ikey::compare(&f.largest, target) == Ordering::Less);
        if self.load(i) {
            if let Some(it) = &mut self.iter {
                it.seek(target);
            }
        }
        self.skip(true);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.err = None;
        // Last file whose smallest key is ≤ target.
        let i = self
            .files
            .partition_point(|f| ikey::compare(&f.smallest, target) != Ordering::Greater);
        if i == 0 {
            self.iter = None;
            return;
        }
        if self.load(i - 1) {
            if let Some(it) = &mut self.iter {
                it.seek_for_prev(target);
            }
        }
        self.skip(false);
    }

    fn next(&mut self) {
        if let Some(it) = &mut self.iter {
            it.next();
        }
        self.skip(true);
    }

    fn prev(&mut self) {
        if let Some(it) = &mut self.iter {
            it.prev();
        }
        self.skip(false);
    }

    fn key(&self) -> &[u8] {
        match &self.iter {
            Some(it) if self.err.is_none() => it.key(),
            _ => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match &self.iter {
            Some(it) if self.err.is_none() => it.value(),
            _ => &[],
        }
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(crate::sst::clone_error(e));
        }
        self.iter.as_ref().map_or(Ok(()), |i| i.status())
    }
}
