//! compare-kernels style comparisons: per metric and variant, the summary (harmonic mean for
//! rates, mean for latencies and counts), the spread, the change against the baseline and
//! whether it is significant at 95%.
//!
//! The test follows the design ([`Design`]): where sample `k` of every variant comes from
//! repetition `k` (the same random seed, run back to back), the variants are compared by
//! Student's paired t-test on the differences; otherwise by Welch's unpaired test. A
//! difference with no variance at all (deterministic runs) is reported as *exact*: it is a
//! fact of those seeds, not a test, and never gets the significance mark by construction.

use serde::Serialize;

use super::stats::{self, Direction};
// The verdicts' intervals print ratios by the change notation's rule.
pub use super::change::ratio as fmt_ratio;
use super::{ExperimentResult, MetricDef, MetricKind};

/// The significance test, as the report names it.
pub const SIGNIFICANCE_TEST: &str =
    "Welch's two-sample t-test (unequal variances), two-sided, significant at 95% (p < 0.05)";

/// The significance test of a paired design, as the report names it.
pub const PAIRED_TEST: &str = "Student's paired t-test on the per-repetition differences \
     (repetition k of every variant ran on the same seed), two-sided, significant at 95% \
     (p < 0.05); differences without variance are reported as exact, without a test";

/// How the samples of the variants relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Design {
    /// Sample `k` of every variant is repetition `k` (same seed): paired t-test.
    PairedByRepetition,
    /// Independent samples: Welch's test.
    Independent,
}

impl Design {
    /// The test's description for the report.
    pub fn test_name(self) -> &'static str {
        match self {
            Design::PairedByRepetition => PAIRED_TEST,
            Design::Independent => SIGNIFICANCE_TEST,
        }
    }
}

/// Which test decided a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TestUsed {
    /// The baseline itself, or too few samples for any test.
    None,
    /// The difference has no variance: exact, no test.
    Exact,
    /// Student's paired t-test.
    Paired,
    /// Welch's unpaired t-test.
    Welch,
}

/// Which summary a metric uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum SummaryKind {
    /// Harmonic mean (rates).
    Hmean,
    /// Arithmetic mean (latencies, counts, and rates with a non-positive sample).
    Amean,
}

impl SummaryKind {
    /// Row label, as compare-kernels prints it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Hmean => "Hmean",
            Self::Amean => "Amean",
        }
    }
}

/// One variant's numbers for one metric.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// The variant.
    pub variant: String,
    /// Number of samples.
    pub n: usize,
    /// The summary value (None without samples).
    pub summary: Option<f64>,
    /// Sample standard deviation.
    pub stddev: Option<f64>,
    /// Coefficient of variation, percent.
    pub coeffvar: Option<f64>,
    /// % change of the summary against the baseline, positive = improvement (compare-kernels'
    /// sign, kept for `results.json`; the tables print [`change`](super::change)'s notation).
    pub pct_change: Option<f64>,
    /// Welch's two-sided p-value against the baseline (None for the baseline itself or with
    /// fewer than two samples on either side).
    pub p_value: Option<f64>,
    /// `p_value < 0.05`.
    pub significant: bool,
    /// How the difference against the baseline was judged.
    pub test: TestUsed,
}

/// One metric compared across all variants.
#[derive(Clone, Debug, Serialize)]
pub struct MetricComparison {
    /// The metric.
    pub metric: MetricDef,
    /// How it is summarised.
    pub summary_kind: SummaryKind,
    /// One cell per variant, baseline first.
    pub cells: Vec<Cell>,
}

/// The direction in which a metric improves.
pub fn direction(kind: MetricKind) -> Direction {
    match kind {
        MetricKind::Rate => Direction::HigherIsBetter,
        MetricKind::Latency => Direction::LowerIsBetter,
        MetricKind::Count { higher_is_better } => {
            if higher_is_better {
                Direction::HigherIsBetter
            } else {
                Direction::LowerIsBetter
            }
        }
    }
}

/// The variants in table order: the baseline first, then the others as the experiment listed
/// them, plus any variant that only appears in the samples.
pub fn variant_order(r: &ExperimentResult) -> Vec<String> {
    let mut out = vec![r.baseline.clone()];
    let listed = r.variants.iter().map(String::as_str);
    let sampled = r.samples.iter().map(|s| s.variant.as_str());
    for v in listed.chain(sampled) {
        if !out.iter().any(|o| o == v) {
            out.push(v.to_owned());
        }
    }
    out
}

/// Compares every metric of `r` across its variants with Welch's test (independent samples).
pub fn compare(r: &ExperimentResult) -> Vec<MetricComparison> {
    compare_with(r, Design::Independent)
}

/// The finite samples of `metric` for `variant`, in the order the producer recorded them
/// (repetition order).
pub fn values(r: &ExperimentResult, metric: &str, variant: &str) -> Vec<f64> {
    r.samples_of(variant, metric)
        .map(|s| s.value)
        .filter(|v| v.is_finite())
        .collect()
}

/// The summary of `xs` for a metric of `kind`: the harmonic mean of rates (the mean where it
/// is undefined), the mean otherwise.
pub fn summarise(kind: MetricKind, xs: &[f64]) -> Option<f64> {
    match kind {
        MetricKind::Rate => stats::hmean(xs).or_else(|| stats::mean(xs)),
        _ => stats::mean(xs),
    }
}

/// The test of `xs` against the baseline `base` under `design`: `(test, p)`.
fn judge(base: &[f64], xs: &[f64], design: Design) -> (TestUsed, Option<f64>) {
    if design == Design::PairedByRepetition && base.len() == xs.len() {
        return match stats::paired(base, xs) {
            Some(stats::Paired::Exact { .. }) => (TestUsed::Exact, None),
            Some(stats::Paired::Test { p, .. }) => (TestUsed::Paired, Some(p)),
            Some(stats::Paired::Single { .. }) | None => (TestUsed::None, None),
        };
    }
    let constant = |v: &[f64]| v.len() >= 2 && v.iter().all(|&x| x == v[0]);
    if constant(base) && constant(xs) {
        return (TestUsed::Exact, None);
    }
    match stats::welch(base, xs) {
        Some(w) => (TestUsed::Welch, Some(w.p)),
        None => (TestUsed::None, None),
    }
}

/// Compares every metric of `r` across its variants, testing as `design` says.
pub fn compare_with(r: &ExperimentResult, design: Design) -> Vec<MetricComparison> {
    let variants = variant_order(r);
    r.metrics
        .iter()
        .map(|m| {
            let values = |v: &str| values(r, &m.name, v);
            let base = values(&r.baseline);
            let summary_kind = match m.kind {
                MetricKind::Rate if stats::hmean(&base).is_some() || base.is_empty() => {
                    SummaryKind::Hmean
                }
                _ => SummaryKind::Amean,
            };
            let summarise = |xs: &[f64]| match summary_kind {
                SummaryKind::Hmean => stats::hmean(xs).or_else(|| stats::mean(xs)),
                SummaryKind::Amean => stats::mean(xs),
            };
            let base_summary = summarise(&base);
            let cells = variants
                .iter()
                .map(|v| {
                    let xs = values(v);
                    let summary = summarise(&xs);
                    let is_base = *v == r.baseline;
                    let (test, p_value) = if is_base {
                        (TestUsed::None, None)
                    } else {
                        judge(&base, &xs, design)
                    };
                    Cell {
                        variant: v.clone(),
                        n: xs.len(),
                        summary,
                        stddev: stats::stddev(&xs),
                        coeffvar: stats::coeffvar(&xs),
                        pct_change: match (base_summary, summary) {
                            (Some(b), Some(s)) => stats::pct_change(b, s, direction(m.kind)),
                            _ => None,
                        },
                        p_value,
                        significant: p_value.is_some_and(|p| p < 0.05),
                        test,
                    }
                })
                .collect();
            MetricComparison {
                metric: m.clone(),
                summary_kind,
                cells,
            }
        })
        .collect()
}

/// Formats a value for a table: enough digits to compare, no exponent for everyday sizes.
pub fn fmt_value(v: Option<f64>) -> String {
    match v {
        None => "n/a".to_owned(),
        Some(v) if !v.is_finite() => format!("{v}"),
        Some(v) if v != 0.0 && (v.abs() >= 1e12 || v.abs() < 1e-3) => format!("{v:.3e}"),
        Some(v) if v.abs() >= 1000.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
    }
}

/// A cell's change against the baseline as every lab table prints it: the change notation
/// ([`change::cell`](super::change::cell), e.g. `(-49.75% better)`), written `*-49.75% better*`
/// where it is significant at 95% (compare-kernels' mark) and followed by `exact` where every
/// pair differs alike. Empty for the baseline's own cell (`i == 0`) and past the cells.
pub fn change_text(m: &MetricComparison, i: usize) -> String {
    let (Some(base), Some(c)) = (m.cells.first(), m.cells.get(i)) else {
        return String::new();
    };
    if i == 0 {
        return String::new();
    }
    let better = super::change::Better::of(m.metric.kind);
    let text = super::change::cell(base.summary, c.summary, better);
    match c.test {
        TestUsed::Exact => format!("{text} exact"),
        _ if c.significant => format!("*{}*", &text[1..text.len() - 1]),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Sample;

    fn result(samples: &[(&str, f64)], kind: MetricKind) -> ExperimentResult {
        ExperimentResult {
            name: "t".into(),
            seed: "000".into(),
            change: "c".into(),
            baseline: "off".into(),
            variants: vec!["off".into(), "on".into()],
            metrics: vec![MetricDef {
                name: "m".into(),
                unit: "u".into(),
                kind,
            }],
            samples: samples
                .iter()
                .enumerate()
                .map(|(i, &(v, x))| Sample {
                    variant: v.into(),
                    metric: "m".into(),
                    repetition: samples[..i].iter().filter(|s| s.0 == v).count(),
                    seed: None,
                    value: x,
                })
                .collect(),
            tables: vec![],
            plots: vec![],
            expected_shape: String::new(),
            config: serde_json::Value::Null,
            oversubscribed: false,
        }
    }

    #[test]
    fn rates_use_hmean_and_faster_is_positive() {
        let r = result(
            &[("off", 1.0), ("off", 2.0), ("on", 4.0), ("on", 4.0)],
            MetricKind::Rate,
        );
        let c = &compare(&r)[0];
        assert_eq!(c.summary_kind, SummaryKind::Hmean);
        assert!((c.cells[0].summary.unwrap() - 4.0 / 3.0).abs() < 1e-12);
        assert!((c.cells[1].pct_change.unwrap() - 200.0).abs() < 1e-9);
    }

    #[test]
    fn latencies_use_the_mean_and_lower_is_positive() {
        let r = result(
            &[("off", 10.0), ("off", 10.2), ("on", 5.0), ("on", 5.1)],
            MetricKind::Latency,
        );
        let c = &compare(&r)[0];
        assert_eq!(c.summary_kind, SummaryKind::Amean);
        assert!(c.cells[1].pct_change.unwrap() > 49.0);
        assert!(c.cells[1].significant);
        assert!(!c.cells[0].significant);
    }

    #[test]
    fn paired_design_finds_what_welch_misses_and_exact_is_never_starred() {
        // Repetition k of both variants shares a seed: on is lower by 1 in every pair but
        // one, while the seeds themselves spread widely.
        let off = [10.0, 20.0, 30.0, 40.0, 50.0];
        let on = [9.0, 19.0, 29.5, 39.0, 49.0];
        let mut samples: Vec<(&str, f64)> = off.iter().map(|&x| ("off", x)).collect();
        samples.extend(on.iter().map(|&x| ("on", x)));
        let r = result(&samples, MetricKind::Latency);
        let welch = &compare(&r)[0].cells[1];
        assert_eq!(welch.test, TestUsed::Welch);
        assert!(!welch.significant);
        let paired = &compare_with(&r, Design::PairedByRepetition)[0].cells[1];
        assert_eq!(paired.test, TestUsed::Paired);
        assert!(paired.significant, "p = {:?}", paired.p_value);
        // Every pair differs by exactly 2: exact, no p-value, no star.
        let r = result(
            &[("off", 1.0), ("off", 5.0), ("on", 3.0), ("on", 7.0)],
            MetricKind::Latency,
        );
        let c = &compare_with(&r, Design::PairedByRepetition)[0].cells[1];
        assert_eq!(c.test, TestUsed::Exact);
        assert!(!c.significant);
        assert_eq!(c.p_value, None);
        // Zero variance on both sides is exact under Welch's design too.
        let r = result(
            &[("off", 1.0), ("off", 1.0), ("on", 2.0), ("on", 2.0)],
            MetricKind::Latency,
        );
        let c = &compare(&r)[0].cells[1];
        assert_eq!(c.test, TestUsed::Exact);
        assert!(!c.significant);
    }

    #[test]
    fn missing_samples_give_na_not_panics() {
        let r = result(
            &[],
            MetricKind::Count {
                higher_is_better: true,
            },
        );
        let c = &compare(&r)[0];
        assert_eq!(c.cells.len(), 2);
        assert_eq!(fmt_value(c.cells[1].summary), "n/a");
        let better = crate::report::change::Better::of(c.metric.kind);
        assert_eq!(
            crate::report::change::cell(c.cells[0].summary, c.cells[1].summary, better),
            "(n/a)"
        );
    }
}
