//! The deterministic count behind seed 004's claim: how many owner handshakes one
//! `drain_all` needs. Each owner thread leaves pages on its CPU's lists, then keeps working
//! (polling its handle, so that an owner drain completes); the drainer drains once. Owner
//! drain must ask every owner that has pages (one handshake each, served by the owner:
//! `drain_local_pages` rises on its CPU); remote drain takes each CPU's lock itself and asks
//! nobody (`drain_remote_pages` rises instead). The counts do not depend on timing.
//!
//! On several nodes each owner has pages on its lists in every node's zone, and one drain
//! empties every pageset (`drain_pages` walks every populated zone of a CPU).
//!
//! The owners sit on CPU slots [`FIRST_OWNER`] and up: the core counts a drain of the CPU the
//! drainer itself runs on (`sched_getcpu`) as local, as the kernel does, so the owners' slots
//! must be ones no real CPU of this machine maps to.

use crate::gate::{Gate, SpawnError, Spawner};
use std::sync::atomic::{AtomicBool, Ordering};

use zonealloc::{CpuId, DrainMode, MigrateType, Order, PcpLocking, Zone, ZoneConfig};

use super::err;
use crate::experiments::numa::{cpu_nodes, Memory};
use crate::experiments::LabError;

/// The first owner's CPU slot: above any CPU number `sched_getcpu` returns here.
const FIRST_OWNER: usize = 1024;

/// What one probe drain did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Handshakes {
    /// CPUs whose owner drained its own lists for the drainer (in any zone: the kernel's
    /// drain work item drains every zone of its CPU).
    pub(super) owner_served: u32,
    /// Pagesets (one CPU's lists in one zone) drained, by their owner or remotely.
    pub(super) pagesets: u32,
    /// Pages the drainer took from other CPUs' lists itself.
    pub(super) remote_pages: u64,
    /// Pages the owners drained for it.
    pub(super) owner_pages: u64,
}

/// One `drain_all` against `owners` busy owners, each with `pages` order-0 pages on its lists
/// in every zone: the one zone, or on `nodes` nodes each node's (the owners split across the
/// nodes; an owner's pages in another node's zone are those a CPU allocated there, with a
/// remote preferred node, and freed).
pub(super) fn probe(
    mode: DrainMode,
    owners: usize,
    pages: usize,
    nodes: usize,
) -> Result<Handshakes, LabError> {
    let mut cfg = ZoneConfig::without_watermarks();
    cfg.pcp.locking = PcpLocking::Spinlock;
    cfg.pcp.drain = mode;
    let frames = (owners as u64 * 4096).max(1 << 14);
    // The slots below the owners' stand for this machine's real CPUs: node 0's.
    let mut cpu_node = vec![0; FIRST_OWNER];
    cpu_node.extend(cpu_nodes(owners, nodes));
    let mem =
        Memory::new(nodes, frames, &cpu_node, cfg).map_err(|e| LabError(format!("drain: {e}")))?;
    let zones = mem.zones();
    let ready = Gate::new(owners + 1);
    let stop = AtomicBool::new(false);
    let cpu = |i: usize| CpuId((FIRST_OWNER + i) as u32);
    let stats = |z: &Zone, i: usize| z.pcp_info(cpu(i)).stats;
    let before: Vec<Vec<_>> = (0..owners)
        .map(|i| zones.iter().map(|z| stats(z, i)).collect())
        .collect();
    let results = std::thread::scope(|s| {
        let (zones, ready, stop) = (&zones, &ready, &stop);
        let hs = Spawner::new("drain-probe").spawn_each(s, owners, ready, |i| {
            move || -> Result<(), LabError> {
                let filled = zones
                    .iter()
                    .map(|z| {
                        z.cpu_handle(cpu(i))
                            .map_err(err("cpu_handle"))
                            .and_then(|mut h| fill(&mut h, pages).map(|()| h))
                    })
                    .collect::<Result<Vec<_>, _>>();
                // Not idle: an owner at work, which serves requests between pieces of
                // work (`poll`) but is never drained behind its back.
                let at_gate = ready.wait();
                let mut hs = filled?;
                at_gate.map_err(|e| LabError(format!("drain: {e}")))?;
                while !stop.load(Ordering::Relaxed) {
                    for h in hs.iter_mut() {
                        h.poll();
                    }
                    std::hint::spin_loop();
                }
                Ok(())
            }
        })?;
        // Cancelled only by a refused thread, which `spawn_each` reported above.
        let _ = ready.wait();
        mem.drain_all();
        stop.store(true, Ordering::Relaxed);
        Ok::<Vec<_>, SpawnError>(
            hs.into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(LabError("drain: owner panicked".into())))
                })
                .collect(),
        )
    });
    let results = results.map_err(|e| LabError(format!("drain: {e}")))?;
    for r in results {
        r?;
    }
    let mut out = Handshakes {
        owner_served: 0,
        pagesets: 0,
        remote_pages: 0,
        owner_pages: 0,
    };
    for (i, b) in before.iter().enumerate() {
        let mut served = false;
        for (z, b) in zones.iter().zip(b) {
            let a = stats(z, i);
            let local = a.drain_local_pages - b.drain_local_pages;
            let remote = a.drain_remote_pages - b.drain_remote_pages;
            served |= local > 0;
            out.pagesets += (local + remote > 0) as u32;
            out.owner_pages += local;
            out.remote_pages += remote;
        }
        out.owner_served += served as u32;
    }
    mem.check()
        .map_err(|e| LabError(format!("drain: memory check: {e}")))?;
    Ok(out)
}

/// Leaves `pages` order-0 pages on the handle's lists (allocated, then freed).
fn fill(h: &mut zonealloc::CpuHandle<'_>, pages: usize) -> Result<(), LabError> {
    let mut held = Vec::with_capacity(pages);
    for _ in 0..pages {
        held.push(
            h.alloc(Order::ZERO, MigrateType::Movable)
                .map_err(err("alloc"))?,
        );
    }
    for p in held {
        h.free(p, Order::ZERO).map_err(err("free"))?;
    }
    Ok(())
}
