//! The 7.2 (and 6.12) self-tuning of one CPU's order-0 list, through the public API (hit paths
//! included), against a reference written line by line from `mm/page_alloc.c` of 7.2.13:
//! `rmqueue_pcplist` (`free_count >>= 1`), `nr_pcp_alloc` (clamp, raise `high` on a refill,
//! `alloc_factor`), `free_frozen_page_commit` (`alloc_factor >>= 1`, `free_count`),
//! `nr_pcp_high` (clamp, grow `high` to `free_count + batch` on a full list), `nr_pcp_free`
//! and `decay_pcp_high`. No watermarks, so `ZONE_BELOW_HIGH` and `ZONE_RECLAIM_ACTIVE` stay
//! clear; one migratetype at order 0, so only `count` matters for drains.

use zonealloc::{AllocRequest, CpuId, KernelVersion, MigrateType, Order, Pfn, Zone, ZoneConfig};

const BATCH: i32 = 63;
const SCALE: u32 = 5;
const HIGH_MIN: i32 = 1000;
const HIGH_MAX: i32 = 4000;

/// `struct per_cpu_pages`, the fields these rules move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Kernel {
    count: i32,
    high: i32,
    free_count: i32,
    alloc_factor: u8,
}

impl Kernel {
    fn clamp_high(&mut self) -> i32 {
        self.high = self.high.clamp(HIGH_MIN, HIGH_MAX);
        self.high
    }

    /// `nr_pcp_alloc(pcp, zone, 0)` with `ZONE_BELOW_HIGH` clear.
    fn nr_pcp_alloc(&mut self) -> i32 {
        let mut high = self.clamp_high();
        if high < BATCH {
            return 1;
        }
        let mut batch = BATCH << self.alloc_factor;
        if HIGH_MIN != HIGH_MAX {
            high = (high + batch).min(HIGH_MAX);
            self.high = high;
        }
        let max_nr_alloc = (high - self.count - BATCH).max(BATCH);
        if batch <= max_nr_alloc && u32::from(self.alloc_factor) < SCALE {
            self.alloc_factor += 1;
        }
        batch = batch.min(max_nr_alloc);
        if batch > 1 {
            batch = batch.max(2);
        }
        batch
    }

    /// `rmqueue_pcplist` → `__rmqueue_pcplist` for one order-0 page.
    fn alloc(&mut self) {
        self.free_count >>= 1;
        if self.count == 0 {
            self.count += self.nr_pcp_alloc();
        }
        self.count -= 1;
    }

    /// `nr_pcp_high(pcp, zone, batch, false)`, no zone flags.
    fn nr_pcp_high(&mut self) -> i32 {
        let high = self.clamp_high();
        if high == 0 {
            return 0;
        }
        if HIGH_MIN == HIGH_MAX {
            return high;
        }
        if self.count >= high {
            let need_high = self.free_count + BATCH;
            if self.high < need_high {
                self.high = need_high.clamp(HIGH_MIN, HIGH_MAX);
            }
        }
        high
    }

    /// `free_frozen_page_commit` for one order-0 page; returns the pages drained.
    fn free(&mut self) -> i32 {
        self.alloc_factor >>= 1;
        self.count += 1;
        if self.free_count < (BATCH << SCALE) {
            self.free_count += 1;
        }
        let high = self.nr_pcp_high();
        if self.count < high {
            return 0;
        }
        // nr_pcp_free
        let to_free = if high < BATCH {
            1
        } else {
            self.free_count.clamp(BATCH, high - BATCH)
        };
        let n = to_free.min(self.count);
        self.count -= n;
        n
    }

    /// `decay_pcp_high`; returns the pages drained.
    fn decay(&mut self) -> i32 {
        if self.high > HIGH_MIN {
            self.high = (self.count - (BATCH << SCALE))
                .max(self.high - (self.high >> 3))
                .max(HIGH_MIN);
        }
        let to_drain = (self.count - self.high).max(0);
        self.count -= to_drain;
        to_drain
    }
}

fn zone(version: KernelVersion) -> Zone {
    let mut cfg = ZoneConfig::for_kernel(version);
    cfg.watermarks = ZoneConfig::without_watermarks().watermarks;
    cfg.pcp = cfg
        .pcp
        .with_cpus(1)
        .with_batch(Some(BATCH as u32))
        .with_high_min(Some(HIGH_MIN as u32))
        .with_high_max(Some(HIGH_MAX as u32));
    let z = Zone::new(zonealloc::ZoneType::Normal, Pfn(0), Pfn(1 << 18), cfg).unwrap();
    z.add_free_range(Pfn(0), Pfn(1 << 18)).unwrap();
    z
}

fn state(z: &Zone) -> Kernel {
    let i = z.pcp_info(CpuId(0));
    Kernel {
        count: i.count,
        high: i.high,
        free_count: i.free_count,
        alloc_factor: i.alloc_factor,
    }
}

/// Phases of allocation runs, free runs, mixed traffic and decays; after every operation the
/// zone's list must be where the kernel's would be.
#[test]
fn order0_tuning_follows_the_kernel_step_by_step() {
    for v in [KernelVersion::V7_2, KernelVersion::V6_12] {
        let z = zone(v);
        let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0));
        let mut k = state(&z);
        let mut live: Vec<Pfn> = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut ops = 0u32;
        let (mut drained, mut decayed) = (0i64, 0i64);
        let (mut lowest, mut highest) = (i32::MAX, 0);
        // (allocation probability in 1/16, operations): bursts up, bursts down, mixed.
        let phases = [
            (16, 6_000),
            (0, 5_000),
            (12, 3_000),
            (2, 3_000),
            (8, 2_000),
            (15, 4_000),
            (1, 4_500),
        ];
        for (round, &(p_alloc, n)) in phases.iter().enumerate() {
            for _ in 0..n {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let alloc = (x >> 60) < p_alloc || live.is_empty();
                if alloc {
                    live.push(z.alloc_with(Order::ZERO, req).unwrap());
                    k.alloc();
                } else {
                    let i = (x >> 20) as usize % live.len();
                    let p = live.swap_remove(i);
                    z.free_on(CpuId(0), p, Order::ZERO).unwrap();
                    drained += i64::from(k.free());
                }
                ops += 1;
                assert_eq!(state(&z), k, "{v}: phase {round}, operation {ops}");
                lowest = lowest.min(k.high);
                highest = highest.max(k.high);
            }
            // The vmstat worker runs a few times between phases.
            for _ in 0..12 {
                let got = z.decay_pcp_high(CpuId(0));
                let want = k.decay();
                decayed += i64::from(want);
                assert_eq!(got.drained, want, "{v}: decay after phase {round}");
                assert_eq!(state(&z), k, "{v}: decay after phase {round}");
            }
        }
        // The run exercised every rule: drains on free, decay drains, high at both ends.
        assert!(drained > 0 && decayed > 0, "{v}: {drained} {decayed}");
        assert_eq!((lowest, highest), (HIGH_MIN, HIGH_MAX), "{v}");
        let info = z.pcp_info(CpuId(0));
        assert_eq!(info.stats.drain_decay_pages as i64, decayed);
        z.check().unwrap();
    }
}
