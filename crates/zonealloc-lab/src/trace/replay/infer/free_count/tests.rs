//! The `free_count` walk's tests: crafted traces on the shipped 6.1 snapshot's zones (DMA32,
//! `batch` 63), walked by 6.7+'s rules (`CONFIG_PCP_BATCH_SCALE_MAX` 5).

use super::*;
use crate::trace::replay::infer::crafted_tests::{
    alloc_text, cpu1_count_after, free_text, geo, rules,
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
