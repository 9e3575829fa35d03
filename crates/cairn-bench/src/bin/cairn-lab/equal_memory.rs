//! The plain engine against RocksDB at equal memory (issue 35's grid): uniform filters at the
//! same bits per key, block cache = a share of the data with index and filters charged to it on
//! both engines, O_DIRECT, half of the lookups absent, uniform and zipf 0.99 key choice. One
//! load per engine and bits per key (T = 4, 4 MiB files), kept for every cache size and key
//! distribution (with `--reload`, a new load before each round); each cell a fresh process. Besides throughput and data blocks per lookup it
//! records where each engine's cache went (data, index, filter) and the hit rate per kind.
//! Writes results.md, results.json, runs.json and data-reads.png.
//!
//! ```sh
//! equal_memory --out results/equal-memory --num 3000000 --reads 600000 [--rounds 3 --reload [--num_step 100000]]
//! ```

use cairn_bench::engine::CacheAccounting;
use cairn_bench::report::RunReport;
use clap::Parser;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(
    rename_all = "snake_case",
    about = "cairn's plain engine against RocksDB at equal memory"
)]
pub struct Args {
    /// Where results go.
    #[arg(long)]
    out: PathBuf,
    /// Keys loaded (fillrandom: some are overwritten).
    #[arg(long, default_value_t = 3_000_000)]
    num: u64,
    /// Lookups per cell.
    #[arg(long, default_value_t = 300_000)]
    reads: u64,
    /// Filter bits per key.
    #[arg(long, value_delimiter = ',', default_value = "2,4,6,10")]
    bpk: Vec<f64>,
    /// Block cache (with index and filters) as a share of the data (key + value bytes).
    #[arg(long, value_delimiter = ',', default_value = "0.01,0.02,0.05")]
    cache: Vec<f64>,
    /// Key choice of the lookups.
    #[arg(long, value_delimiter = ',', default_value = "uniform,zipf:0.99")]
    dist: Vec<String>,
    /// Rounds (engines interleaved in each); per cell the median of each figure is reported.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Load the databases again before every round, with the round's seed: each load leaves
    /// its own level shape (runs to probe), which moves data blocks per lookup by ~10% on both
    /// engines; medians over several loads show what is the engine's and what the shape's.
    #[arg(long)]
    reload: bool,
    /// With `--reload`, round r loads `num + (r - 1) * num_step` keys: where a load stops
    /// decides what is left in L0 and the upper levels (the last flush's size), which moves
    /// data blocks per lookup more than the seed does.
    #[arg(long, default_value_t = 0)]
    num_step: u64,
    /// cairn's filter-unit layout (standard | cache-local; default: the engine's).
    #[arg(long)]
    unit_format: Option<String>,
    /// Entries between restart points in both engines' index blocks (default: each engine's
    /// own — cairn 8, RocksDB 1).
    #[arg(long)]
    index_block_restart_interval: Option<usize>,
}

const ENGINES: [&str; 2] = ["cairn", "rocksdb"];

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Run {
    engine: String,
    bpk: f64,
    cache: f64,
    dist: String,
    ops_per_sec: f64,
    data_reads: f64,
    filter_reads: f64,
    index_reads: f64,
    accounting: Option<CacheAccounting>,
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("equal_memory: {msg}");
    std::process::exit(2)
}

fn run(db_bench: &Path, args: &[String]) -> RunReport {
    cairn_bench::run_db_bench_temp(db_bench, args).unwrap_or_else(|e| fail(e))
}

pub fn main(a: Args) {
    std::fs::create_dir_all(&a.out).unwrap_or_else(|e| fail(e));
    let db_bench =
        cairn_bench::sibling_exe("db_bench").unwrap_or_else(|| fail("cannot find db_bench next to this binary"));
    if a.num_step > 0 && !a.reload {
        fail("--num_step needs --reload (one load per round)");
    }
    let base = a.out.join("db");
    // Keys loaded in round r (1-based) and their key and value bytes.
    let num = |round: usize| a.num + (round as u64 - 1) * a.num_step;
    let data = |round: usize| num(round) * (16 + 100);
    let common = |engine: &str, bpk: f64, seed: usize, keys: u64| {
        let mut f = cairn_bench::equal_memory_flags(keys);
        f.extend([
            format!("--engine={engine}"),
            "--statistics=1".into(),
            "--threads=1".into(),
            format!("--bloom_bits={bpk}"),
            format!("--seed={seed}"),
        ]);
        f.extend(
            a.index_block_restart_interval
                .map(|i| format!("--index_block_restart_interval={i}")),
        );
        if engine == "cairn" {
            f.push("--bpk_policy=uniform".into());
            f.extend(a.unit_format.iter().map(|u| format!("--filter_unit_format={u}")));
        }
        f
    };
    let dir = |engine: &str, bpk: f64| base.join(format!("{engine}-{bpk}"));
    let load = |seed: usize, keys: u64| {
        for &bpk in &a.bpk {
            for engine in ENGINES {
                let d = dir(engine, bpk);
                let _ = std::fs::remove_dir_all(&d);
                let mut f = common(engine, bpk, seed, keys);
                f.push(format!("--db={}", d.display()));
                f.push("--benchmarks=fillrandom,waitforcompaction".into());
                println!("{engine}, {bpk} bits per key: loading {keys} keys (seed {seed})");
                run(&db_bench, &f);
            }
        }
    };
    let mut runs = Vec::new();
    for round in 1..=a.rounds {
        // The first load (seed 7) always; another before each later round with --reload.
        let seed = if a.reload { 6 + round } else { 7 };
        if round == 1 || a.reload {
            load(seed, num(round));
        }
        for &bpk in &a.bpk {
            for &cache in &a.cache {
                for dist in &a.dist {
                    // Engines alternate which goes first.
                    let mut order = ENGINES.to_vec();
                    if (round + runs.len() / 2) % 2 == 0 {
                        order.reverse();
                    }
                    for engine in order {
                        let _ = std::process::Command::new("sync").status();
                        let mut f = common(engine, bpk, seed, num(round));
                        f.extend([
                            format!("--db={}", dir(engine, bpk).display()),
                            "--use_existing_db=1".into(),
                            format!("--cache_size={}", (data(round) as f64 * cache) as u64),
                            "--benchmarks=readrandom".into(),
                            format!("--reads={}", a.reads),
                            format!("--key_dist={dist}"),
                            "--empty_ratio=0.5".into(),
                        ]);
                        let report = run(&db_bench, &f);
                        let Some(p) = report.phases.last() else {
                            fail("the run reported no phase")
                        };
                        let r = p.block_reads_per_lookup.unwrap_or_default();
                        let x = Run {
                            engine: engine.into(),
                            bpk,
                            cache,
                            dist: dist.clone(),
                            ops_per_sec: p.ops_per_sec,
                            data_reads: r.data,
                            filter_reads: r.filter,
                            index_reads: r.index,
                            accounting: p.cache.clone(),
                        };
                        println!(
                            "round {round} bpk {bpk} cache {}% {dist} {engine}: {:.0} ops/s, data blocks per lookup {:.4}",
                            cache * 100.0,
                            x.ops_per_sec,
                            x.data_reads
                        );
                        runs.push(x);
                    }
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&base);
    std::fs::write(
        a.out.join("runs.json"),
        serde_json::to_string_pretty(&runs).unwrap_or_default(),
    )
    .unwrap_or_else(|e| fail(e));
    // Per cell and engine, the run with the median throughput, with the median of the data
    // blocks per lookup over the rounds (they need not come from the same run).
    let mut cells: Vec<Run> = Vec::new();
    for &bpk in &a.bpk {
        for &cache in &a.cache {
            for dist in &a.dist {
                for engine in ENGINES {
                    let mut mine: Vec<&Run> = runs
                        .iter()
                        .filter(|x| x.engine == engine && x.bpk == bpk && x.cache == cache && &x.dist == dist)
                        .collect();
                    mine.sort_by(|x, y| x.ops_per_sec.total_cmp(&y.ops_per_sec));
                    if let Some(m) = mine.get(mine.len() / 2) {
                        let mut cell = (*m).clone();
                        let mut reads: Vec<f64> = mine.iter().map(|x| x.data_reads).collect();
                        reads.sort_by(f64::total_cmp);
                        cell.data_reads = reads[reads.len() / 2];
                        cells.push(cell);
                    }
                }
            }
        }
    }
    write_results(&a, data(1), &cells);
}

fn write_results(a: &Args, data: u64, cells: &[Run]) {
    let mut md = format!(
        "{} keys loaded by fillrandom (16 B / 100 B; {} MiB of key and value bytes), T = 4, 4 MiB \
         files, uniform filters at the same bits per key on both engines, block cache = the share \
         of the data shown, with index and filters charged to it on both (cairn: index blocks and \
         filter units cached at high priority; RocksDB: cache_index_and_filter_blocks, high priority, L0 pinned), \
         O_DIRECT, one thread, {} lookups per cell with half of them absent; {} round(s){}, the \
         median of each figure. Cache MiB: what each engine's cache held at the end by kind (data / index / \
         filter); files per level: L0 first.\n\n",
        if a.num_step > 0 {
            let last = a.num + (a.rounds as u64 - 1) * a.num_step;
            format!(
                "{}–{} (a step of {} per round; the bytes are the first load's)",
                a.num, last, a.num_step
            )
        } else {
            a.num.to_string()
        },
        data >> 20,
        a.reads,
        a.rounds,
        if a.reload {
            ", each on its own load"
        } else {
            " on one load"
        }
    );
    md.push_str(
        "| bpk | cache | keys | data / lookup cairn | RocksDB | cairn ÷ RocksDB | ops/s cairn | RocksDB | cairn ÷ RocksDB | data hit cairn | RocksDB | cache MiB cairn | RocksDB | files per level cairn | RocksDB |\n\
         |---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|\n",
    );
    let find = |e: &str, bpk: f64, cache: f64, dist: &str| {
        cells
            .iter()
            .find(|x| x.engine == e && x.bpk == bpk && x.cache == cache && x.dist == dist)
    };
    let hit = |c: &Option<CacheAccounting>| c.as_ref().map_or("–".into(), |c| format!("{:.1}%", c.hit_rate(0)));
    let split = |c: &Option<CacheAccounting>| {
        let mb = |b: u64| b as f64 / f64::from(1 << 20);
        c.as_ref().map_or("–".into(), |c| {
            format!("{:.2} / {:.2} / {:.2}", mb(c.data), mb(c.index), mb(c.filter))
        })
    };
    let shape = |c: &Option<CacheAccounting>| {
        c.as_ref().map_or("–".into(), |c| {
            c.files_per_level
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        })
    };
    for &bpk in &a.bpk {
        for &cache in &a.cache {
            for dist in &a.dist {
                let (Some(c), Some(r)) = (find("cairn", bpk, cache, dist), find("rocksdb", bpk, cache, dist)) else {
                    continue;
                };
                md.push_str(&format!(
                    "| {bpk} | {}% | {dist} | {:.4} | {:.4} | {:.2} | {:.0} | {:.0} | {:.2} | {} | {} | {} | {} | {} | {} |\n",
                    cache * 100.0,
                    c.data_reads,
                    r.data_reads,
                    c.data_reads / r.data_reads.max(1e-9),
                    c.ops_per_sec,
                    r.ops_per_sec,
                    c.ops_per_sec / r.ops_per_sec.max(1e-9),
                    hit(&c.accounting),
                    hit(&r.accounting),
                    split(&c.accounting),
                    split(&r.accounting),
                    shape(&c.accounting),
                    shape(&r.accounting),
                ));
            }
        }
    }
    cairn_bench::write_results(&a.out, &md, cells).unwrap_or_else(|e| fail(e));
    print!("\n{md}");
    if let Err(e) = chart(a, cells) {
        eprintln!("equal_memory: chart: {e}");
    }
}

/// Data blocks per lookup against cache size, a panel per key distribution, a line per engine
/// and bits per key.
fn chart(a: &Args, cells: &[Run]) -> Result<(), String> {
    cairn_bench::plot::register_font()?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let path = a.out.join("data-reads.png");
    let root = BitMapBackend::new(&path, (900, 380 * a.dist.len() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let xmax = a.cache.iter().fold(0.0, |m: f64, &c| m.max(c * 100.0)) * 1.05;
    for (panel, dist) in root.split_evenly((a.dist.len(), 1)).iter().zip(&a.dist) {
        let ymax = cells
            .iter()
            .filter(|x| &x.dist == dist)
            .map(|x| x.data_reads)
            .fold(0.1, f64::max)
            * 1.1;
        let mut ch = ChartBuilder::on(panel)
            .caption(format!("{dist} lookups, half absent, O_DIRECT"), ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(55)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax)
            .map_err(|e| err(&e))?;
        ch.configure_mesh()
            .x_desc("block cache, % of the data")
            .y_desc("data blocks read per lookup")
            .draw()
            .map_err(|e| err(&e))?;
        for (bi, &bpk) in a.bpk.iter().enumerate() {
            for (ei, engine) in ENGINES.iter().enumerate() {
                let pts: Vec<(f64, f64)> = a
                    .cache
                    .iter()
                    .filter_map(|&c| {
                        cells
                            .iter()
                            .find(|x| &x.engine == engine && x.bpk == bpk && x.cache == c && &x.dist == dist)
                            .map(|x| (c * 100.0, x.data_reads))
                    })
                    .collect();
                let color = Palette99::pick(bi).to_rgba();
                let style = if ei == 0 {
                    color.stroke_width(2)
                } else {
                    color.stroke_width(1)
                };
                cairn_bench::plot::marked_line(&mut ch, pts, style, format!("{engine} {bpk} bpk"))?;
            }
        }
        cairn_bench::plot::legend(&mut ch, SeriesLabelPosition::UpperRight)?;
    }
    root.present().map_err(|e| err(&e))
}
