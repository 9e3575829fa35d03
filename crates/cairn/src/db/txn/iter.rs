//! A transaction's iterator: the database's entries at the transaction's snapshot with its own
//! writes merged in (a write replaces the database's entry of its key, a deletion hides it),
//! forward, backward, or from both ends. Under serializable isolation each step records the
//! key range covered so far — from the bound to the last key yielded, the whole range once an
//! end is reached — so a commit is checked against exactly what the iteration saw, even if the
//! iterator is leaked.

use super::Validation;
use crate::db::Range;
use crate::error::{Error, Result};
use crate::iter::KeyBounds;
use std::cell::RefCell;
use std::ops::Bound;

type Entry = (Vec<u8>, Vec<u8>);

/// Where an iterator records what it covered: the transaction's reads, the tree, the
/// sequence number read at.
pub(super) type Record<'t> = (&'t RefCell<Validation>, u32, u64);

/// Iterator over a key range as a transaction sees it ([`Transaction::range`](super::Transaction::range)).
pub struct TransactionRange<'t> {
    db: Range,
    /// The transaction's own entries in the range, in key order (`None`: deleted); those in
    /// `own[front..back]` are still to come.
    own: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    front: usize,
    back: usize,
    /// The database's next entry at each end, taken from `db` and not yet yielded.
    db_front: Option<Entry>,
    db_back: Option<Entry>,
    db_done: bool,
    bounds: KeyBounds,
    front_last: Option<Vec<u8>>,
    back_last: Option<Vec<u8>>,
    done: bool,
    record: Option<Record<'t>>,
    /// The slots of `record`'s ranges this iterator fills: (front, back).
    slots: (Option<usize>, Option<usize>),
    failed: Option<Error>,
}

impl std::fmt::Debug for TransactionRange<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransactionRange")
            .field("db", &self.db)
            .finish_non_exhaustive()
    }
}

impl<'t> TransactionRange<'t> {
    pub(super) fn new(
        db: Range,
        own: Vec<(Vec<u8>, Option<Vec<u8>>)>,
        bounds: KeyBounds,
        record: Option<Record<'t>>,
        failed: Option<Error>,
    ) -> Self {
        let back = own.len();
        TransactionRange {
            db,
            own,
            front: 0,
            back,
            db_front: None,
            db_back: None,
            db_done: false,
            bounds,
            front_last: None,
            back_last: None,
            done: false,
            record,
            slots: (None, None),
            failed,
        }
    }

    /// Records `[lo, key]` (forward) or `[key, hi)` as covered; `None`: the whole range.
    fn cover(&mut self, forward: bool, key: Option<&[u8]>) {
        let Some((reads, tree, seq)) = self.record.filter(|_| !self.bounds.is_empty()) else {
            return;
        };
        let b = &self.bounds;
        let range = match key {
            None => b.clone(),
            Some(k) if forward => KeyBounds {
                lo: b.lo.clone(),
                hi: Bound::Included(k.to_vec()),
            },
            Some(k) => KeyBounds {
                lo: Bound::Included(k.to_vec()),
                hi: b.hi.clone(),
            },
        };
        let mut reads = reads.borrow_mut();
        let slot = if forward { &mut self.slots.0 } else { &mut self.slots.1 };
        match *slot {
            Some(i) => reads.ranges[i] = (tree, range, seq),
            None => {
                *slot = Some(reads.ranges.len());
                reads.ranges.push((tree, range, seq));
            }
        }
    }

    /// The database's next entry at one end, if any is left.
    fn db_next(&mut self, forward: bool) -> Result<()> {
        let slot = if forward { &self.db_front } else { &self.db_back };
        if slot.is_some() || self.db_done {
            return Ok(());
        }
        let got = if forward { self.db.next() } else { self.db.next_back() };
        match got {
            Some(Ok(e)) => {
                if forward {
                    self.db_front = Some(e);
                } else {
                    self.db_back = Some(e);
                }
            }
            Some(Err(e)) => return Err(e),
            // The database's entries are used up (from either end: `Range` stops where its
            // two ends meet); one end may still hold one in its slot.
            None => self.db_done = true,
        }
        Ok(())
    }

    fn step(&mut self, forward: bool) -> Option<Result<Entry>> {
        if self.done {
            return None;
        }
        if let Some(e) = self.failed.take() {
            self.done = true;
            return Some(Err(e));
        }
        loop {
            if let Err(e) = self.db_next(forward) {
                self.done = true;
                return Some(Err(e));
            }
            // When the database's entries are used up, the other end's slot may hold the last.
            let db_head = if forward {
                self.db_front
                    .as_ref()
                    .or(self.db_back.as_ref().filter(|_| self.db_done))
            } else {
                self.db_back
                    .as_ref()
                    .or(self.db_front.as_ref().filter(|_| self.db_done))
            };
            let own_head = (self.front < self.back).then(|| {
                let i = if forward { self.front } else { self.back - 1 };
                &self.own[i].0
            });
            let take_own = match (db_head, own_head) {
                (None, None) => {
                    self.done = true;
                    self.cover(forward, None);
                    return None;
                }
                (Some(d), Some(o)) => {
                    if forward {
                        o <= &d.0
                    } else {
                        o >= &d.0
                    }
                }
                (None, Some(_)) => true,
                (Some(_), None) => false,
            };
            let (key, value) = if take_own {
                let i = if forward {
                    self.front += 1;
                    self.front - 1
                } else {
                    self.back -= 1;
                    self.back
                };
                let (k, v) = std::mem::take(&mut self.own[i]);
                // The transaction's write replaces the database's entry of the key.
                for slot in [&mut self.db_front, &mut self.db_back] {
                    if slot.as_ref().is_some_and(|d| d.0 == k) {
                        *slot = None;
                    }
                }
                match v {
                    Some(v) => (k, v),
                    None => continue,
                }
            } else {
                let taken = if forward {
                    self.db_front.take().or_else(|| self.db_back.take())
                } else {
                    self.db_back.take().or_else(|| self.db_front.take())
                };
                match taken {
                    Some(e) => e,
                    None => continue,
                }
            };
            let other = if forward { &self.back_last } else { &self.front_last };
            if other
                .as_ref()
                .is_some_and(|o| if forward { &key >= o } else { &key <= o })
            {
                self.done = true;
                self.cover(forward, None);
                return None;
            }
            self.cover(forward, Some(&key));
            let last = if forward {
                &mut self.front_last
            } else {
                &mut self.back_last
            };
            *last = Some(key.clone());
            return Some(Ok((key, value)));
        }
    }
}

impl Iterator for TransactionRange<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        self.step(true)
    }
}

impl DoubleEndedIterator for TransactionRange<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(false)
    }
}
