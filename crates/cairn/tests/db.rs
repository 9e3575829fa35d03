//! Engine tests: reopen, recovery, crashes, snapshots, concurrency, limits, merge policies.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::{CrashMode, FaultFs, FaultKind, FileSystem, MemFs, OpClass};
use cairn::{BpkPolicy, Db, Error, MergePolicyKind, Options, WriteBatch, WriteOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

fn small(fs: Arc<dyn FileSystem>) -> Options {
    let mut o = common::small(fs, 16 << 10);
    o.compaction.target_file_size = 32 << 10;
    o
}

fn k(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

#[test]
fn reopen_after_close_and_after_drop() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db");
    for round in 0..4u32 {
        let db = Db::open(&p, Options::default()).unwrap();
        for i in 0..2000 {
            if round > 0 {
                assert_eq!(
                    db.get(k(i)).unwrap(),
                    Some(format!("v{}", round - 1).into_bytes()),
                    "round {round}"
                );
            }
            db.put(k(i), format!("v{round}")).unwrap();
        }
        if round % 2 == 0 {
            db.close().unwrap();
        } else {
            drop(db);
        }
    }
}

#[test]
fn recovery_from_wal_only() {
    let fs = MemFs::new();
    // A write buffer that holds everything: the data stays in the WAL only.
    let opts = || {
        let mut o = small(Arc::new(fs.clone()));
        o.memory.fixed_mut().memtable_size = 1 << 20;
        o.memory.fixed_mut().write_memory = 4 << 20;
        o
    };
    let db = Db::open("/w", opts()).unwrap();
    let t = db.tree("other").unwrap();
    for i in 0..300 {
        db.put(k(i), b"main").unwrap();
        t.put(k(i), b"other").unwrap();
    }
    db.delete(k(7)).unwrap();
    assert_eq!(db.levels()[0].levels.len(), 0, "nothing flushed yet");
    drop(t);
    drop(db);
    let db = Db::open("/w", opts()).unwrap();
    let t = db.tree("other").unwrap();
    assert_eq!(db.tree_names(), vec!["default".to_string(), "other".to_string()]);
    assert_eq!(db.get(k(7)).unwrap(), None);
    assert_eq!(db.get(k(8)).unwrap().as_deref(), Some(&b"main"[..]));
    assert_eq!(t.get(k(7)).unwrap().as_deref(), Some(&b"other"[..]));
    assert_eq!(db.iter().count(), 299);
    // The replayed WAL was flushed to L0 at open and is gone.
    let wals = fs
        .list(Path::new("/w"))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".wal"))
        .count();
    assert_eq!(wals, 1, "only the fresh WAL remains");
}

/// Cross-tree batches under simulated power loss: after every crash the recovered state of
/// both trees equals the state after some prefix of the acknowledged batches (atomicity and no
/// holes), and that prefix contains every batch acknowledged with `sync` or followed by a
/// `sync_wal`. Seeds from 340 on run
/// the partitioned memory component (its memory merges, partial and log-triggered flushes of
/// runs of switched memtables, with closed WALs synced by the same flush rule).
#[test]
fn cross_tree_batches_survive_crashes_atomically() {
    let modes = [
        CrashMode::DropUnsynced,
        CrashMode::KeepRandomPrefix,
        CrashMode::TearZeros,
        CrashMode::TearGarbage,
    ];
    let mut crash_states = 0;
    for seed in 0..460u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let fs = FaultFs::new(Arc::new(MemFs::new()), seed);
        let opts = || {
            let mut o = small(Arc::new(fs.clone()));
            o.memory.fixed_mut().memtable_size = 2048;
            o.memory.fixed_mut().write_memory = 8192;
            o.compaction.l0_trigger = 2;
            if seed >= 340 {
                o.memtable.component = cairn::MemoryComponent::Partitioned;
            }
            o
        };
        // Model states after each batch, per tree.
        type State = (BTreeMap<Vec<u8>, Vec<u8>>, BTreeMap<Vec<u8>, Vec<u8>>);
        let mut history: Vec<State> = vec![Default::default()];
        let mut durable = 0usize; // history index every recovery must reach
                                  // Three crashes per seed; round 3 only verifies the last one.
        for round in 0..4 {
            let db = Db::open("/c", opts()).unwrap();
            let t = db.tree("b").unwrap();
            // The recovered state must be a prefix state, at least the durable one.
            let a: BTreeMap<_, _> = db.iter().map(|r| r.unwrap()).collect();
            let b: BTreeMap<_, _> = t.iter().map(|r| r.unwrap()).collect();
            let at = history
                .iter()
                .rposition(|(ha, hb)| *ha == a && *hb == b)
                .unwrap_or_else(|| panic!("seed {seed} round {round}: recovered state is not a prefix of history"));
            assert!(
                at >= durable,
                "seed {seed} round {round}: lost synced batches (at {at}, durable {durable})"
            );
            history.truncate(at + 1);
            durable = at;
            crash_states += usize::from(round > 0);
            if round == 3 {
                break;
            }
            let writes = rng.gen_range(20..200);
            for n in 0..writes {
                let mut batch = WriteBatch::new();
                let (mut sa, mut sb) = history.last().unwrap().clone();
                for _ in 0..rng.gen_range(1..6) {
                    let key = k(rng.gen_range(0..40));
                    let val = format!("{seed}-{round}-{n}").into_bytes();
                    if rng.gen_bool(0.5) {
                        batch.put(&key, &val);
                        sa.insert(key, val);
                    } else if rng.gen_bool(0.8) {
                        batch.put_in(&t, &key, &val);
                        sb.insert(key, val);
                    } else {
                        batch.delete(&key);
                        sa.remove(&key);
                    }
                }
                let sync = rng.gen_bool(0.05);
                db.write(
                    batch,
                    &WriteOptions {
                        sync,
                        ..Default::default()
                    },
                )
                .unwrap();
                history.push((sa, sb));
                // `sync_wal` after non-sync writes makes them as durable as a sync write.
                let synced_after = !sync && rng.gen_bool(0.05);
                if synced_after {
                    db.sync_wal().unwrap();
                }
                if sync || synced_after {
                    durable = history.len() - 1;
                }
            }
            fs.crash(modes[(seed as usize + round) % 4]).unwrap();
            drop(t);
            drop(db);
            fs.restart();
        }
    }
    println!("{crash_states} power-loss crash states verified");
    assert!(crash_states >= 1300);
}

#[test]
fn snapshots_survive_compactions() {
    let fs = MemFs::new();
    let mut o = small(Arc::new(fs));
    o.compaction.l0_trigger = 1;
    let db = Db::open("/s", o).unwrap();
    for i in 0..2000 {
        db.put(k(i), b"old").unwrap();
    }
    let snap = db.snapshot();
    for i in 0..2000 {
        if i % 3 == 0 {
            db.delete(k(i)).unwrap();
        } else {
            db.put(k(i), b"new").unwrap();
        }
    }
    db.flush_all().unwrap();
    db.compact_range::<&[u8], _>(..).unwrap();
    db.wait_for_background().unwrap();
    assert!(db.levels()[0].levels.len() >= 2);
    for i in (0..2000).step_by(7) {
        assert_eq!(snap.get(k(i)).unwrap().as_deref(), Some(&b"old"[..]));
        let now = db.get(k(i)).unwrap();
        assert_eq!(now.as_deref(), if i % 3 == 0 { None } else { Some(&b"new"[..]) });
    }
    assert_eq!(snap.iter().count(), 2000);
    assert_eq!(
        snap.iter().rev().filter(|r| r.as_ref().unwrap().1 == b"old").count(),
        2000
    );
    assert_eq!(db.iter().count(), 2000 - 667);
    drop(snap);
    // With the snapshot gone, a full compaction drops the old versions and the tombstones.
    db.compact_range::<&[u8], _>(..).unwrap();
    let entries: u64 = db.levels()[0].levels.iter().map(|l| l.entries).sum();
    assert_eq!(entries, 2000 - 667);
}

/// Iterators opened while writers run see exactly the state at their sequence number.
#[test]
fn iterators_are_stable_under_concurrent_writers() {
    let fs = MemFs::new();
    let db = Db::open("/i", small(Arc::new(fs))).unwrap();
    for i in 0..3000 {
        db.put(k(i), b"0").unwrap();
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let db = db.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(w);
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let i = rng.gen_range(0..3000);
                    // Every write keeps the invariant "value of key i = value of key i+1 in its pair"
                    // by writing both in one batch.
                    let pair = i - i % 2;
                    let v = format!("{w}-{n}");
                    let mut b = WriteBatch::new();
                    b.put(k(pair), &v).put(k(pair + 1), &v);
                    db.write(b, &WriteOptions::default()).unwrap();
                    n += 1;
                }
                n
            })
        })
        .collect();
    for round in 0..30 {
        let snap = db.snapshot();
        let fwd: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
        assert_eq!(fwd.len(), 3000, "round {round}");
        for pair in fwd.chunks(2) {
            assert_eq!(pair[0].1, pair[1].1, "a batch was seen half-applied");
        }
        let a: Vec<_> = snap.iter().map(|r| r.unwrap()).collect();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b: Vec<_> = snap.iter().rev().map(|r| r.unwrap()).collect();
        let mut b = b;
        b.reverse();
        assert_eq!(a, b, "a snapshot changed under writers");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let written: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    assert!(written > 100);
}

#[test]
fn limits_are_checked_before_the_wal() {
    let fs = MemFs::new();
    let mut o = small(Arc::new(fs.clone()));
    o.limits.max_key_size = 100;
    o.limits.max_value_size = 1000;
    o.limits.max_batch_size = 5000;
    let db = Db::open("/l", o).unwrap();
    db.put(b"ok", b"v").unwrap();
    let wal_size = || -> u64 {
        fs.list(Path::new("/l"))
            .unwrap()
            .iter()
            .filter(|n| n.ends_with(".wal"))
            .map(|n| fs.file_size(&Path::new("/l").join(n)).unwrap())
            .sum()
    };
    let before = wal_size();
    assert!(matches!(db.put(vec![1u8; 101], b"v"), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.put(b"k", vec![1u8; 1001]), Err(Error::InvalidArgument(_))));
    let mut b = WriteBatch::new();
    for i in 0..10 {
        b.put(k(i), vec![0u8; 900]);
    }
    let e = db.write(b, &WriteOptions::default()).unwrap_err();
    assert!(e.to_string().contains("max_batch_size"), "{e}");
    assert_eq!(wal_size(), before, "nothing reached the WAL");
    assert_eq!(db.get(b"ok").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn invalid_options_and_locking() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db");
    let bad = {
        let mut o = Options::default();
        o.table.block_size = 1;
        o
    };
    match Db::open(&p, bad) {
        Err(Error::InvalidOptions { option, .. }) => assert_eq!(option, "table.block_size"),
        other => panic!("{other:?}"),
    }
    let db = Db::open(&p, Options::default()).unwrap();
    assert!(matches!(Db::open(&p, Options::default()), Err(Error::Locked(_))));
    drop(db);
    let db = Db::open(&p, Options::default()).unwrap();
    drop(db);
    // Fewer levels than the data uses is incompatible.
    let fs = MemFs::new();
    let mut o = small(Arc::new(fs.clone()));
    o.compaction.l0_trigger = 1;
    let db = Db::open("/o", o.clone()).unwrap();
    for i in 0..20000 {
        db.put(k(i), [7u8; 20]).unwrap();
    }
    db.compact_range::<&[u8], _>(..).unwrap();
    let deepest = db.levels()[0].levels.len() - 1;
    drop(db);
    let mut fewer = o.clone();
    fewer.compaction.max_levels = deepest;
    match Db::open("/o", fewer) {
        Err(Error::InvalidOptions { option, .. }) => assert_eq!(option, "compaction.max_levels"),
        other => panic!("{other:?}"),
    }
    // A stored OPTIONS file naming another comparator is refused, naming the option.
    let name = fs
        .list(Path::new("/o"))
        .unwrap()
        .into_iter()
        .find(|n| n.starts_with("OPTIONS-"))
        .unwrap();
    let path = Path::new("/o").join(name);
    let text = String::from_utf8(cairn::env::read_all(&fs, &path).unwrap()).unwrap();
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with("checksum="))
        .map(|l| format!("{l}\n"))
        .collect();
    let body = body.replace("comparator=bytewise", "comparator=reverse");
    let crc = cairn::format::masked_crc(&[body.as_bytes()]);
    cairn::env::write_all_synced(&fs, &path, format!("{body}checksum={crc:08x}\n").as_bytes()).unwrap();
    match Db::open("/o", o) {
        Err(Error::InvalidOptions { option, .. }) => assert_eq!(option, "comparator"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn failed_fsync_poisons_the_database() {
    let fs = FaultFs::new(Arc::new(MemFs::new()), 1);
    let db = Db::open("/p", small(Arc::new(fs.clone()))).unwrap();
    db.put(b"a", b"1").unwrap();
    // The live WAL's sync only: the next WAL, prepared in the background, syncs too, and a
    // fault there poisons the database before the write (whose answer is then `Poisoned`).
    // The live WAL is the newest `.wal`; the file system knows it by the name it was
    // created under (`NNNNNN.wal.tmp`), which the prefix matches.
    let live = fs
        .list(Path::new("/p"))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".wal"))
        .max()
        .unwrap();
    fs.fail_matching(OpClass::Sync, None, &live, 0, FaultKind::Eio);
    let e = db.write(
        {
            let mut b = WriteBatch::new();
            b.put(b"b", b"2");
            b
        },
        &WriteOptions {
            sync: true,
            ..Default::default()
        },
    );
    assert!(matches!(e, Err(Error::Io { .. })), "{e:?}");
    fs.clear_faults();
    // Read-only from now on, never retried.
    assert!(matches!(db.put(b"c", b"3"), Err(Error::Poisoned(_))));
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    drop(db);
    let db = Db::open("/p", small(Arc::new(fs.clone()))).unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    db.put(b"c", b"3").unwrap();
}

fn load(policy: MergePolicyKind, n: u32) -> (usize, f64) {
    let fs = MemFs::new();
    let o = {
        let mut o = Options {
            fs: Arc::new(fs),
            ..Options::default()
        };
        o.compaction.merge_policy = policy;
        o.memory.fixed_mut().memtable_size = 64 << 10;
        o.memory.fixed_mut().write_memory = 256 << 10;
        o.compaction.max_bytes_for_level_base = 256 << 10;
        o.compaction.target_file_size = 64 << 10;
        o.compaction.size_ratio = 4.0;
        o.compaction.max_levels = 12;
        o.memory.fixed_mut().block_cache = cairn::CacheSource::Own(1 << 20);
        o
    };
    let db = Db::open("/g", o).unwrap();
    let mut rng = StdRng::seed_from_u64(5);
    for _ in 0..n {
        db.put(k(rng.gen_range(0..n * 4)), [9u8; 100]).unwrap();
    }
    db.flush_all().unwrap();
    db.wait_for_background().unwrap();
    let levels = db.levels()[0].levels.len() - 1;
    (levels, db.stats().write_amplification())
}

/// Garnering at c = 0.4 shapes the same data into fewer levels than leveling.
#[test]
fn garnering_ends_with_fewer_levels_than_leveling() {
    let n = 150_000;
    let (lev, wa_lev) = load(MergePolicyKind::Leveling, n);
    let (gar, wa_gar) = load(MergePolicyKind::Garnering { c: 0.4 }, n);
    println!("leveling: deepest level L{lev}, write-amp {wa_lev:.2}; garnering c=0.4: L{gar}, write-amp {wa_gar:.2}");
    assert!(lev >= 4, "the load must reach at least 4 leveling levels (got {lev})");
    assert!(gar < lev, "garnering {gar} levels vs leveling {lev}");
}

/// A tree written once and then left alone pins its WAL until the total WAL size passes
/// `max_wal_size` (given, or 0: 4 × write memory, here 256 KiB); then the log-triggered flush
/// frees it and old WALs are deleted.
#[test]
fn max_wal_size_triggers_flush_and_wal_deletion() {
    for max_wal_size in [64 << 10, 0] {
        let fs = MemFs::new();
        let o = {
            let mut o = small(Arc::new(fs.clone()));
            o.wal.max_size = max_wal_size;
            o
        };
        let db = Db::open("/m", o).unwrap();
        let cold = db.tree("cold").unwrap();
        cold.put(b"x", b"once").unwrap();
        for i in 0..20_000 {
            db.put(k(i % 500), [1u8; 40]).unwrap();
        }
        db.wait_for_background().unwrap();
        let wals = || {
            fs.list(Path::new("/m"))
                .unwrap()
                .into_iter()
                .filter(|n| n.ends_with(".wal"))
                .count()
        };
        assert!(
            wals() <= 3,
            "max_wal_size {max_wal_size}: old WALs must be deleted, found {}",
            wals()
        );
        let l0_cold: usize = db.levels()[1].levels.iter().map(|l| l.files).sum();
        assert_eq!(
            l0_cold, 1,
            "max_wal_size {max_wal_size}: the cold tree was flushed by the WAL-size trigger"
        );
        assert_eq!(cold.get(b"x").unwrap().as_deref(), Some(&b"once"[..]));
    }
}

/// WALs holding more than write memory (reopened with less of it) are replayed a memtable at
/// a time: several tables written by the open, the newest version of each key (and its
/// deletion) still wins.
#[test]
fn recovery_spills_replay_past_write_memory() {
    let fs = MemFs::new();
    let opts = |write_buffer: usize| {
        let mut o = common::small(Arc::new(fs.clone()), write_buffer);
        o.wal.max_size = 1 << 40;
        o
    };
    // The largest file number in the directory (`.wal` files only with `wal_only`).
    let newest = |wal_only: bool| {
        fs.list(Path::new("/r"))
            .unwrap()
            .into_iter()
            .filter(|n| !wal_only || n.ends_with(".wal"))
            .filter_map(|n| n.split('.').next().and_then(|d| d.parse::<u64>().ok()))
            .max()
            .unwrap()
    };
    let db = Db::open("/r", opts(1 << 20)).unwrap();
    for round in 0..3u32 {
        for i in 0..2000 {
            db.put(k(i), format!("v{round}-{i:0>60}")).unwrap();
        }
    }
    for i in (0..2000).step_by(7) {
        db.delete(k(i)).unwrap();
    }
    assert!(
        db.levels()[0].levels.iter().all(|l| l.files == 0),
        "everything is still in the memtable"
    );
    // After close, the handles that remain get `Closed` (a tree's too), for reads and writes.
    let (other, tree) = (db.clone(), db.tree("default").unwrap());
    db.close().unwrap();
    assert!(matches!(other.get(k(1)), Err(Error::Closed)));
    assert!(matches!(other.put(k(1), "v"), Err(Error::Closed)));
    assert!(matches!(tree.get(k(1)), Err(Error::Closed)));
    drop((other, tree));
    let before = newest(false);

    let db = Db::open("/r", opts(16 << 10)).unwrap();
    // The open numbers the tables it writes before its new WAL (compaction comes later).
    let tables = newest(true) - before - 1;
    assert!(
        tables >= 8,
        "≈ 560 KiB replayed in 16 KiB memtables: expected many tables, the open wrote {tables}"
    );
    for i in 0..2000 {
        let want = (i % 7 != 0).then(|| format!("v2-{i:0>60}").into_bytes());
        assert_eq!(db.get(k(i)).unwrap(), want, "key {i}");
    }
}

/// Closing writes a partitioned component's memory to L0, so the next open replays nothing
/// (its WALs hold every version the memory merges dropped); a monolithic one is replayed.
#[test]
fn close_flushes_a_partitioned_component() {
    for partitioned in [false, true] {
        let fs = MemFs::new();
        let opts = || {
            let mut o = common::small(Arc::new(fs.clone()), 64 << 10);
            o.wal.max_size = 1 << 40;
            o.memtable.component = if partitioned {
                cairn::MemoryComponent::Partitioned
            } else {
                cairn::MemoryComponent::Monolithic
            };
            o
        };
        let db = Db::open("/c", opts()).unwrap();
        for round in 0..3u32 {
            for i in 0..1000 {
                db.put(k(i), format!("v{round}-{i:0>60}")).unwrap();
            }
        }
        db.close().unwrap();
        // The numbers of the directory's files whose names end with `suffix`.
        let numbers = |suffix: &str| -> Vec<u64> {
            fs.list(Path::new("/c"))
                .unwrap()
                .into_iter()
                .filter(|n| n.ends_with(suffix))
                .filter_map(|n| n.split('.').next().and_then(|d| d.parse::<u64>().ok()))
                .collect()
        };
        let before = numbers("").into_iter().max().unwrap();
        let db = Db::open("/c", opts()).unwrap();
        // The open numbers the tables it writes before its new WAL (counting numbers rather
        // than bytes written leaves out the compactions that may start right after it). The
        // gap in numbers may also hold the spare WAL the background made before the close (a
        // number taken, its file removed by the close): enough to show that tables were
        // written, not that none were — for that, the tables in the gap are counted by name
        // (one that a compaction right after the open had already deleted would go unseen).
        let live = numbers(".wal").into_iter().max().unwrap();
        let gap = live - before - 1;
        let tables = numbers(".sst").into_iter().filter(|&n| n > before && n < live).count();
        for i in 0..1000 {
            assert_eq!(db.get(k(i)).unwrap(), Some(format!("v2-{i:0>60}").into_bytes()));
        }
        if partitioned {
            assert_eq!(tables, 0, "nothing left to replay, yet the open wrote {tables} tables");
        } else {
            assert!(
                gap >= 1,
                "the memtable is replayed and flushed at open ({gap} numbers taken)"
            );
        }
    }
}

/// Per-file access records count probes, filter negatives and hits exactly.
#[test]
fn per_file_access_records_and_no_filter_option() {
    for bpk in [10.0, 0.0] {
        let fs = MemFs::new();
        let o = {
            let mut o = small(Arc::new(fs));
            o.filters.policy = BpkPolicy::Uniform.into();
            o.filters.bits_per_key = bpk;
            o
        };
        let db = Db::open("/f", o).unwrap();
        for i in 0..1000 {
            db.put(k(i * 2), b"v").unwrap();
        }
        db.flush_all().unwrap();
        db.wait_for_background().unwrap();
        let before = db.stats();
        for i in 0..1000 {
            assert!(db.get(k(i * 2)).unwrap().is_some());
            assert!(db.get(k(i * 2 + 1)).unwrap().is_none()); // absent, inside every file's range
        }
        let s = db.stats();
        let probes: u64 =
            s.files.iter().map(|f| f.probes).sum::<u64>() - before.files.iter().map(|f| f.probes).sum::<u64>();
        let found: u64 = s.files.iter().map(|f| f.found).sum();
        let negatives: u64 = s.files.iter().map(|f| f.filter_negatives).sum();
        assert_eq!(found, 1000, "bpk {bpk}");
        // Absent keys in gaps between files (or past the last key) are not probed at all.
        assert!(probes >= 1900, "bpk {bpk}: {probes}");
        assert!(s
            .files
            .iter()
            .all(|f| f.filter_bpk == bpk && f.filter_policy == "uniform"));
        let unnecessary = s.total(|l| l.unnecessary_data_reads);
        if bpk > 0.0 {
            assert!(
                negatives > 950,
                "10 bits per key rule out most absent keys: {negatives}"
            );
            assert!(unnecessary < 50);
        } else {
            assert_eq!(negatives, 0);
            assert!(
                unnecessary >= 990,
                "without filters every probed absent key reads a block: {unnecessary}"
            );
        }
    }
}

/// Damage to any synced manifest edit, including the last one, is reported as corruption
/// naming the manifest; damage to the trailing marker record is harmless.
#[test]
fn manifest_damage_is_detected_even_in_the_last_edit() {
    use cairn::env::{read_all, write_all_synced, ReadOptions};
    use cairn::wal::{RecoveryMode, WalReader};
    let fs = MemFs::new();
    let db = Db::open("/md", small(Arc::new(fs.clone()))).unwrap();
    for round in 0..3u32 {
        for i in 0..100 {
            db.put(k(i + round * 1000), b"v").unwrap();
        }
        db.flush_all().unwrap();
    }
    db.close().unwrap();
    let (number, path) = cairn::version::manifest::read_current(&fs, Path::new("/md")).unwrap();
    let orig = read_all(&fs, &path).unwrap();
    // Record offsets and whether each is a real edit or an empty marker.
    let f = fs.open_read(&path, ReadOptions::default()).unwrap();
    let mut r = WalReader::new(f, &path, number, RecoveryMode::AbsoluteConsistency);
    let mut records = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        records.push((rec.offset, rec.end_offset, rec.body.is_empty()));
    }
    assert!(
        records.len() >= 4 && records.last().unwrap().2,
        "edits end with a marker: {records:?}"
    );
    let last = records.len() - 1;
    for (i, &(start, end, marker)) in records.iter().enumerate() {
        // Only the final marker is unproven; every earlier record was synced before later ones.
        let harmless = marker && i == last;
        let mut d = orig.clone();
        // Flip a byte inside the record's payload (past the 7-byte header and 16-byte prefix).
        let at = (start + 7 + 16).min(end - 1) as usize;
        d[at] ^= 0x40;
        write_all_synced(&fs, &path, &d).unwrap();
        match Db::open("/md", small(Arc::new(fs.clone()))) {
            Err(Error::Corruption { file, .. }) => {
                assert!(!harmless, "a damaged final marker must not fail the open");
                assert_eq!(file, path);
            }
            Ok(db) => {
                assert!(harmless, "damage to the record at {start} was not detected");
                assert_eq!(db.iter().count(), 300, "all data survives a damaged marker");
            }
            Err(e) => panic!("unexpected error {e}"),
        }
        write_all_synced(&fs, &path, &orig).unwrap();
    }
}

/// A range pins what it reads when it is created: a compaction that runs before its first step
/// must not remove the versions it is meant to see.
#[test]
fn range_pins_its_version_at_creation() {
    let fs = MemFs::new();
    let db = Db::open("/pin", small(Arc::new(fs))).unwrap();
    db.put(b"k", b"old").unwrap();
    db.flush_all().unwrap();
    let fwd = db.iter();
    let back = db.iter();
    db.put(b"k", b"new").unwrap();
    db.compact_range::<&[u8], _>(..).unwrap(); // no snapshot: "old" is dropped from the files
    assert_eq!(
        fwd.map(|r| r.unwrap()).collect::<Vec<_>>(),
        vec![(b"k".to_vec(), b"old".to_vec())]
    );
    assert_eq!(
        back.rev().map(|r| r.unwrap()).collect::<Vec<_>>(),
        vec![(b"k".to_vec(), b"old".to_vec())]
    );
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"new"[..]));
}

type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// Keys with many versions (more than the cursor steps over one by one before it seeks past
/// the rest), read forward and backward at several snapshots, in memtables and in tables.
#[test]
fn iteration_over_keys_with_many_versions() {
    let db = Db::open("/v", small(Arc::new(MemFs::new()))).unwrap();
    let mut model: Vec<(cairn::Snapshot, State)> = Vec::new();
    let mut now = BTreeMap::new();
    let mut rng = StdRng::seed_from_u64(9);
    for round in 0..40u32 {
        for _ in 0..50 {
            // Three hot keys take most writes; their neighbours few.
            let key = k(if rng.gen_bool(0.8) {
                10 * rng.gen_range(1..4)
            } else {
                rng.gen_range(0..50)
            });
            if rng.gen_bool(0.15) {
                db.delete(&key).unwrap();
                now.remove(&key);
            } else {
                let v = format!("v{round}-{}", rng.gen::<u16>()).into_bytes();
                db.put(&key, &v).unwrap();
                now.insert(key, v);
            }
        }
        if round % 8 == 0 {
            model.push((db.snapshot(), now.clone()));
        }
        if round == 25 {
            db.flush_all().unwrap();
        }
    }
    model.push((db.snapshot(), now));
    for (snap, expect) in &model {
        let fwd: Vec<_> = snap.iter().map(|r| r.unwrap()).collect();
        assert_eq!(
            fwd,
            expect.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<_>>()
        );
        let rev: Vec<_> = snap.iter().rev().map(|r| r.unwrap()).collect();
        assert_eq!(
            rev,
            expect
                .iter()
                .rev()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Vec<_>>()
        );
        // Bounded ranges that start or end on a hot key.
        let (lo, hi) = (k(10), k(30));
        let got: Vec<_> = snap
            .range(lo.clone()..=hi.clone())
            .rev()
            .map(|r| r.unwrap().0)
            .collect();
        let want: Vec<_> = expect
            .range(lo.clone()..=hi.clone())
            .rev()
            .map(|(k, _)| k.clone())
            .collect();
        assert_eq!(got, want);
        let got: Vec<_> = snap.range(lo.clone()..hi.clone()).map(|r| r.unwrap().0).collect();
        let want: Vec<_> = expect.range(lo..hi).map(|(k, _)| k.clone()).collect();
        assert_eq!(got, want);
    }
}

/// The child half of `a_second_process_gets_a_locked_error`: opens the directory it is given.
#[test]
fn lock_probe_child() {
    let Some(dir) = std::env::var_os("CAIRN_LOCK_PROBE_DIR") else {
        return;
    };
    match Db::open(Path::new(&dir), Options::default()) {
        Err(e @ Error::Locked(_)) => println!("PROBE-LOCKED: {e}"),
        other => println!("PROBE-OTHER: {other:?}"),
    }
}

#[test]
fn a_second_process_gets_a_locked_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db");
    let db = Db::open(&p, Options::default()).unwrap();
    db.put(b"k", b"v").unwrap();
    let probe = |dir: &Path| {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "lock_probe_child", "--nocapture", "--test-threads", "1"])
            .env("CAIRN_LOCK_PROBE_DIR", dir)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let out = probe(&p);
    // The harness prints "test lock_probe_child ... " before the probe's own line.
    let line = out
        .split_once("PROBE-")
        .map(|(_, l)| format!("PROBE-{}", l.lines().next().unwrap_or("")))
        .unwrap_or_default();
    assert!(line.starts_with("PROBE-LOCKED:"), "{out}");
    assert!(line.contains("LOCK") || line.to_lowercase().contains("lock"), "{line}");
    println!("{line}");
    drop(db);
    // Released with the handle: the next process opens it.
    let out = probe(&p);
    assert!(out.contains("PROBE-OTHER: Ok("), "second probe: {out}");
}

/// `background.compaction_nice` lowers the compaction threads' CPU priority (Linux: per thread)
/// and leaves the flush thread's.
#[cfg(target_os = "linux")]
#[test]
fn compaction_threads_run_at_the_nice_value_asked_for() {
    // (name, nice) of this process's threads.
    fn threads() -> Vec<(String, i64)> {
        let mut v = Vec::new();
        for e in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let (Ok(comm), Ok(stat)) = (
                std::fs::read_to_string(e.path().join("comm")),
                std::fs::read_to_string(e.path().join("stat")),
            ) else {
                continue; // the thread ended meanwhile
            };
            // Fields after the command name: state is field 3, nice field 19.
            let rest = &stat[stat.rfind(')').unwrap() + 1..];
            let nice = rest.split_whitespace().nth(16).unwrap().parse().unwrap();
            v.push((comm.trim().to_string(), nice));
        }
        v
    }
    let mut o = small(Arc::new(MemFs::new()));
    o.set("background.compaction_nice", "13").unwrap();
    let db = Db::open("/n", o).unwrap();
    // The threads set it as they start: wait for it (bounded).
    let mut found = false;
    for _ in 0..2000 {
        if threads()
            .iter()
            .any(|(n, nice)| n.starts_with("cairn-compact") && *nice == 13)
        {
            found = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(found, "no compaction thread at nice 13: {:?}", threads());
    assert!(
        threads().iter().all(|(n, nice)| !(n == "cairn-flush" && *nice == 13)),
        "a flush thread was lowered too"
    );
    drop(db);
    let mut o = small(Arc::new(MemFs::new()));
    o.set("background.compaction_nice", "20").unwrap();
    match Db::open("/m", o) {
        Err(Error::InvalidOptions { option, .. }) => assert_eq!(option, "background.compaction_nice"),
        other => panic!("nice 20: {other:?}"),
    }
}

/// Point lookups through many L0 files and a deeper level: every key is found in its own
/// file, the newest version wins and deleted or absent keys stay absent.
#[test]
fn lookups_through_many_l0_files() {
    let fs = MemFs::new();
    let mut o = small(Arc::new(fs));
    o.compaction.l0_trigger = 64;
    o.compaction.l0_drain_ms = 0; // the L0 files stay however long the test takes
    o.write_stalls.l0_slowdown_trigger = 128;
    o.write_stalls.l0_stop_trigger = 256;
    let db = Db::open("/p", o).unwrap();
    // A deeper level first: one table compacted out of L0.
    db.put(b"deep", b"deep").unwrap();
    db.put(b"shared", b"deep").unwrap();
    db.flush_all().unwrap();
    db.compact_range::<&[u8], _>(..).unwrap();
    for round in 0..14u32 {
        db.put(k(round), format!("v{round}")).unwrap();
        db.put(b"shared", format!("r{round}")).unwrap();
        if round == 12 {
            db.delete(k(3)).unwrap();
        }
        db.flush_all().unwrap();
    }
    let levels = &db.levels()[0].levels;
    assert_eq!(levels[0].files, 14, "{levels:?}");
    assert!(levels.iter().skip(1).map(|l| l.files).sum::<usize>() >= 1, "{levels:?}");
    for round in 0..14u32 {
        let want = (round != 3).then(|| format!("v{round}").into_bytes());
        assert_eq!(db.get(k(round)).unwrap(), want, "round {round}");
    }
    assert_eq!(db.get(b"shared").unwrap().as_deref(), Some(&b"r13"[..]));
    assert_eq!(db.get(b"deep").unwrap().as_deref(), Some(&b"deep"[..]));
    assert_eq!(db.get(k(99)).unwrap(), None);
}

/// Once writes stop, two or more L0 files (fewer than the trigger) are merged into L1
/// (`compaction.l0_drain_ms`): `wait_for_background` asks for that drain at once, a write
/// withdraws the ask, one L0 file stays, and with the drain off the files stay. Every key
/// reads the same before and after.
#[test]
fn l0_files_below_the_trigger_are_drained_once_writes_stop() {
    // (drain ms, flushes, L0 files after the wait). A minute: no timed drain within the test.
    for (drain_ms, flushes, left) in [(60_000u64, 3usize, 0usize), (60_000, 1, 1), (0, 3, 3)] {
        let fs = MemFs::new();
        let mut o = small(Arc::new(fs));
        o.compaction.l0_trigger = 4;
        o.compaction.l0_drain_ms = drain_ms;
        let db = Db::open("/d", o).unwrap();
        db.put(b"deep", b"1").unwrap();
        db.flush_all().unwrap();
        db.compact_range::<&[u8], _>(..).unwrap();
        for round in 0..flushes as u32 {
            db.put(k(round), format!("v{round}")).unwrap();
            db.put(b"deep", format!("r{round}")).unwrap();
            db.flush_all().unwrap();
        }
        assert_eq!(db.levels()[0].levels[0].files, flushes, "before the wait");
        db.wait_for_background().unwrap();
        let levels = &db.levels()[0].levels;
        assert_eq!(
            levels[0].files, left,
            "drain {drain_ms} ms, {flushes} flushes: {levels:?}"
        );
        for round in 0..flushes as u32 {
            assert_eq!(db.get(k(round)).unwrap(), Some(format!("v{round}").into_bytes()));
        }
        let last = format!("r{}", flushes - 1).into_bytes();
        assert_eq!(db.get(b"deep").unwrap(), Some(last));
    }
}

/// Without a wait, the drain comes by itself once no write has come for
/// `compaction.l0_drain_ms` (here 1 ms; the test polls for up to a minute).
#[test]
fn l0_is_drained_by_itself_after_writes_stop() {
    let fs = MemFs::new();
    let mut o = small(Arc::new(fs));
    o.compaction.l0_trigger = 4;
    o.compaction.l0_drain_ms = 1;
    let db = Db::open("/t", o).unwrap();
    for round in 0..3u32 {
        db.put(k(round), format!("v{round}")).unwrap();
        db.flush_all().unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while db.levels()[0].levels[0].files > 1 {
        assert!(std::time::Instant::now() < deadline, "{:?}", db.levels());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    for round in 0..3u32 {
        assert_eq!(db.get(k(round)).unwrap(), Some(format!("v{round}").into_bytes()));
    }
}

/// A lone L0 file stays while only point lookups come (a filter probe each) and drains once a
/// range read came (each seek reads a block of it): at a wait for background work, and by
/// itself once writes are quiet (the readahead thread wakes the compaction thread; the test
/// polls for up to a minute).
#[test]
fn a_lone_l0_file_drains_once_range_reads_come() {
    for drain_ms in [60_000u64, 1] {
        let fs = MemFs::new();
        let mut o = small(Arc::new(fs));
        o.compaction.l0_trigger = 4;
        o.compaction.l0_drain_ms = drain_ms;
        let db = Db::open("/d", o).unwrap();
        for i in 0..500 {
            db.put(k(i), b"old").unwrap();
        }
        db.flush_all().unwrap();
        db.compact_range::<&[u8], _>(..).unwrap();
        db.put(k(7), b"new").unwrap();
        db.flush_all().unwrap();
        let l0 = |db: &Db| db.levels()[0].levels[0].files;
        if drain_ms > 1 {
            assert_eq!(db.get(k(7)).unwrap().as_deref(), Some(&b"new"[..]));
            db.wait_for_background().unwrap();
            assert_eq!(l0(&db), 1, "point lookups only: the file stays");
        }
        assert_eq!(db.range(k(5)..).take(3).count(), 3);
        if drain_ms > 1 {
            db.wait_for_background().unwrap();
            assert_eq!(l0(&db), 0, "{:?}", db.levels());
        } else {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while l0(&db) > 0 {
                assert!(std::time::Instant::now() < deadline, "{:?}", db.levels());
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
        assert_eq!(db.get(k(7)).unwrap().as_deref(), Some(&b"new"[..]));
        assert_eq!(db.get(k(8)).unwrap().as_deref(), Some(&b"old"[..]));
    }
}

/// What a range read costs is counted per seek: the runs its iterator merges, the tables it
/// reaches, the entries it returns, and the readahead a long scan reads and serves.
#[test]
fn scan_statistics_count_runs_tables_entries_and_readahead() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let mut o = small(fs);
    o.table.block_size = 1024;
    let db = Db::open("/db", o).unwrap();
    for i in 0..4000 {
        db.put(k(i), [7u8; 100]).unwrap();
    }
    db.flush_all().unwrap();
    db.compact_range::<&[u8], _>(..).unwrap();
    // One key in the memtable, one table in L0 over part of the range.
    for i in 0..50 {
        db.put(k(i * 2), [8u8; 100]).unwrap();
    }
    db.flush_all().unwrap();
    db.put(k(1), b"new").unwrap();
    let scans = |db: &Db| db.stats().trees[0].scans;
    let before = scans(&db);
    assert_eq!(db.range(k(0)..k(10)).count(), 10);
    let one = scans(&db) - before;
    assert_eq!((one.seeks, one.entries), (1, 10), "{one:?}");
    assert!(one.memtables >= 1 && one.l0_runs == 1 && one.levels >= 1, "{one:?}");
    assert!(one.tables >= 2, "an L0 table and a level's: {one:?}");
    // Both ends: two seeks; a read dropped after two entries counts two.
    let before = scans(&db);
    let mut r = db.range(k(100)..k(200));
    r.next().unwrap().unwrap();
    r.next_back().unwrap().unwrap();
    drop(r);
    let two = scans(&db) - before;
    assert_eq!((two.seeks, two.entries), (2, 2), "{two:?}");
    // A whole scan reads ahead once it runs sequentially, and serves what it read.
    let io_before = db.stats().io;
    assert_eq!(db.iter().count(), 4000);
    let ra = (db.stats().io - io_before).readahead;
    assert!(ra.chunks > 0 && ra.served > 0 && ra.served <= ra.bytes, "{ra:?}");
}

#[test]
fn lent_entries_from_both_ends_meet_once() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = Db::open("/db", small(fs)).unwrap();
    for i in 0..300 {
        db.put(k(i), format!("v{i}")).unwrap();
    }
    db.flush_all().unwrap();
    for i in (0..300).step_by(3) {
        db.put(k(i), format!("w{i}")).unwrap();
    }
    let mut r = db.range(k(10)..k(20));
    let mut got = Vec::new();
    for turn in 0.. {
        let e = match turn % 3 {
            0 => r.next_entry().map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec()))),
            1 => r.next_back_entry().map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec()))),
            _ => r.next(),
        };
        match e {
            Some(e) => got.push(e.unwrap()),
            None => break,
        }
    }
    got.sort();
    let want: Vec<_> = (10..20)
        .map(|i| (k(i), format!("{}{i}", if i % 3 == 0 { 'w' } else { 'v' }).into_bytes()))
        .collect();
    assert_eq!(got, want);
    assert!(r.next_entry().is_none() && r.next_back_entry().is_none());
}

#[test]
fn seeks_read_ahead_as_far_as_their_level_scans() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let mut o = small(fs);
    o.table.block_size = 4096;
    o.compaction.target_file_size = 4 << 20;
    let db = Db::open("/db", o).unwrap();
    for i in 0..50000 {
        db.put(k(i), [7u8; 100]).unwrap();
    }
    db.flush_all().unwrap();
    db.compact_range::<&[u8], _>(..).unwrap();
    // 100 scans of `take` entries, each over blocks of its own (the cache keeps every block
    // read).
    let scans = |from: u32, take: usize| {
        let before = db.stats().io;
        for i in 0..100 {
            let lo = from + i * 150;
            assert_eq!(db.range(k(lo)..).take(take).count(), take);
        }
        db.stats().io - before
    };
    // 100 entries: three or four blocks. Without readahead at the seek, a scan reads its first
    // two blocks alone and the rest in a chunk (`sst/trailer.rs` tests); once the controller
    // has seen such scans, the seek's read holds them all. (The first scans' reads are not
    // asserted: the background controller may publish while they run.)
    let data_reads = |io: &cairn::stats::IoSnapshot| io.data.reads - io.readahead.blocks + io.readahead.chunks;
    scans(0, 100);
    db.tune_readahead();
    let then = scans(15000, 100);
    assert!(data_reads(&then) <= 150, "{then:?}");
    assert!(
        then.readahead.chunks >= 100 && then.readahead.wasted() < then.readahead.served,
        "{then:?}"
    );
    // Seeks turn point-like: a few periods later they read their block alone again.
    for round in 0..6 {
        scans(35000 + round * 10, 1);
        db.tune_readahead();
    }
    // (Blocks no scan read yet.)
    let point = scans(35100, 1);
    assert!(data_reads(&point) >= 100, "{point:?}");
    assert_eq!(point.readahead.chunks, 0, "{point:?}");
}
