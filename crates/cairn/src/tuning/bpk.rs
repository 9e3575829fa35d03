//! Bits-per-key allocation: decided for each output file when it is written (docs/design.md §1 [C]), from
//! the file's real key count, the tree's shape and a snapshot of the access statistics. Monkey
//! and Mnemosyne plug in here.

use crate::filter::DecideFilter;
use crate::sst::FilterDecision;
use crate::stats::StatsSnapshot;
use crate::version::TreeVersion;
use std::sync::Arc;

/// One level of a tree, as an allocator sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LevelShape {
    /// Files.
    pub files: usize,
    /// Entries.
    pub entries: u64,
    /// Bytes.
    pub bytes: u64,
}

/// A tree's shape when an output is written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeShape {
    /// Levels 0.. (level 0's files overlap).
    pub levels: Vec<LevelShape>,
}

impl TreeShape {
    /// The shape of `t`.
    pub fn of(t: &TreeVersion) -> Self {
        TreeShape {
            levels: t
                .levels
                .iter()
                .map(|fs| LevelShape {
                    files: fs.len(),
                    entries: fs.iter().map(|f| f.entries).sum(),
                    bytes: fs.iter().map(|f| f.size).sum(),
                })
                .collect(),
        }
    }
}

/// What an allocator knows about an output file being written.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(
    not(feature = "test-util"),
    expect(dead_code, reason = "read by the workload-aware allocators (Monkey, Mnemosyne)")
)]
pub struct OutputContext<'a> {
    /// Tree id.
    pub tree: u32,
    /// Level the file is written to.
    pub level: usize,
    /// Distinct user keys in the file.
    pub keys: u64,
    /// The tree before the job installs its outputs.
    pub shape: &'a TreeShape,
    /// Access statistics of every live file when the job started.
    pub stats: &'a StatsSnapshot,
}

/// Decides the filter units of each output file.
pub trait BpkAllocator: Send + Sync + std::fmt::Debug {
    /// Short name, recorded in each file's properties.
    fn name(&self) -> &'static str;
    /// The decision for one output file.
    fn decide(&self, out: &OutputContext<'_>) -> FilterDecision;
}

/// The same bits per key for every file (RocksDB's default).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Uniform {
    /// Bits per key; 0 = no filter.
    pub bpk: f64,
}

impl BpkAllocator for Uniform {
    fn name(&self) -> &'static str {
        "uniform"
    }
    fn decide(&self, _out: &OutputContext<'_>) -> FilterDecision {
        FilterDecision::uniform(self.bpk)
    }
}

/// The decider one job hands its table builders: the allocator with the tree's shape and the
/// statistics taken when the job started; each output is decided from its own key count.
#[derive(Debug, Clone)]
pub struct OutputDecider {
    /// The allocator.
    pub allocator: Arc<dyn BpkAllocator>,
    /// Tree id.
    pub tree: u32,
    /// Output level.
    pub level: usize,
    /// The tree's shape.
    pub shape: Arc<TreeShape>,
    /// Statistics.
    pub stats: Arc<StatsSnapshot>,
}

impl DecideFilter for OutputDecider {
    fn decide(&self, keys: u64) -> FilterDecision {
        let mut d = self.allocator.decide(&OutputContext {
            tree: self.tree,
            level: self.level,
            keys,
            shape: &self.shape,
            stats: &self.stats,
        });
        d.policy = self.allocator.name().to_string();
        d
    }
}
