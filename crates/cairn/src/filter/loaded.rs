//! ElasticBF's loaded filter units: per segment of a live table, the units in filter memory,
//! swapped as a whole (`ArcSwapOption`) when one is loaded or unloaded. The read path loads a
//! segment's set with one atomic load (no lock, no shared write) and probes every unit in it;
//! the adjuster (`db/control/elastic_adjuster.rs`) builds the next set off the read path. Each unit holds its
//! charge to the filter-memory region, released when the last reader of a replaced set drops
//! it.

use super::{BloomFilter, LoadedUnits};
use crate::memory::Charge;
use arc_swap::ArcSwapOption;
use std::sync::Arc;

/// One unit in filter memory.
#[derive(Debug)]
pub struct LoadedUnit {
    filter: BloomFilter,
    _charge: Charge,
}

impl LoadedUnit {
    /// `filter`, charged for as long as it is loaded.
    pub fn new(filter: BloomFilter, charge: Charge) -> Self {
        LoadedUnit { filter, _charge: charge }
    }
}

/// The loaded units of every segment of one table (units 0..k of a segment, in order).
#[derive(Debug, Default)]
pub struct ElasticSegments {
    segments: Box<[ArcSwapOption<Vec<Arc<LoadedUnit>>>]>,
}

impl ElasticSegments {
    /// `segments` segments, none with a unit loaded.
    pub fn new(segments: usize) -> Self {
        ElasticSegments {
            segments: (0..segments).map(|_| ArcSwapOption::empty()).collect(),
        }
    }

    /// Segments tracked (0 when the table's policy is not elastic).
    pub fn len(&self) -> usize {
        self.segments.len()
    }

    /// True when the table's units are not elastic.
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// Units loaded for `segment`.
    pub fn loaded(&self, segment: usize) -> u32 {
        self.segments
            .get(segment)
            .and_then(|s| s.load().as_ref().map(|v| v.len() as u32))
            .unwrap_or(0)
    }

    /// Units loaded over all segments.
    pub fn total_loaded(&self) -> u64 {
        (0..self.len()).map(|i| u64::from(self.loaded(i))).sum()
    }

    /// Drops every loaded unit (the table left the tree).
    pub fn clear(&self) {
        for s in self.segments.iter() {
            s.store(None);
        }
    }

    /// Appends `unit` to `segment`'s loaded units (the adjuster is the only writer).
    pub fn push(&self, segment: usize, unit: LoadedUnit) {
        if let Some(s) = self.segments.get(segment) {
            let mut v: Vec<Arc<LoadedUnit>> = s.load().as_ref().map(|v| v.to_vec()).unwrap_or_default();
            v.push(Arc::new(unit));
            s.store(Some(Arc::new(v)));
        }
    }

    /// Drops `segment`'s last loaded unit.
    pub fn pop(&self, segment: usize) {
        if let Some(s) = self.segments.get(segment) {
            let mut v: Vec<Arc<LoadedUnit>> = s.load().as_ref().map(|v| v.to_vec()).unwrap_or_default();
            v.pop();
            s.store((!v.is_empty()).then(|| Arc::new(v)));
        }
    }
}

impl LoadedUnits for ElasticSegments {
    #[inline]
    fn probe(&self, segment: usize, h: u64) -> (u32, bool) {
        let Some(s) = self.segments.get(segment) else {
            return (0, false);
        };
        let guard = s.load();
        let Some(units) = guard.as_ref() else {
            return (0, false);
        };
        for (i, u) in units.iter().enumerate() {
            if !u.filter.may_contain_hash(h) {
                return (i as u32 + 1, true);
            }
        }
        (units.len() as u32, false)
    }
}
