//! Grafite (Costa, Ferragina, Vinciguerra, SIGMOD'24): a range filter whose false-positive
//! rate is bounded for every key set and every query, `ℓ / 2^(B−2)` for a range of `ℓ`
//! projection values at `B` bits per key, answered with one hash and one successor search.
//!
//! **Projection.** The table's key projection (`projection.rs`), stored ahead of this body in
//! the block (`range.rs`); keys sharing a projection are one value.
//!
//! **Hash.** With `n` distinct projections and `B` bits per key the reduced universe is
//! `r = ⌊n · 2^(B−2)⌋` (at least 1). Projections are cut into blocks of `L = 2^λ` values,
//! `λ = ⌊log2 r⌋` (the largest power of two not above `r`), and
//! ```text
//! h(x) = (q(x >> λ) + (x mod L)) mod r,    q(c) = ⌊fmix64(c ⊕ seed·φ) · r / 2^64⌋
//! ```
//! Inside a block `h` shifts every value by the same random amount, so it is injective there
//! (`L ≤ r`) and maps an interval to at most two intervals (wrapping at `r`). A key in another
//! block lands in a query's image with probability (its length) / r, hence the bound over the
//! `n` keys. The paper fixes `L` as the longest range to be asked; the space depends on `r/n`
//! only, so here `L` is as large as injectivity allows and every range shorter than `r` is
//! answered (it crosses at most three blocks).
//!
//! **Elias–Fano.** The distinct hashes `v_0 < … < v_{m−1}` (`m ≤ n`: hashes may collide) are
//! stored as `l = ⌊log2(r/m)⌋` low bits each (packed, LSB first) and a *high* bit vector of
//! `m + Z` bits, `Z = ((r − 1) >> l) + 1`, in which `v_i` sets bit `(v_i >> l) + i`. A
//! successor search binary searches every 64th hash (fences, built when the filter is decoded,
//! not stored) and walks the high bits from the fence below `v`: at most 64 hashes.
//!
//! Serialized body (after the block's version byte 2 and projection; the SST block adds the
//! checksum):
//! ```text
//! offset size  field
//! 0      1     body version = 1
//! 1      1     low_bits    l, which must equal ⌊log2(r/m)⌋ (0 when m ≥ r or m = 0)
//! 2      2     reserved    = 0
//! 4      8     seed        u64le
//! 12     8     keys        n, distinct projections, u64le
//! 20     8     universe    r, 1..=2^62, u64le
//! 28     8     hashes      m ≤ min(n, r), u64le
//! 36     8·⌈m·l/64⌉        low bits, u64le words
//! …      8·⌈(m+Z)/64⌉      high bit vector, u64le words (bit i: word i/64, bit i%64); exactly
//!                          m ones, bits past m + Z zero
//! ```

use super::bloom::{fmix64, SEED_SPREAD};
use crate::format::coding::read_u64;

/// Version of the serialized body.
pub const VERSION: u8 = 1;
const HEADER_LEN: usize = 36;
/// Largest reduced universe: `q + offset < 2r` stays far from overflow.
const MAX_UNIVERSE: u64 = 1 << 62;
/// Hashes per fence (the successor search's index, built at decode).
const FENCE: u64 = 64;
/// Fences per top entry: a group is 512 bytes, eight cache lines loaded at once.
const GROUP: usize = 64;
/// Bits per key the decoded filter holds beyond its serialized form: a 64-bit fence per
/// [`FENCE`] hashes, and a top entry per [`GROUP`] fences.
pub(crate) const MEMORY_EXTRA_BPK: f64 = 64.0 / FENCE as f64 * (1.0 + 1.0 / GROUP as f64);

/// `⌊log2(r/m)⌋`, 0 when `m = 0` or `m ≥ r`.
fn low_bits(r: u64, m: u64) -> u32 {
    if m == 0 || m >= r {
        0
    } else {
        63 - (r / m).leading_zeros()
    }
}

/// The reduced universe for `n` keys at `bits_per_key`.
pub fn universe(n: u64, bits_per_key: f64) -> u64 {
    let r = (n as f64) * (bits_per_key - 2.0).exp2();
    if r.is_nan() || r < 1.0 {
        1
    } else if r >= MAX_UNIVERSE as f64 {
        MAX_UNIVERSE
    } else {
        r as u64
    }
}

/// The proven false-positive bound for an empty range of `len` projection values at
/// `bits_per_key` (capped at 1).
#[cfg(any(test, feature = "test-util"))]
pub fn fpr_bound(len: u64, bits_per_key: f64) -> f64 {
    (len as f64 / (bits_per_key - 2.0).exp2()).min(1.0)
}

#[derive(Debug, Clone, Copy)]
struct Hasher {
    seed: u64,
    r: u64,
    lambda: u32,
}

impl Hasher {
    fn new(seed: u64, r: u64) -> Self {
        Hasher {
            seed: seed.wrapping_mul(SEED_SPREAD),
            r,
            lambda: 63 - r.leading_zeros(),
        }
    }

    #[inline]
    fn block_mask(self) -> u64 {
        (1u64 << self.lambda) - 1
    }

    #[inline]
    fn hash(self, x: u64) -> u64 {
        let c = x >> self.lambda;
        let q = ((u128::from(fmix64(c ^ self.seed)) * u128::from(self.r)) >> 64) as u64;
        let v = q + (x & self.block_mask());
        if v >= self.r {
            v - self.r
        } else {
            v
        }
    }
}

/// Writes the filter of a table's projections.
#[derive(Debug)]
pub struct GrafiteBuilder {
    projections: Vec<u64>,
}

impl GrafiteBuilder {
    /// A builder of the table's projections (any order; duplicates count once).
    pub fn with_projections(projections: Vec<u64>) -> Self {
        GrafiteBuilder { projections }
    }

    /// The serialized filter at `bits_per_key` (of the distinct projections).
    pub fn finish(self, seed: u64, bits_per_key: f64) -> Vec<u8> {
        let mut xs = self.projections;
        xs.sort_unstable();
        xs.dedup();
        let n = xs.len() as u64;
        let r = universe(n, bits_per_key);
        let h = Hasher::new(seed, r);
        let mut vs: Vec<u64> = xs.iter().map(|&x| h.hash(x)).collect();
        vs.sort_unstable();
        vs.dedup();
        let m = vs.len() as u64;
        let l = low_bits(r, m);
        let zeros = ((r - 1) >> l) + 1;
        let mut lows = vec![0u64; (m * u64::from(l)).div_ceil(64) as usize];
        let mut highs = vec![0u64; (m + zeros).div_ceil(64) as usize];
        for (i, &v) in vs.iter().enumerate() {
            set_bits(&mut lows, i as u64 * u64::from(l), l, v);
            let p = (v >> l) + i as u64;
            highs[(p / 64) as usize] |= 1 << (p % 64);
        }
        let mut out = Vec::with_capacity(HEADER_LEN + 8 * (lows.len() + highs.len()));
        out.extend_from_slice(&[VERSION, l as u8, 0, 0]);
        for x in [seed, n, r, m] {
            out.extend_from_slice(&x.to_le_bytes());
        }
        for w in lows.iter().chain(&highs) {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out
    }
}

/// The `width` low bits of hash `i` (0 when `width` is 0; bits past the words read as 0).
#[inline]
fn low_bits_at(lows: &[u64], width: u32, i: u64) -> u64 {
    if width == 0 {
        return 0;
    }
    let at = i * u64::from(width);
    let (w, s) = ((at / 64) as usize, (at % 64) as u32);
    let lo = lows.get(w).copied().unwrap_or(0) >> s;
    let hi = if s + width > 64 {
        lows.get(w + 1).copied().unwrap_or(0) << (64 - s)
    } else {
        0
    };
    (lo | hi) & ((1u64 << width) - 1)
}

fn set_bits(words: &mut [u64], at: u64, width: u32, v: u64) {
    if width == 0 {
        return;
    }
    let v = v & ((1u64 << width) - 1);
    let (w, s) = ((at / 64) as usize, (at % 64) as u32);
    words[w] |= v << s;
    if s + width > 64 {
        words[w + 1] |= v >> (64 - s);
    }
}

/// Loads the cache lines of `words` (of its first `lines` × 8 words).
#[inline]
fn prefetch_lines(words: &[u64], lines: usize) {
    let words = &words[..words.len().min(lines.saturating_mul(8))];
    for w in words.chunks(8) {
        crate::memory::prefetch(w.as_ptr().cast());
    }
    // A slice not aligned to a line ends in one more.
    if let Some(last) = words.last() {
        crate::memory::prefetch(std::ptr::from_ref(last).cast());
    }
}

/// A decoded Grafite filter.
#[derive(Clone)]
pub struct GrafiteFilter {
    keys: u64,
    hasher: Hasher,
    m: u64,
    l: u32,
    lows: Box<[u64]>,
    highs: Box<[u64]>,
    /// Bits of `highs` in use (`m + Z`).
    high_len: u64,
    /// `fences[j]`: hash number `j · FENCE` (one bit per key in memory, not stored). A
    /// successor search binary searches them, then walks at most `FENCE` hashes from the
    /// fence below: keys close together hash close together (one rotation per block), so an
    /// Elias–Fano bucket may hold a thousand hashes, and a search by buckets alone missed
    /// the cache at every step of its binary search over their low bits.
    fences: Box<[u64]>,
    /// Every [`GROUP`]-th fence (a few hundred bytes per million keys that stay in the CPU
    /// cache): a search finds its group here and loads the group's lines at once, instead of
    /// a binary search over the fences that misses the cache at nearly every step.
    top: Box<[u64]>,
    /// Bytes of the serialized form.
    size: usize,
}

impl std::fmt::Debug for GrafiteFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrafiteFilter")
            .field("keys", &self.keys)
            .field("universe", &self.hasher.r)
            .field("hashes", &self.m)
            .finish()
    }
}

fn words(bytes: &[u8]) -> Box<[u64]> {
    bytes.chunks_exact(8).map(|c| read_u64(c, 0).unwrap_or(0)).collect()
}

impl GrafiteFilter {
    /// Validates and decodes serialized bytes.
    ///
    /// # Errors
    /// A short description of the first field that is invalid.
    pub fn decode(bytes: &[u8]) -> Result<Self, &'static str> {
        if bytes.len() < HEADER_LEN {
            return Err("grafite filter shorter than its header");
        }
        if bytes[0] != VERSION {
            return Err("unknown grafite filter version");
        }
        if bytes[2] != 0 || bytes[3] != 0 {
            return Err("grafite filter reserved byte is not zero");
        }
        // In bounds: the header's length was checked.
        let field = |at| read_u64(bytes, at).unwrap_or(0);
        let (seed, n, r, m) = (field(4), field(12), field(20), field(28));
        if r == 0 || r > MAX_UNIVERSE {
            return Err("grafite universe out of range");
        }
        if m > n || m > r {
            return Err("grafite filter holds more hashes than keys or universe values");
        }
        let l = u32::from(bytes[1]);
        if l != low_bits(r, m) {
            return Err("grafite low-bit width does not match its universe and hashes");
        }
        let zeros = ((r - 1) >> l) + 1;
        let high_len = m + zeros;
        let low_words = (m * u64::from(l)).div_ceil(64);
        let high_words = high_len.div_ceil(64);
        let body = (bytes.len() - HEADER_LEN) as u64;
        if body % 8 != 0 || body / 8 != low_words + high_words {
            return Err("grafite filter size does not match its header");
        }
        let split = HEADER_LEN + 8 * low_words as usize;
        let lows = words(&bytes[HEADER_LEN..split]);
        let highs = words(&bytes[split..]);
        let ones: u64 = highs.iter().map(|w| u64::from(w.count_ones())).sum();
        if ones != m {
            return Err("grafite high bits do not hold one bit per hash");
        }
        if high_len % 64 != 0 {
            if let Some(last) = highs.last() {
                if last >> (high_len % 64) != 0 {
                    return Err("grafite high bits set past the vector's end");
                }
            }
        }
        let mut fences = Vec::with_capacity(m.div_ceil(FENCE) as usize);
        let mut i = 0u64;
        for (w, &word) in highs.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let p = w as u64 * 64 + u64::from(bits.trailing_zeros());
                if i % FENCE == 0 {
                    fences.push(((p - i) << l) | low_bits_at(&lows, l, i));
                }
                i += 1;
                bits &= bits - 1;
            }
        }
        let top = fences.iter().step_by(GROUP).copied().collect();
        Ok(GrafiteFilter {
            keys: n,
            hasher: Hasher::new(seed, r),
            m,
            l,
            lows,
            highs,
            high_len,
            fences: fences.into_boxed_slice(),
            top,
            size: bytes.len(),
        })
    }

    /// Distinct projections the filter was built from.
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// The reduced universe `r`.
    pub fn universe(&self) -> u64 {
        self.hasher.r
    }

    /// Bytes held in memory (the decoded vectors and the fences).
    pub fn memory(&self) -> usize {
        8 * (self.lows.len() + self.highs.len() + self.fences.len() + self.top.len())
    }

    /// Bits per key of the serialized form (what the bound is computed from).
    pub fn bits_per_key(&self) -> f64 {
        if self.keys == 0 {
            0.0
        } else {
            (self.size * 8) as f64 / self.keys as f64
        }
    }

    /// Whether any key may project into `[a, b]` (`a ≤ b`). Never a false "no".
    pub fn may_contain_range(&self, a: u64, b: u64) -> bool {
        if self.m == 0 {
            return false;
        }
        let r = self.hasher.r;
        if b - a >= r - 1 {
            // The image covers the whole reduced universe.
            return true;
        }
        let mask = self.hasher.block_mask();
        let mut x = a;
        loop {
            let end = b.min(x | mask);
            if self.any_in_circular(self.hasher.hash(x), end - x) {
                return true;
            }
            if end == b {
                return false;
            }
            x = end + 1;
        }
    }

    /// Whether a key may project to `x`.
    pub fn may_contain_projection(&self, x: u64) -> bool {
        self.m != 0 && self.any_in_circular(self.hasher.hash(x), 0)
    }

    /// Whether a stored hash lies in `[s, s + len]` taken mod `r` (`s < r`, `len < r`).
    #[inline]
    fn any_in_circular(&self, s: u64, len: u64) -> bool {
        let r = self.hasher.r;
        if len < r - s {
            self.any_in(s, s + len)
        } else {
            self.any_in(s, r - 1) || self.any_in(0, len - (r - s))
        }
    }

    #[inline]
    fn any_in(&self, lo: u64, hi: u64) -> bool {
        self.successor(lo).is_some_and(|v| v <= hi)
    }

    /// The smallest stored hash ≥ `v`.
    fn successor(&self, v: u64) -> Option<u64> {
        let j = self.fences_below(v);
        if j == 0 {
            return self.fences.first().copied();
        }
        // Hash i0 (a fence, below v) sits at bit (its high part) + i0; the successor is one of
        // the next FENCE hashes (the next fence is ≥ v).
        let i0 = (j as u64 - 1) * FENCE;
        let h0 = self.fences[j - 1] >> self.l;
        let p0 = h0 + i0;
        // What the search reads next, loaded at once: the high bits from the fence on, and
        // the low bits of the fence's FENCE hashes.
        let lows_from = (i0 * u64::from(self.l) / 64) as usize;
        let lows_to = (((i0 + FENCE + 1) * u64::from(self.l)).div_ceil(64) as usize).min(self.lows.len());
        prefetch_lines(self.highs.get((p0 / 64) as usize..).unwrap_or(&[]), 2);
        prefetch_lines(self.lows.get(lows_from..lows_to).unwrap_or(&[]), usize::MAX);
        let hq = v >> self.l;
        // Bucket hq starts after its hq-th zero: skip the hq − h0 zeros after the fence.
        let (start, first) = if hq == h0 {
            (p0, i0)
        } else {
            let z = self.skip_zeros(p0 + 1, hq - h0)?;
            (z + 1, z + 1 - hq)
        };
        let end = self.next_zero(start).unwrap_or(self.high_len);
        let after = (end - hq).min(i0 + FENCE + 1).min(self.m);
        // The bucket's hashes share the high part: binary search their low bits.
        let lq = v & ((1u64 << self.l) - 1);
        let (mut lo, mut hi) = (first, after);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.low(mid) < lq {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo < after {
            return Some((hq << self.l) | self.low(lo));
        }
        // None in the bucket at or above v: the next hash lies in a later bucket.
        let next = end - hq;
        if next >= self.m {
            return None;
        }
        let p = self.next_one(end)?;
        Some(((p - next) << self.l) | self.low(next))
    }

    /// How many fences are below `v`.
    #[inline]
    fn fences_below(&self, v: u64) -> usize {
        let g = self.top.partition_point(|&f| f < v);
        if g == 0 {
            return 0;
        }
        // Fence (g − 1)·GROUP is below v and fence g·GROUP (if any) is not.
        let from = (g - 1) * GROUP + 1;
        let group = self.fences.get(from..(g * GROUP).min(self.fences.len())).unwrap_or(&[]);
        prefetch_lines(group, usize::MAX);
        from + group.partition_point(|&f| f < v)
    }

    /// Position of the `k`-th zero (1-based) at or after `pos`.
    fn skip_zeros(&self, pos: u64, k: u64) -> Option<u64> {
        let mut w = (pos / 64) as usize;
        let mut z = !*self.highs.get(w)? & (u64::MAX << (pos % 64));
        let mut left = k;
        loop {
            let base = w as u64 * 64;
            if base + 64 > self.high_len {
                z &= (1u64 << (self.high_len - base)) - 1;
            }
            let c = u64::from(z.count_ones());
            if left <= c {
                for _ in 1..left {
                    z &= z - 1;
                }
                return Some(base + u64::from(z.trailing_zeros()));
            }
            left -= c;
            w += 1;
            z = !*self.highs.get(w)?;
        }
    }

    /// Position of the first zero at or after `pos`.
    #[inline]
    fn next_zero(&self, pos: u64) -> Option<u64> {
        if pos >= self.high_len {
            return None;
        }
        let mut w = (pos / 64) as usize;
        let mut bits = !self.highs[w] & (u64::MAX << (pos % 64));
        loop {
            if bits != 0 {
                let p = w as u64 * 64 + u64::from(bits.trailing_zeros());
                return (p < self.high_len).then_some(p);
            }
            w += 1;
            bits = !*self.highs.get(w)?;
        }
    }

    #[inline]
    fn low(&self, i: u64) -> u64 {
        low_bits_at(&self.lows, self.l, i)
    }

    /// Position of the first one at or after `pos`.
    #[inline]
    fn next_one(&self, pos: u64) -> Option<u64> {
        if pos >= self.high_len {
            return None;
        }
        let mut w = (pos / 64) as usize;
        let mut bits = self.highs[w] & (u64::MAX << (pos % 64));
        loop {
            if bits != 0 {
                return Some(w as u64 * 64 + u64::from(bits.trailing_zeros()));
            }
            w += 1;
            bits = *self.highs.get(w)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn build(xs: &[u64], bpk: f64, seed: u64) -> GrafiteFilter {
        let bytes = GrafiteBuilder::with_projections(xs.to_vec()).finish(seed, bpk);
        GrafiteFilter::decode(&bytes).expect("own output decodes")
    }

    #[test]
    fn empty_filter_rules_out_everything() {
        let f = build(&[], 16.0, 1);
        assert!(!f.may_contain_range(0, u64::MAX));
        assert!(!f.may_contain_projection(7));
    }

    #[test]
    fn successor_walks_the_elias_fano_sequence() {
        // Many hashes per bucket and empty buckets: check successor against a sorted vector.
        let xs: Vec<u64> = (0..3000u64).map(|i| i * 7919).collect();
        let f = build(&xs, 9.0, 3);
        let mut vs: Vec<u64> = xs.iter().map(|&x| f.hasher.hash(x)).collect();
        vs.sort_unstable();
        vs.dedup();
        for probe in (0..f.universe()).step_by((f.universe() / 5000).max(1) as usize) {
            let want = vs[vs.partition_point(|&v| v < probe)..].first().copied();
            assert_eq!(f.successor(probe), want, "successor of {probe}");
        }
        assert_eq!(f.successor(vs[0]), Some(vs[0]));
        assert_eq!(f.successor(*vs.last().unwrap() + 1), None);
    }

    #[test]
    fn dense_keys_in_one_block_are_answered_exactly() {
        // 1,000 keys spaced 512 apart at 22 bits/key: every key falls in one block, where the
        // hash is a shift, so no empty range between them is a false positive.
        let xs: Vec<u64> = (0..1000u64).map(|i| (1 << 40) + i * 512).collect();
        let f = build(&xs, 22.0, 5);
        for &x in &xs {
            assert!(f.may_contain_range(x, x));
            assert!(!f.may_contain_range(x + 1, x + 511));
        }
    }

    #[test]
    fn measured_fpr_stays_under_the_bound() {
        // Random keys, empty ranges of several lengths right after a key (queries correlated
        // with the keys, where heuristic filters fail): the rate stays below ℓ / 2^(B−2).
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            s = fmix64(s.wrapping_add(1));
            s
        };
        let xs: Vec<u64> = (0..20_000).map(|_| next()).collect();
        let mut sorted = xs.clone();
        sorted.sort_unstable();
        for (bpk, len) in [(10.0, 1u64), (12.0, 16), (16.0, 64)] {
            let f = build(&xs, bpk, 9);
            let (mut asked, mut fp) = (0u64, 0u64);
            for w in sorted.windows(2) {
                if w[1] - w[0] > len + 1 {
                    asked += 1;
                    fp += u64::from(f.may_contain_range(w[0] + 1, w[0] + len));
                }
            }
            let rate = fp as f64 / asked as f64;
            let bound = fpr_bound(len, f.bits_per_key());
            assert!(rate <= bound * 1.2 + 3.0 / asked as f64, "bpk {bpk} len {len}: {rate} vs {bound}");
        }
    }

    #[test]
    fn corrupt_bytes_are_refused_or_answer_without_panicking() {
        let xs: Vec<u64> = (0..500u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
        let mut sorted = xs.clone();
        sorted.sort_unstable();
        let good = GrafiteBuilder::with_projections(xs).finish(1, 12.0);
        assert!(GrafiteFilter::decode(&good[..good.len() - 8]).is_err(), "truncated");
        let last = good.len() - 1;
        type Damage = (usize, fn(&mut u8), &'static str);
        let damaged: [Damage; 5] = [
            (0, |b| *b = 9, "version"),
            (1, |b| *b ^= 1, "low-bit width"),
            (3, |b| *b = 1, "reserved"),
            (28, |b| *b ^= 1, "hash count"),
            (last, |b| *b |= 0x80, "a bit past the end or one too many"),
        ];
        for (at, damage, what) in damaged {
            let mut v = good.clone();
            damage(&mut v[at]);
            assert!(GrafiteFilter::decode(&v).is_err(), "{what}");
        }
        // Any single flipped bit: refused, or a filter whose queries do not panic.
        for i in 0..good.len() * 8 {
            let mut v = good.clone();
            v[i / 8] ^= 1 << (i % 8);
            if let Ok(f) = GrafiteFilter::decode(&v) {
                for &x in sorted.iter().take(20) {
                    f.may_contain_range(x, x.saturating_add(1000));
                    f.may_contain_projection(x);
                }
            }
        }
    }

    #[test]
    fn golden_bytes() {
        // The serialized body is a format: this pins it (docs/format/sst.md, Grafite block).
        // Three projections at 6 bits per key: r = 3·2^4 = 48, four low bits each, hashes 5,
        // 34 and 46 (lows 0x5, 0x2, 0xe; ones at 0, 3 and 4 of a 6-bit high vector).
        let x = |k: &[u8]| crate::filter::projection::Projection::fixed(0).project(k);
        let xs = vec![x(b"apple"), x(b"banana"), x(b"cherry")];
        let bytes = GrafiteBuilder::with_projections(xs.clone()).finish(7, 6.0);
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, GOLDEN);
        let f = GrafiteFilter::decode(&bytes).unwrap();
        for x in xs {
            assert!(f.may_contain_projection(x));
        }
    }

    const GOLDEN: &str = "010400000700000000000000030000000000000030000000000000000300000000000000250e0000000000001900000000000000";

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// No false negatives: every range holding a key says maybe, for any keys, range and
        /// bits per key.
        #[test]
        fn never_a_false_no(
            mut xs in proptest::collection::vec(any::<u64>(), 1..300),
            pick in any::<proptest::sample::Index>(),
            before in 0u64..1 << 40,
            after in 0u64..1 << 40,
            bpk in 2.0f64..30.0,
            seed in any::<u64>(),
            dense in any::<bool>(),
        ) {
            if dense {
                for x in &mut xs {
                    *x %= 1 << 20;
                }
            }
            let f = build(&xs, bpk, seed);
            let x = xs[pick.index(xs.len())];
            prop_assert!(f.may_contain_projection(x));
            prop_assert!(f.may_contain_range(x.saturating_sub(before), x.saturating_add(after)));
        }
    }
}
