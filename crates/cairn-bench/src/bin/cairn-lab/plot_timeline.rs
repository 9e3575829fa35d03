//! Draws the compaction-debt timelines of several runs (`--json` reports of `db_bench` or
//! `ycsb`) into one PNG: L0 files and pending compaction bytes over time, one line per run.
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
    /// `NAME=report.json`, one per line drawn.
    runs: Vec<String>,
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
}
