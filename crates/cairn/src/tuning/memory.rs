//! The memory tuner (Luo & Carey, VLDB '20, §5; DESIGN §6.4), as a pure decider: from one
//! tuning cycle's statistics, how much memory write memory, the block cache and (★ ours) the
//! filter region get next.
//!
//! **Two-way (the paper).** With x the write memory and M the budget,
//! `cost'(x) = ω·write'(x) + γ·read'(x)` in page I/Os per operation per byte:
//! - `write'(x) = Σ_i −merge_i / (x · ln(|L_N,i| / (a_i·x))) · mem_i / (mem_i + log_i)`, with
//!   `merge_i` tree i's merge (compaction) page writes per operation, `|L_N,i|` its last level's
//!   bytes, `a_i` its share of write memory, and `mem_i`, `log_i` the bytes it flushed because
//!   memory was full and because the log was (a tree whose write memory is not below its last
//!   level, or that has no last level, adds nothing);
//! - `read'(x) = (saved_q + saved_m) / sim + write'(x) · read_m / merge`: the ghost cache's
//!   saved user and merge reads per operation per simulated byte, and the merge reads that
//!   fewer merge writes also save.
//!
//! The next x is Newton–Raphson's root of `cost'` fitted as a line `A·x + B` over the last 3
//! cycles (least squares); with fewer than 2 distinct x, a line that does not rise (A ≤ 0), or a
//! step the line says does not lower the cost, a fixed step of 5% of M against the sign of
//! `cost'`. A step takes at most 10% of the region it shrinks and leaves each region at least
//! `floor` (the cache also the index and filter blocks charged to it, which the ghost cache's
//! data-block view cannot price); no step is taken below 0.5% of M or when the expected gain
//! is below 0.1% of the cycle's cost (the stop rules). ★ A cycle with no user write at all
//! (a read phase) hands all write memory above `floor` to the other side in one step.
//!
//! **Three-way (★).** With `filter_benefit` (expected I/O per operation saved by one more byte
//! of filter memory: ElasticBF's best unit not loaded) and `filter_loss` (what the last loaded
//! byte saves), the cache/filter split y (filter bytes) gets its own step with the same rules:
//! `g'(y) = γ·(saved_q + saved_m)/sim − filter_benefit` (moving a byte from the cache to
//! filters loses the first and gains the second; shrinking filters uses `filter_loss`), fitted
//! over its own history. The write step is decided first against cache + filters as one side;
//! the cache then pays or receives what the filter step moves.
//!
//! **Four-way (★).** With `kv_benefit` (I/O per operation one more byte of key-value cache
//! saves: its ghost's hits per simulated byte, each worth the storage reads of a lookup that
//! misses it), the cache/key-value split z gets a step of its own, with the same rules:
//! `h'(z) = γ·(saved_q + saved_m)/sim − γ·kv_benefit`, by the fixed step only (a line fitted
//! over cycles of two phases, skewed then uniform lookups, points nowhere) — doubled while the
//! steps keep one direction, up to four times, within a quarter of the region it shrinks — and
//! floored like the others, and held while the two marginals are within a quarter of each
//! other (they have met). A cache the workload does not use (uniform lookups, scans) shrinks by
//! the capped steps until it is below two minimum steps, then goes to nothing in one.

use std::collections::VecDeque;

/// One tree's statistics for one cycle.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TreeCycle {
    /// Merge (compaction) page writes per operation.
    pub merge: f64,
    /// Bytes of its last level.
    pub last_level_bytes: f64,
    /// Its share of write memory (a_i).
    pub memory_share: f64,
    /// Bytes flushed because write memory was full.
    pub flushed_for_memory: f64,
    /// Bytes flushed because the log was.
    pub flushed_for_log: f64,
}

/// What one tuning cycle saw; every rate is per operation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Cycle {
    /// Per tree.
    pub trees: Vec<TreeCycle>,
    /// Ghost-cache hits of user reads per operation (pages).
    pub saved_query: f64,
    /// Ghost-cache hits of merge reads per operation (pages).
    pub saved_merge: f64,
    /// The ghost cache's simulated bytes.
    pub sim_bytes: f64,
    /// Merge page reads from storage per operation.
    pub merge_reads: f64,
    /// The cycle's weighted I/O per operation (`ω·writes + γ·reads`): the stop rule's scale.
    pub cost: f64,
    /// Three-way only: I/O per operation one more byte of filter memory saves.
    pub filter_benefit: Option<f64>,
    /// Three-way only: I/O per operation the last byte of filter memory saves.
    pub filter_loss: Option<f64>,
    /// Bytes of the block cache that index and filter blocks need (what table readers pin
    /// charged to it, and the cached index blocks and filter units divided by the
    /// high-priority share they stay resident in): below them lookups read index or filter
    /// blocks from storage, a cost the ghost cache's data-block view does not see. The
    /// cache's floor is at least this plus `floor`.
    pub meta_bytes: u64,
    /// No user write in the cycle: write memory buffered nothing.
    pub writes_idle: bool,
    /// Four-way only: I/O per operation one more byte of key-value cache saves.
    pub kv_benefit: Option<f64>,
}

/// Region sizes in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sizes {
    /// Write memory.
    pub write: u64,
    /// Block cache.
    pub cache: u64,
    /// Filter memory (0 and untouched in two-way tuning).
    pub filter: u64,
    /// The key-value cache (0 and untouched without one).
    pub kv: u64,
}

impl Sizes {
    fn total(&self) -> u64 {
        self.write + self.cache + self.filter + self.kv
    }
}

/// The tuner's constants (the paper's and DESIGN §6.4's defaults in [`Default`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// ω: weight of a page write.
    pub write_weight: f64,
    /// γ: weight of a page read.
    pub read_weight: f64,
    /// Cycles the line is fitted over.
    pub samples: usize,
    /// The fixed step, as a share of the budget.
    pub fallback_step: f64,
    /// The most a step takes from the region it shrinks, as a share of that region.
    pub max_shrink: f64,
    /// Steps below this share of the budget are not taken.
    pub min_step: f64,
    /// Steps whose expected gain is below this share of the cycle's cost are not taken.
    pub min_gain: f64,
    /// The least bytes any region keeps.
    pub floor: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            write_weight: 1.0,
            read_weight: 1.0,
            samples: 3,
            fallback_step: 0.05,
            max_shrink: 0.10,
            min_step: 0.005,
            min_gain: 0.001,
            floor: 32 << 20,
        }
    }
}

pub use crate::stats::TunerRule as Rule;

/// In words, for people.
impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Rule::Newton => "Newton step to the fitted optimum",
            Rule::Fallback => "fixed step toward lower cost",
            Rule::SmallStep => "held: step below the minimum",
            Rule::SmallGain => "held: gain below the minimum",
            Rule::NoData => "held: no I/O to decide from",
            Rule::Idle => "no writes: write memory to the cache",
        })
    }
}

/// One coordinate's decision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Move {
    /// The derivative at the current size (I/O per operation per byte).
    pub derivative: f64,
    /// Bytes moved into the coordinate's region (negative: out of it).
    pub step: i64,
    /// Why.
    pub rule: Rule,
}

/// One tuning step: the derivatives, the moves and the new sizes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// `write'(x)`.
    pub write_derivative: f64,
    /// `read'(x)`.
    pub read_derivative: f64,
    /// Write memory against cache (+ filters).
    pub write: Move,
    /// Filters against cache (three-way only).
    pub filter: Option<Move>,
    /// The key-value cache against the block cache (four-way only).
    pub kv: Option<Move>,
    /// The sizes after the step.
    pub sizes: Sizes,
}

/// The tuner's memory of earlier cycles: (size, derivative) per coordinate.
#[derive(Debug, Clone, Default)]
pub struct Tuner {
    config: Config,
    write_history: VecDeque<(f64, f64)>,
    filter_history: VecDeque<(f64, f64)>,
    /// Fixed steps the key-value split took in a row in one direction (negative: shrinking).
    kv_streak: i32,
}

/// The key-value split's steps double while they keep one direction, up to this many times
/// the fixed step: moving bytes between two caches risks only a step back, and a read phase
/// should not wait tens of cycles for the split it needs.
const KV_MAX_DOUBLING: u32 = 2;

/// The most one key-value step takes from the region it shrinks, as a share of that region.
const KV_MAX_SHRINK: f64 = 0.25;

/// `write'(x)` of Eq. 5.
pub fn write_derivative(x: f64, cycle: &Cycle) -> f64 {
    cycle
        .trees
        .iter()
        .map(|t| {
            let mine = t.memory_share * x;
            if t.merge <= 0.0 || mine <= 0.0 || t.last_level_bytes <= mine {
                return 0.0;
            }
            let flushed = t.flushed_for_memory + t.flushed_for_log;
            let by_memory = if flushed > 0.0 { t.flushed_for_memory / flushed } else { 1.0 };
            -t.merge / (x * (t.last_level_bytes / mine).ln()) * by_memory
        })
        .sum::<f64>()
        + 0.0 // no term: +0, not −0
}

/// `read'(x)` of Eq. 6.
pub fn read_derivative(x: f64, cycle: &Cycle) -> f64 {
    let merge: f64 = cycle.trees.iter().map(|t| t.merge).sum();
    let cache = if cycle.sim_bytes > 0.0 {
        (cycle.saved_query + cycle.saved_merge) / cycle.sim_bytes
    } else {
        0.0
    };
    let merge_reads = if merge > 0.0 {
        write_derivative(x, cycle) * cycle.merge_reads / merge
    } else {
        0.0
    };
    cache + merge_reads
}

impl Tuner {
    /// A tuner with `config`.
    pub fn new(config: Config) -> Self {
        Tuner {
            config,
            ..Tuner::default()
        }
    }

    /// Decides the next sizes from the current ones and the cycle just ended.
    pub fn step(&mut self, now: Sizes, cycle: &Cycle) -> Step {
        let c = self.config;
        // The cache keeps the index and filter blocks charged to it, and `floor` besides.
        let cache_floor = c.floor.saturating_add(cycle.meta_bytes);
        let total = now.total() as f64;
        let x = now.write as f64;
        let w = write_derivative(x, cycle);
        let r = read_derivative(x, cycle);
        let d = c.write_weight * w + c.read_weight * r;
        // Write memory against everything else: the cache pays first, then filters.
        let write = if cycle.writes_idle && now.write > c.floor {
            // The 10% cap guards a region in use against diminishing returns; write memory
            // that buffered no write in a whole cycle has none, and a read phase after a load
            // would otherwise wait tens of cycles for the cache it needs. The write history
            // describes the load, not what follows: forget it.
            self.write_history.clear();
            Move {
                derivative: d,
                step: -((now.write - c.floor) as i64),
                rule: Rule::Idle,
            }
        } else {
            decide(
            &mut self.write_history,
            &c,
            x,
            d,
            total,
            cycle.cost,
            [(now.write, c.floor), (now.cache + now.filter, cache_floor)],
            cycle.sim_bytes > 0.0 || w != 0.0,
            )
        };
        let mut sizes = now;
        apply(&mut sizes.write, &mut sizes.cache, write.step);
        if sizes.cache < cache_floor.min(now.cache) {
            // The cache never goes below its floor: filters pay the rest.
            let short = cache_floor.min(now.cache) - sizes.cache;
            sizes.cache += short;
            sizes.filter -= short.min(sizes.filter);
        }
        let cache_marginal = if cycle.sim_bytes > 0.0 {
            c.read_weight * (cycle.saved_query + cycle.saved_merge) / cycle.sim_bytes
        } else {
            0.0
        };
        let filter = match (cycle.filter_benefit, cycle.filter_loss) {
            (Some(gain), loss) if now.filter > 0 || gain > 0.0 => {
                // Growing filters gains `gain` per byte; shrinking them loses `loss`.
                let g = if cache_marginal - gain < 0.0 {
                    cache_marginal - gain
                } else {
                    cache_marginal - loss.unwrap_or(gain)
                };
                let m = decide(
                    &mut self.filter_history,
                    &c,
                    sizes.filter as f64,
                    g,
                    total,
                    cycle.cost,
                    [(sizes.filter, 0), (sizes.cache, cache_floor)],
                    true,
                );
                apply(&mut sizes.filter, &mut sizes.cache, m.step);
                Some(m)
            }
            _ => None,
        };
        let kv = cycle.kv_benefit.map(|gain| {
            let gain = c.read_weight * gain;
            let g = cache_marginal - gain;
            let hold = |rule| Move {
                derivative: g,
                step: 0,
                rule,
            };
            let mut m = if !g.is_finite() {
                hold(Rule::NoData)
            } else if g.abs() <= 0.25 * cache_marginal.max(gain) {
                // The marginals have met.
                hold(Rule::SmallGain)
            } else {
                let room_up = (sizes.cache as f64 * KV_MAX_SHRINK).min((sizes.cache as f64 - cache_floor as f64).max(0.0));
                let room_down = sizes.kv as f64 * KV_MAX_SHRINK;
                let dir = -g.signum();
                let streak = if dir * self.kv_streak as f64 > 0.0 { self.kv_streak.unsigned_abs() } else { 0 };
                let times = f64::from(1u32 << streak.min(KV_MAX_DOUBLING));
                let s = (dir * times * c.fallback_step * total).clamp(-room_down, room_up);
                if s.abs() < c.min_step * total {
                    hold(Rule::SmallStep)
                } else {
                    Move {
                        derivative: g,
                        step: s as i64,
                        rule: Rule::Fallback,
                    }
                }
            };
            // What the capped steps leave of a cache the workload does not use goes at once
            // (a quarter of it is below the smallest step: it would otherwise stay for good).
            if g > 0.0 && m.step == 0 && m.rule == Rule::SmallStep {
                m.step = -(sizes.kv as i64);
                m.rule = Rule::Fallback;
            }
            self.kv_streak = match m.step.signum() as i32 {
                0 => 0,
                d if d * self.kv_streak > 0 => self.kv_streak.saturating_add(d),
                d => d,
            };
            apply(&mut sizes.kv, &mut sizes.cache, m.step);
            m
        });
        Step {
            write_derivative: w,
            read_derivative: r,
            write,
            filter,
            kv,
            sizes,
        }
    }
}

/// Moves `step` bytes into `grow` out of `other` (negative: the other way).
fn apply(grow: &mut u64, other: &mut u64, step: i64) {
    let s = step.unsigned_abs();
    if step >= 0 {
        *grow += s;
        *other -= s.min(*other);
    } else {
        *grow -= s.min(*grow);
        *other += s;
    }
}

/// One coordinate's step: size `x` of its region against the other side (the region that
/// pays or receives), derivative `d` of the cost in x; `[(mine, floor), (other, floor)]`.
#[allow(clippy::too_many_arguments, reason = "one private step over the paper's inputs")]
fn decide(
    history: &mut VecDeque<(f64, f64)>,
    c: &Config,
    x: f64,
    d: f64,
    total: f64,
    cost: f64,
    [(mine, mine_floor), (other, other_floor)]: [(u64, u64); 2],
    has_data: bool,
) -> Move {
    let hold = |rule| Move {
        derivative: d,
        step: 0,
        rule,
    };
    if !has_data || !d.is_finite() {
        return hold(Rule::NoData);
    }
    history.push_back((x, d));
    while history.len() > c.samples.max(2) {
        history.pop_front();
    }
    let line = fit(history);
    let newton = line.filter(|&(a, _)| a > 0.0).map(|(a, _)| -d / a);
    // The line's expected change of cost for a step s from x: d·s + a·s²/2.
    let expected = |s: f64| match line {
        Some((a, _)) => d * s + a * s * s / 2.0,
        None => d * s,
    };
    let (mut s, mut rule) = match newton {
        Some(s) if expected(s) < 0.0 => (s, Rule::Newton),
        _ => (-d.signum() * c.fallback_step * total, Rule::Fallback),
    };
    // Cap: at most max_shrink of the shrinking region, never below the floor.
    let room_up = (other as f64 * c.max_shrink).min((other as f64 - other_floor as f64).max(0.0));
    let room_down = (mine as f64 * c.max_shrink).min((mine as f64 - mine_floor as f64).max(0.0));
    s = s.clamp(-room_down, room_up);
    if s.abs() < c.min_step * total {
        rule = Rule::SmallStep;
        s = 0.0;
    } else if -expected(s) < c.min_gain * cost {
        rule = Rule::SmallGain;
        s = 0.0;
    }
    Move {
        derivative: d,
        step: s as i64,
        rule,
    }
}

/// Least-squares line `(a, b)` through the points (None with fewer than 2 distinct x).
fn fit(points: &VecDeque<(f64, f64)>) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (points.len() >= 2 && sxx > 0.0).then(|| {
        let a = sxy / sxx;
        (a, my - a * mx)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{run_file, Case};

    /// `12M`, `3G`, `1.5` → a number (K/M/G binary).
    fn num(v: &str) -> f64 {
        let (n, mult) = match v.chars().last() {
            Some('K') => (&v[..v.len() - 1], 1024.0),
            Some('M') => (&v[..v.len() - 1], 1024.0 * 1024.0),
            Some('G') => (&v[..v.len() - 1], 1024.0 * 1024.0 * 1024.0),
            _ => (v, 1.0),
        };
        n.parse::<f64>().unwrap_or_else(|_| panic!("{v:?} is not a number")) * mult
    }

    fn arg(c: &Case, k: &str, default: f64) -> f64 {
        c.get(k).map_or(default, num)
    }

    fn mib(b: f64) -> String {
        format!("{:.1}M", b / (1024.0 * 1024.0))
    }

    /// `step write= cache= [filter=] [kv=] sim= saved_q= saved_m= merge_reads= cost= [gain=
    /// loss=] [kv_gain=] [meta=] [floor=] [omega= gamma=]`, one input line per tree: `merge= last= share= mem= log=`.
    /// `reset` forgets the history (each file section starts with one).
    fn cycle(c: &Case) -> Cycle {
        Cycle {
            trees: c
                .input
                .iter()
                .map(|line| {
                    let mut t = TreeCycle {
                        memory_share: 1.0,
                        ..TreeCycle::default()
                    };
                    for kv in line.split_whitespace() {
                        let (k, v) = kv.split_once('=').unwrap_or((kv, "0"));
                        let v = num(v);
                        match k {
                            "merge" => t.merge = v,
                            "last" => t.last_level_bytes = v,
                            "share" => t.memory_share = v,
                            "mem" => t.flushed_for_memory = v,
                            "log" => t.flushed_for_log = v,
                            _ => {}
                        }
                    }
                    t
                })
                .collect(),
            saved_query: arg(c, "saved_q", 0.0),
            saved_merge: arg(c, "saved_m", 0.0),
            sim_bytes: arg(c, "sim", 128.0 * 1024.0 * 1024.0),
            merge_reads: arg(c, "merge_reads", 0.0),
            cost: arg(c, "cost", 1.0),
            filter_benefit: c.get("gain").map(num),
            filter_loss: c.get("loss").map(num),
            meta_bytes: arg(c, "meta", 0.0) as u64,
            writes_idle: c.has("idle"),
            kv_benefit: c.get("kv_gain").map(num),
        }
    }

    fn show(m: &Move) -> String {
        let sign = if m.step >= 0 { "+" } else { "-" };
        format!(
            "{sign}{} ({:?}, derivative {:.3e})",
            mib(m.step.unsigned_abs() as f64),
            m.rule,
            m.derivative
        )
    }

    #[test]
    fn memory_tuner_cases() {
        let mut tuner = Tuner::new(Config::default());
        run_file("tuning/memory.txt", |c| match c.command.as_str() {
            "reset" => {
                tuner = Tuner::new(Config {
                    floor: arg(c, "floor", (32u64 << 20) as f64) as u64,
                    write_weight: arg(c, "omega", 1.0),
                    read_weight: arg(c, "gamma", 1.0),
                    ..Config::default()
                });
                "ok".into()
            }
            "step" => {
                let now = Sizes {
                    write: arg(c, "write", 0.0) as u64,
                    cache: arg(c, "cache", 0.0) as u64,
                    filter: arg(c, "filter", 0.0) as u64,
                    kv: arg(c, "kv", 0.0) as u64,
                };
                let s = tuner.step(now, &cycle(c));
                let mut out = format!(
                    "write' {:.3e} read' {:.3e}\nwrite {}",
                    s.write_derivative,
                    s.read_derivative,
                    show(&s.write)
                );
                if let Some(f) = &s.filter {
                    out.push_str(&format!("\nfilter {}", show(f)));
                }
                if let Some(k) = &s.kv {
                    out.push_str(&format!("\nkv {}", show(k)));
                }
                out.push_str(&format!(
                    "\nsizes write {} cache {} filter {}",
                    mib(s.sizes.write as f64),
                    mib(s.sizes.cache as f64),
                    mib(s.sizes.filter as f64)
                ));
                if s.kv.is_some() {
                    out.push_str(&format!(" kv {}", mib(s.sizes.kv as f64)));
                }
                assert_eq!(s.sizes.total(), now.total(), "a step keeps the budget");
                out
            }
            _ => c.unknown(),
        });
    }

    /// On a synthetic convex cost, the tuner converges near the minimum from either side and
    /// stays there.
    #[test]
    fn converges_on_a_convex_cost() {
        // cost(x) = W/x + R·x (pages/op): write cost falls as 1/x, read cost rises linearly.
        let (budget, w, r) = (1024.0 * 1024.0 * 1024.0, 2.0e8_f64, 4.0e-9_f64);
        let best = (w / r).sqrt();
        for start in [0.05, 0.8] {
            let mut tuner = Tuner::new(Config::default());
            let mut now = Sizes {
                write: (budget * start) as u64,
                cache: (budget * (1.0 - start)) as u64,
                filter: 0,
                kv: 0,
            };
            for _ in 0..60 {
                let x = now.write as f64;
                // write'(x) = −W/x², read'(x) = R: expressed through one tree and the ghost.
                let cycle = Cycle {
                    trees: vec![TreeCycle {
                        merge: w / x * (1e15_f64 / x).ln(),
                        last_level_bytes: 1e15,
                        memory_share: 1.0,
                        flushed_for_memory: 1.0,
                        flushed_for_log: 0.0,
                    }],
                    saved_query: r * 128.0 * 1024.0 * 1024.0,
                    sim_bytes: 128.0 * 1024.0 * 1024.0,
                    cost: w / x + r * x,
                    ..Cycle::default()
                };
                now = tuner.step(now, &cycle).sizes;
            }
            let x = now.write as f64;
            let cost = |x: f64| w / x + r * x;
            assert!(
                cost(x) <= cost(best) * 1.01,
                "from {start}: x = {:.0} MiB, best {:.0} MiB, cost {:.4} vs {:.4}",
                x / 1048576.0,
                best / 1048576.0,
                cost(x),
                cost(best)
            );
        }
    }
}
