//! External tables and ingestion (`TableWriter`, `Db::ingest`): ingested versions shadow older
//! ones and only those, snapshots taken before do not see them, placement, memtables flushed
//! when overlapped, copies and moves, refused tables change nothing, reopen, compaction and
//! `cairn verify` of ingested tables, and a power cut at every file system operation around an
//! ingestion.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::{CrashMode, FaultFs, FileSystem, MemFs};
use cairn::{Db, Error, IngestOptions, Options, TableWriter};
use common::{contents, key, Model};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A database at `/db` on a new in-memory file system, its file system and options.
fn fresh() -> (Arc<dyn FileSystem>, Options, Db) {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let o = options(fs.clone());
    let db = Db::open("/db", o.clone()).unwrap();
    (fs, o, db)
}

fn options(fs: Arc<dyn FileSystem>) -> Options {
    let mut o = common::small(fs, 4096);
    o.compaction.l0_trigger = 2;
    o.merge_operator = Some(Arc::new(cairn::merge::StringAppend::new("|")));
    o
}

/// One operation of an external table.
enum Op<'a> {
    Put(u32, &'a str),
    Delete(u32),
    Merge(u32, &'a str),
}

/// Writes an external table at `path` with `ops` (keys increasing) and range deletions of
/// `[key(a), key(b))`.
fn table(o: &Options, path: &Path, ops: &[Op<'_>], ranges: &[(u32, u32)]) -> PathBuf {
    o.fs.create_dir_all(path.parent().unwrap()).unwrap();
    let mut w = TableWriter::create(path, o).unwrap();
    for op in ops {
        match op {
            Op::Put(k, v) => w.put(&key(*k), v.as_bytes()).unwrap(),
            Op::Delete(k) => w.delete(&key(*k)).unwrap(),
            Op::Merge(k, v) => w.merge(&key(*k), v.as_bytes()).unwrap(),
        }
    }
    for &(a, b) in ranges {
        w.delete_range(&key(a), &key(b)).unwrap();
    }
    w.finish().unwrap();
    path.to_path_buf()
}

fn puts(keys: impl Iterator<Item = u32>, v: &str) -> Vec<Op<'_>> {
    keys.map(|k| Op::Put(k, v)).collect()
}

#[test]
fn ingested_versions_shadow_older_ones_and_later_writes_shadow_them() {
    let (fs, o, db) = fresh();
    // Older data: on disk (0..40), and in memory (keys 100..) away from the table's range.
    for i in 0..40 {
        db.put(key(i), b"old").unwrap();
    }
    db.flush_all().unwrap();
    db.put(key(100), b"mem").unwrap();
    let before = db.snapshot();
    let t = table(
        &o,
        Path::new("/ext/a.sst"),
        &[
            Op::Put(1, "new"),
            Op::Delete(2),
            Op::Merge(3, "more"),
            Op::Put(12, "kept"),
            Op::Put(50, "fresh"),
        ],
        // Deletes 10..15 of the older data, not the table's own key 12.
        &[(10, 15)],
    );
    let info = db.ingest(&[&t], &IngestOptions::default()).unwrap();
    assert!(!info.flushed, "the table does not overlap memory");
    assert_eq!(info.tables.len(), 1);

    let mut want: Model = (0..40).map(|i| (key(i), b"old".to_vec())).collect();
    want.insert(key(100), b"mem".to_vec());
    let snapshot_view = want.clone();
    want.insert(key(1), b"new".to_vec());
    want.remove(&key(2));
    want.insert(key(3), b"old|more".to_vec());
    for i in 10..15 {
        want.remove(&key(i));
    }
    want.insert(key(12), b"kept".to_vec());
    want.insert(key(50), b"fresh".to_vec());
    assert_eq!(contents(&db), want);
    for (k, v) in &want {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{}", String::from_utf8_lossy(k));
    }
    assert_eq!(db.get(key(2)).unwrap(), None);
    assert_eq!(db.get(key(11)).unwrap(), None);
    // A snapshot from before sees none of it, by gets and by scans.
    assert_eq!(before.get(key(1)).unwrap().as_deref(), Some(&b"old"[..]));
    assert_eq!(before.get(key(50)).unwrap(), None);
    assert_eq!(before.iter().map(|r| r.unwrap()).collect::<Model>(), snapshot_view);
    // Later writes shadow the ingested versions.
    db.put(key(1), b"newer").unwrap();
    db.merge(key(50), b"x").unwrap();
    want.insert(key(1), b"newer".to_vec());
    want.insert(key(50), b"fresh|x".to_vec());
    assert_eq!(contents(&db), want);
    // And all of it survives a reopen and a full compaction.
    drop(before);
    db.close().unwrap();
    let db = Db::open("/db", o.clone()).unwrap();
    assert_eq!(contents(&db), want);
    db.put(key(60), b"after reopen").unwrap();
    want.insert(key(60), b"after reopen".to_vec());
    db.compact_range::<&[u8], _>(..).unwrap();
    assert_eq!(contents(&db), want);
    for (k, v) in &want {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    db.close().unwrap();
    let report = cairn::inspect::verify(&*fs, Path::new("/db")).unwrap();
    assert!(report.is_ok(), "{:?}", report.damage);
}

#[test]
fn tables_go_to_the_deepest_level_without_overlap() {
    let (_, o, db) = fresh();
    // An empty tree: its deepest level (L1).
    let a = table(&o, Path::new("/ext/a.sst"), &puts(0..100, "a"), &[]);
    let info = db.ingest(&[&a], &IngestOptions::default()).unwrap();
    assert_eq!(info.tables[0].level, 1);
    // Disjoint from it: the same level.
    let b = table(&o, Path::new("/ext/b.sst"), &puts(200..300, "b"), &[]);
    assert_eq!(db.ingest(&[&b], &IngestOptions::default()).unwrap().tables[0].level, 1);
    // Overlapping L1: L0, as the newest group; the next overlapping one above it.
    let c = table(&o, Path::new("/ext/c.sst"), &puts(50..60, "c"), &[]);
    let d = table(&o, Path::new("/ext/d.sst"), &puts(55..58, "d"), &[]);
    let info = db.ingest(&[&c, &d], &IngestOptions::default()).unwrap();
    assert_eq!(info.tables.iter().map(|t| t.level).collect::<Vec<_>>(), vec![0, 0]);
    assert_eq!(
        info.tables[1].seqno,
        info.tables[0].seqno + 1,
        "one sequence number each, in order"
    );
    // (Where they are now is the compactions' business: two L0 groups start one at once.)
    let mut want: Model = (0..100).map(|i| (key(i), b"a".to_vec())).collect();
    want.extend((200..300).map(|i| (key(i), b"b".to_vec())));
    want.extend((50..60).map(|i| (key(i), b"c".to_vec())));
    want.extend((55..58).map(|i| (key(i), b"d".to_vec())));
    assert_eq!(contents(&db), want);
    db.wait_for_background().unwrap();
    assert_eq!(contents(&db), want);
    for (k, v) in &want {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
}

#[test]
fn a_table_overlapping_memory_flushes_it_first_or_is_refused() {
    let (fs, o, db) = fresh();
    db.put(key(5), b"mem").unwrap();
    db.put(key(7), b"mem").unwrap();
    let t = table(&o, Path::new("/ext/t.sst"), &puts(5..6, "ext"), &[]);
    let strict = IngestOptions {
        allow_blocking_flush: false,
        ..IngestOptions::default()
    };
    assert!(matches!(db.ingest(&[&t], &strict), Err(Error::Busy(_))));
    assert_eq!(db.get(key(5)).unwrap().as_deref(), Some(&b"mem"[..]));
    assert!(fs.exists(&t).unwrap(), "a refused ingestion leaves its source");
    let info = db.ingest(&[&t], &IngestOptions::default()).unwrap();
    assert!(info.flushed);
    assert_eq!(db.get(key(5)).unwrap().as_deref(), Some(&b"ext"[..]));
    assert_eq!(db.get(key(7)).unwrap().as_deref(), Some(&b"mem"[..]));
    // A range tombstone in memory over the table's range counts too.
    db.delete_range(key(20), key(30)).unwrap();
    let u = table(&o, Path::new("/ext/u.sst"), &puts(25..26, "ext"), &[]);
    assert!(db.ingest(&[&u], &IngestOptions::default()).unwrap().flushed);
    assert_eq!(db.get(key(25)).unwrap().as_deref(), Some(&b"ext"[..]));
}

#[test]
fn copies_keep_the_source_and_moves_take_it() {
    let (fs, o, db) = fresh();
    let a = table(&o, Path::new("/ext/a.sst"), &puts(0..10, "a"), &[]);
    let info = db.ingest(&[&a], &IngestOptions::default()).unwrap();
    assert!(!info.tables[0].linked);
    assert!(fs.exists(&a).unwrap());
    let b = table(&o, Path::new("/ext/b.sst"), &puts(10..20, "b"), &[]);
    let moved = IngestOptions {
        move_files: true,
        ..IngestOptions::default()
    };
    let info = db.ingest(&[&b], &moved).unwrap();
    assert!(info.tables[0].linked);
    assert!(!fs.exists(&b).unwrap());
    // The copy's source can be ingested again (newer versions of the same keys).
    db.ingest(&[&a], &moved).unwrap();
    assert_eq!(contents(&db).len(), 20);
}

#[test]
fn a_bad_table_is_refused_and_nothing_changes() {
    let (fs, o, db) = fresh();
    db.put(b"base", b"1").unwrap();
    let good = table(&o, Path::new("/ext/good.sst"), &puts(0..200, "g"), &[]);
    // A flipped byte in a data block.
    let mut bytes = cairn::env::read_all(&*fs, &good).unwrap();
    bytes[100] ^= 0x40;
    let bad = PathBuf::from("/ext/bad.sst");
    cairn::env::write_all_synced(&*fs, &bad, &bytes).unwrap();
    let tables_before = common::files(&*fs, Path::new("/db"), ".sst").len();
    let r = db.ingest(&[&good, &bad], &IngestOptions::default());
    assert!(matches!(r, Err(Error::Corruption { .. })), "{r:?}");
    assert_eq!(db.get(key(0)).unwrap(), None, "none of the good table either");
    assert_eq!(common::files(&*fs, Path::new("/db"), ".sst").len(), tables_before);
    // A database's own table is not an external one.
    db.flush_all().unwrap();
    let own = common::files(&*fs, Path::new("/db"), ".sst").pop().unwrap();
    let r = db.ingest(&[&own], &IngestOptions::default());
    assert!(matches!(r, Err(Error::Corruption { .. })), "{r:?}");
    // A path named twice, a missing file.
    assert!(matches!(
        db.ingest(&[&good, &good], &IngestOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(db
        .ingest(&[Path::new("/ext/none.sst")], &IngestOptions::default())
        .is_err());
    assert_eq!(contents(&db), Model::from([(b"base".to_vec(), b"1".to_vec())]));
}

#[test]
fn the_writer_refuses_disorder_duplicates_oversize_and_emptiness() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let mut o = options(fs.clone());
    o.limits.max_key_size = 16;
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let mut w = TableWriter::create("/ext/a.sst", &o).unwrap();
    w.put(b"b", b"1").unwrap();
    assert!(matches!(w.put(b"a", b"1"), Err(Error::InvalidArgument(_))));
    assert!(matches!(w.delete(b"b"), Err(Error::InvalidArgument(_))));
    assert!(matches!(w.put(&[b'x'; 17], b"1"), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        w.delete_range(b"a", &[b'x'; 17]),
        Err(Error::InvalidArgument(_))
    ));
    w.put(b"c", b"1").unwrap();
    w.finish().unwrap();
    assert!(
        TableWriter::create("/ext/a.sst", &o).is_err(),
        "an existing file is not overwritten"
    );
    let w = TableWriter::create("/ext/empty.sst", &o).unwrap();
    assert!(matches!(w.finish(), Err(Error::InvalidArgument(_))));
    // A table of range deletions only is fine.
    let mut w = TableWriter::create("/ext/ranges.sst", &o).unwrap();
    w.delete_range(b"a", b"m").unwrap();
    w.finish().unwrap();
    let db = Db::open("/db", o.clone()).unwrap();
    db.put(b"c", b"old").unwrap();
    db.put(b"z", b"old").unwrap();
    db.ingest(&[Path::new("/ext/ranges.sst")], &IngestOptions::default())
        .unwrap();
    assert_eq!(db.get(b"c").unwrap(), None);
    assert_eq!(db.get(b"z").unwrap().as_deref(), Some(&b"old"[..]));
}

#[test]
fn a_transaction_that_read_an_ingested_key_conflicts() {
    let (_, o, db) = fresh();
    db.put(key(1), b"old").unwrap();
    db.flush_all().unwrap();
    let mut txn = db.transaction();
    assert_eq!(txn.get(key(1)).unwrap().as_deref(), Some(&b"old"[..]));
    txn.put(key(2), b"from txn").unwrap();
    let t = table(&o, Path::new("/ext/t.sst"), &puts(1..2, "ext"), &[]);
    db.ingest(&[&t], &IngestOptions::default()).unwrap();
    assert!(matches!(txn.commit(), Err(Error::Conflict { .. })));
    assert_eq!(db.get(key(2)).unwrap(), None);
}

#[test]
fn the_key_value_cache_forgets_what_an_ingestion_replaces() {
    let (_, o, db) = fresh();
    for i in 0..50 {
        db.put(key(i), b"old").unwrap();
    }
    db.flush_all().unwrap();
    for _ in 0..20 {
        assert_eq!(db.get(key(7)).unwrap().as_deref(), Some(&b"old"[..]));
    }
    let t = table(&o, Path::new("/ext/t.sst"), &puts(7..8, "ext"), &[]);
    db.ingest(&[&t], &IngestOptions::default()).unwrap();
    assert_eq!(db.get(key(7)).unwrap().as_deref(), Some(&b"ext"[..]));
    assert_eq!(
        db.multi_get(&[key(6), key(7)]).unwrap()[1].as_deref(),
        Some(&b"ext"[..])
    );
}

/// An ingestion with a power cut at file system operation `k` (none: count them). After the
/// cut the tree holds the older data, with the ingested tables' versions all there or none.
fn crash_run(k: Option<u64>) -> (u64, bool, bool) {
    let fault = FaultFs::new(Arc::new(MemFs::new()), k.unwrap_or(0));
    let fs: Arc<dyn FileSystem> = Arc::new(fault.clone());
    let mut o = options(fs.clone());
    o.files.max_manifest_size = 2048;
    // The tables are written before the cut can fall.
    let a = table(&o, Path::new("/ext/a.sst"), &puts(0..300, "a"), &[(400, 450)]);
    let b = table(&o, Path::new("/ext/b.sst"), &puts(250..350, "b"), &[]);
    if let Some(k) = k {
        fault.crash_at(fault.op_count() + k);
    }
    let base = fault.op_count();
    let old: Model = (0..500).step_by(3).map(|i| (key(i), b"old".to_vec())).collect();
    let mut ingested = false;
    let run = |ingested: &mut bool| -> cairn::Result<()> {
        let db = Db::open("/db", o.clone())?;
        for (k, v) in &old {
            db.put(k, v)?;
        }
        db.flush_all()?;
        db.put(key(1000), b"in the WAL")?;
        db.sync_wal()?;
        db.ingest(
            &[&a, &b],
            &IngestOptions {
                move_files: true,
                ..IngestOptions::default()
            },
        )?;
        *ingested = true;
        db.put(key(1001), b"after")?;
        db.sync_wal()?;
        Ok(())
    };
    let ok = run(&mut ingested).is_ok();
    // The cut fell (else the run went past it: every point is covered).
    let cut = fault.injected_faults() > 0;
    let ops = fault.op_count() - base;
    let mut with: Model = old.clone();
    for i in 400..450 {
        with.remove(&key(i));
    }
    with.extend((0..300).map(|i| (key(i), b"a".to_vec())));
    with.extend((250..350).map(|i| (key(i), b"b".to_vec())));
    if k.is_none() {
        assert!(ok && ingested);
    }
    fault.crash(CrashMode::DropUnsynced).unwrap();
    fault.restart();
    fault.clear_faults();
    let db = Db::open("/db", o).unwrap_or_else(|e| panic!("crash at op {k:?}: reopen failed: {e}"));
    let mut got = contents(&db);
    let synced_before = got.remove(&key(1000)).is_some();
    got.remove(&key(1001));
    let whole = got == with;
    // A prefix of the history: the ingestion only with the writes synced before it.
    assert!(
        !whole || synced_before,
        "crash at op {k:?}: the ingestion without the write before it"
    );
    if !whole {
        // Before the ingestion's commit: a prefix of the older data (the puts were not synced).
        assert!(
            !ingested,
            "crash at op {k:?}: the ingestion was acknowledged and is gone"
        );
        assert!(
            got.iter().all(|(k, v)| old.get(k) == Some(v)),
            "crash at op {k:?}: part of an ingestion"
        );
    }
    // The database goes on: a write after the cut is newer than every ingested version.
    db.put(key(0), b"later").unwrap();
    assert_eq!(db.get(key(0)).unwrap().as_deref(), Some(&b"later"[..]));
    db.close().unwrap();
    let report = cairn::inspect::verify(&*fs, Path::new("/db")).unwrap();
    assert!(report.is_ok(), "crash at op {k:?}: {:?}", report.damage);
    (ops, whole, !cut)
}

#[test]
fn a_power_cut_at_any_operation_of_an_ingestion_leaves_it_whole_or_absent() {
    // Background flushes and compactions make the count of operations vary from run to run
    // (by a fifth): cuts go on to twice the count, past the end of the longest runs (a run
    // the cut never reached is not an outcome).
    let (total, _, _) = crash_run(None);
    let mut outcomes = [0u32; 2];
    for k in 1..=2 * total {
        let (_, whole, completed) = crash_run(Some(k));
        if !completed {
            outcomes[usize::from(whole)] += 1;
        }
    }
    println!(
        "{} crash points ({total} counted): {} without the ingestion, {} with it",
        2 * total,
        outcomes[0],
        outcomes[1]
    );
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}
