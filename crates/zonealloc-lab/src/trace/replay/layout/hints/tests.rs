//! Tests of [`super::HintCollector`]: the start each event kind shows.

use super::*;
use crate::trace::parse::Parser;

fn line(cpu: u32, ts: u32, ev: &str) -> String {
    format!("            x-1     [{cpu:03}] .....    {ts}.000001: {ev}\n")
}

/// CPU `cpu`'s refill of the block `pfn` of `order` off the Unmovable list (migratetype 0)
/// at second `ts`, as a trace line.
fn refill(cpu: u32, ts: u32, pfn: u64, order: u8) -> String {
    let p = "page=(____ptrval____)";
    let ev = format!(
        "mm_page_alloc_zone_locked: {p} pfn={pfn:#x} order={order} migratetype=0 percpu_refill=1"
    );
    line(cpu, ts, &ev)
}

fn collect(text: &str) -> StartHints {
    let zone = 0x1000..0x2000;
    let mut c = HintCollector::new(4, std::slice::from_ref(&zone), 9, Numbering::Current);
    Parser::new()
        .read_all(text.as_bytes(), |ev| c.feed(ev))
        .unwrap();
    let mut h = c.finish();
    assert_eq!(h.len(), 1);
    h.pop().unwrap()
}

/// `h`'s pageblock types by pageblock number.
pub(super) fn block_types(h: &StartHints) -> Vec<(u64, MigrateType)> {
    let mut types: Vec<_> = h.block_types.iter().map(|(&b, &m)| (b, m)).collect();
    types.sort_unstable();
    types
}

#[test]
fn the_first_event_naming_a_pageblock_types_it_and_first_drains_and_hits_were_on_lists() {
    let p = "page=(____ptrval____)";
    let mut t = String::new();
    // Refilled from the Unmovable list: pageblock 8 Unmovable; not on a list before.
    t += &refill(0, 1, 0x1000, 0);
    t += &line(
        0,
        1,
        &format!("mm_page_alloc: {p} pfn=0x1000 order=0 migratetype=0 gfp_flags=GFP_KERNEL"),
    );
    // Drained first: on CPU 1's Reclaimable list; pageblock 10 Reclaimable, and a later
    // drain naming another type does not retype it.
    t += &line(
        1,
        2,
        &format!("mm_page_pcpu_drain: {p} pfn=0x1400 order=0 migratetype=2"),
    );
    t += &line(
        1,
        2,
        &format!("mm_page_pcpu_drain: {p} pfn=0x1401 order=0 migratetype=1"),
    );
    // Freed, then allocated: in use at the start.
    t += &line(2, 3, &format!("mm_page_free: {p} pfn=0x1600 order=0"));
    t += &line(
        2,
        3,
        &format!("mm_page_alloc: {p} pfn=0x1600 order=0 migratetype=1 gfp_flags=GFP_USER"),
    );
    // Allocated first: a hit on CPU 3's order-1 Movable list (the request names no
    // pageblock type; the list names pageblock 12's, `StartHints::type_by_lists`).
    t += &line(
        3,
        4,
        &format!("mm_page_alloc: {p} pfn=0x1802 order=1 migratetype=1 gfp_flags=GFP_USER"),
    );
    // A fallback names the pageblock's type before its claim; the page was free.
    t += &line(0, 5, &format!("mm_page_alloc_extfrag: {p} pfn=0x1a00 alloc_order=0 fallback_order=9 pageblock_order=9 alloc_migratetype=0 fallback_migratetype=1 fragmenting=0 change_ownership=1"));
    t += &line(
        0,
        5,
        &format!("mm_page_pcpu_drain: {p} pfn=0x1a00 order=0 migratetype=0"),
    );
    // Outside the zone: nothing.
    t += &line(
        0,
        6,
        &format!("mm_page_pcpu_drain: {p} pfn=0x3000 order=0 migratetype=0"),
    );
    let h = collect(&t);
    assert_eq!(
        block_types(&h),
        [
            (8, MigrateType::Unmovable),
            (10, MigrateType::Reclaimable),
            (12, MigrateType::Movable),
            (13, MigrateType::Movable)
        ]
    );
    let hint = |cpu, pfn, order, mt, drained| PcpHint {
        cpu,
        pfn,
        order,
        mt,
        drained,
    };
    assert_eq!(h.taken, [0x1000, 0x1a00]);
    assert_eq!(h.freed, [(0x1600, 0)]);
    assert_eq!(
        h.pcp,
        [
            hint(1, 0x1400, 0, 2, true),
            hint(1, 0x1401, 0, 1, true),
            hint(3, 0x1802, 1, 1, false)
        ]
    );
}

/// 7.2-2g p_prodcons in small: a block first allocated off a list names its pageblock's type
/// where no event does (`free_frozen_page_commit` lists a page by its pageblock's type), the
/// first such block's list, even a type a refill ruled out (`alloc_pages_bulk` takes pages
/// untraced); an event naming the pageblock wins.
#[test]
fn a_block_on_a_list_at_the_start_names_its_unnamed_pageblock_by_the_list() {
    let p = "page=(____ptrval____)";
    let hit = |cpu, pfn: u32, mt| {
        let ev = format!(
            "mm_page_alloc: {p} pfn={pfn:#x} order=0 migratetype={mt} gfp_flags=GFP_KERNEL"
        );
        line(cpu, 2, &ev)
    };
    let mut t = String::new();
    // Pageblock 10: hits off CPU 0's Reclaimable list, then off a Movable one.
    t += &hit(0, 0x140d, 2);
    t += &hit(0, 0x140e, 1);
    // Pageblock 8: a hit off the Movable list, then a refill naming it Unmovable.
    t += &hit(1, 0x1000, 1);
    t += &refill(1, 3, 0x1010, 0);
    // Pageblock 12: freed on CPU 2 before its Unmovable refill (not Unmovable), then a hit
    // off CPU 3's Unmovable list.
    t += &line(2, 1, &format!("mm_page_free: {p} pfn=0x1800 order=0"));
    t += &refill(2, 2, 0x1e00, 0);
    t += &hit(3, 0x1801, 0);
    let h = collect(&t);
    assert_eq!(
        h.not_types.get(&12),
        Some(&(1 << MigrateType::Unmovable.index()))
    );
    assert_eq!(
        block_types(&h),
        [
            (8, MigrateType::Unmovable),
            (10, MigrateType::Reclaimable),
            (12, MigrateType::Unmovable),
            (15, MigrateType::Unmovable)
        ]
    );
}

/// A page freed on CPU 1 that no event names before CPU 1 refills its order-0 Unmovable
/// list was not on that list: its pageblock was not Unmovable. A page named between, or
/// freed on another CPU or at another order, rules nothing out; a page freed again with
/// no event between (taken by `alloc_pages_bulk`) withdraws its ruling.
#[test]
fn a_refill_after_a_free_no_event_names_rules_the_lists_type_out_for_its_pageblock() {
    let p = "page=(____ptrval____)";
    let free = |cpu, ts, pfn: u32, order| {
        line(
            cpu,
            ts,
            &format!("mm_page_free: {p} pfn={pfn:#x} order={order}"),
        )
    };
    let mut t = String::new();
    t += &free(1, 1, 0x1000, 0); // pageblock 8: ruled out
    t += &free(1, 1, 0x1200, 0); // pageblock 9: allocated again before the refill
    t += &line(
        1,
        1,
        &format!("mm_page_alloc: {p} pfn=0x1200 order=0 migratetype=0 gfp_flags=GFP_KERNEL"),
    );
    t += &free(2, 1, 0x1400, 0); // pageblock 10: another CPU
    t += &free(1, 1, 0x1602, 1); // pageblock 11: another order
    t += &free(1, 1, 0x1800, 0); // pageblock 12: freed again after the refill
    for pfn in [0x1e00, 0x1e01] {
        t += &refill(1, 2, pfn, 0);
    }
    t += &free(1, 3, 0x1800, 0);
    let h = collect(&t);
    let not: Vec<_> = h.not_types.iter().map(|(&b, &m)| (b, m)).collect();
    assert_eq!(not, [(8, 1 << MigrateType::Unmovable.index())]);
}

/// 6.12-4g p_thp in small: what the text after the window shows on a list that no event
/// of the window (or before it there) named was on that list at the start.
#[test]
fn a_block_first_shown_on_a_list_after_the_window_sat_on_it_from_the_start() {
    let p = "page=(____ptrval____)";
    let drain = |pfn: u32, order: u8| {
        format!("mm_page_pcpu_drain: {p} pfn={pfn:#x} order={order} migratetype=0")
    };
    let alloc = |pfn: u32| {
        format!("mm_page_alloc: {p} pfn={pfn:#x} order=0 migratetype=0 gfp_flags=GFP_KERNEL")
    };
    // The window: a free of 0x1101 and an order-2 allocation at 0x1208.
    let mut window = line(0, 1, &format!("mm_page_free: {p} pfn=0x1101 order=0"));
    window += &line(
        1,
        1,
        &format!("mm_page_alloc: {p} pfn=0x1208 order=2 migratetype=0 gfp_flags=GFP_KERNEL"),
    );
    // Past it, from inside the end marker's line (as the stream keeps it).
    let mut after = String::from(" p_thp\n");
    // Never named: on CPU 0's order-1 list from the start (`cat-648`'s drain).
    after += &line(0, 2, &drain(0x1180, 1));
    // Its block holds 0x1101, which the window freed: put on the list in the window.
    after += &line(0, 2, &drain(0x1100, 1));
    // Inside the window's order-2 block at 0x1208.
    after += &line(1, 2, &drain(0x120a, 0));
    // Refilled past the window, then allocated: off the buddy, not a start block.
    after += &refill(2, 3, 0x1300, 0);
    after += &line(2, 3, &alloc(0x1300));
    // Allocated with no event before it: at the head of CPU 3's list from the start.
    after += &line(3, 4, &alloc(0x1400));
    // Named once already (drained above): its second event says nothing more.
    after += &line(3, 4, &alloc(0x1180));
    let zone = 0x1000..0x2000;
    let mut c = HintCollector::new(4, std::slice::from_ref(&zone), 9, Numbering::Current);
    Parser::new()
        .read_all(window.as_bytes(), |ev| c.feed(ev))
        .unwrap();
    c.feed_after(after.as_bytes());
    let h = c.finish().pop().unwrap();
    let hint = |cpu, pfn, order, drained| PcpHint {
        cpu,
        pfn,
        order,
        mt: 0,
        drained,
    };
    assert_eq!(
        h.late,
        [hint(0, 0x1180, 1, true), hint(3, 0x1400, 0, false)]
    );
    // The window's own hints are as before (its allocation was a list's too).
    assert_eq!(h.pcp, [hint(1, 0x1208, 2, false)]);
    assert_eq!((h.taken.len(), h.freed.as_slice()), (0, &[(0x1101, 0)][..]));
}

/// A block the window first takes off a free list was free at the start, every page of it:
/// a later free of a page of it (`split_page`'s pages, freed one by one) frees a page the
/// window allocated, not one in use at the start. 7.2-6g-12cpu-wq p_fork: CPU 6's order-2
/// refill takes 0x1263fc at 29.278401, and `kworker/9:1` frees 0x1263fc..=0x1263ff one page
/// at a time at 29.409428-454. Before, 0x1263fd..=0x1263ff were first named freed: in use at
/// the start, so the layout made 0x1263fc an order-0 block, and 183 such blocks beyond
/// pagetypeinfo's counts were trimmed.
#[test]
fn a_page_of_a_block_taken_off_a_free_list_was_free_at_the_start() {
    let p = "page=(____ptrval____)";
    let mut t = String::new();
    t += &refill(0, 1, 0x1004, 2);
    for pfn in 0x1004..0x1008 {
        t += &line(1, 2, &format!("mm_page_free: {p} pfn={pfn:#x} order=0"));
    }
    // A page no event named before: in use at the start.
    t += &line(1, 2, &format!("mm_page_free: {p} pfn=0x1008 order=0"));
    let h = collect(&t);
    assert_eq!(h.taken_blocks, [(0x1004, 2)]);
    assert_eq!(h.freed, [(0x1008, 0)]);
}
