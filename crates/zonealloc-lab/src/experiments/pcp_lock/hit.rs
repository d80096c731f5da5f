//! The per-CPU list hit path, the code the seed's lock sits on: order-0 alloc+free pairs
//! through a [`CpuHandle`](zonealloc::CpuHandle) whose lists are warm, every pair a PCP hit.
//! The same loop is timed here and counted under callgrind by [`super::icount`].

use std::hint::black_box;
use std::time::Instant;

use zonealloc::{
    CpuId, DrainMode, MigrateType, Order, PcpLocking, Pfn, Zone, ZoneConfig, ZoneType,
};

use crate::experiments::LabError;

/// Frames of the hit-path zone (the lists never run dry: every pair frees what it took).
pub(super) const FRAMES: u64 = 1 << 14;
/// Pairs run before the measured ones: the first refills the list.
pub(super) const WARMUP: u64 = 1000;

/// The hit-path zone of `frames` frames for one locking scheme: two CPUs, zero watermarks.
pub(super) fn zone(locking: PcpLocking, frames: u64) -> Result<Zone, String> {
    let mut cfg = ZoneConfig::without_watermarks().with_cpus(2);
    cfg.pcp.locking = locking;
    cfg.pcp.drain = match locking {
        PcpLocking::Spinlock => DrainMode::Remote,
        PcpLocking::OwnerOnly => DrainMode::Owner,
    };
    let zone =
        Zone::new(ZoneType::Normal, Pfn(0), Pfn(frames), cfg).map_err(|e| format!("{e:?}"))?;
    zone.add_free_range(Pfn(0), Pfn(frames))
        .map_err(|e| format!("{e:?}"))?;
    Ok(zone)
}

/// `n` PFT-like faults through the handle: order-0 allocations, no frees (the timed loop of
/// the experiment's run); returns the pages. Not inlined, so that a profile names it.
#[inline(never)]
pub(super) fn faults(h: &mut zonealloc::CpuHandle<'_>, n: u64) -> Result<Vec<Pfn>, String> {
    let mut held = Vec::with_capacity(n as usize);
    for _ in 0..n {
        held.push(
            h.alloc(black_box(Order::ZERO), MigrateType::Movable)
                .map_err(|e| format!("{e:?}"))?,
        );
    }
    Ok(held)
}

/// Runs `n` pairs through the handle. Not inlined, so that a profile names it.
#[inline(never)]
pub(super) fn pairs(h: &mut zonealloc::CpuHandle<'_>, n: u64) -> Result<(), String> {
    let o = Order::ZERO;
    for _ in 0..n {
        let pfn = h
            .alloc(black_box(o), MigrateType::Movable)
            .map_err(|e| format!("{e:?}"))?;
        h.free(black_box(pfn), o).map_err(|e| format!("{e:?}"))?;
    }
    Ok(())
}

/// Nanoseconds per operation (half a pair) of the hit path: the median of `blocks` timed
/// blocks of `per_block` pairs on one warm handle.
pub(super) fn ns_per_op(
    locking: PcpLocking,
    blocks: usize,
    per_block: u64,
) -> Result<f64, LabError> {
    let e = |e: String| LabError(format!("pcp-lock: hit path: {e}"));
    let zone = zone(locking, FRAMES).map_err(e)?;
    let mut h = zone.cpu_handle(CpuId(0)).map_err(|x| e(format!("{x:?}")))?;
    pairs(&mut h, WARMUP).map_err(e)?;
    let mut t = Vec::with_capacity(blocks);
    for _ in 0..blocks {
        let start = Instant::now();
        pairs(&mut h, per_block).map_err(e)?;
        t.push(start.elapsed().as_nanos() as f64 / (2 * per_block) as f64);
    }
    drop(h);
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}
