//! SVG plots (plotters) for an experiment's [`Plot`]s: lines, grouped bars, and empirical
//! CDFs computed from raw values.
//!
//! Non-finite points are dropped and empty or single-valued axes get a padded range, so any
//! data an experiment hands over renders without panicking.

use std::path::Path;

use plotters::prelude::*;

use super::{Plot, PlotKind, Series};

/// Image size in pixels.
const SIZE: (u32, u32) = (900, 560);

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

/// Renders `plot` to `path` as SVG.
pub fn render(plot: &Plot, path: &Path) -> Result<(), String> {
    render_inner(plot, path).map_err(|e| format!("plot {}: {e}", plot.file_stem))
}

fn render_inner(plot: &Plot, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
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

    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&plot.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x_range, y_range)?;
    let y_label = match plot.kind {
        PlotKind::Cdf => "fraction of samples <= x",
        _ => plot.y_label.as_str(),
    };
    chart
        .configure_mesh()
        .x_desc(plot.x_label.as_str())
        .y_desc(y_label)
        .x_label_formatter(&tick)
        .y_label_formatter(&tick)
        .draw()?;

    let groups = series.len().max(1) as f64;
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let legend = move |(x, y): (i32, i32)| {
            PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
        };
        match plot.kind {
            PlotKind::Lines => {
                chart
                    .draw_series(LineSeries::new(
                        s.points.iter().copied(),
                        color.stroke_width(2),
                    ))?
                    .label(s.name.as_str())
                    .legend(legend);
                chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
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
                chart
                    .draw_series(LineSeries::new(steps, color.stroke_width(2)))?
                    .label(s.name.as_str())
                    .legend(legend);
            }
            PlotKind::Bars => {
                let width = 0.8 / groups;
                let offset = -0.4 + i as f64 * width;
                chart
                    .draw_series(s.points.iter().map(|&(x, y)| {
                        Rectangle::new([(x + offset, 0.0), (x + offset + width, y)], color.filled())
                    }))?
                    .label(s.name.as_str())
                    .legend(legend);
            }
        }
    }
    if !series.is_empty() {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
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
    fn empirical_cdf_is_sorted_and_ends_at_one() {
        let cdf = empirical_cdf(&[3.0, 1.0, 2.0, 2.0, f64::NAN]);
        assert_eq!(cdf, vec![(1.0, 0.25), (2.0, 0.75), (3.0, 1.0)]);
        assert!(empirical_cdf(&[]).is_empty());
    }

    #[test]
    fn every_kind_renders_even_empty_or_degenerate_data() {
        let dir = tempfile::tempdir().unwrap();
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
                let path = dir.path().join("p.svg");
                render(&plot, &path).unwrap();
                let svg = std::fs::read_to_string(&path).unwrap();
                assert!(svg.contains("<svg"));
            }
        }
    }
}
