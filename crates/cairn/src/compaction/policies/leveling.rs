//! Leveling (RocksDB-like): L0 compacted at `l0_trigger` files; level `i ≥ 1` holds
//! `base · T^(i−1)` bytes; the last level (`max_levels − 1`) is unbounded.

use crate::compaction::policy::{pick_from_level, scores, Choice, Decision, LsmView, MergePolicy};

/// The leveling policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Leveling {
    /// Size ratio T between adjacent levels.
    pub t: f64,
    /// L0 files that trigger a compaction into L1.
    pub l0_trigger: usize,
    /// Capacity of L1 in bytes (RocksDB `max_bytes_for_level_base`).
    pub base_bytes: u64,
    /// Number of levels including L0 (RocksDB `num_levels`).
    pub max_levels: usize,
}

impl MergePolicy for Leveling {
    fn name(&self) -> &'static str {
        "leveling"
    }

    fn capacity(&self, level: usize, _deepest: u32) -> Option<f64> {
        (level >= 1 && level + 1 < self.max_levels).then(|| self.base_bytes as f64 * self.t.powi(level as i32 - 1))
    }

    fn pick(&self, view: &LsmView) -> Decision {
        for (level, _) in scores(view, self.l0_trigger, self.max_levels, |l| {
            self.capacity(l, view.deepest)
        }) {
            let c = pick_from_level(view, level);
            if c != Choice::DoNothing {
                let deepest = (level as u32 + 1 > view.deepest).then_some(level as u32 + 1);
                return Decision { deepest, choice: c };
            }
        }
        Decision {
            deepest: None,
            choice: Choice::DoNothing,
        }
    }
}
