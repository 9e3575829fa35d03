//! Time to live and compaction filters: values that expire (per put and per tree) are never
//! returned after their deadline — from memtables, tables, iterators in both directions,
//! snapshots and merges — and compactions drop them; the deadline survives WAL replay and the
//! tree's setting a reopen; a user's compaction filter keeps, removes and changes values
//! without reviving older versions or touching what a snapshot sees.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::MemFs;
use cairn::{CompactionFilter, Db, FilterContext, FilterDecision, ManualClock, Options, Tree, WriteBatch};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const T0: u64 = 1_800_000_000_000;

/// An empty file system and a manual clock at `T0`.
fn fresh() -> (MemFs, Arc<ManualClock>) {
    (MemFs::new(), Arc::new(ManualClock::new(T0)))
}

fn opts(fs: &MemFs, clock: &Arc<ManualClock>) -> Options {
    let mut o = common::small(Arc::new(fs.clone()), 16 << 10);
    o.clock = clock.clone();
    o
}

fn s(v: &str) -> Option<Vec<u8>> {
    Some(v.as_bytes().to_vec())
}

/// Every key and value of `tree`, read forward and backward (they must agree), and by gets.
fn all(tree: &Tree) -> Vec<(String, String)> {
    let fwd: Vec<_> = tree.iter().map(|r| r.unwrap()).collect();
    let mut back: Vec<_> = tree.iter().rev().map(|r| r.unwrap()).collect();
    back.reverse();
    assert_eq!(fwd, back, "forward and backward scans differ");
    fwd.into_iter()
        .map(|(k, v)| (String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap()))
        .collect()
}

fn entries(db: &Db, tree: &str) -> u64 {
    let t = db.levels().into_iter().find(|t| t.name == tree).unwrap();
    t.levels.iter().map(|l| l.entries).sum()
}

#[test]
fn a_put_with_ttl_expires_everywhere_and_compaction_drops_it() {
    let (fs, clock) = fresh();
    let db = Db::open(Path::new("/db"), opts(&fs, &clock)).unwrap();
    db.put("a", "a-old").unwrap();
    db.flush_all().unwrap();
    db.put_with_ttl("a", "a-new", Duration::from_secs(10)).unwrap();
    db.put("b", "b").unwrap();
    db.put_with_ttl("c", "c", Duration::from_secs(100)).unwrap();
    db.put_with_ttl("z", "z", Duration::ZERO).unwrap();
    let mut batch = WriteBatch::new();
    batch.put_with_ttl("d", "d", Duration::from_secs(10)).put("e", "e");
    db.write(batch, &Default::default()).unwrap();
    let snap = db.snapshot();
    let live = |db: &Db, want: &[(&str, &str)], ctx: &str| {
        let want: Vec<(String, String)> = want.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        assert_eq!(all(db), want, "{ctx}");
        for k in ["a", "b", "c", "d", "e", "z"] {
            let expect = want.iter().find(|(w, _)| w == k).map(|(_, v)| v.as_bytes().to_vec());
            assert_eq!(db.get(k).unwrap(), expect, "get {k} {ctx}");
        }
    };
    let before = [("a", "a-new"), ("b", "b"), ("c", "c"), ("d", "d"), ("e", "e")];
    let after10 = [("b", "b"), ("c", "c"), ("e", "e")];
    live(&db, &before, "in memory");
    clock.advance(Duration::from_millis(9_999));
    live(&db, &before, "1 ms before the deadline");
    clock.advance(Duration::from_millis(1));
    // At the deadline the new version is gone, and the older one does not come back.
    live(&db, &after10, "at the deadline, in memory");
    assert_eq!(snap.get("a").unwrap(), None, "a snapshot also sees the expiry");
    assert_eq!(snap.get("b").unwrap(), s("b"));
    db.flush_all().unwrap();
    live(&db, &after10, "flushed");
    drop(snap);
    db.compact_range::<&str, _>(..).unwrap();
    live(&db, &after10, "compacted");
    // At the bottom nothing of the expired keys is left: b, c and e only.
    assert_eq!(entries(&db, "default"), 3);
    let stats = db.stats();
    // a, d and z, turned into tombstones by the flush.
    assert_eq!(stats.trees[0].expired, 3, "{:?}", stats.trees[0]);
    assert!(db.property("cairn.stats").unwrap().contains("3 expired values dropped"));
    clock.advance(Duration::from_secs(90));
    live(&db, &[("b", "b"), ("e", "e")], "after c's deadline, before compaction");
    db.compact_range::<&str, _>(..).unwrap();
    assert_eq!(entries(&db, "default"), 2);
    db.close().unwrap();
}

#[test]
fn expired_values_leave_the_disk_without_other_compactions() {
    let (fs, clock) = fresh();
    let path = Path::new("/db");
    let db = Db::open(path, opts(&fs, &clock)).unwrap();
    for i in 0..400u32 {
        db.put_with_ttl(
            common::key(i),
            [7u8; 40],
            Duration::from_secs(10 + u64::from(i % 2) * 50),
        )
        .unwrap();
    }
    for i in 400..500u32 {
        db.put(common::key(i), [1u8; 40]).unwrap();
    }
    db.compact_range::<&str, _>(..).unwrap();
    // Newer expiring values in L0, above the bottom.
    for i in 500..600u32 {
        db.put_with_ttl(common::key(i), [3u8; 40], Duration::from_secs(10))
            .unwrap();
    }
    db.flush_all().unwrap();
    db.wait_for_background().unwrap();
    assert_eq!(entries(&db, "default"), 600);
    // Nothing is written from here on: the background compacts the files whose values
    // expired (the half with 10 s, then the rest with 60 s).
    clock.advance(Duration::from_secs(10));
    db.wait_for_background().unwrap();
    assert_eq!(
        entries(&db, "default"),
        300,
        "200 + 100 values expired at 10 s are gone"
    );
    assert_eq!(db.iter().count(), 300);
    clock.advance(Duration::from_secs(50));
    db.wait_for_background().unwrap();
    assert_eq!(entries(&db, "default"), 100);
    assert!(db.stats().trees[0].expired >= 500);
    // The earliest deadlines are in the manifest: a reopen still finds nothing to do, and a
    // file written after it is found as well.
    db.close().unwrap();
    let db = Db::open(path, opts(&fs, &clock)).unwrap();
    db.put_with_ttl("late", "x", Duration::from_secs(1)).unwrap();
    db.flush_all().unwrap();
    clock.advance(Duration::from_secs(1));
    db.wait_for_background().unwrap();
    assert_eq!(entries(&db, "default"), 100);
    db.close().unwrap();
}

#[test]
fn a_tree_ttl_applies_to_its_puts_and_is_kept_by_a_reopen() {
    let (fs, clock) = fresh();
    let path = Path::new("/db");
    let mut o = opts(&fs, &clock);
    o.set("ttl.trees", "sessions=1m").unwrap();
    assert_eq!(o.get("ttl.trees").unwrap(), "sessions=1m");
    let db = Db::open(path, o).unwrap();
    let sessions = db.tree("sessions").unwrap();
    let other = db.tree("other").unwrap();
    sessions.put("s1", "x").unwrap();
    other.put("o1", "x").unwrap();
    let mut b = WriteBatch::new();
    b.put_in(&sessions, "s2", "y").put_in(&other, "o2", "y");
    db.write(b, &Default::default()).unwrap();
    // Its own time to live wins over the tree's.
    sessions.put_with_ttl("s3", "long", Duration::from_secs(3600)).unwrap();
    clock.advance(Duration::from_secs(59));
    assert_eq!(all(&sessions).len(), 3);
    clock.advance(Duration::from_secs(1));
    assert_eq!(all(&sessions), vec![("s3".into(), "long".into())]);
    assert_eq!(all(&other).len(), 2);
    db.close().unwrap();

    // A reopen with default options keeps the tree's time to live.
    let db = Db::open(path, opts(&fs, &clock)).unwrap();
    assert_eq!(db.options().get("ttl.trees").unwrap(), "sessions=1m");
    let sessions = db.tree("sessions").unwrap();
    sessions.put("s4", "z").unwrap();
    clock.advance(Duration::from_secs(30));
    assert_eq!(sessions.get("s4").unwrap(), s("z"));
    clock.advance(Duration::from_secs(30));
    assert_eq!(sessions.get("s4").unwrap(), None);
    db.close().unwrap();

    // A tree created after the open gets its time to live too.
    let mut o = opts(&fs, &clock);
    o.set("ttl.trees", "sessions=1m,later=1s").unwrap();
    let db = Db::open(path, o).unwrap();
    let later = db.tree("later").unwrap();
    later.put("l", "v").unwrap();
    clock.advance(Duration::from_secs(1));
    assert_eq!(later.get("l").unwrap(), None);
    db.close().unwrap();
}

#[test]
fn replay_keeps_the_deadline_written_not_the_delay() {
    let (fs, clock) = fresh();
    let path = Path::new("/db");
    let db = Db::open(path, opts(&fs, &clock)).unwrap();
    db.put_with_ttl("k", "v", Duration::from_secs(10)).unwrap();
    drop(db); // no flush: the value lives in the WAL only
    clock.advance(Duration::from_secs(5));
    let db = Db::open(path, opts(&fs, &clock)).unwrap();
    assert_eq!(db.get("k").unwrap(), s("v"));
    clock.advance(Duration::from_secs(5));
    assert_eq!(
        db.get("k").unwrap(),
        None,
        "the deadline is the one written, not replay + 10 s"
    );
    db.close().unwrap();
}

#[test]
fn the_inspectors_show_deadlines() {
    use cairn::inspect::{self, Bytes};
    let (fs, clock) = fresh();
    let db = Db::open(Path::new("/db"), opts(&fs, &clock)).unwrap();
    db.put_with_ttl("k", "v", Duration::from_millis(1500)).unwrap();
    let text = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).unwrap()
    };
    let find = |suffix: &str| common::files(&fs, Path::new("/db"), suffix).pop().unwrap();
    let wal = text(&|o| inspect::dump_wal(&fs, &find(".wal"), true, Bytes::Text, o).unwrap());
    // T0 = 2027-01-15T08:00:00Z; + 1.5 s.
    assert!(wal.contains("put k => v (expires 2027-01-15T08:00:01.500Z)"), "{wal}");
    db.flush_all().unwrap();
    let sst = text(&|o| inspect::dump_table(&fs, &find(".sst"), true, Bytes::Text, o).unwrap());
    assert!(
        sst.contains("put-ttl") && sst.contains("=> v (expires 2027-01-15T08:00:01.500Z)"),
        "{sst}"
    );
    db.close().unwrap();
}

#[test]
fn merges_over_an_expiring_value_apply_to_it_until_it_expires() {
    let (fs, clock) = fresh();
    let mut o = opts(&fs, &clock);
    o.set("merge.operator", "stringappend").unwrap();
    let db = Db::open(Path::new("/db"), o).unwrap();
    db.put("k", "old").unwrap();
    db.flush_all().unwrap();
    db.put_with_ttl("k", "base", Duration::from_secs(10)).unwrap();
    db.merge("k", "m1").unwrap();
    db.flush_all().unwrap();
    db.merge("k", "m2").unwrap();
    assert_eq!(db.get("k").unwrap(), s("base,m1,m2"));
    // A compaction before the deadline must not fold the operands into the expiring value.
    db.compact_range::<&str, _>(..).unwrap();
    assert_eq!(db.get("k").unwrap(), s("base,m1,m2"));
    assert_eq!(all(&db), vec![("k".into(), "base,m1,m2".into())]);
    clock.advance(Duration::from_secs(10));
    // Expired: the operands apply to nothing (the older "old" stays deleted).
    assert_eq!(db.get("k").unwrap(), s("m1,m2"));
    assert_eq!(all(&db), vec![("k".into(), "m1,m2".into())]);
    db.compact_range::<&str, _>(..).unwrap();
    assert_eq!(db.get("k").unwrap(), s("m1,m2"));
    assert_eq!(entries(&db, "default"), 1, "folded into one value");
    db.close().unwrap();
}

/// Removes keys starting with `tmp`, changes the value `old` to `new`, and records what it was
/// asked.
#[derive(Debug, Default)]
struct Janitor {
    asked: Mutex<Vec<(String, usize, String)>>,
}

impl CompactionFilter for Janitor {
    fn name(&self) -> &str {
        "janitor"
    }

    fn filter(&self, ctx: &FilterContext<'_>, key: &[u8], value: &[u8]) -> FilterDecision {
        let key = String::from_utf8_lossy(key).into_owned();
        self.asked
            .lock()
            .unwrap()
            .push((ctx.tree.to_string(), ctx.level, key.clone()));
        if key.starts_with("tmp") {
            FilterDecision::Remove
        } else if value == b"old" {
            FilterDecision::ChangeValue(b"new".to_vec())
        } else {
            FilterDecision::Keep
        }
    }
}

#[test]
fn a_compaction_filter_removes_and_changes_without_reviving_or_breaking_snapshots() {
    let (fs, clock) = fresh();
    let janitor = Arc::new(Janitor::default());
    let mut o = opts(&fs, &clock);
    o.compaction_filter = Some(janitor.clone());
    let db = Db::open(Path::new("/db"), o).unwrap();
    let t = db.tree("t").unwrap();
    // An older version of tmp1 deep down, then a newer one above it.
    t.put("tmp1", "deep").unwrap();
    t.compact_range::<&str, _>(..).unwrap();
    // The first compaction already removed it: nothing of tmp1 is left.
    assert_eq!(t.get("tmp1").unwrap(), None);
    t.put("tmp1", "v1").unwrap();
    t.put("keep", "old").unwrap();
    t.put("plain", "p").unwrap();
    t.put_with_ttl("exp", "old", Duration::from_secs(100)).unwrap();
    t.flush().unwrap();
    // A snapshot taken now still sees tmp1 and the old values after the compaction.
    let snap = db.snapshot();
    t.put("tmp2", "v2").unwrap();
    t.compact_range::<&str, _>(..).unwrap();
    assert_eq!(snap.get_in(&t, "tmp1").unwrap(), s("v1"));
    assert_eq!(snap.get_in(&t, "keep").unwrap(), s("old"));
    // The snapshot sees tmp1 and keep: the filter was not asked about them, and reads now
    // still find them; tmp2, newer than the snapshot, was removed.
    assert_eq!(t.get("tmp1").unwrap(), s("v1"));
    assert_eq!(t.get("keep").unwrap(), s("old"));
    assert_eq!(t.get("tmp2").unwrap(), None);
    assert!(!janitor.asked.lock().unwrap().iter().any(|(_, _, k)| k == "keep"));
    drop(snap);
    t.compact_range::<&str, _>(..).unwrap();
    assert_eq!(
        all(&t),
        vec![
            ("exp".into(), "new".into()),
            ("keep".into(), "new".into()),
            ("plain".into(), "p".into())
        ]
    );
    // The changed expiring value kept its deadline.
    clock.advance(Duration::from_secs(100));
    assert_eq!(t.get("exp").unwrap(), None);
    t.compact_range::<&str, _>(..).unwrap();
    assert_eq!(entries(&db, "t"), 2, "keep and plain");
    let asked = janitor.asked.lock().unwrap().clone();
    assert!(
        asked.iter().all(|(tree, level, _)| tree == "t" && *level >= 1),
        "{asked:?}"
    );
    db.close().unwrap();
}

#[test]
fn bad_ttl_settings_and_values_are_refused_with_clear_errors() {
    let (fs, clock) = fresh();
    let mut o = opts(&fs, &clock);
    for bad in ["sessions", "sessions=1y", "sessions=0s", "a=1s,a=2s"] {
        let e = o.set("ttl.trees", bad).unwrap_err().to_string();
        assert!(e.contains("ttl") && e.contains(bad.split(',').next().unwrap()), "{e}");
    }
    o.limits.max_value_size = 10;
    let db = Db::open(Path::new("/db"), o).unwrap();
    let e = db
        .put_with_ttl("k", [0u8; 11], Duration::from_secs(1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("max_value_size"), "{e}");
    db.put_with_ttl("k", [0u8; 10], Duration::from_secs(1)).unwrap();
    assert_eq!(db.get("k").unwrap(), Some(vec![0u8; 10]));
    db.close().unwrap();
}
