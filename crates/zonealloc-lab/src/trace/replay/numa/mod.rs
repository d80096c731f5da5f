//! A replay of a machine with several NUMA nodes (a `--proc` snapshot whose zoneinfo has
//! `Node 1` zones and whose `nodes/nodeN/cpulist` say which CPU is whose).
//!
//! The zones are those of every node, each with a pageset per CPU (the kernel's
//! `per_cpu_pageset` of every populated zone of every node); a traced frame belongs to the
//! zone, and so the node, that spans it, so an allocation is replayed in the zone the kernel
//! handed it out of, after whatever zonelist fallback across nodes the kernel did; a free
//! goes to the freeing CPU's pageset of the page's own zone, a remote node's when the page
//! is remote (`free_frozen_pages` / `free_unref_page`). What this module adds:
//! - [`Zonelists`]: each node's zonelist from the snapshot's distances (`build_zonelists`),
//!   which an allocation walks where ours places it: a traced failure (no zone named), or
//!   one whose named zone ours cannot satisfy (it goes on to the zones after it);
//! - [`NumaCounts`]: `zone_statistics` per node (`numa_hit`, `numa_miss`, `numa_foreign`,
//!   `local_node`, `other_node`), for the trace's allocations and for ours, the preferred node
//!   taken as the allocating CPU's (`numa_node_id()`, the default local policy): the trace
//!   does not carry the task's mempolicy;
//! - [`Expiry`]: the vmstat worker's expiry drain of remote-node pagesets (`pcp->expire`,
//!   `drain_zone_pages` in `refresh_cpu_vm_stats` under CONFIG_NUMA, 6.1 and 7.2 alike),
//!   counted down at the replay's worker runs in every variant (on several nodes the
//!   workers run on kernels without the decay of `high` too), beside the trace's.

mod counts;
mod expire;
mod fidelity;
mod zonelist;

pub use counts::NumaCounts;
pub use expire::{Expiry, ExpiryDrains};
pub use fidelity::{node_cpu, node_fidelity, numastat_moved};
pub use zonelist::Zonelists;

use super::geometry::Geometry;
use crate::procfs::ProcSnapshot;

/// What a replayer keeps for a machine of several nodes.
pub struct NumaReplay {
    /// The node counters of the trace's allocations (the kernel's, as far as the trace shows).
    pub kernel: NumaCounts,
    /// The node counters of the replay's own allocations.
    pub ours: NumaCounts,
    /// Each CPU's remote pagesets' expiry.
    pub expiry: Expiry,
    /// Each node's zonelist, which the allocations the replay places itself walk.
    pub zonelists: Zonelists,
}

impl NumaReplay {
    /// For `geo` when its zones lie on several nodes, its zonelists from `snap`'s nodes
    /// ([`Zonelists::build`]); `None` otherwise (a single-node replay pays nothing for
    /// nodes).
    pub fn for_geometry(
        geo: &Geometry,
        snap: Option<&ProcSnapshot>,
    ) -> Result<Option<Box<NumaReplay>>, String> {
        if !geo.multi_node() {
            return Ok(None);
        }
        let nodes = geo.nodes() as usize;
        let zonelists = Zonelists::build(geo, snap.map_or(&[], |s| &s.nodes))?;
        let zone_nodes: Vec<u32> = geo.zones.iter().map(|z| z.node).collect();
        Ok(Some(Box::new(NumaReplay {
            kernel: NumaCounts::new(nodes),
            ours: NumaCounts::new(nodes),
            expiry: Expiry::new(geo.cpus, &zone_nodes),
            zonelists,
        })))
    }
}
