//! Throughput over a phase, window by window (`db_bench --window=N` runs of `compare`): one
//! line per configuration, the median over its rounds of each window's operations per
//! second, and a table of the same medians with each configuration's ratio to the base one.
//!
//! ```sh
//! plot_windows --results DIR/results.json --phase rangerandom --base rocksdb --out w.png --table w.md
//! ```

use cairn_bench::report::Phase;
use clap::Parser;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(about = "Operations per second per window of a phase, from db_bench --json reports")]
pub struct Args {
    /// The PNG to write.
    #[arg(long)]
    out: PathBuf,
    /// The markdown table to write.
    #[arg(long)]
    table: PathBuf,
    /// The phase drawn (its name in the reports).
    #[arg(long)]
    phase: String,
    /// Chart title.
    #[arg(long, default_value = "throughput per window")]
    title: String,
    /// `compare`'s results.json (every run's phases, per phase and configuration).
    #[arg(long)]
    results: PathBuf,
    /// The configuration ratios are taken to (drawn first).
    #[arg(long)]
    base: String,
}

/// Each window's operations per second in one run: `(operations at the window's end, ops/s)`.
type Windows = Vec<(u64, f64)>;

/// [`Windows`] of one run's phase.
fn rates(p: &Phase) -> Windows {
    let mut prev = (0u64, 0.0f64);
    p.windows
        .iter()
        .map(|w| {
            let rate = (w.lookups - prev.0) as f64 / (w.secs - prev.1).max(1e-9);
            prev = (w.lookups, w.secs);
            (w.lookups, rate)
        })
        .collect()
}

pub fn main(args: Args) {
    let fail = |msg: String| -> ! {
        eprintln!("plot_windows: {msg}");
        std::process::exit(2)
    };
    let text =
        std::fs::read_to_string(&args.results).unwrap_or_else(|e| fail(format!("{}: {e}", args.results.display())));
    let all: BTreeMap<String, Vec<Phase>> =
        serde_json::from_str(&text).unwrap_or_else(|e| fail(format!("{}: {e}", args.results.display())));
    // Configurations of the phase, the base first, each with its rounds' windows.
    let prefix = format!("{}/", args.phase);
    let mut configs: Vec<(String, Vec<Windows>)> = all
        .iter()
        .filter_map(|(k, runs)| Some((k.strip_prefix(&prefix)?.to_string(), runs.iter().map(rates).collect())))
        .collect();
    configs.sort_by_key(|(name, _)| *name != args.base);
    if configs.first().is_none_or(|(name, _)| *name != args.base) {
        fail(format!("no runs of {} in phase {}", args.base, args.phase));
    }
    // Windows every round of every configuration has.
    let windows = configs
        .iter()
        .flat_map(|(_, rounds)| rounds.iter().map(Vec::len))
        .min()
        .unwrap_or(0);
    let ends: Vec<u64> = configs[0].1[0].iter().take(windows).map(|w| w.0).collect();
    let medians: Vec<(String, Vec<f64>)> = configs
        .iter()
        .map(|(name, rounds)| {
            let m = (0..windows)
                .map(|i| cairn_bench::median(&mut rounds.iter().map(|r| r[i].1).collect::<Vec<_>>()))
                .collect();
            (name.clone(), m)
        })
        .collect();
    let mut md = format!(
        "{} — operations per second per window (median of {} rounds), and each configuration ÷ {}\n\n| reads |",
        args.title,
        configs.iter().map(|(_, r)| r.len()).min().unwrap_or(0),
        medians[0].0
    );
    for (name, _) in &medians {
        md.push_str(&format!(" {name} |"));
    }
    for (name, _) in medians.iter().skip(1) {
        md.push_str(&format!(" {name} ÷ {} |", medians[0].0));
    }
    md.push_str("\n|---:|");
    md.push_str(&"---:|".repeat(medians.len() * 2 - 1));
    md.push('\n');
    for (i, end) in ends.iter().enumerate() {
        md.push_str(&format!("| {end} |"));
        for (_, m) in &medians {
            md.push_str(&format!(" {:.0} |", m[i]));
        }
        for (_, m) in medians.iter().skip(1) {
            md.push_str(&format!(" {:.2}× |", m[i] / medians[0].1[i]));
        }
        md.push('\n');
    }
    std::fs::write(&args.table, md).unwrap_or_else(|e| fail(format!("{}: {e}", args.table.display())));
    draw(&args, &ends, &medians).unwrap_or_else(|e| fail(e));
    println!("wrote {} and {}", args.table.display(), args.out.display());
}

fn draw(args: &Args, ends: &[u64], medians: &[(String, Vec<f64>)]) -> Result<(), String> {
    cairn_bench::plot::register_font()?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let root = BitMapBackend::new(&args.out, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let x_max = ends.last().copied().unwrap_or(1) as f64 / 1000.0;
    let all = medians
        .iter()
        .flat_map(|(_, m)| m.iter().copied())
        .filter(|v| v.is_finite());
    let (lo, hi) = all.fold((f64::MAX, 1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let mut ch = ChartBuilder::on(&root)
        .caption(&args.title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_max * 1.02, ((lo.max(1.0)) * 0.8..hi * 1.25).log_scale())
        .map_err(|e| err(&e))?;
    ch.configure_mesh()
        .x_desc("reads (thousands, at the window's end)")
        .y_desc("operations per second (log)")
        .draw()
        .map_err(|e| err(&e))?;
    for (i, (name, m)) in medians.iter().enumerate() {
        let style = Palette99::pick(i).to_rgba().stroke_width(2);
        let pts = ends.iter().zip(m).map(|(&e, &v)| (e as f64 / 1000.0, v)).collect();
        cairn_bench::plot::marked_line(&mut ch, pts, style, name.clone())?;
    }
    cairn_bench::plot::legend(&mut ch, SeriesLabelPosition::LowerRight)?;
    root.present().map_err(|e| err(&e))
}
