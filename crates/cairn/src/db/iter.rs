//! User-level iteration: [`Range`] pins a super-version and a sequence number, runs a forward
//! and a backward [`Cursor`] (see `cursor.rs`) and stops where they meet.

use super::cursor::{cursor, At, Cursor, Item, Step};
use super::inner::{DbInner, SuperVersion};
use super::range_filter::{self, MaybeLog};
use crate::error::Result;
use crate::iter::KeyBounds;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Iterator over a key range of one tree at one sequence number. It pins the memtables and
/// table files of the moment it was created (so concurrent writes, flushes and compactions do
/// not disturb it, and no version visible at its sequence number can be compacted away under
/// it). Iterate forward, backward (`.rev()`), or from both ends.
pub struct Range {
    inner: Arc<DbInner>,
    tree: u32,
    seq: u64,
    /// Pinned at creation; `Err` if the tree is unknown (reported by the first step).
    sv: Result<Arc<SuperVersion>>,
    bounds: KeyBounds,
    front: Option<Cursor>,
    back: Option<Cursor>,
    /// The last keys yielded from each end (buffers reused between steps).
    front_last: Option<Vec<u8>>,
    back_last: Option<Vec<u8>>,
    done: bool,
    /// For a bounded read with range filters on: whether it is sampled, and whether its size
    /// was recorded (the first step may settle it without an iterator).
    filtered: Option<(bool, bool)>,
    /// For such a read once its iterators are built: the filters that answered "maybe"
    /// (false positives if the read returns nothing).
    maybes: Option<Arc<MaybeLog>>,
    /// Entries returned (counted in the tree's scan statistics when the read is dropped).
    entries: u64,
}

impl Drop for Range {
    fn drop(&mut self) {
        if let (Ok(sv), n @ 1..) = (&self.sv, self.entries) {
            sv.counters
                .record_scan_entries(crate::stats::stripe::Stripe::current(), n);
        }
    }
}

impl std::fmt::Debug for Range {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Range")
            .field("tree", &self.tree)
            .field("seq", &self.seq)
            .finish()
    }
}

fn owned<K: AsRef<[u8]>>(b: Bound<&K>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Range {
    pub(super) fn new<K: AsRef<[u8]>, R: RangeBounds<K>>(
        inner: Arc<DbInner>,
        tree: u32,
        seq: Option<u64>,
        r: &R,
    ) -> Self {
        // Super-version first, then the sequence number (as `get` does): every version a
        // compaction dropped before this super-version is older than `seq` can see.
        let sv = inner.super_version(tree);
        if let Ok(sv) = &sv {
            sv.counters.record_range(crate::stats::stripe::Stripe::current());
        }
        let seq = seq.unwrap_or_else(|| inner.last_seq.load(Ordering::Acquire));
        let bounds = KeyBounds {
            lo: owned(r.start_bound()),
            hi: owned(r.end_bound()),
        };
        let bounded = !matches!(bounds.lo, Bound::Unbounded) && !matches!(bounds.hi, Bound::Unbounded);
        let filtered = match &sv {
            Ok(sv) if bounded && inner.opts.range_filter.bits_per_key > 0.0 => {
                let sampled = range_filter::sample_this_read();
                if sampled {
                    if let (Bound::Included(lo) | Bound::Excluded(lo), Bound::Included(hi) | Bound::Excluded(hi)) =
                        (&bounds.lo, &bounds.hi)
                    {
                        sv.counters
                            .record_range_end(crate::filter::projection::range_end(lo, hi));
                    }
                }
                Some((sampled, false))
            }
            _ => None,
        };
        Range {
            inner,
            tree,
            seq,
            sv,
            bounds,
            front: None,
            back: None,
            front_last: None,
            back_last: None,
            done: false,
            filtered,
            maybes: None,
            entries: 0,
        }
    }

    /// Before the first step of a read with range filters: a read every table rules out (and
    /// no memtable holds an entry for) ends here, without building an iterator; otherwise the
    /// log its iterators' filters answer into.
    fn first_step(&mut self, forward: bool) -> Result<()> {
        let (Some((sampled, mut sized)), Ok(sv)) = (self.filtered, &self.sv) else {
            return Ok(());
        };
        if range_filter::settles_empty(
            &self.inner,
            self.tree as usize,
            sv,
            &self.bounds,
            forward,
            sampled,
            &mut sized,
        )? {
            self.done = true;
        } else {
            self.maybes = Some(MaybeLog::new(sv.counters.levels(), sampled, sized));
        }
        Ok(())
    }

    /// One step from the front (`forward`) or the back; stops where the two ends meet. The
    /// entry stays in that end's cursor ([`Cursor::entry`]).
    fn step(&mut self, forward: bool) -> Step {
        if self.done {
            return None;
        }
        if self.front.is_none() && self.back.is_none() {
            if let Err(e) = self.first_step(forward) {
                self.done = true;
                return Some(Err(e));
            }
            if self.done {
                return None;
            }
        }
        let slot = if forward { &mut self.front } else { &mut self.back };
        if slot.is_none() {
            let made = match &self.sv {
                Ok(sv) => Ok(cursor(
                    &self.inner,
                    self.tree,
                    sv,
                    self.seq,
                    &self.bounds,
                    self.maybes.as_ref(),
                    forward,
                )),
                Err(e) => Err(e.clone()),
            };
            match made {
                Ok(c) => *slot = Some(c),
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        let c = slot.as_mut()?;
        let step = if forward {
            c.forward(&self.bounds.lo, &self.bounds.hi)
        } else {
            c.backward(&self.bounds.lo, &self.bounds.hi)
        };
        let (mine, other) = if forward {
            (&mut self.front_last, &self.back_last)
        } else {
            (&mut self.back_last, &self.front_last)
        };
        match step {
            Some(Ok(at)) => {
                let (k, _) = c.entry(at);
                // Stop at the first key the other end has already yielded.
                let crossed = other.as_deref().is_some_and(|o| if forward { k >= o } else { k <= o });
                if crossed {
                    self.done = true;
                    return None;
                }
                let last = mine.get_or_insert_with(Vec::new);
                last.clear();
                last.extend_from_slice(k);
                self.entries += 1;
                Some(Ok(at))
            }
            Some(Err(e)) => {
                self.done = true;
                Some(Err(e))
            }
            None => {
                self.done = true;
                if let (0, Some(log), Ok(sv)) = (self.entries, &self.maybes, &self.sv) {
                    log.record_empty_result(&sv.counters);
                }
                None
            }
        }
    }

    /// One step, with the end's cursor that holds the entry it found.
    fn stepped(&mut self, forward: bool) -> Option<Result<(&mut Cursor, At)>> {
        let at = match self.step(forward)? {
            Ok(at) => at,
            Err(e) => return Some(Err(e)),
        };
        // A step that found an entry made its end's cursor.
        let c = if forward {
            self.front.as_mut()
        } else {
            self.back.as_mut()
        }?;
        Some(Ok((c, at)))
    }

    /// The next entry from the front, borrowed until the next step: a scan that only looks at
    /// its entries allocates nothing per entry (`next` copies each key and value out). Mixes
    /// with `next`, `next_back` and [`Range::next_back_entry`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = cairn::Db::open(dir.path(), cairn::Options::default())?;
    /// db.put(b"a", b"1")?;
    /// db.put(b"b", b"22")?;
    /// let (mut range, mut bytes) = (db.iter(), 0);
    /// while let Some(entry) = range.next_entry() {
    ///     let (key, value) = entry?;
    ///     bytes += key.len() + value.len();
    /// }
    /// assert_eq!(bytes, 5);
    /// # Ok::<(), cairn::Error>(())
    /// ```
    pub fn next_entry(&mut self) -> Option<Result<(&[u8], &[u8])>> {
        Some(self.stepped(true)?.map(|(c, at)| c.entry(at)))
    }

    /// The next entry from the back, borrowed until the next step (see [`Range::next_entry`]).
    pub fn next_back_entry(&mut self) -> Option<Result<(&[u8], &[u8])>> {
        Some(self.stepped(false)?.map(|(c, at)| c.entry(at)))
    }
}

impl Iterator for Range {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        Some(self.stepped(true)?.map(|(c, at)| c.take(at)))
    }
}

impl DoubleEndedIterator for Range {
    fn next_back(&mut self) -> Option<Item> {
        Some(self.stepped(false)?.map(|(c, at)| c.take(at)))
    }
}
