//! Zonelists from crafted node tables, and the walk over them.

use super::*;
use crate::trace::migratetype::Numbering;
use crate::trace::replay::geometry::{Online, ZoneSpan};
use zonealloc::{CpuId, MigrateType, ZoneConfig};

/// A geometry of `zones` (`(node, type, start, pages)`), one CPU per node.
fn geometry(zones: &[(u32, ZoneType, u64, u64)], nodes: u32) -> Geometry {
    Geometry {
        zones: zones
            .iter()
            .map(|&(node, zone_type, start, pages)| ZoneSpan {
                node,
                zone_type,
                start,
                pages,
            })
            .collect(),
        online: Online::All,
        cpus: nodes,
        cpus_from: "test",
        numbering: Numbering::Current,
        cpu_nodes: (0..nodes).collect(),
    }
}

/// `distance` rows as `nodes/nodeN/`, node N having CPU N.
fn snapshot(rows: &[&[u32]]) -> Vec<NodeSnapshot> {
    rows.iter()
        .enumerate()
        .map(|(i, r)| NodeSnapshot {
            id: i as u32,
            cpus: vec![i as u32],
            distance: r.to_vec(),
            numastat: None,
        })
        .collect()
}

/// The zones of `geo`, all free.
fn zones(geo: &Geometry) -> Vec<Zone> {
    geo.zones
        .iter()
        .map(|s| {
            let cfg = ZoneConfig::default().with_cpus(geo.cpus);
            let z = Zone::new(s.zone_type, Pfn(s.start), Pfn(s.end()), cfg).unwrap();
            z.add_free_range(Pfn(s.start), Pfn(s.end())).unwrap();
            z
        })
        .collect()
}

fn movable(cpu: u32) -> AllocRequest {
    AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(cpu))
}

/// Allocates zone `z` empty (order 0, until it refuses), on CPU `cpu`.
fn exhaust(zone: &Zone, cpu: u32) {
    let mut n = 0;
    while zone.alloc_with(Order::ZERO, movable(cpu)).is_ok() {
        n += 1;
        assert!(n <= 1 << 14, "the zone never ran out");
    }
}

/// Three nodes: node 1 nearer node 2 (20) than node 0 (30); node 1 has DMA32 and Normal.
fn three_nodes() -> (Geometry, Zonelists) {
    let geo = geometry(
        &[
            (0, ZoneType::Normal, 0, 2048),
            (1, ZoneType::Dma32, 2048, 1024),
            (1, ZoneType::Normal, 3072, 1024),
            (2, ZoneType::Normal, 4096, 2048),
        ],
        3,
    );
    let rows: [&[u32]; 3] = [&[10, 30, 20], &[30, 10, 20], &[20, 20, 10]];
    let lists = Zonelists::build(&geo, &snapshot(&rows)).unwrap();
    (geo, lists)
}

#[test]
fn zonelists_order_nodes_by_distance_and_zones_high_to_low() {
    let (_, lists) = three_nodes();
    let any = movable(0);
    // Node 1: its Normal, its DMA32, then node 2 (20) before node 0 (30).
    assert_eq!(lists.list(1, false, &any), vec![2, 1, 3, 0]);
    // Node 0: node 2 (20) before node 1 (30).
    assert_eq!(lists.list(0, false, &any), vec![0, 3, 2, 1]);
    // Node 2: nodes 0 and 1 at 20 both: the tie goes by node_load, then the lowest id.
    assert_eq!(lists.list(2, false, &any), vec![3, 0, 2, 1]);
    // __GFP_THISNODE: the node's own zones; GFP_DMA32: no Normal zone.
    assert_eq!(lists.list(1, true, &any), vec![2, 1]);
    let dma32 = movable(1).zone_limit(ZoneType::Dma32);
    assert_eq!(lists.list(1, false, &dma32), vec![1]);
}

#[test]
fn an_allocation_falls_back_across_nodes_in_distance_order() {
    let (geo, lists) = three_nodes();
    let zs = zones(&geo);
    let node_of = |p: Pfn| geo.zones[geo.zone_of(p.0).unwrap()].node;
    let req = movable(1);
    let got = lists.alloc(&zs, None, 1, "GFP_HIGHUSER_MOVABLE", Order::ZERO, req);
    assert_eq!(node_of(got.unwrap()), 1, "node-local while it has memory");
    exhaust(&zs[2], 1);
    exhaust(&zs[1], 1);
    let got = lists.alloc(&zs, None, 1, "GFP_HIGHUSER_MOVABLE", Order::ZERO, req);
    assert_eq!(
        node_of(got.unwrap()),
        2,
        "the nearer node next (20, not 30)"
    );
    // __GFP_THISNODE does not fall back.
    let this = lists.alloc(
        &zs,
        None,
        1,
        "GFP_HIGHUSER|__GFP_THISNODE",
        Order::ZERO,
        req,
    );
    assert!(this.is_err(), "{this:?}");
    exhaust(&zs[3], 1);
    let got = lists.alloc(&zs, None, 1, "GFP_HIGHUSER_MOVABLE", Order::ZERO, req);
    assert_eq!(node_of(got.unwrap()), 0, "the farthest node last");
    exhaust(&zs[0], 1);
    let none = lists.alloc(&zs, None, 1, "GFP_HIGHUSER_MOVABLE", Order::ZERO, req);
    assert!(none.is_err());
}

#[test]
fn the_kernels_zone_comes_first_and_the_zones_after_it_next() {
    let (geo, lists) = three_nodes();
    let zs = zones(&geo);
    let req = movable(1);
    // The trace names node 0's zone for a CPU of node 1: ours takes it there, though node
    // 1 has memory (the kernel's choice stands while ours can follow it).
    let got = lists.alloc(&zs, Some(0), 1, "GFP_HIGHUSER_MOVABLE", Order::ZERO, req);
    assert_eq!(geo.zone_of(got.unwrap().0), Some(0));
    // Node 1's Normal named but empty here: on to its DMA32, the next in the list.
    exhaust(&zs[2], 1);
    let got = lists.alloc(&zs, Some(2), 1, "GFP_HIGHUSER_MOVABLE", Order::ZERO, req);
    assert_eq!(geo.zone_of(got.unwrap().0), Some(1));
    // Node 0's zone named, the last of node 1's list, and empty: nothing after it.
    exhaust(&zs[0], 1);
    let got = lists.alloc(&zs, Some(0), 1, "GFP_HIGHUSER_MOVABLE", Order::ZERO, req);
    assert!(got.is_err(), "{got:?}");
    assert_eq!(
        lists.alloc(&zs, Some(9), 1, "", Order::ZERO, req),
        Err(AllocError::NoZone)
    );
}

/// A THP the trace shows from node 1's DMA32 passed node 1's Normal over first: its check
/// at the high mark failed for order 9 (4096 free pages, 511 taken off, against 3700) and
/// set its `ZONE_BELOW_HIGH`, so CPU 1's next refill there does not raise `high`
/// (`nr_pcp_alloc`). Fails on the old code (`high` grows by a batch).
#[test]
fn the_zones_before_the_kernels_are_passed_over() {
    let geo = geometry(
        &[
            (0, ZoneType::Normal, 0, 0x4000),
            (1, ZoneType::Dma32, 0x4000, 0x4000),
            (1, ZoneType::Normal, 0x10000, 0x10000),
        ],
        2,
    );
    let lists = Zonelists::build(&geo, &snapshot(&[&[10, 20], &[20, 10]])).unwrap();
    let mut zs = zones(&geo);
    let s = geo.zones[2];
    let mut cfg = ZoneConfig::default().with_cpus(geo.cpus);
    cfg.watermarks = zonealloc::WatermarkConfig::fixed(3000, 3400, 3700);
    zs[2] = Zone::new(s.zone_type, Pfn(s.start), Pfn(s.end()), cfg).unwrap();
    zs[2].add_free_range(Pfn(s.start), Pfn(s.end())).unwrap();
    for _ in 0..60 {
        zs[2]
            .alloc_with(Order::new(10).unwrap(), movable(1))
            .unwrap();
    }
    assert_eq!(zs[2].free_pages(), 4096);
    let high = zs[2].pcp_info(CpuId(1)).high;
    let thp = "GFP_TRANSHUGE_LIGHT|__GFP_THISNODE";
    let got = lists.alloc(&zs, Some(1), 1, thp, Order::new(9).unwrap(), movable(1));
    assert_eq!(geo.zone_of(got.unwrap().0), Some(1));
    zs[2].alloc_with(Order::ZERO, movable(1)).unwrap();
    let info = zs[2].pcp_info(CpuId(1));
    assert!(info.count > 0, "CPU 1's list was refilled");
    assert_eq!(info.high, high.clamp(info.high_min, info.high_max));
}

#[test]
fn a_distance_table_the_kernel_would_refuse_is_an_error() {
    let geo = geometry(
        &[
            (0, ZoneType::Normal, 0, 1024),
            (1, ZoneType::Normal, 1024, 1024),
        ],
        2,
    );
    let short: [&[u32]; 2] = [&[10, 20], &[20]];
    let e = Zonelists::build(&geo, &snapshot(&short)).unwrap_err();
    assert!(e.contains("node1/distance"), "{e}");
    let bad: [&[u32]; 2] = [&[10, 5], &[5, 10]];
    let e = Zonelists::build(&geo, &snapshot(&bad)).unwrap_err();
    assert!(e.contains("distance"), "{e}");
    // Without nodes/: every other node at 20.
    let none = Zonelists::build(&geo, &[]).unwrap();
    assert_eq!(none.list(1, false, &movable(1)), vec![1, 0]);
}

/// The replay: a traced allocation takes its page in the kernel's zone, below our watermarks
/// too (the kernel's trace shows it did), and once that node has no page left a traced
/// failure, which ours places itself, walks the CPU's node's zonelist to node 0.
#[test]
fn a_replayed_allocation_falls_back_to_node_0_when_node_1_is_exhausted() {
    use crate::trace::parse::{Event, PagePtr};
    use crate::trace::replay::infer::kernel::Inferred;
    use crate::trace::replay::replayer::tests::{alloc0, at};
    use crate::trace::replay::replayer::Replayer;
    use crate::trace::variant::Variant;

    let geo = geometry(
        &[
            (0, ZoneType::Normal, 0, 2048),
            (1, ZoneType::Normal, 2048, 1024),
        ],
        2,
    );
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &geo, None).unwrap();
    let alloc = |pfn, page| Event {
        page,
        ..at(1, None, alloc0(pfn, 1, "GFP_HIGHUSER_MOVABLE"))
    };
    // Every page of node 1, traced as handed out there to CPU 1 (of node 1): all of them
    // come from node 1, the last ones below its watermarks.
    for pfn in 2048..3072 {
        r.feed(&alloc(pfn, PagePtr::Present), Inferred::None)
            .unwrap();
    }
    assert_eq!(r.counts.alloc_failures, 0);
    let ours = &r.numa.as_ref().unwrap().ours.nodes;
    assert_eq!((ours[1].numa_hit, ours[0].numa_miss), (1024, 0), "{ours:?}");
    // A failure in the kernel's trace: ours places it, on node 0 by the zonelist (node 1
    // has no page left).
    r.feed(&alloc(0, PagePtr::Null), Inferred::None).unwrap();
    assert_eq!(r.counts.kernel_failures_satisfied, 1);
    let ours = &r.numa.as_ref().unwrap().ours.nodes;
    assert_eq!(
        (ours[0].numa_miss, ours[1].numa_foreign),
        (1, 1),
        "{ours:?}"
    );
}
