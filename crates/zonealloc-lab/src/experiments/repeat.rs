//! The repetition driver for timing claims: runs an experiment again (each round on fresh
//! seeds) until the 95% confidence interval of every timing figure a seed claim reads is
//! within a stated fraction of its mean, or a time cap is reached, and says which happened.
//!
//! Only timing metrics (rates, latencies) take samples from the later rounds. Counts and
//! indices are deterministic for a seed, so they keep the first round's fixed seed set
//! (`--seed`, `--seed + 1`, ... for the experiment's iterations): how many rounds a machine
//! fits under the time cap must not change which seeds a deterministic claim is judged on, or
//! its verdict would depend on the machine's speed.
//!
//! Rounds append their samples in order, so sample `k` of every variant still belongs to one
//! repetition on one seed (the pairing the paired tests rely on). Tables, plots and the
//! configuration are the first round's.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::{Experiment, ExperimentResult, LabError, LabOpts, MetricDef, Progress, Sample};
use crate::report::compare;
pub use crate::report::repetition::{RepeatPolicy, Repetition, Stop, Widest};
use crate::report::stats;
use crate::report::verdict::{is_timing, Claim};

/// The (metric, variant) timing figures that `claims` read from experiment `name`'s result.
fn targets(r: &ExperimentResult, claims: &[Claim]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for c in claims
        .iter()
        .filter(|c| c.experiment == r.name && !c.deterministic)
    {
        let metric = c.criterion.metric();
        let Some(def) = r.metrics.iter().find(|m| m.name == metric) else {
            continue;
        };
        if !is_timing(def.kind) {
            continue;
        }
        for v in c.criterion.variants() {
            let t = (metric.to_owned(), v.to_owned());
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out
}

/// The widest relative 95% CI over `targets` (None where no target has two samples).
fn widest(r: &ExperimentResult, targets: &[(String, String)]) -> Option<Widest> {
    targets
        .iter()
        .filter_map(|(m, v)| {
            let xs = compare::values(r, m, v);
            let hw = stats::ci95_half_width(&xs)?;
            let mean = stats::mean(&xs)?;
            let rel = if mean == 0.0 {
                if hw == 0.0 {
                    0.0
                } else {
                    f64::INFINITY
                }
            } else {
                hw / mean.abs()
            };
            Some(Widest {
                metric: m.clone(),
                variant: v.clone(),
                rel_half_width: rel,
            })
        })
        .max_by(|a, b| a.rel_half_width.total_cmp(&b.rel_half_width))
}

/// The samples of `samples` whose metric is a timing: what a later round adds (counts and
/// indices stay on the first round's seeds).
fn timing_samples(
    metrics: &[MetricDef],
    samples: Vec<Sample>,
) -> impl Iterator<Item = Sample> + '_ {
    samples.into_iter().filter(|s| {
        metrics
            .iter()
            .any(|m| m.name == s.metric && is_timing(m.kind))
    })
}

/// The seed of round `round`: round 0 is the user's; later rounds move far from it so that
/// no repetition of one round shares a seed with another's.
pub fn round_seed(seed: u64, round: usize) -> u64 {
    seed.wrapping_add((round as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// Runs `e` in rounds under `policy`; `on_round(round, line)` hears about every round after
/// the first.
pub fn run_repeated(
    e: &dyn Experiment,
    opts: &LabOpts,
    claims: &[Claim],
    policy: RepeatPolicy,
    progress: Progress<'_>,
    on_round: &dyn Fn(usize, &str),
) -> Result<(ExperimentResult, Repetition), LabError> {
    let started = Instant::now();
    let mut result = e.run(opts, progress)?;
    let first_round = started.elapsed();
    let targets = targets(&result, claims);
    let mut rounds = 1;
    let stop = loop {
        if targets.is_empty() {
            break Stop::NoTimingClaims;
        }
        let w = widest(&result, &targets);
        if w.as_ref()
            .is_some_and(|w| w.rel_half_width <= policy.ci_target)
        {
            break Stop::Converged;
        }
        // Start another round only if it can finish within the cap.
        let cap = Duration::from_secs_f64(policy.time_cap_s.max(0.0));
        if rounds >= policy.max_rounds || started.elapsed() + first_round > cap {
            break Stop::TimeCap;
        }
        if let Some(w) = &w {
            on_round(
                rounds + 1,
                &format!(
                    "round {}: 95% CI ±{:.1}% of {} {} > ±{:.0}%",
                    rounds + 1,
                    w.rel_half_width * 100.0,
                    w.metric,
                    w.variant,
                    policy.ci_target * 100.0
                ),
            );
        }
        let mut o = opts.clone();
        o.seed = round_seed(opts.seed, rounds);
        // Traces are written for the first round only.
        o.record_traces = None;
        let more = e.run(&o, progress)?;
        // A later round's repetition k follows the ones before it (its seed is its own).
        let mut next: HashMap<(String, String), usize> = HashMap::new();
        for s in &result.samples {
            *next
                .entry((s.variant.clone(), s.metric.clone()))
                .or_insert(0) += 1;
        }
        let more: Vec<Sample> = timing_samples(&result.metrics, more.samples)
            .map(|mut s| {
                let k = next
                    .entry((s.variant.clone(), s.metric.clone()))
                    .or_insert(0);
                s.repetition = *k;
                *k += 1;
                s
            })
            .collect();
        result.samples.extend(more);
        rounds += 1;
    };
    result
        .check_pairing()
        .map_err(|e| LabError(format!("the samples do not pair: {e}")))?;
    let widest = widest(&result, &targets);
    Ok((
        result,
        Repetition {
            policy,
            rounds,
            stop,
            widest,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::{seeds, tail_merge::TailMerge};
    use crate::report::verdict::judge;
    use crate::report::ExperimentReport;

    /// More rounds (a faster machine under the same time cap) add timing samples only: every
    /// deterministic claim of seed 003 (whose verdicts used to move with the round count)
    /// reads the same samples and gets the same judgement, whatever the number of rounds. The
    /// driver treats every experiment alike; tail-merge is the cheapest with both kinds.
    #[test]
    fn later_rounds_leave_deterministic_claims_on_the_first_rounds_seeds() {
        let mut opts = LabOpts::quick_test(24301);
        opts.iterations = Some(2);
        let claims = seeds::claims();
        let experiments: [&dyn Experiment; 1] = [&TailMerge];
        for e in experiments {
            let run = |max_rounds| {
                let policy = RepeatPolicy {
                    ci_target: 0.0,
                    time_cap_s: 600.0,
                    max_rounds,
                };
                run_repeated(e, &opts, &claims, policy, &|_, _| {}, &|_, _| {}).unwrap()
            };
            let (one, rep1) = run(1);
            let (two, rep2) = run(2);
            assert_eq!((rep1.rounds, rep2.rounds), (1, 2), "{}", e.name());
            // The second round continues the repetitions, on seeds of its own.
            assert_eq!(two.check_pairing(), Ok(()));
            let timing = |s: &&Sample| {
                two.metrics
                    .iter()
                    .any(|m| m.name == s.metric && is_timing(m.kind))
            };
            let later: Vec<&Sample> = two.samples.iter().filter(timing).skip(4).collect();
            assert!(!later.is_empty());
            for s in later {
                assert!(s.repetition >= 2, "{s:?}");
                assert!(!one.samples.iter().any(|f| f.seed == s.seed), "{s:?}");
            }
            for m in &one.metrics {
                for v in &one.variants {
                    let a: Vec<f64> = one.samples_of(v, &m.name).map(|s| s.value).collect();
                    let b: Vec<f64> = two.samples_of(v, &m.name).map(|s| s.value).collect();
                    if is_timing(m.kind) {
                        assert_eq!(b.len(), 2 * a.len(), "{v} {}", m.name);
                    } else {
                        assert_eq!(a, b, "{v} {}", m.name);
                    }
                }
            }
            let (one, two) = (
                ExperimentReport::new(one, 0.0),
                ExperimentReport::new(two, 0.0),
            );
            let det: Vec<_> = claims
                .iter()
                .filter(|c| c.experiment == e.name() && c.deterministic)
                .collect();
            assert!(!det.is_empty(), "{}", e.name());
            for c in det {
                let (a, b) = (judge(c, &one), judge(c, &two));
                assert_eq!(
                    (a.verdict, &a.lab_figure),
                    (b.verdict, &b.lab_figure),
                    "{}",
                    c.claim
                );
            }
        }
    }
}
