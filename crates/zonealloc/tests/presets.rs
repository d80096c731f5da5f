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
