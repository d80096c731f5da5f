//! Instructions per page of the page_fault1-like rounds under callgrind: the deterministic
//! proxy of the seed's throughput (page/s), which a shared machine's clock cannot resolve to
//! the seed's few percent. One worker on CPU 0 allocates [`PAGES`] order-0 pages and frees
//! them all, once to warm up and then `rounds` times, with the swept batch's settings
//! (`high = 2 * batch`, scaling off, as the seed's debug setup); the parent counts two round
//! numbers and divides the difference by the pages of the extra rounds.

use std::process::ExitCode;

use zonealloc::{CpuId, MigrateType, Order, PcpConfig, Pfn, Zone, ZoneConfig, ZoneType};

use crate::experiments::valgrind::{self, Tool};

/// The environment variable that turns the `zonealloc` binary into the rounds:
/// `<batch> <rounds>`.
pub const ENV: &str = "ZONEALLOC_LAB_BATCH_ICOUNT";
/// Pages allocated and freed per round: eight times the high of batch 2047 (the largest the
/// proxy counts), so that every batch refills and drains many times a round.
pub const PAGES: u64 = 1 << 15;
const R1: u64 = 1;
const R2: u64 = 2;

/// The swept batch's per-CPU list settings (the seed's debug setup).
pub(super) fn pcp_for(batch: u32) -> PcpConfig {
    PcpConfig::new()
        .with_batch(Some(batch))
        .with_high_min(Some(2 * batch))
        .with_high_max(Some(2 * batch))
        .with_batch_scale_max(0)
        .with_thp_order(None)
}

fn rounds(batch: u32, n: u64) -> Result<(), String> {
    let zone_pages = PAGES + 4 * 8192 + 4096;
    let cfg = ZoneConfig::without_watermarks().with_pcp(pcp_for(batch).with_cpus(1));
    let zone = Zone::new(ZoneType::Normal, Pfn(0), Pfn(zone_pages), cfg)
        .map_err(|e| format!("zone: {e:?}"))?;
    zone.add_free_range(Pfn(0), Pfn(zone_pages))
        .map_err(|e| format!("add_free_range: {e:?}"))?;
    let mut h = zone.cpu_handle(CpuId(0)).map_err(|e| format!("{e:?}"))?;
    let mut held: Vec<Pfn> = Vec::with_capacity(PAGES as usize);
    for _ in 0..=n {
        for _ in 0..PAGES {
            held.push(
                h.alloc(Order::ZERO, MigrateType::Movable)
                    .map_err(|e| format!("alloc: {e:?}"))?,
            );
        }
        for pfn in held.drain(..) {
            h.free(pfn, Order::ZERO)
                .map_err(|e| format!("free: {e:?}"))?;
        }
    }
    Ok(())
}

/// The child side: when [`ENV`] is set, runs the rounds it names and returns the exit code.
pub fn child() -> Option<ExitCode> {
    let spec = std::env::var(ENV).ok()?;
    let run = || -> Result<(), String> {
        let (b, n) = spec
            .split_once(' ')
            .ok_or_else(|| format!("{ENV}: expected '<batch> <rounds>', got '{spec}'"))?;
        let b: u32 = b.parse().map_err(|_| format!("{ENV}: bad batch '{b}'"))?;
        let n: u64 = n.parse().map_err(|_| format!("{ENV}: bad rounds '{n}'"))?;
        if !(1..=8191).contains(&b) || n > 16 {
            return Err(format!("{ENV}: batch 1..=8191 and at most 16 rounds"));
        }
        rounds(b, n)
    };
    Some(match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    })
}

/// Instructions per page (one allocation and one free) at `batch`.
pub(super) fn per_page(batch: u32) -> Result<f64, String> {
    let total = |n: u64| {
        valgrind::event(
            &valgrind::run(&Tool::Callgrind, ENV, &format!("{batch} {n}"))?,
            "Ir",
        )
    };
    valgrind::per_unit(total(R1)?, total(R2)?, R1 * PAGES, R2 * PAGES)
}
