//! A late vmstat worker at its task's pause on the lazy-preemption kernel (`in_batch.rs`):
//! the frees its CPU holds there are committed first where they were single ones, and a
//! batch's commits put the run after the batch.

use super::mid_free_tests::stall_inside_a_free;
use super::tests::{at, busy, drain_line, feed_at, filled, movable, who};
use super::*;
use crate::trace::parse::Task;

#[test]
fn a_late_decay_at_a_pause_counts_the_single_frees_before_it() {
    // [`busy`] to 1.05 s (lazy preemption, the batched path's commits), then CPU 1's task
    // frees 600 pages CPU 0 allocated, one call each (`mm_page_free`, 1.0502 s on, a
    // microsecond apart) and pauses; CPU 0's event at 1.06 s comes past the pause (a tick
    // after the last free). `free_frozen_pages` committed each free in the call that
    // printed it: at the pause the worker's decay would drain, which the trace would show,
    // so the run waits for its kworker's drain (fails on the old code: it ran at the pause
    // with the frees held, lowering `high` and draining nothing).
    let mut r = filled(true);
    r.commit_at_batched = true;
    for k in 0..600u64 {
        feed_at(&mut r, 0, 3000, movable(20_000 + k));
    }
    busy(&mut r, 900, 1050);
    let high = r.zones[0].pcp_info(CpuId(1)).high;
    for k in 0..600u64 {
        let free = EventKind::Free {
            pfn: 20_000 + k,
            order: 0,
        };
        feed_at(&mut r, 1, 1_050_200_000 + k * 1000, free);
    }
    feed_at(&mut r, 0, 1_060_000_000, movable(30_000));
    feed_at(&mut r, 1, 1_061_000_000, movable(30_001));
    assert_eq!(r.zones[0].pcp_info(CpuId(1)).high, high);
    let line = at(1, 1_070_000_000, drain_line(20_000), who(Task::CpuWorker));
    r.feed(&line, Inferred::Drain { owner: 1 }).unwrap();
    assert!(r.counts.decay_drained_pages > 0);
}

#[test]
fn a_late_decay_at_a_pause_inside_a_batch_runs_after_its_commits() {
    // [`stall_inside_a_free`] on the lazy kernel: the free of 8000 at 1.0502 s is a batch's
    // print, the batch stalls past the pause (1.0542 s) and commits at 1.060001 s: the run
    // waits through the commits (`pcp_spin_trylock` pins the task) and goes at the task's
    // next event, after them (fails on the old code: it ran at the pause, in the stall).
    let (mut r, high, stalled) = stall_inside_a_free(false);
    assert_eq!(stalled, high);
    assert_eq!(r.zones[0].pcp_info(CpuId(1)).high, high, "inside the batch");
    feed_at(&mut r, 1, 1_060_100_000, movable(8002));
    assert!(r.zones[0].pcp_info(CpuId(1)).high < high);
}
