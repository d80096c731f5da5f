//! [`Machine`]: several NUMA nodes, each a [`Node`], with the kernel's multi-node rules:
//! watermarks split across all nodes, zonelists in node-distance order, the preferred node
//! and nodemask of a request, node counters (`numastat`) and the vmstat worker's expiry
//! drain of remote-node pagesets.
//!
//! Without `std` too: what is sized by the node count (the distance table, each node's
//! fallback order, the scratch of a watermark setup) is kept in fixed arrays of
//! [`MAX_NUMNODES`], and what grows with the nodes and CPUs the firmware reports lives in
//! storage the embedder hands over, as a zone's table and per-CPU slots do: one
//! [`NumaNode`] per node and one [`NumaSlot`] per CPU and node ([`Machine::from_uninit`],
//! in `boot.rs`); with `std` the machine allocates them ([`Machine::new`]). A single-node
//! system keeps using [`Node`] and [`Zone`], whose paths this layer does not touch.

mod boot;
#[cfg(test)]
mod boot_tests;
#[cfg(test)]
mod drain_tests;
mod policy;
mod stats;
#[cfg(test)]
mod tests;
mod zonelist;

#[cfg(not(feature = "std"))]
use boot::NO_STD_MACHINE_ZONES;
pub use boot::{NumaNode, NumaSlot};
pub use policy::{interleave_nodes, offset_il_node, MemPolicy, NodeMask, NodeTarget, TaskPolicy};
pub use stats::NumaStat;
#[cfg(feature = "std")]
pub use zonelist::build_node_orders;
pub use zonelist::{Distances, LOCAL_DISTANCE, MAX_NUMNODES};

use crate::buddy::{
    calculate_min_free_kbytes, khugepaged_min_free_kbytes, setup_per_zone_lowmem_reserve,
    setup_per_zone_wmarks_into, Watermarks, ZoneSize,
};
use crate::config::{KernelVersion, ZoneConfig};
use crate::error::{AllocError, FreeError};
use crate::memmap::MemoryRegion;
use crate::node::Node;
use crate::pcp::PcpAccess;
use crate::platform::{DefaultPlatform, Platform};
use crate::request::AllocRequest;
use crate::sync::{Ordering, StaticSlice};
use crate::types::{CpuId, Order, Pfn, ZoneType, MAX_NR_ZONES};
use crate::zone::{alloc_walk, Zone, ZoneList};

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
    /// Per node: the node, its counters, its fallback order.
    nodes: StaticSlice<NumaNode<P>>,
    /// Per CPU, per node (`cpu * nodes + node`): the CPU's node and the expiry state of its
    /// pagesets in that node's zones.
    slots: StaticSlice<NumaSlot>,
    dist: Distances,
    cfg: NumaConfig,
    /// The highest zone type of any node except Movable (`policy_zone`).
    policy_zone: ZoneType,
}

impl<P: Platform> core::fmt::Debug for Machine<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Machine")
            .field("nodes", &self.nodes.get())
            .field("dist", &self.dist)
            .field("cpus", &self.cpus())
            .finish_non_exhaustive()
    }
}

impl<P: Platform> Machine<P> {
    /// The nodes, by id.
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = &Node<P>> + Clone + '_ {
        self.nodes.get().iter().map(|x| &x.node)
    }

    /// Node `id`, or `None` past the last.
    pub fn node(&self, id: u32) -> Option<&Node<P>> {
        self.nodes.get().get(id as usize).map(|x| &x.node)
    }

    /// The distance table.
    pub fn distances(&self) -> &Distances {
        &self.dist
    }

    /// The CPUs, each with a pageset in every zone of every node.
    pub fn cpus(&self) -> usize {
        self.slots.get().len() / self.nodes.get().len()
    }

    /// `cpu_to_node(cpu)`, or `None` for an unknown CPU.
    pub fn cpu_to_node(&self, cpu: CpuId) -> Option<u32> {
        let n = self.nodes.get().len();
        self.slots
            .get()
            .get((cpu.0 as usize).checked_mul(n)?)
            .map(|s| s.cpu_node)
    }

    /// The fallback node order of `node`'s `ZONELIST_FALLBACK` ("Fallback order for Node
    /// N" of the boot log).
    pub fn node_order(&self, node: u32) -> Option<&[u8]> {
        self.nodes.get().get(node as usize).map(|x| x.order())
    }

    /// The zonelist of `node` as `(node, zone type)` pairs, preferred first: its
    /// `ZONELIST_FALLBACK` (`build_zonelists_in_node_order`: nodes in fallback order, each
    /// node's zones high to low, `build_zonerefs_node`), or with `this_node` its
    /// `ZONELIST_NOFALLBACK` (`build_thisnode_zonelists`: its own zones only).
    pub fn zonelist_iter(
        &self,
        node: u32,
        this_node: bool,
    ) -> impl Iterator<Item = (u32, ZoneType)> + '_ {
        self.zonelist_zones(node, this_node)
            .map(|(nid, z)| (nid, z.zone_type()))
    }

    /// [`Machine::zonelist_iter`], collected.
    #[cfg(feature = "std")]
    pub fn zonelist(&self, node: u32, this_node: bool) -> std::vec::Vec<(u32, ZoneType)> {
        self.zonelist_iter(node, this_node).collect()
    }

    fn zonelist_zones(
        &self,
        node: u32,
        this_node: bool,
    ) -> impl Iterator<Item = (u32, &Zone<P>)> + '_ {
        let order: &[u8] = match self.nodes.get().get(node as usize) {
            Some(x) if this_node => &x.order()[..x.order().len().min(1)],
            Some(x) => x.order(),
            None => &[],
        };
        let nodes = self.nodes.get();
        order.iter().flat_map(move |&i| {
            nodes[i as usize]
                .node
                .zones()
                .rev()
                .map(move |z| (i as u32, z))
        })
    }

    /// The populated zones of the machine.
    fn zone_count(&self) -> usize {
        self.nodes().map(|x| x.zones().count()).sum()
    }

    /// `__setup_per_zone_wmarks` over every zone of every node (`min_free_kbytes` split in
    /// proportion to managed pages across all lowmem zones of the machine;
    /// `calculate_min_free_kbytes` and `set_recommended_min_free_kbytes` over all of them
    /// too), then `setup_per_zone_lowmem_reserve` node by node (it walks each pgdat's own
    /// zones), then `page_group_by_mobility_disabled` from `vm_total_pages` of the machine.
    pub fn setup_watermarks(&self) {
        self.with_scratch(|sizes, cfgs, wm| {
            // No high marks yet: `wm` is all zero here.
            let mfk = calculate_min_free_kbytes(sizes, cfgs, wm);
            setup_per_zone_wmarks_into(sizes, cfgs, mfk, wm);
            if let Some(raised) = khugepaged_min_free_kbytes(sizes, cfgs, wm, mfk) {
                setup_per_zone_wmarks_into(sizes, cfgs, raised, wm);
            }
            self.apply_marks(sizes, cfgs, wm, true);
        });
    }

    /// Runs `f` over scratch of one entry per zone of the machine, nodes in id order: the
    /// zones' managed pages and configurations, and watermarks all zero.
    fn with_scratch<R>(
        &self,
        f: impl FnOnce(&mut [ZoneSize], &mut [ZoneConfig], &mut [Watermarks]) -> R,
    ) -> R {
        const BLANK_SIZE: ZoneSize = ZoneSize {
            zone_type: ZoneType::Normal,
            managed: 0,
        };
        let k = self.zone_count();
        #[cfg(feature = "std")]
        let (mut sizes, mut cfgs, mut wm) = (
            std::vec![BLANK_SIZE; k],
            std::vec![ZoneConfig::default(); k],
            std::vec![Watermarks::default(); k],
        );
        // Without a heap the scratch is on the stack: at most NO_STD_MACHINE_ZONES zones
        // (the constructors refuse more).
        #[cfg(not(feature = "std"))]
        let (mut sizes, mut cfgs, mut wm) = (
            [BLANK_SIZE; NO_STD_MACHINE_ZONES],
            [ZoneConfig::default(); NO_STD_MACHINE_ZONES],
            [Watermarks::default(); NO_STD_MACHINE_ZONES],
        );
        let k = k.min(sizes.len());
        let (sizes, cfgs) = (&mut sizes[..k], &mut cfgs[..k]);
        let mut at = 0;
        for x in self.nodes() {
            let (s, c, n) = x.sizes();
            let n = n.min(k - at);
            sizes[at..at + n].copy_from_slice(&s[..n]);
            cfgs[at..at + n].copy_from_slice(&c[..n]);
            at += n;
        }
        f(sizes, cfgs, &mut wm[..k])
    }

    /// Sets every zone's marks `wm` (scratch order) and `page_group_by_mobility_disabled`
    /// from `vm_total_pages` of the machine (`build_all_zonelists`); with `reserve`, also
    /// `setup_per_zone_lowmem_reserve`, node by node (it walks each pgdat's own zones),
    /// else each zone keeps its reserve.
    fn apply_marks(
        &self,
        sizes: &[ZoneSize],
        cfgs: &[ZoneConfig],
        wm: &[Watermarks],
        reserve: bool,
    ) {
        let above_high: u64 = sizes
            .iter()
            .zip(wm)
            .map(|(s, w)| s.managed.saturating_sub(w.high))
            .sum();
        let pb_pages = 1u64 << cfgs.first().map_or(9, |c| c.pageblock_order);
        let disabled = above_high < pb_pages * crate::types::MIGRATE_TYPES as u64;
        let mut at = 0;
        for x in self.nodes() {
            let (s, c, k) = x.sizes();
            let k = k.min(wm.len() - at);
            let mut r = [[0; MAX_NR_ZONES]; MAX_NR_ZONES];
            if reserve {
                r = setup_per_zone_lowmem_reserve(&s[..k], &c[..k]);
            } else {
                for (i, z) in x.zones().enumerate().take(k) {
                    r[i] = z.lowmem_reserve();
                }
            }
            x.apply_marks(&wm[at..at + k], &r, disabled);
            at += k;
        }
    }

    /// The node a frame belongs to.
    pub fn node_of(&self, pfn: Pfn) -> Option<&Node<P>> {
        self.nodes().find(|x| x.zone_of(pfn).is_some())
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
        let local = self.cpu_to_node(CpuId(cpu as u32)).unwrap_or(0);
        let (target, il) = policy::resolve(task, local, req.highest_zone, self.policy_zone)
            .ok_or(AllocError::NoZone)?;
        let pfn = self.alloc(order, req, target)?;
        if let Some(nid) = il {
            if self.node_of(pfn).is_some_and(|x| x.id() == nid) {
                self.nodes.get()[nid as usize].counters.interleave_hit();
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
        let Some(cpu_node) = u32::try_from(cpu)
            .ok()
            .and_then(|c| self.cpu_to_node(CpuId(c)))
        else {
            return Err(AllocError::NoZone);
        };
        let mut allowed = self
            .zonelist_zones(target.preferred, target.this_node)
            .filter(|&(nid, z)| z.zone_type() <= req.highest_zone && allows(target.nodemask, nid));
        let Some((first_nid, first)) = allowed.next() else {
            return Err(AllocError::NoZone);
        };
        // The zonelist in place: at most every zone of every node.
        let mut zones = [first; MAX_NUMNODES * MAX_NR_ZONES];
        let mut nids = [first_nid; MAX_NUMNODES * MAX_NR_ZONES];
        let mut n = 1;
        for (nid, z) in allowed {
            zones[n] = z;
            nids[n] = nid;
            n += 1;
        }
        let multi = self.nodes.get().len() > 1;
        let list = ZoneList {
            zones: &zones[..n],
            nids: if multi { &nids[..n] } else { &[] },
        };
        let pfn = alloc_walk(&list, order, req, &mut PcpAccess::Cpu(cpu))?;
        if let Some(got) = self.node_of(pfn) {
            let counters = self.nodes.get().iter().map(|x| &x.counters);
            stats::zone_statistics(counters, first_nid, got.id(), cpu_node);
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
        self.nodes
            .get()
            .get(node as usize)
            .map(|x| x.counters.read())
    }

    /// The text of `/sys/devices/system/node/node<node>/numastat`.
    #[cfg(feature = "std")]
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
        let Some(home) = self.cpu_to_node(cpu) else {
            return 0;
        };
        let n = self.nodes.get().len();
        let mut changes = 0;
        for (ni, x) in self.nodes().enumerate() {
            let slot = &self.slots.get()[cpu.0 as usize * n + ni];
            for (zi, z) in x.zones().enumerate() {
                let (seen, expire) = (&slot.seen[zi], &slot.expire[zi]);
                let info = z.pcp_info(cpu);
                let s = info.stats;
                let moved = s.refill_pages
                    + s.drain_high_pages
                    + s.drain_free_high_pages
                    + s.drain_decay_pages
                    + s.drain_local_pages;
                if seen.swap(moved, Ordering::Relaxed) != moved {
                    // "3 seconds idle till flush"
                    expire.store(3, Ordering::Relaxed);
                }
                z.decay_pcp_high(cpu);
                if !self.cfg.expire_drain {
                    continue;
                }
                let count = z.pcp_info(cpu).count;
                let exp = expire.load(Ordering::Relaxed);
                if exp == 0 || count == 0 {
                    continue;
                }
                // "We never drain zones local to this processor."
                if ni as u32 == home {
                    expire.store(0, Ordering::Relaxed);
                    continue;
                }
                expire.store(exp - 1, Ordering::Relaxed);
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

    /// Drains every CPU's lists in every zone of every node (`drain_all_pages(NULL)`). Under
    /// owner drain, as `__drain_all_pages` before seed 004's remote drain (5.19 and earlier;
    /// 6.1 already drains each CPU under its `pcp->lock` from the caller) queues one work
    /// item per CPU, which drains all its zones (`drain_local_pages` -> `drain_pages`), then
    /// flushes them once: every zone's owners are asked first, then waited for together, one
    /// wait however many nodes and zones, where a drain zone by zone waited for each zone's
    /// owners in turn.
    pub fn drain_all(&self) {
        self.drain_all_waits();
    }

    /// [`Machine::drain_all`], returning how many times it waited for owners: 0 where none
    /// had to be asked (remote drain, or no pages), else 1.
    pub fn drain_all_waits(&self) -> u32 {
        let mut raised = [0u64; MAX_NUMNODES * MAX_NR_ZONES];
        let zones = self.nodes().flat_map(|x| x.zones());
        for (r, z) in raised.iter_mut().zip(zones.clone()) {
            *r = z.raise_drains();
        }
        if raised.iter().all(|&r| r == 0) {
            return 0;
        }
        for (&r, z) in raised.iter().zip(zones) {
            if r != 0 {
                z.wait_raised(r);
            }
        }
        1
    }

    /// Checks every node's invariants and returns what they counted, summed.
    pub fn check(&self) -> Result<crate::CheckFacts, crate::CheckError> {
        let mut total = crate::CheckFacts::default();
        for x in self.nodes() {
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

/// `get_page_from_freelist` and the slow path over a zonelist the caller built, each zone
/// with its node (`nids`, one per zone; empty on a single-node machine, where
/// `ALLOC_NOFRAGMENT` never looks at nodes): for a caller that keeps its zones apart from a
/// [`Machine`] (the trace replay's zones of several nodes), as [`Machine::alloc`] walks its
/// own. The first zone is the preferred zone. On the CPU of `req` (or the calling one); no
/// `zone_statistics` (the caller counts). `NoZone` for an empty list or a `nids` of another
/// length.
pub fn alloc_zonelist<P: Platform>(
    zones: &[&Zone<P>],
    nids: &[u32],
    order: Order,
    req: AllocRequest,
) -> Result<Pfn, AllocError> {
    if zones.is_empty() || !(nids.is_empty() || nids.len() == zones.len()) {
        return Err(AllocError::NoZone);
    }
    let cpu = req
        .cpu
        .map_or_else(|| P::current_cpu() as usize, |c| c.0 as usize);
    let list = ZoneList { zones, nids };
    alloc_walk(&list, order, req, &mut PcpAccess::Cpu(cpu))
}
