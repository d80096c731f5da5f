//! The reachable `high` values and the starts a pin allows with them.

use super::super::tests::{cpu1_on_7_2, drain_and_end, line};
use super::*;

/// 6.12-4g-loads p_fork, Normal CPU 3: `high_min` 1281, batch 63; three refill runs (an
/// order-1 one, two of 63 pages) then any number of worker steps.
#[test]
fn raises_and_decay_steps_reach_the_kernels_values_only() {
    let h = High {
        lo: 1281,
        hi: 1281,
        max: 5000,
        grow: 63 << 5,
        batch: 63,
    };
    let mut r = Reach::new(1281, &h, 5);
    r.refill(1, true, &h, 5);
    r.refill(1, false, &h, 5);
    r.refill(0, true, &h, 5);
    for _ in 1..63 {
        r.refill(0, false, &h, 5);
    }
    r.refill(0, true, &h, 5);
    for _ in 1..63 {
        r.refill(0, false, &h, 5);
    }
    r.settle(&h, 5);
    assert_eq!(r.vals.as_deref(), Some(&[1281, 1287, 1344, 1407, 1470][..]));
    // A run whose size does not show its raise (`max_nr_alloc` cut it short): unknown.
    r.refill(0, true, &h, 5);
    r.settle(&h, 5);
    assert!(r.vals.is_none());
}

#[test]
fn the_nearest_allowed_start_within_the_bounds() {
    let a = [(1164, 1164), (1221, 1221)];
    assert_eq!(nearest(1168, &a, (1164, 1240)), 1164);
    assert_eq!(nearest(1200, &a, (1164, 1240)), 1221);
    assert_eq!(nearest(1168, &a, (1200, 1240)), 1221);
    // None in the bounds: the count stays.
    assert_eq!(nearest(1168, &a, (1230, 1240)), 1168);
}

/// On the 7.2 snapshot (DMA32 CPU 1: zoneinfo's count 1294, `high` 3492 = `high_min`,
/// batch 63): an order-1 refill run raises `high` to 3555 (`nr_pcp_alloc`), and no worker
/// step can take it anywhere but back to 3492. 2208 order-0 frees, and the last drains:
/// `c0 + 4 + 2208` is 3492 or 3555, so `c0` is 1280 or 1343, not zoneinfo's 1294 (which
/// the range 1280..=1343 held). Fails on the old code (1294).
#[test]
fn a_pin_names_the_starts_a_reachable_high_gives() {
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    for pfn in [0x30000u64, 0x30002] {
        t += &line(1, 2, &format!("mm_page_alloc_zone_locked: page=(____ptrval____) pfn={pfn:#x} order=1 migratetype=1 percpu_refill=1"));
    }
    for i in 0..2208u64 {
        let pfn = 0x10000 + i;
        t += &line(
            1,
            3,
            &format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0"),
        );
    }
    t += &drain_and_end();
    let c = cpu1_on_7_2(&t, |w| w);
    assert_eq!(c.bounds, (1280, Some(1343)));
    assert_eq!(c.allowed, vec![(1280, 1280), (1343, 1343)]);
    assert_eq!((c.zoneinfo, c.inferred), (1294, 1280));
}

/// The window walk's values start from zoneinfo's `high`: a refill run after its print
/// (`nr_pcp_alloc`) may have moved it, and the carry then keeps the range alone.
#[test]
fn a_refill_after_the_print_moves_high_from_the_printed_value() {
    let h = High {
        lo: 3492,
        hi: 3492,
        max: 15551,
        grow: 63 << 5,
        batch: 63,
    };
    let mut r = Reach::new(3492, &h, 5);
    assert_eq!(r.moved_since_print(), None);
    r.refill(0, true, &h, 5);
    r.printed();
    r.settle(&h, 5);
    r.freed(0, &h, 5);
    // An order-0 free's drain moves nothing (no `free_high`, `free_count` small).
    r.allocated();
    r.drained(0, &h, 5);
    assert_eq!(r.moved_since_print(), Some(false));
    r.refill(0, true, &h, 5);
    assert_eq!(r.moved_since_print(), Some(true));
}

/// 7.2-2g p2_procs_pipe, DMA32 CPU 2: the pin at 22.156429 allows 2405, 2413, 2912, ...;
/// the drain at 23.188 after it allows 2414 (and more, none of them the first's): a page
/// the walk did not see between them, so no start is left and none is moved to.
#[test]
fn later_pins_narrow_the_allowed_starts_and_overlaps_join() {
    let first = [(2405, 2405), (2413, 2413), (2912, 2912)];
    assert_eq!(intersect(&first, &[(2414, 2414), (3000, 3000)]), vec![]);
    assert_eq!(nearest(2443, &[], (2414, 10457)), 2443);
    assert_eq!(
        intersect(&[(0, 10), (20, 30)], &[(5, 25)]),
        vec![(5, 10), (20, 25)]
    );
    // THP pins' ranges overlap: joined, so repeated pins do not multiply them.
    assert_eq!(
        merge(vec![(20, 30), (0, 10), (5, 12), (13, 14)]),
        vec![(0, 14), (20, 30)]
    );
}
