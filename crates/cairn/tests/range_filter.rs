//! The range filter (Rosetta) end to end: bounded range reads with the filter on return exactly
//! what a model holds — forward, backward, every kind of bound, keys of every length, across
//! memtables, L0 and deeper levels — and an empty range between keys reads no data block.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail by panicking"
)]

mod common;

use cairn::env::MemFs;
use cairn::{BlockKind, Db, Options, RangeFilterKind};
use common::Model;
use rand::{Rng, SeedableRng};
use std::ops::Bound;
use std::sync::Arc;

const KINDS: [RangeFilterKind; 2] = [RangeFilterKind::Rosetta, RangeFilterKind::Grafite];

fn options(fs: &MemFs) -> Options {
    options_of(fs, RangeFilterKind::Rosetta)
}

fn options_of(fs: &MemFs, kind: RangeFilterKind) -> Options {
    let mut o = common::small(Arc::new(fs.clone()), 32 << 10);
    o.range_filter.bits_per_key = 22.0;
    o.range_filter.kind = kind;
    // Every table gets the bits (by workload, the first tables would get none).
    o.range_filter.by_workload = false;
    o
}

/// 16-byte keys: a number (big-endian, the filter's projection) and 8 bytes of suffix.
fn k16(x: u64, suffix: u8) -> Vec<u8> {
    let mut k = x.to_be_bytes().to_vec();
    k.extend_from_slice(&[suffix; 8]);
    k
}

fn bound(rng: &mut impl Rng, k: Vec<u8>) -> Bound<Vec<u8>> {
    if rng.gen_bool(0.5) {
        Bound::Included(k)
    } else {
        Bound::Excluded(k)
    }
}

/// A key near `x`: the 16-byte form, a prefix of it, or it with a byte appended.
fn near(rng: &mut impl Rng, x: u64) -> Vec<u8> {
    let mut k = k16(x, rng.gen_range(0..3));
    match rng.gen_range(0..4) {
        0 => k.truncate(rng.gen_range(0..=8)),
        1 => k.push(0),
        _ => {}
    }
    k
}

fn check(db: &Db, model: &Model, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) {
    let range = (lo.clone(), hi.clone());
    if let (Bound::Included(l) | Bound::Excluded(l), Bound::Included(h) | Bound::Excluded(h)) = (&lo, &hi) {
        if l > h || (l == h && !matches!((&lo, &hi), (Bound::Included(_), Bound::Included(_)))) {
            return; // BTreeMap refuses inverted and empty-excluded ranges
        }
    }
    let want: Vec<_> = model
        .range(range.clone())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let got: Vec<_> = db.range(range.clone()).map(|r| r.unwrap()).collect();
    assert_eq!(got, want, "forward {lo:?}..{hi:?}");
    let mut back: Vec<_> = db.range(range).rev().map(|r| r.unwrap()).collect();
    back.reverse();
    assert_eq!(back, want, "backward {lo:?}..{hi:?}");
}

#[test]
fn bounded_reads_match_the_model_with_the_filter_on() {
    for kind in KINDS {
        bounded_reads_match_the_model(kind);
    }
}

fn bounded_reads_match_the_model(kind: RangeFilterKind) {
    let fs = MemFs::new();
    let db = Db::open("/r", options_of(&fs, kind)).unwrap();
    let mut model = Model::new();
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    // Keys on a stride of 64 with random suffixes, overwrites and deletes, over several
    // flushes and compactions; the last round stays partly in memtables and L0.
    for round in 0..6u32 {
        for _ in 0..3000 {
            let x = rng.gen_range(0..20_000u64) * 64;
            let k = if rng.gen_bool(0.1) {
                near(&mut rng, x)
            } else {
                k16(x, rng.gen_range(0..3))
            };
            if rng.gen_bool(0.1) {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = format!("r{round}").into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        if round < 5 {
            db.flush_all().unwrap();
        }
    }
    db.wait_for_background().unwrap();
    for _ in 0..3000 {
        let x = rng.gen_range(0..20_000u64) * 64 + rng.gen_range(0..64);
        let r = 1u64 << rng.gen_range(0..8);
        let (lo, hi) = (near(&mut rng, x), near(&mut rng, x + r));
        let (lo, hi) = (bound(&mut rng, lo), bound(&mut rng, hi));
        check(&db, &model, lo, hi);
    }
    let levels = &db.stats().trees[0].levels;
    let probes: u64 = levels.iter().map(|l| l.range_probes).sum();
    let negatives: u64 = levels.iter().map(|l| l.range_negatives).sum();
    assert!(
        probes > 0 && negatives > 0,
        "{kind:?}: the filters were consulted ({probes} probes, {negatives} negative)"
    );
}

#[test]
fn an_empty_range_between_keys_reads_no_data_block() {
    let fs = MemFs::new();
    let opts = {
        let mut o = options(&fs);
        o.memory.fixed_mut().block_cache = cairn::CacheSource::Own(0);
        o
    };
    let db = Db::open("/e", opts).unwrap();
    for i in 0..20_000u64 {
        db.put(k16(i * 1024, 0), "v").unwrap();
    }
    db.compact_range::<&[u8], _>(..).unwrap();
    let before = db.stats();
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let n = 2000;
    for _ in 0..n {
        let x = rng.gen_range(0..20_000u64) * 1024 + 1 + rng.gen_range(0..900);
        let lo = k16(x, 0);
        let hi = k16(x + 16, 0);
        assert_eq!(db.range(lo..hi).count(), 0);
    }
    let after = db.stats();
    // What `cairn.filters` shows: the sampled sizes (16 values plus the excluded upper bound's
    // projection: 17, bucket ≤ 32; recorded by the first table a read asks, so a read falling
    // between two tables' key ranges records none) and each table's single 22-bit level.
    let text = db.property("cairn.filters").unwrap();
    let sized: u64 = text
        .split("sampled range sizes ≤32: ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .map(|c| c.replace(',', "").parse().unwrap())
        .unwrap_or_else(|| panic!("one size bucket: {text}"));
    assert!(sized <= n && sized >= n - n / 100, "{sized} of {n} reads sized: {text}");
    assert!(text.lines().any(|l| l.contains("  h0: 22.0; key[")), "{text}");
    assert!(text.contains("probes per height (1 in 64 reads) h0: "), "{text}");
    let data = after.io.kind(BlockKind::Data).reads - before.io.kind(BlockKind::Data).reads;
    let l = |s: &cairn::DbStats, f: fn(&cairn::LevelStats) -> u64| s.trees[0].levels.iter().map(f).sum::<u64>();
    let probes = l(&after, |l| l.range_probes) - l(&before, |l| l.range_probes);
    let fps = l(&after, |l| l.range_false_positives) - l(&before, |l| l.range_false_positives);
    // Every read asks a filter, but for a range falling between two tables' key ranges, which
    // asks no table at all (where tables end moves with the block format).
    assert!(probes >= n - n / 100, "every read asked a filter ({probes})");
    // Once: a range inside one table's key range reaches one table of the single level.
    assert!(
        probes <= n,
        "each read asked one filter once ({probes} probes, {n} reads)"
    );
    // 22 bits per key, ranges of 16 values: FPR ≈ 16 · 2.6e-5 per table.
    assert!(fps <= 5, "{fps} false positives in {probes} probes");
    assert!(
        data <= fps,
        "{data} data blocks read for {n} empty ranges ({fps} false positives)"
    );

    // The same ranges with the filter off read a data block each.
    drop(db);
    let db = Db::open("/e", {
        let mut o = options(&fs);
        o.memory.fixed_mut().block_cache = cairn::CacheSource::Own(0);
        o = Options {
            range_filter: Default::default(),
            ..o
        };
        o.range_filter.bits_per_key = 0.0;
        o.keep_stored = false;
        o
    })
    .unwrap();
    let before = db.stats().io.kind(BlockKind::Data).reads;
    for _ in 0..100 {
        let x = rng.gen_range(0..20_000u64) * 1024 + 1 + rng.gen_range(0..900);
        assert_eq!(db.range(k16(x, 0)..k16(x + 16, 0)).count(), 0);
    }
    assert!(db.stats().io.kind(BlockKind::Data).reads - before >= 100);
}

/// A read every table's filter rules out ends before any iterator is built — unless a
/// memtable holds an entry within its bounds: a value there is returned, a deletion there
/// hides nothing the tables hold, and a key flushed to L0 is read from L0.
#[test]
fn a_read_the_tables_rule_out_still_sees_memtables_and_l0() {
    for kind in KINDS {
        let fs = MemFs::new();
        let db = Db::open("/m", options_of(&fs, kind)).unwrap();
        let mut model = Model::new();
        for i in 0..5_000u64 {
            db.put(k16(i * 1024, 0), "t").unwrap();
            model.insert(k16(i * 1024, 0), b"t".to_vec());
        }
        db.compact_range::<&[u8], _>(..).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        for round in 0..3 {
            for _ in 0..200 {
                let x = rng.gen_range(0..5_000u64) * 1024 + 1 + rng.gen_range(0..900);
                let (lo, hi) = (k16(x, 0), k16(x + 64, 0));
                // Nothing there, then a value in the gap, then its deletion.
                check(&db, &model, Bound::Included(lo.clone()), Bound::Excluded(hi.clone()));
                let k = k16(x + rng.gen_range(0..64), 1);
                db.put(&k, "m").unwrap();
                model.insert(k.clone(), b"m".to_vec());
                check(&db, &model, Bound::Included(lo.clone()), Bound::Excluded(hi.clone()));
                if rng.gen_bool(0.5) {
                    db.delete(&k).unwrap();
                    model.remove(&k);
                    check(&db, &model, Bound::Included(lo), Bound::Excluded(hi));
                }
            }
            if round < 2 {
                db.flush_all().unwrap();
            }
        }
        // A deletion in a memtable over a key the tables hold: hidden, from both ends.
        let k = k16(1024, 0);
        db.delete(&k).unwrap();
        model.remove(&k);
        check(
            &db,
            &model,
            Bound::Included(k16(1000, 0)),
            Bound::Included(k16(1100, 0)),
        );
    }
}

/// Grafite: empty ranges between keys read no data block, whatever their length up to the
/// gap, and absent point lookups in tables without point-filter units read none either.
#[test]
fn grafite_rules_out_empty_ranges_of_any_length_and_absent_keys() {
    let fs = MemFs::new();
    let opts = || {
        let mut o = options_of(&fs, RangeFilterKind::Grafite);
        o.memory.fixed_mut().block_cache = cairn::CacheSource::Own(0);
        o.filters.bits_per_key = 0.0;
        o
    };
    let db = Db::open("/g", opts()).unwrap();
    for i in 0..20_000u64 {
        db.put(k16(i * 1024, 0), "v").unwrap();
    }
    db.compact_range::<&[u8], _>(..).unwrap();
    let text = db.property("cairn.filters").unwrap();
    assert!(
        text.contains("** range filters ** grafite at 22 bits per key"),
        "{text}"
    );
    assert!(text.lines().any(|l| l.contains("grafite 2")), "{text}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let data = |db: &Db| db.stats().io.kind(BlockKind::Data).reads;
    let before = data(&db);
    for len in [1u64, 16, 256, 1000] {
        for _ in 0..500 {
            let x = rng.gen_range(0..20_000u64) * 1024 + 1 + rng.gen_range(0..1022 - len);
            assert_eq!(db.range(k16(x, 0)..k16(x + len, 0)).count(), 0);
        }
    }
    // The keys of a table fill one of Grafite's blocks here, where its hash is a rotation: no
    // false positive at all.
    assert_eq!(data(&db) - before, 0, "empty ranges read data blocks");
    let before = data(&db);
    for _ in 0..1000 {
        let x = rng.gen_range(0..20_000u64) * 1024 + 1 + rng.gen_range(0..1000);
        assert_eq!(db.get(k16(x, 0)).unwrap(), None);
    }
    // Point lookups ask the projection only: the suffix of a 16-byte key is not seen, so keys
    // sharing a projection with a stored one would pass; these do not.
    assert_eq!(data(&db) - before, 0, "absent keys read data blocks");
    for i in (0..20_000u64).step_by(97) {
        assert_eq!(db.get(k16(i * 1024, 0)).unwrap().as_deref(), Some(&b"v"[..]));
    }
    // Reopened with the other kind: the tables keep theirs and are still read.
    drop(db);
    let mut o = opts();
    o.range_filter.kind = RangeFilterKind::Rosetta;
    o.keep_stored = false;
    let db = Db::open("/g", o).unwrap();
    let before = data(&db);
    for _ in 0..200 {
        let x = rng.gen_range(0..20_000u64) * 1024 + 1 + rng.gen_range(0..900);
        assert_eq!(db.range(k16(x, 0)..k16(x + 16, 0)).count(), 0);
    }
    assert_eq!(data(&db) - before, 0);
}

/// String keys (`user:` and a zero-padded id, ids on a stride): each table reads the digits
/// after its common prefix as a decimal number, so empty ranges of ids between keys are ruled
/// out by both kinds — at first by the keys alone, and after a rewrite by where the sampled
/// reads' bounds differ.
#[test]
fn string_keys_are_served_by_both_kinds() {
    for kind in KINDS {
        let fs = MemFs::new();
        let opts = {
            let mut o = options_of(&fs, kind);
            o.memory.fixed_mut().block_cache = cairn::CacheSource::Own(0);
            o
        };
        let db = Db::open("/s", opts).unwrap();
        let key = |id: u64| format!("user:{id:010}");
        for i in 0..20_000u64 {
            db.put(key(i * 1000), "v").unwrap();
        }
        db.compact_range::<&[u8], _>(..).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(17);
        let mut empty_reads = |db: &Db, len: u64| {
            let data = |db: &Db| db.stats().io.kind(BlockKind::Data).reads;
            let before = data(db);
            for _ in 0..500 {
                let id = rng.gen_range(0..20_000u64) * 1000 + 1 + rng.gen_range(0..999 - len);
                assert_eq!(db.range(key(id)..key(id + len)).count(), 0);
            }
            data(db) - before
        };
        // Each table's window: the digits after its common prefix, to the key's end, read as a
        // number.
        let windows = |db: &Db| {
            let text = db.property("cairn.filters").unwrap();
            for row in range_filter_rows(&text) {
                let w = row.split("key[").nth(1).unwrap_or_else(|| panic!("{kind:?}: {text}"));
                let (w, rest) = w.split_once(']').unwrap();
                let (o, w): (usize, usize) = w
                    .split_once("..+")
                    .map(|(o, w)| (o.parse().unwrap(), w.parse().unwrap()))
                    .unwrap();
                // (A filter no range read has asked yet is not in memory.)
                let rest = rest.trim_end_matches(" (not in memory)");
                assert_eq!((o + w, rest), (15, ", decimal"), "{kind:?}: {row}");
            }
        };
        windows(&db);
        // A range of 16 ids is 16 values, across a decimal carry too (bytes stretched one
        // crossing …09 → …10 over 247 values, past Rosetta's probe budget).
        let before = [empty_reads(&db, 1), empty_reads(&db, 16)];
        db.compact_range::<&[u8], _>(..).unwrap();
        windows(&db);
        let after = [empty_reads(&db, 1), empty_reads(&db, 16)];
        assert!(
            before.iter().chain(&after).all(|&r| r <= 15),
            "{kind:?}: data blocks read by 500 empty reads each: {before:?} {after:?}"
        );
        // Ranges reaching keys still find them.
        let got: Vec<_> = db.range(key(5_000)..key(7_001)).map(|r| r.unwrap().0).collect();
        assert_eq!(
            got,
            vec![
                key(5_000).into_bytes(),
                key(6_000).into_bytes(),
                key(7_000).into_bytes()
            ]
        );
    }
}

#[test]
fn a_damaged_range_filter_is_corruption_not_a_skipped_table() {
    use cairn::env::{read_all, write_all_synced, FileSystem};
    use cairn::sst::{ReaderOptions, TableReader};
    use std::path::Path;
    let fs = MemFs::new();
    let db = Db::open("/d", options(&fs)).unwrap();
    for i in 0..2000u64 {
        db.put(k16(i * 16, 0), "v").unwrap();
    }
    db.compact_range::<&[u8], _>(..).unwrap();
    drop(db);
    // Flip one bit in the middle of every table's range-filter block.
    let mut damaged = 0;
    for name in fs.list(Path::new("/d")).unwrap() {
        if !name.ends_with(".sst") {
            continue;
        }
        let path = Path::new("/d").join(&name);
        let t = TableReader::open(&fs, &path, None, ReaderOptions::default()).unwrap();
        let (version, h) = t.range_filter_slot().expect("every table has a range filter");
        assert_eq!(version, 3, "Rosetta with a per-table projection");
        drop(t);
        let mut bytes = read_all(&fs, &path).unwrap();
        bytes[(h.offset + h.size / 2) as usize] ^= 0x10;
        fs.remove_file(&path).unwrap();
        write_all_synced(&fs, &path, &bytes).unwrap();
        damaged += 1;
    }
    assert!(damaged > 0);
    let db = Db::open("/d", options(&fs)).unwrap();
    // A bounded read over a damaged table's range reports corruption (an empty range too: it
    // must not be answered from a filter that cannot be trusted, nor by skipping the table).
    for lo in [k16(5 * 16, 0), k16(5 * 16 + 3, 0)] {
        let hi = k16(5 * 16 + 8, 0);
        match db.range(lo..hi).collect::<Result<Vec<_>, _>>() {
            Err(e) => assert!(e.is_corruption(), "{e}"),
            Ok(v) => panic!("read {} entries through a damaged range filter", v.len()),
        }
    }
    // Point lookups do not read the range filter.
    assert_eq!(db.get(k16(5 * 16, 0)).unwrap().as_deref(), Some(&b"v"[..]));
}

/// Per-file range-filter bits by workload: when empty range reads reach only the first half of
/// the key space, the tables there get more than the average bits per key and the others less,
/// and the average over all tables stays the budget.
#[test]
fn tables_that_empty_ranges_reach_get_more_range_filter_bits() {
    for kind in KINDS {
        bits_follow_empty_ranges(kind);
    }
}

fn bits_follow_empty_ranges(kind: RangeFilterKind) {
    let fs = MemFs::new();
    let opts = {
        let mut o = options_of(&fs, kind);
        o.range_filter.bits_per_key = 12.0;
        o.range_filter.by_workload = true;
        o.compaction.target_file_size = 64 << 10;
        o
    };
    let db = Db::open("/w", opts).unwrap();
    let n = 20_000u64;
    for i in 0..n {
        db.put(k16(i * 1024, 0), "v").unwrap();
    }
    db.compact_range::<&[u8], _>(..).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    for _ in 0..5000 {
        let x = rng.gen_range(0..n / 2) * 1024 + 1 + rng.gen_range(0..900);
        assert_eq!(db.range(k16(x, 0)..k16(x + 8, 0)).count(), 0);
    }
    db.compact_range::<&[u8], _>(..).unwrap();
    // Per table of the bottom level, in key order: Rosetta's height-0 bits per prefix, or
    // Grafite's bits per key.
    let text = db.property("cairn.filters").unwrap();
    let bits: Vec<f64> = range_filter_rows(&text)
        .iter()
        .map(|v| {
            let v = v.split("; ").next().unwrap_or_default();
            let b = match kind {
                RangeFilterKind::Rosetta => v.split(", ").find_map(|h| h.strip_prefix("h0: ")),
                RangeFilterKind::Grafite => v.strip_prefix("grafite ").and_then(|r| r.split(' ').next()),
            };
            b.map_or(0.0, |b| b.parse().unwrap())
        })
        .collect();
    assert!(bits.len() >= 6, "{text}");
    let half = bits.len() / 2;
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    let (reached, unreached) = (mean(&bits[..half - 1]), mean(&bits[half + 1..]));
    assert!(
        reached > 16.0 && unreached < 8.0,
        "{kind:?}: reached {reached:.1}, unreached {unreached:.1}: {bits:?}"
    );
    assert!(
        (mean(&bits) - 12.0).abs() < 2.0,
        "{kind:?}: the budget holds on average: {bits:?}"
    );
}

/// A snapshot's bounded reads see the snapshot's keys through tables written after it, whose
/// range filters were built over newer keys and tombstones.
#[test]
fn snapshot_ranges_through_newer_tables() {
    let fs = MemFs::new();
    let db = Db::open("/s", options(&fs)).unwrap();
    for i in 0..4000u64 {
        db.put(k16(i * 64, 0), "old").unwrap();
    }
    db.flush_all().unwrap();
    let snap = db.snapshot();
    // After the snapshot: delete every other key, and add keys inside the gaps.
    for i in 0..4000u64 {
        if i % 2 == 0 {
            db.delete(k16(i * 64, 0)).unwrap();
        }
        db.put(k16(i * 64 + 7, 0), "new").unwrap();
    }
    db.flush_all().unwrap();
    db.compact_range::<&[u8], _>(..).unwrap();
    for i in (0..4000u64).step_by(37) {
        let (lo, hi) = (k16(i * 64, 0), k16(i * 64 + 5, 0));
        let old: Vec<_> = snap.range(lo.clone()..hi.clone()).map(|r| r.unwrap()).collect();
        assert_eq!(old, vec![(lo.clone(), b"old".to_vec())], "the snapshot sees key {i}");
        let now = db.range(lo.clone()..hi).count();
        assert_eq!(now, usize::from(i % 2 == 1), "key {i} now");
        // A gap empty at the snapshot holds a newer key now.
        let (glo, ghi) = (k16(i * 64 + 6, 0), k16(i * 64 + 9, 0));
        assert_eq!(snap.range(glo.clone()..ghi.clone()).count(), 0);
        assert_eq!(db.range(glo..ghi).count(), 1);
    }
}

/// The last column of each file's row in `cairn.filters`' range-filter tables: its filter's
/// levels (`h0: 22.0, h3: 4.0`, or `none`).
fn range_filter_rows(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.starts_with("** range filters **"))
        .filter(|l| l.starts_with("  ") && l.split_whitespace().next().is_some_and(|w| w.parse::<u64>().is_ok()))
        .filter_map(|l| l.rsplit("  ").next().map(str::to_string))
        .collect()
}

/// `range_filter.kind` by name, its refusals, and Rosetta's own settings refused with Grafite
/// (nothing a user sets is silently ignored); a reopen with default options keeps the kind.
#[test]
fn the_kind_is_an_option_like_the_others() {
    let fs = MemFs::new();
    let mut o = options(&fs);
    let e = o.set("range_filter.kind", "bloom").unwrap_err().to_string();
    assert!(
        e.contains("range_filter.kind") && e.contains("bloom") && e.contains("rosetta, grafite"),
        "{e}"
    );
    o.set("range_filter.kind", "grafite").unwrap();
    assert_eq!(o.range_filter.kind, RangeFilterKind::Grafite);
    o.range_filter.probe_budget = 30;
    let e = Db::open("/k", o.clone()).unwrap_err().to_string();
    assert!(
        e.contains("range_filter.probe_budget") && e.contains("30") && e.contains("range_filter.kind = grafite"),
        "{e}"
    );
    o.range_filter.probe_budget = 100;
    drop(Db::open("/k", o).unwrap());
    let db = Db::open(
        "/k",
        Options {
            fs: Arc::new(fs.clone()),
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(
        db.options().range_filter.kind,
        RangeFilterKind::Grafite,
        "the stored kind is kept"
    );
}

/// Range filters charged to the block cache hold at most `range_filter.memory_share` of it: a
/// smaller cache unloads the filters with the fewest recent empty range reads per byte, a
/// table whose filter is out is read as if it had none (and returns the same keys), and once
/// other tables' empty reads are worth more the round swaps the filters. Rounds run only when
/// asked (`round_ms = 0`), so every step is deterministic.
#[test]
fn range_filter_memory_follows_the_cache_and_keeps_the_filters_worth_most() {
    let fs = MemFs::new();
    let mut o = options_of(&fs, RangeFilterKind::Grafite);
    o.memory.fixed_mut().block_cache = cairn::CacheSource::Own(4 << 20);
    o.memory.fixed_mut().index_in_block_cache = true;
    o.range_filter.round_ms = 0;
    let db = Db::open("/m", o).unwrap();
    const N: u64 = 40_000;
    for i in 0..N {
        db.put(k16(i * 1024, 0), "v").unwrap();
    }
    db.compact_range::<&[u8], _>(..).unwrap();
    assert!(db.levels()[0].levels.iter().map(|l| l.files).sum::<usize>() >= 20);
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    // `n` empty ranges of 16 values between keys i·1024 for i in `keys`: the data blocks and
    // range-filter blocks they read.
    let mut empty_reads = |keys: std::ops::Range<u64>, n: usize| {
        let io = |k| db.stats().io.kind(k).reads;
        let (data, filters) = (io(BlockKind::Data), io(BlockKind::RangeFilter));
        for _ in 0..n {
            let x = rng.gen_range(keys.clone()) * 1024 + 1 + rng.gen_range(0..900);
            assert_eq!(db.range(k16(x, 0)..k16(x + 16, 0)).count(), 0);
        }
        (io(BlockKind::Data) - data, io(BlockKind::RangeFilter) - filters)
    };
    let not_in_memory = |db: &Db| {
        let text = db.property("cairn.filters").unwrap();
        text.matches("(not in memory)").count()
    };

    // Room for all: every table's filter is read once and kept.
    let m = db.memory();
    assert_eq!(m.range_filter_capacity, 2 << 20);
    let (data, _) = empty_reads(0..N, 2000);
    assert!(data <= 5, "{data} data blocks for 2000 empty reads");
    let all = db.memory().range_filter_usage;
    assert!(all > 0 && not_in_memory(&db) == 0, "{all}");

    // The first quarter of the keys is hot; then the cache shrinks to hold a third of them.
    empty_reads(0..N / 4, 2000);
    let cache = 2 * all / 3;
    db.resize_memory(cairn::MemoryLimits {
        block_cache: Some(cache),
        ..Default::default()
    })
    .unwrap();
    let m = db.memory();
    assert_eq!(m.range_filter_capacity, cache / 2);
    assert!(m.range_filter_usage <= m.range_filter_capacity, "{m:?}");
    assert!(m.range_filter_usage >= all / 5, "the hot quarter kept: {m:?}");
    assert!(not_in_memory(&db) > 0);
    // Hot ranges: still filtered, no filter read again.
    let (data, filters) = empty_reads(0..N / 4, 1000);
    assert!(
        data <= 5 && filters == 0,
        "hot: {data} data blocks, {filters} filter blocks"
    );
    // Cold ranges: read as without a filter (the few that fit beside the hot ones aside), and
    // their filters are not read while they are not admitted.
    let (data, filters) = empty_reads(N / 2..N, 1000);
    assert!(
        data >= 800 && filters == 0,
        "cold: {data} data blocks, {filters} filter blocks"
    );
    // Bounded reads that find keys are unchanged with filters out.
    for i in (N / 2..N).step_by(997) {
        let got: Vec<Vec<u8>> = db
            .range(k16(i * 1024, 0)..k16(i * 1024 + 2048, 0))
            .map(|r| r.unwrap().0.to_vec())
            .collect();
        assert_eq!(got, vec![k16(i * 1024, 0), k16(i * 1024 + 1024, 0)]);
    }

    // The cold half's empty reads come to outweigh the hot quarter's: a round swaps them (the
    // region holds two thirds of the cold half's filters).
    empty_reads(N / 2..N, 16_000);
    db.keep_range_filters();
    let (data, _) = empty_reads(N / 2..N, 1000);
    assert!(data <= 500, "cold after the swap: {data} data blocks");
    let (data, _) = empty_reads(0..N / 4, 1000);
    assert!(data >= 500, "hot after the swap: {data} data blocks");
    assert!(db.memory().range_filter_usage <= db.memory().range_filter_capacity);

    // Room again: every filter is admitted and read at its next range read.
    db.resize_memory(cairn::MemoryLimits {
        block_cache: Some(4 << 20),
        ..Default::default()
    })
    .unwrap();
    empty_reads(0..N, 4000);
    assert_eq!(not_in_memory(&db), 0);
    assert_eq!(db.memory().range_filter_usage, all);
}

/// A database loaded before any range read has tables without range-filter bits (range
/// filters by workload give bits only to what empty reads reached). Once empty range reads
/// reach them, a round builds their filters from their keys, pins them in range-filter
/// memory, and the same reads stop reading data blocks; bounded reads still return exactly
/// the keys, both ways. Built filters live in memory only: after a reopen the tables are read
/// again until a round rebuilds them. Rounds run only when asked (`round_ms = 0`).
#[test]
fn range_filters_are_built_for_tables_written_before_the_reads() {
    for kind in KINDS {
        let fs = MemFs::new();
        let mut o = common::small(Arc::new(fs.clone()), 32 << 10);
        o.range_filter.kind = kind;
        o.memory.fixed_mut().block_cache = cairn::CacheSource::Own(4 << 20);
        o.memory.fixed_mut().index_in_block_cache = true;
        o.range_filter.round_ms = 0;
        let mut db = Db::open("/b", o.clone()).unwrap();
        const N: u64 = 40_000;
        for i in 0..N {
            db.put(k16(i * 1024, 0), "v").unwrap();
            if i % 3 == 0 {
                db.put(k16(i * 1024, 0), "newer").unwrap(); // versions of one key count once
            }
        }
        db.compact_range::<&[u8], _>(..).unwrap();
        let tables = db.levels()[0].levels.iter().map(|l| l.files).sum::<usize>();
        assert!(tables >= 10, "{tables}");
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let empty_reads = |db: &Db, rng: &mut rand::rngs::StdRng, n: usize| {
            let data = db.stats().io.kind(BlockKind::Data).reads;
            for _ in 0..n {
                let x = rng.gen_range(0..N) * 1024 + 1 + rng.gen_range(0..900);
                assert_eq!(db.range(k16(x, 0)..k16(x + 16, 0)).count(), 0);
            }
            db.stats().io.kind(BlockKind::Data).reads - data
        };

        let before = empty_reads(&db, &mut rng, 1000);
        // (Some of the blocks are in the cache.)
        assert!(
            before >= 500,
            "{kind:?}: {before} data blocks for 1000 empty reads without filters"
        );
        db.keep_range_filters();
        let built = db.stats().range_builds;
        assert_eq!(
            built.built as usize, tables,
            "{kind:?}: every table read gets its filter"
        );
        assert_eq!(built.failed, 0);
        assert!(built.read_bytes > 0 && built.filter_bytes > 0);
        let m = db.memory();
        assert!(
            m.range_filter_usage > 0 && m.range_filter_usage <= m.range_filter_capacity,
            "{m:?}"
        );
        let after = empty_reads(&db, &mut rng, 1000);
        // Rosetta at 10 bits per key: 7–11% false positives on these 16-value ranges, by the
        // filters' seeds (their file numbers, which the WAL thread's timing moves).
        assert!(
            after <= 200,
            "{kind:?}: {after} data blocks for 1000 empty reads with built filters"
        );
        // The filters have their share: the next round builds nothing.
        db.keep_range_filters();
        assert_eq!(db.stats().range_builds.built, built.built);

        // Ranges holding keys return them all, forward and backward.
        for _ in 0..300 {
            let lo = rng.gen_range(0..N * 1024);
            let len = rng.gen_range(1..4096);
            let want: Vec<Vec<u8>> = (lo.div_ceil(1024)..(lo + len).div_ceil(1024).min(N))
                .map(|i| k16(i * 1024, 0))
                .collect();
            let got: Vec<Vec<u8>> = db
                .range(k16(lo, 0)..k16(lo + len, 0))
                .map(|r| r.unwrap().0.to_vec())
                .collect();
            assert_eq!(got, want, "{kind:?} [{lo}, {})", lo + len);
            let mut back: Vec<Vec<u8>> = db
                .range(k16(lo, 0)..k16(lo + len, 0))
                .rev()
                .map(|r| r.unwrap().0.to_vec())
                .collect();
            back.reverse();
            assert_eq!(back, want, "{kind:?} backward [{lo}, {})", lo + len);
        }

        // In memory only: after a reopen the tables are read until a round builds them again.
        drop(db);
        db = Db::open("/b", o.clone()).unwrap();
        assert!(
            empty_reads(&db, &mut rng, 1000) >= 500,
            "{kind:?}: nothing built survives a reopen"
        );
        db.keep_range_filters();
        // (A table the 1000 reads missed gets none yet.)
        let again = db.stats().range_builds.built as usize;
        assert!(again >= tables * 9 / 10 && again <= tables, "{again} of {tables}");
        assert!(empty_reads(&db, &mut rng, 1000) <= 200);
    }
}

/// With `range_filter.build_rate = 0` nothing is built; the option is refused where builds
/// cannot happen.
#[test]
fn range_filter_builds_can_be_turned_off_and_are_refused_without_their_conditions() {
    let fs = MemFs::new();
    let mut o = common::small(Arc::new(fs.clone()), 32 << 10);
    o.memory.fixed_mut().block_cache = cairn::CacheSource::Own(4 << 20);
    o.memory.fixed_mut().index_in_block_cache = true;
    o.range_filter.round_ms = 0;
    o.range_filter.build_rate = 0;
    let db = Db::open("/off", o.clone()).unwrap();
    for i in 0..20_000u64 {
        db.put(k16(i * 1024, 0), "v").unwrap();
    }
    db.compact_range::<&[u8], _>(..).unwrap();
    for x in 0..500u64 {
        let x = x * 40 * 1024 + 7;
        assert_eq!(db.range(k16(x, 0)..k16(x + 16, 0)).count(), 0);
    }
    db.keep_range_filters();
    assert_eq!(db.stats().range_builds.built, 0);
    drop(db);

    o.range_filter.build_rate = 1 << 20;
    o.range_filter.by_workload = false;
    let e = Db::open("/off2", o).unwrap_err().to_string();
    assert!(
        e.contains("range_filter.build_rate") && e.contains("range_filter.by_workload = false"),
        "{e}"
    );
}

/// A build only reads: what a round does to the file system is reads and nothing else, so a
/// crash at any point of one — here half-way through its reads — leaves the files as they
/// were, the reopened database answers as before, and a round builds the filters again.
#[test]
fn a_build_only_reads_and_a_crash_in_the_middle_of_one_loses_nothing() {
    use cairn::env::{CrashMode, FaultFs, OpClass};
    const N: u64 = 20_000;
    let mut dry_reads = 0;
    for crash in [false, true] {
        let fs = FaultFs::new(Arc::new(MemFs::new()), 1);
        let mut o = common::small(Arc::new(fs.clone()), 32 << 10);
        o.memory.fixed_mut().block_cache = cairn::CacheSource::Own(4 << 20);
        o.memory.fixed_mut().index_in_block_cache = true;
        o.range_filter.round_ms = 0;
        let db = Db::open("/c", o.clone()).unwrap();
        for i in 0..N {
            db.put(k16(i * 1024, 0), "v").unwrap();
        }
        db.flush_all().unwrap();
        db.compact_range::<&[u8], _>(..).unwrap();
        db.wait_for_background().unwrap();
        let tables = db.levels()[0].levels.iter().map(|l| l.files).sum::<usize>() as u64;
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for _ in 0..500 {
            let x = rng.gen_range(0..N) * 1024 + 1 + rng.gen_range(0..900);
            assert_eq!(db.range(k16(x, 0)..k16(x + 16, 0)).count(), 0);
        }
        fs.record_ops();
        if crash {
            fs.crash_at(fs.op_count() + dry_reads / 2);
        }
        db.keep_range_filters();
        let ops = fs.op_log();
        let built = db.stats().range_builds;
        if crash {
            assert!(built.built < tables && built.failed > 0, "{built:?} of {tables} tables");
        } else {
            assert_eq!(built.built, tables);
            let other: Vec<_> = ops.iter().filter(|r| r.class != OpClass::Read).collect();
            assert!(other.is_empty(), "a build did more than read: {other:?}");
            dry_reads = ops.len() as u64;
            assert!(dry_reads >= tables, "{dry_reads} reads for {tables} tables");
        }
        drop(db);
        fs.crash(CrashMode::DropUnsynced).unwrap();
        fs.restart();
        fs.clear_faults();
        let db = Db::open("/c", o).unwrap();
        let keys: Vec<Vec<u8>> = db.iter().map(|r| r.unwrap().0.to_vec()).collect();
        assert_eq!(
            keys,
            (0..N).map(|i| k16(i * 1024, 0)).collect::<Vec<_>>(),
            "crash {crash}"
        );
        for _ in 0..500 {
            let x = rng.gen_range(0..N) * 1024 + 1 + rng.gen_range(0..900);
            assert_eq!(db.range(k16(x, 0)..k16(x + 16, 0)).count(), 0);
        }
        db.keep_range_filters();
        assert!(
            db.stats().range_builds.built * 10 >= tables * 9,
            "crash {crash}: {:?}",
            db.stats().range_builds
        );
        db.close().unwrap();
    }
}

/// Where empty range reads are the work and the block cache saves little, rounds grow the
/// range filters' average bits per key past range_filter.bits_per_key, up to
/// range_filter.max_bits_per_key, and the tables' filters are built again with those bits:
/// fewer false positives. Without the memory tuner the average stays; the option is refused
/// below the least or without the tuner.
#[test]
fn empty_ranges_grow_the_range_filters_bits_where_they_pay_more_than_cache() {
    const N: u64 = 60_000;
    let open = |fs: &MemFs, tuner: bool| {
        let mut o = Options {
            fs: Arc::new(fs.clone()),
            ..Options::default()
        };
        o.memory.budget_mut().bytes = 8 << 20;
        if tuner {
            // Cycles only when the test asks.
            o.memory.budget_mut().tuner_mut().period_ms = 3_600_000;
        } else {
            o.memory.budget_mut().tuner = None;
        }
        o.wal.max_size = 1 << 40;
        o.compaction.target_file_size = 256 << 10;
        o.range_filter.kind = RangeFilterKind::Grafite;
        o.range_filter.round_ms = 0;
        (Db::open("/g", o.clone()).unwrap(), o)
    };
    let mut last_fp = Vec::new();
    for tuner in [true, false] {
        let fs = MemFs::new();
        let (db, _) = open(&fs, tuner);
        for i in 0..N {
            db.put(k16(i * 1024, 0), "v").unwrap();
        }
        db.flush_all().unwrap();
        db.compact_range::<&[u8], _>(..).unwrap();
        db.wait_for_background().unwrap();
        db.tune_memory();
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let mut rounds = Vec::new();
        for _ in 0..4 {
            let fp = |db: &Db| -> u64 { db.stats().trees[0].levels.iter().map(|l| l.range_false_positives).sum() };
            let before = fp(&db);
            for _ in 0..4000 {
                let x = rng.gen_range(0..N) * 1024 + 1 + rng.gen_range(0..900);
                assert_eq!(db.range(k16(x, 0)..k16(x + 16, 0)).count(), 0);
            }
            db.tune_memory();
            db.keep_range_filters();
            rounds.push((fp(&db) - before, db.stats().range_builds.bits_per_key));
        }
        if tuner {
            // All the data fits the cache (its marginal is 0): the filters get the most.
            assert!(rounds.iter().all(|r| r.1 == 22.0), "{rounds:?}");
        } else {
            assert!(rounds.iter().all(|r| r.1 == 10.0), "{rounds:?}");
        }
        last_fp.push(rounds[rounds.len() - 1].0);
    }
    // 16-value ranges at 10 bits: ~4000·16/2^8 false positives a round; at 22 bits ~none.
    assert!(last_fp[1] >= 100 && last_fp[0] * 20 <= last_fp[1], "{last_fp:?}");
    let fs = MemFs::new();
    let (_, mut o) = open(&fs, true);
    o.range_filter.max_bits_per_key = 8.0;
    let e = Db::open("/g2", o.clone()).unwrap_err().to_string();
    assert!(
        e.contains("range_filter.max_bits_per_key = 8") && e.contains("range_filter.bits_per_key = 10"),
        "{e}"
    );
    o.range_filter.max_bits_per_key = 16.0;
    o.memory.budget_mut().tuner = None;
    let e = Db::open("/g3", o).unwrap_err().to_string();
    assert!(
        e.contains("range_filter.max_bits_per_key") && e.contains("memory tuner"),
        "{e}"
    );
}
