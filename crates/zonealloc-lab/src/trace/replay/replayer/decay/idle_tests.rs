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
