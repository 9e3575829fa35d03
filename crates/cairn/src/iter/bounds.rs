//! The user-key bounds of a range read, handed down from the read to every level and table
//! cursor, and to the range filters that answer for a table.

use std::ops::Bound;

/// User-key bounds of a range read, handed down to the per-table cursors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyBounds {
    /// Lower bound.
    pub lo: Bound<Vec<u8>>,
    /// Upper bound.
    pub hi: Bound<Vec<u8>>,
}

impl KeyBounds {
    /// No bounds.
    pub fn all() -> Self {
        KeyBounds {
            lo: Bound::Unbounded,
            hi: Bound::Unbounded,
        }
    }

    /// Whether a file holding user keys `[smallest, largest]` may hold a key in the bounds.
    pub fn overlaps(&self, smallest: &[u8], largest: &[u8]) -> bool {
        self.above_lo(largest) && self.below_hi(smallest)
    }

    /// Whether no key lies within the bounds (the lower above the upper, or equal with one
    /// excluded).
    pub fn is_empty(&self) -> bool {
        match (&self.lo, &self.hi) {
            (Bound::Included(l), Bound::Included(h)) => l > h,
            (Bound::Included(l) | Bound::Excluded(l), Bound::Excluded(h)) | (Bound::Excluded(l), Bound::Included(h)) => {
                l >= h
            }
            _ => false,
        }
    }

    /// Whether `k` is at or above the lower bound.
    pub fn above_lo(&self, k: &[u8]) -> bool {
        match &self.lo {
            Bound::Included(l) => k >= l.as_slice(),
            Bound::Excluded(l) => k > l.as_slice(),
            Bound::Unbounded => true,
        }
    }

    /// Whether `k` is at or below the upper bound.
    pub fn below_hi(&self, k: &[u8]) -> bool {
        match &self.hi {
            Bound::Included(h) => k <= h.as_slice(),
            Bound::Excluded(h) => k < h.as_slice(),
            Bound::Unbounded => true,
        }
    }
}
