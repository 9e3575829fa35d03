//! `cairn::inspect`: verification finds nothing wrong with healthy databases of every filter
//! layout, finds each kind of damage (naming file and offset), and the dumps decode what the
//! files hold. (The corruption matrix checks `verify` against every damage it makes.)

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::{read_all, write_all_synced, FileSystem, MemFs};
use cairn::inspect::{self, Bytes};
use cairn::{BpkPolicy, Db, Options};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const DIR: &str = "/i";

fn options(fs: &MemFs, policy: BpkPolicy) -> Options {
    let mut o = common::small(Arc::new(fs.clone()), 16 << 10);
    o.filters.policy = policy.into();
    o.range_filter.bits_per_key = 16.0;
    // Every table gets its filter (by workload, none would: no empty read came).
    o.range_filter.by_workload = false;
    o
}

/// Tables in two levels, a tombstone, two trees, and writes only the WAL holds.
fn build(fs: &MemFs, policy: BpkPolicy) {
    let db = Db::open(DIR, options(fs, policy)).unwrap();
    let users = db.tree("users").unwrap();
    for i in 0..4000u32 {
        db.put(common::key(i % 2000), format!("value {i} \u{1}")).unwrap();
    }
    // A snapshot from before the delete keeps its tombstone in the tables whatever
    // compactions run (one into the last level would drop it otherwise, depending on timing).
    let snap = db.snapshot();
    db.delete(common::key(5)).unwrap();
    db.flush_all().unwrap();
    db.wait_for_background().unwrap();
    db.put(b"in-the-wal", b"yes").unwrap();
    users.put(b"ada", b"lovelace").unwrap();
    drop(snap);
    drop(users);
    drop(db);
}

fn files(fs: &MemFs, suffix: &str) -> Vec<PathBuf> {
    common::files(fs, Path::new(DIR), suffix)
}

#[test]
fn healthy_databases_verify_clean() {
    for policy in [BpkPolicy::Uniform, BpkPolicy::Monkey, BpkPolicy::Elastic] {
        let fs = MemFs::new();
        build(&fs, policy);
        let r = inspect::verify(&fs, Path::new(DIR)).unwrap();
        assert!(r.is_ok(), "{policy:?}: {:?}", r.damage);
        let tables = r.checked.iter().filter(|(k, _)| *k == "table").count();
        assert_eq!(tables, files(&fs, ".sst").len(), "{policy:?}");
        assert!(tables >= 2);
        for kind in ["current", "manifest", "wal", "options"] {
            assert!(
                r.checked.iter().any(|(k, _)| *k == kind),
                "{policy:?}: {kind} not checked"
            );
        }
        assert!(r.entries >= 2000, "{}", r.entries);
        assert!(r.blocks > tables as u64 * 4);
    }
}

fn damage(fs: &MemFs, path: &Path, at: impl Fn(usize) -> usize) -> usize {
    let mut b = read_all(fs, path).unwrap();
    let pos = at(b.len());
    b[pos] ^= 0x10;
    fs.remove_file(path).unwrap();
    write_all_synced(fs, path, &b).unwrap();
    pos
}

#[test]
fn verify_names_each_damaged_file_and_offset() {
    let fs = MemFs::new();
    build(&fs, BpkPolicy::Uniform);
    let tables = files(&fs, ".sst");
    // A data block in the middle of one table, the footer of another.
    let mid = damage(&fs, &tables[0], |n| n / 3);
    damage(&fs, &tables[1], |n| n - 3);
    let r = inspect::verify(&fs, Path::new(DIR)).unwrap();
    assert!(!r.is_ok());
    let first: Vec<_> = r.damage.iter().filter(|d| d.file == tables[0]).collect();
    assert_eq!(first.len(), 1, "{:?}", r.damage);
    // The damaged block starts at most one block before the flipped byte.
    assert!(
        first[0].offset <= mid as u64 && mid as u64 - first[0].offset < 4096,
        "{}",
        first[0]
    );
    assert!(r.damage.iter().any(|d| d.file == tables[1]), "{:?}", r.damage);
    // The same table verified on its own.
    let alone = inspect::verify_table(&fs, &tables[0]);
    assert_eq!(alone.damage, first.into_iter().cloned().collect::<Vec<_>>());
    assert!(inspect::verify_table(&fs, &tables[2]).is_ok());

    // A WAL record damaged before a synced one: damage; the OPTIONS file: damage.
    let wal = files(&fs, ".wal").pop().unwrap();
    damage(&fs, &wal, |_| 30);
    let options = fs
        .list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("OPTIONS"))
        .max()
        .unwrap();
    damage(&fs, &Path::new(DIR).join(options), |_| 5);
    let r = inspect::verify(&fs, Path::new(DIR)).unwrap();
    let named: Vec<String> = r
        .damage
        .iter()
        .map(|d| d.file.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(named.iter().any(|n| n.ends_with(".wal")), "{named:?}");
    assert!(named.iter().any(|n| n.starts_with("OPTIONS")), "{named:?}");
}

#[test]
fn verify_refuses_what_is_not_a_database() {
    let fs = MemFs::new();
    assert!(inspect::verify(&fs, Path::new("/none")).is_err());
    fs.create_dir_all(Path::new("/empty")).unwrap();
    let e = inspect::verify(&fs, Path::new("/empty")).unwrap_err();
    assert!(e.to_string().contains("holds no cairn database"), "{e}");
}

#[test]
fn dumps_decode_the_files() {
    let fs = MemFs::new();
    build(&fs, BpkPolicy::Elastic);
    let text = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).unwrap()
    };
    let table = files(&fs, ".sst").remove(0);
    let t = text(&|o| inspect::dump_table(&fs, &table, true, Bytes::Text, o).unwrap());
    assert!(t.contains("policy elastic, 6 unit(s) per segment"), "{t}");
    assert!(t.contains("unit 5: at "), "{t}");
    assert!(t.contains("range filter: version"), "{t}");
    assert!(t.contains("=> value "), "{t}");
    assert!(t.contains("\\x01"), "control bytes are escaped: {t}");
    let tombstone = files(&fs, ".sst")
        .iter()
        .map(|f| text(&|o| inspect::dump_table(&fs, f, true, Bytes::Text, o).unwrap()))
        .any(|t| {
            t.lines()
                .any(|l| l.trim_start().starts_with("key00005 @") && l.ends_with(" delete"))
        });
    assert!(tombstone, "no table dump shows the tombstone of key00005");

    let wal = files(&fs, ".wal").pop().unwrap();
    let w = text(&|o| inspect::dump_wal(&fs, &wal, true, Bytes::Text, o).unwrap());
    assert!(w.contains("header, database id"), "{w}");
    assert!(w.contains("tree 0 put in-the-wal => yes"), "{w}");
    assert!(w.contains("tree 1 put ada => lovelace"), "{w}");
    assert!(w.contains("the log ends cleanly"), "{w}");
    let hex = text(&|o| inspect::dump_wal(&fs, &wal, false, Bytes::Hex, o).unwrap());
    assert!(hex.contains("tree 1 put 616461 (8 byte value)"), "{hex}");

    let m = text(&|o| inspect::dump_manifest(&fs, Path::new(DIR), Bytes::Text, o).unwrap());
    assert!(m.contains("new tree 0 \"default\""), "{m}");
    assert!(m.contains("new tree 1 \"users\""), "{m}");
    assert!(m.contains("add tree 0 L"), "{m}");
    assert!(m.contains("the manifest ends cleanly"), "{m}");

    let (path, stored) = inspect::stored_options(&fs, Path::new(DIR)).unwrap().unwrap();
    assert!(path.to_string_lossy().contains("OPTIONS-"));
    assert_eq!(stored["filters.policy"], "elastic");
    let back = Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
    .with_stored(Path::new(DIR))
    .unwrap();
    assert_eq!(back.filters.policy.kind(), BpkPolicy::Elastic);
    assert!(matches!(back.memory, cairn::Memory::Fixed(ref f) if f.memtable_size == 16 << 10));
}
