//! Crash loop (process crash): a child process writes (puts, some expiring a day later, merges,
//! deletes, range deletes, cross-tree batches, ~5% synced; ~2% of its steps ingest an external
//! table of the same kinds of entries instead) with background flush and compaction
//! on a real directory; the parent kills it with
//! SIGKILL at a random moment, reopens, and checks the database against an expected-state file
//! kept RocksDB-style: before each batch the child records it as pending, after the
//! acknowledgment it commits it. With one writer at most one batch is in flight, so the
//! recovered state must equal the committed state, or the committed state plus that whole
//! batch: every acknowledged write is present (a process crash loses nothing that reached the
//! OS), batches are atomic, and the state is a prefix of the history.
//!
//! CI runs 100 cycles; the long mode is
//! `CAIRN_CRASH_CYCLES=3000 cargo test --profile ci -p cairn --test crash_loop -- --nocapture`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

use cairn::{Db, IngestOptions, MergeOperator, Options, TableWriter, WriteBatch, WriteOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const KEYS: usize = 2000;
const TREES: usize = 2;
/// Value id 0 means "absent".
const ABSENT: u32 = 0;

/// Expected-state file layout: `committed[TREES * KEYS]: u32le`, then the in-flight batch:
/// `count: u32le` and `count × (slot: u32le, value: u32le)` (slot = tree * KEYS + key).
fn slot_offset(slot: usize) -> u64 {
    (slot * 4) as u64
}
const PENDING_AT: u64 = (TREES * KEYS * 4) as u64;

fn key(k: usize) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

/// The value bytes for a value id: self-describing and of varying length.
fn value(id: u32) -> Vec<u8> {
    let mut v = format!("v{id}-").into_bytes();
    v.resize(v.len() + (id as usize * 7919) % 300, b'a' + (id % 26) as u8);
    v
}

fn decode(v: &[u8]) -> u32 {
    try_decode(v).unwrap()
}

fn try_decode(v: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(v).ok()?;
    s.get(1..s.find('-')?)?.parse().ok()
}

/// Merges whose result is the newest operand, provided the value below and the operands carry
/// strictly increasing ids (the child's ids only grow): an operand lost, replayed twice or
/// applied out of order makes the read fail, and the expected state stays one id per key.
#[derive(Debug)]
struct Newest;

impl Newest {
    fn check(existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        let ids: Option<Vec<u32>> = existing
            .into_iter()
            .chain(operands.iter().copied())
            .map(try_decode)
            .collect();
        let ids = ids?;
        ids.windows(2)
            .all(|w| w[0] < w[1])
            .then(|| operands.last().map(|o| o.to_vec()))?
    }
}

impl MergeOperator for Newest {
    fn name(&self) -> String {
        "crash-loop-newest".into()
    }
    fn full_merge(&self, _key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        Newest::check(existing, operands)
    }
    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        Newest::check(None, operands)
    }
}

/// The defaults (one budget with the memory tuner, Mnemosyne filters, range filters, a
/// key-value cache) at 1 MiB, with the tuner on a 10 ms timer so that regions resize while the
/// child writes. Even cycles fix the key-value cache at 20 KiB (about a hundred entries), so
/// entries are evicted, invalidated by flushes and refilled all the time.
fn options(cycle: u64) -> Options {
    let mut o = Options::default();
    let budget = o.memory.budget_mut();
    budget.bytes = 1 << 20;
    budget.tuner_mut().period_ms = 10;
    if cycle % 2 == 0 {
        budget.kv_cache_share = 0.02;
        budget.tuner_mut().kv_cache = false;
    }
    o.compaction.max_bytes_for_level_base = 256 << 10;
    o.compaction.target_file_size = 64 << 10;
    o.compaction.l0_trigger = 2;
    o.merge_operator = Some(std::sync::Arc::new(Newest));
    o
}

fn open_trees(dir: &Path, cycle: u64) -> (Db, cairn::Tree) {
    let db = Db::open(dir, options(cycle)).unwrap();
    let t = db.tree("second").unwrap();
    (db, t)
}

/// The child: writes forever (until killed).
fn child(dir: &Path, expected: &Path, seed: u64) -> ! {
    let (db, second) = open_trees(dir, seed);
    let mut state = OpenOptions::new().read(true).write(true).open(expected).unwrap();
    let mut committed = vec![0u8; PENDING_AT as usize];
    state.read_exact(&mut committed).unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    // The seed is the cycle (from 1): ids grow across cycles too, as `Newest` requires (a child
    // writes far fewer than 2^20 of them; 4,095 cycles fit).
    let mut next_id: u32 = (seed as u32) << 20 | 1;
    let staging = dir.with_extension("ext");
    std::fs::create_dir_all(&staging).unwrap();
    loop {
        if rng.gen_bool(0.02) {
            let tree = if rng.gen_bool(0.5) { &*db } else { &second };
            ingest_one(tree, &staging, &mut state, &mut rng, &mut next_id, seed);
            continue;
        }
        let mut batch = WriteBatch::new();
        let mut ops: Vec<(usize, u32)> = Vec::new();
        let max_ops = if rng.gen_bool(0.3) { 6 } else { 1 };
        // A range delete of a few keys opens some batches (first, so that later ops of the
        // batch, which skip its keys, cannot be overridden by it). Rarely in the cycles of the
        // small key-value cache: a flush of range tombstones retires all of a tree's entries,
        // which would hide a flush that forgot to retire the keys it wrote.
        if rng.gen_bool(if seed % 2 == 0 { 0.002 } else { 0.03 }) {
            let (t, k, w) = (rng.gen_range(0..TREES), rng.gen_range(0..KEYS - 8), rng.gen_range(1..8));
            match t {
                0 => batch.delete_range(key(k), key(k + w)),
                _ => batch.delete_range_in(&second, key(k), key(k + w)),
            };
            ops.extend((k..k + w).map(|k| (t * KEYS + k, ABSENT)));
        }
        for _ in 0..rng.gen_range(1..=max_ops) {
            let (t, k) = (rng.gen_range(0..TREES), rng.gen_range(0..KEYS));
            if ops.iter().any(|&(s, _)| s == t * KEYS + k) {
                continue;
            }
            let id = if rng.gen_bool(0.15) {
                ABSENT
            } else {
                next_id += 1;
                next_id
            };
            // Some puts expire, a day from now: the kind the WAL and tables then hold must
            // come back through every crash as the same value.
            let day = std::time::Duration::from_secs(86_400);
            // Some are merges (`Newest`: the value becomes the operand).
            match (t, id, rng.gen_range(0..10)) {
                (0, ABSENT, _) => batch.delete(key(k)),
                (0, _, 0..=5) => batch.put(key(k), value(id)),
                (0, _, 6..=7) => batch.put_with_ttl(key(k), value(id), day),
                (0, _, _) => batch.merge(key(k), value(id)),
                (_, ABSENT, _) => batch.delete_in(&second, key(k)),
                (_, _, 0..=5) => batch.put_in(&second, key(k), value(id)),
                (_, _, 6..=7) => batch.put_with_ttl_in(&second, key(k), value(id), day),
                (_, _, _) => batch.merge_in(&second, key(k), value(id)),
            };
            ops.push((t * KEYS + k, id));
        }
        record_pending(&state, &ops);
        db.write(
            batch,
            &WriteOptions {
                sync: rng.gen_bool(0.05),
                ..Default::default()
            },
        )
        .unwrap();
        // Acknowledged: commit each op, then clear the pending record.
        commit_pending(&state, &ops);
        // Reads of keys not in flight must see the committed value: now and then any key, and
        // after every batch a hot one (the key-value cache's hits, fills and invalidations).
        let hot = rng.gen_range(0..32);
        let mut reads = vec![(rng.gen_range(0..TREES), hot)];
        if rng.gen_bool(0.2) {
            reads.push((rng.gen_range(0..TREES), rng.gen_range(0..KEYS)));
        }
        for (t, k) in reads {
            let got = match t {
                0 => db.get(key(k)),
                _ => second.get(key(k)),
            };
            let got = got.unwrap().map_or(ABSENT, |v| decode(&v));
            let mut b = [0u8; 4];
            state.read_exact_at(&mut b, slot_offset(t * KEYS + k)).unwrap();
            assert_eq!(got, u32::from_le_bytes(b), "child read of key {k} of tree {t}");
        }
    }
}

/// Records `ops` as the in-flight step (the count last, so a torn record reads as none).
fn record_pending(state: &File, ops: &[(usize, u32)]) {
    let mut rec = Vec::new();
    for &(s, v) in ops {
        rec.extend_from_slice(&(s as u32).to_le_bytes());
        rec.extend_from_slice(&v.to_le_bytes());
    }
    state.write_all_at(&rec, PENDING_AT + 4).unwrap();
    state
        .write_all_at(&(ops.len() as u32).to_le_bytes(), PENDING_AT)
        .unwrap();
}

/// Commits the acknowledged in-flight step.
fn commit_pending(state: &File, ops: &[(usize, u32)]) {
    for &(s, v) in ops {
        state.write_all_at(&v.to_le_bytes(), slot_offset(s)).unwrap();
    }
    state.write_all_at(&0u32.to_le_bytes(), PENDING_AT).unwrap();
}

/// One ingestion into `tree`: an external table of up to 24 keys (puts, some expiring a day
/// later, merges, deletions) and sometimes a range deletion, which clears the older versions
/// of its keys but not the table's own. In flight like a batch: all of it or none.
fn ingest_one(tree: &cairn::Tree, staging: &Path, state: &mut File, rng: &mut StdRng, next_id: &mut u32, seed: u64) {
    let t = tree.id() as usize;
    let mut finals = std::collections::BTreeMap::new();
    let path = staging.join(format!("{}.sst", *next_id));
    let _ = std::fs::remove_file(&path); // a table an earlier child wrote when it was killed
    let mut w = TableWriter::create(&path, &options(seed)).unwrap();
    if rng.gen_bool(0.3) {
        let (k, width) = (rng.gen_range(0..KEYS - 8), rng.gen_range(1..8));
        w.delete_range(&key(k), &key(k + width)).unwrap();
        finals.extend((k..k + width).map(|k| (t * KEYS + k, ABSENT)));
    }
    let mut keys: Vec<usize> = (0..rng.gen_range(1..=24)).map(|_| rng.gen_range(0..KEYS)).collect();
    keys.sort_unstable();
    keys.dedup();
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        + 86_400_000;
    for k in keys {
        let id = if rng.gen_bool(0.15) {
            ABSENT
        } else {
            *next_id += 1;
            *next_id
        };
        match (id, rng.gen_range(0..10)) {
            (ABSENT, _) => w.delete(&key(k)).unwrap(),
            (_, 0..=5) => w.put(&key(k), &value(id)).unwrap(),
            (_, 6..=7) => w.put_with_deadline(&key(k), &value(id), deadline).unwrap(),
            _ => w.merge(&key(k), &value(id)).unwrap(),
        }
        finals.insert(t * KEYS + k, id);
    }
    w.finish().unwrap();
    *next_id += 1;
    let ops: Vec<(usize, u32)> = finals.into_iter().collect();
    record_pending(state, &ops);
    let opts = IngestOptions {
        move_files: rng.gen_bool(0.5),
        ..IngestOptions::default()
    };
    tree.ingest(&[&path], &opts).unwrap();
    commit_pending(state, &ops);
    let _ = std::fs::remove_file(&path);
}

/// Reads the expected state: committed ids and the in-flight batch.
fn read_expected(path: &Path) -> (Vec<u32>, Vec<(usize, u32)>) {
    let mut buf = Vec::new();
    File::open(path).unwrap().read_to_end(&mut buf).unwrap();
    let word = |at: usize| u32::from_le_bytes(buf[at..at + 4].try_into().unwrap());
    let committed = (0..TREES * KEYS).map(|s| word(s * 4)).collect();
    let n = word(PENDING_AT as usize) as usize;
    let pending = (0..n)
        .map(|i| {
            let at = PENDING_AT as usize + 4 + i * 8;
            (word(at) as usize, word(at + 4))
        })
        .collect();
    (committed, pending)
}

#[test]
fn crash_loop() {
    // Child mode: this same test binary, re-executed by the parent.
    if let Ok(args) = std::env::var("CAIRN_CRASH_CHILD") {
        let mut it = args.split('|');
        let (dir, expected, seed) = (
            it.next().unwrap(),
            it.next().unwrap(),
            it.next().unwrap().parse().unwrap(),
        );
        child(Path::new(dir), Path::new(expected), seed);
    }
    let cycles: u64 = std::env::var("CAIRN_CRASH_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    assert!(
        cycles < 4096,
        "value ids hold the cycle in 12 bits: at most 4,095 cycles"
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir: PathBuf = tmp.path().join("db");
    let expected = tmp.path().join("expected");
    {
        let mut f = File::create(&expected).unwrap();
        f.write_all(&vec![0u8; PENDING_AT as usize + 4 + 64 * 8]).unwrap();
    }
    let mut rng = StdRng::seed_from_u64(2024);
    let exe = std::env::current_exe().unwrap();
    let mut in_flight_applied = 0;
    let mut present = 0;
    for cycle in 0..cycles {
        let mut child = Command::new(&exe)
            .args(["--exact", "crash_loop", "--nocapture", "--test-threads", "1"])
            .env(
                "CAIRN_CRASH_CHILD",
                format!("{}|{}|{}", dir.display(), expected.display(), cycle + 1),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(rng.gen_range(30..400)));
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            panic!("cycle {cycle}: the child exited on its own ({status}): {err}");
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let (committed, pending) = read_expected(&expected);
        let (db, second) = open_trees(&dir, cycle + 1);
        let mut actual = vec![ABSENT; TREES * KEYS];
        for (t, tree) in [&*db, &second].into_iter().enumerate() {
            for kv in tree.iter() {
                let (k, v) = kv.unwrap_or_else(|e| panic!("cycle {cycle}: scan failed: {e}"));
                let k: usize = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
                actual[t * KEYS + k] = decode(&v);
            }
        }
        // Either none or all of the in-flight batch is visible; everything else is committed.
        let applied = !pending.is_empty() && pending.iter().all(|&(s, v)| actual[s] == v);
        let mut want = committed.clone();
        if applied {
            for &(s, v) in &pending {
                want[s] = v;
            }
            in_flight_applied += 1;
        }
        let diff: Vec<usize> = (0..want.len()).filter(|&s| want[s] != actual[s]).collect();
        assert!(
            diff.is_empty(),
            "cycle {cycle}: {} keys differ (first: slot {} want {} got {}); in-flight batch {:?}",
            diff.len(),
            diff[0],
            want[diff[0]],
            actual[diff[0]],
            pending
        );
        present = actual.iter().filter(|&&v| v != ABSENT).count();
        // Point reads agree with the scan; the hot keys twice (the second from the key-value
        // cache the first filled).
        for (t, tree) in [&*db, &second].into_iter().enumerate() {
            for k in (0..32).chain(0..32) {
                let got = tree.get(key(k)).unwrap().map_or(ABSENT, |v| decode(&v));
                assert_eq!(
                    got,
                    actual[t * KEYS + k],
                    "cycle {cycle} get of hot key {k} of tree {t}"
                );
            }
        }
        for _ in 0..50 {
            let k = rng.gen_range(0..KEYS);
            assert_eq!(
                db.get(key(k)).unwrap().map_or(ABSENT, |v| decode(&v)),
                actual[k],
                "cycle {cycle} get"
            );
        }
        // The recovered state becomes the committed state for the next child.
        let f = OpenOptions::new().write(true).open(&expected).unwrap();
        for (s, v) in actual.iter().enumerate() {
            f.write_all_at(&v.to_le_bytes(), slot_offset(s)).unwrap();
        }
        f.write_all_at(&0u32.to_le_bytes(), PENDING_AT).unwrap();
        drop(second);
        db.close().unwrap();
    }
    println!("{cycles} crash cycles verified; in-flight batch present after {in_flight_applied} of them; {present} keys present at the end");
    assert!(
        present > KEYS,
        "the children wrote too little to test anything: {present} keys"
    );
}
