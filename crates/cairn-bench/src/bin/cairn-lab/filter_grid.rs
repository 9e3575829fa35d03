//! Mnemosyne's Fig. 11 at laptop scale: for each key distribution, share of empty lookups Z and
//! bits per key, load with uniform random inserts, then run a mixed phase of lookups and updates
//! (3 lookups per update) twice and measure the second: unnecessary data-block reads per lookup
//! and throughput, for cairn under each bits-per-key policy and for RocksDB at the same bits per
//! key and the same total memory (index and filters charged to the block cache on both).
//! Writes results.md, results.json, chart.png (unnecessary reads per lookup against bits per
//! key) and allocation.png (each file's bits per key against its empty lookups, by level, for
//! Mnemosyne and the oracle in one cell).
//!
//! ```sh
//! filter_grid --out results/filters --num 1000000
//! ```

use cairn_bench::report::{Phase, RunReport};
use clap::Parser;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(
    rename_all = "snake_case",
    about = "Point-filter allocation grid (Mnemosyne Fig. 11)"
)]
pub struct Args {
    /// Where results go.
    #[arg(long)]
    out: PathBuf,
    /// Keys loaded.
    #[arg(long, default_value_t = 1_000_000)]
    num: u64,
    /// Operations of each mixed phase.
    #[arg(long, default_value_t = 300_000)]
    ops: u64,
    /// Key distributions of the mixed phase (the load is always uniform).
    #[arg(long, value_delimiter = ',', default_value = "uniform,zipf:0.99")]
    dists: Vec<String>,
    /// Shares of empty lookups.
    #[arg(long, value_delimiter = ',', default_value = "0,0.5,1")]
    z: Vec<f64>,
    /// Bits per key.
    #[arg(long, value_delimiter = ',', default_value = "2,3,4,6")]
    bpk: Vec<f64>,
    /// Configurations: cairn bits-per-key policies and `rocksdb`.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "uniform,monkey,mnemosyne,optimal,rocksdb"
    )]
    configs: Vec<String>,
    /// Block cache as a share of the data (key + value bytes).
    #[arg(long, default_value_t = 0.02)]
    cache_share: f64,
    /// Extra flags for every db_bench run.
    #[arg(last = true)]
    extra: Vec<String>,
}

/// One measured cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Cell {
    dist: String,
    z: f64,
    bpk: f64,
    config: String,
    ops_per_sec: f64,
    unnecessary_per_lookup: Option<f64>,
    data_reads_per_lookup: Option<f64>,
    phase: Phase,
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("filter_grid: {msg}");
    std::process::exit(2)
}

fn run(db_bench: &Path, args: &[String]) -> RunReport {
    cairn_bench::run_db_bench_temp(db_bench, args).unwrap_or_else(|e| fail(e))
}

pub fn main(a: Args) {
    std::fs::create_dir_all(&a.out).unwrap_or_else(|e| fail(e));
    let db_bench =
        cairn_bench::sibling_exe("db_bench").unwrap_or_else(|| fail("cannot find db_bench next to this binary"));
    let db = a.out.join("db");
    let data = a.num * (16 + 100);
    let cache = ((data as f64 * a.cache_share) as u64).max(1 << 20);
    // Four levels of small files under T = 4 (L1 = 4 MiB), as the paper's shape at our scale.
    let mut common = cairn_bench::equal_memory_flags(a.num);
    common.extend([format!("--cache_size={cache}"), "--seed=7".into()]);
    let mut cells = Vec::new();
    let total = a.dists.len() * a.z.len() * a.bpk.len() * a.configs.len();
    let mut done = 0;
    for dist in &a.dists {
        for &z in &a.z {
            for &bpk in &a.bpk {
                for config in &a.configs {
                    done += 1;
                    let engine: Vec<String> = if config == "rocksdb" {
                        vec!["--engine=rocksdb".into(), "--statistics=1".into()]
                    } else {
                        vec!["--engine=cairn".into(), format!("--bpk_policy={config}")]
                    };
                    let _ = std::fs::remove_dir_all(&db);
                    let mut base = common.clone();
                    base.extend(engine);
                    base.push(format!("--bloom_bits={bpk}"));
                    base.push(format!("--db={}", db.display()));
                    base.extend(a.extra.iter().cloned());
                    let mut fill = base.clone();
                    fill.push("--benchmarks=fillrandom".into());
                    run(&db_bench, &fill);
                    let mut mixed = base.clone();
                    mixed.extend([
                        "--use_existing_db=1".to_string(),
                        "--benchmarks=readrandomwriterandom,readrandomwriterandom".into(),
                        "--readwritepercent=75".into(),
                        format!("--reads={}", a.ops),
                        format!("--empty_ratio={z}"),
                        format!("--key_dist={dist}"),
                    ]);
                    let report = run(&db_bench, &mixed);
                    let Some(p) = report.phases.last().cloned() else {
                        fail("the mixed run reported no phase")
                    };
                    let unnecessary = p
                        .cairn
                        .as_ref()
                        .map(|c| c.unnecessary_data_reads_per_lookup)
                        .or(p.false_positives_per_lookup);
                    println!(
                        "[{done}/{total}] {dist} Z={z} bpk={bpk} {config}: {:.0} ops/s, unnecessary reads/lookup {}",
                        p.ops_per_sec,
                        unnecessary.map_or("–".into(), |u| format!("{u:.4}"))
                    );
                    cells.push(Cell {
                        dist: dist.clone(),
                        z,
                        bpk,
                        config: config.clone(),
                        ops_per_sec: p.ops_per_sec,
                        unnecessary_per_lookup: unnecessary,
                        data_reads_per_lookup: p.cairn.as_ref().map(|c| c.data_reads_per_lookup),
                        phase: p,
                    });
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&db);
    write_results(&a, &cells);
}

fn write_results(a: &Args, cells: &[Cell]) {
    let find = |d: &str, z: f64, b: f64, c: &str| {
        cells
            .iter()
            .find(|x| x.dist == d && x.z == z && x.bpk == b && x.config == c)
    };
    let mut md = format!(
        "{} keys (16 B / 100 B), T = 4, 4 MiB files, cache {}% of the data with index and filters \
         charged to it, O_DIRECT; load uniform, then two mixed phases of {} operations (75% \
         lookups), the second measured.\n\n",
        a.num,
        a.cache_share * 100.0,
        a.ops
    );
    md.push_str("| keys | Z | bpk |");
    for c in &a.configs {
        md.push_str(&format!(" {c} unnecessary/lookup |"));
    }
    for c in &a.configs {
        md.push_str(&format!(" {c} ops/s |"));
    }
    md.push_str(" mnemosyne / optimal (unnecessary) | mnemosyne / rocksdb (ops/s) |\n|---|---:|---:|");
    md.push_str(&"---:|".repeat(2 * a.configs.len() + 2));
    md.push('\n');
    for d in &a.dists {
        for &z in &a.z {
            for &b in &a.bpk {
                md.push_str(&format!("| {d} | {z} | {b} |"));
                for c in &a.configs {
                    let v = find(d, z, b, c).and_then(|x| x.unnecessary_per_lookup);
                    md.push_str(&v.map_or(" – |".into(), |v| format!(" {v:.4} |")));
                }
                for c in &a.configs {
                    let v = find(d, z, b, c).map(|x| x.ops_per_sec);
                    md.push_str(&v.map_or(" – |".into(), |v| format!(" {v:.0} |")));
                }
                let ratio = |x: Option<f64>, y: Option<f64>| match (x, y) {
                    (Some(x), Some(y)) if y > 0.0 => format!(" {:.2} |", x / y),
                    (Some(0.0), Some(_)) => " 1.00 |".into(),
                    _ => " – |".into(),
                };
                md.push_str(&ratio(
                    find(d, z, b, "mnemosyne").and_then(|x| x.unnecessary_per_lookup),
                    find(d, z, b, "optimal").and_then(|x| x.unnecessary_per_lookup),
                ));
                md.push_str(&ratio(
                    find(d, z, b, "mnemosyne").map(|x| x.ops_per_sec),
                    find(d, z, b, "rocksdb").map(|x| x.ops_per_sec),
                ));
                md.push('\n');
            }
        }
    }
    cairn_bench::write_results(&a.out, &md, cells).unwrap_or_else(|e| fail(e));
    print!("\n{md}");
    if let Err(e) = chart(a, cells) {
        eprintln!("filter_grid: chart: {e}");
    }
    if let Err(e) = allocation_chart(a, cells) {
        eprintln!("filter_grid: allocation chart: {e}");
    }
}

/// One panel per (distribution, Z): unnecessary reads per lookup against bits per key.
fn chart(a: &Args, cells: &[Cell]) -> Result<(), String> {
    cairn_bench::plot::register_font()?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let (rows, cols) = (a.dists.len(), a.z.len());
    let path = a.out.join("chart.png");
    let root = BitMapBackend::new(&path, (420 * cols as u32, 320 * rows as u32 + 30)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (title, body) = root.split_vertically(30);
    title
        .draw_text(
            "unnecessary data-block reads per lookup vs bits per key",
            &("sans-serif", 18).into_font().color(&BLACK),
            (10, 6),
        )
        .map_err(|e| err(&e))?;
    let panels = body.split_evenly((rows, cols));
    let bmax = a.bpk.iter().copied().fold(1.0, f64::max);
    for (pi, panel) in panels.iter().enumerate() {
        let (d, z) = (&a.dists[pi / cols], a.z[pi % cols]);
        let ymax = cells
            .iter()
            .filter(|c| &c.dist == d && c.z == z)
            .filter_map(|c| c.unnecessary_per_lookup)
            .fold(0.01, f64::max)
            * 1.1;
        let mut ch = ChartBuilder::on(panel)
            .caption(format!("{d}, Z = {z}"), ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(25)
            .y_label_area_size(45)
            .build_cartesian_2d(0.0..bmax + 0.5, 0.0..ymax)
            .map_err(|e| err(&e))?;
        ch.configure_mesh().x_desc("bits per key").draw().map_err(|e| err(&e))?;
        for (ci, c) in a.configs.iter().enumerate() {
            let color = Palette99::pick(ci).to_rgba();
            let pts: Vec<(f64, f64)> = a
                .bpk
                .iter()
                .filter_map(|&b| {
                    cells
                        .iter()
                        .find(|x| &x.dist == d && x.z == z && x.bpk == b && &x.config == c)
                        .and_then(|x| x.unnecessary_per_lookup)
                        .map(|u| (b, u))
                })
                .collect();
            cairn_bench::plot::marked_line(&mut ch, pts, color.stroke_width(2), c.clone())?;
        }
        if pi == 0 {
            cairn_bench::plot::legend(&mut ch, SeriesLabelPosition::UpperRight)?;
        }
    }
    root.present().map_err(|e| err(&e))
}

/// Each file's bits per key against its empty lookups, one colour per level, for Mnemosyne and
/// the oracle in the skewed cell with half of the lookups empty at the smallest bits per key.
fn allocation_chart(a: &Args, cells: &[Cell]) -> Result<(), String> {
    let dist = a.dists.last().cloned().unwrap_or_default();
    let b = a.bpk.first().copied().unwrap_or(2.0);
    let z = a.z.iter().copied().find(|&z| z > 0.0 && z < 1.0).unwrap_or(0.5);
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let path = a.out.join("allocation.png");
    let root = BitMapBackend::new(&path, (1000, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let halves = root.split_evenly((1, 2));
    for (half, policy) in halves.iter().zip(["mnemosyne", "optimal"]) {
        let Some(cell) = cells
            .iter()
            .find(|c| c.dist == dist && c.z == z && c.bpk == b && c.config == policy)
        else {
            continue;
        };
        let files = cell.phase.cairn.as_ref().map(|m| m.files.clone()).unwrap_or_default();
        let xmax = files.iter().map(|f| (f.exact_empty + 1.0).log10()).fold(1.0, f64::max) * 1.05;
        let ymax = files.iter().map(|f| f.bpk).fold(1.0, f64::max) * 1.1;
        let mut ch = ChartBuilder::on(half)
            .caption(
                format!("{policy}: {dist}, Z = {z}, {b} bits per key"),
                ("sans-serif", 15),
            )
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(40)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax)
            .map_err(|e| err(&e))?;
        ch.configure_mesh()
            .x_desc("log10(1 + empty lookups of the file)")
            .y_desc("bits per key")
            .draw()
            .map_err(|e| err(&e))?;
        let levels = files.iter().map(|f| f.level).max().unwrap_or(0);
        for level in 0..=levels {
            let color = Palette99::pick(level).to_rgba();
            let pts: Vec<(f64, f64)> = files
                .iter()
                .filter(|f| f.level == level)
                .map(|f| ((f.exact_empty + 1.0).log10(), f.bpk))
                .collect();
            if pts.is_empty() {
                continue;
            }
            ch.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled())))
                .map_err(|e| err(&e))?
                .label(format!("L{level}"))
                .legend(move |(x, y)| Circle::new((x + 6, y), 4, color.filled()));
        }
        cairn_bench::plot::legend(&mut ch, SeriesLabelPosition::UpperLeft)?;
    }
    root.present().map_err(|e| err(&e))
}
