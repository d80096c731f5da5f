//! Golden tests worked by hand from the kernel's rules (spec §8): for a given sequence of
//! operations, exactly which frame comes back. Each test's comment carries the derivation.

use zonealloc::{
    AllocRequest, FrameState, MigrateType, MobilityGrouping, Order, Pfn, WatermarkConfig, Zone,
    ZoneConfig, ZoneType,
};

const U: MigrateType = MigrateType::Unmovable;
const M: MigrateType = MigrateType::Movable;
const HA: MigrateType = MigrateType::HighAtomic;

fn o(n: u8) -> Order {
    Order::new(n).unwrap()
}

/// These goldens pin down the buddy allocator itself, so the per-CPU lists are off.
fn zone(frames: u64, cfg: ZoneConfig) -> Zone {
    let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(frames), cfg.without_pcp()).unwrap();
    z.add_free_range(Pfn(0), Pfn(frames)).unwrap();
    z.check().unwrap();
    z
}

/// A zone too small for the kernel to group by mobility (fewer than
/// `pageblock_nr_pages * MIGRATE_TYPES` pages above high) unless grouping is forced on.
fn grouped() -> ZoneConfig {
    ZoneConfig::without_watermarks().with_mobility_grouping(MobilityGrouping::Enabled)
}

fn list(z: &Zone, order: u8, mt: MigrateType) -> Vec<u64> {
    let mut buf = [Pfn(0); 64];
    let n = z.free_list(o(order), mt, &mut buf);
    buf[..n].iter().map(|p| p.0).collect()
}

#[test]
fn boot_frees_max_order_blocks_to_the_tail_in_ascending_order() {
    // __free_pages_memory: four order-10 blocks; split_large_buddy frees each as two order-9
    // pageblocks that merge; FPI_TO_TAIL keeps ascending order.
    let z = zone(4096, ZoneConfig::without_watermarks());
    assert_eq!(list(&z, 10, M), [0, 1024, 2048, 3072]);
    assert_eq!(z.nr_free()[10], 4);
}

#[test]
fn boot_of_an_unaligned_range_uses_the_largest_aligned_blocks() {
    // 3..20: order 0 at 3, order 2 at 4, order 3 at 8, order 2 at 16.
    let z = Zone::new(
        ZoneType::Normal,
        Pfn(0),
        Pfn(64),
        ZoneConfig::without_watermarks().without_pcp(),
    )
    .unwrap();
    z.add_free_range(Pfn(3), Pfn(20)).unwrap();
    let nr = z.nr_free();
    assert_eq!(&nr[..4], &[1, 0, 2, 1]);
    assert_eq!(list(&z, 2, M), [4, 16]);
    assert_eq!(z.managed_pages(), 17);
    z.check().unwrap();
}

#[test]
fn order0_allocations_from_a_fresh_zone_come_back_in_ascending_pfn_order() {
    // expand() keeps the lower half and puts upper halves at the heads, so successive order-0
    // allocations walk 0, 1, 2, ...
    let z = zone(4096, ZoneConfig::without_watermarks());
    let got: Vec<u64> = (0..16).map(|_| z.alloc(o(0), M).unwrap().0).collect();
    assert_eq!(got, (0..16).collect::<Vec<_>>());
}

#[test]
fn expand_puts_each_upper_half_on_its_order_list() {
    let z = zone(4096, ZoneConfig::without_watermarks());
    assert_eq!(z.alloc(o(0), M).unwrap(), Pfn(0));
    for k in 0..10u8 {
        assert_eq!(list(&z, k, M), [1u64 << k], "order {k}");
    }
    assert_eq!(list(&z, 10, M), [1024, 2048, 3072]);
}

/// Seed 003: with pfns 0..8 allocated, free 5 (its order-1 buddy block at 6 is allocated: head),
/// free 2 and 3 (they merge into an order-1 block at 2), then free 0: its buddy 1 is allocated,
/// but the order-1 buddy of the block at 0 is the free order-1 block at 2, so
/// `buddy_merge_likely` puts 0 at the tail.
fn tail_merge_setup(tail_merge: bool) -> Zone {
    let z = zone(
        4096,
        ZoneConfig::without_watermarks().with_tail_merge(tail_merge),
    );
    for p in 0..8 {
        assert_eq!(z.alloc(o(0), M).unwrap(), Pfn(p));
    }
    for p in [5, 2, 3, 0] {
        z.free(Pfn(p), o(0)).unwrap();
    }
    z.check().unwrap();
    z
}

#[test]
fn a_block_whose_higher_buddy_is_free_goes_to_the_tail() {
    let z = tail_merge_setup(true);
    assert_eq!(list(&z, 0, M), [5, 0]);
    assert_eq!(list(&z, 1, M), [2]);
    assert_eq!(z.stats().tail_placements, 1);
    // The next order-0 allocation takes 5, leaving 0 to merge when 1 comes back.
    assert_eq!(z.alloc(o(0), M).unwrap(), Pfn(5));
    z.free(Pfn(1), o(0)).unwrap();
    assert_eq!(list(&z, 2, M), [0]);
}

#[test]
fn with_tail_merge_off_the_block_goes_to_the_head() {
    let z = tail_merge_setup(false);
    assert_eq!(list(&z, 0, M), [0, 5]);
    assert_eq!(z.stats().tail_placements, 0);
    assert_eq!(z.alloc(o(0), M).unwrap(), Pfn(0));
}

#[test]
fn unmovable_fallback_claims_a_whole_max_order_block() {
    // __rmqueue_claim walks orders from the top: the head of the order-10 Movable list (pfn 0)
    // is >= pageblock_order, so both of its pageblocks become Unmovable.
    let z = zone(4096, ZoneConfig::without_watermarks());
    assert_eq!(z.alloc(o(0), U).unwrap(), Pfn(0));
    assert_eq!(z.pageblock_migratetype(Pfn(0)), Some(U));
    assert_eq!(z.pageblock_migratetype(Pfn(512)), Some(U));
    assert_eq!(z.pageblock_migratetype(Pfn(1024)), Some(M));
    assert_eq!(list(&z, 10, M), [1024, 2048, 3072]);
    assert_eq!(list(&z, 9, U), [512]);
    assert_eq!(z.alloc(o(0), M).unwrap(), Pfn(1024));
    assert_eq!(z.stats().fallbacks, 1);
}

#[test]
fn claim_below_pageblock_order_moves_the_free_pages_of_the_block() {
    // Zone of 1024 frames. Movable order 0 takes 0; Movable order 9 takes 512. Unmovable order 0:
    // claim reaches order 8 (256, Movable). The pageblock at 0 has 511 free pages >= 256, so it
    // is claimed: its free blocks move to Unmovable and __rmqueue_smallest returns pfn 1.
    let z = zone(1024, grouped());
    assert_eq!(z.alloc(o(0), M).unwrap(), Pfn(0));
    assert_eq!(z.alloc(o(9), M).unwrap(), Pfn(512));
    assert_eq!(z.alloc(o(0), U).unwrap(), Pfn(1));
    assert_eq!(z.pageblock_migratetype(Pfn(0)), Some(U));
    assert_eq!(z.stats().claims, 1);
    assert!(list(&z, 8, M).is_empty());
    assert_eq!(list(&z, 8, U), [256]);
    assert_eq!(list(&z, 1, U), [2]);
    z.check().unwrap();
}

#[test]
fn movable_fallback_for_small_orders_steals_without_retyping() {
    // Unmovable order 0 claims the whole order-10 block (both pageblocks Unmovable); then
    // Unmovable allocations of orders 9..4 leave only 1 (o0), 2 (o1), 4 (o2), 8 (o3). A Movable
    // order-0 request finds claims too low (order 3 < pageblock_order / 2 for Movable) and
    // steals the smallest block: pfn 1; the pageblock stays Unmovable.
    let z = zone(1024, grouped());
    assert_eq!(z.alloc(o(0), U).unwrap(), Pfn(0));
    for (k, want) in [(9, 512), (8, 256), (7, 128), (6, 64), (5, 32), (4, 16)] {
        assert_eq!(z.alloc(o(k), U).unwrap(), Pfn(want));
    }
    assert_eq!(z.alloc(o(0), M).unwrap(), Pfn(1));
    assert_eq!(z.stats().steals, 1);
    assert_eq!(z.pageblock_migratetype(Pfn(0)), Some(U));
    // The stolen block is remembered as Movable (it counts as movable in later claims).
    assert_eq!(z.frame_state(Pfn(1)), Some(FrameState::Allocated(o(0), M)));
    z.check().unwrap();
}

#[test]
fn high_order_atomic_allocation_reserves_a_highatomic_pageblock() {
    // 65536 frames, fixed marks min 66000 / low 70000: the fast path (low) and a normal slow
    // path (min) fail; the atomic slow path (min 66000 - 1/2 - 1/4 = 24750, HighAtomic flag for
    // order > 0) succeeds by
    // claiming the first order-10 block, then reserve_highatomic_pageblock converts pageblock 0
    // (cap ALIGN(65536/100, 512) = 1024 pages).
    let cfg = ZoneConfig::new().with_watermarks(WatermarkConfig::Fixed {
        min: 66_000,
        low: 70_000,
        high: 70_000,
    });
    let z = zone(65_536, cfg);
    // A normal request fails: below the low and min marks.
    assert!(z.alloc(o(1), U).is_err());
    let p = z
        .alloc_with(o(1), AllocRequest::atomic(MigrateType::Unmovable))
        .unwrap();
    assert_eq!(p, Pfn(0));
    assert_eq!(z.reserved_highatomic(), 512);
    assert_eq!(z.pageblock_migratetype(Pfn(0)), Some(HA));
    assert_eq!(z.pageblock_migratetype(Pfn(512)), Some(U));
    // Freeing it rebuilds an order-9 HighAtomic block that must not merge with the Unmovable
    // order-9 block at 512 (incompatible types at >= pageblock order).
    z.free(p, o(1)).unwrap();
    assert_eq!(list(&z, 9, HA), [0]);
    assert_eq!(list(&z, 9, U), [512]);
    z.check().unwrap();
}
