//! Fixed-width key prefixes of a table's fence pointers (and of its segments' last keys), built
//! in memory when the table is opened; not an on-disk structure.
//!
//! A point lookup's binary search over the index block touches one index entry per step, each
//! a likely cache miss. The prefixes are 8 bytes of each key taken after the prefix every key
//! of the table shares (the longest common prefix of its smallest and largest keys), packed
//! big-endian into one `u64` array: the search runs over that compact array and ends, almost
//! always, on a single candidate, which alone is compared in full. Prefixes preserve order
//! (a key shorter than 8 bytes past the shared part is zero-padded), so entries whose prefix
//! is below the target's hold smaller keys and entries whose prefix is above hold larger ones;
//! only equal prefixes need the full comparison.
//!
//! The fence pointers of the index keep one prefix per restart point of the index block: with
//! the default 8 entries per restart interval, 1 byte per data block instead of 8 (the pinned
//! fences are charged to the block cache, and at 2% of the data as cache every byte per data
//! block is ~0.3% of the cache). A lookup then scans one restart interval of the index block
//! (a few cache lines). An index of one entry per restart point (tables written before delta
//! handles) keeps one prefix per [`INDEX_STRIDE`] restart points, to the same effect.

use std::cmp::Ordering;

/// The prefixes of one sorted list of user keys.
#[derive(Debug)]
pub(crate) struct Fences {
    /// What every key of the table starts with.
    common: Box<[u8]>,
    /// The prefix of every `stride`-th key.
    prefixes: Box<[u64]>,
    stride: usize,
    /// Keys in the list.
    len: usize,
    /// Every [`GROUP`]-th prefix: a search finds its group here (a few hundred bytes that stay
    /// in the CPU cache), prefetches the group's lines at once and searches them, instead of
    /// a binary search over the whole array that misses the cache at nearly every step.
    top: Box<[u64]>,
}

/// Prefixes per group: 512 bytes, eight cache lines.
const GROUP: usize = 64;

/// Restart points per kept prefix in an index of one entry per restart point.
pub(crate) const INDEX_STRIDE: usize = 8;

impl Fences {
    /// Prefixes of every `stride`-th of `keys` (ascending user keys) past `common`; `None` if a
    /// key does not start with `common` or the keys are not in order (a damaged table: lookups
    /// then fall back to the plain search).
    pub(crate) fn new(common: &[u8], keys: impl IntoIterator<Item = impl AsRef<[u8]>>, stride: usize) -> Option<Fences> {
        let stride = stride.max(1);
        let (mut prefixes, mut last, mut len) = (Vec::new(), 0, 0);
        for k in keys {
            let p = prefix(common, k.as_ref()).ok()?;
            if len > 0 && last > p {
                return None;
            }
            if len % stride == 0 {
                prefixes.push(p);
            }
            (last, len) = (p, len + 1);
        }
        Some(Fences {
            common: common.into(),
            top: prefixes.iter().step_by(GROUP).copied().collect(),
            prefixes: prefixes.into(),
            stride,
            len,
        })
    }

    /// `(lo, hi)`: every key before `lo` is smaller than `user_key` and every key from `hi` on
    /// is larger; only `lo..hi` need comparing in full.
    #[inline]
    pub(crate) fn candidates(&self, user_key: &[u8]) -> (usize, usize) {
        match prefix(&self.common, user_key) {
            Ok(p) => {
                // Kept prefix g is key g · stride's: the keys up to the last kept prefix below
                // p are smaller, the keys from the first kept prefix above p on are larger.
                let g = self.lower_bound(p);
                let lo = if g == 0 { 0 } else { (g - 1) * self.stride + 1 };
                let hi = (self.end_of_equal(g, p) * self.stride).min(self.len);
                (lo, hi)
            }
            Err(Ordering::Less) => (0, 0),
            Err(_) => (self.len, self.len),
        }
    }

    /// The first kept prefix that is ≥ `p`.
    #[inline]
    fn lower_bound(&self, p: u64) -> usize {
        // top[g] = prefixes[g · GROUP]: the answer lies after group g − 1's first entry and
        // at or before group g's, g being the first group whose first prefix is ≥ p.
        let g = self.top.partition_point(|&x| x < p);
        if g == 0 {
            return 0;
        }
        let start = (g - 1) * GROUP + 1;
        let end = (g * GROUP).min(self.prefixes.len());
        let group = &self.prefixes[start..end];
        for line in group.chunks(8) {
            crate::memory::prefetch(line.as_ptr().cast());
        }
        start + group.partition_point(|&x| x < p)
    }

    /// The end of the run of prefixes equal to `p` that starts at `lo` (galloping: the run is
    /// almost always empty or one entry long, and a binary search over the rest of the array
    /// would miss the cache at every step).
    #[inline]
    fn end_of_equal(&self, lo: usize, p: u64) -> usize {
        let rest = &self.prefixes[lo..];
        let mut step = 1;
        let mut known = 0; // rest[..known] all equal p
        while known + step <= rest.len() && rest[known + step - 1] == p {
            known += step;
            step *= 2;
        }
        let probe_end = (known + step).min(rest.len());
        lo + known + rest[known..probe_end].partition_point(|&x| x == p)
    }

    /// Bytes held.
    pub(crate) fn memory_usage(&self) -> usize {
        std::mem::size_of::<Self>() + self.common.len() + (self.prefixes.len() + self.top.len()) * 8
    }
}

/// The 8 bytes of `key` after `common`, big-endian, zero-padded; `Err` with how `key` orders
/// against every key starting with `common` when it does not start with it.
#[inline]
fn prefix(common: &[u8], key: &[u8]) -> Result<u64, Ordering> {
    let n = common.len().min(key.len());
    match key[..n].cmp(&common[..n]) {
        Ordering::Equal if key.len() < common.len() => Err(Ordering::Less),
        Ordering::Equal => {
            let rest = &key[common.len()..];
            let mut b = [0u8; 8];
            let m = rest.len().min(8);
            b[..m].copy_from_slice(&rest[..m]);
            Ok(u64::from_be_bytes(b))
        }
        o => Err(o),
    }
}

/// The longest common prefix of `a` and `b`.
pub(crate) fn common_prefix<'a>(a: &'a [u8], b: &[u8]) -> &'a [u8] {
    let n = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    &a[..n]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Candidates bracket the keys a full comparison has to look at: all before are smaller,
        /// all after are larger, for keys inside and outside the range, at any stride; beside
        /// the keys with the target's prefix, at most a stride less one on each side.
        #[test]
        fn candidates_bracket_the_target(
            mut keys in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..12), 1..400),
            probes in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..12), 1..30),
            shared in proptest::collection::vec(0u8..4, 0..4),
            stride in 1usize..10,
        ) {
            for k in &mut keys {
                let mut s = shared.clone();
                s.extend_from_slice(k);
                *k = s;
            }
            keys.sort();
            let common = common_prefix(&keys[0], &keys[keys.len() - 1]).to_vec();
            let f = Fences::new(&common, keys.iter().map(|k| k.as_slice()), stride).unwrap();
            for t in probes.iter().chain(&keys) {
                let (lo, hi) = f.candidates(t);
                prop_assert!(lo <= hi && hi <= keys.len());
                prop_assert!(keys[..lo].iter().all(|k| k < t));
                prop_assert!(keys[hi..].iter().all(|k| k > t));
                // At most stride − 1 keys of another prefix on either side of the equal ones.
                let others = keys[lo..hi].iter().filter(|k| prefix(&common, k) != prefix(&common, t)).count();
                prop_assert!(others <= 2 * (stride - 1), "{others} others at stride {stride}");
            }
        }
    }

    /// Many groups, and runs of equal prefixes longer than a group (keys that differ only past
    /// the 8 prefix bytes): the group search and the galloping end agree with a full scan.
    #[test]
    fn groups_and_long_equal_runs() {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for run in 0u64..40 {
            for i in 0..(run * 7 % 150 + 1) {
                let mut k = (run * 3).to_be_bytes().to_vec();
                k.extend_from_slice(&i.to_be_bytes());
                keys.push(k);
            }
        }
        let f = Fences::new(&[], &keys, 1).unwrap();
        for run in 0u64..121 {
            for suffix in [0u64, 5, u64::MAX] {
                let mut t = run.to_be_bytes().to_vec();
                t.extend_from_slice(&suffix.to_be_bytes());
                let p = u64::from_be_bytes(t[..8].try_into().unwrap());
                let lo = keys.iter().filter(|k| u64::from_be_bytes(k[..8].try_into().unwrap()) < p).count();
                let eq = keys.iter().filter(|k| k[..8] == t[..8]).count();
                assert_eq!(f.candidates(&t), (lo, lo + eq), "run {run}");
            }
        }
    }

    #[test]
    fn keys_not_sharing_the_prefix_or_out_of_order_give_no_fences() {
        let keys: [&[u8]; 2] = [b"ab1", b"ac2"];
        assert!(Fences::new(b"ab", keys, 1).is_none());
        let keys: [&[u8]; 2] = [b"ab2", b"ab1"];
        assert!(Fences::new(b"ab", keys, 8).is_none());
        let keys: [&[u8]; 3] = [b"ab", b"ab\x00", b"ab\x00\x01"];
        let f = Fences::new(b"ab", keys, 1).unwrap();
        // "ab" and "ab\0" have equal zero-padded prefixes: both compared in full.
        assert_eq!(f.candidates(b"ab\x00"), (0, 2));
        assert_eq!(f.candidates(b"a"), (0, 0));
        assert_eq!(f.candidates(b"b"), (3, 3));
        assert!(f.memory_usage() >= 24);
    }
}
