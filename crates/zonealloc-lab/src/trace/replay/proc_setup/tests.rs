use super::rolled::at_least_rolled;
use super::*;
use crate::trace::replay::infer::pcp_state::ListDemand;
use crate::trace::replay::layout;
use zonealloc::{AllocRequest, CpuId, MigrateType, Order, Pfn, Zone, ZoneType};

/// The 6.1 snapshot with DMA's protection raised to `protection` pages.
fn snapshot_with_protection(protection: u64) -> (tempfile::TempDir, ProcSnapshot) {
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/proc/linux-6.1-p1-before"
    );
    let dir = tempfile::tempdir().unwrap();
    for f in ["zoneinfo", "pagetypeinfo", "buddyinfo"] {
        let text = std::fs::read_to_string(format!("{src}/{f}")).unwrap();
        let p = protection;
        let text = text.replace(
            "protection: (0, 1951, 1951, 1951, 1951)",
            &format!("protection: (0, {p}, {p}, {p}, {p})"),
        );
        std::fs::write(dir.path().join(f), text).unwrap();
    }
    let snap = ProcSnapshot::read_dir(dir.path()).unwrap();
    (dir, snap)
}

/// A snapshot of our own captures (`data/kernel-own/<rel>`).
fn own_snapshot(rel: &str) -> ProcSnapshot {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/kernel-own");
    ProcSnapshot::read_dir(&dir.join(rel)).unwrap()
}

#[test]
fn a_6_12_zoneinfo_without_high_min_keeps_the_auto_tuned_range() {
    // 6.12.117 prints only each CPU's current `high` (e.g. 1923 in Normal on CPU 0):
    // its range must be the kernel's zone_highsize, not pinned at the printed value.
    let snap = own_snapshot("6.12-4g/p_thp/before");
    assert_eq!(kernel_of(&snap), Kernel::V6_12);
    let kz = snap.zone(0, ZoneType::Normal).unwrap();
    let printed = kz.pagesets.iter().map(|p| p.high).max().unwrap();
    let base = ZoneConfig::for_kernel(Kernel::V6_12.version()).with_cpus(5);
    let cfg = zone_config(&base, kz, Kernel::V6_12);
    assert_eq!((cfg.pcp.high_min, cfg.pcp.high_max), (None, None));
    let zone = Zone::new(
        ZoneType::Normal,
        Pfn(kz.start_pfn),
        Pfn(kz.start_pfn + kz.spanned_pages),
        cfg,
    )
    .unwrap();
    populate(&zone, &snap, kz, None).unwrap();
    let info = zone.pcp_info(CpuId(0));
    assert!(info.high_min < info.high_max, "{info:?}");
    assert!(
        i64::from(info.high_max) > i64::from(printed),
        "{info:?} {printed}"
    );
    // A fixed-high kernel's rules pin both to the printed value, as 6.1 does.
    let fixed = zone_config(&base, kz, Kernel::V6_1);
    assert_eq!(fixed.pcp.high_min, Some(printed));
    assert_eq!(fixed.pcp.high_max, Some(printed));
}

#[test]
fn a_cpu_whose_count_was_its_high_starts_with_its_whole_count() {
    // 7.2-4g p_idle's after/ snapshot: Normal's CPU 1 holds 1283 pages at high 1283.
    let snap = own_snapshot("7.2-4g/p_idle/after");
    let kz = snap.zone(0, ZoneType::Normal).unwrap();
    let ps = kz.pagesets.iter().find(|p| p.cpu == 1).unwrap();
    assert_eq!((ps.count, ps.high), (1283, 1283));
    let zone = zone_of(&snap, kz, ZoneType::Normal);
    populate(&zone, &snap, kz, None).unwrap();
    let info = zone.pcp_info(CpuId(1));
    assert_eq!((info.count, info.high), (1283, 1283), "{info:?}");
    assert_eq!(zone.pcp_stats().drain_high_pages, 0);
}

/// A list demand of `n` CPUs with nothing on any list, nothing known.
fn no_lists(n: usize) -> ListDemand {
    ListDemand {
        blocks: vec![[[0u64; 3]; 5]; n],
        refilled: vec![[[false; 3]; 5]; n],
        exact: vec![[[false; 3]; 5]; n],
        ..ListDemand::default()
    }
}

/// The zone `kz` of `snap` on its kernel's preset, with one set-up CPU past the traced.
fn zone_of(snap: &ProcSnapshot, kz: &ZoneSnapshot, t: ZoneType) -> Zone {
    let kernel = kernel_of(snap);
    let cpus = kz.pagesets.len() as u32 + 1;
    let base = ZoneConfig::for_kernel(kernel.version()).with_cpus(cpus);
    let cfg = zone_config(&base, kz, kernel);
    let end = kz.start_pfn + kz.spanned_pages;
    Zone::new(t, Pfn(kz.start_pfn), Pfn(end), cfg).unwrap()
}

#[test]
fn a_list_the_trace_shows_exactly_chooses_its_pages_before_a_guessed_rest() {
    // 6.12-2g p_thp, DMA32: CPU 3's Movable list held 196 blocks at the start (the kernel
    // served 262 allocations and 74 frees from it before its first refill); every other
    // CPU's count is a guess, put on Movable. The Movable pageblocks' candidates do not
    // cover every count: chosen CPU by CPU, CPU 3 came last and its Movable list got none
    // (the pages it was given, of other pageblocks, went onto their types' lists).
    let snap = own_snapshot("6.12-2g/p_thp/before");
    let kz = snap.zone(0, ZoneType::Dma32).unwrap();
    let n = kz.pagesets.len();
    let mut demand = no_lists(n);
    demand.blocks[3][0][1] = 196;
    demand.exact[3][0][1] = true;
    demand.refilled[3][0][1] = true;
    let zone = zone_of(&snap, kz, ZoneType::Dma32);
    let (_, facts) = populate(&zone, &snap, kz, Some(&demand)).unwrap();
    assert_eq!(facts.pcp.0, facts.pcp.1, "{facts:?}");
    // order_to_pindex: migratetype + order * MIGRATE_PCPTYPES; Movable order 0 is 1.
    let cpu3 = zone.pcp_info(CpuId(3));
    assert_eq!(cpu3.list_pages[1], 196, "{cpu3:?}");
}

/// Snapshot `rel`'s node 0 zone `t` set up with CPU `cpu`'s order-0 lists as `lists`
/// (`(migratetype index, blocks, exact)`, exact ones shown refilled) and its count `start`
/// where given; returns CPU `cpu`'s order-0 list pages (Unmovable, Movable, Reclaimable:
/// `order_to_pindex` 0, 1, 2) and count, after checking every page was placed.
fn order0_lists(
    rel: &str,
    t: ZoneType,
    cpu: usize,
    lists: &[(usize, u64, bool)],
    start: Option<u64>,
) -> ([u32; 3], i32) {
    let snap = own_snapshot(rel);
    let kz = snap.zone(0, t).unwrap();
    let mut demand = no_lists(kz.pagesets.len());
    for &(mt, n, exact) in lists {
        demand.blocks[cpu][0][mt] = n;
        demand.exact[cpu][0][mt] = exact;
        demand.refilled[cpu][0][mt] = exact;
    }
    demand.start_count = vec![None; kz.pagesets.len()];
    demand.start_count[cpu] = start;
    let zone = zone_of(&snap, kz, t);
    let (_, facts) = populate(&zone, &snap, kz, Some(&demand)).unwrap();
    assert_eq!(facts.pcp_missing, 0, "{facts:?}");
    let info = zone.pcp_info(CpuId(cpu as u32));
    let pages = [info.list_pages[0], info.list_pages[1], info.list_pages[2]];
    (pages, info.count)
}

#[test]
fn a_lists_pages_of_another_types_pageblocks_stay_on_that_list_on_6_1() {
    // 6.1-4g-2node p_pressure, node 0 DMA32: CPU 0 starts with 740 pages (the trace
    // pins it), its Unmovable and Movable order-0 lists exactly 31 and 30 (both
    // refilled before anything else reached them); the other 679 are on a list the
    // trace never touches, Reclaimable by guess (`ListDemand::fit`), whose pageblocks
    // offer 271 pages. The other 408, of Unmovable pageblocks, had landed on the
    // Unmovable list: the replay skipped 7 of its refills and drained 1022 events more
    // than the kernel.
    let rel = "6.1-4g-2node/p_pressure/before";
    assert_eq!(kernel_of(&own_snapshot(rel)), Kernel::V6_1);
    let lists = [(0, 31, true), (1, 30, true)];
    let got = order0_lists(rel, ZoneType::Dma32, 0, &lists, Some(740));
    assert_eq!(got, ([31, 30, 679], 740));
}

#[test]
fn from_6_10_only_a_list_the_trace_shows_exactly_refuses_other_lists_pages() {
    // 6.12-8g p_pressure, Normal: CPU 2's 1629 pages. The trace shows its Unmovable
    // order-0 list exactly at 300 pages and Movable at 77, Reclaimable at least 132;
    // the rest goes to Reclaimable, whose pageblocks offer too few pages. 6.12's drain
    // prints the pageblock's type, so lists are not read off it: Unmovable pageblocks'
    // pages taken for the Reclaimable list still go there, since their own list would
    // exceed what the trace shows (the set-up had put 1280 pages on it, and the replay
    // refilled it 70 s after the kernel). Pages of Movable pageblocks, whose list is
    // exact too, likewise; the Reclaimable list gets the rest.
    let rel = "6.12-8g/p_pressure/before";
    assert_eq!(kernel_of(&own_snapshot(rel)), Kernel::V6_12);
    let lists = [(0, 300, true), (1, 77, true), (2, 132, false)];
    let got = order0_lists(rel, ZoneType::Normal, 2, &lists, None);
    assert_eq!(got, ([300, 77, 1252], 1629));
}

#[test]
fn a_guessed_list_finds_room_in_its_types_pageblocks_not_on_a_pinned_list() {
    // 6.12-8g p_pressure, Normal: CPU 2 holds 1629 pages; the trace pins its order-0
    // Unmovable list to 300 blocks and its Movable one to 77 (each refilled once empty),
    // and the rest is guessed Reclaimable. The pageblocks typed Reclaimable offered 272
    // pages, and the other 980 went onto the Unmovable list: its first refill came 70 s
    // after the kernel's (refills 8.3% off in the window).
    let snap = own_snapshot("6.12-8g/p_pressure/before");
    let kz = snap.zone(0, ZoneType::Normal).unwrap();
    let ps = kz.pagesets.iter().find(|p| p.cpu == 2).unwrap();
    assert_eq!(ps.count, 1629);
    let mut demand = no_lists(kz.pagesets.len());
    for (mt, n) in [(0, 300), (1, 77)] {
        demand.blocks[2][0][mt] = n;
        demand.exact[2][0][mt] = true;
        demand.refilled[2][0][mt] = true;
    }
    let zone = zone_of(&snap, kz, ZoneType::Normal);
    let (_, facts) = populate(&zone, &snap, kz, Some(&demand)).unwrap();
    assert_eq!(
        (facts.pcp.0, facts.pcp_missing),
        (facts.pcp.1, 0),
        "{facts:?}"
    );
    // order_to_pindex: Unmovable, Movable, Reclaimable order 0 are 0, 1, 2.
    let cpu2 = zone.pcp_info(CpuId(2));
    assert_eq!(cpu2.list_pages[..3], [300, 77, 1252], "{cpu2:?}");
    // The pageblocks per type are still the kernel's.
    assert_eq!(facts.pageblocks.0, facts.pageblocks.1, "{facts:?}");
    // The room is in Reclaimable pageblocks: they hold CPU 2's Reclaimable pages, where
    // they offered 272 before (keeping the pages on the list they were taken for, in
    // other types' pageblocks, gives the same list lengths but not this).
    let (start, end) = zone.span();
    let in_reclaimable: u64 = (start.0..end.0)
        .filter(|&p| zone.pageblock_migratetype(Pfn(p)) == Some(MigrateType::Reclaimable))
        .filter_map(|p| match zone.frame_state(Pfn(p)) {
            Some(zonealloc::FrameState::Pcp(o)) => Some(1u64 << o.get()),
            _ => None,
        })
        .sum();
    assert!(in_reclaimable >= 1252, "{in_reclaimable}");
}

#[test]
fn the_setup_keeps_its_high_order_blocks_and_takes_the_traced_alloc_factor() {
    // 6.12-8g p_idle's before/ snapshot: Normal's CPU 0 holds 3064 pages (high 4139,
    // batch 63). With lists of orders 1..=3 the trace shows (here 20 order-3 Unmovable
    // and 30 order-1 Movable blocks), the second such free once `free_count` reached the
    // batch was a `free_high` one and drained up to `batch << 5` pages to the buddy: the
    // replay's set-up ended 196 PCP pages short of the kernel's in this phase.
    let snap = own_snapshot("6.12-8g/p_idle/before");
    let kernel = kernel_of(&snap);
    assert_eq!(kernel, Kernel::V6_12);
    let kz = snap.zone(0, ZoneType::Normal).unwrap();
    let n = kz.pagesets.len();
    let mut demand = no_lists(n);
    demand.blocks[0][3][0] = 20;
    demand.blocks[0][1][1] = 30;
    // CPU 0's first refill in the trace was of 252 = 63 << 2 pages, CPU 1's of 100.
    demand.first_refill = vec![Some((252, 0)), Some((100, 0))];
    let zone = zone_of(&snap, kz, ZoneType::Normal);
    let (_, facts) = populate(&zone, &snap, kz, Some(&demand)).unwrap();
    assert_eq!(facts.pcp.0, facts.pcp.1, "{facts:?}");
    assert_eq!(facts.free.0, facts.free.1, "{facts:?}");
    let info = zone.pcp_info(CpuId(0));
    assert_eq!(info.count, 3064, "{info:?}");
    // order_to_pindex: migratetype + order * MIGRATE_PCPTYPES.
    assert_eq!(info.list_pages[9], 20 << 3, "{info:?}");
    assert_eq!(info.list_pages[4], 30 << 1, "{info:?}");
    assert_eq!(zone.pcp_stats().drain_free_high_pages, 0);
    // `alloc_factor` as the first refills show it: 2, and unknown (0) on CPU 1.
    assert_eq!(info.alloc_factor, 2, "{info:?}");
    assert_eq!(zone.pcp_info(CpuId(1)).alloc_factor, 0);
}

#[test]
fn lowmem_protection_comes_from_zoneinfo_and_holds_back_higher_zones_requests() {
    for (protection, kernel_ok) in [(1951, true), (3700, false)] {
        let (_dir, snap) = snapshot_with_protection(protection);
        dma_request_check(&snap, protection, kernel_ok);
    }
}

fn dma_request_check(snap: &ProcSnapshot, protection: u64, kernel_ok: bool) {
    let kz = snap.zone(0, ZoneType::Dma).unwrap();
    let cfg = zone_config(&ZoneConfig::default().with_cpus(5), kz, Kernel::V6_1);
    let zone = Zone::new(
        ZoneType::Dma,
        Pfn(kz.start_pfn),
        Pfn(kz.start_pfn + kz.spanned_pages),
        cfg,
    )
    .unwrap();
    populate(&zone, snap, kz, None).unwrap();
    assert_eq!(zone.lowmem_reserve()[ZoneType::Dma32.index()], protection);
    assert_eq!(zone.lowmem_reserve()[ZoneType::Dma.index()], 0);
    // DMA has 3776 pages free, min 86: a GFP_KERNEL request (highest zone Normal) must
    // leave 86 + protection of them (__zone_watermark_ok); a GFP_DMA one only the min.
    let req = |limit| {
        AllocRequest::new(MigrateType::Unmovable)
            .zone_limit(limit)
            .on_cpu(CpuId(0))
    };
    let kernel = zone.alloc_with(Order::ZERO, req(ZoneType::Normal));
    assert_eq!(kernel.is_ok(), kernel_ok, "protection {protection}");
    assert!(zone.alloc_with(Order::ZERO, req(ZoneType::Dma)).is_ok());
}

#[test]
fn a_list_holds_at_least_the_blocks_the_roll_leaves_on_it() {
    let hint = |cpu: u32, order: u8, mt: usize, drained: bool| layout::PcpHint {
        cpu,
        pfn: 0,
        order,
        mt,
        drained,
    };
    // 7.2-4g-2node p_idle, node 1 Normal CPU 3 in small: the window shows its Unmovable
    // order-0 list at 4 and never empty, and `fit` put the rest of the count (100) on
    // Movable; the roll leaves 9 Unmovable order-0 blocks there, 3 Reclaimable order-0
    // ones and 2 Unmovable order-1 ones.
    let mut d = no_lists(2);
    d.blocks[1][0] = [4, 0, 0];
    let lists = vec![(0, vec![(0, 1, 10)]), (1, vec![(0, 0, 4), (0, 1, 96)])];
    let mut roll: Vec<layout::PcpHint> = (0..9).map(|_| hint(1, 0, 0, true)).collect();
    roll.extend((0..3).map(|_| hint(1, 0, 2, false)));
    roll.extend((0..2).map(|_| hint(1, 1, 0, true)));
    let got = at_least_rolled(lists.clone(), (&roll, &[]), Some(&d));
    let cpu1 = &got.iter().find(|(c, _)| *c == 1).unwrap().1;
    let of = |o: u8, t: usize| cpu1.iter().find(|l| (l.0, l.1) == (o, t)).map(|l| l.2);
    assert_eq!(of(0, 0), Some(9));
    assert_eq!(of(0, 2), Some(3));
    assert_eq!(of(1, 0), Some(2));
    // The pages came off the rest of the count: the total is the count's.
    assert_eq!(of(0, 1), Some(96 - 5 - 3 - 4));
    let pages: u64 = cpu1.iter().map(|&(o, _, n)| n << o).sum();
    assert_eq!(pages, 100);
    // CPU 0, which the roll leaves nothing on, keeps its lists.
    assert_eq!(got[0], lists[0]);
    // A list the trace shows exactly keeps the trace's figure.
    d.exact[1][0][0] = true;
    let got = at_least_rolled(lists.clone(), (&roll, &[]), Some(&d));
    let cpu1 = &got.iter().find(|(c, _)| *c == 1).unwrap().1;
    assert!(cpu1.contains(&(0, 0, 4)), "{cpu1:?}");
    // No more than the rest of the count moves: a list never goes below what the trace
    // shows it held.
    let mut d = no_lists(2);
    d.blocks[1][0] = [4, 95, 0];
    let got = at_least_rolled(lists, (&roll, &[]), Some(&d));
    let cpu1 = &got.iter().find(|(c, _)| *c == 1).unwrap().1;
    assert!(cpu1.contains(&(0, 1, 95)), "{cpu1:?}");
    let pages: u64 = cpu1.iter().map(|&(o, _, n)| n << o).sum();
    assert_eq!(pages, 100);
}

#[test]
fn a_list_holds_the_blocks_shown_after_the_window_beyond_the_windows_bound() {
    let hint = |order: u8| layout::PcpHint {
        cpu: 1,
        pfn: 0,
        order,
        mt: 0,
        drained: true,
    };
    // 6.12-4g p_thp's CPU 0 in small: the window takes 1 block off its Unmovable order-1
    // list (a lower bound) and never shows it empty; after the window, 2 order-1 and 1
    // order-2 blocks no event of the window names are drained off it. They are other
    // blocks than the window's: the list held 3 order-1 blocks at least.
    let mut d = no_lists(2);
    d.blocks[1][1] = [1, 0, 0];
    let lists = vec![(0, vec![(0, 1, 10)]), (1, vec![(0, 1, 96), (1, 0, 1)])];
    let late = [hint(1), hint(1), hint(2)];
    let got = at_least_rolled(lists.clone(), (&[], &late), Some(&d));
    let cpu1 = &got.iter().find(|(c, _)| *c == 1).unwrap().1;
    let of = |o: u8, t: usize| cpu1.iter().find(|l| (l.0, l.1) == (o, t)).map(|l| l.2);
    assert_eq!(
        (of(1, 0), of(2, 0), of(0, 1)),
        (Some(3), Some(1), Some(96 - 4 - 4))
    );
    let pages: u64 = cpu1.iter().map(|&(o, _, n)| n << o).sum();
    assert_eq!(pages, 98);
    assert_eq!(got[0], lists[0]);
}
