use super::run::RunOut;
use super::*;

#[test]
fn quick_run_has_the_expected_structure() {
    let mut opts = LabOpts::quick_test(1);
    opts.iterations = Some(2);
    let r = BatchScale.run(&opts, &|_, _| {}).unwrap();
    assert_eq!(r.check_pairing(), Ok(()));
    assert_eq!(r.variants.len(), 14);
    assert_eq!(r.baseline, "batch=63");
    assert_eq!(r.variants[0], r.baseline);
    // No instruction counts with --quick; no node metric on one node.
    assert_eq!(r.metrics.len(), 10);
    assert!(r.config["numa"].is_null());
    // Nine metrics per variant and iteration, and the cap conclusion once per iteration.
    assert_eq!(r.samples.len(), 14 * 9 * 2 + 2);
    for m in r.metrics.iter().filter(|m| m.name != M_CAP) {
        for v in &r.variants {
            let n = r.samples_of(v, &m.name).count();
            assert_eq!(n, 2, "{v} {}", m.name);
        }
    }
    assert!(r
        .samples
        .iter()
        .filter(|s| s.metric == M_RATE)
        .all(|s| s.value > 0.0));
    let caps: Vec<f64> = r
        .samples
        .iter()
        .filter(|s| s.metric == M_CAP)
        .map(|s| s.value)
        .collect();
    assert_eq!(caps.len(), 2);
    // The sweep reaches 4095 and one step beyond (cap 7).
    assert!(caps.iter().all(|c| (-1.0..=7.0).contains(c)));
    assert!(r.variants.iter().any(|v| v == "batch=8191"));
    // Hold times and throughput against the batch, and both against the cap.
    assert_eq!(r.plots.len(), 4);
    assert_eq!(r.plots[0].series.len(), 5);
    assert!(r.plots[0]
        .series
        .iter()
        .all(|s| s.points.len() == BATCHES.len()));
    assert!(r.plots[2].series.iter().all(|s| s.points.len() == 6));
    assert_eq!(r.tables[0].rows.len(), BATCHES.len() + 1);
}

#[test]
fn two_workers_and_bad_sizes() {
    let mut opts = LabOpts::quick_test(1);
    opts.threads = Some(2);
    let r = BatchScale.run(&opts, &|_, _| {}).unwrap();
    assert_eq!(r.samples.len(), 14 * 9 + 1);
    let mut o = LabOpts::quick_test(1);
    o.zone_pages = Some(1000);
    assert!(BatchScale.run(&o, &|_, _| {}).is_err());
    let mut o = LabOpts::quick_test(1);
    o.threads = Some(0);
    assert!(BatchScale.run(&o, &|_, _| {}).is_err());
}

/// Seed 001's claim, as the work done per zone-lock hold (deterministic with one worker):
/// with high = 2 x batch and no scaling, each refill and each bulk free moves about a batch
/// of pages under the lock, so the hold grows with the batch; and with the kernel's own
/// batch, raising CONFIG_PCP_BATCH_SCALE_MAX lets a refill move more pages per hold.
#[test]
fn hold_work_grows_with_batch_and_scale_cap() {
    let p = Params {
        threads: 1,
        pages: 4096,
        rounds: 2,
        zone_pages: 1 << 14,
        nodes: 1,
    };
    let swept: Vec<RunOut> = [63, 255, 1023]
        .iter()
        .map(|&b| {
            run_once(
                p,
                specs()
                    .into_iter()
                    .find(|s| s.batch == Some(b))
                    .unwrap()
                    .pcp,
            )
            .unwrap()
        })
        .collect();
    for w in swept.windows(2) {
        assert!(
            w[1].refill_pages > 2.0 * w[0].refill_pages,
            "{} {}",
            w[0].refill_pages,
            w[1].refill_pages
        );
        assert!(
            w[1].lock_pages > 2.0 * w[0].lock_pages,
            "{} {}",
            w[0].lock_pages,
            w[1].lock_pages
        );
    }
    let cap = |k: u8| {
        let s = specs()
            .into_iter()
            .find(|s| s.batch.is_none() && s.pcp.batch_scale_max == k)
            .unwrap();
        run_once(p, s.pcp).unwrap()
    };
    let (c0, c5) = (cap(0), cap(5));
    assert!(
        c5.refill_pages > c0.refill_pages,
        "{} {}",
        c0.refill_pages,
        c5.refill_pages
    );
    // The same numbers on a second run: the proxy is exact.
    let again = run_once(p, specs()[0].pcp).unwrap();
    assert_eq!(again.refill_pages, swept[0].refill_pages);
    assert_eq!(again.lock_pages, swept[0].lock_pages);
}

#[test]
fn largest_cap_under_the_bound() {
    let p = |v: &[f64]| -> Vec<(u32, f64)> { v.iter().map(|&x| (63, x)).collect() };
    assert_eq!(
        largest_cap_under(&p(&[2e3, 4e3, 8e3, 16e3, 30e3, 60e3]), 1e5),
        5.0
    );
    assert_eq!(
        largest_cap_under(&p(&[2e3, 4e3, 8e3, 16e3, 120e3, 240e3]), 1e5),
        3.0
    );
    assert_eq!(largest_cap_under(&p(&[2e5, 4e3, 8e3]), 1e5), 2.0);
    assert_eq!(largest_cap_under(&p(&[2e5, 4e5]), 1e5), -1.0);
}

/// Two nodes, node-local allocation: each node's zone lock is taken by that node's CPUs
/// only, where one node's lock serves them all; the work done under each hold, which the
/// seed's claims judge, does not change.
#[test]
fn on_two_nodes_each_zone_lock_serves_its_own_cpus() {
    let p = |nodes: usize| Params {
        threads: 2,
        pages: 4096,
        rounds: 2,
        zone_pages: 1 << 15,
        nodes,
    };
    let pcp = specs()[0].pcp;
    let one = run_once(p(1), pcp).unwrap();
    let two = run_once(p(2), pcp).unwrap();
    assert_eq!((one.lock_sharers, two.lock_sharers), (2, 1));
    assert!(
        (one.lock_pages - two.lock_pages).abs() <= 0.01 * one.lock_pages,
        "{} {}",
        one.lock_pages,
        two.lock_pages
    );
    assert_eq!(one.refill_pages, two.refill_pages);
}

#[test]
fn quick_run_on_two_nodes_says_so() {
    let mut opts = LabOpts::quick_test(1);
    opts.nodes = 2;
    opts.variants = Some(vec!["default scale=5".into()]);
    let r = BatchScale.run(&opts, &|_, _| {}).unwrap();
    assert_eq!(r.check_pairing(), Ok(()));
    assert_eq!(r.variants, ["batch=63", "default scale=5"]);
    assert_eq!(r.config["nodes"], 2);
    assert_eq!(r.config["threads"], 2);
    assert_eq!(r.config["numa"]["cpu_nodes"], serde_json::json!([0, 1]));
    assert!(r.metrics.iter().any(|m| m.name == M_LOCK_SHARERS));
    let sharers: Vec<f64> = r
        .samples
        .iter()
        .filter(|s| s.metric == M_LOCK_SHARERS)
        .map(|s| s.value)
        .collect();
    // One per variant; one node has no such metric (`quick_run_has_the_expected_structure`).
    assert_eq!(sharers, [1.0, 1.0]);
    opts.threads = Some(1);
    assert!(BatchScale.run(&opts, &|_, _| {}).is_err());
}
