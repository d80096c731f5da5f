//! Every typed error of the public API, one test per case, each named for the property it
//! checks. Each asserts the exact variant and its fields (frames, orders, block head), and that
//! the call left the allocator exactly as it was: `check()` passes and the free counts
//! (`nr_free`, `free_pages`, `managed_pages`) and the state of the frame involved are unchanged.
//! The last tests pin the watermarks of a small zone (spec §4.4, worked by hand) and the depth
//! to which normal, atomic and no-watermark requests may drain it (spec §5, §8.7).

use zonealloc::{
    AllocError, AllocRequest, ConfigError, CpuId, FrameMeta, FrameState, FreeError, MigrateType,
    MobilityGrouping, Node, Order, Pfn, RangeError, WatermarkConfig, Watermarks, Zone, ZoneConfig,
    ZoneType,
};

const U: MigrateType = MigrateType::Unmovable;
const M: MigrateType = MigrateType::Movable;
const R: MigrateType = MigrateType::Reclaimable;

fn o(n: u8) -> Order {
    Order::new(n).unwrap()
}

/// A Normal zone spanning `start..end` with zero watermarks and mobility grouping on, nothing
/// added yet.
fn empty_zone(start: u64, end: u64) -> Zone {
    let cfg = ZoneConfig::without_watermarks()
        .without_pcp()
        .with_mobility_grouping(MobilityGrouping::Enabled);
    Zone::new(ZoneType::Normal, Pfn(start), Pfn(end), cfg).unwrap()
}

/// `empty_zone(0, frames)` with all of it added.
fn zone(frames: u64) -> Zone {
    let z = empty_zone(0, frames);
    assert_eq!(z.add_free_range(Pfn(0), Pfn(frames)), Ok(frames));
    z.check().unwrap();
    z
}

/// What an erroring call must leave untouched.
#[derive(Debug, PartialEq, Eq)]
struct Counts {
    nr_free: Vec<u64>,
    free_pages: u64,
    managed_pages: u64,
}

fn counts(z: &Zone) -> Counts {
    Counts {
        nr_free: z.nr_free().to_vec(),
        free_pages: z.free_pages(),
        managed_pages: z.managed_pages(),
    }
}

/// Runs a failing `free` and asserts its error, that the frame's state and the zone's counts
/// are unchanged, and that the invariants still hold.
fn assert_free_fails(z: &Zone, pfn: Pfn, order: Order, expected: FreeError) {
    let before = counts(z);
    let state = z.frame_state(pfn);
    assert_eq!(z.free(pfn, order), Err(expected));
    assert_eq!(counts(z), before, "a refused free changed the zone");
    assert_eq!(
        z.frame_state(pfn),
        state,
        "a refused free changed the frame"
    );
    z.check().unwrap();
}

/// Runs a failing `add_free_range` and asserts its error and that nothing was added.
fn assert_add_fails(z: &Zone, start: Pfn, end: Pfn, expected: RangeError) {
    let before = counts(z);
    let states: Vec<_> = (start.0..end.0).map(|p| z.frame_state(Pfn(p))).collect();
    let wm = z.watermarks();
    assert_eq!(z.add_free_range(start, end), Err(expected));
    assert_eq!(
        counts(z),
        before,
        "a refused add_free_range changed the zone"
    );
    let after: Vec<_> = (start.0..end.0).map(|p| z.frame_state(Pfn(p))).collect();
    assert_eq!(
        after, states,
        "a refused add_free_range changed frame states"
    );
    assert_eq!(z.watermarks(), wm);
    z.check().unwrap();
}

// ---------------------------------------------------------------------------------------------
// FreeError
// ---------------------------------------------------------------------------------------------

#[test]
fn double_free_of_a_free_buddy_head_is_rejected_and_changes_nothing() {
    let z = zone(1024);
    let a = z.alloc(o(3), M).unwrap();
    let b = z.alloc(o(3), M).unwrap();
    // Keep `b` allocated so that `a` cannot merge: `a` stays a free order-3 head.
    assert_eq!(
        Pfn(a.0 ^ 8),
        b,
        "second order-3 block is the first one's buddy"
    );
    z.free(a, o(3)).unwrap();
    assert_eq!(z.frame_state(a), Some(FrameState::Buddy(o(3))));
    assert_free_fails(&z, a, o(3), FreeError::DoubleFree { pfn: a });
    // Any order the frame is aligned to is still a double free, not a wrong order.
    assert_free_fails(&z, a, o(0), FreeError::DoubleFree { pfn: a });
    assert_free_fails(&z, a, o(2), FreeError::DoubleFree { pfn: a });
}

#[test]
fn double_free_after_merge_via_a_tail_frame_is_rejected_and_changes_nothing() {
    let z = zone(1024);
    let initial = counts(&z);
    let a = z.alloc(o(3), M).unwrap();
    let b = z.alloc(o(3), M).unwrap();
    assert_eq!(Pfn(a.0 ^ 8), b);
    z.free(b, o(3)).unwrap();
    z.free(a, o(3)).unwrap();
    // Both merged back into the zone's single order-10 block: the higher one is now a tail.
    assert_eq!(counts(&z), initial);
    let (lo, hi) = (a.min(b), a.max(b));
    assert_eq!(z.frame_state(hi), Some(FrameState::Tail));
    assert_free_fails(&z, hi, o(3), FreeError::DoubleFree { pfn: hi });
    assert_free_fails(&z, lo, o(3), FreeError::DoubleFree { pfn: lo });
    // A tail in the middle of the free block, with any aligned order.
    assert_free_fails(
        &z,
        Pfn(lo.0 + 5),
        o(0),
        FreeError::DoubleFree { pfn: Pfn(lo.0 + 5) },
    );
    assert_free_fails(&z, Pfn(512), o(9), FreeError::DoubleFree { pfn: Pfn(512) });
}

#[test]
fn double_free_of_a_block_on_a_per_cpu_list_is_rejected_and_changes_nothing() {
    // The one test here with per-CPU lists on (one CPU): a freed order-0 and order-3 block sit
    // on CPU 0's lists, not in the buddy, and freeing them again is still a double free.
    let cfg = ZoneConfig::without_watermarks()
        .with_cpus(1)
        .with_mobility_grouping(MobilityGrouping::Enabled);
    let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(1 << 16), cfg).unwrap();
    z.add_free_range(Pfn(0), Pfn(1 << 16)).unwrap();
    let cpu = CpuId(0);
    let a = z
        .alloc_with(o(0), AllocRequest::new(M).on_cpu(cpu))
        .unwrap();
    let b = z
        .alloc_with(o(3), AllocRequest::new(M).on_cpu(cpu))
        .unwrap();
    z.free_on(cpu, a, o(0)).unwrap();
    z.free_on(cpu, b, o(3)).unwrap();
    assert_eq!(z.frame_state(a), Some(FrameState::Pcp(o(0))));
    assert_eq!(z.frame_state(b), Some(FrameState::Pcp(o(3))));
    let on_list = z.pcp_info(cpu).count;
    let cases = [
        (a, o(0), FreeError::DoubleFree { pfn: a }),
        (b, o(3), FreeError::DoubleFree { pfn: b }),
        // Not WrongOrder: the block is free, whatever order is given.
        (b, o(1), FreeError::DoubleFree { pfn: b }),
        // A tail of the listed order-3 block.
        (
            Pfn(b.0 + 5),
            o(0),
            FreeError::DoubleFree { pfn: Pfn(b.0 + 5) },
        ),
    ];
    for (pfn, order, expected) in cases {
        assert_free_fails(&z, pfn, order, expected);
        assert_eq!(z.free_on(cpu, pfn, order), Err(expected));
        assert_eq!(z.pcp_info(cpu).count, on_list);
    }
    z.check().unwrap();
}

#[test]
fn free_of_a_tail_frame_is_not_block_head_and_names_the_head() {
    let z = zone(1024);
    let head = z.alloc(o(3), U).unwrap();
    for (off, order) in [(1, 0), (5, 0), (7, 0), (2, 1), (6, 1), (4, 2)] {
        let pfn = Pfn(head.0 + off);
        assert_eq!(z.frame_state(pfn), Some(FrameState::Tail));
        assert_free_fails(&z, pfn, o(order), FreeError::NotBlockHead { pfn, head });
    }
    // The block itself is still intact and frees normally.
    assert_eq!(z.frame_state(head), Some(FrameState::Allocated(o(3), U)));
    z.free(head, o(3)).unwrap();
    assert_eq!(z.free_pages(), 1024);
}

#[test]
fn free_with_the_wrong_order_reports_given_and_allocated_orders() {
    let z = zone(1024);
    let big = z.alloc(o(4), R).unwrap();
    assert!(big.is_aligned(o(4)));
    for given in [0, 1, 2, 3] {
        assert_free_fails(
            &z,
            big,
            o(given),
            FreeError::WrongOrder {
                pfn: big,
                given: o(given),
                allocated: o(4),
            },
        );
    }
    // A larger order the head happens to be aligned to: still WrongOrder, not a free of
    // someone else's frames.
    assert_eq!(
        big,
        Pfn(0),
        "first block of a fresh zone starts at its first frame"
    );
    assert_free_fails(
        &z,
        big,
        o(6),
        FreeError::WrongOrder {
            pfn: big,
            given: o(6),
            allocated: o(4),
        },
    );
    z.free(big, o(4)).unwrap();
    z.check().unwrap();
}

#[test]
fn free_outside_the_span_is_out_of_zone() {
    let z = empty_zone(512, 2048);
    assert_eq!(z.add_free_range(Pfn(512), Pfn(2048)), Ok(1536));
    let _held = z.alloc(o(0), M).unwrap();
    for pfn in [0, 100, 511, 2048, 2049, 1 << 40, u64::MAX] {
        assert_free_fails(&z, Pfn(pfn), o(0), FreeError::OutOfZone { pfn: Pfn(pfn) });
    }
    assert_eq!(z.frame_state(Pfn(511)), None);
    assert_eq!(z.frame_state(Pfn(2048)), None);
}

#[test]
fn free_of_a_frame_in_a_hole_is_not_managed() {
    let z = empty_zone(0, 2048);
    assert_eq!(z.add_free_range(Pfn(0), Pfn(512)), Ok(512));
    assert_eq!(z.add_free_range(Pfn(1024), Pfn(2048)), Ok(1024));
    for (pfn, order) in [(512, 0), (600, 0), (1023, 0), (512, 9), (768, 8)] {
        assert_eq!(z.frame_state(Pfn(pfn)), Some(FrameState::Absent));
        assert_free_fails(
            &z,
            Pfn(pfn),
            o(order),
            FreeError::NotManaged { pfn: Pfn(pfn) },
        );
    }
}

#[test]
fn free_of_a_misaligned_frame_is_rejected_before_looking_at_it() {
    let z = zone(1024);
    let a = z.alloc(o(3), M).unwrap();
    for (off, order) in [(1, 1), (2, 2), (4, 3), (3, 3), (8, 4)] {
        let pfn = Pfn(a.0 + off);
        assert_free_fails(
            &z,
            pfn,
            o(order),
            FreeError::Misaligned {
                pfn,
                order: o(order),
            },
        );
    }
    // Even for a free frame or a hole, alignment is checked first.
    assert_free_fails(
        &z,
        Pfn(1001),
        o(2),
        FreeError::Misaligned {
            pfn: Pfn(1001),
            order: o(2),
        },
    );
}

#[test]
fn free_with_an_order_above_max_order_is_order_too_large() {
    let z = zone(1024);
    let a = z.alloc(o(10), M).unwrap();
    assert_eq!(a, Pfn(0));
    for order in [11, 12, 20] {
        assert_free_fails(
            &z,
            a,
            o(order),
            FreeError::OrderTooLarge {
                pfn: a,
                order: o(order),
            },
        );
    }
    // The order check comes first, even outside the zone.
    assert_free_fails(
        &z,
        Pfn(1 << 30),
        o(11),
        FreeError::OrderTooLarge {
            pfn: Pfn(1 << 30),
            order: o(11),
        },
    );
    z.free(a, o(10)).unwrap();
}

// ---------------------------------------------------------------------------------------------
// AllocError
// ---------------------------------------------------------------------------------------------

#[test]
fn alloc_with_an_order_above_max_order_is_order_too_large() {
    let cfg = ZoneConfig::without_watermarks()
        .without_pcp()
        .with_max_order(6)
        .with_pageblock_order(4);
    let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(256), cfg).unwrap();
    z.add_free_range(Pfn(0), Pfn(256)).unwrap();
    let before = counts(&z);
    for order in [7, 10, 20] {
        assert_eq!(
            z.alloc(o(order), M),
            Err(AllocError::OrderTooLarge {
                order: o(order),
                max: o(6)
            })
        );
    }
    // The order check comes before the migratetype check.
    assert_eq!(
        z.alloc(o(7), MigrateType::HighAtomic),
        Err(AllocError::OrderTooLarge {
            order: o(7),
            max: o(6)
        })
    );
    assert_eq!(counts(&z), before);
    z.check().unwrap();
    assert_eq!(z.alloc(o(6), M), Ok(Pfn(0)));
}

#[test]
fn exhausted_zone_reports_out_of_memory_with_order_and_migratetype() {
    let z = zone(1024);
    assert_eq!(z.alloc(o(10), U), Ok(Pfn(0)));
    assert_eq!(z.free_pages(), 0);
    let before = counts(&z);
    for (order, mt) in [(0, U), (0, M), (0, R), (3, M), (10, R)] {
        assert_eq!(
            z.alloc(o(order), mt),
            Err(AllocError::OutOfMemory {
                order: o(order),
                migratetype: mt
            })
        );
        assert_eq!(
            z.alloc_with(o(order), AllocRequest::atomic(mt).no_watermarks()),
            Err(AllocError::OutOfMemory {
                order: o(order),
                migratetype: mt
            })
        );
    }
    assert_eq!(counts(&z), before);
    z.check().unwrap();
}

#[test]
fn fragmented_zone_reports_out_of_memory_for_order_one_while_pages_are_free() {
    let z = zone(64);
    let pages: Vec<Pfn> = (0..64).map(|_| z.alloc(o(0), M).unwrap()).collect();
    assert_eq!(z.free_pages(), 0);
    // Free every even frame: 32 free pages, no two of them buddies.
    for p in pages.iter().filter(|p| p.0 % 2 == 0) {
        z.free(*p, o(0)).unwrap();
    }
    assert_eq!(z.free_pages(), 32);
    assert_eq!(z.nr_free()[0], 32);
    let before = counts(&z);
    assert_eq!(
        z.alloc(o(1), R),
        Err(AllocError::OutOfMemory {
            order: o(1),
            migratetype: R
        })
    );
    assert_eq!(counts(&z), before);
    z.check().unwrap();
    // Order 0 still succeeds.
    let p = z.alloc(o(0), R).unwrap();
    assert_eq!(p.0 % 2, 0);
    assert_eq!(z.free_pages(), 31);
}

#[test]
fn highatomic_and_isolate_cannot_be_requested() {
    let z = zone(1024);
    let before = counts(&z);
    for mt in [MigrateType::HighAtomic, MigrateType::Isolate] {
        for order in [0, 3, 10] {
            assert_eq!(
                z.alloc(o(order), mt),
                Err(AllocError::InvalidMigrateType(mt))
            );
            assert_eq!(
                z.alloc_with(o(order), AllocRequest::atomic(mt)),
                Err(AllocError::InvalidMigrateType(mt))
            );
            assert_eq!(
                z.alloc_with(o(order), AllocRequest::new(mt).no_watermarks()),
                Err(AllocError::InvalidMigrateType(mt))
            );
        }
    }
    assert_eq!(counts(&z), before);
    assert_eq!(z.stats().allocs.iter().sum::<u64>(), 0);
    z.check().unwrap();
}

#[test]
fn request_limited_below_every_zone_of_a_node_is_no_zone() {
    let normal = Zone::new(
        ZoneType::Normal,
        Pfn(0),
        Pfn(1024),
        ZoneConfig::without_watermarks().without_pcp(),
    )
    .unwrap();
    let node = Node::new(0, [normal]).unwrap();
    node.add_free_range(Pfn(0), Pfn(1024)).unwrap();
    for limit in [ZoneType::Dma, ZoneType::Dma32] {
        assert_eq!(
            node.alloc_with(o(0), AllocRequest::new(M).zone_limit(limit)),
            Err(AllocError::NoZone)
        );
    }
    assert_eq!(node.zone(ZoneType::Normal).unwrap().free_pages(), 1024);
    node.check().unwrap();
}

#[test]
fn node_free_outside_every_zone_is_out_of_zone() {
    let cfg = ZoneConfig::without_watermarks().without_pcp();
    let dma32 = Zone::new(ZoneType::Dma32, Pfn(0), Pfn(1024), cfg).unwrap();
    let normal = Zone::new(ZoneType::Normal, Pfn(2048), Pfn(3072), cfg).unwrap();
    let node = Node::new(0, [dma32, normal]).unwrap();
    assert_eq!(
        node.add_free_range(Pfn(0), Pfn(3072)),
        Err(RangeError::OutOfZone { pfn: Pfn(1024) })
    );
    // Nothing was added, not even the part inside DMA32.
    assert_eq!(node.zone(ZoneType::Dma32).unwrap().managed_pages(), 0);
    node.add_free_range(Pfn(0), Pfn(1024)).unwrap();
    node.add_free_range(Pfn(2048), Pfn(3072)).unwrap();
    for pfn in [1024, 1500, 2047, 3072] {
        assert_eq!(
            node.free(Pfn(pfn), o(0)),
            Err(FreeError::OutOfZone { pfn: Pfn(pfn) })
        );
    }
    node.check().unwrap();
}

// ---------------------------------------------------------------------------------------------
// RangeError
// ---------------------------------------------------------------------------------------------

#[test]
fn empty_range_is_rejected_and_adds_nothing() {
    let z = empty_zone(0, 1024);
    for (s, e) in [(10, 10), (20, 10), (0, 0), (1023, 5)] {
        assert_add_fails(
            &z,
            Pfn(s),
            Pfn(e),
            RangeError::Empty {
                start: Pfn(s),
                end: Pfn(e),
            },
        );
    }
    assert_eq!(z.managed_pages(), 0);
}

#[test]
fn range_outside_the_span_is_rejected_and_adds_nothing() {
    let z = empty_zone(512, 2048);
    // Starts before the span: the first frame outside is the start.
    assert_add_fails(
        &z,
        Pfn(100),
        Pfn(600),
        RangeError::OutOfZone { pfn: Pfn(100) },
    );
    // Ends after the span: the first frame outside is the span's end.
    assert_add_fails(
        &z,
        Pfn(1000),
        Pfn(3000),
        RangeError::OutOfZone { pfn: Pfn(2048) },
    );
    assert_add_fails(
        &z,
        Pfn(2048),
        Pfn(2049),
        RangeError::OutOfZone { pfn: Pfn(2048) },
    );
    assert_eq!(z.managed_pages(), 0);
    assert_eq!(z.frame_state(Pfn(1000)), Some(FrameState::Absent));
    assert_eq!(z.add_free_range(Pfn(512), Pfn(2048)), Ok(1536));
    z.check().unwrap();
}

#[test]
fn range_added_twice_overlaps_and_adds_nothing() {
    let z = empty_zone(0, 2048);
    assert_eq!(z.add_free_range(Pfn(0), Pfn(1024)), Ok(1024));
    assert_add_fails(&z, Pfn(0), Pfn(1024), RangeError::Overlap { pfn: Pfn(0) });
    assert_add_fails(
        &z,
        Pfn(1023),
        Pfn(1025),
        RangeError::Overlap { pfn: Pfn(1023) },
    );
    assert_eq!(z.managed_pages(), 1024);
    assert_eq!(z.free_pages(), 1024);
}

#[test]
fn range_overlapping_a_live_range_names_the_first_managed_frame_and_adds_nothing() {
    let z = empty_zone(0, 2048);
    assert_eq!(z.add_free_range(Pfn(512), Pfn(1024)), Ok(512));
    // Frames 400..512 are absent, 512 is the first managed one: none of 400..600 is added.
    assert_add_fails(
        &z,
        Pfn(400),
        Pfn(600),
        RangeError::Overlap { pfn: Pfn(512) },
    );
    assert_eq!(z.frame_state(Pfn(400)), Some(FrameState::Absent));
    assert_eq!(z.frame_state(Pfn(511)), Some(FrameState::Absent));
    // Overlapping allocated frames is an overlap too.
    let a = z.alloc(o(9), M).unwrap();
    assert_eq!(a, Pfn(512));
    assert_add_fails(&z, Pfn(0), Pfn(2048), RangeError::Overlap { pfn: Pfn(512) });
    assert_add_fails(
        &z,
        Pfn(1000),
        Pfn(1100),
        RangeError::Overlap { pfn: Pfn(1000) },
    );
    assert_eq!(z.managed_pages(), 512);
    // The absent neighbours can still be added afterwards.
    assert_eq!(z.add_free_range(Pfn(0), Pfn(512)), Ok(512));
    assert_eq!(z.add_free_range(Pfn(1024), Pfn(2048)), Ok(1024));
    z.free(a, o(9)).unwrap();
    assert_eq!(z.nr_free()[10], 2);
    z.check().unwrap();
}

// ---------------------------------------------------------------------------------------------
// ConfigError
// ---------------------------------------------------------------------------------------------

#[test]
fn empty_or_oversized_span_is_bad_span() {
    let cfg = ZoneConfig::without_watermarks().without_pcp();
    for (s, e) in [(10, 10), (20, 10), (0, 0)] {
        assert_eq!(
            Zone::new(ZoneType::Normal, Pfn(s), Pfn(e), cfg).unwrap_err(),
            ConfigError::BadSpan {
                start: Pfn(s),
                end: Pfn(e)
            }
        );
    }
    // 2^32 frames need more entries than 32-bit frame indices allow.
    assert_eq!(
        Zone::new(ZoneType::Normal, Pfn(0), Pfn(1 << 32), cfg).unwrap_err(),
        ConfigError::BadSpan {
            start: Pfn(0),
            end: Pfn(1 << 32)
        }
    );
}

#[test]
fn invalid_geometry_and_watermarks_are_rejected_by_zone_new() {
    let base = ZoneConfig::without_watermarks().without_pcp();
    let cases = [
        (
            base.with_max_order(21).with_pageblock_order(9),
            ConfigError::MaxOrderTooLarge(21),
        ),
        (
            base.with_max_order(5).with_pageblock_order(6),
            ConfigError::PageblockOrderTooLarge {
                pageblock_order: 6,
                max_order: 5,
            },
        ),
        (base.with_page_size(256), ConfigError::BadPageSize(256)),
        (base.with_page_size(6000), ConfigError::BadPageSize(6000)),
        (
            base.with_watermarks(WatermarkConfig::Fixed {
                min: 10,
                low: 20,
                high: 15,
            }),
            ConfigError::BadWatermarks,
        ),
    ];
    for (cfg, expected) in cases {
        assert_eq!(
            Zone::new(ZoneType::Normal, Pfn(0), Pfn(1024), cfg).unwrap_err(),
            expected
        );
    }
}

#[test]
fn table_smaller_than_table_entries_is_rejected() {
    let cfg = ZoneConfig::without_watermarks().without_pcp();
    // The span 100..1000 rounded out to 512-frame pageblocks is 0..1024.
    let needed = Zone::table_entries(Pfn(100), Pfn(1000), &cfg);
    assert_eq!(needed, 1024);
    let small: &'static [FrameMeta] = Box::leak(
        (0..needed - 1)
            .map(|_| FrameMeta::new())
            .collect::<Box<[_]>>(),
    );
    assert_eq!(
        Zone::with_table(ZoneType::Normal, Pfn(100), Pfn(1000), cfg, small).unwrap_err(),
        ConfigError::TableTooSmall {
            needed: 1024,
            provided: 1023
        }
    );
    // Exactly table_entries is enough, and the zone works.
    let exact: &'static [FrameMeta] =
        Box::leak((0..needed).map(|_| FrameMeta::new()).collect::<Box<[_]>>());
    let z = Zone::with_table(ZoneType::Normal, Pfn(100), Pfn(1000), cfg, exact).unwrap();
    assert_eq!(z.add_free_range(Pfn(100), Pfn(1000)), Ok(900));
    let p = z.alloc(o(5), M).unwrap();
    assert!(p.is_aligned(o(5)) && p.0 >= 100 && p.0 + 32 <= 1000);
    z.free(p, o(5)).unwrap();
    assert_eq!(z.free_pages(), 900);
    z.check().unwrap();
}

#[test]
fn node_zones_out_of_order_or_overlapping_are_bad_zone_layout() {
    let cfg = ZoneConfig::without_watermarks().without_pcp();
    let mk = |t, s, e| Zone::new(t, Pfn(s), Pfn(e), cfg).unwrap();
    // Descending zone types.
    assert_eq!(
        Node::new(
            0,
            [
                mk(ZoneType::Normal, 1024, 2048),
                mk(ZoneType::Dma32, 0, 1024)
            ]
        )
        .unwrap_err(),
        ConfigError::BadZoneLayout
    );
    // Overlapping spans.
    assert_eq!(
        Node::new(
            0,
            [
                mk(ZoneType::Dma32, 0, 1024),
                mk(ZoneType::Normal, 1000, 2048)
            ]
        )
        .unwrap_err(),
        ConfigError::BadZoneLayout
    );
    // Two zones of one type.
    assert_eq!(
        Node::new(
            0,
            [
                mk(ZoneType::Normal, 0, 1024),
                mk(ZoneType::Normal, 1024, 2048)
            ]
        )
        .unwrap_err(),
        ConfigError::BadZoneLayout
    );
    assert!(Node::new(
        0,
        [
            mk(ZoneType::Dma32, 0, 1024),
            mk(ZoneType::Normal, 1024, 2048)
        ]
    )
    .is_ok());
}

// ---------------------------------------------------------------------------------------------
// Watermarks
// ---------------------------------------------------------------------------------------------

/// A Normal zone of 4096 pages of 4 KiB with the default (Auto) watermarks, all added.
fn default_zone_4096() -> Zone {
    let z = Zone::new(
        ZoneType::Normal,
        Pfn(0),
        Pfn(4096),
        ZoneConfig::default().without_pcp(),
    )
    .unwrap();
    z.add_free_range(Pfn(0), Pfn(4096)).unwrap();
    z
}

/// Spec §4.4 for one lowmem zone of 4096 managed 4 KiB pages:
/// - `lowmem_kbytes = 4096 * 4 = 16384`
/// - `min_free_kbytes = clamp(int_sqrt(16384 * 16), 128, 262144) = clamp(512, ..) = 512`
/// - `pages_min = 512 >> (12 - 10) = 128`; `tmp = 128 * 4096 / 4096 = 128` so `MIN = 128`
/// - `tmp = max(128 >> 2, mult_frac(4096, 10, 10000)) = max(32, 4) = 32`
/// - `LOW = 128 + 32 = 160`, `HIGH = 160 + 32 = 192`, `PROMO = 192 + 32 = 224`, boost 0.
const WM_4096: Watermarks = Watermarks {
    min: 128,
    low: 160,
    high: 192,
    promo: 224,
    boost: 0,
};

#[test]
fn watermarks_of_a_4096_page_zone_follow_the_spec_formula() {
    let z = default_zone_4096();
    assert_eq!(z.watermarks(), WM_4096);
    // Before anything is managed the marks are zero; they are recomputed on every add.
    let z2 = Zone::new(
        ZoneType::Normal,
        Pfn(0),
        Pfn(4096),
        ZoneConfig::default().without_pcp(),
    )
    .unwrap();
    assert_eq!(z2.watermarks(), Watermarks::default());
    z2.add_free_range(Pfn(0), Pfn(2048)).unwrap();
    z2.add_free_range(Pfn(2048), Pfn(4096)).unwrap();
    assert_eq!(z2.watermarks(), WM_4096);
    // Fixed marks are taken as given, promo = high + (high - low).
    let fixed = ZoneConfig::default()
        .without_pcp()
        .with_watermarks(WatermarkConfig::Fixed {
            min: 10,
            low: 20,
            high: 40,
        });
    let z3 = Zone::new(ZoneType::Normal, Pfn(0), Pfn(4096), fixed).unwrap();
    z3.add_free_range(Pfn(0), Pfn(4096)).unwrap();
    assert_eq!(
        z3.watermarks(),
        Watermarks {
            min: 10,
            low: 20,
            high: 40,
            promo: 60,
            boost: 0
        }
    );
}

/// Allocates order-0 blocks with `req` until the first failure; returns how many succeeded and
/// the error.
fn drain(z: &Zone, req: AllocRequest) -> (u64, AllocError) {
    let mut n = 0;
    loop {
        match z.alloc_with(o(0), req) {
            Ok(p) => {
                assert_eq!(z.frame_state(p), Some(FrameState::Allocated(o(0), M)));
                n += 1;
            }
            Err(e) => return (n, e),
        }
    }
}

const OOM0: AllocError = AllocError::OutOfMemory {
    order: Order::ZERO,
    migratetype: M,
};

#[test]
fn order0_allocations_stop_exactly_at_the_min_watermark_not_at_low() {
    let z = default_zone_4096();
    // Movable requests on an all-Movable zone: no fallback, so no watermark boost.
    let (n, err) = drain(&z, AllocRequest::new(M));
    assert_eq!(err, OOM0);
    // `__zone_watermark_ok` fails when `free <= min`: the last success leaves exactly MIN
    // pages free, never fewer.
    assert_eq!(z.free_pages(), WM_4096.min);
    assert_eq!(n, 4096 - WM_4096.min);
    assert_eq!(z.watermarks(), WM_4096, "no boost happened");
    // The fast path alone (LOW) would have stopped at 160 free pages; the 32 allocations
    // between LOW and MIN came from the slow path.
    assert!(z.free_pages() < WM_4096.low);
    assert_eq!(z.stats().allocs[0], 4096 - WM_4096.min);
    z.check().unwrap();
}

#[test]
fn no_watermarks_request_still_succeeds_below_min_and_can_empty_the_zone() {
    let z = default_zone_4096();
    let (n, err) = drain(&z, AllocRequest::new(M));
    assert_eq!((n, err), (4096 - 128, OOM0));
    let (n, err) = drain(&z, AllocRequest::new(M).no_watermarks());
    assert_eq!(err, OOM0);
    assert_eq!(n, 128);
    assert_eq!(z.free_pages(), 0);
    z.check().unwrap();
}

#[test]
fn atomic_request_dips_into_part_of_the_min_reserve() {
    // ALLOC_MIN_RESERVE | ALLOC_NON_BLOCK (spec §8.7): min -= min/2 -> 64; min -= min/4 -> 48.
    // Atomic requests therefore succeed while free > 48.
    let atomic_floor = 128 - 64 - 16;
    let z = default_zone_4096();
    let (n, err) = drain(&z, AllocRequest::atomic(M));
    assert_eq!(err, OOM0);
    assert_eq!(z.free_pages(), atomic_floor);
    assert_eq!(n, 4096 - atomic_floor);

    // After normal requests stop at MIN, atomic ones get exactly the 80 pages between.
    let z = default_zone_4096();
    let (normal, _) = drain(&z, AllocRequest::new(M));
    let (atomic, err) = drain(&z, AllocRequest::atomic(M));
    assert_eq!(err, OOM0);
    assert_eq!(normal, 4096 - 128);
    assert_eq!(atomic, 128 - atomic_floor);
    // A normal request still fails there, and no_watermarks takes the rest.
    assert_eq!(z.alloc(o(0), M), Err(OOM0));
    let (rest, _) = drain(&z, AllocRequest::new(M).no_watermarks());
    assert_eq!(rest, atomic_floor);
    assert_eq!(z.free_pages(), 0);
    z.check().unwrap();
}
