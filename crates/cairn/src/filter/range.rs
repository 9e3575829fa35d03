//! A table's range filter, of either kind: Rosetta (`rosetta.rs`, metaindex version 1) or
//! Grafite (`grafite.rs`, version 2). The metaindex entry's version byte says which, and so
//! does the block's first byte.

use super::grafite::{self, GrafiteBuilder, GrafiteFilter};
use super::rosetta::{self, RosettaBuilder, RosettaFilter};
use crate::options::RangeFilterKind;

/// A decoded range filter.
#[derive(Debug, Clone)]
#[expect(
    clippy::large_enum_variant,
    reason = "readers box the whole filter once; boxing Rosetta's tables again would add a load per probe"
)]
pub enum RangeFilter {
    /// Prefix Bloom filters, per height.
    Rosetta(RosettaFilter),
    /// One hash and an Elias–Fano successor search.
    Grafite(GrafiteFilter),
}

impl RangeFilter {
    /// Decodes a block written as metaindex version `version`.
    ///
    /// # Errors
    /// A short description of the first field that is invalid.
    pub fn decode(version: u8, bytes: Vec<u8>) -> Result<Self, &'static str> {
        match version {
            rosetta::VERSION => RosettaFilter::decode(bytes).map(RangeFilter::Rosetta),
            grafite::VERSION => GrafiteFilter::decode(&bytes).map(RangeFilter::Grafite),
            _ => Err("unknown range filter version"),
        }
    }

    /// Whether this version of cairn reads range filters of metaindex version `version`.
    pub fn readable(version: u8) -> bool {
        version == rosetta::VERSION || version == grafite::VERSION
    }

    /// User-key bytes skipped before the projection.
    pub fn key_offset(&self) -> usize {
        match self {
            RangeFilter::Rosetta(f) => f.key_offset(),
            RangeFilter::Grafite(f) => f.key_offset(),
        }
    }

    /// Bytes held in memory.
    pub fn memory_usage(&self) -> usize {
        match self {
            RangeFilter::Rosetta(f) => f.memory_usage(),
            RangeFilter::Grafite(f) => f.memory(),
        }
    }

    /// Whether a key may project to `x` (what answers point lookups for a table without
    /// point-filter units).
    pub fn may_contain_projection(&self, x: u64) -> bool {
        match self {
            RangeFilter::Rosetta(f) => f.may_contain_projection(x),
            RangeFilter::Grafite(f) => f.may_contain_projection(x),
        }
    }

    /// A one-line description of its layout (`cairn stats`): Rosetta's levels as
    /// `height: bits per prefix`, Grafite's bits per key and reduced universe.
    pub fn describe(&self) -> String {
        match self {
            RangeFilter::Rosetta(f) if f.levels().is_empty() => "none".into(),
            RangeFilter::Rosetta(f) => f
                .levels()
                .iter()
                .map(|l| format!("h{}: {:.1}", l.height, l.num_bits as f64 / l.prefixes as f64))
                .collect::<Vec<_>>()
                .join(", "),
            RangeFilter::Grafite(f) => format!(
                "grafite {:.1} bits/key, r = 2^{:.1}",
                f.bits_per_key(),
                (f.universe() as f64).log2()
            ),
        }
    }
}

/// Collects a table's keys for the range filter of the kind asked for.
#[derive(Debug)]
pub enum RangeBuilder {
    /// A Rosetta filter.
    Rosetta(RosettaBuilder),
    /// A Grafite filter.
    Grafite(GrafiteBuilder),
}

impl RangeBuilder {
    /// A builder of `kind` projecting keys after `offset` bytes.
    pub fn new(kind: RangeFilterKind, offset: usize) -> Self {
        match kind {
            RangeFilterKind::Rosetta => RangeBuilder::Rosetta(RosettaBuilder::new(offset)),
            RangeFilterKind::Grafite => RangeBuilder::Grafite(GrafiteBuilder::new(offset)),
        }
    }

    /// The next distinct user key of the table, in key order.
    pub fn add_key(&mut self, user_key: &[u8]) {
        match self {
            RangeBuilder::Rosetta(b) => b.add_key(user_key),
            RangeBuilder::Grafite(b) => b.add_key(user_key),
        }
    }

    /// The metaindex version of what [`finish`](Self::finish) writes.
    pub fn version(&self) -> u8 {
        match self {
            RangeBuilder::Rosetta(_) => rosetta::VERSION,
            RangeBuilder::Grafite(_) => grafite::VERSION,
        }
    }
}
