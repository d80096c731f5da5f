//! What a claim is and what judging it gives: the seed's [`Claim`] with its [`Criterion`], and
//! the [`Judgement`] with its [`Verdict`] and [`Evidence`].

use serde::Serialize;

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
    /// [`PREEMPTED`](super::PREEMPTED) times its own median (same variant, same repetition)
    /// measured a holder the scheduler preempted, the machine's wait rather than ours; where
    /// the claim reads one, it is `undecided here`.
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
