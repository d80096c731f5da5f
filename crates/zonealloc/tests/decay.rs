//! `decay_pcp_high` per CPU (`Zone::decay_pcp_high`), against the kernel function's arithmetic
//! (`mm/page_alloc.c`, identical in Debian 6.12.117 and 7.2.13):
//!
//! ```c
//! if (pcp->high > high_min) {
//!     pcp->high = max3(pcp->count - (batch << CONFIG_PCP_BATCH_SCALE_MAX),
//!                      pcp->high - (pcp->high >> 3), high_min);
//!     if (pcp->high > high_min)
//!         todo = true;
//! }
//! to_drain = pcp->count - pcp->high;
//! while (to_drain > 0) {
//!     to_drain_batched = min(to_drain, batch);
//!     free_pcppages_bulk(zone, to_drain_batched, pcp, 0);   /* under the PCP lock */
//!     todo = true;
//!     to_drain -= to_drain_batched;
//! }
//! ```

use zonealloc::{
    AllocRequest, CpuId, DecayOutcome, KernelVersion, MigrateType, Order, PcpTuning, Pfn, Zone,
    ZoneConfig, ZoneType,
};

const FRAMES: u64 = 1 << 18;
const BATCH: i32 = 63;
const HIGH_MIN: i32 = 1000;

/// A two-CPU zone under `version`'s rules, no watermarks, batch 63, `high` within
/// 1000..=62500, all free.
fn zone(version: KernelVersion) -> Zone {
    zone_with(version, 2, 62_500)
}

/// A zone of `cpus` CPUs under `version`'s rules, no watermarks, batch 63, `high` within
/// 1000..=`high_max`, 2^18 frames all free.
fn zone_with(version: KernelVersion, cpus: u32, high_max: u32) -> Zone {
    let mut cfg = ZoneConfig::for_kernel(version);
    cfg.watermarks = ZoneConfig::without_watermarks().watermarks;
    cfg.pcp = cfg
        .pcp
        .with_cpus(cpus)
        .with_batch(Some(BATCH as u32))
        .with_high_min(Some(HIGH_MIN as u32))
        .with_high_max(Some(high_max));
    let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(FRAMES), cfg).unwrap();
    z.add_free_range(Pfn(0), Pfn(FRAMES)).unwrap();
    z
}

/// Allocates `n` order-0 pages on `cpu` and frees them all there again.
fn churn(z: &Zone, cpu: u32, n: usize) {
    let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(cpu));
    let pages: Vec<Pfn> = (0..n)
        .map(|_| z.alloc_with(Order::ZERO, req).unwrap())
        .collect();
    for p in pages {
        z.free_on(CpuId(cpu), p, Order::ZERO).unwrap();
    }
}

/// What `decay_pcp_high` computes from `high` and `count` (order-0 lists, scale 5).
fn kernel_decay(high: i32, count: i32) -> DecayOutcome {
    let mut new_high = high;
    let mut todo = false;
    if high > HIGH_MIN {
        new_high = (count - (BATCH << 5)).max(high - (high >> 3)).max(HIGH_MIN);
        todo = new_high > HIGH_MIN;
    }
    let mut to_drain = count - new_high;
    let (mut drained, mut chunks) = (0, 0);
    while to_drain > 0 {
        let c = to_drain.min(BATCH);
        drained += c;
        chunks += 1;
        to_drain -= c;
        todo = true;
    }
    DecayOutcome {
        reached: true,
        high_before: high,
        high_after: new_high,
        count_before: count,
        drained,
        chunks,
        todo,
    }
}

fn set_high(z: &Zone, cpu: u32, high: i32) {
    assert!(z.set_pcp_tuning(
        CpuId(cpu),
        PcpTuning {
            high: Some(high),
            ..PcpTuning::default()
        }
    ));
}

/// [`Zone::pcp_tuning`] reads back what [`Zone::set_pcp_tuning`] set, on that CPU only.
#[test]
fn the_tuning_set_reads_back() {
    let z = zone(KernelVersion::V6_12);
    let before = z.pcp_tuning(CpuId(1)).unwrap();
    let t = PcpTuning {
        high: Some(700),
        alloc_factor: Some(2),
        free_count: Some(37),
        prev_free_high_order: Some(true),
    };
    assert!(z.set_pcp_tuning(CpuId(0), t));
    assert_eq!(z.pcp_tuning(CpuId(0)), Some(t));
    assert_eq!(z.pcp_tuning(CpuId(1)), Some(before));
    assert_eq!(z.pcp_info(CpuId(0)).free_count, 37);
}

/// Each call does exactly the kernel's arithmetic, down to `high_min`, on the CPU asked for
/// only: the `count - (batch << 5)` floor first, then the eighths, then nothing to do.
#[test]
fn decay_pcp_high_is_the_kernel_function_per_cpu() {
    for v in [KernelVersion::V7_2, KernelVersion::V6_12] {
        let z = zone(v);
        churn(&z, 0, 20_000);
        churn(&z, 1, 3_000);
        let count = z.pcp_info(CpuId(0)).count;
        assert!(count > 17_000, "{v}: {count} pages listed");
        // high just above count: the floor `count - 2016` binds (high / 8 > 2016 + 100).
        set_high(&z, 0, count + 100);
        let other = z.pcp_info(CpuId(1));
        let mut calls = 0;
        let mut floors = 0;
        loop {
            let info = z.pcp_info(CpuId(0));
            let want = kernel_decay(info.high, info.count);
            let decay_before = info.stats.drain_decay_pages;
            // The preview says the same and changes nothing (order-0 lists: no overshoot).
            assert_eq!(
                z.decay_pcp_high_preview(CpuId(0)),
                want,
                "{v}: preview {calls}"
            );
            assert_eq!(z.pcp_info(CpuId(0)).high, info.high);
            let got = z.decay_pcp_high(CpuId(0));
            assert_eq!(got, want, "{v}: call {calls}");
            let after = z.pcp_info(CpuId(0));
            assert_eq!(
                (after.high, after.count),
                (want.high_after, info.count - want.drained)
            );
            assert_eq!(
                after.stats.drain_decay_pages - decay_before,
                want.drained as u64
            );
            floors += usize::from(want.high_after == info.count - (BATCH << 5));
            calls += 1;
            if !got.todo {
                break;
            }
            assert!(calls < 100, "{v}: decay does not settle");
        }
        assert!(floors >= 1, "{v}: the count floor never bound");
        let end = z.pcp_info(CpuId(0));
        assert_eq!(end.high, HIGH_MIN);
        assert!(end.count <= HIGH_MIN);
        // The other CPU's lists were not touched.
        let now = z.pcp_info(CpuId(1));
        assert_eq!((now.high, now.count), (other.high, other.count), "{v}");
        assert_eq!(now.stats.drain_decay_pages, 0);
        z.check().unwrap();
    }
}

/// The first call from high 20000 with 17000 listed: floor 17000 - 2016 = 14984 against the
/// eighth 17500, so high becomes 17500 and 0 pages drain; the next: 15313, 1687 pages in
/// 27 chunks (26 of 63 and one of 49).
#[test]
fn decay_pcp_high_drains_count_minus_high_in_batch_chunks() {
    let z = zone(KernelVersion::V7_2);
    // Bring the list to exactly 17000 pages: take them, empty the list, put them back under
    // a high that keeps them all.
    let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0));
    let pages: Vec<Pfn> = (0..17_000)
        .map(|_| z.alloc_with(Order::ZERO, req).unwrap())
        .collect();
    z.drain_cpu(CpuId(0));
    set_high(&z, 0, 30_000);
    for p in pages {
        z.free_on(CpuId(0), p, Order::ZERO).unwrap();
    }
    assert_eq!(z.pcp_info(CpuId(0)).count, 17_000);
    set_high(&z, 0, 20_000);
    let first = z.decay_pcp_high(CpuId(0));
    assert_eq!(
        (first.high_after, first.drained, first.chunks, first.todo),
        (17_500, 0, 0, true)
    );
    let second = z.decay_pcp_high(CpuId(0));
    assert_eq!(
        (
            second.high_after,
            second.drained,
            second.chunks,
            second.todo
        ),
        (15_313, 1_687, 27, true)
    );
    assert_eq!(z.pcp_info(CpuId(0)).count, 15_313);
    z.check().unwrap();
}

/// 6.6 and older have no `decay_pcp_high`: the outcome reports the lists untouched, and the
/// knob turned on under 6.1's fixed `high` (high_min == high_max) has nothing to lower.
#[test]
fn no_decay_before_6_7() {
    for v in [KernelVersion::V6_1, KernelVersion::V6_6] {
        let z = zone(v);
        churn(&z, 0, 5_000);
        let info = z.pcp_info(CpuId(0));
        let preview = z.decay_pcp_high_preview(CpuId(0));
        let got = z.decay_pcp_high(CpuId(0));
        assert_eq!(preview, got, "{v}");
        assert!(got.reached, "{v}");
        assert_eq!((got.drained, got.chunks, got.todo), (0, 0, false), "{v}");
        assert_eq!(got.high_after, got.high_before);
        assert_eq!(z.pcp_info(CpuId(0)).count, info.count);
    }
}

/// A zone without per-CPU lists has nothing to decay.
#[test]
fn no_lists_nothing_reached() {
    let mut cfg = ZoneConfig::for_kernel(KernelVersion::V7_2);
    cfg.pcp = cfg.pcp.with_enabled(false);
    let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(FRAMES), cfg).unwrap();
    z.add_free_range(Pfn(0), Pfn(FRAMES)).unwrap();
    assert_eq!(z.decay_pcp_high(CpuId(0)), DecayOutcome::default());
}

/// On an order-1 list `free_pcppages_bulk` frees whole blocks, so each chunk may free one page
/// more than it asked for, while `decay_pcp_high` still counts `to_drain` down by the chunk
/// asked: from high 524 and 558 pages (279 order-1 blocks), the new high is 524 - 65 = 459,
/// 99 pages are asked in chunks of 63 and 36, and 32 + 18 blocks = 100 pages go. (`free_high`
/// is turned off so that freeing the blocks back cannot drain them first.)
#[test]
fn decay_pcp_high_frees_whole_blocks_per_chunk() {
    let mut cfg = ZoneConfig::for_kernel(KernelVersion::V7_2);
    cfg.watermarks = ZoneConfig::without_watermarks().watermarks;
    cfg.pcp = cfg
        .pcp
        .with_cpus(1)
        .with_batch(Some(BATCH as u32))
        .with_high_min(Some(300))
        .with_high_max(Some(62_500))
        .with_free_high(zonealloc::FreeHigh::Off);
    let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(FRAMES), cfg).unwrap();
    z.add_free_range(Pfn(0), Pfn(FRAMES)).unwrap();
    let one = Order::new(1).unwrap();
    let req = AllocRequest::new(MigrateType::Unmovable).on_cpu(CpuId(0));
    let blocks: Vec<Pfn> = (0..250).map(|_| z.alloc_with(one, req).unwrap()).collect();
    for p in blocks {
        z.free_on(CpuId(0), p, one).unwrap();
    }
    // Nine refills of 31 blocks: 279 blocks listed.
    assert_eq!(z.pcp_info(CpuId(0)).count, 558);
    set_high(&z, 0, 524);
    let preview = z.decay_pcp_high_preview(CpuId(0));
    assert_eq!(
        (preview.high_after, preview.drained, preview.chunks),
        (459, 99, 2)
    );
    let got = z.decay_pcp_high(CpuId(0));
    assert_eq!((got.high_after, got.drained, got.chunks), (459, 100, 2));
    assert_eq!(z.pcp_info(CpuId(0)).count, 458);
    z.check().unwrap();
}

// The 7.2 (and 6.12) self-tuning of one CPU's order-0 list, through the public API (hit paths
// included), against a reference written line by line from `mm/page_alloc.c` of 7.2.13:
// `rmqueue_pcplist` (`free_count >>= 1`), `nr_pcp_alloc` (clamp, raise `high` on a refill,
// `alloc_factor`), `free_frozen_page_commit` (`alloc_factor >>= 1`, `free_count`),
// `nr_pcp_high` (clamp, grow `high` to `free_count + batch` on a full list), `nr_pcp_free`
// and `decay_pcp_high`. No watermarks, so `ZONE_BELOW_HIGH` and `ZONE_RECLAIM_ACTIVE` stay
// clear; one migratetype at order 0, so only `count` matters for drains.

const SCALE: u32 = 5;
const TUNE_HIGH_MAX: i32 = 4000;

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
        self.high = self.high.clamp(HIGH_MIN, TUNE_HIGH_MAX);
        self.high
    }

    /// `nr_pcp_alloc(pcp, zone, 0)` with `ZONE_BELOW_HIGH` clear.
    fn nr_pcp_alloc(&mut self) -> i32 {
        let mut high = self.clamp_high();
        if high < BATCH {
            return 1;
        }
        let mut batch = BATCH << self.alloc_factor;
        if HIGH_MIN != TUNE_HIGH_MAX {
            high = (high + batch).min(TUNE_HIGH_MAX);
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
        if HIGH_MIN == TUNE_HIGH_MAX {
            return high;
        }
        if self.count >= high {
            let need_high = self.free_count + BATCH;
            if self.high < need_high {
                self.high = need_high.clamp(HIGH_MIN, TUNE_HIGH_MAX);
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
        let z = zone_with(v, 1, TUNE_HIGH_MAX as u32);
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
        assert_eq!((lowest, highest), (HIGH_MIN, TUNE_HIGH_MAX), "{v}");
        let info = z.pcp_info(CpuId(0));
        assert_eq!(info.stats.drain_decay_pages as i64, decayed);
        z.check().unwrap();
    }
}
