//! The CLOCK cache (lock-free hits, charged in bytes, with a high-priority share for meta
//! blocks; the engine's block cache, `sst::BlockCache`, is one of decoded blocks), the ghost
//! cache, the key-value cache (`kv.rs`), and the LRU the engine's table cache uses.

mod arena;
mod block_cache;
mod ghost;
mod kv;
mod lru;

pub use arena::BlockBytes;
pub use block_cache::{BlockKey, CacheCounters, ClockCache, Priority};
pub use ghost::GhostCache;
pub use kv::{KvCache, Ticket};
pub(crate) use lru::LruShard;
