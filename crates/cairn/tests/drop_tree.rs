//! `Db::drop_tree`: what a dropped tree's handles see, that its name is free, that its files
//! go, that it never comes back (reopen, manifest rotation, checkpoints, WAL records written
//! before the drop), that jobs running on it install nothing, and a power cut at every file
//! system operation around a drop.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::{CrashMode, FaultFs, FileSystem, MemFs};
use cairn::{Db, Error, Options, WriteOptions};
use common::{files, key, Model};
use std::path::Path;
use std::sync::Arc;

fn options(fs: Arc<dyn FileSystem>) -> Options {
    let mut o = common::small(fs, 4096);
    o.compaction.l0_trigger = 2;
    o
}

fn contents(t: &cairn::Tree) -> Model {
    t.iter().map(|r| r.unwrap()).collect()
}

/// Tables of tree `name`.
fn tables(db: &Db, name: &str) -> usize {
    db.levels()
        .iter()
        .filter(|t| t.name == name)
        .flat_map(|t| &t.levels)
        .map(|l| l.files)
        .sum()
}

fn is_dropped<T: std::fmt::Debug>(r: cairn::Result<T>) -> bool {
    matches!(r, Err(Error::TreeDropped { .. }))
}

#[test]
fn a_dropped_tree_refuses_its_handles_frees_its_name_and_its_files() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).unwrap();
    let keep = db.tree("keep").unwrap();
    let gone = db.tree("gone").unwrap();
    for i in 0..2000 {
        gone.put(key(i), [b'g'; 40]).unwrap();
        keep.put(key(i), [b'k'; 40]).unwrap();
    }
    db.flush_all().unwrap();
    gone.put(b"in-memory", b"only").unwrap();
    db.wait_for_background().unwrap();
    let gone_files: Vec<u64> = db
        .stats()
        .files
        .iter()
        .filter(|f| f.tree == gone.id())
        .map(|f| f.file)
        .collect();
    assert!(!gone_files.is_empty());
    let iter = gone.iter();

    db.drop_tree("gone").unwrap();
    assert_eq!(db.tree_names(), vec!["default".to_string(), "keep".to_string()]);
    assert!(is_dropped(gone.get(key(1))));
    assert!(is_dropped(gone.put(b"a", b"b")));
    assert!(is_dropped(gone.delete(b"a")));
    assert!(is_dropped(gone.flush()));
    assert!(gone.iter().next().is_some_and(is_dropped));
    // A batch naming it is refused whole: nothing of it is written.
    let mut b = cairn::WriteBatch::new();
    b.put_in(&keep, b"batch", b"x");
    b.put_in(&gone, b"batch", b"x");
    assert!(is_dropped(db.write(b, &WriteOptions::default())));
    assert_eq!(keep.get(b"batch").unwrap(), None);
    // An iterator opened before the drop reads on from its own view.
    assert_eq!(iter.count(), 2001);
    // Dropping it again, an unknown name, or the default tree: refused.
    assert!(matches!(db.drop_tree("gone"), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.drop_tree("never"), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.drop_tree("default"), Err(Error::InvalidArgument(_))));

    // Its tables are deleted once the iterator above, which held them, is gone (at the next
    // deletion of obsolete files: after a flush).
    keep.put(b"flush", b"x").unwrap();
    db.flush_all().unwrap();
    db.wait_for_background().unwrap();
    assert_eq!(tables(&db, "gone"), 0);
    let on_disk = files(&*fs, Path::new("/db"), ".sst");
    for n in gone_files {
        assert!(
            !on_disk.contains(&Path::new("/db").join(format!("{n:06}.sst"))),
            "table {n} of the dropped tree is left"
        );
    }
    // The name is free: a new tree under it starts empty, with a new id.
    let again = db.tree("gone").unwrap();
    assert!(again.id() > gone.id());
    assert_eq!(again.get(key(1)).unwrap(), None);
    again.put(b"new", b"1").unwrap();
    assert_eq!(contents(&keep).len(), 2001);
    drop((again, keep, gone, db));

    // Reopened (the WAL still holds the dropped tree's last write): still gone.
    let db = Db::open("/db", options(fs.clone())).unwrap();
    assert_eq!(
        db.tree_names(),
        vec!["default".to_string(), "keep".to_string(), "gone".to_string()]
    );
    let again = db.tree("gone").unwrap();
    assert_eq!(contents(&again), Model::from([(b"new".to_vec(), b"1".to_vec())]));
    assert_eq!(contents(&db.tree("keep").unwrap()).len(), 2001);
}

#[test]
fn dropped_ids_keep_their_place_through_rotations_and_checkpoints() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let mut o = options(fs.clone());
    o.files.max_manifest_size = 1024;
    let db = Db::open("/db", o.clone()).unwrap();
    let a = db.tree("a").unwrap();
    let b = db.tree("b").unwrap();
    let c = db.tree("c").unwrap();
    for i in 0..300 {
        a.put(key(i), b"a").unwrap();
        b.put(key(i), b"b").unwrap();
        c.put(key(i), b"c").unwrap();
    }
    db.flush_all().unwrap();
    db.drop_tree("b").unwrap();
    // Edits enough to rotate the manifest: its first edit snapshots the dropped id.
    for round in 0..20 {
        c.put(key(round), b"c2").unwrap();
        c.flush().unwrap();
    }
    db.wait_for_background().unwrap();
    db.checkpoint("/cp").unwrap();
    drop((a, b, c, db));
    for dir in ["/db", "/cp"] {
        let db = Db::open(dir, o.clone()).unwrap();
        assert_eq!(db.tree_names(), vec!["default", "a", "c"], "{dir}");
        let c = db.tree("c").unwrap();
        assert_eq!(c.id(), 3, "{dir}: c keeps its id");
        assert_eq!(c.get(key(5)).unwrap().as_deref(), Some(&b"c2"[..]), "{dir}");
        assert_eq!(c.get(key(200)).unwrap().as_deref(), Some(&b"c"[..]), "{dir}");
        assert_eq!(contents(&db.tree("a").unwrap()).len(), 300, "{dir}");
        assert!(contents(&db.tree("b").unwrap()).is_empty(), "{dir}: b never comes back");
    }
}

#[test]
fn a_tree_dropped_under_its_writers_and_compactions_installs_nothing_more() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).unwrap();
    let keep = db.tree("keep").unwrap();
    for round in 0..4 {
        let name = format!("busy{round}");
        let busy = db.tree(&name).unwrap();
        let writer = {
            let busy = busy.clone();
            std::thread::spawn(move || {
                // Writes until the drop refuses one (or a bound, should the drop come first).
                for i in 0..200_000u32 {
                    match busy.put(key(i % 5000), [b'x'; 64]) {
                        Ok(()) => {}
                        Err(Error::TreeDropped { .. }) => return i,
                        Err(e) => panic!("{e}"),
                    }
                }
                panic!("the drop never reached the writer");
            })
        };
        // Drop once flushes and compactions of it are under way (it has tables).
        while tables(&db, &name) < 3 {
            std::thread::yield_now();
        }
        db.drop_tree(&name).unwrap();
        let written = writer.join().unwrap();
        assert!(written > 0);
        db.wait_for_background().unwrap();
        assert!(is_dropped(busy.get(key(0))));
    }
    // Everything the drops left is unreferenced and gone; the database verifies and reopens.
    db.flush_all().unwrap();
    db.wait_for_background().unwrap();
    assert_eq!(db.tree_names(), vec!["default", "keep"]);
    drop((keep, db));
    let db = Db::open("/db", options(fs.clone())).unwrap();
    // Before any range read (a range read may drain a lone L0 file in the background).
    db.wait_for_background().unwrap();
    let live: usize = db.levels().iter().map(|t| tables(&db, &t.name)).sum();
    assert_eq!(
        live,
        files(&*fs, Path::new("/db"), ".sst").len(),
        "no table is left behind"
    );
    for round in 0..4 {
        assert!(contents(&db.tree(&format!("busy{round}")).unwrap()).is_empty());
    }
}

/// What a tree named "gone" may hold after a power cut: its contents before the drop (the
/// drop not durable), or a prefix of what the tree re-created under its name was given.
fn crash_run(k: Option<u64>) -> (u64, Outcome) {
    let fault = FaultFs::new(Arc::new(MemFs::new()), k.unwrap_or(0));
    if let Some(k) = k {
        fault.crash_at(k);
    }
    let fs: Arc<dyn FileSystem> = Arc::new(fault.clone());
    let mut o = options(fs.clone());
    o.files.max_manifest_size = 2048;
    let old: Model = (0..300).map(|i| (key(i), b"old".to_vec())).collect();
    let sync = WriteOptions {
        sync: true,
        ..Default::default()
    };
    let mut dropped = false;
    let mut recreated = 0u32;
    let run = |dropped: &mut bool, recreated: &mut u32| -> cairn::Result<()> {
        let db = Db::open("/db", o.clone())?;
        let gone = db.tree("gone")?;
        for (k, v) in &old {
            gone.put(k, v)?;
        }
        gone.flush()?;
        // Some of it only in the WAL at the drop.
        for i in 0..20 {
            gone.put(key(i), b"old")?;
        }
        db.sync_wal()?;
        db.drop_tree("gone")?;
        *dropped = true;
        let again = db.tree("gone")?;
        for i in 0..40 {
            let mut b = cairn::WriteBatch::new();
            b.put_in(&again, key(i), b"new");
            db.write(b, &sync)?;
            *recreated = i + 1;
        }
        again.flush()?;
        Ok(())
    };
    let ok = run(&mut dropped, &mut recreated).is_ok();
    let ops = fault.op_count();
    if k.is_none() {
        assert!(ok && recreated == 40);
        return (ops, Outcome::New);
    }
    fault.crash(CrashMode::DropUnsynced).unwrap();
    fault.restart();
    fault.clear_faults();
    let db = Db::open("/db", o).unwrap_or_else(|e| panic!("crash at op {k:?}: reopen failed: {e}"));
    let got = contents(&db.tree("gone").unwrap());
    let n = got.len() as u32;
    let old_prefix: Model = (0..n).map(|i| (key(i), b"old".to_vec())).collect();
    let outcome = if n > 0 && got == old_prefix {
        // Not dropped (then any prefix of its unsynced first writes may be there).
        assert!(
            !dropped,
            "crash at op {k:?}: the tree came back after its drop returned"
        );
        Outcome::Old
    } else {
        // Dropped: only the new tree's writes, a prefix holding every acknowledged one.
        let want: Model = (0..n).map(|i| (key(i), b"new".to_vec())).collect();
        assert_eq!(
            got, want,
            "crash at op {k:?}: neither the old tree nor a prefix of the new"
        );
        assert!(n >= recreated, "crash at op {k:?}: {n} of {recreated} synced writes");
        if n == 0 {
            Outcome::Empty
        } else {
            Outcome::New
        }
    };
    db.tree("gone").unwrap().put(b"after", b"crash").unwrap();
    db.flush_all().unwrap();
    (ops, outcome)
}

/// What a crash left under the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Outcome {
    /// The tree before the drop (or a prefix of its first writes).
    Old,
    /// Nothing: before the first write, or dropped before the new tree's first write.
    Empty,
    /// A prefix of the new tree's writes.
    New,
}

#[test]
fn a_power_cut_at_any_operation_of_a_drop_leaves_the_tree_whole_or_gone() {
    let (total, _) = crash_run(None);
    let mut seen = std::collections::HashMap::new();
    for k in 1..=total {
        *seen.entry(crash_run(Some(k)).1).or_insert(0) += 1;
    }
    println!("{total} crash points: {seen:?}");
    // The cuts fell before, inside and after the drop.
    assert!(seen.len() == 3, "{seen:?}");
}
