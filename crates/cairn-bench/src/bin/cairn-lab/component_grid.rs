//! Issue 15's measurements: cairn's monolithic memory component against the partitioned one
//! (Luo & Carey §4.1) and RocksDB 7.8 (needs the `rocksdb` feature), each under the same write
//! memory (64 MiB, 256 MiB, 1 GiB by default), buffered I/O, on a write-heavy zipfian load:
//!
//! 1. **load**: `fillrandom` of `--num` keys (16 + 100 B, uniform, as YCSB's load) into an
//!    empty directory;
//! 2. **updates**: `--ops` updates, zipf 0.99 (100% writes);
//! 3. **mixed**: `--ops` operations, half lookups and half updates, zipf 0.99 (YCSB A's mix).
//!
//! Phases 2 and 3 run in one process on the loaded tree. Per phase: throughput, bytes written to
//! storage per byte put (the process's `/proc/self/io`, WAL included, the same measure for
//! every engine), cairn's flush + compaction write-amp, CPU seconds and, for the partitioned
//! component, the time in memory merges. Then `--trees`: 10 trees with 80-20 write skew
//! (the paper's Fig. 10) at the middle write memory, write-only.
//!
//! Engines: `monolithic` (memtables of half the write memory, the default), `partitioned`
//! (runs of 1/16 of it, memory levels 10 apart), `rocksdb` (write buffers of half, two of them).
//! Rounds interleave the engines; results.md/json report medians and every round, and the
//! bytes written over the three phases; components.png charts throughput and those bytes
//! against write memory, relative to the monolithic component (the paper's Figs. 5–6).
//!
//! ```sh
//! component_grid --out docs/results/DATE/component --num 20000000 --ops 10000000
//! ```

use cairn_bench::report::{Phase, RunReport};
use clap::Parser;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(rename_all = "snake_case", about = "Partitioned memory component experiments")]
pub struct Args {
    /// Where results go.
    #[arg(long)]
    out: PathBuf,
    /// Keys loaded.
    #[arg(long, default_value_t = 20_000_000)]
    num: u64,
    /// Operations of the updates and mixed phases each.
    #[arg(long, default_value_t = 10_000_000)]
    ops: u64,
    /// Write memory sizes in MiB.
    #[arg(long, value_delimiter = ',', default_value = "64,256,1024")]
    write_memory: Vec<usize>,
    /// Engines: monolithic, partitioned, rocksdb.
    #[arg(long, value_delimiter = ',', default_value = "monolithic,partitioned,rocksdb")]
    engines: Vec<String>,
    /// Rounds (medians reported).
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Also run 10 trees with 80-20 skew at the middle write memory (cairn's engines only).
    #[arg(long)]
    trees: bool,
    /// Run nothing: rewrite results.md and components.png from `--out`'s results.json (with
    /// `--num` and `--ops` as they were run).
    #[arg(long)]
    replot: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Row {
    workload: String,
    engine: String,
    write_memory_mib: usize,
    round: usize,
    ops_per_sec: f64,
    /// Bytes written to storage per byte put (WAL included).
    #[serde(deserialize_with = "nan_if_null")]
    device_write_amp: f64,
    /// cairn: (flush + compaction bytes) / user bytes since open; NaN for RocksDB.
    #[serde(deserialize_with = "nan_if_null")]
    write_amp: f64,
    #[serde(deserialize_with = "nan_if_null")]
    cpu_secs: f64,
    memory_merge_secs: f64,
    peak_rss_mb: u64,
    /// MiB per level of the default tree after the phase (cairn).
    shape: Vec<u64>,
}

/// JSON writes NaN (a figure an engine does not have) as null.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("component_grid: {msg}");
    std::process::exit(1)
}

fn run(db_bench: &Path, args: &[String]) -> RunReport {
    cairn_bench::run_db_bench_temp(db_bench, args).unwrap_or_else(|e| fail(e))
}

/// Flags that give `engine` `mib` MiB of write memory.
fn memory_flags(engine: &str, mib: usize) -> Vec<String> {
    let wm = mib << 20;
    let (name, buffer, extra): (&str, usize, &[&str]) = match engine {
        "monolithic" => ("cairn", wm / 2, &[]),
        "partitioned" => ("cairn", wm / 16, &["--memory_component=partitioned"]),
        "rocksdb" => ("rocksdb", wm / 2, &[]),
        other => fail(format!("unknown engine {other}")),
    };
    let mut f = vec![
        format!("--engine={name}"),
        format!("--write_buffer_size={buffer}"),
        format!("--db_write_buffer_size={wm}"),
    ];
    f.extend(extra.iter().map(|s| s.to_string()));
    f
}

fn row(workload: &str, engine: &str, mib: usize, round: usize, p: &Phase, put_bytes: u64, r: &RunReport) -> Row {
    Row {
        workload: workload.into(),
        engine: engine.into(),
        write_memory_mib: mib,
        round,
        ops_per_sec: p.ops_per_sec,
        device_write_amp: p
            .device_write_bytes
            .map_or(f64::NAN, |w| w as f64 / put_bytes.max(1) as f64),
        write_amp: p
            .cairn
            .as_ref()
            .map_or(f64::NAN, |c| c.pages_written as f64 * 4096.0 / put_bytes.max(1) as f64),
        cpu_secs: p.cpu_secs.unwrap_or(f64::NAN),
        memory_merge_secs: p.cairn.as_ref().map_or(0.0, |c| c.memory_merge_micros as f64 / 1e6),
        peak_rss_mb: r.peak_rss_bytes >> 20,
        shape: p
            .cairn
            .as_ref()
            .map(|c| c.levels.iter().map(|&(_, b)| b >> 20).collect())
            .unwrap_or_default(),
    }
}

pub fn main(mut a: Args) {
    std::fs::create_dir_all(&a.out).unwrap_or_else(|e| fail(e));
    if a.replot {
        let json = std::fs::read(a.out.join("results.json")).unwrap_or_else(|e| fail(e));
        let rows: Vec<Row> = serde_json::from_slice(&json).unwrap_or_else(|e| fail(e));
        a.rounds = rows.iter().map(|r| r.round + 1).max().unwrap_or(1);
        a.write_memory.retain(|m| rows.iter().any(|r| r.write_memory_mib == *m));
        a.engines.retain(|e| rows.iter().any(|r| &r.engine == e));
        print!("{}", report(&a, &rows));
        return;
    }
    let db_bench =
        cairn_bench::sibling_exe("db_bench").unwrap_or_else(|| fail("cannot find db_bench next to this binary"));
    let db = a.out.join("db");
    let common = |extra: &[String]| {
        let mut f = vec![
            format!("--db={}", db.display()),
            format!("--num={}", a.num),
            "--key_size=16".into(),
            "--value_size=100".into(),
            "--compression_type=none".into(),
            "--bloom_bits=10".into(),
            "--cache_size=67108864".into(),
            "--seed=7".into(),
            "--threads=1".into(),
            "--target_file_size_base=67108864".into(),
        ];
        f.extend(extra.iter().cloned());
        f
    };
    let put = 116u64;
    let mut rows: Vec<Row> = Vec::new();
    for round in 0..a.rounds {
        for &mib in &a.write_memory {
            for engine in &a.engines {
                let _ = std::fs::remove_dir_all(&db);
                let mem = memory_flags(engine, mib);
                println!("round {round}: {engine}, {mib} MiB write memory: load");
                let mut f = common(&mem);
                f.push("--benchmarks=fillrandom".into());
                let load = run(&db_bench, &f);
                if let Some(p) = load.phases.first() {
                    rows.push(row("load", engine, mib, round, p, a.num * put, &load));
                }
                println!("round {round}: {engine}, {mib} MiB write memory: updates and mixed");
                let mut f = common(&mem);
                f.extend([
                    "--use_existing_db=1".to_string(),
                    "--benchmarks=readrandomwriterandom:0,readrandomwriterandom:50".into(),
                    format!("--reads={}", a.ops),
                    "--key_dist=zipf:0.99".into(),
                ]);
                let r = run(&db_bench, &f);
                for (p, (name, puts)) in r.phases.iter().zip([("updates", a.ops), ("mixed", a.ops / 2)]) {
                    rows.push(row(name, engine, mib, round, p, puts * put, &r));
                }
                report(&a, &rows);
            }
        }
        if a.trees {
            let mib = a.write_memory[a.write_memory.len() / 2];
            for engine in a.engines.iter().filter(|e| *e != "rocksdb") {
                for policy in ["max-memory", "min-lsn", "optimal"] {
                    let _ = std::fs::remove_dir_all(&db);
                    let mut f = common(&memory_flags(engine, mib));
                    f.extend([
                        "--benchmarks=fillrandom".to_string(),
                        "--num_trees=10".into(),
                        "--tree_skew=80-20".into(),
                        "--key_dist=zipf:0.99".into(),
                        format!("--flush_policy={policy}"),
                    ]);
                    let r = run(&db_bench, &f);
                    if let Some(p) = r.phases.first() {
                        rows.push(row(
                            &format!("10 trees 80-20, {policy}"),
                            engine,
                            mib,
                            round,
                            p,
                            a.num * put,
                            &r,
                        ));
                    }
                    report(&a, &rows);
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&db);
    print!("{}", report(&a, &rows));
}

fn median(mut v: Vec<f64>) -> f64 {
    cairn_bench::median(&mut v)
}

/// Writes results.md and results.json; returns the markdown.
fn report(a: &Args, rows: &[Row]) -> String {
    let mut md = format!(
        "# Memory components\n\n{} keys of 16 + 100 B loaded, {} operations per phase, zipf 0.99, buffered I/O, 64 MiB block cache, 1 thread; medians of {} round(s)\n\n",
        a.num, a.ops, a.rounds
    );
    md.push_str("| workload | write memory | engine | ops/s | × monolithic | bytes to storage per byte put | flush+compaction write-amp | CPU s | memory-merge CPU s | peak RSS MiB | MiB per level |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    let mut keys: Vec<(String, usize, String)> = Vec::new();
    for r in rows {
        let k = (r.workload.clone(), r.write_memory_mib, r.engine.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let pick = |w: &str, m: usize, e: &str| -> Vec<&Row> {
        rows.iter()
            .filter(|r| r.workload == w && r.write_memory_mib == m && r.engine == e)
            .collect()
    };
    for (w, m, e) in &keys {
        let rs = pick(w, *m, e);
        let med = |f: fn(&Row) -> f64| median(rs.iter().map(|r| f(r)).collect());
        let base = median(pick(w, *m, "monolithic").iter().map(|r| r.ops_per_sec).collect());
        md.push_str(&format!(
            "| {w} | {m} MiB | {e} | {:.0} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} | {} | {:?} |\n",
            med(|r| r.ops_per_sec),
            med(|r| r.ops_per_sec) / base,
            med(|r| r.device_write_amp),
            med(|r| r.write_amp),
            med(|r| r.cpu_secs),
            med(|r| r.memory_merge_secs),
            rs.iter().map(|r| r.peak_rss_mb).max().unwrap_or(0),
            rs.last().map(|r| r.shape.clone()).unwrap_or_default()
        ));
    }
    if a.rounds > 1 {
        md.push_str("\nEvery round (ops/s):\n\n| workload | write memory | engine | rounds |\n|---|---|---|---|\n");
        for (w, m, e) in &keys {
            let v: Vec<String> = pick(w, *m, e).iter().map(|r| format!("{:.0}", r.ops_per_sec)).collect();
            md.push_str(&format!("| {w} | {m} MiB | {e} | {} |\n", v.join(", ")));
        }
    }
    let totals = phase_totals(a, rows);
    if !totals.is_empty() {
        md.push_str("\nOver the three phases (load, updates, mixed; medians over rounds), relative to the monolithic component:\n\n| write memory | engine | bytes to storage | flush+compaction bytes |\n|---|---|---|---|\n");
        for t in &totals {
            md.push_str(&format!(
                "| {} MiB | {} | {:.2} | {:.2} |\n",
                t.mib, t.engine, t.device, t.flush_compaction
            ));
        }
    }
    cairn_bench::write_results(&a.out, &md, &rows).unwrap_or_else(|e| fail(e));
    if let Err(e) = chart(&a.out.join("components.png"), a, rows, &totals) {
        eprintln!("component_grid: components.png: {e}");
    }
    md
}

/// One engine's bytes over the three phases at one write memory, ÷ the monolithic component's.
struct Total {
    mib: usize,
    engine: String,
    device: f64,
    flush_compaction: f64,
}

/// Per write memory and engine: the median over rounds of the bytes the three phases wrote
/// (each phase's per-byte-put figure × its puts), relative to the monolithic component's.
fn phase_totals(a: &Args, rows: &[Row]) -> Vec<Total> {
    let puts = |w: &str| match w {
        "load" => a.num as f64,
        "updates" => a.ops as f64,
        "mixed" => (a.ops / 2) as f64,
        _ => 0.0,
    };
    // Bytes per round (None unless all three phases ran), device and flush + compaction.
    let per_round = |mib: usize, engine: &str, f: fn(&Row) -> f64| -> Vec<f64> {
        (0..a.rounds)
            .filter_map(|round| {
                let rs: Vec<&Row> = rows
                    .iter()
                    .filter(|r| {
                        r.write_memory_mib == mib && r.engine == engine && r.round == round && puts(&r.workload) > 0.0
                    })
                    .collect();
                (rs.len() == 3).then(|| rs.iter().map(|r| f(r) * puts(&r.workload)).sum())
            })
            .collect()
    };
    let mut out = Vec::new();
    for &mib in &a.write_memory {
        let base_dev = median(per_round(mib, "monolithic", |r| r.device_write_amp));
        let base_fc = median(per_round(mib, "monolithic", |r| r.write_amp));
        for engine in &a.engines {
            let dev = per_round(mib, engine, |r| r.device_write_amp);
            if dev.is_empty() {
                continue;
            }
            out.push(Total {
                mib,
                engine: engine.clone(),
                device: median(dev) / base_dev,
                flush_compaction: median(per_round(mib, engine, |r| r.write_amp)) / base_fc,
            });
        }
    }
    out
}

/// A named line of a chart, in its style.
type Line = (String, Vec<(f64, f64)>, plotters::style::ShapeStyle);

/// Left: each engine's throughput per phase ÷ the monolithic component's; right: bytes over
/// the three phases ÷ the monolithic component's; both against write memory.
fn chart(path: &Path, a: &Args, rows: &[Row], totals: &[Total]) -> Result<(), String> {
    use plotters::prelude::*;
    cairn_bench::plot::register_font()?;
    let root = BitMapBackend::new(path, (1200, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let (left, right) = root.split_horizontally(600);
    let sizes = &a.write_memory;
    let med_ops = |w: &str, m: usize, e: &str| {
        median(
            rows.iter()
                .filter(|r| r.workload == w && r.write_memory_mib == m && r.engine == e)
                .map(|r| r.ops_per_sec)
                .collect(),
        )
    };
    let mut lines: Vec<Line> = Vec::new();
    for e in a.engines.iter().filter(|e| *e != "monolithic") {
        for w in ["load", "updates", "mixed"] {
            let pts: Vec<(f64, f64)> = sizes
                .iter()
                .enumerate()
                .map(|(i, &m)| (i as f64, med_ops(w, m, e) / med_ops(w, m, "monolithic")))
                .filter(|p| p.1.is_finite())
                .collect();
            if !pts.is_empty() {
                let style = Palette99::pick(lines.len()).stroke_width(2);
                lines.push((format!("{e}, {w}"), pts, style));
            }
        }
    }
    panel(
        &left,
        sizes,
        "throughput ÷ monolithic component",
        lines,
        SeriesLabelPosition::LowerRight,
    )?;
    let index = |m: usize| sizes.iter().position(|&s| s == m).unwrap_or(0) as f64;
    let mut lines: Vec<Line> = Vec::new();
    for (i, e) in a.engines.iter().enumerate() {
        let color = Palette99::pick(i + 6);
        let of = |f: fn(&Total) -> f64| -> Vec<(f64, f64)> {
            totals
                .iter()
                .filter(|t| &t.engine == e && f(t).is_finite())
                .map(|t| (index(t.mib), f(t)))
                .collect()
        };
        lines.push((format!("{e}, all bytes"), of(|t| t.device), color.stroke_width(2)));
        let fc = of(|t| t.flush_compaction);
        if !fc.is_empty() {
            lines.push((format!("{e}, flush + compaction"), fc, color.stroke_width(1)));
        }
    }
    panel(
        &right,
        sizes,
        "bytes written over the three phases ÷ monolithic",
        lines,
        SeriesLabelPosition::LowerLeft,
    )?;
    root.present().map_err(|e| e.to_string())
}

/// One chart of `lines` against the write memory sizes (one tick each), from 0 to above the
/// highest point or 1.
fn panel(
    area: &plotters::drawing::DrawingArea<plotters::backend::BitMapBackend<'_>, plotters::coord::Shift>,
    sizes: &[usize],
    caption: &str,
    lines: Vec<Line>,
    legend: plotters::chart::SeriesLabelPosition,
) -> Result<(), String> {
    use plotters::prelude::*;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let y_max = lines
        .iter()
        .flat_map(|l| l.1.iter().map(|p| p.1))
        .fold(1.0f64, f64::max)
        * 1.15;
    let label = |x: &f64| {
        let i = x.round();
        match sizes.get(i as usize) {
            Some(m) if (x - i).abs() < 1e-6 && i >= 0.0 => format!("{m} MiB"),
            _ => String::new(),
        }
    };
    let mut ch = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d(-0.5..sizes.len() as f64 - 0.5, 0.0..y_max)
        .map_err(|e| err(&e))?;
    ch.configure_mesh()
        .x_labels(sizes.len() * 2 + 1)
        .x_label_formatter(&label)
        .x_desc("write memory")
        .draw()
        .map_err(|e| err(&e))?;
    for (name, pts, style) in lines {
        cairn_bench::plot::marked_line(&mut ch, pts, style, name)?;
    }
    cairn_bench::plot::legend(&mut ch, legend)
}
