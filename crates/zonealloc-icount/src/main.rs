//! `zonealloc-icount CASE PAIRS`: sets up a zone, warms its per-CPU lists, then runs `PAIRS`
//! order-0 alloc+free pairs through the API that `CASE` names, all PCP hits. Run it under
//! `valgrind --tool=callgrind` for two pair counts: the difference of the totals divided by
//! the difference of the counts is the instruction cost of one pair, setup and exit cancelled
//! out. `tests/budget.rs` does exactly that against `budget.toml`.
//!
//! Cases:
//! - `handle`: a [`CpuHandle`](zonealloc::CpuHandle) under the default spin-locked lists
//!   (`CpuHandle::alloc` / `free`);
//! - `zone_on_cpu`: `Zone::alloc_with(.., AllocRequest::new(mt).on_cpu(cpu))` /
//!   `Zone::free_on(cpu, ..)`;
//! - `zone`: `Zone::alloc` / `Zone::free`, which ask `sched_getcpu` for the CPU (under
//!   valgrind, glibc cannot register `rseq` and `sched_getcpu` takes its slow path, so this
//!   case counts about 30 instructions per call that a native run does not execute; it is also
//!   subject to the thread migrating between CPUs, and is therefore reported, not budgeted);
//! - `buddy`: `Zone::alloc` / `Zone::free` on the same zone without per-CPU lists
//!   (`ZoneConfig::without_pcp`): every pair splits a max-order block and merges it back;
//! - `buddy_handle`: the same through a `CpuHandle` (the `buddy_only` case of
//!   `benches/pcp.rs`), which takes the full allocation walk.
//!
//! The `buddy` cases are not budgeted; they show what the PCP hit path saves, and that
//! tightening it did not slow the buddy.
//!
//! The zone is the one `benches/pcp.rs` measures: 2^18 frames, two CPUs' lists, zero
//! watermarks, Movable requests on CPU 0.

use std::hint::black_box;
use std::process::ExitCode;

use zonealloc::{AllocRequest, CpuId, MigrateType, Order, Pfn, Zone, ZoneConfig, ZoneType};

const ZONE_FRAMES: u64 = 1 << 18;
const CPU: CpuId = CpuId(0);
const MT: MigrateType = MigrateType::Movable;
/// Pairs run before the measured ones: the first refills the list.
const WARMUP: u64 = 1000;

fn zone() -> Zone {
    zone_with(ZoneConfig::without_watermarks().with_cpus(2))
}

fn zone_with(cfg: ZoneConfig) -> Zone {
    let zone = Zone::new(ZoneType::Normal, Pfn(0), Pfn(ZONE_FRAMES), cfg).expect("zone config");
    zone.add_free_range(Pfn(0), Pfn(ZONE_FRAMES))
        .expect("add frames");
    zone
}

/// Runs `n` pairs through the handle. Not inlined, so that a profile names it.
#[inline(never)]
fn handle_pairs(h: &mut zonealloc::CpuHandle<'_>, n: u64) {
    let o = Order::ZERO;
    for _ in 0..n {
        let pfn = h.alloc(black_box(o), MT).expect("alloc");
        h.free(black_box(pfn), o).expect("free");
    }
}

#[inline(never)]
fn zone_on_cpu_pairs(zone: &Zone, n: u64) {
    let o = Order::ZERO;
    let req = AllocRequest::new(MT).on_cpu(CPU);
    for _ in 0..n {
        let pfn = zone.alloc_with(black_box(o), req).expect("alloc");
        zone.free_on(CPU, black_box(pfn), o).expect("free");
    }
}

#[inline(never)]
fn zone_pairs(zone: &Zone, n: u64) {
    let o = Order::ZERO;
    for _ in 0..n {
        let pfn = zone.alloc(black_box(o), MT).expect("alloc");
        zone.free(black_box(pfn), o).expect("free");
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (case, pairs) = match args.as_slice() {
        [c, n] => match n.parse::<u64>() {
            Ok(n) => (c.as_str(), n),
            Err(_) => return usage(),
        },
        _ => return usage(),
    };
    let zone = zone();
    match case {
        "handle" => {
            let mut h = zone.cpu_handle(CPU).expect("cpu handle");
            handle_pairs(&mut h, WARMUP);
            handle_pairs(&mut h, black_box(pairs));
        }
        "zone_on_cpu" => {
            zone_on_cpu_pairs(&zone, WARMUP);
            zone_on_cpu_pairs(&zone, black_box(pairs));
        }
        "zone" => {
            zone_pairs(&zone, WARMUP);
            zone_pairs(&zone, black_box(pairs));
        }
        "buddy_handle" => {
            let buddy = zone_with(ZoneConfig::without_watermarks().with_cpus(2).without_pcp());
            let mut h = buddy.cpu_handle(CPU).expect("cpu handle");
            handle_pairs(&mut h, WARMUP);
            handle_pairs(&mut h, black_box(pairs));
            return ExitCode::SUCCESS;
        }
        "buddy" => {
            let buddy = zone_with(ZoneConfig::without_watermarks().with_cpus(2).without_pcp());
            zone_pairs(&buddy, WARMUP);
            zone_pairs(&buddy, black_box(pairs));
            return ExitCode::SUCCESS;
        }
        _ => return usage(),
    }
    // Every pair must have been a PCP hit, or the count measures something else.
    let s = zone.pcp_stats();
    if s.alloc_misses > 1 || s.trylock_failures != 0 {
        eprintln!("not a PCP-hit loop: {s:?}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn usage() -> ExitCode {
    eprintln!("usage: zonealloc-icount handle|zone_on_cpu|zone|buddy|buddy_handle PAIRS");
    ExitCode::from(2)
}
