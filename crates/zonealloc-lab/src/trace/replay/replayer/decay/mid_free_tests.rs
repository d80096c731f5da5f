//! A late vmstat worker and a free call under voluntary preemption
//! (`Replayer::mid_free_no_switch`): no run in a gap inside one, a run at the pause after a
//! single free.

use super::tests::{busy, feed_at, filled, movable};
use super::*;

/// [`busy`] to 1.05 s with `mid_free_no_switch` as given and the batched path's commits, then
/// CPU 1's task allocates 8000 and 8001 at 1.05 s and frees 8000 at 1.0502 s
/// (`mm_page_free`); `high` before.
fn busy_to_a_free(no_switch: bool) -> (Replayer, i32) {
    let mut r = filled(true);
    r.commit_at_batched = true;
    r.mid_free_no_switch = no_switch;
    let high = r.zones[0].pcp_info(CpuId(1)).high;
    busy(&mut r, 900, 1050);
    feed_at(&mut r, 1, 1_050_000_000, movable(8000));
    feed_at(&mut r, 1, 1_050_050_000, movable(8001));
    let free = EventKind::Free {
        pfn: 8000,
        order: 0,
    };
    feed_at(&mut r, 1, 1_050_200_000, free);
    (r, high)
}

/// [`busy_to_a_free`], then one free call that stalls: 8001 freed at 1.06 s
/// (`mm_page_free`), then both committed (`mm_page_free_batched`). The replay, `high`
/// before, and at the second free.
pub(super) fn stall_inside_a_free(no_switch: bool) -> (Replayer, i32, i32) {
    let (mut r, high) = busy_to_a_free(no_switch);
    feed_at(
        &mut r,
        1,
        1_060_000_000,
        EventKind::Free {
            pfn: 8001,
            order: 0,
        },
    );
    let stalled = r.zones[0].pcp_info(CpuId(1)).high;
    for pfn in [8000, 8001] {
        feed_at(&mut r, 1, 1_060_001_000, EventKind::FreeBatched { pfn });
    }
    (r, high, stalled)
}

#[test]
fn a_late_decay_does_not_run_in_a_stall_inside_a_free_call() {
    // Under voluntary preemption the gap between a batch's `free_pages_prepare` calls
    // (1.0502 s to 1.06 s) is no switch point: the worker waits on. Placed at the task's
    // "pause" (1.0542 s), it decays `high` there (fails on the old code). Under lazy
    // preemption it waits too, for what the free held at the pause turns out to be
    // (`in_batch.rs`; fails on the code before it, which ran it in the stall).
    for no_switch in [true, false] {
        let (_, high, stalled) = stall_inside_a_free(no_switch);
        assert_eq!(stalled, high, "{no_switch}");
    }
}

#[test]
fn a_late_decay_runs_at_the_pause_after_a_single_free() {
    // The free of 8000 at 1.0502 s is a single one: the next event on CPU 1 (an allocation
    // at 1.06 s) is no commit of it, so the kernel had committed it at once and the task
    // left the CPU in the gap: the run goes at that pause, before the allocation (fails on
    // the old code: it waited for the task's next pause).
    let (mut r, high) = busy_to_a_free(true);
    feed_at(&mut r, 1, 1_060_000_000, movable(8002));
    assert!(r.zones[0].pcp_info(CpuId(1)).high < high);
}
