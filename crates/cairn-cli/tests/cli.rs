//! The `cairn` binary on real databases: its output and exit status.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail by panicking")]

use cairn::{BpkPolicy, Db, Options};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

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
    // Absent: exit status 1, "not found" on stderr and nothing on stdout (JSON: null).
    let o = cairn(&["get", db, "zz"]);
    assert_eq!((o.status.code(), stdout(&o)), (Some(1), String::new()));
    assert_eq!(stderr(&o), "cairn: not found\n");
    assert_eq!(stdout(&cairn(&["--json", "get", db, "zz"])), "null\n");
    // A tree dropped: gone from the list, its drop in the manifest, its name free.
    ok(&["put", db, "k", "v", "--tree", "scratch"]);
    assert!(ok(&["trees", db]).contains("scratch"));
    ok(&["drop-tree", db, "scratch"]);
    assert!(!ok(&["trees", db]).contains("scratch"));
    assert_ne!(
        cairn(&["drop-tree", db, "scratch"]).status.code(),
        Some(0),
        "no such tree"
    );
    let manifest = ok(&["manifest", db]);
    assert!(manifest.contains("drop tree "), "{manifest}");
    assert_eq!(
        cairn(&["get", db, "k", "--tree", "scratch"]).status.code(),
        Some(2),
        "{manifest}"
    );
    // Several keys: one multi_get, a line per key found, status 1 when one is missing.
    let o = cairn(&["get", db, "a", "zz", "a"]);
    assert_eq!(stdout(&o), "a => one\na => one\n");
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&cairn(&["--json", "get", db, "zz", "a"])),
        "{\"key\":\"zz\",\"value\":null}\n{\"key\":\"a\",\"value\":\"one\"}\n"
    );
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
fn checkpoint_backup_and_restore() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (db, cp, bk, back) = (p("db"), p("cp"), p("bk"), p("back"));
    ok(&["put", &db, "a", "one", "--create"]);
    ok(&["flush", &db]);
    ok(&["put", &db, "b", "two"]);
    let o = ok(&["--json", "checkpoint", &db, &cp]);
    let v: serde_json::Value = serde_json::from_str(&o).unwrap();
    assert!(v["tables"].as_u64().unwrap() >= 1 && v["tables"] == v["linked"], "{o}");
    assert_eq!(v["last_seqno"], 2, "{o}");
    assert!(ok(&["checkpoint", &db, &p("cp2")]).starts_with("checkpoint at seqno 2: "));
    assert_eq!(ok(&["scan", &cp]), "a => one\nb => two\n");
    assert!(ok(&["backup", &db, &bk]).starts_with("backup 1 at seqno 2: "));
    ok(&["put", &db, "c", "three"]);
    let o = ok(&["--json", "backup", &db, &bk]);
    let v: serde_json::Value = serde_json::from_str(&o).unwrap();
    assert!(v["id"] == 2 && v["tables_shared"].as_u64().unwrap() >= 1, "{o}");
    assert!(ok(&["restore", &bk, &back]).starts_with("restored backup 2: "));
    assert_eq!(ok(&["scan", &back]), "a => one\nb => two\nc => three\n");
    // A target that holds anything is refused.
    fails(&["checkpoint", &db, &cp], 2, "not empty");
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
    for c in [
        "get", "put", "delete", "scan", "trees", "flush", "compact", "stats", "levels", "manifest", "wal", "sst",
        "options", "verify",
    ] {
        let h = ok(&[c, "--help"]);
        assert!(h.contains("Example"), "{c}: {h}");
    }
}

/// A database with tables in several levels (Monkey's filters, range filters), a tombstone,
/// two trees and writes only its WAL holds; returns the handle (still open for writing).
fn build(db: &Path) -> Db {
    let opts = {
        let mut o = Options::default();
        o.filters.policy = BpkPolicy::Monkey.into();
        o.memory.fixed_mut().memtable_size = 32 << 10;
        o.memory.fixed_mut().write_memory = 128 << 10;
        o.compaction.max_bytes_for_level_base = 128 << 10;
        o.compaction.target_file_size = 32 << 10;
        o.table.block_size = 1024;
        o.range_filter.bits_per_key = 16.0;
        // Every table gets its filter (by workload, none would: no empty read came).
        o.range_filter.by_workload = false;
        o
    };
    let d = Db::open(db, opts).unwrap();
    for i in 0..6000u32 {
        d.put(format!("key{:05}", i % 3000), format!("value-{i}-{}", "v".repeat(40)))
            .unwrap();
    }
    d.delete(b"key00007").unwrap();
    d.flush_all().unwrap();
    d.wait_for_background().unwrap();
    d.put(b"wal-only", b"yes").unwrap();
    d.tree("users").unwrap().put(b"ada", b"lovelace").unwrap();
    d
}

fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// Fails unless `args` exits with `code` and one line on stderr naming `needle` (no panic).
fn fails(args: &[&str], code: i32, needle: &str) -> String {
    let o = cairn(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(code), "cairn {args:?}: {err}");
    assert!(
        !err.contains("panicked") && err.lines().count() <= 1,
        "cairn {args:?}: {err}"
    );
    assert!(
        err.contains(needle) || stdout(&o).contains(needle),
        "cairn {args:?}: {err}"
    );
    err
}

/// The inspection commands and reads run beside the process that has the database open for
/// writing (this test holds it); writes are refused with a clear line.
#[test]
fn inspection_beside_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let dbp = dir.path().join("db");
    let db = path(&dbp);
    let writer = build(&dbp);

    assert_eq!(ok(&["get", db, "wal-only"]), "yes\n");
    assert_eq!(ok(&["get", db, "ada", "--tree", "users"]), "lovelace\n");
    fails(&["get", db, "key00007"], 1, "");
    assert_eq!(
        ok(&["scan", db, "--from", "key00005", "--to", "key00009"])
            .lines()
            .count(),
        3
    );
    fails(&["put", db, "k", "v"], 2, "another process has it open");

    // levels: the same shape the engine reports.
    let levels: serde_json::Value = serde_json::from_str(&ok(&["--json", "levels", db])).unwrap();
    let shape = writer.levels();
    assert_eq!(levels.as_array().unwrap().len(), shape.len());
    for (t, s) in levels.as_array().unwrap().iter().zip(&shape) {
        assert_eq!(t["tree"], s.name.as_str());
        let files: Vec<u64> = t["levels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["files"].as_u64().unwrap())
            .collect();
        let want: Vec<u64> = s.levels.iter().map(|l| l.files as u64).collect();
        assert_eq!(files, want);
    }
    assert!(shape[0].levels.len() >= 2, "the test wants several levels: {shape:?}");
    assert!(ok(&["levels", db]).contains("tree \"users\""));

    let stats = ok(&["stats", db]);
    for needle in [
        "** cairn stats ** merge policy leveling, filter allocation monkey",
        "** cairn filters **",
        "monkey",
    ] {
        assert!(stats.contains(needle), "{needle}: {stats}");
    }
    let options = ok(&["options", db]);
    assert!(
        options.contains("filters.policy=monkey") && options.contains("table.block_size=1024"),
        "{options}"
    );
    let json: serde_json::Value = serde_json::from_str(&ok(&["--json", "options", db])).unwrap();
    assert_eq!(json["range_filter.bits_per_key"], "16");

    let manifest = ok(&["manifest", db]);
    assert!(manifest.contains("new tree 1 \"users\""), "{manifest}");
    assert!(manifest.contains("add tree 0 L1 #"), "{manifest}");
    let wal = files(&dbp, ".wal").pop().unwrap();
    let w = ok(&["wal", path(&wal), "--values"]);
    assert!(w.contains("tree 0 put wal-only => yes"), "{w}");
    assert!(w.contains("tree 1 put ada => lovelace"), "{w}");
    let table = files(&dbp, ".sst").remove(0);
    let t = ok(&["sst", path(&table)]);
    assert!(t.contains("point filter: policy monkey"), "{t}");
    assert!(t.contains("range filter: version 2 (grafite)"), "{t}");
    assert!(t.contains("segment 0: blocks 0.."), "{t}");
    // The index is listed only when asked; dates are ISO 8601, compression as OPTIONS spells it.
    assert!(
        t.contains(" keys (listed with --index)") && !t.contains("block at "),
        "{t}"
    );
    assert!(t.contains("compression none"), "{t}");
    let created = t.split("created ").nth(1).unwrap().lines().next().unwrap();
    assert!(
        created.len() == 20 && created.as_bytes()[10] == b'T' && created.ends_with('Z'),
        "{created}"
    );
    assert!(ok(&["sst", path(&table), "--index"]).contains("    block at 0 ("));
    assert!(ok(&["sst", path(&table), "--entries"]).contains("put => value-"));
    assert!(ok(&["sst", path(&table), "--verify"]).contains("OK: no damage found"));

    let v = ok(&["verify", db]);
    assert!(v.contains("OK: no damage found"), "{v}");
    let tables = files(&dbp, ".sst").len();
    assert!(v.contains(&format!("checked {tables} table(s)")), "{v}");
    // Nothing the read-only commands did disturbed the writer.
    writer.put(b"after", b"1").unwrap();
    drop(writer);
    assert_eq!(ok(&["get", db, "after"]), "1\n");
}

fn flip(file: &Path, at: impl Fn(usize) -> usize) {
    let mut b = std::fs::read(file).unwrap();
    let pos = at(b.len());
    b[pos] ^= 0x04;
    std::fs::write(file, b).unwrap();
}

#[test]
fn verify_reports_damage_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let dbp = dir.path().join("db");
    let db = path(&dbp);
    build(&dbp).close().unwrap();
    let table = files(&dbp, ".sst").remove(0);
    flip(&table, |n| n / 4);

    let o = cairn(&["verify", db]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    let damaged: Vec<&str> = out.lines().filter(|l| l.starts_with("DAMAGED")).collect();
    assert_eq!(damaged.len(), 1, "{out}");
    assert!(
        damaged[0].contains(path(&table)) && damaged[0].contains("at offset"),
        "{out}"
    );
    assert!(out.contains("1 damaged structure(s)"), "{out}");
    let json: serde_json::Value = serde_json::from_str(stdout(&cairn(&["--json", "verify", db])).trim()).unwrap();
    assert_eq!(json["ok"], false);
    assert_eq!(json["damage"][0]["file"], path(&table));
    assert_eq!(cairn(&["sst", path(&table), "--verify"]).status.code(), Some(1));
    // The other tables verify clean on their own.
    let other = files(&dbp, ".sst").pop().unwrap();
    assert_eq!(cairn(&["sst", path(&other), "--verify"]).status.code(), Some(0));
    // A full scan meets the damage: one line, exit 2.
    fails(&["scan", db], 2, "corruption");
    // Dumping the damaged table's entries stops at the damage with one line too.
    fails(&["sst", path(&table), "--entries"], 2, "corruption");

    // A damaged CURRENT: open refuses with a pointer to verify; verify names CURRENT.
    flip(&dbp.join("CURRENT"), |_| 3);
    let e = fails(&["get", db, "key00001"], 2, "cairn verify");
    assert!(e.contains("CURRENT"), "{e}");
    let out = stdout(&cairn(&["verify", db]));
    assert!(
        out.lines().any(|l| l.starts_with("DAMAGED") && l.contains("CURRENT")),
        "{out}"
    );
}

#[test]
fn inspection_errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    for c in ["stats", "levels", "manifest", "options", "verify", "wal", "sst"] {
        fails(&[c, path(&missing)], 2, "does not exist");
    }
    // A foreign directory (files, no database) and a foreign file.
    let foreign = dir.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "hello").unwrap();
    for c in ["stats", "levels", "manifest", "options", "verify"] {
        fails(&[c, path(&foreign)], 2, "holds no cairn database");
    }
    let txt = foreign.join("notes.txt");
    fails(&["sst", path(&txt)], 2, "too short to be a table");
    fails(&["wal", path(&txt)], 2, "log number comes from the file name");
    fails(&["sst", path(&foreign)], 2, "is not a file");
}

/// Output to a reader that goes away (`cairn scan DB | head`) ends the command quietly.
#[test]
fn a_closed_pipe_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let dbp = dir.path().join("db");
    build(&dbp).close().unwrap();
    // ~3000 entries of ~60 bytes: more than a pipe's buffer, so the writes meet the closed end.
    assert!(ok(&["scan", path(&dbp)]).len() > 128 << 10);
    let mut child = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["scan", path(&dbp)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap(); // then the pipe closes
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{:?}: {}", o.status, stderr(&o));
    assert_eq!(stderr(&o), "");
}

/// `scan --keys-only`, values cut at `--max-value-bytes` with a marker, the empty key shown.
#[test]
fn scan_for_people() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = path(&db);
    ok(&["put", db, "big", &"v".repeat(5000), "--create"]);
    ok(&["--hex", "put", db, "", "656d707479"]);
    ok(&["put", db, "\"\"", "quotes"]);
    assert_eq!(ok(&["scan", db, "--keys-only"]), "\"\"\n\\x22\\x22\nbig\n");
    assert_eq!(
        ok(&["--json", "scan", db, "--keys-only", "--limit", "1"]),
        "\"\"\n",
        "JSON shows the empty key as the empty string"
    );
    let cut = ok(&["scan", db, "--from", "big", "--max-value-bytes", "10"]);
    assert_eq!(
        cut,
        "big => vvvvvvvvvv\n  … 4990 more bytes (--max-value-bytes 0 prints them)\n"
    );
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["--json", "scan", db, "--from", "big", "--max-value-bytes", "10"])).unwrap();
    assert_eq!(
        (json["value"].as_str(), json["more_bytes"].as_u64()),
        (Some("vvvvvvvvvv"), Some(4990))
    );
    // Not a terminal: whole values by default.
    assert!(ok(&["scan", db, "--from", "big"]).contains(&"v".repeat(5000)));
    assert_eq!(ok(&["scan", db, "--to", "a"]), "\"\" => empty\n\\x22\\x22 => quotes\n");
}

/// Every example in `--help` runs in a shell: split by `sh` itself, it parses as a command line
/// (the database paths need not exist for that).
#[test]
fn help_examples_are_valid_shell() {
    let mut helps = vec![stdout(&cairn(&["--help"]))];
    let top = helps[0].clone();
    let commands: Vec<&str> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 10, "{top}");
    for c in commands {
        helps.push(stdout(&cairn(&[c, "--help"])));
    }
    let mut checked = 0;
    for h in &helps {
        for line in h.lines() {
            let Some(at) = line.find("cairn ") else { continue };
            if !(line.trim_start().starts_with("cairn ") || line.trim_start().starts_with("Example: cairn ")) {
                continue;
            }
            // The command before a pipe or `&&`, as the shell would run it.
            let cmd = line[at..].split(" | ").next().unwrap().split(" && ").next().unwrap();
            let words = Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "for a in {}; do printf '%s\\0' \"$a\"; done",
                    &cmd["cairn ".len()..]
                ))
                .output()
                .unwrap();
            assert!(words.status.success(), "the shell rejects {cmd:?}: {}", stderr(&words));
            let args: Vec<String> = String::from_utf8(words.stdout)
                .unwrap()
                .split('\0')
                .filter(|a| !a.is_empty())
                .map(str::to_string)
                .collect();
            // Parsed by the binary itself: a usage error exits 2 with "Usage:" on stderr; a
            // missing database exits 2 without it.
            let o = Command::new(env!("CARGO_BIN_EXE_cairn"))
                .args(&args)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert!(!stderr(&o).contains("Usage:"), "{cmd:?} does not parse: {}", stderr(&o));
            checked += 1;
        }
    }
    assert!(checked >= 15, "only {checked} examples found");
}

#[test]
fn ingest_adds_external_tables_all_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = path(&db);
    ok(&["put", db, "k1", "old", "--create"]);
    let table = |name: &str, pairs: &[(&str, &str)]| {
        let p = dir.path().join(name);
        let mut w = cairn::TableWriter::create(&p, &Options::default()).unwrap();
        for (k, v) in pairs {
            w.put(k.as_bytes(), v.as_bytes()).unwrap();
        }
        w.finish().unwrap();
        p
    };
    let a = table("a.sst", &[("k1", "new"), ("k2", "two")]);
    let b = table("b.sst", &[("k2", "newer")]);
    let out = ok(&["ingest", db, path(&a), path(&b), "--move"]);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.contains("linked"), "{out}");
    assert!(!a.exists() && !b.exists(), "moved");
    assert_eq!(ok(&["get", db, "k1"]), "new\n");
    assert_eq!(ok(&["get", db, "k2"]), "newer\n");
    assert!(ok(&["manifest", db]).contains("ingested: read at seq"));
    // A damaged table: refused, nothing ingested, exit status 2.
    let c = table("c.sst", &[("k3", "three")]);
    let mut bytes = std::fs::read(&c).unwrap();
    bytes[3] ^= 1;
    std::fs::write(&c, bytes).unwrap();
    let d = table("d.sst", &[("k4", "four")]);
    let o = cairn(&["ingest", db, path(&d), path(&c)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(cairn(&["get", db, "k4"]).status.code(), Some(1));
    let json = ok(&["--json", "ingest", db, path(&d)]);
    assert!(json.contains("\"linked\":false"), "{json}");
    assert_eq!(ok(&["get", db, "k4"]), "four\n");
}
