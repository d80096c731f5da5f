//! SVG plots (plotters) for an experiment's [`Plot`]s: lines, grouped bars, and empirical
//! CDFs computed from raw values.
//!
//! Non-finite points are dropped and empty or single-valued axes get a padded range, so any
//! data an experiment hands over renders without panicking.
//!
//! Readability: an axis whose data are all positive and span more than a factor of
//! [`LOG_SPAN`] (latency distributions, hold time against a doubling batch) is drawn on a
//! logarithmic scale, labelled at whole decades; the legend sits in its own strip right of the
//! chart, so it never covers data.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::{Plot, PlotKind, Series};

mod axis;
mod colours;
mod legend;
#[cfg(test)]
mod tests;

pub use axis::{wants_log, LOG_SPAN};
pub use colours::{is_reference, SeriesColours};

use axis::Frame;
use legend::{legend, legend_font, line_style, title_px, wrap, Stroke};

/// Image size in pixels.
const SIZE: (u32, u32) = (1000, 560);
/// Width of the legend strip right of the chart.
const LEGEND_W: u32 = 210;

/// The most points of a line series drawn with a marker on each (some 25 px apart across
/// the plot's width).
const MAX_MARKERS: usize = 32;

/// The empirical CDF of raw values: sorted values, each with the fraction of values `<=` it.
pub fn empirical_cdf(values: &[f64]) -> Vec<(f64, f64)> {
    let mut xs: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    xs.sort_by(f64::total_cmp);
    let n = xs.len() as f64;
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(xs.len());
    for (i, x) in xs.into_iter().enumerate() {
        let y = (i + 1) as f64 / n;
        // Ties: keep one point per value, at its highest fraction.
        match out.last_mut() {
            Some(last) if last.0 == x => last.1 = y,
            _ => out.push((x, y)),
        }
    }
    out
}

fn finite(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect()
}

/// The SVG text of `plot` on its own (colours from its own series).
pub fn render(plot: &Plot) -> Result<String, String> {
    render_with(plot, &SeriesColours::new([plot]))
}

/// The SVG text of `plot`, its colours from `palette` (the experiment's: the report writes
/// every plot of an experiment with one).
pub fn render_with(plot: &Plot, palette: &SeriesColours) -> Result<String, String> {
    let mut svg = String::new();
    render_inner(plot, palette, &mut svg).map_err(|e| format!("plot {}: {e}", plot.file_stem))?;
    Ok(svg)
}

/// For each series of a line plot or CDF that has exactly the points of an earlier one (two
/// variants that behave alike), that earlier series and how many earlier series it matches
/// (its layer: 1, 2, ...); `None` for the others and for bars, which stand side by side.
fn twins(kind: PlotKind, series: &[Series]) -> Vec<Option<(usize, usize)>> {
    series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if kind == PlotKind::Bars || s.points.is_empty() || is_reference(&s.name) {
                return None;
            }
            let same: Vec<usize> = (0..i).filter(|&j| series[j].points == s.points).collect();
            Some((*same.first()?, same.len()))
        })
        .collect()
}

/// The chart of every plot: two linear axes (log axes are drawn in log10 space).
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A line through `points`, solid or dashed (`dash`: dash and gap in pixels).
fn draw_line(
    chart: &mut Chart<'_, '_>,
    points: Vec<(f64, f64)>,
    style: ShapeStyle,
    dash: Option<(u32, u32)>,
) -> Result<(), Box<dyn std::error::Error>> {
    match dash {
        None => chart.draw_series(LineSeries::new(points, style))?,
        Some((size, gap)) => chart.draw_series(DashedLineSeries::new(points, size, gap, style))?,
    };
    Ok(())
}

fn render_inner(
    plot: &Plot,
    palette: &SeriesColours,
    svg: &mut String,
) -> Result<(), Box<dyn std::error::Error>> {
    let f = Frame::of(plot);
    let root = SVGBackend::with_string(svg, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    // The title over the whole width (legend strip included), as large as fits.
    let body = root.titled(&plot.title, ("sans-serif", title_px(&plot.title, SIZE.0)))?;
    let (chart_area, legend_area) = body.split_horizontally(SIZE.0 - LEGEND_W);
    let mut chart = ChartBuilder::on(&chart_area)
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(f.x_range.clone(), f.y_range.clone())?;
    let y_label = match plot.kind {
        PlotKind::Cdf => "fraction of samples <= x".to_owned(),
        _ => plot.y_label.clone(),
    };
    let scale = |label: &str, log: bool| {
        if log {
            format!("{label} (log scale)")
        } else {
            label.to_owned()
        }
    };
    let x_fmt = |v: &f64| f.x_label(*v);
    let y_fmt = |v: &f64| f.y_label(*v);
    // One light line between two labels (plotters draws nine by default: a dense grid that
    // was most of a plot's SVG and of its rendering time).
    let mut mesh = chart.configure_mesh();
    if let Some(categories) = f.categories() {
        // A tick at each category, none between them.
        mesh.disable_x_mesh().x_labels(categories + 1);
    }
    mesh.max_light_lines(2)
        .x_desc(scale(&plot.x_label, f.log_x()))
        .y_desc(scale(&y_label, f.log_y))
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .draw()?;
    // A line that is another's exactly is drawn a few pixels above it (`lift` per layer).
    let lift = (f.y_range.end - f.y_range.start) * 3.0 / f64::from(chart_area.dim_in_pixel().1);
    draw_series(&mut chart, &legend_area, plot, palette, &f, lift)?;
    root.present()?;
    Ok(())
}

/// Every series of `f` on `chart`, with its legend entry in `legend_area`.
fn draw_series(
    chart: &mut Chart<'_, '_>,
    legend_area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    plot: &Plot,
    palette: &SeriesColours,
    f: &Frame,
    lift: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    let series = &f.series;
    let twins = twins(plot.kind, series);
    let names: Vec<Vec<String>> = series
        .iter()
        .zip(&twins)
        .map(|(s, t)| match t {
            // A no-break space: `(=` stays with the name it points at.
            Some((j, _)) => wrap(&format!("{} (=\u{a0}{})", s.name, series[*j].name)),
            None => wrap(&s.name),
        })
        .collect();
    let lines = names.iter().map(Vec::len).sum();
    let font = legend_font(lines, names.len(), legend_area.dim_in_pixel().1);
    let mut row = 16;
    let mut k = 0;
    for (i, s) in series.iter().enumerate() {
        let reference = is_reference(&s.name);
        let (color, derived) = palette.colour_of(plot, &s.name);
        let stroke = match plot.kind {
            PlotKind::Bars => Stroke::Bar,
            PlotKind::Lines if reference => Stroke::Points,
            _ if reference => Stroke::Line {
                width: 2,
                dash: None,
            },
            _ if derived => line_style(0, true),
            _ => {
                k += 1;
                line_style(k - 1, false)
            }
        };
        legend(legend_area, &names[i], color, stroke, font, &mut row)?;
        let up = twins[i].map_or(0.0, |(_, layer)| lift * layer as f64);
        let points: Vec<(f64, f64)> = s.points.iter().map(|&(x, y)| (x, y + up)).collect();
        let bar = (i, series.len());
        draw_one(chart, plot.kind, points, color, stroke, bar)?;
    }
    Ok(())
}

/// One series' `points` on `chart`, as `stroke` says; bars as `bar.0` of `bar.1` beside each
/// other.
fn draw_one(
    chart: &mut Chart<'_, '_>,
    kind: PlotKind,
    points: Vec<(f64, f64)>,
    color: RGBAColor,
    stroke: Stroke,
    bar: (usize, usize),
) -> Result<(), Box<dyn std::error::Error>> {
    let (style, dash) = match stroke {
        Stroke::Line { width, dash } => (color.stroke_width(width), dash),
        _ => (color.filled(), None),
    };
    match (kind, stroke) {
        // The reference (the kernel's snapshots): points, not a line between them.
        (_, Stroke::Points) => {
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 6, color.filled())))?;
        }
        (PlotKind::Bars, _) => {
            let width = 0.8 / bar.1.max(1) as f64;
            let offset = -0.4 + bar.0 as f64 * width;
            chart.draw_series(points.iter().map(|&(x, y)| {
                Rectangle::new([(x + offset, 0.0), (x + offset + width, y)], color.filled())
            }))?;
        }
        (PlotKind::Cdf, _) => {
            // A step function: flat until the next value, then up.
            let mut steps = Vec::with_capacity(points.len() * 2);
            let mut prev = 0.0;
            for &(x, y) in &points {
                steps.push((x, prev));
                steps.push((x, y));
                prev = y;
            }
            draw_line(chart, steps, style, dash)?;
        }
        (PlotKind::Lines, _) => {
            // Markers while they stand apart; a denser series is its line alone (its markers
            // would merge into a band, and cost most of the plot's drawing).
            // A marker stands out of its line: wider than the line by 2 px each side.
            let markers = (points.len() <= MAX_MARKERS).then(|| points.clone());
            let r = match stroke {
                Stroke::Line { width, .. } => (width / 2 + 2).max(3),
                _ => 3,
            };
            draw_line(chart, points, style, dash)?;
            if let Some(m) = markers {
                chart.draw_series(m.into_iter().map(|p| Circle::new(p, r, color.filled())))?;
            }
        }
    }
    Ok(())
}
