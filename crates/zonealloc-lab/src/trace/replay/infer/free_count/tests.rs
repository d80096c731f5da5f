//! The `free_count` walk's tests: crafted traces on the shipped 6.1 snapshot's zones (DMA32,
//! `batch` 63), walked by 6.7+'s rules (`CONFIG_PCP_BATCH_SCALE_MAX` 5).

use super::*;
use crate::trace::replay::infer::crafted_tests::{
    alloc_text, cpu1_after, cpu1_count_after, free_text, geo, rules,
};
use std::path::Path;

fn line(cpu: u32, ev: &str) -> String {
    format!("            x-1     [{cpu:03}] .....    2.{cpu:06}: {ev}\n")
}

fn free(cpu: u32, pfn: u64, order: u8) -> String {
    line(cpu, &free_text(pfn, order))
}

fn batched(cpu: u32, pfn: u64) -> String {
    line(
        cpu,
        &format!("mm_page_free_batched: page=(____ptrval____) pfn={pfn:#x} order=0"),
    )
}

fn alloc(cpu: u32, pfn: u64, order: u8) -> String {
    line(cpu, &alloc_text(pfn, order))
}

/// CPU 1's DMA32 state after `text`.
fn dma32_cpu1(text: &str) -> FreeState {
    let geo = geo();
    let z = geo.zone_of(0x10000).unwrap();
    walk_text(text.as_bytes(), &geo, rules(&geo))[z][1]
}

#[test]
fn frees_add_their_pages_and_allocations_halve_the_count() {
    let mut t: String = (0..100).map(|i| free(1, 0x10000 + i, 0)).collect();
    t += &free(1, 0x11000, 2);
    let s = dma32_cpu1(&t);
    assert_eq!((s.free_count, s.prev_free_high_order), (104, true));
    // Another CPU's allocation, one from another zone and a failed one leave it.
    let other = t.clone() + &alloc(2, 0x10100, 0) + &alloc(1, 0x100, 0) + &alloc(1, 0, 0);
    assert_eq!(dma32_cpu1(&other).free_count, 104);
    // A batched free's commit repeats its mm_page_free: counted once.
    t += &free(1, 0x12000, 0);
    t += &batched(1, 0x12000);
    let s = dma32_cpu1(&t);
    assert_eq!((s.free_count, s.prev_free_high_order), (105, false));
    t += &alloc(1, 0x10100, 0);
    t += &alloc(1, 0x10102, 1);
    assert_eq!(dma32_cpu1(&t).free_count, 26);
}

#[test]
fn the_count_stops_growing_at_batch_shifted_by_the_scale_max() {
    // 2016 = 63 << 5: the free that finds it below adds its pages, the next adds none.
    let mut t: String = (0..2015).map(|i| free(1, 0x10000 + i, 0)).collect();
    t += &free(1, 0x11000, 3);
    assert_eq!(dma32_cpu1(&t).free_count, 2023);
    t += &free(1, 0x11008, 3);
    assert_eq!(dma32_cpu1(&t).free_count, 2023);
    // A THP free is a list free too (pcp_allowed_order), and not a high-order one.
    let thp = (0..10).map(|i| free(1, 0x10000 + i, 0)).collect::<String>() + &free(1, 0x20000, 9);
    let s = dma32_cpu1(&thp);
    assert_eq!((s.free_count, s.prev_free_high_order), (522, false));
}

/// The shipped 7.2 p1 snapshot: DMA32's CPU 1 holds 1294 pages (`high_min` 3492, batch 63).
/// Before the marker CPU 1 frees 1900 pages and an order-1 block: `free_count` 1902 and the
/// flag set. In the window an order-1 free is a `free_high` one (`free_count >= batch +
/// high_min / 2`, 1809, 7.2's `free_frozen_page_commit`) and drains the whole list.
#[test]
fn the_replay_starts_with_the_free_count_the_trace_before_the_marker_shows() {
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, "tracing_mark_write: KT_SNAPSHOT_BEFORE_BEGIN t");
    t += &(0..1900)
        .map(|i| free(1, 0x10000 + i, 0))
        .collect::<String>();
    t += &free(1, 0x11000, 1);
    t += &line(0, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    // Allocated on CPU 2 (an allocation on CPU 1 would halve CPU 1's count).
    t += &alloc(2, 0x12000, 1);
    t += &free(1, 0x12000, 1);
    t += &line(0, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    let snap = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/proc/linux-7.2-p1-before");
    let count = |infer| cpu1_count_after(&t, &snap, infer);
    assert_eq!(count(None), 0);
    // Without the inferences `free_count` starts at 0, and the block stays on the list.
    assert_eq!(count(Some(false)), 1294 + 2);
}

fn refill(cpu: u32, pfn: u64) -> String {
    line(
        cpu,
        &format!("mm_page_alloc_zone_locked: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1 percpu_refill=1"),
    )
}

/// CPU 1's order-0 refill of `n` DMA32 pages from `at`, then its allocation of the first.
fn refill_then_alloc(n: u64, at: u64) -> String {
    (0..n).map(|i| refill(1, at + i)).collect::<String>() + &alloc(1, at, 0)
}

/// 6.12-4g-6cpu p_fork, CPU 3: its last refill before the window is 63 pages (338.586378)
/// and no free follows it there, so `alloc_factor` is at least 1 at the window's start; the
/// window's first refill, 63 pages at count 853 = `high` (391.955027), is `max_nr_alloc`
/// capped at `batch` either way, and the second, 126 pages (391.955410), shows the factor
/// 1 (`high` raised by `batch << 1` on each, `max_nr_alloc` 131; from 0 it would have been
/// 68). Fails on the old code (no floor: the set-up read the first refill as factor 0).
#[test]
fn refills_raise_the_alloc_factor_floor_and_frees_halve_it() {
    let mut t = refill_then_alloc(63, 0x10000);
    assert_eq!(
        dma32_cpu1(&t).alloc_floor,
        1,
        "any refill leaves at least 1"
    );
    t += &free(1, 0x10000, 0);
    assert_eq!(dma32_cpu1(&t).alloc_floor, 0, "a free halves it");
    t += &refill_then_alloc(126, 0x10100);
    assert_eq!(dma32_cpu1(&t).alloc_floor, 2, "126 = 63 << 1");
    // 189 pages: `max_nr_alloc` capped a factor of 2 or more.
    t += &free(1, 0x10100, 0);
    t += &free(1, 0x10101, 0);
    t += &refill_then_alloc(189, 0x10200);
    assert_eq!(dma32_cpu1(&t).alloc_floor, 2);
    // Another CPU's refill and free leave CPU 1's; the scale max caps it; a refill at the
    // text's end counts.
    t += &refill(2, 0x10300);
    t += &free(2, 0x10300, 0);
    t += &(0..4032)
        .map(|i| refill(1, 0x11000 + i))
        .collect::<String>();
    assert_eq!(dma32_cpu1(&t).alloc_floor, 5, "63 << 6 pages: at most 5");
}

/// The replay starts CPU 1 with the factor the trace before the marker leaves: its refill
/// of 63 pages there, no free after, and an empty window (shipped 7.2 p1 snapshot: DMA32's
/// CPU 1 holds 1294 pages). Fails on the old code (factor 0).
#[test]
fn the_replay_starts_with_the_alloc_factor_the_refills_before_the_marker_leave() {
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, "tracing_mark_write: KT_SNAPSHOT_BEFORE_BEGIN t");
    t += &refill_then_alloc(63, 0x10000);
    t += &line(0, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    t += &line(0, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    let snap = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/proc/linux-7.2-p1-before");
    assert_eq!(cpu1_after(&t, &snap, None).alloc_factor, 1);
}
