//! The replayer's tests: requests, geometry, kswapd, samples, onlining.

use super::*;
use crate::trace::ingest::sniff;
use crate::trace::migratetype::Numbering;
use crate::trace::parse::{Ctx, Task};
use crate::trace::replay::geometry::{span_from_trace, DEFAULT_ZONE_PAGES};
use crate::trace::replay::gfp::request;
use zonealloc::{AllocRequest, CpuId, MigrateType, ZoneType};

mod untraced;

/// An order-0 allocation of `pfn`, of migratetype `mt` (the trace's numbering) and `gfp`, as
/// the trace prints it.
pub(crate) fn alloc0(pfn: u64, mt: u8, gfp: &'static str) -> EventKind<'static> {
    EventKind::Alloc {
        pfn,
        order: 0,
        migratetype: mt,
        gfp_flags: gfp,
    }
}

/// `kind` on `cpu` (at `ts_ns`), with its page present and an unknown task.
pub(crate) fn at(cpu: u32, ts_ns: Option<u64>, kind: EventKind<'static>) -> Event<'static> {
    Event {
        cpu: Some(cpu),
        ts_ns,
        page: PagePtr::Present,
        who: Who::UNKNOWN,
        kind,
    }
}

/// Task `pid`'s `kind` on `cpu` at `ts` (ns), with the latency column `ctx`.
pub(crate) fn ev(
    cpu: u32,
    ts: u64,
    pid: u32,
    ctx: Ctx,
    kind: EventKind<'static>,
) -> Event<'static> {
    Event {
        cpu: Some(cpu),
        ts_ns: Some(ts),
        page: PagePtr::Present,
        who: Who::new(Task::Unknown, Some(pid), ctx),
        kind,
    }
}

/// Under the zone lock: interrupts off, depth 3 (the free path's pin and the lists' lock,
/// then the zone lock).
pub(crate) fn locked() -> Ctx {
    Ctx::new(true, false, false, 3)
}

/// A zone of 64 Ki pages on four CPUs (0-3), no snapshot.
pub(crate) fn four_cpus() -> Geometry {
    let sniff = sniff::Sniff::default();
    Geometry::from_flags(
        None,
        Some(1 << 16),
        None,
        Some(3),
        &sniff,
        Numbering::Current,
    )
    .unwrap()
}

#[test]
fn most_first_is_the_head_of_the_sorted_list() {
    let items: Vec<(u64, u32)> = (0..500u64)
        .map(|p| (p * 7919 % 1009, (p * 31 % 13) as u32))
        .collect();
    let mut sorted = items.clone();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for n in [0, 1, 5, 499, 500, 600] {
        assert_eq!(
            most_first(items.iter().copied(), n),
            sorted[..n.min(items.len())],
            "n = {n}"
        );
    }
}

#[test]
fn gfp_text_sets_the_request() {
    let k = request(MigrateType::Unmovable, "GFP_KERNEL|__GFP_ZERO");
    assert!(k.can_reclaim && !k.high && !k.no_watermarks);
    let a = request(MigrateType::Unmovable, "GFP_ATOMIC|__GFP_NOWARN");
    assert!(!a.can_reclaim && a.high);
    let n = request(MigrateType::Movable, "GFP_NOWAIT|__GFP_NOWARN");
    assert!(!n.can_reclaim && !n.high);
    let t = request(MigrateType::Movable, "GFP_TRANSHUGE_LIGHT|__GFP_THISNODE");
    assert!(!t.can_reclaim);
    let m = request(MigrateType::Unmovable, "GFP_KERNEL|__GFP_MEMALLOC");
    assert!(m.no_watermarks);
    let d = request(MigrateType::Unmovable, "GFP_KERNEL|__GFP_DMA32");
    assert_eq!(
        (d.highest_zone, k.highest_zone),
        (ZoneType::Dma32, ZoneType::Normal)
    );
    assert_eq!(
        request(MigrateType::Unmovable, "GFP_DMA").highest_zone,
        ZoneType::Dma
    );
    let h = request(MigrateType::Movable, "0x100cca");
    assert_eq!(h, AllocRequest::new(MigrateType::Movable));
}

#[test]
fn the_zone_comes_from_the_flags_or_spans_the_default_and_fills_as_touched() {
    let sniff = sniff::Sniff {
        header_cpus: None,
        max_cpu: Some(3),
        ..sniff::Sniff::default()
    };
    let g = Geometry::from_flags(None, None, None, None, &sniff, Numbering::Current).unwrap();
    assert_eq!(
        (g.zones[0].start, g.zones[0].pages, g.cpus, g.online),
        (0, DEFAULT_ZONE_PAGES, 4, Online::Touched)
    );
    // A 24 GiB machine's pfns (to 0x640000) size the span: no --zone-pages needed.
    let big = sniff::Sniff {
        max_pfn: Some(0x63ffff),
        ..sniff
    };
    let g = Geometry::from_flags(None, None, None, None, &big, Numbering::Current).unwrap();
    assert_eq!(g.zones[0].pages, 1 << 24);
    assert_eq!(g.zone_of(0x63ffff), Some(0));
    // At the edges: pfn 0, the largest pfn (refused: no zone spans it), a start above it.
    assert_eq!(span_from_trace(0, Some(0)), DEFAULT_ZONE_PAGES);
    assert_eq!(span_from_trace(0, Some(u64::MAX)), u64::MAX);
    assert_eq!(span_from_trace(1 << 30, Some(5)), DEFAULT_ZONE_PAGES);
    let top = sniff::Sniff {
        max_pfn: Some(u64::MAX),
        ..sniff
    };
    let e = Geometry::from_flags(None, None, None, None, &top, Numbering::Current);
    assert!(e.unwrap_err().contains("pass --zone-pages"));
    let head = sniff::Sniff {
        header_cpus: Some(8),
        ..sniff
    };
    let g = Geometry::from_flags(
        Some(0x2400),
        Some(4096),
        None,
        None,
        &head,
        Numbering::Current,
    )
    .unwrap();
    assert_eq!(
        (g.zones[0].start, g.zones[0].pages, g.cpus, g.online),
        (0x2400, 4096, 8, Online::All)
    );
    assert_eq!(g.zone_of(0x2400), Some(0));
    assert_eq!(g.zone_of(0x2400 + 4096), None);
    assert!(g.outside(0x9999).contains("--zone-pages"));
    let g = Geometry::from_flags(None, None, None, Some(2), &head, Numbering::Current).unwrap();
    assert_eq!(g.cpus, 2);
    assert!(Geometry::from_flags(None, Some(0), None, None, &sniff, Numbering::Current).is_err());
    assert!(Geometry::from_flags(None, None, None, Some(0), &sniff, Numbering::Current).is_err());
}

/// One zone of `pages` frames from pfn 0, all free, one CPU.
fn one_cpu_zone(pages: u64) -> Geometry {
    let sniff = sniff::Sniff::default();
    Geometry::from_flags(None, Some(pages), None, Some(1), &sniff, Numbering::Current).unwrap()
}

#[test]
fn kswapd_awake_makes_frees_shrink_the_lists() {
    // One CPU, mainline rules, a whole zone free; allocate 1024 pages, then free them
    // with kswapd asleep or awake: awake (ZONE_RECLAIM_ACTIVE), nr_pcp_high keeps at most
    // `batch << 2` pages on the lists.
    let g = one_cpu_zone(1 << 16);
    let at = |kind| at(0, None, kind);
    let run = |wake: bool| {
        let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
        for pfn in 0..1024 {
            let alloc = alloc0(pfn, 1, "GFP_HIGHUSER_MOVABLE");
            r.feed(&at(alloc), Inferred::None).unwrap();
        }
        if wake {
            let wake = EventKind::KswapdWake { nid: 0, order: 0 };
            r.feed(&at(wake), Inferred::None).unwrap();
        }
        for pfn in 0..1024 {
            let free = EventKind::Free { pfn, order: 0 };
            r.feed(&at(free), Inferred::None).unwrap();
        }
        r.feed(&at(EventKind::KswapdSleep { nid: 0 }), Inferred::None)
            .unwrap();
        (
            r.zones[0].pcp_pages(),
            r.zones[0].pcp_info(CpuId(0)).batch,
            r.counts.kswapd_wakes,
        )
    };
    let (asleep, batch, _) = run(false);
    let (awake, _, wakes) = run(true);
    assert_eq!(wakes, 1);
    assert!(
        awake <= (batch as u64) << 2,
        "{awake} pages kept, batch {batch}"
    );
    assert!(asleep > awake, "asleep {asleep}, awake {awake}");
}

/// Samples keep the zone's state when taken (not at the end, when their indices are
/// computed), and thinning keeps the second, fourth, ... of them.
#[test]
fn samples_are_computed_from_the_state_they_were_taken_in() {
    let g = one_cpu_zone(1 << 12);
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
    let alloc = |pfn| at(0, None, alloc0(pfn, 0, "GFP_KERNEL"));
    // Samples 1..=4, each after another quarter of the zone was allocated page by page.
    for k in 1..=4u64 {
        r.sample(k, Some(k * 1_000_000_000));
        for pfn in (k - 1) * 1024..k * 1024 {
            r.feed(&alloc(pfn), Inferred::None).unwrap();
        }
    }
    assert_eq!(r.samples_kept(), 4);
    r.thin_samples();
    assert_eq!(r.samples_kept(), 2);
    r.finish().unwrap();
    let events: Vec<u64> = r.frag.iter().map(|f| f.event).collect();
    assert_eq!(events, vec![2, 4]);
    assert_eq!(r.frag[1].t_s, Some(4.0));
    // A quarter allocated at sample 2, three quarters at sample 4: fewer free order-10
    // blocks later, so more of the free space unusable at order 10 (computed from the
    // zone at the end, the two would be equal).
    let u10 = |i: usize| r.frag[i].unusable[2];
    assert!(u10(0) < u10(1), "{:?}", r.frag);
}

#[test]
fn touched_memory_comes_online_block_by_block() {
    let sniff = sniff::Sniff::default();
    let g = Geometry::from_flags(
        None,
        Some(1 << 14),
        Some(Online::Touched),
        Some(1),
        &sniff,
        Numbering::Current,
    )
    .unwrap();
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
    assert_eq!(r.zones[0].managed_pages(), 0);
    let alloc = Event {
        cpu: Some(0),
        ts_ns: None,
        page: PagePtr::Present,
        who: Who::UNKNOWN,
        kind: EventKind::Alloc {
            pfn: 0x1234,
            order: 0,
            migratetype: 1,
            gfp_flags: "GFP_HIGHUSER_MOVABLE",
        },
    };
    r.feed(&alloc, Inferred::None).unwrap();
    assert_eq!(r.zones[0].managed_pages(), 1024);
    assert_eq!(r.counts.allocs, 1);
    let free = Event {
        kind: EventKind::Free {
            pfn: 0x3000,
            order: 0,
        },
        ..alloc.clone()
    };
    r.feed(&free, Inferred::None).unwrap();
    assert_eq!(
        (r.zones[0].managed_pages(), r.counts.onlined_blocks),
        (2048, 2)
    );
    let outside = Event {
        kind: EventKind::Free {
            pfn: 1 << 14,
            order: 0,
        },
        ..alloc
    };
    assert!(r
        .feed(&outside, Inferred::None)
        .unwrap_err()
        .to_string()
        .contains("--zone-start"));
}

/// The vmstat worker's decay runs on each CPU (`vmstat_update` is per-CPU work), so the
/// kernel's trace stamps a decay drain with the CPU whose list it drains: the counts (the
/// report and JSON) and `--emit` book it there, not on the CPU of the event that happened
/// to reach the tick.
#[test]
fn a_decay_drain_is_booked_and_emitted_on_the_cpu_it_drains() {
    let sniff = sniff::Sniff::default();
    let g = Geometry::from_flags(
        None,
        Some(1 << 16),
        None,
        Some(2),
        &sniff,
        Numbering::Current,
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("emit.txt");
    let file: Box<dyn std::io::Write> = Box::new(std::fs::File::create(&path).unwrap());
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, Some(file)).unwrap();
    r.decay = true;
    let at = |cpu, ts_ns, kind| at(cpu, Some(ts_ns), kind);
    let alloc = |pfn| alloc0(pfn, 1, "GFP_HIGHUSER_MOVABLE");
    // CPU 1 fills its list, then only CPU 0 runs, for 20 s of trace time, and CPU 1 wakes
    // (its deferrable worker, whose decay drains, waits for it: `Vmstat::hold_woken`).
    for pfn in 0..1024 {
        r.feed(&at(1, 1000, alloc(pfn)), Inferred::None).unwrap();
    }
    for pfn in 0..1024 {
        let free = EventKind::Free { pfn, order: 0 };
        r.feed(&at(1, 2000, free), Inferred::None).unwrap();
    }
    let before = r.ours.get(0, 1).drains;
    for s in 1..=20u64 {
        let ts = s * 1_000_000_000 + 5000;
        r.feed(&at(0, ts, alloc(0x8000 + s)), Inferred::None)
            .unwrap();
    }
    r.feed(&at(1, 20_500_000_000, alloc(0x9000)), Inferred::None)
        .unwrap();
    // Its kworker waits for the task it woke for (`Vmstat::wake_late`), past its limit
    // at the CPU's next event.
    r.feed(&at(1, 22_000_000_000, alloc(0x9001)), Inferred::None)
        .unwrap();
    r.finish().unwrap();
    let decayed = r.ours.get(0, 1).drains - before;
    assert!(decayed > 0, "the decay drains CPU 1's list");
    let ours = (r.ours.get(0, 0).drains, r.ours.get(0, 1).drains);
    drop(r);
    let text = std::fs::read_to_string(&path).unwrap();
    let emitted = |cpu: u32| {
        let stamp = format!("[{cpu:03}]");
        text.lines()
            .filter(|l| l.contains("mm_page_pcpu_drain") && l.contains(&stamp))
            .count() as u64
    };
    assert_eq!((emitted(0), emitted(1)), ours);
}

/// `zone_highsize` splits `high` across the traced machine's CPUs (`nr_split_cpus`, the
/// CPUs of the zone's node), not the set-up's extra one. 6.12.117 prints neither `high_min`
/// nor `high_max`, so the replay computes them: Normal of the 6.12-4g capture has low
/// watermark 5126 and 243699 managed pages on 4 CPUs, so 1281 (every CPU's floor in its
/// zoneinfo) and 7615 (CPU 0 ends p_thp at high 7266, above a five-way 6092).
#[test]
fn a_proc_zone_splits_high_across_the_traced_cpus_not_the_setup_one() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/kernel-own/6.12-4g/p_thp/before"
    );
    let snap = crate::procfs::ProcSnapshot::read_dir(std::path::Path::new(dir)).unwrap();
    let g = proc_setup::geometry(&snap, None, Numbering::Current).unwrap();
    assert_eq!(g.cpus, 4);
    let kernel = proc_setup::kernel_of(&snap);
    let mut base = zonealloc::ZoneConfig::default();
    kernel.apply(&mut base);
    let cfgs: Vec<_> = g
        .zones
        .iter()
        .map(|s| proc_setup::zone_config(&base, snap.zone(0, s.zone_type).unwrap(), kernel))
        .collect();
    let v = Variant::parse_on("upstream", &base).unwrap();
    let r = Replayer::with_zones(v, &g, None, &cfgs, Some(&snap), &[], &[]).unwrap();
    let normal = g
        .zones
        .iter()
        .position(|s| s.zone_type == ZoneType::Normal)
        .unwrap();
    for cpu in 0..4 {
        let info = r.zones[normal].pcp_info(CpuId(cpu));
        assert_eq!(
            (info.high_min, info.high_max),
            (5126 / 4, 243_699 / 8 / 4),
            "CPU {cpu}"
        );
    }
}

/// A softirq's free that cut into a refill (`percpu_refill=1` printed, its `mm_page_alloc`
/// not yet: the CPU's lists held, preempt depth 3) goes to the buddy and leaves the lists'
/// `alloc_factor` alone (`__free_frozen_pages`' failed trylock, `free_one_page`); one at
/// depth 0 (the lists free again) goes on the list and halves it. 7.2-8g p_thp's CPU 2.
#[test]
fn an_interrupt_free_into_a_held_refill_goes_to_the_buddy() {
    use crate::trace::parse::{Ctx, Task};
    let g = one_cpu_zone(1 << 16);
    let at = |kind, ctx| Event {
        cpu: Some(0),
        ts_ns: None,
        page: PagePtr::Present,
        who: Who::new(Task::Unknown, None, ctx),
        kind,
    };
    let plain = Ctx::new(false, false, false, 0);
    let alloc = |pfn| alloc0(pfn, 1, "GFP_HIGHUSER_MOVABLE");
    // (count, alloc_factor) before the frees and after the allocation that ends the refill.
    let run = |depth: u8, at_batched: bool| {
        let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
        r.commit_at_batched = at_batched;
        for pfn in 0..200 {
            r.feed(&at(alloc(pfn), plain), Inferred::None).unwrap();
        }
        let before = r.zones[0].pcp_info(CpuId(0));
        let refill = EventKind::ZoneLocked {
            pfn: 5000,
            order: 0,
            migratetype: 1,
            percpu_refill: true,
        };
        r.feed(&at(refill, Ctx::new(true, false, false, 3)), Inferred::None)
            .unwrap();
        let softirq = Ctx::new(false, true, false, depth);
        for pfn in 0..13 {
            let free = EventKind::Free { pfn, order: 0 };
            r.feed(&at(free, softirq), Inferred::None).unwrap();
        }
        r.feed(&at(alloc(5000), plain), Inferred::None).unwrap();
        let after = r.zones[0].pcp_info(CpuId(0));
        (
            (before.count, before.alloc_factor),
            (after.count, after.alloc_factor),
        )
    };
    for at_batched in [false, true] {
        let ((count, factor), held) = run(3, at_batched);
        assert!(factor > 0 && count > 0, "{count} pages, factor {factor}");
        assert_eq!(held, (count - 1, factor), "held, at_batched {at_batched}");
        let (_, free) = run(0, at_batched);
        assert_eq!(free, (count + 12, 0), "free, at_batched {at_batched}");
    }
}

/// A traced allocation that succeeded is taken from its zone even where ours is below the
/// watermark: no slow-path `drain_all_pages` of our own (the kernel's drains are in the
/// trace). 7.2-8g p_pressure's OOM victim allocated from Normal's list below min; the replay
/// drained every list first (7967 pages).
#[test]
fn a_traced_allocation_below_the_watermark_drains_no_list() {
    let g = one_cpu_zone(1 << 16);
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
    let min = r.zones[0].watermarks().min;
    let alloc = |pfn| at(0, None, alloc0(pfn, 1, "GFP_HIGHUSER_MOVABLE"));
    // Down to half the min watermark free (the lists' pages included).
    let n = (1u64 << 16) - min / 2;
    for pfn in 0..n {
        r.feed(&alloc(pfn), Inferred::None).unwrap();
    }
    assert!(r.zones[0].free_pages() < min, "{}", r.zones[0].free_pages());
    let s = r.zones[0].pcp_stats();
    assert_eq!(
        (
            s.drain_local_pages,
            s.drain_remote_pages,
            r.zones[0].stats().alloc_failures
        ),
        (0, 0, 0)
    );
    assert!(r.frames.is_live(n - 1));
}

/// A kswapd pass takes off the watermark boost it found when it began (`balance_pgdat`); a
/// boost raised during the pass stays for the next one. The replay never lowered a boost.
#[test]
fn a_kswapd_pass_ends_the_boost_it_began_with() {
    let g = one_cpu_zone(1 << 12);
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
    let at = |kind| at(0, None, kind);
    let alloc = |pfn, migratetype| {
        at(EventKind::Alloc {
            pfn,
            order: 0,
            migratetype,
            gfp_flags: "GFP_KERNEL",
        })
    };
    // Movable pages until no free block is a whole pageblock; then an Unmovable one falls
    // back to a smaller Movable block: `boost_watermark`.
    for pfn in 0..3700 {
        r.feed(&alloc(pfn, 1), Inferred::None).unwrap();
    }
    let wake = at(EventKind::KswapdWake { nid: 0, order: 0 });
    let sleep = at(EventKind::KswapdSleep { nid: 0 });
    r.feed(&wake, Inferred::None).unwrap();
    assert_eq!(r.zones[0].watermarks().boost, 0);
    r.feed(&alloc(3800, 0), Inferred::None).unwrap();
    let boost = r.zones[0].watermarks().boost;
    assert!(boost > 0);
    // Raised during the pass: it stays.
    r.feed(&sleep, Inferred::None).unwrap();
    assert_eq!(r.zones[0].watermarks().boost, boost);
    // The next pass began with it: gone at its end (here the next wake).
    r.feed(&wake, Inferred::None).unwrap();
    assert_eq!(r.zones[0].watermarks().boost, boost);
    r.feed(&wake, Inferred::None).unwrap();
    assert_eq!(r.zones[0].watermarks().boost, 0);
}

/// An untraced allocation flagged `Untraced::bulk_refill` (`KernelSide::bulk_refill`) first
/// takes what our list of its migratetype holds: the kernel's list was empty when
/// `alloc_pages_bulk` refilled it, so ours refills then too (and `nr_pcp_alloc` raises its
/// `high` as the kernel's did). Fails on the old code (one page off the list, no refill).
#[test]
fn a_bulk_refills_first_page_empties_our_list_and_refills_it() {
    let g = one_cpu_zone(1 << 16);
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
    let alloc = at(0, None, alloc0(0x100, 0, "GFP_KERNEL"));
    r.feed(&alloc, Inferred::None).unwrap();
    let held = r.zones[0].pcp_info(CpuId(0)).list_pages[0];
    let refilled = r.ours.get(0, 0).refills;
    assert!(
        held > 1 && refilled > 0,
        "{held} pages, {refilled} refilled"
    );
    let free = untraced::free0(0x900);
    let bulk = untraced::bulk_page(0x800, false);
    r.untraced_allocs(&free, &[bulk]).unwrap();
    assert!(r.ours.get(0, 0).refills > refilled);
    assert_eq!(r.counts.untraced_allocs, u64::from(held) + 1);
    assert!(r.frames.is_live(0x800));
}

/// A page freed again (`KernelSide::freed_again`) was on the kernel's list when
/// `alloc_pages_bulk` took it: that take made no refill. Ours holding no page of that type on
/// that CPU makes none either: the free is one of a page in use. 6.12-2g p_thp: `kworker/1:1`
/// frees 0x47a7 at 589.047854 (trace line 7960), which `dash-514` freed on CPU 0 at
/// 587.247070 (line 7666); ours, CPU 0's Unmovable list empty, refilled 63 pages there, the
/// kernel none in the window. A refilled page's take still refills an empty list. Fails on
/// the old code (a refill).
#[test]
fn a_page_freed_again_is_taken_only_off_a_list_that_holds_one() {
    let g = one_cpu_zone(1 << 16);
    let free = |pfn| at(0, None, EventKind::Free { pfn, order: 0 });
    let take = |freed_again| Inferred::UntracedAlloc {
        cpu: 0,
        migratetype: 0,
        freed_again,
    };
    let new = || Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
    let mut r = new();
    r.free_traced(&free(0x900), 0, 0x900, 0, take(true))
        .unwrap();
    assert_eq!((r.ours.get(0, 0).refills, r.counts.untraced_allocs), (0, 0));
    // Our list holds pages of the type: one taken off it, one freed onto it, no refill.
    r.feed(&at(0, None, alloc0(0x100, 0, "GFP_KERNEL")), Inferred::None)
        .unwrap();
    let (refills, held) = (
        r.ours.get(0, 0).refills,
        r.zones[0].pcp_info(CpuId(0)).list_pages[0],
    );
    assert!(refills > 0 && held > 0, "{refills} refills, {held} held");
    r.free_traced(&free(0x901), 0, 0x901, 0, take(true))
        .unwrap();
    assert_eq!(r.ours.get(0, 0).refills, refills);
    assert_eq!(r.zones[0].pcp_info(CpuId(0)).list_pages[0], held);
    assert_eq!(r.counts.untraced_allocs, 1);
    let mut r = new();
    r.free_traced(&free(0x900), 0, 0x900, 0, take(false))
        .unwrap();
    assert!(r.ours.get(0, 0).refills > 0);
}

#[test]
fn the_counters_lag_on_the_cpu_of_each_event() {
    // Refills on CPUs 1 and 2 take pages off the buddy on those CPUs: their diffs hold what
    // has not passed the threshold (18 here), and only their folds bring the counter to
    // the free lists; CPU 0, which ran nothing, has nothing to fold.
    let g = four_cpus();
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
    r.set_vmstat_drift(true);
    for (cpu, pfn) in [(1, 0), (2, 1)] {
        let alloc = alloc0(pfn, 1, "GFP_HIGHUSER_MOVABLE");
        r.feed(&at(cpu, None, alloc), Inferred::None).unwrap();
    }
    let z = &r.zones[0];
    let exact = z.free_pages();
    assert_ne!(z.vmstat_free_pages(), exact);
    let before = z.vmstat_free_pages();
    z.fold_vmstat(CpuId(0));
    assert_eq!(z.vmstat_free_pages(), before);
    z.fold_vmstat(CpuId(1));
    assert_ne!(z.vmstat_free_pages(), before);
    z.fold_vmstat(CpuId(2));
    assert_eq!(z.vmstat_free_pages(), exact);
}

/// A take bound to no frame (`Untraced::unbound`, `KernelSide::appeared`) takes a page off
/// our list of its type and keeps it: the list is one page shorter, no frame of the trace
/// is ours for it, and with no page of the type there it takes none (no refill). Fails on
/// the old code (no such take).
#[test]
fn an_unbound_take_keeps_a_page_of_our_list_and_binds_no_frame() {
    let g = one_cpu_zone(1 << 16);
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
    let free = untraced::free0(0x900);
    let unbound = Untraced {
        unbound: true,
        ..Untraced::new(0x900, 0, 0)
    };
    r.untraced_allocs(&free, &[unbound]).unwrap();
    assert_eq!((r.ours.get(0, 0).refills, r.counts.untraced_allocs), (0, 0));
    r.feed(&at(0, None, alloc0(0x100, 0, "GFP_KERNEL")), Inferred::None)
        .unwrap();
    let held = r.zones[0].pcp_info(CpuId(0)).list_pages[0];
    let refills = r.ours.get(0, 0).refills;
    assert!(held > 0, "{held} held");
    r.untraced_allocs(&free, &[unbound]).unwrap();
    assert_eq!(r.zones[0].pcp_info(CpuId(0)).list_pages[0], held - 1);
    assert_eq!(
        (r.ours.get(0, 0).refills, r.counts.untraced_allocs),
        (refills, 1)
    );
    assert!(!r.frames.is_live(0x900));
}
