//! A drain of every node's pagesets against busy owners: one wait, however many nodes and
//! zones (`__drain_all_pages` queues one work item per CPU for all zones, then flushes).

use std::vec::Vec;

use super::*;
use crate::config::{DrainMode, PcpLocking};
use crate::sync::{AtomicBool, AtomicU32};
use crate::types::MigrateType;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// `nodes` nodes, one CPU each: node 0 1 MiB..256 MiB (DMA and DMA32), every other 32 MiB
/// of Normal above 4 GiB; all 20 apart.
fn machine(nodes: usize, drain: DrainMode) -> Machine {
    let mut regions = std::vec![NodeRegion {
        node: 0,
        region: MemoryRegion::usable(MIB, 255 * MIB),
    }];
    for i in 1..nodes {
        regions.push(NodeRegion {
            node: i as u32,
            region: MemoryRegion::usable((4 + i as u64) * GIB, 32 * MIB),
        });
    }
    let mut rows = std::vec![20u32; nodes * nodes];
    for i in 0..nodes {
        rows[i * nodes + i] = LOCAL_DISTANCE;
    }
    let dist = Distances::new(nodes, &rows).unwrap();
    let mut cfg = ZoneConfig::default();
    cfg.pcp = cfg.pcp.with_locking(PcpLocking::Spinlock).with_drain(drain);
    let cpus: Vec<u32> = (0..nodes as u32).collect();
    Machine::from_memory_map(&regions, dist, &cpus, cfg, NumaConfig::default()).unwrap()
}

/// Every CPU's owner leaves pages on its lists in every zone of every node, then keeps
/// polling its handles (busy, never idle) while the drainer drains: its waits for owners,
/// and the pages left on any list after it.
fn drain_with_busy_owners(m: &Machine) -> (u32, i64) {
    let zones: Vec<&Zone> = m.nodes().flat_map(|x| x.zones()).collect();
    let ready = AtomicU32::new(0);
    let done = AtomicBool::new(false);
    let cpus = m.cpus();
    std::thread::scope(|s| {
        for cpu in 0..cpus {
            let (zones, ready, done) = (&zones, &ready, &done);
            s.spawn(move || {
                let mut hs: Vec<_> = zones
                    .iter()
                    .map(|z| z.cpu_handle(CpuId(cpu as u32)).unwrap())
                    .collect();
                for h in &mut hs {
                    let p = h.alloc(Order::ZERO, MigrateType::Movable).unwrap();
                    h.free(p, Order::ZERO).unwrap();
                }
                ready.fetch_add(1, Ordering::SeqCst);
                while !done.load(Ordering::SeqCst) {
                    for h in &mut hs {
                        h.poll();
                    }
                    std::thread::yield_now();
                }
            });
        }
        while (ready.load(Ordering::SeqCst) as usize) < cpus {
            std::thread::yield_now();
        }
        let before: i64 = pcp_pages(&zones, cpus);
        assert!(before > 0);
        let waits = m.drain_all_waits();
        let left = pcp_pages(&zones, cpus);
        done.store(true, Ordering::SeqCst);
        (waits, left)
    })
}

fn pcp_pages(zones: &[&Zone], cpus: usize) -> i64 {
    zones
        .iter()
        .map(|z| {
            (0..cpus)
                .map(|c| i64::from(z.pcp_info(CpuId(c as u32)).count))
                .sum::<i64>()
        })
        .sum()
}

#[test]
fn an_owner_drain_of_every_node_waits_once_whatever_the_nodes_and_zones() {
    // 2 nodes: 3 zones, 6 pagesets; 4 nodes: 5 zones, 20 pagesets.
    for nodes in [2, 4] {
        let m = machine(nodes, DrainMode::Owner);
        assert_eq!(drain_with_busy_owners(&m), (1, 0), "{nodes} nodes");
        m.check().unwrap();
        // Remote drain asks no owner: no wait.
        let m = machine(nodes, DrainMode::Remote);
        assert_eq!(drain_with_busy_owners(&m), (0, 0), "{nodes} nodes");
        m.check().unwrap();
    }
    // Nothing on any list: nobody to wait for.
    assert_eq!(machine(2, DrainMode::Owner).drain_all_waits(), 0);
}
