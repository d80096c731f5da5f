//! What a caller can do wrong through the safe API, and the typed error (never a hang, a wrap
//! or a second owner of a frame) each gets: a zone at the top of the pfn space, two zones
//! over one metadata table, and an owner-only `CpuHandle` leaked with `mem::forget` while
//! other threads drain and allocate (issue 13).
// Static tables need `FrameMeta::new` as a `const fn`, which loom's atomics are not.
#![cfg(not(loom))]

use std::sync::mpsc;
use std::time::{Duration, Instant};

use zonealloc::{
    AllocError, AllocRequest, ConfigError, CpuId, DrainError, DrainMode, FrameMeta, MigrateType,
    Order, PcpConfig, PcpLocking, PcpSlot, Pfn, Zone, ZoneConfig, ZoneType,
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
