//! What range-filter builds for tables already written cost the foreground: a database loaded
//! by `db_bench` is copied and opened once per run, in a fresh process, with the same flags.
//! One thread runs point lookups of existing keys and `--write_percent` overwrites for
//! `--secs` seconds; at `--trigger_at` it reads a burst of empty ranges, which makes the next
//! range-filter round build filters for the tables they reached. Per interval of
//! `--interval_ms`: lookups and writes per second, their p99, and the bytes builds read so far.
//! Each round runs the same workload with builds (the flags as given) and without them
//! (`--range_filter_build_rate=0`, the control), one after the other; the summary compares the
//! intervals in which builds read (outside the burst) with the same intervals of the control.
//! Writes results.md, results.json and chart.png under `--out`, each run's intervals under
//! `--out/runs/`.
//!
//! ```sh
//! cairn-lab build-impact --db /tmp/loaded --work /tmp/bi --out docs/results/x --num 3000000 \
//!   --key_stride 128 --engine=cairn --defaults=engine --memory_budget=17400000 --use_direct_reads=true
//! ```

use cairn_bench::engine::{cairn_options, EngineArgs};
use cairn_bench::keys::db_bench_key;
use clap::Parser;
use hdrhistogram::Histogram;
use plotters::prelude::*;
use rand::{Rng, RngCore, SeedableRng};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(
    rename_all = "snake_case",
    args_override_self = true,
    about = "What range-filter builds cost foreground lookups and writes"
)]
pub struct Args {
    /// The database (loaded by db_bench with the same flags); each run opens a copy.
    #[arg(long)]
    db: PathBuf,
    /// Where the copies go.
    #[arg(long)]
    work: PathBuf,
    #[arg(long)]
    out: PathBuf,
    /// Key numbers in the database (keys are `i × key_stride`).
    #[arg(long)]
    num: u64,
    #[arg(long, default_value_t = 128)]
    key_stride: u64,
    /// Key bytes (`db_bench --key_size`, number keys).
    #[arg(long, default_value_t = 16)]
    key_size: usize,
    /// Bytes of each overwrite's value.
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    /// Share of the foreground operations that are overwrites, in percent.
    #[arg(long, default_value_t = 10)]
    write_percent: u32,
    /// Seconds each run lasts.
    #[arg(long, default_value_t = 14.0)]
    secs: f64,
    /// Seconds into the run at which the burst of empty range reads comes.
    #[arg(long, default_value_t = 3.0)]
    trigger_at: f64,
    /// Empty range reads in the burst.
    #[arg(long, default_value_t = 5_000)]
    burst: u64,
    /// Values an empty range of the burst spans.
    #[arg(long, default_value_t = 16)]
    range: u64,
    #[arg(long, default_value_t = 250)]
    interval_ms: u64,
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Internal: run one configuration under this label (`builds` or `control`) and round,
    /// writing its intervals to `--out/runs/`.
    #[arg(long, hide = true)]
    run: Option<String>,
    #[arg(long, hide = true, default_value_t = 0)]
    round: usize,
    #[command(flatten)]
    engine: EngineArgs,
}

/// One interval of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Interval {
    /// Seconds from the start of the run to the interval's end.
    end: f64,
    lookups_per_sec: f64,
    writes_per_sec: f64,
    lookup_p99_us: f64,
    write_p99_us: f64,
    /// Bytes builds had read by the interval's end.
    build_read_bytes: u64,
    /// The burst of empty range reads ran in it (its operations are not counted).
    burst: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct Run {
    label: String,
    round: usize,
    intervals: Vec<Interval>,
    filters_built: u64,
}

/// One round's comparison over the intervals in which builds read.
#[derive(Debug, Serialize, Deserialize)]
struct Row {
    round: usize,
    build_intervals: usize,
    build_mb: f64,
    /// Per configuration (builds, control): lookups/s, writes/s, lookup p99 µs and write p99
    /// µs over the intervals in which builds read.
    during: [[f64; 4]; 2],
    /// The same over the intervals before the burst (each process's own pace without builds).
    before: [[f64; 4]; 2],
}

impl Row {
    /// Figure `k` with builds ÷ the control's, each over its own run's intervals before the
    /// burst (processes differ by up to 15% before any build: each is its own baseline).
    fn effect(&self, k: usize) -> f64 {
        (self.during[0][k] / self.before[0][k]) / (self.during[1][k] / self.before[1][k])
    }
}

fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!("build-impact: {e}");
    std::process::exit(1);
}

pub fn main(mut a: Args, given: std::collections::BTreeSet<String>) {
    a.engine.given = given;
    if a.key_stride < a.range + 2 {
        fail("--key_stride must exceed --range by 2");
    }
    let runs = a.out.join("runs");
    if let Some(label) = &a.run {
        let run = run(&a, label);
        let path = runs.join(format!("{label}-{}.json", a.round));
        std::fs::write(&path, serde_json::to_string_pretty(&run).unwrap_or_default()).unwrap_or_else(|e| fail(e));
        return;
    }
    std::fs::create_dir_all(&runs).unwrap_or_else(|e| fail(e));
    let exe = std::env::current_exe().unwrap_or_else(|e| fail(e));
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut rows = Vec::new();
    for round in 0..a.rounds {
        for label in ["builds", "control"] {
            let copy = a.work.join(label);
            copy_dir(&a.db, &copy).unwrap_or_else(|e| fail(e));
            sync();
            let mut cmd = std::process::Command::new(&exe);
            cmd.args(&argv)
                .arg(format!("--run={label}"))
                .arg(format!("--round={round}"))
                .arg(format!("--db={}", copy.display()));
            if label == "control" {
                cmd.arg("--range_filter_build_rate=0");
            }
            let status = cmd.status().unwrap_or_else(|e| fail(e));
            if !status.success() {
                fail(format!("{label} run of round {round}: {status}"));
            }
            std::fs::remove_dir_all(&copy).unwrap_or_else(|e| fail(e));
        }
        let read = |label: &str| -> Run {
            let text = std::fs::read_to_string(runs.join(format!("{label}-{round}.json"))).unwrap_or_else(|e| fail(e));
            serde_json::from_str(&text).unwrap_or_else(|e| fail(e))
        };
        let row = compare(round, &read("builds"), &read("control"));
        println!("{row:?}");
        rows.push(row);
    }
    let md = table(&a, &rows);
    cairn_bench::write_results(&a.out, &md, &rows).unwrap_or_else(|e| fail(e));
    if let Err(e) = chart(&a) {
        eprintln!("build-impact: chart not drawn: {e}");
    }
    print!("\n{md}");
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to)?;
    }
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()))?;
        } else {
            std::fs::copy(e.path(), to.join(e.file_name()))?;
        }
    }
    Ok(())
}

/// `sync` first, as every comparison does (the copies' pages are written before a run reads).
fn sync() {
    let _ = std::process::Command::new("sync").status();
}

/// One configuration's run (in its own process).
fn run(a: &Args, label: &str) -> Run {
    let opts = cairn_options(&a.engine).unwrap_or_else(|e| fail(e));
    let db = cairn::Db::open(&a.db, opts).unwrap_or_else(|e| fail(e));
    let mut rng = rand::rngs::StdRng::seed_from_u64(11 + a.round as u64);
    let (mut key, mut hi) = (Vec::new(), Vec::new());
    let mut value = vec![0u8; a.value_size];
    let hist = || Histogram::<u64>::new_with_bounds(1, 60_000_000, 2).unwrap_or_else(|e| fail(e));
    let (mut lookups, mut writes) = (hist(), hist());
    let mut intervals = Vec::new();
    let interval = Duration::from_millis(a.interval_ms.max(1));
    let start = Instant::now();
    let mut next = start + interval;
    let (mut burst_due, mut burst_here) = (true, false);
    while start.elapsed().as_secs_f64() < a.secs {
        if burst_due && start.elapsed().as_secs_f64() >= a.trigger_at {
            burst_due = false;
            burst_here = true;
            for _ in 0..a.burst {
                let lo = rng.gen_range(0..a.num) * a.key_stride + 1 + rng.gen_range(0..a.key_stride - a.range - 1);
                db_bench_key(lo, a.key_size, &mut key);
                db_bench_key(lo + a.range, a.key_size, &mut hi);
                if let Some(r) = db.range(key.as_slice()..hi.as_slice()).next() {
                    fail(format!("range {lo}..+{} is not empty: {r:?}", a.range));
                }
            }
        }
        db_bench_key(rng.gen_range(0..a.num) * a.key_stride, a.key_size, &mut key);
        let t = Instant::now();
        if rng.gen_range(0..100) < a.write_percent {
            rng.fill_bytes(&mut value);
            db.put(key.as_slice(), value.as_slice()).unwrap_or_else(|e| fail(e));
            let _ = writes.record(t.elapsed().as_micros().max(1) as u64);
        } else {
            db.get(key.as_slice()).unwrap_or_else(|e| fail(e));
            let _ = lookups.record(t.elapsed().as_micros().max(1) as u64);
        }
        let now = Instant::now();
        if now >= next {
            let secs = interval.as_secs_f64();
            intervals.push(Interval {
                end: (now - start).as_secs_f64(),
                lookups_per_sec: lookups.len() as f64 / secs,
                writes_per_sec: writes.len() as f64 / secs,
                lookup_p99_us: lookups.value_at_quantile(0.99) as f64,
                write_p99_us: writes.value_at_quantile(0.99) as f64,
                build_read_bytes: db.stats().range_builds.read_bytes,
                burst: std::mem::take(&mut burst_here),
            });
            lookups.reset();
            writes.reset();
            next += interval;
            // The intervals the burst overran, marked so (runs compare interval by interval).
            while next <= now {
                intervals.push(Interval {
                    end: (next - start).as_secs_f64(),
                    burst: true,
                    ..intervals[intervals.len() - 1].clone()
                });
                next += interval;
            }
        }
    }
    let filters_built = db.stats().range_builds.built;
    db.close().unwrap_or_else(|e| fail(e));
    Run {
        label: label.to_string(),
        round: a.round,
        intervals,
        filters_built,
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (n, s) = xs.fold((0.0, 0.0), |(n, s), x| (n + 1.0, s + x));
    if n > 0.0 {
        s / n
    } else {
        f64::NAN
    }
}

/// The intervals (by index) in which builds read, outside the burst's, and the bytes read.
fn build_intervals(run: &Run) -> (Vec<usize>, u64) {
    let mut before = 0;
    let mut idx = Vec::new();
    for (i, iv) in run.intervals.iter().enumerate() {
        if iv.build_read_bytes > before && !iv.burst {
            idx.push(i);
        }
        before = iv.build_read_bytes;
    }
    (idx, before)
}

fn compare(round: usize, builds: &Run, control: &Run) -> Row {
    let (idx, bytes) = build_intervals(builds);
    let n = builds.intervals.len().min(control.intervals.len());
    let idx: Vec<usize> = idx.into_iter().filter(|&i| i < n).collect();
    let burst_at = builds.intervals.iter().position(|iv| iv.burst).unwrap_or(0).min(n);
    let figures = |r: &Run, at: &[usize]| -> [f64; 4] {
        let f = |g: fn(&Interval) -> f64| mean(at.iter().map(|&i| g(&r.intervals[i])));
        [
            f(|i| i.lookups_per_sec),
            f(|i| i.writes_per_sec),
            f(|i| i.lookup_p99_us),
            f(|i| i.write_p99_us),
        ]
    };
    let early: Vec<usize> = (0..burst_at).collect();
    Row {
        round,
        build_intervals: idx.len(),
        build_mb: bytes as f64 / 1e6,
        during: [figures(builds, &idx), figures(control, &idx)],
        before: [figures(builds, &early), figures(control, &early)],
    }
}

fn table(a: &Args, rows: &[Row]) -> String {
    let mut md = format!(
        "{} keys on a stride of {}; one thread: point lookups of existing keys and {}% overwrites of {} B for {} s, \
         a burst of {} empty ranges of {} values at {} s; intervals of {} ms. `builds`: the flags as given; \
         `control`: the same with `--range_filter_build_rate=0`, in its own process. Figures are means over the \
         intervals in which builds read (outside the burst), the same intervals for both; each effect is builds ÷ \
         control, each first divided by its own run's figure before the burst.\n\n\
         | round | intervals | MB builds read | lookups/s builds | control | effect | writes/s builds | control | effect | \
         lookup p99 µs builds | control | effect | write p99 µs builds | control | effect |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        a.num, a.key_stride, a.write_percent, a.value_size, a.secs, a.burst, a.range, a.trigger_at, a.interval_ms
    );
    for r in rows {
        md.push_str(&format!("| {} | {} | {:.0} |", r.round, r.build_intervals, r.build_mb));
        for k in 0..4 {
            md.push_str(&format!(
                " {:.0} | {:.0} | {:.2}× |",
                r.during[0][k],
                r.during[1][k],
                r.effect(k)
            ));
        }
        md.push('\n');
    }
    md.push_str("| median | | |");
    for k in 0..4 {
        md.push_str(&format!(
            " | | {:.2}× |",
            median(rows.iter().map(|r| r.effect(k)).collect())
        ));
    }
    md.push('\n');
    md
}

/// Lookups per second over time, per configuration (the median over the rounds per
/// interval), and the build MB/s of the first round.
fn chart(a: &Args) -> Result<(), String> {
    cairn_bench::plot::register_font()?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let load = |label: &str, round: usize| -> Option<Run> {
        let text = std::fs::read_to_string(a.out.join("runs").join(format!("{label}-{round}.json"))).ok()?;
        serde_json::from_str(&text).ok()
    };
    let series = |label: &str, f: fn(&Interval) -> f64| -> Vec<(f64, f64)> {
        let runs: Vec<Run> = (0..a.rounds).filter_map(|r| load(label, r)).collect();
        let n = runs.iter().map(|r| r.intervals.len()).min().unwrap_or(0);
        // Intervals of the burst are left out.
        (0..n)
            .filter(|&i| runs.iter().all(|r| !r.intervals[i].burst))
            .map(|i| {
                let t = runs[0].intervals[i].end;
                (t, median(runs.iter().map(|r| f(&r.intervals[i])).collect()))
            })
            .collect()
    };
    let path = a.out.join("chart.png");
    let root = BitMapBackend::new(&path, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let lines = [
        ("lookups/s, builds", series("builds", |i| i.lookups_per_sec)),
        ("lookups/s, control", series("control", |i| i.lookups_per_sec)),
        ("writes/s ×10, builds", series("builds", |i| i.writes_per_sec * 10.0)),
        ("writes/s ×10, control", series("control", |i| i.writes_per_sec * 10.0)),
    ];
    let build_rate: Vec<(f64, f64)> = load("builds", 0)
        .map(|r| {
            let mut before = 0u64;
            r.intervals
                .iter()
                .map(|iv| {
                    let mbs = (iv.build_read_bytes - before) as f64 / 1e6 / (a.interval_ms as f64 / 1e3);
                    before = iv.build_read_bytes;
                    (iv.end, mbs * 1000.0)
                })
                .collect()
        })
        .unwrap_or_default();
    let top = lines
        .iter()
        .flat_map(|(_, s)| s.iter().map(|p| p.1))
        .chain(build_rate.iter().map(|p| p.1))
        .fold(1.0, f64::max)
        * 1.1;
    let mut ch = ChartBuilder::on(&root)
        .caption(
            "foreground lookups and writes while range filters are built (median of rounds per interval)",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..a.secs, 0.0..top)
        .map_err(|e| err(&e))?;
    ch.configure_mesh()
        .x_desc("seconds")
        .y_desc("operations per second")
        .draw()
        .map_err(|e| err(&e))?;
    for (i, (name, pts)) in lines.into_iter().enumerate() {
        cairn_bench::plot::marked_line(&mut ch, pts, Palette99::pick(i).to_rgba().stroke_width(2), name.into())?;
    }
    cairn_bench::plot::marked_line(
        &mut ch,
        build_rate,
        BLACK.mix(0.5).stroke_width(1),
        "build reads, KB/s (round 0)".into(),
    )?;
    cairn_bench::plot::legend(&mut ch, SeriesLabelPosition::LowerRight)?;
    root.present().map_err(|e| err(&e))
}
