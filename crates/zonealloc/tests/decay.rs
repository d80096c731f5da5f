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

const FRAMES: u64 = 1 << 16;
const BATCH: i32 = 63;
const HIGH_MIN: i32 = 1000;

/// A two-CPU zone under `version`'s rules, no watermarks, batch 63, `high` within
/// 1000..=62500, all free.
fn zone(version: KernelVersion) -> Zone {
    let mut cfg = ZoneConfig::for_kernel(version);
    cfg.watermarks = ZoneConfig::without_watermarks().watermarks;
    cfg.pcp = cfg
        .pcp
        .with_cpus(2)
        .with_batch(Some(BATCH as u32))
        .with_high_min(Some(HIGH_MIN as u32))
        .with_high_max(Some(62_500));
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
