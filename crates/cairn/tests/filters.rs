//! Workload-aware point filters end to end: what Monkey, Mnemosyne and the oracle decide for
//! the files they write, Merlin's estimates against the exact counts, and the skip rule.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail by panicking"
)]

mod common;

use cairn::env::MemFs;
use cairn::{BlockKind, BpkPolicy, Db, FileAccessStats, Options};
use std::sync::Arc;

fn options(fs: &MemFs, policy: BpkPolicy) -> Options {
    let mut o = common::small(Arc::new(fs.clone()), 32 << 10);
    o.filters.policy = policy.into();
    o.filters.bits_per_key = 4.0;
    // Compaction only when the test asks.
    o.compaction.l0_trigger = 64;
    o.write_stalls.l0_slowdown_trigger = 64;
    o.write_stalls.l0_stop_trigger = 64;
    o.compaction.max_bytes_for_level_base = 1 << 30;
    o
}

/// Even keys `key00000`, `key00002`, …: odd keys are absent but inside every file's range.
fn load(db: &Db, n: u32, round: u32) {
    for i in 0..n {
        db.put(common::key(2 * i), format!("v{round}-{i}")).unwrap();
    }
}

/// Loads 4,000 keys into the bottom level, then a newer copy of a quarter of them into L0, and
/// runs `lookups` (present when `present`, else absent) so the statistics have something to
/// say; then rewrites everything with one more compaction.
fn build(policy: BpkPolicy, present: bool) -> (Db, Vec<FileAccessStats>) {
    let fs = MemFs::new();
    let db = Db::open("/p", options(&fs, policy)).unwrap();
    load(&db, 4000, 0);
    db.compact_range::<&[u8], _>(..).unwrap();
    for i in (0..4000).step_by(4) {
        db.put(common::key(2 * i), "newer").unwrap();
    }
    db.flush_all().unwrap();
    for round in 0..3 {
        for i in 0..4000u32 {
            let k = if present { 2 * i } else { 2 * i + 1 };
            assert_eq!(db.get(common::key(k)).unwrap().is_some(), present, "round {round}");
        }
    }
    db.compact_range::<&[u8], _>(..).unwrap();
    let files = db.stats().files;
    (db, files)
}

#[test]
fn mnemosyne_spends_no_bits_where_every_lookup_finds_its_key() {
    let (db, files) = build(BpkPolicy::Mnemosyne, true);
    assert!(!files.is_empty());
    // After the final compaction every file is in the bottom level and every lookup there
    // found its key: no empty lookups, so no filter.
    for f in &files {
        assert_eq!(f.filter_policy, "mnemosyne");
        assert_eq!(f.filter_bpk, 0.0, "file {} of level {}: {f:?}", f.file, f.level);
    }
    // Present keys still read correctly.
    assert_eq!(db.get(common::key(0)).unwrap().as_deref(), Some(&b"newer"[..]));
    assert_eq!(db.get(common::key(2)).unwrap().as_deref(), Some(&b"v0-1"[..]));
}

#[test]
fn mnemosyne_and_the_oracle_filter_files_that_empty_lookups_reach() {
    for policy in [BpkPolicy::Mnemosyne, BpkPolicy::Optimal, BpkPolicy::Monkey] {
        let (db, files) = build(policy, false);
        let total: u64 = files.iter().map(|f| f.entries).sum();
        let bits: f64 = files.iter().map(|f| f.filter_bpk * f.entries as f64).sum();
        // Every lookup was empty: the whole budget (4 bits per key) goes to filters.
        assert!(
            (bits / total as f64 - 4.0).abs() < 0.5,
            "{policy:?}: {:.2} bits per key on average",
            bits / total as f64
        );
        // Absent keys are ruled out by the filters: few data blocks read.
        let before = db.stats();
        for i in 0..2000u32 {
            assert!(db.get(common::key(2 * i + 1)).unwrap().is_none());
        }
        let after = db.stats();
        let unnecessary = after.total(|l| l.unnecessary_data_reads) - before.total(|l| l.unnecessary_data_reads);
        assert!(
            unnecessary < 400,
            "{policy:?}: {unnecessary} blocks read for 2,000 absent keys"
        );
    }
}

#[test]
fn merlin_estimates_follow_the_exact_counts() {
    let (_db, files) = build(BpkPolicy::Mnemosyne, false);
    for f in &files {
        // One thread: every lookup is recorded, and the window sees a steady rate.
        let (est, exact) = (f.estimated_empty, f.exact_empty);
        assert!(
            est >= 0.5 * exact && est <= 2.0 * exact + 10.0,
            "file {}: estimated {est:.0} empty lookups, exact {exact:.0}",
            f.file
        );
    }
}

#[test]
fn files_whose_filter_no_longer_pays_are_not_probed() {
    // Filters are written under Uniform (4 bits per key everywhere), then the workload turns
    // out to find every key; reopened under Mnemosyne, the next solve marks the bottom files'
    // filters not worth a probe, and lookups stop reading their filter units.
    let fs = MemFs::new();
    let db = Db::open("/s", options(&fs, BpkPolicy::Uniform)).unwrap();
    load(&db, 4000, 0);
    db.compact_range::<&[u8], _>(..).unwrap();
    drop(db);
    // Mnemosyne is the default, which a reopen does not take over the stored Uniform.
    let db = Db::open("/s", {
        let mut o = options(&fs, BpkPolicy::Mnemosyne);
        o.keep_stored = false;
        o
    })
    .unwrap();
    let unit_lookups = |db: &Db| {
        let s = db.stats();
        let probed: u64 = s
            .trees
            .iter()
            .flat_map(|t| &t.levels)
            .map(|l| l.filter_units_probed)
            .sum();
        let io = s.io.kind(BlockKind::FilterUnit);
        // Units are pinned in their readers by default: every consultation is counted per
        // level; reads and cache hits can only be fewer.
        assert!(io.reads + io.cache_hits <= probed);
        probed
    };
    let before = unit_lookups(&db);
    for i in 0..4000u32 {
        assert!(db.get(common::key(2 * i)).unwrap().is_some());
    }
    let probed_before_solve = unit_lookups(&db) - before;
    assert!(probed_before_solve >= 4000, "{probed_before_solve}");
    // A flush is a solve: the tree's statistics now say the bottom files get no empty lookups.
    db.put("zzz", "x").unwrap();
    db.flush_all().unwrap();
    let before = unit_lookups(&db);
    for i in 0..4000u32 {
        assert!(db.get(common::key(2 * i)).unwrap().is_some());
    }
    let probed_after = unit_lookups(&db) - before;
    assert!(
        probed_after < probed_before_solve / 10,
        "filter units still probed: {probed_after} (before the solve {probed_before_solve})"
    );
}
