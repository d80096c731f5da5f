//! The start's `high` timed on the replay's workers' schedule ([`StartCounts::time_highs`],
//! [`crate::trace::replay::vmstat::Schedule`]), read from a crafted `--whole-file` trace.

use super::super::roll::ReadPoint;
use super::super::tests::counts_on_7_2;
use super::super::StartCounts;
use super::decayed;
use crate::trace::parse::{lines, Parser};
use crate::trace::replay::first_events::Which;
use crate::trace::replay::vmstat::{RunsAhead, Vmstat};

/// A line on `cpu` at `us` microseconds, by `who` in context `ctx`.
fn at(cpu: u32, us: u64, (who, ctx): (&str, &str), ev: &str) -> String {
    let (s, u) = (us / 1_000_000, us % 1_000_000);
    format!("{who:>16} [{cpu:03}] {ctx} {s}.{u:06}: {ev}\n")
}

const TASK: (&str, &str) = ("x-1", ".....");

fn page(ev: &str, pfn: u64) -> String {
    let tail = match ev {
        "mm_page_free" => "order=0".to_owned(),
        "mm_page_alloc" => "order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE".to_owned(),
        _ => "order=0 migratetype=1".to_owned(),
    };
    format!("{ev}: page=(____ptrval____) pfn={pfn:#x} {tail}")
}

/// 7.2 (DMA32 CPU 1: zoneinfo's count 1294 at CPU 0's allocation at 8 s, `high_min` 3492):
/// from the walk's first event at 1 s, CPU 1 frees 2300 pages from 4.4 s that drain nothing, and
/// the next free at 4.5 s drains a batch (63 pages); it takes the 2300 back at 5 s. Its
/// worker drains at 9.3 s: CPU 1's timer fires at x.296, four times before the free that
/// drained (1.296 to 4.296 s), where one a second from the file's start counts three.
fn trace() -> String {
    let mut t = String::from("# tracer: nop\n");
    t += &at(
        0,
        900_000,
        TASK,
        "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t",
    );
    t += &at(0, 1_000_000, TASK, &page("mm_page_alloc", 0x50001));
    for i in 0..2300 {
        t += &at(1, 4_400_000 + i, TASK, &page("mm_page_free", 0x60000 + i));
    }
    t += &at(1, 4_500_000, TASK, &page("mm_page_free", 0x61000));
    for i in 0..63 {
        t += &at(
            1,
            4_500_001 + i,
            TASK,
            &page("mm_page_pcpu_drain", 0x62000 + i),
        );
    }
    for i in 0..2300 {
        t += &at(1, 5_000_000 + i, TASK, &page("mm_page_alloc", 0x60000 + i));
    }
    t += &at(0, 8_000_000, TASK, &page("mm_page_alloc", 0x50000));
    let worker = ("kworker/1:1-73", "d..2.");
    t += &at(1, 9_300_000, worker, &page("mm_page_pcpu_drain", 0x61000));
    t += &at(
        0,
        10_000_000,
        TASK,
        "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t",
    );
    t
}

/// The walk's start counts for `trace`, zoneinfo read at CPU 0's allocation.
fn counts(trace: &str) -> StartCounts {
    let read = ReadPoint {
        pid: 1,
        ts_ns: 8_000_000_000,
        pfn: 0x50000,
    };
    counts_on_7_2(trace, |w| Which {
        roll_at: Some(read),
        extfrag_names_page: true,
        ..w
    })
}

/// DMA32 CPU 1's count and `high` at the start.
fn cpu1(sc: &StartCounts) -> (i64, i64) {
    let c = sc.cpus.iter().find(|c| c.zone == "DMA32" && c.cpu == 1);
    let c = c.unwrap();
    (c.inferred as i64, c.high.unwrap() as i64)
}

/// The replay's workers on `trace`'s runs (4 CPUs, HZ 250, no wheel).
fn workers(trace: &str) -> Vmstat {
    let mut ahead = RunsAhead::new(4);
    let mut parser = Parser::new();
    for line in lines(trace.as_bytes()) {
        if let Some(ev) = parser.feed(line) {
            ahead.feed(&ev);
        }
    }
    Vmstat::placed(4, 250, (false, None, true), &ahead, false)
}

#[test]
fn the_start_high_counts_the_runs_the_replays_workers_do_before_each_bound() {
    let t = trace();
    let mut sc = counts(&t);
    let (c0, one_a_second) = cpu1(&sc);
    assert_eq!(c0, 1356);
    // The quiet frees left the count at most 3656 under `high`, the next drained at 3657.
    let count = c0 + 2301;
    assert_eq!(decayed(one_a_second, 3, 3492), count);
    let first = sc.walk_start_ns().unwrap();
    assert_eq!(first, 1_000_000_000);
    let schedule = workers(&t).schedule(first);
    assert_eq!(schedule.runs_through(1, 4_500_000_000, None), 4);
    assert!(sc.has_timed_highs());
    sc.time_highs(|cpu, t, pauses| schedule.runs_around(cpu, t, pauses));
    // Fails on the old code (one a second: three runs, 5459).
    let (_, h) = cpu1(&sc);
    assert_eq!(decayed(h, 4, 3492), count, "{h}");
    assert!(decayed(h - 1, 4, 3492) < count, "{h}: not the least");
}
