//! ElasticBF's figures at laptop scale (the paper's Fig. 10/13 read-only runs, adaptation to a
//! moving hot set, Fig. 11's mixed runs), for cairn's filter policies and RocksDB at the same
//! filter memory (4 bits per key on average) and the same total memory (block cache + index +
//! filters; the elastic policies' filter memory is taken out of their block cache). One load
//! per configuration (uniform random inserts, T = 4, 4 MiB files: ≥ 4 levels), copied before
//! each workload so every workload starts from the same just-loaded tree with no warm-up (as
//! the paper). O_DIRECT, cache 2% of the data. Writes results.md, results.json,
//! adaptation.png (unnecessary data-block reads per window of lookups over the run).
//!
//! ```sh
//! elastic_grid --out results/elastic --num 2000000 --reads 300000
//! ```

use cairn_bench::report::{Phase, RunReport};
use clap::Parser;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(rename_all = "snake_case", about = "ElasticBF's figures at laptop scale")]
pub struct Args {
    /// Where results go.
    #[arg(long)]
    out: PathBuf,
    /// Keys loaded.
    #[arg(long, default_value_t = 2_000_000)]
    num: u64,
    /// Lookups (or operations, mixed) of each workload.
    #[arg(long, default_value_t = 300_000)]
    reads: u64,
    /// Configurations: cairn bits-per-key policies and `rocksdb`.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "uniform,elastic,mnemosyne,mnemosyne-elastic,rocksdb"
    )]
    configs: Vec<String>,
    /// Workloads: read-only (zipf 0.99, half of the lookups empty), ycsb-c (zipf 0.99, every
    /// key present), shift (read-only with the hot set moving every `reads / 4` lookups),
    /// shift-range (the same with the popular keys in one contiguous range), mixed50 and
    /// mixed90 (reads among updates, half of the reads empty).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "read-only,ycsb-c,shift,shift-range,mixed50,mixed90"
    )]
    workloads: Vec<String>,
    /// Average filter bits per key (the filter memory of every configuration).
    #[arg(long, default_value_t = 4.0)]
    bpk: f64,
    /// Data bytes per filter segment of cairn's tables (the paper: 16 segments per table).
    #[arg(long, default_value_t = 1 << 20)]
    segment_size: u64,
    /// Block cache + filters + index as a share of the data (key + value bytes).
    #[arg(long, default_value_t = 0.02)]
    memory_share: f64,
    /// Lookups per window of the adaptation chart.
    #[arg(long, default_value_t = 10_000)]
    window: u64,
    /// Rounds: every workload runs once per round for every configuration, interleaved; the
    /// tables report medians.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Extra flags for every db_bench run.
    #[arg(last = true)]
    extra: Vec<String>,
}

/// One measured cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Cell {
    workload: String,
    config: String,
    ops_per_sec: f64,
    /// Blocks read from storage per lookup: data, filter (units; elastic loads), index.
    data_reads: Option<f64>,
    filter_reads: Option<f64>,
    index_reads: Option<f64>,
    unnecessary_per_lookup: Option<f64>,
    get_p50_us: Option<f64>,
    get_p99_us: Option<f64>,
    get_mean_us: Option<f64>,
    /// Throughput of every round (the cell is the median one's).
    #[serde(default)]
    rounds: Vec<f64>,
    phase: Phase,
}

fn cell(workload: &str, config: &str, p: Phase) -> Cell {
    let r = p.block_reads_per_lookup;
    let unnecessary = p
        .cairn
        .as_ref()
        .map(|c| c.unnecessary_data_reads_per_lookup)
        .or(p.false_positives_per_lookup);
    let get = p.by_op.get("get").or(p.latency.as_ref()).cloned();
    Cell {
        workload: workload.to_string(),
        config: config.to_string(),
        ops_per_sec: p.ops_per_sec,
        data_reads: r.map(|r| r.data),
        filter_reads: r.map(|r| r.filter),
        index_reads: r.map(|r| r.index),
        unnecessary_per_lookup: unnecessary,
        get_p50_us: get.as_ref().map(|l| l.p50_us),
        get_p99_us: get.as_ref().map(|l| l.p99_us),
        get_mean_us: get.as_ref().map(|l| l.mean_us),
        rounds: Vec::new(),
        phase: p,
    }
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("elastic_grid: {msg}");
    std::process::exit(2)
}

fn run(db_bench: &Path, args: &[String]) -> RunReport {
    cairn_bench::run_db_bench_temp(db_bench, args).unwrap_or_else(|e| fail(e))
}

fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap_or_else(|e| fail(format!("cp: {e}")));
    if !status.success() {
        fail(format!("cp -a {} {} failed", from.display(), to.display()));
    }
}

/// The db_bench flags of one workload.
fn workload(name: &str, a: &Args) -> Vec<String> {
    let read = |empty: f64| {
        vec![
            "--benchmarks=readrandom".to_string(),
            format!("--reads={}", a.reads),
            "--key_dist=zipf:0.99".into(),
            format!("--empty_ratio={empty}"),
        ]
    };
    let mixed = |pct: u32| {
        vec![
            "--benchmarks=readrandomwriterandom".to_string(),
            format!("--readwritepercent={pct}"),
            format!("--reads={}", a.reads),
            "--key_dist=zipf:0.99".into(),
            "--empty_ratio=0.5".into(),
        ]
    };
    let mut f = match name {
        "read-only" => read(0.5),
        "ycsb-c" => read(0.0),
        "shift" => {
            let mut f = read(0.5);
            f.push(format!("--hot_shift_every={}", (a.reads / 4).max(1)));
            f
        }
        "shift-range" => {
            // The popular keys in one contiguous range, which moves.
            let mut f = read(0.5);
            f.retain(|x| !x.starts_with("--key_dist"));
            f.push("--key_dist=zipfrange:0.99".into());
            f.push(format!("--hot_shift_every={}", (a.reads / 4).max(1)));
            f
        }
        "mixed50" => mixed(50),
        "mixed90" => mixed(90),
        other => fail(format!("unknown workload {other}")),
    };
    f.push(format!("--window={}", a.window));
    f
}

pub fn main(a: Args) {
    std::fs::create_dir_all(&a.out).unwrap_or_else(|e| fail(e));
    let db_bench =
        cairn_bench::sibling_exe("db_bench").unwrap_or_else(|| fail("cannot find db_bench next to this binary"));
    let (base, db) = (a.out.join("base"), a.out.join("db"));
    let data = a.num * (16 + 100);
    let memory = ((data as f64 * a.memory_share) as u64).max(1 << 20);
    let filter_memory = (a.bpk * a.num as f64 / 8.0) as u64;
    let mut common = cairn_bench::equal_memory_flags(a.num);
    common.extend(["--seed=7".into(), "--threads=1".into()]);
    // One load per configuration, kept; every run starts from a copy.
    let mut flags_of = Vec::new();
    for config in &a.configs {
        let mut flags = common.clone();
        // The elastic policies' filters are sized by their filter memory alone (bits per key
        // beside it would be refused as having no effect).
        if !config.contains("elastic") {
            flags.push(format!("--bloom_bits={}", a.bpk));
        }
        if config == "rocksdb" {
            flags.extend([
                "--engine=rocksdb".into(),
                "--statistics=1".into(),
                format!("--cache_size={memory}"),
            ]);
        } else {
            flags.extend([
                "--engine=cairn".into(),
                format!("--bpk_policy={config}"),
                format!("--segment_size={}", a.segment_size),
            ]);
            if config.contains("elastic") {
                // The filter memory is its own region: the cache gets the rest.
                flags.push(format!("--filter_memory={filter_memory}"));
                flags.push(format!(
                    "--cache_size={}",
                    memory.saturating_sub(filter_memory).max(1 << 20)
                ));
            } else {
                flags.push(format!("--cache_size={memory}"));
            }
        }
        flags.extend(a.extra.iter().cloned());
        let dir = base.join(config);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&base).unwrap_or_else(|e| fail(e));
        let mut fill = flags.clone();
        fill.push(format!("--db={}", dir.display()));
        fill.push("--benchmarks=fillrandom,waitforcompaction".into());
        println!("{config}: loading {} keys", a.num);
        run(&db_bench, &fill);
        flags_of.push((config.clone(), flags, dir));
    }
    let mut runs: Vec<Cell> = Vec::new();
    for round in 1..=a.rounds {
        for w in &a.workloads {
            for (config, flags, dir) in &flags_of {
                copy_dir(dir, &db);
                let mut args = flags.clone();
                args.push(format!("--db={}", db.display()));
                args.push("--use_existing_db=1".into());
                args.extend(workload(w, &a));
                let report = run(&db_bench, &args);
                let Some(p) = report.phases.last().cloned() else {
                    fail("the run reported no phase")
                };
                let cell = cell(w, config, p);
                println!(
                    "round {round} {w} {config}: {:.0} ops/s, blocks read per lookup data {} filter {}, unnecessary {}",
                    cell.ops_per_sec,
                    cell.data_reads.map_or("–".into(), |v| format!("{v:.4}")),
                    cell.filter_reads.map_or("–".into(), |v| format!("{v:.5}")),
                    cell.unnecessary_per_lookup.map_or("–".into(), |u| format!("{u:.4}"))
                );
                runs.push(cell);
            }
        }
    }
    // Per workload and configuration, the run with the median throughput.
    let mut cells = Vec::new();
    for w in &a.workloads {
        for c in &a.configs {
            let mut mine: Vec<&Cell> = runs.iter().filter(|x| &x.workload == w && &x.config == c).collect();
            mine.sort_by(|x, y| x.ops_per_sec.total_cmp(&y.ops_per_sec));
            if let Some(m) = mine.get(mine.len() / 2) {
                let mut m = (*m).clone();
                m.rounds = mine.iter().map(|x| x.ops_per_sec).collect();
                cells.push(m);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&base);
    let _ = std::fs::remove_dir_all(&db);
    std::fs::write(
        a.out.join("runs.json"),
        serde_json::to_string_pretty(&runs).unwrap_or_default(),
    )
    .unwrap_or_else(|e| fail(e));
    write_results(&a, memory, filter_memory, &cells);
}

fn write_results(a: &Args, memory: u64, filter_memory: u64, cells: &[Cell]) {
    let find = |w: &str, c: &str| cells.iter().find(|x| x.workload == w && x.config == c);
    let f = |v: Option<f64>, digits: usize| v.map_or("–".to_string(), |v| format!("{v:.digits$}"));
    let mut md = format!(
        "{} keys (16 B / 100 B), T = 4, 4 MiB files, {} MiB segments (cairn), O_DIRECT, one \
         thread. Memory {} bytes ({}% of the data) for every configuration: block cache with \
         index and filters charged to it, except the elastic policies, whose {} bytes of filter \
         memory ({} bits per key) come out of their cache. Zipf 0.99 (scrambled, except shift-range); each \
         workload starts from a copy of the just-loaded tree; {} operations; {} rounds \
         interleaved, the median run's figures (ops/s of every round in results.json).\n\n",
        a.num,
        a.segment_size as f64 / f64::from(1 << 20),
        memory,
        a.memory_share * 100.0,
        filter_memory,
        a.bpk,
        a.reads,
        a.rounds
    );
    md.push_str(
        "| workload | config | ops/s | × rocksdb | blocks read / lookup | data | filter (unit loads) | index | unnecessary / lookup | unit loads / all reads | get µs mean | p50 | p99 |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for w in &a.workloads {
        for c in &a.configs {
            let Some(x) = find(w, c) else { continue };
            let rocks = find(w, "rocksdb").map(|r| r.ops_per_sec);
            let total = x
                .data_reads
                .zip(x.filter_reads)
                .map(|(d, fl)| d + fl + x.index_reads.unwrap_or(0.0));
            let share = x
                .filter_reads
                .zip(total)
                .map(|(fl, t)| if t > 0.0 { fl / t } else { 0.0 });
            md.push_str(&format!(
                "| {w} | {c} | {:.0} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                x.ops_per_sec,
                f(rocks.map(|r| x.ops_per_sec / r), 2),
                f(total, 4),
                f(x.data_reads, 4),
                f(x.filter_reads, 5),
                f(x.index_reads, 4),
                f(x.unnecessary_per_lookup, 4),
                share.map_or("–".into(), |s| format!("{:.2}%", s * 100.0)),
                f(x.get_mean_us, 1),
                f(x.get_p50_us, 1),
                f(x.get_p99_us, 1),
            ));
        }
    }
    cairn_bench::write_results(&a.out, &md, cells).unwrap_or_else(|e| fail(e));
    print!("\n{md}");
    if let Err(e) = adaptation_chart(a, cells) {
        eprintln!("elastic_grid: chart: {e}");
    }
}

/// Unnecessary data-block reads per window of lookups over each workload that has windows,
/// one line per configuration.
fn adaptation_chart(a: &Args, cells: &[Cell]) -> Result<(), String> {
    cairn_bench::plot::register_font()?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let shown: Vec<&String> = a
        .workloads
        .iter()
        .filter(|w| w.starts_with("shift") || w.as_str() == "read-only")
        .collect();
    if shown.is_empty() {
        return Ok(());
    }
    let path = a.out.join("adaptation.png");
    let root = BitMapBackend::new(&path, (900, 380 * shown.len() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    for (panel, w) in root.split_evenly((shown.len(), 1)).iter().zip(shown) {
        let series: Vec<(String, Vec<(f64, f64)>)> = a
            .configs
            .iter()
            .filter_map(|c| {
                let x = cells.iter().find(|x| &x.workload == w && &x.config == c)?;
                let pts: Vec<(f64, f64)> = x
                    .phase
                    .windows
                    .iter()
                    .filter_map(|win| win.unnecessary.map(|u| (win.lookups as f64, u as f64)))
                    .collect();
                Some((c.clone(), pts))
            })
            .collect();
        let xmax = series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|q| q.0))
            .fold(1.0, f64::max);
        let ymax = series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|q| q.1))
            .fold(1.0, f64::max)
            * 1.1;
        let caption = match w.as_str() {
            "shift" => format!("{w}: scrambled zipf, hot set moves every {} lookups", a.reads / 4),
            "shift-range" => format!(
                "{w}: zipf over a contiguous range, which moves every {} lookups",
                a.reads / 4
            ),
            _ => w.clone(),
        };
        let mut ch = ChartBuilder::on(panel)
            .caption(caption, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(55)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax)
            .map_err(|e| err(&e))?;
        ch.configure_mesh()
            .x_desc("lookups")
            .y_desc(format!("unnecessary data reads per {} lookups", a.window))
            .draw()
            .map_err(|e| err(&e))?;
        for (ci, (c, pts)) in series.into_iter().enumerate() {
            let color = Palette99::pick(ci).to_rgba();
            cairn_bench::plot::marked_line(&mut ch, pts, color.stroke_width(2), c)?;
        }
        cairn_bench::plot::legend(&mut ch, SeriesLabelPosition::UpperRight)?;
    }
    root.present().map_err(|e| err(&e))
}
