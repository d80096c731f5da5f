//! A drain that a surely `free_high` free triggered pins the count (`free_high.rs`), on
//! 6.12-4g-more p_sock's before/ snapshot (Normal CPU 2: zoneinfo count 192, batch 63).

use super::super::{CpuStart, Found};
use super::{first_events, proc_setup, window, Numbering, ProcSnapshot, Which};
use std::path::Path;
use zonealloc::FreeHigh;

const PAGE: &str = "page=(____ptrval____)";

/// A line on `cpu` at `us` microseconds past 66 s.
fn line(cpu: u32, us: u32, ev: &str) -> String {
    format!("          kmem-7     [{cpu:03}] .....    66.{us:06}: {ev}\n")
}

/// Normal CPU 2's start when, in the window, it frees `frees` order-3 blocks and the last
/// drains them with 150 order-0 pages (all its lists held: a start of 150), then frees one
/// page that drains nothing.
fn cpu2_start(frees: u64, rule: FreeHigh) -> CpuStart {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/kernel-own/6.12-4g-more/p_sock/before");
    let snap = ProcSnapshot::read_dir(&dir).unwrap();
    let geo = proc_setup::geometry(&snap, None, Numbering::Current).unwrap();
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    let blocks: Vec<u64> = (0..frees).map(|i| 0x109d00 + 8 * i).collect();
    for (i, &pfn) in blocks.iter().enumerate() {
        let ev = format!("mm_page_free: {PAGE} pfn={pfn:#x} order=3");
        t += &line(2, 10 + i as u32, &ev);
    }
    let drained = blocks
        .iter()
        .map(|&p| (p, 3))
        .chain((0..150).map(|i| (0x10a000 + i, 0)));
    for (i, (pfn, order)) in drained.enumerate() {
        let ev = format!("mm_page_pcpu_drain: {PAGE} pfn={pfn:#x} order={order} migratetype=0");
        t += &line(2, 100 + i as u32, &ev);
    }
    t += &line(
        2,
        900,
        &format!("mm_page_free: {PAGE} pfn={:#x} order=0", 0x10b000),
    );
    t += &line(
        2,
        901,
        &format!(
            "mm_page_alloc: {PAGE} pfn={:#x} order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE",
            0x10b000
        ),
    );
    t += &line(0, 950, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("t.txt");
    std::fs::write(&p, t).unwrap();
    let which = Which {
        lists: false,
        fixed_high: false,
        free_high: rule,
        ..Which::both_on_6_1()
    };
    let sc = first_events::of_file(&p, &window(), &geo, &snap, which)
        .counts
        .unwrap();
    sc.cpus
        .into_iter()
        .find(|c| c.zone == "Normal" && c.cpu == 2)
        .unwrap()
}

/// Nine order-3 frees: before the ninth, 64 pages freed since the last allocation, at least
/// `batch`, after an order-3 free: `free_high`, whose drain of 222 pages took the count.
/// Fails on the old code (zoneinfo's 192, bounded only).
#[test]
fn a_sure_free_high_drain_pins_the_count() {
    let c = cpu2_start(9, FreeHigh::Batch);
    assert_eq!((c.inferred, c.found), (150, Found::Pinned));
}

/// Eight: 56 pages before the eighth, under `batch`: the drain may be `nr_pcp_free`'s,
/// which leaves pages on the lists, and zoneinfo's count stays. 7.2's threshold (`batch +
/// high_min / 2`) is not reached by nine either.
#[test]
fn a_drain_short_of_the_threshold_does_not_pin() {
    assert_eq!(cpu2_start(8, FreeHigh::Batch).inferred, 192);
    assert_eq!(cpu2_start(9, FreeHigh::Current).inferred, 192);
}
