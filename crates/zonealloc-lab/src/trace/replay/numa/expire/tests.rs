//! The expiry countdown in a replay of crafted two-node traces, inference on or off alike:
//! its start at the snapshot, its own drains, and the trace's beside them.

use super::*;
use crate::trace::migratetype::Numbering;
use crate::trace::parse::{Ctx, Event, EventKind, PagePtr, Task, Who};
use crate::trace::replay::geometry::{Geometry, Online, ZoneSpan};
use crate::trace::replay::infer::kernel::Inferred;
use crate::trace::replay::replayer::Replayer;
use crate::trace::variant::Variant;
use zonealloc::{MigrateType, Order, Pfn, ZoneConfig, ZoneType};

const MS: u64 = 1_000_000;

/// One zone of 4096 pages, its CPU 0's pageset holding what one allocation and free left.
fn zone_with_a_pageset() -> Zone {
    let cfg = ZoneConfig::default().with_cpus(1);
    let zone = Zone::new(ZoneType::Normal, Pfn(0), Pfn(1 << 12), cfg).unwrap();
    zone.add_free_range(Pfn(0), Pfn(1 << 12)).unwrap();
    touch(&zone);
    assert!(zone.pcp_info(CpuId(0)).count > 0);
    zone
}

/// An allocation and a free on CPU 0.
fn touch(zone: &Zone) {
    let req = zonealloc::AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0));
    let p = zone.alloc_with(Order::ZERO, req).unwrap();
    zone.free_on(CpuId(0), p, Order::ZERO).unwrap();
}

#[test]
fn a_remote_pageset_drains_a_batch_on_the_third_run_and_a_local_one_never() {
    let zone = zone_with_a_pageset();
    let info = zone.pcp_info(CpuId(0));
    let (count, batch) = (info.count, info.batch);
    let mut local = Expiry::new(1, &[0]);
    let mut remote = Expiry::new(1, &[0]);
    for run in 1..=3 {
        local.fold(&zone, 0, 0);
        assert!(!local.step(&zone, 0, 0, true));
        remote.fold(&zone, 0, 0);
        assert!(remote.step(&zone, 0, 0, false));
        let left = zone.pcp_info(CpuId(0)).count;
        if run < 3 {
            assert_eq!(left, count, "run {run}");
        } else {
            assert_eq!(left, (count - batch).max(0), "run {run}");
        }
    }
    let ours = remote.ours_total();
    assert_eq!(ours.drains, 1);
    assert_eq!(ours.pages, count.min(batch) as u64);
    // Out of range: nothing, no panic.
    assert!(!remote.step(&zone, 3, 9, false));
    assert!(!remote.first_in_run(3, 9));
    assert!(!remote.traced(3, 9, 1, true));
    // A zone's first line in each worker run, once.
    remote.new_run(0);
    assert!(remote.first_in_run(0, 0));
    assert!(!remote.first_in_run(0, 0));
    remote.new_run(0);
    assert!(remote.first_in_run(0, 0));
}

/// Node 0: pfns 0..4096, node 1: 4096..8192, CPU 0 on node 0 and CPU 1 on node 1; the
/// vmstat workers on, the countdowns started.
fn two_nodes() -> Replayer {
    let span = |node, start| ZoneSpan {
        node,
        zone_type: ZoneType::Normal,
        start,
        pages: 4096,
    };
    let geo = Geometry {
        zones: vec![span(0, 0), span(1, 4096)],
        online: Online::All,
        cpus: 2,
        cpus_from: "test",
        numbering: Numbering::Current,
        cpu_nodes: vec![0, 1],
    };
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &geo, None).unwrap();
    r.decay = true;
    let n = r.numa.as_mut().unwrap();
    n.expiry.start(&r.zones, |c| c);
    r
}

fn at(ts_ns: u64, kind: EventKind<'static>, who: Who) -> Event<'static> {
    Event {
        cpu: Some(0),
        ts_ns: Some(ts_ns),
        page: PagePtr::Present,
        kind,
        who,
    }
}

fn alloc(pfn: u64) -> EventKind<'static> {
    EventKind::Alloc {
        pfn,
        order: 0,
        migratetype: 1,
        gfp_flags: "GFP_HIGHUSER_MOVABLE",
    }
}

/// CPU 0's vmstat worker draining a page of its pageset of node 1 (`kworker/0:1`).
fn worker_drain(ts_ns: u64, pfn: u64) -> Event<'static> {
    let who = Who::new(Task::CpuWorker, Some(32), Ctx::parse(b"d..2."));
    let kind = EventKind::PcpuDrain {
        pfn,
        order: 0,
        migratetype: 1,
    };
    at(ts_ns, kind, who)
}

/// CPU 0 busy on node 0 (an allocation and a free every 100 ms) from `from` to `to`.
fn busy(r: &mut Replayer, from: u64, to: u64) {
    let mut t = from;
    while t < to {
        r.feed(&at(t, alloc(7), Who::UNKNOWN), Inferred::None)
            .unwrap();
        let free = EventKind::Free { pfn: 7, order: 0 };
        r.feed(&at(t + 1, free, Who::UNKNOWN), Inferred::None)
            .unwrap();
        t += 100 * MS;
    }
}

/// CPU 0 (node 0) allocates 32 pages of node 1 at 1 ms and frees them at 2 ms: its pageset
/// of node 1's zone holds them.
fn fill_remote(r: &mut Replayer) {
    for pfn in 4096..4128 {
        r.feed(&at(MS, alloc(pfn), Who::UNKNOWN), Inferred::None)
            .unwrap();
    }
    for pfn in 4096..4128 {
        let free = EventKind::Free { pfn, order: 0 };
        r.feed(&at(2 * MS, free, Who::UNKNOWN), Inferred::None)
            .unwrap();
    }
}

#[test]
fn a_remote_pageset_expires_in_the_replay_and_the_traces_drain_is_matched_or_done() {
    let mut r = two_nodes();
    // CPU 0 (node 0) allocates 32 pages of node 1 and frees them: its pageset of node 1's
    // zone holds them, and its next fold sees the zone move.
    fill_remote(&mut r);
    let remote = r.zones[1].pcp_info(zonealloc::CpuId(0));
    assert!(remote.count > 0);
    let want = remote.count.min(remote.batch) as u64;
    // The worker runs about once a second while CPU 0 is busy: 3 runs down, then a drain.
    busy(&mut r, 10 * MS, 6000 * MS);
    let e = &r.numa.as_ref().unwrap().expiry;
    assert_eq!(
        e.ours[1],
        ExpiryDrains {
            drains: 1,
            pages: want
        },
        "{:?}",
        e.ours
    );
    assert_eq!(e.ours[0], ExpiryDrains::default());
    // The trace's drain of it: matched by ours, counted, not done again.
    let left = r.zones[1].pcp_info(zonealloc::CpuId(0)).count;
    r.feed(&worker_drain(6100 * MS, 4100), Inferred::None)
        .unwrap();
    let e = &r.numa.as_ref().unwrap().expiry;
    assert_eq!(
        e.kernel[1],
        ExpiryDrains {
            drains: 1,
            pages: 1
        }
    );
    assert_eq!(e.aligned, 0);
    assert_eq!(r.zones[1].pcp_info(zonealloc::CpuId(0)).count, left);
    // A second one in a later run, with no drain of ours since: done where the trace does.
    busy(&mut r, 6200 * MS, 6300 * MS);
    r.feed(&worker_drain(7100 * MS, 4101), Inferred::None)
        .unwrap();
    let e = &r.numa.as_ref().unwrap().expiry;
    assert_eq!(e.kernel[1].drains, 2);
    assert_eq!(e.aligned, 1);
}

#[test]
fn a_remote_pageset_with_pages_at_the_snapshot_waits_for_the_trace_or_a_move() {
    let zone = zone_with_a_pageset();
    let count = zone.pcp_info(CpuId(0)).count;
    // CPU 0 on node 0, the zone on node 1: remote, with pages, `expire` unknown.
    let mut e = Expiry::new(1, &[1]);
    e.start(std::slice::from_ref(&zone), |_| 0);
    for _ in 0..5 {
        e.fold(&zone, 0, 0);
        assert!(!e.step(&zone, 0, 0, false));
    }
    assert_eq!(
        zone.pcp_info(CpuId(0)).count,
        count,
        "no countdown while unknown"
    );
    // The trace's drain teaches it: done here, known and at 0 after.
    assert!(e.traced(0, 0, 1, true));
    e.restart(&zone, 0, 0, 1);
    assert_eq!(e.aligned, 1);
    // An allocation off the pageset and a free onto it move no zone counter: the countdown
    // stays at 0.
    touch(&zone);
    for _ in 0..4 {
        e.fold(&zone, 0, 0);
        assert!(!e.step(&zone, 0, 0, false));
    }
    assert_eq!(e.ours_total().drains, 1);
    // A refill moves NR_FREE_PAGES: 3, then 6.1's countdown steps are no change, its drain
    // is.
    zone.drain_all();
    e.fold(&zone, 0, 0); // (the drain's own move)
    touch(&zone);
    e.counts_pending = false;
    let steps: Vec<bool> = (0..3)
        .map(|_| {
            e.fold(&zone, 0, 0);
            e.step(&zone, 0, 0, false)
        })
        .collect();
    assert_eq!(steps, [false, false, true]);
    assert_eq!(e.ours_total().drains, 2);
    // An empty remote pageset starts known at 0.
    let mut empty = Expiry::new(1, &[1]);
    zone.drain_all();
    empty.start(std::slice::from_ref(&zone), |_| 0);
    assert!(empty.known.iter().all(|&k| k));
}

#[test]
fn an_idle_cpus_worker_lines_a_second_apart_are_two_runs() {
    let mut r = two_nodes();
    fill_remote(&mut r);
    // The trace's expiry drain of CPU 0's node 1 pageset, then its next a second later with
    // nothing on CPU 0 between (7.2-4g-2node p_crossnode's CPU 3): each the first line of
    // its own run, each done where the trace does it.
    r.feed(&worker_drain(3 * MS, 4100), Inferred::None).unwrap();
    r.feed(&worker_drain(3 * MS + 2000, 4101), Inferred::None)
        .unwrap();
    assert_eq!(r.numa.as_ref().unwrap().expiry.aligned, 1);
    r.feed(&worker_drain(1003 * MS, 4102), Inferred::None)
        .unwrap();
    let e = &r.numa.as_ref().unwrap().expiry;
    assert_eq!(e.kernel[1].drains, 2);
    assert_eq!(e.aligned, 2);
}
