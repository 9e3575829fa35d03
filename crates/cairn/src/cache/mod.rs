//! The block cache (sharded, charged in bytes, with a high-priority pool for meta blocks) and
//! the table cache (open table readers).

mod block_cache;
mod lru;
mod table_cache;

pub use block_cache::{BlockCache, BlockKey, CacheCounters, CachedBlock, EvictionListener};
pub use lru::Priority;
pub use table_cache::{ReaderSlot, TableCache};
