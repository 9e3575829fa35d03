//! The block cache (CLOCK, lock-free hits, charged in bytes, with a high-priority share for
//! meta blocks) and the table cache (open table readers, LRU by count).

mod arena;
mod block_cache;
mod ghost;
mod lru;
mod table_cache;

pub use arena::BlockBytes;
pub use block_cache::{BlockCache, BlockKey, CacheCounters, CachedBlock, Priority};
pub use ghost::GhostCache;
pub use table_cache::{ReaderSlot, TableCache};
