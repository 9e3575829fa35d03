//! Elastic filter units (ElasticBF) end to end: tables with units on disk, the adjuster's
//! loads and unloads within filter memory, hotness inheritance through compaction, run-time
//! resizing, and answers that never depend on what is loaded. The background adjuster is off
//! (`elastic_interval_ms = 0`): rounds run when the test calls `adjust_filters`, so every count
//! is deterministic.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail by panicking"
)]

mod common;

use cairn::env::MemFs;
use cairn::{BlockKind, BpkPolicy, Db, FilterPolicy, MemoryLimits, Options};
use std::sync::Arc;

fn options(fs: &MemFs, policy: BpkPolicy) -> Options {
    let mut o = common::small(Arc::new(fs.clone()), 32 << 10);
    o.filters.policy = policy.into();
    o.filters.bits_per_key = 4.0;
    if let Some(u) = o.filters.policy.units_mut() {
        u.life_time = 500;
        u.interval_ms = 0;
    }
    o.compaction.l0_trigger = 64;
    o.write_stalls.l0_slowdown_trigger = 64;
    o.write_stalls.l0_stop_trigger = 64;
    o.compaction.max_bytes_for_level_base = 1 << 30;
    o
}

/// Even keys `key00000`, `key00002`, …: odd keys are absent but inside the tables' ranges.
fn load(db: &Db, n: u32) {
    for i in 0..n {
        db.put(common::key(2 * i), format!("v{i}")).unwrap();
    }
}

/// A database at `dir` holding `n` even keys, compacted into the bottom level.
fn compacted(dir: &str, opts: Options, n: u32) -> Db {
    let db = Db::open(dir, opts).unwrap();
    load(&db, n);
    db.compact_range::<&[u8], _>(..).unwrap();
    db
}

/// `rounds` rounds of 800 absent lookups in the first tenth of the key space, each followed by
/// an adjustment.
fn hot_rounds(db: &Db, rounds: usize) {
    for round in 0..rounds {
        for i in 0..800u32 {
            assert!(db.get(common::key(2 * i + 1)).unwrap().is_none(), "round {round}");
        }
        db.adjust_filters();
    }
}

fn loaded(db: &Db) -> u64 {
    db.stats().files.iter().map(|f| f.loaded_units).sum()
}

#[test]
fn units_load_by_hotness_within_the_filter_memory() {
    let fs = MemFs::new();
    let db = compacted("/e", options(&fs, BpkPolicy::Elastic), 8000);
    // The tables carry 6 units of 4 bits per key in every segment.
    let files = db.stats().files;
    assert!(!files.is_empty());
    assert!(files
        .iter()
        .all(|f| f.filter_policy == "elastic" && (f.filter_bpk - 24.0).abs() < 1e-9));

    // First round: every segment gets one unit (4 bits per key, the whole budget) as far as
    // the memory goes.
    db.adjust_filters();
    let s = db.stats().elastic;
    assert!(s.budget > 0 && s.usage <= s.budget, "{s:?}");
    assert_eq!(s.loads, loaded(&db));
    assert!(s.loads > 10, "{s:?}");
    let reads = db.stats().io.kind(BlockKind::FilterUnit).reads;
    assert_eq!(reads, s.loads, "one read per loaded unit");
    let first = s.loads;

    // Absent lookups in the first tenth of the key space, round after round: the hot
    // segments gain units, taken from the cold ones once those expire.
    for round in 0..20 {
        for i in 0..800u32 {
            assert!(db.get(common::key(2 * i + 1)).unwrap().is_none(), "round {round}");
        }
        db.adjust_filters();
        let s = db.stats().elastic;
        assert!(s.usage <= s.budget, "round {round}: {s:?}");
    }
    let s = db.stats().elastic;
    assert!(s.loads > first && s.unloads > 0, "{s:?}");
    let files = db.stats().files;
    let hot = files.iter().find(|f| f.probes > 0).unwrap();
    let cold_units: u64 = files.iter().filter(|f| f.probes == 0).map(|f| f.loaded_units).sum();
    assert!(hot.loaded_units > 0);
    // The hot table's segments are at (or near) all six units; the cold tables gave theirs.
    let hot_segments = files
        .iter()
        .filter(|f| f.probes > 0)
        .map(|f| f.loaded_units)
        .sum::<u64>();
    assert!(hot_segments > cold_units, "hot {hot_segments} vs cold {cold_units}");

    // The filters now rule out nearly every absent lookup in the hot range: a handful of
    // data reads for 800 lookups (6 units: fpr ≈ 1e-4 per segment).
    let before = db.stats().io.kind(BlockKind::Data);
    for i in 0..800u32 {
        assert!(db.get(common::key(2 * i + 1)).unwrap().is_none());
    }
    let after = db.stats().io.kind(BlockKind::Data);
    let data = (after.reads + after.cache_hits) - (before.reads + before.cache_hits);
    assert!(data < 20, "{data} data blocks read for 800 absent keys");

    // Present keys are found whatever is loaded.
    for i in 0..8000u32 {
        assert_eq!(db.get(common::key(2 * i)).unwrap(), Some(format!("v{i}").into_bytes()));
    }
}

#[test]
fn shrinking_the_filter_memory_unloads_at_once() {
    let fs = MemFs::new();
    let db = compacted("/r", options(&fs, BpkPolicy::Elastic), 8000);
    db.adjust_filters();
    let s = db.stats().elastic;
    let half = (s.usage / 2) as usize;
    db.resize_memory(MemoryLimits {
        filter_memory: Some(half),
        ..MemoryLimits::default()
    })
    .unwrap();
    let t = db.stats().elastic;
    assert_eq!(t.budget, half as u64);
    assert!(t.usage <= t.budget && t.usage > 0, "{t:?}");
    assert!(t.unloads > 0);
    assert_eq!(db.memory().pinned_filter_usage as u64, t.usage);
    // Growing it back lets the next round load again.
    db.resize_memory(MemoryLimits {
        filter_memory: Some(2 * s.usage as usize),
        ..MemoryLimits::default()
    })
    .unwrap();
    for i in 0..2000u32 {
        assert!(db.get(common::key(2 * i + 1)).unwrap().is_none());
    }
    db.adjust_filters();
    assert!(db.stats().elastic.usage > t.usage);
    for i in 0..8000u32 {
        assert!(db.get(common::key(2 * i)).unwrap().is_some());
    }
}

#[test]
fn compaction_outputs_inherit_the_hotness_of_their_inputs() {
    let fs = MemFs::new();
    let db = compacted("/i", options(&fs, BpkPolicy::Elastic), 8000);
    db.adjust_filters();
    hot_rounds(&db, 5);
    // Rewrite everything (a newer copy of each key, then a full compaction): the outputs are
    // new tables whose segments inherit the counts of the segments they overlap.
    for i in 0..8000u32 {
        db.put(common::key(2 * i), format!("w{i}")).unwrap();
    }
    db.compact_range::<&[u8], _>(..).unwrap();
    db.adjust_filters();
    let files = db.stats().files;
    assert!(files.iter().all(|f| f.probes == 0), "all tables are new");
    // The outputs covering the hot range start with more units than the others.
    let first = &files[0];
    let rest: Vec<u64> = files[1..].iter().map(|f| f.loaded_units).collect();
    assert!(
        rest.iter().all(|&u| first.loaded_units > u),
        "hot output {} units, others {rest:?}",
        first.loaded_units
    );
    for i in 0..8000u32 {
        assert_eq!(db.get(common::key(2 * i)).unwrap(), Some(format!("w{i}").into_bytes()));
    }
}

#[test]
fn the_combined_mode_applies_the_optimum_through_loaded_units() {
    let fs = MemFs::new();
    let opts = {
        let mut o = options(&fs, BpkPolicy::MnemosyneElastic);
        if let cairn::FilterPolicy::MnemosyneElastic { solve_every, .. } = &mut o.filters.policy {
            *solve_every = 1000;
        }
        o
    };
    let db = compacted("/m", opts, 8000);
    db.adjust_filters();
    hot_rounds(&db, 5);
    let s = db.stats().elastic;
    assert!(s.solves > 0, "{s:?}");
    assert!(s.usage <= s.budget);
    let files = db.stats().files;
    let hot: u64 = files.iter().filter(|f| f.probes > 0).map(|f| f.loaded_units).sum();
    let cold: u64 = files.iter().filter(|f| f.probes == 0).map(|f| f.loaded_units).sum();
    assert!(hot > cold, "hot {hot} cold {cold}");
    for i in 0..8000u32 {
        assert!(db.get(common::key(2 * i)).unwrap().is_some());
    }
}

#[test]
fn reopening_starts_from_the_initial_units() {
    let fs = MemFs::new();
    drop(compacted("/o", options(&fs, BpkPolicy::Elastic), 4000));
    let db = Db::open("/o", options(&fs, BpkPolicy::Elastic)).unwrap();
    assert_eq!(loaded(&db), 0);
    db.adjust_filters();
    assert!(loaded(&db) > 0);
    for i in 0..4000u32 {
        assert!(db.get(common::key(2 * i)).unwrap().is_some());
        assert!(db.get(common::key(2 * i + 1)).unwrap().is_none());
    }
    // Under another policy the same tables are probed with every unit, as before. Uniform is
    // the default, which a reopen would take as "keep the stored policy": say it is meant.
    drop(db);
    let uniform = {
        let mut o = options(&fs, BpkPolicy::Uniform);
        o.keep_stored = false;
        o
    };
    let db = Db::open("/o", uniform).unwrap();
    assert_eq!(db.options().filters.policy, FilterPolicy::Uniform);
    assert_eq!(db.stats().elastic, cairn::ElasticStats::default());
    for i in 0..4000u32 {
        assert!(db.get(common::key(2 * i)).unwrap().is_some());
    }
}

#[test]
fn invalid_elastic_options_are_named() {
    let fs = MemFs::new();
    for (opts, name) in [
        (
            {
                let mut o = options(&fs, BpkPolicy::Elastic);
                if let Some(u) = o.filters.policy.units_mut() {
                    u.units = 0;
                }
                o
            },
            "filters.elastic_units",
        ),
        (
            {
                let mut o = options(&fs, BpkPolicy::Elastic);
                if let Some(u) = o.filters.policy.units_mut() {
                    u.unit_bits_per_key = 0.0;
                }
                o
            },
            "filters.elastic_unit_bits_per_key",
        ),
        (
            {
                let mut o = options(&fs, BpkPolicy::MnemosyneElastic);
                if let cairn::FilterPolicy::MnemosyneElastic { solve_every, .. } = &mut o.filters.policy {
                    *solve_every = 0;
                }
                o
            },
            "filters.elastic_solve_every",
        ),
    ] {
        match Db::open("/x", opts) {
            Err(cairn::Error::InvalidOptions { option, .. }) => assert_eq!(option, name),
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn the_background_adjuster_never_changes_an_answer() {
    // Readers, a writer and compactions race the background adjuster (a round every
    // millisecond, units loaded and unloaded under the readers): every read sees the model.
    let fs = MemFs::new();
    let opts = {
        let mut o = common::small(Arc::new(fs.clone()), 16 << 10);
        o.filters.bits_per_key = 4.0;
        o.filters.policy = FilterPolicy::Elastic(cairn::ElasticUnits {
            interval_ms: 1,
            life_time: 50,
            ..Default::default()
        });
        o.compaction.l0_trigger = 4;
        o.write_stalls.l0_slowdown_trigger = 20;
        o.write_stalls.l0_stop_trigger = 30;
        o
    };
    let db = Arc::new(Db::open("/b", opts).unwrap());
    load(&db, 4000);
    let readers: Vec<_> = (0..2u32)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for round in 0..6u32 {
                    // Each reader favours another part of the key space per round.
                    let base = (t * 1000 + round * 500) % 3500;
                    for i in base..base + 500 {
                        let v = db.get(common::key(2 * i)).unwrap().expect("present key");
                        assert!(v.starts_with(b"v") || v.starts_with(b"w"));
                        assert!(db.get(common::key(2 * i + 1)).unwrap().is_none());
                    }
                }
            })
        })
        .collect();
    for i in 0..4000u32 {
        db.put(common::key(2 * i), format!("w{i}")).unwrap();
    }
    for r in readers {
        r.join().unwrap();
    }
    db.wait_for_background().unwrap();
    for i in 0..4000u32 {
        assert_eq!(db.get(common::key(2 * i)).unwrap(), Some(format!("w{i}").into_bytes()));
    }
    // A round now fits the budget of the tables as they are (a background round may not have
    // run since the last compaction shrank them).
    db.adjust_filters();
    let s = db.stats().elastic;
    assert!(s.rounds > 1 && s.loads > 0 && s.usage <= s.budget, "{s:?}");
    assert_eq!(s.load_errors, 0);
}

#[test]
fn a_damaged_unit_is_left_unloaded_and_answers_do_not_change() {
    use cairn::env::{read_all, write_all_synced, FileSystem};
    use cairn::sst::{ReaderOptions, TableReader};
    use std::path::Path;
    let fs = MemFs::new();
    drop(compacted("/c", options(&fs, BpkPolicy::Elastic), 8000));
    // Flip one bit in the first unit of every segment of every table.
    let mut damaged = 0;
    for name in fs.list(Path::new("/c")).unwrap() {
        if !name.ends_with(".sst") {
            continue;
        }
        let path = Path::new("/c").join(&name);
        let t = TableReader::open(&fs, &path, None, ReaderOptions::default()).unwrap();
        let handles: Vec<_> = t.properties().segments.iter().map(|s| s.units[0]).collect();
        drop(t);
        let mut bytes = read_all(&fs, &path).unwrap();
        for h in handles {
            bytes[(h.offset + h.size / 2) as usize] ^= 0x10;
            damaged += 1;
        }
        fs.remove_file(&path).unwrap();
        write_all_synced(&fs, &path, &bytes).unwrap();
    }
    assert!(damaged > 0);
    let db = Db::open("/c", options(&fs, BpkPolicy::Elastic)).unwrap();
    db.adjust_filters();
    let s = db.stats().elastic;
    // Every first load the memory had room for failed (the checksum caught it): nothing
    // loaded, nothing charged, and the units after it are never read (units load in order).
    assert!(s.load_errors > 0 && s.load_errors <= damaged, "{s:?}");
    assert_eq!((s.loads, s.usage), (0, 0), "{s:?}");
    for i in 0..8000u32 {
        assert_eq!(db.get(common::key(2 * i)).unwrap(), Some(format!("v{i}").into_bytes()));
        assert!(db.get(common::key(2 * i + 1)).unwrap().is_none());
    }
}
