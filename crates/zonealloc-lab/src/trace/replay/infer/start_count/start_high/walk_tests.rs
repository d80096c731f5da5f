//! The start's `high` as the walk reads it from crafted `--whole-file` traces.

use super::super::roll::ReadPoint;
use super::super::tests::{cpu1_on_7_2, line};
use crate::trace::replay::first_events::Which;

const WORK: &str = "workqueue_execute_start: work struct (____ptrval____): function vmstat_update";

/// A 7.2 trace (DMA32 CPU 1: zoneinfo's count 1294 and `high` 3492 = `high_min`, batch 63):
/// a quiet worker run, a refill run of 63 pages whose 32nd is `mid`, a quiet run, then 3000
/// allocations before zoneinfo's read (CPU 0's allocation at 5 s): the count at the file's
/// start is 4231, 4294 at the second run.
fn refill_with(mid: &str) -> String {
    crafted([Some(WORK), None, Some(WORK)], mid)
}

/// [`refill_with`]'s trace with the lines `work` before, in place of (`None`: the refill
/// run) and after the refill run.
fn crafted(work: [Option<&str>; 3], mid: &str) -> String {
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    let zl = |pfn: u64| {
        format!("mm_page_alloc_zone_locked: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1 percpu_refill=1")
    };
    for (ts, w) in (1..).zip(work) {
        if let Some(w) = w {
            t += &line(1, ts, w);
            continue;
        }
        for i in 0..63u64 {
            let ev = if i == 31 {
                mid.to_string()
            } else {
                zl(0x30000 + i)
            };
            t += &line(1, ts, &ev);
        }
    }
    let alloc = |pfn: u64| {
        format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE")
    };
    for i in 0..3000u64 {
        t += &line(1, 4, &alloc(0x40000 + i));
    }
    t += &line(0, 5, &alloc(0x50000));
    t += &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    t
}

/// CPU 1's count and `high` at the file's start for `trace`, zoneinfo read at CPU 0's
/// allocation.
fn start_high(trace: &str) -> (u64, u64) {
    let at = ReadPoint {
        pid: 1,
        ts_ns: 5_000_000_000,
        pfn: 0x50000,
    };
    let c = cpu1_on_7_2(trace, |w| Which {
        roll_at: Some(at),
        extfrag_names_page: true,
        ..w
    });
    (c.inferred, c.high.unwrap())
}

/// `high` after a run's decay (`decay_pcp_high`), the raise of 63 (`nr_pcp_alloc`) and the
/// next run's decay.
fn through_the_raise(x: u64) -> u64 {
    let less = |h: u64| h - (h >> 3);
    less(less(x) + 63)
}

#[test]
fn a_page_only_extfrag_names_is_one_of_the_runs_and_sizes_its_raise() {
    // 6.12-4g-more p_sock, Normal CPU 3: the refill at 22.033799 printed 1007 zone_locked
    // lines and an extfrag of a whole pageblock's claim (`__rmqueue_claim` ->
    // `try_to_steal_block`: no zone_locked), whose page 0x10a400 went on the list: 1008 =
    // 63 << 4, the raise. Read as 1007, the walk dropped every bound after it.
    let extfrag = "mm_page_alloc_extfrag: page=(____ptrval____) pfn=0x3001f alloc_order=0 fallback_order=9 pageblock_order=9 alloc_migratetype=1 fallback_migratetype=0 fragmenting=0 change_ownership=1";
    let (c0, h) = start_high(&refill_with(extfrag));
    assert_eq!(c0, 4231);
    // The second run left the count (4294) at or below `high`: the least start that does.
    assert!(through_the_raise(h) >= 4294, "{h}");
    assert!(through_the_raise(h - 1) < 4294, "{h}");
}

#[test]
fn a_refill_before_any_worker_line_is_read_through_where_the_file_traces_the_runs() {
    // The refill run first, then two quiet runs: the second left the count under `high`.
    let zl = "mm_page_alloc_zone_locked: page=(____ptrval____) pfn=0x3001f order=0 migratetype=1 percpu_refill=1";
    let (c0, h) = start_high(&crafted([None, Some(WORK), Some(WORK)], zl));
    let less = |h: u64| h - (h >> 3);
    assert!(less(less(h + 63)) >= c0 + 63, "{h}");
    assert!(less(less(h + 62)) < c0 + 63, "{h}");
    // No `vmstat_update` line in the file: the walk reads no further than the refill, and
    // falls back on zoneinfo's `high` (`high_min`).
    let mark = "tracing_mark_write: t";
    let (_, h) = start_high(&crafted([None, Some(mark), Some(mark)], zl));
    assert_eq!(h, 3492);
}

#[test]
fn a_free_drain_above_batch_names_free_count_at_the_files_start() {
    // 7.2-6g-12cpu-wq p_fork, Normal CPU 9: a single free, CPU 1's first, drained 69
    // order-0 pages: `free_count` was 68 at the file's start (`start_free.rs`). Fails on the
    // old code, which started it at 0 (the replay drained 63).
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    t += &line(
        1,
        1,
        "mm_page_free: page=(____ptrval____) pfn=0x40000 order=0",
    );
    for i in 0..69u64 {
        let pfn = 0x30000 + i;
        let drain =
            format!("mm_page_pcpu_drain: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1");
        t += &line(1, 1, &drain);
    }
    let alloc = "mm_page_alloc: page=(____ptrval____) pfn=0x50000 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE";
    t += &line(0, 5, alloc);
    t += &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    let at = ReadPoint {
        pid: 1,
        ts_ns: 5_000_000_000,
        pfn: 0x50000,
    };
    let c = cpu1_on_7_2(&t, |w| Which {
        roll_at: Some(at),
        ..w
    });
    assert_eq!(c.free_count, Some(68), "{c:?}");
}
