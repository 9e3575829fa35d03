//! Rosetta's Fig. 8 at laptop scale: the range filter's measured false-positive rate on empty
//! ranges against its memory (bits per key), for ranges of 16 and 64 values, in the engine
//! (cairn on an in-memory file system: FPR does not depend on the storage). Per bits-per-key
//! value: load keys on a stride (gaps where the empty ranges go), compact, measure empty ranges
//! with the default layout (no statistics yet: a single level); then compact again, so the
//! tables are rewritten with the layout the sampled range sizes call for, and measure again.
//! Grafite's bound `R / 2^(B−2)` is drawn for reference. Writes results.md, results.json and
//! chart.png under `--out`.
//!
//! ```sh
//! range_filter_fpr --out results/rosetta/fpr
//! ```

use cairn::env::MemFs;
use cairn::{Db, Options, RangeFilterKind};
use clap::Parser;
use plotters::prelude::*;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Parser, Debug)]
#[command(
    rename_all = "snake_case",
    about = "Range-filter FPR against memory (Rosetta Fig. 8)"
)]
pub struct Args {
    #[arg(long)]
    out: PathBuf,
    /// Keys loaded.
    #[arg(long, default_value_t = 1_000_000)]
    num: u64,
    /// Key values between consecutive keys.
    #[arg(long, default_value_t = 1024)]
    key_stride: u64,
    /// Empty range queries per measurement.
    #[arg(long, default_value_t = 100_000)]
    queries: u64,
    /// Range sizes in key values.
    #[arg(long, value_delimiter = ',', default_value = "16,64")]
    range_sizes: Vec<u64>,
    /// Bits per key.
    #[arg(long, value_delimiter = ',', default_value = "4,6,8,10,12,16,22,28")]
    bpk: Vec<f64>,
    /// Probes a query may spend per table: below a range's size, the layout from the sampled
    /// sizes has several levels.
    #[arg(long, default_value_t = 100)]
    probe_budget: u32,
    /// Share of the key space (its start) the queries go to: below 1, the tables the queries
    /// never reach hold bits that per-file allocation moves to the ones they do.
    #[arg(long, default_value_t = 1.0)]
    hot_share: f64,
    /// Per-file range-filter bits by empty range reads (`range_filter_by_workload`).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    by_workload: bool,
    /// Range-filter kinds measured (`range_filter.kind`).
    #[arg(long, value_delimiter = ',', default_value = "rosetta")]
    kinds: Vec<String>,
    /// Keys: `stride` (i × key_stride: dense, each table's keys close together) or `random`
    /// (64-bit hashes of i: spread over the whole projection space, the queries right after a
    /// key, where a heuristic filter's prefixes are shared).
    #[arg(long, default_value = "stride")]
    keys: String,
}

#[derive(Debug, Clone, Serialize)]
struct Row {
    kind: String,
    range: u64,
    bpk: f64,
    layout: String,
    probes: u64,
    false_positives: u64,
    /// `None`: the filter was not consulted (the cost rule: one level cannot settle the range
    /// within the probe budget), so every query read the tables.
    fpr: Option<f64>,
    levels: String,
    micros_per_query: f64,
}

fn key(v: u64) -> Vec<u8> {
    let mut k = v.to_be_bytes().to_vec();
    k.extend_from_slice(b"00000000");
    k
}

fn fmt_fpr(f: Option<f64>) -> String {
    f.map_or("not consulted (cost rule)".into(), |x| format!("{x:.2e}"))
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("range_filter_fpr: {msg}");
    std::process::exit(2)
}

/// Key `i` of the load.
fn key_value(a: &Args, i: u64) -> u64 {
    if a.keys == "random" {
        // splitmix64's finalizer: distinct for distinct i, spread over all 64 bits.
        let mut z = i.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    } else {
        i * a.key_stride
    }
}

/// Empty queries `[lo, lo + r)` strictly inside gaps: (probes, false positives, µs per query).
fn measure(db: &Db, a: &Args, r: u64, seed: u64) -> (u64, u64, f64) {
    let total = |db: &Db, f: fn(&cairn::LevelStats) -> u64| -> u64 { db.stats().trees[0].levels.iter().map(f).sum() };
    let (p0, f0) = (total(db, |l| l.range_probes), total(db, |l| l.range_false_positives));
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let t0 = std::time::Instant::now();
    let hot = ((a.num as f64 * a.hot_share) as u64).clamp(1, a.num);
    for _ in 0..a.queries {
        let k = key_value(a, rng.gen_range(0..hot));
        // Random keys lie ~2^64 / num apart: the stride's offsets stay inside the gap.
        let lo = k.saturating_add(1 + rng.gen_range(0..a.key_stride - r - 1));
        if db.range(key(lo)..key(lo + r)).next().is_some() {
            fail(format!("range [{lo}, {}) is not empty", lo + r));
        }
    }
    let us = t0.elapsed().as_secs_f64() * 1e6 / a.queries as f64;
    (
        total(db, |l| l.range_probes) - p0,
        total(db, |l| l.range_false_positives) - f0,
        us,
    )
}

/// The range-filter levels of the first table, from `cairn.filters` (and, when they differ, of
/// the last).
fn levels(db: &Db) -> String {
    let text = db.property("cairn.filters").unwrap_or_default();
    // The last column of each file's row in the range-filter tables.
    let all: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("** range filters **"))
        .filter(|l| l.starts_with("  ") && l.split_whitespace().next().is_some_and(|w| w.parse::<u64>().is_ok()))
        .filter_map(|l| l.rsplit("  ").next())
        .collect();
    match (all.first(), all.last()) {
        (Some(f), Some(l)) if f != l => {
            format!("first table {f}; last table {}", if l.is_empty() { "none" } else { l })
        }
        (Some(f), _) => (*f).to_string(),
        _ => String::new(),
    }
}

pub fn main(a: Args) {
    if a.range_sizes.iter().any(|&r| a.key_stride < r + 2) {
        fail("--key_stride must exceed every range size by 2");
    }
    if a.keys != "stride" && a.keys != "random" {
        fail("--keys is stride or random");
    }
    std::fs::create_dir_all(&a.out).unwrap_or_else(|e| fail(e));
    let mut rows = Vec::new();
    for kind in &a.kinds {
        for &r in &a.range_sizes {
            for &bpk in &a.bpk {
                rows.extend(cell(&a, kind, r, bpk));
            }
        }
    }
    let mut md = format!(
        "{} keys ({}), {} empty range queries per cell over the first {} of the keys, offsets within {} values of a key, Rosetta's probe budget {}, range-filter bits per file by workload: {}, 10-bit point filters besides\n\n\
         | R | bits/key | layout | range-filter levels (height: bits/prefix) | FPR | Grafite bound R/2^(B−2) | µs/query |\n|---:|---:|---|---|---:|---:|---:|\n",
        a.num,
        if a.keys == "random" { "random 64-bit" } else { "on a stride" },
        a.queries,
        a.hot_share,
        a.key_stride,
        a.probe_budget,
        a.by_workload
    );
    for row in &rows {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.2e} | {:.2} |\n",
            row.range,
            row.bpk,
            row.layout,
            row.levels,
            fmt_fpr(row.fpr),
            (row.range as f64 / 2f64.powf(row.bpk - 2.0)).min(1.0),
            row.micros_per_query
        ));
    }
    cairn_bench::write_results(&a.out, &md, &rows).unwrap_or_else(|e| fail(e));
    if let Err(e) = chart(&a, &rows) {
        eprintln!("range_filter_fpr: chart not drawn: {e}");
    }
    print!("\n{md}");
}

/// One kind, range size and bits per key: load, compact, measure (Rosetta twice: its default
/// layout, then the one the sampled sizes call for).
fn cell(a: &Args, kind: &str, r: u64, bpk: f64) -> Vec<Row> {
    let fs = MemFs::new();
    let opts = {
        let mut o = Options {
            fs: Arc::new(fs),
            ..Options::default()
        };
        o.range_filter.bits_per_key = bpk;
        o.range_filter.kind = RangeFilterKind::parse(kind).unwrap_or_else(|| fail(format!("unknown kind {kind}")));
        if o.range_filter.kind == RangeFilterKind::Rosetta {
            o.range_filter.probe_budget = a.probe_budget;
        }
        o.range_filter.by_workload = a.by_workload;
        o.filters.bits_per_key = 10.0;
        o.memory.fixed_mut().block_cache = cairn::CacheSource::Own(256 << 20);
        // Tables of ~2 MiB (≈ 70K keys): per-file allocation has files to choose between.
        o.compaction.target_file_size = 2 << 20;
        o
    };
    let db = Db::open("/fpr", opts).unwrap_or_else(|e| fail(e));
    for i in 0..a.num {
        db.put(key(key_value(a, i)), b"v").unwrap_or_else(|e| fail(e));
    }
    db.compact_range::<&[u8], _>(..).unwrap_or_else(|e| fail(e));
    let layouts: &[(&str, u64)] = if kind == "rosetta" {
        &[("default (single level)", 1), ("from sampled sizes", 2)]
    } else {
        &[("grafite", 1)]
    };
    let mut rows = Vec::new();
    for &(layout, seed) in layouts {
        if seed == 2 {
            // The first measurement sampled the sizes: rewrite every table with them.
            db.compact_range::<&[u8], _>(..).unwrap_or_else(|e| fail(e));
        }
        let (probes, fps, us) = measure(&db, a, r, seed);
        let row = Row {
            kind: kind.to_string(),
            range: r,
            bpk,
            layout: layout.to_string(),
            probes,
            false_positives: fps,
            fpr: (probes > 0).then(|| fps as f64 / probes as f64),
            levels: levels(&db),
            micros_per_query: us,
        };
        println!(
            "{kind} R={r} bpk={bpk} {layout}: FPR {} ({fps}/{probes}), {us:.2} µs/query, levels {}",
            fmt_fpr(row.fpr),
            row.levels
        );
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
    let bmax = a.bpk.iter().copied().fold(1.0, f64::max) + 1.0;
    let floor = 1e-6;
    let mut ch = ChartBuilder::on(&root)
        .caption("range-filter FPR on empty ranges vs bits per key", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..bmax, (floor..1.0).log_scale())
        .map_err(|e| err(&e))?;
    ch.configure_mesh()
        .x_desc("bits per key")
        .y_desc("false-positive rate (0 drawn at 1e-6)")
        .draw()
        .map_err(|e| err(&e))?;
    type Series = (String, Vec<(f64, f64)>, bool);
    let mut series: Vec<Series> = Vec::new();
    for &r in &a.range_sizes {
        for layout in ["default (single level)", "from sampled sizes", "grafite"] {
            let pts: Vec<_> = rows
                .iter()
                .filter(|x| x.range == r && x.layout == layout)
                .filter_map(|x| Some((x.bpk, x.fpr?.max(floor))))
                .collect();
            if !pts.is_empty() {
                series.push((format!("R = {r}, {layout}"), pts, false));
            }
        }
        let bound = a
            .bpk
            .iter()
            .map(|&b| (b, (r as f64 / 2f64.powf(b - 2.0)).clamp(floor, 1.0)))
            .collect();
        series.push((format!("R = {r}, Grafite bound"), bound, true));
    }
    for (i, (name, pts, dashed)) in series.into_iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        if dashed {
            let style = color.stroke_width(1);
            ch.draw_series(LineSeries::new(pts, style))
                .map_err(|e| err(&e))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], style));
        } else {
            cairn_bench::plot::marked_line(&mut ch, pts, color.stroke_width(2), name)?;
        }
    }
    cairn_bench::plot::legend(&mut ch, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(|e| err(&e))
}
