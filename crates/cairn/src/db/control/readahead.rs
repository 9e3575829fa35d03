//! Seek readahead at run time: every period, each tree's forward seeks counted since the last
//! (per level, by how many blocks they went on to read) are folded into decayed weights, and
//! what `tuning/readahead.rs` decides from them is published in the tree's counters, where a
//! range read's table iterators load it. The state is the controller thread's own.

use crate::stats::TreeCounters;
use crate::tuning::readahead::{decay_into, seek_readahead, BUCKETS};
use std::sync::Arc;

/// One level's runs: the counts at the last period and the decayed weights.
#[derive(Debug, Clone, Default)]
struct LevelRuns {
    seen: [u64; BUCKETS],
    weights: [f64; BUCKETS],
}

/// The controller's state: per tree (by id), per level.
#[derive(Debug, Default)]
pub(crate) struct SeekReadahead {
    trees: Vec<Vec<LevelRuns>>,
}

impl SeekReadahead {
    /// One period over `trees` (indexed by tree id), for data blocks of `block` bytes stored.
    pub(crate) fn round(&mut self, trees: &[Arc<TreeCounters>], block: u64) {
        self.trees.resize_with(trees.len(), Vec::new);
        for (t, counters) in trees.iter().enumerate() {
            let levels = &mut self.trees[t];
            levels.resize_with(counters.levels(), LevelRuns::default);
            for (level, l) in levels.iter_mut().enumerate() {
                let now = counters.seek_runs(level);
                let new: [u64; BUCKETS] = std::array::from_fn(|i| now[i].saturating_sub(l.seen[i]));
                l.seen = now;
                if new.iter().any(|&n| n > 0) {
                    decay_into(&mut l.weights, &new);
                    counters.set_seek_ahead(level, seek_readahead(&l.weights, block));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::stripe::Stripe;
    use crate::stats::EngineCounters;

    #[test]
    fn publishes_what_each_level_seeks_read() {
        let counters = EngineCounters::new(1, 3);
        let tree = counters.tree(0);
        let mut ra = SeekReadahead::default();
        let s = Stripe::current();
        for _ in 0..100 {
            tree.record_seek_run(s, 1, 0);
            tree.record_seek_run(s, 2, 3);
        }
        ra.round(&counters.trees(), 4101);
        assert_eq!(tree.seek_ahead(0), 0);
        assert_eq!(tree.seek_ahead(1), 0);
        assert_eq!(tree.seek_ahead(2), 3 * 4101 + 4101 / 4);
        // The scans turn long: the weights follow within a few periods.
        for _ in 0..4 {
            for _ in 0..100 {
                tree.record_seek_run(s, 2, 5000);
            }
            ra.round(&counters.trees(), 4101);
        }
        assert!(tree.seek_ahead(2) >= 16 * 4101, "{}", tree.seek_ahead(2));
        // A period without seeks keeps the decision.
        let before = tree.seek_ahead(2);
        ra.round(&counters.trees(), 4101);
        assert_eq!(tree.seek_ahead(2), before);
    }
}
