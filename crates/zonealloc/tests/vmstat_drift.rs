//! The lag of `NR_FREE_PAGES` behind the free lists (`Zone::set_vmstat_drift`): the
//! watermark checks read the zone's counter, which a CPU's changes reach only past its
//! `stat_threshold` (`__mod_zone_page_state`) or when its worker folds them
//! (`refresh_cpu_vm_stats`).

use zonealloc::config::WatermarkConfig;
use zonealloc::ZoneType;
use zonealloc::{AllocRequest, CpuId, KernelVersion, MigrateType, Order, Pfn, Zone, ZoneConfig};

const FRAMES: u64 = 1 << 16;
const MARK: u64 = 1000;

/// A two-CPU 6.12 zone without per-CPU lists, every mark at [`MARK`], all free
/// (`calculate_normal_threshold`: 2 * fls(2) * (1 + fls(2)) = 12).
fn zone() -> Zone {
    let mut cfg = ZoneConfig::without_watermarks();
    KernelVersion::V6_12.apply(&mut cfg);
    cfg.watermarks = WatermarkConfig::Fixed {
        min: MARK,
        low: MARK,
        high: MARK,
    };
    cfg.pcp = cfg.pcp.with_cpus(2);
    cfg.pcp.enabled = false;
    let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(FRAMES), cfg).unwrap();
    z.add_free_range(Pfn(0), Pfn(FRAMES)).unwrap();
    z
}

/// Order-0 allocations on CPU 0 until one fails: how many succeeded, and the last page.
fn alloc_until_refused(z: &Zone) -> (u64, Pfn) {
    let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0));
    let (mut n, mut last) = (0, Pfn(0));
    while let Ok(p) = z.alloc_with(Order::ZERO, req) {
        (n, last) = (n + 1, p);
    }
    (n, last)
}

#[test]
fn the_min_mark_is_read_off_the_lagging_counter() {
    // Exact: the zone refuses once its free pages are down to the mark.
    let z = zone();
    assert_eq!(alloc_until_refused(&z).0, FRAMES - MARK);

    // Lagging: CPU 0's takes reach the counter 13 at a time (past the threshold of 12), so
    // it reads 65536 - 13 * 4964 = 1004 > 1000 while 12 fewer pages are free, and the
    // zone hands out 9 pages below the mark.
    let z = zone();
    z.set_vmstat_drift(true);
    let (n, last) = alloc_until_refused(&z);
    assert_eq!(n, 13 * 4965);
    assert_eq!((z.free_pages(), z.vmstat_free_pages()), (991, 991));
    // A free on CPU 1 (the embedder says where the zone's operations run) stays in its
    // diff until its worker folds it.
    z.set_stat_cpu(CpuId(1));
    z.free_on(CpuId(1), last, Order::ZERO).unwrap();
    assert_eq!((z.free_pages(), z.vmstat_free_pages()), (992, 991));
    z.fold_vmstat(CpuId(0));
    assert_eq!(z.vmstat_free_pages(), 991);
    z.fold_vmstat(CpuId(1));
    assert_eq!(z.vmstat_free_pages(), 992);
}

#[test]
fn kswapd_awake_sets_the_pressure_threshold() {
    // calculate_pressure_threshold: (low - min) / 2 CPUs, at least 1: takes reach the
    // counter 2 at a time, and it reads the mark exactly when the zone refuses.
    let z = zone();
    z.set_vmstat_drift(true);
    z.set_kswapd_awake(true);
    assert_eq!(alloc_until_refused(&z).0, FRAMES - MARK);
    // Asleep: the normal threshold again.
    z.set_kswapd_awake(false);
    let (n, _) = alloc_until_refused(&z);
    assert_eq!(n, 0);
}
