//! The start-count walk's tests: crafted traces on the shipped snapshots.

use super::*;
use crate::trace::ingest::input;
use crate::trace::migratetype::Numbering;
use crate::trace::replay::first_events::{self, Which};
use crate::trace::replay::proc_setup;
use crate::trace::replay::{self, ReplayOptions};
use std::path::Path;

mod free_high;
mod held_frees;
mod runs;

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
    counts_in_with(dir, trace, true)
}

/// [`counts_in`], with `high` fixed (before 6.7) or tuned per CPU (`fixed_high` false).
fn counts_in_with(dir: &Path, trace: &str, fixed_high: bool) -> StartCounts {
    let snap = ProcSnapshot::read_dir(dir).unwrap();
    let geo = proc_setup::geometry(&snap, None, Numbering::Current).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("t.txt");
    std::fs::write(&p, trace).unwrap();
    let which = Which {
        lists: false,
        fixed_high,
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

/// DMA32 CPU 1's start count for `trace` on the 7.2 snapshot, the walk as `with` sets it
/// (lists off, a tuned `high`, on top of 6.1's defaults).
pub(super) fn cpu1_on_7_2(trace: &str, with: impl FnOnce(Which) -> Which) -> CpuStart {
    let sc = counts_on_7_2(trace, with);
    sc.cpus
        .into_iter()
        .find(|c| c.zone == "DMA32" && c.cpu == 1)
        .unwrap()
}

/// The start counts for `trace` on the 7.2 snapshot ([`cpu1_on_7_2`]'s).
pub(super) fn counts_on_7_2(trace: &str, with: impl FnOnce(Which) -> Which) -> StartCounts {
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
    first_events::of_file(&p, &window(), &geo, &snap, which)
        .counts
        .unwrap()
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

/// From 6.7 `decay_pcp_high` drains an idle CPU's lists to `high` exactly, and zoneinfo
/// then prints the count at `high`: the next free finds the count at `high` already, so its
/// drain bounds the count from below only. 7.2-3g-16cpu p_prodcons's before/ (DMA32 CPU 1:
/// count 875, high 875): one free drains 63 (31.809195 there); read as a crossing, the pin
/// put the start at 874 (fails on the old code), and every later drain of the CPU one free
/// late.
#[test]
fn a_drain_at_the_first_free_after_a_decay_to_high_bounds_from_below_only() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/kernel-own/7.2-3g-16cpu/p_prodcons/before");
    let mut t = String::from("# tracer: nop\n");
    t += &line(0, 1, "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t");
    t += &line(
        1,
        2,
        "mm_page_free: page=(____ptrval____) pfn=0x10000 order=0",
    );
    for pfn in 0x10000..0x10000 + 63u64 {
        let ev =
            format!("mm_page_pcpu_drain: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1");
        t += &line(1, 2, &ev);
    }
    t += &line(1, 3, "mm_page_alloc: page=(____ptrval____) pfn=0x10100 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE");
    t += &line(0, 4, "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t");
    let sc = counts_in_with(&dir, &t, false);
    let c = sc.cpus.iter().find(|c| c.zone == "DMA32" && c.cpu == 1);
    let c = c.unwrap();
    // c0 + 1 >= 875 after the free, no more: zoneinfo's count stands.
    assert_eq!((c.zoneinfo, c.inferred, c.bounds.0), (875, 875, 874));
    assert_ne!(c.found, Found::Pinned);
}
