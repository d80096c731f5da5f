//! A worker the shepherd queued: the shepherd's time is not in the trace, and a run of its
//! that would drain waits for the trace's drain of it (`Vmstat::put_off`).

use super::*;
use crate::trace::replay::vmstat::RunsAhead;

/// CPU 1's `(count, high)`.
fn state(r: &Replayer) -> (i32, i32) {
    let p = r.zones[0].pcp_info(CpuId(1));
    (p.count, p.high)
}

/// CPU 1's lists filled ([`filled`]), its worker run down to `high_min` while its task moves
/// pipe pages (no counter, [`a_cpu_moving_only_pipe_pages_leaves_its_worker_stopped`]) and
/// stopped; at 50.05 s the task takes 400 pages (a refill raises `high`) and at 50.1 s
/// gives them back, leaving `count` above the decayed `high`, its counters moved. From
/// 50.11 s only CPU 0 has events: the shepherd runs on time (51.0 s) and queues CPU 1's
/// worker.
fn raised_after_a_stop() -> Replayer {
    let mut r = filled(true);
    take_and_give(&mut r, 600, "GFP_HIGHUSER|__GFP_ACCOUNT");
    cpu1_takes(&mut r, 50_050_000_000, 400);
    for k in 0..400u64 {
        let free = EventKind::Free {
            pfn: 8192 + k,
            order: 0,
        };
        feed_at(&mut r, 1, 50_100_000_000 + k * 1000, free);
    }
    r
}

/// CPU 0 allocates every 10 ms from `from_ms` to `to_ms` (trace time); CPU 1 has no event.
fn cpu0_until(r: &mut Replayer, from_ms: u64, to_ms: u64) {
    for ms in (from_ms..to_ms).step_by(10) {
        feed_at(r, 0, ms * 1_000_000, movable(30_000 + ms - 50_000));
    }
}

/// CPU 1's task takes `n` pages (8192 on), a microsecond apart from `from_ns`.
fn cpu1_takes(r: &mut Replayer, from_ns: u64, n: u64) {
    for k in 0..n {
        feed_at(r, 1, from_ns + k * 1000, movable(8192 + k));
    }
}

#[test]
fn a_shepherds_run_that_would_drain_waits_for_the_workers_drain_in_the_trace() {
    // 6.12-4g p_prodcons, CPU 1 after `od-341`'s refill at 91.215196: ours, queued by the
    // shepherd at CPU 0's next second, decayed and drained where the trace shows no drain;
    // the kernel's shepherd ran later (deferrable, on an idle CPU 0). The run waits: no
    // drain and no step through 52 s; at the kworker's drain line it runs, one step.
    let mut r = raised_after_a_stop();
    let p = r.zones[0].decay_pcp_high_preview(CpuId(1));
    assert!(p.drained > 0 && p.high_after < p.high_before, "{p:?}");
    let before = state(&r);
    let drains = r.ours.get(0, 1).drain_pages;
    cpu0_until(&mut r, 50_110, 52_300);
    assert_eq!(state(&r), before, "held to the trace's drain");
    assert_eq!(r.ours.get(0, 1).drain_pages, drains);
    let line = at(1, 52_300_000_000, drain_line(8192), who(Task::CpuWorker));
    r.feed(&line, Inferred::Drain { owner: 1 }).unwrap();
    assert_eq!(state(&r), (before.0 - p.drained, p.high_after));
    assert_eq!(r.ours.get(0, 1).drain_pages, drains + p.drained as u64);
}

#[test]
fn without_late_workers_the_shepherds_run_drains_at_once() {
    // `--no-late-workers`: the queued run is done when the shepherd runs (51.0 s).
    let mut r = raised_after_a_stop();
    r.set_late_workers(false);
    let p = r.zones[0].decay_pcp_high_preview(CpuId(1));
    cpu0_until(&mut r, 50_110, 51_100);
    assert_eq!(state(&r).1, p.high_after);
}

#[test]
fn a_workers_run_ahead_before_its_requeue_is_the_shepherds_queueing() {
    // As above, but CPU 1's task takes 50 pages at 50.2 s: at the shepherd's run (51.0 s)
    // the decay would drain nothing. The trace ahead shows `kworker/1` draining at 51.3 s,
    // before a run queued at 51.0 s could re-queue (51.988 s): that run is the first after
    // the stop, and the kernel's shepherd queued it then. `high` stays to 51.3 s; the old
    // code stepped it at 51.0 s and took the trace's run as done this second.
    let mut r = raised_after_a_stop();
    let mut ahead = RunsAhead::new(2);
    let line = at(1, 51_300_000_000, drain_line(8192), who(Task::CpuWorker));
    ahead.feed(&line);
    r.set_runs_ahead(ahead);
    cpu1_takes(&mut r, 50_200_000_000, 50);
    let p = r.zones[0].decay_pcp_high_preview(CpuId(1));
    assert!(p.drained == 0 && p.high_after < p.high_before, "{p:?}");
    cpu0_until(&mut r, 50_210, 51_300);
    assert_eq!(state(&r).1, p.high_before, "not queued at 51.0 s");
    r.feed(&line, Inferred::Drain { owner: 1 }).unwrap();
    assert_eq!(state(&r).1, p.high_after);
}

#[test]
fn a_put_off_shepherds_run_is_one_step_where_its_task_then_takes_pages() {
    // As the first test, but CPU 1's task takes pages at 51.2 s, after the shepherd's run
    // (51.0 s) was put off: the step no longer drains, and the run goes at the task's pause,
    // one step. The old code gave the put-off run a limit from the jiffy a late run is queued
    // at, which `Vmstat::put_off` left unset (0): the run was dated at that ancient limit,
    // re-queued itself a second on, before the event, and the workers asked again
    // (`Vmstat::due_again`) stepped `high` once per second since (7.2-4g-6cpu p_thp, CPU 0 at
    // 148.036 s: runs dated 1.797 s on).
    let mut r = raised_after_a_stop();
    let before = state(&r);
    cpu0_until(&mut r, 50_110, 51_200);
    assert_eq!(state(&r), before, "put off at 51.0 s");
    let p = r.zones[0].decay_pcp_high_preview(CpuId(1));
    cpu1_takes(&mut r, 51_200_000_000, p.drained as u64 + 20);
    let p = r.zones[0].decay_pcp_high_preview(CpuId(1));
    assert!(p.drained == 0 && p.high_after < p.high_before, "{p:?}");
    cpu0_until(&mut r, 51_210, 51_400);
    assert_eq!(state(&r).1, p.high_after, "one step at the task's pause");
}
