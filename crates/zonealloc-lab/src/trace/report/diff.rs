//! How a figure of ours compares with the kernel's, as the tables and the metrics print it:
//! below both [`super::tables`] and [`super::result`], so neither reaches into the other.

/// `a` as a percentage of `b` (0 where `b` is 0).
pub(super) fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// `ours` against `kernel` in percent, signed (`-` when the kernel has none).
pub(super) fn diff_pct(ours: u64, kernel: u64) -> String {
    if kernel == 0 {
        if ours == 0 {
            "0".to_owned()
        } else {
            "-".to_owned()
        }
    } else {
        format!(
            "{:+.1}%",
            100.0 * (ours as f64 - kernel as f64) / kernel as f64
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_pct_is_signed_and_says_when_the_kernel_has_none() {
        assert_eq!(diff_pct(150, 100), "+50.0%");
        assert_eq!(diff_pct(50, 100), "-50.0%");
        assert_eq!(diff_pct(0, 0), "0");
        assert_eq!(diff_pct(3, 0), "-");
        assert_eq!(pct(1, 4), 25.0);
        assert_eq!(pct(1, 0), 0.0);
    }
}
