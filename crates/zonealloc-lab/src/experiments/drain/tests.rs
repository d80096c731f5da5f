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
        let owner = probe::probe(DrainMode::Owner, owners, 64).unwrap();
        let remote = probe::probe(DrainMode::Remote, owners, 64).unwrap();
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
