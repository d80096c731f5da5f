//! The *within* criterion: a variant's change against another inside the seed's band.

use super::claim::{Claim, Evidence, Verdict};
use super::criteria::{widen, Outcome};
use super::data::{band_text, Data};
use crate::report::change;
use crate::report::stats;

/// Whether `variant` against `against` lies in the seed's band `lo..=hi` (relative changes),
/// judged on the logarithm of the paired ratio, `ln(variant / against)` per pair: a ratio's
/// mean in logarithms weighs a halving and a doubling alike, where the mean of `y/x - 1` lets
/// one +207% pair outweigh many small losses.
pub(super) fn within(
    c: &Claim,
    d: &Data<'_>,
    against: &str,
    variant: &str,
    lo: f64,
    hi: f64,
) -> Outcome {
    let (xa, xb) = (d.values(against), d.values(variant));
    let (Some(a), Some(b)) = (d.summary(against), d.summary(variant)) else {
        return (
            "-".into(),
            Verdict::NotMeasurable,
            "no summary".into(),
            Evidence::default(),
        );
    };
    let band = band_text(lo, hi);
    let (llo, lhi) = ((1.0 + lo).ln(), (1.0 + hi).ln());
    let mut ev = Evidence::default();
    // The log ratio per pair (the variant against its own repetition's reference); pairs with
    // a non-positive value cannot be logged and leave the test.
    let logs: Vec<f64> = if xa.len() == xb.len() {
        xa.iter()
            .zip(&xb)
            .filter(|(x, y)| **x > 0.0 && **y > 0.0)
            .map(|(x, y)| (y / x).ln())
            .collect()
    } else {
        Vec::new()
    };
    ev.pairs = logs.len();
    let point = match stats::mean(&logs) {
        Some(m) => m,
        None if a > 0.0 && b > 0.0 => (b / a).ln(),
        None => f64::NAN,
    };
    let exact = logs.len() >= 2 && logs.iter().all(|&r| r == logs[0]);
    let hw = if exact {
        None
    } else {
        stats::ci95_half_width(&logs).map(|h| widen(c, h))
    };
    ev.test = if exact {
        "exact".into()
    } else if hw.is_some() {
        "paired 95% CI on log ratios".into()
    } else {
        "single pair".into()
    };
    let pct = |l: f64| format!("{:+.2}%", (l.exp() - 1.0) * 100.0);
    if let Some(h) = hw {
        ev.ratio_ci95 = Some([(point - h).exp(), (point + h).exp()]);
    }
    let figure = if point.is_finite() {
        let change = change::of_relative(point.exp() - 1.0).unwrap_or_else(|| pct(point));
        let ci = match hw {
            Some(h) => format!(", 95% CI {}..{}", pct(point - h), pct(point + h)),
            None if exact || c.deterministic => ", exact".into(),
            None => String::new(),
        };
        format!("{} → {} ({change}{ci})", d.fmt(a), d.fmt(b))
    } else {
        format!("{} → {}", d.fmt(a), d.fmt(b))
    };
    let (verdict, reason) =
        within_verdict(c, (point, hw, exact), (llo, lhi, &band), (against, variant));
    (figure, verdict, reason, ev)
}

/// [`within`]'s verdict and reason from the log ratio's `point`, its CI half-width `hw` and
/// whether every pair gave the same ratio, against the band `llo..=lhi` (logarithms; `band`
/// its text), for `variant` against `against`.
fn within_verdict(
    c: &Claim,
    (point, hw, exact): (f64, Option<f64>, bool),
    (llo, lhi, band): (f64, f64, &str),
    (against, variant): (&str, &str),
) -> (Verdict, String) {
    let pct = |l: f64| format!("{:+.2}%", (l.exp() - 1.0) * 100.0);
    let inside = |l: f64| (llo..=lhi).contains(&l);
    if !point.is_finite() {
        (
            Verdict::NotMeasurable,
            format!("{against} or {variant} is not positive: no ratio to judge"),
        )
    } else if exact || (hw.is_none() && c.deterministic) {
        // The same ratio in every pair, or one sample of an exact count: it is what it is.
        // A bound in size leaves the seed's change anywhere between no change and it.
        let reaches = |l: f64| l.max(0.0).min(lhi) - l.min(0.0).max(llo) > 0.0;
        if inside(point) {
            (Verdict::Reproduced, String::new())
        } else if let Some(why) = c.bound.filter(|_| reaches(point)) {
            (
                Verdict::Undecided,
                format!(
                    "{}: outside {band}, but a bound in size ({why}): the seed's change lies between no change and it",
                    pct(point)
                ),
            )
        } else {
            (
                Verdict::NotReproduced,
                format!("{}: outside {band}", pct(point)),
            )
        }
    } else {
        // A timing is judged on its 95% CI only: a verdict moves when the interval moves past
        // a band's edge, never with the point alone.
        match hw {
            None => (
                Verdict::NotMeasurable,
                "one repetition: no confidence interval".to_owned(),
            ),
            Some(h) if 2.0 * h > lhi - llo => (
                Verdict::Undecided,
                format!(
                    "the 95% CI ({}..{}) is wider than the seed's range {band}",
                    pct(point - h),
                    pct(point + h)
                ),
            ),
            Some(h) if inside(point - h) && inside(point + h) => {
                (Verdict::Reproduced, String::new())
            }
            Some(h) if point + h < llo || point - h > lhi => (
                Verdict::NotReproduced,
                format!(
                    "the 95% CI ({}..{}) lies wholly outside {band}",
                    pct(point - h),
                    pct(point + h)
                ),
            ),
            Some(h) => (
                Verdict::Undecided,
                format!(
                    "the 95% CI ({}..{}) straddles an edge of {band}: too noisy to tell",
                    pct(point - h),
                    pct(point + h)
                ),
            ),
        }
    }
}
