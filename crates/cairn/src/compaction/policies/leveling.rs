//! Leveling (RocksDB-like): L0 is compacted at `l0_trigger` files; level `i ≥ 1` holds
//! `base · T^(i−1)` bytes and the last level (`max_levels − 1`) is unbounded.
//!
//! **Targets that follow write memory** (Luo & Carey §4.1.3; `level_targets = write-memory`):
//! the deepest level `n` holds what it holds (`B` bytes) and level `i < n` is meant to hold
//! `B / T^(n−i)`; the number of levels follows the tree's share of write memory `w`. When L1's
//! target exceeds `w·T`, an empty L1 is added (every level moves one deeper, metadata only);
//! when L2's target falls below `w·T / f` (`f` = 1.5, the paper's delay against oscillation),
//! L1 is drained into L2 — L0 only merges within itself meanwhile — and then removed (every
//! level moves one up). The paper states both rules on the levels' sizes, assuming them stable;
//! we state them on the targets, because a level's size passes its target every time it fills
//! and a size rule would add a level per fill. Levels are added and removed only at L1, as in
//! the paper, so the tree also grows this way: a first level past `w·T` becomes L2 under a new L1.

use crate::compaction::policy::{intra_l0, pick_from_level, scores, Choice, Decision, LsmView, MergePolicy};

/// The paper's delay factor `f` for removing L1.
const REMOVE_DELAY: f64 = 1.5;

/// The leveling policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Leveling {
    /// Size ratio T between adjacent levels.
    pub t: f64,
    /// L0 files that trigger a compaction into L1.
    pub l0_trigger: usize,
    /// Capacity of L1 in bytes (RocksDB `max_bytes_for_level_base`) with fixed targets.
    pub base_bytes: u64,
    /// Number of levels including L0 (RocksDB `num_levels`).
    pub max_levels: usize,
    /// Level targets anchored at the deepest level, their number following write memory.
    pub follow_write_memory: bool,
}

fn level_bytes(view: &LsmView, level: usize) -> u64 {
    view.level(level).iter().map(|f| f.size).sum()
}

impl Leveling {
    /// Target of level `level ≤ n` in a tree of `n` levels whose deepest holds `bottom` bytes.
    fn target(&self, level: usize, n: usize, bottom: u64) -> f64 {
        bottom as f64 / self.t.powi((n - level) as i32)
    }

    /// Whether L1 is to be removed: L2's target is below `w·T / f`.
    fn retiring(&self, view: &LsmView) -> bool {
        let n = view.deepest.max(1) as usize;
        match view.write_memory {
            Some(w) if self.follow_write_memory && n >= 2 => {
                self.target(2, n, level_bytes(view, n)) < w as f64 * self.t / REMOVE_DELAY
            }
            _ => false,
        }
    }

    /// A level added or removed, or L1 drained on its way out.
    fn reshape(&self, view: &LsmView) -> Option<Decision> {
        let w = view.write_memory.filter(|_| self.follow_write_memory)? as f64;
        let n = view.deepest.max(1) as usize;
        // Renumbering waits until no job of this tree runs: a job installs at the levels it
        // was picked for.
        let quiet = view.levels.iter().all(|l| l.files.iter().all(|f| !f.busy));
        if self.retiring(view) {
            if !view.level(1).is_empty() {
                let c = pick_from_level(view, 1);
                return (c != Choice::DoNothing).then_some(Decision { deepest: None, choice: c });
            }
            return quiet.then_some(Decision {
                deepest: Some(n as u32 - 1),
                choice: Choice::RemoveLevel,
            });
        }
        let grow = self.target(1, n, level_bytes(view, n)) > w * self.t && n + 2 <= self.max_levels;
        (grow && quiet).then_some(Decision {
            deepest: Some(n as u32 + 1),
            choice: Choice::AddLevel,
        })
    }
}

impl MergePolicy for Leveling {
    fn name(&self) -> &'static str {
        "leveling"
    }

    fn capacity(&self, level: usize, deepest: u32, bottom: u64) -> Option<f64> {
        if self.follow_write_memory {
            let n = deepest.max(1) as usize;
            return (level >= 1 && level < n).then(|| self.target(level, n, bottom));
        }
        (level >= 1 && level + 1 < self.max_levels).then(|| self.base_bytes as f64 * self.t.powi(level as i32 - 1))
    }

    fn pick(&self, view: &LsmView) -> Decision {
        if let Some(d) = self.reshape(view) {
            return d;
        }
        let retiring = self.retiring(view);
        let bottom = level_bytes(view, view.deepest as usize);
        for (level, _) in scores(view, self.l0_trigger, self.max_levels, |l| {
            self.capacity(l, view.deepest, bottom)
        }) {
            let c = match level {
                0 if retiring => intra_l0(view.level(0)),
                _ => pick_from_level(view, level),
            };
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
