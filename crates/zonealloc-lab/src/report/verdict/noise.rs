//! What makes a timing `undecided here` beyond its own interval: a tail that some repetition
//! measured preempted ([`Claim::tail_of`]), and a deterministic proxy beside it that decides
//! the same entry of the seed.

use super::claim::{Claim, ClaimKind, Judgement, Verdict};
use crate::report::{compare, ExperimentReport};

/// How many times its median a repetition's tail must be to be the scheduler's: the seeds'
/// tails are under twice their averages; a preempted holder adds a tick (milliseconds).
pub const PREEMPTED: f64 = 10.0;

/// Where `c` reads a tail that some repetition measured preempted: the reason, in words.
pub(super) fn preempted_tail(c: &Claim, e: &ExperimentReport) -> Option<String> {
    let median = c.tail_of?;
    let metric = c.criterion.metric();
    let mut hit: Vec<String> = Vec::new();
    for v in c.criterion.variants() {
        let tails = compare::values(&e.result, metric, v);
        let medians = compare::values(&e.result, median, v);
        let n = tails
            .iter()
            .zip(&medians)
            .filter(|(t, m)| **m > 0.0 && **t >= PREEMPTED * **m)
            .count();
        if n > 0 {
            hit.push(format!("{v} {n}/{}", tails.len()));
        }
    }
    (!hit.is_empty()).then(|| {
        format!(
            "the tail is the scheduler's: repetitions with a {metric} of ×{PREEMPTED} or more their {median} (a preempted holder): {}",
            hit.join(", ")
        )
    })
}

/// A timing claim on an entry that a deterministic proxy claim of the same run decides (an
/// experiment, not a mechanism): `undecided here`, its own reading moved to the reason.
pub(super) fn beside_proxies(out: &mut [Judgement]) {
    let decided_by_proxy: Vec<(&str, &str)> = out
        .iter()
        .filter(|j| {
            let c = &j.claim;
            c.deterministic && c.proxy.is_some() && c.kind == ClaimKind::Experiment
        })
        .filter(|j| !matches!(j.verdict, Verdict::NotMeasurable | Verdict::NotModelled))
        .map(|j| (j.claim.item, j.claim.criterion.metric()))
        .collect();
    for j in out.iter_mut() {
        let decided = matches!(
            j.verdict,
            Verdict::Reproduced | Verdict::Partly | Verdict::NotReproduced
        );
        if j.claim.deterministic || !decided {
            continue;
        }
        if let Some((_, proxy)) = decided_by_proxy.iter().find(|p| p.0 == j.claim.item) {
            j.reason = format!(
                "the wall clock beside the proxy that decides this entry ({proxy}); by its own 95% CI it reads '{}' on this run",
                j.verdict.label()
            );
            j.verdict = Verdict::Undecided;
        }
    }
}
