//! The kernel-version presets through the public API, against what the kernels did in the
//! traces (docs/kernel-versions.md §3.6): 6.1 refills exactly `batch` and drains
//! `batch << free_factor` (63, 126, ... 2016), 7.2 doubles its refills. The order-0 frees
//! and allocations here mostly take the hit paths, so these also check that the hit paths
//! keep each preset's rules.

use zonealloc::{
    AllocRequest, CpuId, KernelVersion, MigrateType, Order, Pfn, Zone, ZoneConfig, ZoneType,
};

const M: MigrateType = MigrateType::Movable;
const FRAMES: u64 = 1 << 16;

/// A zone of `version` with batch 63 and a fixed high of 3492 (the 2048 MiB 6.1 boot).
/// A one-CPU zone under `version`'s rules with batch 63 and a fixed `high` of 3492.
fn zone(version: KernelVersion) -> Zone {
    zone_with(version, 3492, 3492)
}

/// A one-CPU zone under `version`'s rules, no watermarks, batch 63, `high` within
/// `high_min..=high_max`, all free.
fn zone_with(version: KernelVersion, high_min: u32, high_max: u32) -> Zone {
    let mut cfg = ZoneConfig::without_watermarks();
    version.apply(&mut cfg);
    cfg.pcp = cfg
        .pcp
        .with_cpus(1)
        .with_batch(Some(63))
        .with_high_min(Some(high_min))
        .with_high_max(Some(high_max));
    let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(FRAMES), cfg).unwrap();
    z.add_free_range(Pfn(0), Pfn(FRAMES)).unwrap();
    z
}

fn req() -> AllocRequest {
    AllocRequest::new(M).on_cpu(CpuId(0))
}

/// Allocates `n` order-0 pages; returns them and the refill sizes seen.
fn alloc_n(z: &Zone, n: usize) -> (Vec<Pfn>, Vec<u64>) {
    let mut pages = Vec::new();
    let mut refills = Vec::new();
    let mut before = z.pcp_info(CpuId(0)).stats.refill_pages;
    for _ in 0..n {
        pages.push(z.alloc_with(Order::ZERO, req()).unwrap());
        let now = z.pcp_info(CpuId(0)).stats.refill_pages;
        if now != before {
            refills.push(now - before);
            before = now;
        }
    }
    (pages, refills)
}

/// Frees `pages` at order 0; returns the drain sizes seen.
fn free_all(z: &Zone, pages: &[Pfn]) -> Vec<u64> {
    let mut drains = Vec::new();
    let mut before = z.pcp_pages();
    for &p in pages {
        z.free_on(CpuId(0), p, Order::ZERO).unwrap();
        let now = z.pcp_pages();
        if now < before + 1 {
            drains.push(before + 1 - now);
        }
        before = now;
    }
    drains
}

#[test]
fn v6_1_refills_batch_and_drains_double_up_to_2016() {
    let z = zone(KernelVersion::V6_1);
    let (pages, refills) = alloc_n(&z, 10_000);
    assert!(refills.iter().all(|&r| r == 63), "{refills:?}");
    assert_eq!(refills.len(), 10_000usize.div_ceil(63));
    let info = z.pcp_info(CpuId(0));
    assert_eq!(
        (info.high, info.high_min, info.high_max),
        (3492, 3492, 3492)
    );
    let drains = free_all(&z, &pages);
    assert_eq!(&drains[..8], &[63, 126, 252, 504, 1008, 2016, 2016, 2016]);
    assert_eq!(z.pcp_info(CpuId(0)).high, 3492, "6.1 never tunes high");
    z.check().unwrap();
}

#[test]
fn v6_1_free_high_drains_everything_after_a_drain() {
    let z = zone(KernelVersion::V6_1);
    let (pages, _) = alloc_n(&z, 4000);
    let o1: Vec<Pfn> = (0..2)
        .map(|_| z.alloc_with(Order::new(1).unwrap(), req()).unwrap())
        .collect();
    // No drain yet (free_factor 0): an order-1 free is kept.
    z.free_on(CpuId(0), o1[0], Order::new(1).unwrap()).unwrap();
    assert!(z.pcp_pages() > 0);
    // Overflow high once: one drain of 63, free_factor 1.
    let drains = free_all(&z, &pages);
    assert_eq!(drains[0], 63);
    let left = z.pcp_pages();
    assert!(left > 0);
    // Now an order-1 free drains the whole PCP.
    z.free_on(CpuId(0), o1[1], Order::new(1).unwrap()).unwrap();
    assert_eq!(z.pcp_pages(), 0);
    assert_eq!(z.pcp_info(CpuId(0)).stats.drain_free_high_pages, left + 2);
    z.check().unwrap();
}

#[test]
fn v7_2_refills_double_and_6_12_too() {
    for v in [KernelVersion::V7_2, KernelVersion::V6_12] {
        let z = zone_with(v, 1000, 62_500);
        let (_, refills) = alloc_n(&z, 5000);
        assert_eq!(&refills[..6], &[63, 126, 252, 504, 1008, 2016], "{v}");
    }
}

/// 6.1 has no `decay_pcp_high`: the knob off keeps a grown `high` and the pages under it;
/// on (6.7+), ticks lower `high` and drain the excess.
#[test]
fn decay_knob_off_keeps_the_lists() {
    for decay in [true, false] {
        let mut cfg = ZoneConfig::for_kernel(KernelVersion::V7_2);
        cfg.watermarks = ZoneConfig::without_watermarks().watermarks;
        cfg.pcp = cfg
            .pcp
            .with_cpus(1)
            .with_batch(Some(63))
            .with_high_min(Some(1000))
            .with_high_max(Some(62_500))
            .with_decay(decay);
        let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(FRAMES), cfg).unwrap();
        z.add_free_range(Pfn(0), Pfn(FRAMES)).unwrap();
        let (pages, _) = alloc_n(&z, 6000);
        free_all(&z, &pages);
        let before = z.pcp_pages();
        assert!(before > 1000);
        for _ in 0..20 {
            z.tick();
        }
        let decayed = z.pcp_info(CpuId(0)).stats.drain_decay_pages;
        if decay {
            assert!(decayed > 0 && z.pcp_pages() < before);
        } else {
            assert_eq!((decayed, z.pcp_pages()), (0, before));
        }
    }
}

/// A zone of `version` whose free pages sit between its min and low marks, so that atomic
/// requests reach the slow path with `ALLOC_HIGHATOMIC`.
fn atomic_zone(version: KernelVersion) -> Zone {
    let mut cfg = ZoneConfig::for_kernel(version);
    cfg.watermarks = zonealloc::WatermarkConfig::Fixed {
        min: 1000,
        low: 70_000,
        high: 70_000,
    };
    cfg.pcp = cfg.pcp.with_cpus(1).with_batch(Some(63));
    let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(FRAMES), cfg).unwrap();
    z.add_free_range(Pfn(0), Pfn(FRAMES)).unwrap();
    z
}

#[test]
fn v7_2_highatomic_requests_do_not_refill_the_lists() {
    let one = Order::new(1).unwrap();
    let atomic = AllocRequest::atomic(M).on_cpu(CpuId(0));
    let z = atomic_zone(KernelVersion::V7_2);
    z.alloc_with(one, atomic).unwrap();
    assert_eq!(z.pcp_pages(), 0, "7.2 __rmqueue_pcplist returns NULL");
    let z = atomic_zone(KernelVersion::V6_12);
    z.alloc_with(one, atomic).unwrap();
    assert!(z.pcp_pages() > 0, "6.12 refills");
}

/// 7.2's `__rmqueue_pcplist` calls `nr_pcp_alloc` before it refuses an `ALLOC_HIGHATOMIC`
/// refill (`int batch = nr_pcp_alloc(pcp, zone, order); ... if (alloc_flags &
/// ALLOC_HIGHATOMIC) return NULL;`): the refused request still clamps `high` into
/// `high_min..=high_max` (from its boot value 0). The zone is below its high mark
/// (`ZONE_BELOW_HIGH`), so `high` is not raised by `batch` on top.
#[test]
fn v7_2_refused_highatomic_refill_still_clamps_high() {
    let one = Order::new(1).unwrap();
    let atomic = AllocRequest::atomic(M).on_cpu(CpuId(0));
    let z = atomic_zone(KernelVersion::V7_2);
    assert_eq!(z.pcp_info(CpuId(0)).high, 0, "high starts at 0");
    z.alloc_with(one, atomic).unwrap();
    let info = z.pcp_info(CpuId(0));
    assert_eq!(z.pcp_pages(), 0, "the refill was refused");
    assert!(info.high_min > 0);
    assert_eq!(
        info.high, info.high_min,
        "nr_pcp_alloc ran before the refusal"
    );
    // Order 1: alloc_factor does not move (only order-0 refills double).
    assert_eq!(info.alloc_factor, 0);
}

#[test]
fn highatomic_reserve_cap_per_version() {
    // 65536 managed pages: 6.1 caps at 655 + 512 (three pageblocks fit under it), 6.12+ at
    // ALIGN(655, 512) = 1024 (two).
    let one = Order::new(1).unwrap();
    let atomic = AllocRequest::atomic(M).on_cpu(CpuId(0));
    for (v, cap) in [(KernelVersion::V6_1, 1536), (KernelVersion::V7_2, 1024)] {
        let z = atomic_zone(v);
        for _ in 0..3000 {
            z.alloc_with(one, atomic).unwrap();
        }
        assert_eq!(z.reserved_highatomic(), cap, "{v}");
    }
}

/// `set_pcp_tuning` starts a CPU where a kernel's was: 6.1's `free_factor` set to 2 makes the
/// next drain `batch << 2`, and 7.2's `alloc_factor` set to 3 makes the next refill
/// `batch << 3`; a set `high` is read back.
#[test]
fn tuning_state_set_from_outside_drives_the_next_refill_and_drain() {
    use zonealloc::PcpTuning;
    let z = zone(KernelVersion::V6_1);
    let (pages, _) = alloc_n(&z, 3492 + 63);
    // Everything back on the lists but one page under high.
    free_all(&z, &pages[..3491 - z.pcp_pages() as usize]);
    assert!(z.set_pcp_tuning(
        CpuId(0),
        PcpTuning {
            free_count: Some(2),
            ..PcpTuning::default()
        }
    ));
    let drains = free_all(&z, &pages[pages.len() - 2..]);
    assert_eq!(drains, vec![63 << 2]);

    let z = zone_with(KernelVersion::V7_2, 3492, 15551);
    assert!(z.set_pcp_tuning(
        CpuId(0),
        PcpTuning {
            high: Some(11632),
            alloc_factor: Some(3),
            ..PcpTuning::default()
        }
    ));
    let info = z.pcp_info(CpuId(0));
    assert_eq!((info.high, info.alloc_factor), (11632, 3));
    let (_, refills) = alloc_n(&z, 1);
    assert_eq!(refills, vec![63 << 3]);
}

/// A `high` set from outside is the one the free hit path drains at: lowered from 11632 to
/// 4000 (within 7.2's bounds), frees drain long before the lists reach the old `high`
/// (the hit path keeps its own copy of `high`, which must follow; debug builds also check it).
#[test]
fn a_lowered_high_is_the_one_frees_drain_at() {
    use zonealloc::PcpTuning;
    let z = zone_with(KernelVersion::V7_2, 3492, 15551);
    let tune = |high| {
        assert!(z.set_pcp_tuning(
            CpuId(0),
            PcpTuning {
                high: Some(high),
                ..PcpTuning::default()
            }
        ));
    };
    tune(11632);
    let (pages, _) = alloc_n(&z, 8000);
    tune(4000);
    assert_eq!(z.pcp_info(CpuId(0)).high, 4000);
    let drains = free_all(&z, &pages);
    assert!(
        !drains.is_empty(),
        "no drain while freeing 8000 pages under high 4000"
    );
    assert!(
        z.pcp_pages() < 8000,
        "{} pages left on the lists",
        z.pcp_pages()
    );
    z.check().unwrap();
}

/// 5.15 and 6.6.14's `nr_pcp_free` grows `free_factor` with no `CONFIG_PCP_BATCH_SCALE_MAX`
/// cap: past Debian 6.1's 2016 the drains reach `high - batch` = 3429.
#[test]
fn v5_15_and_v6_6_drains_double_past_2016_to_high_minus_batch() {
    for v in [KernelVersion::V5_15, KernelVersion::V6_6] {
        let z = zone(v);
        let (pages, refills) = alloc_n(&z, 15_000);
        assert!(refills.iter().all(|&r| r == 63), "{v}: {refills:?}");
        let drains = free_all(&z, &pages);
        assert_eq!(
            &drains[..8],
            &[63, 126, 252, 504, 1008, 2016, 3429, 3429],
            "{v}"
        );
        assert_eq!(z.pcp_info(CpuId(0)).high, 3492, "{v} never tunes high");
        z.check().unwrap();
    }
}

/// 5.15's `free_unref_page_commit` has no `free_high`: after a drain, an order-1 free is kept
/// where 6.1 and 6.6 drain the whole PCP.
#[test]
fn v5_15_keeps_high_order_frees_after_a_drain() {
    for (v, drains_all) in [
        (KernelVersion::V5_15, false),
        (KernelVersion::V6_6, true),
        (KernelVersion::V6_1, true),
    ] {
        let z = zone(v);
        let (pages, _) = alloc_n(&z, 4000);
        let o1 = z.alloc_with(Order::new(1).unwrap(), req()).unwrap();
        free_all(&z, &pages);
        let left = z.pcp_pages();
        assert!(left > 0);
        z.free_on(CpuId(0), o1, Order::new(1).unwrap()).unwrap();
        let want = if drains_all { 0 } else { left + 2 };
        assert_eq!(z.pcp_pages(), want, "{v}");
        z.check().unwrap();
    }
}

/// A two-CPU zone of `version` with batch 2 and a fixed `high` of 8; pages are allocated on
/// CPU 1 so that CPU 0's lists hold only what is freed there.
fn small_zone(version: KernelVersion, batch_free: bool) -> Zone {
    let mut cfg = ZoneConfig::without_watermarks();
    version.apply(&mut cfg);
    cfg.pcp = cfg
        .pcp
        .with_cpus(2)
        .with_batch(Some(2))
        .with_high_min(Some(8))
        .with_high_max(Some(8))
        .with_drain_batch_free(batch_free);
    let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(FRAMES), cfg).unwrap();
    z.add_free_range(Pfn(0), Pfn(FRAMES)).unwrap();
    z
}

/// 5.15's `free_pcppages_bulk`: the round robin starts at list 1 and takes `batch_free`
/// blocks per list (one more per list stepped over). Two order-1 blocks (list 4) and four
/// order-0 pages (list 1) reach `high` 8; the drain of 2 takes one order-0 page from list 1,
/// steps over lists 2 and 3 and takes an order-1 block from list 4: 3 pages. From 5.18 on
/// the freed list (1) is drained first and to empty: 2 order-0 pages.
#[test]
fn v5_15_drain_takes_batch_free_blocks_per_list() {
    let one = Order::new(1).unwrap();
    for (batch_free, left) in [(true, 5), (false, 6)] {
        let z = small_zone(KernelVersion::V5_15, batch_free);
        let on1 = AllocRequest::new(M).on_cpu(CpuId(1));
        let o1: Vec<Pfn> = (0..2).map(|_| z.alloc_with(one, on1).unwrap()).collect();
        let o0: Vec<Pfn> = (0..4)
            .map(|_| z.alloc_with(Order::ZERO, on1).unwrap())
            .collect();
        for &p in &o1 {
            z.free_on(CpuId(0), p, one).unwrap();
        }
        for &p in &o0[..3] {
            z.free_on(CpuId(0), p, Order::ZERO).unwrap();
        }
        assert_eq!(z.pcp_info(CpuId(0)).count, 7);
        z.free_on(CpuId(0), o0[3], Order::ZERO).unwrap();
        let info = z.pcp_info(CpuId(0));
        assert_eq!(
            (info.count, info.stats.drain_high_pages),
            (left, 8 - left as u64)
        );
        // The first order-1 block freed (the list's tail) went back with batch_free.
        assert_eq!(info.list_pages[4], if batch_free { 2 } else { 4 });
        z.check().unwrap();
    }
}

/// 5.15's `batch_free` carries over from a list that ran out to the next: with batch 4 and
/// `high` 12, CPU 0 holds one Reclaimable page (list 2), one Movable order-1 block (list 4)
/// and five Unmovable order-1 blocks (list 3, the last freed reaching 13 pages). The drain of 4
/// steps over list 1 to list 2 (`batch_free` 2), takes its one page and leaves `batch_free` at
/// 1; list 3 then gets 2 and gives two blocks. Reset instead of carried, list 3 would give one
/// block and list 4 the other.
#[test]
fn v5_15_batch_free_carries_over_to_the_next_list() {
    let one = Order::new(1).unwrap();
    let mut cfg = ZoneConfig::without_watermarks();
    KernelVersion::V5_15.apply(&mut cfg);
    cfg.pcp = cfg
        .pcp
        .with_cpus(2)
        .with_batch(Some(4))
        .with_high_min(Some(12))
        .with_high_max(Some(12));
    let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(FRAMES), cfg).unwrap();
    z.add_free_range(Pfn(0), Pfn(FRAMES)).unwrap();
    let on1 = |mt| AllocRequest::new(mt).on_cpu(CpuId(1));
    let rec = z
        .alloc_with(Order::ZERO, on1(MigrateType::Reclaimable))
        .unwrap();
    let mov = z.alloc_with(one, on1(M)).unwrap();
    let unm: Vec<Pfn> = (0..5)
        .map(|_| z.alloc_with(one, on1(MigrateType::Unmovable)).unwrap())
        .collect();
    z.free_on(CpuId(0), rec, Order::ZERO).unwrap();
    z.free_on(CpuId(0), mov, one).unwrap();
    for &p in &unm {
        z.free_on(CpuId(0), p, one).unwrap();
    }
    let info = z.pcp_info(CpuId(0));
    assert_eq!((info.count, info.stats.drain_high_pages), (8, 5));
    assert_eq!(
        (info.list_pages[2], info.list_pages[3], info.list_pages[4]),
        (0, 6, 2)
    );
    z.check().unwrap();
}

/// 6.6.14's `__setup_per_zone_wmarks` treats `ZONE_MOVABLE` like highmem (min =
/// `clamp(managed / 1024, 32, 128)`, left out of `lowmem_pages`); 5.15 and 6.1 do not.
#[test]
fn v6_6_movable_zone_min_is_like_highmem() {
    let movable_min = |v: KernelVersion| {
        let cfg = ZoneConfig::for_kernel(v).with_cpus(1);
        let normal = Zone::new(ZoneType::Normal, Pfn(0), Pfn(FRAMES), cfg).unwrap();
        let movable = Zone::new(ZoneType::Movable, Pfn(FRAMES), Pfn(2 * FRAMES), cfg).unwrap();
        let node = zonealloc::Node::new(0, [normal, movable]).unwrap();
        node.add_free_range(Pfn(0), Pfn(2 * FRAMES)).unwrap();
        node.zone(ZoneType::Movable).unwrap().watermarks().min
    };
    assert_eq!(movable_min(KernelVersion::V6_6), FRAMES / 1024);
    for v in [KernelVersion::V5_15, KernelVersion::V6_1] {
        assert!(movable_min(v) > FRAMES / 1024, "{v}: {}", movable_min(v));
    }
}

#[test]
fn every_version_round_trips_its_name() {
    for v in KernelVersion::ALL {
        assert_eq!(v.to_string().parse::<KernelVersion>(), Ok(v));
        ZoneConfig::for_kernel(v).validate().unwrap();
    }
    assert_eq!("5.15".parse(), Ok(KernelVersion::V5_15));
    assert_eq!("6.6".parse(), Ok(KernelVersion::V6_6));
    assert!("6.7".parse::<KernelVersion>().is_err());
}
