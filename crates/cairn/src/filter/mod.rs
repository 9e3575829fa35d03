//! Point filters (Bloom filter units) and the [`FilterWriter`] contract through which a table
//! builder hands its keys to whatever builds its filter blocks. The range filter (Rosetta) and
//! elastic units plug in here.

pub mod bloom;
pub mod decision;
pub mod grafite;
pub mod loaded;
pub mod projection;
pub mod range;
pub mod rosetta;

pub use bloom::{key_hash, BloomFilter};
pub use decision::{FilterDecision, LoadedUnits, UnitSpec};
use std::sync::Arc;

/// A finished table's data, as a filter decision sees it.
#[derive(Debug, Clone, Copy)]
pub struct TableOutput<'a> {
    /// The table's file number.
    pub number: u64,
    /// Distinct user keys.
    pub keys: u64,
    /// Smallest user key.
    pub smallest: &'a [u8],
    /// Largest user key.
    pub largest: &'a [u8],
}

/// Decides an output table's filters once its keys are known (per-output decisions: the
/// allocators see the table's real size and key range, not an estimate). A table builder asks
/// for the point filter, the range filter, or both, as its options say.
pub trait DecideFilters: Send + Sync + std::fmt::Debug {
    /// The point-filter decision for a finished table's data.
    fn decide(&self, table: &TableOutput<'_>) -> FilterDecision;
    /// Bits per distinct key of a finished table's range filter (0: none; the per-file,
    /// workload-driven share of the range-filter budget).
    fn range_bits_per_key(&self, table: &TableOutput<'_>) -> f64;
}

/// What a [`FilterWriter`] produced for one table.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterOutput {
    /// The decision it applied (recorded in the table's properties).
    pub decision: FilterDecision,
    /// Per segment, its unit blocks (each written as its own checksummed block), one per unit
    /// of the decision.
    pub segments: Vec<Vec<Vec<u8>>>,
}

/// Builds the filter blocks of one table as its keys stream by. The table builder calls
/// [`add_key`](Self::add_key) for each distinct user key, [`finish_segment`](Self::finish_segment)
/// when a segment's data ends, and [`finish`](Self::finish) once, before writing the filter
/// section.
pub trait FilterWriter: Send + std::fmt::Debug {
    /// A distinct user key of the current segment, with its [`key_hash`].
    fn add_key(&mut self, user_key: &[u8], hash: u64);
    /// The current segment ended.
    fn finish_segment(&mut self);
    /// Every segment ended: the blocks to write.
    fn finish(self: Box<Self>, table: &TableOutput<'_>) -> FilterOutput;
}

/// Bloom filter units per segment: each unit of the decision is an independent filter over the
/// segment's keys. With a [`DecideFilters`], the decision is taken at `finish`, so the key
/// hashes of every segment are kept until then (8 bytes per distinct key).
#[derive(Debug)]
pub struct BloomUnitsWriter {
    fixed: FilterDecision,
    decider: Option<Arc<dyn DecideFilters>>,
    segments: Vec<Vec<u64>>,
    current: Vec<u64>,
    /// Cache-local units (`bloom.rs` version 2) instead of standard ones.
    cache_local: bool,
}

impl BloomUnitsWriter {
    /// Units as `fixed` says, or as `decider` decides at the end when given.
    pub fn new(fixed: FilterDecision, decider: Option<Arc<dyn DecideFilters>>) -> Self {
        BloomUnitsWriter {
            fixed,
            decider,
            segments: Vec::new(),
            current: Vec::new(),
            cache_local: false,
        }
    }

    /// Builds cache-local units.
    pub fn cache_local(mut self, on: bool) -> Self {
        self.cache_local = on;
        self
    }
}

impl FilterWriter for BloomUnitsWriter {
    fn add_key(&mut self, _user_key: &[u8], hash: u64) {
        self.current.push(hash);
    }

    fn finish_segment(&mut self) {
        self.segments.push(std::mem::take(&mut self.current));
    }

    fn finish(self: Box<Self>, table: &TableOutput<'_>) -> FilterOutput {
        let decision = match &self.decider {
            Some(d) => d.decide(table),
            None => self.fixed.clone(),
        };
        let segments = self
            .segments
            .iter()
            .map(|hashes| {
                decision
                    .units
                    .iter()
                    .map(|u| match self.cache_local {
                        true => bloom::build_local(hashes, u.bpk, u.seed),
                        false => bloom::build(hashes, u.bpk, u.seed),
                    })
                    .collect()
            })
            .collect();
        FilterOutput { decision, segments }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct ByCount;
    impl DecideFilters for ByCount {
        fn decide(&self, t: &TableOutput<'_>) -> FilterDecision {
            FilterDecision::units("test", t.keys as usize, 2.0)
        }
        fn range_bits_per_key(&self, t: &TableOutput<'_>) -> f64 {
            t.keys as f64
        }
    }

    #[test]
    fn units_per_segment_and_deferred_decision() {
        let mut w = Box::new(BloomUnitsWriter::new(FilterDecision::uniform(10.0), None));
        for (i, k) in [b"a", b"b", b"c"].iter().enumerate() {
            w.add_key(*k, key_hash(*k));
            if i == 1 {
                w.finish_segment();
            }
        }
        w.finish_segment();
        let t = |keys| TableOutput {
            number: 1,
            keys,
            smallest: b"a",
            largest: b"c",
        };
        let out = w.finish(&t(3));
        assert_eq!(out.decision, FilterDecision::uniform(10.0));
        assert_eq!(out.segments.len(), 2);
        let f = BloomFilter::decode(out.segments[1][0].clone()).unwrap();
        assert!(f.may_contain(b"c"));

        let mut w = Box::new(BloomUnitsWriter::new(
            FilterDecision::uniform(10.0),
            Some(Arc::new(ByCount)),
        ));
        w.add_key(b"x", key_hash(b"x"));
        w.finish_segment();
        let out = w.finish(&t(2));
        assert_eq!(out.decision.units.len(), 2, "decided from the key count at the end");
        assert_eq!(out.segments[0].len(), 2);
    }
}
