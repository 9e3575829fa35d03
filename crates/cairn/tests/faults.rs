//! I/O fault injection: read faults always surface as errors (never a wrong value, never a
//! false "not found"); write and sync faults are never acknowledged, poison the database, and
//! after a reopen without faults every acknowledged write is there and nothing else is, except
//! possibly the write that failed (a prefix of the history).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::{FaultFs, FaultKind, MemFs, OpClass};
use cairn::{Db, Error, Options, WriteBatch, WriteOptions};
use common::key;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;

fn options(fs: &FaultFs) -> Options {
    let mut o = common::small(Arc::new(fs.clone()), 16 << 10);
    o.filters.segment_size = 4 << 20;
    // A tiny cache so that reads keep going to the (faulty) file system.
    o.memory.fixed_mut().block_cache = cairn::CacheSource::Own(16 << 10);
    o.set("merge.operator", "stringappend").unwrap();
    o
}

#[test]
fn read_faults_are_errors_never_wrong_answers() {
    let mut injected = 0;
    let mut errors = 0;
    let mut checked = 0;
    for (rate, kind) in [
        (1.0 / 32.0, FaultKind::Eio),
        (1.0 / 32.0, FaultKind::Short),
        (1.0 / 32.0, FaultKind::FlipBytes),
        (1.0 / 1000.0, FaultKind::FlipBytes),
        (1.0 / 1000.0, FaultKind::Eio),
    ] {
        let fs = FaultFs::new(Arc::new(MemFs::new()), 7);
        let db = Db::open("/r", options(&fs)).unwrap();
        let mut model = BTreeMap::new();
        for i in 0..4000u32 {
            let k = key(i * 2);
            let v = format!("value{i}").into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        db.compact_range::<&[u8], _>(..).unwrap();
        db.wait_for_background().unwrap();
        let before = fs.injected_faults();
        fs.fail_fraction(OpClass::Read, rate, kind);
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..20_000 {
            let i = rng.gen_range(0..8000u32);
            let k = key(i);
            match db.get(&k) {
                Ok(got) => {
                    assert_eq!(got.as_ref(), model.get(&k), "{kind:?} at {rate}: wrong answer for {i}");
                    checked += 1;
                }
                Err(e) => {
                    assert!(matches!(e, Error::Io { .. } | Error::Corruption { .. }), "{e}");
                    errors += 1;
                }
            }
        }
        // Scans: every entry returned is right; an error ends the scan.
        for _ in 0..20 {
            let mut expect = model.iter();
            for item in db.iter() {
                match item {
                    Ok((k, v)) => {
                        let (ek, ev) = expect.next().unwrap();
                        assert_eq!((&k, &v), (ek, ev), "{kind:?}: scan returned a wrong entry");
                    }
                    Err(_) => {
                        errors += 1;
                        break;
                    }
                }
            }
        }
        fs.clear_faults();
        injected += fs.injected_faults() - before;
        // Without faults everything reads back.
        for (k, v) in model.iter().step_by(97) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        }
    }
    println!("read faults injected {injected}; {errors} surfaced as errors; {checked} lookups answered correctly");
    assert!(
        injected > 500 && errors >= injected / 2,
        "injected {injected}, errors {errors}"
    );
}

/// Rounds per fault class (`CAIRN_FAULT_ROUNDS`, default 8; the long mode in README runs more).
fn fault_rounds() -> u64 {
    std::env::var("CAIRN_FAULT_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8)
}

#[test]
fn write_and_sync_faults_are_never_acknowledged() {
    let mut total_failed = 0;
    let rounds = fault_rounds();
    for (seed, (class, kind)) in [
        (OpClass::Write, FaultKind::Eio),
        (OpClass::Write, FaultKind::Enospc),
        (OpClass::Write, FaultKind::Short),
        (OpClass::Sync, FaultKind::Eio),
        (OpClass::Metadata, FaultKind::Enospc),
    ]
    .into_iter()
    .enumerate()
    {
        for round in 0..rounds {
            let fs = FaultFs::new(Arc::new(MemFs::new()), seed as u64 * 1_000_000 + round);
            let db = Db::open("/w", options(&fs)).unwrap();
            let mut rng = StdRng::seed_from_u64(round);
            let mut history: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = vec![BTreeMap::new()];
            // Faults start after a clean prefix of writes.
            let start = rng.gen_range(50..400);
            let mut acked = 0;
            let mut failed = false;
            for n in 0..3000u32 {
                if n == start {
                    // Metadata operations (file creation at memtable switches) are rare.
                    let rate = if class == OpClass::Metadata { 0.3 } else { 0.02 };
                    fs.fail_fraction(class, rate, kind);
                }
                let mut state = history.last().unwrap().clone();
                let mut b = WriteBatch::new();
                if rng.gen_bool(0.05) {
                    // A range delete first in the batch (the puts after it win over it).
                    let lo = rng.gen_range(0..490);
                    b.delete_range(key(lo), key(lo + 10));
                    for k in lo..lo + 10 {
                        state.remove(&key(k));
                    }
                }
                for _ in 0..rng.gen_range(1..4) {
                    let k = key(rng.gen_range(0..500));
                    let v = format!("{round}-{n}").into_bytes();
                    if rng.gen_bool(0.1) {
                        // A merge (stringappend) onto whatever the key holds.
                        b.merge(&k, &v);
                        let merged = match state.get(&k) {
                            Some(old) => [old.as_slice(), b",", &v].concat(),
                            None => v,
                        };
                        state.insert(k, merged);
                    } else if rng.gen_bool(0.2) {
                        // Expires in a day: an expiring entry, read back as the value.
                        b.put_with_ttl(&k, &v, std::time::Duration::from_secs(86_400));
                        state.insert(k, v);
                    } else {
                        b.put(&k, &v);
                        state.insert(k, v);
                    }
                }
                history.push(state);
                match db.write(
                    b,
                    &WriteOptions {
                        sync: rng.gen_bool(0.2),
                        ..Default::default()
                    },
                ) {
                    Ok(()) => acked = history.len() - 1,
                    Err(e) => {
                        failed = true;
                        assert!(
                            matches!(e, Error::Io { .. } | Error::Poisoned(_)),
                            "{class:?}/{kind:?}: unexpected error {e}"
                        );
                        // Poisoned: read-only from now on, reads still answer.
                        assert!(matches!(db.put(b"x", b"y"), Err(Error::Poisoned(_))));
                        break;
                    }
                }
            }
            assert!(failed, "{class:?}/{kind:?} round {round}: no fault hit a write");
            total_failed += 1;
            fs.clear_faults();
            drop(db);
            let db = Db::open("/w", options(&fs)).unwrap();
            let got: BTreeMap<_, _> = db.iter().map(|r| r.unwrap()).collect();
            let at = history
                .iter()
                .rposition(|s| *s == got)
                .unwrap_or_else(|| panic!("{class:?}/{kind:?} round {round}: state is not a prefix of the history"));
            // A process that did not crash keeps every acknowledged write; the failed one may or
            // may not have reached the log before the error.
            assert!(
                at >= acked && at <= acked + 1,
                "{class:?}/{kind:?} round {round}: recovered {at}, acknowledged {acked}"
            );
            db.put(b"after", b"reopen").unwrap();
        }
    }
    println!("{total_failed} rounds ended in an injected write/sync/metadata fault; every reopen held the acknowledged prefix");
}
