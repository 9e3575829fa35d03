//! Transactions: reads of their own writes (point and iterators, both directions, merges,
//! savepoints), the anomalies each isolation refuses (lost update and write skew; phantoms
//! under serializable isolation) and allows, conflicts with writes made outside transactions
//! and with versions already flushed to tables, pessimistic locks (timeouts, deadlocks), bad
//! use, the counters, and a bank of accounts that keeps its total under concurrent transfers.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::MemFs;
use cairn::{Concurrency, Db, Error, Isolation, Options, TransactionOptions};
use common::key;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};
use std::time::Duration;

fn options(fs: &MemFs) -> Options {
    let mut o = common::small(Arc::new(fs.clone()), 16 << 10);
    o.set("merge.operator", "stringappend").unwrap();
    o
}

fn open() -> Db {
    let fs = MemFs::new();
    Db::open("/t", options(&fs)).unwrap()
}

fn si() -> TransactionOptions {
    TransactionOptions {
        isolation: Isolation::Snapshot,
        ..Default::default()
    }
}

fn pessimistic(timeout: Duration) -> TransactionOptions {
    TransactionOptions {
        concurrency: Concurrency::Pessimistic,
        lock_timeout: timeout,
        ..Default::default()
    }
}

fn is_conflict<T: std::fmt::Debug>(r: cairn::Result<T>) -> bool {
    matches!(r, Err(Error::Conflict { .. }))
}

#[test]
fn a_transaction_reads_its_own_writes_and_commits_them_atomically() {
    let db = open();
    let users = db.tree("users").unwrap();
    db.put("a", "1").unwrap();
    db.put("b", "2").unwrap();
    db.put("c", "3").unwrap();
    let mut tx = db.transaction();
    tx.put("b", "20").unwrap();
    tx.delete("c").unwrap();
    tx.put("d", "4").unwrap();
    tx.merge("a", "x").unwrap();
    tx.put_in(&users, "u", "1").unwrap();
    assert_eq!(tx.get("a").unwrap(), Some(b"1,x".to_vec()));
    assert_eq!(tx.get("b").unwrap(), Some(b"20".to_vec()));
    assert_eq!(tx.get("c").unwrap(), None);
    assert_eq!(tx.get_in(&users, "u").unwrap(), Some(b"1".to_vec()));
    // Nothing is visible outside before the commit.
    assert_eq!(db.get("b").unwrap(), Some(b"2".to_vec()));
    assert_eq!(users.get("u").unwrap(), None);
    let want: Vec<(Vec<u8>, Vec<u8>)> = [("a", "1,x"), ("b", "20"), ("d", "4")]
        .iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect();
    let fwd: Vec<_> = tx.iter().map(|r| r.unwrap()).collect();
    assert_eq!(fwd, want);
    let mut back: Vec<_> = tx.iter().rev().map(|r| r.unwrap()).collect();
    back.reverse();
    assert_eq!(back, want);
    tx.commit().unwrap();
    assert_eq!(db.get("a").unwrap(), Some(b"1,x".to_vec()));
    assert_eq!(db.get("c").unwrap(), None);
    assert_eq!(db.get("d").unwrap(), Some(b"4".to_vec()));
    assert_eq!(users.get("u").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.stats().transactions.commits, 1);
}

#[test]
fn savepoints_undo_the_writes_after_them() {
    let db = open();
    let mut tx = db.transaction();
    tx.put("a", "1").unwrap();
    tx.set_savepoint();
    tx.put("a", "2").unwrap();
    tx.put("b", "2").unwrap();
    tx.set_savepoint();
    tx.delete("a").unwrap();
    tx.rollback_to_savepoint().unwrap();
    assert_eq!(tx.get("a").unwrap(), Some(b"2".to_vec()));
    tx.rollback_to_savepoint().unwrap();
    assert_eq!(tx.get("a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(tx.get("b").unwrap(), None);
    assert!(matches!(tx.rollback_to_savepoint(), Err(Error::InvalidArgument(_))));
    tx.commit().unwrap();
    assert_eq!(db.get("a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get("b").unwrap(), None);
}

#[test]
fn a_lost_update_is_refused_under_both_isolations() {
    for opts in [TransactionOptions::default(), si()] {
        let db = open();
        db.put("n", "0").unwrap();
        let mut t1 = db.transaction_with(&opts);
        let mut t2 = db.transaction_with(&opts);
        for t in [&mut t1, &mut t2] {
            let n: u32 = String::from_utf8(t.get("n").unwrap().unwrap())
                .unwrap()
                .parse()
                .unwrap();
            t.put("n", (n + 1).to_string()).unwrap();
        }
        t1.commit().unwrap();
        assert!(is_conflict(t2.commit()), "{:?}", opts.isolation);
        assert_eq!(db.get("n").unwrap(), Some(b"1".to_vec()));
        let s = db.stats().transactions;
        assert_eq!((s.commits, s.conflicts), (1, 1));
    }
}

#[test]
fn write_skew_is_refused_when_serializable_and_allowed_under_snapshot_isolation() {
    // Two doctors on call; each goes off call if the other is still on. Run one after the
    // other, the second sees the first gone and stays; run concurrently under snapshot
    // isolation, both leave.
    for (opts, refused) in [(TransactionOptions::default(), true), (si(), false)] {
        let db = open();
        db.put("alice", "on").unwrap();
        db.put("bob", "on").unwrap();
        let mut t1 = db.transaction_with(&opts);
        let mut t2 = db.transaction_with(&opts);
        for (t, me, other) in [(&mut t1, "alice", "bob"), (&mut t2, "bob", "alice")] {
            assert_eq!(t.get(me).unwrap(), Some(b"on".to_vec()));
            if t.get(other).unwrap() == Some(b"on".to_vec()) {
                t.put(me, "off").unwrap();
            }
        }
        t1.commit().unwrap();
        let r = t2.commit();
        assert_eq!(is_conflict(r.clone()), refused, "{:?}: {r:?}", opts.isolation);
        let on = ["alice", "bob"]
            .iter()
            .filter(|k| db.get(k).unwrap() == Some(b"on".to_vec()))
            .count();
        assert_eq!(on, usize::from(refused));
    }
}

#[test]
fn a_phantom_in_an_iterated_range_is_a_conflict_and_a_key_past_it_is_not() {
    let db = open();
    for i in [0, 2, 4, 6, 8] {
        db.put(key(i), "v").unwrap();
    }
    // Reads the whole range: an insert anywhere in it conflicts.
    let mut t = db.transaction();
    assert_eq!(t.range(key(0)..key(9)).count(), 5);
    t.put("count", "5").unwrap();
    db.put(key(5), "v").unwrap();
    assert!(is_conflict(t.commit()));
    // Reads only the first two keys: what lies past them is not what it saw.
    let mut t = db.transaction();
    let first: Vec<_> = t.range(key(0)..key(9)).take(2).map(|r| r.unwrap().0).collect();
    assert_eq!(first, vec![key(0), key(2)]);
    // Empty and inverted ranges yield nothing (and are no reads).
    assert_eq!(t.range(key(5)..key(1)).count(), 0);
    assert_eq!(
        t.range((std::ops::Bound::Excluded(key(2)), std::ops::Bound::Excluded(key(2))))
            .count(),
        0
    );
    t.put("first-two", "seen").unwrap();
    db.put(key(7), "v").unwrap();
    t.commit().unwrap();
    // From the back the same: covered down to the last key yielded.
    let mut t = db.transaction();
    let last = t.range(key(0)..key(9)).next_back().unwrap().unwrap().0;
    assert_eq!(last, key(8));
    t.put("last", "seen").unwrap();
    db.put(key(1), "v").unwrap();
    t.commit().unwrap();
    let mut t = db.transaction();
    t.range(key(0)..key(9)).next_back().unwrap().unwrap();
    t.put("last", "again").unwrap();
    db.delete(key(8)).unwrap();
    assert!(is_conflict(t.commit()), "the key yielded was deleted");
    // A range delete over an iterated range conflicts; under snapshot isolation ranges are
    // not checked.
    let mut t = db.transaction();
    assert!(t.range(key(0)..key(3)).count() > 0);
    t.put("x", "y").unwrap();
    db.delete_range(key(2), key(3)).unwrap();
    assert!(is_conflict(t.commit()));
    let mut t = db.transaction_with(&si());
    assert!(t.range(key(0)..key(9)).count() > 0);
    t.put("x", "z").unwrap();
    db.put(key(3), "v").unwrap();
    t.commit().unwrap();
}

#[test]
fn writes_outside_transactions_and_range_deletes_conflict_too() {
    let db = open();
    db.put("k", "1").unwrap();
    let mut t = db.transaction();
    t.get("k").unwrap();
    t.put("other", "x").unwrap();
    db.put("k", "2").unwrap();
    assert!(is_conflict(t.commit()));

    let mut t = db.transaction();
    t.get("k").unwrap();
    t.put("other", "x").unwrap();
    db.delete_range("a", "z").unwrap();
    assert!(is_conflict(t.commit()));

    // A key read as absent and then created conflicts as well.
    let mut t = db.transaction();
    assert_eq!(t.get("new").unwrap(), None);
    t.put("other", "x").unwrap();
    db.put("new", "1").unwrap();
    assert!(is_conflict(t.commit()));
}

#[test]
fn conflicts_are_found_after_the_newer_version_left_the_memtables() {
    let db = open();
    for i in 0..200 {
        db.put(key(i), "old").unwrap();
    }
    db.flush_all().unwrap();
    // Read before the write, the write flushed (and compacted) to tables before the commit.
    let mut t = db.transaction();
    t.get(key(7)).unwrap();
    let mut r = db.transaction();
    assert_eq!(r.range(key(100)..key(110)).count(), 10);
    t.put("a", "1").unwrap();
    r.put("b", "1").unwrap();
    db.put(key(7), "new").unwrap();
    db.put(key(105), "new").unwrap();
    db.flush_all().unwrap();
    db.compact_range::<&[u8], _>(..).unwrap();
    assert!(is_conflict(t.commit()));
    assert!(is_conflict(r.commit()));
    // Versions older than the transaction in tables are no conflict.
    let mut t = db.transaction();
    t.get(key(7)).unwrap();
    assert_eq!(t.range(key(100)..key(110)).count(), 10);
    t.put("c", "1").unwrap();
    db.put(key(150), "new").unwrap();
    db.flush_all().unwrap();
    t.commit().unwrap();
}

#[test]
fn read_only_transactions_commit_whatever_changed() {
    let db = open();
    db.put("k", "1").unwrap();
    let t = db.transaction();
    assert_eq!(t.get("k").unwrap(), Some(b"1".to_vec()));
    db.put("k", "2").unwrap();
    assert_eq!(t.get("k").unwrap(), Some(b"1".to_vec()), "reads stay at the snapshot");
    t.commit().unwrap();
}

#[test]
fn bad_use_gets_typed_errors() {
    let fs = MemFs::new();
    let mut o = common::small(Arc::new(fs.clone()), 16 << 10);
    o.limits.max_key_size = 8;
    o.limits.max_batch_size = 64;
    let db = Db::open("/t", o).unwrap();
    let mut t = db.transaction();
    assert!(matches!(t.put("much-too-long", "v"), Err(Error::InvalidArgument(_))));
    assert!(
        matches!(t.merge("k", "v"), Err(Error::InvalidArgument(_))),
        "no merge operator"
    );
    t.put("k1", [0u8; 40]).unwrap();
    let e = t.put("k2", [0u8; 40]).unwrap_err();
    assert!(e.to_string().contains("limits.max_batch_size"), "{e}");
    t.commit().unwrap();
    assert_eq!(db.get("k1").unwrap().map(|v| v.len()), Some(40));
    assert_eq!(db.get("k2").unwrap(), None);
    drop(db);

    let ro = Db::open_read_only("/t", common::small(Arc::new(fs), 16 << 10)).unwrap();
    let mut t = ro.transaction();
    assert_eq!(t.get("k1").unwrap().map(|v| v.len()), Some(40));
    assert!(matches!(t.put("k", "v"), Err(Error::ReadOnly)));
    t.commit().unwrap();
}

#[test]
fn a_dropped_or_rolled_back_transaction_writes_nothing() {
    let db = open();
    let mut t = db.transaction();
    t.put("a", "1").unwrap();
    t.rollback();
    let mut t = db.transaction();
    t.put("b", "1").unwrap();
    drop(t);
    assert_eq!(db.get("a").unwrap(), None);
    assert_eq!(db.get("b").unwrap(), None);
    assert_eq!(db.stats().transactions.rollbacks, 2);
}

#[test]
fn pessimistic_transactions_wait_for_locks_and_time_out() {
    let db = open();
    db.put("k", "0").unwrap();
    let mut t1 = db.transaction_with(&pessimistic(Duration::from_secs(600)));
    assert_eq!(t1.get_for_update("k").unwrap(), Some(b"0".to_vec()));
    let mut t2 = db.transaction_with(&pessimistic(Duration::from_millis(10)));
    assert!(matches!(t2.put("k", "2"), Err(Error::LockTimeout { .. })));
    drop(t2);
    // A waiter gets the lock when the holder commits, and reads the newest committed value.
    let start = Arc::new(Barrier::new(2));
    let waiter = {
        let (db, start) = (db.clone(), start.clone());
        std::thread::spawn(move || {
            let mut t = db.transaction_with(&pessimistic(Duration::from_secs(600)));
            start.wait();
            let v = t.get_for_update("k").unwrap();
            t.put("k", "2").unwrap();
            t.commit().unwrap();
            v
        })
    };
    start.wait();
    t1.put("k", "1").unwrap();
    t1.commit().unwrap();
    assert_eq!(waiter.join().unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get("k").unwrap(), Some(b"2".to_vec()));
    let s = db.stats().transactions;
    assert_eq!(s.lock_timeouts, 1);
    assert!(s.lock_waits >= 1);
}

#[test]
fn pessimistic_transactions_that_wait_for_each_other_get_a_deadlock_error() {
    let db = open();
    let start = Arc::new(Barrier::new(2));
    let run = |db: Db, start: Arc<Barrier>, first: &'static str, second: &'static str| {
        std::thread::spawn(move || {
            let mut t = db.transaction_with(&pessimistic(Duration::from_secs(600)));
            t.put(first, "x").unwrap();
            start.wait();
            match t.put(second, "x") {
                Ok(()) => t.commit().map(|()| true),
                Err(Error::Deadlock { .. }) => Ok(false),
                Err(e) => Err(e),
            }
        })
    };
    let a = run(db.clone(), start.clone(), "a", "b");
    let b = run(db.clone(), start, "b", "a");
    let (a, b) = (a.join().unwrap().unwrap(), b.join().unwrap().unwrap());
    assert!(a ^ b, "exactly one commits, the other is refused: {a} {b}");
    assert_eq!(db.stats().transactions.deadlocks, 1);
}

#[test]
fn a_pessimistic_read_for_update_conflicts_with_a_write_outside_transactions() {
    let db = open();
    db.put("k", "0").unwrap();
    let mut t = db.transaction_with(&pessimistic(Duration::from_secs(1)));
    t.get_for_update("k").unwrap();
    t.put("k", "1").unwrap();
    db.put("k", "outside").unwrap();
    assert!(is_conflict(t.commit()));
    assert_eq!(db.get("k").unwrap(), Some(b"outside".to_vec()));
}

/// Transfers between accounts on several threads, retried on conflict: every committed
/// transfer moves money, none creates or loses any, whatever the interleaving, and flushes run
/// meanwhile. `CAIRN_BANK_TRANSFERS` sets the transfers (default 20,000; 1,000,000 for the
/// long run).
#[test]
fn a_bank_keeps_its_total_under_concurrent_transfers() {
    let transfers: u64 = std::env::var("CAIRN_BANK_TRANSFERS").map_or(20_000, |v| v.parse().unwrap());
    for opts in [TransactionOptions::default(), pessimistic(Duration::from_secs(600))] {
        let db = open();
        const ACCOUNTS: u32 = 50;
        for a in 0..ACCOUNTS {
            db.put(key(a), 1000u64.to_le_bytes()).unwrap();
        }
        let threads = 4;
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (db, opts) = (db.clone(), opts.clone());
                std::thread::spawn(move || {
                    let mut rng = (t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                    let mut next = || {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        rng
                    };
                    let (mut done, mut attempts) = (0, 0u64);
                    while done < transfers / threads as u64 {
                        attempts += 1;
                        if t == 0 && attempts % 2000 == 0 {
                            db.flush_all().unwrap();
                        }
                        let (from, to) = (
                            key((next() % ACCOUNTS as u64) as u32),
                            key((next() % ACCOUNTS as u64) as u32),
                        );
                        let amount = next() % 50;
                        let mut tx = db.transaction_with(&opts);
                        let r = (|| {
                            let balance = |v: Option<Vec<u8>>| u64::from_le_bytes(v.unwrap().try_into().unwrap());
                            let f = balance(tx.get_for_update(&from)?);
                            if f < amount || from == to {
                                return Ok(false);
                            }
                            let t = balance(tx.get_for_update(&to)?);
                            tx.put(&from, (f - amount).to_le_bytes())?;
                            tx.put(&to, (t + amount).to_le_bytes())?;
                            Ok::<_, Error>(true)
                        })();
                        let r = r.and_then(|moved| tx.commit().map(|()| moved));
                        match r {
                            Ok(_) => done += 1,
                            Err(Error::Conflict { .. } | Error::Deadlock { .. }) => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let total: u64 = (0..ACCOUNTS)
            .map(|a| u64::from_le_bytes(db.get(key(a)).unwrap().unwrap().try_into().unwrap()))
            .sum();
        assert_eq!(total, 1000 * ACCOUNTS as u64, "{:?}", opts.concurrency);
        let s = db.stats().transactions;
        assert_eq!(s.commits, transfers - transfers % threads as u64);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// A transaction's iterator over random database contents and random own writes yields
    /// the model's entries in the range, from the front, the back, or both ends alternating.
    #[test]
    fn iterators_merge_own_writes_with_the_snapshot(
        db_keys in proptest::collection::btree_map(0u32..40, 0u8..4, 0..30),
        own in proptest::collection::vec((0u32..40, 0u8..3), 0..20),
        lo in 0u32..40,
        len in 0u32..40,
        order in proptest::collection::vec(any::<bool>(), 0..80),
        flush in any::<bool>(),
    ) {
        let db = open();
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for (k, v) in &db_keys {
            db.put(key(*k), [*v]).unwrap();
            model.insert(key(*k), vec![*v]);
        }
        if flush {
            db.flush_all().unwrap();
        }
        let mut t = db.transaction();
        for (k, op) in &own {
            match op {
                0 => {
                    t.delete(key(*k)).unwrap();
                    model.remove(&key(*k));
                }
                1 => {
                    t.put(key(*k), b"own").unwrap();
                    model.insert(key(*k), b"own".to_vec());
                }
                _ => {
                    t.merge(key(*k), b"m").unwrap();
                    let merged = match model.get(&key(*k)) {
                        Some(v) => [v.as_slice(), b",m"].concat(),
                        None => b"m".to_vec(),
                    };
                    model.insert(key(*k), merged);
                }
            }
        }
        let (lo, hi) = (key(lo), key(lo + len));
        let want: Vec<(Vec<u8>, Vec<u8>)> = model.range(lo.clone()..hi.clone()).map(|(k, v)| (k.clone(), v.clone())).collect();
        let mut it = t.range(lo..hi);
        let (mut front, mut back) = (Vec::new(), Vec::new());
        let mut steps = order.iter().copied().chain(std::iter::repeat(true));
        loop {
            let forward = steps.next().unwrap();
            let got = if forward { it.next() } else { it.next_back() };
            match got {
                Some(r) => if forward { front.push(r.unwrap()) } else { back.push(r.unwrap()) },
                None => break,
            }
        }
        back.reverse();
        front.extend(back);
        prop_assert_eq!(front, want);
    }
}

/// Transfers on four threads, some commits synced, cut by power losses (every crash mode) at
/// random moments while they run: after each restart the bank holds its total, and each
/// thread's transfer counter (written in the same transactions) is at least the last count a
/// synced commit acknowledged and at most one past the last acknowledged. `CAIRN_BANK_CUTS`
/// sets the power cuts (default 12).
#[test]
fn a_bank_keeps_its_total_through_power_cuts_in_the_middle_of_transfers() {
    use cairn::env::{CrashMode, FaultFs};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let cuts: u64 = std::env::var("CAIRN_BANK_CUTS").map_or(12, |v| v.parse().unwrap());
    const ACCOUNTS: u32 = 40;
    const THREADS: usize = 4;
    let fs = FaultFs::new(Arc::new(MemFs::new()), 11);
    let opts = || {
        let mut o = common::small(Arc::new(fs.clone()), 16 << 10);
        o.set("merge.operator", "stringappend").unwrap();
        o
    };
    let le = |v: Option<Vec<u8>>| v.map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()));
    let mut db = Db::open("/bank", opts()).unwrap();
    let mut b = cairn::WriteBatch::new();
    for a in 0..ACCOUNTS {
        b.put(key(a), 1000u64.to_le_bytes());
    }
    db.write(
        b,
        &cairn::WriteOptions {
            sync: true,
            ..Default::default()
        },
    )
    .unwrap();
    let mut committed = 0u64;
    for cut in 0..cuts {
        // Per thread: the last count acknowledged, and the last acknowledged by a synced commit
        // (at first the count recovered, which the restart made durable).
        let acked: Vec<(AtomicU64, AtomicU64)> = (0..THREADS)
            .map(|t| {
                let n = le(db.get(format!("count{t}")).unwrap());
                (AtomicU64::new(n), AtomicU64::new(n))
            })
            .collect();
        let before: u64 = acked.iter().map(|a| a.0.load(Ordering::Relaxed)).sum();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (db, acked, stop) = (&db, &acked[t], &stop);
                let locking = (cut + t as u64) % 3 == 0;
                s.spawn(move || {
                    let counter = format!("count{t}").into_bytes();
                    let mut rng = (cut * 131 + t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                    let mut next = move || {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        rng
                    };
                    while !stop.load(Ordering::Relaxed) {
                        let (from, to) = (
                            key((next() % ACCOUNTS as u64) as u32),
                            key((next() % ACCOUNTS as u64) as u32),
                        );
                        let sync = next() % 4 == 0;
                        let mut opts = if locking {
                            pessimistic(Duration::from_secs(600))
                        } else {
                            TransactionOptions::default()
                        };
                        opts.write_options.sync = sync;
                        let mut tx = db.transaction_with(&opts);
                        let r = (|| {
                            let n = le(tx.get_for_update(&counter)?);
                            let f = le(tx.get_for_update(&from)?);
                            let amount = next() % 50;
                            if from != to && f >= amount {
                                let to_balance = le(tx.get_for_update(&to)?);
                                tx.put(&from, (f - amount).to_le_bytes())?;
                                tx.put(&to, (to_balance + amount).to_le_bytes())?;
                            }
                            tx.put(&counter, (n + 1).to_le_bytes())?;
                            tx.commit()?;
                            Ok::<_, Error>(n + 1)
                        })();
                        match r {
                            Ok(n) => {
                                acked.0.store(n, Ordering::Relaxed);
                                if sync {
                                    acked.1.store(n, Ordering::Relaxed);
                                }
                            }
                            Err(Error::Conflict { .. } | Error::Deadlock { .. }) => {}
                            // The power is gone: the database refuses everything from here.
                            Err(_) => return,
                        }
                    }
                });
            }
            std::thread::sleep(Duration::from_millis(5 + cut * 7 % 40));
            let mode = [
                CrashMode::DropUnsynced,
                CrashMode::KeepRandomPrefix,
                CrashMode::TearZeros,
                CrashMode::TearGarbage,
            ][cut as usize % 4];
            fs.crash(mode).unwrap();
            stop.store(true, Ordering::Relaxed);
        });
        drop(db);
        fs.restart();
        db = Db::open("/bank", opts()).unwrap();
        let total: u64 = (0..ACCOUNTS).map(|a| le(db.get(key(a)).unwrap())).sum();
        assert_eq!(total, 1000 * ACCOUNTS as u64, "cut {cut}: the bank's total changed");
        let mut after = 0;
        for (t, (all, synced)) in acked.iter().enumerate() {
            let n = le(db.get(format!("count{t}")).unwrap());
            let (all, synced) = (all.load(Ordering::Relaxed), synced.load(Ordering::Relaxed));
            assert!(
                (synced..=all + 1).contains(&n),
                "cut {cut}: thread {t} counted {n} transfers, acknowledged {all} ({synced} synced)"
            );
            after += n;
        }
        committed += after.saturating_sub(before);
    }
    println!("{cuts} power cuts; {committed} transfers kept across them");
    assert!(committed > 0, "no transfer ran between the cuts");
}
