//! Charts: the font every chart uses, and the compaction-debt timeline chart.

use crate::timeline::Sample;
use plotters::prelude::*;
use std::path::Path;

/// Registers DejaVu Sans as the charts' `sans-serif` (Debian's fonts-dejavu-core).
///
/// # Errors
/// When the font file is missing or unusable.
pub fn register_font() -> Result<(), String> {
    let font = std::fs::read("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
        .map_err(|e| format!("DejaVuSans.ttf ({e}); apt-get install fonts-dejavu-core"))?;
    plotters::style::register_font("sans-serif", FontStyle::Normal, Box::leak(font.into_boxed_slice()))
        .map_err(|_| "DejaVuSans.ttf is not a usable font".to_string())
}

/// The legend box every chart draws, at `position`.
///
/// # Errors
/// Drawing errors, as text.
pub fn legend<'a, CT: CoordTranslate>(
    ch: &mut ChartContext<'a, BitMapBackend<'a>, CT>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    ch.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(position)
        .draw()
        .map_err(|e| e.to_string())
}

/// A line through `pts` with a dot on each point, named `label` in the legend.
///
/// # Errors
/// Drawing errors, as text.
pub fn marked_line<'a, CT: CoordTranslate<From = (f64, f64)>>(
    ch: &mut ChartContext<'a, BitMapBackend<'a>, CT>,
    pts: Vec<(f64, f64)>,
    style: ShapeStyle,
    label: String,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    ch.draw_series(LineSeries::new(pts.clone(), style))
        .map_err(|e| err(&e))?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], style));
    ch.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, style.color.filled())))
        .map_err(|e| err(&e))?;
    Ok(())
}

/// A panel of the timeline chart.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Panel {
    L0,
    Pending,
    WriteMemory,
}

/// Draws L0 files (top), pending compaction bytes and, when reported, write memory (below)
/// over time, one line per named series, with the phase changes of the first series marked.
///
/// # Errors
/// Drawing errors, as text.
pub fn timeline(path: &Path, title: &str, series: &[(String, Vec<Sample>)]) -> Result<(), String> {
    register_font()?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    // A third panel for write memory when an engine reports it (cairn's tuner moves it).
    let write_memory = series
        .iter()
        .any(|(_, s)| s.iter().any(|x| x.write_memory_bytes.is_some()));
    let height = if write_memory { 950 } else { 700 };
    let root = BitMapBackend::new(path, (1100, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (top, rest) = root.split_vertically(360);
    let (bottom, third) = rest.split_vertically(340);
    let t_max = series
        .iter()
        .flat_map(|(_, s)| s.iter().map(|x| x.t_secs))
        .fold(1.0f64, f64::max);
    let l0_max = series
        .iter()
        .flat_map(|(_, s)| s.iter().map(|x| x.debt.l0_files as f64))
        .fold(4.0f64, f64::max)
        * 1.1;
    let gb = |b: u64| b as f64 / (1u64 << 30) as f64;
    let pend_max = series
        .iter()
        .flat_map(|(_, s)| s.iter().map(|x| gb(x.debt.pending_compaction_bytes)))
        .fold(0.01f64, f64::max)
        * 1.1;
    let mib = |b: u64| b as f64 / f64::from(1u32 << 20);
    let write_max = series
        .iter()
        .flat_map(|(_, s)| s.iter().filter_map(|x| x.write_memory_bytes.map(mib)))
        .fold(1.0f64, f64::max)
        * 1.1;
    let panels = [
        (&top, l0_max, "L0 files", Panel::L0),
        (&bottom, pend_max, "pending compaction GiB", Panel::Pending),
        (&third, write_max, "write memory MiB", Panel::WriteMemory),
    ];
    for (area, y_max, y_desc, panel) in panels.into_iter().take(if write_memory { 3 } else { 2 }) {
        let is_l0 = panel == Panel::L0;
        let mut ch = ChartBuilder::on(area)
            .caption(
                if is_l0 { title.to_string() } else { String::new() },
                ("sans-serif", 20),
            )
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..t_max, 0.0..y_max)
            .map_err(|e| err(&e))?;
        ch.configure_mesh()
            .x_desc("seconds")
            .y_desc(y_desc)
            .draw()
            .map_err(|e| err(&e))?;
        for (i, (name, samples)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let points: Vec<(f64, f64)> = samples
                .iter()
                .filter_map(|s| {
                    let y = match panel {
                        Panel::L0 => s.debt.l0_files as f64,
                        Panel::Pending => gb(s.debt.pending_compaction_bytes),
                        Panel::WriteMemory => mib(s.write_memory_bytes?),
                    };
                    Some((s.t_secs, y))
                })
                .collect();
            ch.draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        }
        if let Some((_, first)) = series.first() {
            // Phase changes of the first series, as labelled vertical marks.
            let marks: Vec<(f64, String)> = first
                .windows(2)
                .filter(|w| w[0].phase != w[1].phase)
                .map(|w| (w[1].t_secs, w[1].phase.clone()))
                .collect();
            for (t, name) in marks {
                ch.draw_series(LineSeries::new(vec![(t, 0.0), (t, y_max)], BLACK.mix(0.3)))
                    .map_err(|e| err(&e))?;
                if is_l0 {
                    ch.draw_series(std::iter::once(Text::new(
                        name,
                        (t, y_max * 0.95),
                        ("sans-serif", 13).into_font(),
                    )))
                    .map_err(|e| err(&e))?;
                }
            }
        }
        legend(&mut ch, SeriesLabelPosition::UpperRight)?;
    }
    root.present().map_err(|e| err(&e))
}

/// Draws the memory tuner's trajectories: write memory (and filter memory, when tuned) in MiB
/// (top) and the cycles' I/O per operation (bottom) over time, one line per named series.
///
/// # Errors
/// Drawing errors, as text.
pub fn tuner(path: &Path, title: &str, series: &[(String, Vec<crate::report::TunerPoint>)]) -> Result<(), String> {
    register_font()?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let root = BitMapBackend::new(path, (1100, 700)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (top, bottom) = root.split_vertically(360);
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let points = series.iter().flat_map(|(_, s)| s.iter());
    let t_max = points.clone().map(|p| p.t_secs).fold(1.0f64, f64::max);
    let m_max = points
        .clone()
        .map(|p| mib(p.write.max(p.filter)))
        .fold(1.0f64, f64::max)
        * 1.1;
    let c_max = points.map(|p| p.cost).fold(0.01f64, f64::max) * 1.1;
    for (area, y_max, y_desc, is_memory) in [
        (&top, m_max, "write memory MiB (dashed: filters)", true),
        (&bottom, c_max, "page I/O per operation", false),
    ] {
        let mut ch = ChartBuilder::on(area)
            .caption(
                if is_memory { title.to_string() } else { String::new() },
                ("sans-serif", 20),
            )
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..t_max, 0.0..y_max)
            .map_err(|e| err(&e))?;
        ch.configure_mesh()
            .x_desc("seconds")
            .y_desc(y_desc)
            .draw()
            .map_err(|e| err(&e))?;
        for (i, (name, pts)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let line: Vec<(f64, f64)> = pts
                .iter()
                .map(|p| (p.t_secs, if is_memory { mib(p.write) } else { p.cost }))
                .collect();
            marked_line(&mut ch, line, color.stroke_width(2), name.clone())?;
            if is_memory && pts.iter().any(|p| p.filter > 0) {
                let f: Vec<(f64, f64)> = pts.iter().map(|p| (p.t_secs, mib(p.filter))).collect();
                ch.draw_series(DashedLineSeries::new(f, 6, 4, color.stroke_width(1)))
                    .map_err(|e| err(&e))?;
            }
        }
        legend(&mut ch, SeriesLabelPosition::UpperRight)?;
    }
    root.present().map_err(|e| err(&e))
}
