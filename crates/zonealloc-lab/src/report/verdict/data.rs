//! What the run holds for one metric ([`Data`]), and how its figures print.

use crate::report::compare::{self, fmt_value, summarise};
use crate::report::{ExperimentReport, MetricDef};

/// A band of relative changes, e.g. `-2.04%..+1.39%`.
pub fn band_text(lo: f64, hi: f64) -> String {
    format!("{:+.2}%..{:+.2}%", lo * 100.0, hi * 100.0)
}

/// A value with its unit, nanoseconds shown as µs or ms where that reads better.
pub fn fmt_unit(v: f64, unit: &str) -> String {
    match unit {
        "ns" if v.abs() >= 1e6 => format!("{:.2} ms", v / 1e6),
        "ns" if v.abs() >= 1e3 => format!("{:.2} µs", v / 1e3),
        "" => fmt_value(Some(v)),
        u => format!("{} {u}", fmt_value(Some(v))),
    }
}

/// What the run holds for one metric.
pub(super) struct Data<'a> {
    pub(super) e: &'a ExperimentReport,
    pub(super) def: &'a MetricDef,
}

impl Data<'_> {
    pub(super) fn values(&self, variant: &str) -> Vec<f64> {
        compare::values(&self.e.result, &self.def.name, variant)
    }
    pub(super) fn summary(&self, variant: &str) -> Option<f64> {
        summarise(self.def.kind, &self.values(variant))
    }
    pub(super) fn fmt(&self, v: f64) -> String {
        fmt_unit(v, &self.def.unit)
    }
}
