//! A late vmstat worker on a CPU that goes idle: the kworker ran before the idle task, however
//! short the gap after the task's last event (`vmstat/late.rs`, `deadline`).

use super::tests::{at, busy, feed_at, filled, movable};
use super::*;
use crate::trace::parse::{Ctx, Task};

/// [`busy`] to 1.05 s (the worker expired at 0.988 s, queued behind the task), the task's
/// allocation of 9000 at 1.0498 s, then `who`'s free of it at 1.051 s, 1.2 ms later (less
/// than a tick): `high` before, and after that free.
fn high_around_a_free_by(who: Who) -> (i32, i32) {
    let mut r = filled(true);
    let high = r.zones[0].pcp_info(CpuId(1)).high;
    busy(&mut r, 900, 1050);
    feed_at(&mut r, 1, 1_049_800_000, movable(9000));
    let free = EventKind::Free {
        pfn: 9000,
        order: 0,
    };
    r.feed(&at(1, 1_051_000_000, free, who), Inferred::None)
        .unwrap();
    (high, r.zones[0].pcp_info(CpuId(1)).high)
}

#[test]
fn a_late_decay_runs_before_its_cpus_idle_task() {
    // `<idle>-0`'s softirq free (`..s1.`) 1.2 ms after the task's last event: the CPU went
    // idle, so the kworker, runnable since the tick after 0.988 s, had run (7.2-4g-6cpu
    // p_fork, CPU 1, 399.793462 -> 399.796770). Fails on the old code, which waited for a gap
    // of a tick.
    let idle = Who::new(Task::Idle, Some(0), Ctx::parse(b"..s1."));
    let (high, after) = high_around_a_free_by(idle);
    assert!(after < high, "{high} -> {after}");
    // The task's own free in the same gap is no sign of the CPU going idle: still late.
    let (high, after) = high_around_a_free_by(Who::UNKNOWN);
    assert_eq!(after, high);
}
