//! A table's range filter, of either kind, with the key projection it indexes
//! (`projection.rs`). The metaindex entry's version byte says which format a block has, and
//! so does the block's first byte:
//!
//! ```text
//! version 1: a Rosetta block (rosetta.rs), fixed projection at its key offset
//! version 2: 2 ‖ projection ‖ Grafite body (grafite.rs)
//! version 3: 3 ‖ projection ‖ a Rosetta block of version 1 (its key offset byte = o)
//! ```

use super::grafite::{GrafiteBuilder, GrafiteFilter};
use super::projection::{Projection, Projector};
use super::rosetta::{self, RosettaBuilder, RosettaFilter, HEIGHTS};

/// Version of a Grafite block.
pub const GRAFITE: u8 = 2;
/// Version of a Rosetta block with a projection.
pub const ROSETTA_PROJECTED: u8 = 3;

/// Grafite gives no filter under this many bits per key (its bound exceeds 1/2 for single
/// values).
const GRAFITE_MIN_BPK: f64 = 2.5;

/// The filter of one kind.
#[derive(Debug, Clone)]
#[expect(
    clippy::large_enum_variant,
    reason = "readers box the whole filter once; boxing Rosetta's tables again would add a load per probe"
)]
pub enum Kind {
    /// Prefix Bloom filters, per height.
    Rosetta(RosettaFilter),
    /// One hash and an Elias–Fano successor search.
    Grafite(GrafiteFilter),
}

/// A decoded range filter.
#[derive(Debug, Clone)]
pub struct RangeFilter {
    projection: Projection,
    kind: Kind,
}

impl RangeFilter {
    /// Decodes a block written as metaindex version `version`.
    ///
    /// # Errors
    /// A short description of the first field that is invalid.
    pub fn decode(version: u8, bytes: Vec<u8>) -> Result<Self, &'static str> {
        if bytes.first() != Some(&version) {
            return Err("range filter block of another version than its metaindex entry");
        }
        match version {
            rosetta::VERSION => {
                let f = RosettaFilter::decode(bytes)?;
                Ok(RangeFilter {
                    projection: Projection::fixed(f.key_offset()),
                    kind: Kind::Rosetta(f),
                })
            }
            GRAFITE | ROSETTA_PROJECTED => {
                let (projection, used) = Projection::decode(&bytes[1..])?;
                let body = &bytes[1 + used..];
                let kind = if version == GRAFITE {
                    Kind::Grafite(GrafiteFilter::decode(body)?)
                } else {
                    let f = RosettaFilter::decode(body.to_vec())?;
                    if f.key_offset() != projection.offset() {
                        return Err("rosetta key offset differs from its projection's");
                    }
                    Kind::Rosetta(f)
                };
                Ok(RangeFilter { projection, kind })
            }
            _ => Err("unknown range filter version"),
        }
    }

    /// Whether this version of cairn reads range filters of metaindex version `version`.
    pub fn readable(version: u8) -> bool {
        matches!(version, rosetta::VERSION | GRAFITE | ROSETTA_PROJECTED)
    }

    /// The key projection the filter indexes.
    pub fn projection(&self) -> &Projection {
        &self.projection
    }

    /// The filter.
    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// Bytes held in memory.
    pub fn memory_usage(&self) -> usize {
        self.projection.prefix().map_or(0, <[u8]>::len)
            + match &self.kind {
                Kind::Rosetta(f) => f.memory_usage(),
                Kind::Grafite(f) => f.memory(),
            }
    }

    /// Bits of the filter proper (Rosetta's bit arrays, Grafite's serialized size): what its
    /// false-positive rate follows, without the decoded structure's fixed fields.
    pub fn bits(&self) -> u64 {
        match &self.kind {
            Kind::Rosetta(f) => f.levels().iter().map(|l| l.num_bits).sum(),
            Kind::Grafite(f) => (f.bits_per_key() * f.keys() as f64) as u64,
        }
    }

    /// Whether the table may hold `user_key` (what answers point lookups for a table without
    /// point-filter units).
    pub fn may_contain_key(&self, user_key: &[u8]) -> bool {
        let Some(x) = self.projection.of_key(user_key) else {
            return false;
        };
        match &self.kind {
            Kind::Rosetta(f) => f.may_contain_projection(x),
            Kind::Grafite(f) => f.may_contain_projection(x),
        }
    }

    /// A one-line description of its layout (`cairn stats`): Rosetta's levels as
    /// `height: bits per prefix`, Grafite's bits per key and reduced universe, then the
    /// projection's window.
    pub fn describe(&self) -> String {
        let p = &self.projection;
        let window = if p.is_decimal() {
            format!("key[{}..+{}], decimal", p.offset(), p.width())
        } else if p.prefix().is_some() {
            format!("key[{}..+{}]", p.offset(), p.width())
        } else {
            format!("key[{}..+8], fixed", p.offset())
        };
        match &self.kind {
            Kind::Rosetta(f) if f.levels().is_empty() => format!("none; {window}"),
            Kind::Rosetta(f) => format!(
                "{}; {window}",
                f.levels()
                    .iter()
                    .map(|l| format!("h{}: {:.1}", l.height, l.num_bits as f64 / l.prefixes as f64))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Kind::Grafite(f) => format!(
                "grafite {:.1} bits/key, r = 2^{:.1}; {window}",
                f.bits_per_key(),
                (f.universe() as f64).log2()
            ),
        }
    }
}

/// Collects a table's keys for a range filter of the kind asked for.
#[derive(Debug)]
pub struct RangeBuilder {
    kind: RangeFilterKind,
    projector: Projector,
}

impl RangeBuilder {
    /// A builder of `kind`: the projection chosen per table, or fixed at `fixed_offset`.
    pub fn new(kind: RangeFilterKind, fixed_offset: Option<usize>) -> Self {
        RangeBuilder {
            kind,
            projector: Projector::new(fixed_offset),
        }
    }

    /// The next distinct user key of the table, in key order.
    pub fn add_key(&mut self, user_key: &[u8]) {
        self.projector.add_key(user_key);
    }

    /// The block (and its version), or `None` when the table gets no filter: a Rosetta one
    /// laid out by `plan` (see `RosettaBuilder::finish`) or a Grafite one of `bits_per_key`
    /// (none under 2.5 bits per key, where its bound exceeds 1/2 for single values). `ends`:
    /// the tree's sampled range-read ends (`Projector::finish`).
    pub fn finish(
        self,
        seed: u64,
        bits_per_key: f64,
        ends: Option<&[u64]>,
        plan: impl FnOnce(&[u64; HEIGHTS]) -> Vec<(usize, f64)>,
    ) -> Option<(u8, Vec<u8>)> {
        let (projection, xs) = self.projector.finish(ends);
        let (version, body) = match self.kind {
            RangeFilterKind::Rosetta => (
                ROSETTA_PROJECTED,
                RosettaBuilder::with_projections(projection.offset(), xs).finish(seed, plan),
            ),
            RangeFilterKind::Grafite if bits_per_key < GRAFITE_MIN_BPK => return None,
            RangeFilterKind::Grafite => (GRAFITE, GrafiteBuilder::with_projections(xs).finish(seed, bits_per_key)),
        };
        let mut block = vec![version];
        projection.encode_to(&mut block);
        block.extend_from_slice(&body);
        Some((version, block))
    }
}

/// What a block of metaindex version `version` is, for tools that list tables.
pub fn version_name(version: u8) -> &'static str {
    match version {
        rosetta::VERSION => "rosetta, fixed projection",
        GRAFITE => "grafite",
        ROSETTA_PROJECTED => "rosetta",
        _ => "unknown to this version",
    }
}

/// The kind of range filter new tables get (the metaindex records each table's, so both are
/// read whatever the setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RangeFilterKind {
    /// Rosetta: prefix Bloom filters per height, probed over a range's dyadic intervals.
    Rosetta,
    /// Grafite: one hash and one Elias–Fano successor search per range whatever its length,
    /// false-positive rate at most ℓ / 2^(bits_per_key − 2) for ℓ projection values (the
    /// default: docs/design.md §5, the default range-filter kind).
    #[default]
    Grafite,
}

impl RangeFilterKind {
    /// How fast the kind's false-positive rate falls per bit per key: Rosetta's levels are
    /// Bloom filters, Grafite's bound halves per bit.
    pub(crate) fn decay(self) -> f64 {
        match self {
            RangeFilterKind::Rosetta => super::bloom::LN2_SQ,
            RangeFilterKind::Grafite => std::f64::consts::LN_2,
        }
    }

    /// Bits per key a filter of this kind holds in memory beyond [`RangeFilter::bits`] (what
    /// a round must reserve for a filter it builds: Grafite's fences).
    pub(crate) fn memory_extra_bits_per_key(self) -> f64 {
        match self {
            RangeFilterKind::Rosetta => 0.0,
            RangeFilterKind::Grafite => super::grafite::MEMORY_EXTRA_BPK,
        }
    }

    /// Bytes a filter of this kind holds in memory whatever its size (Rosetta's per-height
    /// fields).
    pub(crate) fn memory_fixed_bytes(self) -> u64 {
        match self {
            RangeFilterKind::Rosetta => std::mem::size_of::<RosettaFilter>() as u64,
            RangeFilterKind::Grafite => 0,
        }
    }

    /// The fewest bits per key it gives a table a filter at (`RangeBuilder::finish`).
    pub(crate) fn min_bits_per_key(self) -> f64 {
        match self {
            RangeFilterKind::Rosetta => 1.0,
            RangeFilterKind::Grafite => GRAFITE_MIN_BPK,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a round reserves for a build (`tuning::range_memory::Kind::bytes`: the bits asked
    /// for, the kind's extra bits per key in memory and its fixed bytes) is what the built
    /// filter holds: never more than 1% over (reserving only the bits, builds did not fit and
    /// tables were read again for nothing), and under by at most what Grafite leaves out at
    /// few bits per key.
    #[test]
    fn memory_follows_bits_and_extra() {
        for kind in [RangeFilterKind::Grafite, RangeFilterKind::Rosetta] {
            for keys in [20_000u64, 300_000] {
                for bpk in [4.0, 10.0, 13.3, 22.0] {
                    let mut b = RangeBuilder::new(kind, None);
                    for i in 0..keys {
                        b.add_key(&(i * 128 + 7).to_be_bytes());
                    }
                    let plan = crate::tuning::rosetta::planner(bpk * keys as f64, None, 100);
                    let (version, block) = b.finish(3, bpk, None, plan).unwrap();
                    let f = RangeFilter::decode(version, block).unwrap();
                    let planned = (bpk + kind.memory_extra_bits_per_key()) * keys as f64 / 8.0
                        + kind.memory_fixed_bytes() as f64;
                    let held = f.memory_usage() as f64;
                    assert!(
                        held <= planned * 1.01 && held >= planned * 0.9,
                        "{kind:?} {keys} keys at {bpk}: holds {held}, planned {planned}"
                    );
                }
            }
        }
    }
}
