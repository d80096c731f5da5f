//! A higher order's refill takes the count past `high` without a drain.

use super::super::tests::{counts_of, line};
use super::super::Found;

fn free(pfn: u64) -> String {
    format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0")
}

/// CPU 1's drain of 63 pages from `from` (freed on it before).
fn drain(from: u64) -> String {
    (from..from + 63)
        .map(|pfn| {
            line(
                1,
                4,
                &format!(
                    "mm_page_pcpu_drain: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1"
                ),
            )
        })
        .collect()
}

#[test]
fn a_drain_after_a_higher_orders_refill_bounds_the_count_from_below_only() {
    // CPU 1 of DMA32 (zoneinfo: 771, high 3492, batch 63) at 800: 2652 order-0 frees take
    // it to 3452, below high; an order-3 refill of 7 blocks and an order-3 allocation to
    // 3500, above it with no drain (rmqueue_bulk); the next free drains 63 pages (3438);
    // 53 frees drain nothing (3491) and the next drains at 3492, which pins.
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    for i in 0..2652 {
        t += &line(1, 2, &free(0x10000 + i));
    }
    for i in 0..7 {
        let pfn = 0x40000 + 8 * i;
        t += &line(1, 3, &format!("mm_page_alloc_zone_locked: page=(____ptrval____) pfn={pfn:#x} order=3 migratetype=1 percpu_refill=1"));
    }
    t += &line(1, 3, "mm_page_alloc: page=(____ptrval____) pfn=0x40000 order=3 migratetype=1 gfp_flags=GFP_KERNEL");
    t += &line(1, 3, &free(0x30000));
    t += &drain(0x10000);
    for i in 0..54 {
        t += &line(1, 5, &free(0x31000 + i));
    }
    t += &drain(0x10040);
    t += &line(1, 6, "mm_page_alloc: page=(____ptrval____) pfn=0x10100 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE");
    t += &line(0, 7, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    let sc = counts_of(&t);
    let c = sc.cpus.iter().find(|c| c.zone == "DMA32" && c.cpu == 1);
    let c = c.unwrap();
    // Read as a crossing, the first drain pinned 3492 - 2701 = 791 (fails on the old code).
    assert_eq!((c.inferred, c.found), (800, Found::Pinned));
}
