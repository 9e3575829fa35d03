//! How a table's range-filter bits are spread over Rosetta's levels (`filter/rosetta.rs`), from
//! the sizes of the range queries the tree has served.
//!
//! * **Weights.** For a query of `R` projection values the paper's Eq. 1–2 give how often a node
//!   at height `r` is probed: `g(r) = Σ_{x=r..⌊log R⌋} g₁(x)`, where `g₁(x) = 1` below `⌊log R⌋`
//!   and `(R − 2^⌊log R⌋ + 1) / 2^⌊log R⌋` at it. A sampled size histogram (bucket `b` holds
//!   sizes in `(2^(b−1), 2^b]`, counted at `2^b`) sums these per bucket.
//! * **Bits.** Minimise `Σ_r g(r)·ε_r` with `ε_r = e^{−(ln 2)²·M_r/n_r}` (`n_r` distinct prefixes
//!   at height `r`) subject to `Σ M_r = M`: the Lagrangian gives `ε_r = min(1, λ·n_r/g(r))`,
//!   Eq. 3 with the real prefix counts instead of the paper's `n` at every height. `λ` is found
//!   by bisection; a height left with under one bit per prefix is dropped and the rest
//!   re-solved (it would pass most probes and cost a probe each).
//! * **Single level.** When at least 99% of the sampled queries span ≤ 16 values (≤ 4 heights
//!   probed), all bits go to height 0: the best FPR for short ranges, at one probe per value
//!   (the paper's §2.4 hybrid).
//! * **Default** (no samples yet): single level. Short ranges are the case the filter exists
//!   for, and a single level still answers ranges up to the probe budget (100 values).

use crate::filter::rosetta::HEIGHTS;

/// Size-histogram buckets: bucket `b` counts queries spanning `(2^(b−1), 2^b]` projection
/// values (bucket 0: one value).
pub const SIZE_BUCKETS: usize = HEIGHTS + 1;

/// The bucket of a query over projections `[a, b]`.
#[inline]
pub fn size_bucket(a: u64, b: u64) -> usize {
    let width = b.saturating_sub(a);
    64 - width.leading_zeros() as usize
}

/// Share of sampled queries that must span ≤ 16 values for the single-level layout.
const SINGLE_LEVEL_SHARE: f64 = 0.99;
/// Largest bucket the single-level layout serves (16 values).
const SINGLE_LEVEL_BUCKET: usize = 4;

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

/// Spreads `total_bits` over the heights, given `prefixes[h]` (distinct prefixes at height `h`)
/// and the sampled size histogram (`None` or all zero: the default).
pub fn plan(total_bits: f64, prefixes: &[u64; HEIGHTS], sizes: Option<&[u64; SIZE_BUCKETS]>) -> RangePlan {
    if total_bits < 1.0 || prefixes[0] == 0 {
        return RangePlan { levels: Vec::new() };
    }
    let sampled: u64 = sizes.map_or(0, |s| s.iter().sum());
    let short: u64 = sizes.map_or(0, |s| s[..=SINGLE_LEVEL_BUCKET].iter().sum());
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
    for h in 0..HEIGHTS {
        if prefixes[h] == 0 {
            w[h] = 0.0;
        }
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
        let spec = c.args.get("sizes")?;
        let mut s = [0u64; SIZE_BUCKETS];
        for part in spec.split(',').filter(|p| !p.is_empty()) {
            let (r, n) = part.split_once(':').unwrap_or((part, "1"));
            let r: u64 = r.parse().unwrap_or(1);
            s[size_bucket(0, r.max(1) - 1)] += n.parse::<u64>().unwrap_or(0);
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
                let p = plan(bpk * keys as f64, &n, sizes(c).as_ref());
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
            other => format!("unknown command {other}"),
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
