//! Multi-threaded stress: 4 writers and 4 readers on a real directory with small memtables so
//! flushes and compactions run throughout. Runs 5 s in CI; the full run is
//! `CAIRN_STRESS_SECS=30 cargo test --profile ci -p cairn --test stress -- --nocapture`.
//!
//! Invariants checked while everything runs: a batch is never seen half-applied (each batch
//! writes the same value to a key pair), a key's per-writer counter never goes backwards for a
//! reader, and a final scan matches what the writers last wrote.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

use cairn::{Db, Options, WriteBatch, WriteOptions};
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PAIRS_PER_WRITER: u64 = 500;

fn key(writer: u64, pair: u64, half: u64) -> Vec<u8> {
    format!("w{writer}-p{pair:05}-{half}").into_bytes()
}

fn parse(v: &[u8]) -> u64 {
    std::str::from_utf8(v)
        .unwrap()
        .split('|')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn stress_four_writers_four_readers() {
    let secs: u64 = std::env::var("CAIRN_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let dir = tempfile::tempdir().unwrap();
    let opts = {
        let mut o = Options::default();
        o.memory.fixed_mut().memtable_size = 256 << 10;
        o.memory.fixed_mut().write_memory = 1 << 20;
        o.compaction.max_bytes_for_level_base = 1 << 20;
        o.compaction.target_file_size = 256 << 10;
        o.memory.fixed_mut().block_cache = cairn::CacheSource::Own(1 << 20);
        o.compaction.l0_trigger = 2;
        o.background.compaction_threads = 2;
        o
    };
    let db = Db::open(dir.path().join("db"), opts).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let writes = Arc::new(AtomicU64::new(0));
    let reads = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for w in 0..4u64 {
        let (db, stop, writes) = (db.clone(), stop.clone(), writes.clone());
        handles.push(std::thread::spawn(move || {
            let mut rng = rand::rngs::StdRng::seed_from_u64(w);
            let mut last = HashMap::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let pair = rng.gen_range(0..PAIRS_PER_WRITER);
                let v = format!("{n}|{}", "x".repeat(rng.gen_range(10..200)));
                let mut b = WriteBatch::new();
                b.put(key(w, pair, 0), &v).put(key(w, pair, 1), &v);
                db.write(
                    b,
                    &WriteOptions {
                        sync: n % 500 == 0,
                        ..Default::default()
                    },
                )
                .unwrap();
                last.insert(pair, n);
                writes.fetch_add(1, Ordering::Relaxed);
            }
            last
        }));
    }
    let mut readers = Vec::new();
    for r in 0..4u64 {
        let (db, stop, reads) = (db.clone(), stop.clone(), reads.clone());
        readers.push(std::thread::spawn(move || {
            let mut rng = rand::rngs::StdRng::seed_from_u64(100 + r);
            let mut seen: HashMap<(u64, u64), u64> = HashMap::new();
            while !stop.load(Ordering::Relaxed) {
                let (w, pair) = (rng.gen_range(0..4), rng.gen_range(0..PAIRS_PER_WRITER));
                if rng.gen_bool(0.9) {
                    if let Some(v) = db.get(key(w, pair, 0)).unwrap() {
                        let c = parse(&v);
                        let prev = seen.insert((w, pair), c).unwrap_or(0);
                        assert!(c >= prev, "counter went backwards: {prev} -> {c}");
                    }
                } else {
                    // A short range over one writer's pairs: halves must agree.
                    let lo = key(w, pair, 0);
                    let hi = key(w, (pair + 20).min(PAIRS_PER_WRITER), 0);
                    let items: Vec<_> = db.range(lo..hi).map(|x| x.unwrap()).collect();
                    for pair in items.chunks(2) {
                        if pair.len() == 2 {
                            assert_eq!(pair[0].1, pair[1].1, "half-applied batch seen by a scan");
                        }
                    }
                }
                reads.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    let finals: Vec<HashMap<u64, u64>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for r in readers {
        r.join().unwrap();
    }
    for (w, last) in finals.iter().enumerate() {
        for (&pair, &n) in last {
            let v = db.get(key(w as u64, pair, 1)).unwrap().unwrap();
            assert_eq!(parse(&v), n);
        }
    }
    let s = db.stats();
    println!(
        "{secs} s: {} batches written, {} reads, write-amp {:.2}, stalls {} slowdowns / {} stops, levels {:?}",
        writes.load(Ordering::Relaxed),
        reads.load(Ordering::Relaxed),
        s.write_amplification(),
        s.stall_slowdowns,
        s.stall_stops,
        db.levels()[0].levels.iter().map(|l| l.files).collect::<Vec<_>>()
    );
}
