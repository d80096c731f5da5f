//! Interrupts' frees read off where their pages went next: crafted windows on the shipped
//! 7.2 p1 snapshot (DMA32, CPU 1: 1294 pages).

use crate::trace::replay::infer::crafted_tests::{alloc_text, cpu1_count_after, free_text};
use std::path::Path;

/// A line by `kmem-7` on `cpu` at `us` microseconds past 2 s, with the latency column `ctx`.
fn line(cpu: u32, us: u32, ctx: &str, ev: &str) -> String {
    format!("          kmem-7     [{cpu:03}] {ctx}    2.{us:06}: {ev}\n")
}

/// CPU 1's DMA32 count after a window in which `kmem-7` allocates a page on CPU 1, a softirq
/// stamped with it frees 0x30000..0x30003 at `..s2.`, the task allocates again, and then
/// `back` shows where the three pages went (on `back_cpu`: a refill's zone-locked take, or
/// an allocation of each); `infer` as `--infer` sets it.
fn count_after(back: &str, back_cpu: u32, infer: Option<bool>) -> i32 {
    let mut t = String::from("# tracer: nop\n");
    t += &line(
        0,
        1,
        "...1.",
        "tracing_mark_write: KT_SNAPSHOT_BEFORE_BEGIN t",
    );
    t += &line(
        0,
        2,
        "...1.",
        "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t",
    );
    t += &line(1, 10, ".....", &alloc_text(0x20000, 0));
    for i in 0..3 {
        t += &line(1, 20 + i, "..s2.", &free_text(0x30000 + u64::from(i), 0));
    }
    t += &line(1, 30, ".....", &alloc_text(0x20001, 0));
    for i in 0..3 {
        let pfn = 0x30000 + u64::from(i);
        if back == "refill" {
            let take = format!("mm_page_alloc_zone_locked: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1 percpu_refill=1");
            t += &line(back_cpu, 40 + i, "d..3.", &take);
        }
        t += &line(back_cpu, 50 + i, ".....", &alloc_text(pfn, 0));
    }
    t += &line(
        0,
        60,
        "...1.",
        "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t",
    );
    let snap = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/proc/linux-7.2-p1-before");
    cpu1_count_after(&t, &snap, infer)
}

/// 7.2-4g-6cpu p_fork, CPU 5 (401.797341): a softirq's 24 frees at `..s3.` between two of
/// `kmem-phases-1580`'s allocations come back by refills on CPUs 1, 3, 4 and 5: they found
/// the lists held (`__free_frozen_pages`' `pcp_spin_trylock` failed, `free_one_page`), and
/// CPU 1's list keeps only its two allocations off. Pages an allocation on CPU 1 takes next
/// were on its list. Fails on the old code (1294 - 2 + 3 there: the frees went on the list).
#[test]
fn an_interrupts_frees_a_refill_takes_back_went_to_the_buddy() {
    assert_eq!(count_after("refill", 2, None), 1294 - 2);
    // Without the inferences nothing tells: onto the list.
    assert_eq!(count_after("refill", 2, Some(false)), 1294 - 2 + 3);
    // Taken off CPU 1's list by its allocations: they were on it.
    assert_eq!(count_after("alloc", 1, None), 1294 - 2 + 3 - 3);
}
