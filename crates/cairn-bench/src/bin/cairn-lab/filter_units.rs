//! Filter units, standard (version 1) against cache-local (version 2): the false-positive rate
//! measured on absent keys at each bits per key, next to each layout's model, and the time of a
//! negative probe with the unit in the CPU cache (10K keys) and out of it (a 16M-key unit,
//! probed at random). Writes results.md, results.json and chart.png under `--out`.
//!
//! ```sh
//! cargo run --release -p cairn-bench --features internals --bin filter_units -- --out DIR
//! ```

use cairn::filter::bloom::{self, BloomFilter};
use cairn::filter::key_hash;
use clap::Parser;
use plotters::prelude::*;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(rename_all = "snake_case", about = "Filter-unit layouts: FPR and probe time")]
pub struct Args {
    #[arg(long)]
    out: PathBuf,
    /// Bits per key to measure.
    #[arg(long, value_delimiter = ',', default_value = "2,3,4,6,8,10,12")]
    bpk: Vec<f64>,
    /// Keys in the unit for the FPR measurement.
    #[arg(long, default_value_t = 1_000_000)]
    keys: u64,
    /// Absent keys probed per FPR measurement.
    #[arg(long, default_value_t = 2_000_000)]
    probes: u64,
    /// Keys of the unit probed out of the CPU cache.
    #[arg(long, default_value_t = 16_000_000)]
    big_keys: u64,
}

#[derive(Serialize, Debug)]
struct Row {
    layout: &'static str,
    bpk: f64,
    probes_k: u32,
    fpr: f64,
    model_fpr: f64,
    ns_in_cache: f64,
    ns_out_of_cache: f64,
}

fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!("filter_units: {e}");
    std::process::exit(1)
}

fn hashes(range: std::ops::Range<u64>) -> Vec<u64> {
    range.map(|i| key_hash(&i.to_be_bytes())).collect()
}

/// Nanoseconds per negative probe of `f` over `hs` (absent keys), the best of three passes.
fn probe_ns(f: &BloomFilter, hs: &[u64]) -> f64 {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            let hits = hs
                .iter()
                .filter(|&&h| f.may_contain_hash(std::hint::black_box(h)))
                .count();
            std::hint::black_box(hits);
            t.elapsed().as_nanos() as f64 / hs.len() as f64
        })
        .fold(f64::INFINITY, f64::min)
}

pub fn main(a: Args) {
    std::fs::create_dir_all(&a.out).unwrap_or_else(|e| fail(e));
    let present = hashes(0..a.keys);
    let absent = hashes(1 << 40..(1 << 40) + a.probes);
    let small = hashes(0..10_000);
    let big = hashes(0..a.big_keys);
    let mut rows = Vec::new();
    for &bpk in &a.bpk {
        for layout in ["standard", "cache-local"] {
            let build = |hs: &[u64]| {
                let bytes = match layout {
                    "standard" => bloom::build(hs, bpk, 1),
                    _ => bloom::build_local(hs, bpk, 1),
                };
                BloomFilter::decode(bytes).unwrap_or_else(|e| fail(e))
            };
            let f = build(&present);
            let fp = absent.iter().filter(|&&h| f.may_contain_hash(h)).count();
            let k = f.num_probes();
            let model_fpr = match layout {
                "standard" => bloom::expected_fpr(bpk),
                _ => bloom::expected_fpr_local(bpk, k),
            };
            let row = Row {
                layout,
                bpk,
                probes_k: k,
                fpr: fp as f64 / absent.len() as f64,
                model_fpr,
                ns_in_cache: probe_ns(&build(&small), &absent),
                ns_out_of_cache: probe_ns(&build(&big), &absent),
            };
            println!("{row:?}");
            rows.push(row);
        }
    }
    let mut md = format!(
        "Filter units: false-positive rate over {} absent keys with {} keys in the unit; ns per \
         negative probe (hash precomputed; best of 3 passes over the absent keys) for a 10K-key \
         unit (in the CPU cache) and a {}-key unit (out of it).\n\n\
         | bits/key | layout | k | FPR | model | FPR ÷ standard's | ns in cache | ns out of cache |\n\
         |---:|---|---:|---:|---:|---:|---:|---:|\n",
        a.probes, a.keys, a.big_keys
    );
    for r in &rows {
        let std_fpr = rows
            .iter()
            .find(|s| s.layout == "standard" && s.bpk == r.bpk)
            .map_or(f64::NAN, |s| s.fpr);
        md.push_str(&format!(
            "| {} | {} | {} | {:.5} | {:.5} | {:.2} | {:.1} | {:.1} |\n",
            r.bpk,
            r.layout,
            r.probes_k,
            r.fpr,
            r.model_fpr,
            r.fpr / std_fpr,
            r.ns_in_cache,
            r.ns_out_of_cache
        ));
    }
    cairn_bench::write_results(&a.out, &md, &rows).unwrap_or_else(|e| fail(e));
    if let Err(e) = chart(&a, &rows) {
        eprintln!("filter_units: chart not drawn: {e}");
    }
    print!("\n{md}");
}

fn chart(a: &Args, rows: &[Row]) -> Result<(), String> {
    cairn_bench::plot::register_font()?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let path = a.out.join("chart.png");
    let root = BitMapBackend::new(&path, (1200, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (left, right) = root.split_horizontally(600);
    let bmax = a.bpk.iter().copied().fold(1.0, f64::max) + 1.0;
    let mut ch = ChartBuilder::on(&left)
        .caption("false-positive rate vs bits per key", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..bmax, (1e-4..1.0).log_scale())
        .map_err(|e| err(&e))?;
    ch.configure_mesh()
        .x_desc("bits per key")
        .y_desc("FPR")
        .draw()
        .map_err(|e| err(&e))?;
    for (i, layout) in ["standard", "cache-local"].into_iter().enumerate() {
        let pts = rows
            .iter()
            .filter(|r| r.layout == layout)
            .map(|r| (r.bpk, r.fpr.max(1e-4)))
            .collect();
        cairn_bench::plot::marked_line(&mut ch, pts, Palette99::pick(i).stroke_width(2), layout.to_string())?;
    }
    cairn_bench::plot::legend(&mut ch, SeriesLabelPosition::UpperRight)?;
    let ymax = rows.iter().map(|r| r.ns_out_of_cache).fold(1.0, f64::max) * 1.2;
    let mut ch = ChartBuilder::on(&right)
        .caption("ns per negative probe", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..bmax, 0.0..ymax)
        .map_err(|e| err(&e))?;
    ch.configure_mesh()
        .x_desc("bits per key")
        .y_desc("ns")
        .draw()
        .map_err(|e| err(&e))?;
    let mut i = 0;
    for layout in ["standard", "cache-local"] {
        for (what, get) in [
            ("in cache", (|r: &Row| r.ns_in_cache) as fn(&Row) -> f64),
            ("out of cache", |r: &Row| r.ns_out_of_cache),
        ] {
            let pts = rows
                .iter()
                .filter(|r| r.layout == layout)
                .map(|r| (r.bpk, get(r)))
                .collect();
            cairn_bench::plot::marked_line(
                &mut ch,
                pts,
                Palette99::pick(i).stroke_width(2),
                format!("{layout}, {what}"),
            )?;
            i += 1;
        }
    }
    cairn_bench::plot::legend(&mut ch, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(|e| err(&e))
}
