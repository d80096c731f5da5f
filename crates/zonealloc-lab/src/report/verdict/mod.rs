//! Judging a run against the seeds: each [`Claim`] names a seed's published figure, the claim
//! in words, the lab metric it is judged on and a [`Criterion`]; [`judge`] computes the
//! [`Judgement`] (the lab's own figure and a [`Verdict`]) from the run's samples. Nothing here
//! is hard-coded per outcome: change the numbers and the verdict changes with them.
//!
//! The claims themselves (data: seed file, table, value) live with the experiments
//! (`experiments::seeds`); this module only knows how to read a run.
//!
//! # The rules
//! - *Direction* (`variant` against `against`, expected up or down, at least ×`min_ratio`):
//!   a metric deterministic for a seed is judged on the first round's fixed seeds (the
//!   repetition driver adds no seeds to it): its summaries must move the expected way, on
//!   enough seeds for a one-sided sign test at 5% (sample `k` of each variant is repetition
//!   `k`, same seed; 5 of 5, 10 of 12; seeds where it did not move are left out), and by
//!   ×`min_ratio` for `reproduced`; the right way otherwise: `partly`; the wrong way or no change: `not
//!   reproduced`. A timing metric is judged on the 95% confidence interval of its paired ratio
//!   (on the logarithms, since timings change by factors), never on the point alone:
//!   `reproduced` when the whole interval is beyond ×`min_ratio`, `not reproduced` when it is
//!   wholly the wrong way (or, for a sized claim, wholly short of ×`min_ratio` while reaching
//!   no change), `partly` when it is wholly the right way but short of ×`min_ratio`, and
//!   `undecided here` when it straddles ×`min_ratio` or holds both no change and the claimed
//!   effect (an unsized claim: when it holds no change).
//!   A verdict then changes only when the interval moves past a boundary, not with the
//!   point's noise.
//! - *Grows* over a sweep: the same, between the sweep's ends, and the summaries must rise at
//!   every step for `reproduced`.
//! - *Within* ±`tol` (relative), on the 95% confidence interval of the paired relative
//!   difference: `reproduced` when it lies inside the band, `not reproduced` when it lies
//!   wholly outside, and `not measurable here` when it straddles the band's edge, when its
//!   half-width is wider than the band (the run cannot resolve what the seed claims), or when
//!   there is one repetition. An exact difference (the same in every pair, or one seed of a
//!   deterministic metric) is judged as it is.
//! - *Largest under* a limit over a sweep: the sweep's largest step whose summary stays under
//!   the limit (its whole 95% CI), against the seed's; equal: `reproduced`, one step off:
//!   `partly`; a step whose CI holds the limit before the first one over it: `not measurable
//!   here`.
//! - A metric, variant or experiment missing from the run: `not measurable here`, with the
//!   reason (a proxy that could not run, e.g. without valgrind, says why).
//! - `undecided here`, not `not measurable here`, is a timing that this run's noise leaves
//!   open (wherever the rules above say an interval holds a boundary), a tail that some
//!   repetition measured preempted (a p99 ×10 its p50: [`Claim::tail_of`]), a growth far past
//!   the seed's bound, a step of a *largest under* within the seed's machines' spread of the
//!   limit, or a proxy that bounds the seed's change in size ([`Claim::bound`]) outside the
//!   band on its side. It says so rather than flip from run to run; where a deterministic
//!   proxy judges the same entry, that claim decides it.

use super::compare::{self, fmt_value};
use super::{stats, ExperimentReport, MetricKind};

mod claim;
mod criteria;
mod data;
mod noise;
mod tally;
mod within;

pub use claim::{
    Beside, Claim, ClaimKind, Criterion, Evidence, Expect, Judgement, NoiseFloor, Verdict,
};
use data::Data;
pub use data::{band_text, fmt_unit};
use noise::preempted_tail;
pub use noise::PREEMPTED;
pub use tally::{tally, Tally};

use criteria::{direction, highest, largest_under};
use within::within;

/// Judges every claim whose experiment ran (or failed) in `experiments`; claims of
/// experiments not in the run are left out. `failed` names experiments that returned an error.
///
/// A timing claim on an entry that a deterministic proxy claim of the same run decides (an
/// experiment, not a mechanism) stays beside it with its figure, `undecided here`: the proxy
/// judges the entry, and the wall clock's own reading (in the reason) moves with the machine.
pub fn judge_all(
    claims: &[Claim],
    experiments: &[ExperimentReport],
    failed: &[String],
) -> Vec<Judgement> {
    let mut out: Vec<Judgement> = claims
        .iter()
        .filter_map(|c| {
            if let Some(e) = experiments.iter().find(|e| e.result.name == c.experiment) {
                Some(judge(c, e))
            } else if failed.iter().any(|f| f == c.experiment) {
                Some(unmeasurable(
                    c,
                    format!("experiment {} failed", c.experiment),
                ))
            } else {
                None
            }
        })
        .collect();
    noise::beside_proxies(&mut out);
    out
}

fn unmeasurable(c: &Claim, reason: String) -> Judgement {
    Judgement {
        claim: c.clone(),
        lab_figure: "-".to_owned(),
        criterion_text: criterion_text(c),
        verdict: Verdict::NotMeasurable,
        reason,
        evidence: Evidence::default(),
        mainline: None,
    }
}

/// The criterion in words, for the table.
pub fn criterion_text(c: &Claim) -> String {
    criterion_text_for(c, false)
}

/// The criterion in words; `exact`: the run's figure was an exact count (one sample, or the
/// same difference on every seed), which no sign test or interval describes.
fn criterion_text_for(c: &Claim, exact: bool) -> String {
    let consistency = if exact {
        "an exact count (the same on every run of this build)"
    } else if c.deterministic {
        "the seeds agree (sign test, one-sided p < 0.05)"
    } else {
        "the paired ratio's 95% CI clears it"
    };
    match &c.criterion {
        Criterion::Direction {
            expect, min_ratio, ..
        } => {
            let way = match expect {
                Expect::Increase => "higher",
                Expect::Decrease => "lower",
            };
            if *min_ratio > 1.0 {
                format!("{way} by ≥ ×{min_ratio}, {consistency}")
            } else {
                format!("{way}, {consistency}")
            }
        }
        Criterion::Grows {
            sweep,
            min_ratio,
            max_ratio,
            ..
        } => format!(
            "rises at every step {}..{}, {} end to end, {consistency}",
            sweep.first().copied().unwrap_or("?"),
            sweep.last().copied().unwrap_or("?"),
            if max_ratio.is_finite() {
                format!("×{min_ratio}..×{max_ratio}")
            } else {
                format!("≥ ×{min_ratio}")
            }
        ),
        Criterion::Within { lo, hi, .. } => {
            let band = band_text(*lo, *hi);
            if exact {
                format!("in the seed's range {band}, {consistency}")
            } else {
                format!(
                    "in the seed's range {band} (95% CI of the paired log ratio; not measurable when wider or astride an edge)"
                )
            }
        }
        Criterion::Highest { others, .. } => {
            format!("higher than each of {}, {consistency}", others.join(", "))
        }
        Criterion::LargestUnder {
            limit, expected, ..
        } => format!(
            "largest step under {} (its whole 95% CI) is {}",
            fmt_unit(*limit, unit_hint(c)),
            expected.join(" or ")
        ),
        Criterion::NotModelled { .. } => "-".to_owned(),
    }
}
fn unit_hint(c: &Claim) -> &'static str {
    // Hold and drain times are the only limits the seeds state; all are in ns in the lab.
    if c.criterion.metric().contains("hold") || c.criterion.metric().contains("drain") {
        "ns"
    } else {
        ""
    }
}
/// Judges one claim on one experiment's results.
pub fn judge(c: &Claim, e: &ExperimentReport) -> Judgement {
    if let Criterion::NotModelled { why } = c.criterion {
        return Judgement {
            verdict: Verdict::NotModelled,
            ..unmeasurable(c, why.to_owned())
        };
    }
    let metric = c.criterion.metric();
    let Some(def) = e.result.metrics.iter().find(|m| m.name == metric) else {
        // A proxy that could not run says why (`config.not_measured`).
        let why = match e.result.config["not_measured"][metric].as_str() {
            Some(why) => format!("'{metric}' could not be measured: {why}"),
            None => format!("metric '{metric}' is not in this run of {}", c.experiment),
        };
        return unmeasurable(c, why);
    };
    let data = Data { e, def };
    for v in c.criterion.variants() {
        if data.values(v).is_empty() {
            return unmeasurable(
                c,
                format!("variant '{v}' has no '{metric}' samples in this run"),
            );
        }
    }
    let (lab_figure, verdict, mut reason, evidence) = outcome(c, &data, &c.criterion);
    let mut verdict = verdict;
    if let Some(why) = preempted_tail(c, e) {
        verdict = Verdict::Undecided;
        reason = why;
    }
    if let Some(floor) = &c.noise_floor {
        let xs = compare::values(&e.result, floor.metric, floor.variant);
        if let Some(m) = stats::mean(&xs).filter(|m| *m >= floor.at_least) {
            verdict = Verdict::Undecided;
            reason = format!(
                "{} ({} under {}: {}, at least {})",
                floor.why,
                floor.metric,
                floor.variant,
                fmt_value(Some(m)),
                fmt_value(Some(floor.at_least))
            );
        }
    }
    if let (Verdict::NotMeasurable | Verdict::Undecided, Some(caveat)) = (verdict, c.caveat) {
        reason = format!("{reason}; {caveat}");
    }
    let exact = c.deterministic && matches!(evidence.test.as_str(), "exact" | "single pair");
    let mainline = c.mainline.and_then(|m| {
        let own = own_variant(&c.criterion)?;
        let crit = c.criterion.with_variant(own, m)?;
        if data.values(m).is_empty() {
            return None;
        }
        let (lab_figure, verdict, _, _) = outcome(c, &data, &crit);
        Some(Beside {
            variant: m,
            lab_figure,
            verdict,
        })
    });
    Judgement {
        claim: c.clone(),
        lab_figure,
        criterion_text: criterion_text_for(c, exact),
        verdict,
        reason,
        evidence,
        mainline,
    }
}

/// The variant a criterion judges (the one with the seed's change), where it has one.
fn own_variant(c: &Criterion) -> Option<&'static str> {
    match c {
        Criterion::Direction { variant, .. }
        | Criterion::Within { variant, .. }
        | Criterion::Highest { variant, .. } => Some(variant),
        _ => None,
    }
}

/// `crit` evaluated on `data` (the claim supplies its consistency rule and resolution).
fn outcome(c: &Claim, data: &Data<'_>, crit: &Criterion) -> criteria::Outcome {
    match crit {
        Criterion::Direction {
            against,
            variant,
            expect,
            min_ratio,
            ..
        } => direction(c, data, against, &[variant], *expect, *min_ratio),
        Criterion::Grows {
            sweep,
            min_ratio,
            max_ratio,
            ..
        } => {
            let (first, rest) = sweep.split_first().expect("a sweep has variants");
            let out = direction(c, data, first, rest, Expect::Increase, *min_ratio);
            criteria::at_most(c, out, data, first, rest, *max_ratio)
        }
        Criterion::Within {
            against,
            variant,
            lo,
            hi,
            ..
        } => within(c, data, against, variant, *lo, *hi),
        Criterion::Highest {
            variant, others, ..
        } => highest(c, data, variant, others),
        Criterion::LargestUnder {
            sweep,
            limit,
            expected,
            ..
        } => largest_under(c, data, sweep, *limit, expected),
        Criterion::NotModelled { why } => (
            "-".into(),
            Verdict::NotModelled,
            (*why).to_owned(),
            Evidence::default(),
        ),
    }
}

/// Whether a metric is a timing (varies from run to run) rather than a count.
pub fn is_timing(kind: MetricKind) -> bool {
    matches!(kind, MetricKind::Rate | MetricKind::Latency)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod undecided_tests;
