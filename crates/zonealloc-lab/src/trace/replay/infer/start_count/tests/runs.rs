//! The start-count walk on refill runs: what interleaves a run, what raises `high`, and
//! the pages `mm_page_alloc_extfrag` names (crafted traces on the 7.2 snapshot).

use super::*;

/// The start counts `trace` gives on the 7.2 snapshot (DMA32 CPU 1: count 1294, `high`
/// 3492 = `high_min`, `high_max` 15551, batch 63: a refill run may raise `high` by
/// `63 << 5` = 2016), with `mm_page_alloc_extfrag` naming the page taken or (before 6.15)
/// the block fallen back to.
fn counts_on_7_2(trace: &str, names_page: bool) -> CpuStart {
    cpu1_on_7_2(trace, |w| Which {
        extfrag_names_page: names_page,
        ..w
    })
}

/// CPU 1 frees page 0x50000 (draining nothing) and takes it back, then the window ends.
fn free_taken_back_and_end() -> String {
    let mut t = line(
        1,
        3,
        "mm_page_free: page=(____ptrval____) pfn=0x50000 order=0",
    );
    t += &line(1, 4, &alloc(0x50000, 0));
    t + &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t")
}

fn zone_locked(pfn: u64, order: u8, refill: bool) -> String {
    format!(
        "mm_page_alloc_zone_locked: page=(____ptrval____) pfn={pfn:#x} order={order} migratetype=1 percpu_refill={}",
        u8::from(refill)
    )
}

fn extfrag(pfn: u64) -> String {
    format!("mm_page_alloc_extfrag: page=(____ptrval____) pfn={pfn:#x} alloc_order=0 fallback_order=9 pageblock_order=9 alloc_migratetype=1 fallback_migratetype=0 fragmenting=0 change_ownership=1")
}

fn alloc(pfn: u64, order: u8) -> String {
    format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order={order} migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE")
}

/// The window's start, CPU 1's events `run`, then an allocation of the run's first page,
/// a free and an allocation after it (the free drained nothing: `c0 + delta < high`, the
/// bound this reads), and the window's end.
fn after_run(run: &[String]) -> String {
    after_run_from(run, 0x30000)
}

/// [`after_run`] whose run begins with page `first`.
fn after_run_from(run: &[String], first: u64) -> String {
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    for ev in run {
        t += &line(1, 2, ev);
    }
    t += &line(1, 3, &alloc(first, 0));
    t += &free_taken_back_and_end();
    t
}

/// The upper bound `after_run` gives for a run that put `pages` on the list and raised
/// `high` `raises` times: `high - 1 - delta` after the free, `delta = pages - 1 + 1`.
fn bound(pages: i64, raises: i64) -> Option<u64> {
    Some((3492 + 2016 * raises - 1 - pages) as u64)
}

#[test]
fn a_fallback_inside_a_refill_run_does_not_end_it() {
    let zl = |i: u64| zone_locked(0x30000 + i, 0, true);
    // 6.15 on: a steal's page inside the batch, printed only as extfrag, goes on the list.
    let steal: Vec<String> = vec![zl(0), zl(1), zl(2), extfrag(0x40000), zl(3), zl(4), zl(5)];
    let c = counts_on_7_2(&after_run(&steal), true);
    assert_eq!(c.bounds, (0, bound(7, 1)));
    // A claim below pageblock_order prints the page as zone_locked, then extfrag of it.
    let claim: Vec<String> = vec![zl(0), zl(1), zl(2), extfrag(0x30002), zl(3), zl(4), zl(5)];
    assert_eq!(
        counts_on_7_2(&after_run(&claim), true).bounds,
        (0, bound(6, 1))
    );
    // Before 6.15: extfrag names the block fallen back to, the retry's zone_locked the page.
    let old: Vec<String> = vec![zl(0), zl(1), zl(2), extfrag(0x40000), zl(3), zl(4), zl(5)];
    assert_eq!(
        counts_on_7_2(&after_run(&old), false).bounds,
        (0, bound(6, 1))
    );
    // A steal first in a batch (no run yet): its page starts the run (and is the first the
    // allocation takes off the list).
    let first: Vec<String> = vec![extfrag(0x40000), zl(0), zl(1)];
    let t = after_run_from(&first, 0x40000);
    assert_eq!(counts_on_7_2(&t, true).bounds, (0, bound(3, 1)));
}

#[test]
fn a_fallback_alone_is_a_refill_of_its_page() {
    // 6.12 (Debian's) and 6.15 on: a refill whose only page is a claim of a whole pageblock
    // prints extfrag alone, then the allocation takes the page off the list: a run of one
    // page, one raise (fails on the old code, which read the allocation as a page the list
    // held at the start: its bound was `bound(0, 0)`).
    let t = after_run_from(&[extfrag(0x40000)], 0x40000);
    assert_eq!(counts_on_7_2(&t, true).bounds, (0, bound(1, 1)));
    // After a direct allocation's zone_locked of the page (a claim below pageblock_order),
    // the buddy handed it out: no refill, and the allocation takes nothing off the list
    // (the count after it as after a run of one page, with no raise; fails on the old code,
    // whose allocation took a page off it: `bound(0, 0)`).
    let direct = [zone_locked(0x40000, 0, false), extfrag(0x40000)];
    let t = after_run_from(&direct, 0x40000);
    assert_eq!(counts_on_7_2(&t, true).bounds, (0, bound(1, 0)));
}

#[test]
fn other_cpus_events_interleave_a_run_and_another_order_starts_a_new_one() {
    let zl = |i: u64| zone_locked(0x30000 + i, 0, true);
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    t += &line(1, 2, &zl(0));
    // Other CPUs' refills, direct allocations of other orders and fallbacks, merged in.
    t += &line(2, 2, &zone_locked(0x60000, 0, true));
    t += &line(2, 2, &zone_locked(0x60100, 4, false));
    t += &line(0, 2, &extfrag(0x61000));
    t += &line(3, 2, &zone_locked(0x60200, 2, true));
    t += &line(1, 2, &zl(1));
    t += &line(1, 2, &zl(2));
    // An order-2 refill on CPU 1 right after: a new rmqueue_bulk, a new nr_pcp_alloc.
    t += &line(1, 2, &zone_locked(0x30010, 2, true));
    t += &line(1, 3, &alloc(0x30000, 0));
    t += &free_taken_back_and_end();
    // Three order-0 pages and an order-2 block; high raised twice, the second time by the
    // base batch alone (nr_pcp_alloc: `if (order) batch = base_batch;`).
    assert_eq!(
        counts_on_7_2(&t, true).bounds,
        (0, bound(3 + 4, 1).map(|b| b + 63))
    );
}

/// 7.2-4g/p_pressure, CPU 1 of Normal (lines 14704-14804): THP refill runs of two
/// order-9 blocks each raise `high` by the base batch (63), not by `batch <<
/// CONFIG_PCP_BATCH_SCALE_MAX` (2016) as an order-0 run may; the free after them drained
/// nothing, which bounds the count that far tighter.
#[test]
fn a_thp_refill_raises_high_by_the_base_batch() {
    let thp = |i: u64| zone_locked(0x30000 + (i << 9), 9, true);
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    for run in 0..2u64 {
        t += &line(1, 2, &thp(2 * run));
        t += &line(1, 2, &thp(2 * run + 1));
        t += &line(1, 2, &alloc(0x30000 + ((2 * run) << 9), 9));
    }
    t += &free_taken_back_and_end();
    // Two runs: 4 blocks in, 2 out (1024 pages), then the free: c0 + 1025 < 3492 + 2 * 63.
    assert_eq!(
        counts_on_7_2(&t, true).bounds,
        (0, Some(3492 + 2 * 63 - 1 - 1025))
    );
}

#[test]
fn a_refill_run_straddling_the_window_start_counts_its_pages_in_the_window() {
    let zl = |i: u64| zone_locked(0x30000 + i, 0, true);
    let mut t = String::from("# tracer: nop\n");
    // The run begins before the marker (on another CPU) and goes on after it.
    t += &line(1, 1, &zl(0));
    t += &line(1, 1, &zl(1));
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    for i in 2..5 {
        t += &line(1, 2, &zl(i));
    }
    t += &line(1, 3, &alloc(0x30000, 0));
    t += &free_taken_back_and_end();
    // The three pages after the marker count (the two before are in the start count);
    // its raise came before the marker, maybe after zoneinfo was read: the bound keeps it.
    assert_eq!(counts_on_7_2(&t, true).bounds, (0, bound(3, 1)));
}

/// 7.2-8g p_pressure (lines 20686-20690): CPU 2 refills two THPs and takes the first; the
/// task moves, and its `mm_page_alloc` of the second is stamped CPU 1. That page came off CPU
/// 2's lists (`rmqueue_pcplist` runs before the tracepoint): CPU 1's count is untouched, and
/// its free that drains nothing after it bounds the count at the start to `0..=high - 2`,
/// not `512..=high + 510`.
#[test]
fn an_allocation_stamped_on_another_cpu_leaves_the_refilling_cpus_list() {
    let thp = |i: u64| zone_locked(0x30000 + (i << 9), 9, true);
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    t += &line(2, 2, &thp(0));
    t += &line(2, 2, &thp(1));
    t += &line(2, 2, &alloc(0x30000, 9));
    t += &line(1, 3, &alloc(0x30200, 9));
    t += &free_taken_back_and_end();
    assert_eq!(counts_on_7_2(&t, true).bounds, (0, Some(3492 - 1 - 1)));
}

/// 6.12-4g/p_pressure, CPU 2 of Normal (lines 33262-33269): Debian's 6.12.117 has 6.15's
/// `__rmqueue_claim`, so a THP refill whose first block claims a pageblock prints that block
/// only as `mm_page_alloc_extfrag` (alloc_order 9), and the batch's next block as
/// `zone_locked`. Both came from the refill: the two allocations after it take nothing that
/// was on the list at the start (the walk read the claimed block as taken off the list,
/// and bounded the count from below by 512 where zoneinfo said 846).
#[test]
fn a_6_12_thp_refill_that_claims_a_block_names_it_in_extfrag() {
    let claim = "mm_page_alloc_extfrag: page=(____ptrval____) pfn=0x30000 alloc_order=9 fallback_order=10 pageblock_order=9 alloc_migratetype=1 fallback_migratetype=0 fragmenting=0 change_ownership=1";
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    t += &line(1, 2, claim);
    t += &line(1, 2, &zone_locked(0x30200, 9, true));
    t += &line(1, 3, &alloc(0x30000, 9));
    t += &line(1, 3, &alloc(0x30200, 9));
    t += &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    let names_page = Kernel::V6_12.extfrag_names_page();
    assert_eq!(counts_on_7_2(&t, names_page).bounds.0, 0);
}
