//! Memory governance (Luo & Carey): the ghost cache counts exactly the storage reads a larger
//! block cache would have saved, user reads and compaction reads apart.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::MemFs;
use cairn::{BlockKind, Db, MemoryLimits, Options};
use std::sync::Arc;

fn options(fs: &MemFs, ghost: usize) -> Options {
    Options {
        block_size: 4096,
        bloom_bits_per_key: 0.0,
        block_cache_size: 64 << 10,
        ghost_cache_size: ghost,
        ..common::small(Arc::new(fs.clone()), 256 << 10)
    }
}

/// 2000 keys of ~100-byte values in one compacted table (about 50 data blocks).
fn load(db: &Db) {
    for i in 0..2000u32 {
        db.put(common::key(i), vec![b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range::<Vec<u8>, _>(..).unwrap();
}

/// Reads every key in order, `rounds` times: a cyclic pattern over more blocks than the cache
/// holds, so every block read misses the cache (CLOCK, like LRU, keeps none of a cycle larger
/// than itself).
fn cycle(db: &Db, rounds: u32) {
    for _ in 0..rounds {
        for i in 0..2000u32 {
            assert!(db.get(common::key(i)).unwrap().is_some());
        }
    }
}

#[test]
fn the_ghost_counts_the_reads_a_larger_cache_saves() {
    let fs = MemFs::new();
    let db = Db::open("/g", options(&fs, 4 << 20)).unwrap();
    load(&db);
    let before = db.stats().io.kind(BlockKind::Data);
    cycle(&db, 3);
    let d = db.stats().io.kind(BlockKind::Data);
    let (reads, ghost) = (d.reads - before.reads, d.ghost_hits - before.ghost_hits);
    let blocks = reads / 3;
    assert!(
        blocks > 30,
        "{reads} block reads in 3 rounds: the table should have ~50 blocks"
    );
    // Every block is read once per round; after the first time, each read finds the block's
    // id in the ghost (4 MiB holds every block ever evicted).
    assert_eq!(ghost, reads - blocks, "{reads} reads, {ghost} ghost hits");
    let m = db.memory();
    assert_eq!(m.ghost_capacity, 4 << 20);
    assert!(m.ghost_ids > 0);

    // A cache as large as cache + ghost saves exactly those reads: after one warm round, none.
    db.resize_memory(MemoryLimits {
        block_cache: Some(4 << 20),
        ..MemoryLimits::default()
    })
    .unwrap();
    cycle(&db, 1);
    let warm = db.stats().io.kind(BlockKind::Data);
    cycle(&db, 2);
    assert_eq!(db.stats().io.kind(BlockKind::Data).reads, warm.reads);

    // Compaction reads are counted apart: shrink the cache again, evict everything by a cycle,
    // then rewrite the table.
    db.resize_memory(MemoryLimits {
        block_cache: Some(64 << 10),
        ..MemoryLimits::default()
    })
    .unwrap();
    cycle(&db, 1);
    let user_ghost = db.stats().io.kind(BlockKind::Data).ghost_hits;
    for i in 0..2000u32 {
        db.put(common::key(i), vec![b'w'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range::<Vec<u8>, _>(..).unwrap();
    let s = db.stats();
    assert!(
        s.compaction_io.kind(BlockKind::Data).ghost_hits > 0,
        "{:?}",
        s.compaction_io
    );
    assert_eq!(
        s.io.kind(BlockKind::Data).ghost_hits,
        user_ghost,
        "compaction reads counted as user reads"
    );
}

#[test]
fn no_ghost_no_ghost_hits() {
    let fs = MemFs::new();
    let db = Db::open("/g", options(&fs, 0)).unwrap();
    load(&db);
    cycle(&db, 2);
    let d = db.stats().io.kind(BlockKind::Data);
    assert!(d.reads > 60);
    assert_eq!(d.ghost_hits, 0);
    assert_eq!((db.memory().ghost_capacity, db.memory().ghost_ids), (0, 0));
}
