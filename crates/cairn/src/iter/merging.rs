//! Merges several sorted children into one sorted stream, forward and backward.
//!
//! Internal keys are unique across children (a version is in one memtable or one table), so no
//! de-duplication is needed here. The smallest (forward) or largest (backward) child is found by
//! a linear scan: a point-in-time read merges a few memtables, the L0 files and one iterator per
//! level, which is small.

use super::InternalIterator;
use crate::error::Result;
use crate::format::ikey;
use std::cmp::Ordering;

/// A boxed child iterator.
pub type BoxedIter = Box<dyn InternalIterator + Send>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
}

/// The merged view of several iterators.
pub struct MergingIter {
    children: Vec<BoxedIter>,
    current: Option<usize>,
    direction: Direction,
}

impl std::fmt::Debug for MergingIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergingIter")
            .field("children", &self.children.len())
            .finish()
    }
}

impl MergingIter {
    /// Merges `children`.
    pub fn new(children: Vec<BoxedIter>) -> Self {
        MergingIter {
            children,
            current: None,
            direction: Direction::Forward,
        }
    }

    fn find(&mut self, want: Ordering) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if !c.valid() {
                // A child stopped by an error stops the merge: skipping it would hide its keys.
                if c.status().is_err() {
                    self.current = None;
                    return;
                }
                continue;
            }
            match best {
                Some(b) if ikey::compare(c.key(), self.children[b].key()) != want => {}
                _ => best = Some(i),
            }
        }
        self.current = best;
    }

    /// Which child the current entry comes from (its index in the children given to
    /// [`new`](Self::new)); `None` when not positioned. Compaction uses it to tell which input
    /// file an entry came from (statistics inheritance).
    #[cfg_attr(
        not(feature = "test-util"),
        expect(dead_code, reason = "statistics inheritance at compaction (Merlin) reads it next")
    )]
    pub fn current_source(&self) -> Option<usize> {
        self.current
    }

    /// Moves past entries a range tombstone deletes: every child `i` with `older(i)` (all its
    /// entries are older than the tombstone) is moved to its first entry at or after `target`
    /// (forward) or its last entry before it (backward) if it stands on the near side of it.
    /// True when a child moved.
    pub fn skip_children(&mut self, target: &[u8], older: impl Fn(usize) -> bool) -> bool {
        let forward = self.direction == Direction::Forward;
        let mut moved = false;
        for (i, c) in self.children.iter_mut().enumerate() {
            if !older(i) || !c.valid() {
                continue;
            }
            let before = ikey::compare(c.key(), target);
            if forward && before == Ordering::Less {
                c.seek(target);
                moved = true;
            } else if !forward && before != Ordering::Less {
                seek_before(c, target);
                moved = true;
            }
        }
        if moved {
            if forward {
                self.find_smallest();
            } else {
                self.find_largest();
            }
        }
        moved
    }

    /// [`seek`](InternalIterator::seek) to `target`, except that every child `i` with
    /// `older(i)` seeks to `far` (≥ `target`) at once: a range tombstone over the keys from
    /// `target` to `far` deletes all its entries there, so a seek that starts inside a deleted
    /// range costs one seek per child instead of two.
    pub fn seek_past(&mut self, target: &[u8], far: &[u8], older: impl Fn(usize) -> bool) {
        for (i, c) in self.children.iter_mut().enumerate() {
            c.seek(if older(i) { far } else { target });
        }
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    /// [`seek_for_prev`](InternalIterator::seek_for_prev) to `target`, except that every child
    /// `i` with `older(i)` goes at once to its last entry before `far` (≤ `target`): the
    /// backward counterpart of [`seek_past`](Self::seek_past).
    pub fn seek_for_prev_past(&mut self, target: &[u8], far: &[u8], older: impl Fn(usize) -> bool) {
        for (i, c) in self.children.iter_mut().enumerate() {
            if older(i) {
                seek_before(c, far);
            } else {
                c.seek_for_prev(target);
            }
        }
        self.direction = Direction::Backward;
        self.find_largest();
    }

    fn find_smallest(&mut self) {
        self.find(Ordering::Less);
    }

    fn find_largest(&mut self) {
        self.find(Ordering::Greater);
    }
}

/// Moves `c` to its last entry strictly before `target` (`seek_for_prev` may land on `target`
/// itself).
fn seek_before(c: &mut BoxedIter, target: &[u8]) {
    c.seek_for_prev(target);
    if c.valid() && ikey::compare(c.key(), target) != Ordering::Less {
        c.prev();
    }
}

impl InternalIterator for MergingIter {
    fn valid(&self) -> bool {
        // `find` leaves no current entry once a child has failed (an error invalidates it).
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        self.children.iter_mut().for_each(|c| c.seek_to_first());
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    fn seek_to_last(&mut self) {
        self.children.iter_mut().for_each(|c| c.seek_to_last());
        self.direction = Direction::Backward;
        self.find_largest();
    }

    fn seek(&mut self, target: &[u8]) {
        self.children.iter_mut().for_each(|c| c.seek(target));
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.children.iter_mut().for_each(|c| c.seek_for_prev(target));
        self.direction = Direction::Backward;
        self.find_largest();
    }

    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction == Direction::Backward {
            // Position every other child at its first key after the current one.
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.seek(&key);
                    if c.valid() && ikey::compare(c.key(), &key) != Ordering::Greater {
                        c.next();
                    }
                }
            }
            self.direction = Direction::Forward;
        }
        self.children[cur].next();
        self.find_smallest();
    }

    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction == Direction::Forward {
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.seek_for_prev(&key);
                    if c.valid() && ikey::compare(c.key(), &key) != Ordering::Less {
                        c.prev();
                    }
                }
            }
            self.direction = Direction::Backward;
        }
        self.children[cur].prev();
        self.find_largest();
    }

    fn key(&self) -> &[u8] {
        self.current.map_or(&[], |i| self.children[i].key())
    }

    fn value(&self) -> &[u8] {
        self.current.map_or(&[], |i| self.children[i].value())
    }

    fn status(&self) -> Result<()> {
        self.children.iter().try_for_each(|c| c.status())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ikey::{InternalKey, ValueKind};
    use crate::memtable::Memtable;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    #[test]
    fn conformance_over_several_memtables() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for round in 0..10 {
            let mems: Vec<Arc<Memtable>> = (0..1 + round % 5).map(|_| Arc::new(Memtable::new())).collect();
            let mut model = BTreeMap::new();
            for seq in 1..800u64 {
                let uk: Vec<u8> = (0..rng.gen_range(1..4)).map(|_| rng.gen_range(b'a'..b'f')).collect();
                let m = &mems[rng.gen_range(0..mems.len())];
                m.insert(&uk, seq, ValueKind::Put, &seq.to_le_bytes(), 1);
                model.insert(InternalKey::new(&uk, seq, ValueKind::Put), seq.to_le_bytes().to_vec());
            }
            let mut it = MergingIter::new(mems.iter().map(|m| Box::new(m.iter()) as BoxedIter).collect());
            crate::iter::conformance::check(&mut it, &model, &mut rng, 300, 30, |r| {
                let uk: Vec<u8> = (0..r.gen_range(1..4)).map(|_| r.gen_range(b'a'..b'g')).collect();
                InternalKey::new(&uk, r.gen_range(0..900), ValueKind::Put)
            });
        }
    }

    /// `a@3` (a put of `a` at seqno 3) or `a@3:del`, as the test file writes internal keys.
    fn ikey(w: &str) -> (Vec<u8>, u64, ValueKind) {
        let (key, kind) = w.split_once(':').map_or((w, ValueKind::Put), |(k, _)| (k, ValueKind::Delete));
        let (user, seq) = key.split_once('@').unwrap_or((key, "0"));
        (user.as_bytes().to_vec(), crate::testutil::num(seq), kind)
    }

    /// `testdata/iter/merging.txt`: sources (one memtable per input line, entries `key@seq=value`
    /// or `key@seq:del`) merged, then walked: each step prints where the iterator stands.
    #[test]
    fn merging_from_testdata() {
        let mut sources: Vec<Arc<Memtable>> = Vec::new();
        crate::testutil::run_file("iter/merging.txt", |c| match c.command.as_str() {
            "sources" => {
                sources = c
                    .input
                    .iter()
                    .map(|line| {
                        let m = Arc::new(Memtable::new());
                        for w in line.split_whitespace() {
                            let (key, value) = w.split_once('=').unwrap_or((w, ""));
                            let (user, seq, kind) = ikey(key);
                            m.insert(&user, seq, kind, value.as_bytes(), 1);
                        }
                        m
                    })
                    .collect();
                "ok\n".into()
            }
            "walk" => {
                let mut it = MergingIter::new(sources.iter().map(|m| Box::new(m.iter()) as BoxedIter).collect());
                let mut out = String::new();
                for op in &c.input {
                    crate::iter::conformance::step(&mut it, op, |k| {
                        let (user, seq, kind) = ikey(k);
                        InternalKey::new(&user, seq, kind)
                    });
                    let at = if it.valid() {
                        let (user, seq, kind) = crate::format::ikey::split(it.key()).unwrap();
                        let user = String::from_utf8_lossy(user);
                        match kind {
                            ValueKind::Delete => format!("{user}@{seq}:del"),
                            _ => format!("{user}@{seq}={}", String::from_utf8_lossy(it.value())),
                        }
                    } else {
                        "end".into()
                    };
                    out.push_str(&format!("{op}: {at}\n"));
                }
                out
            }
            _ => c.unknown(),
        });
    }
}
