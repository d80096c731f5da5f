//! Node distances and the zonelist node order: `find_next_best_node` and `build_zonelists`
//! (`mm/page_alloc.c`, the same in 6.1 and 7.2).

use std::vec::Vec;

use crate::error::ConfigError;

/// `LOCAL_DISTANCE` (`include/linux/topology.h`).
pub const LOCAL_DISTANCE: u32 = 10;

/// `MAX_NUMNODES` of the Debian x86-64 kernels (`CONFIG_NODES_SHIFT=10`): the factor
/// `find_next_best_node` scales a distance by before adding the node load.
const MAX_NUMNODES: u64 = 1 << 10;

/// `PENALTY_FOR_NODE_WITH_CPUS`.
const PENALTY_FOR_NODE_WITH_CPUS: u64 = 1;

/// A node distance table (ACPI SLIT, or a device tree's `distance-map`): `n * n` entries,
/// row `from`, column `to`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Distances {
    n: usize,
    d: Vec<u32>,
}

impl Distances {
    /// A table of `n` nodes from its rows, checked as `slit_valid` (`drivers/acpi/numa/srat.c`)
    /// checks a SLIT: `LOCAL_DISTANCE` on the diagonal, more than it elsewhere.
    pub fn new(n: usize, rows: &[u32]) -> Result<Self, ConfigError> {
        if n == 0 || n > 64 {
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
            }
        }
        Ok(Distances {
            n,
            d: rows.to_vec(),
        })
    }

    /// The nodes the table covers.
    pub fn nodes(&self) -> usize {
        self.n
    }

    /// `node_distance(from, to)`.
    pub fn get(&self, from: usize, to: usize) -> u32 {
        self.d[from * self.n + to]
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
        val = val * MAX_NUMNODES + node_load[n];
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
/// nodes' orders see. Nodes without memory get the order but appear in none.
pub fn build_node_orders(
    dist: &Distances,
    has_cpus: &[bool],
    has_memory: &[bool],
) -> Vec<Vec<usize>> {
    let n = dist.nodes();
    let mut node_load = std::vec![0u64; n];
    let mut out = Vec::with_capacity(n);
    for local in 0..n {
        let mut used = std::vec![false; n];
        let mut order = Vec::new();
        let mut prev = local;
        while let Some(node) =
            find_next_best_node(local, &mut used, dist, has_cpus, has_memory, &node_load)
        {
            // build_zonelists: "adding penalty to the first node in same distance group".
            if dist.get(local, node) != dist.get(local, prev) {
                node_load[node] += 1;
            }
            order.push(node);
            prev = node;
        }
        out.push(order);
    }
    out
}
