//! The throughput run over real memory: a producer thread (CPU 0's lists) allocates order-3
//! blocks from a [`PageArena`], writes each message's bytes into its block (the sender's copy
//! into the skb), and passes it through a bounded channel to a consumer thread (CPU 1's
//! lists), which reads the bytes back (the receiver's copy out) and frees the block once its
//! last message is read. A block that comes back to the producer while its lines are still
//! in cache is written faster: the cache-warmth effect the seed is about. Timing only; the
//! counts come from the deterministic mode.

use std::ptr::NonNull;
use std::sync::mpsc::sync_channel;
use std::time::Instant;

use zonealloc::arena::{ArenaConfig, PageArena};
use zonealloc::{CpuId, MigrateType, Pfn};

use super::det::{Carver, Msg};
use super::{err, zone_config, Policy, QUEUE};
use crate::experiments::LabError;
use crate::gate::Spawner;

/// The address of byte `off` of the block at `pfn`.
fn addr(arena: &PageArena, pfn: Pfn, off: u32) -> Result<NonNull<u8>, LabError> {
    let base = arena
        .ptr_of(pfn)
        .ok_or_else(|| LabError(format!("free-high: pfn {:#x} outside the arena", pfn.0)))?;
    // SAFETY: `off` is below the block's size (the carver never carves past a block's end),
    // and the block lies inside the arena's mapping.
    Ok(unsafe { base.add(off as usize) })
}

/// Writes the message's bytes (the producer owns the block until it sends the message).
pub(super) fn write(arena: &PageArena, m: &Msg, fill: u8) -> Result<(), LabError> {
    let p = addr(arena, m.at.0, m.at.1)?;
    // SAFETY: the message's bytes lie inside a block allocated to this producer and not yet
    // handed to the consumer; nobody else reads or writes them.
    unsafe { std::ptr::write_bytes(p.as_ptr(), fill, m.bytes as usize) };
    Ok(())
}

/// Reads the message's bytes back; returns their sum so that the reads are not elided.
pub(super) fn read(arena: &PageArena, m: &Msg) -> Result<u64, LabError> {
    let p = addr(arena, m.at.0, m.at.1)?;
    // SAFETY: the producer wrote these bytes before sending the message (the channel orders
    // the write before this read) and no longer touches them; the block is freed only after
    // this read, by this thread.
    let s = unsafe { std::slice::from_raw_parts(p.as_ptr(), m.bytes as usize) };
    Ok(s.chunks(8)
        .map(|c| c.iter().map(|&b| b as u64).sum::<u64>())
        .sum())
}

/// Runs `messages` messages through a fresh populated arena of `pages` pages; returns
/// messages/s.
pub(super) fn run_touch(
    pages: u64,
    policy: Policy,
    messages: u64,
    seed: u64,
) -> Result<f64, LabError> {
    let cfg = ArenaConfig::with_pages(pages)
        .zone(zone_config(policy))
        .populated();
    let arena = PageArena::new(cfg).map_err(err("arena"))?;
    let (tx, rx) = sync_channel::<Msg>(QUEUE);
    let start = Instant::now();
    // A thread refused by the system is an error (`Builder`, not `Scope::spawn`'s panic); its
    // closure, dropped, closes its end of the channel, so the other thread ends too.
    let spawner = Spawner::new("free-high");
    let (p, c) = std::thread::scope(|s| {
        let arena = &arena;
        let prod = spawner.spawn(s, 0, move || -> Result<(), LabError> {
            // The producer allocates from CPU slot 0's lists, the consumer frees onto slot 1's.
            let alloc = |o| -> Result<Pfn, LabError> {
                let ptr = arena
                    .alloc_raw_on(CpuId(0), o, MigrateType::Unmovable)
                    .map_err(err("alloc"))?;
                arena.pfn_of(ptr.as_ptr()).map_err(err("pfn_of"))
            };
            let mut carver = Carver::new(seed);
            let mut fill = 0u8;
            let mut send = |m: Msg| -> Result<(), LabError> {
                fill = fill.wrapping_add(1);
                write(arena, &m, fill)?;
                tx.send(m)
                    .map_err(|_| LabError("free-high: consumer gone".into()))
            };
            for _ in 0..messages {
                let m = carver.step(alloc)?;
                if let Some(m) = m {
                    send(m)?;
                }
            }
            if let Some(m) = carver.finish() {
                send(m)?;
            }
            Ok(())
        });
        let cons = spawner.spawn(s, 1, move || -> Result<Instant, LabError> {
            let mut sum = 0u64;
            while let Ok(m) = rx.recv() {
                sum = sum.wrapping_add(read(arena, &m)?);
                for (pfn, o) in m.free {
                    let ptr = arena.ptr_of(pfn).ok_or_else(|| {
                        LabError(format!("free-high: pfn {:#x} outside the arena", pfn.0))
                    })?;
                    // SAFETY: the producer allocated this block with `alloc_raw_on` and handed
                    // it over in the message; this thread owns it now and has read it for the
                    // last time.
                    unsafe { arena.free_raw_on(CpuId(1), ptr.as_ptr(), o) }.map_err(err("free"))?;
                }
            }
            std::hint::black_box(sum);
            Ok(Instant::now())
        });
        (prod.map(|h| h.join()), cons.map(|h| h.join()))
    });
    let refused = |who: &'static str| {
        move |e: std::io::Error| LabError(format!("free-high: could not start the {who}: {e}"))
    };
    let p = p
        .map_err(refused("producer"))?
        .map_err(|_| LabError("free-high: producer panicked".into()))?;
    let c = c
        .map_err(refused("consumer"))?
        .map_err(|_| LabError("free-high: consumer panicked".into()))?;
    p?;
    let end = c?;
    arena.zone().drain_all();
    arena.check().map_err(err("arena check"))?;
    let secs = end.duration_since(start).as_secs_f64().max(1e-9);
    Ok(messages as f64 / secs)
}
