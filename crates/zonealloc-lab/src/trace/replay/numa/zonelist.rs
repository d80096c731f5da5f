//! The replay's zonelists on several nodes: each node's `ZONELIST_FALLBACK` as
//! `build_zonelists` orders it (`find_next_best_node`: nodes by distance from the node, ties
//! by `node_load`; within a node its zones high to low, `build_zonerefs_node`), from the
//! snapshot's `nodes/nodeN/distance` and `cpulist`, and the walk an allocation the replay
//! places itself takes over it (`get_page_from_freelist` with its watermarks and
//! `ALLOC_NOFRAGMENT` across nodes, then the slow path: the core's
//! [`zonealloc::numa::alloc_zonelist`]). `__GFP_THISNODE` takes the node's
//! own zones only (`ZONELIST_NOFALLBACK`, `gfp_zonelist`).

use zonealloc::numa::{alloc_zonelist, build_node_orders, Distances, LOCAL_DISTANCE};
use zonealloc::{AllocError, AllocRequest, Order, Pfn, Zone, ZoneType};

use crate::procfs::NodeSnapshot;
use crate::trace::replay::geometry::Geometry;

/// The distance between two nodes where the snapshot has no `nodes/` (the SLIT's usual
/// remote distance; such a snapshot of several nodes is refused before a replay).
const REMOTE_DISTANCE: u32 = 20;

/// Each node's fallback zonelist, as indices of [`Geometry::zones`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zonelists {
    /// Per node id: its `ZONELIST_FALLBACK`, preferred zone first.
    fallback: Vec<Vec<usize>>,
    /// Per zone index: its node.
    nids: Vec<u32>,
    /// Per zone index: its type.
    types: Vec<ZoneType>,
}

impl Zonelists {
    /// The zonelists of `geo`'s zones on the nodes of `nodes` (the snapshot's, in id order;
    /// empty: every other node at `REMOTE_DISTANCE`, 20). A distance table that is not one row
    /// per node, or that the kernel would refuse (`slit_valid`), is an error naming it.
    pub fn build(geo: &Geometry, nodes: &[NodeSnapshot]) -> Result<Zonelists, String> {
        let n = geo.nodes() as usize;
        let rows: Vec<u32> = if nodes.is_empty() {
            (0..n * n)
                .map(|k| {
                    if k / n == k % n {
                        LOCAL_DISTANCE
                    } else {
                        REMOTE_DISTANCE
                    }
                })
                .collect()
        } else {
            for (i, x) in nodes.iter().enumerate() {
                if x.id as usize != i || x.distance.len() != n || nodes.len() != n {
                    return Err(format!(
                        "nodes/node{}/distance: the replay needs nodes 0..{n} each with one \
                         distance per node (found {} nodes, this one with {} distances)",
                        x.id,
                        nodes.len(),
                        x.distance.len()
                    ));
                }
            }
            nodes
                .iter()
                .flat_map(|x| x.distance.iter().copied())
                .collect()
        };
        let dist = Distances::new(n, &rows)
            .map_err(|e| format!("nodes/nodeN/distance: {e:?} ({rows:?})"))?;
        let has_cpus: Vec<bool> = (0..n as u32)
            .map(|id| match nodes.iter().find(|x| x.id == id) {
                Some(x) => !x.cpus.is_empty(),
                None => geo.cpu_nodes.contains(&id) || (id == 0 && geo.cpu_nodes.is_empty()),
            })
            .collect();
        let has_memory: Vec<bool> = (0..n as u32)
            .map(|id| geo.zones.iter().any(|z| z.node == id))
            .collect();
        let fallback = build_node_orders(&dist, &has_cpus, &has_memory)
            .into_iter()
            .map(|order| {
                let mut list = Vec::new();
                for nid in order {
                    // build_zonerefs_node: the node's populated zones, highest first.
                    let mut own: Vec<usize> = (0..geo.zones.len())
                        .filter(|&z| geo.zones[z].node == nid as u32)
                        .collect();
                    own.sort_by_key(|&z| std::cmp::Reverse(geo.zones[z].zone_type));
                    list.extend(own);
                }
                list
            })
            .collect();
        Ok(Zonelists {
            fallback,
            nids: geo.zones.iter().map(|z| z.node).collect(),
            types: geo.zones.iter().map(|z| z.zone_type).collect(),
        })
    }

    /// Node `node`'s zonelist (`this_node`: its `ZONELIST_NOFALLBACK`, its own zones), zones
    /// above `req.highest_zone` left out (`for_next_zone_zonelist_nodemask`'s
    /// `highest_zoneidx`).
    pub fn list(&self, node: u32, this_node: bool, req: &AllocRequest) -> Vec<usize> {
        let Some(all) = self.fallback.get(node as usize) else {
            return Vec::new();
        };
        all.iter()
            .copied()
            .filter(|&z| !this_node || self.nids[z] == node)
            .filter(|&z| self.types[z] <= req.highest_zone)
            .collect()
    }

    /// An allocation on a CPU of `node` over `zones` (as [`Geometry::zones`]). With `kernel`,
    /// the zone the kernel's trace names: that zone first, with its whole walk (fast path,
    /// then the slow path's min watermark and reserves: the kernel's own walk ended there, at
    /// whichever pass), and only where ours cannot satisfy it there, the zonelist's zones
    /// after it, as the kernel would have gone on. Without (a traced failure, which names
    /// no zone: the replay places it itself), the whole zonelist. `gfp_flags` decide the
    /// `NOFALLBACK` list (`__GFP_THISNODE`).
    pub fn alloc(
        &self,
        zones: &[Zone],
        kernel: Option<usize>,
        node: u32,
        gfp_flags: &str,
        order: Order,
        req: AllocRequest,
    ) -> Result<Pfn, AllocError> {
        let this_node = gfp_flags.split('|').any(|f| f == "__GFP_THISNODE");
        let mut list = self.list(node, this_node, &req);
        if let Some(k) = kernel {
            // get_page_from_freelist checked the zones before the kernel's first (in one
            // pass or the other of ALLOC_NOFRAGMENT's): their high-mark checks set
            // ZONE_BELOW_HIGH where they failed (`Zone::pass_over`).
            let above = list.iter().position(|&z| z == k).unwrap_or(0);
            for zone in list[..above].iter().filter_map(|&z| zones.get(z)) {
                zone.pass_over(order, &req);
            }
            let first = zones
                .get(k)
                .ok_or(AllocError::NoZone)?
                .alloc_with(order, req);
            if first.is_ok() {
                return first;
            }
            match list.iter().position(|&z| z == k) {
                Some(i) => drop(list.drain(..=i)),
                None => list.clear(),
            }
            if list.is_empty() {
                return first;
            }
        }
        let refs: Vec<&Zone> = list.iter().filter_map(|&z| zones.get(z)).collect();
        let nids: Vec<u32> = list.iter().map(|&z| self.nids[z]).collect();
        if refs.len() != nids.len() {
            return Err(AllocError::NoZone);
        }
        alloc_zonelist(&refs, &nids, order, req)
    }
}

#[cfg(test)]
mod tests;
