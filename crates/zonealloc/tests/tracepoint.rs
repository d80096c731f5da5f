//! The buddy-side tracepoints ([`ZoneEvent`]): recorded at the kernel's points, in the kernel's
//! order, with the kernel's field values, and only while recording is on.

use zonealloc::{
    AllocRequest, CpuId, MigrateType, Order, PcpConfig, Pfn, Zone, ZoneConfig, ZoneEvent, ZoneType,
};

fn o(n: u8) -> Order {
    Order::new(n).unwrap()
}

fn zone(frames: u64, cpus: u32) -> Zone {
    let cfg = ZoneConfig::without_watermarks().with_pcp(
        PcpConfig::new()
            .with_cpus(cpus)
            .with_batch(Some(63))
            .with_high_min(Some(1000))
            .with_high_max(Some(62_500)),
    );
    let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(frames), cfg).unwrap();
    z.add_free_range(Pfn(0), Pfn(frames)).unwrap();
    z
}

fn take(z: &Zone) -> Vec<ZoneEvent> {
    let mut v = Vec::new();
    z.take_events(&mut v);
    v
}

#[test]
fn nothing_is_recorded_until_recording_is_switched_on() {
    let z = zone(1 << 12, 1);
    let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0));
    z.alloc_with(o(0), req).unwrap();
    assert!(take(&z).is_empty());
    z.record_events(true);
    z.alloc_with(o(5), req).unwrap();
    assert_eq!(take(&z).len(), 1);
    z.record_events(false);
    z.alloc_with(o(5), req).unwrap();
    assert!(take(&z).is_empty());
}

#[test]
fn recording_and_taking_events_change_no_statistic() {
    let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0));
    // `None`: no recording and no taking; `Some(on)`: recording switched on or off, and the
    // events taken after each operation (twice: with events waiting, then with none).
    let run = |record: Option<bool>| {
        let z = zone(1 << 12, 1);
        if let Some(on) = record {
            z.record_events(on);
        }
        let mut got = 0;
        for order in [0, 5, 0, 3] {
            z.alloc_with(o(order), req).unwrap();
            if record.is_some() {
                got += take(&z).len();
                got += take(&z).len();
            }
        }
        (z.stats().zone_lock_acquisitions, got)
    };
    let (plain, _) = run(None);
    let (off, none) = run(Some(false));
    let (recorded, got) = run(Some(true));
    assert_eq!(none, 0);
    assert!(got > 0);
    assert_eq!((off, recorded), (plain, plain));
}

#[test]
fn a_refill_logs_one_zone_locked_event_per_block_in_list_order() {
    let z = zone(1 << 14, 1);
    z.record_events(true);
    let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0));
    let first = z.alloc_with(o(0), req).unwrap();
    let ev = take(&z);
    let refilled = z.pcp_stats().refill_pages;
    assert_eq!(ev.len() as u64, refilled);
    // The refill takes ascending frames (the lower half of each split stays in the buddy's
    // hands last), and the first block logged is the one handed out.
    assert_eq!(ev[0].pfn(), first);
    for (i, e) in ev.iter().enumerate() {
        assert_eq!(
            *e,
            ZoneEvent::AllocZoneLocked {
                pfn: Pfn(first.0 + i as u64),
                order: o(0),
                migratetype: MigrateType::Movable,
                percpu_refill: true,
            }
        );
    }
    // A PCP hit takes no zone lock and logs nothing.
    z.alloc_with(o(0), req).unwrap();
    assert!(take(&z).is_empty());
}

#[test]
fn a_direct_buddy_allocation_is_not_a_percpu_refill() {
    let z = zone(1 << 12, 1);
    z.record_events(true);
    let p = z
        .alloc_with(
            o(5),
            AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0)),
        )
        .unwrap();
    assert_eq!(
        take(&z),
        [ZoneEvent::AllocZoneLocked {
            pfn: p,
            order: o(5),
            migratetype: MigrateType::Movable,
            percpu_refill: false,
        }]
    );
}

#[test]
fn draining_logs_one_pcpu_drain_event_per_block() {
    let z = zone(1 << 14, 2);
    let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(1));
    let p = z.alloc_with(o(0), req).unwrap();
    z.free_on(CpuId(1), p, o(0)).unwrap();
    let on_lists = z.pcp_pages();
    assert!(on_lists > 0);
    z.record_events(true);
    z.drain_all();
    let ev = take(&z);
    assert_eq!(ev.len() as u64, on_lists);
    // The freed page went to the list head; drains take the tail, so it is drained last.
    assert_eq!(ev.last().unwrap().pfn(), p);
    assert!(ev.iter().all(|e| matches!(
        e,
        ZoneEvent::PcpuDrain { order, migratetype: MigrateType::Movable, .. } if *order == o(0)
    )));
    z.check().unwrap();
}

#[test]
fn claiming_a_whole_pageblock_logs_extfrag_with_change_ownership() {
    // The boot memory is all Movable: an Unmovable request claims a pageblock.
    let z = zone(1 << 12, 1);
    z.record_events(true);
    let p = z
        .alloc_with(
            o(4),
            AllocRequest::new(MigrateType::Unmovable).on_cpu(CpuId(0)),
        )
        .unwrap();
    let ev = take(&z);
    let last = *ev.last().unwrap();
    assert_eq!(
        last,
        ZoneEvent::AllocExtfrag {
            pfn: p,
            alloc_order: o(4),
            fallback_order: o(10),
            alloc_migratetype: MigrateType::Unmovable,
            fallback_migratetype: MigrateType::Movable,
            change_ownership: true,
        }
    );
    assert_eq!(z.pageblock_migratetype(p), Some(MigrateType::Unmovable));
}
