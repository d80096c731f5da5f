//! The rules that leave a claim `undecided here` (a bound, a preempted tail, a step at the
//! limit, a proxy beside, a straddled factor), each on a small made-up run.

use super::tests::{claim, count, multi, report};
use super::*;

/// A proxy that bounds the seed's change in size (the seed's lies between no change and it):
/// inside the band, reproduced; outside it with part of the band between it and no change,
/// undecided; the other way from the band, or without the bound, not reproduced.
#[test]
fn a_bound_outside_the_band_is_undecided_not_refuted() {
    let crit = Criterion::Within {
        metric: "m",
        against: "off",
        variant: "on",
        lo: -0.01,
        hi: 0.0,
    };
    let mut c = claim(true, crit);
    c.bound = Some("the lab's fault is smaller than the kernel's");
    let r = |on: f64| report("m", count(), "", &[("off", &[100.0]), ("on", &[on])]);
    assert_eq!(judge(&c, &r(99.5)).verdict, Verdict::Reproduced);
    let j = judge(&c, &r(98.9));
    assert_eq!(j.verdict, Verdict::Undecided, "{j:?}");
    assert!(j.reason.contains("bound"), "{}", j.reason);
    assert_eq!(judge(&c, &r(101.0)).verdict, Verdict::NotReproduced);
    c.bound = None;
    assert_eq!(judge(&c, &r(98.9)).verdict, Verdict::NotReproduced);
}

/// A tail claim reads its median beside it: a repetition whose p99 is ten times its own p50
/// (a holder the scheduler preempted) makes it `undecided here`, whatever the interval says.
#[test]
fn a_preempted_tail_is_undecided() {
    let mut c = claim(
        false,
        Criterion::Grows {
            metric: "p99",
            sweep: &["b1", "b2"],
            min_ratio: 20.0,
            max_ratio: f64::INFINITY,
        },
    );
    c.tail_of = Some("p50");
    let r = |b2_p99: &'static [f64]| {
        multi(
            MetricKind::Latency,
            &[
                ("b1", "p99", &[2.0, 2.1, 2.0]),
                ("b2", "p99", b2_p99),
                ("b1", "p50", &[1.0, 1.0, 1.0]),
                ("b2", "p50", &[40.0, 41.0, 40.0]),
            ],
        )
    };
    assert_eq!(
        judge(&c, &r(&[60.0, 62.0, 61.0])).verdict,
        Verdict::Reproduced
    );
    let j = judge(&c, &r(&[60.0, 4000.0, 61.0]));
    assert_eq!(j.verdict, Verdict::Undecided, "{j:?}");
    assert!(j.reason.contains("b2 1/3"), "{}", j.reason);
    c.tail_of = None;
    let j = judge(&c, &r(&[60.0, 4000.0, 61.0]));
    assert!(!j.reason.contains("scheduler"), "{}", j.reason);
}

/// A timed step within the seed's machines' spread of the limit (here 110 against 100, tight)
/// is undecided, as a straddling interval is; a count there is judged as it is, and a timed
/// step well past the spread decides.
#[test]
fn largest_under_leaves_a_step_at_the_limit_undecided() {
    const SWEEP: &[(&str, &str)] = &[("b1", "cap 0"), ("b2", "cap 1")];
    let crit = Criterion::LargestUnder {
        metric: "m",
        sweep: SWEEP,
        limit: 100.0,
        expected: &["cap 0"],
    };
    let r = |b2: &'static [f64]| {
        report(
            "m",
            MetricKind::Latency,
            "ns",
            &[("b1", &[10.0, 10.0, 10.0]), ("b2", b2)],
        )
    };
    let j = judge(&claim(false, crit.clone()), &r(&[110.0, 110.0, 110.0]));
    assert_eq!(j.verdict, Verdict::Undecided, "{j:?}");
    assert!(j.reason.contains("spread"), "{}", j.reason);
    let j = judge(&claim(true, crit.clone()), &r(&[110.0, 110.0, 110.0]));
    assert_eq!(j.verdict, Verdict::Reproduced, "{j:?}");
    let j = judge(&claim(false, crit), &r(&[130.0, 130.0, 130.0]));
    assert_eq!(j.verdict, Verdict::Reproduced, "{j:?}");
}

/// A timing claim on an entry that a deterministic proxy of the same run decides stays beside
/// it, `undecided here`, with its own reading in the reason; alone, it is judged as usual.
#[test]
fn a_timing_beside_a_deciding_proxy_is_undecided() {
    let r = multi(
        MetricKind::Latency,
        &[
            ("off", "t", &[100.0, 110.0, 105.0]),
            ("on", "t", &[1.0, 1.1, 1.05]),
            ("off", "c", &[9.0, 9.0, 9.0, 9.0, 9.0]),
            ("on", "c", &[1.0, 1.0, 1.0, 1.0, 1.0]),
        ],
    );
    let timing = claim(
        false,
        Criterion::Direction {
            metric: "t",
            against: "off",
            variant: "on",
            expect: Expect::Decrease,
            min_ratio: 1.0,
        },
    );
    let mut proxy = claim(
        true,
        Criterion::Direction {
            metric: "c",
            against: "off",
            variant: "on",
            expect: Expect::Decrease,
            min_ratio: 1.0,
        },
    );
    proxy.proxy = Some("a count");
    let alone = judge_all(std::slice::from_ref(&timing), std::slice::from_ref(&r), &[]);
    assert_eq!(alone[0].verdict, Verdict::Reproduced);
    let both = judge_all(
        &[timing.clone(), proxy.clone()],
        std::slice::from_ref(&r),
        &[],
    );
    assert_eq!(both[0].verdict, Verdict::Undecided, "{:?}", both[0]);
    assert!(
        both[0].reason.contains("reads 'reproduced'"),
        "{}",
        both[0].reason
    );
    assert_eq!(both[1].verdict, Verdict::Reproduced);
    // A mechanism decides no experiment's entry.
    proxy.kind = ClaimKind::Mechanism;
    let both = judge_all(&[timing, proxy], &[r], &[]);
    assert_eq!(both[0].verdict, Verdict::Reproduced);
}

/// The right way, but the claimed factor inside the interval (×2.4..×3.5 against ×3): a
/// straddle, `undecided here`, where the next run may land either side.
#[test]
fn a_timing_that_straddles_its_factor_is_undecided() {
    let c = claim(
        false,
        Criterion::Direction {
            metric: "m",
            against: "off",
            variant: "on",
            expect: Expect::Decrease,
            min_ratio: 3.0,
        },
    );
    let r = report(
        "m",
        MetricKind::Latency,
        "ns",
        &[
            ("off", &[30.0, 30.0, 30.0, 30.0, 30.0]),
            ("on", &[10.0, 12.0, 9.0, 11.0, 8.0]),
        ],
    );
    let j = judge(&c, &r);
    assert_eq!(j.verdict, Verdict::Undecided, "{j:?}");
    assert!(j.reason.contains("whether it reaches ×3"), "{}", j.reason);
}
