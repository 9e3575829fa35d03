//! A grouped bar chart from a text table, for the shell scripts' results: one line per bar,
//! `group series value` (whitespace-separated; a group may not contain spaces). Groups keep
//! their first-seen order along the x axis, series their first-seen order within each group.
//!
//! ```sh
//! plot_bars --input medians.txt --out chart.png --title "cached reads" --ylabel "ops/s"
//! ```

use clap::Parser;
use plotters::prelude::*;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    rename_all = "snake_case",
    about = "A grouped bar chart from `group series value` lines"
)]
pub struct Args {
    /// The table (`group series value` per line).
    #[arg(long)]
    input: PathBuf,
    /// The PNG to write.
    #[arg(long)]
    out: PathBuf,
    #[arg(long, default_value = "")]
    title: String,
    #[arg(long, default_value = "")]
    ylabel: String,
}

pub fn main(a: Args) {
    if let Err(e) = run(&a) {
        eprintln!("plot_bars: {e}");
        std::process::exit(2);
    }
}

/// Position of `x` in `v`, appending it when new.
fn slot(v: &mut Vec<String>, x: &str) -> usize {
    v.iter().position(|y| y == x).unwrap_or_else(|| {
        v.push(x.to_string());
        v.len() - 1
    })
}

fn run(a: &Args) -> Result<(), String> {
    let text = std::fs::read_to_string(&a.input).map_err(|e| format!("{}: {e}", a.input.display()))?;
    let (mut groups, mut series, mut bars) = (Vec::new(), Vec::new(), Vec::new());
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [g, s, v] = f[..] else {
            return Err(format!("line {}: expected `group series value`, got {line:?}", n + 1));
        };
        let v: f64 = v.parse().map_err(|e| format!("line {}: {v:?}: {e}", n + 1))?;
        bars.push((slot(&mut groups, g), slot(&mut series, s), v));
    }
    if bars.is_empty() {
        return Err(format!("{}: no bars", a.input.display()));
    }
    cairn_bench::plot::register_font()?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let width = series.len() as f64 + 1.0;
    let top = bars.iter().map(|b| b.2).fold(0.0, f64::max) * 1.15;
    let root = BitMapBackend::new(&a.out, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut ch = ChartBuilder::on(&root)
        .caption(&a.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..groups.len() as f64 * width, 0.0..top.max(1e-9))
        .map_err(|e| err(&e))?;
    // Group names are drawn under each group's middle, not as tick labels: the ticks plotters
    // picks are round numbers, which for a few groups fall nowhere near their middles.
    ch.configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        // Decimals as the axis needs them: ratios of 0–2 tick at tenths.
        .y_label_formatter(&|y| match top {
            t if t < 10.0 => format!("{y:.2}"),
            t if t < 100.0 => format!("{y:.1}"),
            _ => format!("{y:.0}"),
        })
        .y_desc(&a.ylabel)
        .draw()
        .map_err(|e| err(&e))?;
    for (si, name) in series.iter().enumerate() {
        let color = Palette99::pick(si).to_rgba();
        let rects = bars.iter().filter(|b| b.1 == si).map(|&(g, s, v)| {
            let x = g as f64 * width + s as f64 + 0.5;
            Rectangle::new([(x, 0.0), (x + 0.9, v)], color.filled())
        });
        ch.draw_series(rects)
            .map_err(|e| err(&e))?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    let style = TextStyle::from(("sans-serif", 14)).pos(plotters::style::text_anchor::Pos::new(
        plotters::style::text_anchor::HPos::Center,
        plotters::style::text_anchor::VPos::Top,
    ));
    for (g, name) in groups.iter().enumerate() {
        let (x, y) = ch.backend_coord(&(g as f64 * width + width / 2.0, 0.0));
        root.draw(&Text::new(name.clone(), (x, y + 8), style.clone()))
            .map_err(|e| err(&e))?;
    }
    cairn_bench::plot::legend(&mut ch, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(|e| err(&e))
}
