//! The start-count walk's tests: crafted traces on the shipped snapshots.

use super::*;
use crate::trace::ingest::input;
use crate::trace::migratetype::Numbering;
use crate::trace::replay::first_events::{self, Which};
use crate::trace::replay::proc_setup;
use crate::trace::replay::{self, ReplayOptions};
use std::path::Path;

fn snap_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/proc/linux-6.1-p1-before")
}

pub(super) fn line(cpu: u32, ts: u32, ev: &str) -> String {
    format!("            x-1     [{cpu:03}] .....    {ts}.{cpu:06}: {ev}\n")
}

/// A trace whose CPU 1 held `count` pages of DMA32 at the start marker (zoneinfo says
/// 771, high 3492, batch 63): ten allocations off its lists, then frees up to `high`,
/// then the drain the last free triggers; CPU 2 frees too, and drains nothing.
fn trace(count: u32) -> String {
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    for i in 0..10 {
        let pfn = 0x20000 + i;
        t += &line(1, 2, &format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE"));
    }
    for i in 0..(3492 - count + 10) {
        let pfn = 0x10000 + i;
        t += &line(
            1,
            3,
            &format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0"),
        );
        t += &line(
            2,
            3,
            &format!(
                "mm_page_free: page=(____ptrval____) pfn={:#x} order=0",
                pfn + 0x8000
            ),
        );
    }
    t += &drain_and_end();
    t
}

/// CPU 1's drain of 63 pages from 0x10000, an allocation after it, and the window's end.
pub(super) fn drain_and_end() -> String {
    let mut t = String::new();
    for pfn in 0x10000..0x10000 + 63u64 {
        let ev =
            format!("mm_page_pcpu_drain: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1");
        t += &line(1, 4, &ev);
    }
    t += &line(1, 5, "mm_page_alloc: page=(____ptrval____) pfn=0x10100 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE");
    t + &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t")
}

/// The start counts `trace` gives on the 6.1 snapshot (a fixed `high`).
pub(super) fn counts_of(trace: &str) -> StartCounts {
    counts_in(&snap_dir(), trace)
}

/// The start counts `trace` gives on the snapshot in `dir` (the walk alone).
fn counts_in(dir: &Path, trace: &str) -> StartCounts {
    let snap = ProcSnapshot::read_dir(dir).unwrap();
    let geo = proc_setup::geometry(&snap, None, Numbering::Current).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("t.txt");
    std::fs::write(&p, trace).unwrap();
    let which = Which {
        lists: false,
        ..which()
    };
    let first = first_events::of_file(&p, &window(), &geo, &snap, which);
    first.counts.unwrap()
}

fn which() -> Which {
    Which::both_on_6_1()
}

fn window() -> input::Window {
    input::Window {
        from: Some("KT_SNAPSHOT_BEFORE_END".into()),
        to: Some("KT_SNAPSHOT_AFTER_BEGIN".into()),
        beyond_prefix_if: None,
    }
}

#[test]
fn the_first_free_triggered_drain_pins_the_count_zoneinfo_got_wrong() {
    let snap = ProcSnapshot::read_dir(&snap_dir()).unwrap();
    let geo = proc_setup::geometry(&snap, None, Numbering::Current).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.txt");
    std::fs::write(&p, trace(800)).unwrap();
    let sc = first_events::of_file(&p, &window(), &geo, &snap, which())
        .counts
        .unwrap();
    let c1 = sc
        .cpus
        .iter()
        .find(|c| c.zone == "DMA32" && c.cpu == 1)
        .unwrap();
    // 800 + 3492 - 800 + 10 frees - 10 allocations reach high = 3492 at the last free.
    assert_eq!(
        (c1.zoneinfo, c1.inferred, c1.found),
        (771, 800, Found::Pinned)
    );
    assert_eq!(sc.count("DMA32", 1), Some(800));
    // CPU 2 freed 2702 pages without a drain; all but the last are followed by another
    // event on CPU 2 (that shows no drain): below high, so at most 3492 - 1 - 2701.
    let c2 = sc
        .cpus
        .iter()
        .find(|c| c.cpu == 2 && c.zone == "DMA32")
        .unwrap();
    assert_eq!((c2.bounds, c2.inferred), ((0, Some(790)), 764));
}

#[test]
fn a_batched_free_reaches_the_list_at_its_commit_not_at_mm_page_free() {
    // CPU 1 of DMA32 at 800 (zoneinfo: 771): ten allocations, 2698 single frees, then a
    // batch of ten (free_unref_folios: ten mm_page_free, then the ten commits, each
    // mm_page_free_batched); the fourth commit reaches high = 3492 and drains.
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    for i in 0..10 {
        t += &line(1, 2, &format!("mm_page_alloc: page=(____ptrval____) pfn={:#x} order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE", 0x20000 + i));
    }
    let free = |pfn: u64| format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0");
    let batched =
        |pfn: u64| format!("mm_page_free_batched: page=(____ptrval____) pfn={pfn:#x} order=0");
    for i in 0..2698 {
        t += &line(1, 3, &free(0x10000 + i));
    }
    for i in 0..10 {
        t += &line(1, 4, &free(0x30000 + i));
    }
    for i in 0..10 {
        t += &line(1, 4, &batched(0x30000 + i));
        if i == 3 {
            for j in 0..63 {
                t += &line(
                    1,
                    4,
                    &format!(
                        "mm_page_pcpu_drain: page=(____ptrval____) pfn={:#x} order=0 migratetype=1",
                        0x10000 + j
                    ),
                );
            }
        }
    }
    t += &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    let sc = counts_of(&t);
    // Counted at mm_page_free, the six pages committed after the drain would make it 794.
    assert_eq!(sc.count("DMA32", 1), Some(800));
}

/// The replay starts from the pinned count with the inference: by default on 6.1 in the
/// snapshot's window ([`on_by_default`]), not with `--whole-file` or `--infer off`.
#[test]
fn the_replay_starts_from_the_pinned_count_only_with_the_inference() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.txt");
    std::fs::write(&p, trace(800)).unwrap();
    let run_with = |start_count: Option<bool>, infer: Option<bool>, whole_file: bool| {
        let opts = ReplayOptions {
            samples: 10,
            strict: true,
            infer_start_count: start_count,
            infer,
            whole_file,
            proc: Some(snap_dir()),
            ..ReplayOptions::default()
        };
        replay::run(&p, &opts, &|_| {}).unwrap()
    };
    let run = |start_count: Option<bool>| run_with(start_count, None, false);
    let pcp = |r: &replay::ReplayRun| {
        let f = r.replayers[0]
            .setup
            .iter()
            .find(|f| f.zone.contains("DMA32"));
        f.unwrap().pcp
    };
    let (with, without, default) = (run(Some(true)), run(Some(false)), run(None));
    // zoneinfo: 776 + 771 + 764 + 217; the trace puts CPU 1 at 800, not 771.
    assert_eq!(pcp(&without), (2528, 2528));
    assert_eq!(pcp(&with), (2528, 2528 - 771 + 800));
    // The 6.1 snapshot: on by default (the old default was off).
    assert_eq!(pcp(&default), pcp(&with));
    assert_eq!(with.start_counts.unwrap().count("DMA32", 1), Some(800));
    assert!(without.start_counts.is_none());
    assert!(default.start_counts.is_some());
    assert!(run_with(None, Some(false), false).start_counts.is_none());
    assert!(run_with(None, None, true).start_counts.is_none());
    assert!(run_with(Some(true), Some(false), true)
        .start_counts
        .is_some());
}

/// On 7.2 the walk is on by default in the snapshot's window ([`on_by_default`]);
/// `--infer start-count=off` turns it off.
#[test]
fn the_walk_is_on_by_default_on_7_2() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.txt");
    std::fs::write(&p, trace(800)).unwrap();
    let dir_72 = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/proc/linux-7.2-p1-before");
    let run = |start_count: Option<bool>| {
        let opts = ReplayOptions {
            samples: 10,
            infer_start_count: start_count,
            proc: Some(dir_72.clone()),
            ..ReplayOptions::default()
        };
        replay::run(&p, &opts, &|_| {}).unwrap()
    };
    let counts = |r: &replay::ReplayRun| r.start_counts.as_ref().map(|s| s.count("DMA32", 1));
    assert!(counts(&run(None)).is_some());
    assert!(run(Some(false)).start_counts.is_none());
}

/// The start counts `trace` gives on the 7.2 snapshot (DMA32 CPU 1: count 1294, `high`
/// 3492 = `high_min`, `high_max` 15551, batch 63: a refill run may raise `high` by
/// `63 << 5` = 2016), with `mm_page_alloc_extfrag` naming the page taken or (before 6.15)
/// the block fallen back to.
fn counts_on_7_2(trace: &str, names_page: bool) -> CpuStart {
    cpu1_on_7_2(trace, |w| Which {
        extfrag_names_page: names_page,
        ..w
    })
}

/// DMA32 CPU 1's start count for `trace` on the 7.2 snapshot, the walk as `with` sets it
/// (lists off, a tuned `high`, on top of 6.1's defaults).
pub(super) fn cpu1_on_7_2(trace: &str, with: impl FnOnce(Which) -> Which) -> CpuStart {
    let dir_72 = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/proc/linux-7.2-p1-before");
    let snap = ProcSnapshot::read_dir(&dir_72).unwrap();
    let geo = proc_setup::geometry(&snap, None, Numbering::Current).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.txt");
    std::fs::write(&p, trace).unwrap();
    let which = with(Which {
        lists: false,
        fixed_high: false,
        ..which()
    });
    let sc = first_events::of_file(&p, &window(), &geo, &snap, which)
        .counts
        .unwrap();
    sc.cpus
        .into_iter()
        .find(|c| c.zone == "DMA32" && c.cpu == 1)
        .unwrap()
}

fn zone_locked(pfn: u64, order: u8, refill: bool) -> String {
    format!(
        "mm_page_alloc_zone_locked: page=(____ptrval____) pfn={pfn:#x} order={order} migratetype=1 percpu_refill={}",
        u8::from(refill)
    )
}

fn extfrag(pfn: u64) -> String {
    format!("mm_page_alloc_extfrag: page=(____ptrval____) pfn={pfn:#x} alloc_order=0 fallback_order=9 pageblock_order=9 alloc_migratetype=1 fallback_migratetype=0 fragmenting=0 change_ownership=1")
}

fn alloc(pfn: u64, order: u8) -> String {
    format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order={order} migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE")
}

/// The window's start, CPU 1's events `run`, then an allocation of the run's first page,
/// a free and an allocation after it (the free drained nothing: `c0 + delta < high`, the
/// bound this reads), and the window's end.
fn after_run(run: &[String]) -> String {
    after_run_from(run, 0x30000)
}

/// [`after_run`] whose run begins with page `first`.
fn after_run_from(run: &[String], first: u64) -> String {
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    for ev in run {
        t += &line(1, 2, ev);
    }
    t += &line(1, 3, &alloc(first, 0));
    t += &line(
        1,
        3,
        "mm_page_free: page=(____ptrval____) pfn=0x50000 order=0",
    );
    t += &line(1, 4, &alloc(0x50000, 0));
    t += &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    t
}

/// The upper bound `after_run` gives for a run that put `pages` on the list and raised
/// `high` `raises` times: `high - 1 - delta` after the free, `delta = pages - 1 + 1`.
fn bound(pages: i64, raises: i64) -> Option<u64> {
    Some((3492 + 2016 * raises - 1 - pages) as u64)
}

#[test]
fn a_fallback_inside_a_refill_run_does_not_end_it() {
    let zl = |i: u64| zone_locked(0x30000 + i, 0, true);
    // 6.15 on: a steal's page inside the batch, printed only as extfrag, goes on the list.
    let steal: Vec<String> = vec![zl(0), zl(1), zl(2), extfrag(0x40000), zl(3), zl(4), zl(5)];
    let c = counts_on_7_2(&after_run(&steal), true);
    assert_eq!(c.bounds, (0, bound(7, 1)));
    // A claim below pageblock_order prints the page as zone_locked, then extfrag of it.
    let claim: Vec<String> = vec![zl(0), zl(1), zl(2), extfrag(0x30002), zl(3), zl(4), zl(5)];
    assert_eq!(
        counts_on_7_2(&after_run(&claim), true).bounds,
        (0, bound(6, 1))
    );
    // Before 6.15: extfrag names the block fallen back to, the retry's zone_locked the page.
    let old: Vec<String> = vec![zl(0), zl(1), zl(2), extfrag(0x40000), zl(3), zl(4), zl(5)];
    assert_eq!(
        counts_on_7_2(&after_run(&old), false).bounds,
        (0, bound(6, 1))
    );
    // A steal first in a batch (no run yet): its page starts the run (and is the first the
    // allocation takes off the list).
    let first: Vec<String> = vec![extfrag(0x40000), zl(0), zl(1)];
    let t = after_run_from(&first, 0x40000);
    assert_eq!(counts_on_7_2(&t, true).bounds, (0, bound(3, 1)));
}

#[test]
fn other_cpus_events_interleave_a_run_and_another_order_starts_a_new_one() {
    let zl = |i: u64| zone_locked(0x30000 + i, 0, true);
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    t += &line(1, 2, &zl(0));
    // Other CPUs' refills, direct allocations of other orders and fallbacks, merged in.
    t += &line(2, 2, &zone_locked(0x60000, 0, true));
    t += &line(2, 2, &zone_locked(0x60100, 4, false));
    t += &line(0, 2, &extfrag(0x61000));
    t += &line(3, 2, &zone_locked(0x60200, 2, true));
    t += &line(1, 2, &zl(1));
    t += &line(1, 2, &zl(2));
    // An order-2 refill on CPU 1 right after: a new rmqueue_bulk, a new nr_pcp_alloc.
    t += &line(1, 2, &zone_locked(0x30010, 2, true));
    t += &line(1, 3, &alloc(0x30000, 0));
    t += &line(
        1,
        3,
        "mm_page_free: page=(____ptrval____) pfn=0x50000 order=0",
    );
    t += &line(1, 4, &alloc(0x50000, 0));
    t += &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    // Three order-0 pages and an order-2 block; high raised twice, the second time by the
    // base batch alone (nr_pcp_alloc: `if (order) batch = base_batch;`).
    assert_eq!(
        counts_on_7_2(&t, true).bounds,
        (0, bound(3 + 4, 1).map(|b| b + 63))
    );
}

/// 7.2-4g/p_pressure, CPU 1 of Normal (lines 14704-14804): THP refill runs of two
/// order-9 blocks each raise `high` by the base batch (63), not by `batch <<
/// CONFIG_PCP_BATCH_SCALE_MAX` (2016) as an order-0 run may; the free after them drained
/// nothing, which bounds the count that far tighter.
#[test]
fn a_thp_refill_raises_high_by_the_base_batch() {
    let thp = |i: u64| zone_locked(0x30000 + (i << 9), 9, true);
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    for run in 0..2u64 {
        t += &line(1, 2, &thp(2 * run));
        t += &line(1, 2, &thp(2 * run + 1));
        t += &line(1, 2, &alloc(0x30000 + ((2 * run) << 9), 9));
    }
    t += &line(
        1,
        3,
        "mm_page_free: page=(____ptrval____) pfn=0x50000 order=0",
    );
    t += &line(1, 4, &alloc(0x50000, 0));
    t += &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    // Two runs: 4 blocks in, 2 out (1024 pages), then the free: c0 + 1025 < 3492 + 2 * 63.
    assert_eq!(
        counts_on_7_2(&t, true).bounds,
        (0, Some(3492 + 2 * 63 - 1 - 1025))
    );
}

#[test]
fn a_refill_run_straddling_the_window_start_counts_its_pages_in_the_window() {
    let zl = |i: u64| zone_locked(0x30000 + i, 0, true);
    let mut t = String::from("# tracer: nop\n");
    // The run begins before the marker (on another CPU) and goes on after it.
    t += &line(1, 1, &zl(0));
    t += &line(1, 1, &zl(1));
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    for i in 2..5 {
        t += &line(1, 2, &zl(i));
    }
    t += &line(1, 3, &alloc(0x30000, 0));
    t += &line(
        1,
        3,
        "mm_page_free: page=(____ptrval____) pfn=0x50000 order=0",
    );
    t += &line(1, 4, &alloc(0x50000, 0));
    t += &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    // The three pages after the marker count (the two before are in the start count);
    // its raise came before the marker, maybe after zoneinfo was read: the bound keeps it.
    assert_eq!(counts_on_7_2(&t, true).bounds, (0, bound(3, 1)));
}

/// 7.2-8g p_pressure (lines 20686-20690): CPU 2 refills two THPs and takes the first; the
/// task moves, and its `mm_page_alloc` of the second is stamped CPU 1. That page came off CPU
/// 2's lists (`rmqueue_pcplist` runs before the tracepoint): CPU 1's count is untouched, and
/// its free that drains nothing after it bounds the count at the start to `0..=high - 2`,
/// not `512..=high + 510`.
#[test]
fn an_allocation_stamped_on_another_cpu_leaves_the_refilling_cpus_list() {
    let thp = |i: u64| zone_locked(0x30000 + (i << 9), 9, true);
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    t += &line(2, 2, &thp(0));
    t += &line(2, 2, &thp(1));
    t += &line(2, 2, &alloc(0x30000, 9));
    t += &line(1, 3, &alloc(0x30200, 9));
    t += &line(
        1,
        3,
        "mm_page_free: page=(____ptrval____) pfn=0x50000 order=0",
    );
    t += &line(1, 4, &alloc(0x50000, 0));
    t += &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    assert_eq!(counts_on_7_2(&t, true).bounds, (0, Some(3492 - 1 - 1)));
}

/// Two nodes each have a DMA32 zone (6.1-4g-2node p_pressure's before/ snapshot: node 1's
/// pagesets hold 749 pages, node 0's 2158): each starts from its own node's counts. Looked
/// up by the zone's name alone, node 1's DMA32 took node 0's (the set-up put 877 pages on
/// its lists, and missed 318).
#[test]
fn each_nodes_zone_starts_from_its_own_counts() {
    let before = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/kernel-own/6.1-4g-2node/p_pressure/before");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.txt");
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    t += &line(0, 2, "mm_page_alloc: page=(____ptrval____) pfn=0x10100 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE");
    t += &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    std::fs::write(&p, t).unwrap();
    let opts = ReplayOptions {
        samples: 10,
        infer_start_count: Some(true),
        proc: Some(before),
        ..ReplayOptions::default()
    };
    let run = replay::run(&p, &opts, &|_| {}).unwrap();
    let pcp = |zone: &str| {
        let f = run.replayers[0].setup.iter().find(|f| f.zone == zone);
        f.unwrap().pcp
    };
    assert_eq!(pcp("Node 1, zone DMA32"), (749, 749));
    assert_eq!(pcp("Node 0, zone DMA32").0, 2158);
}

/// A trace where node `nid`'s kswapd begins its pass (`ZONE_RECLAIM_ACTIVE`: `nr_pcp_high` at
/// most `batch << 2` = 252) and CPU `cpu`'s next free, of page `free`, drains a batch of 63
/// (`drain`..): whatever the count was above 252. A free on the CPU just before the wake has
/// no other event after it until then.
fn reclaim_trace(cpu: u32, free: u64, drain: u64, nid: u32) -> String {
    let free_line = |pfn: u64| format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0");
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    t += &line(cpu, 2, &free_line(free + 1));
    t += &line(cpu, 3, &format!("mm_vmscan_kswapd_wake: nid={nid} order=0"));
    t += &line(cpu, 4, &free_line(free));
    for i in 0..63 {
        let pfn = drain + i;
        t += &line(
            cpu,
            5,
            &format!(
                "mm_page_pcpu_drain: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1"
            ),
        );
    }
    t += &line(cpu, 6, &format!("mm_page_alloc: page=(____ptrval____) pfn={free:#x} order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE"));
    t += &line(0, 9, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    t
}

/// The start count of `zone` on `cpu` that `trace` gives on the snapshot in `dir` (of the
/// last node with such a zone).
fn count_in(dir: &Path, trace: &str, zone: &str, cpu: u32) -> CpuStart {
    let sc = counts_in(dir, trace);
    let c = sc
        .cpus
        .iter()
        .rev()
        .find(|c| c.zone == zone && c.cpu == cpu);
    c.unwrap().clone()
}

/// kswapd's pass lowers `high` under lists that may hold far more (6.1-2g p_pressure's CPU 0
/// held about 1,500 pages when kswapd woke, high 3492 → 252): a free's drain after the wake
/// bounds the count from below only, until a free that drains nothing shows it under the
/// new `high`. The old walk pinned that CPU at 226 (the replay drained 63 pages where the
/// kernel drained 1,512), and read only node 0's kswapd. A free before the wake, with no
/// other event after it on its CPU, was under the old `high` and shows nothing of the new.
#[test]
fn a_drain_right_after_kswapd_wakes_bounds_the_count_from_below_only() {
    // One node (zoneinfo: CPU 1's DMA32 count 771, high 3492): old, pinned at 252 - 2. The
    // free before the wake drained nothing: at most 3492 - 1 - 1.
    let c = count_in(
        &snap_dir(),
        &reclaim_trace(1, 0x10000, 0x20000, 0),
        "DMA32",
        1,
    );
    assert_eq!(
        (c.inferred, c.found, c.bounds),
        (771, Found::Zoneinfo, (250, Some(3490)))
    );
    // Two nodes (6.1-4g-2node p_pressure's before/: CPU 3's Normal on node 1, count 3357,
    // high 3398): node 1's kswapd lowers its `high` (old: pinned at 3398 - 2), node 0's
    // does not (pinned at 3398 - 2 on both).
    let two = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/kernel-own/6.1-4g-2node/p_pressure/before");
    let c = count_in(&two, &reclaim_trace(3, 0x100000, 0x110000, 1), "Normal", 3);
    assert_eq!(
        (c.inferred, c.found, c.bounds),
        (3357, Found::Zoneinfo, (250, Some(3396)))
    );
    let c = count_in(&two, &reclaim_trace(3, 0x100000, 0x110000, 0), "Normal", 3);
    assert_eq!((c.inferred, c.found), (3396, Found::Pinned));
}

/// A THP free's drain leaves the count at the start in a range (the free may cross `high` by
/// up to 511 pages); the CPU's next drain narrows it. CPU 1 of DMA32 (zoneinfo 771, high
/// 3492, batch 63) at 800: 2300 order-0 frees, a THP free and its drain (the THP alone:
/// free_pcppages_bulk drains the freed page's list first), then 392 order-0 frees, the last
/// of which reaches `high` again and drains 126 pages.
#[test]
fn a_thp_frees_range_is_narrowed_by_the_drains_after_it() {
    let free = |pfn: u64, order: u8| {
        format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order={order}")
    };
    let drain = |pfn: u64, order: u8| {
        format!(
            "mm_page_pcpu_drain: page=(____ptrval____) pfn={pfn:#x} order={order} migratetype=1"
        )
    };
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    for i in 0..2300 {
        t += &line(1, 2, &free(0x10000 + i, 0));
    }
    t += &line(1, 3, &free(0x40000, 9));
    t += &line(1, 3, &drain(0x40000, 9));
    for i in 2300..2692 {
        t += &line(1, 4, &free(0x10000 + i, 0));
    }
    for i in 0..126 {
        t += &line(1, 5, &drain(0x10000 + i, 0));
    }
    t += &line(1, 6, "mm_page_alloc: page=(____ptrval____) pfn=0x10a83 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE");
    t += &line(0, 7, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    let c = count_in(&snap_dir(), &t, "DMA32", 1);
    // The THP's drain alone: 3492 - 2300 - 512 ..= 3492 + 511 - 2300 - 512, zoneinfo's 771
    // inside (the old walk stopped there). The second drain: 3492 - 2692.
    assert_eq!(
        (c.inferred, c.found, c.bounds),
        (800, Found::Pinned, (800, Some(800)))
    );
    assert_eq!(c.pin_ns, Some(3_000_001_000));
}

/// 6.12-4g/p_pressure, CPU 2 of Normal (lines 33262-33269): Debian's 6.12.117 has 6.15's
/// `__rmqueue_claim`, so a THP refill whose first block claims a pageblock prints that block
/// only as `mm_page_alloc_extfrag` (alloc_order 9), and the batch's next block as
/// `zone_locked`. Both came from the refill: the two allocations after it take nothing that
/// was on the list at the start (the walk read the claimed block as taken off the list,
/// and bounded the count from below by 512 where zoneinfo said 846).
#[test]
fn a_6_12_thp_refill_that_claims_a_block_names_it_in_extfrag() {
    let claim = "mm_page_alloc_extfrag: page=(____ptrval____) pfn=0x30000 alloc_order=9 fallback_order=10 pageblock_order=9 alloc_migratetype=1 fallback_migratetype=0 fragmenting=0 change_ownership=1";
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    t += &line(1, 2, claim);
    t += &line(1, 2, &zone_locked(0x30200, 9, true));
    t += &line(1, 3, &alloc(0x30000, 9));
    t += &line(1, 3, &alloc(0x30200, 9));
    t += &line(0, 6, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    let names_page = Kernel::V6_12.extfrag_names_page();
    assert_eq!(counts_on_7_2(&t, names_page).bounds.0, 0);
}

/// 6.1-4g-2node/p_pressure (lines 81962-83927): kswapd1's pass ends, then it naps `HZ/10`
/// before it prints `mm_vmscan_kswapd_sleep`. A free on CPU 3 (node 1's Normal: count 3357,
/// high 3398) that drains nothing in that nap met the zone's `high`, not the pass's
/// `batch << 2`; one a second before the sleep met the pass's. CPU 3 first takes 300 pages
/// off its lists, so the free bounds the count at the start at `high - 1 + 299`.
#[test]
fn a_free_in_kswapds_nap_before_its_sleep_meets_the_zones_high() {
    let at = |ts: &str, ev: &str| format!("            x-1     [003] .....    {ts}: {ev}\n");
    let alloc = |pfn: u64| {
        format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE")
    };
    let trace = |free_at: &str| {
        let mut t = String::from("# tracer: nop\n");
        t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
        t += &at("2.000000", "mm_vmscan_kswapd_wake: nid=1 order=0");
        for i in 0..300 {
            t += &at("2.000001", &alloc(0x100000 + i));
        }
        t += &at(
            free_at,
            "mm_page_free: page=(____ptrval____) pfn=0x120000 order=0",
        );
        t += &at(free_at, &alloc(0x120000));
        t += &at("4.000000", "mm_vmscan_kswapd_sleep: nid=1");
        t += &line(0, 5, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
        t
    };
    let two = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/kernel-own/6.1-4g-2node/p_pressure/before");
    // 10 ms before the sleep: in the nap (HZ/10 - 1 jiffies = 96 ms at HZ 250).
    let c = count_in(&two, &trace("3.990000"), "Normal", 3);
    assert_eq!((c.inferred, c.bounds), (3357, (300, Some(3398 - 1 + 299))));
    // A second before: in the pass (the old walk read both so).
    let c = count_in(&two, &trace("3.000000"), "Normal", 3);
    assert_eq!((c.inferred, c.bounds), (550, (300, Some(252 - 1 + 299))));
}
