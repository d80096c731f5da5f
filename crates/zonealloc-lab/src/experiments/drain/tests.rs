use super::*;
use std::sync::mpsc;
use std::time::Duration;

/// Runs `opts` on another thread and fails if it does not finish within a minute (an
/// owner drain that waits forever).
fn run_guarded(opts: LabOpts) -> Result<ExperimentResult, LabError> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(DrainExp.run(&opts, &|_, _| {}));
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("drain experiment hung")
}

#[test]
fn quick_run_has_the_expected_structure() {
    let r = run_guarded(LabOpts::quick_test(1)).unwrap();
    assert_eq!(r.check_pairing(), Ok(()));
    assert!(r.samples.iter().all(|s| s.seed.is_some()));
    assert_eq!(r.baseline, "owner drain");
    assert_eq!(r.variants, ["owner drain", "remote drain"]);
    assert_eq!(r.metrics.len(), 11);
    for v in &r.variants {
        for m in &r.metrics {
            let n = r.samples_of(v, &m.name).count();
            // The simulated clock runs on its own twelve seeds.
            let want = if [M_SIM_MAX, M_SIM_AVG].contains(&m.name.as_str()) {
                12
            } else {
                2
            };
            assert_eq!(n, want, "{v} {}", m.name);
        }
    }
    // Remote drain's worst simulated drain is one step per CPU; owner drain's waits for a
    // busy owner's processing on some seed.
    assert!(r
        .samples_of("remote drain", M_SIM_MAX)
        .all(|s| s.value == 2.0));
    assert!(r
        .samples_of("owner drain", M_SIM_MAX)
        .any(|s| s.value > 2.0));
    assert_eq!(r.plots.len(), 1);
    assert_eq!(r.plots[0].kind, PlotKind::Cdf);
    // Wall time and wall time less the run-queue wait, per variant.
    assert_eq!(r.plots[0].series.len(), 4);
    assert!(r.plots[0].series.iter().all(|s| s.points.len() == 2 * 40));
    assert_eq!(r.tables[0].rows.len(), 2);
}

#[test]
fn one_and_three_workers_finish() {
    for t in [1, 3] {
        let r = run_guarded(LabOpts {
            threads: Some(t),
            iterations: Some(1),
            ..LabOpts::quick_test(1)
        })
        .unwrap();
        assert_eq!(r.samples.len(), 18 + 2 * 2 * 12);
    }
    assert!(run_guarded(LabOpts {
        zone_pages: Some(100),
        ..LabOpts::quick_test(1)
    })
    .is_err());
}

/// Seed 004's claim, as a count that does not depend on timing: owner drain has to ask every
/// busy owner with pages on its lists (one handshake each), remote drain asks none and
/// drains the lists itself.
#[test]
fn remote_drain_needs_no_owner_handshake() {
    for owners in [1, 2, 3] {
        let owner = probe::probe(DrainMode::Owner, owners, 64, 1).unwrap();
        let remote = probe::probe(DrainMode::Remote, owners, 64, 1).unwrap();
        assert_eq!(owner.owner_served, owners as u32, "{owner:?}");
        assert_eq!(owner.remote_pages, 0, "{owner:?}");
        assert_eq!(remote.owner_served, 0, "{remote:?}");
        assert!(remote.remote_pages > 0, "{remote:?}");
        assert!(remote.owner_served < owner.owner_served);
    }
}

#[test]
fn a_drain_split_adds_up() {
    let before = clock::ThreadClock {
        cpu_ns: 100,
        run_delay_ns: Some(1000),
    };
    let after = clock::ThreadClock {
        cpu_ns: 400,
        run_delay_ns: Some(1500),
    };
    let s = clock::Split::new(2000, before, after);
    assert_eq!((s.cpu, s.runqueue, s.blocked), (300, 500, 1200));
    // Clocks read around the timed window may exceed it: never more than the wall time.
    let s = clock::Split::new(600, before, after);
    assert_eq!(s.cpu + s.runqueue + s.blocked, 600);
    let s = clock::Split::new(
        600,
        before,
        clock::ThreadClock {
            run_delay_ns: None,
            ..after
        },
    );
    assert_eq!((s.cpu, s.runqueue, s.blocked), (300, 0, 300));
}

/// Two nodes: every CPU has a pageset in both nodes' zones, and `drain_all_pages` empties
/// them all (`drain_pages` walks every populated zone). A remote drain still asks no owner;
/// an owner drain asks each busy owner once (its work item drains both zones).
#[test]
fn on_two_nodes_a_drain_empties_every_pageset_of_every_cpu() {
    let one = probe::probe(DrainMode::Remote, 2, 64, 1).unwrap();
    let two = probe::probe(DrainMode::Remote, 2, 64, 2).unwrap();
    assert_eq!((one.pagesets, two.pagesets), (2, 4), "{one:?} {two:?}");
    assert_eq!(two.owner_served, 0, "{two:?}");
    // Each owner's pages of the other node's zone too.
    assert!(two.remote_pages > one.remote_pages, "{one:?} {two:?}");
    let owner = probe::probe(DrainMode::Owner, 2, 64, 2).unwrap();
    assert_eq!((owner.owner_served, owner.pagesets), (2, 4), "{owner:?}");
    assert_eq!(owner.remote_pages, 0, "{owner:?}");
}

#[test]
fn quick_run_on_two_nodes_says_so_and_doubles_remote_drain_work() {
    let r = run_guarded(LabOpts {
        nodes: 2,
        iterations: Some(1),
        ..LabOpts::quick_test(1)
    })
    .unwrap();
    assert_eq!(r.check_pairing(), Ok(()));
    assert_eq!(r.config["nodes"], 2);
    assert_eq!(r.config["numa"]["cpu_nodes"], serde_json::json!([0, 1]));
    assert_eq!(r.metrics.len(), 12);
    // One step per CPU and zone: 2 x 2 (one node: 2, `quick_run_has_the_expected_structure`).
    assert!(r
        .samples_of("remote drain", M_SIM_MAX)
        .all(|s| s.value == 4.0));
    for v in ["owner drain", "remote drain"] {
        assert!(r.samples_of(v, M_PAGESETS).all(|s| s.value == 4.0), "{v}");
    }
    assert!(r
        .samples_of("remote drain", M_HANDSHAKES)
        .all(|s| s.value == 0.0));
    assert!(r
        .samples_of(r.baseline.as_str(), M_OPS)
        .all(|s| s.value > 0.0));
    // One worker cannot stand on two nodes.
    let e = run_guarded(LabOpts {
        nodes: 2,
        threads: Some(1),
        ..LabOpts::quick_test(1)
    })
    .unwrap_err();
    assert!(e.0.contains("every node needs a worker"), "{e}");
}
