//! Zone-level unit tests: a Miri smoke test of the storage paths, and corruption that
//! `check()` must catch.

use super::Zone;
use crate::meta::{FrameMeta, FrameState};
use crate::pcp::PcpSlot;
use crate::request::AllocRequest;
use crate::types::CpuId;
use crate::types::{MigrateType, Order, Pfn};

/// Small enough for Miri: exercises the only `unsafe` (the owned and borrowed `StaticSlice`s
/// behind the frame table and the per-CPU slots) through every path that reads or frees them.
#[cfg(all(feature = "std", not(loom)))]
mod miri_smoke {
    use super::*;
    use crate::config::ZoneConfig;
    use crate::{PcpConfig, ZoneType};

    fn small_cfg() -> ZoneConfig {
        ZoneConfig {
            max_order: 3,
            pageblock_order: 2,
            pcp: PcpConfig {
                cpus: 2,
                batch: Some(2),
                high_min: Some(4),
                high_max: Some(8),
                thp_order: None,
                ..PcpConfig::default()
            },
            ..ZoneConfig::without_watermarks()
        }
    }

    fn churn(z: &Zone) {
        let o0 = Order::ZERO;
        let mut live = std::vec::Vec::new();
        for i in 0..12u32 {
            let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(i % 2));
            live.push(z.alloc_with(o0, req).unwrap());
        }
        let big = z.alloc(Order::of::<3>(), MigrateType::Unmovable).unwrap();
        for (i, p) in live.into_iter().enumerate() {
            z.free_on(CpuId(i as u32 % 2), p, o0).unwrap();
        }
        z.free(big, Order::of::<3>()).unwrap();
        z.drain_all();
        z.check().unwrap();
    }

    #[test]
    fn heap_storage_zone_is_used_and_freed_cleanly() {
        let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(32), small_cfg()).unwrap();
        z.add_free_range(Pfn(0), Pfn(32)).unwrap();
        churn(&z);
        std::thread::scope(|s| {
            for c in 0..2u32 {
                let z = &z;
                s.spawn(move || {
                    let mut h = z.cpu_handle(CpuId(c)).unwrap();
                    for _ in 0..4 {
                        let p = h.alloc(Order::ZERO, MigrateType::Movable).unwrap();
                        h.free(p, Order::ZERO).unwrap();
                    }
                });
            }
        });
        z.drain_all();
        assert_eq!(z.free_pages(), 32);
        drop(z);
    }

    #[test]
    fn static_storage_zone_is_used_and_not_freed() {
        static TABLE: [FrameMeta; 32] = [const { FrameMeta::new() }; 32];
        static PCPS: [PcpSlot; 2] = [const { PcpSlot::new() }; 2];
        let z = Zone::with_storage(
            ZoneType::Normal,
            Pfn(0),
            Pfn(32),
            small_cfg(),
            &TABLE,
            &PCPS,
        )
        .unwrap();
        z.add_free_range(Pfn(0), Pfn(32)).unwrap();
        churn(&z);
        drop(z);
        assert_eq!(TABLE.len(), 32);
    }
}

/// `check()` must catch corruption, not only pass on good states: each test breaks one thing
/// behind the allocator's back and expects the invariant that names it.
#[cfg(all(feature = "std", not(loom)))]
mod check_catches_corruption {
    use super::*;
    use crate::config::ZoneConfig;
    use crate::{PcpConfig, ZoneType};

    fn zone() -> Zone {
        let cfg = ZoneConfig {
            pcp: PcpConfig {
                cpus: 1,
                batch: Some(4),
                high_min: Some(64),
                high_max: Some(64),
                ..PcpConfig::default()
            },
            ..ZoneConfig::without_watermarks()
        };
        let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(4096), cfg).unwrap();
        z.add_free_range(Pfn(0), Pfn(4096)).unwrap();
        // Some pages on the CPU's list, some blocks allocated, free blocks of several orders.
        let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0));
        let a = z.alloc_with(Order::ZERO, req).unwrap();
        z.alloc_with(Order::of::<3>(), req).unwrap();
        z.free_on(CpuId(0), a, Order::ZERO).unwrap();
        z.check().unwrap();
        z
    }

    fn id(z: &Zone) -> &'static str {
        z.check().map(|_| "ok").unwrap_or_else(|e| e.invariant)
    }

    /// With `debug-invariants`, the first public operation after the corruption reports it,
    /// naming itself.
    #[cfg(feature = "debug-invariants")]
    #[test]
    #[should_panic(expected = "invariant violated after free: Z3")]
    fn debug_invariants_catch_corruption_at_the_next_operation() {
        let z = zone();
        let p = z
            .alloc_with(
                Order::ZERO,
                AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0)),
            )
            .unwrap();
        z.buddy.lock().free_area[10].nr_free += 1;
        let _ = z.free_on(CpuId(0), p, Order::ZERO);
    }

    #[test]
    fn wrong_nr_free_is_z3() {
        let z = zone();
        z.buddy.lock().free_area[10].nr_free += 1;
        assert_eq!(id(&z), "Z3");
    }

    #[test]
    fn wrong_free_page_count_is_z7() {
        let z = zone();
        z.buddy.lock().nr_free_pages -= 1;
        assert_eq!(id(&z), "Z7");
    }

    #[test]
    fn stale_nonempty_bit_is_z8() {
        let z = zone();
        let empty_order = (0..=10u8)
            .find(|&o| z.buddy.lock().free_area[o as usize].lists[1].is_empty())
            .unwrap();
        z.buddy
            .lock()
            .note_nonempty_for_test(Order::from_raw(empty_order), MigrateType::Movable);
        assert_eq!(id(&z), "Z8");
    }

    #[test]
    fn a_tail_frame_claiming_to_be_free_is_caught() {
        let z = zone();
        // Frame 2048+1 lies inside a free order-10 block: make it look like a free head.
        z.table.set_state(2049, FrameState::Buddy(Order::ZERO));
        assert_eq!(id(&z), "Z1");
    }

    /// The walk by slices names the frame the per-frame walk named: the first whose copy of
    /// its pageblock's type differs from the pageblock's first frame's.
    #[test]
    fn a_differing_pageblock_copy_is_z9_at_its_frame() {
        // 3584 starts a pageblock inside a free block (no head reads its type): the frames
        // after it differ from it.
        for (changed, named) in [(2049, 2049), (2559, 2559), (3584, 3585)] {
            let z = zone();
            z.table
                .set_block_copy_for_test(changed, MigrateType::Reclaimable);
            let e = z.check().unwrap_err();
            assert_eq!((e.invariant, e.pfn), ("Z9", Some(Pfn(named))), "{changed}");
        }
    }

    #[test]
    fn a_hole_inside_a_free_block_is_z1_at_the_hole() {
        let z = zone();
        z.table.set_state(3000, FrameState::Absent);
        let e = z.check().unwrap_err();
        assert_eq!((e.invariant, e.pfn), ("Z1", Some(Pfn(3000))));
    }

    /// Runs of holes are skipped whole, pending pageblocks among them (never added to, so
    /// never written: 1024..2560 here); a tail after one is still found, at its frame.
    #[test]
    fn a_tail_after_a_run_of_holes_is_z1_at_the_tail() {
        let z = Zone::new(
            ZoneType::Normal,
            Pfn(0),
            Pfn(4096),
            ZoneConfig::without_watermarks(),
        )
        .unwrap();
        z.add_free_range(Pfn(0), Pfn(1000)).unwrap();
        z.add_free_range(Pfn(3000), Pfn(4000)).unwrap();
        z.check().unwrap();
        for tail in [1000, 1023, 2560, 2999, 4000, 4095] {
            z.table.set_state(tail, FrameState::Tail);
            let e = z.check().unwrap_err();
            assert_eq!((e.invariant, e.pfn), ("Z1", Some(Pfn(tail.into()))));
            z.table.set_state(tail, FrameState::Absent);
        }
        z.check().unwrap();
    }

    #[test]
    fn a_free_head_on_no_list_is_z1() {
        let z = zone();
        let idx = z.buddy.lock().free_area[10].lists[1].first().unwrap();
        let mut g = z.buddy.lock();
        g.free_area[10].lists[1].unlink(&z.table, idx);
        g.free_area[10].nr_free -= 1;
        // Keep the page counters consistent with the lists, so only the orphan is wrong.
        g.nr_free_pages -= 1024;
        g.nr_free_pages_blocks -= 1024;
        drop(g);
        assert_eq!(id(&z), "Z1");
    }

    #[test]
    fn wrong_pcp_count_is_p1() {
        let z = zone();
        z.pcp.slot(0).lists.lock().count += 1;
        assert_eq!(id(&z), "P1");
    }

    #[test]
    fn a_pcp_member_in_the_wrong_state_is_p2() {
        let z = zone();
        let idx = {
            let p = z.pcp.slot(0).lists.lock();
            p.lists.iter().find_map(|l| l.first()).unwrap()
        };
        z.table.set_state(
            idx,
            FrameState::Allocated(Order::ZERO, MigrateType::Movable),
        );
        assert_eq!(id(&z), "P2");
    }
}

/// `__zone_watermark_unusable_free`: 6.1 holds back the whole HighAtomic reserve
/// (`nr_reserved_highatomic`), 6.12+ only its free pages.
#[cfg(all(feature = "std", not(loom)))]
#[test]
fn highatomic_unusable_follows_the_version() {
    use crate::config::{KernelVersion, ZoneConfig};
    use crate::request::AllocFlags;
    use crate::ZoneType;
    for (v, ok) in [(KernelVersion::V6_1, false), (KernelVersion::V7_2, true)] {
        let mut cfg = ZoneConfig::for_kernel(v);
        cfg.watermarks = ZoneConfig::without_watermarks().watermarks;
        let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(1 << 14), cfg).unwrap();
        z.add_free_range(Pfn(0), Pfn(1 << 14)).unwrap();
        let free = z.free_pages();
        {
            // A reserve of one pageblock with none of it free (all allocated).
            let mut b = z.lock();
            b.nr_reserved_highatomic = 512;
        }
        let hz = ZoneType::Normal.index();
        let mark = free - 300;
        assert_eq!(
            z.shared.watermark_ok(Order::ZERO, mark, hz, AllocFlags(0)),
            ok,
            "{v}"
        );
        // Requests entitled to the reserves ignore it in both.
        assert!(z
            .shared
            .watermark_ok(Order::ZERO, mark, hz, AllocFlags::HIGHATOMIC));
    }
}

/// A heap table settles its pageblocks as memory is added (`FrameTable::settle`); a table
/// the caller provides is initialised whole. The two must not differ in anything a caller
/// can see: the same ranges added and the same requests (fallbacks, which retype
/// pageblocks, among them) give the same frames, the same `/proc` block counts and the same
/// pageblock types everywhere, pending pageblocks included.
#[cfg(all(feature = "std", not(loom)))]
#[test]
fn a_table_settled_as_memory_is_added_behaves_as_one_initialised_whole() {
    use crate::config::ZoneConfig;
    use crate::{PcpConfig, ZoneType};
    let span = (Pfn(0x300), Pfn(0x300 + 20 * 512));
    let cfg = ZoneConfig {
        pcp: PcpConfig {
            cpus: 1,
            batch: Some(3),
            high_min: Some(8),
            high_max: Some(8),
            ..PcpConfig::default()
        },
        ..ZoneConfig::without_watermarks()
    };
    let n = Zone::table_entries(span.0, span.1, &cfg) as usize;
    let storage: &'static [FrameMeta] =
        std::boxed::Box::leak((0..n).map(|_| FrameMeta::new()).collect());
    let whole = Zone::with_table(ZoneType::Normal, span.0, span.1, cfg, storage).unwrap();
    let settled = Zone::new(ZoneType::Normal, span.0, span.1, cfg).unwrap();
    // The pageblocks of 0x800..0xc00 and 0x1000..0x1600 are never added to; several
    // others only in part.
    let ranges = [
        (0x300, 0x4a0),
        (0x4c0, 0x700),
        (0xd00, 0xe10),
        (0x1600, 0x1950),
    ];
    let ranges = ranges.iter().chain(&[(0x1a00, 0x2b00)]);
    let zones = [&whole, &settled];
    for &(s, e) in ranges {
        for z in zones {
            z.add_free_range(Pfn(s), Pfn(e)).unwrap();
        }
    }
    let mts = [
        MigrateType::Unmovable,
        MigrateType::Movable,
        MigrateType::Reclaimable,
    ];
    let mut live: std::vec::Vec<(Pfn, Order)> = std::vec::Vec::new();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for step in 0..4000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x % 5 < 3 || live.is_empty() {
            let order = Order::from_raw((x >> 8) as u8 % 4);
            let mt = mts[(x >> 16) as usize % 3];
            let got = zones.map(|z| z.alloc(order, mt));
            assert_eq!(got[0], got[1], "step {step}");
            if let Ok(p) = got[0] {
                live.push((p, order));
            }
        } else {
            let (p, order) = live.swap_remove((x >> 24) as usize % live.len());
            for z in zones {
                z.free(p, order).unwrap();
            }
        }
    }
    let [a, b] = zones.map(|z| z.snapshot(0));
    assert_eq!(a, b);
    assert!(a.pageblocks_by_type[MigrateType::Movable.index()] < 20);
    assert_eq!(a.pageblocks_by_type.iter().sum::<u64>(), 20);
    for pfn in (span.0 .0..span.1 .0).step_by(256) {
        let pfn = Pfn(pfn);
        assert_eq!(
            whole.pageblock_migratetype(pfn),
            settled.pageblock_migratetype(pfn),
            "{pfn}"
        );
        assert_eq!(whole.frame_state(pfn), settled.frame_state(pfn), "{pfn}");
    }
    assert_eq!(whole.check().unwrap(), settled.check().unwrap());
    // The counts by type in one walk are the per-block reads, pending blocks and frames
    // outside the span (0x0..0x300, beyond 0x2b00) included.
    for (s, e) in [
        (0, 0x3000),
        (0x310, 0x1234),
        (0x800, 0xc00),
        (0x2a00, 0x2b01),
    ] {
        let step = 1u64 << cfg.pageblock_order;
        for z in zones {
            let mut want = [0u64; crate::types::MIGRATE_TYPES];
            let mut pfn = s & !(step - 1);
            while pfn < e {
                if let Some(mt) = z.pageblock_migratetype(Pfn(pfn.max(s))) {
                    want[mt.index()] += 1;
                }
                pfn += step;
            }
            assert_eq!(z.pageblocks_by_type(Pfn(s), Pfn(e)), want, "{s:#x}..{e:#x}");
        }
    }
}

/// A 6.1 zone of 4096 free pages, one CPU, no watermarks.
#[cfg(all(feature = "std", not(loom)))]
fn one_cpu_61_zone() -> Zone {
    use crate::config::{KernelVersion, ZoneConfig};
    use crate::ZoneType;
    let mut cfg = ZoneConfig::for_kernel(KernelVersion::V6_1).with_cpus(1);
    cfg.watermarks = ZoneConfig::without_watermarks().watermarks;
    let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(1 << 12), cfg).unwrap();
    z.add_free_range(Pfn(0), Pfn(1 << 12)).unwrap();
    z
}

/// `Zone::free_on_list`: a block goes on the named type's list whatever its pageblock's type
/// (a running kernel's list can hold a page whose pageblock changed type since its free),
/// an allocation of that type takes it from there, and 6.1 drains it to that type's free
/// list (`get_pcppage_migratetype`). `free_on` puts it on its pageblock's list.
#[cfg(all(feature = "std", not(loom)))]
#[test]
fn a_block_freed_onto_another_types_list_is_that_lists() {
    let z = one_cpu_61_zone();
    let req = |mt| AllocRequest::new(mt).on_cpu(CpuId(0));
    let p = z
        .alloc_with(Order::ZERO, req(MigrateType::Movable))
        .unwrap();
    let q = z
        .alloc_with(Order::ZERO, req(MigrateType::Movable))
        .unwrap();
    z.drain_cpu(CpuId(0));
    let before = z.pcp_info(CpuId(0)).list_pages;
    // order_to_pindex: Unmovable 0, Movable 1, Reclaimable 2 at order 0.
    z.free_on_list(CpuId(0), p, Order::ZERO, MigrateType::Reclaimable)
        .unwrap();
    z.free_on(CpuId(0), q, Order::ZERO).unwrap();
    let after = z.pcp_info(CpuId(0)).list_pages;
    assert_eq!(
        (after[1] - before[1], after[2] - before[2]),
        (1, 1),
        "{after:?}"
    );
    z.check().unwrap();
    // A Reclaimable allocation finds it on its list: no refill.
    let misses = |z: &Zone| z.pcp_info(CpuId(0)).stats.alloc_misses;
    let before = misses(&z);
    assert_eq!(
        z.alloc_with(Order::ZERO, req(MigrateType::Reclaimable)),
        Ok(p)
    );
    assert_eq!(misses(&z), before);
    // Freed onto it again and drained: back on the Reclaimable free list.
    z.free_on_list(CpuId(0), p, Order::ZERO, MigrateType::Reclaimable)
        .unwrap();
    z.drain_cpu(CpuId(0));
    let mut out = [Pfn(0); 64];
    let reclaimable: u64 = (0..=z.config().max_order)
        .map(|o| {
            let o = Order::new(o).unwrap();
            let n = z.free_list(o, MigrateType::Reclaimable, &mut out);
            out[..n]
                .iter()
                .filter(|b| b.0 <= p.0 && p.0 < b.0 + (1 << o.get()))
                .count() as u64
        })
        .sum();
    assert_eq!(reclaimable, 1);
    z.check().unwrap();
}

/// `pcp_list_holds` answers as `pcp_info`'s `list_pages` does, per migratetype and order.
#[cfg(all(feature = "std", not(loom)))]
#[test]
fn pcp_list_holds_says_what_list_pages_counts() {
    let z = one_cpu_61_zone();
    let holds = |mt| z.pcp_list_holds(CpuId(0), mt, Order::ZERO);
    assert!(!holds(MigrateType::Movable));
    let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0));
    let p = z.alloc_with(Order::ZERO, req).unwrap();
    z.free_on(CpuId(0), p, Order::ZERO).unwrap();
    let pages = z.pcp_info(CpuId(0)).list_pages;
    assert!(pages[1] > 0 && pages[0] == 0, "{pages:?}");
    assert!(holds(MigrateType::Movable) && !holds(MigrateType::Unmovable));
    z.drain_cpu(CpuId(0));
    assert!(!holds(MigrateType::Movable));
}

/// `free_on_pending` and `drain_pending`: the commit leaves its drain to the caller, which
/// applies it in `batch`-sized chunks on 7.2 (`free_frozen_page_commit`'s
/// `free_pcppages_bulk` calls) and in one on 6.12; in all, the same pages as `free_on`'s
/// drain at the commit, in the same order.
#[cfg(all(feature = "std", not(loom)))]
#[test]
fn a_pending_drain_drains_what_the_commit_would_in_chunks_of_batch() {
    use crate::config::{HighMode, KernelVersion, ZoneConfig};
    use crate::ZoneType;
    let zone = |v| {
        let mut cfg = ZoneConfig::for_kernel(v).with_cpus(1);
        cfg.watermarks = ZoneConfig::without_watermarks().watermarks;
        cfg.pcp.high_mode = HighMode::Fixed;
        cfg.pcp.batch = Some(4);
        cfg.pcp.high_min = Some(16);
        cfg.pcp.high_max = Some(16);
        let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(1 << 12), cfg).unwrap();
        z.add_free_range(Pfn(0), Pfn(1 << 12)).unwrap();
        z
    };
    let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0));
    let on_pcp = |z: &Zone| -> std::vec::Vec<u64> {
        (0..1u64 << 12)
            .filter(|&f| matches!(z.frame_state(Pfn(f)), Some(FrameState::Pcp(_))))
            .collect()
    };
    for (v, chunks) in [(KernelVersion::V7_2, true), (KernelVersion::V6_12, false)] {
        let (a, b) = (zone(v), zone(v));
        let pages: std::vec::Vec<Pfn> = (0..32)
            .map(|_| a.alloc_with(Order::ZERO, req).unwrap())
            .collect();
        let same: std::vec::Vec<Pfn> = (0..32)
            .map(|_| b.alloc_with(Order::ZERO, req).unwrap())
            .collect();
        assert_eq!(pages, same);
        let mut drains = 0;
        for &p in &pages {
            a.free_on(CpuId(0), p, Order::ZERO).unwrap();
            let Some(mut d) = b.free_on_pending(CpuId(0), p, Order::ZERO).unwrap() else {
                continue;
            };
            drains += 1;
            let mut steps = 0;
            loop {
                let (count, left) = (b.pcp_info(CpuId(0)).count, d.pages_left());
                let done = b.drain_pending(&mut d);
                steps += 1;
                let drained = count - b.pcp_info(CpuId(0)).count;
                let chunk = if chunks { left.min(4) } else { left };
                assert_eq!(drained, chunk.min(count), "{v:?}: step {steps}");
                if done {
                    break;
                }
            }
            assert!(d.is_done());
            assert!(!chunks || steps > 1 || d.pages_left() == 0, "{v:?}");
            b.check().unwrap();
        }
        assert!(drains > 0, "{v:?}: no free drained");
        assert_eq!(on_pcp(&a), on_pcp(&b), "{v:?}");
        assert_eq!(a.nr_free(), b.nr_free(), "{v:?}");
        let list = |z: &Zone| {
            let mut out = [Pfn(0); 64];
            let n = z.free_list(Order::ZERO, MigrateType::Movable, &mut out);
            out[..n].to_vec()
        };
        assert_eq!(list(&a), list(&b), "{v:?}: the order-0 free list, in order");
    }
}
