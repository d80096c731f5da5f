use super::*;

#[test]
fn quick_run_has_the_expected_structure() {
    let r = PcpLockExp.run(&LabOpts::quick_test(1), &|_, _| {}).unwrap();
    assert_eq!(r.check_pairing(), Ok(()));
    assert_eq!(r.baseline, "owner-only");
    assert_eq!(r.variants, ["owner-only", "spinlock"]);
    let names: Vec<&str> = r.metrics.iter().map(|m| m.name.as_str()).collect();
    // Instructions are counted only from the zonealloc binary (this is a test harness).
    assert_eq!(names, ["faults/s-1", "faults/s-2", M_HIT_NS, M_SLOT_LINES]);
    assert!(r.config["instructions/op"]
        .as_str()
        .unwrap()
        .starts_with("not measurable here"));
    // Each counted metric says why it is missing, for the verdicts to quote.
    for m in [M_INSNS, M_FAULT_INSNS, M_FAULTS_PER_KINSN] {
        assert!(r.config["not_measured"][m]
            .as_str()
            .is_some_and(|w| w.contains("zonealloc")));
    }
    for v in &r.variants {
        for m in &r.metrics {
            let n = r.samples_of(v, &m.name).count();
            // The slot's layout is one figure per variant.
            assert_eq!(n, if m.name == M_SLOT_LINES { 1 } else { 2 });
        }
    }
    // The slot is the same type under both schemes.
    let lines = |v| {
        r.samples_of(v, M_SLOT_LINES)
            .map(|s| s.value)
            .collect::<Vec<_>>()
    };
    assert_eq!(lines("spinlock"), lines("owner-only"));
    assert!(lines("spinlock")[0] >= 1.0);
    assert!(r.samples.iter().all(|s| s.value > 0.0));
}

#[test]
fn three_workers_and_bad_sizes() {
    let opts = LabOpts {
        threads: Some(3),
        iterations: Some(1),
        ..LabOpts::quick_test(1)
    };
    let r = PcpLockExp.run(&opts, &|_, _| {}).unwrap();
    assert_eq!(r.metrics.len(), 5);
    assert_eq!(r.samples.len(), 8 + 2);
    let bad = LabOpts {
        zone_pages: Some(100),
        ..LabOpts::quick_test(1)
    };
    assert!(PcpLockExp.run(&bad, &|_, _| {}).is_err());
    let bad = LabOpts {
        threads: Some(0),
        ..LabOpts::quick_test(1)
    };
    assert!(PcpLockExp.run(&bad, &|_, _| {}).is_err());
}
