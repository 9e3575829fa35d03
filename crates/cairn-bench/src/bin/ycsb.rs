//! A YCSB core-workload runner over any engine adapter (`--engine`): reads YCSB property
//! files, loads `recordcount` records, runs `operationcount` operations, and reports YCSB-style
//! per-operation latencies (and `--json`).
//!
//! ```sh
//! cargo run --release -p cairn-bench --bin ycsb -- -P crates/cairn-bench/workloads/workloada \
//!     -p recordcount=1000000 -p operationcount=1000000 --phase all
//! ```

use cairn_bench::engine::{self, Engine, EngineArgs};
use cairn_bench::keys::TreeChoice;
use cairn_bench::report::{CairnMetrics, Latencies, Phase, RunReport};
use cairn_bench::ycsb::{key_name, Distribution, Mix, Op, Properties};
use clap::Parser;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

type Db = dyn Engine;

#[derive(Parser, Debug)]
#[command(rename_all = "snake_case", about = "YCSB core workloads on cairn")]
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
    /// Write the phases' figures as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Wait for flushes and compactions to finish between the load and the run (the run then
    /// sees a settled tree; YCSB itself does not wait).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_parser = cairn_bench::flag_bool)]
    wait_after_load: bool,
    /// Draw L0 files and pending compaction bytes over the run into this PNG.
    #[arg(long)]
    timeline_png: Option<PathBuf>,
    /// Seconds between samples of the compaction debt.
    #[arg(long, default_value_t = 0.25)]
    timeline_every: f64,
    /// Trees (column families) the records spread over (cairn only): record k lives in tree
    /// k mod N. An operation picks its tree (uniformly, or by --tree_skew), then a key from the
    /// workload's distribution, moved to the nearest record of that tree; inserts go to the tree
    /// of their new record.
    #[arg(long, default_value_t = 1)]
    num_trees: usize,
    /// `X-Y`: X% of the operations go to the first Y% of the trees.
    #[arg(long)]
    tree_skew: Option<String>,
    #[command(flatten)]
    engine: EngineArgs,
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

type OpLatencies = BTreeMap<Op, Latencies>;

/// Prints YCSB's report lines and returns the phase record.
fn report(phase: &str, ops: u64, secs: f64, lat: &OpLatencies, threads: usize) -> Phase {
    println!("[{phase}] [OVERALL], RunTime(ms), {:.0}", secs * 1000.0);
    println!(
        "[{phase}] [OVERALL], Throughput(ops/sec), {:.1}",
        ops as f64 / secs.max(1e-9)
    );
    let mut p = Phase::new(&phase.to_ascii_lowercase(), ops, secs, threads);
    let mut all = Latencies::default();
    for (op, l) in lat {
        all.merge(l);
        let s = l.summary();
        let name = op.label();
        println!("[{phase}] [{name}], Operations, {}", s.count);
        println!("[{phase}] [{name}], AverageLatency(us), {:.2}", s.mean_us);
        println!("[{phase}] [{name}], 50thPercentileLatency(us), {:.2}", s.p50_us);
        println!("[{phase}] [{name}], 95thPercentileLatency(us), {:.2}", s.p95_us);
        println!("[{phase}] [{name}], 99thPercentileLatency(us), {:.2}", s.p99_us);
        println!("[{phase}] [{name}], MaxLatency(us), {:.2}", s.max_us);
        p.by_op.insert(name.to_string(), s);
    }
    p.latency = Some(all.summary());
    p
}

fn value(rng: &mut StdRng, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rng.fill(&mut v[..]);
    for b in &mut v {
        *b = b'a' + *b % 26;
    }
    v
}

/// Runs `body(thread)` on `threads` threads and merges their latencies.
fn on_threads(threads: usize, body: impl Fn(u64) -> OpLatencies + Sync) -> OpLatencies {
    let parts: Vec<OpLatencies> = std::thread::scope(|s| {
        let body = &body;
        let handles: Vec<_> = (0..threads as u64).map(|t| s.spawn(move || body(t))).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| fail("a worker thread panicked")))
            .collect()
    });
    let mut all = OpLatencies::new();
    for p in parts {
        for (op, l) in p {
            all.entry(op).or_default().merge(&l);
        }
    }
    all
}

/// Record `k` moved to tree `tree` of `n` (the record of that tree at or just below it).
fn in_tree(k: u64, tree: usize, n: usize, records: u64) -> u64 {
    let (n, tree) = (n as u64, tree as u64);
    let k = k - k % n + tree;
    if k >= records && k >= n {
        k - n
    } else {
        k
    }
}

fn load(db: &Db, w: &Workload, threads: usize, seed: u64, n: usize) -> Phase {
    let t0 = Instant::now();
    let lat = on_threads(threads, |t| {
        let mut rng = StdRng::seed_from_u64(seed * 1000 + t);
        let mut lat = OpLatencies::new();
        let v = lat.entry(Op::Insert).or_default();
        for k in (t..w.records).step_by(threads) {
            let val = value(&mut rng, w.value_len);
            v.time(|| db.put_in((k % n as u64) as usize, key_name(k).as_bytes(), &val, false))
                .unwrap_or_else(|e| fail(e));
        }
        lat
    });
    report("LOAD", w.records, t0.elapsed().as_secs_f64(), &lat, threads)
}

fn run(db: &Db, w: &Workload, threads: usize, seed: u64, trees: TreeChoice) -> Phase {
    let n_trees = trees.n;
    let inserted = AtomicU64::new(w.records);
    let t0 = Instant::now();
    let lat = on_threads(threads, |t| {
        let mut rng = StdRng::seed_from_u64(seed * 7919 + t);
        let mut dist = Distribution::new(&w.dist, w.records, w.theta).unwrap_or_else(|e| fail(e));
        let scan_len = cairn_bench::ycsb::Zipfian::new(w.max_scan, w.theta);
        let mut lat = OpLatencies::new();
        let n = w.operations / threads as u64 + u64::from(t < w.operations % threads as u64);
        for _ in 0..n {
            let op = w.mix.next(&mut rng);
            let records = inserted.load(Ordering::Relaxed);
            let tree = trees.pick(&mut rng);
            let mut key = || key_name(in_tree(dist.next(records, &mut rng), tree, n_trees, records));
            let v = lat.entry(op).or_default();
            match op {
                Op::Read => {
                    let k = key();
                    v.time(|| db.get_in(tree, k.as_bytes())).unwrap_or_else(|e| fail(e));
                }
                Op::Update => {
                    let k = key();
                    let val = value(&mut rng, w.value_len);
                    v.time(|| db.put_in(tree, k.as_bytes(), &val, false))
                        .unwrap_or_else(|e| fail(e));
                }
                Op::Insert => {
                    let k = inserted.fetch_add(1, Ordering::Relaxed);
                    let val = value(&mut rng, w.value_len);
                    v.time(|| db.put_in((k % n_trees as u64) as usize, key_name(k).as_bytes(), &val, false))
                        .unwrap_or_else(|e| fail(e));
                }
                Op::Scan => {
                    let k = key();
                    let len = if w.scan_zipf {
                        scan_len.next(&mut rng) + 1
                    } else {
                        rng.gen_range(1..=w.max_scan)
                    };
                    v.time(|| db.scan_in(tree, k.as_bytes(), len))
                        .unwrap_or_else(|e| fail(e));
                }
                Op::ReadModifyWrite => {
                    let k = key();
                    let val = value(&mut rng, w.value_len);
                    v.time(|| {
                        db.get_in(tree, k.as_bytes())
                            .and_then(|_| db.put_in(tree, k.as_bytes(), &val, false))
                    })
                    .unwrap_or_else(|e| fail(e));
                }
            }
        }
        lat
    });
    report("RUN", w.operations, t0.elapsed().as_secs_f64(), &lat, threads)
}

fn main() {
    let (mut args, given) = cairn_bench::parse_args::<Args>();
    args.engine.given = given;
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
        .unwrap_or_else(|| std::env::temp_dir().join(format!("{}_ycsb", args.engine.engine)));
    if args.phase != "run" && dir.exists() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let trees = TreeChoice::new(args.num_trees, args.tree_skew.as_deref()).unwrap_or_else(|e| fail(e));
    let db = engine::open(&args.engine, &dir).unwrap_or_else(|e| fail(e));
    db.open_trees(trees.n).unwrap_or_else(|e| fail(e));
    println!(
        "{} ycsb: {} records of {} B, {} operations, {} threads, distribution {}",
        db.name(),
        w.records,
        w.value_len,
        w.operations,
        args.threads,
        w.dist
    );
    let mut out = RunReport {
        tool: "ycsb".into(),
        engine: db.name().into(),
        command: std::env::args().collect(),
        ..RunReport::default()
    };
    let threads = args.threads.max(1);
    let current = std::sync::Mutex::new(String::new());
    let every = std::time::Duration::from_secs_f64(args.timeline_every.max(0.01));
    let (phases, timeline) = cairn_bench::timeline::sampled(db.as_ref(), every, &current, || {
        let mut phases = Vec::new();
        for (phase, wanted) in [("load", args.phase != "run"), ("run", args.phase != "load")] {
            if !wanted {
                continue;
            }
            if let Ok(mut c) = current.lock() {
                phase.clone_into(&mut c);
            }
            let before = db.as_cairn().map(|c| c.stats());
            let scans_before = db.scan_counters();
            let mut p = if phase == "load" {
                load(db.as_ref(), &w, threads, args.seed, trees.n)
            } else {
                run(db.as_ref(), &w, threads, args.seed, trees)
            };
            if let (Some(before), Some(c)) = (before, db.as_cairn()) {
                let lookups = p
                    .by_op
                    .iter()
                    .filter(|(k, _)| k.starts_with("READ"))
                    .map(|(_, s)| s.count)
                    .sum();
                let m = CairnMetrics::between(&before, &c.stats(), lookups, c);
                m.print();
                p.cairn = Some(m);
            }
            if let (Some(b), Some(a)) = (scans_before, db.scan_counters()) {
                p.scans = cairn_bench::report::PerSeek::between(b, a);
                if let Some(sc) = &p.scans {
                    println!("  scans {}", sc.line());
                }
            }
            p.debt_after = db.debt();
            if let Some(d) = p.debt_after {
                println!(
                    "  after {phase}: L0 files {}, pending compaction {} MB",
                    d.l0_files,
                    d.pending_compaction_bytes >> 20
                );
            }
            phases.push(p);
            if phase == "load" && args.wait_after_load {
                if let Ok(mut c) = current.lock() {
                    "wait".clone_into(&mut c);
                }
                let t0 = Instant::now();
                db.wait_for_background().unwrap_or_else(|e| fail(e));
                let mut w = Phase::new("waitforcompaction", 1, t0.elapsed().as_secs_f64(), 1);
                w.debt_after = db.debt();
                println!("  waited {:.1} s for compaction after the load", w.secs);
                phases.push(w);
            }
        }
        phases
    });
    out.phases = phases;
    out.timeline = timeline;
    if let Some(png) = &args.timeline_png {
        let workload = args.workload.file_name().map_or_else(
            || args.workload.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let title = format!("{} ycsb {workload}: compaction debt", db.name());
        cairn_bench::plot::timeline(png, &title, &[(db.name().to_string(), out.timeline.clone())])
            .unwrap_or_else(|e| fail(format!("--timeline_png {}: {e}", png.display())));
    }
    out.peak_rss_bytes = cairn_bench::peak_rss_bytes().unwrap_or(0);
    if let Some(path) = &args.json {
        out.write(path)
            .unwrap_or_else(|e| fail(format!("--json {}: {e}", path.display())));
    }
}

#[cfg(test)]
mod tests {
    use super::in_tree;

    #[test]
    fn records_move_to_their_tree() {
        for (k, tree, n, records, want) in [
            (7u64, 0usize, 1usize, 10u64, 7u64),
            (7, 1, 4, 10, 5),
            (7, 3, 4, 10, 7),
            (9, 2, 4, 10, 6), // 10 is past the last record: one stride down
            (0, 2, 4, 10, 2),
        ] {
            let got = in_tree(k, tree, n, records);
            assert_eq!(got, want, "record {k} into tree {tree} of {n}");
            assert_eq!(got % n as u64, tree as u64);
            assert!(got < records);
        }
    }
}
