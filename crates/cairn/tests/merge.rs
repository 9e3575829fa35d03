//! Merge operators: `uint64add` counters and `stringappend` lists through memtables, flushes,
//! compactions (folded operands), snapshots, range deletes and reopens; a custom operator;
//! the refusals (no operator, a database written with one opened without it).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::MemFs;
use cairn::merge::{MergeOperator, StringAppend};
use cairn::{Db, Options};
use std::path::Path;
use std::sync::Arc;

fn opts(fs: &MemFs, op: &str) -> Options {
    let mut o = common::small(Arc::new(fs.clone()), 16 << 10);
    o.set("merge.operator", op).unwrap();
    o
}

fn u64_of(v: Option<Vec<u8>>) -> Option<u64> {
    v.map(|v| u64::from_le_bytes(v.try_into().unwrap()))
}

fn scan(db: &Db, rev: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    if rev {
        let mut v: Vec<_> = db.iter().rev().map(|r| r.unwrap()).collect();
        v.reverse();
        v
    } else {
        db.iter().map(|r| r.unwrap()).collect()
    }
}

#[test]
fn counters_through_flushes_compactions_and_reopen() {
    let fs = MemFs::new();
    let path = Path::new("/db");
    let db = Db::open(path, opts(&fs, "uint64add")).unwrap();
    let mut want = vec![0u64; 50];
    for round in 0..40u64 {
        for k in 0..50u64 {
            if (k + round) % 3 == 0 {
                db.merge(format!("c{k:03}"), (k + 1).to_le_bytes()).unwrap();
                want[k as usize] += k + 1;
            }
        }
        if round % 10 == 9 {
            db.flush_all().unwrap();
        }
        if round == 25 {
            // A put in the middle of the history: the operands after it add to it.
            db.put("c007", 1000u64.to_le_bytes()).unwrap();
            want[7] = 1000;
        }
    }
    let check = |db: &Db, ctx: &str| {
        for (k, &w) in want.iter().enumerate() {
            let got = u64_of(db.get(format!("c{k:03}")).unwrap());
            let expect = (w > 0).then_some(w);
            assert_eq!(got, expect, "c{k:03} {ctx}");
        }
        for rev in [false, true] {
            let all = scan(db, rev);
            let n = want.iter().filter(|&&w| w > 0).count();
            assert_eq!(all.len(), n, "scan rev={rev} {ctx}");
            for (k, v) in all {
                let i: usize = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
                assert_eq!(
                    u64::from_le_bytes(v.try_into().unwrap()),
                    want[i],
                    "scan rev={rev} {ctx}"
                );
            }
        }
    };
    check(&db, "memtables and L0");
    db.compact_range::<&[u8], _>(..).unwrap();
    check(&db, "compacted");
    let entries: u64 = db.levels()[0].levels.iter().map(|l| l.entries).sum();
    assert_eq!(
        entries, 50,
        "a full compaction folds every key's operands into one value"
    );
    db.close().unwrap();
    // Reopened with default options: the stored operator comes back by name.
    let mut o = common::small(Arc::new(fs.clone()), 16 << 10);
    o.keep_stored = true;
    let db = Db::open(path, o).unwrap();
    check(&db, "reopened");
    db.merge("c000", 5u64.to_le_bytes()).unwrap();
    assert_eq!(u64_of(db.get("c000").unwrap()), Some(want[0] + 5));
    db.close().unwrap();
}

#[test]
fn lists_with_deletes_range_deletes_and_snapshots() {
    let fs = MemFs::new();
    let db = Db::open(Path::new("/db"), opts(&fs, "stringappend")).unwrap();
    db.merge("a", "1").unwrap();
    db.merge("a", "2").unwrap();
    let snap = db.snapshot();
    db.merge("a", "3").unwrap();
    db.put("b", "x").unwrap();
    db.merge("b", "y").unwrap();
    db.delete("b").unwrap();
    db.merge("b", "z").unwrap();
    db.merge("c", "1").unwrap();
    db.delete_range("c", "d").unwrap();
    db.merge("c", "2").unwrap();
    for step in 0..3 {
        match step {
            1 => db.flush_all().unwrap(),
            2 => db.compact_range::<&[u8], _>(..).unwrap(),
            _ => {}
        }
        assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"1,2,3"[..]), "step {step}");
        assert_eq!(
            snap.get("a").unwrap().as_deref(),
            Some(&b"1,2"[..]),
            "snapshot, step {step}"
        );
        assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"z"[..]), "step {step}");
        assert_eq!(db.get("c").unwrap().as_deref(), Some(&b"2"[..]), "step {step}");
        let want: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (b"a".to_vec(), b"1,2,3".to_vec()),
            (b"b".to_vec(), b"z".to_vec()),
            (b"c".to_vec(), b"2".to_vec()),
        ];
        assert_eq!(scan(&db, false), want, "step {step}");
        assert_eq!(scan(&db, true), want, "reverse, step {step}");
        let seen: Vec<_> = snap.iter().map(|r| r.unwrap()).collect();
        assert_eq!(
            seen,
            vec![(b"a".to_vec(), b"1,2".to_vec())],
            "snapshot scan, step {step}"
        );
    }
    db.close().unwrap();
}

/// Many versions of one key (more than a cursor steps over before it seeks), read backwards.
#[test]
fn long_chains_read_both_ways() {
    let fs = MemFs::new();
    let db = Db::open(Path::new("/db"), opts(&fs, "stringappend")).unwrap();
    db.put("k0", "p").unwrap();
    let mut want = String::from("p");
    for i in 0..30 {
        db.merge("k1", format!("{i}")).unwrap();
        db.merge("k0", format!("{i}")).unwrap();
        want.push_str(&format!(",{i}"));
        if i == 15 {
            db.flush_all().unwrap();
        }
    }
    db.put("k2", "q").unwrap();
    let k1: Vec<String> = (0..30).map(|i| i.to_string()).collect();
    let expect = vec![
        (b"k0".to_vec(), want.into_bytes()),
        (b"k1".to_vec(), k1.join(",").into_bytes()),
        (b"k2".to_vec(), b"q".to_vec()),
    ];
    assert_eq!(scan(&db, false), expect);
    assert_eq!(scan(&db, true), expect);
    db.close().unwrap();
}

#[derive(Debug)]
struct Max;

impl MergeOperator for Max {
    fn name(&self) -> String {
        "max".into()
    }
    fn full_merge(&self, _: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        existing
            .into_iter()
            .chain(operands.iter().copied())
            .max()
            .map(<[u8]>::to_vec)
    }
}

#[test]
fn custom_operators_and_refusals() {
    let fs = MemFs::new();
    let path = Path::new("/db");
    // No operator: merges are refused before the WAL.
    let db = Db::open(path, common::small(Arc::new(fs.clone()), 16 << 10)).unwrap();
    let e = db.merge("k", "1").unwrap_err();
    assert!(matches!(e, cairn::Error::InvalidArgument(_)), "{e}");
    db.close().unwrap();
    // A custom operator.
    let mut o = common::small(Arc::new(fs.clone()), 16 << 10);
    o.merge_operator = Some(Arc::new(Max));
    let db = Db::open(path, o.clone()).unwrap();
    for v in ["3", "9", "5"] {
        db.merge("k", v).unwrap();
    }
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"9"[..]));
    db.close().unwrap();
    // Reopened without it: refused, naming the operator.
    let mut plain = common::small(Arc::new(fs.clone()), 16 << 10);
    let e = Db::open(path, plain.clone()).unwrap_err().to_string();
    assert!(e.contains("merge.operator") && e.contains("max"), "{e}");
    plain.keep_stored = false;
    let e = Db::open(path, plain).unwrap_err().to_string();
    assert!(e.contains("written with merge.operator = max"), "{e}");
    // By name, a custom operator is not built in.
    let mut named = common::small(Arc::new(fs.clone()), 16 << 10);
    named.set("merge.operator", "max").unwrap();
    let e = Db::open(path, named).unwrap_err().to_string();
    assert!(e.contains("not built in"), "{e}");
    // With it, all is there.
    let db = Db::open(path, o).unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"9"[..]));
    db.close().unwrap();
    // A stringappend with its own delimiter keeps it through OPTIONS.
    let fs = MemFs::new();
    let mut o = common::small(Arc::new(fs.clone()), 16 << 10);
    o.merge_operator = Some(Arc::new(StringAppend::new("|")));
    let db = Db::open(path, o).unwrap();
    db.merge("k", "a").unwrap();
    db.merge("k", "b").unwrap();
    db.close().unwrap();
    let db = Db::open(path, common::small(Arc::new(fs.clone()), 16 << 10)).unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"a|b"[..]));
    db.close().unwrap();
}

/// Readers racing flushes never count an operand twice. A flush used to publish the read view
/// with its new table before taking the flushed memtable out of it: for a moment both held the
/// same operands, and a counter read then (by a get or an iterator) came out too high. Counters
/// are merged by one thread and flushed often; another reads them all the while: every value
/// lies between the rounds finished before the read and the rounds started after it.
#[test]
fn readers_never_see_an_operand_twice_across_a_flush() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let fs = MemFs::new();
    let db = Db::open(Path::new("/db"), opts(&fs, "uint64add")).unwrap();
    let (done, stop) = (AtomicU64::new(0), AtomicBool::new(false));
    std::thread::scope(|s| {
        s.spawn(|| {
            for round in 1..=300u64 {
                for k in 0..20 {
                    db.merge(format!("c{k:02}"), 1u64.to_le_bytes()).unwrap();
                }
                done.store(round, Ordering::SeqCst);
                if round % 5 == 0 {
                    db.flush_all().unwrap();
                }
            }
            stop.store(true, Ordering::SeqCst);
        });
        while !stop.load(Ordering::SeqCst) {
            let before = done.load(Ordering::SeqCst);
            let scanned: Vec<u64> = db
                .iter()
                .map(|r| u64::from_le_bytes(r.unwrap().1.try_into().unwrap()))
                .collect();
            let got = u64_of(db.get("c07").unwrap()).unwrap_or(0);
            let after = done.load(Ordering::SeqCst);
            for v in scanned.into_iter().chain([got]) {
                assert!(
                    v <= after + 1,
                    "a counter read {v} with at most {} merges done",
                    after + 1
                );
                assert!(v >= before, "a counter read {v} after {before} rounds");
            }
        }
    });
    db.close().unwrap();
}
