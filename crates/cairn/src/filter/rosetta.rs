//! Rosetta (Luo et al., SIGMOD'20): a range filter made of Bloom filters over the binary
//! prefixes of a fixed-width key projection, one table's worth per block.
//!
//! **Projection.** A user key maps to a number `x` by the table's key projection
//! (`projection.rs`: up to 8 bytes after an offset, big-endian); a range `[lo, hi]` maps to an
//! interval of those numbers. Keys whose projections are equal are indistinguishable: the
//! filter answers "maybe" for all of them, never a false "empty".
//!
//! **Levels.** The level at height `h` (0..=63) holds the prefixes `x >> h` (64 − h bits) of the
//! table's keys; height 0 is the whole projection (Rosetta's B_L), height `h` a dyadic interval
//! of 2^h projection values. Any subset of heights may be stored; the bits of each come from
//! the allocation (`tuning/rosetta.rs`). A level that is not stored answers "maybe".
//!
//! **Query.** `[a, b]` is split into its dyadic intervals (at most 2 per height), left to right.
//! Each is probed at its height and, if positive, *doubted*: its sub-intervals at the next
//! stored height below are probed depth-first, until one reaches height 0 positive (the range
//! may hold a key) or all are negative (that interval is empty). Doubting stops with "maybe"
//! when it would go more than `max_depth` heights below the interval it started from or spend
//! more than `budget` Bloom probes on the query. The first interval that ends "maybe" gives
//! the *tightened* lower bound: no key of the table lies in `[a, t)`, so a forward read seeks
//! to `t` (and symmetrically for a backward read).
//!
//! Serialized form (inside an SST block, which adds the checksum):
//! ```text
//! offset size  field
//! 0      1     version     = 1
//! 1      1     key_offset  bytes of the user key before the projection
//! 2      1     levels      N, 0..=64
//! 3      1     reserved    = 0
//! 4      8     seed        u64le
//! 12     8     keys        distinct projections, u64le
//! 20     24·N  level descriptors, heights strictly increasing:
//!              height:u8 ‖ k:u8 (1..=30) ‖ reserved:u16 = 0 ‖ reserved:u32 = 0 ‖
//!              prefixes:u64le (distinct prefixes inserted) ‖ num_bits:u64le (≥ 64)
//! …      …     bit arrays in descriptor order, ⌈num_bits/8⌉ bytes each (bit i: byte i/8,
//!              bit i%8, LSB first)
//! ```
//! A prefix `p` at height `h` is probed as a Bloom key `g = fmix64(p ⊕ (seed + h + 1)·φ)` with
//! the same double hashing and position mapping as point filter units (`bloom.rs`).

use super::bloom::{fmix64, num_probes, probe_positions, SEED_SPREAD};
use crate::format::coding::read_u64;

/// Serialization version.
pub const VERSION: u8 = 1;
/// Heights a filter can store (0..=63).
pub const HEIGHTS: usize = 64;
const HEADER_LEN: usize = 20;
const LEVEL_LEN: usize = 24;
const MAX_PROBES: u32 = 30;
/// Most children of one interval probed together.
const BATCH: u64 = 64;

#[inline]
fn prefix_hash(seed: u64, height: usize, prefix: u64) -> u64 {
    fmix64(prefix ^ seed.wrapping_add(height as u64 + 1).wrapping_mul(SEED_SPREAD))
}

/// Writes the filter of a table's projections.
#[derive(Debug)]
pub struct RosettaBuilder {
    offset: usize,
    projections: Vec<u64>,
}

impl RosettaBuilder {
    /// A builder of a table's projections (any order; duplicates count once), made after
    /// `offset` bytes of each key (recorded in the block).
    pub fn with_projections(offset: usize, projections: Vec<u64>) -> Self {
        RosettaBuilder { offset, projections }
    }

    /// The serialized filter, with the levels `plan` picks from the distinct prefixes per
    /// height (`[0]`: distinct projections): `(height, total bits)`, heights distinct. Levels
    /// given less than half a bit per prefix are left out (they would pass nearly every probe).
    pub fn finish(self, seed: u64, plan: impl FnOnce(&[u64; HEIGHTS]) -> Vec<(usize, f64)>) -> Vec<u8> {
        let mut xs = self.projections;
        xs.sort_unstable();
        xs.dedup();
        let counts = prefix_counts_sorted(&xs);
        let plan = plan(&counts);
        let mut levels: Vec<(usize, u32, u64, u64)> = plan
            .iter()
            .filter(|(h, bits)| *h < HEIGHTS && counts[*h] > 0 && *bits >= 0.5 * counts[*h] as f64)
            .map(|&(h, bits)| {
                let n = counts[h];
                let num_bits = (bits.ceil() as u64).max(64);
                (h, num_probes(num_bits as f64 / n as f64), n, num_bits)
            })
            .collect();
        levels.sort_unstable_by_key(|l| l.0);
        levels.dedup_by_key(|l| l.0);
        let arrays: usize = levels.iter().map(|l| l.3.div_ceil(8) as usize).sum();
        let mut out = vec![0u8; HEADER_LEN + LEVEL_LEN * levels.len() + arrays];
        out[0] = VERSION;
        out[1] = self.offset.min(255) as u8;
        out[2] = levels.len() as u8;
        out[4..12].copy_from_slice(&seed.to_le_bytes());
        out[12..20].copy_from_slice(&(xs.len() as u64).to_le_bytes());
        let mut at = HEADER_LEN + LEVEL_LEN * levels.len();
        for (i, &(h, k, n, num_bits)) in levels.iter().enumerate() {
            let d = HEADER_LEN + LEVEL_LEN * i;
            out[d] = h as u8;
            out[d + 1] = k as u8;
            out[d + 8..d + 16].copy_from_slice(&n.to_le_bytes());
            out[d + 16..d + 24].copy_from_slice(&num_bits.to_le_bytes());
            let len = num_bits.div_ceil(8) as usize;
            let bits = &mut out[at..at + len];
            let mut prev = None;
            for &x in &xs {
                let p = x >> h;
                if prev == Some(p) {
                    continue;
                }
                prev = Some(p);
                for pos in probe_positions(prefix_hash(seed, h, p), num_bits, k) {
                    bits[(pos >> 3) as usize] |= 1 << (pos & 7);
                }
            }
            at += len;
        }
        out
    }
}

/// Distinct prefixes per height of sorted, distinct projections: a key adds a new prefix at
/// every height below the highest bit in which it differs from the previous key.
fn prefix_counts_sorted(xs: &[u64]) -> [u64; HEIGHTS] {
    let mut counts = [0u64; HEIGHTS];
    if xs.is_empty() {
        return counts;
    }
    // new_below[d]: keys whose first differing bit from their predecessor is bit d − 1.
    let mut new_below = [0u64; HEIGHTS + 1];
    for w in xs.windows(2) {
        new_below[64 - (w[0] ^ w[1]).leading_zeros() as usize] += 1;
    }
    let mut above = 1; // the first key adds a prefix at every height
    for h in (0..HEIGHTS).rev() {
        above += new_below[h + 1];
        counts[h] = above;
    }
    counts
}

/// Limits on doubting (defaults from the authors' code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeLimits {
    /// Heights doubting may descend below the dyadic interval it started from.
    pub max_depth: u32,
    /// Bloom probes one query may spend on one filter.
    pub budget: u32,
}

impl Default for ProbeLimits {
    fn default() -> Self {
        ProbeLimits {
            max_depth: 32,
            budget: 100,
        }
    }
}

/// What a range query cost, per height (filled only when the caller samples it).
#[derive(Debug, Clone)]
pub struct ProbeCounts {
    /// Bloom probes per height.
    pub per_height: [u32; HEIGHTS],
}

impl Default for ProbeCounts {
    fn default() -> Self {
        ProbeCounts {
            per_height: [0; HEIGHTS],
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Level {
    start: usize,
    num_bits: u64,
    k: u32,
    prefixes: u64,
}

/// One stored level, as [`RosettaFilter::levels`] reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelInfo {
    /// Height (0: whole projections).
    pub height: usize,
    /// Distinct prefixes inserted.
    pub prefixes: u64,
    /// Bits in its array.
    pub num_bits: u64,
    /// Probes per lookup.
    pub k: u32,
}

/// A decoded range filter; probing reads the serialized bytes in place.
#[derive(Clone)]
pub struct RosettaFilter {
    bytes: Box<[u8]>,
    offset: usize,
    seed: u64,
    keys: u64,
    levels: [Option<Level>; HEIGHTS],
    /// `below[h]`: the highest stored height < h (`h` in 0..=64), or `None`.
    below: [Option<u8>; HEIGHTS + 1],
}

impl std::fmt::Debug for RosettaFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RosettaFilter")
            .field("offset", &self.offset)
            .field("keys", &self.keys)
            .field("levels", &self.levels().len())
            .finish()
    }
}

/// One dyadic interval: `prefix` at `height`.
#[derive(Clone, Copy)]
struct Node {
    prefix: u64,
    height: usize,
}

impl Node {
    fn start(self) -> u64 {
        if self.height >= 64 {
            0
        } else {
            self.prefix << self.height
        }
    }
    fn end(self) -> u64 {
        if self.height >= 64 {
            u64::MAX
        } else {
            (self.prefix << self.height) | ((1u64 << self.height) - 1)
        }
    }
}

/// The dyadic intervals of `[a, b]`, left to right (at most two per height).
fn dyadic(a: u64, b: u64, out: &mut [Node; 2 * (HEIGHTS + 1)]) -> usize {
    let (mut x, end) = (u128::from(a), u128::from(b));
    let mut n = 0;
    while x <= end {
        let mut h = if x == 0 { 64 } else { x.trailing_zeros().min(64) as usize };
        while x + (1u128 << h) - 1 > end {
            h -= 1;
        }
        out[n] = Node {
            prefix: (x >> h) as u64,
            height: h,
        };
        n += 1;
        x += 1u128 << h;
    }
    n
}

struct Search<'a> {
    limits: ProbeLimits,
    spent: u32,
    counts: Option<&'a mut ProbeCounts>,
    forward: bool,
}

impl RosettaFilter {
    /// Validates and wraps serialized bytes.
    ///
    /// # Errors
    /// A short description of the first field that is invalid.
    pub fn decode(bytes: Vec<u8>) -> Result<Self, &'static str> {
        if bytes.len() < HEADER_LEN {
            return Err("range filter shorter than its header");
        }
        if bytes[0] != VERSION {
            return Err("unknown range filter version");
        }
        if bytes[3] != 0 {
            return Err("range filter reserved byte is not zero");
        }
        let n = usize::from(bytes[2]);
        if n > HEIGHTS {
            return Err("range filter has more levels than heights");
        }
        let seed = read_u64(&bytes, 4).ok_or("range filter seed")?;
        let keys = read_u64(&bytes, 12).ok_or("range filter key count")?;
        let mut levels = [None; HEIGHTS];
        let mut at = (HEADER_LEN + LEVEL_LEN * n) as u64;
        if at > bytes.len() as u64 {
            return Err("range filter level table is truncated");
        }
        let mut last: Option<usize> = None;
        for i in 0..n {
            let d = HEADER_LEN + LEVEL_LEN * i;
            let h = usize::from(bytes[d]);
            let k = u32::from(bytes[d + 1]);
            if h >= HEIGHTS || last.is_some_and(|l| l >= h) {
                return Err("range filter heights are not increasing and below 64");
            }
            last = Some(h);
            if k == 0 || k > MAX_PROBES {
                return Err("range filter probe count out of range");
            }
            if bytes[d + 2..d + 8].iter().any(|&b| b != 0) {
                return Err("range filter level reserved bytes are not zero");
            }
            let prefixes = read_u64(&bytes, d + 8).ok_or("range filter prefixes")?;
            let num_bits = read_u64(&bytes, d + 16).ok_or("range filter bits")?;
            if num_bits < 64 || prefixes == 0 || prefixes > keys {
                return Err("range filter level size out of range");
            }
            let len = num_bits.div_ceil(8);
            let end = at.checked_add(len).ok_or("range filter level overflows")?;
            if end > bytes.len() as u64 {
                return Err("range filter bit arrays are truncated");
            }
            levels[h] = Some(Level {
                start: at as usize,
                num_bits,
                k,
                prefixes,
            });
            at = end;
        }
        if at != bytes.len() as u64 {
            return Err("range filter has trailing bytes");
        }
        let mut below = [None; HEIGHTS + 1];
        for h in 1..=HEIGHTS {
            below[h] = if levels[h - 1].is_some() { Some((h - 1) as u8) } else { below[h - 1] };
        }
        Ok(RosettaFilter {
            offset: usize::from(bytes[1]),
            bytes: bytes.into_boxed_slice(),
            seed,
            keys,
            levels,
            below,
        })
    }

    /// Bytes of the user key skipped before the projection.
    pub fn key_offset(&self) -> usize {
        self.offset
    }

    /// Distinct projections of the table.
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// The stored levels, lowest height first.
    pub fn levels(&self) -> Vec<LevelInfo> {
        (0..HEIGHTS)
            .filter_map(|h| {
                self.levels[h].map(|l| LevelInfo {
                    height: h,
                    prefixes: l.prefixes,
                    num_bits: l.num_bits,
                    k: l.k,
                })
            })
            .collect()
    }

    /// The highest stored height (`None`: no level is stored).
    pub fn top_height(&self) -> Option<usize> {
        self.below[HEIGHTS].map(usize::from)
    }

    /// Bits in all levels.
    pub fn num_bits(&self) -> u64 {
        self.levels.iter().flatten().map(|l| l.num_bits).sum()
    }

    /// Bytes held in memory.
    pub fn memory_usage(&self) -> usize {
        self.bytes.len() + std::mem::size_of::<Self>()
    }

    #[inline]
    fn probe(&self, level: &Level, height: usize, prefix: u64) -> bool {
        let bits = &self.bytes[level.start..];
        probe_positions(prefix_hash(self.seed, height, prefix), level.num_bits, level.k)
            .all(|pos| bits[(pos >> 3) as usize] & (1 << (pos & 7)) != 0)
    }

    /// False if no key with projection `x` was added (probes the height-0 level; "maybe"
    /// when it is not stored).
    pub fn may_contain_projection(&self, x: u64) -> bool {
        match &self.levels[0] {
            Some(l) => self.probe(l, 0, x),
            None => true,
        }
    }

    /// The smallest projection in `[a, b]` the filter cannot rule out (`None`: the table holds
    /// no key with a projection in `[a, b]`). Every projection in `[a, t)` is certainly absent.
    pub fn first_maybe(&self, a: u64, b: u64, limits: ProbeLimits, counts: Option<&mut ProbeCounts>) -> Option<u64> {
        self.search(a, b, limits, counts, true)
    }

    /// The largest projection in `[a, b]` the filter cannot rule out; every projection in
    /// `(t, b]` is certainly absent.
    pub fn last_maybe(&self, a: u64, b: u64, limits: ProbeLimits, counts: Option<&mut ProbeCounts>) -> Option<u64> {
        self.search(a, b, limits, counts, false)
    }

    fn search(&self, a: u64, b: u64, limits: ProbeLimits, counts: Option<&mut ProbeCounts>, forward: bool) -> Option<u64> {
        if a > b {
            return None;
        }
        let mut nodes = [Node { prefix: 0, height: 0 }; 2 * (HEIGHTS + 1)];
        let n = dyadic(a, b, &mut nodes);
        let mut s = Search {
            limits,
            spent: 0,
            counts,
            forward,
        };
        let found = match (&self.levels[0], self.top_height()) {
            (Some(level), Some(0)) => self.search_single(level, &nodes[..n], &mut s),
            _ => self.search_by_doubting(&nodes[..n], &mut s),
        };
        found.map(|t| t.clamp(a, b))
    }

    /// [`search`](Self::search) over its dyadic intervals `nodes`, one at a time.
    fn search_by_doubting(&self, nodes: &[Node], s: &mut Search<'_>) -> Option<u64> {
        let forward = s.forward;
        let mut visit = |node: Node| self.doubt(node, node.height, None, s);
        if forward {
            nodes.iter().find_map(|&nd| visit(nd))
        } else {
            nodes.iter().rev().find_map(|&nd| visit(nd))
        }
    }

    /// [`search`](Self::search) in a filter that stores height 0 alone (the layout unless the
    /// sampled range sizes call for more): the same answer and probe count as doubting its
    /// intervals `nodes` one by one, with the values the budget pays for probed in batches.
    fn search_single(&self, level: &Level, nodes: &[Node], s: &mut Search<'_>) -> Option<u64> {
        let (first, last) = (nodes.first()?.start(), nodes.last()?.end());
        // The values, from the end the search starts at, that doubting would probe before an
        // interval it cannot pay for (its depth below the interval or its probes): that
        // interval answers "maybe" unless a value before it does.
        let (mut paid, mut stop) = (0u64, None);
        for i in 0..nodes.len() {
            let nd = nodes[if s.forward { i } else { nodes.len() - 1 - i }];
            let h = nd.height;
            let left = u64::from(s.limits.budget).saturating_sub(paid);
            let payable = if h == 0 {
                left > 0
            } else {
                h <= s.limits.max_depth as usize && h < 32 && 1u64 << h <= left
            };
            if !payable {
                stop = Some(if s.forward { nd.start() } else { nd.end() });
                break;
            }
            paid += 1u64 << h;
        }
        let mut probed = 0u64;
        let mut found = None;
        while probed < paid {
            let count = (paid - probed).min(BATCH);
            let start = if s.forward { first + probed } else { last - probed - (count - 1) };
            let hits = self.probe_batch(level, 0, start, count);
            if hits != 0 {
                // The first value that may hold a key, in the search's direction.
                let at = if s.forward {
                    u64::from(hits.trailing_zeros())
                } else {
                    63 - u64::from(hits.leading_zeros())
                };
                probed += if s.forward { at + 1 } else { count - at };
                found = Some(start + at);
                break;
            }
            probed += count;
        }
        s.spent += probed as u32;
        if let Some(c) = s.counts.as_deref_mut() {
            c.per_height[0] += probed as u32;
        }
        found.or(stop)
    }

    /// Doubts `node` (reached from a dyadic interval at `top`): `None` if it is certainly
    /// empty, else the first (forward) or last position of the first sub-interval that may
    /// hold a key. `known`: the answer of its level's probe, when it was computed already.
    fn doubt(&self, node: Node, top: usize, known: Option<bool>, s: &mut Search<'_>) -> Option<u64> {
        let maybe = Some(if s.forward { node.start() } else { node.end() });
        if let Some(level) = self.levels.get(node.height).and_then(Option::as_ref) {
            if s.spent >= s.limits.budget {
                return maybe;
            }
            s.spent += 1;
            if let Some(c) = s.counts.as_deref_mut() {
                c.per_height[node.height] += 1;
            }
            if !known.unwrap_or_else(|| self.probe(level, node.height, node.prefix)) {
                return None;
            }
        }
        if node.height == 0 {
            return maybe;
        }
        let Some(child) = self.below[node.height] else {
            return maybe; // no stored level below: nothing can rule the interval out
        };
        let child = usize::from(child);
        let fan = node.height - child;
        if top - child > s.limits.max_depth as usize {
            return maybe;
        }
        // Each child costs at least one probe: a fan-out the budget cannot pay for is "maybe".
        if fan >= 32 || (1u32 << fan) > s.limits.budget.saturating_sub(s.spent) {
            return maybe;
        }
        let base = if node.height >= 64 { 0 } else { node.prefix << fan };
        let count = 1u64 << fan;
        // The children's probes, answered together (the walk below keeps the order and the
        // budget of probing them one at a time).
        let answers = match &self.levels[child] {
            Some(level) if count <= BATCH => Some(self.probe_batch(level, child, base, count)),
            _ => None,
        };
        for i in 0..count {
            let c = if s.forward { i } else { count - 1 - i };
            let node = Node {
                prefix: base | c,
                height: child,
            };
            let t = self.doubt(node, top, answers.map(|a| a >> c & 1 == 1), s);
            if t.is_some() {
                return t;
            }
        }
        None
    }

    /// Probes prefixes `base + c` for `c` in `0..count` (`count ≤ BATCH`) at `height`: bit
    /// `c` of the result is set when prefix `base + c` may have been added. Round `i` loads the
    /// `i`-th bit of every prefix still possible before testing any, so a batch waits for
    /// about as many rounds of parallel cache misses as a single probe tests bits (most
    /// prefixes fail within two), not for each prefix's misses one after another.
    fn probe_batch(&self, level: &Level, height: usize, base: u64, count: u64) -> u64 {
        // Small batches (a short range's) do not pay for clearing large arrays.
        if count <= 8 {
            self.probe_batch_of::<8>(level, height, base, count)
        } else {
            self.probe_batch_of::<{ BATCH as usize }>(level, height, base, count)
        }
    }

    fn probe_batch_of<const N: usize>(&self, level: &Level, height: usize, base: u64, count: u64) -> u64 {
        debug_assert!(count <= N as u64, "a batch of {count} prefixes");
        let bits = &self.bytes[level.start..];
        let count = count.min(N as u64);
        let mut x = [0u64; N];
        let mut delta = [0u64; N];
        for (c, (x, d)) in x.iter_mut().zip(&mut delta).take(count as usize).enumerate() {
            // The positions of `probe_positions`: g, g + d, g + 2d, … mapped onto the array.
            *x = prefix_hash(self.seed, height, base + c as u64);
            *d = x.rotate_left(32) | 1;
        }
        let at = |x: u64| ((u128::from(x) * u128::from(level.num_bits)) >> 64) as usize;
        let mut alive = if count == 64 { u64::MAX } else { (1u64 << count) - 1 };
        for _ in 0..level.k {
            let mut m = alive;
            while m != 0 {
                let c = m.trailing_zeros() as usize;
                m &= m - 1;
                crate::memory::prefetch(&raw const bits[at(x[c]) >> 3]);
            }
            let mut m = alive;
            while m != 0 {
                let c = m.trailing_zeros() as usize;
                m &= m - 1;
                let p = at(x[c]);
                if bits[p >> 3] & (1 << (p & 7)) == 0 {
                    alive &= !(1u64 << c);
                }
                x[c] = x[c].wrapping_add(delta[c]);
            }
            if alive == 0 {
                break;
            }
        }
        alive
    }
}


/// Size-histogram buckets: bucket `b` counts queries spanning `(2^(b−1), 2^b]` projection
/// values (bucket 0: one value).
pub const SIZE_BUCKETS: usize = HEIGHTS + 1;

/// The bucket of a query over projections `[a, b]`.
#[inline]
pub fn size_bucket(a: u64, b: u64) -> usize {
    let width = b.saturating_sub(a);
    64 - width.leading_zeros() as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeSet;

    fn build(keys: &BTreeSet<u64>, plan: &[(usize, f64)]) -> RosettaFilter {
        let b = RosettaBuilder::with_projections(0, keys.iter().copied().collect());
        RosettaFilter::decode(b.finish(7, |_| plan.to_vec())).unwrap()
    }

    fn per_prefix(keys: &BTreeSet<u64>, heights: std::ops::Range<usize>, bpp: f64) -> Vec<(usize, f64)> {
        let xs: Vec<u64> = keys.iter().copied().collect();
        let c = prefix_counts_sorted(&xs);
        heights.map(|h| (h, bpp * c[h] as f64)).collect()
    }

    #[test]
    fn prefix_counts_match_a_direct_count() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let xs: BTreeSet<u64> = (0..2000).map(|_| rng.gen::<u64>() >> rng.gen_range(0..64)).collect();
        let xs: Vec<u64> = xs.into_iter().collect();
        let c = prefix_counts_sorted(&xs);
        for (h, &count) in c.iter().enumerate() {
            let direct: BTreeSet<u64> = xs.iter().map(|x| x >> h).collect();
            assert_eq!(count, direct.len() as u64, "height {h}");
        }
    }

    #[test]
    fn dyadic_intervals_tile_the_range() {
        let mut nodes = [Node { prefix: 0, height: 0 }; 2 * (HEIGHTS + 1)];
        for (a, b) in [(0, 0), (3, 3), (8, 12), (1, 64), (0, u64::MAX), (5, u64::MAX), (u64::MAX, u64::MAX)] {
            let n = dyadic(a, b, &mut nodes);
            assert!(n <= 128);
            let mut x = a;
            for (i, nd) in nodes[..n].iter().enumerate() {
                assert_eq!(nd.start(), x, "[{a}, {b}] interval {i}");
                if i + 1 < n {
                    x = nd.end() + 1;
                } else {
                    assert_eq!(nd.end(), b);
                }
            }
        }
        assert_eq!(dyadic(8, 12, &mut nodes), 2, "the paper's example: [8, 11] and [12, 12]");
    }

    /// The contract every plan must keep: no false "empty", and the tightened bounds never
    /// skip a key.
    fn check_no_false_negatives(f: &RosettaFilter, keys: &BTreeSet<u64>, rng: &mut impl Rng, limits: ProbeLimits) {
        for _ in 0..3000 {
            let a = if rng.gen_bool(0.5) {
                *keys.iter().nth(rng.gen_range(0..keys.len())).unwrap()
            } else {
                rng.gen::<u64>()
            };
            let a = a.saturating_sub(rng.gen_range(0..100));
            let width = rng.gen_range(0..20);
            let b = a.saturating_add(rng.gen_range(0..1u64 << width));
            let first = keys.range(a..=b).next().copied();
            let last = keys.range(a..=b).next_back().copied();
            let lo = f.first_maybe(a, b, limits, None);
            let hi = f.last_maybe(a, b, limits, None);
            if let Some(k) = first {
                let t = lo.expect("a range holding a key is never empty");
                assert!(t >= a && t <= k, "tightened lower {t} skips key {k} in [{a}, {b}]");
            }
            if let Some(k) = last {
                let t = hi.expect("a range holding a key is never empty");
                assert!(t <= b && t >= k, "tightened upper {t} skips key {k} in [{a}, {b}]");
            }
            assert_eq!(lo.is_some(), hi.is_some(), "both directions agree on emptiness");
        }
    }

    #[test]
    fn no_false_negatives_under_every_shape_of_plan() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let keys: BTreeSet<u64> = (0..3000).map(|_| rng.gen::<u64>() & !0xfff).chain([0, u64::MAX]).collect();
        let plans = [
            per_prefix(&keys, 0..8, 10.0),
            per_prefix(&keys, 0..1, 20.0),
            per_prefix(&keys, 3..9, 6.0),
            per_prefix(&keys, 0..64, 2.0),
            vec![],
        ];
        for plan in &plans {
            let f = build(&keys, plan);
            check_no_false_negatives(&f, &keys, &mut rng, ProbeLimits::default());
            check_no_false_negatives(&f, &keys, &mut rng, ProbeLimits { max_depth: 2, budget: 3 });
            for &k in keys.iter().take(200) {
                assert!(f.may_contain_projection(k));
            }
        }
    }

    #[test]
    fn a_batch_of_probes_answers_as_probes_one_at_a_time() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        let keys: BTreeSet<u64> = (0..5000).map(|_| rng.gen_range(0..1u64 << 24)).collect();
        let f = build(&keys, &per_prefix(&keys, 0..6, 6.0));
        for _ in 0..2000 {
            let height = rng.gen_range(0..6);
            let count = 1u64 << rng.gen_range(0..=6);
            let base = (rng.gen_range(0..1u64 << 24) >> height) & !(count - 1);
            let level = f.levels[height].as_ref().unwrap();
            let batch = f.probe_batch(level, height, base, count);
            for c in 0..count {
                assert_eq!(
                    batch >> c & 1 == 1,
                    f.probe(level, height, base + c),
                    "height {height} prefix {}",
                    base + c
                );
            }
            assert_eq!(batch >> (count - 1) >> 1, 0, "no bit past the batch");
        }
    }

    #[test]
    fn a_single_level_search_answers_and_counts_as_doubting_does() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let keys: BTreeSet<u64> = (0..3000).map(|_| rng.gen_range(0..1u64 << 20)).collect();
        for bpk in [2.0, 8.0, 22.0] {
            let f = build(&keys, &per_prefix(&keys, 0..1, bpk));
            let level = f.levels[0].unwrap();
            let mut nodes = [Node { prefix: 0, height: 0 }; 2 * (HEIGHTS + 1)];
            for _ in 0..3000 {
                let a = rng.gen_range(0..1u64 << 20);
                let width = rng.gen_range(0..9);
                let b = a + rng.gen_range(0..1u64 << width);
                let limits = ProbeLimits {
                    max_depth: rng.gen_range(0..8),
                    budget: rng.gen_range(0..300),
                };
                let n = dyadic(a, b, &mut nodes);
                for forward in [true, false] {
                    let (mut c1, mut c2) = (ProbeCounts::default(), ProbeCounts::default());
                    fn search(limits: ProbeLimits, c: &mut ProbeCounts, forward: bool) -> Search<'_> {
                        Search {
                            limits,
                            spent: 0,
                            counts: Some(c),
                            forward,
                        }
                    }
                    let batched = f.search_single(&level, &nodes[..n], &mut search(limits, &mut c1, forward));
                    let one_by_one = f.search_by_doubting(&nodes[..n], &mut search(limits, &mut c2, forward));
                    assert_eq!(batched, one_by_one, "[{a}, {b}] {limits:?} forward {forward}");
                    assert_eq!(c1.per_height, c2.per_height, "[{a}, {b}] {limits:?} forward {forward}");
                }
            }
        }
    }

    #[test]
    fn short_empty_ranges_are_ruled_out() {
        // Keys on a stride of 1024; empty ranges of 1..64 values between them.
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let keys: BTreeSet<u64> = (0..20_000u64).map(|i| i * 1024).collect();
        let single = build(&keys, &per_prefix(&keys, 0..1, 22.0));
        let mut fp_single = 0;
        let trials = 20_000;
        for _ in 0..trials {
            let r = 1u64 << rng.gen_range(0..5); // 1..=16
            let a = rng.gen_range(0..20_000u64) * 1024 + 1 + rng.gen_range(0..1000 - r);
            let b = a + r - 1;
            fp_single += u32::from(single.first_maybe(a, b, ProbeLimits::default(), None).is_some());
        }
        // 22 bits per key in one level: per-probe FPR ≈ 2.6e-5, at most 16 probes.
        assert!(fp_single <= 20, "single level: {fp_single} false positives of {trials}");
    }

    #[test]
    fn tightening_finds_the_key_inside() {
        let keys: BTreeSet<u64> = [100, 5000, 5010, 9000].into_iter().collect();
        let f = build(&keys, &per_prefix(&keys, 0..14, 30.0));
        let l = ProbeLimits::default();
        assert_eq!(f.first_maybe(101, 4999, l, None), None);
        let t = f.first_maybe(200, 8000, l, None).unwrap();
        assert!((200..=5000).contains(&t) && t > 4000, "tightened to {t}");
        let t = f.last_maybe(200, 8000, l, None).unwrap();
        assert!((5010..=8000).contains(&t) && t < 6000, "tightened to {t}");
        let mut c = ProbeCounts::default();
        f.first_maybe(101, 4999, l, Some(&mut c));
        assert!(c.per_height.iter().sum::<u32>() > 0);
        assert!(c.per_height.iter().sum::<u32>() <= l.budget);
    }

    #[test]
    fn the_budget_bounds_a_single_level_filter() {
        let keys: BTreeSet<u64> = (0..1000u64).map(|i| i * 1_000_000).collect();
        let f = build(&keys, &per_prefix(&keys, 0..1, 20.0));
        let mut c = ProbeCounts::default();
        // 1000 values need 1000 probes at height 0: the budget rules out [1, 63] and answers
        // "maybe" from the first interval it cannot pay for.
        assert_eq!(f.first_maybe(1, 1000, ProbeLimits::default(), Some(&mut c)), Some(64));
        assert!(c.per_height[0] <= 100);
        assert_eq!(f.first_maybe(1, 64, ProbeLimits::default(), None), None);
    }

    #[test]
    fn golden_bytes_and_rejects_malformed() {
        let keys: BTreeSet<u64> = [1u64, 2, 3].into_iter().collect();
        let b = RosettaBuilder::with_projections(0, keys.iter().copied().collect());
        let bytes = b.finish(9, |_| vec![(0, 30.0), (1, 10.0)]);
        assert_eq!(&bytes[..4], &[1, 0, 2, 0]);
        assert_eq!(&bytes[4..12], &9u64.to_le_bytes());
        assert_eq!(&bytes[12..20], &3u64.to_le_bytes());
        // height 0: 3 prefixes, 64 bits (the minimum), k = round(ln 2 · 64/3) = 15.
        assert_eq!(&bytes[20..28], &[0, 15, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&bytes[28..44], &[3, 0, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0]);
        // height 1: prefixes {0, 1}, 64 bits, k = 22.
        assert_eq!(&bytes[44..52], &[1, 22, 0, 0, 0, 0, 0, 0]);
        assert_eq!(bytes.len(), 20 + 48 + 16);
        let f = RosettaFilter::decode(bytes.clone()).unwrap();
        assert_eq!(f.levels().len(), 2);
        assert_eq!(f.num_bits(), 128);
        let set: Vec<usize> = (0..64).filter(|&i| bytes[68 + i / 8] & (1 << (i % 8)) != 0).collect();
        assert_eq!(set, GOLDEN_HEIGHT0_BITS, "hashing and probe sequence are part of the format");

        let bad = |i: usize, v: u8| {
            let mut b = bytes.clone();
            b[i] = v;
            RosettaFilter::decode(b).is_err()
        };
        assert!(bad(0, 2), "version");
        assert!(bad(2, 3), "level count");
        assert!(bad(3, 1), "reserved");
        assert!(bad(20, 1), "heights not increasing");
        assert!(bad(21, 0), "k = 0");
        assert!(bad(21, 31), "k > 30");
        assert!(bad(23, 1), "level reserved");
        assert!(bad(36, 63), "bit count below 64");
        assert!(bad(43, 1), "bit count past the block");
        assert!(bad(28, 9), "more prefixes than keys");
        assert!(RosettaFilter::decode(bytes[..bytes.len() - 1].to_vec()).is_err());
        let mut long = bytes.clone();
        long.push(0);
        assert!(RosettaFilter::decode(long).is_err());
        assert!(RosettaFilter::decode(bytes[..10].to_vec()).is_err());
    }
    const GOLDEN_HEIGHT0_BITS: &[usize] = &[
        2, 5, 6, 11, 12, 16, 17, 18, 19, 20, 22, 24, 25, 26, 30, 31, 32, 36, 37, 39, 40, 42, 43, 46, 49, 50, 55, 56, 57, 59,
        60, 63,
    ];
}
