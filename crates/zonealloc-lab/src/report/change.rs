//! The change notation: how one figure against another is written everywhere in the lab's
//! reports. Within a factor of two a signed percentage of the value against the base
//! (`+3.21%`, `-0.78%`), beyond it the ratio (`×2.00`, `×30.6`, `÷12.5`), so that a doubling
//! never reads as `+100%` next to a halving at `-50%`, and a hundredfold drop never prints as
//! `-99%` hiding its size. [`judged`] adds which way is better (`+3.21% better`).
//!
//! The sign is always the value's against the base (a latency halved is `-50.00%`), never
//! compare-kernels' "positive is an improvement": the word says which way is good, so the
//! figure a verdict prints (`10 ns → 5 ns (-50.00%)`) is the string the tables print beside
//! it (`5.00 (-50.00% better)`), and `lab compare`'s too.

use super::MetricKind;

/// Which way of a metric is the better one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// More is better (throughput, reuse).
    Higher,
    /// Less is better (latency, misses, instructions).
    Lower,
}

impl Better {
    /// The better way of a metric of `kind`: up for rates and counts that say so, down for
    /// latencies and the other counts.
    pub fn of(kind: MetricKind) -> Better {
        match kind {
            MetricKind::Rate
            | MetricKind::Count {
                higher_is_better: true,
            } => Better::Higher,
            MetricKind::Latency
            | MetricKind::Count {
                higher_is_better: false,
            } => Better::Lower,
        }
    }
}

/// Whether `value / base` is far enough from 1 to be written as a ratio: beyond ×2 or ÷2.
pub fn is_ratio(base: f64, value: f64) -> bool {
    let r = value / base;
    r.is_finite() && !(0.5..=2.0).contains(&r.abs())
}

/// `value` against `base` in the change notation; `None` where it is undefined (a zero or
/// non-finite base).
pub fn change(base: f64, value: f64) -> Option<String> {
    if base == 0.0 || !base.is_finite() || !value.is_finite() {
        return None;
    }
    if is_ratio(base, value) {
        return ratio(base, value);
    }
    let pct = (value / base - 1.0) * 100.0;
    // A change that rounds to nothing has no sign (`-0.00%` read as a small drop).
    Some(if pct.abs() < 0.005 {
        "0.00%".to_owned()
    } else {
        format!("{pct:+.2}%")
    })
}

/// [`change`] followed by `better`, `worse` or nothing (no change), by `better`'s direction.
pub fn judged(base: f64, value: f64, better: Better) -> Option<String> {
    let text = change(base, value)?;
    let up = value > base;
    let word = if text == "0.00%" {
        // No change at the printed precision: neither better nor worse.
        return Some(text);
    } else if up == (better == Better::Higher) {
        "better"
    } else {
        "worse"
    };
    Some(format!("{text} {word}"))
}

/// A table's change cell: [`judged`] in parentheses (`better` `None`: [`change`] alone, for
/// a metric whose direction is not known); `(=)` for zero against zero (no percentage, but
/// no change either: a count that stayed at 0); `(n/a)` where either figure is missing or the
/// change is undefined.
pub fn cell(base: Option<f64>, value: Option<f64>, better: impl Into<Option<Better>>) -> String {
    let text = match (base, value, better.into()) {
        (Some(b), Some(v), _) if b == 0.0 && v == 0.0 => Some("=".to_owned()),
        (Some(b), Some(v), Some(better)) => judged(b, v, better),
        (Some(b), Some(v), None) => change(b, v),
        _ => None,
    };
    format!("({})", text.as_deref().unwrap_or("n/a"))
}

/// The ratio `value / base` as `×30.6`, `×0.52`, or below a tenth as a divisor (`÷29.4`,
/// `÷20833`), or `None` where it is undefined.
pub fn ratio(base: f64, value: f64) -> Option<String> {
    if base == 0.0 || !base.is_finite() || !value.is_finite() {
        return None;
    }
    let r = value / base;
    Some(if r.abs() >= 10.0 {
        format!("×{r:.1}")
    } else if r.abs() >= 0.1 {
        format!("×{r:.2}")
    } else if r == 0.0 {
        "×0".to_owned()
    } else if r.abs() > 0.01 {
        // Below a tenth, the divisor reads better than the digits: ÷29.4, not ×0.034.
        format!("÷{:.1}", 1.0 / r)
    } else {
        format!("÷{:.0}", 1.0 / r)
    })
}

/// A relative difference `rel` (`value / base - 1`) in the notation of [`change`].
pub fn of_relative(rel: f64) -> Option<String> {
    change(1.0, 1.0 + rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_within_a_factor_of_two_ratios_beyond() {
        assert_eq!(change(100.0, 103.21).as_deref(), Some("+3.21%"));
        assert_eq!(change(100.0, 99.22).as_deref(), Some("-0.78%"));
        assert_eq!(change(100.0, 200.0).as_deref(), Some("+100.00%"));
        // A doubling and more is a ratio, never a percentage near -100%.
        assert_eq!(change(100.0, 201.0).as_deref(), Some("×2.01"));
        assert_eq!(change(100.0, 3060.0).as_deref(), Some("×30.6"));
        assert_eq!(change(100.0, 8.0).as_deref(), Some("÷12.5"));
        assert_eq!(change(0.0, 1.0), None);
        assert_eq!(change(f64::NAN, 1.0), None);
    }

    #[test]
    fn judged_says_which_way_is_better() {
        assert_eq!(
            judged(10.0, 12.0, Better::Higher).as_deref(),
            Some("+20.00% better")
        );
        assert_eq!(
            judged(10.0, 12.0, Better::Lower).as_deref(),
            Some("+20.00% worse")
        );
        assert_eq!(
            judged(100.0, 1.0, Better::Lower).as_deref(),
            Some("÷100 better")
        );
        assert_eq!(judged(5.0, 5.0, Better::Lower).as_deref(), Some("0.00%"));
        // A change too small to print has neither sign nor word.
        assert_eq!(
            judged(2002.0, 2001.99, Better::Lower).as_deref(),
            Some("0.00%")
        );
        assert_eq!(
            judged(100.0, 100.01, Better::Lower).as_deref(),
            Some("+0.01% worse")
        );
        assert_eq!(of_relative(-0.0204).as_deref(), Some("-2.04%"));
    }

    /// A doubling and a halving read the same way whichever direction is better: the sign is
    /// the value's, the word the direction's; neither is ever `-100.00%`.
    #[test]
    fn doubling_and_halving_for_both_directions() {
        let cases = [
            (200.0, Better::Higher, "(+100.00% better)"),
            (200.0, Better::Lower, "(+100.00% worse)"),
            (50.0, Better::Higher, "(-50.00% worse)"),
            (50.0, Better::Lower, "(-50.00% better)"),
            (400.0, Better::Lower, "(×4.00 worse)"),
            (25.0, Better::Lower, "(×0.25 better)"),
        ];
        for (value, better, want) in cases {
            assert_eq!(cell(Some(100.0), Some(value), better), want);
        }
        assert_eq!(cell(None, Some(1.0), Better::Lower), "(n/a)");
        assert_eq!(cell(Some(0.0), Some(1.0), Better::Lower), "(n/a)");
        assert_eq!(cell(Some(0.0), Some(0.0), Better::Lower), "(=)");
        assert_eq!(cell(Some(1.0), Some(2.5), None), "(×2.50)");
        assert_eq!(Better::of(MetricKind::Latency), Better::Lower);
        assert_eq!(Better::of(MetricKind::Rate), Better::Higher);
        assert_eq!(
            Better::of(MetricKind::Count {
                higher_is_better: false
            }),
            Better::Lower
        );
    }

    #[test]
    fn large_changes_read_as_ratios() {
        assert_eq!(ratio(1.5, 45.9).as_deref(), Some("×30.6"));
        assert_eq!(ratio(2.0, 1.0).as_deref(), Some("×0.50"));
        assert_eq!(ratio(0.0, 1.0), None);
        assert_eq!(ratio(31.68, 1.06).as_deref(), Some("÷29.9"));
        assert_eq!(ratio(78_010.0, 1.63).as_deref(), Some("÷47859"));
    }
}
