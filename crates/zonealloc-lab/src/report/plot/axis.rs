//! The axes: what scale each takes (linear, log10, or categories), their ranges, and the
//! labels of their ticks.

use std::ops::Range;

use super::super::{Plot, PlotKind, Series};
use super::{empirical_cdf, finite};

/// A line plot whose series all share at most this many x values puts them on a categorical
/// axis.
pub(super) const MAX_CATEGORIES: usize = 16;

/// The distinct x values of a line plot's series where they all share the same few (at most
/// [`MAX_CATEGORIES`], at least two), sorted; `None` otherwise (a continuous axis).
pub(super) fn shared_categories(series: &[Series]) -> Option<Vec<f64>> {
    let xs_of = |s: &Series| {
        let mut xs: Vec<f64> = s.points.iter().map(|p| p.0).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        xs
    };
    let first = xs_of(series.first()?);
    let fits = (2..=MAX_CATEGORIES).contains(&first.len());
    (fits && series.iter().all(|s| xs_of(s) == first)).then_some(first)
}

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
/// One form per axis (`sci`, [`sci_axis`]): written out (`0.01` to `1000`), or all as
/// powers (`1e-1`, `1e0`, ..., `1e7`), never `100000` beside `1.0e6`.
pub(super) fn log_tick(v: &f64, sci: bool) -> String {
    if (v - v.round()).abs() > 1e-6 {
        return String::new();
    }
    match v.round() as i32 {
        d if sci => format!("1e{d}"),
        -2 => "0.01".to_owned(),
        -1 => "0.1".to_owned(),
        d => format!("{:.0}", 10f64.powi(d)),
    }
}

/// Whether a log10 axis over `range` (in decades) labels its decades as powers: where it
/// reaches past 1000 or below 0.01.
pub(super) fn sci_axis(range: &Range<f64>) -> bool {
    range.end >= 3.5 || range.start < -2.5
}

/// A `[lo, hi)` range covering `values` with a little margin; `0..1` when there are none.
pub(super) fn padded_range(values: impl Iterator<Item = f64>) -> Range<f64> {
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
pub(super) fn category_tick(v: &f64) -> String {
    if (v - v.round()).abs() > 1e-6 || *v < -1e-6 {
        return String::new();
    }
    format!("{:.0}", v.round())
}

/// A tick label: integers without a fraction, large or tiny magnitudes in exponent form.
pub(super) fn tick(v: &f64) -> String {
    tick_in(*v, f64::NAN)
}

/// A tick label on an axis `span` wide: as [`tick`], with as many decimals as a tenth of the
/// span needs (up to six), so that the ticks of a narrow axis (3.870 s to 3.895 s) differ.
pub(super) fn tick_in(v: f64, span: f64) -> String {
    let needed = if span.is_finite() && span > 0.0 {
        (-(span / 10.0).log10()).ceil().clamp(0.0, 6.0) as usize
    } else {
        0
    };
    if v == 0.0 {
        "0".to_owned()
    } else if v.abs() >= 1e6 || (v.abs() < 1e-2 && needed <= 2) {
        format!("{v:.1e}")
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.*}", needed.max(2))
    }
}

/// How a plot's x axis is laid out.
pub(super) enum XAxis {
    /// Numbers as they are (`log`: on a log10 scale).
    Continuous { log: bool },
    /// Categories at 0, 1, 2, ...: bars' own indexes (`None`) or a line plot's shared x
    /// values, each drawn at its index and labelled with its value.
    Categories(Option<Vec<f64>>),
}

impl XAxis {
    /// The axis for `series` (finite points) of a plot of `kind`.
    pub(super) fn of(kind: PlotKind, series: &[Series]) -> XAxis {
        match kind {
            PlotKind::Bars => XAxis::Categories(None),
            PlotKind::Lines => match shared_categories(series) {
                Some(xs) => XAxis::Categories(Some(xs)),
                None => XAxis::Continuous {
                    log: wants_log(series.iter().flat_map(|s| s.points.iter().map(|p| p.0))),
                },
            },
            PlotKind::Cdf => XAxis::Continuous {
                log: wants_log(series.iter().flat_map(|s| s.points.iter().map(|p| p.0))),
            },
        }
    }

    /// Where `x` is drawn.
    pub(super) fn place(&self, x: f64) -> f64 {
        match self {
            XAxis::Continuous { log: true } => x.log10(),
            XAxis::Categories(Some(xs)) => xs
                .iter()
                .position(|&c| c.total_cmp(&x).is_eq())
                .map_or(f64::NAN, |i| i as f64),
            _ => x,
        }
    }

    /// The label at drawn position `v`, between `lo` and `hi` (the data's span); `sci` for a
    /// log axis whose decades are labelled as powers.
    fn label(&self, v: f64, lo: f64, hi: f64, sci: bool) -> String {
        match self {
            XAxis::Continuous { log: true } => log_tick(&v, sci),
            XAxis::Continuous { log: false } => tick_in(v, hi - lo),
            XAxis::Categories(xs) => {
                if (v - v.round()).abs() > 1e-6 || v < lo - 1e-6 || v > hi + 1e-6 {
                    return String::new();
                }
                match xs {
                    Some(xs) => xs.get(v.round() as usize).map_or_else(String::new, tick),
                    None => category_tick(&v),
                }
            }
        }
    }
}

/// A plot's data as drawn: its series in drawn coordinates (log10 or category index where the
/// axis says so; a CDF's raw values as `(value, fraction)`), and its axes.
pub(super) struct Frame {
    /// The series, finite points only, in drawn coordinates.
    pub(super) series: Vec<Series>,
    /// How the x axis is laid out.
    pub(super) x_axis: XAxis,
    /// Whether the y axis is log10.
    pub(super) log_y: bool,
    /// The drawn ranges.
    pub(super) x_range: Range<f64>,
    /// The drawn y range.
    pub(super) y_range: Range<f64>,
    /// The data's lowest and highest drawn x (the categories' span).
    pub(super) x_data: (f64, f64),
}

impl Frame {
    /// The frame of `plot`.
    pub(super) fn of(plot: &Plot) -> Frame {
        // What is drawn: for a CDF the raw x values become (x, fraction) steps.
        let series: Vec<Series> = plot
            .series
            .iter()
            .map(|s| Series {
                name: s.name.clone(),
                points: match plot.kind {
                    PlotKind::Cdf => {
                        empirical_cdf(&s.points.iter().map(|p| p.0).collect::<Vec<_>>())
                    }
                    PlotKind::Lines | PlotKind::Bars => finite(&s.points),
                },
            })
            .collect();
        // Log axes: the data move to log10 space and the ticks are labelled back; categories
        // move to their index.
        let x_axis = XAxis::of(plot.kind, &series);
        let log_y = plot.kind == PlotKind::Lines
            && wants_log(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
        let series: Vec<Series> = series
            .into_iter()
            .map(|s| Series {
                name: s.name,
                points: s
                    .points
                    .into_iter()
                    .map(|(x, y)| (x_axis.place(x), if log_y { y.log10() } else { y }))
                    .collect(),
            })
            .collect();
        let points: Vec<(f64, f64)> = series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .collect();
        let (x_lo, x_hi) = points
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
                (a.min(p.0), b.max(p.0))
            });
        let x_range = match x_axis {
            // Half a step either side of the first and last category, no more.
            XAxis::Categories(_) if x_lo <= x_hi => (x_lo - 0.55)..(x_hi + 0.55),
            XAxis::Categories(_) => -0.55..0.55,
            XAxis::Continuous { .. } => padded_range(points.iter().map(|p| p.0)),
        };
        Frame {
            y_range: y_range(plot.kind, &points),
            series,
            x_axis,
            log_y,
            x_range,
            x_data: (x_lo, x_hi),
        }
    }

    /// Whether the x axis is log10.
    pub(super) fn log_x(&self) -> bool {
        matches!(self.x_axis, XAxis::Continuous { log: true })
    }

    /// The number of categories on a categorical x axis (ticks at each, none between).
    pub(super) fn categories(&self) -> Option<usize> {
        let (lo, hi) = self.x_data;
        match self.x_axis {
            XAxis::Categories(_) if lo <= hi => Some((hi - lo) as usize + 1),
            XAxis::Categories(_) => Some(1),
            XAxis::Continuous { .. } => None,
        }
    }

    /// The label of x tick `v`.
    pub(super) fn x_label(&self, v: f64) -> String {
        let (lo, hi) = self.x_data;
        self.x_axis.label(v, lo, hi, sci_axis(&self.x_range))
    }

    /// The label of y tick `v`.
    pub(super) fn y_label(&self, v: f64) -> String {
        if self.log_y {
            log_tick(&v, sci_axis(&self.y_range))
        } else {
            tick_in(v, self.y_range.end - self.y_range.start)
        }
    }
}

/// The y range of drawn `points` for a plot of `kind`: a CDF's 0..1, bars from zero.
fn y_range(kind: PlotKind, points: &[(f64, f64)]) -> Range<f64> {
    let ys = || points.iter().map(|p| p.1);
    match kind {
        PlotKind::Cdf => 0.0..1.02,
        PlotKind::Bars => {
            // Bars grow from zero: keep the axis at zero on the side without data.
            let r = padded_range(ys().chain(std::iter::once(0.0)));
            let lo = if ys().all(|y| y >= 0.0) { 0.0 } else { r.start };
            let hi = if ys().all(|y| y <= 0.0) { 0.0 } else { r.end };
            if lo < hi {
                lo..hi
            } else {
                r
            }
        }
        PlotKind::Lines => padded_range(ys()),
    }
}
