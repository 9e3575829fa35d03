//! Checkpoints: taken while a writer runs, they open as a prefix of its history (nothing
//! acknowledged before the call is missing, nothing is half there); on a real directory tables
//! are hard links; the source goes on compacting and deleting files without harming the copy;
//! a non-empty target is refused.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::{FileSystem, MemFs, StdFs};
use cairn::Db;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:08}").into_bytes()
}

/// A writer puts k0, k1, … (value = its number; every 7th also deletes an earlier key and every
/// 50th range-deletes ten) while checkpoints are taken; each must hold a prefix of the history.
fn run(fs: Arc<dyn FileSystem>, root: &Path) {
    let mut o = common::small(fs.clone(), 64 << 10);
    o.compaction.l0_trigger = 2;
    let db = Db::open(root.join("db"), o.clone()).unwrap();
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (db, acked, stop) = (db.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) || i < 3000 {
                let mut b = cairn::WriteBatch::new();
                b.put(key(i), i.to_le_bytes());
                if i % 7 == 6 {
                    b.delete(key(i - 3));
                }
                if i % 50 == 49 {
                    b.delete_range(key(i - 30), key(i - 20));
                }
                db.write(b, &Default::default()).unwrap();
                i += 1;
                acked.store(i, Ordering::Release);
            }
        })
    };
    let deleted = |i: u64, upto: u64| -> bool {
        // Deleted by the batch of some j < upto: j = i + 3 (j % 7 == 6), or a range of j.
        let by_delete = i + 3 < upto && (i + 3) % 7 == 6;
        let by_range = (i + 21..=i + 30).any(|j| j % 50 == 49 && j < upto);
        by_delete || by_range
    };
    for round in 0..4 {
        std::thread::sleep(std::time::Duration::from_millis(30));
        let before = acked.load(Ordering::Acquire);
        let dir = root.join(format!("cp{round}"));
        let info = db.checkpoint(&dir).unwrap();
        let after = acked.load(Ordering::Acquire);
        assert!(info.tables > 0 || round == 0, "{info:?}");
        let cp = Db::open(&dir, o.clone()).unwrap();
        // The prefix it holds: the highest key present.
        let all: Vec<(Vec<u8>, Vec<u8>)> = cp.iter().map(|r| r.unwrap()).collect();
        let n = all.last().map_or(0, |(k, _)| {
            std::str::from_utf8(&k[1..]).unwrap().parse::<u64>().unwrap() + 1
        });
        assert!(
            n >= before && n <= after + 1,
            "round {round}: {n} keys, {before}..={after} acknowledged"
        );
        let want: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
            .filter(|&i| !deleted(i, n))
            .map(|i| (key(i), i.to_le_bytes().to_vec()))
            .collect();
        assert_eq!(all.len(), want.len(), "round {round}");
        assert!(
            all == want,
            "round {round}: the checkpoint is not the history's prefix of {n}"
        );
        cp.close().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    // The source compacts and deletes its files; the checkpoints still open.
    db.compact_range::<&[u8], _>(..).unwrap();
    db.close().unwrap();
    let cp = Db::open(root.join("cp3"), o.clone()).unwrap();
    assert!(cp.iter().count() > 0);
    cp.close().unwrap();
    // A directory that holds anything is refused.
    let e = Db::open(root.join("db"), o)
        .unwrap()
        .checkpoint(root.join("cp0"))
        .unwrap_err();
    assert!(e.to_string().contains("not empty"), "{e}");
}

#[test]
fn checkpoints_in_memory() {
    run(Arc::new(MemFs::new()), Path::new("/root"));
}

#[test]
fn checkpoints_on_disk_link_tables() {
    let tmp = tempfile::tempdir().unwrap();
    run(Arc::new(StdFs::new()), tmp.path());
    // Hard links: a checkpoint's tables are the source's inodes while both exist.
    let fs = StdFs::new();
    let o = common::small(Arc::new(fs), 64 << 10);
    let db = Db::open(tmp.path().join("db2"), o).unwrap();
    for i in 0..2000u64 {
        db.put(key(i), [7u8; 100]).unwrap();
    }
    db.flush_all().unwrap();
    let info = db.checkpoint(tmp.path().join("cp-links")).unwrap();
    assert!(info.tables > 0 && info.linked == info.tables, "{info:?}");
    db.close().unwrap();
}

/// Successive backups share their tables; each restores to the state it was taken at; an
/// incomplete backup (no final line in its table list) is skipped by a restore.
#[test]
fn incremental_backups_and_restores() {
    let fs = MemFs::new();
    let o = || {
        let mut o = common::small(Arc::new(fs.clone()), 64 << 10);
        o.set("merge.operator", "uint64add").unwrap();
        // No compaction: the tables of one round are still there at the next backup.
        o.compaction.l0_trigger = 1000;
        o.write_stalls.l0_slowdown_trigger = 1000;
        o.write_stalls.l0_stop_trigger = 1000;
        o
    };
    let db = Db::open("/db", o()).unwrap();
    let mut states = Vec::new();
    for round in 0..3u64 {
        for i in 0..3000u64 {
            db.put(key(i + round * 1000), (i + round).to_le_bytes()).unwrap();
        }
        db.merge(b"counter", 1u64.to_le_bytes()).unwrap();
        db.delete_range(key(round * 10), key(round * 10 + 5)).unwrap();
        if round > 0 {
            db.flush_all().unwrap();
        }
        let info = db.backup("/backups").unwrap();
        assert_eq!(info.id, round + 1);
        if round == 2 {
            assert!(info.tables_shared > 0, "later backups share tables: {info:?}");
        }
        states.push(db.iter().map(|r| r.unwrap()).collect::<Vec<_>>());
    }
    // The newest backup restores to the newest state.
    let r = Db::restore_with(&fs, "/backups", "/restored").unwrap();
    assert_eq!(r.id, 3);
    let back = Db::open("/restored", o()).unwrap();
    assert_eq!(back.iter().map(|r| r.unwrap()).collect::<Vec<_>>(), states[2]);
    assert_eq!(back.get(b"counter").unwrap(), Some(3u64.to_le_bytes().to_vec()));
    back.close().unwrap();
    // A backup cut short (its list without the final line) is passed over.
    let info = db.backup("/backups").unwrap();
    let list = std::path::PathBuf::from(format!("/backups/backup-{:06}/TABLES", info.id));
    let text = String::from_utf8(cairn::env::read_all(&fs, &list).unwrap()).unwrap();
    let cut = &text[..text.rfind("end").unwrap()];
    cairn::env::write_all_synced(&fs, &list, cut.as_bytes()).unwrap();
    let r = Db::restore_with(&fs, "/backups", "/restored2").unwrap();
    assert_eq!(r.id, 3);
    // Into a directory that holds anything: refused.
    assert!(Db::restore_with(&fs, "/backups", "/restored").is_err());
    db.close().unwrap();
}
