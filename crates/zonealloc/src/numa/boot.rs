//! Building a [`Machine`]: from a memory map with node ids (`std`), from nodes on the heap
//! ([`Machine::new`], `std`) or from nodes in caller storage ([`Machine::from_uninit`],
//! without a heap), then `build_all_zonelists` and the machine-wide watermark setup.
//!
//! The storage follows the zone's: what grows with the firmware's node and CPU counts is a
//! [`StaticSlice`], boxed under `std` or borrowed from the embedder's `'static` memory
//! (a [`StaticStorage`](crate::platform::StaticStorage) in `.bss`, or RAM carved at boot).

use core::mem::MaybeUninit;

use super::stats::NodeCounters;
use super::zonelist::node_orders_each;
use super::{Distances, Machine, NumaConfig, MAX_NUMNODES};
use crate::error::ConfigError;
use crate::node::Node;
use crate::platform::Platform;
use crate::sync::{init_prefix, AtomicU64, AtomicU8, StaticSlice};
use crate::types::{ZoneType, MAX_NR_ZONES};

/// The most zones a machine built without `std` has: its watermark setup keeps one scratch
/// entry per zone on the stack (about 300 bytes each).
pub(super) const NO_STD_MACHINE_ZONES: usize = 16;

/// One node of a [`Machine`] and the machine's state for it: its `numastat` counters and its
/// zonelist's node order (`build_zonelists`). The storage [`Machine::from_uninit`] takes,
/// one per node.
pub struct NumaNode<P: Platform> {
    pub(super) node: Node<P>,
    pub(super) counters: NodeCounters,
    order: [u8; MAX_NUMNODES],
    order_len: u8,
}

impl<P: Platform> NumaNode<P> {
    /// The fallback node order of the node's `ZONELIST_FALLBACK`.
    pub(super) fn order(&self) -> &[u8] {
        &self.order[..self.order_len as usize]
    }
}

impl<P: Platform> core::fmt::Debug for NumaNode<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NumaNode")
            .field("node", &self.node)
            .field("order", &self.order())
            .finish_non_exhaustive()
    }
}

/// One CPU's state for one node: the CPU's own node (`cpu_to_node`) and, per zone of that
/// node, the expiry countdown of the CPU's pageset there (`pcp->expire`) and its buddy
/// transfers at the vmstat worker's last run. The storage [`Machine::from_uninit`] takes,
/// `cpus * nodes` of them.
#[derive(Debug)]
pub struct NumaSlot {
    pub(super) cpu_node: u32,
    pub(super) expire: [AtomicU8; MAX_NR_ZONES],
    pub(super) seen: [AtomicU64; MAX_NR_ZONES],
}

impl NumaSlot {
    fn new(cpu_node: u32) -> Self {
        NumaSlot {
            cpu_node,
            expire: Default::default(),
            seen: Default::default(),
        }
    }
}

#[cfg(feature = "std")]
impl Machine {
    /// A machine booted from a memory map with node ids, a distance table and each CPU's
    /// node: node `i`'s zones are built from its regions as [`Node::from_memory_map`] builds
    /// one node's (every zone with a pageset for every CPU, `high` split across the node's
    /// own CPUs: `zone_highsize`'s `cpumask_of_node`), then the watermarks are set over all
    /// nodes ([`Machine::setup_watermarks`]) and the zonelists built (`build_all_zonelists`):
    /// [`Machine::boot_with`] without init memory. Node ids must be `0..dist.nodes()`; every
    /// node needs memory (memoryless nodes are not modelled) and every CPU a node.
    pub fn from_memory_map(
        regions: &[super::NodeRegion],
        dist: Distances,
        cpu_node: &[u32],
        cfg: crate::config::ZoneConfig,
        numa: NumaConfig,
    ) -> Result<Machine, ConfigError> {
        let nothing = crate::node::BootFrees::default();
        Machine::boot_with(regions, &nothing, dist, cpu_node, cfg, numa)
    }

    /// A machine booted the way the kernel boots one (`init/main.c`), as [`Node::boot_with`]
    /// boots a single node, with every step over all nodes at once: each node's zones get
    /// their usable frames except the init memory of `frees` (`memblock_free_all`, whose
    /// ranges may lie on any node); then `init_per_zone_wmark_min` (`calculate_min_free_kbytes`
    /// from the machine's `nr_free_buffer_pages`, the watermarks split over every lowmem zone
    /// of every node, each node's lowmem reserve and PCP sizes, `high` split over the node's
    /// own CPUs); the SMP-alternatives memory at its `arch_initcall` where the configuration
    /// says so; `hugepage_init` (`set_recommended_min_free_kbytes` counts the populated zones
    /// of every node); then the late frees, which change no watermark. Each range of
    /// `frees` goes to the node that spans it.
    pub fn boot_with(
        regions: &[super::NodeRegion],
        frees: &crate::node::BootFrees<'_>,
        dist: Distances,
        cpu_node: &[u32],
        cfg: crate::config::ZoneConfig,
        numa: NumaConfig,
    ) -> Result<Machine, ConfigError> {
        let n = dist.nodes();
        check_cpus(&dist, cpu_node)?;
        if regions.iter().any(|r| r.node as usize >= n) {
            return Err(ConfigError::BadNuma(
                "a region names a node the distance table lacks",
            ));
        }
        let cpus = cpu_node.len() as u32;
        let mut nodes = std::vec::Vec::with_capacity(n);
        let mut arch_initcall = false;
        for id in 0..n as u32 {
            let mine: std::vec::Vec<crate::memmap::MemoryRegion> = regions
                .iter()
                .filter(|r| r.node == id)
                .map(|r| r.region)
                .collect();
            let local = cpu_node.iter().filter(|&&c| c == id).count() as u32;
            let mut c = cfg;
            c.pcp = c.pcp.with_cpus(cpus).with_split_cpus(Some(local));
            let node = Node::zones_of_map(id, &mine, c)?;
            if node.zones().next().is_none() {
                return Err(ConfigError::BadNuma("a node has no memory"));
            }
            arch_initcall = node.add_early_memory(&mine, frees, c)?;
            nodes.push(node);
        }
        check_nodes(&nodes, &dist, cpu_node)?;
        let mut nodes: std::vec::Vec<NumaNode<crate::DefaultPlatform>> =
            nodes.into_iter().map(numa_node).collect();
        build_orders(&mut nodes, &dist, cpu_node);
        let slots: std::vec::Vec<NumaSlot> = slots_of(cpu_node, n).collect();
        let m = Machine::unset(
            StaticSlice::from_box(nodes.into_boxed_slice()),
            StaticSlice::from_box(slots.into_boxed_slice()),
            dist,
            numa,
        );
        let mfk = m.init_per_zone_wmark_min();
        if arch_initcall {
            for &(s, e) in frees.smp_alternatives {
                m.free_reserved_area(s, e)?;
            }
        }
        m.hugepage_init(mfk);
        for &(s, e) in frees.late {
            m.free_reserved_area(s, e)?;
        }
        Ok(m)
    }

    /// `init_per_zone_wmark_min` over the machine: `calculate_min_free_kbytes` (no high
    /// marks yet), `setup_per_zone_wmarks`, `setup_per_zone_lowmem_reserve`. Returns the
    /// `min_free_kbytes` it set.
    fn init_per_zone_wmark_min(&self) -> u64 {
        use crate::buddy::{calculate_min_free_kbytes, setup_per_zone_wmarks_into};
        self.with_scratch(|sizes, cfgs, wm| {
            let mfk = calculate_min_free_kbytes(sizes, cfgs, wm);
            setup_per_zone_wmarks_into(sizes, cfgs, mfk, wm);
            self.apply_marks(sizes, cfgs, wm, true);
            mfk
        })
    }

    /// `hugepage_init` over the machine, `mfk` being the `min_free_kbytes` of before: where
    /// khugepaged starts, `set_recommended_min_free_kbytes` over the managed pages and marks
    /// of now and its `setup_per_zone_wmarks`; the lowmem reserve stays.
    fn hugepage_init(&self, mfk: u64) {
        use crate::buddy::{khugepaged_min_free_kbytes, setup_per_zone_wmarks_into};
        self.with_scratch(|sizes, cfgs, wm| {
            for (w, z) in wm.iter_mut().zip(self.nodes().flat_map(|x| x.zones())) {
                *w = z.watermarks();
            }
            if let Some(raised) = khugepaged_min_free_kbytes(sizes, cfgs, wm, mfk) {
                setup_per_zone_wmarks_into(sizes, cfgs, raised, wm);
                self.apply_marks(sizes, cfgs, wm, false);
            }
        });
    }

    /// `free_reserved_area` on the node that spans `start` (see
    /// [`Node::free_reserved_area`]); the range must lie on one node.
    pub fn free_reserved_area(
        &self,
        start: crate::Pfn,
        end: crate::Pfn,
    ) -> Result<u64, ConfigError> {
        let node = self
            .node_of(start)
            .ok_or(ConfigError::Range(crate::RangeError::OutOfZone {
                pfn: start,
            }))?;
        node.free_reserved_area(start, end)
            .map_err(ConfigError::Range)
    }
}

impl<P: Platform> Machine<P> {
    /// A machine of the given nodes (node `i` with id `i`, each with zones whose pagesets
    /// cover every CPU of `cpu_node`), with its watermarks set over all of them and its
    /// zonelists built.
    #[cfg(feature = "std")]
    pub fn new(
        nodes: std::vec::Vec<Node<P>>,
        dist: Distances,
        cpu_node: &[u32],
        cfg: NumaConfig,
    ) -> Result<Self, ConfigError> {
        check_cpus(&dist, cpu_node)?;
        check_nodes(&nodes, &dist, cpu_node)?;
        let mut nodes: std::vec::Vec<NumaNode<P>> = nodes.into_iter().map(numa_node).collect();
        build_orders(&mut nodes, &dist, cpu_node);
        let slots: std::vec::Vec<NumaSlot> = slots_of(cpu_node, dist.nodes()).collect();
        Ok(Machine::assemble(
            StaticSlice::from_box(nodes.into_boxed_slice()),
            StaticSlice::from_box(slots.into_boxed_slice()),
            dist,
            cfg,
        ))
    }

    /// A machine of the given nodes, as [`Machine::new`] builds one, without a heap: the
    /// nodes move into `node_storage` (at least one entry per node) and the per-CPU state
    /// goes to `slot_storage` (at least `cpu_node.len() * dist.nodes()` entries), both
    /// `'static` memory the embedder hands over as it does a zone's table
    /// ([`Zone::from_uninit`](crate::Zone::from_uninit)). Without `std` a machine has at
    /// most 16 zones in all (the watermark setup's scratch is on the stack).
    ///
    /// The checks that need only the arguments come first; a wrong node count or layout is
    /// found once the nodes are in `node_storage`, which is then spent (boot memory).
    pub fn from_uninit(
        nodes: impl IntoIterator<Item = Node<P>>,
        dist: Distances,
        cpu_node: &[u32],
        cfg: NumaConfig,
        node_storage: &'static mut [MaybeUninit<NumaNode<P>>],
        slot_storage: &'static mut [MaybeUninit<NumaSlot>],
    ) -> Result<Self, ConfigError> {
        check_cpus(&dist, cpu_node)?;
        let n = dist.nodes();
        if node_storage.len() < n || slot_storage.len() < cpu_node.len() * n {
            return Err(ConfigError::BadNuma(
                "storage for fewer nodes or CPUs than the machine has",
            ));
        }
        let nodes = init_prefix(node_storage, nodes.into_iter().map(numa_node))
            .ok_or(ConfigError::BadNuma("more nodes than storage for them"))?;
        {
            let shared: &[NumaNode<P>] = nodes;
            let plain = shared.iter().map(|x| &x.node);
            check_node_iter(plain, &dist, cpu_node)?;
            if !cfg!(feature = "std")
                && shared.iter().map(|x| x.node.zones().count()).sum::<usize>()
                    > NO_STD_MACHINE_ZONES
            {
                return Err(ConfigError::BadNuma(
                    "more than 16 zones in a machine without std",
                ));
            }
        }
        build_orders(nodes, &dist, cpu_node);
        let slot_storage = &mut slot_storage[..cpu_node.len() * n];
        let slots = init_prefix(slot_storage, slots_of(cpu_node, n))
            .ok_or(ConfigError::BadNuma("more CPUs than storage for them"))?;
        Ok(Machine::assemble(
            StaticSlice::borrowed(nodes),
            StaticSlice::borrowed(slots),
            dist,
            cfg,
        ))
    }

    /// The machine over checked storage with its node orders: its `policy_zone`, its
    /// watermarks.
    fn assemble(
        nodes: StaticSlice<NumaNode<P>>,
        slots: StaticSlice<NumaSlot>,
        dist: Distances,
        cfg: NumaConfig,
    ) -> Self {
        let m = Machine::unset(nodes, slots, dist, cfg);
        m.setup_watermarks();
        m
    }

    /// The machine over checked storage with its node orders and its `policy_zone`, the
    /// watermarks not set over the machine yet.
    fn unset(
        nodes: StaticSlice<NumaNode<P>>,
        slots: StaticSlice<NumaSlot>,
        dist: Distances,
        cfg: NumaConfig,
    ) -> Self {
        // check_highest_zone: the highest populated zone type but Movable.
        let policy_zone = nodes
            .get()
            .iter()
            .flat_map(|x| x.node.zones().map(|z| z.zone_type()))
            .filter(|&t| t != ZoneType::Movable)
            .max()
            .unwrap_or(ZoneType::Normal);
        Machine {
            nodes,
            slots,
            dist,
            cfg,
            policy_zone,
        }
    }
}

/// `build_all_zonelists`: each node's fallback order, from the distances, the nodes with CPUs
/// and the nodes with memory.
fn build_orders<P: Platform>(nodes: &mut [NumaNode<P>], dist: &Distances, cpu_node: &[u32]) {
    let n = dist.nodes();
    let mut has_cpus = [false; MAX_NUMNODES];
    for &c in cpu_node {
        has_cpus[c as usize] = true;
    }
    let mut has_memory = [false; MAX_NUMNODES];
    for (i, x) in nodes.iter().enumerate().take(n) {
        has_memory[i] = x.node.zones().next().is_some();
    }
    node_orders_each(dist, &has_cpus[..n], &has_memory[..n], |i, order| {
        nodes[i].order[..order.len()].copy_from_slice(order);
        nodes[i].order_len = order.len() as u8;
    });
}

fn numa_node<P: Platform>(node: Node<P>) -> NumaNode<P> {
    NumaNode {
        node,
        counters: NodeCounters::default(),
        order: [0; MAX_NUMNODES],
        order_len: 0,
    }
}

/// Slot `cpu * n + node` holds `cpu`'s node; every slot starts with no expiry.
fn slots_of(cpu_node: &[u32], n: usize) -> impl Iterator<Item = NumaSlot> + '_ {
    cpu_node
        .iter()
        .flat_map(move |&c| (0..n).map(move |_| NumaSlot::new(c)))
}

/// Every CPU has a node of the table, and there is a CPU.
fn check_cpus(dist: &Distances, cpu_node: &[u32]) -> Result<(), ConfigError> {
    if cpu_node.is_empty() || cpu_node.iter().any(|&c| c as usize >= dist.nodes()) {
        return Err(ConfigError::BadNuma(
            "every CPU needs a node below the node count",
        ));
    }
    Ok(())
}

#[cfg(feature = "std")]
fn check_nodes<P: Platform>(
    nodes: &[Node<P>],
    dist: &Distances,
    cpu_node: &[u32],
) -> Result<(), ConfigError> {
    check_node_iter(nodes.iter(), dist, cpu_node)
}

/// Node `i` has id `i`, one per row of the table, and every zone a pageset per CPU.
fn check_node_iter<'a, P: Platform + 'a>(
    nodes: impl Iterator<Item = &'a Node<P>> + Clone,
    dist: &Distances,
    cpu_node: &[u32],
) -> Result<(), ConfigError> {
    if nodes.clone().count() != dist.nodes()
        || nodes.clone().enumerate().any(|(i, x)| x.id() as usize != i)
    {
        return Err(ConfigError::BadNuma(
            "node i must have id i, one per table row",
        ));
    }
    // Every CPU needs a pageset in every zone of every node.
    let short = nodes
        .flat_map(|x| x.zones())
        .any(|z| z.config().pcp.enabled && (z.cpus() as usize) < cpu_node.len());
    if short {
        return Err(ConfigError::BadNuma(
            "a zone has fewer pagesets than the machine has CPUs",
        ));
    }
    Ok(())
}
