//! Fidelity per node: the kernel's refills and drains beside ours, summed over a node's
//! zones, and the node counters the `/proc` snapshots' `numastat` moved by.

use zonealloc::numa::NumaStat;

use crate::procfs::{numastat_since, ProcSnapshot};
use crate::trace::replay::geometry::Geometry;
use crate::trace::replay::tally::{Count, Grid};

/// One node's figure of a kind: `sum over its zones and CPUs |ours - kernel|` over the
/// kernel's total there, in percent (`None` when the kernel has none there), as
/// [`crate::trace::replay::tally::fidelity`] over the whole grid.
pub fn node_fidelity(
    geo: &Geometry,
    ours: &Grid,
    kernel: &Grid,
    node: u32,
    f: Count,
) -> Option<f64> {
    let (mut diff, mut total) = (0u64, 0u64);
    for (z, span) in geo.zones.iter().enumerate() {
        if span.node != node || z >= kernel.zones || z >= ours.zones {
            continue;
        }
        for c in 0..kernel.cpus.min(ours.cpus) {
            let (k, o) = (f(kernel.get(z, c)), f(ours.get(z, c)));
            diff += k.abs_diff(o);
            total += k;
        }
    }
    (total > 0).then(|| 100.0 * diff as f64 / total as f64)
}

/// One kind on node `node`, CPU `cpu` (summed over the node's zones).
pub fn node_cpu(geo: &Geometry, g: &Grid, node: u32, cpu: u32, f: Count) -> u64 {
    geo.zones
        .iter()
        .enumerate()
        .filter(|(z, s)| s.node == node && *z < g.zones && cpu < g.cpus)
        .map(|(z, _)| f(g.get(z, cpu)))
        .sum()
}

/// Per node of both snapshots, `after - before` of its `numastat` (nodes without one in
/// either are left out): what the kernel counted over the window, untraced allocations
/// (`alloc_pages_bulk`) and the snapshot reads' own included.
pub fn numastat_moved(before: &ProcSnapshot, after: &ProcSnapshot) -> Vec<(u32, NumaStat)> {
    before
        .nodes
        .iter()
        .filter_map(|b| {
            let a = after.nodes.iter().find(|a| a.id == b.id)?;
            Some((
                b.id,
                numastat_since(a.numastat.as_ref()?, b.numastat.as_ref()?),
            ))
        })
        .collect()
}
