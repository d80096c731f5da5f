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
    let consistent = if c.deterministic {
        ev.pairs > 0 && ev.agreeing == ev.pairs
    } else {
        match paired {
            Some(Paired::Exact { diff, .. }) => diff * sign > 0.0,
            Some(p @ Paired::Test { .. }) => p.significant_95(),
            _ => false,
        }
    };
    let pairs_text = if ev.pairs > 0 {
        match (c.deterministic, ev.p) {
            (true, _) => format!(", {}/{} seeds", ev.agreeing, ev.pairs),
            (false, Some(p)) => format!(", p = {p:.3}"),
            (false, None) => format!(", {}", ev.test),
        }
    } else {
        String::new()
    };
    let figure = format!("{} → {} ({ratio_text}{pairs_text})", d.fmt(a), d.fmt(b));
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
                "only {} of {} seeds move the expected way",
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
    } else if exact || hw.is_none() {
        // One value per side, or the same difference in every pair: it is what it is.
        if point.abs() <= tol {
            if exact {
                (Verdict::Reproduced, String::new())
            } else {
                (
                    Verdict::Partly,
                    "one repetition: no confidence interval".to_owned(),
                )
            }
        } else {
            (
                Verdict::NotReproduced,
                format!("differs by {:+.1}%, outside {band}", point * 100.0),
            )
        }
    } else {
        let h = hw.unwrap_or(f64::INFINITY);
        if point.abs() + h <= tol {
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
        } else if point.abs() <= tol {
            (
                Verdict::Partly,
                format!(
                    "inside {band} but too noisy to resolve it (95% CI ±{:.1}%)",
                    h * 100.0
                ),
            )
        } else {
            (
                Verdict::Partly,
                format!(
                    "{:+.1}% is outside {band}, but the 95% CI (±{:.1}%) reaches into it: too \
                     noisy to tell",
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
    for (variant, step) in sweep {
        let Some(s) = d.summary(variant) else { break };
        if s < limit {
            last = Some((variant, step, s));
        } else {
            first_over = Some((variant, s));
            break;
        }
    }
    let ev = Evidence {
        test: "summary against the limit".into(),
        ..Evidence::default()
    };
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
