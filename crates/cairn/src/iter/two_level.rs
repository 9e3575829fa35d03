//! The two-level iterator, written once: an index positions a child iterator, and the outer
//! iterator moves across exhausted children. A table is an index block over data blocks
//! ([`TableIter`](crate::sst::TableIter)); a sorted level is a file list over tables
//! ([`LevelIter`](super::LevelIter)).

use super::InternalIterator;
use crate::error::{Error, Result};

/// The outer level of a two-level iterator.
pub trait TwoLevelIndex {
    /// What each index entry opens.
    type Child: InternalIterator;
    /// True when positioned on an entry.
    fn valid(&self) -> bool;
    /// First entry.
    fn seek_to_first(&mut self);
    /// Last entry.
    fn seek_to_last(&mut self);
    /// The first entry whose child may hold a key ≥ `target`.
    fn seek(&mut self, target: &[u8]);
    /// The entry whose child holds the last key ≤ `target`, if any does.
    fn seek_for_prev(&mut self, target: &[u8]);
    /// Next entry.
    fn next(&mut self);
    /// Previous entry.
    fn prev(&mut self);
    /// Opens the child of the current entry; `None` when it is to be skipped as empty (a
    /// range read whose bounds it cannot hold).
    ///
    /// # Errors
    /// Read and corruption errors.
    fn open(&mut self) -> Result<Option<Self::Child>>;
    /// An error that stopped the index itself.
    fn status(&self) -> Result<()>;
}

/// Iterator over the concatenated children of an index.
#[derive(Debug)]
pub struct TwoLevelIter<I: TwoLevelIndex> {
    index: I,
    child: Option<I::Child>,
    err: Option<Error>,
}

#[derive(Clone, Copy)]
enum Dir {
    Forward,
    Backward,
}

impl<I: TwoLevelIndex> TwoLevelIter<I> {
    /// Iterates the children of `index`.
    pub fn over(index: I) -> Self {
        TwoLevelIter {
            index,
            child: None,
            err: None,
        }
    }

    /// The index.
    pub(crate) fn index_mut(&mut self) -> &mut I {
        &mut self.index
    }

    /// Opens the child of the index's current entry; false at the end or on error (an empty
    /// child is returned as `Some` positioned nowhere, for `skip` to move past).
    fn load(&mut self) -> bool {
        self.child = None;
        if self.err.is_some() || !self.index.valid() {
            if let Err(e) = self.index.status() {
                self.err = Some(e);
            }
            return false;
        }
        match self.index.open() {
            Ok(c) => {
                self.child = c;
                true
            }
            Err(e) => {
                self.err = Some(e);
                false
            }
        }
    }

    fn position(&mut self, dir: Dir, f: impl FnOnce(&mut I::Child)) {
        if self.load() {
            if let Some(c) = &mut self.child {
                f(c);
            }
        }
        self.skip(dir);
    }

    /// Moves across exhausted, empty or skipped children until positioned on an entry, the
    /// end, or an error.
    fn skip(&mut self, dir: Dir) {
        loop {
            match &self.child {
                Some(c) if c.valid() => return,
                Some(c) => {
                    if let Err(e) = c.status() {
                        self.err = Some(e);
                        self.child = None;
                        return;
                    }
                }
                // Nothing loaded: the index was at its end, or failed, or skipped this entry.
                None if self.err.is_some() || !self.index.valid() => return,
                None => {}
            }
            match dir {
                Dir::Forward => self.index.next(),
                Dir::Backward => self.index.prev(),
            }
            if !self.load() {
                return;
            }
            if let Some(c) = &mut self.child {
                match dir {
                    Dir::Forward => c.seek_to_first(),
                    Dir::Backward => c.seek_to_last(),
                }
            }
        }
    }
}

impl<I: TwoLevelIndex> InternalIterator for TwoLevelIter<I> {
    fn valid(&self) -> bool {
        self.err.is_none() && self.child.as_ref().is_some_and(|c| c.valid())
    }

    fn seek_to_first(&mut self) {
        self.err = None;
        self.index.seek_to_first();
        self.position(Dir::Forward, |c| c.seek_to_first());
    }

    fn seek_to_last(&mut self) {
        self.err = None;
        self.index.seek_to_last();
        self.position(Dir::Backward, |c| c.seek_to_last());
    }

    fn seek(&mut self, target: &[u8]) {
        self.err = None;
        self.index.seek(target);
        self.position(Dir::Forward, |c| c.seek(target));
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.err = None;
        self.index.seek_for_prev(target);
        self.position(Dir::Backward, |c| c.seek_for_prev(target));
    }

    fn next(&mut self) {
        if let Some(c) = &mut self.child {
            c.next();
        }
        self.skip(Dir::Forward);
    }

    fn prev(&mut self) {
        if let Some(c) = &mut self.child {
            c.prev();
        }
        self.skip(Dir::Backward);
    }

    fn key(&self) -> &[u8] {
        match &self.child {
            Some(c) if self.err.is_none() => c.key(),
            _ => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match &self.child {
            Some(c) if self.err.is_none() => c.value(),
            _ => &[],
        }
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.clone());
        }
        self.index.status()?;
        self.child.as_ref().map_or(Ok(()), |c| c.status())
    }
}
