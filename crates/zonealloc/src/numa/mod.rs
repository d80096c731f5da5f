//! [`Machine`]: several NUMA nodes, each a [`Node`], with the kernel's multi-node rules:
//! watermarks split across all nodes, zonelists in node-distance order, the preferred node
//! and nodemask of a request, node counters (`numastat`) and the vmstat worker's expiry
//! drain of remote-node pagesets.
//!
//! Needs `std`: the number of nodes, their zonelists and the per-CPU expiry state are sized
//! at boot from the firmware tables, so they live on the heap. A single-node system keeps
//! using [`Node`] and [`Zone`], whose paths this layer does not touch.

mod policy;
mod stats;
#[cfg(test)]
mod tests;
mod zonelist;

use std::vec::Vec;

pub use policy::{interleave_nodes, offset_il_node, MemPolicy, NodeMask, NodeTarget, TaskPolicy};
pub use stats::NumaStat;
pub use zonelist::{build_node_orders, Distances, LOCAL_DISTANCE};

use crate::buddy::{
    calculate_min_free_kbytes, khugepaged_min_free_kbytes, setup_per_zone_lowmem_reserve,
    setup_per_zone_wmarks_into, Watermarks,
};
use crate::config::{KernelVersion, ZoneConfig};
use crate::error::{AllocError, ConfigError, FreeError};
use crate::memmap::MemoryRegion;
use crate::node::Node;
use crate::pcp::PcpAccess;
use crate::platform::{DefaultPlatform, Platform};
use crate::request::AllocRequest;
use crate::sync::{AtomicU64, AtomicU8, Ordering};
use crate::types::{CpuId, Order, Pfn, ZoneType, MAX_NR_ZONES};
use crate::zone::{alloc_walk, Zone, ZoneList};
use stats::NodeCounters;

/// One region of a memory map and the node it belongs to (an ACPI SRAT memory affinity
/// entry, or a device tree `memory` node's `numa-node-id`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct NodeRegion {
    /// The node id.
    pub node: u32,
    /// The region.
    pub region: MemoryRegion,
}

/// The machine-level rules that differ between kernels.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct NumaConfig {
    /// `refresh_cpu_vm_stats`'s CONFIG_NUMA block: a CPU's pageset of a remote node's zone
    /// drains `batch` pages once its `expire` (3 after the CPU last touched the zone's stats)
    /// counts down to 0. Present in 6.1, 6.12 and 7.2 alike.
    pub expire_drain: bool,
    /// 6.12 and 7.2 count a countdown step as a change ("if (__this_cpu_dec_return(
    /// pcp->expire)) { changes++; continue; }"), so the worker keeps running until the drain;
    /// 6.1 does not (`continue` alone). Only [`Machine::vmstat_tick`]'s result shows it.
    pub expire_counts_pending: bool,
}

impl NumaConfig {
    /// The rules of `v`.
    pub const fn for_kernel(v: KernelVersion) -> Self {
        NumaConfig {
            expire_drain: true,
            expire_counts_pending: matches!(
                v,
                KernelVersion::V6_12 | KernelVersion::V7_2 | KernelVersion::Mainline
            ),
        }
    }
}

impl Default for NumaConfig {
    fn default() -> Self {
        NumaConfig::for_kernel(KernelVersion::Mainline)
    }
}

/// Several NUMA nodes on the [`Platform`] `P`: node `i` has id `i`.
pub struct Machine<P: Platform = DefaultPlatform> {
    nodes: Vec<Node<P>>,
    dist: Distances,
    cpu_node: Vec<u32>,
    /// `build_zonelists`' fallback node order of each node.
    orders: Vec<Vec<usize>>,
    counters: Vec<NodeCounters>,
    cfg: NumaConfig,
    /// The highest zone type of any node except Movable (`policy_zone`).
    policy_zone: ZoneType,
    /// Per CPU, per node, per zone slot: `pcp->expire`.
    expire: Vec<AtomicU8>,
    /// Per CPU, per node, per zone slot: the CPU's buddy transfers of the zone at its last
    /// tick (stands for `vm_stat_diff` being non-zero).
    seen: Vec<AtomicU64>,
}

impl<P: Platform> core::fmt::Debug for Machine<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Machine")
            .field("nodes", &self.nodes)
            .field("cpu_node", &self.cpu_node)
            .field("orders", &self.orders)
            .finish_non_exhaustive()
    }
}

impl Machine {
    /// A machine booted from a memory map with node ids, a distance table and each CPU's
    /// node: node `i`'s zones are built from its regions as [`Node::from_memory_map`] builds
    /// one node's (every zone with a pageset for every CPU, `high` split across the node's
    /// own CPUs: `zone_highsize`'s `cpumask_of_node`), then the watermarks are set over all
    /// nodes ([`Machine::setup_watermarks`]) and the zonelists built (`build_all_zonelists`).
    /// Node ids must be `0..dist.nodes()`; every node needs memory (memoryless nodes are not
    /// modelled) and every CPU a node.
    pub fn from_memory_map(
        regions: &[NodeRegion],
        dist: Distances,
        cpu_node: &[u32],
        cfg: ZoneConfig,
        numa: NumaConfig,
    ) -> Result<Machine, ConfigError> {
        let n = dist.nodes();
        if cpu_node.is_empty() || cpu_node.iter().any(|&c| c as usize >= n) {
            return Err(ConfigError::BadNuma(
                "every CPU needs a node below the node count",
            ));
        }
        if regions.iter().any(|r| r.node as usize >= n) {
            return Err(ConfigError::BadNuma(
                "a region names a node the distance table lacks",
            ));
        }
        let cpus = cpu_node.len() as u32;
        let mut nodes = Vec::with_capacity(n);
        for id in 0..n as u32 {
            let mine: Vec<MemoryRegion> = regions
                .iter()
                .filter(|r| r.node == id)
                .map(|r| r.region)
                .collect();
            let local = cpu_node.iter().filter(|&&c| c == id).count() as u32;
            let mut c = cfg;
            c.pcp = c.pcp.with_cpus(cpus).with_split_cpus(Some(local));
            let node = Node::from_memory_map(id, &mine, c)?;
            if node.zones().next().is_none() {
                return Err(ConfigError::BadNuma("a node has no memory"));
            }
            nodes.push(node);
        }
        Machine::new(nodes, dist, cpu_node, numa)
    }
}

impl<P: Platform> Machine<P> {
    /// A machine of the given nodes (node `i` with id `i`, each with zones whose pagesets
    /// cover every CPU of `cpu_node`), with its watermarks set over all of them and its
    /// zonelists built.
    pub fn new(
        nodes: Vec<Node<P>>,
        dist: Distances,
        cpu_node: &[u32],
        cfg: NumaConfig,
    ) -> Result<Self, ConfigError> {
        let n = dist.nodes();
        if nodes.len() != n || nodes.iter().enumerate().any(|(i, x)| x.id() as usize != i) {
            return Err(ConfigError::BadNuma(
                "node i must have id i, one per table row",
            ));
        }
        if cpu_node.is_empty() || cpu_node.iter().any(|&c| c as usize >= n) {
            return Err(ConfigError::BadNuma(
                "every CPU needs a node below the node count",
            ));
        }
        // Every CPU needs a pageset in every zone of every node.
        let short = nodes
            .iter()
            .flat_map(|x| x.zones())
            .any(|z| z.config().pcp.enabled && (z.cpus() as usize) < cpu_node.len());
        if short {
            return Err(ConfigError::BadNuma(
                "a zone has fewer pagesets than the machine has CPUs",
            ));
        }
        let has_cpus: Vec<bool> = (0..n as u32).map(|i| cpu_node.contains(&i)).collect();
        let has_memory: Vec<bool> = nodes.iter().map(|x| x.zones().next().is_some()).collect();
        let orders = build_node_orders(&dist, &has_cpus, &has_memory);
        // check_highest_zone: the highest populated zone type but Movable.
        let policy_zone = nodes
            .iter()
            .flat_map(|x| x.zones().map(|z| z.zone_type()))
            .filter(|&t| t != ZoneType::Movable)
            .max()
            .unwrap_or(ZoneType::Normal);
        let slots = cpu_node.len() * n * MAX_NR_ZONES;
        let m = Machine {
            counters: (0..n).map(|_| NodeCounters::default()).collect(),
            expire: (0..slots).map(|_| AtomicU8::new(0)).collect(),
            seen: (0..slots).map(|_| AtomicU64::new(0)).collect(),
            nodes,
            dist,
            cpu_node: cpu_node.to_vec(),
            orders,
            cfg,
            policy_zone,
        };
        m.setup_watermarks();
        Ok(m)
    }

    /// The nodes, by id.
    pub fn nodes(&self) -> &[Node<P>] {
        &self.nodes
    }

    /// The distance table.
    pub fn distances(&self) -> &Distances {
        &self.dist
    }

    /// `cpu_to_node(cpu)`, or `None` for an unknown CPU.
    pub fn cpu_to_node(&self, cpu: CpuId) -> Option<u32> {
        self.cpu_node.get(cpu.0 as usize).copied()
    }

    /// The fallback node order of `node`'s `ZONELIST_FALLBACK` ("Fallback order for Node
    /// N" of the boot log).
    pub fn node_order(&self, node: u32) -> Option<&[usize]> {
        self.orders.get(node as usize).map(|v| v.as_slice())
    }

    /// The zonelist of `node` as `(node, zone type)` pairs, preferred first: its
    /// `ZONELIST_FALLBACK` (`build_zonelists_in_node_order`: nodes in fallback order, each
    /// node's zones high to low, `build_zonerefs_node`), or with `this_node` its
    /// `ZONELIST_NOFALLBACK` (`build_thisnode_zonelists`: its own zones only).
    pub fn zonelist(&self, node: u32, this_node: bool) -> Vec<(u32, ZoneType)> {
        self.zonelist_zones(node, this_node)
            .map(|(nid, z)| (nid, z.zone_type()))
            .collect()
    }

    fn zonelist_zones(
        &self,
        node: u32,
        this_node: bool,
    ) -> impl Iterator<Item = (u32, &Zone<P>)> + '_ {
        let order: &[usize] = match self.orders.get(node as usize) {
            Some(o) if this_node => &o[..o.len().min(1)],
            Some(o) => o,
            None => &[],
        };
        order
            .iter()
            .flat_map(move |&i| self.nodes[i].zones().rev().map(move |z| (i as u32, z)))
    }

    /// `__setup_per_zone_wmarks` over every zone of every node (`min_free_kbytes` split in
    /// proportion to managed pages across all lowmem zones of the machine;
    /// `calculate_min_free_kbytes` and `set_recommended_min_free_kbytes` over all of them
    /// too), then `setup_per_zone_lowmem_reserve` node by node (it walks each pgdat's own
    /// zones), then `page_group_by_mobility_disabled` from `vm_total_pages` of the machine.
    pub fn setup_watermarks(&self) {
        let mut sizes = Vec::new();
        let mut cfgs = Vec::new();
        for x in &self.nodes {
            let (s, c, k) = x.sizes();
            sizes.extend_from_slice(&s[..k]);
            cfgs.extend_from_slice(&c[..k]);
        }
        let unset = std::vec![Watermarks::default(); sizes.len()];
        let mut wm = std::vec![Watermarks::default(); sizes.len()];
        let mfk = calculate_min_free_kbytes(&sizes, &cfgs, &unset);
        setup_per_zone_wmarks_into(&sizes, &cfgs, mfk, &mut wm);
        if let Some(raised) = khugepaged_min_free_kbytes(&sizes, &cfgs, &wm, mfk) {
            setup_per_zone_wmarks_into(&sizes, &cfgs, raised, &mut wm);
        }
        let above_high: u64 = sizes
            .iter()
            .zip(&wm)
            .map(|(s, w)| s.managed.saturating_sub(w.high))
            .sum();
        let pb_pages = 1u64 << cfgs.first().map_or(9, |c| c.pageblock_order);
        let disabled = above_high < pb_pages * crate::types::MIGRATE_TYPES as u64;
        let mut at = 0;
        for x in &self.nodes {
            let (s, c, k) = x.sizes();
            let reserve = setup_per_zone_lowmem_reserve(&s[..k], &c[..k]);
            x.apply_marks(&wm[at..at + k], &reserve, disabled);
            at += k;
        }
    }

    /// The node a frame belongs to.
    pub fn node_of(&self, pfn: Pfn) -> Option<&Node<P>> {
        self.nodes.iter().find(|x| x.zone_of(pfn).is_some())
    }

    /// Allocates for a task with `task`'s memory policy on the CPU of `req` (or the calling
    /// one): the policy gives the preferred node and nodemask ([`MemPolicy`]); an interleave
    /// that got its node counts `interleave_hit` there (6.1 `alloc_page_interleave`, 7.2
    /// `alloc_pages_mpol`).
    pub fn alloc_policy(
        &self,
        order: Order,
        req: AllocRequest,
        task: &mut TaskPolicy,
    ) -> Result<Pfn, AllocError> {
        let cpu = self.cpu_of(&req);
        let local = self.cpu_node.get(cpu).copied().unwrap_or(0);
        let (target, il) = policy::resolve(task, local, req.highest_zone, self.policy_zone)
            .ok_or(AllocError::NoZone)?;
        let pfn = self.alloc(order, req, target)?;
        if let Some(nid) = il {
            if self.node_of(pfn).is_some_and(|x| x.id() == nid) {
                self.counters[nid as usize].interleave_hit();
            }
        }
        Ok(pfn)
    }

    /// `__alloc_pages(gfp, order, preferred_nid, nodemask)`: walks the preferred node's
    /// zonelist (or its own zones with `this_node`), zones above `req.highest_zone` or
    /// outside the nodemask left out, the first zone left being the preferred zone
    /// (`first_zones_zonelist`). With `ALLOC_NOFRAGMENT`, reaching another node's zone
    /// retries without it (`get_page_from_freelist`). Counts `zone_statistics`.
    pub fn alloc(
        &self,
        order: Order,
        req: AllocRequest,
        target: NodeTarget,
    ) -> Result<Pfn, AllocError> {
        let cpu = self.cpu_of(&req);
        let Some(&cpu_node) = self.cpu_node.get(cpu) else {
            return Err(AllocError::NoZone);
        };
        let mut zones: Vec<&Zone<P>> = Vec::with_capacity(self.nodes.len() * MAX_NR_ZONES);
        let mut nids: Vec<u32> = Vec::with_capacity(zones.capacity());
        for (nid, z) in self.zonelist_zones(target.preferred, target.this_node) {
            if z.zone_type() <= req.highest_zone && allows(target.nodemask, nid) {
                zones.push(z);
                nids.push(nid);
            }
        }
        if zones.is_empty() {
            return Err(AllocError::NoZone);
        }
        let list = ZoneList {
            zones: &zones,
            nids: if self.nodes.len() > 1 { &nids } else { &[] },
        };
        let pfn = alloc_walk(&list, order, req, &mut PcpAccess::Cpu(cpu))?;
        if let Some(got) = self.node_of(pfn) {
            stats::zone_statistics(&self.counters, nids[0], got.id(), cpu_node);
        }
        Ok(pfn)
    }

    fn cpu_of(&self, req: &AllocRequest) -> usize {
        req.cpu
            .map_or_else(|| P::current_cpu() as usize, |c| c.0 as usize)
    }

    /// Frees a block to CPU `cpu`'s pageset of the block's own zone, on whichever node it
    /// lies (`free_unref_page` → `free_unref_page_commit` on `page_zone(page)`), remote or
    /// not: a remote node's pages stay on this CPU until drained.
    pub fn free_on(&self, cpu: CpuId, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        self.node_of(pfn)
            .ok_or(FreeError::OutOfZone { pfn })?
            .free_on(cpu, pfn, order)
    }

    /// Frees a block on the calling CPU (see [`Machine::free_on`]).
    pub fn free(&self, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        self.free_on(CpuId(P::current_cpu()), pfn, order)
    }

    /// Node `node`'s counters, or `None` for an unknown node.
    pub fn numastat(&self, node: u32) -> Option<NumaStat> {
        self.counters.get(node as usize).map(|c| c.read())
    }

    /// The text of `/sys/devices/system/node/node<node>/numastat`.
    pub fn numastat_text(&self, node: u32) -> Option<std::string::String> {
        self.numastat(node).map(|s| s.numastat_text())
    }

    /// One run of CPU `cpu`'s vmstat worker over every populated zone
    /// (`refresh_cpu_vm_stats(true)`): `decay_pcp_high` where the kernel has it, then the
    /// CONFIG_NUMA block: `expire` set to 3 where the CPU moved pages between its pageset and
    /// the buddy of the zone since its last run (the kernel's non-zero `vm_stat_diff`); a
    /// zone of the CPU's own node gets `expire = 0` and is never drained; a remote one counts
    /// down and at 0 gives back `batch` pages (`drain_zone_pages`). Returns the kernel's
    /// `changes` from this block (drains, and with
    /// [`NumaConfig::expire_counts_pending`] countdown steps).
    pub fn vmstat_tick(&self, cpu: CpuId) -> u32 {
        let c = cpu.0 as usize;
        let Some(&home) = self.cpu_node.get(c) else {
            return 0;
        };
        let mut changes = 0;
        for (ni, x) in self.nodes.iter().enumerate() {
            for (zi, z) in x.zones().enumerate() {
                let slot = (c * self.nodes.len() + ni) * MAX_NR_ZONES + zi;
                let info = z.pcp_info(cpu);
                let s = info.stats;
                let moved = s.refill_pages
                    + s.drain_high_pages
                    + s.drain_free_high_pages
                    + s.drain_decay_pages
                    + s.drain_local_pages;
                if self.seen[slot].swap(moved, Ordering::Relaxed) != moved {
                    // "3 seconds idle till flush"
                    self.expire[slot].store(3, Ordering::Relaxed);
                }
                z.decay_pcp_high(cpu);
                if !self.cfg.expire_drain {
                    continue;
                }
                let count = z.pcp_info(cpu).count;
                let exp = self.expire[slot].load(Ordering::Relaxed);
                if exp == 0 || count == 0 {
                    continue;
                }
                // "We never drain zones local to this processor."
                if ni as u32 == home {
                    self.expire[slot].store(0, Ordering::Relaxed);
                    continue;
                }
                self.expire[slot].store(exp - 1, Ordering::Relaxed);
                if exp > 1 {
                    changes += self.cfg.expire_counts_pending as u32;
                    continue;
                }
                if z.drain_zone_pages(cpu) > 0 {
                    changes += 1;
                }
            }
        }
        changes
    }

    /// Drains every CPU's lists in every zone of every node.
    pub fn drain_all(&self) {
        for x in &self.nodes {
            x.drain_all();
        }
    }

    /// Checks every node's invariants and returns what they counted, summed.
    pub fn check(&self) -> Result<crate::CheckFacts, crate::CheckError> {
        let mut total = crate::CheckFacts::default();
        for x in &self.nodes {
            let f = x.check()?;
            total.free_pages += f.free_pages;
            total.allocated_pages += f.allocated_pages;
            total.allocated_blocks += f.allocated_blocks;
            total.pcp_pages += f.pcp_pages;
        }
        Ok(total)
    }
}

/// Whether a nodemask (`None`: every node) allows `nid`.
fn allows(mask: Option<NodeMask>, nid: u32) -> bool {
    mask.map_or(true, |m| m.contains(nid))
}
