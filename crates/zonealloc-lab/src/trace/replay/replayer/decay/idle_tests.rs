//! An idle CPU's vmstat worker: every run due in a stretch with no event is done at its
//! expiry, and a run held to the CPU's wake is not dated before the wake.

use super::tests::{at, drain_line, feed_at, filled, movable, sleeps_over_its_expiry, who};
use super::*;
use crate::trace::parse::Task;

#[test]
fn each_run_due_in_a_stretch_with_no_event_is_done() {
    // CPU 1's lists filled ([`filled`]) at 2 µs, 1000 of their pages allocated at 3 µs;
    // then no event on any CPU until CPU 0's at 4.5 s. CPU 1's worker, re-queued by each
    // run while `high` is above `high_min`, ran at 1, 2, 3 and 4 s: four decays, none of
    // which drains (its count stays below `high`). Asked once per event, it ran once.
    let mut r = filled(true);
    for pfn in 0..1000 {
        feed_at(&mut r, 1, 3000, movable(pfn));
    }
    let mut want = r.zones[0].pcp_info(CpuId(1));
    for _ in 0..4 {
        want.high = (want.high - (want.high >> 3)).max(want.high_min);
    }
    assert!(
        want.high > want.high_min && want.count < want.high,
        "{want:?}"
    );
    feed_at(&mut r, 0, 4_500_000_000, movable(30_000));
    assert_eq!(r.zones[0].pcp_info(CpuId(1)).high, want.high);
}

#[test]
fn a_woken_cpus_late_run_is_not_dated_before_its_wake() {
    // CPU 1 sleeps over its expiry at 0.988 s ([`sleeps_over_its_expiry`]) and on, to 2.5
    // s, when it wakes for a task (as 7.2-4g-loads p_file's CPU 0, idle from 159.41 over
    // its expiry at 159.78 to 161.41 s). Its run waits for the task; the trace's drain of
    // it comes at 2.7 s. Its limit counted from the expiry (1.984 s) would have run it at
    // CPU 1's next event, dated before the wake.
    let mut r = filled(true);
    let high = r.zones[0].pcp_info(CpuId(1)).high;
    let p = sleeps_over_its_expiry(&mut r);
    for ms in (1200..2500u64).step_by(100) {
        feed_at(&mut r, 0, ms * 1_000_000, movable(40_000 + ms));
    }
    feed_at(&mut r, 1, 2_500_000_000, movable(50_000));
    feed_at(&mut r, 1, 2_500_100_000, movable(50_001));
    assert_eq!(
        r.zones[0].pcp_info(CpuId(1)).high,
        high,
        "no run before the wake"
    );
    let drains = r.ours.get(0, 1).drain_pages;
    let line = at(1, 2_700_000_000, drain_line(8192), who(Task::CpuWorker));
    r.feed(&line, Inferred::Drain { owner: 1 }).unwrap();
    assert_eq!(r.zones[0].pcp_info(CpuId(1)).high, p.high_after);
    assert!(r.ours.get(0, 1).drain_pages > drains);
}

#[test]
fn a_held_run_at_its_kworkers_drain_counts_the_single_frees_before_it() {
    // With the batched path's commits, CPU 1's task frees 151 pages CPU 0 allocated (one
    // call each, 0.20 to 0.35 s; its allocation at 0.351 s commits them), then 8 more at
    // 0.36 s, the last events of its task, and CPU 1 sleeps over its expiry at 0.988 s: its
    // decay would drain, so the run waits for the CPU's wake, which is the kworker's own
    // drain at 1.26 s. The 8 single frees were committed in the calls that traced them, so
    // the run's decay drains down to `high` with their pages on the list (6.12-4g-6cpu
    // p_fork: `kworker/4:1`'s 8 frees from 396.658571, its decay drained 83 pages at
    // 396.788917; committed after the run, ours drained 74 and then 105 at the commit).
    let mut r = filled(true);
    r.commit_at_batched = true;
    let high = r.zones[0].pcp_info(CpuId(1)).high;
    for k in 0..200u64 {
        feed_at(&mut r, 0, 3000, movable(8192 + k));
    }
    let free = |pfn| EventKind::Free { pfn, order: 0 };
    for ms in 200..351u64 {
        feed_at(&mut r, 1, ms * 1_000_000, free(8192 + ms - 200));
    }
    feed_at(&mut r, 1, 351_000_000, movable(30_000));
    for k in 0..8u64 {
        feed_at(&mut r, 1, 360_000_000 + k, free(8192 + 151 + k));
    }
    for ms in (400..1200u64).step_by(10) {
        feed_at(&mut r, 0, ms * 1_000_000, movable(20_000 + ms));
    }
    let before = r.zones[0].pcp_info(CpuId(1));
    assert_eq!(before.high, high, "held to the wake");
    let line = at(1, 1_260_000_000, drain_line(8192), who(Task::CpuWorker));
    r.feed(&line, Inferred::Drain { owner: 1 }).unwrap();
    let after = r.zones[0].pcp_info(CpuId(1));
    assert!(after.high < before.high, "{before:?} {after:?}");
    assert_eq!(after.count, after.high, "{before:?} {after:?}");
}
