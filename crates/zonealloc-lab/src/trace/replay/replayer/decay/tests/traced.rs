//! The workers' and the shepherd's runs the trace shows (`workqueue_execute_start` of
//! `vmstat_update` and `vmstat_shepherd`): each is the run, at its line; the timers stand
//! aside.

use super::*;
use crate::trace::replay::vmstat::RunsAhead;

/// CPU 1's `high` now.
fn high(r: &Replayer) -> i32 {
    r.zones[0].pcp_info(CpuId(1)).high
}

fn work(r: &mut Replayer, cpu: u32, ts_ns: u64, kind: EventKind<'static>) {
    let line = at(cpu, ts_ns, kind, who(Task::CpuWorker));
    r.feed(&line, Inferred::None).unwrap();
}

#[test]
fn a_traced_vmstat_update_is_the_workers_run_at_its_line() {
    // The model's timer would run CPU 1's worker at 0.988 s; the trace shows it at 0.3 s
    // and not again: `high` decays once, at 0.3 s, and the busy task to 1.3 s moves no timer.
    let mut r = filled(true);
    let want = r.zones[0].decay_pcp_high_preview(CpuId(1));
    assert!(want.high_after < want.high_before, "{want:?}");
    work(&mut r, 1, 300_000_000, EventKind::VmstatUpdate);
    assert_eq!(high(&r), want.high_after);
    busy(&mut r, 900, 1300);
    assert_eq!(high(&r), want.high_after);
    let vm = r.vmstat.as_ref().unwrap();
    assert!(vm.traced());
    assert_eq!((vm.runs, vm.traced_runs.runs), (1, 1));
}

#[test]
fn a_workers_drain_after_its_traced_run_is_no_second_run() {
    // The kworker's drain lines are the traced run's own: no mark, no run of the model.
    let mut r = filled(true);
    work(&mut r, 1, 300_000_000, EventKind::VmstatUpdate);
    let after = high(&r);
    let line = at(1, 300_010_000, drain_line(0), who(Task::CpuWorker));
    r.feed(&line, Inferred::Drain { owner: 1 }).unwrap();
    assert_eq!(high(&r), after);
    assert_eq!(r.vmstat.as_ref().map(|v| (v.runs, v.marks)), Some((1, 0)));
}

#[test]
fn runs_shown_ahead_put_the_timers_aside_from_the_first_event() {
    // The events ahead show a traced run: the busy CPU's timer (1.888 s, on the second
    // assumed at 0.9 s) never runs, before any traced line is reached; without them it does
    // (the late run at the task's pause).
    for traced in [false, true] {
        let mut r = filled(true);
        let mut ahead = RunsAhead::new(2);
        if traced {
            ahead.feed(&at(
                0,
                5_000_000_000,
                EventKind::VmstatShepherd,
                Who::UNKNOWN,
            ));
        }
        r.vmstat = None;
        r.set_runs_ahead(ahead);
        let before = high(&r);
        busy(&mut r, 900, 2050);
        busy(&mut r, 2060, 2061);
        assert_eq!(high(&r) == before, traced, "traced {traced}");
    }
}

#[test]
fn without_traced_workers_the_lines_change_nothing() {
    // `--no-traced-workers`: the lines are passed by, the model's timers run as before.
    let mut r = filled(true);
    r.traced_workers = false;
    let before = high(&r);
    work(&mut r, 1, 300_000_000, EventKind::VmstatUpdate);
    work(&mut r, 0, 300_000_000, EventKind::VmstatShepherd);
    assert_eq!(high(&r), before);
    assert!(r.vmstat.as_ref().is_none_or(|v| !v.traced() && v.runs == 0));
    busy(&mut r, 900, 1050);
    busy(&mut r, 1060, 1061);
    assert!(high(&r) < before);
}

#[test]
fn without_traced_workers_the_runs_are_checked_against_the_models() {
    // `--no-traced-workers` on a `--workqueue` capture: the model's runs while CPU 1 is
    // busy (0.9 to 1.06 s) are set against the trace's `vmstat_update` lines, one within
    // 50 ms of them and one (2.5 s) of none; the shepherd's line is not a worker's run.
    let mut r = filled(true);
    r.traced_workers = false;
    work(&mut r, 1, 300_000_000, EventKind::VmstatShepherd);
    busy(&mut r, 900, 1050);
    busy(&mut r, 1060, 1061);
    let ran = r.vmstat.as_ref().map_or(0, |v| v.runs);
    assert!(ran > 0);
    work(&mut r, 1, 1_055_000_000, EventKind::VmstatUpdate);
    work(&mut r, 1, 2_500_000_000, EventKind::VmstatUpdate);
    r.finish().unwrap();
    let c = r.counts.decay_check;
    assert_eq!((c.traced, c.modelled, c.near), (2, ran, 1));
}

#[test]
fn without_traced_workers_a_run_whose_kworker_drained_is_counted_apart() {
    // CPU 1's traced run at 0.3 s drained (its kworker's line 10 us on): the model's worker
    // ran there, at the drain; its run at 2.5 s drained nothing and is the timers' alone.
    let mut r = filled(true);
    r.traced_workers = false;
    work(&mut r, 1, 300_000_000, EventKind::VmstatUpdate);
    let line = at(1, 300_010_000, drain_line(0), who(Task::CpuWorker));
    r.feed(&line, Inferred::Drain { owner: 1 }).unwrap();
    work(&mut r, 1, 2_500_000_000, EventKind::VmstatUpdate);
    r.finish().unwrap();
    let c = r.counts.decay_check;
    assert_eq!((c.traced, c.drained), (2, 1));
    assert_eq!(c.exact - c.quiet_exact, 1, "{c:?}");
}

#[test]
fn a_traced_run_of_a_worker_the_model_stopped_is_counted_and_done() {
    // CPU 0 has no lists and no event: its run changes nothing and does not re-queue. A
    // second run with no shepherd between is one the model did not expect; after an event
    // on CPU 0 (`need_update`), the shepherd queues it, and its run is expected.
    let mut r = filled(true);
    work(&mut r, 0, 100_000_000, EventKind::VmstatUpdate);
    work(&mut r, 0, 1_100_000_000, EventKind::VmstatUpdate);
    let free = EventKind::Free {
        pfn: 9000,
        order: 0,
    };
    r.feed(&at(0, 1_500_000_000, free, Who::UNKNOWN), Inferred::None)
        .unwrap();
    work(&mut r, 0, 2_000_000_000, EventKind::VmstatShepherd);
    work(&mut r, 0, 2_000_001_000, EventKind::VmstatUpdate);
    let t = r.vmstat.as_ref().unwrap().traced_runs;
    assert_eq!((t.runs, t.shepherd, t.unexpected), (3, 1, 1));
    assert_eq!(r.vmstat.as_ref().unwrap().runs, 3);
}

#[test]
fn a_traced_run_counts_the_free_its_cpu_printed_before_it() {
    // 7.2-4g-wq p_prodcons: `dash-337`'s single free of 0x10b864 (line 38145) was committed
    // in its own call, before CPU 3's kworker ran; the replay held it until the CPU's next
    // other event, after the run, and it then drained 63 pages over the `high` the run had
    // lowered. The page is on the list when the traced run decays, and the run drains it.
    let mut r = filled(true);
    r.commit_at_batched = true;
    let alloc = EventKind::Alloc {
        pfn: 5000,
        order: 0,
        migratetype: 1,
        gfp_flags: "GFP_HIGHUSER_MOVABLE",
    };
    r.feed(&at(1, 100_000_000, alloc, Who::UNKNOWN), Inferred::None)
        .unwrap();
    let free = EventKind::Free {
        pfn: 5000,
        order: 0,
    };
    r.feed(&at(1, 200_000_000, free, Who::UNKNOWN), Inferred::None)
        .unwrap();
    // `high` just above the count, so that the run drains.
    let count = r.zones[0].pcp_info(CpuId(1)).count;
    let tuning = zonealloc::PcpTuning {
        high: Some(count + 10),
        ..Default::default()
    };
    assert!(r.zones[0].set_pcp_tuning(CpuId(1), tuning));
    let before = r.zones[0].decay_pcp_high_preview(CpuId(1));
    assert!(before.drained > 0, "{before:?}");
    work(&mut r, 1, 300_000_000, EventKind::VmstatUpdate);
    assert!(r.deferred[1].is_empty());
    assert_eq!(r.counts.decay_drained_pages, before.drained as u64 + 1);
    let after = r.zones[0].pcp_info(CpuId(1));
    assert_eq!(after.count, after.high);
}

#[test]
fn an_idle_cpus_diffs_are_folded_when_its_tick_stops() {
    // quiet_vmstat: CPU 0's traced run folds its refill and re-queues its worker; its next
    // refill stays in part in CPU 0's diff; CPU 0 sleeps 100 ms, and at its next event (an
    // allocation off its list, which moves no counter) the zone's counter holds it. Fails
    // on the old code: only the worker's runs folded.
    let mut r = filled(true);
    r.set_vmstat_drift(true);
    let lag = |r: &Replayer| {
        let z = &r.zones[0];
        z.free_pages() as i64 - z.vmstat_free_pages() as i64
    };
    let alloc = |pfn| EventKind::Alloc {
        pfn,
        order: 0,
        migratetype: 1,
        gfp_flags: "GFP_HIGHUSER_MOVABLE",
    };
    let mut pfn = 20_000;
    let mut refill = |r: &mut Replayer, t: u64| {
        let buddy = r.zones[0].free_pages();
        while r.zones[0].free_pages() == buddy {
            r.feed(&at(0, t + pfn, alloc(pfn), Who::UNKNOWN), Inferred::None)
                .unwrap();
            pfn += 1;
        }
    };
    refill(&mut r, 299_000_000);
    work(&mut r, 0, 300_000_000, EventKind::VmstatUpdate);
    refill(&mut r, 300_100_000);
    let held = lag(&r);
    assert_ne!(held, 0, "a refill's pages stay in the diff");
    // 6 ms (a tick and a half at HZ 250) without an event: the tick may have run
    // throughout (tick_nohz_next_event), so nothing is folded. Fails on the old code (one
    // tick sufficed: the lag went to 0).
    let last = 300_100_000 + pfn;
    r.feed(
        &at(0, last + 6_000_000, alloc(29_999), Who::UNKNOWN),
        Inferred::None,
    )
    .unwrap();
    assert_eq!(lag(&r), held);
    r.feed(
        &at(0, 400_000_000, alloc(30_000), Who::UNKNOWN),
        Inferred::None,
    )
    .unwrap();
    assert_eq!(lag(&r), 0);
}
