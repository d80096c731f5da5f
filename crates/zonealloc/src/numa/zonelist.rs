//! Node distances and the zonelist node order: `find_next_best_node` and `build_zonelists`
//! (`mm/page_alloc.c`, the same in 6.1 and 7.2).

use crate::error::ConfigError;

/// `LOCAL_DISTANCE` (`include/linux/topology.h`).
pub const LOCAL_DISTANCE: u32 = 10;

/// `MAX_NUMNODES` of the Debian x86-64 kernels (`CONFIG_NODES_SHIFT=10`): the factor
/// `find_next_best_node` scales a distance by before adding the node load.
const KERNEL_MAX_NUMNODES: u64 = 1 << 10;

/// The most nodes a [`Machine`](super::Machine) has here (a [`NodeMask`](super::NodeMask) is
/// one 64-bit word).
pub const MAX_NUMNODES: usize = 64;

/// `PENALTY_FOR_NODE_WITH_CPUS`.
const PENALTY_FOR_NODE_WITH_CPUS: u64 = 1;

/// A node distance table (ACPI SLIT, or a device tree's `distance-map`): `n * n` entries,
/// row `from`, column `to`, kept in place (no heap) as the kernel's `numa_distance` bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Distances {
    n: usize,
    d: [u8; MAX_NUMNODES * MAX_NUMNODES],
}

impl core::fmt::Debug for Distances {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list()
            .entries((0..self.n).map(|i| &self.d[i * self.n..(i + 1) * self.n]))
            .finish()
    }
}

impl Distances {
    /// A table of `n` nodes from its rows, checked as `slit_valid` (`drivers/acpi/numa/srat.c`)
    /// checks a SLIT: `LOCAL_DISTANCE` on the diagonal, more than it elsewhere; and each
    /// distance a byte, as `numa_set_distance` (`mm/numa_emulation.c` and
    /// `drivers/base/arch_numa.c`) requires ("(u8)distance != distance" is refused).
    pub fn new(n: usize, rows: &[u32]) -> Result<Self, ConfigError> {
        if n == 0 || n > MAX_NUMNODES {
            return Err(ConfigError::BadNuma("between 1 and 64 nodes"));
        }
        if rows.len() != n * n {
            return Err(ConfigError::BadNuma(
                "the distance table must have nodes^2 entries",
            ));
        }
        for i in 0..n {
            for j in 0..n {
                let v = rows[i * n + j];
                if (i == j && v != LOCAL_DISTANCE) || (i != j && v <= LOCAL_DISTANCE) {
                    return Err(ConfigError::BadNuma(
                        "distances must be 10 to the node itself and more than 10 to others",
                    ));
                }
                if v > u8::MAX as u32 {
                    return Err(ConfigError::BadNuma(
                        "a distance must fit a byte (at most 255)",
                    ));
                }
            }
        }
        let mut d = [0; MAX_NUMNODES * MAX_NUMNODES];
        for (to, &v) in d.iter_mut().zip(rows) {
            *to = v as u8;
        }
        Ok(Distances { n, d })
    }

    /// The nodes the table covers.
    pub fn nodes(&self) -> usize {
        self.n
    }

    /// `node_distance(from, to)`.
    pub fn get(&self, from: usize, to: usize) -> u32 {
        self.d[from * self.n + to] as u32
    }
}

/// `find_next_best_node`: the local node first if unused (and with memory); else the unused
/// node with memory of least `(distance + (n < node) + has_cpus) * MAX_NUMNODES +
/// node_load[n]`, lowest id on ties.
fn find_next_best_node(
    node: usize,
    used: &mut [bool],
    dist: &Distances,
    has_cpus: &[bool],
    has_memory: &[bool],
    node_load: &[u64],
) -> Option<usize> {
    if !used[node] && has_memory[node] {
        used[node] = true;
        return Some(node);
    }
    let mut best: Option<(u64, usize)> = None;
    for n in 0..dist.nodes() {
        if used[n] || !has_memory[n] {
            continue;
        }
        let mut val = dist.get(node, n) as u64;
        // "Penalize nodes under us ("prefer the next node")"
        val += (n < node) as u64;
        // "Give preference to headless and unused nodes"
        if has_cpus[n] {
            val += PENALTY_FOR_NODE_WITH_CPUS;
        }
        val = val * KERNEL_MAX_NUMNODES + node_load[n];
        if best.map_or(true, |(b, _)| val < b) {
            best = Some((val, n));
        }
    }
    let (_, n) = best?;
    used[n] = true;
    Some(n)
}

/// The fallback node order of every node, as `__build_all_zonelists` builds them: `node_load`
/// cleared once, then `build_zonelists` for each node in id order, each adding a penalty to
/// the first node of every new distance group it picks ("round-robin"), which the later
/// nodes' orders see. Nodes without memory get the order but appear in none. `has_cpus` and
/// `has_memory` have one entry per node of `dist`.
#[cfg(feature = "std")]
pub fn build_node_orders(
    dist: &Distances,
    has_cpus: &[bool],
    has_memory: &[bool],
) -> std::vec::Vec<std::vec::Vec<usize>> {
    let mut out = std::vec::Vec::with_capacity(dist.nodes());
    node_orders_each(dist, has_cpus, has_memory, |_, order| {
        out.push(order.iter().map(|&n| n as usize).collect());
    });
    out
}

/// [`build_node_orders`] without a heap: `each(node, order)` for every node in id order.
pub(crate) fn node_orders_each(
    dist: &Distances,
    has_cpus: &[bool],
    has_memory: &[bool],
    mut each: impl FnMut(usize, &[u8]),
) {
    let n = dist.nodes();
    let mut node_load = [0u64; MAX_NUMNODES];
    for local in 0..n {
        let mut used = [false; MAX_NUMNODES];
        let mut order = [0u8; MAX_NUMNODES];
        let mut len = 0;
        let mut prev = local;
        while let Some(node) = find_next_best_node(
            local,
            &mut used[..n],
            dist,
            &has_cpus[..n],
            &has_memory[..n],
            &node_load[..n],
        ) {
            // build_zonelists: "adding penalty to the first node in same distance group".
            if dist.get(local, node) != dist.get(local, prev) {
                node_load[node] += 1;
            }
            order[len] = node as u8;
            len += 1;
            prev = node;
        }
        each(local, &order[..len]);
    }
}
