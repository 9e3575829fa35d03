//! A memtable's whole-key filter: a Bloom filter blocked by cache line, filled as entries are
//! inserted, so that a point lookup of a key the memtable does not hold skips the skiplist's
//! descent (about one cache miss per level: the larger the memtable, the more a lookup pays
//! there, and the memory tuner grows memtables). RocksDB calls it
//! `memtable_whole_key_filtering`.
//!
//! Each key sets `PROBES` bits in one 64-byte line: one cache miss per lookup. Readers run
//! beside the writer. A reader returns only entries at or below its snapshot's sequence
//! number, which was published (release) after the write group's inserts and their bits
//! (relaxed, before that publication): whenever an entry of a key is visible to a reader, so
//! are the bits of every version of that key, and the filter never hides one. Bits set a
//! moment after the skiplist links the entry are therefore fine, which lets an insert
//! prefetch the line and set the bits after the skiplist's search.

use crate::filter::bloom::fmix64;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Bits set per key. With the sizing below (a 64th of the memtable's bytes, about 12 bits
/// per entry of 150 bytes) six probes in a line give a false-positive rate near 1%.
const PROBES: u32 = 6;

/// Bytes of filter per byte of memtable.
const FILTER_SHARE: usize = 64;

/// The filter: lines of 8 words.
#[derive(Debug)]
pub(crate) struct MemFilter {
    words: Box<[AtomicU64]>,
    lines: u64,
}

impl MemFilter {
    /// A filter for a memtable of `memtable_bytes` (at least one line).
    pub(crate) fn for_memtable(memtable_bytes: usize) -> Self {
        let lines = (memtable_bytes / FILTER_SHARE / 64).max(1);
        MemFilter {
            words: (0..lines * 8).map(|_| AtomicU64::new(0)).collect(),
            lines: lines as u64,
        }
    }

    /// Bytes it occupies.
    pub(crate) fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// The first word of the line of `hash`.
    #[inline]
    fn base(&self, hash: u64) -> usize {
        ((u128::from(hash) * u128::from(self.lines)) >> 64) as usize * 8
    }

    /// The line of `hash` and the bit positions (0..512) within it.
    #[inline]
    fn probes(&self, hash: u64) -> (usize, impl Iterator<Item = u32>) {
        let bits = fmix64(hash);
        (self.base(hash), (0..PROBES).map(move |i| ((bits >> (9 * i)) & 511) as u32))
    }

    /// Starts loading the line of `hash` (an insert then finds it in the CPU cache).
    pub(crate) fn prefetch(&self, hash: u64) {
        if let Some(w) = self.words.get(self.base(hash)) {
            crate::memory::prefetch(w.as_ptr().cast::<u8>().cast_const());
        }
    }

    /// Records a key by its [`key_hash`](crate::filter::key_hash): one `fetch_or` per word
    /// that lacks one of its bits (a key's bits often share words, and hot keys are already
    /// set), safe beside any other writer.
    pub(crate) fn insert(&self, hash: u64) {
        let (base, probes) = self.probes(hash);
        let mut masks = [0u64; 8];
        for p in probes {
            masks[(p / 64) as usize] |= 1 << (p % 64);
        }
        for (i, m) in masks.into_iter().enumerate().filter(|&(_, m)| m != 0) {
            if let Some(w) = self.words.get(base + i) {
                if w.load(Relaxed) & m != m {
                    w.fetch_or(m, Relaxed);
                }
            }
        }
    }

    /// False when no key with this hash was inserted.
    #[inline]
    pub(crate) fn may_contain(&self, hash: u64) -> bool {
        let (base, mut probes) = self.probes(hash);
        probes.all(|p| {
            self.words
                .get(base + (p / 64) as usize)
                .is_none_or(|w| w.load(Relaxed) & (1 << (p % 64)) != 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::key_hash;

    #[test]
    fn holds_every_key_and_rejects_most_others() {
        // 100K entries of ~150 bytes: the sizing the memtable uses.
        let f = MemFilter::for_memtable(100_000 * 150);
        for i in 0..100_000u32 {
            f.insert(key_hash(format!("key{i:08}").as_bytes()));
        }
        for i in 0..100_000u32 {
            assert!(f.may_contain(key_hash(format!("key{i:08}").as_bytes())));
        }
        let fp = (100_000..300_000u32)
            .filter(|i| f.may_contain(key_hash(format!("key{i:08}").as_bytes())))
            .count();
        let rate = fp as f64 / 200_000.0;
        assert!(rate < 0.02, "false-positive rate {rate}");
        // A tiny memtable still gets one line, and an empty filter holds nothing.
        let tiny = MemFilter::for_memtable(10);
        assert_eq!(tiny.bytes(), 64);
        assert!(!tiny.may_contain(key_hash(b"x")));
    }
}
