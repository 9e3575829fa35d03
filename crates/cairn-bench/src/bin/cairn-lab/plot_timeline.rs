//! Draws the compaction-debt timelines of several runs (`--json` reports of `db_bench` or
//! `ycsb`) into one PNG: L0 files, pending compaction bytes and cairn's write memory over
//! time, one line per run; with `--table`, when each run's first phase ended and how fast its
//! L0 and write memory came back after it.
//!
//! ```sh
//! plot_timeline --out l0.png --title "YCSB A load + run" cairn=cairn.json rocksdb=rocks.json
//! ```

use cairn_bench::report::RunReport;
use clap::Parser;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(about = "Compaction debt over time, from db_bench/ycsb --json reports")]
pub struct Args {
    /// The PNG to write.
    #[arg(long)]
    out: PathBuf,
    /// Chart title.
    #[arg(long, default_value = "compaction debt over time")]
    title: String,
    /// Also write a Markdown table here: per run, where its first phase ended (writes stop,
    /// for a load), L0 files and write memory then, and how long until L0 was back at
    /// `--l0-target`.
    #[arg(long)]
    table: Option<PathBuf>,
    /// The L0 file count the table's "back at" column waits for (cairn's and RocksDB's
    /// compaction trigger by default).
    #[arg(long, default_value_t = 4)]
    l0_target: u64,
    /// `NAME=report.json`, one per line drawn.
    runs: Vec<String>,
}

/// The table row of one run (see `--table`).
fn row(name: &str, samples: &[cairn_bench::timeline::Sample], target: u64) -> String {
    let mib = |b: Option<u64>| {
        b.map_or("–".to_string(), |b| {
            format!("{:.1}", b as f64 / f64::from(1u32 << 20))
        })
    };
    let Some(end) = samples.iter().position(|x| x.phase != samples[0].phase) else {
        return format!("| {name} | {} | – | – | – | – | – | – |\n", samples[0].phase);
    };
    let at = |secs: f64| {
        let t = samples[end].t_secs + secs;
        samples.iter().skip(end).find(|x| x.t_secs >= t)
    };
    let back = samples[end..]
        .iter()
        .find(|x| x.debt.l0_files <= target)
        .map_or("never".to_string(), |x| {
            format!("{:.1}", x.t_secs - samples[end].t_secs)
        });
    format!(
        "| {name} | {} ({:.1} s) | {} | {back} | {} | {} | {} | {} |\n",
        samples[0].phase,
        samples[end].t_secs,
        samples[end].debt.l0_files,
        at(10.0).map_or("–".to_string(), |x| x.debt.l0_files.to_string()),
        mib(samples[end].write_memory_bytes),
        mib(at(2.0).and_then(|x| x.write_memory_bytes)),
        mib(at(10.0).and_then(|x| x.write_memory_bytes)),
    )
}

pub fn main(args: Args) {
    let fail = |msg: String| -> ! {
        eprintln!("plot_timeline: {msg}");
        std::process::exit(2)
    };
    let mut series = Vec::new();
    for run in &args.runs {
        let (name, path) = run
            .split_once('=')
            .unwrap_or_else(|| fail(format!("{run}: expected NAME=report.json")));
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| fail(format!("{path}: {e}")));
        let report: RunReport = serde_json::from_str(&text).unwrap_or_else(|e| fail(format!("{path}: {e}")));
        if report.timeline.is_empty() {
            fail(format!("{path}: the report has no timeline"));
        }
        series.push((name.to_string(), report.timeline));
    }
    if series.is_empty() {
        fail("no runs given".into());
    }
    cairn_bench::plot::timeline(&args.out, &args.title, &series).unwrap_or_else(|e| fail(e));
    println!("wrote {}", args.out.display());
    if let Some(path) = &args.table {
        let mut md = format!(
            "| run | first phase (ends at) | L0 files then | s until L0 ≤ {0} | L0 files 10 s later | write memory then (MiB) | 2 s later | 10 s later |\n|---|---|---:|---:|---:|---:|---:|---:|\n",
            args.l0_target
        );
        for (name, samples) in &series {
            md.push_str(&row(name, samples, args.l0_target));
        }
        std::fs::write(path, md).unwrap_or_else(|e| fail(format!("{}: {e}", path.display())));
        println!("wrote {}", path.display());
    }
}
