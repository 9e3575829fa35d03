//! How a table's range-filter bits are spread over Rosetta's levels (`filter/rosetta.rs`), from
//! the sizes of the range queries the tree has served.
//!
//! * **Single level** (the default, and whenever ≥ 99% of the sampled queries span few enough
//!   values for the probe budget to test each one: a bucket whose smallest size is within the
//!   budget): every bit goes to height 0. Measured (`range_filter_fpr`), this is far better
//!   than the paper's per-level allocation for short ranges: at 22 bits per key, R = 16 and 64
//!   had no false positive in 2,000 empty ranges, against 5–13% for Eq. 3 — a range is
//!   empty only when every path down to height 0 dies, so each intervals' last probe is at
//!   height 0 with only the bits height 0 got. The paper's own Fig. 4 shows the same ordering;
//!   it spreads bits to save probes (CPU), which the budget bounds here.
//! * **Several levels**, for longer ranges, which one level cannot settle within the budget:
//!   the paper's Eq. 1–2 give how often a node at height `r` is probed for a query of `R`
//!   values, `g(r) = Σ_{x=r..⌊log R⌋} g₁(x)` with `g₁(x) = 1` below `⌊log R⌋` and
//!   `(R − 2^⌊log R⌋ + 1) / 2^⌊log R⌋` at it, summed over the sampled histogram (bucket `b`
//!   holds sizes in `(2^(b−1), 2^b]`, counted at `2^b`); then the variable-level weights of
//!   §2.4 (ii), `w(r) = Σ_{r' ≥ r} g(r')`, which shift bits down (measured: FPR 9% instead of
//!   13% at R = 64, 22 bits per key, against Eq. 3's plain `g`). Bits minimise `Σ_r w(r)·ε_r`
//!   with `ε_r = e^{−(ln 2)²·M_r/n_r}` (`n_r` distinct prefixes at height `r`) under
//!   `Σ M_r = M`: `ε_r = min(1, λ·n_r/w(r))`, Eq. 3 with the real prefix counts instead of the
//!   paper's `n` at every height; `λ` by bisection; a height left with under one bit per prefix
//!   is dropped and the rest re-solved.

use crate::filter::rosetta::HEIGHTS;

use crate::filter::rosetta::SIZE_BUCKETS;

/// Share of sampled queries the single-level layout must be able to settle.
const SINGLE_LEVEL_SHARE: f64 = 0.99;

/// The paper's per-height probe weights for one query of `r` values (Eq. 1–2).
pub fn paper_weights(r: f64) -> [f64; HEIGHTS] {
    let mut g = [0.0; HEIGHTS];
    let top = (r.max(1.0).log2().floor() as usize).min(HEIGHTS - 1);
    let p = 2f64.powi(top as i32);
    let mut acc = 0.0;
    for x in (0..=top).rev() {
        acc += if x == top { (r - p + 1.0) / p } else { 1.0 };
        g[x] = acc;
    }
    g
}

/// A table's range-filter layout.
#[derive(Debug, Clone, PartialEq)]
pub struct RangePlan {
    /// `(height, total bits)` of each stored level, lowest height first.
    pub levels: Vec<(usize, f64)>,
}

/// What `RangeBuilder::finish` lays a table's levels out by once it knows its prefixes:
/// [`plan`] of `total_bits` for the tree's sampled `sizes` and the probe budget (a flush's,
/// a compaction's and a run-time build's alike).
pub fn planner(
    total_bits: f64,
    sizes: Option<&[u64; SIZE_BUCKETS]>,
    probe_budget: u32,
) -> impl FnOnce(&[u64; HEIGHTS]) -> Vec<(usize, f64)> + '_ {
    move |prefixes| plan(total_bits, prefixes, sizes, probe_budget).levels
}

/// Spreads `total_bits` over the heights, given `prefixes[h]` (distinct prefixes at height `h`),
/// the sampled size histogram (`None` or all zero: the default) and the probe budget of a
/// query (what one level can settle: one probe per value).
pub fn plan(
    total_bits: f64,
    prefixes: &[u64; HEIGHTS],
    sizes: Option<&[u64; SIZE_BUCKETS]>,
    probe_budget: u32,
) -> RangePlan {
    if total_bits < 1.0 || prefixes[0] == 0 {
        return RangePlan { levels: Vec::new() };
    }
    let sampled: u64 = sizes.map_or(0, |s| s.iter().sum());
    // Buckets whose smallest size, 2^(b−1) + 1 values, the budget can still probe one by one.
    let settled = |b: usize| b == 0 || (1u128 << (b - 1)) < u128::from(probe_budget);
    let short: u64 = sizes.map_or(0, |s| s.iter().enumerate().filter(|(b, _)| settled(*b)).map(|(_, n)| n).sum());
    if sampled == 0 || short as f64 >= SINGLE_LEVEL_SHARE * sampled as f64 {
        return RangePlan {
            levels: vec![(0, total_bits)],
        };
    }
    let mut w = [0.0; HEIGHTS];
    if let Some(s) = sizes {
        for (b, &count) in s.iter().enumerate() {
            if count > 0 {
                let g = paper_weights(2f64.powi(b.min(63) as i32));
                for h in 0..HEIGHTS {
                    w[h] += count as f64 * g[h];
                }
            }
        }
    }
    // §2.4 (ii): each height also carries the weight of every height above it.
    let mut above = 0.0;
    for h in (0..HEIGHTS).rev() {
        above += w[h];
        w[h] = if w[h] > 0.0 && prefixes[h] > 0 { above } else { 0.0 };
    }
    loop {
        let bits = solve(total_bits, prefixes, &w);
        // Drop heights left with under a bit per prefix and solve again without them.
        let thin: Vec<usize> = (0..HEIGHTS)
            .filter(|&h| w[h] > 0.0 && bits[h] < prefixes[h] as f64)
            .collect();
        if thin.is_empty() || thin.len() == w.iter().filter(|&&x| x > 0.0).count() {
            let levels = (0..HEIGHTS)
                .filter(|&h| bits[h] >= prefixes[h] as f64 && bits[h] > 0.0)
                .map(|h| (h, bits[h]))
                .collect::<Vec<_>>();
            if levels.is_empty() {
                return RangePlan {
                    levels: vec![(0, total_bits)],
                };
            }
            return RangePlan { levels };
        }
        for h in thin {
            w[h] = 0.0;
        }
    }
}

/// Bits per height minimising `Σ w_h·e^{−c·M_h/n_h}` under `Σ M_h = total`.
fn solve(total: f64, n: &[u64; HEIGHTS], w: &[f64; HEIGHTS]) -> [f64; HEIGHTS] {
    let c = std::f64::consts::LN_2.powi(2);
    let bits_at = |ln_lambda: f64| -> [f64; HEIGHTS] {
        let mut m = [0.0; HEIGHTS];
        for h in 0..HEIGHTS {
            if w[h] > 0.0 {
                let nh = n[h] as f64;
                // ε_h = λ·n_h/w_h, so M_h = n_h/c · ln(w_h/(λ·n_h)) when that is positive.
                let ln_inv_eps = w[h].ln() - ln_lambda - nh.ln();
                m[h] = (nh / c * ln_inv_eps).max(0.0);
            }
        }
        m
    };
    let sum = |m: &[f64; HEIGHTS]| m.iter().sum::<f64>();
    // ln λ between a point where nothing gets bits and one where far more than `total` does.
    let (mut lo, mut hi) = (-2000.0f64, 200.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if sum(&bits_at(mid)) > total {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let mut m = bits_at(hi);
    // Scale the last rounding error away so the plan spends exactly `total`.
    let s = sum(&m);
    if s > 0.0 {
        for x in &mut m {
            *x *= total / s;
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use crate::filter::rosetta::size_bucket;
    use super::*;
    use crate::testutil::{run_file, Case};

    fn prefixes(c: &Case) -> [u64; HEIGHTS] {
        let keys: u64 = c.arg("keys", 1_000_000);
        // `stride=S`: keys every S projection values, so heights below log2 S keep every key
        // distinct and each height above halves them.
        let stride: u64 = c.arg("stride", 1);
        let mut p = [0u64; HEIGHTS];
        for (h, x) in p.iter_mut().enumerate() {
            let span = 1u128 << h;
            *x = if span <= u128::from(stride) {
                keys
            } else {
                ((u128::from(keys) * u128::from(stride)).div_ceil(span) as u64).max(1)
            };
        }
        p
    }

    /// `sizes=R:count,...` (R in values).
    fn sizes(c: &Case) -> Option<[u64; SIZE_BUCKETS]> {
        let spec = c.get("sizes")?;
        let mut s = [0u64; SIZE_BUCKETS];
        for part in spec.split(',').filter(|p| !p.is_empty()) {
            let (r, n) = part.split_once(':').unwrap_or((part, "1"));
            let r: u64 = crate::testutil::num(r);
            s[size_bucket(0, r.max(1) - 1)] += crate::testutil::num::<u64>(n);
        }
        Some(s)
    }

    #[test]
    fn data_driven() {
        run_file("tuning/rosetta.txt", |c| match c.command.as_str() {
            "plan" => {
                let keys: u64 = c.arg("keys", 1_000_000);
                let bpk: f64 = c.arg("bpk", 22.0);
                let n = prefixes(c);
                let p = plan(bpk * keys as f64, &n, sizes(c).as_ref(), c.arg("budget", 100));
                let total: f64 = p.levels.iter().map(|l| l.1).sum();
                let mut out: Vec<String> = p
                    .levels
                    .iter()
                    .map(|&(h, bits)| {
                        let bpp = bits / n[h] as f64;
                        format!(
                            "h{h}: {bpp:.2} bits/prefix, fpr {:.2e}",
                            (-(std::f64::consts::LN_2.powi(2)) * bpp).exp()
                        )
                    })
                    .collect();
                out.push(format!("total {:.2} bits/key", total / keys as f64));
                out.join("\n")
            }
            "weights" => {
                let r: f64 = c.arg("r", 16.0);
                let g = paper_weights(r);
                (0..HEIGHTS)
                    .filter(|&h| g[h] > 0.0)
                    .map(|h| format!("g({h}) = {:.4}", g[h]))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            _ => c.unknown(),
        });
    }

    #[test]
    fn buckets() {
        assert_eq!(size_bucket(5, 5), 0);
        assert_eq!(size_bucket(5, 6), 1);
        assert_eq!(size_bucket(0, 3), 2);
        assert_eq!(size_bucket(0, 15), 4);
        assert_eq!(size_bucket(0, 16), 5);
        assert_eq!(size_bucket(0, u64::MAX), 64);
    }
}
