//! The refill-run inference ([`KernelSide::refill_run`]) against what interleaves a refill
//! batch in a real trace: the batch's own fallbacks, other CPUs' events, other batches on the
//! same CPU, and a batch that straddles the window's start.

use super::tests::ev;
use super::*;

pub(super) fn refill(pfn: u64) -> EventKind<'static> {
    EventKind::ZoneLocked {
        pfn,
        order: 0,
        migratetype: 0,
        percpu_refill: true,
    }
}

fn alloc0(pfn: u64) -> EventKind<'static> {
    EventKind::Alloc {
        pfn,
        order: 0,
        migratetype: 0,
        gfp_flags: "GFP_KERNEL",
    }
}

/// An Unmovable order-0 fallback to a Movable block of `fallback_order`.
fn extfrag(pfn: u64, fallback_order: u8) -> EventKind<'static> {
    EventKind::Extfrag {
        pfn,
        alloc_order: 0,
        fallback_order,
        alloc_migratetype: 0,
        fallback_migratetype: 1,
        fragmenting: false,
        change_ownership: true,
    }
}

/// Feeds `events` on CPU `cpu`, asserting that none finds a page taken untraced.
fn none_untraced(k: &mut KernelSide, cpu: u32, events: &[EventKind<'static>]) {
    for e in events {
        k.add(&ev(cpu, e.clone()), 0);
        assert!(k.untraced_now.is_empty(), "{e:?}: {:?}", k.untraced_now);
    }
}

/// 7.2 (7.2-p2_procs_pipe line 3187): a whole-pageblock claim in the middle of a batch
/// prints only `mm_page_alloc_extfrag`, for the page it takes; the batch goes on. The
/// allocations then take the batch in order, the claimed page among them: nothing was
/// allocated untraced, and the next batch finds the run used up.
#[test]
fn a_fallback_inside_a_refill_continues_the_run_and_joins_it_on_7_2() {
    let mut k = KernelSide::new(1, 2);
    let batch = [
        refill(0x10),
        refill(0x11),
        extfrag(0x100, 10),
        refill(0x101),
        refill(0x102),
    ];
    none_untraced(&mut k, 0, &batch);
    let taken: Vec<_> = [0x10, 0x11, 0x100, 0x101, 0x102].map(alloc0).into();
    none_untraced(&mut k, 0, &taken);
    none_untraced(&mut k, 0, &[refill(0x20)]);
    assert_eq!((k.untraced_early, k.grid.get(0, 0).extfrag), (0, 1));
    // The claimed page is the refilling CPU's, like the refilled ones.
    assert_eq!(
        k.grid.get(0, 0).refills,
        5,
        "refills count zone_locked alone"
    );
}

/// A claim below `pageblock_order` in 7.2 prints `zone_locked` and then `extfrag` of the
/// same page: one page of the run, not two.
#[test]
fn a_claim_below_pageblock_order_is_one_page_of_the_run_on_7_2() {
    let mut k = KernelSide::new(1, 1);
    let batch = [
        refill(0x10),
        refill(0x300),
        extfrag(0x300, 3),
        refill(0x301),
    ];
    none_untraced(&mut k, 0, &batch);
    none_untraced(&mut k, 0, &[alloc0(0x10), alloc0(0x300)]);
    // The run's last page, never allocated, is all the next batch finds left.
    k.add(&ev(0, refill(0x20)), 0);
    assert_eq!(k.untraced_now, vec![Untraced::new(0x301, 0, 0)]);
}

/// 6.1 (6.1-p2_procs_pipe line 20396): `__rmqueue_fallback` prints the block fallen back
/// to, then the retry's `zone_locked` the page taken; the batch goes on, and the block's
/// head is no page of the run unless the retry takes it.
#[test]
fn a_fallback_inside_a_refill_continues_the_run_before_6_15() {
    let mut k = KernelSide::new(1, 1);
    k.set_extfrag_names_page(false);
    let batch = [
        refill(0x10),
        refill(0x11),
        extfrag(0x200, 10),
        refill(0x208),
        refill(0x209),
    ];
    none_untraced(&mut k, 0, &batch);
    let taken: Vec<_> = [0x10, 0x11, 0x208].map(alloc0).into();
    none_untraced(&mut k, 0, &taken);
    k.add(&ev(0, refill(0x20)), 0);
    assert_eq!(k.untraced_now, vec![Untraced::new(0x209, 0, 0)]);
}

/// A fallback first in a batch starts it: what the last run left was taken untraced
/// (the list was empty), on either kernel; on 7.2 the fallback's page is the run's first.
#[test]
fn a_fallback_first_in_a_batch_starts_a_new_run() {
    for names_page in [true, false] {
        let mut k = KernelSide::new(1, 1);
        k.set_extfrag_names_page(names_page);
        none_untraced(&mut k, 0, &[refill(0x10), refill(0x11), alloc0(0x10)]);
        k.add(&ev(0, alloc0(0x50)), 0);
        k.add(&ev(0, extfrag(0x400, 10)), 0);
        assert_eq!(
            k.untraced_now,
            vec![Untraced::new(0x11, 0, 0)],
            "{names_page}"
        );
        none_untraced(&mut k, 0, &[refill(0x401), refill(0x402)]);
        // On 7.2 the fallback's page is the run's first, before 6.15 it is no page of it.
        let first = if names_page { 0x400 } else { 0x401 };
        let taken: Vec<_> = (first..=0x402).map(alloc0).collect();
        none_untraced(&mut k, 0, &taken);
        assert_eq!(k.untraced_early, 1, "{names_page}");
    }
}

/// Each zone has its own lists (`zone->per_cpu_pageset`). Under pressure (6.1-4g/p_pressure
/// line 62228: CPU 3 refills DMA32's Movable list with 0xb7d62.., takes 0xb7d62, then its
/// allocations go back to Normal, whose list refills at line 62368, and from line 64417 on
/// it takes 0xb7d63.. off DMA32's list in order) a refill of one zone's list leaves the
/// other zone's run as it was: nothing was allocated untraced. Before the runs were kept
/// per zone, the Normal refill read DMA32's run as used up (199 pages on 6.1, 1679 on 6.12,
/// 2036 on 7.2), and their allocations as re-allocations without a traced free.
#[test]
fn a_refill_of_another_zones_list_leaves_this_zones_run() {
    let mut k = KernelSide::new(2, 1);
    let (dma32, normal) = (0, 1);
    for (zone, events) in [
        (
            dma32,
            vec![refill(0xb7d62), refill(0xb7d63), refill(0xb7d64)],
        ),
        (dma32, vec![alloc0(0xb7d62)]),
        (
            normal,
            vec![refill(0x1028b9), refill(0x1028ba), alloc0(0x1028b9)],
        ),
        (dma32, vec![alloc0(0xb7d63), alloc0(0xb7d64)]),
    ] {
        for e in events {
            k.add(&ev(0, e.clone()), zone);
            assert!(k.untraced_now.is_empty(), "{e:?}: {:?}", k.untraced_now);
        }
    }
    assert_eq!(k.untraced_early, 0);
    // The zone's own next batch still finds its list empty: Normal's last page is gone.
    k.add(&ev(0, refill(0x102900)), normal);
    assert_eq!(k.untraced_now, vec![Untraced::new(0x1028ba, 0, 0)]);
}

/// Other CPUs' events interleave a refill in the merged trace (each CPU's buffer is in
/// order, the merge is by timestamp), and so does their own refill of the same zone once
/// the lock is theirs: neither ends this CPU's run. An event on the refilling CPU that is
/// no part of the batch (another order's refill) does: that is another `rmqueue_bulk`.
#[test]
fn only_the_refilling_cpus_own_events_end_its_run() {
    let mut k = KernelSide::new(1, 2);
    none_untraced(&mut k, 0, &[refill(0x10), refill(0x11)]);
    none_untraced(&mut k, 1, &[alloc0(0x90), refill(0x91), extfrag(0x92, 10)]);
    none_untraced(&mut k, 0, &[refill(0x12), alloc0(0x10)]);
    let order_3 = EventKind::ZoneLocked {
        pfn: 0x800,
        order: 3,
        migratetype: 0,
        percpu_refill: true,
    };
    none_untraced(&mut k, 0, &[order_3]);
    k.add(&ev(0, refill(0x20)), 0);
    assert_eq!(
        k.untraced_now,
        vec![Untraced::new(0x11, 0, 0), Untraced::new(0x12, 0, 0)]
    );
}

/// A batch on CPU 1 straddles the window's start (the 6.1 snapshot's marker), with a
/// fallback (6.1's form: the block, then the retry's page) in its part inside the window:
/// the part inside is one run, the pages before it are no run's, and allocations of all of
/// them in list order find nothing taken untraced.
#[test]
fn a_refill_straddling_the_windows_start_is_one_run_from_its_first_page_inside() {
    let run = straddle(false);
    let cpu1 = (0..run.kernel.grid.zones).map(|z| run.kernel.grid.get(z, 1).refills);
    assert_eq!(
        cpu1.sum::<u64>(),
        5,
        "the window holds 5 of the batches' pages"
    );
    assert_eq!(run.kernel.untraced_early, 0);
    assert_eq!(run.kernel.untraced_allocs, 0);
    assert_eq!(run.window.0.from.as_deref(), Some("KT_SNAPSHOT_BEFORE_END"));
}

/// `--whole-file` replays, and counts the kernel over, every event, the ones before the
/// `--proc` snapshot's marker included, and says so (no window).
#[test]
fn the_whole_file_is_replayed_and_counted_with_whole_file() {
    let run = straddle(true);
    let cpu1 = (0..run.kernel.grid.zones).map(|z| run.kernel.grid.get(z, 1).refills);
    assert_eq!(cpu1.sum::<u64>(), 9);
    assert_eq!(run.kernel.untraced_early, 0);
    assert_eq!((run.window.0.from, run.window.0.to), (None, None));
}

/// The straddling batch's trace replayed on the 6.1 snapshot, in its markers' window or
/// whole.
fn straddle(whole_file: bool) -> crate::trace::replay::run::ReplayRun {
    use crate::trace::replay::options::ReplayOptions;
    use crate::trace::replay::run as replay;
    let line = |cpu: u32, ts: u32, ev: &str| {
        format!("            x-1     [{cpu:03}] d..3.    {ts}.{cpu:06}: {ev}\n")
    };
    let refill = |pfn: u64| {
        format!("mm_page_alloc_zone_locked: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1 percpu_refill=1")
    };
    let alloc = |pfn: u64| {
        format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE")
    };
    let mut t = String::from("# tracer: nop\n");
    for pfn in 0x18000..0x18004 {
        t += &line(1, 1, &refill(pfn));
    }
    t += &line(0, 2, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    for pfn in [0x18004, 0x18005] {
        t += &line(1, 3, &refill(pfn));
    }
    t += &line(1, 3, "mm_page_alloc_extfrag: page=(____ptrval____) pfn=0x19000 alloc_order=0 fallback_order=10 pageblock_order=9 alloc_migratetype=1 fallback_migratetype=0 fragmenting=0 change_ownership=1");
    for pfn in [0x19000, 0x19001] {
        t += &line(1, 3, &refill(pfn));
    }
    for pfn in (0x18000..0x18006).chain([0x19000, 0x19001]) {
        t += &line(1, 4, &alloc(pfn));
    }
    t += &line(1, 5, &refill(0x1a000));
    t += &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.txt");
    std::fs::write(&p, t).unwrap();
    let opts = ReplayOptions {
        samples: 10,
        strict: true,
        proc: Some(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/proc/linux-6.1-p1-before"),
        ),
        whole_file,
        ..ReplayOptions::default()
    };
    replay::run(&p, &opts, &|_| {}).unwrap()
}

fn thp(pfn: u64, percpu_refill: bool) -> EventKind<'static> {
    EventKind::ZoneLocked {
        pfn,
        order: 9,
        migratetype: 1,
        percpu_refill,
    }
}

fn alloc9(pfn: u64) -> EventKind<'static> {
    EventKind::Alloc {
        pfn,
        order: 9,
        migratetype: 1,
        gfp_flags: "GFP_TRANSHUGE_LIGHT",
    }
}

/// 7.2-2g p_pressure (lines 5424 and 5751): CPU 2 refills two THPs, its task takes the
/// first and is traced on CPU 1 after moving. The allocation ran on CPU 2, from its list;
/// the second THP, allocated on CPU 2, is its own. Any order's refill counts, and a page
/// only while the trace shows it on the list: not once drained, freed (a free can go to the
/// buddy untraced) or handed out by the buddy.
#[test]
fn an_allocation_of_a_page_another_cpus_refill_listed_ran_on_that_cpu() {
    let mut k = KernelSide::new(1, 3);
    k.add(&ev(2, thp(0x11000, true)), 0);
    k.add(&ev(2, thp(0x11200, true)), 0);
    assert_eq!(
        k.add(&ev(1, alloc9(0x11000)), 0),
        Inferred::AllocOn { cpu: 2 }
    );
    assert_eq!(k.add(&ev(2, alloc9(0x11200)), 0), Inferred::None);
    // Allocated again (from the buddy, after a free): no refill listed it.
    k.add(
        &ev(
            1,
            EventKind::Free {
                pfn: 0x11000,
                order: 9,
            },
        ),
        0,
    );
    assert_eq!(k.add(&ev(0, alloc9(0x11000)), 0), Inferred::None);
    // Drained after the refill.
    k.add(&ev(2, thp(0x11400, true)), 0);
    let drain = EventKind::PcpuDrain {
        pfn: 0x11400,
        order: 9,
        migratetype: 1,
    };
    k.add(&ev(2, drain), 0);
    assert_eq!(k.add(&ev(1, alloc9(0x11400)), 0), Inferred::None);
    // Taken from the buddy (zone_locked without a refill) after the refill.
    k.add(&ev(2, thp(0x11600, true)), 0);
    k.add(&ev(0, thp(0x11600, false)), 0);
    assert_eq!(k.add(&ev(0, alloc9(0x11600)), 0), Inferred::None);
    // Freed onto CPU 0's lists: not moved.
    k.add(
        &ev(
            0,
            EventKind::Free {
                pfn: 0x11800,
                order: 9,
            },
        ),
        0,
    );
    assert_eq!(k.add(&ev(1, alloc9(0x11800)), 0), Inferred::None);
    assert_eq!(k.allocs_on_refilling_cpu, 1);
    // An order-0 page: the allocation is CPU 0's, and takes the pages before it in CPU 0's
    // run as allocated untraced there.
    none_untraced(&mut k, 0, &[refill(0x10), refill(0x11), refill(0x12)]);
    assert_eq!(k.add(&ev(1, alloc0(0x12)), 0), Inferred::AllocOn { cpu: 0 });
    assert_eq!(
        k.untraced_now,
        vec![Untraced::new(0x10, 0, 0), Untraced::new(0x11, 0, 0)]
    );
}
