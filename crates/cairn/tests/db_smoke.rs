//! The smallest end-to-end check: open, write, delete, read, scan.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]
use cairn::{Db, Options};

#[test]
fn smoke() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db");
    let db = Db::open(&p, Options::default()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.put(b"b", b"2").unwrap();
    db.delete(b"a").unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    let all: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    assert_eq!(all, vec![(b"b".to_vec(), b"2".to_vec())]);
    db.flush_all().unwrap();
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    db.put(b"c", b"3").unwrap();
    db.close().unwrap();
    let db = Db::open(&p, Options::default()).unwrap();
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(db.get(b"a").unwrap(), None);
    let rev: Vec<_> = db.iter().rev().map(|r| r.unwrap().0).collect();
    assert_eq!(rev, vec![b"c".to_vec(), b"b".to_vec()]);
    println!("{}", db.property("cairn.stats").unwrap());
}
