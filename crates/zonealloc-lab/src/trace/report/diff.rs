//! How a figure of ours compares with the kernel's, as the tables and the metrics print it:
//! below both [`super::tables`] and [`super::result`], so neither reaches into the other.

use crate::report::change::change;

/// `a` as a percentage of `b` (0 where `b` is 0).
pub(super) fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// `ours` against `kernel` in the lab's change notation ([`change`]: a signed percentage
/// within a factor of two, a ratio beyond), `=` where they agree, `-` where the kernel has
/// none and we have some.
pub(super) fn diff_pct(ours: u64, kernel: u64) -> String {
    if ours == kernel {
        "=".to_owned()
    } else {
        change(kernel as f64, ours as f64).unwrap_or_else(|| "-".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_pct_is_the_change_notation_and_says_when_the_kernel_has_none() {
        assert_eq!(diff_pct(150, 100), "+50.00%");
        assert_eq!(diff_pct(50, 100), "-50.00%");
        assert_eq!(diff_pct(0, 0), "=");
        assert_eq!(diff_pct(7, 7), "=");
        assert_eq!(diff_pct(3, 0), "-");
        // A doubling and beyond are ratios, never -100% or +3314.7%.
        assert_eq!(diff_pct(200, 100), "+100.00%");
        assert_eq!(diff_pct(20864, 611), "×34.1");
        assert_eq!(diff_pct(0, 100), "×0");
        assert_eq!(pct(1, 4), 25.0);
        assert_eq!(pct(1, 0), 0.0);
    }
}
