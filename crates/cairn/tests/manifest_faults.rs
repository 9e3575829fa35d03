//! A failed manifest write (or any failed durable write) must not make the process delete
//! anything: the edit's bytes may have reached the file, and a restart would then read an edit
//! naming files that are gone. Each case fails exactly one operation, chosen by file name and
//! kind (deterministic whatever the background threads do), drops the poisoned database without
//! a power loss — the OS keeps every byte written — and reopens: the database must open and hold
//! every acknowledged write.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::{FaultFs, FaultKind, MemFs, OpClass};
use cairn::{Db, Error, Options, RecoveryMode};
use common::{contents, key};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

const DIR: &str = "/m";

fn options(fs: &FaultFs, mode: RecoveryMode) -> Options {
    let mut o = Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    o.memory.fixed_mut().memtable_size = 1 << 20;
    o.memory.fixed_mut().write_memory = 4 << 20;
    // No background compaction: the test decides when each job runs.
    o.compaction.l0_trigger = 64;
    o.write_stalls.l0_slowdown_trigger = 64;
    o.write_stalls.l0_stop_trigger = 64;
    o.table.block_size = 512;
    o.wal.recovery_mode = mode;
    o
}

/// Writes keys `from..to` (value names the round) and records them in `model`.
fn write(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, from: u32, to: u32, round: u32) {
    for i in from..to {
        let v = format!("v{round}-{i}").into_bytes();
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
    }
}

fn files(fs: &FaultFs, ext: &str) -> Vec<String> {
    use cairn::env::FileSystem;
    fs.list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(ext))
        .collect()
}

/// Reopens without faults and checks every acknowledged write (and nothing else) is there.
fn reopen_and_check(fs: &FaultFs, mode: RecoveryMode, model: &BTreeMap<Vec<u8>, Vec<u8>>, case: &str) {
    fs.clear_faults();
    let db = Db::open(DIR, options(fs, mode)).unwrap_or_else(|e| panic!("{case}: reopen failed: {e}"));
    let got = contents(&db);
    assert_eq!(got.len(), model.len(), "{case}: wrong number of keys after reopen");
    assert!(
        got == *model,
        "{case}: recovered state differs from the acknowledged writes"
    );
    for (k, v) in model.iter().step_by(37) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{case}");
    }
    // The database is writable again and survives one more reopen.
    db.put(b"after", b"reopen").unwrap();
    db.flush_all().unwrap();
    drop(db);
    let db = Db::open(DIR, options(fs, mode)).unwrap();
    assert_eq!(db.get(b"after").unwrap().as_deref(), Some(&b"reopen"[..]), "{case}");
}

fn assert_poisoned(db: &Db, e: &Error, case: &str) {
    assert!(matches!(e, Error::Io { .. } | Error::Poisoned(_)), "{case}: {e}");
    assert!(
        matches!(db.put(b"x", b"y"), Err(Error::Poisoned(_))),
        "{case}: not read-only after the fault"
    );
}

/// Which operation of a flush, compaction or manifest rotation fails.
#[derive(Debug, Clone, Copy)]
struct Fault {
    class: OpClass,
    op: Option<&'static str>,
    prefix: &'static str,
    skip: u64,
}

const MANIFEST_SYNC: Fault = Fault {
    class: OpClass::Sync,
    op: Some("fdatasync"),
    prefix: "MANIFEST-",
    skip: 0,
};
const MANIFEST_APPEND: Fault = Fault {
    class: OpClass::Write,
    op: Some("append"),
    prefix: "MANIFEST-",
    skip: 0,
};

fn arm(fs: &FaultFs, f: Fault) {
    fs.record_ops();
    fs.fail_matching(f.class, f.op, f.prefix, f.skip, FaultKind::Eio);
}

/// The injected operation, from the operation log.
fn injected_op(fs: &FaultFs, case: &str) -> String {
    let log = fs.op_log();
    let hit = log
        .iter()
        .find(|r| r.fault.is_some())
        .unwrap_or_else(|| panic!("{case}: the fault was never reached"));
    format!("#{} {} {}", hit.index, hit.op, hit.path.display())
}

#[test]
fn a_failed_manifest_write_of_a_flush_deletes_nothing() {
    for mode in [RecoveryMode::PointInTime, RecoveryMode::AbsoluteConsistency] {
        for fault in [MANIFEST_SYNC, MANIFEST_APPEND] {
            let case = format!("flush, {fault:?}, {mode:?}");
            let fs = FaultFs::new(Arc::new(MemFs::new()), 1);
            let db = Db::open(DIR, options(&fs, mode)).unwrap();
            let mut model = BTreeMap::new();
            write(&db, &mut model, 0, 2000, 0);
            db.flush_all().unwrap();
            write(&db, &mut model, 1000, 3000, 1);
            let tables_before = files(&fs, ".sst").len();
            arm(&fs, fault);
            let e = db.flush_all().expect_err(&case);
            assert_poisoned(&db, &e, &case);
            let op = injected_op(&fs, &case);
            // The flush's table was written and must still be there.
            assert_eq!(files(&fs, ".sst").len(), tables_before + 1, "{case} ({op})");
            drop(db);
            reopen_and_check(&fs, mode, &model, &case);
        }
    }
}

#[test]
fn a_failed_manifest_write_of_a_compaction_deletes_nothing() {
    for mode in [RecoveryMode::PointInTime, RecoveryMode::AbsoluteConsistency] {
        for fault in [MANIFEST_SYNC, MANIFEST_APPEND] {
            let case = format!("compaction, {fault:?}, {mode:?}");
            let fs = FaultFs::new(Arc::new(MemFs::new()), 2);
            let db = Db::open(DIR, options(&fs, mode)).unwrap();
            let mut model = BTreeMap::new();
            for round in 0..3 {
                write(&db, &mut model, round * 500, round * 500 + 1500, round);
                db.flush_all().unwrap();
            }
            // Unflushed writes too: their WAL must survive.
            write(&db, &mut model, 100, 300, 9);
            let tables_before = files(&fs, ".sst");
            // compact_range flushes first; with the memtable flushed beforehand the first
            // manifest write after arming is the compaction's.
            db.flush_all().unwrap();
            arm(&fs, fault);
            let e = db.compact_range::<&[u8], _>(..).expect_err(&case);
            assert_poisoned(&db, &e, &case);
            let op = injected_op(&fs, &case);
            let after = files(&fs, ".sst");
            for t in &tables_before {
                assert!(after.contains(t), "{case} ({op}): input {t} was deleted");
            }
            assert!(after.len() > tables_before.len() + 1, "{case} ({op}): outputs deleted");
            drop(db);
            reopen_and_check(&fs, mode, &model, &case);
        }
    }
}

/// Rounds of writes and flushes with a tiny `max_manifest_size`: some flush rotates the
/// manifest. Stops at the first error and returns it.
fn rotation_workload(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) -> Result<(), Error> {
    for round in 0..24 {
        write(db, model, round * 100, round * 100 + 200, round);
        db.flush_all()?;
    }
    Ok(())
}

fn matches(r: &cairn::env::OpRecord, f: &Fault) -> bool {
    let name = r.path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    r.class == f.class && f.op.is_none_or(|o| o == r.op) && name.starts_with(f.prefix)
}

#[test]
fn a_failed_manifest_rotation_deletes_nothing() {
    // The steps of a rotation: create, write and sync the new manifest, sync the directory,
    // write and sync CURRENT.tmp, rename it over CURRENT, sync the directory.
    let any = |class, op, prefix| Fault {
        class,
        op: Some(op),
        prefix,
        skip: 0,
    };
    let steps = [
        any(OpClass::Metadata, "create", "MANIFEST-"),
        MANIFEST_APPEND,
        MANIFEST_SYNC,
        any(OpClass::Metadata, "create", "CURRENT.tmp"),
        any(OpClass::Sync, "fsync", "CURRENT.tmp"),
        any(OpClass::Metadata, "rename", "CURRENT.tmp"),
        any(OpClass::Sync, "fsync dir", "m"),
    ];
    for mode in [RecoveryMode::PointInTime, RecoveryMode::AbsoluteConsistency] {
        let opts = |fs: &FaultFs| {
            let mut o = options(fs, mode);
            o.files.max_manifest_size = 1024;
            o
        };
        // A dry run finds, in the operation log, the first rotation and so how many operations
        // like each step's come before that step's own operation; the workload is
        // deterministic (the test drives every flush; background compaction is off).
        let dry = FaultFs::new(Arc::new(MemFs::new()), 3);
        let db = Db::open(DIR, opts(&dry)).unwrap();
        dry.record_ops();
        rotation_workload(&db, &mut BTreeMap::new()).unwrap();
        drop(db);
        let log = dry.op_log();
        let rotation = log
            .iter()
            .position(|r| r.op == "create" && r.path.to_string_lossy().contains("MANIFEST-"))
            .expect("the workload rotates the manifest");
        for step in steps {
            let target = rotation + log[rotation..].iter().position(|r| matches(r, &step)).unwrap();
            let fault = Fault {
                skip: log[..target].iter().filter(|r| matches(r, &step)).count() as u64,
                ..step
            };
            let case = format!("rotation, {fault:?}, {mode:?}");
            let fs = FaultFs::new(Arc::new(MemFs::new()), 3);
            let db = Db::open(DIR, opts(&fs)).unwrap();
            let mut model = BTreeMap::new();
            arm(&fs, fault);
            let e = rotation_workload(&db, &mut model).expect_err(&case);
            assert_poisoned(&db, &e, &case);
            let op = injected_op(&fs, &case);
            assert_eq!(
                fs.op_log()
                    .iter()
                    .filter(|r| r.op == "create" && r.path.to_string_lossy().contains("MANIFEST-"))
                    .count(),
                1,
                "{case}: injected into {op}, not into the first rotation"
            );
            drop(db);
            reopen_and_check(&fs, mode, &model, &case);
        }
    }
}

/// A database with 1,500 acknowledged writes (in `model`), its background work done (the
/// spare WAL ready), and `fault` armed.
fn armed_after_writes(mode: RecoveryMode, seed: u64, fault: Fault) -> (FaultFs, Db, BTreeMap<Vec<u8>, Vec<u8>>) {
    let fs = FaultFs::new(Arc::new(MemFs::new()), seed);
    let db = Db::open(DIR, options(&fs, mode)).unwrap();
    let mut model = BTreeMap::new();
    write(&db, &mut model, 0, 1500, 0);
    db.wait_for_background().unwrap();
    arm(&fs, fault);
    (fs, db, model)
}

#[test]
fn a_failed_wal_rotation_loses_nothing() {
    // A memtable switch renames the spare WAL the WAL thread made ahead into place; before the
    // flush's manifest edit the directory is synced (the flush's tables, then the WAL's name).
    let steps = [
        Fault {
            class: OpClass::Metadata,
            op: Some("rename"),
            prefix: "0*.wal.tmp",
            skip: 0,
        },
        Fault {
            class: OpClass::Sync,
            op: Some("fsync dir"),
            prefix: "m",
            skip: 0,
        },
        Fault {
            class: OpClass::Sync,
            op: Some("fsync dir"),
            prefix: "m",
            skip: 1,
        },
    ];
    for mode in [RecoveryMode::PointInTime, RecoveryMode::AbsoluteConsistency] {
        for fault in steps {
            let case = format!("WAL rotation, {fault:?}, {mode:?}");
            let (fs, db, model) = armed_after_writes(mode, 4, fault);
            let e = db.flush_all().expect_err(&case);
            assert_poisoned(&db, &e, &case);
            injected_op(&fs, &case);
            drop(db);
            reopen_and_check(&fs, mode, &model, &case);
        }
    }
}

/// The WAL thread makes the next WAL while the switch that used the last one flushes: a
/// failure there (creating it, writing or syncing its header) poisons the database at once,
/// not at the next switch, and loses nothing acknowledged.
#[test]
fn a_failed_spare_wal_loses_nothing() {
    let steps = [Some("create"), Some("append"), Some("fdatasync")].map(|op| Fault {
        class: OpClass::Any,
        op,
        prefix: "0*.wal.tmp",
        skip: 0,
    });
    for mode in [RecoveryMode::PointInTime, RecoveryMode::AbsoluteConsistency] {
        for fault in steps {
            let case = format!("spare WAL, {fault:?}, {mode:?}");
            let (fs, db, mut model) = armed_after_writes(mode, 5, fault);
            // The flush takes the spare; the next one fails, before or after the flush ends.
            let _ = db.flush_all();
            let mut poisoned = false;
            for i in 0..2000u32 {
                let v = format!("after-{i}").into_bytes();
                match db.put(key(100_000 + i), &v) {
                    Ok(()) => {
                        model.insert(key(100_000 + i), v);
                    }
                    Err(e) => {
                        assert_poisoned(&db, &e, &case);
                        poisoned = true;
                        break;
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            assert!(poisoned, "{case}: not poisoned after 10 s");
            injected_op(&fs, &case);
            drop(db);
            reopen_and_check(&fs, mode, &model, &case);
        }
    }
}

#[test]
fn a_failed_open_rewrite_loses_nothing() {
    // Open replays the WALs into new tables, then writes a new WAL, manifest and OPTIONS file
    // and points CURRENT at the manifest. A failure at any of those steps fails the open; the
    // next open must still find every acknowledged write.
    let steps = [
        Fault {
            class: OpClass::Sync,
            op: Some("fdatasync"),
            prefix: "0",
            skip: 0,
        },
        Fault {
            class: OpClass::Sync,
            op: Some("fdatasync"),
            prefix: "0",
            skip: 1,
        },
        MANIFEST_APPEND,
        MANIFEST_SYNC,
        Fault {
            class: OpClass::Write,
            op: Some("append"),
            prefix: "OPTIONS-",
            skip: 0,
        },
        Fault {
            class: OpClass::Sync,
            op: Some("fsync"),
            prefix: "OPTIONS-",
            skip: 0,
        },
        Fault {
            class: OpClass::Metadata,
            op: Some("rename"),
            prefix: "CURRENT.tmp",
            skip: 0,
        },
        Fault {
            class: OpClass::Sync,
            op: Some("fsync dir"),
            prefix: "m",
            skip: 1,
        },
    ];
    for mode in [RecoveryMode::PointInTime, RecoveryMode::AbsoluteConsistency] {
        for fault in steps {
            let case = format!("open, {fault:?}, {mode:?}");
            let fs = FaultFs::new(Arc::new(MemFs::new()), 5);
            let db = Db::open(DIR, options(&fs, mode)).unwrap();
            let mut model = BTreeMap::new();
            write(&db, &mut model, 0, 1500, 0);
            db.flush_all().unwrap();
            write(&db, &mut model, 700, 2000, 1);
            drop(db);
            arm(&fs, fault);
            assert!(Db::open(DIR, options(&fs, mode)).is_err(), "{case}: open succeeded");
            injected_op(&fs, &case);
            reopen_and_check(&fs, mode, &model, &case);
        }
    }
}
