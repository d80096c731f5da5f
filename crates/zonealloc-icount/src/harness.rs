//! The zone, the pair loops and the command line shared by both binaries of this crate
//! (`main.rs`: every API called from two places; `bin/zonealloc-icount-single.rs`: from one).
//!
//! `BIN CASE ORDER PAIRS` sets up a zone, warms its per-CPU lists, then runs `PAIRS`
//! alloc+free pairs of `ORDER` through the API that `CASE` names, all PCP hits. Run it under
//! `valgrind --tool=callgrind` for two pair counts: the difference of the totals divided by
//! the difference of the counts is the instruction cost of one pair, setup and exit cancelled
//! out. `tests/budget.rs` does exactly that against `budget.toml`.
//!
//! Cases:
//! - `handle`: a [`CpuHandle`](zonealloc::CpuHandle) under the default spin-locked lists
//!   (`CpuHandle::alloc` / `free`);
//! - `zone_on_cpu`: `Zone::alloc_with(.., AllocRequest::new(mt).on_cpu(cpu))` /
//!   `Zone::free_on(cpu, ..)`;
//! - `zone`: `Zone::alloc` / `Zone::free`, which find the calling CPU (under valgrind glibc
//!   has no rseq area, so this counts the per-thread CPU cache that `sched_getcpu` refreshes
//!   every 64 calls; a native run reads rseq's `cpu_id`, a few instructions);
//! - `buddy`: `Zone::alloc` / `Zone::free` on the same zone without per-CPU lists
//!   (`ZoneConfig::without_pcp`): every pair splits a max-order block and merges it back;
//! - `buddy_handle`: the same through a `CpuHandle` (the `buddy_only` case of
//!   `benches/pcp.rs`), which takes the full allocation walk.
//!
//! The `buddy` cases are not budgeted; they show what the PCP hit path saves, and that
//! tightening it did not slow the buddy.
//!
//! The zone is the one `benches/pcp.rs` measures: 2^18 frames, two CPUs' lists, zero
//! watermarks, Movable requests on CPU 0, THP lists at order 9.
//!
//! The order is read from the command line (`black_box`), so the hit path cannot be
//! specialised for it: what a caller with a variable order gets.

use std::hint::black_box;
use std::process::ExitCode;

use zonealloc::{CpuId, MigrateType, Order, Pfn, Zone, ZoneConfig, ZoneType};

pub const ZONE_FRAMES: u64 = 1 << 18;
pub const CPU: CpuId = CpuId(0);
pub const MT: MigrateType = MigrateType::Movable;
/// Pairs run before the measured ones: the first refills the list.
pub const WARMUP: u64 = 1000;

pub fn zone_with(cfg: ZoneConfig) -> Zone {
    let zone = Zone::new(ZoneType::Normal, Pfn(0), Pfn(ZONE_FRAMES), cfg).expect("zone config");
    zone.add_free_range(Pfn(0), Pfn(ZONE_FRAMES))
        .expect("add frames");
    zone
}

/// Defines `$name(…, n, order)`: `n` pairs of `order` through one API. Each expansion is a
/// call site of its own; none is inlined, so that a profile names it.
#[macro_export]
macro_rules! pair_loops {
    ($handle:ident, $on_cpu:ident, $zone:ident) => {
        #[inline(never)]
        fn $handle(h: &mut zonealloc::CpuHandle<'_>, n: u64, o: zonealloc::Order) {
            for _ in 0..n {
                let pfn = h.alloc(black_box(o), MT).expect("alloc");
                h.free(black_box(pfn), o).expect("free");
            }
        }

        #[inline(never)]
        fn $on_cpu(zone: &zonealloc::Zone, n: u64, o: zonealloc::Order) {
            let req = zonealloc::AllocRequest::new(MT).on_cpu(CPU);
            for _ in 0..n {
                let pfn = zone.alloc_with(black_box(o), req).expect("alloc");
                zone.free_on(CPU, black_box(pfn), o).expect("free");
            }
        }

        #[inline(never)]
        fn $zone(zone: &zonealloc::Zone, n: u64, o: zonealloc::Order) {
            for _ in 0..n {
                let pfn = zone.alloc(black_box(o), MT).expect("alloc");
                zone.free(black_box(pfn), o).expect("free");
            }
        }
    };
}

/// The loops of one binary: `warm` runs the warm-up pairs, `run` the measured ones. In the
/// two-call-site binary they are different expansions of [`pair_loops!`].
pub struct Loops {
    pub handle: [fn(&mut zonealloc::CpuHandle<'_>, u64, Order); 2],
    pub on_cpu: [fn(&Zone, u64, Order); 2],
    pub zone: [fn(&Zone, u64, Order); 2],
}

pub fn run(loops: Loops) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (case, order, pairs) = match args.as_slice() {
        [c, o, n] => match (o.parse::<u8>(), n.parse::<u64>()) {
            (Ok(o), Ok(n)) if o <= 10 => (c.as_str(), Order::new(o).expect("order"), n),
            _ => return usage(),
        },
        _ => return usage(),
    };
    let order = black_box(order);
    let zone = zone_with(ZoneConfig::without_watermarks().with_cpus(2));
    let Loops {
        handle,
        on_cpu,
        zone: zone_loops,
    } = loops;
    let warm;
    match case {
        "handle" => {
            let mut h = zone.cpu_handle(CPU).expect("cpu handle");
            handle[0](&mut h, WARMUP, order);
            warm = zone.pcp_stats();
            handle[1](&mut h, black_box(pairs), order);
        }
        "zone_on_cpu" => {
            on_cpu[0](&zone, WARMUP, order);
            warm = zone.pcp_stats();
            on_cpu[1](&zone, black_box(pairs), order);
        }
        "zone" => {
            zone_loops[0](&zone, WARMUP, order);
            warm = zone.pcp_stats();
            zone_loops[1](&zone, black_box(pairs), order);
        }
        "buddy_handle" => {
            let buddy = zone_with(ZoneConfig::without_watermarks().with_cpus(2).without_pcp());
            let mut h = buddy.cpu_handle(CPU).expect("cpu handle");
            handle[0](&mut h, WARMUP, order);
            handle[1](&mut h, black_box(pairs), order);
            return ExitCode::SUCCESS;
        }
        "buddy" => {
            let buddy = zone_with(ZoneConfig::without_watermarks().with_cpus(2).without_pcp());
            zone_loops[0](&buddy, WARMUP, order);
            zone_loops[1](&buddy, black_box(pairs), order);
            return ExitCode::SUCCESS;
        }
        _ => return usage(),
    }
    // Every measured pair must have been a PCP hit that drained nothing, or the count
    // measures something else. (The warm-up may refill and drain while `high` settles: at
    // order 9 it starts below the two blocks a refill brings.) `zone` follows the thread's
    // CPU, so a thread that moves refills the other CPU's lists and, at order 9, drains: a
    // few operations among the pairs, not checked.
    let s = zone.pcp_stats();
    if case == "zone" {
        return ExitCode::SUCCESS;
    }
    if s.alloc_misses > warm.alloc_misses
        || s.trylock_failures != warm.trylock_failures
        || s.drain_high_pages != warm.drain_high_pages
        || s.drain_free_high_pages != warm.drain_free_high_pages
    {
        eprintln!("not a PCP-hit loop: after the warm-up {warm:?}, at the end {s:?}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: zonealloc-icount[-single] handle|zone_on_cpu|zone|buddy|buddy_handle ORDER PAIRS"
    );
    ExitCode::from(2)
}
