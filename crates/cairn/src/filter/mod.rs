//! Point filters. The range filter (Rosetta) and elastic units management come later.

pub mod bloom;

pub use bloom::{key_hash, BloomFilter};
