//! The start's `high` read up to the first refill or drain (`StartHigh`).

use super::*;

pub(super) fn high(lo: i64, max: i64) -> High {
    High {
        lo,
        hi: lo,
        max,
        grow: 63 << 5,
        batch: 63,
    }
}

pub(super) fn printed(printed: i64) -> StartHigh {
    StartHigh {
        printed,
        ..StartHigh::default()
    }
}

#[test]
fn a_decay_that_leaves_more_than_high_min_names_high_before_it() {
    // 7.2-4g p_thp, Normal CPU 0: 2032 pages, 170 drained, 1862 left.
    let mut s = printed(1283);
    s.no_drain(1, 0);
    s.worker_drain(-1, 1, 533_000_000);
    s.worker_drain(-2, 169, 533_000_000);
    s.other();
    let h = s.infer(2033, &high(1283, 7615), 5);
    assert!(h == 2127 || h == 2128, "{h}");
    assert_eq!(less(h), 1862);
}

#[test]
fn the_worker_runs_before_the_first_that_drains_took_an_eighth_each() {
    // 7.2-4g p_idle, Normal CPU 2: 1583 pages at the worker's first drain, 8.855 s into
    // the file, which drained 46 and left 1537. Eight runs before it drained nothing.
    let mut s = printed(1283);
    s.no_drain(300, 0);
    s.worker_drain(356, 46, 8_855_000_000);
    s.other();
    let h = s.infer(1227, &high(1283, 7615), 5);
    assert_eq!(decayed(h, 9, 1283), 1537, "{h}");
    assert!(decayed(h - 1, 9, 1283) < 1537, "{h}: not the least");
    // Not the `high` before the draining run (1756), which the replay's own eight runs
    // would bring below the count.
    assert_eq!(h, 5103);
    assert!(decayed(1756, 8, 1283) < 1583);
    // No start up to high_max decays to 1537 in 41 runs: high_max comes nearest.
    s.runs_before = Runs::Lines(40);
    assert_eq!(s.infer(1227, &high(1283, 7615), 5), 7615);
}

#[test]
fn frees_that_drain_nothing_hold_high_above_the_count() {
    let mut s = printed(1283);
    s.no_drain(4, 0);
    s.no_drain(9, 0);
    assert_eq!(s.infer(1846, &high(1283, 7615), 5), 1856);
    // Down to high_min at the first run: at most the largest high an eighth less of
    // which is high_min, whatever the frees said.
    s.worker_drain(0, 563, 0);
    assert_eq!(s.infer(1846, &high(1283, 7615), 5), 1466);
    assert_eq!(less(1466), 1283);
    assert!(less(1467) > 1283);
}

#[test]
fn a_vmstat_update_line_ends_the_first_draining_run() {
    // 7.2-4g-wq p_thp, Normal CPU 3 (c0 1998): four runs a second apart drained 78,
    // 237, 207 and 171 pages with no other event on the CPU. The first alone names
    // `high`: 1976 pages, 1898 left, so 2169 before it.
    let mut s = printed(1283);
    s.work_line(-22);
    for (line, pages) in [(673, 78), (2240, 237), (3297, 207), (4322, 171)] {
        if line > 673 {
            s.work_line(-22);
        }
        s.worker_drain(-22, pages, line * 1_000_000);
    }
    let h = s.infer(1998, &high(1283, 7615), 5);
    assert_eq!((h, less(h)), (2169, 1898));
}

#[test]
fn drains_more_than_a_quarter_second_apart_are_two_runs() {
    // Without the trace's lines: the gap alone ends the first run.
    let mut s = printed(1283);
    s.worker_drain(-22, 78, 673_000_000);
    s.worker_drain(-100, 237, 2_240_000_000);
    assert_eq!(s.infer(1998, &high(1283, 7615), 5), 2169);
}

#[test]
fn the_traced_lines_count_the_quiet_runs_before_the_first_that_drains() {
    // Two `vmstat_update` lines drained nothing, 0.5 s into the file: two runs took an
    // eighth each, not the none one a second would say.
    let mut s = printed(1283);
    s.work_line(0);
    s.work_line(0);
    s.work_line(0);
    s.worker_drain(0, 100, 500_000_000);
    let h = s.infer(2000, &high(1283, 7615), 5);
    assert_eq!(decayed(h, 3, 1283), 1900, "{h}");
}

#[test]
fn the_quiet_traced_runs_hold_high_above_the_count_at_each() {
    // 7.2-4g-wq p_prodcons, Normal CPU 2 (c0 1600, zoneinfo 1346): eight runs drained
    // nothing while the count fell 30 pages a run; the ninth drained 70 to high_min.
    let mut s = printed(1346);
    for k in 1..=8 {
        s.work_line(-30 * k);
    }
    s.work_line(-247);
    s.worker_drain(-247, 70, 12_665_000_000);
    s.other();
    let h = s.infer(1600, &high(1283, 7615), 5);
    let holds = |x| (1..=8).all(|k| decayed(x, k as u32, 1283) >= 1600 - 30 * k);
    assert!(holds(h) && !holds(h - 1), "{h}");
    assert_eq!(decayed(h, 9, 1283), 1283);
}

#[test]
fn frees_after_traced_runs_hold_the_decayed_high_above_the_count() {
    // 6.12-4g-wq p_prodcons, Normal CPU 3 (c0 1063): seven runs drained nothing; then
    // frees up to 2291 pages drained nothing and the next, at 2292, drained. `high` was
    // 2292 after the seven runs, so about 5840 at the start, not 2292.
    let mut s = printed(2044);
    for _ in 0..7 {
        s.work_line(-34);
    }
    s.no_drain(1228, 0);
    s.free_drain(1229, 7_000_000_000);
    let h = s.infer(1063, &high(1281, 7615), 5);
    assert_eq!(decayed(h, 7, 1281), 2292, "{h}");
}

#[test]
fn a_free_that_drains_holds_high_at_or_below_the_count() {
    // 7.2-4g-wq p_prodcons, Normal CPU 3 (c0 1726): the free that left 1777 drained
    // nothing, the next (1778) drained; zoneinfo printed 2900 later.
    let mut s = printed(2900);
    s.no_drain(51, 0);
    s.free_drain(52, 768_000_000);
    assert_eq!(s.infer(1726, &high(1283, 7615), 5), 1778);
    // A second later the worker's run before it took an eighth off: the start was the
    // largest `high` an eighth less of which is at most the count.
    let mut s = printed(2900);
    s.work_line(0);
    s.free_drain(52, 1_768_000_000);
    let h = s.infer(1726, &high(1283, 7615), 5);
    assert!(less(h) <= 1778 && less(h + 1) > 1778, "{h}");
    // After a refill, nothing.
    let mut s = printed(2900);
    s.close();
    s.free_drain(52, 0);
    assert_eq!(s.infer(1726, &high(1283, 7615), 5), 2900);
}

#[test]
fn a_refill_closes_what_the_start_shows() {
    let mut s = printed(1300);
    s.close();
    s.no_drain(400, 0);
    s.worker_drain(0, 100, 0);
    assert_eq!(s.infer(1000, &high(1283, 7615), 5), 1300);
}

#[test]
fn frees_that_drain_nothing_bound_high_after_the_runs_of_their_time() {
    // 7.2-4g-6cpu p_thp, Normal CPU 1 (c0 762, no worker line): `awk-619`'s single frees
    // from 127.708 drained nothing up to 1441 pages; the one at 131.043609 (3.42 s in)
    // drained 682 at 1442. The worker ran each second meanwhile, so `high` was 1442 after
    // three runs, not at the start (1442 there left the replay draining 95, 190 and 380
    // pages from 128.419, where the kernel drained nothing).
    let mut s = printed(855);
    s.no_drain(300, 1_000_000_000);
    s.no_drain(679, 3_420_000_000);
    s.free_drain(680, 3_420_000_000);
    let h = s.infer(762, &high(855, 5074), 5);
    assert_eq!(decayed(h, 3, 855), 1442, "{h}");
}

#[test]
fn zoneinfos_high_is_the_starts_taken_through_the_steps_before_its_read() {
    // 7.2-6g-12cpu-wq p_fork, Normal CPU 8 (c0 807): five quiet runs, a refill of 63 pages,
    // then zoneinfo printed 3363 (high_min 879). Fails on the old code, which took 3363 as
    // the start's `high` and brought it to 1788 at the read.
    let quiet_runs_and_refill = |s: &mut StartHigh| {
        for _ in 0..5 {
            s.work_line(0);
            s.other();
        }
        s.refill(0, true);
        for _ in 1..63 {
            s.refill(0, false);
        }
    };
    let h = high(879, 7893);
    let mut s = printed(3363);
    quiet_runs_and_refill(&mut s);
    s.read(19_300_000_000);
    let got = s.infer(807, &h, 5);
    assert_eq!(s.evolve(got, 6, &h, 5), 3363, "{got}");
    assert!(s.evolve(got - 1, 6, &h, 5) < 3363, "{got}: not the least");
    // No run or refill before the read, without lines: the runs one a second (3 here);
    // where no start up to high_max gives it (19 runs), high_max comes nearest.
    let mut s = printed(3363);
    s.read(3_300_000_000);
    let got = s.infer(807, &h, 5);
    assert_eq!(decayed(got, 3, 879), 3363, "{got}");
    let mut s = printed(3363);
    s.read(19_300_000_000);
    assert_eq!(s.infer(807, &h, 5), 7893);
    // A free drained before the read: the walk closed there, and the read says nothing.
    let mut s = printed(3363);
    quiet_runs_and_refill(&mut s);
    s.free_drain(2000, 19_000_000_000);
    s.read(19_300_000_000);
    let got = s.infer(807, &h, 5);
    assert!(s.evolve(got, 6, &h, 5) <= 2807, "{got}");
    // A start no bound allows (the runs left the count above what the printed `high`
    // gives): the bounds', as before.
    let mut s = printed(3363);
    s.work_line(4000);
    s.other();
    s.read(19_300_000_000);
    let got = s.infer(807, &h, 5);
    assert!(less(got) >= 4807 && less(got - 1) < 4807, "{got}");
}
