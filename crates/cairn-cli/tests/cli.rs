//! The `cairn` binary on real databases: its output and exit status.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail by panicking")]

use std::path::Path;
use std::process::{Command, Output};

fn cairn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cairn")).args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(args: &[&str]) -> String {
    let o = cairn(args);
    assert!(o.status.success(), "cairn {args:?}: {}", stderr(&o));
    stdout(&o)
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn put_get_delete_scan_and_trees() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = path(&db);
    ok(&["put", db, "b", "two", "--create"]);
    ok(&["put", db, "a", "one"]);
    ok(&["put", db, "c", "three"]);
    ok(&["put", db, "x", "in users", "--tree", "users"]);
    assert_eq!(ok(&["get", db, "a"]), "one\n");
    assert_eq!(ok(&["get", db, "x", "--tree", "users"]), "in users\n");
    // Absent: exit status 1, nothing printed (JSON: null).
    let o = cairn(&["get", db, "zz"]);
    assert_eq!((o.status.code(), stdout(&o)), (Some(1), String::new()));
    assert_eq!(stdout(&cairn(&["--json", "get", db, "zz"])), "null\n");
    assert_eq!(ok(&["scan", db]), "a => one\nb => two\nc => three\n");
    assert_eq!(ok(&["scan", db, "--from", "b", "--to", "c"]), "b => two\n");
    assert_eq!(ok(&["scan", db, "--reverse", "--limit", "2"]), "c => three\nb => two\n");
    assert_eq!(
        ok(&["--json", "scan", db, "--limit", "1"]),
        "{\"key\":\"a\",\"value\":\"one\"}\n"
    );
    assert_eq!(ok(&["trees", db]), "default\nusers\n");
    assert_eq!(ok(&["--json", "trees", db]), "[\"default\",\"users\"]\n");
    ok(&["delete", db, "b"]);
    assert_eq!(ok(&["scan", db]), "a => one\nc => three\n");
    // Flush and compaction keep every entry.
    ok(&["flush", db]);
    ok(&["compact", db, "--from", "a", "--to", "z"]);
    assert_eq!(ok(&["scan", db]), "a => one\nc => three\n");
    assert_eq!(ok(&["scan", db, "--tree", "users"]), "x => in users\n");
}

#[test]
fn raw_bytes_in_hex_and_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = path(&db);
    ok(&["--hex", "put", db, "00ff", "0a5c41", "--create"]);
    assert_eq!(ok(&["--hex", "get", db, "0x00ff"]), "0a5c41\n");
    // Text output escapes what is not printable, and the backslash.
    assert_eq!(ok(&["scan", db]), "\\x00\\xff => \\x0a\\\\A\n");
    let o = cairn(&["--hex", "get", db, "0g"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not hex"), "{}", stderr(&o));
}

#[test]
fn errors_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let o = cairn(&["get", path(&missing), "k"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    // A directory that is not a database is reported as such, and nothing is created in it.
    let o = cairn(&["scan", path(dir.path())]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("holds no cairn database"), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // An unknown tree is named.
    let db = dir.path().join("db");
    ok(&["put", path(&db), "k", "v", "--create"]);
    let o = cairn(&["get", path(&db), "k", "--tree", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no tree named \"nope\""), "{}", stderr(&o));
    // Usage errors come from the argument parser, also with status 2.
    assert_eq!(cairn(&["get"]).status.code(), Some(2));
    // Every command has help with an example.
    for c in ["get", "put", "delete", "scan", "trees", "flush", "compact"] {
        let h = ok(&[c, "--help"]);
        assert!(h.contains("Example"), "{c}: {h}");
    }
}
