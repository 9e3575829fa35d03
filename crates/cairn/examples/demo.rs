//! The README demo: loads 1M keys (16 B keys, 100 B values) into a temporary directory with
//! the default options, reads every key back in random order, scans everything, and prints
//! throughput, I/O counters, level shape and peak memory.
//!
//! `cargo run --release -p cairn --example demo [-- NUM_KEYS]`

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "an example stops at the first error"
)]

use cairn::stats::BlockKind;
use cairn::{Db, Options};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::time::Instant;

fn key(i: u64) -> [u8; 16] {
    let mut k = [b'0'; 16];
    k[..8].copy_from_slice(&i.to_be_bytes());
    k
}

fn peak_rss_mb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(0)
        / 1024
}

fn main() -> cairn::Result<()> {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("temporary directory");
    let opts = Options::default();
    let budget_mb = match &opts.memory {
        cairn::Memory::Budget(b) => (b.bytes >> 20) as u64,
        cairn::Memory::Fixed(_) => 0,
    };
    let db = Db::open(dir.path().join("db"), opts)?;
    let mut order: Vec<u64> = (0..n).collect();
    order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(7));

    let t = Instant::now();
    for &i in &order {
        db.put(key(i), format!("value-{i:094}"))?;
    }
    let load = t.elapsed().as_secs_f64();
    println!("loaded {n} keys in random order: {:.0} puts/s", n as f64 / load);

    db.flush_all()?;
    db.wait_for_background()?;
    order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(8));
    let before = db.stats();
    let t = Instant::now();
    for &i in &order {
        let v = db.get(key(i))?.expect("every key was written");
        assert_eq!(v, format!("value-{i:094}").into_bytes());
    }
    let read = t.elapsed().as_secs_f64();
    let after = db.stats();
    let io = after.io - before.io;
    println!("read all {n} keys back in random order: {:.0} gets/s", n as f64 / read);
    let per = |x: u64| x as f64 / n as f64;
    println!(
        "  per get: {:.3} data blocks from storage, {:.3} from cache, {:.4} unnecessary data-block reads, {:.4} filter-unit loads",
        per(io.kind(BlockKind::Data).reads),
        per(io.kind(BlockKind::Data).cache_hits),
        per(after.total(|l| l.unnecessary_data_reads) - before.total(|l| l.unnecessary_data_reads)),
        per(io.kind(BlockKind::FilterUnit).reads),
    );

    let t = Instant::now();
    let count = db.iter().count();
    println!(
        "full scan: {count} entries, {:.0} entries/s",
        count as f64 / t.elapsed().as_secs_f64()
    );

    let s = db.stats();
    let shape: Vec<String> = db.levels()[0]
        .levels
        .iter()
        .map(|l| format!("{} files/{} MiB", l.files, l.bytes >> 20))
        .collect();
    println!("levels: [{}]", shape.join(", "));
    println!(
        "write amplification {:.2} (user {} MiB, WAL {} MiB, flush {} MiB, compaction {} MiB); stalls: {} slowdowns, {} stops",
        s.write_amplification(),
        s.user_bytes_written >> 20,
        s.wal_bytes_written >> 20,
        s.flush_bytes_written >> 20,
        s.compaction_bytes_written >> 20,
        s.stall_slowdowns,
        s.stall_stops
    );
    let peak = peak_rss_mb();
    println!(
        "peak RSS {peak} MiB; write memory + block cache = {budget_mb} MiB, + 64 MiB allowance = {} MiB: {}",
        budget_mb + 64,
        if peak <= budget_mb + 64 { "within" } else { "OVER" }
    );
    db.close()
}
