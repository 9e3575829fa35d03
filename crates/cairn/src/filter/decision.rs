//! What a table's point filter is made of: the filter decision recorded in its properties
//! (which units each segment gets, and who decided), and the contract of units held outside
//! the table reader. Below `sst/`: tables record and read these; the deciders produce them.

/// One filter unit's parameters, the same for every segment of a file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnitSpec {
    /// Bits per key (fractional allowed; > 0).
    pub bpk: f64,
    /// Hash seed; units of one file have distinct seeds so they are independent.
    pub seed: u64,
}

/// The bits-per-key decision for a file: which units each segment gets, and who decided.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterDecision {
    /// Name of the allocator that decided (`"uniform"`, `"monkey"`, ...).
    pub policy: String,
    /// Units per segment; empty means no point filter.
    pub units: Vec<UnitSpec>,
}

impl FilterDecision {
    /// One unit of `bpk` bits per key (none when `bpk <= 0`).
    pub fn uniform(bpk: f64) -> Self {
        FilterDecision {
            policy: "uniform".into(),
            units: if bpk > 0.0 {
                vec![UnitSpec { bpk, seed: 0 }]
            } else {
                Vec::new()
            },
        }
    }

    /// `n` units of `bpk` bits each with seeds 0..n (ElasticBF: 6 × 4).
    pub fn units(policy: &str, n: usize, bpk: f64) -> Self {
        FilterDecision {
            policy: policy.into(),
            units: (0..n as u64).map(|seed| UnitSpec { bpk, seed }).collect(),
        }
    }

    /// Total bits per key over all units.
    pub fn total_bpk(&self) -> f64 {
        // Not `sum()`: an empty f64 sum is -0.0, which reports print as "-0.00".
        self.units.iter().fold(0.0, |total, u| total + u.bpk)
    }
}

/// Filter units held outside the reader (ElasticBF's loaded units).
pub trait LoadedUnits: Sync {
    /// Probes the units loaded for `segment` with the key hashed `h`: how many were probed,
    /// and whether one ruled the key out.
    fn probe(&self, segment: usize, h: u64) -> (u32, bool);
}

#[cfg(test)]
mod tests {
    use super::FilterDecision;

    #[test]
    fn a_file_without_units_has_zero_bits_per_key_not_minus_zero() {
        let none = FilterDecision::uniform(0.0).total_bpk();
        assert!(none == 0.0 && none.is_sign_positive(), "{none}");
        assert_eq!(format!("{none:.2}"), "0.00");
        assert!((FilterDecision::units("elastic", 6, 4.0).total_bpk() - 24.0).abs() < 1e-12);
    }
}
