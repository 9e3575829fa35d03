//! Merge semantics of flushes and compactions, separate from job execution: which versions of
//! the merged input stream are written out.
//!
//! LevelDB's rule: an entry is dropped when a newer version of the same user key exists at or
//! below the oldest live snapshot (no reader can see the older one), and a tombstone at or
//! below the oldest snapshot is dropped when no deeper level may hold the key (the bottom for
//! that key). Everything else is kept, so every snapshot still sees what it saw. Range
//! tombstones: an entry below a tombstone over its key that every reader sees (at or below the
//! oldest snapshot) is dropped too; the tombstones themselves are carried by the job
//! (`job.rs`).

use crate::format::ikey::{self, ValueKind};
use crate::range_del::Fragments;

/// Whether no level below a compaction's output may hold a user key.
type BottommostFn<'a> = Box<dyn FnMut(&[u8]) -> bool + 'a>;

/// Decides, entry by entry in internal-key order, what a compaction keeps.
pub struct CompactionFilter<'a> {
    oldest_snapshot: u64,
    bottommost: BottommostFn<'a>,
    /// The user key of the previous entry (meaningful once `last_seq_for_key` is set); reused,
    /// not reallocated, per key.
    current: Vec<u8>,
    last_seq_for_key: u64,
    /// Entries dropped as shadowed.
    pub dropped_shadowed: u64,
    /// Tombstones dropped at the bottom.
    pub dropped_tombstones: u64,
    /// The inputs' range tombstones.
    range_dels: Fragments,
    /// Entries dropped under a range tombstone.
    pub dropped_by_range: u64,
}

impl std::fmt::Debug for CompactionFilter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactionFilter")
            .field("oldest_snapshot", &self.oldest_snapshot)
            .finish()
    }
}

impl<'a> CompactionFilter<'a> {
    /// `oldest_snapshot`: the smallest seqno any reader may read at (the last seqno when no
    /// snapshot is held). `bottommost(user_key)`: true when no level below the output may hold
    /// the key.
    pub fn new(oldest_snapshot: u64, bottommost: impl FnMut(&[u8]) -> bool + 'a) -> Self {
        // Above every seqno it would read as "every version shadowed", the first one included.
        debug_assert!(oldest_snapshot <= crate::format::ikey::MAX_SEQNO);
        CompactionFilter {
            oldest_snapshot,
            bottommost: Box::new(bottommost),
            current: Vec::new(),
            last_seq_for_key: u64::MAX,
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
        let Some((uk, seq, kind)) = ikey::split(ikey) else {
            return true;
        };
        if self.last_seq_for_key == u64::MAX || self.current != uk {
            self.current.clear();
            self.current.extend_from_slice(uk);
            self.last_seq_for_key = u64::MAX;
        }
        let keep = if self.last_seq_for_key <= self.oldest_snapshot {
            self.dropped_shadowed += 1;
            false
        } else if kind == ValueKind::Delete && seq <= self.oldest_snapshot && (self.bottommost)(uk) {
            self.dropped_tombstones += 1;
            false
        } else if !self.range_dels.is_empty() && self.range_dels.covering(uk, self.oldest_snapshot) > seq {
            self.dropped_by_range += 1;
            false
        } else {
            true
        };
        self.last_seq_for_key = seq;
        keep
    }

    /// Continues as if `ikey` was the last entry passed to [`keep`](Self::keep) and kept (the
    /// caller copied a stretch of already filtered entries ending at it without asking).
    pub fn skip_to(&mut self, ikey: &[u8]) {
        if let Some((uk, seq, _)) = ikey::split(ikey) {
            self.current.clear();
            self.current.extend_from_slice(uk);
            self.last_seq_for_key = seq;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ikey::InternalKey;

    fn run(entries: &[(&str, u64, ValueKind)], snapshot: u64, bottom: bool) -> Vec<String> {
        let mut f = CompactionFilter::new(snapshot, |_| bottom);
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
            let mut f = CompactionFilter::new(snapshot, |_| false).with_range_dels(rd.clone());
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
