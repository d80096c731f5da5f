//! The start's `high` read through refills (`StartHigh::refill`).

use super::tests::{high, printed};
use super::*;

/// A refill run of `pages` order-0 pages.
fn refill(s: &mut StartHigh, pages: i64) {
    s.other();
    s.refill(0, true);
    for _ in 1..pages {
        s.refill(0, false);
    }
}

/// 7.2-4g-wq p_thp, Normal CPU 1 (3115 pages at the file's start), as `delta`s: two quiet
/// runs, `od-595` takes 41 pages, refills 63, 126 and 252 (taking 63, 126 and 83), a quiet
/// run at 109.431012 with 3243 pages, then 169 taken, 504 refilled and 119 taken, a quiet run
/// at 110.420582 (3459), 308 taken and a quiet run at 111.417948 (3151).
fn od_595() -> StartHigh {
    let mut s = printed(1283);
    s.work_line(0);
    s.work_line(0);
    s.other();
    refill(&mut s, 63);
    refill(&mut s, 126);
    refill(&mut s, 252);
    s.other();
    s.work_line(128);
    s.other();
    refill(&mut s, 504);
    s.other();
    s.work_line(344);
    s.other();
    s.work_line(36);
    s.other();
    s
}

#[test]
fn the_quiet_runs_after_refills_bound_the_starts_high_through_their_raises() {
    let s = od_595();
    let h = high(1283, 7615);
    let got = s.infer(3115, &h, 5);
    // The raises are the runs' sizes (batch << alloc_factor, 0 to 3).
    let quiet = [(2, 0), (6, 128), (8, 344), (9, 36)];
    let holds = |x| {
        quiet
            .iter()
            .all(|&(n, d)| s.evolve(x, n, &h, 5) >= 3115 + d)
    };
    assert!(holds(got) && !holds(got - 1), "{got}");
    // The run at 109.431012 names it, not the two before the first refill, which the walk
    // stopped at before (4067): from there, that run would have drained 131 pages.
    assert!(s.evolve(got, 6, &h, 5) >= 3243);
    let old = first_above(1283, 7615, |x| decayed(x, 2, 1283) >= 3115);
    assert_eq!(old, 4067);
    assert!(s.evolve(old, 6, &h, 5) < 3243);
    assert!(got > old);
}

/// Two quiet runs, a refill run of `pages`, and a quiet run 900 pages up.
fn quiet_around_refill(pages: i64) -> StartHigh {
    let mut s = printed(1283);
    s.work_line(0);
    s.work_line(0);
    refill(&mut s, pages);
    s.other();
    s.work_line(900);
    s.other();
    s
}

#[test]
fn a_refill_that_max_nr_alloc_cut_short_ends_what_the_walk_reads() {
    // An order-0 refill of 100 pages is no `batch << alloc_factor`: its raise is unknown,
    // and the quiet run after it says nothing.
    let h = high(1283, 7615);
    assert_eq!(quiet_around_refill(100).infer(3115, &h, 5), 4067);
    // Sized, the same run bounds it.
    assert!(quiet_around_refill(126).infer(3115, &h, 5) > 4067);
}

#[test]
fn a_free_after_a_raise_bounds_high_only_through_the_raise() {
    // A free that drained nothing 2300 pages above the start's count (1000) after a run
    // and a raise of 2016: `high` then was above that count, the start's need not be.
    let mut s = printed(1283);
    s.work_line(0);
    refill(&mut s, 2016);
    s.other();
    s.no_drain(2300, 0);
    let h = high(1283, 7615);
    let got = s.infer(1000, &h, 5);
    assert!(s.evolve(got, 2, &h, 5) > 3300, "{got}");
    assert!(s.evolve(got - 1, 2, &h, 5) <= 3300, "{got}");
    // Read as before the raise it would have been above the count: 3301.
    assert_eq!(got, 1468);
}

#[test]
fn without_the_traces_lines_a_refill_ends_what_the_walk_reads() {
    let mut s = printed(1283);
    refill(&mut s, 63);
    s.no_drain(5000, 0);
    // The walk saw no `vmstat_update` line in the file (`Walk::settle_start_high`).
    s.no_lines();
    assert_eq!(s.infer(100, &high(1283, 7615), 5), 1283);
}

/// 6.12-4g-more p_sock, Normal CPU 3, as crafted `delta`s from a start count of 3000: a
/// refill of 63 before the file's first `vmstat_update` line, four runs that drain nothing
/// (63 pages above the start), then one that drains 100.
fn refill_before_the_first_line() -> StartHigh {
    let mut s = printed(1357);
    refill(&mut s, 63);
    s.other();
    for _ in 0..4 {
        s.work_line(63);
        s.other();
    }
    s.work_line(63);
    s.worker_drain(63, 100, 10_650_000_000);
    s.other();
    s
}

#[test]
fn in_a_file_that_traces_the_runs_a_refill_before_the_first_line_is_read_through() {
    let s = refill_before_the_first_line();
    let h = high(1283, 7615);
    let got = s.infer(3000, &h, 5);
    // The raise, then five runs' decay, leave the 2963 pages the draining run left.
    assert_eq!(s.evolve(got, 6, &h, 5), 2963, "{got}");
    assert!(s.evolve(got - 1, 6, &h, 5) < 2963, "{got}");
    // Not zoneinfo's 1357 (the walk closed at the refill): far below the count, from which
    // the first run would have drained.
    assert!(got > 3063, "{got}");
}

#[test]
fn in_a_file_that_traces_no_runs_a_refill_before_any_line_ends_the_walk() {
    let mut s = refill_before_the_first_line();
    s.no_lines();
    assert_eq!(s.infer(3000, &high(1283, 7615), 5), 1357);
    // Lines before the refill: no fallback is kept, the walk reads through the raise.
    let mut s = printed(1357);
    s.work_line(0);
    refill(&mut s, 63);
    s.other();
    s.work_line(63);
    s.worker_drain(63, 100, 1_650_000_000);
    s.other();
    s.no_lines();
    assert!(s.infer(3000, &high(1283, 7615), 5) > 3063);
}

/// 7.2-3g-16cpu p_prodcons, DMA32 CPU 6 (a file without `vmstat_update` lines), as `delta`s
/// from a start count of 896: `awk-407` refilled 63 and its batched frees drained at 938
/// pages, 5 ms in; zoneinfo printed 938.
fn awk_407(drain_ns: u64, pages: i64) -> StartHigh {
    let mut s = printed(938);
    refill(&mut s, pages);
    s.other();
    s.no_drain(41, drain_ns - 1);
    s.free_drain(42, drain_ns);
    s.no_lines();
    s
}

#[test]
fn without_lines_a_free_that_drains_after_refills_alone_bounds_the_start_through_them() {
    let h = high(875, 5911);
    // `high` + 63 <= 938: `high_min`, not zoneinfo's 938.
    assert_eq!(awk_407(5_000_000, 63).infer(896, &h, 5), 875);
    // The workers' clock places a run before the drain: the raises alone do not say.
    assert_eq!(awk_407(1_500_000_000, 63).infer(896, &h, 5), 938);
    // A refill `max_nr_alloc` cut short raised `high` by an unknown amount.
    assert_eq!(awk_407(5_000_000, 50).infer(896, &h, 5), 938);
}
