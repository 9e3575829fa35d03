//! Merlin's accuracy over a mixed workload (Mnemosyne Fig. 10 at laptop scale): for each window
//! size, load with uniform random inserts, then run phases of lookups and updates (flushes and
//! compactions keep rewriting the tree) and after each phase compare Merlin's estimated empty
//! lookups per live file with the truth: Euclidean distance and cosine similarity of the two
//! vectors. Two truths: the exact per-file counters kept beside the estimates (inherited at
//! compaction like the estimates), and, with `--replay`, every lookup so far replayed on the
//! tree as it is after the phase (what the paper's ground truth is). Writes results.md,
//! results.json and chart.png.
//!
//! ```sh
//! merlin_accuracy --out results/merlin --windows 16,64
//! ```

use clap::Parser;
use plotters::prelude::*;
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(rename_all = "snake_case", about = "Merlin's accuracy over time (Mnemosyne Fig. 10)")]
pub struct Args {
    /// Where results go.
    #[arg(long)]
    out: PathBuf,
    /// Keys loaded.
    #[arg(long, default_value_t = 500_000)]
    num: u64,
    /// Operations of each mixed phase (75% lookups).
    #[arg(long, default_value_t = 200_000)]
    ops: u64,
    /// Mixed phases after the load.
    #[arg(long, default_value_t = 8)]
    phases: usize,
    /// Merlin window sizes compared.
    #[arg(long, value_delimiter = ',', default_value = "16,64")]
    windows: Vec<usize>,
    /// Key distribution of the lookups and updates.
    #[arg(long, default_value = "zipf:0.99")]
    dist: String,
    /// Share of empty lookups.
    #[arg(long, default_value_t = 0.5)]
    z: f64,
    /// Also replay every lookup on the tree after each phase (the paper's ground truth; slower).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    replay: bool,
    /// Extra flags for every db_bench run.
    #[arg(last = true)]
    extra: Vec<String>,
}

/// Accuracy after one phase.
#[derive(Debug, Clone, Serialize)]
struct Point {
    window: usize,
    phase: usize,
    /// Mixed-phase operations so far.
    ops: u64,
    distance: f64,
    cosine: f64,
    replayed_distance: Option<f64>,
    replayed_cosine: Option<f64>,
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("merlin_accuracy: {msg}");
    std::process::exit(2)
}

pub fn main(a: Args) {
    std::fs::create_dir_all(&a.out).unwrap_or_else(|e| fail(e));
    let db_bench =
        cairn_bench::sibling_exe("db_bench").unwrap_or_else(|| fail("cannot find db_bench next to this binary"));
    let db = a.out.join("db");
    let mut points = Vec::new();
    for &w in &a.windows {
        let _ = std::fs::remove_dir_all(&db);
        let json = a.out.join(format!("w{w}.json"));
        let mut benchmarks = vec!["fillrandom"];
        benchmarks.extend(std::iter::repeat_n("readrandomwriterandom", a.phases));
        // A cache that holds everything: accuracy is about counts, not I/O.
        let mut args = vec![
            "--engine=cairn".to_string(),
            "--bpk_policy=mnemosyne".into(),
            format!("--merlin_window={w}"),
            format!("--merlin_truth={}", a.replay),
            format!("--num={}", a.num),
            format!("--reads={}", a.ops),
            "--readwritepercent=75".into(),
            format!("--key_dist={}", a.dist),
            format!("--empty_ratio={}", a.z),
            "--key_size=16".into(),
            "--value_size=100".into(),
            "--bloom_bits=4".into(),
            "--compression_type=none".into(),
            "--cache_size=1073741824".into(),
            "--seed=7".into(),
            format!("--benchmarks={}", benchmarks.join(",")),
            format!("--db={}", db.display()),
        ];
        // Several levels of small files: frequent compactions.
        args.extend(cairn_bench::SMALL_TREE_FLAGS.map(String::from));
        args.extend(a.extra.iter().cloned());
        let report = cairn_bench::run_db_bench(&db_bench, &args, &json).unwrap_or_else(|e| fail(e));
        let mut ops = 0;
        for (i, p) in report
            .phases
            .iter()
            .filter(|p| p.name == "readrandomwriterandom")
            .enumerate()
        {
            ops += p.ops;
            let Some(m) = &p.cairn else { continue };
            let pt = Point {
                window: w,
                phase: i + 1,
                ops,
                distance: m.merlin_distance,
                cosine: m.merlin_cosine,
                replayed_distance: m.replayed_distance,
                replayed_cosine: m.replayed_cosine,
            };
            println!(
                "w={w} phase {} ({ops} ops): distance {:.1}, cosine {:.3}{}",
                pt.phase,
                pt.distance,
                pt.cosine,
                match (pt.replayed_distance, pt.replayed_cosine) {
                    (Some(d), Some(c)) => format!("; replayed: distance {d:.1}, cosine {c:.3}"),
                    _ => String::new(),
                }
            );
            points.push(pt);
        }
    }
    let _ = std::fs::remove_dir_all(&db);
    let mut md = format!(
        "{} keys (16 B / 100 B) loaded uniformly, then {} phases of {} operations (75% lookups, \
         {} keys, {}% of lookups empty), bpk_policy mnemosyne at 4 bits per key, T = 4, 4 MiB \
         files. Accuracy of the estimated empty lookups per live file after each phase.\n\n\
         | window | phase | ops | distance (exact counters) | cosine (exact counters) | \
         distance (replayed) | cosine (replayed) |\n|---:|---:|---:|---:|---:|---:|---:|\n",
        a.num,
        a.phases,
        a.ops,
        a.dist,
        a.z * 100.0
    );
    let opt = |v: Option<f64>, d: usize| v.map_or("–".into(), |v| format!("{v:.d$}"));
    for p in &points {
        md.push_str(&format!(
            "| {} | {} | {} | {:.1} | {:.3} | {} | {} |\n",
            p.window,
            p.phase,
            p.ops,
            p.distance,
            p.cosine,
            opt(p.replayed_distance, 1),
            opt(p.replayed_cosine, 3)
        ));
    }
    cairn_bench::write_results(&a.out, &md, &points).unwrap_or_else(|e| fail(e));
    print!("\n{md}");
    if let Err(e) = chart(&a.out.join("chart.png"), &a.windows, &points) {
        eprintln!("merlin_accuracy: chart: {e}");
    }
}

/// Cosine similarity (left) and distance (right) against operations, one line per window and
/// truth.
fn chart(path: &Path, windows: &[usize], points: &[Point]) -> Result<(), String> {
    cairn_bench::plot::register_font()?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let root = BitMapBackend::new(path, (1100, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let halves = root.split_evenly((1, 2));
    let xmax = points.iter().map(|p| p.ops as f64).fold(1.0, f64::max) * 1.05;
    type Pick = fn(&Point) -> Option<f64>;
    let panels: [(&str, Pick, Pick); 2] = [
        ("cosine similarity", |p| Some(p.cosine), |p| p.replayed_cosine),
        ("Euclidean distance", |p| Some(p.distance), |p| p.replayed_distance),
    ];
    for (half, (name, exact, replayed)) in halves.iter().zip(panels) {
        let ymax = points
            .iter()
            .flat_map(|p| [exact(p), replayed(p)])
            .flatten()
            .fold(1.0, f64::max)
            * 1.1;
        let mut ch = ChartBuilder::on(half)
            .caption(format!("Merlin: {name} of estimated vs true z"), ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax)
            .map_err(|e| err(&e))?;
        ch.configure_mesh()
            .x_desc("mixed-phase operations")
            .x_label_formatter(&|x| format!("{:.0}K", x / 1e3))
            .y_label_formatter(&|y| {
                if ymax > 10.0 {
                    format!("{:.0}K", y / 1e3)
                } else {
                    format!("{y:.2}")
                }
            })
            .draw()
            .map_err(|e| err(&e))?;
        for (wi, &w) in windows.iter().enumerate() {
            for (ti, (truth, pick)) in [("exact", exact), ("replayed", replayed)].into_iter().enumerate() {
                let pts: Vec<(f64, f64)> = points
                    .iter()
                    .filter(|p| p.window == w)
                    .filter_map(|p| pick(p).map(|v| (p.ops as f64, v)))
                    .collect();
                if pts.is_empty() {
                    continue;
                }
                let color = Palette99::pick(2 * wi + ti).to_rgba();
                ch.draw_series(LineSeries::new(pts, color.stroke_width(2)))
                    .map_err(|e| err(&e))?
                    .label(format!("w = {w}, {truth}"))
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
            }
        }
        cairn_bench::plot::legend(&mut ch, SeriesLabelPosition::LowerRight)?;
    }
    root.present().map_err(|e| err(&e))
}
