//! A Bloom filter with fractional bits-per-key and a seed (one "filter unit"), in two layouts:
//! version 1, a standard filter whose probes spread over the whole array, and version 2, a
//! **cache-local** filter whose probes of one key all fall in one 64-byte line (one cache miss
//! per unit, where version 1 takes up to one per probe).
//!
//! Serialized form (inside an SST block, which adds the checksum):
//! ```text
//! offset size field
//! 0      1    version      = 1 (standard) or 2 (cache-local)
//! 1      1    num_probes   k: v1 round(ln 2 · bpk); v2 the k that minimizes the layout's
//!                          expected false-positive rate (`local_probes`); 1..=30
//! 2      2    reserved     = 0
//! 4      8    seed         u64le; mixes the key hash so units of one segment are independent
//! 12     8    num_bits     m, u64le: v1 max(64, ceil(n · bpk)); v2 ceil(n · bpk) rounded up
//!                          to a multiple of 512 (at least 512)
//! 20     ⌈m/8⌉ bit array  bit i is byte i/8, bit i%8 (LSB first); v2: line L is bits
//!                          512·L .. 512·L + 511
//! ```
//! Probing: `h = xxh3_64(user_key)` is computed once per lookup and shared by every unit; each
//! unit derives `g = fmix64(h ⊕ seed·φ)`.
//! - v1 probes `g, g+d, g+2d, …` (`d = rotl(g, 32) | 1`, Kirsch–Mitzenmacher double hashing),
//!   each mapped to `[0, m)` by a 64×64→128 multiply. Expected false-positive rate ≈
//!   `(1 − e^{−k·n/m})^k`, ≈ `e^{−(ln 2)²·bpk}` at the optimal k.
//! - v2 picks line `⌊(g >> 32) · lines / 2³²⌋`, then takes the bit positions within it from
//!   `r = g mod 2³²`: probe i is the top 9 bits of `r`, after which `r ← r · 0x9e3779b9 mod 2³²`.
//!   Keys per line follow a Poisson law of mean `512 / bpk`, so its false-positive rate is the
//!   standard one averaged over that law (`expected_fpr_local`): a little above v1's, more so at
//!   high bits per key. In memory the array is held 64-byte aligned so a line is a cache line.

/// Header bytes before the bit array.
pub const HEADER_LEN: usize = 20;
pub(crate) const VERSION: u8 = 1;
pub(crate) const VERSION_LOCAL: u8 = 2;
const MAX_PROBES: u32 = 30;
/// Bits in a cache-local line.
const LINE_BITS: u64 = 512;

pub use crate::format::ikey::key_hash;

/// Murmur3's 64-bit finalizer: a bijective mixer.
#[inline]
pub(crate) fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// φ·2⁶⁴ (golden ratio), spreading small consecutive seeds over the whole u64 range.
pub(super) const SEED_SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;

#[inline]
fn unit_hash(h: u64, seed: u64) -> u64 {
    fmix64(h ^ seed.wrapping_mul(SEED_SPREAD))
}

/// Probes used for `bpk` bits per key.
pub fn num_probes(bpk: f64) -> u32 {
    ((std::f64::consts::LN_2 * bpk).round() as u32).clamp(1, MAX_PROBES)
}

#[cfg(any(test, feature = "test-util"))]
/// The standard model's false-positive rate for `bpk` at the optimal probe count.
pub fn model_fpr(bpk: f64) -> f64 {
    if bpk <= 0.0 {
        1.0
    } else {
        (-(std::f64::consts::LN_2.powi(2)) * bpk).exp()
    }
}

#[cfg(any(test, feature = "test-util"))]
/// The expected false-positive rate of a filter with exactly `bpk` bits per key and the
/// probe count this module picks (accounts for the integer k).
pub fn expected_fpr(bpk: f64) -> f64 {
    if bpk <= 0.0 {
        return 1.0;
    }
    let k = f64::from(num_probes(bpk));
    (1.0 - (-k / bpk).exp()).powf(k)
}

#[inline]
pub(super) fn probe_positions(g: u64, num_bits: u64, k: u32) -> impl Iterator<Item = u64> {
    let delta = g.rotate_left(32) | 1;
    (0..u64::from(k)).map(move |i| {
        let x = g.wrapping_add(i.wrapping_mul(delta));
        ((u128::from(x) * u128::from(num_bits)) >> 64) as u64
    })
}

/// The expected false-positive rate of a cache-local unit with `bpk` bits per key and `k`
/// probes: the standard rate of one 512-bit line holding `j` keys, averaged over the Poisson
/// law of `j` (mean `512 / bpk`).
pub fn expected_fpr_local(bpk: f64, k: u32) -> f64 {
    if bpk <= 0.0 {
        return 1.0;
    }
    let mean = LINE_BITS as f64 / bpk;
    let k = f64::from(k);
    let mut p = (-mean).exp(); // P(j = 0)
    let (mut sum, mut total) = (0.0, 0.0);
    // Far enough into the tail that the rest weighs nothing at any bpk ≥ 0.5.
    for j in 0..(mean * 4.0 + 64.0) as u32 {
        if j > 0 {
            p *= mean / f64::from(j);
        }
        let one_line = (1.0 - (1.0 - 1.0 / LINE_BITS as f64).powf(k * f64::from(j))).powf(k);
        sum += p * one_line;
        total += p;
    }
    sum / total.max(f64::MIN_POSITIVE)
}

/// The probe count of a cache-local unit with `bpk` bits per key: the one with the least
/// expected false-positive rate.
pub fn local_probes(bpk: f64) -> u32 {
    // The model sums a few hundred terms per probe count: every unit built (one per segment
    // and unit) asks again, mostly for the same bits per key, so a thread keeps its last answer.
    thread_local!(static LAST: std::cell::Cell<Option<(u64, u32)>> = const { std::cell::Cell::new(None) });
    if let Some((b, k)) = LAST.get() {
        if b == bpk.to_bits() {
            return k;
        }
    }
    let k = (1..=24)
        .map(|k| (k, expected_fpr_local(bpk, k)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(1, |(k, _)| k);
    LAST.set(Some((bpk.to_bits(), k)));
    k
}

/// Bit `i` (0..512) of each probe of a cache-local unit, from the low half of `g`.
#[inline]
fn local_bits(g: u64, k: u32) -> impl Iterator<Item = u64> {
    let mut r = g as u32;
    (0..k).map(move |_| {
        let bit = u64::from(r >> 23);
        r = r.wrapping_mul(0x9e37_79b9);
        bit
    })
}

/// The line of a cache-local unit with `lines` lines that `g` selects.
#[inline]
fn local_line(g: u64, lines: u64) -> u64 {
    ((g >> 32) * lines) >> 32
}

/// A serialized unit's header and an all-zero bit array of `num_bits`.
fn empty_unit(version: u8, k: u32, seed: u64, num_bits: u64) -> Vec<u8> {
    let mut out = vec![0u8; HEADER_LEN + num_bits.div_ceil(8) as usize];
    out[0] = version;
    out[1] = k as u8;
    out[4..12].copy_from_slice(&seed.to_le_bytes());
    out[12..20].copy_from_slice(&num_bits.to_le_bytes());
    out
}

/// Builds a cache-local (version 2) unit for the given key hashes.
pub fn build_local(hashes: &[u64], bpk: f64, seed: u64) -> Vec<u8> {
    let k = local_probes(bpk);
    let lines = ((hashes.len() as f64 * bpk / LINE_BITS as f64).ceil() as u64).max(1);
    let mut out = empty_unit(VERSION_LOCAL, k, seed, lines * LINE_BITS);
    let bits = &mut out[HEADER_LEN..];
    for &h in hashes {
        let g = unit_hash(h, seed);
        let base = local_line(g, lines) * LINE_BITS;
        for b in local_bits(g, k) {
            let pos = base + b;
            bits[(pos >> 3) as usize] |= 1 << (pos & 7);
        }
    }
    out
}

/// Builds the serialized filter for the given key hashes (see [`key_hash`]).
pub fn build(hashes: &[u64], bpk: f64, seed: u64) -> Vec<u8> {
    let k = num_probes(bpk);
    let num_bits = ((hashes.len() as f64 * bpk).ceil() as u64).max(64);
    let mut out = empty_unit(VERSION, k, seed, num_bits);
    let bits = &mut out[HEADER_LEN..];
    for &h in hashes {
        for pos in probe_positions(unit_hash(h, seed), num_bits, k) {
            bits[(pos >> 3) as usize] |= 1 << (pos & 7);
        }
    }
    out
}

/// One 64-byte line of a cache-local unit, aligned so that it is one cache line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u64; 8]);

/// The bits of a decoded unit.
#[derive(Clone)]
enum Bits {
    /// Version 1: the serialized bytes, probed in place.
    Standard(Box<[u8]>),
    /// Version 2: the array copied into aligned lines (the serialized form's header is not a
    /// multiple of 64 bytes).
    Local(Box<[Line]>),
}

/// A decoded filter unit.
#[derive(Clone)]
pub struct BloomFilter {
    bits: Bits,
    num_bits: u64,
    seed: u64,
    k: u32,
}

impl std::fmt::Debug for BloomFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BloomFilter")
            .field("num_bits", &self.num_bits)
            .field("seed", &self.seed)
            .field("k", &self.k)
            .finish()
    }
}

impl BloomFilter {
    /// Validates and wraps serialized bytes.
    ///
    /// # Errors
    /// A short description of the first field that is invalid.
    pub fn decode(bytes: Vec<u8>) -> Result<Self, &'static str> {
        if bytes.len() < HEADER_LEN {
            return Err("bloom filter shorter than its header");
        }
        if bytes[0] != VERSION && bytes[0] != VERSION_LOCAL {
            return Err("unknown bloom filter version");
        }
        let k = u32::from(bytes[1]);
        if k == 0 || k > MAX_PROBES {
            return Err("bloom filter probe count out of range");
        }
        let seed = crate::format::coding::read_u64(&bytes, 4).ok_or("bloom seed")?;
        let num_bits = crate::format::coding::read_u64(&bytes, 12).ok_or("bloom size")?;
        let nbytes = (bytes.len() - HEADER_LEN) as u64;
        if num_bits == 0 || num_bits.div_ceil(8) != nbytes {
            return Err("bloom filter bit count does not match its length");
        }
        let bits = if bytes[0] == VERSION_LOCAL {
            if num_bits % LINE_BITS != 0 {
                return Err("cache-local bloom filter size is not a whole number of lines");
            }
            Bits::Local(
                bytes[HEADER_LEN..]
                    .chunks_exact(64)
                    .map(|c| Line(std::array::from_fn(|w| u64::from_le_bytes(std::array::from_fn(|b| c[8 * w + b])))))
                    .collect(),
            )
        } else {
            Bits::Standard(bytes.into_boxed_slice())
        };
        Ok(BloomFilter {
            bits,
            num_bits,
            seed,
            k,
        })
    }

    /// False if the key whose [`key_hash`] is `h` was certainly not added.
    #[inline]
    pub fn may_contain_hash(&self, h: u64) -> bool {
        let g = unit_hash(h, self.seed);
        match &self.bits {
            Bits::Standard(bytes) => {
                let bits = &bytes[HEADER_LEN..];
                probe_positions(g, self.num_bits, self.k).all(|pos| bits[(pos >> 3) as usize] & (1 << (pos & 7)) != 0)
            }
            Bits::Local(lines) => {
                // `local_line` is below the line count by construction.
                let Some(line) = lines.get(local_line(g, lines.len() as u64) as usize) else {
                    return true;
                };
                local_bits(g, self.k).all(|b| line.0[(b >> 6) as usize] & (1 << (b & 63)) != 0)
            }
        }
    }

    #[cfg(any(test, feature = "test-util"))]
    /// False if `user_key` was certainly not added.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(key_hash(user_key))
    }

    #[cfg(any(test, feature = "test-util"))]
    /// Bits in the array.
    pub fn num_bits(&self) -> u64 {
        self.num_bits
    }

    #[cfg(any(test, feature = "test-util"))]
    /// Probes per lookup.
    pub fn num_probes(&self) -> u32 {
        self.k
    }

    #[cfg(any(test, feature = "test-util"))]
    /// The unit's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Bytes held in memory.
    pub fn memory_usage(&self) -> usize {
        match &self.bits {
            Bits::Standard(b) => b.len(),
            Bits::Local(l) => HEADER_LEN + std::mem::size_of_val(&**l),
        }
    }

    #[cfg(any(test, feature = "test-util"))]
    /// Whether the unit is cache-local (version 2).
    pub fn is_local(&self) -> bool {
        matches!(self.bits, Bits::Local(_))
    }
}


/// `(ln 2)²`: the exponent of a Bloom filter's false-positive rate per bit per key.
pub const LN2_SQ: f64 = std::f64::consts::LN_2 * std::f64::consts::LN_2;

/// The same exponent for cache-local units (every probe in one 64-byte line): their expected
/// rate (`filter::bloom::expected_fpr_local`) falls by `e^−0.465` per bit between 2 and 10 bits
/// per key, and `e^(−0.465·b)` is within 7% of it there.
pub const LOCAL_DECAY: f64 = 0.465;

/// The layout of point-filter units in new tables (tables record it per unit, so both are
/// read whatever the setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnitFormat {
    /// Probes spread over the whole unit (up to one cache line each).
    Standard,
    /// Every probe of a key in one 64-byte line (`docs/format/sst.md`, filter units).
    #[default]
    CacheLocal,
}

impl UnitFormat {
    /// How fast the layout's false-positive rate falls per bit per key (the allocation
    /// policies' model: `e^(−decay · bpk)`).
    pub(crate) fn decay(self) -> f64 {
        match self {
            UnitFormat::Standard => LN2_SQ,
            UnitFormat::CacheLocal => LOCAL_DECAY,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(range: std::ops::Range<u64>) -> Vec<u64> {
        range.map(|i| key_hash(&i.to_be_bytes())).collect()
    }

    #[test]
    fn no_false_negatives_and_golden_header() {
        let hs = hashes(0..1000);
        let bytes = build(&hs, 10.0, 42);
        assert_eq!(&bytes[..4], &[1, 7, 0, 0]);
        assert_eq!(&bytes[4..12], &42u64.to_le_bytes());
        assert_eq!(&bytes[12..20], &10_000u64.to_le_bytes());
        assert_eq!(bytes.len(), 20 + 1250);
        let f = BloomFilter::decode(bytes).unwrap();
        assert!(hs.iter().all(|&h| f.may_contain_hash(h)));
        assert!(f.may_contain(&5u64.to_be_bytes()));
    }

    #[test]
    fn golden_bits_are_stable() {
        // Pins the hash function, seed mixing and probe sequence: a change here breaks every
        // filter already on disk.
        let bytes = build(&[key_hash(b"cairn")], 6.0, 1);
        assert_eq!(bytes.len(), 28);
        let set: Vec<usize> = (0..64).filter(|&i| bytes[20 + i / 8] & (1 << (i % 8)) != 0).collect();
        assert_eq!(set, GOLDEN_BITS);
    }
    const GOLDEN_BITS: &[usize] = &[30, 38, 46, 54];

    #[test]
    fn local_units_have_no_false_negatives_and_a_stable_layout() {
        for bpk in [1.0, 2.0, 4.5, 6.0, 10.0, 16.0] {
            let hs = hashes(0..3000);
            let f = BloomFilter::decode(build_local(&hs, bpk, 7)).unwrap();
            assert!(f.is_local());
            assert!(hs.iter().all(|&h| f.may_contain_hash(h)), "bpk {bpk}");
            assert_eq!(f.num_bits() % 512, 0);
            assert!(f.num_bits() as f64 >= 3000.0 * bpk);
            assert_eq!(f.num_probes(), local_probes(bpk));
        }
        // Golden: the header, and the bits one key sets (all in one line).
        let bytes = build_local(&[key_hash(b"cairn")], 6.0, 1);
        assert_eq!(&bytes[..4], &[2, local_probes(6.0) as u8, 0, 0]);
        assert_eq!(&bytes[12..20], &512u64.to_le_bytes());
        assert_eq!(bytes.len(), 20 + 64);
        let set: Vec<usize> = (0..512).filter(|&i| bytes[20 + i / 8] & (1 << (i % 8)) != 0).collect();
        assert_eq!(set, LOCAL_GOLDEN_BITS);
        // A key's probes share its line: in a 16-line unit, every key sets bits of one line.
        let f = build_local(&[key_hash(b"x")], 8192.0, 3);
        let lines: Vec<usize> = (0..16).filter(|l| f[20 + 64 * l..20 + 64 * (l + 1)].iter().any(|&b| b != 0)).collect();
        assert_eq!(lines.len(), 1);
    }
    const LOCAL_GOLDEN_BITS: &[usize] = &[66, 127, 246, 306];

    #[test]
    fn local_probe_counts_and_rates_follow_the_model() {
        // k rises with bits per key, and the expected rate of the chosen k is close to the
        // standard filter's at few bits per key.
        let ks: Vec<u32> = [2.0, 4.0, 6.0, 8.0, 10.0, 16.0].iter().map(|&b| local_probes(b)).collect();
        assert!(ks.windows(2).all(|w| w[0] <= w[1]), "{ks:?}");
        for bpk in [2.0, 4.0, 6.0] {
            let (local, std) = (expected_fpr_local(bpk, local_probes(bpk)), expected_fpr(bpk));
            assert!(local < std * 1.25, "bpk {bpk}: {local} vs {std}");
        }
        // The allocation policies' model of the layout: e^(−LOCAL_DECAY·b) within 7% of the
        // expected rate from 2 to 10 bits per key.
        for bpk in [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0] {
            let (model, exact) = ((-LOCAL_DECAY * bpk).exp(), expected_fpr_local(bpk, local_probes(bpk)));
            assert!((model / exact - 1.0).abs() < 0.07, "bpk {bpk}: {model} vs {exact}");
        }
        // Measured rates match the model (200K absent keys).
        for bpk in [2.0, 6.0, 10.0] {
            let f = BloomFilter::decode(build_local(&hashes(0..20_000), bpk, 11)).unwrap();
            let fp = (1_000_000..1_200_000u64).filter(|&i| f.may_contain_hash(key_hash(&i.to_be_bytes()))).count();
            let measured = fp as f64 / 200_000.0;
            let model = expected_fpr_local(bpk, f.num_probes());
            assert!((measured / model - 1.0).abs() < 0.15, "bpk {bpk}: measured {measured}, model {model}");
        }
    }

    #[test]
    fn decode_rejects_malformed_bytes() {
        let good = build(&hashes(0..10), 4.0, 0);
        assert!(BloomFilter::decode(good[..10].to_vec()).is_err());
        let mut b = good.clone();
        b[0] = 9;
        assert!(BloomFilter::decode(b).is_err());
        let mut b = good.clone();
        b[1] = 0;
        assert!(BloomFilter::decode(b).is_err());
        let mut b = good.clone();
        b[12] ^= 0x40; // bit count no longer matches the array
        assert!(BloomFilter::decode(b).is_err());
        assert!(BloomFilter::decode(good[..good.len() - 1].to_vec()).is_err());
        // A cache-local unit must hold whole lines.
        let local = build_local(&hashes(0..100), 10.0, 0);
        assert!(BloomFilter::decode(local.clone()).is_ok());
        let mut b = local.clone();
        b[12..20].copy_from_slice(&504u64.to_le_bytes());
        assert!(BloomFilter::decode(b[..20 + 63].to_vec()).is_err());
        assert!(BloomFilter::decode(local[..local.len() - 1].to_vec()).is_err());
    }
}
