//! Bits-per-key allocation: decided for each file when it is built (DESIGN §6.2). Monkey and
//! Mnemosyne plug in here later.

use crate::sst::FilterDecision;

/// What an allocator knows about a file being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileContext {
    /// Tree id.
    pub tree: u32,
    /// Level the file is written to.
    pub level: usize,
}

/// Decides the filter units of a file being built.
pub trait BpkAllocator: Send + Sync + std::fmt::Debug {
    /// The decision for a file.
    fn decide(&self, file: FileContext) -> FilterDecision;
}

/// The same bits per key for every file (RocksDB's default).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Uniform {
    /// Bits per key; 0 = no filter.
    pub bpk: f64,
}

impl BpkAllocator for Uniform {
    fn decide(&self, _file: FileContext) -> FilterDecision {
        FilterDecision::uniform(self.bpk)
    }
}
