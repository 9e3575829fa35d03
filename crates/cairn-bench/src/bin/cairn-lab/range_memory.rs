//! Range-filter memory at run time: a database loaded by `db_bench` (range filters on, index
//! and filters charged to the block cache) is opened with the same flags, and the block cache
//! is resized step by step while empty range reads run; per step, how much range-filter memory
//! the cache's share allows and holds, and what the reads cost (data blocks and range-filter
//! blocks read per query, µs per query). Each key distribution runs in its own open of the
//! database: with a hot part of the key space, the round keeps the filters of the tables the
//! empty reads reach most, so the reads there stay filtered as the cache shrinks.
//! Writes results.md, results.json and chart.png under `--out`.
//!
//! ```sh
//! range_memory --db /tmp/rg-grafite --out docs/results/x $(cat db_bench flags)
//! ```

use cairn_bench::engine::{cairn_options, EngineArgs};
use cairn_bench::keys::{db_bench_key, KeyDist};
use clap::Parser;
use plotters::prelude::*;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(
    rename_all = "snake_case",
    about = "Range-filter memory as the block cache is resized"
)]
pub struct Args {
    /// The database (loaded by db_bench with the same flags).
    #[arg(long)]
    db: PathBuf,
    #[arg(long)]
    out: PathBuf,
    /// Key numbers in the database (keys are `i × key_stride`).
    #[arg(long)]
    num: u64,
    #[arg(long, default_value_t = 1024)]
    key_stride: u64,
    /// Key bytes (`db_bench --key_size`, number keys).
    #[arg(long, default_value_t = 16)]
    key_size: usize,
    /// Values an empty range spans.
    #[arg(long, default_value_t = 16)]
    range: u64,
    /// Measured empty range reads per step.
    #[arg(long, default_value_t = 200_000)]
    reads: u64,
    /// Seconds of unmeasured reads after each resize (the background round runs every
    /// `range_filter.round_ms`, 1 s by default, and admitted filters load on their next read).
    #[arg(long, default_value_t = 3.0)]
    warm_secs: f64,
    /// Block-cache sizes per step, as fractions of `--cache_size`.
    #[arg(long, value_delimiter = ',', default_value = "1,0.5,0.25,0.125,0.0625,1")]
    steps: Vec<f64>,
    /// Key distributions (`db_bench --key_dist`), one open of the database each.
    #[arg(long, value_delimiter = ',', default_value = "uniform,zipfrange:0.9")]
    key_dists: Vec<String>,
    /// Draw chart.png again from `--out`'s results.json, without running.
    #[arg(long)]
    replot: bool,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(Debug, Serialize, serde::Deserialize)]
struct Row {
    key_dist: String,
    step: usize,
    cache_bytes: usize,
    range_filter_capacity: usize,
    range_filter_usage: usize,
    data_blocks_per_query: f64,
    range_filter_blocks_per_query: f64,
    micros_per_query: f64,
    queries: u64,
}

fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!("range_memory: {e}");
    std::process::exit(1);
}

pub fn main(mut a: Args, given: std::collections::BTreeSet<String>) {
    a.engine.given = given;
    if a.key_stride < a.range + 2 {
        fail("--key_stride must exceed --range by 2");
    }
    if a.replot {
        let text = std::fs::read_to_string(a.out.join("results.json")).unwrap_or_else(|e| fail(e));
        let rows: Vec<Row> = serde_json::from_str(&text).unwrap_or_else(|e| fail(e));
        chart(&a, &rows).unwrap_or_else(|e| fail(e));
        return;
    }
    std::fs::create_dir_all(&a.out).unwrap_or_else(|e| fail(e));
    let mut rows = Vec::new();
    for dist in &a.key_dists {
        rows.extend(run(&a, dist));
    }
    let mut md = format!(
        "{} keys on a stride of {}, empty ranges of {} values, {} measured reads per step after {} s of warm-up; \
         block cache resized per step (`Db::resize_memory`); range filters may hold `range_filter.memory_share` of it\n\n\
         | key dist | step | block cache | range-filter capacity | range filters held | data blocks/query | range-filter blocks/query | µs/query |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
        a.num, a.key_stride, a.range, a.reads, a.warm_secs
    );
    let mib = |b: usize| format!("{:.1} MiB", b as f64 / f64::from(1 << 20));
    for r in &rows {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.4} | {:.5} | {:.2} |\n",
            r.key_dist,
            r.step,
            mib(r.cache_bytes),
            mib(r.range_filter_capacity),
            mib(r.range_filter_usage),
            r.data_blocks_per_query,
            r.range_filter_blocks_per_query,
            r.micros_per_query
        ));
    }
    cairn_bench::write_results(&a.out, &md, &rows).unwrap_or_else(|e| fail(e));
    if let Err(e) = chart(&a, &rows) {
        eprintln!("range_memory: chart not drawn: {e}");
    }
    print!("\n{md}");
}

/// One open of the database: every step of `--steps` under key distribution `dist`.
fn run(a: &Args, dist: &str) -> Vec<Row> {
    let opts = cairn_options(&a.engine).unwrap_or_else(|e| fail(e));
    let db = cairn::Db::open(&a.db, opts).unwrap_or_else(|e| fail(e));
    let dist_of = KeyDist::parse(dist, a.num).unwrap_or_else(|e| fail(e));
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let (mut lo, mut hi) = (Vec::new(), Vec::new());
    let mut read = |n: Option<u64>, until: Option<Instant>| {
        let mut done = 0u64;
        while n.is_some_and(|n| done < n) || until.is_some_and(|t| Instant::now() < t) {
            let k = dist_of.next(a.num, &mut rng) * a.key_stride;
            let start = k + 1 + rng.gen_range(0..a.key_stride - a.range - 1);
            db_bench_key(start, a.key_size, &mut lo);
            db_bench_key(start + a.range, a.key_size, &mut hi);
            let found = db.range(lo.as_slice()..hi.as_slice()).next();
            if let Some(r) = found {
                fail(format!("range {start}..+{} is not empty: {r:?}", a.range));
            }
            done += 1;
        }
        done
    };
    let mut rows = Vec::new();
    for (step, &frac) in a.steps.iter().enumerate() {
        let cache = (a.engine.cache_size as f64 * frac) as usize;
        db.resize_memory(cairn::MemoryLimits {
            block_cache: Some(cache),
            ..Default::default()
        })
        .unwrap_or_else(|e| fail(e));
        read(None, Some(Instant::now() + Duration::from_secs_f64(a.warm_secs)));
        let io = |db: &cairn::Db| {
            let s = db.stats().io;
            (
                s.kind(cairn::BlockKind::Data).reads,
                s.kind(cairn::BlockKind::RangeFilter).reads,
            )
        };
        let before = io(&db);
        let t = Instant::now();
        let q = read(Some(a.reads), None);
        let secs = t.elapsed().as_secs_f64();
        let after = io(&db);
        let m = db.memory();
        let row = Row {
            key_dist: dist.to_string(),
            step,
            cache_bytes: cache,
            range_filter_capacity: m.range_filter_capacity,
            range_filter_usage: m.range_filter_usage,
            data_blocks_per_query: (after.0 - before.0) as f64 / q as f64,
            range_filter_blocks_per_query: (after.1 - before.1) as f64 / q as f64,
            micros_per_query: secs * 1e6 / q as f64,
            queries: q,
        };
        println!("{row:?}");
        rows.push(row);
    }
    rows
}

fn chart(a: &Args, rows: &[Row]) -> Result<(), String> {
    cairn_bench::plot::register_font()?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let path = a.out.join("chart.png");
    let root = BitMapBackend::new(&path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let steps = a.steps.len() as f64;
    let top = rows.iter().map(|r| r.data_blocks_per_query).fold(1.0, f64::max) * 1.1;
    let mut ch = ChartBuilder::on(&root)
        .caption(
            "empty range reads as the block cache is resized (x: step; label: cache fraction)",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.2..steps - 0.8, 0.0..top)
        .map_err(|e| err(&e))?;
    let fracs = a.steps.clone();
    ch.configure_mesh()
        .x_labels(a.steps.len())
        .x_label_formatter(&|x| {
            let i = x.round() as usize;
            fracs.get(i).map_or(String::new(), |f| format!("{i}: ×{f}"))
        })
        .x_desc("step (block cache as a fraction of the first)")
        .y_desc("data blocks per query; range filters held / capacity")
        .draw()
        .map_err(|e| err(&e))?;
    let mut i = 0;
    for (d, dist) in a.key_dists.iter().enumerate() {
        let of = |f: &dyn Fn(&Row) -> f64| -> Vec<(f64, f64)> {
            rows.iter()
                .filter(|r| &r.key_dist == dist)
                .map(|r| (r.step as f64, f(r)))
                .collect()
        };
        let mut series = vec![(format!("{dist}: data blocks/query"), of(&|r| r.data_blocks_per_query))];
        // What the filters hold depends on the cache only: drawn once.
        if d == 0 {
            series.push((
                "range filters held / capacity".to_string(),
                of(&|r| r.range_filter_usage as f64 / r.range_filter_capacity.max(1) as f64),
            ));
        }
        for (name, pts) in series {
            cairn_bench::plot::marked_line(&mut ch, pts, Palette99::pick(i).to_rgba().stroke_width(2), name)?;
            i += 1;
        }
    }
    cairn_bench::plot::legend(&mut ch, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(|e| err(&e))
}
