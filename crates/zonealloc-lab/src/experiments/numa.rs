//! `--nodes N`: the memory an experiment whose effect depends on NUMA nodes runs on (seed
//! 004's drain, seed 001's batch scaling; both seeds were measured on multi-socket servers).
//!
//! With one node it is the experiment's one [`Zone`], exactly as without the option. With
//! `N` nodes it is a [`Machine`] of `N` nodes, node `i` one Normal zone of its own pages, the
//! CPUs split across the nodes in equal blocks of consecutive ids (CPUs 0..k on node 0, as a
//! two-socket server enumerates its first threads), SLIT 10 local and 20 remote. Each CPU
//! has a pageset in every zone of every node; `high` is split over the node's own CPUs
//! (`zone_highsize`'s `cpumask_of_node`), and a CPU allocates from the first zone of its
//! node's zonelist (`first_zones_zonelist`: node-local allocation while the node has memory).

use zonealloc::numa::{Distances, NumaConfig, LOCAL_DISTANCE};
use zonealloc::{CpuId, Machine, Node, Pfn, Zone, ZoneConfig, ZoneType};

use super::{LabError, LabOpts};

/// The most nodes `--nodes` takes.
pub const MAX_NODES: usize = 8;
/// The distance between two different nodes (a two-socket server's SLIT).
const REMOTE_DISTANCE: u32 = 20;

impl LabOpts {
    /// `--nodes` for an experiment that places `cpus` workers on them: every node needs one.
    pub fn nodes_for(&self, cpus: usize, exp: &str) -> Result<usize, LabError> {
        let n = self.nodes;
        if !(1..=MAX_NODES).contains(&n) {
            return Err(LabError(format!(
                "{exp}: nodes must be 1..={MAX_NODES}, not {n}"
            )));
        }
        if cpus < n {
            return Err(LabError(format!(
                "{exp}: {cpus} workers on {n} nodes: every node needs a worker (--threads at least {n})"
            )));
        }
        Ok(n)
    }

    /// For an experiment whose effect does not depend on nodes: an error for `--nodes` above 1.
    pub fn one_node_only(&self, exp: &str) -> Result<(), LabError> {
        if self.nodes == 1 {
            return Ok(());
        }
        Err(LabError(format!(
            "{exp}: runs on one node only; --nodes applies to {}",
            node_experiments().join(", ")
        )))
    }
}

/// The experiments that take `--nodes`, by name.
pub fn node_experiments() -> Vec<&'static str> {
    super::all()
        .into_iter()
        .filter(|e| e.takes_nodes())
        .map(|e| e.name())
        .collect()
}

/// The node of each of `cpus` CPUs on `nodes` nodes: equal blocks of consecutive ids.
pub fn cpu_nodes(cpus: usize, nodes: usize) -> Vec<u32> {
    let nodes = nodes.max(1);
    (0..cpus).map(|c| (c * nodes / cpus) as u32).collect()
}

/// The peer of CPU `cpu` on the next node (`cpu_node` as [`cpu_nodes`] gives it): the CPU
/// at the same place among its node's CPUs, or that node's last; itself on one node.
pub fn peer_of(cpu_node: &[u32], cpu: usize) -> usize {
    let Some(&node) = cpu_node.get(cpu) else {
        return cpu;
    };
    let nodes = cpu_node.iter().max().map_or(1, |&m| m + 1);
    let first = |n: u32| cpu_node.iter().position(|&x| x == n);
    let next = (node + 1) % nodes;
    let (Some(mine), Some(theirs)) = (first(node), first(next)) else {
        return cpu;
    };
    let count = cpu_node.iter().filter(|&&x| x == next).count();
    theirs + (cpu - mine).min(count.saturating_sub(1))
}

/// One zone, or a machine of several nodes.
pub enum Memory {
    /// The one-node configuration: the experiment's zone, as without `--nodes`.
    One(Box<Zone>),
    /// Several nodes.
    Nodes(Box<Machine>),
}

impl Memory {
    /// `nodes` nodes of one Normal zone of `pages` frames each, all free, with pagesets for
    /// `cpu_node.len()` CPUs (`cfg`'s own CPU count is replaced); one node is a plain zone.
    pub fn new(
        nodes: usize,
        pages: u64,
        cpu_node: &[u32],
        cfg: ZoneConfig,
    ) -> Result<Memory, String> {
        let cpus = cpu_node.len() as u32;
        let mut cfg = cfg;
        cfg.pcp = cfg.pcp.with_cpus(cpus);
        if nodes <= 1 {
            let zone = Zone::new(ZoneType::Normal, Pfn(0), Pfn(pages), cfg)
                .map_err(|e| format!("zone: {e:?}"))?;
            zone.add_free_range(Pfn(0), Pfn(pages))
                .map_err(|e| format!("add_free_range: {e:?}"))?;
            return Ok(Memory::One(Box::new(zone)));
        }
        let mut list = Vec::with_capacity(nodes);
        for id in 0..nodes {
            let local = cpu_node.iter().filter(|&&n| n as usize == id).count() as u32;
            let mut c = cfg;
            c.pcp = c.pcp.with_split_cpus(Some(local));
            let start = Pfn(id as u64 * pages);
            let zone = Zone::new(ZoneType::Normal, start, Pfn(start.0 + pages), c)
                .map_err(|e| format!("node {id} zone: {e:?}"))?;
            list.push(Node::new(id as u32, [zone]).map_err(|e| format!("node {id}: {e:?}"))?);
        }
        let rows: Vec<u32> = (0..nodes * nodes)
            .map(|k| {
                if k / nodes == k % nodes {
                    LOCAL_DISTANCE
                } else {
                    REMOTE_DISTANCE
                }
            })
            .collect();
        let dist = Distances::new(nodes, &rows).map_err(|e| format!("distances: {e:?}"))?;
        let m = Machine::new(list, dist, cpu_node, NumaConfig::default())
            .map_err(|e| format!("machine: {e:?}"))?;
        for x in m.nodes() {
            for z in x.zones() {
                let (s, e) = z.span();
                x.add_free_range(s, e)
                    .map_err(|e| format!("node {} add_free_range: {e:?}", x.id()))?;
            }
        }
        Ok(Memory::Nodes(Box::new(m)))
    }

    /// Every zone, node by node.
    pub fn zones(&self) -> Vec<&Zone> {
        match self {
            Memory::One(z) => vec![z],
            Memory::Nodes(m) => m.nodes().flat_map(|x| x.zones()).collect(),
        }
    }

    /// The zone CPU `cpu` allocates from: the first of its node's zonelist
    /// (`first_zones_zonelist` for a node-local request), or the one zone.
    pub fn home(&self, cpu: CpuId) -> Result<&Zone, String> {
        match self {
            Memory::One(z) => Ok(z),
            Memory::Nodes(m) => {
                let node = m
                    .cpu_to_node(cpu)
                    .ok_or_else(|| format!("CPU {} has no node", cpu.0))?;
                let (nid, zt) = m
                    .zonelist_iter(node, false)
                    .next()
                    .ok_or_else(|| format!("node {node} has an empty zonelist"))?;
                m.node(nid)
                    .and_then(|x| x.zone(zt))
                    .ok_or_else(|| format!("node {nid} lacks its zone"))
            }
        }
    }

    /// The index in [`Memory::zones`] of the zone holding `pfn`.
    pub fn zone_index(&self, pfn: Pfn) -> Option<usize> {
        self.zones().iter().position(|z| {
            let (s, e) = z.span();
            s <= pfn && pfn < e
        })
    }

    /// `drain_all_pages(NULL)`: every CPU's pagesets in every zone; on several nodes, owners
    /// asked in every zone first and waited for once ([`Machine::drain_all`]).
    pub fn drain_all(&self) {
        match self {
            Memory::One(z) => z.drain_all(),
            Memory::Nodes(m) => m.drain_all(),
        }
    }

    /// Every zone's invariants.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Memory::One(z) => z.check().map(|_| ()),
            Memory::Nodes(m) => m.check().map(|_| ()),
        }
        .map_err(|e| format!("{e:?}"))
    }

    /// The CPUs that took zone `k`'s lock for their pagesets (a refill or a drain of their
    /// lists there): the CPUs that share that lock.
    pub fn lock_sharers(&self, k: usize) -> usize {
        let zones = self.zones();
        let Some(z) = zones.get(k) else {
            return 0;
        };
        (0..z.cpus())
            .filter(|&c| {
                let s = z.pcp_info(CpuId(c)).stats;
                s.alloc_misses
                    + s.drain_high_pages
                    + s.drain_free_high_pages
                    + s.drain_local_pages
                    + s.drain_remote_pages
                    > 0
            })
            .count()
    }
}

/// The distance table's rows as the report prints them (`10 20 / 20 10`).
pub fn slit_text(nodes: usize) -> String {
    (0..nodes)
        .map(|i| {
            (0..nodes)
                .map(|j| {
                    if i == j {
                        LOCAL_DISTANCE
                    } else {
                        REMOTE_DISTANCE
                    }
                    .to_string()
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_split_in_equal_blocks() {
        assert_eq!(cpu_nodes(2, 2), [0, 1]);
        assert_eq!(cpu_nodes(4, 2), [0, 0, 1, 1]);
        assert_eq!(cpu_nodes(3, 2), [0, 0, 1]);
        assert_eq!(cpu_nodes(3, 1), [0, 0, 0]);
        assert_eq!(slit_text(2), "10 20 / 20 10");
        let peers = |n: &[u32]| (0..n.len()).map(|c| peer_of(n, c)).collect::<Vec<_>>();
        assert_eq!(peers(&cpu_nodes(2, 2)), [1, 0]);
        assert_eq!(peers(&cpu_nodes(4, 2)), [2, 3, 0, 1]);
        assert_eq!(peers(&cpu_nodes(3, 2)), [2, 2, 0]);
        assert_eq!(peers(&cpu_nodes(2, 1)), [0, 1]);
    }

    #[test]
    fn each_cpu_allocates_from_its_own_node() {
        let cpu_node = cpu_nodes(4, 2);
        let m = Memory::new(2, 1 << 12, &cpu_node, ZoneConfig::without_watermarks()).unwrap();
        let zones = m.zones();
        assert_eq!(zones.len(), 2);
        for (c, &n) in cpu_node.iter().enumerate() {
            let home = m.home(CpuId(c as u32)).unwrap();
            assert!(std::ptr::eq(home, zones[n as usize]), "CPU {c}");
        }
        assert_eq!(m.zone_index(Pfn(5000)), Some(1));
        assert_eq!(m.zone_index(Pfn(1 << 13)), None);
        // high split over each node's own two CPUs, not all four.
        let one = Memory::new(
            1,
            1 << 13,
            &cpu_nodes(4, 1),
            ZoneConfig::without_watermarks(),
        )
        .unwrap();
        let h2 = zones[0].pcp_info(CpuId(0)).high_max;
        let h1 = one.zones()[0].pcp_info(CpuId(0)).high_max;
        assert_eq!(h1, (1 << 13) / 8 / 4);
        assert_eq!(h2, (1 << 12) / 8 / 2);
        m.check().unwrap();
    }

    #[test]
    fn bad_node_counts_are_errors() {
        let mut o = LabOpts::quick_test(1);
        o.nodes = 2;
        assert!(o.nodes_for(1, "x").is_err());
        assert_eq!(o.nodes_for(2, "x").unwrap(), 2);
        assert!(o.one_node_only("x").is_err());
        o.nodes = 0;
        assert!(o.nodes_for(4, "x").is_err());
        o.nodes = 1;
        assert!(o.one_node_only("x").is_ok());
    }
}
