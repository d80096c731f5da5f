//! The criteria's evaluation: [`direction`] (and *grows*), [`within`] and [`largest_under`],
//! each reading a run's samples into the lab's figure, a [`Verdict`] and its reason.

use super::{Claim, Data, Evidence, Expect, Verdict};
use crate::report::compare::{self, fmt_ratio};
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
    let ratio_text = if a != 0.0 && !compare::reads_as_ratio(b / a) {
        format!("{:+.2}%", (b / a - 1.0) * 100.0)
    } else {
        fmt_ratio(a, b).unwrap_or_else(|| "ratio n/a".into())
    };
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
    let paired = if xa.len() != xb.len() {
        None
    } else if log {
        let ln = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<f64>>();
        stats::paired(&ln(&xa), &ln(&xb))
    } else {
        stats::paired(&xa, &xb)
    };
    ev.pairs = if paired.is_some() { xa.len() } else { 0 };
    ev.agreeing = xa
        .iter()
        .zip(&xb)
        .filter(|(x, y)| (*y - *x) * sign > 0.0)
        .count();
    // Seeds on which the metric did not move at all tell nothing about the direction: the
    // sign test leaves them out.
    let untied = xa.iter().zip(&xb).filter(|(x, y)| x != y).count();
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
    let moved = (b - a) * sign > 0.0;
    let factor = if expect == Expect::Increase {
        b / a
    } else {
        a / b
    };
    let big_enough = factor.is_finite() && factor >= min_ratio || (a == 0.0 && moved);
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
    let ci = if log && !c.deterministic {
        log_ci(&xa, &xb, sign)
    } else {
        None
    };
    ev.ratio_ci95 = ci.map(|ci| ci.ratio(sign));
    let pairs_text = match (ci, c.deterministic, ev.pairs > 0) {
        (Some(ci), _, _) => {
            format!(", 95% CI {}", ci.text(sign))
        }
        (None, true, true) => format!(", {}/{} seeds", ev.agreeing, ev.pairs),
        (None, false, true) => match ev.p {
            Some(p) => format!(", p = {p:.3}"),
            None => format!(", {}", ev.test),
        },
        (None, _, false) => String::new(),
    };
    let figure = format!("{} → {} ({ratio_text}{pairs_text})", d.fmt(a), d.fmt(b));
    if let Some(ci) = ci {
        let (verdict, reason) = judge_log_ci(ci, min_ratio, monotone, from, to, sign);
        return (figure, verdict, reason, ev);
    }
    let (verdict, reason) = if !moved {
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
    };
    (figure, verdict, reason, ev)
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
        (
            Verdict::Partly,
            format!("right direction; whether it reaches ×{min_ratio} is inside the {interval}"),
        )
    } else {
        let why = if need > 0.0 {
            format!("the {interval} spans both no change and ×{min_ratio}")
        } else {
            format!("the {interval} includes no change, and the seed gives no size to hold it to")
        };
        (
            Verdict::NotMeasurable,
            format!("{why}: the effect is below this run's noise"),
        )
    }
}

pub(super) fn within(c: &Claim, d: &Data<'_>, against: &str, variant: &str, tol: f64) -> Outcome {
    let (xa, xb) = (d.values(against), d.values(variant));
    let (Some(a), Some(b)) = (d.summary(against), d.summary(variant)) else {
        return (
            "-".into(),
            Verdict::NotMeasurable,
            "no summary".into(),
            Evidence::default(),
        );
    };
    let mut ev = Evidence::default();
    // Relative difference per pair (the variant against its own repetition's reference).
    let rel: Vec<f64> = if xa.len() == xb.len() {
        xa.iter()
            .zip(&xb)
            .filter(|(x, _)| **x != 0.0)
            .map(|(x, y)| y / x - 1.0)
            .collect()
    } else {
        Vec::new()
    };
    ev.pairs = rel.len();
    // The paired mean relative difference where there are pairs, else the summaries'.
    let point = match stats::mean(&rel) {
        Some(m) => m,
        None if a != 0.0 => b / a - 1.0,
        None => f64::NAN,
    };
    let hw = stats::ci95_half_width(&rel);
    let exact = rel.len() >= 2 && rel.iter().all(|&r| r == rel[0]);
    ev.test = if exact {
        "exact".into()
    } else if hw.is_some() {
        "paired 95% CI".into()
    } else {
        "single pair".into()
    };
    let mean_rel = point;
    let ci_text = match hw {
        Some(h) if !exact => format!(", 95% CI {:+.1}% ± {:.1}%", mean_rel * 100.0, h * 100.0),
        _ => String::new(),
    };
    let figure = if point.is_finite() {
        format!(
            "{} → {} ({:+.2}%{ci_text}{})",
            d.fmt(a),
            d.fmt(b),
            point * 100.0,
            if c.deterministic && exact {
                ", exact"
            } else {
                ""
            }
        )
    } else {
        format!("{} → {}", d.fmt(a), d.fmt(b))
    };
    let band = format!("±{:.0}%", tol * 100.0);
    let (verdict, reason) = if !point.is_finite() {
        (
            Verdict::NotMeasurable,
            format!("{against} is zero: nothing to compare against"),
        )
    } else if exact || (hw.is_none() && c.deterministic) {
        // The same difference in every pair, or one seed of a deterministic metric: it is
        // what it is.
        if point.abs() <= tol {
            (Verdict::Reproduced, String::new())
        } else {
            (
                Verdict::NotReproduced,
                format!("differs by {:+.1}%, outside {band}", point * 100.0),
            )
        }
    } else {
        // A timing (or a varying count) is judged on the 95% CI only: a verdict moves when the
        // interval moves past the band's edge, never with the point alone.
        let h = hw.unwrap_or(f64::INFINITY);
        if !h.is_finite() {
            (
                Verdict::NotMeasurable,
                "one repetition: no confidence interval".to_owned(),
            )
        } else if h > tol {
            // A band can only be judged with an interval narrower than it; a wide one
            // straddles the band's edge in one run and clears it in the next.
            (
                Verdict::NotMeasurable,
                format!(
                    "the 95% CI (±{:.1}%) is wider than the {band} the seed claims",
                    h * 100.0
                ),
            )
        } else if point.abs() + h <= tol {
            (Verdict::Reproduced, String::new())
        } else if point.abs() - h > tol {
            (
                Verdict::NotReproduced,
                format!(
                    "differs by {:+.1}% ± {:.1}%: outside {band} even at the interval's edge",
                    point * 100.0,
                    h * 100.0
                ),
            )
        } else {
            (
                Verdict::NotMeasurable,
                format!(
                    "the 95% CI ({:+.1}% ± {:.1}%) straddles the {band} edge: too noisy to tell",
                    point * 100.0,
                    h * 100.0
                ),
            )
        }
    };
    (figure, verdict, reason, ev)
}

pub(super) fn largest_under(
    d: &Data<'_>,
    sweep: &[(&str, &str)],
    limit: f64,
    expected: &str,
) -> Outcome {
    let mut last: Option<(&str, &str, f64)> = None;
    let mut first_over: Option<(&str, f64)> = None;
    // A step whose 95% CI holds the limit: its side of the limit is noise.
    let mut unresolved: Option<(&str, f64, f64)> = None;
    for (variant, step) in sweep {
        let Some(s) = d.summary(variant) else { break };
        let h = stats::ci95_half_width(&d.values(variant)).unwrap_or(0.0);
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
            Verdict::NotMeasurable,
            format!(
                "{variant}'s 95% CI holds the {} limit: which side it is on is noise",
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
    let (verdict, reason) = match (pos(step), pos(expected)) {
        (Some(a), Some(b)) if a == b => (Verdict::Reproduced, String::new()),
        (Some(a), Some(b)) if a.abs_diff(b) == 1 => (
            Verdict::Partly,
            format!("one step off the seed's {expected}"),
        ),
        _ => (
            Verdict::NotReproduced,
            format!("the seed's answer is {expected}"),
        ),
    };
    (figure, verdict, reason, ev)
}
