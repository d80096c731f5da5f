//! compare-kernels style comparisons: per metric and variant, the summary (harmonic mean for
//! rates, mean for latencies and counts), the spread, the % change against the baseline and
//! whether Welch's t-test calls the difference significant at 95%.

use serde::Serialize;

use super::stats::{self, Direction};
use super::{ExperimentResult, MetricDef, MetricKind};

/// The significance test, as the report names it.
pub const SIGNIFICANCE_TEST: &str =
    "Welch's two-sample t-test (unequal variances), two-sided, significant at 95% (p < 0.05)";

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
    /// % change of the summary against the baseline, positive = improvement.
    pub pct_change: Option<f64>,
    /// Welch's two-sided p-value against the baseline (None for the baseline itself or with
    /// fewer than two samples on either side).
    pub p_value: Option<f64>,
    /// `p_value < 0.05`.
    pub significant: bool,
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

/// Compares every metric of `r` across its variants.
pub fn compare(r: &ExperimentResult) -> Vec<MetricComparison> {
    let variants = variant_order(r);
    r.metrics
        .iter()
        .map(|m| {
            let values = |v: &str| -> Vec<f64> {
                r.samples
                    .iter()
                    .filter(|s| s.metric == m.name && s.variant == v && s.value.is_finite())
                    .map(|s| s.value)
                    .collect()
            };
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
                    let p_value = if is_base {
                        None
                    } else {
                        stats::welch(&base, &xs).map(|w| w.p)
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
                        significant: !is_base && stats::significant_95(&base, &xs),
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

/// Formats a % change: `(+1.23%)`, or `(n/a)`.
pub fn fmt_pct(p: Option<f64>) -> String {
    match p {
        Some(p) => format!("({p:+.2}%)"),
        None => "(n/a)".to_owned(),
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
                .map(|&(v, x)| Sample {
                    variant: v.into(),
                    metric: "m".into(),
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
        assert_eq!(fmt_pct(c.cells[1].pct_change), "(n/a)");
    }
}
