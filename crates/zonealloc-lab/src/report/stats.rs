//! Summary statistics and Welch's two-sample t-test, as mmtests' compare-kernels uses them.
//!
//! Rates are summarised by the harmonic mean, latencies and counts by the arithmetic mean;
//! spread is the sample standard deviation (n - 1) and the coefficient of variation
//! (stddev / mean, in percent). Significance is Welch's unequal-variance t-test: the t
//! statistic, the Welch–Satterthwaite degrees of freedom, and the two-sided p-value of
//! Student's t distribution (`statrs`), `p = I_{df / (df + t^2)}(df / 2, 1 / 2)`.
//!
//! Where the design is paired (the same random seed, or the same repetition slot, under both
//! variants), [`paired`] tests the per-pair differences instead (Student's paired t-test); a
//! set of differences with no variance at all is reported as [`Paired::Exact`], never as a
//! test that is significant by construction. [`ci95_half_width`] gives the 95% confidence
//! interval of a mean, which the lab's repetition driver compares with a target width.
//!
//! Everything here is total: empty or degenerate input gives `None` or NaN, never a panic.

use statrs::distribution::{Binomial, ContinuousCDF as _, DiscreteCDF as _, StudentsT};

/// The arithmetic mean, or `None` for an empty slice.
pub fn mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    Some(xs.iter().sum::<f64>() / xs.len() as f64)
}

/// The harmonic mean, or `None` for an empty slice or any value `<= 0` (where it is undefined;
/// compare-kernels falls back to the mean there, and so does
/// [`compare`](super::compare::compare)).
pub fn hmean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|&x| x <= 0.0 || !x.is_finite()) {
        return None;
    }
    Some(xs.len() as f64 / xs.iter().map(|x| 1.0 / x).sum::<f64>())
}

/// The sample variance (divisor n - 1), or `None` with fewer than two values.
pub fn variance(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    Some(xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64)
}

/// The sample standard deviation (divisor n - 1); `0` for a single value, `None` for none.
pub fn stddev(xs: &[f64]) -> Option<f64> {
    match xs.len() {
        0 => None,
        1 => Some(0.0),
        _ => variance(xs).map(f64::sqrt),
    }
}

/// The coefficient of variation in percent (stddev / mean x 100), or `None` where the mean
/// is zero or there are no values.
pub fn coeffvar(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    if m == 0.0 {
        return None;
    }
    Some(stddev(xs)? / m.abs() * 100.0)
}

/// Which way a metric improves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Larger values are better (rates, success counts).
    HigherIsBetter,
    /// Smaller values are better (latencies, lock hold times).
    LowerIsBetter,
}

/// The % change from `base` to `value`, signed so that positive is an improvement in
/// `direction` (compare-kernels' convention). `None` when `base` is zero.
pub fn pct_change(base: f64, value: f64, direction: Direction) -> Option<f64> {
    if base == 0.0 || !base.is_finite() || !value.is_finite() {
        return None;
    }
    let raw = (value - base) / base.abs() * 100.0;
    Some(match direction {
        Direction::HigherIsBetter => raw,
        Direction::LowerIsBetter => -raw,
    })
}

/// The outcome of Welch's t-test on two samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    /// The t statistic `(mean_a - mean_b) / sqrt(var_a / n_a + var_b / n_b)`.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch's two-sample t-test, or `None` when either sample has fewer than two values.
///
/// Two samples with no variance at all are decided exactly: equal means give `p = 1`, different
/// means `p = 0` (a deterministic experiment that changes its result is a real change).
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    let (va, vb) = (variance(a)?, variance(b)?);
    let (ma, mb) = (mean(a)?, mean(b)?);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (sa, sb) = (va / na, vb / nb);
    let se2 = sa + sb;
    if !se2.is_finite() {
        return None;
    }
    if se2 == 0.0 {
        let (t, p) = if ma == mb {
            (0.0, 1.0)
        } else {
            (f64::INFINITY.copysign(ma - mb), 0.0)
        };
        return Some(Welch {
            t,
            df: na + nb - 2.0,
            p,
        });
    }
    let t = (ma - mb) / se2.sqrt();
    let df = se2 * se2 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    Some(Welch {
        t,
        df,
        p: student_t_two_sided_p(t, df),
    })
}

/// Whether Welch's test finds `a` and `b` different at the 95% level (`p < 0.05`).
pub fn significant_95(a: &[f64], b: &[f64]) -> bool {
    welch(a, b).is_some_and(|w| w.p < 0.05)
}

/// The outcome of comparing paired samples `a[i]` and `b[i]` by their differences
/// `d[i] = b[i] - a[i]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Paired {
    /// Every difference is the same value (deterministic runs): no test is needed or made.
    Exact {
        /// Number of pairs.
        n: usize,
        /// The one difference `b - a`.
        diff: f64,
    },
    /// Student's paired t-test on the differences (at least two pairs, some variance).
    Test {
        /// Number of pairs.
        n: usize,
        /// Mean difference `b - a`.
        mean_diff: f64,
        /// The t statistic `mean(d) / (sd(d) / sqrt(n))`.
        t: f64,
        /// Degrees of freedom, `n - 1`.
        df: f64,
        /// Two-sided p-value.
        p: f64,
    },
    /// A single pair with a non-zero difference: nothing to test against.
    Single {
        /// The difference `b - a`.
        diff: f64,
    },
}

impl Paired {
    /// The two-sided p-value, where a test was made.
    pub fn p(&self) -> Option<f64> {
        match self {
            Paired::Test { p, .. } => Some(*p),
            _ => None,
        }
    }

    /// The mean difference `b - a`.
    pub fn mean_diff(&self) -> f64 {
        match *self {
            Paired::Exact { diff, .. } | Paired::Single { diff } => diff,
            Paired::Test { mean_diff, .. } => mean_diff,
        }
    }

    /// Significant at 95%: only a test can be (an exact difference is reported as exact).
    pub fn significant_95(&self) -> bool {
        self.p().is_some_and(|p| p < 0.05)
    }
}

/// Compares paired samples (pair `i` is `a[i]`, `b[i]`); `None` without pairs, with unequal
/// lengths or with a non-finite value.
pub fn paired(a: &[f64], b: &[f64]) -> Option<Paired> {
    if a.is_empty() || a.len() != b.len() {
        return None;
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
    if d.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = d.len();
    if d.iter().all(|&x| x == d[0]) {
        return Some(if n == 1 && d[0] != 0.0 {
            Paired::Single { diff: d[0] }
        } else {
            Paired::Exact { n, diff: d[0] }
        });
    }
    let m = mean(&d)?;
    let sd = stddev(&d)?;
    let df = (n - 1) as f64;
    let t = m / (sd / (n as f64).sqrt());
    Some(Paired::Test {
        n,
        mean_diff: m,
        t,
        df,
        p: student_t_two_sided_p(t, df),
    })
}

/// The one-sided p-value of the sign test: the chance that `agreeing` or more of `n` pairs
/// (ties already left out) move the expected way when either way is equally likely,
/// `P(X >= agreeing)` for `X ~ Binomial(n, 1/2)`; 1 for `n == 0`.
pub fn sign_test_p(agreeing: usize, n: usize) -> f64 {
    if n == 0 || agreeing == 0 {
        return 1.0;
    }
    match Binomial::new(0.5, n as u64) {
        // sf(k) is P(X > k).
        Ok(dist) => dist.sf(agreeing as u64 - 1).clamp(0.0, 1.0),
        Err(_) => f64::NAN,
    }
}

/// The two-sided 97.5% quantile of Student's t with `df` degrees of freedom (the factor of a
/// 95% confidence interval), or NaN for `df <= 0`.
pub fn t_crit_95(df: f64) -> f64 {
    if df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |d| d.inverse_cdf(0.975))
}

/// The half-width of the 95% confidence interval of the mean of `xs`
/// (`t_{0.975, n-1} * sd / sqrt(n)`), or `None` with fewer than two values.
pub fn ci95_half_width(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let sd = stddev(xs)?;
    Some(t_crit_95((xs.len() - 1) as f64) * sd / (xs.len() as f64).sqrt())
}

/// The two-sided p-value of Student's t distribution with `df` degrees of freedom:
/// `P(|T| >= |t|) = 2 * sf(|t|) = I_{df / (df + t^2)}(df / 2, 1 / 2)`, from `statrs`.
pub fn student_t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return 0.0;
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => (2.0 * dist.sf(t.abs())).clamp(0.0, 1.0),
        Err(_) => f64::NAN,
    }
}

/// The `q` quantile of `v` by nearest rank (the smallest value with at least `q` of the
/// values at or below it); `0` for an empty slice. The lab's one quantile helper.
pub fn nearest_rank(v: &[u64], q: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let i = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1;
    s[i]
}

/// The median of values sorted ascending (the mean of the two middle ones for an even
/// count); `v` must not be empty.
pub fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// At most `n` evenly spaced order statistics of `v` (all of it, sorted, when it has no more
/// than `n` values; else ranks `i * (len - 1) / (n - 1)`, first and last included): the
/// points of a CDF plot.
pub fn cdf_points(v: &[u64], n: usize) -> Vec<u64> {
    let mut s = v.to_vec();
    s.sort_unstable();
    if s.len() <= n {
        return s;
    }
    (0..n).map(|i| s[i * (s.len() - 1) / (n - 1)]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn means_and_spread_match_hand_computation() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs), Some(5.0));
        // Sum of squared deviations is 32; n - 1 = 7.
        assert!(close(stddev(&xs).unwrap(), (32.0f64 / 7.0).sqrt(), 1e-12));
        assert!(close(
            coeffvar(&xs).unwrap(),
            (32.0f64 / 7.0).sqrt() / 5.0 * 100.0,
            1e-9
        ));
        // 3 / (1 + 1/2 + 1/4) = 12 / 7.
        assert!(close(hmean(&[1.0, 2.0, 4.0]).unwrap(), 12.0 / 7.0, 1e-12));
    }

    #[test]
    fn degenerate_inputs_give_none_not_panics() {
        assert_eq!(mean(&[]), None);
        assert_eq!(hmean(&[]), None);
        assert_eq!(hmean(&[1.0, 0.0]), None);
        assert_eq!(stddev(&[]), None);
        assert_eq!(stddev(&[3.0]), Some(0.0));
        assert_eq!(coeffvar(&[0.0, 0.0]), None);
        assert_eq!(welch(&[1.0], &[1.0, 2.0]), None);
        assert_eq!(pct_change(0.0, 1.0, Direction::HigherIsBetter), None);
    }

    #[test]
    fn pct_change_is_positive_for_improvements() {
        assert!(close(
            pct_change(100.0, 110.0, Direction::HigherIsBetter).unwrap(),
            10.0,
            1e-12
        ));
        assert!(close(
            pct_change(100.0, 90.0, Direction::LowerIsBetter).unwrap(),
            10.0,
            1e-12
        ));
        assert!(pct_change(100.0, 110.0, Direction::LowerIsBetter).unwrap() < 0.0);
    }

    #[test]
    fn ln_gamma_matches_factorials_and_sqrt_pi() {
        use statrs::function::gamma::ln_gamma;
        assert!(close(ln_gamma(1.0), 0.0, 1e-13));
        assert!(close(ln_gamma(5.0), 24.0f64.ln(), 1e-12));
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-12
        ));
    }

    #[test]
    fn incomplete_beta_matches_closed_forms() {
        // statrs takes (a, b, x) and refuses x outside [0, 1] instead of returning NaN.
        use statrs::function::beta::checked_beta_reg;
        let regularized_incomplete_beta =
            |x: f64, a: f64, b: f64| checked_beta_reg(a, b, x).unwrap_or(f64::NAN);
        // I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 - (1 - x)^b.
        assert!(close(
            regularized_incomplete_beta(0.3, 1.0, 1.0),
            0.3,
            1e-12
        ));
        assert!(close(
            regularized_incomplete_beta(0.6, 3.0, 1.0),
            0.216,
            1e-12
        ));
        assert!(close(
            regularized_incomplete_beta(0.2, 1.0, 4.0),
            1.0 - 0.8f64.powi(4),
            1e-12
        ));
        assert!(regularized_incomplete_beta(1.5, 1.0, 1.0).is_nan());
    }

    #[test]
    fn student_t_p_values_match_the_table() {
        // Two-sided critical values from the t table: 12.706 (df 1), 2.228 (df 10),
        // 2.086 (df 20) at 0.05; 3.169 (df 10) at 0.01.
        assert!(close(student_t_two_sided_p(12.706, 1.0), 0.05, 1e-4));
        assert!(close(student_t_two_sided_p(2.228, 10.0), 0.05, 1e-4));
        assert!(close(student_t_two_sided_p(2.086, 20.0), 0.05, 1e-4));
        assert!(close(student_t_two_sided_p(3.169, 10.0), 0.01, 1e-4));
        // df = 1 is the Cauchy distribution: p = 1 - 2 atan(|t|) / π; t = 1 gives exactly 0.5.
        assert!(close(student_t_two_sided_p(1.0, 1.0), 0.5, 1e-12));
        // df = 2 has the closed form p = 1 - |t| / sqrt(2 + t^2).
        assert!(close(
            student_t_two_sided_p(1.5, 2.0),
            1.0 - 1.5 / (2.0f64 + 2.25).sqrt(),
            1e-12
        ));
        assert!(close(student_t_two_sided_p(0.0, 7.0), 1.0, 1e-12));
    }

    #[test]
    fn welch_identical_samples_are_not_significant() {
        let a = [10.0, 11.0, 9.0, 10.5, 9.5];
        let w = welch(&a, &a).unwrap();
        assert!(close(w.t, 0.0, 1e-12));
        assert!(close(w.p, 1.0, 1e-12));
        assert!(!significant_95(&a, &a));
        assert!(!significant_95(&[5.0, 5.0, 5.0], &[5.0, 5.0]));
    }

    #[test]
    fn welch_separated_samples_are_significant() {
        let a = [10.0, 10.2, 9.9, 10.1, 9.8];
        let b = [12.0, 12.1, 11.9, 12.2, 11.8];
        assert!(welch(&a, &b).unwrap().p < 0.05);
        assert!(significant_95(&a, &b));
        assert!(significant_95(&[1.0, 1.0], &[2.0, 2.0]));
    }

    #[test]
    fn welch_matches_a_hand_computed_case() {
        // a: mean 2, var 1, n 3 -> var/n = 1/3. b: mean 5, var 4, n 3 -> 4/3.
        // se^2 = 5/3, t = -3 / sqrt(5/3) = -2.32379.
        // df = (5/3)^2 / ((1/3)^2 / 2 + (4/3)^2 / 2) = (25/9) / (17/18) = 50/17 = 2.94118.
        let a = [1.0, 2.0, 3.0];
        let b = [3.0, 5.0, 7.0];
        let w = welch(&a, &b).unwrap();
        assert!(close(w.t, -3.0 / (5.0f64 / 3.0).sqrt(), 1e-12));
        assert!(close(w.df, 50.0 / 17.0, 1e-12));
        // Between the table's df 2 (p 0.146) and df 3 (p 0.103) at |t| = 2.3238; integrating
        // the t density numerically (Simpson, 200k steps) gives 0.10448.
        assert!(close(w.p, 0.10448, 1e-4), "p = {}", w.p);
        assert!(!significant_95(&a, &b));
    }

    #[test]
    fn paired_t_matches_a_hand_computed_case() {
        // d = [1, 2, 2, 0, 2]: mean 1.4, sd sqrt(0.8), se 0.4, t = 3.5, df 4; integrating the
        // t density numerically (Simpson) gives p = 0.024896.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [2.0, 4.0, 5.0, 4.0, 7.0];
        let Some(Paired::Test {
            n,
            mean_diff,
            t,
            df,
            p,
        }) = paired(&a, &b)
        else {
            panic!("expected a test");
        };
        assert_eq!(n, 5);
        assert!(close(mean_diff, 1.4, 1e-12));
        assert!(close(t, 3.5, 1e-9));
        assert_eq!(df, 4.0);
        assert!(close(p, 0.024896, 1e-5), "p = {p}");
        // Welch on the same numbers ignores the pairing and finds nothing.
        assert!(!significant_95(&a, &b));
    }

    #[test]
    fn paired_constant_differences_are_exact_not_significant() {
        let e = paired(&[1.0, 5.0, 9.0], &[3.0, 7.0, 11.0]).unwrap();
        assert_eq!(e, Paired::Exact { n: 3, diff: 2.0 });
        assert!(!e.significant_95());
        assert_eq!(e.p(), None);
        assert_eq!(
            paired(&[4.0], &[4.0]),
            Some(Paired::Exact { n: 1, diff: 0.0 })
        );
        assert_eq!(paired(&[4.0], &[6.0]), Some(Paired::Single { diff: 2.0 }));
        assert_eq!(paired(&[1.0, 2.0], &[1.0]), None);
        assert_eq!(paired(&[], &[]), None);
    }

    #[test]
    fn ci_half_width_uses_the_t_quantile() {
        // t_{0.975, 4} = 2.776445; sd of 1..=5 is sqrt(2.5).
        assert!(close(t_crit_95(4.0), 2.776445, 1e-5));
        let xs = [1.0, 2.0, 3.0, 4.0, 5.0];
        let hw = ci95_half_width(&xs).unwrap();
        assert!(close(hw, 2.776445 * 2.5f64.sqrt() / 5f64.sqrt(), 1e-5));
        assert_eq!(ci95_half_width(&[1.0]), None);
    }

    #[test]
    fn quantile_is_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&v, 0.99), 99);
        assert_eq!(nearest_rank(&v, 1.0), 100);
        assert_eq!(nearest_rank(&[], 0.5), 0);
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median_sorted(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median_sorted(&[1.0, 2.0, 4.0, 9.0]), 3.0);
    }

    #[test]
    fn cdf_points_keep_the_ends_and_thin_evenly() {
        assert_eq!(cdf_points(&[3, 1, 2], 5), [1, 2, 3]);
        let v: Vec<u64> = (0..=100).rev().collect();
        assert_eq!(cdf_points(&v, 5), [0, 25, 50, 75, 100]);
    }

    #[test]
    fn sign_test_matches_the_binomial_tail() {
        // 5 of 5: 1/32; 10 of 12: (66 + 12 + 1) / 4096; 9 of 12: 299 / 4096.
        assert!((sign_test_p(5, 5) - 1.0 / 32.0).abs() < 1e-12);
        assert!((sign_test_p(10, 12) - 79.0 / 4096.0).abs() < 1e-12);
        assert!((sign_test_p(9, 12) - 299.0 / 4096.0).abs() < 1e-12);
        assert_eq!(sign_test_p(0, 12), 1.0);
        assert_eq!(sign_test_p(0, 0), 1.0);
        assert!(sign_test_p(4, 4) > 0.05, "4 of 4 is not significant at 5%");
    }
}
