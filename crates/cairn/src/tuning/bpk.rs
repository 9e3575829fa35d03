//! Bits-per-key allocation (docs/design.md §1 [C], DESIGN §6.2): decided for each output file
//! when it is written, from the file's real key count, the statistics of its tree's live files
//! and what the output inherits from its job's inputs.
//!
//! - [`Uniform`]: the same bits per key everywhere (RocksDB's default).
//! - [`Monkey`]: the optimum for empty lookups spread evenly over the key space — each level
//!   receives the same lookups, each L0 file counts as a level of its own.
//! - [`Mnemosyne`]: the optimum for the lookups Merlin estimates per file.
//! - [`Optimal`]: an oracle for benchmarks — the optimum for the exact per-file counts of the
//!   running workload (new outputs inherit their inputs' exact counts).
//!
//! The three solved policies also name the live files whose optimal bits per key is now zero
//! (`n_i > z_i · e^(−C)`, or every file when no lookup is empty): their filters are not worth
//! a probe, and the read path skips them (Mnemosyne's skip rule, live). Before any lookup has
//! been recorded, Mnemosyne and Optimal decide as Monkey.

use crate::filter::FilterDecision;
use crate::stats::{FileNumber, FileStatsSnapshot, Seed, StatsSnapshot};

/// What an allocator knows about an output file being written.
#[derive(Debug, Clone, Copy)]
pub struct OutputContext<'a> {
    /// Level the file is written to.
    pub level: usize,
    /// Distinct user keys in the file.
    pub keys: u64,
    /// The live files of the file's tree (with their level, entries, filter bits per key and
    /// access statistics) when the job started.
    pub stats: &'a StatsSnapshot,
    /// Files the job replaces (its inputs): no longer part of the tree.
    pub replaced: &'a [FileNumber],
    /// What the output inherits from the inputs.
    pub seed: Seed,
    /// How fast the units' false-positive rate falls per bit per key ([`LN2_SQ`](crate::filter::bloom::LN2_SQ) for the
    /// standard layout, [`LOCAL_DECAY`](crate::filter::bloom::LOCAL_DECAY) for cache-local units).
    pub decay: f64,
}

/// An allocator's decision for one output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BpkDecision {
    /// The output's bits per key (0: no filter).
    pub bpk: f64,
    /// Live files whose filter should no longer be probed (their optimal bits per key is 0).
    pub skip: Vec<FileNumber>,
    /// The optimum's multiplier, when solved.
    pub c: Option<f64>,
}

/// Decides the filter of each output file.
pub trait BpkAllocator: Send + Sync + std::fmt::Debug {
    /// Short name, recorded in each file's properties.
    fn name(&self) -> &'static str;
    /// The decision for one output file.
    fn decide(&self, out: &OutputContext<'_>) -> BpkDecision;
    /// The filter of every file, when it needs no per-output decision.
    fn fixed(&self) -> Option<FilterDecision> {
        None
    }
}

/// The same bits per key for every file (RocksDB's default).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Uniform {
    /// Bits per key; 0 = no filter.
    pub bpk: f64,
}

impl BpkAllocator for Uniform {
    fn name(&self) -> &'static str {
        "uniform"
    }
    fn decide(&self, _out: &OutputContext<'_>) -> BpkDecision {
        BpkDecision {
            bpk: self.bpk,
            ..BpkDecision::default()
        }
    }
    fn fixed(&self) -> Option<FilterDecision> {
        Some(filter_decision("uniform", self.bpk))
    }
}

/// Elastic units (ElasticBF, and the combined mode): every file gets the same units on disk
/// (`units` × `unit_bpk`); what is loaded is decided at run time (`tuning/elastic.rs`), so a
/// file's decision needs no statistics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Elastic {
    /// `"elastic"` or `"mnemosyne-elastic"`.
    pub name: &'static str,
    /// Units per segment.
    pub units: u32,
    /// Bits per key of each.
    pub unit_bpk: f64,
}

impl BpkAllocator for Elastic {
    fn name(&self) -> &'static str {
        self.name
    }
    fn decide(&self, _out: &OutputContext<'_>) -> BpkDecision {
        BpkDecision {
            bpk: f64::from(self.units) * self.unit_bpk,
            ..BpkDecision::default()
        }
    }
    fn fixed(&self) -> Option<FilterDecision> {
        Some(FilterDecision::units(self.name, self.units as usize, self.unit_bpk))
    }
}

/// Monkey: empty lookups spread evenly over the key space; each level (each L0 file) sees the
/// same number, shared by its files in proportion to their entries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Monkey {
    /// Average bits per key.
    pub bpk: f64,
}

impl BpkAllocator for Monkey {
    fn name(&self) -> &'static str {
        "monkey"
    }
    fn decide(&self, out: &OutputContext<'_>) -> BpkDecision {
        let kept = kept(out);
        let mut level_entries: Vec<f64> = Vec::new();
        for f in &kept {
            if level_entries.len() <= f.level {
                level_entries.resize(f.level + 1, 0.0);
            }
            level_entries[f.level] += f.entries as f64;
        }
        if level_entries.len() <= out.level {
            level_entries.resize(out.level + 1, 0.0);
        }
        level_entries[out.level] += out.keys as f64;
        let z = |level: usize, n: f64| if level == 0 { 1.0 } else { n / level_entries[level].max(1.0) };
        solve_for(out, self.bpk, &kept, |f| z(f.level, f.entries as f64), z(out.level, out.keys as f64))
    }
}

/// Mnemosyne: the optimum for Merlin's estimated empty lookups per file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mnemosyne {
    /// Average bits per key.
    pub bpk: f64,
}

impl BpkAllocator for Mnemosyne {
    fn name(&self) -> &'static str {
        "mnemosyne"
    }
    fn decide(&self, out: &OutputContext<'_>) -> BpkDecision {
        if out.stats.lookups == 0 {
            return Monkey { bpk: self.bpk }.decide(out);
        }
        let kept = kept(out);
        solve_for(out, self.bpk, &kept, |f| f.estimate.z(), out.seed.merlin.z())
    }
}

/// The oracle: the optimum for the exact empty lookups of the running workload (benchmarks
/// only; the lower bound the others are measured against).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Optimal {
    /// Average bits per key.
    pub bpk: f64,
}

impl BpkAllocator for Optimal {
    fn name(&self) -> &'static str {
        "optimal"
    }
    fn decide(&self, out: &OutputContext<'_>) -> BpkDecision {
        let kept = kept(out);
        if kept.iter().all(|f| f.exact.q <= 0.0) && out.seed.exact.q <= 0.0 {
            return Monkey { bpk: self.bpk }.decide(out);
        }
        solve_for(out, self.bpk, &kept, |f| f.exact.z(), out.seed.exact.z())
    }
}

/// The tree's live files that stay after the job.
fn kept<'a>(out: &OutputContext<'a>) -> Vec<&'a FileStatsSnapshot> {
    out.stats
        .files
        .iter()
        .filter(|f| !out.replaced.contains(&f.number))
        .collect()
}

/// Solves the tree's allocation with the output added (`z` per kept file, `z_out` for the
/// output) and reads off the output's bits per key and the files to skip.
fn solve_for(
    out: &OutputContext<'_>,
    avg_bpk: f64,
    kept: &[&FileStatsSnapshot],
    z: impl Fn(&FileStatsSnapshot) -> f64,
    z_out: f64,
) -> BpkDecision {
    let mut files: Vec<SolverFile> = kept
        .iter()
        .map(|f| SolverFile {
            entries: f.entries as f64,
            empty: z(f),
        })
        .collect();
    files.push(SolverFile {
        entries: out.keys as f64,
        empty: z_out,
    });
    let a = sort_and_search(&files, avg_bpk, 1.0, out.decay);
    let skip = match a.c {
        Some(c) => kept
            .iter()
            .zip(&files)
            .filter(|(f, s)| f.bpk > 0.0 && s.entries > s.empty * (-c).exp())
            .map(|(f, _)| f.number)
            .collect(),
        None => kept.iter().filter(|f| f.bpk > 0.0).map(|f| f.number).collect(),
    };
    BpkDecision {
        bpk: a.bpk.last().copied().unwrap_or(0.0),
        skip,
        c: a.c,
    }
}

/// The filter units for `bpk` bits per key, named for `policy`.
pub fn filter_decision(policy: &str, bpk: f64) -> FilterDecision {
    let mut d = FilterDecision::uniform(bpk);
    d.policy = policy.to_string();
    d
}

/// One file as the bits-per-key solver sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SolverFile {
    /// Entries (n_i; what a filter over the file holds).
    pub entries: f64,
    /// Lookups for keys the file does not hold (z_i; the only probes a filter saves I/O on).
    pub empty: f64,
}

/// What the solver decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    /// Bits per key of each file, in input order (0: no filter).
    pub bpk: Vec<f64>,
    /// The multiplier C of the optimum (`ε_i = (n_i / z_i) · e^C` for filtered files); `None`
    /// when no file gets a filter. The read path's skip rule uses it: a file is not worth a
    /// filter probe when `n_i > z_i · e^(−C)`.
    pub c: Option<f64>,
}


/// Sort-and-search (Mnemosyne, Alg. 1): the bits per key of every file that minimize the
/// expected unnecessary data-block reads `Σ z_i · ε_i` under the memory `M = avg_bpk · Σ n_i`
/// (files with `z_i = 0` get no filter and their share goes to the others), with
/// `ε_i = e^(−β · bpk_i)`, `β = decay` (the paper's `(ln 2)²` for standard Bloom filters).
///
/// With `C = −(M·β + Σ n_i ln w_i) / Σ n_i` over the filtered files (`w_i = n_i / z_i`),
/// the file with the largest `w_i` is dropped while its bits per key `−(ln w_i + C)/β`
/// would be below `min_bpk`, recomputing C each time (Theorem 3.1: the dropped files are exactly
/// those with the smallest `z_i / n_i`). `min_bpk = 1` is the engine's rule (a filter of fewer
/// than 1 bit per key is no filter, as in RocksDB); `min_bpk = 0` is the paper's continuous
/// problem. The result is then rounded (`< 0.5` → 0, `[0.5, 1)` → 1) and, if rounding pushed the
/// average above `avg_bpk + 1`, scaled down to it. O(F log F).
pub fn sort_and_search(files: &[SolverFile], avg_bpk: f64, min_bpk: f64, decay: f64) -> Allocation {
    let (mut bpk, c) = solve(files, avg_bpk, min_bpk, decay);
    for b in &mut bpk {
        *b = if *b < 0.5 { 0.0 } else { b.max(1.0) };
    }
    let total: f64 = files.iter().map(|f| f.entries.max(0.0)).sum();
    let used: f64 = files.iter().zip(&bpk).map(|(f, b)| f.entries.max(0.0) * b).sum();
    if used > (avg_bpk + 1.0) * total {
        let scale = (avg_bpk + 1.0) * total / used;
        bpk.iter_mut().for_each(|b| *b *= scale);
    }
    Allocation { bpk, c }
}

/// The unrounded optimum and its multiplier (files without a filter get 0).
fn solve(files: &[SolverFile], avg_bpk: f64, min_bpk: f64, decay: f64) -> (Vec<f64>, Option<f64>) {
    let mut bpk = vec![0.0; files.len()];
    let total: f64 = files.iter().map(|f| f.entries.max(0.0)).sum();
    if avg_bpk <= 0.0 || total <= 0.0 {
        return (bpk, None);
    }
    let m = avg_bpk * total;
    // Active files, ascending w = n/z (i.e. descending z/n): the last ones are dropped first.
    let mut active: Vec<(f64, usize)> = files
        .iter()
        .enumerate()
        .filter(|(_, f)| f.empty > 0.0 && f.entries > 0.0)
        .map(|(i, f)| ((f.entries / f.empty).ln(), i))
        .collect();
    active.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut s1: f64 = active.iter().map(|&(_, i)| files[i].entries).sum();
    let mut s2: f64 = active.iter().map(|&(lw, i)| files[i].entries * lw).sum();
    let floor = -decay * min_bpk;
    let mut c = None;
    while let Some(&(lw, i)) = active.last() {
        let ci = -(m * decay + s2) / s1;
        if lw + ci > floor {
            s1 -= files[i].entries;
            s2 -= files[i].entries * lw;
            active.pop();
        } else {
            c = Some(ci);
            break;
        }
    }
    if let Some(cv) = c {
        for &(lw, i) in &active {
            bpk[i] = -(lw + cv) / decay;
        }
    }
    (bpk, c)
}

/// The expected unnecessary data-block reads of an allocation: `Σ z_i · e^(−β · bpk_i)`.
#[cfg(any(test, feature = "test-util"))]
pub fn expected_cost(files: &[SolverFile], bpk: &[f64], decay: f64) -> f64 {
    files
        .iter()
        .zip(bpk)
        .map(|(f, &b)| f.empty * (-decay * b).exp())
        .sum()
}

#[cfg(test)]
mod solver_tests {
    use super::*;
    use crate::filter::bloom::{LN2_SQ, LOCAL_DECAY};
    use crate::testutil::{run_file, Case};
    use rand::{Rng, SeedableRng};

    /// The continuous optimum found independently: bisection on the multiplier C until the
    /// memory `Σ n_i · max(0, −(ln w_i + C)/β)` equals M (it falls as C grows).
    fn reference(files: &[SolverFile], avg_bpk: f64, decay: f64) -> Vec<f64> {
        let m: f64 = avg_bpk * files.iter().map(|f| f.entries).sum::<f64>();
        let bpk_at = |c: f64| -> Vec<f64> {
            files
                .iter()
                .map(|f| {
                    if f.empty <= 0.0 {
                        0.0
                    } else {
                        (-((f.entries / f.empty).ln() + c) / decay).max(0.0)
                    }
                })
                .collect()
        };
        let memory = |c: f64| -> f64 { files.iter().zip(bpk_at(c)).map(|(f, b)| f.entries * b).sum() };
        let (mut lo, mut hi) = (-1e3, 1e3);
        for _ in 0..400 {
            let mid = (lo + hi) / 2.0;
            if memory(mid) > m {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        bpk_at((lo + hi) / 2.0)
    }

    #[test]
    fn matches_the_continuous_optimum_on_random_instances() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for round in 0..300 {
            let n = rng.gen_range(1..200);
            let files: Vec<SolverFile> = (0..n)
                .map(|_| SolverFile {
                    entries: rng.gen_range(1.0..1e6),
                    // A tenth of the files get no empty lookups; the rest a skewed share.
                    empty: if rng.gen_bool(0.1) { 0.0 } else { rng.gen_range(0.0f64..1.0).powi(4) * 1e6 },
                })
                .collect();
            let avg = [0.5, 1.0, 2.0, 4.0, 10.0][round % 5];
            let decay = if round % 2 == 0 { LN2_SQ } else { LOCAL_DECAY };
            let (raw, c) = solve(&files, avg, 0.0, decay);
            let r = reference(&files, avg, decay);
            let (a, b) = (expected_cost(&files, &raw, decay), expected_cost(&files, &r, decay));
            assert!((a - b).abs() <= 1e-6 * b.max(1e-12), "round {round}: {a} vs {b}");
            // Memory used equals the budget.
            let used: f64 = files.iter().zip(&raw).map(|(f, b)| f.entries * b).sum();
            let budget: f64 = avg * files.iter().map(|f| f.entries).sum::<f64>();
            if c.is_some() {
                assert!((used - budget).abs() <= 1e-6 * budget, "round {round}: used {used} of {budget}");
            }
        }
    }

    /// `solve bpk= [min=] [decay=]` with one line per file `n z`: each file's bits per key and C.
    #[test]
    fn solver_cases() {
        run_file("tuning/bpk_solver.txt", |c: &Case| match c.command.as_str() {
            "solve" => {
                let files: Vec<SolverFile> = c
                    .input
                    .iter()
                    .map(|l| {
                        let mut it = l.split_whitespace().map(crate::testutil::num::<f64>);
                        SolverFile {
                            entries: it.next().unwrap_or(0.0),
                            empty: it.next().unwrap_or(0.0),
                        }
                    })
                    .collect();
                let decay = c.arg("decay", LN2_SQ);
                let a = sort_and_search(&files, c.arg("bpk", 10.0), c.arg("min", 1.0), decay);
                let mut out: Vec<String> = a.bpk.iter().map(|b| format!("{b:.3}")).collect();
                out.push(match a.c {
                    Some(cv) => format!("C {cv:.4}, cost {:.6}", expected_cost(&files, &a.bpk, decay)),
                    None => "no filters".into(),
                });
                out.join("\n")
            }
            _ => c.unknown(),
        });
    }
}

#[cfg(test)]
mod allocator_tests {
    use super::*;
    use crate::filter::bloom::LN2_SQ;
    use crate::stats::{Estimate, FileStatsSnapshot};
    use crate::testutil::{run_file, Case};

    /// `decide policy=P bpk=B level=L keys=N [seed=Q/X] [exact_seed=Q/X] [replace=n,n]` with one
    /// line per live file: `number level entries bpk q x [exact_q exact_x]` (Merlin's estimate,
    /// then the exact counts; the exact ones default to the estimate).
    fn context(c: &Case) -> (StatsSnapshot, Vec<FileNumber>, Seed) {
        let num = |s: &str| crate::testutil::num::<f64>(s);
        let files = c
            .input
            .iter()
            .map(|l| {
                let v: Vec<f64> = l.split_whitespace().map(num).collect();
                let e = Estimate { q: v[4], x: v[5] };
                FileStatsSnapshot {
                    number: FileNumber(v[0] as u64),
                    tree: 0,
                    level: v[1] as usize,
                    entries: v[2] as u64,
                    probes: 0,
                    filter_negatives: 0,
                    found: 0,
                    data_reads: 0,
                    segment_probes: Vec::new(),
                    bpk: v[3],
                    estimate: e,
                    exact: if v.len() >= 8 { Estimate { q: v[6], x: v[7] } } else { e },
                    range_probes: 0,
                    range_empty: 0.0,
                    loaded_units: 0,
                }
            })
            .collect();
        let pair = |key: &str| {
            c.get(key).map_or(Estimate::default(), |s| {
                let (q, x) = s.split_once('/').unwrap_or((s, "0"));
                Estimate { q: num(q), x: num(x) }
            })
        };
        let replaced = c
            .get("replace")
            .map(|s| s.split(',').map(|n| FileNumber(n.parse().expect("replace: file numbers"))).collect())
            .unwrap_or_default();
        let seed = Seed {
            merlin: pair("seed"),
            exact: c.get("exact_seed").map_or(pair("seed"), |_| pair("exact_seed")),
            range_empty: 0.0,
        };
        (StatsSnapshot { files, lookups: c.arg("lookups", 1000) }, replaced, seed)
    }

    #[test]
    fn allocator_cases() {
        run_file("tuning/bpk_allocators.txt", |c| {
            let (stats, replaced, seed) = context(c);
            let bpk = c.arg("bpk", 10.0);
            let a: Box<dyn BpkAllocator> = match c.arg("policy", String::from("uniform")).as_str() {
                "monkey" => Box::new(Monkey { bpk }),
                "mnemosyne" => Box::new(Mnemosyne { bpk }),
                "optimal" => Box::new(Optimal { bpk }),
                _ => Box::new(Uniform { bpk }),
            };
            let d = a.decide(&OutputContext {
                level: c.arg("level", 0),
                keys: c.arg("keys", 0),
                stats: &stats,
                replaced: &replaced,
                seed,
                decay: c.arg("decay", LN2_SQ),
            });
            let skip: Vec<u64> = d.skip.iter().map(|n| n.0).collect();
            format!(
                "{} output bpk {:.2}, skip {skip:?}{}",
                a.name(),
                d.bpk,
                d.c.map_or(String::new(), |c| format!(", C {c:.3}"))
            )
        });
    }
}

/// The kind of a [`FilterPolicy`](crate::FilterPolicy), as OPTIONS names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BpkPolicy {
    /// The same bits per key for every file (RocksDB's way).
    Uniform,
    /// Monkey: fewer bits per key in larger levels, optimal for empty lookups spread evenly.
    Monkey,
    /// Mnemosyne: per file, from the lookups Merlin estimates each file receives.
    Mnemosyne,
    /// An oracle for benchmarks: Mnemosyne's optimum for the exact per-file counts.
    Optimal,
    /// ElasticBF: filter units on disk, loaded by each segment's hotness at run time.
    Elastic,
    /// Elastic units loaded by Mnemosyne's optimum over segments.
    MnemosyneElastic,
}

impl BpkPolicy {
    /// Whether filter units are loaded and unloaded at run time (ElasticBF).
    pub fn is_elastic(self) -> bool {
        matches!(self, BpkPolicy::Elastic | BpkPolicy::MnemosyneElastic)
    }
}
