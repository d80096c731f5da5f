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

use serde::Serialize;

use super::compare::{self, fmt_value, summarise};
use super::{stats, ExperimentReport, MetricDef, MetricKind};

mod criteria;
mod noise;
mod tally;

use noise::preempted_tail;
pub use noise::PREEMPTED;
pub use tally::{tally, Tally};

use criteria::{direction, highest, largest_under, within};

/// The outcome of a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// The lab shows the seed's effect by the criterion.
    #[serde(rename = "reproduced")]
    Reproduced,
    /// The direction is right but the size, the consistency or the significance is not there.
    #[serde(rename = "partly")]
    Partly,
    /// The lab shows no such effect, or the opposite.
    #[serde(rename = "not reproduced")]
    NotReproduced,
    /// The run has no figure to judge (see the reason).
    #[serde(rename = "not measurable here")]
    NotMeasurable,
    /// A timing whose 95% confidence interval straddles a boundary of the claim (or whose
    /// tail is the machine's, not ours): this run's noise decides nothing, and the verdict
    /// says so rather than flip from run to run. Where a deterministic proxy judges the same
    /// entry of the seed, it decides.
    #[serde(rename = "undecided here")]
    Undecided,
    /// The seed's entry is not modelled by the lab (see the reason).
    #[serde(rename = "not modelled")]
    NotModelled,
}

impl Verdict {
    /// The word the tables print.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::Partly => "partly",
            Verdict::NotReproduced => "not reproduced",
            Verdict::NotMeasurable => "not measurable here",
            Verdict::Undecided => "undecided here",
            Verdict::NotModelled => "not modelled",
        }
    }
}

/// Which way a claim expects a metric to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    /// Larger under the variant.
    Increase,
    /// Smaller under the variant.
    Decrease,
}

/// How a claim is judged.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Criterion {
    /// `variant` moves `metric` the `expect` way against `against`, by at least ×`min_ratio`.
    Direction {
        /// The metric's name, as the experiment defines it.
        metric: &'static str,
        /// The variant compared against (usually the baseline).
        against: &'static str,
        /// The variant with the seed's change.
        variant: &'static str,
        /// The expected direction.
        expect: Expect,
        /// The least factor (1.0: any change the right way).
        min_ratio: f64,
    },
    /// `metric` grows at every step of `sweep` and by ×`min_ratio`..=×`max_ratio` end to end.
    Grows {
        /// The metric.
        metric: &'static str,
        /// Variants in sweep order.
        sweep: &'static [&'static str],
        /// The least end-to-end factor.
        min_ratio: f64,
        /// The most (`f64::INFINITY`: no bound): growth far past what the seed describes is
        /// not its effect (a hold's tail that grows a thousandfold is the machine preempting
        /// the holder).
        max_ratio: f64,
    },
    /// `variant / against - 1` lies in the band `lo..=hi` (fractions: the seed's own published
    /// range, e.g. -0.0204..=0.0139), judged on the logarithm of the paired ratio.
    Within {
        /// The metric.
        metric: &'static str,
        /// The reference variant.
        against: &'static str,
        /// The variant with the seed's change.
        variant: &'static str,
        /// The band's low edge (a relative change, e.g. -0.0204 for -2.04%).
        lo: f64,
        /// The band's high edge.
        hi: f64,
    },
    /// `variant` is higher than every one of `others` ("the highest of the three"): the
    /// direction rule against each, the weakest verdict of them.
    Highest {
        /// The metric.
        metric: &'static str,
        /// The variant claimed highest.
        variant: &'static str,
        /// Every other variant it is claimed to beat.
        others: &'static [&'static str],
    },
    /// The seed's entry is not modelled: listed with the reason, never judged.
    NotModelled {
        /// Why.
        why: &'static str,
    },
    /// The last step of `sweep` (variant, step label) whose summary stays under `limit`, as
    /// long as every step before it does too; the seed's answers are `expected`.
    LargestUnder {
        /// The metric.
        metric: &'static str,
        /// Variants and their step labels, in sweep order.
        sweep: &'static [(&'static str, &'static str)],
        /// The limit, in the metric's unit.
        limit: f64,
        /// The seed's answers (step labels: one, or the range its machines gave).
        expected: &'static [&'static str],
    },
}

impl Criterion {
    /// The metric the criterion reads.
    pub fn metric(&self) -> &'static str {
        match self {
            Criterion::Direction { metric, .. }
            | Criterion::Grows { metric, .. }
            | Criterion::Within { metric, .. }
            | Criterion::Highest { metric, .. }
            | Criterion::LargestUnder { metric, .. } => metric,
            Criterion::NotModelled { .. } => "",
        }
    }

    /// The variants whose samples the criterion reads.
    pub fn variants(&self) -> Vec<&'static str> {
        match self {
            Criterion::Direction {
                against, variant, ..
            }
            | Criterion::Within {
                against, variant, ..
            } => vec![against, variant],
            Criterion::Grows { sweep, .. } => sweep.to_vec(),
            Criterion::Highest {
                variant, others, ..
            } => std::iter::once(*variant)
                .chain(others.iter().copied())
                .collect(),
            Criterion::LargestUnder { sweep, .. } => sweep.iter().map(|s| s.0).collect(),
            Criterion::NotModelled { .. } => Vec::new(),
        }
    }

    /// The same criterion with the judged variant `from` replaced by `to` (the seed's rule
    /// swapped for mainline's); `None` where the criterion has no such variant.
    pub fn with_variant(&self, from: &str, to: &'static str) -> Option<Criterion> {
        let mut c = self.clone();
        match &mut c {
            Criterion::Direction { variant, .. }
            | Criterion::Within { variant, .. }
            | Criterion::Highest { variant, .. }
                if *variant == from =>
            {
                *variant = to;
            }
            _ => return None,
        }
        Some(c)
    }
}

/// What a claim is evidence of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimKind {
    /// The seed's measured outcome: the model could have failed it.
    Experiment,
    /// True of any faithful implementation of the change (the lock is taken, the lists are
    /// bypassed): still checked so that a regression is caught, but not counted as a
    /// reproduction.
    Mechanism,
}

impl ClaimKind {
    /// The word the tables print.
    pub fn label(self) -> &'static str {
        match self {
            ClaimKind::Experiment => "experiment",
            ClaimKind::Mechanism => "mechanism",
        }
    }
}

/// One published figure of a seed and the claim the lab judges it by.
#[derive(Clone, Debug, Serialize)]
pub struct Claim {
    /// The seed's number, e.g. `001`.
    pub seed: &'static str,
    /// The seed file, e.g. `001_3feb33a812804082.txt`.
    pub seed_file: &'static str,
    /// Where in the seed file the figure stands (table and line).
    pub source: &'static str,
    /// The lab experiment that reproduces it.
    pub experiment: &'static str,
    /// The entry of the seed's text (a table or a stated result, see
    /// `experiments::seeds::items`) this claim judges.
    pub item: &'static str,
    /// Experiment or mechanism.
    pub kind: ClaimKind,
    /// The seed's own words (or figures) the claim rests on, quoted.
    pub quote: &'static str,
    /// The seed's `Link:` lines: where a reader opens the source.
    pub links: &'static [&'static str],
    /// Where the lab's figure is a deterministic proxy, what it stands for (an instruction
    /// count for a throughput, a step count for a wait); `None` for a direct measure.
    pub proxy: Option<&'static str>,
    /// Where the proxy's change bounds the seed's in size (the seed's lies between no change
    /// and the proxy's, e.g. the lock's share of a fault that lacks the kernel fault's other
    /// work), why: a bound outside the band that leaves the seed's change possibly inside is
    /// `undecided here`, not `not reproduced`.
    pub bound: Option<&'static str>,
    /// Where the kernel later changed the seed's rule: the variant with mainline's rule, judged
    /// by the same criterion beside the seed's (the claim's own variant is the seed's rule).
    pub mainline: Option<&'static str>,
    /// The relative resolution of the metric where it is read from a histogram (e.g. 1/16):
    /// a confidence interval is never shown narrower than it.
    pub resolution: Option<f64>,
    /// The claim, in words.
    pub claim: &'static str,
    /// The seed's figure, as published.
    pub seed_figure: &'static str,
    /// Whether the metric is deterministic for a given seed (counts, indices): then every
    /// seed must agree; otherwise (timings) a paired t-test decides.
    pub deterministic: bool,
    /// What the lab's measurement of this claim cannot show, appended to the reason of a
    /// `not measurable here`.
    pub caveat: Option<&'static str>,
    /// A figure of the run that says when the claim's metric is the machine's rather than
    /// ours: at or over its floor, the claim is `not measurable here`.
    pub noise_floor: Option<NoiseFloor>,
    /// For a tail (a p99), its median metric: a repetition whose tail is at least
    /// [`PREEMPTED`] times its own median (same variant, same repetition) measured a holder
    /// the scheduler preempted, the machine's wait rather than ours; where the claim reads one,
    /// it is `undecided here`.
    pub tail_of: Option<&'static str>,
    /// How it is judged.
    pub criterion: Criterion,
}

/// When a run's own figure shows that a claim's metric measures the machine (its scheduler)
/// rather than the allocator, e.g. a p99 when more than 1% of the operations waited in the
/// run queue.
#[derive(Clone, Debug, Serialize)]
pub struct NoiseFloor {
    /// The metric that shows it (a percentage or count of the same experiment).
    pub metric: &'static str,
    /// The variant it is read on.
    pub variant: &'static str,
    /// The mean over repetitions at or over which the claim is not measurable.
    pub at_least: f64,
    /// Why, in words (the figure is appended).
    pub why: &'static str,
}

/// The paired evidence behind a judgement.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Evidence {
    /// Pairs (repetitions) compared.
    pub pairs: usize,
    /// Pairs that moved the expected way (direction criteria).
    pub agreeing: usize,
    /// The test: `exact`, `paired t`, `single pair` or `none`.
    pub test: String,
    /// The t statistic of the paired test.
    pub t: Option<f64>,
    /// Its two-sided p-value.
    pub p: Option<f64>,
    /// The 95% confidence interval of the paired ratio (variant / reference) of a timing
    /// direction claim, low to high: what its verdict is read from.
    pub ratio_ci95: Option<[f64; 2]>,
}

/// A claim judged on one run.
#[derive(Clone, Debug, Serialize)]
pub struct Judgement {
    /// The claim.
    #[serde(flatten)]
    pub claim: Claim,
    /// The lab's figure, in the seed's form.
    pub lab_figure: String,
    /// The criterion, in words.
    pub criterion_text: String,
    /// The verdict.
    pub verdict: Verdict,
    /// Why, in one line (always set for `not measurable here` and `partly`).
    pub reason: String,
    /// The statistics behind it.
    pub evidence: Evidence,
    /// The same criterion on mainline's rule, where the claim has one (see
    /// [`Claim::mainline`]): its figure and verdict, shown beside the seed's.
    pub mainline: Option<Beside>,
}

/// A claim's criterion judged on another variant, shown beside the judged one.
#[derive(Clone, Debug, Serialize)]
pub struct Beside {
    /// The variant.
    pub variant: &'static str,
    /// Its figure.
    pub lab_figure: String,
    /// Its verdict.
    pub verdict: Verdict,
}

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

/// A band of relative changes, e.g. `-2.04%..+1.39%`.
pub fn band_text(lo: f64, hi: f64) -> String {
    format!("{:+.2}%..{:+.2}%", lo * 100.0, hi * 100.0)
}

fn unit_hint(c: &Claim) -> &'static str {
    // Hold and drain times are the only limits the seeds state; all are in ns in the lab.
    if c.criterion.metric().contains("hold") || c.criterion.metric().contains("drain") {
        "ns"
    } else {
        ""
    }
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
struct Data<'a> {
    e: &'a ExperimentReport,
    def: &'a MetricDef,
}

impl Data<'_> {
    fn values(&self, variant: &str) -> Vec<f64> {
        compare::values(&self.e.result, &self.def.name, variant)
    }
    fn summary(&self, variant: &str) -> Option<f64> {
        summarise(self.def.kind, &self.values(variant))
    }
    fn fmt(&self, v: f64) -> String {
        fmt_unit(v, &self.def.unit)
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
