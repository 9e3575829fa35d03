//! What the read path asks each file's point filter, decided off the read path and published as
//! an immutable snapshot the read path loads (one atomic load, no lock): every file's every
//! unit, except the files Mnemosyne's skip rule names. (Elastic tables are probed with the units
//! loaded for them, `filter/loaded.rs`, whatever the plan says.)

use std::collections::HashMap;

/// Which filter units of a file a point lookup probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitChoice {
    /// Every unit of the segment.
    All,
    /// None: the lookup goes straight to the index (the filter is not worth its probe).
    Skip,
}

/// The published per-file choices; files not named probe every unit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilterPlan {
    files: HashMap<u64, UnitChoice>,
}

impl FilterPlan {
    /// A plan with per-file choices.
    #[cfg_attr(
        not(feature = "test-util"),
        expect(dead_code, reason = "published by the skip rule and elastic units")
    )]
    pub fn new(files: HashMap<u64, UnitChoice>) -> Self {
        FilterPlan { files }
    }

    /// This plan with the choices for one tree's files replaced: every file of `tree_files`
    /// probes every unit except those in `skip`, which are not probed.
    pub fn with_tree(&self, tree_files: &[u64], skip: &[u64]) -> FilterPlan {
        let mut files = self.files.clone();
        for n in tree_files {
            files.remove(n);
        }
        files.extend(skip.iter().map(|&n| (n, UnitChoice::Skip)));
        FilterPlan { files }
    }

    /// The choice for file `number`.
    #[inline]
    pub fn units_for(&self, number: u64) -> UnitChoice {
        if self.files.is_empty() {
            return UnitChoice::All;
        }
        self.files.get(&number).copied().unwrap_or(UnitChoice::All)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unnamed_files_probe_every_unit() {
        assert_eq!(FilterPlan::default().units_for(3), UnitChoice::All);
        let p = FilterPlan::new(HashMap::from([(3, UnitChoice::Skip), (4, UnitChoice::Skip)]));
        assert_eq!(p.units_for(3), UnitChoice::Skip);
        assert_eq!(p.units_for(4), UnitChoice::Skip);
        assert_eq!(p.units_for(5), UnitChoice::All);
        // Replacing one tree's choices keeps the others'.
        let q = p.with_tree(&[3, 7], &[7]);
        assert_eq!(q.units_for(3), UnitChoice::All);
        assert_eq!(q.units_for(7), UnitChoice::Skip);
        assert_eq!(q.units_for(4), UnitChoice::Skip);
    }
}
