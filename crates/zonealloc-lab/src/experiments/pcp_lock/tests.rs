use super::*;

#[test]
fn quick_run_has_the_expected_structure() {
    let r = PcpLockExp.run(&LabOpts::quick_test(1), &|_, _| {}).unwrap();
    assert_eq!(r.baseline, "owner-only");
    assert_eq!(r.variants, ["owner-only", "spinlock"]);
    let names: Vec<&str> = r.metrics.iter().map(|m| m.name.as_str()).collect();
    // Instructions are counted only from the zonealloc binary (this is a test harness).
    assert_eq!(names, ["faults/s-1", "faults/s-2", M_HIT_NS]);
    assert!(r.config["instructions/op"]
        .as_str()
        .unwrap()
        .starts_with("not measurable here"));
    for v in &r.variants {
        for m in &r.metrics {
            let n = r.samples_of(v, &m.name).count();
            assert_eq!(n, 2);
        }
    }
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
    assert_eq!(r.metrics.len(), 4);
    assert_eq!(r.samples.len(), 8);
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
