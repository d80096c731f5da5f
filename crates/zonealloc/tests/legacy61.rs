//! 6.1's fallback (`FallbackRule::Legacy`: `__rmqueue_fallback`, `steal_suitable_fallback`) and
//! 6.1's drain migratetype (`DrainMigratetype::AtFree`: `get_pcppage_migratetype`), each
//! against the rule that replaced it, on zone states where the two differ. Each test's comment
//! carries the hand trace of the 6.1 code (Debian 6.1.192 `mm/page_alloc.c`).

use zonealloc::{
    AllocRequest, CpuId, DrainMigratetype, FallbackRule, KernelVersion, MigrateType,
    MobilityGrouping, Order, PcpConfig, Pfn, Zone, ZoneConfig, ZoneEvent, ZoneType,
};

const U: MigrateType = MigrateType::Unmovable;
const M: MigrateType = MigrateType::Movable;

fn o(n: u8) -> Order {
    Order::new(n).unwrap()
}

/// A buddy-only zone of 1024 frames (one order-10 block, pageblocks at 0 and 512), grouped by
/// mobility, no watermarks (so no watermark boost either), under `rule`.
fn buddy_zone(rule: FallbackRule) -> Zone {
    let cfg = ZoneConfig::without_watermarks()
        .with_mobility_grouping(MobilityGrouping::Enabled)
        .with_fallback(rule)
        .without_pcp();
    let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(1024), cfg).unwrap();
    z.add_free_range(Pfn(0), Pfn(1024)).unwrap();
    z.record_events(true);
    z
}

fn list(z: &Zone, order: u8, mt: MigrateType) -> Vec<u64> {
    let mut buf = [Pfn(0); 64];
    let n = z.free_list(o(order), mt, &mut buf);
    buf[..n].iter().map(|p| p.0).collect()
}

/// The extfrag events recorded since the last call: (pfn, alloc order, fallback order,
/// alloc type, fallback type, change_ownership).
fn extfrag(z: &Zone) -> Vec<(u64, u8, u8, MigrateType, MigrateType, bool)> {
    let mut v = Vec::new();
    z.take_events(&mut v);
    v.into_iter()
        .filter_map(|e| match e {
            ZoneEvent::AllocExtfrag {
                pfn,
                alloc_order,
                fallback_order,
                alloc_migratetype,
                fallback_migratetype,
                change_ownership,
            } => Some((
                pfn.0,
                alloc_order.get(),
                fallback_order.get(),
                alloc_migratetype,
                fallback_migratetype,
                change_ownership,
            )),
            _ => None,
        })
        .collect()
}

/// Both pageblocks Unmovable, free: 1 (order 0, pageblock 0) and 960 (order 6, pageblock 512,
/// whose other 448 frames are allocated Unmovable).
fn unmovable_with_two_holes(rule: FallbackRule) -> Zone {
    let z = buddy_zone(rule);
    // Unmovable order 0: every rule takes the order-10 block at 0 (its pageblocks become
    // Unmovable) and splits it: 1 (o0), 2 (o1), ..., 256 (o8), 512 (o9) on Unmovable lists.
    assert_eq!(z.alloc(o(0), U).unwrap(), Pfn(0));
    // Own-list allocations: 256, 128, ..., 2 exactly; then 512 (o9) splits for o8 (512),
    // o7 (768) and o6 (896), leaving 960 (o6).
    for (k, want) in [
        (8, 256),
        (7, 128),
        (6, 64),
        (5, 32),
        (4, 16),
        (3, 8),
        (2, 4),
        (1, 2),
        (8, 512),
        (7, 768),
        (6, 896),
    ] {
        assert_eq!(z.alloc(o(k), U).unwrap(), Pfn(want), "order {k}");
    }
    assert_eq!((list(&z, 0, U), list(&z, 6, U)), (vec![1], vec![960]));
    extfrag(&z);
    z.check().unwrap();
    z
}

#[test]
fn legacy_movable_fallback_takes_the_largest_block_and_moves_its_pageblock() {
    // 6.1, Movable order 0 (the Normal zone's first pass has ALLOC_NOFRAGMENT: min_order 9,
    // nothing; the retry without it):
    // __rmqueue_fallback from order 10 down: order 6, Unmovable list: 960; can_steal_fallback
    // (6 >= pageblock_order / 2) is true, so no find_smallest. steal_suitable_fallback(960,
    // whole_block): not HighAtomic, 6 < 9, no boost (watermarks 0), move_freepages_block
    // moves the pageblock's free pages (960, 64 pages) to Movable with num_movable 0;
    // alike = movable = 0; 64 + 0 < 256, so the pageblock stays Unmovable. Retry
    // __rmqueue_smallest(0, Movable): 960 (o6) splits to 992 (o5), 976, 968, 964, 962, 961
    // (o0), all on Movable lists. Next Movable order 0: 961 from its own list, no fallback.
    let z = unmovable_with_two_holes(FallbackRule::Legacy);
    assert_eq!(z.alloc(o(0), M).unwrap(), Pfn(960));
    assert_eq!(extfrag(&z), [(960, 0, 6, M, U, false)]);
    assert_eq!(z.pageblock_migratetype(Pfn(960)), Some(U));
    assert_eq!(list(&z, 5, M), [992]);
    assert_eq!(list(&z, 0, M), [961]);
    assert_eq!(list(&z, 0, U), [1]);
    z.check().unwrap();
    assert_eq!(z.alloc(o(0), M).unwrap(), Pfn(961));
    assert!(extfrag(&z).is_empty());
    assert_eq!(
        (z.stats().fallbacks, z.stats().steals, z.stats().claims),
        (2, 1, 1)
    );
    z.check().unwrap();
}

#[test]
fn claim_steal_movable_fallback_steals_the_smallest_block_instead() {
    // The same state under 6.15's split: __rmqueue_claim tries 960 (o6, claimable order) but
    // the pageblock has 64 free + 0 movable < 256: no claim; order 3 is below the claim
    // threshold for Movable (break). __rmqueue_steal takes the smallest: 1 (o0). The next
    // Movable order 0 steals again: 960, split on the Unmovable lists.
    let z = unmovable_with_two_holes(FallbackRule::ClaimSteal);
    assert_eq!(z.alloc(o(0), M).unwrap(), Pfn(1));
    assert_eq!(extfrag(&z), [(1, 0, 0, M, U, false)]);
    assert_eq!(z.alloc(o(0), M).unwrap(), Pfn(960));
    assert_eq!(extfrag(&z), [(960, 0, 6, M, U, false)]);
    assert_eq!(list(&z, 5, U), [992]);
    assert!(list(&z, 5, M).is_empty());
    z.check().unwrap();
}

/// Pageblock 0 allocated (Movable o9 at 0); pageblock 512: Movable o8 at 512 and o7 at 768
/// allocated, 896 (o7) free.
fn movable_with_one_hole(rule: FallbackRule) -> Zone {
    let z = buddy_zone(rule);
    for (k, want) in [(9, 0), (8, 512), (7, 768)] {
        assert_eq!(z.alloc(o(k), M).unwrap(), Pfn(want), "order {k}");
    }
    assert_eq!(list(&z, 7, M), [896]);
    z.check().unwrap();
    z
}

#[test]
fn legacy_unclaimed_block_still_moves_its_free_pages_to_the_request_type() {
    // 6.1, Unmovable order 0: order 7, Movable list: 896; can_steal (Unmovable) true;
    // steal_suitable_fallback: move_freepages_block moves 896 (128 free pages) to Unmovable,
    // num_movable = 384 (512, 768); alike = 512 - (128 + 384) = 0; 128 < 256: no claim, the
    // pageblock stays Movable while its free pages sit on Unmovable lists. Retry
    // __rmqueue_smallest(0, Unmovable): 896 splits to 960 (o6) .. 897 (o0) on Unmovable lists.
    // A Movable order 0 then finds its lists empty and falls back (order 6, Unmovable: 960,
    // can_steal): move_freepages_block moves every free page of the pageblock back to Movable,
    // 127 free + 384 movable >= 256: set_pageblock_migratetype(Movable) (it was Movable:
    // change_ownership true); the retry takes 897.
    let z = movable_with_one_hole(FallbackRule::Legacy);
    z.record_events(true);
    assert_eq!(z.alloc(o(0), U).unwrap(), Pfn(896));
    assert_eq!(extfrag(&z), [(896, 0, 7, U, M, false)]);
    assert_eq!(z.pageblock_migratetype(Pfn(896)), Some(M));
    assert_eq!(list(&z, 6, U), [960]);
    assert!(list(&z, 6, M).is_empty());
    z.check().unwrap();
    assert_eq!(z.alloc(o(0), M).unwrap(), Pfn(897));
    assert_eq!(extfrag(&z), [(960, 0, 6, M, U, true)]);
    assert_eq!(list(&z, 6, M), [960]);
    assert_eq!((z.stats().steals, z.stats().claims), (1, 1));
    z.check().unwrap();
}

#[test]
fn claim_steal_leaves_an_unclaimed_block_alone() {
    // 6.15: the claim of 896's pageblock fails (same counts) and moves nothing; the steal
    // splits 896 on the Movable lists, so the next Movable order 0 is a plain hit on 897.
    let z = movable_with_one_hole(FallbackRule::ClaimSteal);
    z.record_events(true);
    assert_eq!(z.alloc(o(0), U).unwrap(), Pfn(896));
    assert_eq!(extfrag(&z), [(896, 0, 7, U, M, false)]);
    assert_eq!(list(&z, 6, M), [960]);
    assert_eq!(z.alloc(o(0), M).unwrap(), Pfn(897));
    assert!(extfrag(&z).is_empty());
    z.check().unwrap();
}

/// One pageblock (512 frames) with per-CPU lists: batch 8, a high no free reaches.
fn pcp_zone(drain: DrainMigratetype) -> Zone {
    let cfg = ZoneConfig::without_watermarks()
        .with_mobility_grouping(MobilityGrouping::Enabled)
        .with_pcp(
            PcpConfig::new()
                .with_cpus(1)
                .with_batch(Some(8))
                .with_high_min(Some(1000))
                .with_high_max(Some(1000))
                .with_drain_migratetype(drain),
        );
    let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(512), cfg).unwrap();
    z.add_free_range(Pfn(0), Pfn(512)).unwrap();
    z
}

/// Frees a Movable page to the CPU's lists, has an Unmovable request claim its pageblock, then
/// drains; returns the order-3 Movable and Unmovable free lists after the drain.
fn retype_between_free_and_drain(drain: DrainMigratetype) -> (Vec<u64>, Vec<u64>) {
    let z = pcp_zone(drain);
    let cpu = AllocRequest::new(M).on_cpu(CpuId(0));
    // The refill takes 0..8 for the Movable list (0 (o9) split: 256 (o8) .. 8 (o3) free);
    // the allocation takes 0, the free (a PCP hit) puts it back on the Movable list.
    let p = z.alloc_with(o(0), cpu).unwrap();
    assert_eq!(p, Pfn(0));
    z.free_on(CpuId(0), p, o(0)).unwrap();
    // Unmovable order 0: its refill falls back to the largest Movable block, 256 (o8), and
    // claims the pageblock (free 504 + alike 8 >= 256), so pageblock 0 becomes Unmovable while
    // 0..8 wait on the Movable list. The refill splits 8 (o3): 8..16; the allocation takes 8.
    let q = z
        .alloc_with(o(0), AllocRequest::new(U).on_cpu(CpuId(0)))
        .unwrap();
    assert_eq!(q, Pfn(8));
    assert_eq!(z.pageblock_migratetype(Pfn(0)), Some(U));
    // drain_pages_zone: the Unmovable list first (9..16 merge up to 9, 10 (o1), 12 (o2): 8 is
    // in use), then the Movable one: 0..8 merge to 0 (o3), on the list of the type they are
    // freed with.
    z.drain_cpu(CpuId(0));
    assert_eq!(z.pcp_pages(), 0);
    assert_eq!(list(&z, 2, U), [12]);
    z.check().unwrap();
    (list(&z, 3, M), list(&z, 3, U))
}

#[test]
fn at_free_drains_a_retyped_pageblock_to_the_type_cached_at_free() {
    // 6.1 free_pcppages_bulk: mt = get_pcppage_migratetype(page): Movable for 0..8 (refilled
    // as Movable; 0 freed from a then-Movable pageblock), so 0 (o3) lands on the Movable list
    // of an Unmovable pageblock. 6.12+ reads the pageblock at drain: Unmovable.
    assert_eq!(
        retype_between_free_and_drain(DrainMigratetype::AtFree),
        (vec![0], vec![])
    );
    assert_eq!(
        retype_between_free_and_drain(DrainMigratetype::AtDrain),
        (vec![], vec![0])
    );
}

#[test]
fn the_6_1_preset_sets_both_rules() {
    let c = ZoneConfig::for_kernel(KernelVersion::V6_1);
    assert_eq!(c.fallback, FallbackRule::Legacy);
    assert_eq!(c.pcp.drain_migratetype, DrainMigratetype::AtFree);
    for v in [KernelVersion::V6_12, KernelVersion::V7_2] {
        let c = ZoneConfig::for_kernel(v);
        assert_eq!(c.fallback, FallbackRule::ClaimSteal);
        assert_eq!(c.pcp.drain_migratetype, DrainMigratetype::AtDrain);
    }
}

/// Random allocations and frees of every type and PCP order on two CPUs under the 6.1 preset,
/// small lists so that refills, drains, fallbacks and claims are frequent: the zone invariants
/// (Z5 in its 6.1 form: each free block on the list it records) hold after every operation,
/// and everything comes back. Free blocks do end up on lists other than their pageblock's
/// type (what the 6.1 rules are about), which the run also checks happened.
/// Each of the two rules on its own, with the other one's 6.12+ form, too.
#[test]
fn random_operations_keep_the_invariants_under_6_1_rules() {
    let mut mismatched = false;
    let rules = [
        (FallbackRule::Legacy, DrainMigratetype::AtFree),
        (FallbackRule::Legacy, DrainMigratetype::AtDrain),
        (FallbackRule::ClaimSteal, DrainMigratetype::AtFree),
    ];
    for seed in 1..=6u64 {
        let (fallback, drain) = rules[seed as usize % rules.len()];
        let mut cfg = ZoneConfig::without_watermarks()
            .with_mobility_grouping(MobilityGrouping::Enabled)
            .with_max_order(10)
            .with_pcp(PcpConfig::new().with_cpus(2).with_batch(Some(4)));
        KernelVersion::V6_1.apply(&mut cfg);
        cfg.fallback = fallback;
        cfg.pcp = cfg
            .pcp
            .with_high_min(Some(24))
            .with_high_max(Some(24))
            .with_drain_migratetype(drain);
        let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(1 << 13), cfg).unwrap();
        z.add_free_range(Pfn(0), Pfn(1 << 13)).unwrap();
        let total = z.free_pages();
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut live: Vec<(Pfn, Order)> = Vec::new();
        for step in 0..1500 {
            let cpu = CpuId(rnd(2) as u32);
            if live.is_empty() || rnd(100) < 55 {
                let order = o([0, 0, 0, 1, 2, 3, 9, 5][rnd(8) as usize]);
                let mt = [U, M, M, MigrateType::Reclaimable][rnd(4) as usize];
                if let Ok(p) = z.alloc_with(order, AllocRequest::new(mt).on_cpu(cpu)) {
                    live.push((p, order));
                }
            } else {
                let (p, order) = live.swap_remove(rnd(live.len() as u64) as usize);
                z.free_on(cpu, p, order).unwrap();
            }
            if rnd(200) == 0 {
                z.drain_all();
            }
            if let Err(e) = z.check() {
                panic!("seed {seed} step {step}: {e}");
            }
            for k in 0..=10 {
                for mt in [U, M, MigrateType::Reclaimable] {
                    let mut buf = [Pfn(0); 64];
                    let n = z.free_list(o(k), mt, &mut buf);
                    mismatched |= buf[..n]
                        .iter()
                        .any(|&p| z.pageblock_migratetype(p) != Some(mt));
                }
            }
        }
        for (p, order) in live.drain(..) {
            z.free_on(CpuId(0), p, order).unwrap();
        }
        z.drain_all();
        z.check().unwrap();
        assert_eq!(z.free_pages(), total, "seed {seed}");
    }
    assert!(mismatched, "no block ever sat on another type's list");
}

/// A page refilled for one type whose pageblock turns HighAtomic while it waits on the list,
/// and a page freed from a HighAtomic pageblock: the type each is drained with.
fn highatomic_drains(drain: DrainMigratetype) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    const HA: MigrateType = MigrateType::HighAtomic;
    // 65536 frames, marks min 66000 / low 70000: only an atomic request passes (as in
    // golden.rs's HighAtomic test), one CPU, batch 4, the 6.1 preset otherwise.
    let mut cfg = ZoneConfig::new()
        .with_watermarks(zonealloc::WatermarkConfig::fixed(66_000, 70_000, 70_000));
    KernelVersion::V6_1.apply(&mut cfg);
    cfg.pcp = cfg
        .pcp
        .with_cpus(1)
        .with_batch(Some(4))
        .with_high_min(Some(1000))
        .with_high_max(Some(1000))
        .with_drain_migratetype(drain);
    let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(65_536), cfg).unwrap();
    z.add_free_range(Pfn(0), Pfn(65_536)).unwrap();
    // Atomic Unmovable order 1: rmqueue_pcplist refills max(4 >> 1, 2) = 2 blocks. The
    // fallback claims the order-10 block at 0 (pageblocks 0 and 512 Unmovable), the retried
    // __rmqueue_smallest splits it: 0, then 2 from the order-1 list; both cached Unmovable.
    // The allocation takes 0, then reserve_highatomic_pageblock makes pageblock 0 HighAtomic
    // (its free blocks 4 (o2) .. 256 (o8) move to HighAtomic lists); 2 stays listed.
    let req = AllocRequest::atomic(U).on_cpu(CpuId(0));
    let p = z.alloc_with(o(1), req).unwrap();
    assert_eq!(p, Pfn(0));
    assert_eq!(z.pageblock_migratetype(Pfn(0)), Some(HA));
    // free_pcppages_bulk of 2: 6.1 frees it with its cached type, Unmovable, so it sits on the
    // Unmovable order-1 list of a HighAtomic pageblock (its buddy 0 is in use); 6.12+ reads
    // the pageblock: HighAtomic.
    z.drain_cpu(CpuId(0));
    let after_refill = list(&z, 1, U);
    z.check().unwrap();
    // Freeing 0 (a HighAtomic pageblock: the Movable list, HighAtomic cached) and draining it:
    // HighAtomic under both rules; it merges with 2 (unlinked from whichever list it is on)
    // and up to order 9 (512 is Unmovable: no merge across).
    z.free_on(CpuId(0), p, o(1)).unwrap();
    z.drain_cpu(CpuId(0));
    z.check().unwrap();
    (after_refill, list(&z, 9, HA), list(&z, 9, M))
}

#[test]
fn a_drained_block_keeps_the_type_cached_when_it_was_listed() {
    assert_eq!(
        highatomic_drains(DrainMigratetype::AtFree),
        (vec![2], vec![0], vec![])
    );
    assert_eq!(
        highatomic_drains(DrainMigratetype::AtDrain),
        (vec![], vec![0], vec![])
    );
}
