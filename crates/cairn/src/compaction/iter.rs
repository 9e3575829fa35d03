//! Merge semantics of flushes and compactions, separate from job execution: which versions of
//! the merged input stream are written out.
//!
//! LevelDB's rule: an entry is dropped when a newer version of the same user key exists at or
//! below the oldest live snapshot (no reader can see the older one), and a tombstone at or
//! below the oldest snapshot is dropped when no deeper level may hold the key (the bottom for
//! that key). Everything else is kept, so every snapshot still sees what it saw. A merge
//! operand shadows nothing: below the newest version at or below the oldest snapshot, the
//! versions down to the first value or deletion stay while that chain is all operands (they
//! are what the operand combines with; `job.rs` folds them). Range
//! tombstones: an entry below a tombstone over its key that every reader sees (at or below the
//! oldest snapshot) is dropped too; the tombstones themselves are carried by the job
//! (`job.rs`).

use crate::format::ikey::{self, ValueKind};
use crate::range_del::Fragments;

/// Whether no level below a compaction's output may hold a user key.
type BottommostFn<'a> = Box<dyn FnMut(&[u8]) -> bool + 'a>;

/// Decides, entry by entry in internal-key order, what a compaction keeps.
pub struct Retention<'a> {
    oldest_snapshot: u64,
    bottommost: BottommostFn<'a>,
    /// The user key of the previous entry (meaningful once `last_seq_for_key` is set); reused,
    /// not reallocated, per key.
    current: Vec<u8>,
    last_seq_for_key: u64,
    /// Whether the versions of the current key at or below the oldest snapshot met so far are
    /// all kept merge operands (true before the first of them).
    chain_open: bool,
    /// Entries dropped as shadowed.
    pub dropped_shadowed: u64,
    /// Tombstones dropped at the bottom.
    pub dropped_tombstones: u64,
    /// The inputs' range tombstones.
    range_dels: Fragments,
    /// Entries dropped under a range tombstone.
    pub dropped_by_range: u64,
}

impl std::fmt::Debug for Retention<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retention")
            .field("oldest_snapshot", &self.oldest_snapshot)
            .finish()
    }
}

impl<'a> Retention<'a> {
    /// `oldest_snapshot`: the smallest seqno any reader may read at (the last seqno when no
    /// snapshot is held). `bottommost(user_key)`: true when no level below the output may hold
    /// the key.
    pub fn new(oldest_snapshot: u64, bottommost: impl FnMut(&[u8]) -> bool + 'a) -> Self {
        // Above every seqno it would read as "every version shadowed", the first one included.
        debug_assert!(oldest_snapshot <= crate::format::ikey::MAX_SEQNO);
        Retention {
            oldest_snapshot,
            bottommost: Box::new(bottommost),
            current: Vec::new(),
            last_seq_for_key: u64::MAX,
            chain_open: true,
            dropped_shadowed: 0,
            dropped_tombstones: 0,
            range_dels: Fragments::default(),
            dropped_by_range: 0,
        }
    }

    /// Also drops the entries below `range_dels` (the inputs' range tombstones).
    pub fn with_range_dels(mut self, range_dels: Fragments) -> Self {
        self.range_dels = range_dels;
        self
    }


    /// Whether to keep `ikey` (entries must arrive in internal-key order). Malformed keys are
    /// kept (the table reader rejects them earlier).
    pub fn keep(&mut self, ikey: &[u8]) -> bool {
        self.decide(ikey) == Decision::Keep
    }

    /// [`keep`](Self::keep), with the reason for a drop.
    pub fn decide(&mut self, ikey: &[u8]) -> Decision {
        let Some((uk, seq, kind)) = ikey::split(ikey) else {
            return Decision::Keep;
        };
        if self.last_seq_for_key == u64::MAX || self.current != uk {
            self.current.clear();
            self.current.extend_from_slice(uk);
            self.last_seq_for_key = u64::MAX;
            self.chain_open = true;
        }
        let below_visible = self.last_seq_for_key <= self.oldest_snapshot;
        let decision = if below_visible && !self.chain_open {
            self.dropped_shadowed += 1;
            Decision::Shadowed
        } else if kind == ValueKind::Delete && seq <= self.oldest_snapshot && (self.bottommost)(uk) {
            self.dropped_tombstones += 1;
            Decision::Deleted
        } else if !self.range_dels.is_empty() && self.range_dels.covering(uk, self.oldest_snapshot) > seq {
            self.dropped_by_range += 1;
            Decision::Deleted
        } else {
            Decision::Keep
        };
        if seq <= self.oldest_snapshot {
            self.chain_open = decision == Decision::Keep && kind == ValueKind::Merge;
        }
        self.last_seq_for_key = seq;
        decision
    }

    /// Whether no level below the output may hold `uk`.
    pub fn bottommost(&mut self, uk: &[u8]) -> bool {
        (self.bottommost)(uk)
    }

    /// The oldest sequence number a reader may read at.
    pub fn oldest_snapshot(&self) -> u64 {
        self.oldest_snapshot
    }

    /// Continues as if `ikey` was the last entry passed to [`keep`](Self::keep) and kept (the
    /// caller copied a stretch of already filtered entries ending at it without asking).
    pub fn skip_to(&mut self, ikey: &[u8]) {
        if let Some((uk, seq, kind)) = ikey::split(ikey) {
            self.current.clear();
            self.current.extend_from_slice(uk);
            self.last_seq_for_key = seq;
            self.chain_open = seq > self.oldest_snapshot || kind == ValueKind::Merge;
        }
    }
}

/// What [`Retention::decide`] does with an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Written out.
    Keep,
    /// Dropped: a newer version every reader sees hides it.
    Shadowed,
    /// Dropped, and with it what lies below for every reader: a tombstone at the bottom, or an
    /// entry under a range tombstone every reader sees.
    Deleted,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ikey::InternalKey;

    fn run(entries: &[(&str, u64, ValueKind)], snapshot: u64, bottom: bool) -> Vec<String> {
        let mut f = Retention::new(snapshot, |_| bottom);
        entries
            .iter()
            .filter(|(k, s, kind)| f.keep(InternalKey::new(k.as_bytes(), *s, *kind).encoded()))
            .map(|(k, s, kind)| format!("{k}@{s}{}", if *kind == ValueKind::Delete { "D" } else { "" }))
            .collect()
    }

    #[test]
    fn newest_wins_snapshots_keep_versions_tombstones_only_at_bottom() {
        use ValueKind::{Delete as D, Put as P};
        let e = [
            ("a", 9, P),
            ("a", 5, P),
            ("a", 2, P),
            ("b", 7, D),
            ("b", 3, P),
            ("c", 4, D),
        ];
        // No snapshot (oldest = 10): only the newest version of each key; tombstones go at the bottom.
        assert_eq!(run(&e, 10, true), vec!["a@9"]);
        assert_eq!(run(&e, 10, false), vec!["a@9", "b@7D", "c@4D"]);
        // A snapshot at 5 still sees a@5, b@3 and c@4D (kept above the bottom... and at the bottom
        // c@4D is ≤ 5, so it goes).
        assert_eq!(run(&e, 5, true), vec!["a@9", "a@5", "b@7D", "b@3"]);
        assert_eq!(run(&e, 5, false), vec!["a@9", "a@5", "b@7D", "b@3", "c@4D"]);
        // Oldest snapshot at 1: everything is newer than every reader's view except nothing.
        assert_eq!(run(&e, 1, true).len(), 6);
    }

    #[test]
    fn merge_operands_shadow_nothing() {
        use ValueKind::{Delete as D, Merge as M, Put as P};
        let show = |e: &[(&str, u64, ValueKind)], snapshot: u64| -> Vec<String> {
            let mut f = Retention::new(snapshot, |_| false);
            e.iter()
                .filter(|(k, s, kind)| f.keep(InternalKey::new(k.as_bytes(), *s, *kind).encoded()))
                .map(|(k, s, kind)| format!("{k}@{s}{}", if *kind == M { "M" } else { "" }))
                .collect()
        };
        // The chain of operands and its base stay; what lies below the base goes.
        let e = [("a", 9, M), ("a", 7, M), ("a", 5, P), ("a", 3, P), ("b", 8, P), ("b", 6, M)];
        assert_eq!(show(&e, 100), vec!["a@9M", "a@7M", "a@5", "b@8"]);
        // Above the oldest snapshot everything stays; the chain starts at the first below it.
        let e = [("a", 20, P), ("a", 9, M), ("a", 5, D), ("a", 3, P)];
        assert_eq!(show(&e, 10), vec!["a@20", "a@9M", "a@5"]);
        let e = [("a", 9, P), ("a", 7, M), ("a", 5, P)];
        assert_eq!(show(&e, 10), vec!["a@9"]);
    }

    #[test]
    fn entries_below_a_range_tombstone_every_reader_sees_go() {
        use crate::range_del::RangeTombstone;
        use ValueKind::Put as P;
        let rd = Fragments::new([RangeTombstone {
            start: b"a".to_vec(),
            end: b"c".to_vec(),
            seq: 6,
        }]);
        let e = [("a", 9, P), ("a", 5, P), ("b", 3, P), ("c", 1, P)];
        let run = |snapshot: u64| -> Vec<String> {
            let mut f = Retention::new(snapshot, |_| false).with_range_dels(rd.clone());
            e.iter()
                .filter(|(k, s, kind)| f.keep(InternalKey::new(k.as_bytes(), *s, *kind).encoded()))
                .map(|(k, s, _)| format!("{k}@{s}"))
                .collect()
        };
        assert_eq!(run(10), vec!["a@9", "c@1"]);
        // A snapshot at 5 does not see the tombstone: a@5 and b@3 stay for it.
        assert_eq!(run(5), vec!["a@9", "a@5", "b@3", "c@1"]);
    }
}
