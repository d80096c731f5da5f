//! The multi-node layer against what the kernel's functions compute by hand from the source.

use std::vec::Vec;

use super::*;
use crate::config::{WatermarkConfig, ZoneConfig};
use crate::types::MigrateType;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Node 0: 1 MiB..256 MiB (DMA and DMA32); node 1: 32 MiB at 4 GiB (Normal). CPUs 0, 1 on
/// node 0 and 2, 3 on node 1; SLIT 10 20 / 20 10.
fn two_nodes(cfg: ZoneConfig) -> Machine {
    two_nodes_with(cfg, NumaConfig::default())
}

fn two_nodes_with(cfg: ZoneConfig, numa: NumaConfig) -> Machine {
    let regions = [
        NodeRegion {
            node: 0,
            region: MemoryRegion::usable(MIB, 255 * MIB),
        },
        NodeRegion {
            node: 1,
            region: MemoryRegion::usable(4 * GIB, 32 * MIB),
        },
    ];
    let dist = Distances::new(2, &[10, 20, 20, 10]).unwrap();
    Machine::from_memory_map(&regions, dist, &[0, 0, 1, 1], cfg, numa).unwrap()
}

fn nid(m: &Machine, pfn: Pfn) -> u32 {
    m.node_of(pfn).unwrap().id()
}

#[test]
fn two_node_zonelists_follow_build_zonelists() {
    let m = two_nodes(ZoneConfig::default());
    assert_eq!(m.node_order(0).unwrap(), [0, 1]);
    assert_eq!(m.node_order(1).unwrap(), [1, 0]);
    use ZoneType::{Dma, Dma32, Normal};
    assert_eq!(m.zonelist(0, false), [(0, Dma32), (0, Dma), (1, Normal)]);
    assert_eq!(m.zonelist(1, false), [(1, Normal), (0, Dma32), (0, Dma)]);
    // ZONELIST_NOFALLBACK (__GFP_THISNODE).
    assert_eq!(m.zonelist(1, true), [(1, Normal)]);
    assert_eq!(m.zonelist(0, true), [(0, Dma32), (0, Dma)]);
    m.check().unwrap();
}

#[test]
fn asymmetric_four_node_order_follows_find_next_best_node() {
    // Node 2 has no CPUs (no PENALTY_FOR_NODE_WITH_CPUS). By hand, node_load shared across
    // the four build_zonelists calls in id order (MAX_NUMNODES = 1024):
    // node 0: 1 and 3 tie at 21*1024, lowest id wins; load[1]++ (new group), 3 same group,
    //   2 (30) last, load[2]++                                      -> 0 1 3 2, load 0 1 1 0
    // node 1: 2 = 20*1024+1 beats 0 = (25+1+1)*1024 and 3 = 31*1024+1; load[2]++; then 0,
    //   load[0]++; then 3, load[3]++                                -> 1 2 0 3, load 1 1 2 1
    // node 2: 3 = 21*1024+1 beats 1 = (20+1+1)*1024+1 (1 is "under us"); load[3]++; 1 same
    //   group; 0 last, load[0]++                                    -> 2 3 1 0
    // node 3: 0 = 22*1024+2, 2 = 26*1024+2, 1 = 32*1024+1           -> 3 0 2 1
    let d = Distances::new(
        4,
        &[
            10, 20, 30, 20, //
            25, 10, 20, 30, //
            30, 20, 10, 20, //
            20, 30, 25, 10,
        ],
    )
    .unwrap();
    let orders = build_node_orders(&d, &[true, true, false, true], &[true; 4]);
    assert_eq!(
        orders,
        [[0, 1, 3, 2], [1, 2, 0, 3], [2, 3, 1, 0], [3, 0, 2, 1]]
    );
}

#[test]
fn node_load_spreads_equidistant_nodes_round_robin() {
    // Four nodes all 20 apart, all with CPUs: without node_load every node would fall back
    // to the lowest ids first; with it each picks a different first remote node.
    let mut rows = [20u32; 16];
    for i in 0..4 {
        rows[i * 5] = 10;
    }
    let d = Distances::new(4, &rows).unwrap();
    let orders = build_node_orders(&d, &[true; 4], &[true; 4]);
    assert_eq!(
        orders,
        [[0, 1, 2, 3], [1, 2, 3, 0], [2, 3, 0, 1], [3, 0, 1, 2]]
    );
}

#[test]
fn bad_tables_and_maps_are_refused() {
    assert!(Distances::new(2, &[10, 20, 20]).is_err());
    assert!(Distances::new(2, &[10, 10, 20, 10]).is_err()); // remote not above local
    assert!(Distances::new(2, &[11, 20, 20, 10]).is_err()); // diagonal not LOCAL_DISTANCE
    let regions = [NodeRegion {
        node: 0,
        region: MemoryRegion::usable(MIB, 63 * MIB),
    }];
    let d = || Distances::new(2, &[10, 20, 20, 10]).unwrap();
    let cfg = ZoneConfig::default();
    let nd = NumaConfig::default();
    // Node 1 has no memory; a CPU on node 2; a region of node 5.
    assert!(Machine::from_memory_map(&regions, d(), &[0, 1], cfg, nd).is_err());
    assert!(Machine::from_memory_map(&regions, d(), &[0, 2], cfg, nd).is_err());
    let far = [NodeRegion {
        node: 5,
        region: MemoryRegion::usable(MIB, 63 * MIB),
    }];
    assert!(Machine::from_memory_map(&far, d(), &[0], cfg, nd).is_err());
}

#[test]
fn min_free_kbytes_is_split_across_both_nodes_by_managed_pages() {
    let cfg = ZoneConfig::default().with_watermarks(WatermarkConfig::Auto {
        min_free_kbytes: Some(8192),
    });
    let m = two_nodes(cfg);
    let zones: Vec<&Zone> = m.nodes().flat_map(|x| x.zones()).collect();
    let lowmem: u64 = zones.iter().map(|z| z.managed_pages()).sum();
    let pages_min = 8192 * 1024 / 4096;
    let mut total = 0;
    for z in &zones {
        // __setup_per_zone_wmarks: tmp = pages_min * managed / lowmem_pages, over all nodes.
        let want = pages_min * z.managed_pages() / lowmem;
        assert_eq!(z.watermarks().min, want, "{:?}", z.zone_type());
        total += want;
    }
    assert!(total <= pages_min && total + zones.len() as u64 > pages_min);
    // A node booted alone gives its zones all of pages_min (the old, one-node split).
    let alone = Node::from_memory_map(
        1,
        &[MemoryRegion::usable(4 * GIB, 32 * MIB)],
        cfg.with_pcp(crate::config::PcpConfig::new().with_cpus(4)),
    )
    .unwrap();
    let n1 = m.node(1).unwrap().zone(ZoneType::Normal).unwrap();
    assert_eq!(
        alone.zone(ZoneType::Normal).unwrap().watermarks().min,
        pages_min
    );
    assert!(n1.watermarks().min < pages_min / 4);
    m.check().unwrap();
}

#[test]
fn pcp_high_is_split_across_the_cpus_of_the_node() {
    // 7.2 and 6.1 zone_highsize: total / cpumask_weight(cpumask_of_node(nid)). CPUs 0..3 on
    // node 0, CPU 4 alone on node 1: node 1's high is four times node 0's per-CPU share
    // where both zones have the same size and fraction.
    let regions = [
        NodeRegion {
            node: 0,
            region: MemoryRegion::usable(4 * GIB, 64 * MIB),
        },
        NodeRegion {
            node: 1,
            region: MemoryRegion::usable(8 * GIB, 64 * MIB),
        },
    ];
    let d = Distances::new(2, &[10, 20, 20, 10]).unwrap();
    let mut cfg = ZoneConfig::default();
    cfg.pcp = cfg.pcp.with_high_fraction(8).with_batch(Some(1));
    let m = Machine::from_memory_map(&regions, d, &[0, 0, 0, 0, 1], cfg, NumaConfig::default())
        .unwrap();
    let z0 = m.node(0).unwrap().zone(ZoneType::Normal).unwrap();
    let z1 = m.node(1).unwrap().zone(ZoneType::Normal).unwrap();
    let managed = z0.managed_pages();
    assert_eq!(z1.managed_pages(), managed);
    assert_eq!(z0.pcp_info(CpuId(0)).high_min as u64, managed / 8 / 4);
    assert_eq!(z1.pcp_info(CpuId(0)).high_min as u64, managed / 8);
    // Every CPU has a pageset in every zone of every node.
    assert_eq!(z0.cpus(), 5);
    assert_eq!(z1.cpus(), 5);
}

#[test]
fn numastat_counts_local_remote_and_interleaved_allocations() {
    let m = two_nodes(ZoneConfig::default());
    let req = |cpu| AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(cpu));
    // Local on CPU 2 (node 1): hit + local on node 1.
    let mut local = TaskPolicy::new(MemPolicy::Local);
    let p = m.alloc_policy(Order::ZERO, req(2), &mut local).unwrap();
    assert_eq!(nid(&m, p), 1);
    // Preferred node 1 from CPU 0 (node 0): hit on node 1, but other_node.
    let mut pref = TaskPolicy::new(MemPolicy::Preferred(1));
    let p = m.alloc_policy(Order::ZERO, req(0), &mut pref).unwrap();
    assert_eq!(nid(&m, p), 1);
    // A DMA32 request preferring node 1: node 1 has no such zone, so the preferred zone
    // (first_zones_zonelist) is node 0's DMA32 and the allocation is a hit there.
    let dma32 = req(2).zone_limit(ZoneType::Dma32);
    let p = m.alloc(Order::ZERO, dma32, NodeTarget::node(1)).unwrap();
    assert_eq!(nid(&m, p), 0);
    // Interleave over both nodes from CPU 0: 0, 1, 0, 1 (il_prev starts at MAX_NUMNODES-1).
    let mut il = TaskPolicy::new(MemPolicy::Interleave(NodeMask::of(&[0, 1])));
    let got: Vec<u32> = (0..4)
        .map(|_| nid(&m, m.alloc_policy(Order::ZERO, req(0), &mut il).unwrap()))
        .collect();
    assert_eq!(got, [0, 1, 0, 1]);
    let s0 = m.numastat(0).unwrap();
    let s1 = m.numastat(1).unwrap();
    assert_eq!(
        (s0.numa_hit, s0.local_node, s0.other_node, s0.interleave_hit),
        (3, 2, 1, 2)
    );
    assert_eq!(
        (s1.numa_hit, s1.local_node, s1.other_node, s1.interleave_hit),
        (4, 1, 3, 2)
    );
    assert_eq!((s0.numa_miss, s0.numa_foreign, s1.numa_miss), (0, 0, 0));
    assert_eq!(
        m.numastat_text(1).unwrap(),
        "numa_hit 4\nnuma_miss 0\nnuma_foreign 0\ninterleave_hit 2\nlocal_node 1\nother_node 3\n"
    );
    assert_eq!(m.numastat_text(2), None);
    m.check().unwrap();
}

/// Takes every page `target` allows at order 0 on CPU `cpu` (until the request fails).
fn exhaust(m: &Machine, cpu: u32, target: NodeTarget) -> Vec<Pfn> {
    let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(cpu));
    let mut got = Vec::new();
    while let Ok(p) = m.alloc(Order::ZERO, req, target) {
        got.push(p);
    }
    got
}

#[test]
fn a_full_preferred_node_counts_miss_and_foreign_and_bind_refuses_other_nodes() {
    let m = two_nodes(ZoneConfig::default());
    let taken = exhaust(&m, 2, NodeTarget::this_node(1));
    assert!(taken.len() > 7000 && taken.iter().all(|&p| nid(&m, p) == 1));
    // Bind to node 1: nothing left there, and node 0 is never used.
    let mut bind = TaskPolicy::new(MemPolicy::Bind(NodeMask::of(&[1])));
    let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(2));
    assert!(matches!(
        m.alloc_policy(Order::ZERO, req, &mut bind),
        Err(AllocError::OutOfMemory { .. })
    ));
    // A DMA32 request is below policy_zone (Normal): apply_policy_zone leaves the mask out.
    let p = m
        .alloc_policy(Order::ZERO, req.zone_limit(ZoneType::Dma32), &mut bind)
        .unwrap();
    assert_eq!(nid(&m, p), 0);
    let before = m.numastat(0).unwrap();
    // Local on CPU 2 (node 1) falls back to node 0: miss on 0, foreign on 1.
    let mut local = TaskPolicy::new(MemPolicy::Local);
    let p = m.alloc_policy(Order::ZERO, req, &mut local).unwrap();
    assert_eq!(nid(&m, p), 0);
    let (s0, s1) = (m.numastat(0).unwrap(), m.numastat(1).unwrap());
    assert_eq!(s0.numa_miss, before.numa_miss + 1);
    assert_eq!(s0.other_node, before.other_node + 1);
    assert_eq!(s1.numa_foreign, 1);
    // Bind to node 0 from CPU 2: node 0 only.
    let mut bind0 = TaskPolicy::new(MemPolicy::Bind(NodeMask::of(&[0])));
    let p = m.alloc_policy(Order::ZERO, req, &mut bind0).unwrap();
    assert_eq!(nid(&m, p), 0);
    for p in taken {
        m.free_on(CpuId(2), p, Order::ZERO).unwrap();
    }
    m.check().unwrap();
}

#[test]
fn nofragment_retries_on_the_preferred_node_before_using_another() {
    // Node 0: 32 MiB of DMA32 below 4 GiB and 32 MiB of Normal above (alloc_flags_nofragment
    // sets ALLOC_NOFRAGMENT only where the preferred Normal zone's node has a populated
    // DMA32); node 1: 64 MiB of Normal.
    let regions = [
        NodeRegion {
            node: 0,
            region: MemoryRegion::usable(4 * GIB - 32 * MIB, 64 * MIB),
        },
        NodeRegion {
            node: 1,
            region: MemoryRegion::usable(8 * GIB, 64 * MIB),
        },
    ];
    let d = Distances::new(2, &[10, 20, 20, 10]).unwrap();
    let m = Machine::from_memory_map(
        &regions,
        d,
        &[0, 0, 1, 1],
        ZoneConfig::default(),
        NumaConfig::default(),
    )
    .unwrap();
    use ZoneType::{Dma32, Normal};
    assert_eq!(m.zonelist(0, false), [(0, Normal), (0, Dma32), (1, Normal)]);
    // Node 0: every page taken, then every other one freed (no free pageblock left, only
    // scattered Movable pages). Node 1 has whole free pageblocks.
    let taken = exhaust(&m, 0, NodeTarget::this_node(0));
    for &p in taken.iter().filter(|p| p.0 % 2 == 0) {
        m.free_on(CpuId(0), p, Order::ZERO).unwrap();
    }
    m.drain_all();
    // An Unmovable request on CPU 0: the NOFRAGMENT pass cannot steal a page in node 0's
    // Normal or DMA32 and, reaching node 1's zone, retries without it
    // (get_page_from_freelist), so the page comes from node 0. (Walking on into node 1
    // with NOFRAGMENT would claim a whole free pageblock there.)
    let req = AllocRequest::new(MigrateType::Unmovable).on_cpu(CpuId(0));
    let p = m.alloc(Order::ZERO, req, NodeTarget::node(0)).unwrap();
    assert_eq!(nid(&m, p), 0);
    assert_eq!(m.numastat(0).unwrap().numa_hit, taken.len() as u64 + 1);
    m.check().unwrap();
}

#[test]
fn frees_go_to_the_freeing_cpu_and_remote_pagesets_expire_after_three_ticks() {
    // 6.1: no decay_pcp_high, so only the expiry moves pages.
    let cfg = ZoneConfig::for_kernel(KernelVersion::V6_1);
    let m = two_nodes_with(cfg, NumaConfig::for_kernel(KernelVersion::V6_1));
    let z1 = m.node(1).unwrap().zone(ZoneType::Normal).unwrap();
    let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0));
    let pages: Vec<Pfn> = (0..4)
        .map(|_| m.alloc(Order::ZERO, req, NodeTarget::node(1)).unwrap())
        .collect();
    for &p in &pages {
        assert_eq!(nid(&m, p), 1);
        m.free_on(CpuId(0), p, Order::ZERO).unwrap();
    }
    // The frees sit on CPU 0's pageset of node 1's zone.
    let count = z1.pcp_info(CpuId(0)).count;
    let batch = z1.pcp_info(CpuId(0)).batch;
    assert!(count >= 4);
    assert_eq!(z1.pcp_info(CpuId(2)).count, 0);
    // Tick 1 sees the refill (expire = 3) and counts down to 2; tick 2 to 1; tick 3 drains.
    // 6.1 counts no change for a countdown step.
    assert_eq!(m.vmstat_tick(CpuId(0)), 0);
    assert_eq!(m.vmstat_tick(CpuId(0)), 0);
    assert_eq!(z1.pcp_info(CpuId(0)).count, count);
    assert_eq!(m.vmstat_tick(CpuId(0)), 1);
    assert_eq!(z1.pcp_info(CpuId(0)).count, count - count.min(batch));
    // CPU 0's own node's pagesets are never expired.
    let z0 = m.node(0).unwrap().zone(ZoneType::Dma32).unwrap();
    let local = m.alloc(Order::ZERO, req, NodeTarget::node(0)).unwrap();
    m.free_on(CpuId(0), local, Order::ZERO).unwrap();
    let own = z0.pcp_info(CpuId(0)).count;
    for _ in 0..5 {
        m.vmstat_tick(CpuId(0));
    }
    assert!(own > 0);
    assert_eq!(z0.pcp_info(CpuId(0)).count, own);
    m.check().unwrap();
}

#[test]
fn the_expiry_knobs_follow_the_kernel() {
    // 7.2 counts each countdown step as a change; with the drain off nothing expires.
    let mut cfg = ZoneConfig::for_kernel(KernelVersion::V7_2);
    cfg.pcp.decay = false;
    let m = two_nodes_with(cfg, NumaConfig::for_kernel(KernelVersion::V7_2));
    let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0));
    let p = m.alloc(Order::ZERO, req, NodeTarget::node(1)).unwrap();
    m.free_on(CpuId(0), p, Order::ZERO).unwrap();
    assert_eq!(m.vmstat_tick(CpuId(0)), 1);
    assert_eq!(m.vmstat_tick(CpuId(0)), 1);
    assert_eq!(m.vmstat_tick(CpuId(0)), 1);
    assert!(!NumaConfig::for_kernel(KernelVersion::V6_1).expire_counts_pending);

    let off = NumaConfig {
        expire_drain: false,
        ..NumaConfig::default()
    };
    let m = two_nodes_with(cfg, off);
    let z1 = m.node(1).unwrap().zone(ZoneType::Normal).unwrap();
    let p = m.alloc(Order::ZERO, req, NodeTarget::node(1)).unwrap();
    m.free_on(CpuId(0), p, Order::ZERO).unwrap();
    let count = z1.pcp_info(CpuId(0)).count;
    for _ in 0..5 {
        assert_eq!(m.vmstat_tick(CpuId(0)), 0);
    }
    assert_eq!(z1.pcp_info(CpuId(0)).count, count);
    m.check().unwrap();
}

#[test]
fn bad_requests_get_errors_and_change_nothing() {
    let m = two_nodes(ZoneConfig::default());
    let req = AllocRequest::new(MigrateType::Movable);
    let nozone = |r: Result<Pfn, AllocError>| matches!(r, Err(AllocError::NoZone));
    assert!(nozone(m.alloc(
        Order::ZERO,
        req.on_cpu(CpuId(9)),
        NodeTarget::node(0)
    )));
    assert!(nozone(m.alloc(
        Order::ZERO,
        req.on_cpu(CpuId(0)),
        NodeTarget::node(7)
    )));
    let none = NodeTarget {
        nodemask: Some(NodeMask::of(&[])),
        ..NodeTarget::node(0)
    };
    assert!(nozone(m.alloc(Order::ZERO, req.on_cpu(CpuId(0)), none)));
    let mut empty = TaskPolicy::new(MemPolicy::Interleave(NodeMask::of(&[])));
    assert!(nozone(m.alloc_policy(
        Order::ZERO,
        req.on_cpu(CpuId(0)),
        &mut empty
    )));
    let mut bind = TaskPolicy::new(MemPolicy::Bind(NodeMask::of(&[70])));
    assert!(nozone(m.alloc_policy(
        Order::ZERO,
        req.on_cpu(CpuId(0)),
        &mut bind
    )));
    assert!(m
        .free_on(CpuId(0), Pfn(3 * GIB / 4096), Order::ZERO)
        .is_err());
    assert_eq!(m.vmstat_tick(CpuId(9)), 0);
    assert_eq!(m.numastat(0).unwrap(), NumaStat::default());
    assert_eq!(m.check().unwrap().allocated_pages, 0);
    // A node whose zones have pagesets for fewer CPUs than the machine has is refused.
    let small = |id| {
        Node::from_memory_map(
            id,
            &[MemoryRegion::usable(MIB << (8 * id), 31 * MIB)],
            ZoneConfig::default(),
        )
        .unwrap()
    };
    let d = Distances::new(2, &[10, 20, 20, 10]).unwrap();
    assert!(Machine::new(
        std::vec![small(0), small(1)],
        d,
        &[0, 1],
        NumaConfig::default()
    )
    .is_err());
}

#[test]
fn interleave_positions_follow_next_node_in_and_offset_il_node() {
    let mask = NodeMask::of(&[1, 3, 6]);
    let mut prev = 1023; // do_set_mempolicy: MAX_NUMNODES - 1
    let picks: Vec<u32> = (0..5)
        .map(|_| interleave_nodes(&mut prev, mask).unwrap())
        .collect();
    assert_eq!(picks, [1, 3, 6, 1, 3]);
    assert_eq!(mask.next_in(63), Some(1));
    assert_eq!(interleave_nodes(&mut prev, NodeMask::default()), None);
    // offset_il_node: the (n % weight)-th node; the local node for an empty mask.
    let got: Vec<u32> = (0..4).map(|n| offset_il_node(mask, n, 0)).collect();
    assert_eq!(got, [1, 3, 6, 1]);
    assert_eq!(offset_il_node(NodeMask::default(), 5, 2), 2);
}

/// Node `id` of [`two_nodes`], built as an embedder without `Machine::from_memory_map`
/// builds it (each zone with pagesets for the four CPUs, `high` split over its node's two).
/// Nodes are large (some 45 KiB): tests make them one at a time.
fn plain_node(id: u32, cfg: ZoneConfig) -> Node {
    let mut c = cfg;
    c.pcp = c.pcp.with_cpus(4).with_split_cpus(Some(2));
    let map = match id {
        0 => MemoryRegion::usable(MIB, 255 * MIB),
        _ => MemoryRegion::usable(4 * GIB, 32 * MIB),
    };
    Node::from_memory_map(id, &[map], c).unwrap()
}

fn plain_nodes(ids: &[u32], cfg: ZoneConfig) -> impl Iterator<Item = Node> + '_ {
    ids.iter().map(move |&i| plain_node(i, cfg))
}

#[test]
fn a_machine_in_caller_storage_matches_one_on_the_heap() {
    use crate::platform::StaticStorage;
    static NODES: StaticStorage<NumaNode<DefaultPlatform>, 4> = StaticStorage::new();
    static SLOTS: StaticStorage<NumaSlot, 8> = StaticStorage::new();
    // 6.1: no decay_pcp_high, so only the expiry moves pages.
    let cfg = ZoneConfig::for_kernel(KernelVersion::V6_1);
    let numa = NumaConfig::for_kernel(KernelVersion::V6_1);
    let heap = two_nodes_with(cfg, numa);
    let dist = Distances::new(2, &[10, 20, 20, 10]).unwrap();
    let m = Machine::from_uninit(
        plain_nodes(&[0, 1], cfg),
        dist,
        &[0, 0, 1, 1],
        numa,
        NODES.take().unwrap(),
        SLOTS.take().unwrap(),
    )
    .unwrap();
    assert_eq!(m.cpus(), 4);
    for node in 0..2 {
        assert_eq!(m.node_order(node), heap.node_order(node));
        assert!(m
            .zonelist_iter(node, false)
            .eq(heap.zonelist_iter(node, false)));
        let (a, b) = (m.node(node).unwrap(), heap.node(node).unwrap());
        for (za, zb) in a.zones().zip(b.zones()) {
            // The machine-wide watermark split, the same from either storage.
            assert_eq!(za.watermarks(), zb.watermarks(), "node {node}");
            assert_eq!(za.lowmem_reserve(), zb.lowmem_reserve(), "node {node}");
            assert_eq!(za.pcp_info(CpuId(0)).high, zb.pcp_info(CpuId(0)).high);
        }
    }
    for cpu in 0..4 {
        assert_eq!(m.cpu_to_node(CpuId(cpu)), heap.cpu_to_node(CpuId(cpu)));
    }
    assert_eq!(m.cpu_to_node(CpuId(4)), None);
    // CPU 2 (node 1) allocates locally, CPU 0 (node 0) remotely and frees the page to its
    // own pageset of node 1's zone, where it stays until three vmstat runs expire a batch.
    let req = AllocRequest::new(MigrateType::Movable);
    let pfn = m.alloc(Order::ZERO, req.on_cpu(CpuId(2)), NodeTarget::node(1));
    assert_eq!(nid(&m, pfn.unwrap()), 1);
    let far = m.alloc(Order::ZERO, req.on_cpu(CpuId(0)), NodeTarget::node(1));
    assert_eq!(nid(&m, far.unwrap()), 1);
    let s = m.numastat(1).unwrap();
    assert_eq!((s.numa_hit, s.local_node, s.other_node), (2, 1, 1));
    m.free_on(CpuId(0), far.unwrap(), Order::ZERO).unwrap();
    let z1 = m.node(1).unwrap().zone(ZoneType::Normal).unwrap();
    let (count, batch) = (z1.pcp_info(CpuId(0)).count, z1.pcp_info(CpuId(0)).batch);
    assert!(count > 0);
    m.vmstat_tick(CpuId(0));
    m.vmstat_tick(CpuId(0));
    assert_eq!(z1.pcp_info(CpuId(0)).count, count);
    m.vmstat_tick(CpuId(0));
    assert_eq!(z1.pcp_info(CpuId(0)).count, count - count.min(batch));
    m.free_on(CpuId(2), pfn.unwrap(), Order::ZERO).unwrap();
    m.drain_all();
    let f = m.check().unwrap();
    assert_eq!(f.allocated_pages, 0);
}

#[test]
fn short_storage_and_wide_distances_are_refused() {
    use crate::platform::StaticStorage;
    static FEW_NODES: StaticStorage<NumaNode<DefaultPlatform>, 1> = StaticStorage::new();
    static FEW_SLOTS: StaticStorage<NumaSlot, 7> = StaticStorage::new();
    static NODES: StaticStorage<NumaNode<DefaultPlatform>, 2> = StaticStorage::new();
    static SLOTS: StaticStorage<NumaSlot, 8> = StaticStorage::new();
    static NODES2: StaticStorage<NumaNode<DefaultPlatform>, 2> = StaticStorage::new();
    static SLOTS2: StaticStorage<NumaSlot, 8> = StaticStorage::new();
    let cfg = ZoneConfig::default();
    let d = || Distances::new(2, &[10, 20, 20, 10]).unwrap();
    let cpus = [0, 0, 1, 1];
    let nd = NumaConfig::default();
    // numa_set_distance: a distance must be a byte.
    assert!(Distances::new(2, &[10, 256, 256, 10]).is_err());
    assert_eq!(
        Distances::new(2, &[10, 255, 255, 10]).unwrap().get(0, 1),
        255
    );
    // One node's storage for two nodes; seven slots for four CPUs on two nodes.
    let two = || plain_nodes(&[0, 1], cfg);
    let few = FEW_NODES.take().unwrap();
    let slots = SLOTS.take().unwrap();
    assert!(Machine::from_uninit(two(), d(), &cpus, nd, few, slots).is_err());
    let nodes = NODES.take().unwrap();
    let few = FEW_SLOTS.take().unwrap();
    assert!(Machine::from_uninit(two(), d(), &cpus, nd, nodes, few).is_err());
    // Three nodes for a table of two: the storage holds two, the third is refused.
    let three = plain_nodes(&[0, 1, 0], cfg);
    let (nodes, slots) = (NODES2.take().unwrap(), SLOTS2.take().unwrap());
    let err = Machine::from_uninit(three, d(), &cpus, nd, nodes, slots).unwrap_err();
    assert_eq!(
        err,
        crate::ConfigError::BadNuma("more nodes than storage for them")
    );
}

#[test]
fn alloc_zonelist_walks_a_callers_list_and_refuses_a_bad_one() {
    let m = two_nodes(ZoneConfig::default());
    let n0 = m.node(0).unwrap().zone(ZoneType::Dma32).unwrap();
    let n1 = m.node(1).unwrap().zone(ZoneType::Normal).unwrap();
    let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(2));
    let order = Order::new(9).unwrap();
    // Node 1's Normal first: served there until it refuses, then node 0's DMA32.
    let mut on = [0u32; 2];
    for _ in 0..40 {
        let p = alloc_zonelist(&[n1, n0], &[1, 0], order, req).unwrap();
        on[nid(&m, p) as usize] += 1;
    }
    assert!(on[1] > 0 && on[0] > 0, "{on:?}");
    assert_eq!(
        alloc_zonelist::<DefaultPlatform>(&[], &[], order, req),
        Err(AllocError::NoZone)
    );
    assert_eq!(
        alloc_zonelist(&[n1, n0], &[1], order, req),
        Err(AllocError::NoZone)
    );
    m.check().unwrap();
}
