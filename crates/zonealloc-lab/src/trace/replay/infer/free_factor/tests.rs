//! The `free_factor` walk's tests: crafted traces on the shipped 6.1 snapshot (DMA32: `high`
//! 3492, `batch` 63; CPU 1's count 771).

use super::*;
use crate::trace::replay::infer::crafted_tests::{
    alloc_text, cpu1_count_after, free_text, geo, rules, snap_dir,
};
use crate::trace::replay::{self, ReplayOptions};
use std::path::Path;

fn line(cpu: u32, ts: u32, ev: &str) -> String {
    format!("            x-1     [{cpu:03}] d..3.    {ts}.{cpu:06}: {ev}\n")
}

fn free(cpu: u32, pfn: u64, order: u8) -> String {
    line(cpu, 2, &free_text(pfn, order))
}

fn alloc(cpu: u32, pfn: u64) -> String {
    line(cpu, 2, &alloc_text(pfn, 0))
}

/// A drain run of `n` order-0 pages on `cpu`, from `pfn` on.
fn drain(cpu: u32, pfn: u64, n: u64) -> String {
    (0..n)
        .map(|i| {
            line(
                cpu,
                2,
                &format!(
                    "mm_page_pcpu_drain: page=(____ptrval____) pfn={:#x} order=0 migratetype=1",
                    pfn + i
                ),
            )
        })
        .collect()
}

/// CPU 1's DMA32 factor after `text`.
fn dma32_cpu1(text: &str) -> u8 {
    let geo = geo();
    let z = geo.zone_of(0x10000).unwrap();
    walk_text(text.as_bytes(), &geo, rules(&geo))[z][1]
}

#[test]
fn drains_after_frees_raise_the_factor_and_allocations_halve_it() {
    let mut t = String::new();
    for (i, n) in [63, 126, 252].into_iter().enumerate() {
        t += &free(1, 0x10000 + i as u64, 0);
        t += &drain(1, 0x11000 + 0x400 * i as u64, n);
    }
    assert_eq!(dma32_cpu1(&t), 3);
    // Another CPU's allocation, or one from another zone, leaves it.
    let other = t.clone() + &alloc(2, 0x10100) + &alloc(1, 0x100);
    assert_eq!(dma32_cpu1(&other), 3);
    t += &alloc(1, 0x10100);
    assert_eq!(dma32_cpu1(&t), 1);
    t += &alloc(1, 0x10101);
    assert_eq!(dma32_cpu1(&t), 0);
}

#[test]
fn a_drain_no_free_caused_and_a_free_high_drain_leave_the_factor() {
    // drain_all_pages' drain on a kworker: no free before it.
    let mut t = alloc(1, 0x10100) + &drain(1, 0x11000, 63);
    assert_eq!(dma32_cpu1(&t), 0);
    t += &free(1, 0x10000, 0);
    t += &drain(1, 0x11100, 63);
    assert_eq!(dma32_cpu1(&t), 1);
    // An order-1 free with the factor at 1 drains everything, free_factor untouched.
    t += &free(1, 0x10002, 1);
    t += &drain(1, 0x11200, 700);
    assert_eq!(dma32_cpu1(&t), 1);
    // An order-0 free's drain raises it.
    t += &free(1, 0x10004, 0);
    t += &drain(1, 0x11600, 126);
    assert_eq!(dma32_cpu1(&t), 2);
}

#[test]
fn the_factor_stops_at_the_cap_and_under_reclaim_at_batch_times_4() {
    let mut t = String::new();
    for i in 0..8u64 {
        t += &free(1, 0x10000 + i, 0);
        t += &drain(1, 0x11000 + 0x10 * i, 1);
    }
    // 63 << 5 = 2016 < 3492 - 63, but CONFIG_PCP_BATCH_SCALE_MAX is 5.
    assert_eq!(dma32_cpu1(&t), 5);
    // While kswapd reclaims, high is min(63 << 2, 3492) = 252: 63 << 2 is not below 189.
    let mut r = line(0, 2, "mm_vmscan_kswapd_wake: nid=0 order=0");
    for i in 0..8u64 {
        r += &free(1, 0x10000 + i, 0);
        r += &drain(1, 0x11000 + 0x10 * i, 1);
    }
    assert_eq!(dma32_cpu1(&r), 2);
}

/// Before the marker CPU 1 frees a page and the drain of 63 follows: `free_factor` 1. In the
/// window an order-1 free is a `free_high` one, and drains CPU 1's whole DMA32 list (771 + 2
/// pages), as the kernel's 6.1-8g p_idle CPU 1 drained 3214 pages at its first order-1 free.
fn trace() -> String {
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_BEGIN t");
    t += &free(1, 0x10000, 0);
    t += &drain(1, 0x11000, 63);
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    // Allocated on CPU 2 (an allocation on CPU 1 would halve CPU 1's factor).
    t += &line(2, 2, "mm_page_alloc: page=(____ptrval____) pfn=0x10002 order=1 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE");
    t += &free(1, 0x10002, 1);
    t += &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    t
}

#[test]
fn the_replay_starts_with_the_factor_the_trace_before_the_marker_shows() {
    let count = |infer| cpu1_count_after(&trace(), &snap_dir(), infer);
    // The free_high drain empties the list.
    assert_eq!(count(None), 0);
    // Without the inferences the factor starts at 0, and the free stays on the list.
    assert_eq!(count(Some(false)), 771 + 2);
}

/// 6.1-8g p_idle's before/ snapshot, with the kernel's pfn layout: Normal's CPU 1 holds
/// 3212 pages; pfns 0x1001d8..0x1001e0 are pages in use (`U`). The kernel's p_idle frees such
/// blocks at order 1 (pgds of exiting tasks, forked before the trace: 0x10244a at
/// 1807.633930, after which it drains CPU 1's 3214 pages).
fn own_8g_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/kernel-own/6.1-8g/p_idle/before")
}

#[test]
fn a_free_of_a_block_in_use_at_the_snapshot_keeps_its_order_and_drains_as_the_kernels() {
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_BEGIN t");
    t += &free(1, 0x105300, 0);
    t += &drain(1, 0x105301, 63);
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    t += &free(1, 0x1001d8, 1);
    t += &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.txt");
    std::fs::write(&p, t).unwrap();
    let opts = ReplayOptions {
        samples: 10,
        proc: Some(own_8g_dir()),
        ..ReplayOptions::default()
    };
    let r = replay::run(&p, &opts, &|_| {}).unwrap();
    let z = r.geo.zone_of(0x1001d8).unwrap();
    // One order-1 free with free_factor 1: free_high drains the whole list. As two
    // order-0 pages (the pool's), it stayed below high (3280) with 3214 pages.
    let info = r.replayers[0].zones[z].pcp_info(CpuId(1));
    assert_eq!(info.count, 0, "{info:?}");
}
