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

use plotters::prelude::*;

use super::{Plot, PlotKind, Series};

/// Image size in pixels.
const SIZE: (u32, u32) = (1000, 560);
/// Width of the legend strip right of the chart.
const LEGEND_W: u32 = 210;
/// An axis spanning more than this factor (all values positive) is logarithmic.
pub const LOG_SPAN: f64 = 16.0;

/// Whether values (finite ones) call for a logarithmic axis.
pub fn wants_log(values: impl Iterator<Item = f64>) -> bool {
    let (mut lo, mut hi, mut any) = (f64::INFINITY, f64::NEG_INFINITY, false);
    for v in values.filter(|v| v.is_finite()) {
        if v <= 0.0 {
            return false;
        }
        lo = lo.min(v);
        hi = hi.max(v);
        any = true;
    }
    any && hi / lo > LOG_SPAN
}

/// A tick label on a log10 axis: the value `10^v` at whole decades, nothing between them.
fn log_tick(v: &f64) -> String {
    if (v - v.round()).abs() > 1e-6 {
        return String::new();
    }
    tick(&10f64.powf(v.round()))
}

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

/// A `[lo, hi)` range covering `values` with a little margin; `0..1` when there are none.
fn padded_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        return 0.0..1.0;
    }
    if lo == hi {
        // All zero (an index that never rose): zero at the foot, no negative half.
        if lo == 0.0 {
            return -0.05..1.0;
        }
        let pad = lo.abs() * 0.1;
        return (lo - pad)..(hi + pad);
    }
    let pad = (hi - lo) * 0.05;
    (lo - pad)..(hi + pad)
}

/// A tick label on a categorical axis (bars): the category's index at whole numbers,
/// nothing between them.
fn category_tick(v: &f64) -> String {
    if (v - v.round()).abs() > 1e-6 || *v < -1e-6 {
        return String::new();
    }
    format!("{:.0}", v.round())
}

/// A tick label: integers without a fraction, large or tiny magnitudes in exponent form.
fn tick(v: &f64) -> String {
    let v = *v;
    if v == 0.0 {
        "0".to_owned()
    } else if v.abs() >= 1e6 || v.abs() < 1e-2 {
        format!("{v:.1e}")
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn finite(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect()
}

/// The most points of a line series drawn with a marker on each (some 25 px apart across
/// the plot's width).
const MAX_MARKERS: usize = 32;

/// The colour of the reference series (the kernel's): the same in every plot.
const REFERENCE: RGBAColor = RGBAColor(0, 0, 0, 1.0);

/// Whether a series is the reference a plot compares against: one named `kernel...` (a
/// trace replay's kernel), drawn in `REFERENCE` and, on a line plot, as points.
pub fn is_reference(name: &str) -> bool {
    name.starts_with("kernel")
}

/// The colour of the `k`-th series that is not the reference: Okabe and Ito's palette (told
/// apart with any colour vision, none near white), then plotters' own; the same series
/// order gives the same colours in every plot.
fn colour(k: usize) -> RGBAColor {
    const OKABE_ITO: [(u8, u8, u8); 7] = [
        (0, 114, 178),
        (230, 159, 0),
        (0, 158, 115),
        (213, 94, 0),
        (204, 121, 167),
        (86, 180, 233),
        (120, 94, 40),
    ];
    match OKABE_ITO.get(k) {
        Some(&(r, g, b)) => RGBAColor(r, g, b, 1.0),
        None => Palette99::pick(k).to_rgba(),
    }
}

/// Characters of a legend line that fit the strip.
const LEGEND_CHARS: usize = 24;

/// A series' legend entry at `row` (moved past it): a swatch (a dot for `point`), and the
/// name broken over as many lines as it needs.
fn legend(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    name: &str,
    color: RGBAColor,
    point: bool,
    row: &mut i32,
) -> Result<(), Box<dyn std::error::Error>> {
    if point {
        area.draw(&Circle::new((19, *row), 6, color.filled()))?;
    } else {
        area.draw(&PathElement::new(
            vec![(8, *row), (30, *row)],
            color.stroke_width(4),
        ))?;
    }
    let mut line = String::new();
    let mut lines = Vec::new();
    for word in name.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > LEGEND_CHARS {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    for l in lines {
        area.draw(&Text::new(l, (36, *row - 7), ("sans-serif", 14)))?;
        *row += 18;
    }
    *row += 8;
    Ok(())
}

/// The SVG text of `plot` (the report writes it to its file).
pub fn render(plot: &Plot) -> Result<String, String> {
    let mut svg = String::new();
    render_inner(plot, &mut svg).map_err(|e| format!("plot {}: {e}", plot.file_stem))?;
    Ok(svg)
}

fn render_inner(plot: &Plot, svg: &mut String) -> Result<(), Box<dyn std::error::Error>> {
    // What is drawn: for a CDF the raw x values become (x, fraction) steps.
    let series: Vec<Series> = plot
        .series
        .iter()
        .map(|s| Series {
            name: s.name.clone(),
            points: match plot.kind {
                PlotKind::Cdf => empirical_cdf(&s.points.iter().map(|p| p.0).collect::<Vec<_>>()),
                PlotKind::Lines | PlotKind::Bars => finite(&s.points),
            },
        })
        .collect();
    // Log axes: the data move to log10 space and the ticks are labelled back.
    let log_x = plot.kind != PlotKind::Bars
        && wants_log(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
    let log_y = plot.kind == PlotKind::Lines
        && wants_log(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    let series: Vec<Series> = series
        .into_iter()
        .map(|s| Series {
            name: s.name,
            points: s
                .points
                .into_iter()
                .map(|(x, y)| {
                    (
                        if log_x { x.log10() } else { x },
                        if log_y { y.log10() } else { y },
                    )
                })
                .collect(),
        })
        .collect();
    let all = || series.iter().flat_map(|s| s.points.iter().copied());
    let x_range = match plot.kind {
        PlotKind::Bars => padded_range(all().map(|p| p.0 - 0.5).chain(all().map(|p| p.0 + 0.5))),
        _ => padded_range(all().map(|p| p.0)),
    };
    let y_range = match plot.kind {
        PlotKind::Cdf => 0.0..1.02,
        PlotKind::Bars => {
            // Bars grow from zero: keep the axis at zero on the side without data.
            let r = padded_range(all().map(|p| p.1).chain(std::iter::once(0.0)));
            let lo = if all().all(|p| p.1 >= 0.0) {
                0.0
            } else {
                r.start
            };
            let hi = if all().all(|p| p.1 <= 0.0) {
                0.0
            } else {
                r.end
            };
            if lo < hi {
                lo..hi
            } else {
                r
            }
        }
        PlotKind::Lines => padded_range(all().map(|p| p.1)),
    };

    let root = SVGBackend::with_string(svg, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let (chart_area, legend_area) = root.split_horizontally(SIZE.0 - LEGEND_W);
    let mut chart = ChartBuilder::on(&chart_area)
        .caption(&plot.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x_range, y_range)?;
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
    let x_fmt: &dyn Fn(&f64) -> String = match plot.kind {
        PlotKind::Bars => &category_tick,
        _ if log_x => &log_tick,
        _ => &tick,
    };
    // Bars stand over categories (CPUs, variants): a tick at each, none between them.
    let categories = match plot.kind {
        PlotKind::Bars => {
            let xs = all().map(|p| p.0);
            let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
                (a.min(x), b.max(x))
            });
            if lo <= hi {
                (hi - lo) as usize + 1
            } else {
                1
            }
        }
        _ => 0,
    };
    let y_fmt: &dyn Fn(&f64) -> String = if log_y { &log_tick } else { &tick };
    // One light line between two labels (plotters draws nine by default: a dense grid that
    // was most of a plot's SVG and of its rendering time).
    let mut mesh = chart.configure_mesh();
    if plot.kind == PlotKind::Bars {
        mesh.disable_x_mesh().x_labels(2 * categories + 2);
    }
    mesh.max_light_lines(2)
        .x_desc(scale(&plot.x_label, log_x))
        .y_desc(scale(&y_label, log_y))
        .x_label_formatter(x_fmt)
        .y_label_formatter(y_fmt)
        .draw()?;

    let groups = series.len().max(1) as f64;
    let mut row = 40;
    let mut k = 0;
    for (i, s) in series.iter().enumerate() {
        let reference = is_reference(&s.name);
        let color = if reference {
            REFERENCE
        } else {
            k += 1;
            colour(k - 1)
        };
        // Later series are thinner and dashed, so one that coincides with an earlier one
        // still shows as a dash on its wider line.
        let width = if reference {
            2
        } else {
            8u32.saturating_sub(2 * k as u32).max(2)
        };
        legend(
            &legend_area,
            &s.name,
            color,
            reference && plot.kind == PlotKind::Lines,
            &mut row,
        )?;
        match plot.kind {
            // The reference (the kernel's snapshots): points, not a line between them.
            PlotKind::Lines if reference => {
                chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 6, color.filled())))?;
            }
            PlotKind::Lines => {
                if k == 1 {
                    chart.draw_series(LineSeries::new(
                        s.points.iter().copied(),
                        color.stroke_width(width),
                    ))?;
                } else {
                    chart.draw_series(DashedLineSeries::new(
                        s.points.iter().copied(),
                        10,
                        6,
                        color.stroke_width(width),
                    ))?;
                }
                // Markers while they stand apart; a denser series is its line alone (its
                // markers would merge into a band, and cost most of the plot's drawing).
                if s.points.len() <= MAX_MARKERS {
                    chart
                        .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
                }
            }
            PlotKind::Cdf => {
                // A step function: flat until the next value, then up.
                let mut steps = Vec::with_capacity(s.points.len() * 2);
                let mut prev = 0.0;
                for &(x, y) in &s.points {
                    steps.push((x, prev));
                    steps.push((x, y));
                    prev = y;
                }
                chart.draw_series(LineSeries::new(steps, color.stroke_width(width)))?;
            }
            PlotKind::Bars => {
                let width = 0.8 / groups;
                let offset = -0.4 + i as f64 * width;
                chart.draw_series(s.points.iter().map(|&(x, y)| {
                    Rectangle::new([(x + offset, 0.0), (x + offset + width, y)], color.filled())
                }))?;
            }
        }
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plot(kind: PlotKind, names: &[&str]) -> Plot {
        Plot {
            file_stem: "p".into(),
            title: "t".into(),
            x_label: "CPU".into(),
            y_label: "y".into(),
            kind,
            series: names
                .iter()
                .map(|n| Series {
                    name: (*n).into(),
                    points: vec![(0.0, 1.0), (1.0, 2.0), (2.0, 1.5), (3.0, 3.0)],
                })
                .collect(),
        }
    }

    /// The kernel is black in every plot and a line plot's kernel is points; a variant keeps
    /// its colour wherever the kernel stands among the series.
    #[test]
    fn the_reference_is_black_points_and_colours_follow_the_series() {
        let lines = render(&plot(PlotKind::Lines, &["a", "b", "kernel (snapshots)"])).unwrap();
        let bars = render(&plot(PlotKind::Bars, &["kernel (trace)", "a", "b"])).unwrap();
        for svg in [&lines, &bars] {
            assert!(svg.contains("#0072B2"), "{svg}");
            assert!(svg.contains("#E69F00"), "{svg}");
        }
        assert!(bars.contains("fill=\"#000000\""), "{bars}");
        // Four snapshot points (and the legend's dot), no line through them.
        let dots = lines
            .matches("r=\"6\" opacity=\"1\" fill=\"#000000\"")
            .count();
        assert_eq!(dots, 5, "{lines}");
        assert!(
            !lines.contains("stroke=\"#000000\" stroke-width=\"2\""),
            "{lines}"
        );
    }

    /// Two coinciding lines both show: the first wide and solid, the second thinner, dashed.
    #[test]
    fn coinciding_lines_stay_visible() {
        let svg = render(&plot(PlotKind::Lines, &["a", "b"])).unwrap();
        assert!(
            svg.contains("stroke=\"#0072B2\" stroke-width=\"6\""),
            "{svg}"
        );
        let dashes = svg.matches("stroke=\"#E69F00\" stroke-width=\"4\"").count();
        assert!(dashes > 2, "{svg}");
    }

    /// Past the fourth series the width stays at its floor (the lab's plots have more).
    #[test]
    fn many_series_render_at_the_narrowest_width() {
        let names = ["a", "b", "c", "d", "e", "f", "g"];
        let svg = render(&plot(PlotKind::Lines, &names)).unwrap();
        assert!(svg.contains("stroke-width=\"2\""), "{svg}");
    }

    /// Bars stand over categories: labelled 0, 1, 2, 3 and nothing between.
    #[test]
    fn bars_have_a_categorical_axis_and_legends_wrap() {
        let long = "kernel (its /proc snapshots, the reference)";
        let mut bars = plot(PlotKind::Bars, &[long, "a"]);
        // Heights in hundreds: no fraction on the y axis either.
        for s in &mut bars.series {
            for p in &mut s.points {
                p.1 *= 200.0;
            }
        }
        let svg = render(&bars).unwrap();
        // The texts the SVG draws.
        let texts: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim()))
            .collect();
        for label in ["0", "1", "2", "3"] {
            assert!(texts.contains(&label), "{label} {texts:?}");
        }
        for between in ["0.50", "-0.50", "1.50"] {
            assert!(!texts.contains(&between), "{between} {texts:?}");
        }
        // The whole name, over three lines.
        for line in ["kernel (its /proc", "snapshots, the", "reference)"] {
            assert!(texts.contains(&line), "{line} {texts:?}");
        }
        assert_eq!(category_tick(&2.0), "2");
        assert_eq!(category_tick(&2.5), "");
    }

    #[test]
    fn an_all_zero_axis_has_no_negative_half() {
        assert_eq!(padded_range([0.0, 0.0].into_iter()), -0.05..1.0);
        assert_eq!(padded_range([2.0].into_iter()), 1.8..2.2);
        assert_eq!(padded_range(std::iter::empty()), 0.0..1.0);
    }

    #[test]
    fn ticks_are_compact() {
        assert_eq!(tick(&5000.0), "5000");
        assert_eq!(tick(&0.25), "0.25");
        assert_eq!(tick(&2.5e7), "2.5e7");
        assert_eq!(tick(&0.0), "0");
    }

    #[test]
    fn log_axes_for_wide_positive_ranges_only() {
        assert!(wants_log([1500.0, 45_000.0].into_iter()));
        assert!(!wants_log([10.0, 100.0].into_iter()));
        assert!(!wants_log([0.0, 45_000.0].into_iter()));
        assert!(!wants_log(std::iter::empty()));
        assert_eq!(log_tick(&3.0), "1000");
        assert_eq!(log_tick(&3.5), "");
    }

    #[test]
    fn legend_stands_beside_the_chart_and_latency_cdfs_are_logarithmic() {
        let plot = Plot {
            file_stem: "p".into(),
            title: "t".into(),
            x_label: "latency (µs)".into(),
            y_label: "y".into(),
            kind: PlotKind::Cdf,
            series: vec![Series {
                name: "remote drain".into(),
                points: vec![(2.0, 0.0), (30.0, 0.0), (40_000.0, 0.0)],
            }],
        };
        let svg = render(&plot).unwrap();
        assert!(svg.contains("latency (µs) (log scale)"), "{svg}");
        assert!(svg.contains("remote drain"));
    }

    /// A line series carries a marker per point while it has at most `MAX_MARKERS` of them.
    #[test]
    fn markers_on_sparse_lines_only() {
        let lines = |n: usize| Plot {
            file_stem: "p".into(),
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            kind: PlotKind::Lines,
            series: vec![Series {
                name: "s".into(),
                points: (0..n).map(|i| (i as f64, (i % 7) as f64)).collect(),
            }],
        };
        let circles = |n| render(&lines(n)).unwrap().matches("<circle").count();
        assert_eq!(circles(MAX_MARKERS), MAX_MARKERS);
        assert_eq!(circles(MAX_MARKERS + 1), 0);
        assert!(render(&lines(MAX_MARKERS + 1))
            .unwrap()
            .contains("<polyline"));
    }

    #[test]
    fn empirical_cdf_is_sorted_and_ends_at_one() {
        let cdf = empirical_cdf(&[3.0, 1.0, 2.0, 2.0, f64::NAN]);
        assert_eq!(cdf, vec![(1.0, 0.25), (2.0, 0.75), (3.0, 1.0)]);
        assert!(empirical_cdf(&[]).is_empty());
    }

    #[test]
    fn every_kind_renders_even_empty_or_degenerate_data() {
        for kind in [PlotKind::Lines, PlotKind::Bars, PlotKind::Cdf] {
            for points in [
                vec![],
                vec![(1.0, 1.0)],
                vec![(0.0, 2.0), (1.0, f64::NAN), (2.0, 5.0)],
            ] {
                let plot = Plot {
                    file_stem: "p".into(),
                    title: "t".into(),
                    x_label: "x".into(),
                    y_label: "y".into(),
                    kind,
                    series: vec![
                        Series {
                            name: "a".into(),
                            points: points.clone(),
                        },
                        Series {
                            name: "b".into(),
                            points,
                        },
                    ],
                };
                let svg = render(&plot).unwrap();
                assert!(svg.contains("<svg"));
            }
        }
    }
}
