//! The verdict rules, each on a small made-up run.

use super::*;
use crate::report::{ExperimentResult, MetricDef, Sample};

pub(super) fn report(
    metric: &str,
    kind: MetricKind,
    unit: &str,
    data: &[(&str, &[f64])],
) -> ExperimentReport {
    let samples = data
        .iter()
        .flat_map(|(v, xs)| {
            xs.iter().enumerate().map(move |(k, &x)| Sample {
                variant: (*v).into(),
                metric: metric.into(),
                repetition: k,
                seed: Some(k as u64),
                value: x,
            })
        })
        .collect();
    let r = ExperimentResult {
        name: "exp".into(),
        seed: "000".into(),
        change: "c".into(),
        baseline: data[0].0.into(),
        variants: data.iter().map(|d| d.0.to_string()).collect(),
        metrics: vec![MetricDef {
            name: metric.into(),
            unit: unit.into(),
            kind,
        }],
        samples,
        tables: vec![],
        plots: vec![],
        expected_shape: String::new(),
        config: serde_json::Value::Null,
        oversubscribed: false,
    };
    ExperimentReport::new(r, 0.0)
}

pub(super) fn claim(deterministic: bool, criterion: Criterion) -> Claim {
    Claim {
        seed: "000",
        seed_file: "000_x.txt",
        source: "table",
        experiment: "exp",
        item: "000 table",
        kind: ClaimKind::Experiment,
        quote: "q",
        links: &[],
        proxy: None,
        bound: None,
        mainline: None,
        resolution: None,
        claim: "c",
        seed_figure: "f",
        deterministic,
        caveat: None,
        noise_floor: None,
        tail_of: None,
        criterion,
    }
}

const DOWN: Criterion = Criterion::Direction {
    metric: "m",
    against: "off",
    variant: "on",
    expect: Expect::Decrease,
    min_ratio: 1.0,
};

pub(super) fn count() -> MetricKind {
    MetricKind::Count {
        higher_is_better: false,
    }
}

#[test]
fn deterministic_direction_needs_a_significant_sign_test() {
    let c = claim(true, DOWN);
    let judge_on = |off: &[f64], on: &[f64]| {
        judge(&c, &report("m", count(), "%", &[("off", off), ("on", on)]))
    };
    // 5 of 5 seeds lower: p = 1/32.
    let j = judge_on(&[5.0, 6.0, 7.0, 8.0, 9.0], &[4.0, 5.5, 6.0, 7.9, 8.0]);
    assert_eq!(j.verdict, Verdict::Reproduced, "{j:?}");
    assert!(j.lab_figure.contains("5/5 seeds"), "{}", j.lab_figure);
    // 10 of 12 lower: p = 79/4096, one seed the other way does not decide it.
    let off: Vec<f64> = (0..12).map(|k| 10.0 + f64::from(k)).collect();
    let mut on: Vec<f64> = off.iter().map(|x| x - 1.0).collect();
    on[3] += 1.5;
    on[7] += 1.5;
    assert_eq!(judge_on(&off, &on).verdict, Verdict::Reproduced);
    // 9 of 12 lower: p = 299/4096, the right way but not shown.
    on[9] += 1.5;
    let j = judge_on(&off, &on);
    assert_eq!(j.verdict, Verdict::Partly, "{j:?}");
    assert!(j.reason.contains("9 of 12"), "{}", j.reason);
    // 3 of 3 is too few seeds to tell (p = 1/8).
    let j = judge_on(&[5.0, 6.0, 7.0], &[4.0, 5.5, 6.0]);
    assert_eq!(j.verdict, Verdict::Partly, "{j:?}");
    assert!(j.reason.contains("3 of 3"), "{}", j.reason);
    // A seed where nothing moved is left out: 5 of 5 untied.
    let j = judge_on(
        &[5.0, 6.0, 7.0, 8.0, 9.0, 3.0],
        &[4.0, 5.5, 6.0, 7.9, 8.0, 3.0],
    );
    assert_eq!(j.verdict, Verdict::Reproduced, "{j:?}");
    // One exact figure (an instruction count) is judged as it is.
    let j = judge_on(&[60.0], &[55.0]);
    assert_eq!(j.verdict, Verdict::Reproduced, "{j:?}");
    // The wrong way.
    assert_eq!(
        judge_on(&[5.0, 6.0], &[6.0, 7.0]).verdict,
        Verdict::NotReproduced
    );
}

#[test]
fn timing_direction_uses_the_paired_test_and_the_ratio() {
    let c = claim(false, DOWN);
    let lat = MetricKind::Latency;
    let sig = report(
        "m",
        lat,
        "ns",
        &[
            ("off", &[10.0, 20.0, 30.0, 40.0, 50.0]),
            ("on", &[9.0, 18.2, 26.9, 36.1, 44.8]),
        ],
    );
    let j = judge(&c, &sig);
    assert_eq!(j.verdict, Verdict::Reproduced, "{j:?}");
    // About ×0.9 in every pair: a factor, tested on the logarithms.
    assert_eq!(j.evidence.test, "paired t on logarithms");
    assert!(j.evidence.p.unwrap() < 0.05);
    let noisy = report(
        "m",
        lat,
        "ns",
        &[("off", &[10.0, 20.0, 30.0]), ("on", &[12.0, 10.0, 29.0])],
    );
    let j = judge(&c, &noisy);
    assert_eq!(j.verdict, Verdict::Undecided, "{j:?}");
    assert!(j.reason.contains("includes no change"), "{}", j.reason);
    // The same noise with the point on the other side: the same verdict, not a flip to
    // `not reproduced`.
    let other_side = report(
        "m",
        lat,
        "ns",
        &[("off", &[12.0, 10.0, 29.0]), ("on", &[10.0, 20.0, 30.0])],
    );
    assert_eq!(judge(&c, &other_side).verdict, Verdict::Undecided);
    // Wholly the wrong way: resolved, not reproduced.
    let up = report(
        "m",
        lat,
        "ns",
        &[
            ("off", &[9.0, 18.2, 26.9, 36.1, 44.8]),
            ("on", &[10.0, 20.0, 30.0, 40.0, 50.0]),
        ],
    );
    let j = judge(&c, &up);
    assert_eq!(j.verdict, Verdict::NotReproduced, "{j:?}");
    assert!(j.reason.contains("other side"), "{}", j.reason);
    let big = Criterion::Direction {
        metric: "m",
        against: "off",
        variant: "on",
        expect: Expect::Decrease,
        min_ratio: 3.0,
    };
    let j = judge(&claim(false, big.clone()), &sig);
    assert_eq!(j.verdict, Verdict::Partly);
    assert!(j.reason.contains("smaller than ×3"), "{}", j.reason);
    // About ×0.3 but one pair at ×1 (a preempted fast run): the interval holds both no
    // change and ×3, so the run cannot tell.
    let tail = report(
        "m",
        lat,
        "ns",
        &[
            ("off", &[4000.0, 4000.0, 4000.0, 4000.0]),
            ("on", &[4000.0, 1300.0, 1400.0, 1200.0]),
        ],
    );
    let j = judge(&claim(false, big), &tail);
    assert_eq!(j.verdict, Verdict::Undecided, "{j:?}");
    assert!(j.reason.contains("both no change and ×3"), "{}", j.reason);
    assert!(j.evidence.ratio_ci95.is_some());
}

#[test]
fn a_noise_floor_over_its_mark_makes_the_claim_not_measurable() {
    let mut c = claim(false, DOWN);
    c.noise_floor = Some(NoiseFloor {
        metric: "waited",
        variant: "on",
        at_least: 1.0,
        why: "the tail is the machine's",
    });
    let mut r = report(
        "m",
        MetricKind::Latency,
        "ns",
        &[
            ("off", &[10.0, 20.0, 30.0, 40.0, 50.0]),
            ("on", &[1.0, 2.0, 3.0, 4.0, 5.0]),
        ],
    );
    assert_eq!(judge(&c, &r).verdict, Verdict::Reproduced);
    let waited = |k: usize, v: f64| Sample {
        variant: "on".into(),
        metric: "waited".into(),
        repetition: k,
        seed: Some(k as u64),
        value: v,
    };
    r.result.samples.extend([waited(0, 0.5), waited(1, 1.0)]);
    assert_eq!(judge(&c, &r).verdict, Verdict::Reproduced);
    r.result.samples.push(waited(2, 2.0));
    let j = judge(&c, &r);
    assert_eq!(j.verdict, Verdict::Undecided, "{j:?}");
    assert!(
        j.reason.contains("the tail is the machine's"),
        "{}",
        j.reason
    );
}

#[test]
fn grows_needs_every_step() {
    const SWEEP: &[&str] = &["b1", "b2", "b3"];
    let c = claim(
        false,
        Criterion::Grows {
            metric: "m",
            sweep: SWEEP,
            min_ratio: 4.0,
            max_ratio: 20.0,
        },
    );
    let lat = MetricKind::Latency;
    let up = report(
        "m",
        lat,
        "ns",
        &[
            ("b1", &[1000.0, 1100.0]),
            ("b2", &[2000.0, 2300.0]),
            ("b3", &[8000.0, 9000.0]),
        ],
    );
    let j = judge(&c, &up);
    assert_eq!(j.verdict, Verdict::Reproduced, "{j:?}");
    assert!(
        j.lab_figure.starts_with("1.05 µs → 8.50 µs (×8.10"),
        "{}",
        j.lab_figure
    );
    let bumpy = report(
        "m",
        lat,
        "ns",
        &[
            ("b1", &[1000.0, 1100.0]),
            ("b2", &[9000.0, 9300.0]),
            ("b3", &[8000.0, 9000.0]),
        ],
    );
    assert_eq!(judge(&c, &bumpy).verdict, Verdict::Partly);
}

#[test]
fn within_band_needs_a_tight_interval() {
    let c = claim(
        false,
        Criterion::Within {
            metric: "m",
            against: "off",
            variant: "on",
            lo: -0.02,
            hi: 0.02,
        },
    );
    let rate = MetricKind::Rate;
    let tight = report(
        "m",
        rate,
        "/s",
        &[
            ("off", &[100.0, 200.0, 300.0]),
            ("on", &[99.5, 199.5, 298.0]),
        ],
    );
    assert_eq!(judge(&c, &tight).verdict, Verdict::Reproduced);
    let loose = report(
        "m",
        rate,
        "/s",
        &[
            ("off", &[100.0, 200.0, 300.0]),
            ("on", &[108.0, 190.0, 300.0]),
        ],
    );
    // +8%, -5%, 0%: an interval (±16%) wider than the ±2% band cannot judge it.
    let j = judge(&c, &loose);
    assert_eq!(j.verdict, Verdict::Undecided, "{j:?}");
    assert!(
        j.reason
            .contains("wider than the seed's range -2.00%..+2.00%"),
        "{}",
        j.reason
    );
    // +2.2%, +2.7%, +3.2%: the mean is outside ±2%, the interval (±1.2%) reaches back
    // into it.
    let straddles = report(
        "m",
        rate,
        "/s",
        &[
            ("off", &[100.0, 200.0, 300.0]),
            ("on", &[102.2, 205.4, 309.6]),
        ],
    );
    let j = judge(&c, &straddles);
    assert_eq!(j.verdict, Verdict::Undecided, "{j:?}");
    assert!(j.reason.contains("too noisy to tell"), "{}", j.reason);
    let off = report(
        "m",
        rate,
        "/s",
        &[
            ("off", &[100.0, 100.0, 100.0, 100.0]),
            ("on", &[80.0, 81.0, 80.0, 81.0]),
        ],
    );
    assert_eq!(judge(&c, &off).verdict, Verdict::NotReproduced);
    // Two pairs of the same: -19% ± 12.7%, an interval wider than the band, is not
    // judged however far out its point lies (the next run's interval may reach the band).
    let two = report(
        "m",
        rate,
        "/s",
        &[("off", &[100.0, 100.0]), ("on", &[80.0, 82.0])],
    );
    assert_eq!(judge(&c, &two).verdict, Verdict::Undecided);
}

#[test]
fn largest_under_finds_the_seeds_step() {
    const SWEEP: &[(&str, &str)] = &[("b1", "cap 0"), ("b2", "cap 1"), ("b3", "cap 2")];
    let c = |expected: &'static str| {
        claim(
            false,
            Criterion::LargestUnder {
                metric: "m",
                sweep: SWEEP,
                limit: 100.0,
                expected: match expected {
                    "cap 0" => &["cap 0"],
                    "cap 1" => &["cap 1"],
                    _ => &["cap 2"],
                },
            },
        )
    };
    let lat = MetricKind::Latency;
    let r = report(
        "m",
        lat,
        "ns",
        &[("b1", &[10.0]), ("b2", &[50.0]), ("b3", &[150.0])],
    );
    let j = judge(&c("cap 1"), &r);
    assert_eq!(j.verdict, Verdict::Reproduced);
    assert!(j.lab_figure.starts_with("cap 1"), "{}", j.lab_figure);
    assert_eq!(judge(&c("cap 2"), &r).verdict, Verdict::Partly);
    assert_eq!(judge(&c("cap 0"), &r).verdict, Verdict::Partly);
    let r = report(
        "m",
        lat,
        "ns",
        &[("b1", &[500.0]), ("b2", &[50.0]), ("b3", &[150.0])],
    );
    assert_eq!(judge(&c("cap 2"), &r).verdict, Verdict::NotReproduced);
    // b3 at 95 ± 30: whether it is under 100 is noise.
    let r = report(
        "m",
        lat,
        "ns",
        &[
            ("b1", &[10.0, 10.0]),
            ("b2", &[50.0, 52.0]),
            ("b3", &[93.0, 97.0]),
        ],
    );
    let j = judge(&c("cap 2"), &r);
    assert_eq!(j.verdict, Verdict::Undecided, "{j:?}");
    assert!(j.reason.contains("b3"), "{}", j.reason);
}

#[test]
fn missing_metric_variant_or_experiment_is_not_measurable() {
    let r = report("m", count(), "%", &[("off", &[1.0]), ("on", &[2.0])]);
    let c = claim(
        true,
        Criterion::Direction {
            metric: "other",
            against: "off",
            variant: "on",
            expect: Expect::Increase,
            min_ratio: 1.0,
        },
    );
    let j = judge(&c, &r);
    assert_eq!(j.verdict, Verdict::NotMeasurable);
    assert!(j.reason.contains("'other'"));
    let c = claim(
        true,
        Criterion::Direction {
            metric: "m",
            against: "off",
            variant: "revert",
            expect: Expect::Increase,
            min_ratio: 1.0,
        },
    );
    assert!(judge(&c, &r).reason.contains("'revert'"));
    let all = judge_all(std::slice::from_ref(&c), &[], &["exp".into()]);
    assert_eq!(all[0].verdict, Verdict::NotMeasurable);
    assert!(judge_all(&[c], &[], &[]).is_empty());
}

/// A report with several metrics' samples, each `(variant, metric, values)`.
pub(super) fn multi(kind: MetricKind, data: &[(&str, &str, &[f64])]) -> ExperimentReport {
    let mut r = report(data[0].1, kind, "", &[(data[0].0, &[])]);
    let mut names: Vec<&str> = data.iter().map(|d| d.1).collect();
    names.dedup();
    r.result.metrics = names
        .iter()
        .map(|n| MetricDef {
            name: (*n).into(),
            unit: String::new(),
            kind,
        })
        .collect();
    for (v, m, xs) in data {
        for (k, &x) in xs.iter().enumerate() {
            r.result.samples.push(Sample {
                variant: (*v).into(),
                metric: (*m).into(),
                repetition: k,
                seed: Some(k as u64),
                value: x,
            });
        }
    }
    r
}

#[test]
fn within_is_judged_on_log_ratios_in_the_seeds_asymmetric_band() {
    let c = claim(
        false,
        Criterion::Within {
            metric: "m",
            against: "off",
            variant: "on",
            lo: -0.0204,
            hi: 0.0139,
        },
    );
    // One pair at ×3.07 (+207%) and four small losses: the mean of y/x - 1 is +40%, the
    // mean log ratio about +19%; the old rule would have called it a gain.
    let skewed = report(
        "m",
        MetricKind::Rate,
        "/s",
        &[
            ("off", &[100.0, 100.0, 100.0, 100.0, 100.0]),
            ("on", &[307.0, 90.0, 92.0, 91.0, 93.0]),
        ],
    );
    let j = judge(&c, &skewed);
    assert_eq!(j.evidence.test, "paired 95% CI on log ratios");
    let [lo, hi] = j.evidence.ratio_ci95.unwrap();
    let gm = (3.07f64 * 0.90 * 0.92 * 0.91 * 0.93).powf(0.2);
    assert!(lo < gm && gm < hi, "{lo} {gm} {hi}");
    assert_eq!(j.verdict, Verdict::Undecided, "{j:?}");
    // Tight and inside the asymmetric band (-1% every pair): reproduced; +1.5% every
    // pair is outside the +1.39% edge though inside a symmetric ±2%.
    let inside = report(
        "m",
        MetricKind::Rate,
        "/s",
        &[
            ("off", &[100.0, 200.0, 300.0]),
            ("on", &[99.0, 198.1, 296.9]),
        ],
    );
    assert_eq!(judge(&c, &inside).verdict, Verdict::Reproduced);
    let outside = report(
        "m",
        MetricKind::Rate,
        "/s",
        &[("off", &[100.0, 200.0]), ("on", &[101.5, 203.0])],
    );
    let j = judge(&c, &outside);
    assert_eq!(j.verdict, Verdict::NotReproduced, "{j:?}");
    assert!(j.reason.contains("+1.50%"), "{}", j.reason);
}

#[test]
fn highest_compares_against_every_other_variant() {
    let c = claim(
        true,
        Criterion::Highest {
            metric: "m",
            variant: "revert",
            others: &["off", "series"],
        },
    );
    let seeds = [1.0, 2.0, 3.0, 4.0, 5.0];
    let plus = |k: f64| seeds.map(|x| x * 10.0 + k);
    let (off, series, above, below) = (plus(0.0), plus(50.0), plus(60.0), plus(40.0));
    let r = multi(
        count(),
        &[
            ("off", "m", &off),
            ("series", "m", &series),
            ("revert", "m", &above),
        ],
    );
    assert_eq!(judge(&c, &r).verdict, Verdict::Reproduced);
    // Above vanilla but below the series: not the highest of the three.
    let r = multi(
        count(),
        &[
            ("off", "m", &off),
            ("series", "m", &series),
            ("revert", "m", &below),
        ],
    );
    let j = judge(&c, &r);
    assert_eq!(j.verdict, Verdict::NotReproduced, "{j:?}");
    assert!(j.reason.contains("against series"), "{}", j.reason);
    assert!(j.lab_figure.contains("vs off") && j.lab_figure.contains("vs series"));
}

#[test]
fn the_seeds_rule_is_judged_and_mainlines_shown_beside() {
    let mut c = claim(
        true,
        Criterion::Direction {
            metric: "m",
            against: "off",
            variant: "original",
            expect: Expect::Increase,
            min_ratio: 2.0,
        },
    );
    c.mainline = Some("mainline");
    let r = multi(
        count(),
        &[
            ("off", "m", &[10.0, 11.0, 12.0, 13.0, 14.0]),
            ("original", "m", &[97.0, 98.0, 99.0, 96.0, 95.0]),
            ("mainline", "m", &[15.0, 16.0, 17.0, 18.0, 19.0]),
        ],
    );
    let j = judge(&c, &r);
    assert_eq!(j.verdict, Verdict::Reproduced);
    let m = j.mainline.expect("mainline beside");
    assert_eq!(m.variant, "mainline");
    assert_eq!(m.verdict, Verdict::Partly);
}

#[test]
fn a_quantiles_ci_is_never_narrower_than_its_resolution() {
    const SWEEP: &[&str] = &["b1", "b2"];
    let mut c = claim(
        false,
        Criterion::Grows {
            metric: "m",
            sweep: SWEEP,
            min_ratio: 30.0,
            max_ratio: f64::INFINITY,
        },
    );
    // Every repetition lands in the same sub-bucket: ×32 exactly.
    let r = report(
        "m",
        MetricKind::Latency,
        "ns",
        &[
            ("b1", &[1000.0, 1000.0, 1000.0]),
            ("b2", &[32000.0, 32000.0, 32000.0]),
        ],
    );
    let j = judge(&c, &r);
    assert!(!j.lab_figure.contains("resolution"), "{}", j.lab_figure);
    c.resolution = Some(1.0 / 16.0);
    let j = judge(&c, &r);
    assert!(
        j.lab_figure.contains("±6.25% resolution"),
        "{}",
        j.lab_figure
    );
    let [lo, hi] = j.evidence.ratio_ci95.unwrap();
    assert!(lo < 30.2 && hi > 33.9, "{lo} {hi}");
}

#[test]
fn growth_past_its_bound_is_not_the_seeds_effect() {
    const SWEEP: &[&str] = &["b1", "b2"];
    let c = claim(
        false,
        Criterion::Grows {
            metric: "m",
            sweep: SWEEP,
            min_ratio: 20.0,
            max_ratio: 65.0,
        },
    );
    let r = |b2: &[f64]| {
        report(
            "m",
            MetricKind::Latency,
            "ns",
            &[("b1", &[1000.0, 1100.0, 1050.0]), ("b2", b2)],
        )
    };
    assert_eq!(
        judge(&c, &r(&[30e3, 33e3, 31e3])).verdict,
        Verdict::Reproduced
    );
    // A thousandfold tail: preemptions, not the hold.
    let j = judge(&c, &r(&[4e6, 5e6, 4.5e6]));
    assert_eq!(j.verdict, Verdict::Undecided, "{j:?}");
    assert!(j.reason.contains("past the ×65"), "{}", j.reason);
    // A count that grows past it is not the seed's effect: it is what it is.
    let counts = report(
        "m",
        count(),
        "",
        &[("b1", &[1.0, 1.0, 1.0]), ("b2", &[4000.0, 4000.0, 4000.0])],
    );
    let j = judge(&claim(true, c.criterion.clone()), &counts);
    assert_eq!(j.verdict, Verdict::NotReproduced, "{j:?}");
}

#[test]
fn not_modelled_entries_are_listed_and_counted_apart() {
    let r = report("m", count(), "", &[("off", &[1.0]), ("on", &[2.0])]);
    let mut nm = claim(true, Criterion::NotModelled { why: "no CMA here" });
    nm.item = "000 cma";
    let j = judge(&nm, &r);
    assert_eq!(j.verdict, Verdict::NotModelled);
    assert_eq!(j.reason, "no CMA here");
    let mut mech = claim(true, DOWN);
    mech.kind = ClaimKind::Mechanism;
    mech.item = "000 lock";
    let exp = claim(
        true,
        Criterion::Direction {
            metric: "m",
            against: "off",
            variant: "on",
            expect: Expect::Increase,
            min_ratio: 1.0,
        },
    );
    let all = judge_all(&[exp, mech, nm], &[r], &[]);
    let t = tally(&all);
    assert_eq!(t.experiments, [1, 0, 0, 0, 0]);
    assert_eq!(t.mechanisms, [0, 0, 1, 0, 0]);
    assert_eq!((t.entries, t.entries_judged, t.entries_decided), (3, 2, 2));
    assert!(t.text().contains("Experiments: 1 of 1 reproduced"));
    // An exact count is described as one, not as a sign test over one seed.
    assert!(
        all[0].criterion_text.contains("an exact count"),
        "{}",
        all[0].criterion_text
    );
}
