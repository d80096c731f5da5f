//! Simulated cache misses of the netperf-like workload, for the seed's two machines: the
//! seed's own mechanism is that pages freed straight to the buddy are reused while still in
//! cache, where pages parked on a per-CPU list are cold by the time they come back, and that
//! this matters on a machine with a small last-level cache.
//!
//! The child (`ZONEALLOC_LAB_FREE_HIGH_CACHE=<variant> <messages> <seed>`) runs the
//! deterministic interleaving of `det` over real memory (a populated [`PageArena`]): the
//! producer writes each message's bytes into its block (the sender's copy), the consumer
//! reads them back (the receiver's copy) and frees the block once its last message is read.
//! The parent runs it under cachegrind with a fixed L1 and a small or a large last-level cache
//! ([`MACHINES`]), for two message counts, and takes the growth per message, so that the
//! arena's set-up cancels out. Cycles are estimated as KCachegrind does by default:
//! `Ir + 10 × L1 misses + 100 × LL misses`. The same on every machine, for a build.

use std::process::ExitCode;

use zonealloc::arena::{ArenaConfig, PageArena};
use zonealloc::{CpuId, MigrateType};

use super::det::interleave;
use super::touch::{read, write};
use super::{err, variant_list, zone_config, Policy};
use crate::experiments::valgrind::{self, Tool};
use crate::experiments::LabError;

/// The environment variable that turns the `zonealloc` binary into the workload.
pub const ENV: &str = "ZONEALLOC_LAB_FREE_HIGH_CACHE";
/// Pages of the arena (32 MiB).
const ARENA_PAGES: u64 = 1 << 13;
/// Messages of the two counted runs.
const N1: u64 = 1_000;
const N2: u64 = 4_000;
/// The L1 caches of both machines (Skylake's: 32 KiB, 8-way, 64-byte lines).
const L1: &str = "32768,8,64";

/// A machine of the seed's, as the last-level cache cachegrind simulates for it.
#[derive(Clone, Copy, Debug)]
pub struct Machine {
    /// `small` or `large`, in metric names.
    pub name: &'static str,
    /// Size in bytes, associativity, line size.
    pub ll: (u64, u32, u32),
}

/// The seed's two machines, scaled to the model: a small last-level cache (512 KiB: less than
/// the messages in flight, up to 128 of 4 KiB on average, as a small machine's cache is less
/// than netperf's socket buffers, so that a block comes back cached only if it comes back
/// soon) and a large one (32 MiB: the whole arena). From 2 MiB up the cache holds the
/// workload's whole cycle and the variants differ by under 0.5%.
pub const MACHINES: [Machine; 2] = [
    Machine {
        name: "small",
        ll: (512 << 10, 16, 64),
    },
    Machine {
        name: "large",
        ll: (32 << 20, 16, 64),
    },
];

/// What one variant costs per message on one machine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerMessage {
    /// Instructions.
    pub ir: f64,
    /// Last-level misses (instruction and data, reads and writes).
    pub ll_misses: f64,
    /// Estimated cycles: `Ir + 10 × L1 misses + 100 × LL misses`.
    pub cycles: f64,
}

fn run(policy: Policy, messages: u64, seed: u64) -> Result<(), LabError> {
    let cfg = ArenaConfig::with_pages(ARENA_PAGES)
        .zone(zone_config(policy))
        .populated();
    let arena = PageArena::new(cfg).map_err(err("arena"))?;
    let mut fill = 0u8;
    let mut sum = 0u64;
    interleave(
        messages,
        seed,
        |o| {
            let ptr = arena
                .alloc_raw_on(CpuId(0), o, MigrateType::Unmovable)
                .map_err(err("alloc"))?;
            arena.pfn_of(ptr.as_ptr()).map_err(err("pfn_of"))
        },
        |m| {
            fill = fill.wrapping_add(1);
            write(&arena, m, fill)
        },
        |m| {
            sum = sum.wrapping_add(read(&arena, &m)?);
            for (pfn, o) in m.free {
                let ptr = arena.ptr_of(pfn).ok_or_else(|| {
                    LabError(format!("free-high: pfn {:#x} outside the arena", pfn.0))
                })?;
                // SAFETY: allocated by `alloc_raw_on` above and handed over in this message,
                // whose bytes were just read for the last time; freed once.
                unsafe { arena.free_raw_on(CpuId(1), ptr.as_ptr(), o) }.map_err(err("free"))?;
            }
            Ok(())
        },
    )?;
    std::hint::black_box(sum);
    arena.check().map_err(err("arena check"))?;
    Ok(())
}

/// The child side: when [`ENV`] is set, runs the workload it names and returns the exit code.
pub fn child() -> Option<ExitCode> {
    let spec = std::env::var(ENV).ok()?;
    let go = || -> Result<(), String> {
        let words: Vec<&str> = spec.split(' ').collect();
        let [variant, n, seed] = words[..] else {
            return Err(format!("{ENV}: expected '<variant> <messages> <seed>'"));
        };
        let policy = variant_list()
            .into_iter()
            .find(|v| v.0 == variant)
            .ok_or_else(|| format!("{ENV}: unknown variant '{variant}'"))?
            .1;
        let n: u64 = n.parse().map_err(|_| format!("{ENV}: bad count '{n}'"))?;
        let seed: u64 = seed.parse().map_err(|_| format!("{ENV}: bad seed"))?;
        if n > 100 * N2 {
            return Err(format!("{ENV}: at most {} messages", 100 * N2));
        }
        run(policy, n, seed).map_err(|e| e.0)
    };
    Some(match go() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    })
}

/// Cachegrind's totals of `Ir`, L1 misses and LL misses for `messages` messages of `variant`
/// on `machine`.
fn totals(variant: &str, machine: Machine, messages: u64, seed: u64) -> Result<[u64; 3], String> {
    let tool = Tool::Cachegrind {
        ll: machine.ll,
        l1: L1,
    };
    let t = valgrind::run(&tool, ENV, &format!("{variant} {messages} {seed}"))?;
    let e = |name| valgrind::event(&t, name);
    let l1 = e("I1mr")? + e("D1mr")? + e("D1mw")?;
    let ll = e("ILmr")? + e("DLmr")? + e("DLmw")?;
    Ok([e("Ir")?, l1, ll])
}

/// The cost per message of each of `variants` on each of [`MACHINES`] (`[variant][machine]`),
/// seed `seed`: the growth from `N1` to `N2` messages. The runs share the machine's cores.
pub fn per_message(variants: &[&str], seed: u64) -> Result<Vec<Vec<PerMessage>>, String> {
    let jobs: Vec<(usize, usize, u64)> = (0..variants.len())
        .flat_map(|v| (0..MACHINES.len()).flat_map(move |m| [(v, m, N1), (v, m, N2)]))
        .collect();
    let done = crate::experiments::in_parallel(jobs.len(), |i| {
        let (v, m, n) = jobs[i];
        totals(variants[v], MACHINES[m], n, seed)
    });
    let mut out = vec![Vec::new(); variants.len()];
    for (pair, &(v, _, _)) in done.chunks(2).zip(jobs.iter().step_by(2)) {
        let (a, b) = (pair[0].clone()?, pair[1].clone()?);
        let per = |i: usize| valgrind::per_unit(a[i], b[i], N1, N2);
        // Misses need not grow at all where the cache holds everything.
        let misses = |i: usize| if b[i] <= a[i] { Ok(0.0) } else { per(i) };
        let (ir, l1, ll) = (per(0)?, misses(1)?, misses(2)?);
        out[v].push(PerMessage {
            ir,
            ll_misses: ll,
            cycles: ir + 10.0 * l1 + 100.0 * ll,
        });
    }
    Ok(out)
}
