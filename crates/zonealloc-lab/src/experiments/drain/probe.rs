//! The deterministic count behind seed 004's claim: how many owner handshakes one
//! `drain_all` needs. Each owner thread leaves pages on its CPU's lists, then keeps working
//! (polling its handle, so that an owner drain completes); the drainer drains once. Owner
//! drain must ask every owner that has pages (one handshake each, served by the owner:
//! `drain_local_pages` rises on its CPU); remote drain takes each CPU's lock itself and asks
//! nobody (`drain_remote_pages` rises instead). The counts do not depend on timing.
//!
//! The owners sit on CPU slots [`FIRST_OWNER`] and up: the core counts a drain of the CPU the
//! drainer itself runs on (`sched_getcpu`) as local, as the kernel does, so the owners' slots
//! must be ones no real CPU of this machine maps to.

use crate::gate::{Gate, SpawnError, Spawner};
use std::sync::atomic::{AtomicBool, Ordering};

use zonealloc::{
    CpuId, DrainMode, MigrateType, Order, PcpLocking, Pfn, Zone, ZoneConfig, ZoneType,
};

use super::err;
use crate::experiments::LabError;

/// The first owner's CPU slot: above any CPU number `sched_getcpu` returns here.
const FIRST_OWNER: usize = 1024;

/// What one probe drain did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Handshakes {
    /// CPUs whose owner drained its own lists for the drainer.
    pub(super) owner_served: u32,
    /// Pages the drainer took from other CPUs' lists itself.
    pub(super) remote_pages: u64,
    /// Pages the owners drained for it.
    pub(super) owner_pages: u64,
}

/// One `drain_all` against `owners` busy owners, each with `pages` order-0 pages on its lists.
pub(super) fn probe(mode: DrainMode, owners: usize, pages: usize) -> Result<Handshakes, LabError> {
    let mut cfg = ZoneConfig::without_watermarks().with_cpus((FIRST_OWNER + owners) as u32);
    cfg.pcp.locking = PcpLocking::Spinlock;
    cfg.pcp.drain = mode;
    let frames = (owners as u64 * 4096).max(1 << 14);
    let zone = Zone::new(ZoneType::Normal, Pfn(0), Pfn(frames), cfg).map_err(err("zone"))?;
    zone.add_free_range(Pfn(0), Pfn(frames))
        .map_err(err("add_free_range"))?;
    let ready = Gate::new(owners + 1);
    let stop = AtomicBool::new(false);
    let cpu = |i: usize| CpuId((FIRST_OWNER + i) as u32);
    let before: Vec<_> = (0..owners).map(|i| zone.pcp_info(cpu(i)).stats).collect();
    let results = std::thread::scope(|s| {
        let (zone, ready, stop) = (&zone, &ready, &stop);
        let hs = Spawner::new("drain-probe").spawn_each(s, owners, ready, |i| {
            move || -> Result<(), LabError> {
                let filled = zone
                    .cpu_handle(cpu(i))
                    .map_err(err("cpu_handle"))
                    .and_then(|mut h| fill(&mut h, pages).map(|()| h));
                // Not idle: an owner at work, which serves requests between pieces of
                // work (`poll`) but is never drained behind its back.
                let at_gate = ready.wait();
                let mut h = filled?;
                at_gate.map_err(|e| LabError(format!("drain: {e}")))?;
                while !stop.load(Ordering::Relaxed) {
                    h.poll();
                    std::hint::spin_loop();
                }
                Ok(())
            }
        })?;
        // Cancelled only by a refused thread, which `spawn_each` reported above.
        let _ = ready.wait();
        zone.drain_all();
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
        remote_pages: 0,
        owner_pages: 0,
    };
    for (i, b) in before.iter().enumerate() {
        let a = zone.pcp_info(cpu(i)).stats;
        let local = a.drain_local_pages - b.drain_local_pages;
        if local > 0 {
            out.owner_served += 1;
        }
        out.owner_pages += local;
        out.remote_pages += a.drain_remote_pages - b.drain_remote_pages;
    }
    zone.check().map_err(err("zone check"))?;
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
