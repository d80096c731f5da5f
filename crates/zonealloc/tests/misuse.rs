//! What a caller can do wrong through the safe API, and the typed error (never a hang, a wrap
//! or a second owner of a frame) each gets: a zone at the top of the pfn space, two zones
//! over one metadata table, and an owner-only `CpuHandle` leaked with `mem::forget` while
//! other threads drain and allocate (issue 13), and every public method of a zone (and a node)
//! built without per-CPU slots (issue 27).
// Static tables need `FrameMeta::new` as a `const fn`, which loom's atomics are not.
#![cfg(not(loom))]

use std::sync::mpsc;
use std::time::{Duration, Instant};

use std::mem::MaybeUninit;

use zonealloc::{
    AllocError, AllocRequest, ConfigError, CpuId, DrainError, DrainMode, FrameMeta, FrameState,
    FreeError, HandleError, MigrateType, Node, Order, PcpConfig, PcpInfo, PcpLocking, PcpSlot,
    PcpStats, PcpTuning, Pfn, Zone, ZoneConfig, ZoneType,
};

const M: MigrateType = MigrateType::Movable;

fn o(n: u8) -> Order {
    Order::new(n).unwrap()
}

/// Runs `f` on a thread and returns its result, or fails the test if it has not returned
/// within `limit` (instead of hanging the test run).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("did not return within {limit:?}: it hangs"))
}

#[test]
fn a_zone_at_the_top_of_the_pfn_space_is_refused_or_adds_its_frames_without_wrapping() {
    // Pageblocks of one frame, so that the table needs no rounding past the span; the last
    // order-10 block would end exactly at 2^64, where `pfn + (1 << order)` wraps.
    let cfg = ZoneConfig::without_watermarks()
        .without_pcp()
        .with_pageblock_order(0);
    let (start, end) = (Pfn(u64::MAX - 2047), Pfn(u64::MAX));
    assert_eq!(
        Zone::new(ZoneType::Normal, start, end, cfg).unwrap_err(),
        ConfigError::SpanOverflow { start, end }
    );
    // The highest span a zone may have: every frame comes out once, all inside the span.
    let end = Pfn(u64::MAX - (1 << 20) + 1);
    let start = Pfn(end.0 - 2047);
    let z = Zone::new(ZoneType::Normal, start, end, cfg).unwrap();
    assert_eq!(z.add_free_range(start, end), Ok(2047));
    z.check().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    while let Ok(p) = z.alloc(o(0), M) {
        assert!(z.spans(p), "{p:?}");
        assert!(seen.insert(p.0), "{p:?} twice");
    }
    assert_eq!(seen.len(), 2047);
    assert_eq!(z.snapshot(0).pageblocks_by_type.iter().sum::<u64>(), 2047);
}

#[test]
fn two_zones_over_one_table_are_refused_until_the_first_is_dropped() {
    let cfg = ZoneConfig::without_watermarks().without_pcp();
    let n = Zone::table_entries(Pfn(0), Pfn(1024), &cfg) as usize;
    let table: &'static [FrameMeta] =
        Box::leak((0..n + 512).map(|_| FrameMeta::new()).collect::<Box<[_]>>());
    let a = Zone::with_table(ZoneType::Normal, Pfn(0), Pfn(1024), cfg, table).unwrap();
    a.add_free_range(Pfn(0), Pfn(1024)).unwrap();
    let p = a.alloc(o(0), M).unwrap();
    assert_eq!(p, Pfn(0));
    // The same table, and a slice of it that overlaps: both would hand out frames a holds.
    assert_eq!(
        Zone::with_table(ZoneType::Normal, Pfn(0), Pfn(1024), cfg, table).unwrap_err(),
        ConfigError::TableInUse { entry: 0 }
    );
    assert_eq!(
        Zone::with_table(ZoneType::Normal, Pfn(0), Pfn(512), cfg, &table[512..]).unwrap_err(),
        ConfigError::TableInUse { entry: 0 }
    );
    // The refused zones changed nothing: a still owns pfn 0, and its frames.
    a.check().unwrap();
    assert_eq!(a.free_pages(), 1023);
    // A disjoint part of the table is free to use.
    let b = Zone::with_table(ZoneType::Normal, Pfn(0), Pfn(512), cfg, &table[n..]).unwrap();
    drop(b);
    a.free(p, o(0)).unwrap();
    drop(a);
    // Once a is gone, its table serves a new zone.
    let c = Zone::with_table(ZoneType::Normal, Pfn(0), Pfn(1024), cfg, table).unwrap();
    c.add_free_range(Pfn(0), Pfn(1024)).unwrap();
    assert_eq!(c.alloc(o(0), M), Ok(Pfn(0)));
}

#[test]
fn two_zones_over_one_static_storage_are_refused_and_a_new_one_starts_clean() {
    static TABLE: [FrameMeta; 1024] = [const { FrameMeta::new() }; 1024];
    static PCPS: [PcpSlot; 2] = [const { PcpSlot::new() }; 2];
    static OTHER_TABLE: [FrameMeta; 1024] = [const { FrameMeta::new() }; 1024];
    let cfg = ZoneConfig::without_watermarks();
    let build = |t: &'static [FrameMeta]| {
        Zone::with_storage(ZoneType::Normal, Pfn(0), Pfn(1024), cfg, t, &PCPS)
    };
    let a = build(&TABLE).unwrap();
    a.add_free_range(Pfn(0), Pfn(1024)).unwrap();
    // Pages left on CPU 0's list when a is dropped.
    let p = a
        .alloc_with(o(0), AllocRequest::new(M).on_cpu(CpuId(0)))
        .unwrap();
    a.free_on(CpuId(0), p, o(0)).unwrap();
    assert!(a.pcp_pages() > 0);
    assert_eq!(
        build(&TABLE).unwrap_err(),
        ConfigError::TableInUse { entry: 0 }
    );
    assert_eq!(
        build(&OTHER_TABLE).unwrap_err(),
        ConfigError::PcpSlotInUse { slot: 0 }
    );
    // The refusal over the other table gave that table back.
    drop(a);
    let b = build(&OTHER_TABLE).unwrap();
    // b's lists start empty: none of a's frames are on them.
    assert_eq!(b.pcp_pages(), 0);
    b.add_free_range(Pfn(0), Pfn(1024)).unwrap();
    b.check().unwrap();
    drop(b);
    assert!(build(&TABLE).is_ok());
}

/// A zone whose CPU 1 lists are held by an owner-only handle that is leaked with pages on
/// them: 64 frames, 2 CPUs, owner drains.
fn zone_with_a_leaked_owner() -> &'static Zone {
    let cfg = ZoneConfig::without_watermarks().with_pcp(
        PcpConfig::new()
            .with_cpus(2)
            .with_batch(Some(4))
            .with_high_min(Some(16))
            .with_high_max(Some(16))
            .with_locking(PcpLocking::OwnerOnly)
            .with_drain(DrainMode::Owner),
    );
    let z: &'static Zone = Box::leak(Box::new(
        Zone::new(ZoneType::Normal, Pfn(0), Pfn(64), cfg).unwrap(),
    ));
    z.add_free_range(Pfn(0), Pfn(64)).unwrap();
    let mut h = z.cpu_handle(CpuId(1)).unwrap();
    let p = h.alloc(o(0), M).unwrap();
    h.free(p, o(0)).unwrap();
    assert!(z.pcp_pages() > 0, "pages on CPU 1's lists");
    std::mem::forget(h);
    z
}

#[test]
fn drain_all_timeout_names_the_cpu_whose_owner_never_answers() {
    let z = zone_with_a_leaked_owner();
    let started = Instant::now();
    let got = within(Duration::from_secs(20), move || {
        z.drain_all_timeout(Duration::from_millis(100))
    });
    assert_eq!(
        got,
        Err(DrainError::NoAnswer {
            cpu: CpuId(1),
            cpus: 1
        })
    );
    assert!(started.elapsed() >= Duration::from_millis(100));
    // The caller's own clock: give up after a number of polls. (From another thread: the
    // thread that registered the handle never waits for it, its handle serving at its next
    // operation.)
    let got = within(Duration::from_secs(20), move || {
        let mut polls = 0;
        z.drain_all_until(|| {
            polls += 1;
            polls > 100
        })
    });
    assert_eq!(
        got,
        Err(DrainError::NoAnswer {
            cpu: CpuId(1),
            cpus: 1
        })
    );
    assert!(DrainError::NoAnswer {
        cpu: CpuId(1),
        cpus: 1
    }
    .to_string()
    .contains("CPU 1"));
}

#[test]
fn an_allocation_short_of_memory_does_not_wait_forever_for_a_leaked_owner() {
    let z = zone_with_a_leaked_owner();
    let on_lists = z.pcp_pages();
    // Take everything the buddy has from CPU 0: the last pages sit on CPU 1's held lists, so
    // the slow path drains, and CPU 1's owner never answers.
    let got = within(Duration::from_secs(30), move || {
        let mut n = 0u64;
        loop {
            match z.alloc_with(o(0), AllocRequest::new(M).on_cpu(CpuId(0))) {
                Ok(_) => n += 1,
                Err(e) => return (n, e),
            }
        }
    });
    assert_eq!(
        got,
        (
            64 - on_lists,
            AllocError::OutOfMemory {
                order: o(0),
                migratetype: M
            }
        )
    );
}

// A zone without per-CPU slots: `Zone::from_uninit` (or `with_storage`) over an empty slot
// slice turns the lists off. `pcp_info` and `set_pcp_tuning` divided by the slot count
// (issue 27); every other public method is called here too, each with the answer it must give.

/// A zone over `start..end` made by `Zone::from_uninit` with no per-CPU slots, all of it free
/// (its table leaked to be `'static`, as boot memory is).
fn slotless(zone_type: ZoneType, start: u64, end: u64) -> Zone {
    let z = slotless_empty(zone_type, start, end);
    assert_eq!(z.add_free_range(Pfn(start), Pfn(end)), Ok(end - start));
    z
}

fn slotless_empty(zone_type: ZoneType, start: u64, end: u64) -> Zone {
    let cfg = ZoneConfig::without_watermarks();
    let n = Zone::table_entries(Pfn(start), Pfn(end), &cfg) as usize;
    let table: Vec<MaybeUninit<FrameMeta>> = (0..n).map(|_| MaybeUninit::uninit()).collect();
    let table = Box::leak(table.into_boxed_slice());
    let z = Zone::from_uninit(zone_type, Pfn(start), Pfn(end), cfg, table, &mut []).unwrap();
    assert_eq!(z.cpus(), 0);
    z
}

#[test]
fn pcp_info_of_a_zone_without_per_cpu_slots_reports_no_lists() {
    let z = slotless(ZoneType::Normal, 0, 4096);
    let p = z.alloc(o(0), M).unwrap();
    for cpu in [0, 1, 7, u32::MAX] {
        let want = PcpInfo {
            cpu,
            ..PcpInfo::default()
        };
        assert_eq!(z.pcp_info(CpuId(cpu)), want);
    }
    z.free(p, o(0)).unwrap();
    assert_eq!(z.pcp_stats(), PcpStats::default());
    assert_eq!(z.pcp_pages(), 0);
    let mut s = String::new();
    z.write_pagesets(&mut s).unwrap();
    assert_eq!(s, "\n  pagesets", "no CPU block without CPUs");
    z.check().unwrap();
}

#[test]
fn set_pcp_tuning_of_a_zone_without_per_cpu_slots_sets_nothing_and_says_so() {
    let z = slotless(ZoneType::Normal, 0, 4096);
    let t = PcpTuning {
        high: Some(100),
        alloc_factor: Some(1),
        free_count: Some(5),
        prev_free_high_order: Some(true),
    };
    for cpu in [0, 3, u32::MAX] {
        assert!(!z.set_pcp_tuning(CpuId(cpu), t));
        assert_eq!(z.pcp_info(CpuId(cpu)).high, 0);
        assert_eq!(z.pcp_tuning(CpuId(cpu)), None);
    }
    z.check().unwrap();
}

#[test]
fn a_zone_made_by_with_storage_without_slots_has_no_lists_and_answers() {
    static TABLE: [FrameMeta; 4096] = [const { FrameMeta::new() }; 4096];
    static PCPS: [PcpSlot; 0] = [];
    let cfg = ZoneConfig::without_watermarks();
    let z = Zone::with_storage(ZoneType::Normal, Pfn(0), Pfn(4096), cfg, &TABLE, &PCPS).unwrap();
    z.add_free_range(Pfn(0), Pfn(4096)).unwrap();
    assert_eq!(z.cpus(), 0);
    assert_eq!(z.pcp_info(CpuId(2)).count, 0);
    assert!(!z.set_pcp_tuning(CpuId(2), PcpTuning::default()));
    let p = z.alloc(o(3), M).unwrap();
    z.free(p, o(3)).unwrap();
    assert_eq!(z.check().unwrap().free_pages, 4096);
}

#[test]
fn allocations_and_frees_of_a_zone_without_per_cpu_slots_go_to_the_buddy() {
    let z = slotless(ZoneType::Normal, 0, 4096);
    let a = z.alloc(o(0), M).unwrap();
    let b = z
        .alloc_with(o(0), AllocRequest::new(M).on_cpu(CpuId(u32::MAX)))
        .unwrap();
    let c = z.alloc(o(4), MigrateType::Unmovable).unwrap();
    assert_eq!(z.free_pages(), 4096 - 2 - 16, "nothing parked on a list");
    assert_eq!(z.frame_state(a), Some(FrameState::Allocated(o(0), M)));
    z.free(a, o(0)).unwrap();
    z.free_on(CpuId(9), b, o(0)).unwrap();
    z.free_on(CpuId(u32::MAX), c, o(4)).unwrap();
    assert_eq!(z.free(a, o(0)), Err(FreeError::DoubleFree { pfn: a }));
    assert_eq!(
        z.alloc(o(11), M),
        Err(AllocError::OrderTooLarge {
            order: o(11),
            max: o(10)
        })
    );
    assert_eq!(z.free_pages(), 4096);
    assert_eq!(z.check().unwrap().free_pages, 4096);
}

#[test]
fn drains_and_ticks_of_a_zone_without_per_cpu_slots_return_at_once() {
    let z: &'static Zone = Box::leak(Box::new(slotless(ZoneType::Normal, 0, 4096)));
    within(Duration::from_secs(30), move || {
        z.drain_cpu(CpuId(3));
        z.drain_cpu(CpuId(u32::MAX));
        z.drain_local();
        z.drain_all();
        assert_eq!(z.drain_all_until(|| true), Ok(()));
        assert_eq!(z.drain_all_timeout(Duration::from_millis(1)), Ok(()));
        assert!(!z.tick(), "no lists, no decay pending");
    });
    assert_eq!(z.check().unwrap().free_pages, 4096);
}

#[test]
fn a_cpu_handle_of_a_zone_without_per_cpu_slots_is_out_of_range() {
    let z = slotless(ZoneType::Normal, 0, 4096);
    for cpu in [0, 1, u32::MAX] {
        assert_eq!(
            z.cpu_handle(CpuId(cpu)).unwrap_err(),
            HandleError::CpuOutOfRange {
                cpu: CpuId(cpu),
                cpus: 0
            }
        );
    }
}

#[test]
fn inspection_and_settings_of_a_zone_without_per_cpu_slots_answer() {
    let z = slotless_empty(ZoneType::Normal, 0, 4096);
    assert_eq!(z.free_reserved_area(Pfn(0), Pfn(4096)), Ok(4096));
    z.set_present_pages(4096);
    assert_eq!(z.set_high_fraction(10), Ok(()));
    z.set_lowmem_reserve([0; zonealloc::types::MAX_NR_ZONES]);
    z.set_reclaim_active(true);
    z.set_instrumentation(true);
    z.record_events(true);
    let p = z.alloc(o(0), M).unwrap();
    z.free(p, o(0)).unwrap();
    z.set_reclaim_active(false);
    let mut events = Vec::new();
    z.take_events(&mut events);
    assert!(!events.is_empty(), "the buddy's events are recorded");
    assert_eq!(
        (
            z.free_pages(),
            z.managed_pages(),
            z.present_pages(),
            z.spanned_pages()
        ),
        (4096, 4096, 4096, 4096)
    );
    assert_eq!(z.nr_free().iter().sum::<u64>(), 4);
    let mut heads = [Pfn(0); 8];
    assert_eq!(z.free_list(o(10), M, &mut heads), 4);
    assert_eq!(z.pageblock_migratetype(Pfn(0)), Some(M));
    assert_eq!(
        z.pageblocks_by_type(Pfn(0), Pfn(4096)).iter().sum::<u64>(),
        8
    );
    assert_eq!(z.snapshot(0).nr_free.iter().sum::<u64>(), 4);
    assert_eq!(
        z.stats().allocs[0],
        1,
        "one order-0 allocation, counted once"
    );
    assert_eq!(z.reserved_highatomic(), 0);
    let (mut prot, mut sets) = (String::new(), String::new());
    z.write_protection(&mut prot).unwrap();
    z.write_pagesets(&mut sets).unwrap();
    assert!(prot.contains("protection"), "{prot}");
    let _ = (
        z.watermarks(),
        z.lowmem_reserve(),
        z.hold_times(),
        z.metadata_bytes(),
    );
    assert_eq!(z.check().unwrap().free_pages, 4096);
}

#[test]
fn a_node_of_zones_without_per_cpu_slots_answers_every_call() {
    let dma = slotless_empty(ZoneType::Dma, 0, 4096);
    let normal = slotless_empty(ZoneType::Normal, 4096, 8192);
    let node = Node::new(0, [dma, normal]).unwrap();
    assert_eq!(node.add_free_range(Pfn(0), Pfn(8192)), Ok(8192));
    node.setup_watermarks();
    node.setup_lowmem_reserve();
    assert_eq!(node.set_high_fraction(8), Ok(()));
    let a = node.alloc(o(0), M).unwrap();
    let b = node
        .alloc_with(o(2), AllocRequest::new(M).on_cpu(CpuId(5)))
        .unwrap();
    assert!(node.zone_of(a).is_some());
    node.free(a, o(0)).unwrap();
    node.free_on(CpuId(u32::MAX), b, o(2)).unwrap();
    node.drain_all();
    assert!(!node.tick());
    assert_eq!(node.snapshots().count(), 2);
    for z in node.zones() {
        assert_eq!(z.pcp_info(CpuId(1)).count, 0);
        assert!(!z.set_pcp_tuning(CpuId(1), PcpTuning::default()));
    }
    assert_eq!(node.check().unwrap().free_pages, 8192);
}
