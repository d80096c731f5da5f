//! The change notation: how one figure against another is written everywhere in the lab's
//! reports. Within a factor of two a signed percentage of the value against the base
//! (`+3.21%`, `-0.78%`), beyond it the ratio (`×2.00`, `×30.6`, `÷12.5`), so that a doubling
//! never reads as `+100%` next to a halving at `-50%`, and a hundredfold drop never prints as
//! `-99%` hiding its size. [`judged`] adds which way is better (`+3.21% better`).

use super::compare::fmt_ratio;

/// Which way of a metric is the better one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// More is better (throughput, reuse).
    Higher,
    /// Less is better (latency, misses, instructions).
    Lower,
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
        fmt_ratio(base, value)
    } else {
        Some(format!("{:+.2}%", (value / base - 1.0) * 100.0))
    }
}

/// [`change`] followed by `better`, `worse` or nothing (no change), by `better`'s direction.
pub fn judged(base: f64, value: f64, better: Better) -> Option<String> {
    let text = change(base, value)?;
    let up = value > base;
    let word = if value == base {
        return Some(text);
    } else if up == (better == Better::Higher) {
        "better"
    } else {
        "worse"
    };
    Some(format!("{text} {word}"))
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
        assert_eq!(judged(5.0, 5.0, Better::Lower).as_deref(), Some("+0.00%"));
        assert_eq!(of_relative(-0.0204).as_deref(), Some("-2.04%"));
    }
}
