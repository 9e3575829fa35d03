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
    let mut o = common::small(Arc::new(fs.clone()), 256 << 10);
    o.table.block_size = 4096;
    o.filters.bits_per_key = 0.0;
    o.memory.fixed_mut().block_cache = cairn::CacheSource::Own(64 << 10);
    o.cache.ghost_cache = ghost;
    o
}

/// 2000 keys of ~100-byte values in one compacted table (about 50 data blocks).
fn load(db: &Db) {
    for i in 0..2000u32 {
        db.put(common::key(i), vec![b'v'; 100]).unwrap();
    }
    db.flush_all().unwrap();
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
    cycle(&db, 1);
    let first = db.stats().io.kind(BlockKind::Data);
    let blocks = first.reads - before.reads;
    assert!(
        blocks > 30,
        "{blocks} block reads in the first round: the table should have ~50 blocks"
    );
    assert_eq!(
        first.ghost_hits, before.ghost_hits,
        "nothing was evicted before the first round"
    );
    cycle(&db, 2);
    let d = db.stats().io.kind(BlockKind::Data);
    let (reads, ghost) = (d.reads - first.reads, d.ghost_hits - first.ghost_hits);
    // After the first round, a block read from storage was evicted since its last read, and
    // its id is in the ghost (4 MiB holds every block ever evicted): every read is a ghost hit.
    assert!(reads > blocks, "{reads} reads in two more rounds of {blocks} blocks");
    assert_eq!(ghost, reads, "{reads} reads, {ghost} ghost hits");
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
    db.flush_all().unwrap();
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

fn budget_options(fs: &MemFs, budget: usize) -> Options {
    let mut o = Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    o.memory.budget_mut().bytes = budget;
    o.memory.budget_mut().tuner_mut();
    o.memory.budget_mut().tuner_mut().floor = 512 << 10;
    // Cycles only when the test asks (the timer never fires during it).
    o.memory.budget_mut().tuner_mut().period_ms = 3_600_000;
    o.wal.max_size = 1 << 40;
    o.table.block_size = 4096;
    o.filters.bits_per_key = 10.0;
    o.compaction.max_bytes_for_level_base = 2 << 20;
    o.compaction.target_file_size = 1 << 20;
    o
}

#[test]
fn one_budget_is_split_and_every_region_is_reported() {
    let fs = MemFs::new();
    let db = Db::open("/b", budget_options(&fs, 64 << 20)).unwrap();
    let m = db.memory();
    assert_eq!((m.write_capacity, m.write_buffer_size), (16 << 20, 8 << 20));
    // The key-value cache's tenth comes out of the block cache's part.
    assert_eq!(m.kv_cache_capacity, (64 << 20) / 10);
    assert_eq!(m.cache_capacity + m.kv_cache_capacity, 48 << 20);
    assert_eq!(
        m.ghost_capacity,
        128 << 20,
        "the tuner turns on the paper's ghost cache"
    );
    db.close().unwrap();

    // Elastic policies get a filter region.
    let fs = MemFs::new();
    let o = {
        let mut o = budget_options(&fs, 100 << 20);
        o.filters.policy = cairn::BpkPolicy::Elastic.into();
        o
    };
    let db = Db::open("/b", o).unwrap();
    assert_eq!(db.stats().elastic.budget, 10 << 20);
    let m = db.memory();
    assert_eq!(m.write_capacity + m.cache_capacity + m.kv_cache_capacity, 90 << 20);
    db.close().unwrap();

    // Bad combinations name the option.
    for (o, name) in [
        (
            {
                let mut o = Options::default();
                o.memory.budget_mut().bytes = 64 << 20;
                o.memory.budget_mut().write_share = 1.0;
                o
            },
            "memory.write_share",
        ),
        (
            {
                let mut o = Options::default();
                o.compaction.merge_policy = cairn::MergePolicyKind::Garnering { c: 0.8 };
                o.compaction.level_targets = cairn::LevelTargets::WriteMemory;
                o
            },
            "compaction.level_targets",
        ),
    ] {
        let e = Db::open("/bad", {
            let mut o = o;
            o.fs = Arc::new(fs.clone());
            o
        })
        .unwrap_err();
        assert!(
            matches!(&e, cairn::Error::InvalidOptions { option, .. } if *option == name),
            "{e}"
        );
    }
    // By name, a memtable size selects fixed sizes: a share of the budget then has no place.
    let mut o = Options::default();
    o.set("memtable.size", "1MiB").unwrap();
    let e = o.set("memory.write_share", "0.5").unwrap_err();
    assert!(
        matches!(&e, cairn::Error::InvalidOptions { option, .. } if *option == "memory.write_share"),
        "{e}"
    );
}

/// Writes with merges and no reads: the tuner gives write memory more; reads that a larger
/// cache would save and no merges: it gives the cache more. The budget is kept exactly.
#[test]
fn the_tuner_moves_memory_where_the_io_is() {
    let fs = MemFs::new();
    let budget = 8 << 20;
    let db = Db::open("/t", budget_options(&fs, budget)).unwrap();
    assert!(db.tune_memory().is_none(), "the first call starts the first cycle");
    for i in 0..60_000u32 {
        db.put(
            format!("k{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000),
            vec![b'x'; 200],
        )
        .unwrap();
    }
    db.wait_for_background().unwrap();
    let before = db.memory();
    let r = db.tune_memory().expect("a cycle with operations");
    assert!(r.write_derivative < 0.0, "{r:?}");
    assert!(r.cost_derivative < 0.0 && r.write_step > 0, "{r:?}");
    let after = db.memory();
    assert_eq!(after.write_capacity as i64, before.write_capacity as i64 + r.write_step);
    assert_eq!(
        after.write_capacity + after.cache_capacity + after.kv_cache_capacity,
        budget
    );

    assert_eq!(db.tuner_history().len(), 1);
    let text = db.property("cairn.tuner").unwrap();
    println!("{text}");
    assert!(text.contains(", 1 cycle\n"), "{text}");
    let rule = db.tuner_history()[0].rule.to_string();
    assert_eq!(text.matches(&rule).count(), 1, "one row: {text}");
    let keys: Vec<Vec<u8>> = db.iter().map(|r| r.unwrap().0).step_by(7).collect();
    db.close().unwrap();

    // Reopened (a fresh tuner): reads of more blocks than the cache holds, no writes. The
    // ghost sees what a larger cache would save; write memory shrinks.
    let db = Db::open("/t", budget_options(&fs, budget)).unwrap();
    db.wait_for_background().unwrap();
    assert!(db.tune_memory().is_none());
    for _ in 0..3 {
        for k in &keys {
            db.get(k).unwrap();
        }
    }
    let r = db.tune_memory().expect("a cycle with operations");
    assert!(r.read_derivative > 0.0 && r.write_derivative == 0.0, "{r:?}");
    assert!(r.write_step < 0, "{r:?}");
    let m = db.memory();
    assert_eq!(m.write_capacity + m.cache_capacity + m.kv_cache_capacity, budget);
}

/// Checks a tree's shape against level targets that follow write memory `budget` (T = 10) once
/// compaction has settled: every level above the deepest is under its target (the deepest
/// level's bytes / 10^distance), no level is due to be added (L1's target ≤ w·T) or removed
/// (L2's target ≥ w·T / 1.5), `w` being the budget in the bytes it becomes on disk (flushed
/// per memtable byte switched). Returns the number of sorted levels.
fn settled_shape(db: &Db, budget: usize) -> usize {
    let s = &db.stats().trees[0];
    let switched = (s.switched_for_memory + s.switched_for_log) as f64;
    let w = budget as f64 * (s.flush_bytes as f64 / switched).clamp(0.05, 1.0);
    assert!(
        w < budget as f64,
        "unique keys flush smaller than their memtable: {s:?}"
    );
    let t = &db.levels()[0];
    let n = t.deepest as usize;
    let bytes = |l: usize| t.levels.get(l).map_or(0, |l| l.bytes) as f64;
    let target = |l: usize| bytes(n) / 10f64.powi((n - l) as i32);
    for l in 1..n {
        assert!(
            bytes(l) < target(l),
            "L{l} {} over its target {}: {t:?}",
            bytes(l),
            target(l)
        );
    }
    assert!(target(1) <= w * 10.0, "a level is due to be added: {t:?}");
    if n >= 2 {
        assert!(target(2) >= w * 10.0 / 1.5, "L1 is due to be removed: {t:?}");
    }
    assert!(t.levels.len() <= n + 1, "data below the deepest level: {t:?}");
    n
}

/// Luo & Carey §4.1.3 (`level_targets = write-memory`): a tree loaded under a small write memory
/// grows by adding levels at L1; a smaller write memory adds one more; a larger one drains L1
/// and removes it, twice. Keys stay readable throughout and the shape survives a reopen.
#[test]
fn levels_follow_write_memory() {
    let fs = MemFs::new();
    let o = {
        let mut o = common::small(Arc::new(fs.clone()), 16 << 10);
        o.compaction.level_targets = cairn::LevelTargets::WriteMemory;
        // L1's capacity follows write memory: no fixed base.
        o.compaction.max_bytes_for_level_base = Options::default().compaction.max_bytes_for_level_base;
        o
    };
    let db = Db::open("/lv", o.clone()).unwrap();
    let n = 24_000u32;
    let mut model = std::collections::BTreeMap::new();
    for i in 0..n {
        let k = common::key(i.wrapping_mul(7919) % n);
        let v = format!("{i:0>120}").into_bytes();
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.wait_for_background().unwrap();
    let loaded = settled_shape(&db, 64 << 10);
    assert_eq!(loaded, 2, "3 MB under 640 KB per L1: two levels");
    assert_eq!(db.stats().trees[0].levels_added, 1);

    let resize = |budget: usize| {
        db.resize_memory(MemoryLimits {
            write_memory_budget: Some(budget),
            write_buffer_size: Some(budget / 4),
            ..MemoryLimits::default()
        })
        .unwrap();
        db.wait_for_background().unwrap();
    };
    resize(16 << 10);
    assert_eq!(settled_shape(&db, 16 << 10), 3);
    assert_eq!(db.stats().trees[0].levels_added, 2);
    resize(4 << 20);
    assert_eq!(settled_shape(&db, 4 << 20), 1);
    assert_eq!(db.stats().trees[0].levels_removed, 2);
    assert_eq!(common::contents(&db), model);
    drop(db);

    let db = Db::open("/lv", o).unwrap();
    assert_eq!(db.levels()[0].deepest, 1);
    assert_eq!(common::contents(&db), model);
}

/// A partitioned memory component (Luo & Carey §4.1) under skewed overwrites: memory merges
/// drop overwritten versions, flushes take runs into grouped L0, write memory stays within its
/// budget (plus the group being written), every read sees the newest value, an explicit flush
/// leaves only the current WAL, and everything survives a reopen.
#[test]
fn partitioned_memory_component() {
    let fs = MemFs::new();
    let opts = {
        let mut o = common::small(Arc::new(fs.clone()), 256 << 10);
        o.memtable.component = cairn::MemoryComponent::Partitioned;
        o.memtable.partitioned_size_ratio = 4;
        o.memory.fixed_mut().memtable_size = 8 << 10;
        o.memory.fixed_mut().write_memory = 96 << 10;
        o.wal.max_size = 1 << 20;
        o.compaction.l0_trigger = 8;
        o.write_stalls.l0_slowdown_trigger = 16;
        o.write_stalls.l0_stop_trigger = 32;
        o.filters.bits_per_key = 10.0;
        o
    };
    let db = Db::open("/p", opts.clone()).unwrap();
    let mut model = std::collections::BTreeMap::new();
    let mut peak = 0;
    for i in 0..30_000u32 {
        // Half of the writes to 5% of the keys.
        let k = if i % 2 == 0 { i * 7 % 100 } else { i * 13 % 2000 };
        let v = format!("value {i:08} {}", "x".repeat(40));
        db.put(common::key(k), v.as_bytes()).unwrap();
        model.insert(k, v);
        peak = peak.max(db.memory().write_usage);
    }
    // The bound is structural: writes stop at the budget plus one memtable while memory is on
    // its way out, and a merge step then adds at most its output (one run of the level below,
    // up to 1.5 runs after a remainder joined it, plus the upper input's slice, up to a run).
    let (budget, run) = (96 << 10, 8 << 10);
    assert!(
        peak <= budget + run + run * 5 / 2 + 4096,
        "write memory peaked at {peak} B over {budget} B"
    );
    let s = db.stats();
    let tree = &s.trees[0];
    assert!(tree.memory_merges > 10, "{} memory merges", tree.memory_merges);
    assert!(
        tree.memory_merge_bytes_out < tree.memory_merge_bytes_in,
        "merges drop overwritten versions: {} B in, {} B out",
        tree.memory_merge_bytes_in,
        tree.memory_merge_bytes_out
    );
    assert!(s.flush_bytes_written > 0);
    for (k, v) in &model {
        assert_eq!(
            db.get(common::key(*k)).unwrap().as_deref(),
            Some(v.as_bytes()),
            "key {k}"
        );
    }
    db.flush_all().unwrap();
    db.wait_for_background().unwrap();
    assert!(
        db.memory().write_usage < 1024,
        "an explicit flush empties memory (the empty active memtable stays)"
    );
    // Flushes by kind (whole, partial, log, full): no whole memtable, memory-triggered
    // partial flushes, the explicit flush a full one; the kinds add up to the tree's bytes.
    let tree = db.stats().trees[0].clone();
    let f = tree.flushes;
    assert_eq!(f.whole, cairn::stats::FlushCount::default());
    assert!(f.partial.count > 0 && f.full.count > 0, "{f:?}");
    assert_eq!(f.by_kind().iter().map(|(_, c)| c.bytes).sum::<u64>(), tree.flush_bytes);
    let wals = cairn::env::FileSystem::list(&fs, std::path::Path::new("/p"))
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(".wal"))
        .count();
    assert_eq!(
        wals,
        1,
        "only the current WAL is left after the flush: {}",
        db.property("cairn.stats").unwrap()
    );
    drop(db);
    let db = Db::open("/p", opts).unwrap();
    for (k, v) in &model {
        assert_eq!(
            db.get(common::key(*k)).unwrap().as_deref(),
            Some(v.as_bytes()),
            "key {k} after reopen"
        );
    }
}

/// Memory taken from write memory is released without waiting for a write: a memtable above
/// the new memtable size is switched and flushed at once (the tuner's idle rule moves write
/// memory to the cache when no writes come).
#[test]
fn shrinking_write_memory_flushes_a_memtable_above_it() {
    let fs = MemFs::new();
    let db = {
        let mut o = Options::with_fixed_memory(8 << 20, 4 << 20, 1 << 20);
        o.fs = Arc::new(fs.clone());
        Db::open("/s", o).unwrap()
    };
    for i in 0..3000u32 {
        db.put(common::key(i), vec![b'v'; 100]).unwrap();
    }
    let before = db.memory().write_usage;
    assert!(before > 300 << 10, "{before}");
    // A larger memtable size keeps the memtable.
    db.resize_memory(MemoryLimits {
        write_buffer_size: Some(6 << 20),
        ..MemoryLimits::default()
    })
    .unwrap();
    db.wait_for_background().unwrap();
    assert_eq!(db.memory().write_usage, before);
    db.resize_memory(MemoryLimits {
        write_memory_budget: Some(256 << 10),
        write_buffer_size: Some(128 << 10),
        ..MemoryLimits::default()
    })
    .unwrap();
    db.wait_for_background().unwrap();
    let after = db.memory().write_usage;
    assert!(after < 64 << 10, "{before} B before, {after} B after");
    assert_eq!(db.levels()[0].levels[0].files, 1, "one flushed table");
    for i in 0..3000u32 {
        assert!(db.get(common::key(i)).unwrap().is_some());
    }
}

/// The whole-key filter of a memtable is sized for what the tree will hold, not for a full
/// memtable: at the defaults (64 MiB memtables in 128 MiB of write memory) 128 trees once held
/// the whole budget in empty 1 MiB filters, and every write flushed a one-entry memtable.
#[test]
fn many_trees_share_write_memory_without_flushing() {
    let fs = MemFs::new();
    let o = Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    let db = Db::open("/m", o.clone()).unwrap();
    let trees: Vec<_> = (0..128).map(|t| db.tree(&format!("t{t}")).unwrap()).collect();
    for i in 0..20u32 {
        for t in &trees {
            t.put(common::key(i), vec![b'v'; 100]).unwrap();
        }
    }
    let s = db.stats();
    assert_eq!((s.flush_bytes_written, s.stall_stops), (0, 0));
    // Each tree's first filter is sized for its even share of write memory when it was
    // created (a 64th of budget / trees then: a harmonic sum, about 5 MiB here).
    let used = db.memory().write_usage;
    assert!(used < 8 << 20, "{used} B of write memory for 2560 entries");
    // A reopen replays the WALs into memtables sized the same way: nothing is spilled.
    drop(trees);
    db.close().unwrap();
    let db = Db::open("/m", o).unwrap();
    assert_eq!(db.stats().flush_bytes_written, 0);
    assert_eq!(
        db.tree("t127").unwrap().get(common::key(19)).unwrap().as_deref(),
        Some(&[b'v'; 100][..])
    );
}

/// Under a budget, index blocks live in the block cache at high priority (not pinned): they
/// are counted there, an emptied cache loses them, and lookups read them again.
#[test]
fn index_blocks_live_in_the_budgets_cache_and_come_back_after_eviction() {
    let fs = MemFs::new();
    let mut o = budget_options(&fs, 16 << 20);
    // Every lookup reaches the tables (none answered by a key-value cache).
    o.memory.budget_mut().kv_cache_share = 0.0;
    let db = Db::open("/b", o).unwrap();
    load(&db);
    cycle(&db, 1); // opens the tables' readers
    let m = db.memory();
    assert!(m.table_index_bytes > 0);
    assert_eq!(m.cache_index_usage, m.table_index_bytes, "the open cached every index");
    assert!(m.cache_usage >= m.cache_index_usage);
    let reads = |db: &Db| db.stats().io.kind(cairn::BlockKind::Index).reads;
    let before = reads(&db);
    cycle(&db, 1);
    assert_eq!(reads(&db), before, "hits only");
    let cap = m.cache_capacity;
    let shrink = |bytes| cairn::MemoryLimits {
        block_cache: Some(bytes),
        ..Default::default()
    };
    db.resize_memory(shrink(0)).unwrap();
    assert_eq!(db.memory().cache_index_usage, 0);
    db.resize_memory(shrink(cap)).unwrap();
    cycle(&db, 1);
    let tables = db.stats().files.len() as u64;
    assert_eq!(reads(&db), before + tables, "each table's index read once more");
    assert_eq!(db.memory().cache_index_usage, m.table_index_bytes);
    db.close().unwrap();
}

/// The tuner prices the key-value cache against the block cache: lookups of a hot set larger
/// than the key-value cache (its ghost would have answered the rest) grow it; lookups spread
/// uniformly over many more keys than memory holds shrink it. (That it goes all the way to
/// nothing is the decider's, `testdata/tuning/memory.txt`.)
#[test]
fn the_tuner_grows_the_key_value_cache_for_hot_keys_and_shrinks_it_for_uniform_ones() {
    let fs = MemFs::new();
    let budget = 4 << 20;
    let db = Db::open("/kv", budget_options(&fs, budget)).unwrap();
    let keys = 200_000u32;
    let key = |i: u32| format!("k{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000_007);
    for i in 0..keys {
        db.put(key(i), vec![b'x'; 100]).unwrap();
    }
    db.flush_all().unwrap();
    db.compact_range::<Vec<u8>, _>(..).unwrap();
    db.wait_for_background().unwrap();
    let kv = |db: &Db| db.memory().kv_cache_capacity;
    // A cycle ends here (the background thread may have started the first): the next starts.
    db.tune_memory();
    let start = kv(&db);
    // About 2,400 entries of ~170 B cached: a hot set of 4,000 keys overflows into the ghost.
    for _ in 0..20 {
        for i in 0..4_000u32 {
            db.get(key(i)).unwrap();
        }
    }
    let r = db.tune_memory().expect("a cycle with operations");
    assert!(r.kv_step > 0 && r.kv_derivative < 0.0, "{r:?}");
    assert_eq!(kv(&db) as i64, start as i64 + r.kv_step);
    let m = db.memory();
    assert_eq!(m.write_capacity + m.cache_capacity + m.kv_cache_capacity, budget);
    // Uniform lookups over 23 MB of data: a block cached holds ~30 keys a lookup may want, an
    // entry one; the key-value cache gives memory back.
    for i in 0..40_000u32 {
        db.get(key(i.wrapping_mul(7_919) % keys)).unwrap();
    }
    let r = db.tune_memory().expect("a cycle with operations");
    assert!(r.kv_step < 0 && r.kv_derivative > 0.0, "{r:?}");
    let m = db.memory();
    assert_eq!(m.write_capacity + m.cache_capacity + m.kv_cache_capacity, budget);
    assert!(db.property("cairn.tuner").unwrap().contains("key-value cache"));
    // Uniform lookups go on: it shrinks to nothing (a quarter a cycle, then what is left)…
    for round in 0..30u32 {
        if kv(&db) == 0 {
            break;
        }
        for i in 0..40_000u32 {
            db.get(key((i + round * 40_000).wrapping_mul(7_919) % keys)).unwrap();
        }
        db.tune_memory().expect("a cycle with operations");
    }
    assert_eq!(kv(&db), 0, "{}", db.property("cairn.tuner").unwrap());
    // … and grows back when hot keys return: with no room, a fill goes to the ghost at once.
    for _ in 0..20 {
        for i in 0..4_000u32 {
            db.get(key(i)).unwrap();
        }
    }
    let r = db.tune_memory().expect("a cycle with operations");
    assert!(r.kv_step > 0 && r.kv_derivative < 0.0, "{r:?}");
    assert!(kv(&db) > 0);
}
