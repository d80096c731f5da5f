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
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        return (lo - pad)..(hi + pad);
    }
    let pad = (hi - lo) * 0.05;
    (lo - pad)..(hi + pad)
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
    let x_fmt: &dyn Fn(&f64) -> String = if log_x { &log_tick } else { &tick };
    let y_fmt: &dyn Fn(&f64) -> String = if log_y { &log_tick } else { &tick };
    // One light line between two labels (plotters draws nine by default: a dense grid that
    // was most of a plot's SVG and of its rendering time).
    chart
        .configure_mesh()
        .max_light_lines(2)
        .x_desc(scale(&plot.x_label, log_x))
        .y_desc(scale(&y_label, log_y))
        .x_label_formatter(x_fmt)
        .y_label_formatter(y_fmt)
        .draw()?;

    let groups = series.len().max(1) as f64;
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        // The legend strip: a swatch and the name, one row per series.
        let row = 40 + 24 * i as i32;
        legend_area.draw(&PathElement::new(
            vec![(8, row), (30, row)],
            color.stroke_width(4),
        ))?;
        legend_area.draw(&Text::new(
            s.name.clone(),
            (36, row - 7),
            ("sans-serif", 14),
        ))?;
        match plot.kind {
            PlotKind::Lines => {
                chart.draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    color.stroke_width(2),
                ))?;
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
                chart.draw_series(LineSeries::new(steps, color.stroke_width(2)))?;
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
