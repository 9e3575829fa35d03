//! `Db::open_read_only`: it sees tables and what the WALs hold, refuses every write, writes
//! and deletes nothing, and opens beside a writer — including one that is flushing,
//! compacting and rotating its manifest while the read-only opens run.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::{read_all, FileSystem, MemFs};
use cairn::{Db, Error, Options, WriteOptions};
use common::{contents, key, Model};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

const DIR: &str = "/ro";

fn options(fs: &MemFs) -> Options {
    let mut o = common::small(Arc::new(fs.clone()), 16 << 10);
    o.compaction.l0_trigger = 2;
    o.files.max_manifest_size = 4 << 10;
    o
}

/// Every file of the directory with its bytes.
fn snapshot(fs: &MemFs) -> BTreeMap<String, Vec<u8>> {
    let dir = Path::new(DIR);
    fs.list(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n != "LOCK")
        .map(|n| {
            let bytes = read_all(fs, &dir.join(&n)).unwrap();
            (n, bytes)
        })
        .collect()
}

/// A database with tables in several levels, a deletion, and writes only the WAL holds.
fn build(fs: &MemFs) -> Model {
    let db = Db::open(DIR, options(fs)).unwrap();
    let mut model = Model::new();
    for i in 0..3000u32 {
        let v = format!("v{i}-{}", "x".repeat(40)).into_bytes();
        db.put(key(i % 1500), &v).unwrap();
        model.insert(key(i % 1500), v);
    }
    db.flush_all().unwrap();
    db.wait_for_background().unwrap();
    db.delete(key(7)).unwrap();
    model.remove(&key(7));
    db.put(b"wal-only", b"yes").unwrap();
    model.insert(b"wal-only".to_vec(), b"yes".to_vec());
    let users = db.tree("users").unwrap();
    users.put(b"ada", b"1").unwrap();
    db.close().unwrap();
    model
}

#[test]
fn sees_everything_and_writes_nothing() {
    let fs = MemFs::new();
    let model = build(&fs);
    let before = snapshot(&fs);
    {
        let db = Db::open_read_only(DIR, options(&fs)).unwrap();
        assert_eq!(contents(&db), model);
        assert_eq!(db.get(b"wal-only").unwrap().as_deref(), Some(&b"yes"[..]));
        assert_eq!(db.tree_names(), vec!["default".to_string(), "users".to_string()]);
        let users = db.tree("users").unwrap();
        assert_eq!(users.get(b"ada").unwrap().as_deref(), Some(&b"1"[..]));

        let refused = |r: cairn::Result<()>, what: &str| {
            assert!(matches!(r, Err(Error::ReadOnly)), "{what}: {r:?}");
        };
        refused(db.put(b"k", b"v"), "put");
        refused(db.delete(b"k"), "delete");
        refused(
            db.write(cairn::WriteBatch::new(), &WriteOptions::default())
                .and_then(|()| {
                    let mut b = cairn::WriteBatch::new();
                    b.put(b"k", b"v");
                    db.write(b, &WriteOptions::default())
                }),
            "write",
        );
        refused(db.flush_all(), "flush");
        refused(db.compact_range::<Vec<u8>, _>(..), "compact_range");
        assert!(matches!(db.tree("new"), Err(Error::ReadOnly)));
        db.adjust_filters();
        db.close().unwrap();
    }
    assert_eq!(snapshot(&fs), before, "a read-only open changed the directory");
    // And the database opens for writing afterwards as before.
    let db = Db::open(DIR, options(&fs)).unwrap();
    assert_eq!(contents(&db), model);
}

#[test]
fn refuses_a_directory_without_a_database() {
    let fs = MemFs::new();
    let e = Db::open_read_only("/nothing", options(&fs)).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("no database")),
        "{e}"
    );
    assert!(
        !fs.exists(Path::new("/nothing")).unwrap(),
        "the open created the directory"
    );
    fs.create_dir_all(Path::new("/empty")).unwrap();
    let e = Db::open_read_only("/empty", options(&fs)).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(fs.list(Path::new("/empty")).unwrap().is_empty());
}

#[test]
fn opens_beside_an_open_writer() {
    let fs = MemFs::new();
    let model = build(&fs);
    let writer = Db::open(DIR, options(&fs)).unwrap();
    assert!(matches!(Db::open(DIR, options(&fs)), Err(Error::Locked(_))));
    // Reopening flushed the WAL to L0; let the compaction that triggers finish, so no table
    // this open sees is deleted under it.
    writer.wait_for_background().unwrap();
    let ro = Db::open_read_only(DIR, options(&fs)).unwrap();
    assert_eq!(contents(&ro), model);
    // Writes made after the open are not seen by it; a new read-only open sees them.
    writer.put(b"later", b"1").unwrap();
    assert_eq!(ro.get(b"later").unwrap(), None);
    let ro2 = Db::open_read_only(DIR, options(&fs)).unwrap();
    assert_eq!(ro2.get(b"later").unwrap().as_deref(), Some(&b"1"[..]));
}

/// A writer thread puts `key(0)`, `key(1)`, ... in order while it flushes, compacts and
/// rotates manifests; each read-only open must see a prefix `key(0..m)` with `m` at least
/// what was acknowledged before it began. A scan may fail only because the writer deleted a
/// table after the open (the documented limit); the open itself must always succeed.
#[test]
fn concurrent_opens_see_a_prefix() {
    let fs = MemFs::new();
    let writer = Db::open(DIR, options(&fs)).unwrap();
    let acked = Arc::new(AtomicU32::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let t = {
        let (writer, acked, stop) = (writer.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u32;
            while !stop.load(Ordering::Acquire) && i < 60_000 {
                writer.put(key(i), format!("{i:0>64}")).unwrap();
                i += 1;
                acked.store(i, Ordering::Release);
            }
        })
    };
    let (mut opens, mut scanned) = (0u32, 0u32);
    while opens < 60 {
        let floor = acked.load(Ordering::Acquire);
        let ro = Db::open_read_only(DIR, options(&fs)).unwrap();
        opens += 1;
        let seen: cairn::Result<Vec<(Vec<u8>, Vec<u8>)>> = ro.iter().collect();
        let seen = match seen {
            Ok(s) => s,
            Err(Error::Corruption { what, .. }) if what.contains("cannot be read") => continue,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => panic!("read-only scan: {e}"),
        };
        scanned += 1;
        assert!(
            seen.len() as u32 >= floor,
            "saw {} keys, {floor} were acknowledged",
            seen.len()
        );
        for (i, (k, v)) in seen.iter().enumerate() {
            assert_eq!(k, &key(i as u32), "not a prefix at {i}");
            assert_eq!(v, format!("{i:0>64}").as_bytes());
        }
    }
    stop.store(true, Ordering::Release);
    t.join().unwrap();
    // With the writer idle, a read-only open sees exactly what it acknowledged.
    writer.wait_for_background().unwrap();
    let n = acked.load(Ordering::Acquire);
    let ro = Db::open_read_only(DIR, options(&fs)).unwrap();
    let all = contents(&ro);
    assert_eq!(all.len() as u32, n);
    assert!(all.keys().zip(0..n).all(|(k, i)| k == &key(i)));
    eprintln!("{opens} read-only opens during writes, {scanned} full scans, {n} keys written");
}
