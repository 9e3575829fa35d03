//! Runs one workload on several engines or configurations in one invocation and tabulates it.
//!
//! Every run is a separate process on a fresh directory (our `db_bench`/`ycsb` with `--json`, or
//! a foreign db_bench-compatible binary whose result lines are parsed), the order of
//! configurations rotates every round so drift hits all of them alike, and our runners draw
//! the same key sequence from the same `--seed`. Output: every run's figures, a markdown table
//! of medians and ratios to the first configuration, and a PNG bar chart of the ratios.
//!
//! ```sh
//! compare --rounds 3 --config cairn=--engine=cairn --config rocksdb=--engine=rocksdb \
//!     --config "db_bench=exe:/usr/bin/db_bench" -- --benchmarks=fillrandom,readrandom --num=1000000
//! ```

use cairn_bench::report::{Phase, RunReport};
use clap::Parser;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Parser, Debug)]
#[command(about = "Compare engines/configurations on one workload")]
pub struct Args {
    /// db_bench | ycsb
    #[arg(long, default_value = "db_bench")]
    tool: String,
    /// `NAME=FLAGS` for our runner, `NAME=runner:PATH FLAGS` for another build of it (an older
    /// commit's), or `NAME=exe:PATH FLAGS` for another binary taking the same flags (Debian's
    /// db_bench). A leading `from:DIR` (before any of these) starts each run on a copy of the
    /// database in DIR (with `--use_existing_db=1` among the flags: one load, many read runs).
    /// The first configuration is the ratios' baseline.
    #[arg(long = "config", required = true)]
    configs: Vec<String>,
    /// YCSB workload files (tool ycsb), each compared in turn.
    #[arg(long = "workload")]
    workloads: Vec<PathBuf>,
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Where databases live during runs.
    #[arg(long, default_value = "/tmp/cairn-compare")]
    work: PathBuf,
    /// Where results.md, results.json and chart.png go.
    #[arg(long, default_value = "compare-out")]
    out: PathBuf,
    /// Flags given to every configuration.
    #[arg(last = true)]
    common: Vec<String>,
}

struct Config {
    name: String,
    exe: Option<PathBuf>,
    /// `exe` is another build of our runner (`runner:PATH`): it writes JSON like this one.
    ours: bool,
    /// A loaded database each run starts from a copy of.
    from: Option<PathBuf>,
    flags: Vec<String>,
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("compare: {msg}");
    std::process::exit(2)
}

fn parse_config(s: &str) -> Config {
    let (name, spec) = s
        .split_once('=')
        .unwrap_or_else(|| fail(format!("--config {s}: expected NAME=FLAGS")));
    let mut words: Vec<String> = spec.split_whitespace().map(str::to_string).collect();
    let from = match words.first().and_then(|w| w.strip_prefix("from:")) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            words.remove(0);
            Some(dir)
        }
        None => None,
    };
    let (exe, ours) = match words
        .first()
        .map(|w| (w.strip_prefix("exe:"), w.strip_prefix("runner:")))
    {
        Some((Some(p), _)) | Some((None, Some(p))) => {
            let ours = words[0].starts_with("runner:");
            let p = PathBuf::from(p);
            words.remove(0);
            (Some(p), ours)
        }
        _ => (None, false),
    };
    Config {
        name: name.to_string(),
        exe,
        ours,
        from,
        flags: words,
    }
}

/// Phases from db_bench's text output (`name : x micros/op y ops/sec z seconds n operations`).
fn parse_db_bench_lines(text: &str) -> Vec<Phase> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(" : ") else {
            continue;
        };
        let w: Vec<&str> = rest.split_whitespace().collect();
        let find = |unit: &str| {
            w.iter()
                .position(|x| *x == unit)
                .and_then(|i| i.checked_sub(1))
                .and_then(|i| w[i].parse::<f64>().ok())
        };
        if let (Some(ops_per_sec), Some(micros)) = (find("ops/sec"), find("micros/op")) {
            let ops = find("operations").unwrap_or(0.0) as u64;
            let secs = find("seconds").unwrap_or(0.0);
            out.push(Phase {
                name: name.trim().to_string(),
                ops,
                secs,
                ops_per_sec,
                micros_per_op: micros,
                ..Phase::default()
            });
        }
    }
    out
}

/// One run's phases and the process's peak RSS in bytes (our runners only).
fn run_once(
    args: &Args,
    tool_exe: &Path,
    cfg: &Config,
    workload: Option<&Path>,
    tag: &str,
) -> (Vec<Phase>, Option<u64>) {
    let db = args.work.join(format!("db-{}", cfg.name));
    let _ = std::fs::remove_dir_all(&db);
    if let Some(from) = &cfg.from {
        // A copy, written back before the run starts (its writeback would add to the run's I/O).
        let _ = std::fs::create_dir_all(&args.work);
        let copied = Command::new("cp").arg("-a").arg(from).arg(&db).status();
        if !copied.is_ok_and(|s| s.success()) || !Command::new("sync").status().is_ok_and(|s| s.success()) {
            fail(format!(
                "{}: cannot copy {} to {}",
                cfg.name,
                from.display(),
                db.display()
            ));
        }
    }
    let json = args.work.join(format!("{}-{tag}.json", cfg.name));
    let _ = std::fs::remove_file(&json);
    let exe = cfg.exe.clone().unwrap_or_else(|| tool_exe.to_path_buf());
    let mut cmd = Command::new(&exe);
    if let Some(w) = workload {
        cmd.arg("-P").arg(w);
    }
    cmd.args(&args.common)
        .args(&cfg.flags)
        .arg(format!("--db={}", db.display()));
    if cfg.exe.is_none() || cfg.ours {
        cmd.arg(format!("--json={}", json.display()));
    }
    let out = cmd.output().unwrap_or_else(|e| fail(format!("{}: {e}", exe.display())));
    let _ = std::fs::remove_dir_all(&db);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        fail(format!(
            "{} failed ({}):\n{stdout}\n{}",
            cfg.name,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    if cfg.exe.is_some() && !cfg.ours {
        return (parse_db_bench_lines(&stdout), None);
    }
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| fail(format!("{}: {e}", json.display())));
    let report: RunReport = serde_json::from_str(&text).unwrap_or_else(|e| fail(format!("{}: {e}", json.display())));
    (report.phases, Some(report.peak_rss_bytes).filter(|&b| b > 0))
}

/// Results per (phase, configuration): every run's phase record.
type Results = BTreeMap<(usize, String), Vec<Phase>>;

fn chart(
    path: &Path,
    phases: &[String],
    configs: &[Config],
    ratio: &dyn Fn(&str, &str) -> Option<f64>,
) -> Result<(), String> {
    cairn_bench::plot::register_font()?;
    let width = (220 + 90 * phases.len() as u32 * configs.len().max(1) as u32).clamp(640, 2400);
    let root = BitMapBackend::new(path, (width, 480)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| e.to_string();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let top = phases
        .iter()
        .flat_map(|p| configs.iter().filter_map(move |c| ratio(p, &c.name)))
        .fold(1.0f64, f64::max)
        * 1.15;
    let n = phases.len().max(1) as f64;
    let mut ch = ChartBuilder::on(&root)
        .caption(
            format!("throughput relative to {}", configs[0].name),
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(10)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..n, 0.0..top)
        .map_err(|e| err(&e))?;
    ch.configure_mesh()
        .disable_x_mesh()
        .disable_x_axis()
        .y_desc("ops/s / baseline")
        .draw()
        .map_err(|e| err(&e))?;
    // Phase names across the top of each group (the x axis has no natural labels).
    ch.draw_series(
        phases
            .iter()
            .enumerate()
            .map(|(i, p)| Text::new(p.clone(), (i as f64 + 0.1, top * 0.98), ("sans-serif", 15).into_font())),
    )
    .map_err(|e| err(&e))?;
    let k = configs.len() as f64;
    for (ci, c) in configs.iter().enumerate() {
        let color = Palette99::pick(ci).to_rgba();
        let bars: Vec<(f64, f64, f64)> = phases
            .iter()
            .enumerate()
            .filter_map(|(pi, p)| {
                let x0 = pi as f64 + 0.1 + 0.8 * ci as f64 / k;
                Some((x0, x0 + 0.8 / k - 0.02, ratio(p, &c.name)?))
            })
            .collect();
        ch.draw_series(
            bars.iter()
                .map(|&(x0, x1, r)| Rectangle::new([(x0, r), (x1, 0.0)], color.filled())),
        )
        .map_err(|e| err(&e))?
        .label(c.name.clone())
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
        ch.draw_series(
            bars.iter()
                .map(|&(x0, _, r)| Text::new(format!("{r:.2}"), (x0, r + top * 0.04), ("sans-serif", 12).into_font())),
        )
        .map_err(|e| err(&e))?;
    }
    cairn_bench::plot::legend(&mut ch, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(|e| err(&e))
}

/// A progress line: above the bar on a terminal, plain stdout otherwise (a hidden bar drops it).
fn say(bar: &indicatif::ProgressBar, line: String) {
    if bar.is_hidden() {
        println!("{line}");
    } else {
        bar.println(line);
    }
}

pub fn main(args: Args) {
    let configs: Vec<Config> = args.configs.iter().map(|s| parse_config(s)).collect();
    let tool_exe =
        cairn_bench::sibling_exe(&args.tool).unwrap_or_else(|| fail("cannot locate this binary's directory"));
    if configs.iter().any(|c| c.exe.is_none()) && !tool_exe.exists() {
        fail(format!(
            "{} not found: build it with cargo build --release -p cairn-bench",
            tool_exe.display()
        ));
    }
    let workloads: Vec<Option<PathBuf>> = match args.tool.as_str() {
        "db_bench" => vec![None],
        "ycsb" if !args.workloads.is_empty() => args.workloads.iter().cloned().map(Some).collect(),
        "ycsb" => fail("--tool ycsb needs at least one --workload"),
        other => fail(format!("--tool {other}: expected db_bench or ycsb")),
    };
    std::fs::create_dir_all(&args.work).unwrap_or_else(|e| fail(format!("{}: {e}", args.work.display())));
    std::fs::create_dir_all(&args.out).unwrap_or_else(|e| fail(format!("{}: {e}", args.out.display())));
    let mut results = Results::new();
    let mut rss: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let total = args.rounds * configs.len() * workloads.len();
    let bar = indicatif::ProgressBar::new(total as u64);
    for round in 0..args.rounds {
        for w in &workloads {
            let prefix = w
                .as_ref()
                .and_then(|p| p.file_name())
                .map(|s| format!("{}-", s.to_string_lossy().trim_start_matches("workload")))
                .unwrap_or_default();
            for i in 0..configs.len() {
                let cfg = &configs[(i + round) % configs.len()];
                say(&bar, format!("round {} {prefix}{}", round + 1, cfg.name));
                let (phases, peak) = run_once(&args, &tool_exe, cfg, w.as_deref(), &format!("r{round}"));
                if let Some(b) = peak {
                    rss.entry(cfg.name.clone())
                        .or_default()
                        .push(b as f64 / (1u64 << 20) as f64);
                }
                for p in phases {
                    let name = format!("{prefix}{}", p.name);
                    say(&bar, format!("  {name:<20} {:>12} ops/s", ops(p.ops_per_sec)));
                    if !order.contains(&name) {
                        order.push(name.clone());
                    }
                    let idx = order.iter().position(|n| *n == name).unwrap_or(0);
                    results.entry((idx, cfg.name.clone())).or_default().push(p);
                }
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    let med = |phase: usize, cfg: &str| -> Option<f64> {
        let mut v: Vec<f64> = results
            .get(&(phase, cfg.to_string()))?
            .iter()
            .map(|p| p.ops_per_sec)
            .collect();
        Some(cairn_bench::median(&mut v))
    };
    let mut md = String::new();
    md.push_str(&format!(
        "{} rounds, interleaved; common flags: `{}`\n\n| benchmark |",
        args.rounds,
        args.common.join(" ")
    ));
    for c in &configs {
        md.push_str(&format!(" {} ops/s |", c.name));
    }
    for c in configs.iter().skip(1) {
        md.push_str(&format!(" {} / {} |", c.name, configs[0].name));
    }
    md.push_str("\n|---|");
    md.push_str(&"---:|".repeat(2 * configs.len() - 1));
    md.push('\n');
    for (pi, name) in order.iter().enumerate() {
        md.push_str(&format!("| {name} |"));
        for c in &configs {
            md.push_str(&med(pi, &c.name).map_or(" – |".into(), |v| format!(" {} |", ops(v))));
        }
        for c in configs.iter().skip(1) {
            let r = med(pi, &c.name).zip(med(pi, &configs[0].name)).map(|(a, b)| a / b);
            md.push_str(&r.map_or(" – |".into(), |v| format!(" {v:.2}× |")));
        }
        md.push('\n');
    }
    // Latency and cairn's I/O figures from each configuration's median-throughput run.
    md.push_str("\n| benchmark | configuration | p50 µs | p99 µs | p99.9 µs | data blocks from storage / lookup | unnecessary / lookup | filter FPR | range-filter FPR | L0 files after |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (pi, name) in order.iter().enumerate() {
        for c in &configs {
            let Some(runs) = results.get(&(pi, c.name.clone())) else {
                continue;
            };
            let Some(p) = median_run(runs) else {
                continue;
            };
            let lat = p.latency.as_ref();
            let f = |v: Option<f64>, d: usize| v.map_or("–".to_string(), |x| format!("{x:.d$}"));
            let m = p.cairn.as_ref().filter(|_| p.found.is_some());
            // Range reads that returned nothing count each "maybe" as a false positive.
            let range_fpr = m
                .filter(|m| m.range_filter_probes > 0)
                .map(|m| m.range_filter_false_positives as f64 / m.range_filter_probes as f64);
            md.push_str(&format!(
                "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                c.name,
                f(lat.map(|l| l.p50_us), 1),
                f(lat.map(|l| l.p99_us), 1),
                f(lat.map(|l| l.p999_us), 1),
                f(m.map(|m| m.data_reads_per_lookup), 3),
                f(m.map(|m| m.unnecessary_data_reads_per_lookup), 4),
                f(m.map(|m| m.filter_fpr), 4),
                range_fpr.map_or("–".to_string(), |x| format!("{x:.2e}")),
                p.debt_after.map_or("–".to_string(), |d| d.l0_files.to_string()),
            ));
        }
    }
    // Range reads per seek, from the same median-throughput runs (phases that seek).
    let mut scans = String::new();
    for (pi, name) in order.iter().enumerate() {
        for c in &configs {
            let Some(runs) = results.get(&(pi, c.name.clone())) else {
                continue;
            };
            let Some(sc) = median_run(runs).and_then(|p| p.scans) else {
                continue;
            };
            scans.push_str(&format!(
                "| {name} | {} | {:.1} | {:.2} / {:.2} / {:.2} | {:.2} | {:.3} | {:.2} | {:.3} | {:.2} | {:.2} | {:.1} | {:.1} |\n",
                c.name,
                sc.entries,
                sc.memtables,
                sc.l0_runs,
                sc.levels,
                sc.tables,
                sc.data_reads,
                sc.data_hits,
                sc.index_reads,
                sc.index_hits,
                sc.readahead_chunks,
                sc.readahead_bytes / 1024.0,
                sc.readahead_wasted / 1024.0,
            ));
        }
    }
    if !scans.is_empty() {
        md.push_str(
            "\n| benchmark | configuration | entries / seek | runs merged: memtables / L0 / levels | tables reached | \
             data blocks read | data blocks cached | index blocks read | index blocks cached | readahead chunks | \
             readahead KiB | of it unused KiB |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        md.push_str(&scans);
        md.push_str(
            "\n(per seek, from each configuration's median-throughput run; RocksDB counts seeks, entries, blocks \
             and unused readahead only: its runs and tables are 0 here, and its readahead chunks are not counted)\n",
        );
    }
    // Per operation kind (YCSB; db_bench phases as one kind, "all"): each percentile's median
    // over the rounds, and p99.9 against the baseline's; `tails.txt` (`benchmark/op config
    // p99.9`) feeds plot_bars.
    use cairn_bench::report::LatencySummary;
    let kinds_of = |p: &Phase| -> Vec<String> {
        match (&p.latency, p.by_op.is_empty()) {
            (Some(_), true) => vec!["all".to_string()],
            _ => p.by_op.keys().cloned().collect(),
        }
    };
    fn summary<'a>(p: &'a Phase, kind: &str) -> Option<&'a LatencySummary> {
        if p.by_op.is_empty() && kind == "all" {
            p.latency.as_ref()
        } else {
            p.by_op.get(kind)
        }
    }
    let mut tails = String::new();
    let mut by_op = String::new();
    for (pi, name) in order.iter().enumerate() {
        let kinds: std::collections::BTreeSet<String> = configs
            .iter()
            .filter_map(|c| results.get(&(pi, c.name.clone())))
            .flatten()
            .flat_map(kinds_of)
            .collect();
        for kind in &kinds {
            let pct = |c: &Config, f: fn(&LatencySummary) -> f64| -> Option<f64> {
                let mut v: Vec<f64> = results
                    .get(&(pi, c.name.clone()))?
                    .iter()
                    .filter_map(|p| summary(p, kind).map(f))
                    .collect();
                (!v.is_empty()).then(|| cairn_bench::median(&mut v))
            };
            let base = pct(&configs[0], |l| l.p999_us);
            for c in &configs {
                let fields: [fn(&LatencySummary) -> f64; 5] =
                    [|l| l.p50_us, |l| l.p99_us, |l| l.p999_us, |l| l.p9999_us, |l| l.max_us];
                let v: Vec<Option<f64>> = fields.iter().map(|&f| pct(c, f)).collect();
                let Some(p999) = v[2] else {
                    continue;
                };
                by_op.push_str(&format!("| {name} | {kind} | {} |", c.name));
                for x in &v {
                    by_op.push_str(&x.map_or(" – |".into(), |x| format!(" {x:.1} |")));
                }
                let r = base.filter(|&b| b > 0.0).map(|b| p999 / b);
                by_op.push_str(&r.map_or(" – |\n".into(), |r| format!(" {r:.2}× |\n")));
                tails.push_str(&format!("{name}/{kind} {} {p999:.1}\n", c.name));
            }
        }
    }
    if !by_op.is_empty() {
        md.push_str(&format!(
            "\n| benchmark | operation | configuration | p50 µs | p99 µs | p99.9 µs | p99.99 µs | max µs | p99.9 / {} |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n",
            configs[0].name
        ));
        md.push_str(&by_op);
        md.push_str("\n(each percentile: the median over the rounds of each run's figure)\n");
    }
    // CPU per operation (our runners: the process's user + system time in the phase).
    md.push_str("\n| benchmark |");
    for c in &configs {
        md.push_str(&format!(" {} CPU µs/op |", c.name));
    }
    md.push_str("\n|---|");
    md.push_str(&"---:|".repeat(configs.len()));
    md.push('\n');
    for (pi, name) in order.iter().enumerate() {
        md.push_str(&format!("| {name} |"));
        for c in &configs {
            let mut v: Vec<f64> = results
                .get(&(pi, c.name.clone()))
                .map(|runs| {
                    runs.iter()
                        .filter_map(|p| Some(p.cpu_secs? * 1e6 / p.ops.max(1) as f64))
                        .collect()
                })
                .unwrap_or_default();
            md.push_str(&if v.is_empty() {
                " – |".to_string()
            } else {
                format!(" {:.2} |", cairn_bench::median(&mut v))
            });
        }
        md.push('\n');
    }
    // Transactions: refused attempts per attempt (each refused one was retried).
    let abort_rate = |pi: usize, c: &str| -> Option<f64> {
        let mut v: Vec<f64> = results
            .get(&(pi, c.to_string()))?
            .iter()
            .filter_map(|p| {
                let (aborts, commits) = (p.aborts? as f64, p.transactions? as f64);
                Some(aborts / (aborts + commits).max(1.0))
            })
            .collect();
        (!v.is_empty()).then(|| cairn_bench::median(&mut v))
    };
    if (0..order.len()).any(|pi| configs.iter().any(|c| abort_rate(pi, &c.name).is_some())) {
        md.push_str("\n| benchmark |");
        for c in &configs {
            md.push_str(&format!(" {} abort rate |", c.name));
        }
        md.push_str("\n|---|");
        md.push_str(&"---:|".repeat(configs.len()));
        md.push('\n');
        for (pi, name) in order.iter().enumerate() {
            md.push_str(&format!("| {name} |"));
            for c in &configs {
                md.push_str(&abort_rate(pi, &c.name).map_or(" – |".into(), |r| format!(" {:.2}% |", r * 100.0)));
            }
            md.push('\n');
        }
        md.push_str("\n(abort rate: refused attempts over all attempts, median of the rounds)\n");
    }
    md.push_str(&write_costs(&order, &configs, &results, entry_bytes(&args.common)));
    if !rss.is_empty() {
        md.push_str("\n| configuration | peak RSS MiB (median of runs) | max |\n|---|---:|---:|\n");
        for c in &configs {
            if let Some(v) = rss.get_mut(&c.name) {
                let max = v.iter().copied().fold(0.0, f64::max);
                md.push_str(&format!("| {} | {:.0} | {max:.0} |\n", c.name, cairn_bench::median(v)));
            }
        }
    }
    print!("\n{md}");
    let write = |name: &str, text: String| {
        let p = args.out.join(name);
        std::fs::write(&p, text).unwrap_or_else(|e| fail(format!("{}: {e}", p.display())));
    };
    write("results.md", md.clone());
    if !tails.is_empty() {
        write("tails.txt", tails);
    }
    let raw: BTreeMap<String, &Vec<Phase>> = results
        .iter()
        .map(|((pi, c), v)| (format!("{}/{c}", order[*pi]), v))
        .collect();
    write("results.json", serde_json::to_string_pretty(&raw).unwrap_or_default());
    let ratio = |phase: &str, cfg: &str| {
        let pi = order.iter().position(|n| n == phase)?;
        Some(med(pi, cfg)? / med(pi, &configs[0].name)?)
    };
    let png = args.out.join("chart.png");
    match chart(&png, &order, &configs, &ratio) {
        Ok(()) => println!(
            "\nwrote results.md, results.json and chart.png in {}",
            args.out.display()
        ),
        Err(e) => eprintln!("compare: chart not drawn: {e}"),
    }
}

/// Bytes per key and value put, from the common flags (db_bench's defaults otherwise).
fn entry_bytes(common: &[String]) -> f64 {
    let flag = |name: &str, default: f64| {
        common
            .iter()
            .find_map(|a| a.strip_prefix(name)?.parse::<f64>().ok())
            .unwrap_or(default)
    };
    flag("--key_size=", 16.0) + flag("--value_size=", 100.0)
}

/// Storage writes and CPU per byte put (our runners, which read `/proc/self/io` and the
/// process's CPU time per phase): for each write phase (`fill*`, `overwrite`) and for the whole
/// run (every phase's writes and CPU, a trailing `waitforcompaction` included, over every write
/// phase's bytes). Empty when no run reported them.
fn write_costs(order: &[String], configs: &[Config], results: &Results, entry: f64) -> String {
    let is_write = |name: &str| {
        let n = name.rsplit('-').next().unwrap_or(name);
        n.starts_with("fill") || n.starts_with("overwrite")
    };
    let user = |pi: usize, p: &Phase| {
        if is_write(&order[pi]) {
            p.ops as f64 * entry
        } else {
            0.0
        }
    };
    // (device bytes, CPU s, user bytes) per (row, configuration), one triple per round.
    type Rounds = Vec<(f64, f64, f64)>;
    let mut rows: Vec<(String, Vec<Rounds>)> = Vec::new();
    let runs = |pi: usize, c: &Config| results.get(&(pi, c.name.clone())).cloned().unwrap_or_default();
    for (pi, name) in order.iter().enumerate().filter(|(_, n)| is_write(n)) {
        let per_cfg = configs
            .iter()
            .map(|c| {
                runs(pi, c)
                    .iter()
                    .filter_map(|p| Some((p.device_write_bytes? as f64, p.cpu_secs?, user(pi, p))))
                    .collect()
            })
            .collect();
        rows.push((name.clone(), per_cfg));
    }
    let whole = configs
        .iter()
        .map(|c| {
            let mut rounds: Rounds = Vec::new();
            for pi in 0..order.len() {
                for (r, p) in runs(pi, c).iter().enumerate() {
                    let (Some(w), Some(cpu)) = (p.device_write_bytes, p.cpu_secs) else {
                        continue;
                    };
                    if rounds.len() <= r {
                        rounds.resize(r + 1, (0.0, 0.0, 0.0));
                    }
                    rounds[r].0 += w as f64;
                    rounds[r].1 += cpu;
                    rounds[r].2 += user(pi, p);
                }
            }
            rounds
        })
        .collect();
    rows.push(("whole run".into(), whole));
    if rows.iter().all(|(_, v)| v.iter().all(Vec::is_empty)) {
        return String::new();
    }
    let mut md = String::from("\n| phase |");
    for c in configs {
        md.push_str(&format!(" {} bytes written / byte put |", c.name));
    }
    for c in configs {
        md.push_str(&format!(" {} CPU s / GB put |", c.name));
    }
    md.push_str("\n|---|");
    md.push_str(&"---:|".repeat(2 * configs.len()));
    md.push('\n');
    let cell = |v: &[(f64, f64, f64)], f: &dyn Fn(&(f64, f64, f64)) -> f64| {
        let mut x: Vec<f64> = v.iter().filter(|t| t.2 > 0.0).map(f).collect();
        if x.is_empty() {
            " – |".to_string()
        } else {
            format!(" {:.2} |", cairn_bench::median(&mut x))
        }
    };
    for (name, per_cfg) in &rows {
        md.push_str(&format!("| {name} |"));
        for v in per_cfg {
            md.push_str(&cell(v, &|t| t.0 / t.2));
        }
        for v in per_cfg {
            md.push_str(&cell(v, &|t| t.1 / (t.2 / 1e9)));
        }
        md.push('\n');
    }
    md.push_str("\n(storage writes: the process's `/proc/self/io` write_bytes, counted when pages are dirtied: WAL, flushes and compactions; medians over the rounds)\n");
    md
}

/// Operations per second for a table: whole numbers, with three decimals below 100 (a phase of
/// one operation that takes seconds, such as a backup, is 0.312, not 0).
fn ops(v: f64) -> String {
    if v < 100.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.0}")
    }
}

/// The run of median throughput among `runs` (`None` without runs).
fn median_run(runs: &[Phase]) -> Option<&Phase> {
    let mut sorted: Vec<&Phase> = runs.iter().collect();
    sorted.sort_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
    sorted.get(sorted.len() / 2).copied()
}
