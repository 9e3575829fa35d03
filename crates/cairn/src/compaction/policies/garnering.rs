//! Garnering (Autumn, Zhao et al.): level capacities grow as the tree deepens.
//!
//! With `L` the deepest level in use, `C_i = B · T^i / c^((2L − 1 − i) · i / 2)` for
//! `1 ≤ i ≤ L`, i.e. `C_i / C_(i−1) = T / c^(L − i)`: the last ratio is `T`, lower levels grow
//! faster. `c = 1` is leveling. We take `B = base / T` so that `c = 1` gives exactly the leveling
//! capacities (`C_1 = base`).
//!
//! **Delayed last-level compaction** (paper §3.1): when the deepest level is the one over its
//! capacity, it is not compacted; `L` grows by one (raising every capacity) and the next-best
//! level is compacted instead. The authors' RocksDB fork shifts the schedule by one level and
//! lacks the delay; their LevelDB fork matches the paper, which we follow.

use crate::compaction::policy::{pick_from_level, scores, Choice, Decision, LsmView, MergePolicy};

/// The Garnering policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Garnering {
    /// Ratio T between the last two levels.
    pub t: f64,
    /// Scaling factor c ∈ (0, 1].
    pub c: f64,
    /// L0 files that trigger a compaction into L1.
    pub l0_trigger: usize,
    /// `B · T`: the capacity of L1 when it is the only level (and at c = 1).
    pub base_bytes: u64,
    /// Number of levels including L0.
    pub max_levels: usize,
}

impl Garnering {
    fn cap(&self, level: usize, deepest: u32) -> Option<f64> {
        let (i, l) = (level as f64, f64::from(deepest.max(1)));
        if level == 0 || level > deepest as usize || level + 1 >= self.max_levels {
            return None;
        }
        let b = self.base_bytes as f64 / self.t;
        Some(b * self.t.powf(i) / self.c.powf((2.0 * l - 1.0 - i) * i / 2.0))
    }
}

impl MergePolicy for Garnering {
    fn name(&self) -> &'static str {
        "garnering"
    }

    fn capacity(&self, level: usize, deepest: u32, _bottom: u64) -> Option<f64> {
        self.cap(level, deepest)
    }

    fn pick(&self, view: &LsmView) -> Decision {
        let l = view.deepest.max(1);
        let ranked = scores(view, self.l0_trigger, self.max_levels, |i| self.cap(i, l));
        let Some(&(top, _)) = ranked.first() else {
            return Decision {
                deepest: None,
                choice: Choice::DoNothing,
            };
        };
        if top == l as usize && (l as usize) + 2 <= self.max_levels {
            // Delayed last-level compaction: deepen instead, then compact the next-best level
            // under the new capacities (never the old deepest level this round).
            let grown = l + 1;
            for (level, _) in scores(view, self.l0_trigger, self.max_levels, |i| self.cap(i, grown)) {
                if level == l as usize {
                    continue;
                }
                let c = pick_from_level(view, level);
                if c != Choice::DoNothing {
                    return Decision {
                        deepest: Some(grown),
                        choice: c,
                    };
                }
            }
            return Decision {
                deepest: Some(grown),
                choice: Choice::DoNothing,
            };
        }
        for (level, _) in ranked {
            if level >= l as usize {
                continue; // the deepest level is never compacted downwards
            }
            let c = pick_from_level(view, level);
            if c != Choice::DoNothing {
                return Decision {
                    deepest: None,
                    choice: c,
                };
            }
        }
        Decision {
            deepest: None,
            choice: Choice::DoNothing,
        }
    }
}
