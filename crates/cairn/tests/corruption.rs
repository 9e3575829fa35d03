//! Corruption matrix: every file kind of a database (WAL, tables, MANIFEST, CURRENT, OPTIONS)
//! damaged by single-bit flips, zeroed ranges, truncation and substitution from another
//! database, then opened under each WAL recovery mode. Opening either fails with a typed
//! `Corruption` naming the damaged file, or succeeds; then every read returns the right value
//! or a `Corruption` error (tables are read lazily) — never a wrong value, never a false "not
//! found" — and WAL-only writes survive as a prefix of their history. Tables carry range
//! filters, and short bounded range reads (which consult them) follow the same rule.
//! `CAIRN_CORRUPTION_POSITIONS` (default 24) sets flips and zeroings per file.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::{read_all, write_all_synced, FileSystem, MemFs};
use cairn::{Db, Error, Options, RecoveryMode, WriteOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const DIR: &str = "/c";

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
const WAL_WRITES: usize = 150;

fn options(fs: &MemFs, mode: RecoveryMode) -> Options {
    let mut o = common::small(Arc::new(fs.clone()), 32 << 10);
    o.table.block_size = 256;
    o.compaction.max_bytes_for_level_base = 32 << 10;
    o.compaction.target_file_size = 8 << 10;
    o.filters.segment_size = 2 << 10;
    // Nothing is pending at reopen, so no background job touches a damaged table.
    o.compaction.l0_trigger = 8;
    o.filters.bits_per_key = 10.0;
    o.range_filter.bits_per_key = 16.0;
    o.wal.recovery_mode = mode;
    o
}

fn wkey(j: usize) -> Vec<u8> {
    format!("w{j:05}").into_bytes()
}

/// Builds a database whose tables span levels and whose WAL holds `WAL_WRITES` writes no table
/// has. Returns the table-resident state (`m1`) and the WAL-only values in write order.
fn build(fs: &MemFs, seed: u64) -> (Model, Vec<Vec<u8>>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let db = Db::open(DIR, options(fs, RecoveryMode::PointInTime)).unwrap();
    let mut m1 = BTreeMap::new();
    for round in 0..3 {
        for _ in 0..700 {
            let k = format!("k{:05}", rng.gen_range(0..2000)).into_bytes();
            if rng.gen_bool(0.1) {
                db.delete(&k).unwrap();
                m1.remove(&k);
            } else {
                let v = format!("v{round}-{seed}-{}", "x".repeat(rng.gen_range(0..40))).into_bytes();
                db.put(&k, &v).unwrap();
                m1.insert(k, v);
            }
        }
        db.flush_all().unwrap();
        if round == 1 {
            db.compact_range::<&[u8], _>(..).unwrap();
        }
    }
    db.wait_for_background().unwrap();
    drop(db);
    // The manifest's last edit must be a flush (the test of a lost last edit relies on it),
    // whatever order the background flushes, merges and trivial moves above ran in: reopen with
    // nothing for compaction to do, and flush one more key.
    let settled = {
        let mut o = options(fs, RecoveryMode::PointInTime);
        o.compaction.max_bytes_for_level_base = 1 << 40;
        o.compaction.l0_trigger = 64;
        o.write_stalls.l0_slowdown_trigger = 64;
        o.write_stalls.l0_stop_trigger = 64;
        o
    };
    let db = Db::open(DIR, settled).unwrap();
    // Seeded like every value: the other database's table must differ in content, not only
    // in its creation time.
    let last = format!("flushed last {seed}").into_bytes();
    db.put(b"k-last", &last).unwrap();
    m1.insert(b"k-last".to_vec(), last);
    db.flush_all().unwrap();
    let mut wal = Vec::new();
    for j in 0..WAL_WRITES {
        let v = format!("wal-{seed}-{j}").into_bytes();
        let sync = j % 50 == 49;
        let mut b = cairn::WriteBatch::new();
        b.put(wkey(j), &v);
        db.write(
            b,
            &WriteOptions {
                sync,
                ..Default::default()
            },
        )
        .unwrap();
        wal.push(v);
    }
    // Dropped, not closed: the WAL writes stay in the WAL.
    drop(db);
    (m1, wal)
}

fn copy_fs(from: &MemFs) -> MemFs {
    let to = MemFs::new();
    to.create_dir_all(Path::new(DIR)).unwrap();
    for name in from.list(Path::new(DIR)).unwrap() {
        let p = Path::new(DIR).join(&name);
        if name == "LOCK" {
            continue;
        }
        write_all_synced(&to, &p, &read_all(from, &p).unwrap()).unwrap();
    }
    to
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Wal,
    Table,
    Manifest,
    Current,
    Options,
}

fn kind_of(name: &str) -> Option<Kind> {
    if name.ends_with(".wal") {
        Some(Kind::Wal)
    } else if name.ends_with(".sst") {
        Some(Kind::Table)
    } else if name.starts_with("MANIFEST") {
        Some(Kind::Manifest)
    } else if name == "CURRENT" {
        Some(Kind::Current)
    } else if name.starts_with("OPTIONS") {
        Some(Kind::Options)
    } else {
        None
    }
}

#[derive(Debug, Clone)]
enum Damage {
    Flip(u64, u8),
    Zero(u64, u64),
    Truncate(u64),
    Substitute(Vec<u8>),
}

#[derive(Default)]
struct Tally {
    cases: usize,
    open_failed: usize,
    reads_failed: usize,
    clean: usize,
    violations: Vec<String>,
}

/// Applies one damage to `file` in a copy of `base`, opens, and checks everything.
/// Whether cutting the (undamaged) WAL at `cut` ends it between two records (after a record's
/// last fragment, before the next record's first, padding included).
fn clean_cut(base: &MemFs, path: &Path, cut: u64) -> bool {
    let file = base.open_read(path, cairn::env::ReadOptions::default()).unwrap();
    let len = base.file_size(path).unwrap();
    let number = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse().ok())
        .unwrap();
    let mut r = cairn::wal::WalReader::new(file, path, number, RecoveryMode::AbsoluteConsistency);
    // Between the end of each record (the header first: a log without it is refused) and the
    // start of the next, or the end of the file.
    let (mut ends, mut starts) = (Vec::new(), Vec::new());
    while let Some(rec) = r.next_record().unwrap() {
        if !ends.is_empty() {
            starts.push(rec.offset);
        }
        ends.push(rec.end_offset);
    }
    starts.push(len);
    ends.iter()
        .zip(&starts)
        .any(|(&end, &next)| (end..=next).contains(&cut))
}

#[allow(clippy::too_many_arguments, reason = "the check takes every piece of one case")]
fn check(
    base: &MemFs,
    file: &str,
    kind: Kind,
    damage: &Damage,
    mode: RecoveryMode,
    m1: &Model,
    wal: &[Vec<u8>],
    t: &mut Tally,
) {
    t.cases += 1;
    let fs = copy_fs(base);
    let path = PathBuf::from(DIR).join(file);
    let mut bytes = read_all(&fs, &path).unwrap();
    let original = bytes.clone();
    match damage {
        Damage::Flip(pos, bit) => bytes[*pos as usize] ^= 1 << bit,
        Damage::Zero(pos, len) => bytes[*pos as usize..(*pos + *len) as usize].fill(0),
        Damage::Truncate(len) => bytes.truncate(*len as usize),
        Damage::Substitute(other) => bytes = other.clone(),
    }
    fs.remove_file(&path).unwrap();
    write_all_synced(&fs, &path, &bytes).unwrap();
    let case = format!("{file} ({kind:?}) {damage:?} {mode:?}", damage = short(damage));
    // The error names the damaged file, or (a table that a damaged manifest misdescribes)
    // names the table and says which manifest lists it.
    let names_file = |e: &Error| match e {
        Error::Corruption { file: f, what, .. } => f.file_name() == path.file_name() || what.contains(file),
        _ => false,
    };
    // `verify` (what `cairn verify` runs) reads the same bytes with PointInTime's rules.
    let verified = (mode == RecoveryMode::PointInTime).then(|| {
        let report = cairn::inspect::verify(&fs, Path::new(DIR)).unwrap();
        let flagged = report.damage.iter().any(|d| d.file.file_name() == path.file_name());
        // Every byte of a table, CURRENT and OPTIONS is under a checksum: any change is found.
        if bytes != original && matches!(kind, Kind::Table | Kind::Options) && !flagged {
            t.violations
                .push(format!("{case}: verify missed it: {:?}", report.damage));
        }
        if bytes != original && kind == Kind::Current && report.is_ok() {
            t.violations.push(format!("{case}: verify missed damage to CURRENT"));
        }
        report
    });
    let db = match Db::open(DIR, options(&fs, mode)) {
        Err(e) => {
            if verified.as_ref().is_some_and(|r| r.is_ok()) {
                t.violations
                    .push(format!("{case}: open refused it ({e}) but verify found nothing"));
            }
            t.open_failed += 1;
            if !e.is_corruption() {
                t.violations
                    .push(format!("{case}: open failed with a non-corruption error: {e}"));
            } else if !names_file(&e) && kind != Kind::Current {
                t.violations.push(format!("{case}: the error names another file: {e}"));
            }
            return;
        }
        Ok(db) => db,
    };
    // WAL writes must be a prefix; AbsoluteConsistency loses none.
    let mut failed = false;
    let mut present = 0;
    let mut prefix_ended = false;
    for (j, v) in wal.iter().enumerate() {
        match db.get(wkey(j)) {
            Ok(Some(got)) if &got == v => {
                if prefix_ended {
                    t.violations
                        .push(format!("{case}: WAL write {j} present after a lost one (a hole)"));
                }
                present += 1;
            }
            Ok(Some(_)) => t.violations.push(format!("{case}: WAL write {j} has a wrong value")),
            Ok(None) => prefix_ended = true,
            Err(e) if e.is_corruption() => failed = true,
            Err(e) => t.violations.push(format!("{case}: read of WAL write {j}: {e}")),
        }
    }
    if kind != Kind::Wal && present != wal.len() {
        t.violations.push(format!(
            "{case}: damage outside the WAL lost WAL writes ({present} of {})",
            wal.len()
        ));
    }
    // A cut between two records leaves a shorter log that no check can tell from one written
    // that way (RocksDB's kAbsoluteConsistency cannot either): only other damage must fail.
    let undetectable = || matches!(damage, Damage::Truncate(cut) if clean_cut(base, &path, *cut));
    if kind == Kind::Wal && mode == RecoveryMode::AbsoluteConsistency && present != wal.len() && !undetectable() {
        t.violations.push(format!(
            "{case}: AbsoluteConsistency opened with {present} of {} WAL writes",
            wal.len()
        ));
    }
    for (k, v) in m1 {
        match db.get(k) {
            Ok(Some(got)) if &got == v => {}
            Ok(Some(_)) => t
                .violations
                .push(format!("{case}: wrong value for {}", String::from_utf8_lossy(k))),
            Ok(None) => t
                .violations
                .push(format!("{case}: false not-found for {}", String::from_utf8_lossy(k))),
            Err(e) if e.is_corruption() && kind == Kind::Table => failed = true,
            Err(e) => t.violations.push(format!("{case}: get: {e}")),
        }
    }
    // A scan yields the expected sequence up to an error, if any.
    let mut expect: Vec<(Vec<u8>, Vec<u8>)> = m1.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    expect.extend((0..present).map(|j| (wkey(j), wal[j].clone())));
    expect.sort();
    let mut n = 0;
    for item in db.iter() {
        match item {
            Ok(kv) => {
                if expect.get(n) != Some(&kv) {
                    t.violations.push(format!("{case}: scan entry {n} differs"));
                    break;
                }
                n += 1;
            }
            Err(e) => {
                if !(e.is_corruption() && kind == Kind::Table) {
                    t.violations.push(format!("{case}: scan: {e}"));
                }
                failed = true;
                break;
            }
        }
    }
    if !failed && n != expect.len() {
        t.violations
            .push(format!("{case}: scan ended early at {n} of {}", expect.len()));
    }
    // Short bounded ranges (the range filters' reads): the model's entries or corruption.
    for i in 0..60u32 {
        let (lo, hi) = (
            format!("k{:05}", i * 33).into_bytes(),
            format!("k{:05}", i * 33 + 4).into_bytes(),
        );
        let want: Vec<_> = expect.iter().filter(|(k, _)| *k >= lo && *k < hi).cloned().collect();
        match db.range(lo.clone()..hi).collect::<Result<Vec<_>, _>>() {
            Ok(got) if got == want => {}
            Ok(_) => t
                .violations
                .push(format!("{case}: range from {} differs", String::from_utf8_lossy(&lo))),
            Err(e) if e.is_corruption() && kind == Kind::Table => failed = true,
            Err(e) => t.violations.push(format!("{case}: range: {e}")),
        }
    }
    if failed && verified.as_ref().is_some_and(|r| r.is_ok()) {
        t.violations
            .push(format!("{case}: reads failed but verify found nothing"));
    }
    if failed {
        t.reads_failed += 1;
    } else {
        t.clean += 1;
    }
}

fn short(d: &Damage) -> String {
    match d {
        Damage::Substitute(b) => format!("Substitute({} bytes)", b.len()),
        other => format!("{other:?}"),
    }
}

#[test]
fn corruption_matrix() {
    let positions: usize = std::env::var("CAIRN_CORRUPTION_POSITIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24);
    let base = MemFs::new();
    let (m1, wal) = build(&base, 1);
    let other = MemFs::new();
    build(&other, 2);
    let mut files = base.list(Path::new(DIR)).unwrap();
    files.sort();
    let other_files = other.list(Path::new(DIR)).unwrap();
    let mut t = Tally::default();
    let mut rng = StdRng::seed_from_u64(7);
    let mut per_kind: BTreeMap<String, usize> = BTreeMap::new();
    for file in &files {
        let Some(kind) = kind_of(file) else { continue };
        let len = base.file_size(&Path::new(DIR).join(file)).unwrap();
        assert!(len > 0 || kind == Kind::Wal, "{file} is empty");
        if len == 0 {
            continue;
        }
        let mut damages = Vec::new();
        // Flips: the first and last bytes (headers, footers, trailers), then spread + random.
        let spots: Vec<u64> = [0, len - 1, len.saturating_sub(8), len.saturating_sub(48)]
            .into_iter()
            .chain((0..positions as u64).map(|i| i * len / positions as u64))
            .chain((0..positions).map(|_| rng.gen_range(0..len)))
            .collect();
        for p in spots {
            damages.push(Damage::Flip(p.min(len - 1), rng.gen_range(0..8)));
        }
        for _ in 0..positions / 4 + 1 {
            let at = rng.gen_range(0..len);
            damages.push(Damage::Zero(at, (len - at).min(rng.gen_range(1..200))));
        }
        if kind == Kind::Wal {
            let p = Path::new(DIR).join(file);
            assert!(
                clean_cut(&base, &p, len) && !clean_cut(&base, &p, 1),
                "{file}: record boundaries"
            );
        }
        for cut in [0, 1, len / 2, len.saturating_sub(1), rng.gen_range(0..len)] {
            damages.push(Damage::Truncate(cut));
        }
        // The same kind of file from another database with other contents.
        let sub = other_files
            .iter()
            .find(|n| *n == file)
            .or_else(|| other_files.iter().find(|n| kind_of(n) == Some(kind)));
        if let Some(s) = sub {
            let b = read_all(&other, &Path::new(DIR).join(s)).unwrap();
            if b != read_all(&base, &Path::new(DIR).join(file)).unwrap() {
                damages.push(Damage::Substitute(b));
            }
        }
        let modes: &[RecoveryMode] = if kind == Kind::Wal {
            &[
                RecoveryMode::PointInTime,
                RecoveryMode::TolerateCorruptedTail,
                RecoveryMode::AbsoluteConsistency,
            ]
        } else {
            &[RecoveryMode::PointInTime]
        };
        for d in &damages {
            for &mode in modes {
                check(&base, file, kind, d, mode, &m1, &wal, &mut t);
                *per_kind.entry(format!("{kind:?}")).or_default() += 1;
            }
        }
    }
    println!(
        "{} cases {per_kind:?}: open refused {}, reads reported corruption {}, intact {}",
        t.cases, t.open_failed, t.reads_failed, t.clean
    );
    for k in ["Wal", "Table", "Manifest", "Current", "Options"] {
        assert!(per_kind.get(k).copied().unwrap_or(0) > 0, "no {k} file was damaged");
    }
    // Group violations by their text without numbers, so one defect reads as one line.
    let mut groups: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for v in &t.violations {
        let class: String = v
            .split(": ")
            .skip(1)
            .collect::<Vec<_>>()
            .join(": ")
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .collect();
        let kind = v.split(' ').nth(1).unwrap_or("").to_string();
        let dmg: String = v
            .split(' ')
            .nth(2)
            .unwrap_or("")
            .chars()
            .take_while(|c| c.is_alphabetic())
            .collect();
        let e = groups.entry(format!("{kind} {dmg}: {class}")).or_insert((0, v.clone()));
        e.0 += 1;
    }
    assert!(
        t.violations.is_empty(),
        "{} violations in {} groups:\n{}",
        t.violations.len(),
        groups.len(),
        groups
            .iter()
            .map(|(g, (n, ex))| format!("{n:6} {g}\n       e.g. {ex}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Zeroing the manifest's last edit together with the marker record after it leaves no proof
/// that the edit was synced, so it reads as a torn tail. The edit's effect must not vanish
/// silently: recovery notices that the WAL the older state needs was already deleted.
#[test]
fn a_lost_last_manifest_edit_is_refused() {
    for seed in 1..4 {
        let base = MemFs::new();
        let (m1, wal) = build(&base, seed);
        let files = base.list(Path::new(DIR)).unwrap();
        let man = files.iter().find(|n| n.starts_with("MANIFEST")).unwrap().clone();
        let len = base.file_size(&Path::new(DIR).join(&man)).unwrap();
        // The marker is 23 bytes (7-byte fragment header + 16-byte record prefix).
        for (cut, must_refuse) in [(len - 10, false), (len - 23, false), (len - 24, true), (len - 60, true)] {
            let mut t = Tally::default();
            let d = Damage::Zero(cut, len - cut);
            check(
                &base,
                &man,
                Kind::Manifest,
                &d,
                RecoveryMode::PointInTime,
                &m1,
                &wal,
                &mut t,
            );
            assert!(t.violations.is_empty(), "seed {seed} {d:?}: {:?}", t.violations.first());
            assert!(!must_refuse || t.open_failed == 1, "seed {seed} {d:?} was accepted");
        }
    }
}

/// CURRENT naming a manifest that does not exist (a CURRENT copied from another database, or
/// one whose manifest was removed) is corruption naming CURRENT, not an I/O error.
#[test]
fn current_naming_a_missing_manifest_is_corruption() {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(&fs, RecoveryMode::PointInTime)).unwrap();
    db.put(b"k", b"v").unwrap();
    drop(db);
    let name = "MANIFEST-999999";
    let line = format!("{name} {:08x}\n", cairn::format::coding::masked_crc(&[name.as_bytes()]));
    write_all_synced(&fs, &Path::new(DIR).join("CURRENT"), line.as_bytes()).unwrap();
    match Db::open(DIR, options(&fs, RecoveryMode::PointInTime)) {
        Err(Error::Corruption { file, what, .. }) => {
            assert!(file.ends_with("CURRENT"), "{}", file.display());
            assert!(what.contains("MANIFEST-999999"), "{what}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}
