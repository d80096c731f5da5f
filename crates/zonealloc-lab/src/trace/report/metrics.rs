//! The replay's metrics: their definitions and one sample per variant and metric (a replay is
//! deterministic).

use super::diff::pct;
use crate::report::{MetricDef, MetricKind, Sample};
use crate::trace::replay::tally::{self, KINDS};
use crate::trace::replay::{ReplayRun, Replayer};

const M_HIT: &str = "PCP hit rate";
const M_LOCK: &str = "zone-lock acquisitions";
const M_FAIL: &str = "allocation failures";
const M_UNUSABLE_MEAN: &str = "unusable index order-9 (mean)";
const M_UNUSABLE_END: &str = "unusable index order-9 (end)";
const M_REFILLS: &str = "PCP refill blocks";
const M_DRAINS: &str = "PCP drain blocks";
const M_EXTFRAG: &str = "extfrag fallbacks";
const M_TOP: &str = "allocations of the most reused frame";

/// The metric name of the fidelity figure of one event kind.
pub fn fidelity_metric(kind: &str) -> String {
    format!("{kind} off the kernel")
}

/// The metrics, in report order: the headline figures, then one fidelity figure per event
/// kind.
pub(super) fn definitions() -> Vec<MetricDef> {
    let count = |higher| MetricKind::Count {
        higher_is_better: higher,
    };
    let mut defs = vec![
        (M_HIT.to_owned(), "%", count(true)),
        (M_LOCK.to_owned(), "acquisitions", count(false)),
        (M_FAIL.to_owned(), "allocations", count(false)),
        (M_UNUSABLE_MEAN.to_owned(), "%", count(false)),
        (M_UNUSABLE_END.to_owned(), "%", count(false)),
        (M_REFILLS.to_owned(), "blocks", count(false)),
        (M_DRAINS.to_owned(), "blocks", count(false)),
        (M_EXTFRAG.to_owned(), "fallbacks", count(false)),
        (M_TOP.to_owned(), "allocations", count(false)),
    ];
    for (kind, _) in KINDS {
        defs.push((fidelity_metric(kind), "%", count(false)));
    }
    defs.into_iter()
        .map(|(name, unit, kind)| MetricDef {
            name,
            unit: unit.to_owned(),
            kind,
        })
        .collect()
}

/// Every variant's samples, in [`definitions`]' order.
pub(super) fn samples(run: &ReplayRun) -> Vec<Sample> {
    let mut samples = Vec::new();
    for (r, reused) in run.replayers.iter().zip(&run.reused.ours) {
        for (metric, value) in values(run, r, reused) {
            samples.push(Sample {
                variant: r.variant.name.clone(),
                metric,
                repetition: 0,
                seed: None,
                value,
            });
        }
    }
    samples
}

/// One variant's metrics.
fn values(run: &ReplayRun, r: &Replayer, reused: &[(u64, u32)]) -> Vec<(String, f64)> {
    let c = &r.counts;
    let (hits, misses, locks) = r.end_counts;
    // The /proc set-up's own allocations are not the trace's.
    let (sh, sm, sl) = r.setup_counts;
    let (hits, misses, locks) = (hits - sh, misses - sm, locks - sl);
    let unusable9: Vec<f64> = r
        .frag
        .iter()
        .map(|s| f64::from(s.unusable[1]) / 10.0)
        .collect();
    let mean9 = unusable9.iter().sum::<f64>() / unusable9.len().max(1) as f64;
    let mut values = vec![
        (M_HIT.to_owned(), pct(hits, hits + misses)),
        (M_LOCK.to_owned(), locks as f64),
        (M_FAIL.to_owned(), c.alloc_failures as f64),
        (M_UNUSABLE_MEAN.to_owned(), mean9),
        (
            M_UNUSABLE_END.to_owned(),
            unusable9.last().copied().unwrap_or(0.0),
        ),
        (M_REFILLS.to_owned(), r.ours.total(|t| t.refills) as f64),
        (M_DRAINS.to_owned(), r.ours.total(|t| t.drains) as f64),
        (M_EXTFRAG.to_owned(), c.extfrag as f64),
        (
            M_TOP.to_owned(),
            reused.first().map_or(0.0, |t| f64::from(t.1)),
        ),
    ];
    for (kind, f) in KINDS {
        if let Some(v) = tally::fidelity(&r.ours, &run.kernel.grid, f) {
            values.push((fidelity_metric(kind), v));
        }
    }
    values
}
