//! YCSB's workload model: property files, key naming, request distributions, operation mix.
//!
//! Follows the YCSB core workload's documented behaviour: keys are `user` + FNV-64 hash of the
//! key number; `zipfian` requests are scrambled (a Zipfian rank hashed over the key space),
//! `latest` is Zipfian over recency, `uniform` is uniform. One difference: our scrambled
//! Zipfian draws ranks over the record count itself rather than YCSB's fixed 10^10 items (the
//! skew is the same; hot keys land on different key numbers).

use rand::Rng;
use std::collections::BTreeMap;

/// Workload properties (`key=value` lines; `#` comments).
#[derive(Debug, Clone, Default)]
pub struct Properties(pub BTreeMap<String, String>);

impl Properties {
    /// Parses a property file's text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut m = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| format!("line {}: expected key=value", i + 1))?;
            m.insert(k.trim().to_string(), v.trim().to_string());
        }
        Ok(Properties(m))
    }

    /// A property parsed as `T`, or `default`.
    pub fn get<T: std::str::FromStr>(&self, key: &str, default: T) -> Result<T, String> {
        match self.0.get(key) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| format!("property {key}={v} is not valid")),
        }
    }

    /// A string property, or `default`.
    pub fn string(&self, key: &str, default: &str) -> String {
        self.0.get(key).cloned().unwrap_or_else(|| default.to_string())
    }
}

/// YCSB's 64-bit FNV hash of a key number.
pub fn fnv_hash64(mut v: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for _ in 0..8 {
        h ^= v & 0xff;
        h = h.wrapping_mul(1_099_511_628_211);
        v >>= 8;
    }
    (h as i64).unsigned_abs()
}

/// The key of record `keynum`.
pub fn key_name(keynum: u64) -> String {
    format!("user{}", fnv_hash64(keynum))
}

/// Zipfian ranks in `[0, n)` (Gray et al., as in YCSB), with the item count allowed to grow.
#[derive(Debug, Clone)]
pub struct Zipfian {
    theta: f64,
    alpha: f64,
    zeta2: f64,
    n: u64,
    zetan: f64,
    eta: f64,
}

fn zeta(from: u64, to: u64, theta: f64, start: f64) -> f64 {
    (from..to).fold(start, |z, i| z + 1.0 / ((i + 1) as f64).powf(theta))
}

impl Zipfian {
    /// Ranks over `n ≥ 1` items with constant `theta` (YCSB default 0.99).
    pub fn new(n: u64, theta: f64) -> Self {
        let n = n.max(1);
        let zeta2 = zeta(0, 2, theta, 0.0);
        let zetan = zeta(0, n, theta, 0.0);
        let mut z = Zipfian {
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2,
            n,
            zetan,
            eta: 0.0,
        };
        z.eta = z.eta_for();
        z
    }

    fn eta_for(&self) -> f64 {
        (1.0 - (2.0 / self.n as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan)
    }

    /// Grows the item count (incremental zeta, as YCSB does for `latest`).
    pub fn grow(&mut self, n: u64) {
        if n > self.n {
            self.zetan = zeta(self.n, n, self.theta, self.zetan);
            self.n = n;
            self.eta = self.eta_for();
        }
    }

    /// A rank: 0 is the most popular.
    pub fn next(&self, rng: &mut impl Rng) -> u64 {
        let u: f64 = rng.gen();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.n - 1);
        }
        ((self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64).min(self.n - 1)
    }
}

/// How requests choose records.
#[derive(Debug, Clone)]
pub enum Distribution {
    /// Uniform over the records.
    Uniform,
    /// Scrambled Zipfian over the records.
    Zipfian(Zipfian),
    /// Zipfian over recency: the newest record is the most popular.
    Latest(Zipfian),
}

impl Distribution {
    /// From `requestdistribution` and `zipfianconstant`.
    pub fn new(name: &str, records: u64, theta: f64) -> Result<Self, String> {
        match name {
            "uniform" => Ok(Distribution::Uniform),
            "zipfian" => Ok(Distribution::Zipfian(Zipfian::new(records, theta))),
            "latest" => Ok(Distribution::Latest(Zipfian::new(records, theta))),
            other => Err(format!(
                "requestdistribution={other} is not supported (uniform, zipfian, latest)"
            )),
        }
    }

    /// A record number among the `records` inserted so far.
    pub fn next(&mut self, records: u64, rng: &mut impl Rng) -> u64 {
        let records = records.max(1);
        match self {
            Distribution::Uniform => rng.gen_range(0..records),
            Distribution::Zipfian(z) => fnv_hash64(z.next(rng)) % records,
            Distribution::Latest(z) => {
                z.grow(records);
                records - 1 - z.next(rng).min(records - 1)
            }
        }
    }
}

/// Operation kinds of the core workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    /// Read one record.
    Read,
    /// Overwrite one record.
    Update,
    /// Insert a new record.
    Insert,
    /// Scan from a record.
    Scan,
    /// Read then write back one record.
    ReadModifyWrite,
}

impl Op {
    /// YCSB's report label.
    pub fn label(self) -> &'static str {
        match self {
            Op::Read => "READ",
            Op::Update => "UPDATE",
            Op::Insert => "INSERT",
            Op::Scan => "SCAN",
            Op::ReadModifyWrite => "READ-MODIFY-WRITE",
        }
    }
}

/// The operation mix from the `*proportion` properties.
#[derive(Debug, Clone)]
pub struct Mix(Vec<(f64, Op)>);

impl Mix {
    /// Reads the proportions; they must sum to a positive number.
    pub fn new(p: &Properties) -> Result<Self, String> {
        let mut v = Vec::new();
        let mut total = 0.0;
        for (key, op, default) in [
            ("readproportion", Op::Read, 0.95),
            ("updateproportion", Op::Update, 0.05),
            ("insertproportion", Op::Insert, 0.0),
            ("scanproportion", Op::Scan, 0.0),
            ("readmodifywriteproportion", Op::ReadModifyWrite, 0.0),
        ] {
            let x: f64 = p.get(key, default)?;
            if x > 0.0 {
                total += x;
                v.push((total, op));
            }
        }
        if total <= 0.0 {
            return Err("all operation proportions are zero".into());
        }
        Ok(Mix(v.into_iter().map(|(c, op)| (c / total, op)).collect()))
    }

    /// Draws an operation.
    pub fn next(&self, rng: &mut impl Rng) -> Op {
        let u: f64 = rng.gen();
        self.0
            .iter()
            .find(|(c, _)| u < *c)
            .or(self.0.last())
            .map_or(Op::Read, |&(_, op)| op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn zipfian_is_skewed_and_in_range() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let z = Zipfian::new(1000, 0.99);
        let mut counts = vec![0u32; 1000];
        for _ in 0..100_000 {
            counts[z.next(&mut rng) as usize] += 1;
        }
        // Rank 0 is the most popular, and the top 10 ranks take a large share.
        assert!(counts[0] > counts[10] && counts[0] > counts[500]);
        let top10: u32 = counts[..10].iter().sum();
        assert!(top10 > 25_000, "{top10}");
    }

    #[test]
    fn latest_prefers_recent_records_and_mix_follows_proportions() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let mut d = Distribution::new("latest", 1000, 0.99).unwrap();
        let recent = (0..10_000).filter(|_| d.next(2000, &mut rng) >= 1900).count();
        assert!(recent > 4000, "{recent}");
        let p = Properties::parse("readproportion=0.5\nupdateproportion=0\nreadmodifywriteproportion=0.5\n").unwrap();
        let m = Mix::new(&p).unwrap();
        let rmw = (0..10_000).filter(|_| m.next(&mut rng) == Op::ReadModifyWrite).count();
        assert!((4500..5500).contains(&rmw), "{rmw}");
        assert_eq!(key_name(0), format!("user{}", fnv_hash64(0)));
        assert!(Properties::parse("no equals sign").is_err());
    }
}
