//! A YCSB core-workload runner for cairn: reads YCSB property files, loads `recordcount`
//! records, runs `operationcount` operations, and reports YCSB-style per-operation latencies.
//!
//! ```sh
//! cargo run --release -p cairn-bench --bin ycsb -- -P crates/cairn-bench/workloads/workloada \
//!     -p recordcount=1000000 -p operationcount=1000000 --phase all
//! ```

use cairn::{Db, Options};
use cairn_bench::ycsb::{key_name, Distribution, Mix, Op, Properties};
use clap::Parser;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(about = "YCSB core workloads on cairn")]
struct Args {
    /// Workload property file (YCSB's -P).
    #[arg(short = 'P')]
    workload: PathBuf,
    /// Property overrides, `key=value` (YCSB's -p).
    #[arg(short = 'p')]
    props: Vec<String>,
    /// load | run | all
    #[arg(long, default_value = "all")]
    phase: String,
    #[arg(long, default_value_t = 1)]
    threads: usize,
    #[arg(long)]
    db: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Block cache bytes.
    #[arg(long, default_value_t = 32 << 20)]
    cache_size: usize,
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("ycsb: {msg}");
    std::process::exit(2)
}

struct Workload {
    records: u64,
    operations: u64,
    value_len: usize,
    mix: Mix,
    dist: String,
    theta: f64,
    max_scan: u64,
    scan_zipf: bool,
}

type Latencies = BTreeMap<Op, Vec<u32>>;

fn report(phase: &str, ops: u64, secs: f64, lat: &Latencies) {
    println!("[{phase}] [OVERALL], RunTime(ms), {:.0}", secs * 1000.0);
    println!(
        "[{phase}] [OVERALL], Throughput(ops/sec), {:.1}",
        ops as f64 / secs.max(1e-9)
    );
    for (op, v) in lat {
        let mut v = v.clone();
        v.sort_unstable();
        let us = |ns: u32| f64::from(ns) / 1000.0;
        let pct = |p: f64| us(v[((v.len() as f64 * p) as usize).min(v.len() - 1)]);
        let avg = v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64 / 1000.0;
        let l = op.label();
        println!("[{phase}] [{l}], Operations, {}", v.len());
        println!("[{phase}] [{l}], AverageLatency(us), {avg:.2}");
        println!("[{phase}] [{l}], 50thPercentileLatency(us), {:.2}", pct(0.50));
        println!("[{phase}] [{l}], 95thPercentileLatency(us), {:.2}", pct(0.95));
        println!("[{phase}] [{l}], 99thPercentileLatency(us), {:.2}", pct(0.99));
        println!("[{phase}] [{l}], MaxLatency(us), {:.2}", us(*v.last().unwrap_or(&0)));
    }
}

fn value(rng: &mut StdRng, len: usize) -> Vec<u8> {
    (0..len).map(|_| rng.gen_range(b'a'..=b'z')).collect()
}

fn timed<T>(lat: &mut Vec<u32>, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    lat.push(t.elapsed().as_nanos().min(u128::from(u32::MAX)) as u32);
    r
}

fn load(db: &Db, w: &Workload, threads: usize, seed: u64) {
    let t0 = Instant::now();
    let lats: Vec<Latencies> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads as u64)
            .map(|t| {
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(seed * 1000 + t);
                    let mut lat = Latencies::new();
                    let v = lat.entry(Op::Insert).or_default();
                    for k in (t..w.records).step_by(threads) {
                        let val = value(&mut rng, w.value_len);
                        timed(v, || db.put(key_name(k), &val)).unwrap_or_else(|e| fail(e));
                    }
                    lat
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| fail("load thread panicked")))
            .collect()
    });
    report("LOAD", w.records, t0.elapsed().as_secs_f64(), &merge(lats));
}

fn merge(parts: Vec<Latencies>) -> Latencies {
    let mut all = Latencies::new();
    for p in parts {
        for (op, v) in p {
            all.entry(op).or_default().extend(v);
        }
    }
    all
}

fn run(db: &Db, w: &Workload, threads: usize, seed: u64) {
    let inserted = AtomicU64::new(w.records);
    let t0 = Instant::now();
    let lats: Vec<Latencies> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads as u64)
            .map(|t| {
                let inserted = &inserted;
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(seed * 7919 + t);
                    let mut dist = Distribution::new(&w.dist, w.records, w.theta).unwrap_or_else(|e| fail(e));
                    let scan_len = cairn_bench::ycsb::Zipfian::new(w.max_scan, w.theta);
                    let mut lat = Latencies::new();
                    let n = w.operations / threads as u64 + u64::from(t < w.operations % threads as u64);
                    for _ in 0..n {
                        let op = w.mix.next(&mut rng);
                        let records = inserted.load(Ordering::Relaxed);
                        let v = lat.entry(op).or_default();
                        match op {
                            Op::Read => {
                                let k = key_name(dist.next(records, &mut rng));
                                timed(v, || db.get(&k)).unwrap_or_else(|e| fail(e));
                            }
                            Op::Update => {
                                let k = key_name(dist.next(records, &mut rng));
                                let val = value(&mut rng, w.value_len);
                                timed(v, || db.put(&k, &val)).unwrap_or_else(|e| fail(e));
                            }
                            Op::Insert => {
                                let k = key_name(inserted.fetch_add(1, Ordering::Relaxed));
                                let val = value(&mut rng, w.value_len);
                                timed(v, || db.put(&k, &val)).unwrap_or_else(|e| fail(e));
                            }
                            Op::Scan => {
                                let k = key_name(dist.next(records, &mut rng));
                                let len = if w.scan_zipf {
                                    scan_len.next(&mut rng) + 1
                                } else {
                                    rng.gen_range(1..=w.max_scan)
                                };
                                timed(v, || {
                                    for kv in db.range(k.into_bytes()..).take(len as usize) {
                                        kv.unwrap_or_else(|e| fail(e));
                                    }
                                });
                            }
                            Op::ReadModifyWrite => {
                                let k = key_name(dist.next(records, &mut rng));
                                let val = value(&mut rng, w.value_len);
                                timed(v, || db.get(&k).and_then(|_| db.put(&k, &val))).unwrap_or_else(|e| fail(e));
                            }
                        }
                    }
                    lat
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| fail("run thread panicked")))
            .collect()
    });
    report("RUN", w.operations, t0.elapsed().as_secs_f64(), &merge(lats));
}

fn main() {
    let args = Args::parse();
    let text =
        std::fs::read_to_string(&args.workload).unwrap_or_else(|e| fail(format!("{}: {e}", args.workload.display())));
    let mut props = Properties::parse(&text).unwrap_or_else(|e| fail(e));
    for kv in &args.props {
        let (k, v) = kv
            .split_once('=')
            .unwrap_or_else(|| fail(format!("-p {kv}: expected key=value")));
        props.0.insert(k.to_string(), v.to_string());
    }
    let get_u = |k: &str, d: u64| props.get(k, d).unwrap_or_else(|e| fail(e));
    let w = Workload {
        records: get_u("recordcount", 1000),
        operations: get_u("operationcount", 1000),
        value_len: (get_u("fieldcount", 10) * get_u("fieldlength", 100)) as usize,
        mix: Mix::new(&props).unwrap_or_else(|e| fail(e)),
        dist: props.string("requestdistribution", "uniform"),
        theta: props.get("zipfianconstant", 0.99).unwrap_or_else(|e| fail(e)),
        max_scan: get_u("maxscanlength", 1000).max(1),
        scan_zipf: props.string("scanlengthdistribution", "uniform") == "zipfian",
    };
    let dir = args
        .db
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("cairn_ycsb"));
    if args.phase != "run" && dir.exists() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let db = Db::open(
        &dir,
        Options {
            block_cache_size: args.cache_size,
            ..Options::default()
        },
    )
    .unwrap_or_else(|e| fail(e));
    println!(
        "cairn ycsb: {} records of {} B, {} operations, {} threads, distribution {}",
        w.records, w.value_len, w.operations, args.threads, w.dist
    );
    if args.phase == "load" || args.phase == "all" {
        load(&db, &w, args.threads.max(1), args.seed);
    }
    if args.phase == "run" || args.phase == "all" {
        run(&db, &w, args.threads.max(1), args.seed);
    }
    let s = db.stats();
    println!(
        "cairn: write-amp {:.2}, data blocks from storage {}, cache hits {}, levels {:?}",
        s.write_amplification(),
        s.io.kind(cairn::stats::BlockKind::Data).reads,
        s.io.kind(cairn::stats::BlockKind::Data).cache_hits,
        db.levels()[0].levels.iter().map(|l| l.files).collect::<Vec<_>>()
    );
}
