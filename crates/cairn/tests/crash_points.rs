//! Power cut at every file-system operation of a scripted workload that covers open, WAL
//! rotation, flush, compaction and manifest rotation: for every k, the k-th operation kills the
//! file system, unsynced state is dropped (`FaultFs::crash`), and a fresh open must succeed and
//! hold a prefix of the write history that includes everything made durable (synced writes,
//! completed flushes and compactions).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::{CrashMode, FaultFs, FileSystem, MemFs};
use cairn::{Db, Options, WriteBatch, WriteOptions};
use std::collections::BTreeMap;
use std::sync::Arc;

type State = (BTreeMap<Vec<u8>, Vec<u8>>, BTreeMap<Vec<u8>, Vec<u8>>);

fn options(fs: &FaultFs) -> Options {
    let mut o = common::small(Arc::new(fs.clone()), 2048);
    o.compaction.target_file_size = 4096;
    o.filters.segment_size = 4 << 20;
    o.compaction.l0_trigger = 2;
    o.files.max_manifest_size = 1024;
    o
}

/// The write history: `states[i]` is the state after write `i` (`states[0]` is empty).
struct History {
    states: Vec<State>,
    durable: usize,
}

fn key(i: u32) -> Vec<u8> {
    format!("k{:03}", i % 97).into_bytes()
}

/// The scripted workload; stops at the first error (the crash point).
fn workload(db: &Db, h: &mut History) -> cairn::Result<()> {
    let t = db.tree("second")?;
    for phase in 0..3u32 {
        for i in 0..60u32 {
            let n = phase * 100 + i;
            let (mut a, mut b) = h.states.last().cloned().unwrap_or_default();
            let mut batch = WriteBatch::new();
            let v = format!("value-{n}-{}", "x".repeat((n % 40) as usize)).into_bytes();
            batch.put(key(n), &v);
            a.insert(key(n), v.clone());
            if n % 3 == 0 {
                batch.put_in(&t, key(n + 1), &v);
                b.insert(key(n + 1), v);
            }
            if n % 7 == 0 {
                batch.delete(key(n + 5));
                a.remove(&key(n + 5));
            }
            let (lo, hi) = (key(n + 20), key(n + 26));
            if n % 13 == 12 && lo < hi {
                // A range delete over keys written before (in earlier tables too).
                let gone: Vec<Vec<u8>> = a.range(lo.clone()..hi.clone()).map(|(k, _)| k.clone()).collect();
                for k in gone {
                    a.remove(&k);
                }
                batch.delete_range(lo, hi);
            }
            // The state is a candidate as soon as the write is attempted: a failed write may
            // still have reached the log.
            h.states.push((a, b));
            let sync = n % 11 == 0;
            db.write(
                batch,
                &WriteOptions {
                    sync,
                    ..Default::default()
                },
            )?;
            if sync {
                h.durable = h.states.len() - 1;
            }
        }
        // Each phase ends with an operation that makes every earlier write durable.
        match phase {
            0 => db.flush_all()?,
            1 => db.compact_range::<&[u8], _>(..)?,
            _ => {
                db.wait_for_background()?;
                t.flush()?;
                db.flush_all()?;
            }
        }
        h.durable = h.states.len() - 1;
    }
    Ok(())
}

fn run(k: Option<u64>) -> (u64, bool) {
    let fs = FaultFs::new(Arc::new(MemFs::new()), k.unwrap_or(0));
    if let Some(k) = k {
        fs.crash_at(k);
    }
    let mut h = History {
        states: vec![State::default()],
        durable: 0,
    };
    let completed = match Db::open("/db", options(&fs)) {
        Ok(db) => {
            let r = workload(&db, &mut h);
            drop(db);
            r.is_ok()
        }
        Err(_) => false,
    };
    let ops = fs.op_count();
    if k.is_none() {
        // The script must have rotated manifests and WALs and written tables.
        let current =
            String::from_utf8(cairn::env::read_all(&fs, std::path::Path::new("/db/CURRENT")).unwrap()).unwrap();
        let manifest: u64 = current[9..15].parse().unwrap();
        let tables = fs
            .list(std::path::Path::new("/db"))
            .unwrap()
            .iter()
            .filter(|n| n.ends_with(".sst"))
            .count();
        println!(
            "dry run: {ops} operations, CURRENT -> {}, {tables} live tables",
            current.trim()
        );
        assert!(manifest > 5 && tables > 0, "manifest {manifest}, tables {tables}");
        return (ops, completed);
    }
    fs.crash(CrashMode::DropUnsynced).unwrap();
    fs.restart();
    fs.clear_faults();
    let db = Db::open("/db", options(&fs)).unwrap_or_else(|e| {
        let mut l = fs.list(std::path::Path::new("/db")).unwrap();
        l.sort();
        panic!("crash at op {k:?}: reopen failed: {e}; files {l:?}")
    });
    let t = db.tree("second").unwrap();
    let a: BTreeMap<_, _> = db.iter().map(|r| r.unwrap()).collect();
    let b: BTreeMap<_, _> = t.iter().map(|r| r.unwrap()).collect();
    let at = h
        .states
        .iter()
        .rposition(|(x, y)| *x == a && *y == b)
        .unwrap_or_else(|| panic!("crash at op {k:?}: recovered state is not a prefix of the history"));
    assert!(
        at >= h.durable,
        "crash at op {k:?}: lost durable writes (state {at} < durable {})",
        h.durable
    );
    // The recovered database keeps working.
    db.put(b"after", b"crash").unwrap();
    db.flush_all().unwrap();
    (ops, completed)
}

#[test]
fn crash_at_every_file_system_operation() {
    let (total, completed) = run(None);
    assert!(completed, "the workload must complete without faults");
    assert!(
        total > 300,
        "the workload should exercise the file system: {total} operations"
    );
    // Every operation up to 2,000, then every 7th (background work makes counts vary a little).
    let points: Vec<u64> = (1..=total.min(2000)).chain((2001..=total).step_by(7)).collect();
    for &k in &points {
        run(Some(k));
    }
    println!(
        "{} crash points verified over {total} file-system operations",
        points.len()
    );
}

/// A file system whose table creations wait while its gate is shut: holds flushes back so a
/// test sees what the write path alone did. Its second gate holds the WAL thread's spare WALs.
#[derive(Debug)]
struct Gated {
    inner: FaultFs,
    shut: std::sync::Mutex<bool>,
    spares_shut: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
}

impl Gated {
    /// A gated file system (shut) over a fresh fault-injecting one.
    fn shut(seed: u64) -> (FaultFs, Arc<Gated>) {
        let fault = FaultFs::new(Arc::new(MemFs::new()), seed);
        let fs = Arc::new(Gated {
            inner: fault.clone(),
            shut: std::sync::Mutex::new(true),
            spares_shut: std::sync::Mutex::new(false),
            opened: std::sync::Condvar::new(),
        });
        (fault, fs)
    }

    fn set(&self, shut: bool) {
        *self.shut.lock().unwrap() = shut;
        self.opened.notify_all();
    }

    fn hold_spares(&self, shut: bool) {
        *self.spares_shut.lock().unwrap() = shut;
        self.opened.notify_all();
    }

    fn wait_at(&self, gate: &std::sync::Mutex<bool>) {
        let mut shut = gate.lock().unwrap();
        while *shut {
            shut = self.opened.wait(shut).unwrap();
        }
    }
}

/// Opens the gate when dropped: a failing assertion must not leave a flush waiting forever (the
/// database's drop waits for it).
struct OpenOnDrop(Arc<Gated>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.set(false);
        self.0.hold_spares(false);
    }
}

impl FileSystem for Gated {
    fn create(&self, path: &std::path::Path) -> cairn::Result<Box<dyn cairn::env::WritableFile>> {
        if path.extension().is_some_and(|e| e == "sst") {
            self.wait_at(&self.shut);
        }
        if std::thread::current().name() == Some("cairn-wal") {
            self.wait_at(&self.spares_shut);
        }
        self.inner.create(path)
    }
    fn open_append(&self, path: &std::path::Path) -> cairn::Result<Box<dyn cairn::env::WritableFile>> {
        self.inner.open_append(path)
    }
    fn open_read(
        &self,
        path: &std::path::Path,
        opts: cairn::env::ReadOptions,
    ) -> cairn::Result<Arc<dyn cairn::env::RandomAccessFile>> {
        self.inner.open_read(path, opts)
    }
    fn file_size(&self, path: &std::path::Path) -> cairn::Result<u64> {
        self.inner.file_size(path)
    }
    fn exists(&self, path: &std::path::Path) -> cairn::Result<bool> {
        self.inner.exists(path)
    }
    fn rename(&self, from: &std::path::Path, to: &std::path::Path) -> cairn::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &std::path::Path) -> cairn::Result<()> {
        self.inner.remove_file(path)
    }
    fn truncate(&self, path: &std::path::Path, len: u64) -> cairn::Result<()> {
        self.inner.truncate(path, len)
    }
    fn list(&self, dir: &std::path::Path) -> cairn::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn create_dir_all(&self, dir: &std::path::Path) -> cairn::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &std::path::Path) -> cairn::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn lock(&self, path: &std::path::Path) -> cairn::Result<Box<dyn cairn::env::FileLock>> {
        self.inner.lock(path)
    }
}

/// Puts `key(0)`, `key(1)`, ... until a memtable switch has started a second WAL; returns the
/// count and the two WALs (every put but the last went to the first).
fn put_until_a_switch(db: &Db, fs: &dyn FileSystem) -> (u32, Vec<std::path::PathBuf>) {
    put_until_wals(db, fs, 0, 2)
}

/// Puts `key(from)`, `key(from + 1)`, ... until `wals` WALs hold records (a switch puts the
/// next write in a new WAL); returns the next key and those WALs, in number order.
fn put_until_wals(db: &Db, fs: &dyn FileSystem, from: u32, wals: usize) -> (u32, Vec<std::path::PathBuf>) {
    let dir = std::path::Path::new("/db");
    let written_wals = || -> Vec<std::path::PathBuf> {
        common::files(fs, dir, ".wal")
            .into_iter()
            .filter(|p| fs.file_size(p).unwrap() > 7 + 24)
            .collect()
    };
    let mut written = from;
    while written_wals().len() < wals {
        db.put(key(written), [b'v'; 100]).unwrap();
        written += 1;
        assert!(written < from + 200, "no memtable switch");
    }
    (written, written_wals())
}

/// The WAL numbers on disk under their own and their temporary names (a spare's).
fn wal_numbers(fs: &dyn FileSystem) -> (Vec<u64>, Vec<u64>) {
    let mut named = Vec::new();
    let mut spare = Vec::new();
    for n in fs.list(std::path::Path::new("/db")).unwrap() {
        let number = |s: &str| s.split('.').next().and_then(|x| x.parse::<u64>().ok());
        if n.ends_with(".wal") {
            named.extend(number(&n));
        } else if n.ends_with(".wal.tmp") {
            spare.extend(number(&n));
        }
    }
    named.sort_unstable();
    spare.sort_unstable();
    (named, spare)
}

/// Waits (bounded) until the WAL thread has a spare WAL numbered above `above`.
fn wait_for_a_spare(fs: &dyn FileSystem, above: u64) -> u64 {
    for _ in 0..2000 {
        if let Some(&n) = wal_numbers(fs).1.iter().find(|&&n| n > above) {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("no spare WAL above {above} after 10 s: {:?}", wal_numbers(fs));
}

/// Cuts the power with the flush still held back, lets the flush go, and drops the database
/// (the file system is back up for the next open).
fn power_cut(fault: &FaultFs, fs: &Gated, db: Db) {
    fault.crash(CrashMode::DropUnsynced).unwrap();
    fs.set(false);
    drop(db);
    fault.restart();
}

/// What a reopened `db` holds of `key(0)..key(written)` is a prefix, and all of it (and the
/// synced marker) when a synced write followed them.
fn assert_prefix(db: &Db, written: u32, synced_write: bool) {
    let found: Vec<u32> = (0..written).filter(|&i| db.get(key(i)).unwrap().is_some()).collect();
    assert_eq!(found, (0..found.len() as u32).collect::<Vec<_>>(), "not a prefix");
    if synced_write {
        assert_eq!(found.len() as u32, written, "writes before a synced write were lost");
        assert_eq!(db.get(b"synced").unwrap().as_deref(), Some(&b"yes"[..]));
    }
}

fn put_synced(db: &Db, k: &[u8], v: &[u8]) {
    let mut b = WriteBatch::new();
    b.put(k, v);
    let sync = WriteOptions {
        sync: true,
        ..WriteOptions::default()
    };
    db.write(b, &sync).unwrap();
}

/// A memtable switch leaves the old WAL's tail to the flush or the next synced write (it used
/// to sync it, holding every writer); a power cut before either keeps a prefix, and a synced
/// write makes every earlier write durable, in every WAL.
#[test]
fn a_switch_leaves_the_old_wal_to_the_flush_or_the_next_synced_write() {
    for synced_write in [false, true] {
        let (fault, fs) = Gated::shut(1);
        let o = common::small(fs.clone(), 2048);
        let db = Db::open("/db", o.clone()).unwrap();
        let _open = OpenOnDrop(fs.clone()); // dropped before `db`
        let (written, wals) = put_until_a_switch(&db, &*fs);
        assert!(
            fault.unsynced_bytes(&wals[0]) > 0,
            "the switch synced the old WAL on the write path"
        );
        if synced_write {
            put_synced(&db, b"synced", b"yes");
            assert_eq!(
                fault.unsynced_bytes(&wals[0]),
                0,
                "a synced write left an older WAL unsynced"
            );
        }
        power_cut(&fault, &fs, db);
        let db = Db::open("/db", o).unwrap();
        assert_prefix(&db, written, synced_write);
        // The flush, once let through, syncs closed WALs before its tables count.
        db.put(b"x", b"y").unwrap();
        db.flush_all().unwrap();
        drop(db);
    }
}

/// A closed WAL that lost its whole unsynced end — cut exactly at a record boundary, so it
/// reads as complete — ends the recovered history: the next WAL's records, newer than what
/// was lost, are not replayed (their sequence numbers do not follow on).
#[test]
fn a_log_cut_at_a_record_boundary_ends_the_history() {
    let (fault, fs) = Gated::shut(2);
    let o = common::small(fs.clone(), 2048);
    let (wals, header_len, written) = {
        let db = Db::open("/db", o.clone()).unwrap();
        let _open = OpenOnDrop(fs.clone());
        let (written, wals) = put_until_a_switch(&db, &*fs);
        let header_len = fs.file_size(&wals[0]).unwrap() - fault.unsynced_bytes(&wals[0]);
        db.put(b"later", b"in the second WAL").unwrap();
        put_synced(&db, b"synced", b"too");
        // Stop with everything durable, before the held-back flush can commit a table.
        fault.crash(CrashMode::DropUnsynced).unwrap();
        (wals, header_len, written)
    };
    fault.restart();
    assert!(written > 0 && header_len > 0);
    // The old WAL keeps only its header, as if none of its records had been synced.
    fault.truncate(&wals[0], header_len).unwrap();
    let db = Db::open("/db", o).unwrap();
    for i in 0..written {
        assert_eq!(db.get(key(i)).unwrap(), None, "key {i} of the cut WAL");
    }
    assert_eq!(
        db.get(b"later").unwrap(),
        None,
        "a write after the lost ones was replayed"
    );
    assert_eq!(
        db.get(b"synced").unwrap(),
        None,
        "a write after the lost ones was replayed"
    );
    db.put(b"after", b"recovery").unwrap();
    assert_eq!(db.get(b"after").unwrap().as_deref(), Some(&b"recovery"[..]));
}

/// A switch starts the spare WAL the WAL thread made ahead, renaming it into place without a
/// directory sync: a power cut before anything relies on it may lose the new WAL's name (only
/// writes newer than all the older WAL's), and a synced write makes the name durable first.
#[test]
fn a_switch_renames_the_spare_and_a_synced_write_makes_its_name_durable() {
    for synced_write in [false, true] {
        let (fault, fs) = Gated::shut(3);
        let o = common::small(fs.clone(), 2048);
        let db = Db::open("/db", o.clone()).unwrap();
        let _open = OpenOnDrop(fs.clone());
        let first = wal_numbers(&*fs).0[0];
        let spare = wait_for_a_spare(&*fs, first);
        let (written, wals) = put_until_a_switch(&db, &*fs);
        // The spare, or (when the switch came while the spare's header was being synced) a
        // log the switch made itself, just as unsynced in the directory.
        let new = wal_numbers(&*fs).0[1];
        assert!(new >= spare, "{wals:?}");
        if synced_write {
            put_synced(&db, b"synced", b"yes");
        }
        power_cut(&fault, &fs, db);
        let (named, _) = wal_numbers(&*fs);
        assert_eq!(named.contains(&new), synced_write, "{named:?}");
        let db = Db::open("/db", o).unwrap();
        assert_prefix(&db, written, synced_write);
        // The open removed the unused spare (a temporary file) and made its own.
        assert!(wal_numbers(&*fs).1.iter().all(|&n| n > new), "{:?}", wal_numbers(&*fs));
        drop(db);
    }
}

/// A spare finished after a switch had to make its own WAL is older than that WAL: it is
/// removed and never used (WALs replay in number order), and the next switch takes a newer one.
#[test]
fn a_late_spare_wal_is_never_used() {
    let (fault, fs) = Gated::shut(4);
    fs.hold_spares(true);
    let o = common::small(fs.clone(), 2048);
    let db = Db::open("/db", o.clone()).unwrap();
    let _open = OpenOnDrop(fs.clone());
    let (next, wals) = put_until_a_switch(&db, &*fs);
    let own = wal_numbers(&*fs).0[1];
    assert_eq!(wals.len(), 2);
    // The held spare was numbered before the switch's own WAL.
    fs.hold_spares(false);
    let spare = wait_for_a_spare(&*fs, own);
    assert!(
        wal_numbers(&*fs).1.iter().all(|&n| n > own),
        "a stale spare is left: {:?}",
        wal_numbers(&*fs)
    );
    // Overwrites in each WAL: replayed out of order, the older value would win.
    let (next, wals) = put_until_wals(&db, &*fs, next, 3);
    // The new spare, or a newer log the switch made while the spare's header was being synced.
    assert!(wal_numbers(&*fs).0.last() >= Some(&spare), "{wals:?}");
    put_synced(&db, &key(0), b"newest");
    power_cut(&fault, &fs, db);
    let db = Db::open("/db", o).unwrap();
    assert_eq!(db.get(key(0)).unwrap().as_deref(), Some(&b"newest"[..]));
    for i in 1..next {
        assert!(db.get(key(i)).unwrap().is_some(), "key {i} lost before a synced write");
    }
}
