//! The pins' tests: an order-1..=3 free's drain, pinned by the allocation after it.

use super::super::tests::{counts_of, line};
use super::super::{CpuStart, Found};

fn alloc(pfn: u64) -> String {
    format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE")
}

fn free(pfn: u64) -> String {
    format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0")
}

/// CPU 1 of DMA32 (zoneinfo: 771, high 3492, batch 63) at 800: ten allocations, 2700
/// order-0 frees and an order-1 free take it to 3492, and a drain of 63 pages follows
/// (nr_pcp_free's, or free_high's of everything: 6.1 cannot tell from 63 pages); then
/// `after` (each line's event on CPU 1).
fn order_1_trace(after: &[String]) -> String {
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    for i in 0..10 {
        t += &line(1, 2, &alloc(0x20000 + i));
    }
    for i in 0..2700 {
        t += &line(1, 3, &free(0x10000 + i));
    }
    t += &line(
        1,
        3,
        "mm_page_free: page=(____ptrval____) pfn=0x30000 order=1",
    );
    for i in 0..63 {
        t += &line(
            1,
            4,
            &format!(
                "mm_page_pcpu_drain: page=(____ptrval____) pfn={:#x} order=0 migratetype=1",
                0x10000 + i
            ),
        );
    }
    for ev in after {
        t += &line(1, 5, ev);
    }
    t += &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    t
}

fn cpu1(after: &[String]) -> CpuStart {
    let sc = counts_of(&order_1_trace(after));
    let c = sc
        .cpus
        .into_iter()
        .find(|c| c.zone == "DMA32" && c.cpu == 1);
    c.unwrap()
}

#[test]
fn an_order_1_drain_pins_once_the_next_allocation_finds_a_page_on_a_list() {
    // The lists were not emptied, so nr_pcp_free drained: 3492 <= c0 + 2692 <= 3493.
    let c = cpu1(&[alloc(0x40000)]);
    assert_eq!(
        (c.bounds, c.inferred, c.found),
        ((800, Some(801)), 800, Found::Bounded)
    );
    // A refill first: free_high may have emptied them; only the frees bound the count
    // (3492 - 1 - 2690 after the last order-0 free).
    let refill = "mm_page_alloc_zone_locked: page=(____ptrval____) pfn=0x40000 order=0 migratetype=1 percpu_refill=1";
    let c = cpu1(&[refill.to_string(), alloc(0x40000)]);
    assert_eq!(
        (c.bounds, c.inferred, c.found),
        ((10, Some(801)), 771, Found::Zoneinfo)
    );
}

#[test]
fn a_page_freed_after_the_drain_does_not_show_the_lists_were_left_a_page() {
    // free_high may have emptied the lists, and the allocation takes the page freed since:
    // no pin (fails on the old code, which pinned 800 here).
    let c = cpu1(&[free(0x50000), alloc(0x50000)]);
    assert_eq!(
        (c.bounds, c.inferred, c.found),
        ((10, Some(801)), 771, Found::Zoneinfo)
    );
    // The next allocation takes a page the drain left: the pin holds.
    let c = cpu1(&[free(0x50000), alloc(0x50000), alloc(0x40000)]);
    assert_eq!(
        (c.bounds, c.inferred, c.found),
        ((800, Some(801)), 800, Found::Bounded)
    );
}
