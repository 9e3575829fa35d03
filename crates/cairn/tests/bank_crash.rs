//! A bank under kill -9: a child process runs transfers between accounts on four threads
//! (optimistic and pessimistic transactions, accounts in two trees, small memory so that
//! flushes and compactions run), each also counting its thread's transfers in the same
//! transaction and, once the commit is acknowledged, writing that count to a state file. The
//! parent kills the child with SIGKILL at a random moment, reopens, and checks that the bank
//! holds its total and that each thread's stored count is its last acknowledged one or one
//! more (the commit in flight): transactions are atomic and an acknowledged commit survives a
//! process crash.
//!
//! CI runs 30 cycles; the long mode is
//! `CAIRN_BANK_CYCLES=1000 cargo test --profile ci -p cairn --test bank_crash -- --nocapture`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

use cairn::{Concurrency, Db, Error, Options, TransactionOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const ACCOUNTS: u32 = 64;
const THREADS: usize = 4;
const START: u64 = 1000;

fn options() -> Options {
    let mut o = Options::default();
    o.memory.budget_mut().bytes = 1 << 20;
    o.compaction.max_bytes_for_level_base = 256 << 10;
    o.compaction.target_file_size = 64 << 10;
    o.compaction.l0_trigger = 2;
    o
}

/// Account `a`: the even ones in the default tree, the odd ones in tree "odd".
fn account(a: u32) -> Vec<u8> {
    format!("acct{a:04}").into_bytes()
}

fn le(v: Option<Vec<u8>>) -> u64 {
    v.map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()))
}

/// The child: transfers forever (until killed).
fn child(dir: &Path, state: &Path, seed: u64) -> ! {
    let db = Db::open(dir, options()).unwrap();
    let odd = db.tree("odd").unwrap();
    let state = OpenOptions::new().write(true).open(state).unwrap();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (db, odd, state) = (&db, &odd, &state);
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed * 16 + t as u64);
                let opts = TransactionOptions {
                    concurrency: if t % 2 == 0 {
                        Concurrency::Optimistic
                    } else {
                        Concurrency::Pessimistic
                    },
                    lock_timeout: Duration::from_secs(600),
                    ..Default::default()
                };
                let counter = format!("count{t}").into_bytes();
                loop {
                    let (from, to) = (rng.gen_range(0..ACCOUNTS), rng.gen_range(0..ACCOUNTS));
                    let amount = rng.gen_range(0..100u64);
                    let mut tx = db.transaction_with(&opts);
                    let tree = |a: u32| if a % 2 == 0 { &**db } else { odd };
                    let r = (|| {
                        let n = le(tx.get_for_update(&counter)?);
                        let f = le(tx.get_for_update_in(tree(from), account(from))?);
                        if from != to && f >= amount {
                            let b = le(tx.get_for_update_in(tree(to), account(to))?);
                            tx.put_in(tree(from), account(from), (f - amount).to_le_bytes())?;
                            tx.put_in(tree(to), account(to), (b + amount).to_le_bytes())?;
                        }
                        tx.put(&counter, (n + 1).to_le_bytes())?;
                        tx.commit()?;
                        Ok::<_, Error>(n + 1)
                    })();
                    match r {
                        Ok(n) => state.write_all_at(&n.to_le_bytes(), t as u64 * 8).unwrap(),
                        Err(Error::Conflict { .. } | Error::Deadlock { .. }) => {}
                        Err(e) => panic!("thread {t}: {e}"),
                    }
                }
            });
        }
    });
    unreachable!("the transfer threads never end")
}

#[test]
fn bank_crash() {
    if let Ok(args) = std::env::var("CAIRN_BANK_CHILD") {
        let mut it = args.split('|');
        let (dir, state, seed) = (
            it.next().unwrap(),
            it.next().unwrap(),
            it.next().unwrap().parse().unwrap(),
        );
        child(Path::new(dir), Path::new(state), seed);
    }
    let cycles: u64 = std::env::var("CAIRN_BANK_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let tmp = tempfile::tempdir().unwrap();
    let dir: PathBuf = tmp.path().join("db");
    let state = tmp.path().join("state");
    File::create(&state).unwrap().write_all(&[0; THREADS * 8]).unwrap();
    {
        let db = Db::open(&dir, options()).unwrap();
        let odd = db.tree("odd").unwrap();
        let mut b = cairn::WriteBatch::new();
        for a in 0..ACCOUNTS {
            let t = if a % 2 == 0 { &*db } else { &odd };
            b.put_in(t, account(a), START.to_le_bytes());
        }
        db.write(b, &cairn::WriteOptions::default()).unwrap();
        drop(odd);
        db.close().unwrap();
    }
    let mut rng = StdRng::seed_from_u64(77);
    let exe = std::env::current_exe().unwrap();
    let (mut transfers, mut in_flight) = (0u64, 0u64);
    for cycle in 0..cycles {
        let mut before = [0u8; THREADS * 8];
        File::open(&state).unwrap().read_exact(&mut before).unwrap();
        let mut child = Command::new(&exe)
            .args(["--exact", "bank_crash", "--nocapture", "--test-threads", "1"])
            .env(
                "CAIRN_BANK_CHILD",
                format!("{}|{}|{}", dir.display(), state.display(), cycle + 1),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(rng.gen_range(50..500)));
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            panic!("cycle {cycle}: the child exited on its own ({status}): {err}");
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let mut acked = [0u8; THREADS * 8];
        File::open(&state).unwrap().read_exact(&mut acked).unwrap();
        let db = Db::open(&dir, options()).unwrap();
        let odd = db.tree("odd").unwrap();
        let total: u64 = (0..ACCOUNTS)
            .map(|a| {
                let t = if a % 2 == 0 { &*db } else { &odd };
                le(t.get(account(a)).unwrap())
            })
            .sum();
        assert_eq!(
            total,
            START * u64::from(ACCOUNTS),
            "cycle {cycle}: the bank's total changed"
        );
        let mut state_file = OpenOptions::new().write(true).open(&state).unwrap();
        for t in 0..THREADS {
            let at = |b: &[u8]| u64::from_le_bytes(b[t * 8..t * 8 + 8].try_into().unwrap());
            let (was, acked) = (at(&before), at(&acked));
            let n = le(db.get(format!("count{t}")).unwrap());
            assert!(
                (acked..=acked + 1).contains(&n),
                "cycle {cycle}: thread {t} stored count {n}, acknowledged {acked}"
            );
            transfers += n - was;
            in_flight += n - acked;
            state_file.write_all_at(&n.to_le_bytes(), t as u64 * 8).unwrap();
        }
        state_file.flush().unwrap();
        drop(odd);
        db.close().unwrap();
    }
    println!(
        "{cycles} kill -9 cycles verified; {transfers} transactions committed, {in_flight} of them in flight at a kill"
    );
    assert!(
        transfers > cycles,
        "the children committed too little to test anything: {transfers}"
    );
}
