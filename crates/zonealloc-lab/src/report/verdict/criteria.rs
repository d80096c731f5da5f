//! The criteria's evaluation: [`direction`] (and *grows*), [`highest`] and [`largest_under`],
//! each reading a run's samples into the lab's figure, a [`Verdict`] and its reason
//! (*within* is `within.rs`).

use super::claim::{Claim, Evidence, Expect, Verdict};
use super::data::Data;
use crate::report::change;
use crate::report::compare::fmt_ratio;
use crate::report::stats::{self, Paired};

pub(super) type Outcome = (String, Verdict, String, Evidence);

/// Direction from `from` to the last of `path` (every step of `path` must move the expected
/// way too, for sweeps).
pub(super) fn direction(
    c: &Claim,
    d: &Data<'_>,
    from: &str,
    path: &[&str],
    expect: Expect,
    min_ratio: f64,
) -> Outcome {
    let to = path.last().copied().unwrap_or(from);
    let (Some(a), Some(b)) = (d.summary(from), d.summary(to)) else {
        return (
            "-".into(),
            Verdict::NotMeasurable,
            "no summary".into(),
            Evidence::default(),
        );
    };
    let ratio_text = change::change(a, b).unwrap_or_else(|| "ratio n/a".into());
    let (xa, xb) = (d.values(from), d.values(to));
    let mut ev = Evidence::default();
    let sign = match expect {
        Expect::Increase => 1.0,
        Expect::Decrease => -1.0,
    };
    // Timings act by factors (a drain is ×40 shorter, not 30 ms shorter), and their spread
    // grows with their size: the paired test runs on logarithms where every value is
    // positive. Counts are tested as they are.
    let log = !c.deterministic && xa.iter().chain(&xb).all(|&x| x > 0.0);
    let (paired, sign_p) = pair_up(&xa, &xb, log, sign, &mut ev);
    let moved = (b - a) * sign > 0.0;
    let factor = if expect == Expect::Increase {
        b / a
    } else {
        a / b
    };
    // From nothing, or down to nothing: any factor.
    let from_or_to_zero = match expect {
        Expect::Increase => a == 0.0,
        Expect::Decrease => b == 0.0,
    };
    let big_enough = factor.is_finite() && factor >= min_ratio || (from_or_to_zero && moved);
    // Every step of a sweep in the expected direction.
    let steps: Vec<f64> = std::iter::once(from)
        .chain(path.iter().copied())
        .filter_map(|v| d.summary(v))
        .collect();
    let monotone = steps.windows(2).all(|w| (w[1] - w[0]) * sign > 0.0);
    // A deterministic metric varies from seed to seed, not from run to run: the seeds are the
    // sample, judged by the sign test (one-sided, 5%), so one seed that goes the other way
    // among twelve does not decide the verdict, nor does a run of luck among three.
    // A difference that is the same on every seed (an instruction count) is exact, as it is.
    let consistent = if c.deterministic {
        match paired {
            Some(Paired::Exact { diff, .. } | Paired::Single { diff }) => diff * sign > 0.0,
            _ => ev.pairs > 0 && sign_p < 0.05,
        }
    } else {
        match paired {
            Some(Paired::Exact { diff, .. }) => diff * sign > 0.0,
            Some(p @ Paired::Test { .. }) => p.significant_95(),
            _ => false,
        }
    };
    // Timings on logarithms: judged on the 95% CI of the paired ratio, not on the point.
    let raw_ci = if log && !c.deterministic {
        log_ci(&xa, &xb, sign)
    } else {
        None
    };
    let ci = raw_ci.map(|ci| LogCi {
        half_width: widen(c, ci.half_width),
        ..ci
    });
    // Narrower than the histogram can tell: say so rather than show its resolution as a CI.
    let at_resolution = matches!((raw_ci, ci), (Some(r), Some(w)) if w.half_width > r.half_width);
    ev.ratio_ci95 = ci.map(|ci| ci.ratio(sign));
    let pairs_text = pairs_text(c, &ev, ci, at_resolution, sign);
    let figure = format!("{} → {} ({ratio_text}{pairs_text})", d.fmt(a), d.fmt(b));
    if let Some(ci) = ci {
        let (verdict, reason) = judge_log_ci(ci, min_ratio, monotone, from, to, sign);
        return (figure, verdict, reason, ev);
    }
    let (verdict, reason) = direction_verdict(
        c,
        &ev,
        [moved, monotone, consistent, big_enough],
        (from, to, sign, sign_p),
        (min_ratio, &ratio_text),
    );
    (figure, verdict, reason, ev)
}

/// The paired test of `xb` against `xa` (on logarithms where `log`), filed in `ev` with the
/// pairs that moved the expected way (`sign`); and the sign test's p over the untied pairs.
fn pair_up(
    xa: &[f64],
    xb: &[f64],
    log: bool,
    sign: f64,
    ev: &mut Evidence,
) -> (Option<Paired>, f64) {
    let paired = if xa.len() != xb.len() {
        None
    } else if log {
        let ln = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<f64>>();
        stats::paired(&ln(xa), &ln(xb))
    } else {
        stats::paired(xa, xb)
    };
    ev.pairs = if paired.is_some() { xa.len() } else { 0 };
    ev.agreeing = xa
        .iter()
        .zip(xb)
        .filter(|(x, y)| (*y - *x) * sign > 0.0)
        .count();
    // Seeds on which the metric did not move at all tell nothing about the direction: the
    // sign test leaves them out.
    let untied = xa.iter().zip(xb).filter(|(x, y)| x != y).count();
    let sign_p = stats::sign_test_p(ev.agreeing, untied);
    ev.test = match paired {
        Some(Paired::Exact { .. }) => "exact".into(),
        Some(Paired::Test { t, p, .. }) => {
            ev.t = Some(t);
            ev.p = Some(p);
            if log {
                "paired t on logarithms".into()
            } else {
                "paired t".into()
            }
        }
        Some(Paired::Single { .. }) => "single pair".into(),
        None => "none (unequal repetitions)".into(),
    };
    (paired, sign_p)
}

/// The figure's tail after the change: the ratio's CI (or the histogram's resolution where
/// that is wider), the seeds that agree, or the test's p.
fn pairs_text(
    c: &Claim,
    ev: &Evidence,
    ci: Option<LogCi>,
    at_resolution: bool,
    sign: f64,
) -> String {
    match (ci, c.deterministic, ev.pairs > 0) {
        (Some(ci), _, _) if at_resolution => format!(
            ", {} at the histogram's ±{:.2}% resolution (the samples' CI is narrower)",
            ci.text(sign),
            c.resolution.unwrap_or(0.0) * 100.0
        ),
        (Some(ci), _, _) => {
            format!(", 95% CI {}", ci.text(sign))
        }
        (None, true, true) => format!(", {}/{} seeds", ev.agreeing, ev.pairs),
        (None, false, true) => match ev.p {
            Some(p) => format!(", p = {p:.3}"),
            None => format!(", {}", ev.test),
        },
        (None, _, false) => String::new(),
    }
}

/// [`direction`]'s verdict where no CI on logarithms judges it: whether the metric `moved`
/// from `from` to `to` the expected way (`sign`), at every step (`monotone`), on enough
/// seeds or significantly (`consistent`, `sign_p`), by at least ×`min_ratio`.
fn direction_verdict(
    c: &Claim,
    ev: &Evidence,
    [moved, monotone, consistent, big_enough]: [bool; 4],
    (from, to, sign, sign_p): (&str, &str, f64, f64),
    (min_ratio, ratio_text): (f64, &str),
) -> (Verdict, String) {
    if !moved {
        (
            Verdict::NotReproduced,
            format!(
                "{to} is not {} than {from}",
                if sign > 0.0 { "higher" } else { "lower" }
            ),
        )
    } else if !monotone {
        (
            Verdict::Partly,
            "does not move the same way at every step".into(),
        )
    } else if !consistent {
        let why = if c.deterministic {
            format!(
                "only {} of {} seeds move the expected way (sign test p = {sign_p:.3})",
                ev.agreeing, ev.pairs
            )
        } else {
            match ev.p {
                Some(p) => format!("not significant (paired t-test p = {p:.3})"),
                None => format!("no test possible ({})", ev.test),
            }
        };
        (Verdict::Partly, why)
    } else if !big_enough {
        (
            Verdict::Partly,
            format!("right direction, smaller than ×{min_ratio} ({ratio_text})"),
        )
    } else {
        (Verdict::Reproduced, String::new())
    }
}

/// A growth's upper bound: `out` (the direction rule from `from` to the last of `path`) with
/// its verdict lowered where the growth passes ×`max_ratio`: wholly past it (the interval's
/// low end, or an exact figure), `not reproduced` for a count and `undecided here` for a
/// timing (the machine's tail); a reproduced interval reaching past it, `undecided here`.
pub(super) fn at_most(
    c: &Claim,
    out: Outcome,
    d: &Data<'_>,
    from: &str,
    path: &[&str],
    max_ratio: f64,
) -> Outcome {
    let (figure, verdict, reason, ev) = out;
    let timing = !c.deterministic;
    let to = path.last().copied().unwrap_or(from);
    if !max_ratio.is_finite() || matches!(verdict, Verdict::NotReproduced) {
        return (figure, verdict, reason, ev);
    }
    let point = match (d.summary(from), d.summary(to)) {
        (Some(a), Some(b)) if a > 0.0 => b / a,
        _ => return (figure, verdict, reason, ev),
    };
    let [lo, hi] = ev.ratio_ci95.unwrap_or([point, point]);
    if lo > max_ratio && !timing {
        let why = format!(
            "grows ×{lo:.1} or more, past the ×{max_ratio} the seed's growth allows: not the seed's effect"
        );
        (figure, Verdict::NotReproduced, why, ev)
    } else if lo > max_ratio {
        // A timing that grows far past the seed's bound is the machine (a preempted holder),
        // which decides nothing about the claim.
        let why = format!(
            "grows ×{lo:.1} or more, past the ×{max_ratio} the seed's growth allows: the machine's tail (a preempted holder), not ours"
        );
        (figure, Verdict::Undecided, why, ev)
    } else if hi > max_ratio && verdict == Verdict::Reproduced {
        let why =
            format!("the 95% CI reaches ×{hi:.1}, past the ×{max_ratio} the seed's growth allows");
        (figure, Verdict::Undecided, why, ev)
    } else {
        (figure, verdict, reason, ev)
    }
}

/// The 95% confidence interval of the mean paired log ratio, signed so that positive is the
/// expected way (None with fewer than two pairs).
#[derive(Clone, Copy, Debug)]
struct LogCi {
    mean: f64,
    half_width: f64,
}

impl LogCi {
    fn lo(self) -> f64 {
        self.mean - self.half_width
    }
    fn hi(self) -> f64 {
        self.mean + self.half_width
    }
    /// The interval as ratios `to / from`, low to high.
    fn ratio(self, sign: f64) -> [f64; 2] {
        let (a, b) = ((self.lo() * sign).exp(), (self.hi() * sign).exp());
        [a.min(b), a.max(b)]
    }
    /// The interval as ratios, e.g. `×0.41..×0.80` or `÷30.2..÷12.5`.
    fn text(self, sign: f64) -> String {
        let [lo, hi] = self.ratio(sign);
        let r = |x: f64| fmt_ratio(1.0, x).unwrap_or_else(|| "?".into());
        format!("{}..{}", r(lo), r(hi))
    }
}

fn log_ci(xa: &[f64], xb: &[f64], sign: f64) -> Option<LogCi> {
    if xa.len() != xb.len() {
        return None;
    }
    let d: Vec<f64> = xa
        .iter()
        .zip(xb)
        .map(|(a, b)| sign * (b.ln() - a.ln()))
        .collect();
    Some(LogCi {
        mean: stats::mean(&d)?,
        half_width: stats::ci95_half_width(&d)?,
    })
}

/// A timing claim judged on the 95% CI of its paired log ratio (`ci`, positive the expected
/// way) against the claimed factor: the verdict moves only where the interval clears a
/// boundary, and an interval wider than the effect the claim needs is `not measurable here`.
fn judge_log_ci(
    ci: LogCi,
    min_ratio: f64,
    monotone: bool,
    from: &str,
    to: &str,
    sign: f64,
) -> (Verdict, String) {
    let need = min_ratio.max(1.0).ln();
    let interval = format!("95% CI {}", ci.text(sign));
    let way = if sign > 0.0 { "higher" } else { "lower" };
    if ci.lo() > need {
        if monotone {
            (Verdict::Reproduced, String::new())
        } else {
            (
                Verdict::Partly,
                "does not move the same way at every step".into(),
            )
        }
    } else if ci.hi() < 0.0 {
        (
            Verdict::NotReproduced,
            format!("{to} is not {way} than {from}: the {interval} lies on the other side"),
        )
    } else if ci.hi() < need {
        if ci.lo() > 0.0 {
            (
                Verdict::Partly,
                format!("right direction, smaller than ×{min_ratio} ({interval})"),
            )
        } else {
            (
                Verdict::NotReproduced,
                format!("the {interval} rules out ×{min_ratio}"),
            )
        }
    } else if ci.lo() > 0.0 && ci.half_width <= need {
        // The right way, but the claimed factor inside the interval: a straddle, which the
        // next run may clear either way.
        (
            Verdict::Undecided,
            format!("right direction; whether it reaches ×{min_ratio} is inside the {interval}"),
        )
    } else {
        let why = if need > 0.0 {
            format!("the {interval} spans both no change and ×{min_ratio}")
        } else {
            format!("the {interval} includes no change, and the seed gives no size to hold it to")
        };
        (
            Verdict::Undecided,
            format!("{why}: the effect is below this run's noise"),
        )
    }
}
/// A half-width on logarithms never narrower than the metric's resolution (a histogram's
/// quantiles are exact only to a sub-bucket): an interval of zero width from quantised samples
/// is the histogram's resolution, not a confidence interval.
pub(super) fn widen(c: &Claim, h: f64) -> f64 {
    match c.resolution {
        Some(r) => h.max((1.0 + r).ln()),
        None => h,
    }
}

/// "The highest of the three": `variant` against each of `others` by the direction rule; the
/// weakest verdict decides, and the figure lists every comparison.
pub(super) fn highest(c: &Claim, d: &Data<'_>, variant: &str, others: &[&str]) -> Outcome {
    let rank = |v: Verdict| match v {
        Verdict::Reproduced => 3,
        Verdict::Partly => 2,
        Verdict::NotMeasurable | Verdict::Undecided | Verdict::NotModelled => 1,
        Verdict::NotReproduced => 0,
    };
    let mut figures = Vec::new();
    let mut worst: Option<(Verdict, String, Evidence)> = None;
    for other in others {
        let (fig, v, why, ev) = direction(c, d, other, &[variant], Expect::Increase, 1.0);
        figures.push(format!("vs {other}: {fig}"));
        if worst.as_ref().is_none_or(|w| rank(v) < rank(w.0)) {
            let why = if why.is_empty() {
                why
            } else {
                format!("against {other}: {why}")
            };
            worst = Some((v, why, ev));
        }
    }
    let (verdict, reason, ev) = worst.unwrap_or((
        Verdict::NotMeasurable,
        "nothing to compare against".into(),
        Evidence::default(),
    ));
    (figures.join("; "), verdict, reason, ev)
}

/// How far apart the seed's own machines are at one step of a sweep, relative: 001's bulk
/// free p99 at batch 2047 is 84.06..120.34 µs on its four machines, ±18% around 100 µs. A
/// timed step within this of the limit is one machines differ on, so which side this
/// machine's load puts it on decides nothing.
const MACHINE_SPREAD: f64 = 0.2;

pub(super) fn largest_under(
    c: &Claim,
    d: &Data<'_>,
    sweep: &[(&str, &str)],
    limit: f64,
    expected: &[&str],
) -> Outcome {
    let mut last: Option<(&str, &str, f64)> = None;
    let mut first_over: Option<(&str, f64)> = None;
    // A step whose 95% CI holds the limit: its side of the limit is noise.
    let mut unresolved: Option<(&str, f64, f64)> = None;
    for (variant, step) in sweep {
        let Some(s) = d.summary(variant) else { break };
        // Never narrower than the histogram's resolution: identical quantiles from every
        // repetition are one sub-bucket, not an exact figure.
        let mut h = stats::ci95_half_width(&d.values(variant))
            .unwrap_or(0.0)
            .max(s * c.resolution.unwrap_or(0.0));
        if !c.deterministic && (s - limit).abs() < limit * MACHINE_SPREAD {
            // Within the seed's machines' spread of the limit: as undecided as a straddle.
            h = h.max((s - limit).abs() * (1.0 + 1e-9) + f64::MIN_POSITIVE);
        }
        if s + h < limit {
            last = Some((variant, step, s));
        } else if s - h >= limit {
            first_over = Some((variant, s));
            break;
        } else {
            unresolved = Some((variant, s, h));
            break;
        }
    }
    let ev = Evidence {
        test: "summary and its 95% CI against the limit".into(),
        ..Evidence::default()
    };
    if let Some((variant, s, h)) = unresolved {
        return (
            format!("{variant}: {} ± {}", d.fmt(s), d.fmt(h)),
            Verdict::Undecided,
            format!(
                "{variant}'s 95% CI, or the seed's machines' ±{:.0}% spread, holds the {} limit: which side it is on is this machine's load",
                MACHINE_SPREAD * 100.0,
                d.fmt(limit)
            ),
            ev,
        );
    }
    let pos = |label: &str| sweep.iter().position(|s| s.1 == label);
    let Some((variant, step, s)) = last else {
        return (
            format!("none: {} already ≥ {}", sweep[0].0, d.fmt(limit)),
            Verdict::NotReproduced,
            "even the smallest step is over the limit".into(),
            ev,
        );
    };
    let over = first_over
        .map(|(v, s)| format!("; {v}: {}", d.fmt(s)))
        .unwrap_or_default();
    let figure = format!("{step} ({variant}: {}{over})", d.fmt(s));
    let seeds: Vec<usize> = expected.iter().filter_map(|e| pos(e)).collect();
    let answer = expected.join(" or ");
    let (verdict, reason) = match pos(step) {
        Some(a) if seeds.contains(&a) => (Verdict::Reproduced, String::new()),
        Some(a) if seeds.iter().any(|b| a.abs_diff(*b) == 1) => {
            (Verdict::Partly, format!("one step off the seed's {answer}"))
        }
        _ => (
            Verdict::NotReproduced,
            format!("the seed's answer is {answer}"),
        ),
    };
    (figure, verdict, reason, ev)
}
