//! `multi_get` against `get`: the same answers for every key of random batches (present,
//! absent, repeated, merged, deleted, range-deleted; in memtables, L0 and levels; through a
//! cache small enough that most lookups read storage, and table reads slowed to a device's
//! speed, so the overlapped path runs), at a
//! snapshot, and one lookup's read error leaving the other answers.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::{FaultFs, FaultKind, FileSystem, MemFs, OpClass};
use cairn::{Db, Options};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

fn key(i: u32) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

fn options(fs: Arc<dyn FileSystem>) -> Options {
    let mut o = common::small(fs, 8192);
    // A block cache of a few dozen blocks: most batches read storage and overlap.
    let cached = Options::with_fixed_memory(4 * 8192, 8192, 16 << 10);
    o.memory = cached.memory;
    o.set("merge.operator", "stringappend").unwrap();
    o
}

/// A database with versions of keys in every layer: tables at several levels, L0 files and
/// the memtable.
fn load(db: &Db, rng: &mut StdRng) {
    for round in 0..6u32 {
        for _ in 0..1500 {
            let i = rng.gen_range(0..3000);
            match rng.gen_range(0..10) {
                0 => db.delete(key(i)).unwrap(),
                1 => db.merge(key(i), format!("m{round}")).unwrap(),
                2 if i % 50 == 0 => db.delete_range(key(i), key(i + 7)).unwrap(),
                _ => db.put(key(i), format!("v{round}-{i}")).unwrap(),
            }
        }
        if round < 5 {
            db.flush_all().unwrap();
        }
        if round == 2 {
            db.wait_for_background().unwrap();
        }
    }
}

fn batch(rng: &mut StdRng, n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|_| key(rng.gen_range(0..3200))).collect()
}

#[test]
fn multi_get_agrees_with_get() {
    // Table reads that wait like a device's: the lookups after the first that reads one run
    // on the I/O pool.
    let fs: Arc<dyn FileSystem> = Arc::new(common::SlowReads {
        inner: Arc::new(MemFs::new()),
        delay: std::time::Duration::from_micros(30),
    });
    let db = Db::open("/db", options(fs)).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    load(&db, &mut rng);
    let snap = db.snapshot();
    let sizes = [0, 1, 2, 3, 8, 32, 128, 700];
    for round in 0..40 {
        let keys = batch(&mut rng, sizes[round % sizes.len()]);
        let want: Vec<_> = keys.iter().map(|k| db.get(k).unwrap()).collect();
        assert_eq!(db.multi_get(&keys).unwrap(), want, "round {round}");
        let each: Vec<_> = db
            .multi_get_each(&keys)
            .unwrap()
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(each, want, "round {round}");
    }
    // Later writes do not reach a snapshot's answers.
    let keys = batch(&mut rng, 300);
    let before: Vec<_> = keys.iter().map(|k| snap.get(k).unwrap()).collect();
    for k in &keys {
        db.put(k, b"later").unwrap();
    }
    db.flush_all().unwrap();
    assert_eq!(snap.multi_get(&keys).unwrap(), before);
    assert!(db
        .multi_get(&keys)
        .unwrap()
        .iter()
        .all(|v| v.as_deref() == Some(&b"later"[..])));
    // Other trees, and a dropped one.
    let t = db.tree("t").unwrap();
    t.put(b"x", b"1").unwrap();
    assert_eq!(
        t.multi_get(&[&b"x"[..], b"y", b"x"]).unwrap(),
        vec![Some(b"1".to_vec()), None, Some(b"1".to_vec())]
    );
    assert_eq!(snap.multi_get_in(&t, &[b"x"]).unwrap(), vec![None]);
    db.drop_tree("t").unwrap();
    assert!(matches!(t.multi_get(&[b"x"]), Err(cairn::Error::TreeDropped { .. })));
}

#[test]
fn one_lookups_read_error_leaves_the_other_answers() {
    let fault = FaultFs::new(Arc::new(MemFs::new()), 1);
    // Memtables that hold each tree's keys whole: one table each, no compaction.
    let db = Db::open("/db", common::small(Arc::new(fault.clone()), 64 << 10)).unwrap();
    let a = db.tree("a").unwrap();
    for i in 0..500 {
        a.put(key(i), format!("a{i}")).unwrap();
    }
    a.flush().unwrap();
    let files = db.stats().files;
    let tables: Vec<u64> = files.iter().filter(|f| f.tree == a.id()).map(|f| f.file).collect();
    assert_eq!(tables.len(), 1);
    let table = tables[0];
    for i in 0..500 {
        db.put(key(i), format!("d{i}")).unwrap();
    }
    db.flush_all().unwrap();
    // The next read of a's table fails (a data block: its index is read when it is opened).
    // multi_get answers with the first error...
    let low: Vec<Vec<u8>> = (0..20).map(|i| key(i * 10)).collect();
    fault.fail_matching(OpClass::Read, None, &format!("{table:06}.sst"), 0, FaultKind::Eio);
    assert!(a.multi_get(&low).is_err());
    // ...and multi_get_each with every other answer (keys whose blocks were not read yet).
    let keys: Vec<Vec<u8>> = (0..20).map(|i| key(300 + i * 10)).collect();
    fault.fail_matching(OpClass::Read, None, &format!("{table:06}.sst"), 0, FaultKind::Eio);
    let each = a.multi_get_each(&keys).unwrap();
    assert_eq!(each.iter().filter(|r| r.is_err()).count(), 1, "{each:?}");
    for (i, r) in each.iter().enumerate() {
        if let Ok(v) = r {
            assert_eq!(v.as_deref(), Some(format!("a{}", 300 + i * 10).as_bytes()));
        }
    }
    // The default tree's lookups are untouched.
    let d = db.multi_get(&keys).unwrap();
    assert!(d
        .iter()
        .enumerate()
        .all(|(i, v)| v.as_deref() == Some(format!("d{}", 300 + i * 10).as_bytes())));
}
