//! Luo & Carey's memory experiments at laptop scale (issue 14's measurements), each a set of
//! db_bench runs from one loaded tree (copied before every run), O_DIRECT reads, one
//! `--memory_budget` for everything:
//! - `sweep`: the paper's Fig. 12 — a write-heavy mix (50% updates, zipf 0.99) under static
//!   write-memory shares, then the tuner from a bad start (5% and 80%). The first half of each
//!   run warms up (and lets the tuner converge); the second half is measured. sweep.png: I/O
//!   per operation against write memory for the static runs, the tuner runs' trajectories over
//!   it.
//! - `phase`: write-heavy (80% updates) then read-heavy (95% lookups) in one run with the
//!   tuner; cycles until the write memory settles after the change. phase.png.
//! - `trees`: 10 trees with 80-20 write skew under each flush policy (the paper's Fig. 10):
//!   write amplification and throughput; then 1, 8 and 32 trees with uniform writes.
//! - `threeway`: point lookups (90%, half of them for absent keys) among updates, elastic
//!   filters, the tuner with and without the filter region as a third side.
//! - `levels`: level targets fixed (L1 32 MiB) against targets that follow write memory
//!   (Luo & Carey §4.1.3), each from a tree loaded under them, on a write-heavy mix (80%
//!   updates) at 3% and 80% static write memory and with the tuner from 80%.
//! - `rss`: peak resident memory against three budgets (16, 64, 256 MiB) and what cairn
//!   accounts for, sampled every 0.25 s; glibc's default malloc arenas and one.
//! - `rocksdb`: the sweep's mix on cairn with the tuner against RocksDB 7.8's static split at
//!   the same budget (needs the `rocksdb` feature).
//!
//! Writes results.md and results.json (and the PNGs) into `--out`.
//!
//! ```sh
//! memory_grid --out docs/results/DATE/memory --num 4000000 --ops 3000000
//! ```

use cairn_bench::report::{Phase, RunReport, TunerPoint};
use clap::Parser;
use plotters::prelude::*;
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(rename_all = "snake_case", about = "Memory tuner and flush policy experiments")]
pub struct Args {
    /// Where results go.
    #[arg(long)]
    out: PathBuf,
    /// Keys loaded (16 B keys, 100 B values).
    #[arg(long, default_value_t = 4_000_000)]
    num: u64,
    /// Operations of each measured run (two phases of half each).
    #[arg(long, default_value_t = 3_000_000)]
    ops: u64,
    /// The memory budget in bytes.
    #[arg(long, default_value_t = 64 << 20)]
    budget: usize,
    /// The least any region keeps under the tuner.
    #[arg(long, default_value_t = 2 << 20)]
    floor: usize,
    /// The tuner's timer cycle.
    #[arg(long, default_value_t = 1000)]
    period_ms: u64,
    /// Experiments to run.
    #[arg(long, value_delimiter = ',', default_value = "sweep,phase,trees,threeway")]
    experiments: Vec<String>,
    /// Static write-memory shares of the sweep, in percent.
    #[arg(long, value_delimiter = ',', default_value = "5,10,20,30,40,60,80")]
    shares: Vec<u32>,
    /// Keys written per tree count in `trees`.
    #[arg(long, default_value_t = 4_000_000)]
    tree_writes: u64,
}

#[derive(Debug, Clone, Serialize)]
struct Row {
    experiment: String,
    config: String,
    /// Write memory share at the start, percent.
    start_share: f64,
    /// Write memory share at the end (the tuner's choice), percent.
    end_share: f64,
    ops_per_sec: f64,
    /// (blocks read + pages written) per operation in the measured phase.
    io_per_op: f64,
    write_amp: f64,
    /// Peak resident memory of the run's process.
    peak_rss_mb: u64,
    tuner_cycles: usize,
    /// Levels added and removed at L1 during the run.
    levels_added: u64,
    levels_removed: u64,
    /// MiB per level of the default tree at the end (L0 first).
    shape: Vec<u64>,
    /// Resident MiB before the engine opened (program and libraries).
    start_rss_mb: u64,
    /// Over the run's samples (every 0.25 s): the most resident memory beyond what the engine
    /// accounts for and beyond `start_rss_mb`, MiB ...
    max_unaccounted_mb: u64,
    /// ... and what it accounted for at the sample of most resident memory.
    accounted_at_peak_mb: u64,
    /// Every tuner cycle of the run.
    tuner: Vec<TunerPoint>,
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("memory_grid: {msg}");
    std::process::exit(2)
}

fn run(db_bench: &Path, args: &[String]) -> RunReport {
    cairn_bench::run_db_bench_temp(db_bench, args).unwrap_or_else(|e| fail(e))
}

/// [`run`] with `env` (`NAME=value`) in db_bench's environment.
fn run_env(db_bench: &Path, env: &[String], args: &[String]) -> RunReport {
    let mut a: Vec<String> = env.to_vec();
    a.push(db_bench.display().to_string());
    a.extend(args.iter().cloned());
    run(Path::new("/usr/bin/env"), &a)
}

fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    let ok = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        fail(format!("cp -a {} {} failed", from.display(), to.display()));
    }
}

fn io_per_op(p: &Phase) -> f64 {
    p.cairn.as_ref().map_or(f64::NAN, |c| {
        (c.blocks_read + c.pages_written) as f64 / p.ops.max(1) as f64
    })
}

/// The row of a run whose last phase is the measured one.
fn row(experiment: &str, config: &str, start: f64, budget: usize, r: &RunReport) -> Row {
    let p = r
        .phases
        .last()
        .cloned()
        .unwrap_or_else(|| fail("a run reported no phase"));
    let end = r.tuner.last().map_or(start, |t| t.write as f64 / budget as f64 * 100.0);
    Row {
        experiment: experiment.into(),
        config: config.into(),
        start_share: start,
        end_share: end,
        ops_per_sec: p.ops_per_sec,
        io_per_op: io_per_op(&p),
        write_amp: p.cairn.as_ref().map_or(f64::NAN, |c| c.write_amp),
        peak_rss_mb: r.peak_rss_bytes >> 20,
        tuner_cycles: r.tuner.len(),
        levels_added: r
            .phases
            .iter()
            .filter_map(|p| p.cairn.as_ref())
            .map(|c| c.levels_added)
            .sum(),
        levels_removed: r
            .phases
            .iter()
            .filter_map(|p| p.cairn.as_ref())
            .map(|c| c.levels_removed)
            .sum(),
        shape: p
            .cairn
            .as_ref()
            .map(|c| c.levels.iter().map(|&(_, b)| b >> 20).collect())
            .unwrap_or_default(),
        tuner: r.tuner.clone(),
        start_rss_mb: r.start_rss_bytes >> 20,
        max_unaccounted_mb: r
            .timeline
            .iter()
            .filter_map(|s| Some(s.rss_bytes.saturating_sub(s.accounted_bytes? + r.start_rss_bytes)))
            .max()
            .unwrap_or(0)
            >> 20,
        accounted_at_peak_mb: r
            .timeline
            .iter()
            .max_by_key(|s| s.rss_bytes)
            .and_then(|s| s.accounted_bytes)
            .unwrap_or(0)
            >> 20,
    }
}

struct Ctx {
    a: Args,
    db_bench: PathBuf,
    common: Vec<String>,
}

impl Ctx {
    /// The common flags with `extra`'s (a flag in `extra` replaces the common one of its name).
    fn flags(&self, extra: &[String]) -> Vec<String> {
        let name = |f: &String| f.split('=').next().unwrap_or("").to_string();
        let mut f: Vec<String> = self
            .common
            .iter()
            .filter(|c| !extra.iter().any(|e| name(e) == name(c)))
            .cloned()
            .collect();
        f.extend(extra.iter().cloned());
        f
    }

    /// Loads `num` keys with `extra` flags into `dir` (kept), unless it is there.
    fn load(&self, dir: &Path, extra: &[String]) {
        if dir.join("CURRENT").exists() {
            return;
        }
        let mut f = self.flags(extra);
        f.push(format!("--db={}", dir.display()));
        f.push("--benchmarks=fillrandom,waitforcompaction".into());
        println!("loading {} keys into {}", self.a.num, dir.display());
        run(&self.db_bench, &f);
    }

    /// A run from a copy of `base`.
    fn run_on(&self, base: &Path, extra: &[String]) -> RunReport {
        self.run_on_env(base, &[], extra)
    }

    /// ... with `env` in db_bench's environment.
    fn run_on_env(&self, base: &Path, env: &[String], extra: &[String]) -> RunReport {
        let db = self.a.out.join("db");
        copy_dir(base, &db);
        let mut f = self.flags(extra);
        f.push(format!("--db={}", db.display()));
        f.push("--use_existing_db=1".into());
        run_env(&self.db_bench, env, &f)
    }

    fn budget(&self) -> Vec<String> {
        vec![format!("--memory_budget={}", self.a.budget)]
    }

    /// The tuner on, with its floor and timer (refused without the tuner: no effect).
    fn tuner(&self) -> Vec<String> {
        vec![
            "--memory_tuner=1".into(),
            format!("--memory_tuner_floor={}", self.a.floor),
            format!("--memory_tuner_period_ms={}", self.a.period_ms),
        ]
    }
}

fn mixed(pct: u32, ops: u64) -> Vec<String> {
    vec![
        format!("--benchmarks=readrandomwriterandom:{pct},readrandomwriterandom:{pct}"),
        format!("--reads={}", ops / 2),
        "--key_dist=zipf:0.99".into(),
    ]
}

fn sweep(c: &Ctx, rows: &mut Vec<Row>, engine_cmp: bool) {
    let base = c.a.out.join("base");
    c.load(&base, &[]);
    let mut runs: Vec<(String, f64, Vec<String>)> = Vec::new();
    if !engine_cmp {
        for &s in &c.a.shares {
            let mut f = c.budget();
            f.push(format!("--memory_write_share={}", f64::from(s) / 100.0));
            runs.push((format!("static {s}%"), f64::from(s), f));
        }
    }
    for s in [5u32, 80] {
        let mut f = c.budget();
        f.push(format!("--memory_write_share={}", f64::from(s) / 100.0));
        f.extend(c.tuner());
        runs.push((format!("tuner from {s}%"), f64::from(s), f.clone()));
        if engine_cmp {
            // ... and with level targets that follow write memory.
            f.push("--level_targets=write-memory".into());
            runs.push((
                format!("tuner from {s}%, level targets following write memory"),
                f64::from(s),
                f,
            ));
            break;
        }
    }
    let rocks = vec![
        "--engine=rocksdb".to_string(),
        format!("--memory_budget={}", c.a.budget),
        format!("--write_buffer_size={}", c.a.budget / 8),
        "--statistics=1".into(),
    ];
    let rocks_base = c.a.out.join("base-rocksdb");
    if engine_cmp {
        c.load(&rocks_base, &rocks);
        runs.push(("rocksdb static (25% write buffers)".into(), 25.0, rocks.clone()));
    }
    let experiment = if engine_cmp { "rocksdb" } else { "sweep" };
    for (name, share, mut f) in runs {
        let from = if f == rocks { &rocks_base } else { &base };
        f.extend(mixed(50, c.a.ops));
        let r = c.run_on(from, &f);
        let row = row(experiment, &name, share, c.a.budget, &r);
        println!(
            "{experiment} {name}: {:.0} ops/s, {:.4} I/O per op, write memory {:.0}% at the end",
            row.ops_per_sec, row.io_per_op, row.end_share
        );
        rows.push(row);
    }
}

fn phase(c: &Ctx, rows: &mut Vec<Row>) {
    let base = c.a.out.join("base");
    c.load(&base, &[]);
    let mut f = c.budget();
    f.extend(c.tuner());
    f.extend([
        "--benchmarks=readrandomwriterandom:20,readrandomwriterandom:95".to_string(),
        format!("--reads={}", c.a.ops),
        "--key_dist=zipf:0.99".into(),
    ]);
    let r = c.run_on(&base, &f);
    rows.push(row("phase", "tuner, 80% writes then 95% reads", 25.0, c.a.budget, &r));
}

fn trees(c: &Ctx, rows: &mut Vec<Row>) {
    let write_only = |trees: usize, skew: Option<&str>, policy: &str| {
        let mut f = c.budget();
        f.extend([
            "--benchmarks=fillrandom".to_string(),
            format!("--num={}", c.a.tree_writes),
            format!("--num_trees={trees}"),
            format!("--flush_policy={policy}"),
            "--key_dist=zipf:0.99".into(),
        ]);
        if let Some(s) = skew {
            f.push(format!("--tree_skew={s}"));
        }
        let db = c.a.out.join("db");
        let _ = std::fs::remove_dir_all(&db);
        f.push(format!("--db={}", db.display()));
        run(&c.db_bench, &c.flags(&f))
    };
    for policy in ["max-memory", "min-lsn", "optimal"] {
        let r = write_only(10, Some("80-20"), policy);
        let row = row("trees", &format!("10 trees 80-20, {policy}"), 25.0, c.a.budget, &r);
        println!(
            "trees {}: {:.0} ops/s, write-amp {:.2}",
            row.config, row.ops_per_sec, row.write_amp
        );
        rows.push(row);
    }
    for n in [1usize, 8, 32] {
        let r = write_only(n, None, "min-lsn");
        let row = row("trees", &format!("{n} trees uniform, min-lsn"), 25.0, c.a.budget, &r);
        println!(
            "trees {}: {:.0} ops/s, write-amp {:.2}",
            row.config, row.ops_per_sec, row.write_amp
        );
        rows.push(row);
    }
}

fn levels(c: &Ctx, rows: &mut Vec<Row>) {
    for targets in ["fixed", "write-memory"] {
        let extra = vec![format!("--level_targets={targets}")];
        let base = c.a.out.join(if targets == "fixed" {
            "base".to_string()
        } else {
            format!("base-{targets}")
        });
        c.load(&base, &extra);
        for (share, tuner) in [(3u32, false), (80, false), (80, true)] {
            let mut f = c.budget();
            f.extend(extra.iter().cloned());
            f.push(format!("--memory_write_share={}", f64::from(share) / 100.0));
            if tuner {
                f.extend(c.tuner());
            }
            f.extend(mixed(20, c.a.ops));
            let r = c.run_on(&base, &f);
            let name = format!(
                "{targets} targets, {} {share}%",
                if tuner { "tuner from" } else { "static" }
            );
            let row = row("levels", &name, f64::from(share), c.a.budget, &r);
            println!(
                "levels {name}: {:.0} ops/s, {:.4} I/O per op, write-amp {:.2}, levels +{} -{}, MiB per level {:?}",
                row.ops_per_sec, row.io_per_op, row.write_amp, row.levels_added, row.levels_removed, row.shape
            );
            rows.push(row);
        }
    }
}

/// Peak RSS against the budget: the sweep's mix at 25% static write memory under three budgets,
/// with glibc's default malloc arenas and with one.
fn rss(c: &Ctx, rows: &mut Vec<Row>) {
    let base = c.a.out.join("base");
    c.load(&base, &[]);
    for budget in [16usize << 20, 64 << 20, 256 << 20] {
        for arenas in [None, Some(1)] {
            let mut f = vec![format!("--memory_budget={budget}"), "--memory_write_share=0.25".into()];
            f.extend(mixed(50, c.a.ops));
            let env: Vec<String> = arenas.iter().map(|a| format!("MALLOC_ARENA_MAX={a}")).collect();
            let r = c.run_on_env(&base, &env, &f);
            let name = format!(
                "budget {} MiB, {}",
                budget >> 20,
                arenas.map_or("default malloc arenas".to_string(), |a| format!("MALLOC_ARENA_MAX={a}"))
            );
            let row = row("rss", &name, 25.0, budget, &r);
            println!(
                "rss {name}: peak {} MiB, at start {} MiB, accounted at peak {} MiB, unaccounted at most {} MiB",
                row.peak_rss_mb, row.start_rss_mb, row.accounted_at_peak_mb, row.max_unaccounted_mb
            );
            rows.push(row);
        }
    }
}

fn threeway(c: &Ctx, rows: &mut Vec<Row>) {
    let base = c.a.out.join("base-elastic");
    let elastic = ["--bpk_policy=elastic".to_string(), "--bloom_bits=4".into()];
    c.load(&base, &elastic);
    for (name, filters) in [("two-way (filters fixed at 10%)", "0"), ("three-way", "1")] {
        let mut f = c.budget();
        f.extend(elastic.iter().cloned());
        f.extend(c.tuner());
        f.extend([format!("--memory_tuner_filters={filters}"), "--empty_ratio=0.5".into()]);
        f.extend(mixed(90, c.a.ops));
        let r = c.run_on(&base, &f);
        let row = row("threeway", name, 25.0, c.a.budget, &r);
        println!(
            "threeway {name}: {:.0} ops/s, {:.4} I/O per op, filters {} MiB at the end",
            row.ops_per_sec,
            row.io_per_op,
            row.tuner.last().map_or(0, |t| t.filter >> 20)
        );
        rows.push(row);
    }
}

fn sweep_png(path: &Path, rows: &[Row], budget: usize) -> Result<(), String> {
    cairn_bench::plot::register_font()?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let root = BitMapBackend::new(path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let statics: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| r.config.starts_with("static"))
        .map(|r| (r.start_share, r.io_per_op))
        .collect();
    let tuned: Vec<&Row> = rows.iter().filter(|r| r.config.starts_with("tuner")).collect();
    let pct = |b: u64| b as f64 / budget as f64 * 100.0;
    let y_max = statics
        .iter()
        .map(|p| p.1)
        .chain(tuned.iter().flat_map(|r| r.tuner.iter().map(|t| t.cost)))
        .filter(|v| v.is_finite())
        .fold(0.01f64, f64::max)
        * 1.1;
    let mut ch = ChartBuilder::on(&root)
        .caption(
            "I/O per operation against write memory (50% updates, zipf 0.99)",
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..100.0, 0.0..y_max)
        .map_err(|e| err(&e))?;
    ch.configure_mesh()
        .x_desc("write memory, % of the budget")
        .y_desc("page I/O per operation")
        .draw()
        .map_err(|e| err(&e))?;
    cairn_bench::plot::marked_line(
        &mut ch,
        statics,
        BLACK.stroke_width(2),
        "static splits (measured half)".into(),
    )?;
    for (i, r) in tuned.iter().enumerate() {
        let color = Palette99::pick(i + 1).to_rgba();
        let pts: Vec<(f64, f64)> = r.tuner.iter().map(|t| (pct(t.write), t.cost)).collect();
        cairn_bench::plot::marked_line(
            &mut ch,
            pts,
            color.stroke_width(1),
            format!("{} (each cycle)", r.config),
        )?;
    }
    cairn_bench::plot::legend(&mut ch, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(|e| err(&e))
}

pub fn main(a: Args) {
    std::fs::create_dir_all(&a.out).unwrap_or_else(|e| fail(e));
    let db_bench =
        cairn_bench::sibling_exe("db_bench").unwrap_or_else(|| fail("cannot find db_bench next to this binary"));
    let common = vec![
        format!("--num={}", a.num),
        "--key_size=16".into(),
        "--value_size=100".into(),
        "--compression_type=none".into(),
        "--use_direct_reads=1".into(),
        "--bloom_bits=10".into(),
        "--seed=7".into(),
        "--threads=1".into(),
        "--target_file_size_base=8388608".into(),
        "--max_bytes_for_level_base=33554432".into(),
    ];
    let c = Ctx { a, db_bench, common };
    let mut rows = Vec::new();
    for e in &c.a.experiments {
        match e.as_str() {
            "sweep" => sweep(&c, &mut rows, false),
            "phase" => phase(&c, &mut rows),
            "trees" => trees(&c, &mut rows),
            "threeway" => threeway(&c, &mut rows),
            "levels" => levels(&c, &mut rows),
            "rss" => rss(&c, &mut rows),
            "rocksdb" => sweep(&c, &mut rows, true),
            other => fail(format!("unknown experiment {other}")),
        }
        // What is measured so far survives a later failure.
        report(&c, &rows);
    }
    let _ = std::fs::remove_dir_all(c.a.out.join("db"));
    print!("{}", report(&c, &rows));
}

/// Writes results.md, results.json and the charts of `rows`; returns the markdown.
fn report(c: &Ctx, rows: &[Row]) -> String {
    if rows.iter().any(|r| r.experiment == "sweep") {
        let sweep: Vec<Row> = rows.iter().filter(|r| r.experiment == "sweep").cloned().collect();
        sweep_png(&c.a.out.join("sweep.png"), &sweep, c.a.budget).unwrap_or_else(|e| fail(e));
    }
    for (exp, png) in [
        ("phase", "phase.png"),
        ("threeway", "threeway.png"),
        ("sweep", "sweep-trajectories.png"),
    ] {
        let series: Vec<(String, Vec<TunerPoint>)> = rows
            .iter()
            .filter(|r| r.experiment == exp && !r.tuner.is_empty())
            .map(|r| (r.config.clone(), r.tuner.clone()))
            .collect();
        if !series.is_empty() {
            cairn_bench::plot::tuner(&c.a.out.join(png), &format!("memory tuner: {exp}"), &series)
                .unwrap_or_else(|e| fail(e));
        }
    }
    let mut md = format!(
        "# Memory experiments\n\n{} keys of 16 + 100 B, budget {} MiB, O_DIRECT reads, floor {} MiB, tuner cycle {} ms\n\n",
        c.a.num,
        c.a.budget >> 20,
        c.a.floor >> 20,
        c.a.period_ms
    );
    md.push_str("| experiment | configuration | write memory start → end | ops/s | I/O per op | write-amp | peak RSS MiB | tuner cycles | levels +/− | MiB per level |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        md.push_str(&format!(
            "| {} | {} | {:.0}% → {:.0}% | {:.0} | {:.4} | {:.2} | {} | {} | +{} −{} | {:?} |\n",
            r.experiment,
            r.config,
            r.start_share,
            r.end_share,
            r.ops_per_sec,
            r.io_per_op,
            r.write_amp,
            r.peak_rss_mb,
            r.tuner_cycles,
            r.levels_added,
            r.levels_removed,
            r.shape
        ));
    }
    if rows.iter().any(|r| r.experiment == "rss") {
        md.push_str("\n| configuration | peak RSS MiB | RSS before open MiB | accounted at peak MiB | most unaccounted MiB |\n|---|---|---|---|---|\n");
        for r in rows.iter().filter(|r| r.experiment == "rss") {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                r.config, r.peak_rss_mb, r.start_rss_mb, r.accounted_at_peak_mb, r.max_unaccounted_mb
            ));
        }
    }
    cairn_bench::write_results(&c.a.out, &md, &rows).unwrap_or_else(|e| fail(e));
    md
}
