//! A memory level of a partitioned component read as one sorted run: its runs are disjoint by
//! user key and ordered by it, so an iterator reads the one run it is in (a two-level iterator
//! over the runs) instead of the merge comparing every run's head per entry.

use super::{Memtable, MemtableIter};
use crate::error::Result;
use crate::format::ikey;
use crate::iter::{BoxedIter, KeyBounds, TwoLevelIndex, TwoLevelIter};
use std::sync::Arc;

/// `mems` cut into chains that read as one sorted run each: a stretch of memory runs each of
/// whose user keys all follow the one before's (a memory level, in key order), or a single
/// memtable. Only runs chain: a skiplist may be the active memtable, whose range grows.
pub(crate) fn chains(mems: &[Arc<Memtable>]) -> impl Iterator<Item = &[Arc<Memtable>]> {
    mems.chunk_by(|a, b| {
        a.as_run().is_some()
            && b.as_run().is_some()
            && matches!((a.key_bounds(), b.key_bounds()), (Some((_, a_hi)), Some((b_lo, _))) if a_hi < b_lo)
    })
}

/// One iterator per chain of `mems` ([`chains`]): a lone memtable's own, or the chain's runs
/// read in turn (those that may hold keys within `bounds`).
pub(crate) fn children(mems: &[Arc<Memtable>], bounds: &KeyBounds) -> Vec<BoxedIter> {
    chains(mems)
        .map(|chain| match chain {
            [one] => Box::new(one.iter()) as BoxedIter,
            runs => Box::new(LevelRuns::iter(runs, bounds)),
        })
        .collect()
}

/// The runs of one memory level, as the outer level of a [`TwoLevelIter`].
#[derive(Debug)]
pub(crate) struct LevelRuns {
    runs: Vec<Arc<Memtable>>,
    /// Current run; `runs.len()` when past either end.
    index: usize,
}

impl LevelRuns {
    /// Iterates the runs of `runs` (disjoint by user key, ordered by it) that may hold keys
    /// within `bounds`.
    pub fn iter(runs: &[Arc<Memtable>], bounds: &KeyBounds) -> TwoLevelIter<LevelRuns> {
        let runs: Vec<_> = runs
            .iter()
            .filter(|m| m.key_bounds().is_some_and(|(lo, hi)| bounds.overlaps(lo, hi)))
            .cloned()
            .collect();
        let index = runs.len();
        TwoLevelIter::over(LevelRuns { runs, index })
    }
}

impl TwoLevelIndex for LevelRuns {
    type Child = MemtableIter;

    fn valid(&self) -> bool {
        self.index < self.runs.len()
    }
    fn seek_to_first(&mut self) {
        self.index = 0;
    }
    fn seek_to_last(&mut self) {
        self.index = self.runs.len().saturating_sub(1);
    }
    fn seek(&mut self, target: &[u8]) {
        // The first run whose largest user key is at or after the target's (the run may hold
        // only versions older than the target: the two-level iterator then moves on).
        let uk = ikey::user_key(target);
        self.index = self.runs.partition_point(|m| m.key_bounds().is_some_and(|(_, hi)| hi < uk));
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let uk = ikey::user_key(target);
        let i = self.runs.partition_point(|m| m.key_bounds().is_some_and(|(lo, _)| lo <= uk));
        self.index = if i == 0 { self.runs.len() } else { i - 1 };
    }
    fn next(&mut self) {
        self.index = (self.index + 1).min(self.runs.len());
    }
    fn prev(&mut self) {
        self.index = if self.index == 0 { self.runs.len() } else { self.index - 1 };
    }
    fn open(&mut self) -> Result<Option<MemtableIter>> {
        Ok(self.runs.get(self.index).map(|m| m.iter()))
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::iter::Retention;
    use crate::format::ikey::{InternalKey, ValueKind};
    use crate::iter::InternalIterator;
    use crate::memtable::run::{build_runs, MergeScratch};
    use rand::{Rng, SeedableRng};
    use std::ops::Bound;

    #[test]
    fn a_level_of_runs_reads_as_one_sorted_run() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        // Several versions of most keys, so seeks land between the versions of a run's first
        // and last keys.
        let (m, model) = crate::memtable::tests::random_memtable(&mut rng, 3000);
        let mut keep_all = Retention::new(0, |_| false);
        let runs: Vec<Arc<Memtable>> = build_runs(&mut m.iter(), &mut keep_all, 2048, &MergeScratch::default())
            .unwrap()
            .into_iter()
            .map(|r| Arc::new(Memtable::from_run(r, 1, 0)))
            .collect();
        assert!(runs.len() > 10);
        // The runs chain; a skiplist (maybe the active memtable) stays alone.
        let mut mems = vec![m.clone()];
        mems.extend(runs.iter().cloned());
        mems.push(runs[0].clone());
        let lens: Vec<usize> = chains(&mems).map(|c| c.len()).collect();
        assert_eq!(lens, [1, runs.len(), 1]);
        let mut it = LevelRuns::iter(&runs, &KeyBounds::all());
        crate::iter::conformance::check(&mut it, &model, &mut rng, 500, 30, |r| {
            let uk: Vec<u8> = (0..r.gen_range(1..4)).map(|_| r.gen_range(b'a'..b'h')).collect();
            InternalKey::new(&uk, r.gen_range(0..3100), ValueKind::Put)
        });
        // Bounds leave out the runs that cannot hold a key within them.
        let bounds = KeyBounds {
            lo: Bound::Included(b"c".to_vec()),
            hi: Bound::Excluded(b"d".to_vec()),
        };
        let inside = runs
            .iter()
            .filter(|r| r.key_bounds().is_some_and(|(lo, hi)| bounds.overlaps(lo, hi)))
            .count();
        assert!(inside < runs.len());
        let mut it = LevelRuns::iter(&runs, &bounds);
        it.seek(InternalKey::new(b"c", ikey::MAX_SEQNO, ValueKind::Put).encoded());
        let want = model.range(InternalKey::new(b"c", ikey::MAX_SEQNO, ValueKind::Put)..).next().unwrap();
        assert_eq!(it.key(), want.0.encoded());
    }
}
