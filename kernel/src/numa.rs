//! A machine of several NUMA nodes from the device tree: one zone per node over the node's
//! own RAM (its metadata table carved from that RAM), each CPU on the node its cpu node names,
//! the distances of `/distance-map`, all put together as a `zonealloc::Machine` in static
//! storage (no heap); and the report of a run on it: per CPU and node, the pagesets, then
//! each node's `numastat` and buddyinfo.
//!
//! Linux reads the same properties in `drivers/of/of_numa.c` (`of_numa_init`): memory and
//! cpu nodes' `numa-node-id`, then `distance-map-v1` triplets, each also setting the
//! reverse distance when `to > from` (`of_numa_parse_distance_map_v1`); without a map every
//! pair of nodes is `REMOTE_DISTANCE` (20) apart (`numa_alloc_distance`).

use zonealloc::numa::{Distances, NumaConfig, NumaNode, NumaSlot, LOCAL_DISTANCE};
use zonealloc::platform::StaticStorage;
use zonealloc::{stats, CpuId, Machine, Node, PcpSlot, ZoneConfig};

use crate::fdt::{MachineInfo, MAX_NODES};
use crate::memory::{self, Layout};
use crate::platform::Hart;
use crate::{println, MAX_CPUS};

/// `REMOTE_DISTANCE` (`include/linux/topology.h`).
const REMOTE_DISTANCE: u32 = 20;

/// Each node's per-CPU list slots (in `.bss`).
static NODE_PCPS: [StaticStorage<PcpSlot, MAX_CPUS>; MAX_NODES] =
    [const { StaticStorage::new() }; MAX_NODES];
/// The machine's nodes.
static NODES: StaticStorage<NumaNode<Hart>, MAX_NODES> = StaticStorage::new();
/// Per CPU and node: the CPU's node and its pagesets' expiry.
static SLOTS: StaticStorage<NumaSlot, { MAX_CPUS * MAX_NODES }> = StaticStorage::new();

/// The nodes the memory nodes name: the highest `numa-node-id` of RAM, plus one.
pub fn node_count(info: &MachineInfo) -> usize {
    info.ram_node[..info.ram_len]
        .iter()
        .map(|&n| n as usize + 1)
        .max()
        .unwrap_or(1)
}

/// The distance table: `REMOTE_DISTANCE` between different nodes and `LOCAL_DISTANCE` on
/// the diagonal, then the device tree's entries, each also the reverse one when `to > from`.
fn distances(info: &MachineInfo, n: usize) -> Result<Distances, &'static str> {
    let mut rows = [REMOTE_DISTANCE; MAX_NODES * MAX_NODES];
    for i in 0..n {
        rows[i * n + i] = LOCAL_DISTANCE;
    }
    for &(from, to, d) in &info.distances[..info.distances_len] {
        let (a, b) = (from as usize, to as usize);
        if a >= n || b >= n {
            return Err("distance-map: a node without memory");
        }
        rows[a * n + b] = d;
        if b > a {
            rows[b * n + a] = d;
        }
    }
    Distances::new(n, &rows[..n * n]).map_err(|_| "distance-map: a distance the kernel refuses")
}

/// Builds the machine: node `i`'s zone over its RAM, pagesets for all `cpus` CPUs with
/// `high` split over the node's own (`cpu_node[c]` is CPU `c`'s node), then
/// `Machine::from_uninit` (zonelists, the machine-wide watermarks). Returns each node's
/// layout for the report.
pub fn build(
    info: &MachineInfo,
    cpu_node: &[u32],
) -> Result<(Machine<Hart>, [Option<Layout>; MAX_NODES]), &'static str> {
    let n = node_count(info);
    let dist = distances(info, n)?;
    let mut layouts: [Option<Layout>; MAX_NODES] = Default::default();
    let mut failed = None;
    // Each node is built as the machine takes it into its storage: a node is some 45 KiB,
    // better not held on the boot stack beside the others.
    let nodes = (0..n as u32).map_while(|id| match build_node(info, id, cpu_node) {
        Ok((node, layout)) => {
            layouts[id as usize] = Some(layout);
            Some(node)
        }
        Err(e) => {
            failed = Some(e);
            None
        }
    });
    let storage = NODES.take().ok_or("node storage taken twice")?;
    let slots = SLOTS.take().ok_or("slot storage taken twice")?;
    let machine =
        Machine::from_uninit(nodes, dist, cpu_node, NumaConfig::default(), storage, slots);
    if let Some(e) = failed {
        return Err(e);
    }
    let machine = machine.map_err(|_| "Machine::from_uninit refused the layout")?;
    for a in 0..n {
        for b in a + 1..n {
            let (Some(x), Some(y)) = (&layouts[a], &layouts[b]) else {
                return Err("a node without a layout");
            };
            if x.span.0 < y.span.1 && y.span.0 < x.span.1 {
                return Err("two nodes' RAM interleaves (not modelled here)");
            }
        }
    }
    Ok((machine, layouts))
}

/// Node `id`'s zone over its own RAM, with pagesets for every CPU of `cpu_node` and `high`
/// split over the node's own CPUs (`zone_highsize`'s `cpumask_of_node`).
fn build_node(
    info: &MachineInfo,
    id: u32,
    cpu_node: &[u32],
) -> Result<(Node<Hart>, Layout), &'static str> {
    let local = cpu_node.iter().filter(|&&c| c == id).count() as u32;
    let mut cfg = ZoneConfig::default();
    cfg.pcp = cfg.pcp.with_split_cpus(Some(local));
    let pcps = NODE_PCPS[id as usize]
        .take()
        .ok_or("per-CPU slots taken twice")?;
    let (zone, layout) = memory::build_zone_of(info, Some(id), cfg, &mut pcps[..cpu_node.len()])?;
    if zone.managed_pages() != layout.free_pages {
        return Err("managed pages differ from the pages added");
    }
    // A one-zone node: Node::new has nothing to refuse; its marks are redone over the
    // machine by Machine::from_uninit.
    let node = Node::new(id, [zone]).map_err(|_| "Node::new refused a zone")?;
    Ok((node, layout))
}

/// Prints the machine as booted: the nodes, their CPUs, RAM, zone and fallback order.
pub fn print_layout(m: &Machine<Hart>, info: &MachineInfo, layouts: &[Option<Layout>; MAX_NODES]) {
    println!(
        "numa: {} nodes from the device tree (numa-node-id), distances {:?}",
        m.nodes().len(),
        m.distances()
    );
    for x in m.nodes() {
        let id = x.id();
        let mut cpus = [0u32; MAX_CPUS];
        let mut k = 0;
        for c in 0..m.cpus() as u32 {
            if m.cpu_to_node(CpuId(c)) == Some(id) {
                cpus[k] = c;
                k += 1;
            }
        }
        for (r, _) in memory::banks(info, Some(id)) {
            println!(
                "node {id}: ram {:#x}..{:#x} ({} MiB), cpus {:?}",
                r.start,
                r.end,
                (r.end - r.start) >> 20,
                &cpus[..k]
            );
        }
        if let Some(l) = &layouts[id as usize] {
            println!(
                "node {id}: zone pfn {:#x}..{:#x}, metadata table at {:#x}..{:#x} (on the node), pages managed {}, fallback order {:?}",
                l.span.0 .0,
                l.span.1 .0,
                l.table.start,
                l.table.end,
                l.free_pages,
                m.node_order(id).unwrap_or(&[])
            );
        }
    }
}

/// After the workload: the pagesets of every CPU in every node (before and after
/// `drain_all`), each node's numastat, buddyinfo and the machine's check. `allocs` and
/// `local` are the workload's totals, which the node counters must match.
pub fn report(m: &Machine<Hart>, allocs: u64, local: u64) -> Result<(), &'static str> {
    for x in m.nodes() {
        for z in x.zones() {
            for c in 0..m.cpus() as u32 {
                let i = z.pcp_info(CpuId(c));
                let s = i.stats;
                println!(
                    "pcp cpu {c} node {} ({}): count {} high {} batch {} | alloc hits {} misses {} | frees {} | drained: high {} free_high {} decay+expiry {} remote {}",
                    x.id(),
                    if m.cpu_to_node(CpuId(c)) == Some(x.id()) { "local" } else { "remote" },
                    i.count,
                    i.high,
                    i.batch,
                    s.alloc_hits,
                    s.alloc_misses,
                    s.frees,
                    s.drain_high_pages,
                    s.drain_free_high_pages,
                    s.drain_decay_pages,
                    s.drain_remote_pages,
                );
            }
        }
    }
    let (mut hit_miss, mut local_node) = (0, 0);
    for x in m.nodes() {
        let s = m.numastat(x.id()).ok_or("no numastat")?;
        println!(
            "numastat node {}: numa_hit {} numa_miss {} numa_foreign {} interleave_hit {} local_node {} other_node {}",
            x.id(),
            s.numa_hit,
            s.numa_miss,
            s.numa_foreign,
            s.interleave_hit,
            s.local_node,
            s.other_node
        );
        hit_miss += s.numa_hit + s.numa_miss;
        local_node += s.local_node;
    }
    if hit_miss != allocs || local_node != local {
        return Err("numastat disagrees with the workload's counts");
    }
    println!("per-CPU lists before drain: {} pages", pcp_pages(m));
    m.drain_all();
    println!("buddyinfo:");
    let mut text = crate::Text::new();
    for s in m.nodes().flat_map(|x| x.snapshots()) {
        stats::write_buddyinfo(&mut text, &[s]).map_err(|_| "buddyinfo too long")?;
    }
    crate::serial::print(format_args!("{}", text.as_str()));
    let facts = m.check().map_err(|e| {
        println!("check: FAILED: {e}");
        "check() failed"
    })?;
    let managed: u64 = m
        .nodes()
        .flat_map(|x| x.zones())
        .map(|z| z.managed_pages())
        .sum();
    let free: u64 = m
        .nodes()
        .flat_map(|x| x.zones())
        .map(|z| z.free_pages())
        .sum();
    println!(
        "check: ok (free {} + allocated {} + on per-CPU lists {} = managed {})",
        facts.free_pages, facts.allocated_pages, facts.pcp_pages, managed
    );
    if facts.allocated_pages != 0 || facts.pcp_pages != 0 || free != managed {
        return Err("pages missing after every block was freed and the lists drained");
    }
    Ok(())
}

fn pcp_pages(m: &Machine<Hart>) -> u64 {
    m.nodes()
        .flat_map(|x| x.zones())
        .map(|z| z.pcp_pages())
        .sum()
}
