//! One tree's memory component: the active memtable and the immutable ones waiting to be
//! flushed (oldest first). Everything the engine asks of a tree's write memory goes through this
//! type, so a partitioned memory component (Luo & Carey §3) replaces this one type.

use super::Memtable;
use std::collections::VecDeque;
use std::sync::Arc;

/// The memtables of one tree.
#[derive(Debug)]
pub(crate) struct MemComponent {
    active: Arc<Memtable>,
    /// Waiting to be flushed, oldest first.
    immutable: VecDeque<Arc<Memtable>>,
}

impl Default for MemComponent {
    fn default() -> Self {
        Self::new()
    }
}

impl MemComponent {
    /// An empty component.
    pub fn new() -> Self {
        MemComponent {
            active: Arc::new(Memtable::new()),
            immutable: VecDeque::new(),
        }
    }

    /// The memtable writes go to.
    pub fn active(&self) -> &Arc<Memtable> {
        &self.active
    }

    /// Makes the active memtable immutable and starts an empty one; false (and nothing done)
    /// when the active memtable is empty.
    pub fn switch(&mut self) -> bool {
        if self.active.is_empty() {
            return false;
        }
        let full = std::mem::replace(&mut self.active, Arc::new(Memtable::new()));
        self.immutable.push_back(full);
        true
    }

    /// The memtable the next flush writes (the oldest immutable one).
    pub fn next_to_flush(&self) -> Option<&Arc<Memtable>> {
        self.immutable.front()
    }

    /// Whether any memtable waits for a flush.
    pub fn has_immutable(&self) -> bool {
        !self.immutable.is_empty()
    }

    /// The flush of `mem` is durable: drop it.
    pub fn flushed(&mut self, mem: &Arc<Memtable>) {
        if self.immutable.front().is_some_and(|m| Arc::ptr_eq(m, mem)) {
            self.immutable.pop_front();
        }
    }

    /// Bytes of every memtable.
    pub fn bytes(&self) -> usize {
        self.active_bytes() + self.immutable_bytes()
    }

    /// Bytes of the active memtable.
    pub fn active_bytes(&self) -> usize {
        self.active.approximate_bytes()
    }

    /// Bytes waiting to be flushed.
    pub fn immutable_bytes(&self) -> usize {
        self.immutable.iter().map(|m| m.approximate_bytes()).sum()
    }

    /// The oldest WAL holding data of a memtable other than `except` (the one being flushed):
    /// the WAL recovery would have to start from for this tree once `except` is in a table.
    /// `None` when no such memtable holds data.
    pub fn oldest_wal(&self, except: Option<&Arc<Memtable>>) -> Option<u64> {
        self.immutable
            .iter()
            .chain([&self.active])
            .filter(|m| except.is_none_or(|e| !Arc::ptr_eq(m, e)))
            .map(|m| m.first_wal())
            .min()
            .filter(|&w| w != u64::MAX)
    }

    /// What a reader pins: every memtable, newest first.
    pub fn read_view(&self) -> Vec<Arc<Memtable>> {
        std::iter::once(self.active.clone())
            .chain(self.immutable.iter().rev().cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ikey::ValueKind;

    #[test]
    fn switch_flush_and_oldest_wal() {
        let mut c = MemComponent::new();
        assert!(!c.switch(), "an empty memtable is not switched");
        assert_eq!(c.oldest_wal(None), None);
        c.active().insert(b"a", 1, ValueKind::Put, b"1", 7);
        assert!(c.switch());
        c.active().insert(b"b", 2, ValueKind::Put, b"2", 9);
        assert_eq!(c.oldest_wal(None), Some(7));
        let first = c.next_to_flush().cloned().unwrap();
        assert_eq!(c.oldest_wal(Some(&first)), Some(9));
        assert_eq!(c.read_view().len(), 2);
        assert!(Arc::ptr_eq(&c.read_view()[1], &first));
        c.flushed(&first);
        assert!(!c.has_immutable());
        assert_eq!(c.oldest_wal(None), Some(9));
        assert_eq!(c.bytes(), c.active_bytes());
    }
}
