//! Which keys a db_bench phase touches: db_bench's key encoding, `--key_dist`, and absent keys
//! that sort between existing ones (`--empty_ratio`).

use crate::ycsb::{fnv_hash64, Zipfian};
use rand::Rng;
use std::sync::atomic::{AtomicBool, Ordering};

/// `--key_format=string`: keys are `user:` and the number in decimal, zero-padded to
/// `key_size` (string keys of equal length that sort like their numbers).
static STRING_KEYS: AtomicBool = AtomicBool::new(false);

/// `user:` and `v` in decimal, zero-padded to `key_size` bytes in all (digits beyond the width
/// are cut from the front, as a fixed-width column would).
pub fn string_key(v: u64, key_size: usize, out: &mut Vec<u8>) {
    let digits = key_size.saturating_sub(STRING_PREFIX.len()).max(1);
    out.clear();
    out.extend_from_slice(STRING_PREFIX);
    out.resize(STRING_PREFIX.len() + digits, b'0');
    let mut rest = v;
    for d in out[STRING_PREFIX.len()..].iter_mut().rev() {
        *d = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
}

/// Selects string keys for every later [`db_bench_key`] (set once, at start-up).
pub fn use_string_keys(on: bool) {
    STRING_KEYS.store(on, Ordering::Relaxed);
}

const STRING_PREFIX: &[u8] = b"user:";

/// db_bench's key encoding: the 8-byte big-endian integer, then `'0'` padding up to
/// `key_size` (shorter sizes keep the high-order bytes' prefix, as db_bench does).
pub fn db_bench_key(v: u64, key_size: usize, out: &mut Vec<u8>) {
    out.clear();
    if STRING_KEYS.load(Ordering::Relaxed) {
        string_key(v, key_size, out);
        return;
    }
    let n = key_size.min(8);
    for i in 0..n {
        out.push((v >> ((n - i - 1) * 8)) as u8);
    }
    out.resize(key_size, b'0');
}

/// A key no db_bench fill writes that sorts right after key `v` and before key `v + 1`: the
/// last padding byte becomes `'1'` (keys of 8 bytes or less get one more byte instead). Fence
/// pointers cannot rule it out; only a filter can.
pub fn absent_key(v: u64, key_size: usize, out: &mut Vec<u8>) {
    db_bench_key(v, key_size, out);
    if STRING_KEYS.load(Ordering::Relaxed) {
        out.push(b'!');
        return;
    }
    match out.last_mut() {
        Some(b) if key_size > 8 => *b = b'1',
        _ => out.push(b'1'),
    }
}

/// `--key_dist`: how key numbers in `[0, num)` are drawn.
#[derive(Debug, Clone)]
pub enum KeyDist {
    /// Every key equally likely.
    Uniform,
    /// Scrambled Zipfian with constant θ: popular keys spread over the key space.
    Zipf(Zipfian),
    /// Zipfian with constant θ over key numbers in rank order: the popular keys are the lowest
    /// numbers, one contiguous part of the key space (a hot range).
    ZipfRange(Zipfian),
    /// Normal around the middle of the key space with σ as a fraction of `num`.
    Normal(f64),
    /// Zipfian over the highest key numbers (the newest under fillseq).
    Latest(Zipfian),
}

impl KeyDist {
    /// Parses `uniform`, `zipf:θ`, `zipfrange:θ`, `normal:σ` or `latest` (θ defaults to 0.99,
    /// σ to 0.1).
    pub fn parse(s: &str, num: u64) -> Result<Self, String> {
        let (name, param) = match s.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (s, None),
        };
        let num_param = |default: f64| -> Result<f64, String> {
            param.map_or(Ok(default), |p| {
                p.parse::<f64>()
                    .map_err(|_| format!("--key_dist={s}: {p} is not a number"))
            })
        };
        match name {
            "uniform" => Ok(KeyDist::Uniform),
            "zipf" | "zipfrange" => {
                let theta = num_param(0.99)?;
                if !(theta > 0.0 && theta < 1.0) {
                    return Err(format!("--key_dist={s}: θ must be in (0, 1)"));
                }
                let z = Zipfian::new(num, theta);
                Ok(if name == "zipf" {
                    KeyDist::Zipf(z)
                } else {
                    KeyDist::ZipfRange(z)
                })
            }
            "normal" => {
                let sigma = num_param(0.1)?;
                if sigma.is_nan() || sigma <= 0.0 {
                    return Err(format!("--key_dist={s}: σ must be positive"));
                }
                Ok(KeyDist::Normal(sigma))
            }
            "latest" => Ok(KeyDist::Latest(Zipfian::new(num, num_param(0.99)?))),
            _ => Err(format!(
                "--key_dist={s}: expected uniform, zipf:θ, zipfrange:θ, normal:σ or latest"
            )),
        }
    }

    /// A key number in `[0, num)`.
    pub fn next(&self, num: u64, rng: &mut impl Rng) -> u64 {
        let num = num.max(1);
        match self {
            KeyDist::Uniform => rng.gen_range(0..num),
            KeyDist::Zipf(z) => fnv_hash64(z.next(rng)) % num,
            KeyDist::ZipfRange(z) => z.next(rng).min(num - 1),
            KeyDist::Latest(z) => num - 1 - z.next(rng).min(num - 1),
            KeyDist::Normal(sigma) => loop {
                // Box–Muller; redraw the rare samples that fall outside the key space.
                let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
                let u2: f64 = rng.gen();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                let x = num as f64 / 2.0 + z * sigma * num as f64;
                if x >= 0.0 && x < num as f64 {
                    break x as u64;
                }
            },
        }
    }
}

/// Which tree an operation goes to over `n` trees (`--num_trees`, `--tree_skew X-Y`: X% of
/// the operations go to the first Y% of the trees, uniformly within each group; the paper's
/// hotspot distribution).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeChoice {
    /// Trees.
    pub n: usize,
    /// (share of operations to the hot trees, hot trees).
    skew: Option<(f64, usize)>,
}

impl TreeChoice {
    /// `n` trees, uniform or under `skew` (`X-Y`).
    pub fn new(n: usize, skew: Option<&str>) -> Result<Self, String> {
        let n = n.max(1);
        let Some(s) = skew else {
            return Ok(TreeChoice { n, skew: None });
        };
        let bad = || format!("--tree_skew={s}: expected X-Y with X, Y in [0, 100], e.g. 80-20, and --num_trees ≥ 2");
        let (x, y) = s.split_once('-').ok_or_else(bad)?;
        let (x, y): (f64, f64) = (x.parse().map_err(|_| bad())?, y.parse().map_err(|_| bad())?);
        if !(0.0..=100.0).contains(&x) || !(0.0..=100.0).contains(&y) || n < 2 {
            return Err(bad());
        }
        let hot = ((n as f64 * y / 100.0).round() as usize).clamp(1, n - 1);
        Ok(TreeChoice {
            n,
            skew: Some((x / 100.0, hot)),
        })
    }

    /// The tree of the next operation.
    pub fn pick(&self, rng: &mut impl rand::Rng) -> usize {
        match self.skew {
            _ if self.n == 1 => 0,
            Some((share, hot)) if rng.gen_bool(share) => rng.gen_range(0..hot),
            Some((_, hot)) => rng.gen_range(hot..self.n),
            None => rng.gen_range(0..self.n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn keys_match_db_bench_and_absent_keys_sort_between() {
        let mut k = Vec::new();
        db_bench_key(0x0102, 16, &mut k);
        assert_eq!(k, b"\0\0\0\0\0\0\x01\x0200000000");
        db_bench_key(5, 4, &mut k);
        assert_eq!(k, &[0, 0, 0, 5]);
        let (mut lo, mut mid, mut hi) = (Vec::new(), Vec::new(), Vec::new());
        for ks in [4, 8, 16] {
            db_bench_key(41, ks, &mut lo);
            absent_key(41, ks, &mut mid);
            db_bench_key(42, ks, &mut hi);
            assert!(lo < mid && mid < hi, "key size {ks}");
        }
    }

    #[test]
    fn string_keys_sort_like_their_numbers() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        string_key(1234, 16, &mut a);
        assert_eq!(a, b"user:00000001234");
        for (x, y) in [(9u64, 10u64), (999, 1000), (4_000_000_000, 4_000_001_024)] {
            string_key(x, 16, &mut a);
            string_key(y, 16, &mut b);
            assert!(a < b && a.len() == 16 && b.len() == 16, "{x} {y}");
        }
    }

    #[test]
    fn distributions_stay_in_range_and_have_their_shape() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let n = 10_000u64;
        for spec in ["uniform", "zipf:0.9", "zipfrange:0.9", "normal:0.05", "latest"] {
            let d = KeyDist::parse(spec, n).unwrap();
            let draws: Vec<u64> = (0..20_000).map(|_| d.next(n, &mut rng)).collect();
            assert!(draws.iter().all(|&k| k < n), "{spec}");
            let near_middle = draws.iter().filter(|&&k| (4_000..6_000).contains(&k)).count();
            let top = draws.iter().filter(|&&k| k >= n - 100).count();
            match spec {
                "uniform" => assert!((3_600..4_400).contains(&near_middle), "{spec} {near_middle}"),
                // ±1σ = ±500 keys holds ~68% of the draws.
                "normal:0.05" => assert!(near_middle > 19_000, "{spec} {near_middle}"),
                "latest" => assert!(top > 8_000, "{spec} {top}"),
                // The popular keys are the lowest numbers.
                "zipfrange:0.9" => {
                    let low = draws.iter().filter(|&&k| k < 100).count();
                    assert!(low > 8_000, "{spec} {low}");
                }
                _ => {
                    let mut counts = std::collections::HashMap::new();
                    for k in &draws {
                        *counts.entry(*k).or_insert(0u32) += 1;
                    }
                    let max = counts.values().max().copied().unwrap_or(0);
                    assert!(max > 500, "zipf's hottest key drew {max}");
                }
            }
        }
        assert!(KeyDist::parse("zipf:1.5", n).is_err());
        assert!(KeyDist::parse("pareto", n).is_err());
    }

    #[test]
    fn tree_choice_follows_the_skew() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let c = TreeChoice::new(10, Some("80-20")).unwrap();
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[c.pick(&mut rng)] += 1;
        }
        let hot = counts[0] + counts[1];
        assert!((79_000..81_000).contains(&hot), "{counts:?}");
        assert!(counts[2..].iter().all(|&n| (2_200..2_800).contains(&n)), "{counts:?}");
        assert_eq!(TreeChoice::new(1, None).unwrap().pick(&mut rng), 0);
        for bad in ["80", "80-x", "120-20"] {
            assert!(TreeChoice::new(10, Some(bad)).is_err(), "{bad}");
        }
        assert!(TreeChoice::new(1, Some("80-20")).is_err());
    }
}
