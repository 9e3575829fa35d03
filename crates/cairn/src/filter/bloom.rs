//! A standard Bloom filter with fractional bits-per-key and a seed (one "filter unit").
//!
//! Serialized form (inside an SST block, which adds the checksum):
//! ```text
//! offset size field
//! 0      1    version      = 1
//! 1      1    num_probes   k = round(ln 2 · bpk), clamped to 1..=30
//! 2      2    reserved     = 0
//! 4      8    seed         u64le; mixes the key hash so units of one segment are independent
//! 12     8    num_bits     m = max(64, ceil(n · bpk)), u64le
//! 20     ⌈m/8⌉ bit array  bit i is byte i/8, bit i%8 (LSB first)
//! ```
//! Probing: `h = xxh3_64(user_key)` is computed once per lookup and shared by every unit; each
//! unit derives `g = fmix64(h ⊕ seed·φ)` and probes `g, g+d, g+2d, …` (`d = rotl(g, 32) | 1`,
//! Kirsch–Mitzenmacher double hashing), each mapped to `[0, m)` by a 64×64→128 multiply.
//! Expected false-positive rate ≈ `(1 − e^{−k·n/m})^k`, ≈ `e^{−(ln 2)²·bpk}` at the optimal k.

/// Header bytes before the bit array.
pub const HEADER_LEN: usize = 20;
const VERSION: u8 = 1;
const MAX_PROBES: u32 = 30;

/// The per-key hash shared by all units. Filters are over *user* keys.
#[inline]
pub fn key_hash(user_key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(user_key)
}

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

/// Builds the serialized filter for the given key hashes (see [`key_hash`]).
pub fn build(hashes: &[u64], bpk: f64, seed: u64) -> Vec<u8> {
    let k = num_probes(bpk);
    let num_bits = ((hashes.len() as f64 * bpk).ceil() as u64).max(64);
    let nbytes = num_bits.div_ceil(8) as usize;
    let mut out = vec![0u8; HEADER_LEN + nbytes];
    out[0] = VERSION;
    out[1] = k as u8;
    out[4..12].copy_from_slice(&seed.to_le_bytes());
    out[12..20].copy_from_slice(&num_bits.to_le_bytes());
    let bits = &mut out[HEADER_LEN..];
    for &h in hashes {
        for pos in probe_positions(unit_hash(h, seed), num_bits, k) {
            bits[(pos >> 3) as usize] |= 1 << (pos & 7);
        }
    }
    out
}

/// A decoded filter unit; probing reads the serialized bytes in place.
#[derive(Clone)]
pub struct BloomFilter {
    bytes: Box<[u8]>,
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
        if bytes[0] != VERSION {
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
        Ok(BloomFilter {
            bytes: bytes.into_boxed_slice(),
            num_bits,
            seed,
            k,
        })
    }

    /// False if the key whose [`key_hash`] is `h` was certainly not added.
    #[inline]
    pub fn may_contain_hash(&self, h: u64) -> bool {
        let bits = &self.bytes[HEADER_LEN..];
        probe_positions(unit_hash(h, self.seed), self.num_bits, self.k)
            .all(|pos| bits[(pos >> 3) as usize] & (1 << (pos & 7)) != 0)
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
        self.bytes.len()
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
    }
}
