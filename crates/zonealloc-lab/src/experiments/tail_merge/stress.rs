//! The high-order stress run of `tail-merge`: background churn, order-9 bursts under load,
//! then the passes at rest. Deterministic for a given seed, except the attempt latency.

use std::path::Path;
use std::time::Instant;

use crate::report::stats::nearest_rank;

use zonealloc::stats::unusable_free_index;
use zonealloc::{
    AllocRequest, CpuId, MigrateType, Order, PcpConfig, Pfn, Zone, ZoneConfig, ZoneType,
};

use super::{LIFETIME_ALPHA, ORDERS, PROBE_ORDER};
use crate::experiments::{LabError, SplitMix};
use crate::trace::record::TracedZone;

/// Sizes of one run.
#[derive(Clone, Copy, Debug)]
pub(super) struct Params {
    pub(super) zone_pages: u64,
    pub(super) cpus: u32,
    pub(super) ticks: u64,
    /// Blocks whose lifetime is at least this many ticks are long-lived: they survive the
    /// end of the churn and are still held at rest.
    pub(super) long_after: u64,
    /// Period of the occupancy target's oscillation between 70% and 90%, in ticks.
    pub(super) period: u64,
    /// Order-9 blocks one probe burst asks for.
    pub(super) burst: u64,
}

/// What one run measured.
pub(super) struct RunOut {
    pub(super) attempts: u64,
    pub(super) successes: u64,
    /// The wall time of every attempt actually made (ns).
    pub(super) latencies_ns: Vec<u64>,
    pub(super) rest_successes: u64,
    /// Per tick, the unusable free space index (%) of every order 0..=MAX_ORDER.
    pub(super) unusable: Vec<[f64; ORDERS]>,
    pub(super) tail_placements: u64,
    pub(super) merges: u64,
    pub(super) churn_allocs: u64,
    pub(super) churn_failures: u64,
}

struct Block {
    pfn: Pfn,
    order: Order,
    long: bool,
}

/// Churn orders: mostly 0, some 1..=3 (PCP orders), a few 4..=6 (buddy only).
fn pick_order(r: &mut SplitMix) -> u8 {
    match r.below(1000) {
        0..=699 => 0,
        700..=819 => 1,
        820..=899 => 2,
        900..=959 => 3,
        960..=984 => 4,
        985..=994 => 5,
        _ => 6,
    }
}

fn pick_migratetype(r: &mut SplitMix) -> MigrateType {
    match r.below(10) {
        0..=5 => MigrateType::Movable,
        6..=8 => MigrateType::Unmovable,
        _ => MigrateType::Reclaimable,
    }
}

/// Pareto (alpha = [`LIFETIME_ALPHA`], x_m = 1) lifetime in ticks: P(life >= k) = k^-alpha,
/// so most blocks die within a few ticks and a few outlive the whole run.
fn pick_lifetime(r: &mut SplitMix, cap: u64) -> u64 {
    let life = r.unit().powf(-1.0 / LIFETIME_ALPHA).floor();
    if life >= cap as f64 {
        cap
    } else {
        (life as u64).max(1)
    }
}

fn lab_err(what: &str, e: impl std::fmt::Display) -> LabError {
    LabError(format!("tail-merge: {what}: {e}"))
}

/// Non-blocking request (`GFP_NOWAIT`-like): a failure does not drain the per-CPU lists, so
/// the probe observes fragmentation rather than changing the state it measures.
fn nowait(mt: MigrateType) -> AllocRequest {
    AllocRequest {
        can_reclaim: false,
        ..AllocRequest::new(mt)
    }
}

fn free_block(zone: &TracedZone<'_>, cpu: u32, b: &Block) -> Result<(), LabError> {
    zone.free_on(CpuId(cpu), b.pfn, b.order)
        .map_err(|e| lab_err("free", e))
}

/// One run: churn, probes under load, then the at-rest passes. `on_tick` is called once per
/// tick.
pub(super) fn run_once(
    p: Params,
    tail_merge: bool,
    seed: u64,
    record: Option<&Path>,
    on_tick: &mut dyn FnMut(),
) -> Result<RunOut, LabError> {
    // Order 9 must go to the buddy: with THP lists the probe's free would park the block on
    // a per-CPU list and the next probe would simply take it back.
    let cfg = ZoneConfig::without_watermarks()
        .with_tail_merge(tail_merge)
        .with_pcp(PcpConfig::new().with_cpus(p.cpus).with_thp_order(None));
    let plain = Zone::new(ZoneType::Normal, Pfn(0), Pfn(p.zone_pages), cfg)
        .map_err(|e| lab_err("zone", e))?;
    plain
        .add_free_range(Pfn(0), Pfn(p.zone_pages))
        .map_err(|e| lab_err("add_free_range", e))?;
    let zone = TracedZone::new(&plain, record).map_err(|e| lab_err("--record-traces", e))?;
    let probe_order = Order::new(PROBE_ORDER).ok_or_else(|| lab_err("order", "9"))?;

    let mut rng = SplitMix::new(seed ^ 0x7A11_3E26_0003);
    // deaths[t]: blocks that die at tick t; deaths[ticks]: alive at the end of the churn.
    let mut deaths: Vec<Vec<Block>> = (0..=p.ticks).map(|_| Vec::new()).collect();
    let mut occupied: u64 = 0;
    let mut out = RunOut {
        attempts: 0,
        successes: 0,
        latencies_ns: Vec::new(),
        rest_successes: 0,
        unusable: Vec::with_capacity(p.ticks as usize),
        tail_placements: 0,
        merges: 0,
        churn_allocs: 0,
        churn_failures: 0,
    };

    for t in 0..p.ticks {
        for b in std::mem::take(&mut deaths[t as usize]) {
            let cpu = rng.below(p.cpus as u64) as u32;
            free_block(&zone, cpu, &b)?;
            occupied -= b.order.pages();
        }
        let phase = (t % p.period) as f64 / p.period as f64 * std::f64::consts::TAU;
        let target = (p.zone_pages as f64 * (0.80 + 0.10 * phase.sin())) as u64;
        fill(
            &zone,
            p,
            (t, target),
            &mut rng,
            &mut deaths,
            &mut occupied,
            &mut out,
        )?;
        // The periodic high-order attempts: a burst of THP faults wanting `burst` order-9
        // blocks (5% of the zone) at once, held until the burst ends, then freed.
        probe_burst(&zone, p.burst, probe_order, &mut out)?;
        let snap = plain.snapshot(0);
        out.unusable.push(core::array::from_fn(|o| {
            unusable_free_index(&snap, o as u8) as f64 / 10.0
        }));
        on_tick();
    }

    // At rest: free the short-lived blocks, drain, allocate order 9 until failure.
    out.rest_successes = at_rest(&zone, p.cpus, deaths, probe_order, &mut rng)?;
    zone.finish().map_err(|e| lab_err("--record-traces", e))?;
    let stats = plain.stats();
    out.tail_placements = stats.tail_placements;
    out.merges = stats.merges;
    plain
        .check()
        .map_err(|e| LabError(format!("tail-merge: zone check failed: {e:?}")))?;
    if plain.free_pages() != plain.managed_pages() {
        return Err(LabError(format!(
            "tail-merge: {} of {} pages free after freeing everything",
            plain.free_pages(),
            plain.managed_pages()
        )));
    }
    Ok(out)
}

/// Allocates blocks of random orders, types, CPUs and lifetimes until `occupied` reaches the
/// tick's `target` (or 64 allocations in a row fail), each filed under the tick it dies at.
fn fill(
    zone: &TracedZone<'_>,
    p: Params,
    (t, target): (u64, u64),
    rng: &mut SplitMix,
    deaths: &mut [Vec<Block>],
    occupied: &mut u64,
    out: &mut RunOut,
) -> Result<(), LabError> {
    let mut failures_in_row = 0;
    while *occupied < target && failures_in_row < 64 {
        let order = Order::new(pick_order(rng)).ok_or_else(|| lab_err("order", ""))?;
        let mt = pick_migratetype(rng);
        let cpu = rng.below(p.cpus as u64) as u32;
        let life = pick_lifetime(rng, p.ticks);
        match zone.alloc_with(order, nowait(mt).on_cpu(CpuId(cpu))) {
            Ok(pfn) => {
                failures_in_row = 0;
                out.churn_allocs += 1;
                *occupied += order.pages();
                let death = (t + life).min(p.ticks);
                deaths[death as usize].push(Block {
                    pfn,
                    order,
                    long: life >= p.long_after,
                });
            }
            Err(_) => {
                failures_in_row += 1;
                out.churn_failures += 1;
            }
        }
    }
    Ok(())
}

/// One burst of `burst` order-9 attempts on CPU 0, held until the burst ends, then freed.
fn probe_burst(
    zone: &TracedZone<'_>,
    burst: u64,
    probe_order: Order,
    out: &mut RunOut,
) -> Result<(), LabError> {
    let mut got = Vec::with_capacity(burst as usize);
    for _ in 0..burst {
        let start = Instant::now();
        let r = zone.alloc_with(probe_order, nowait(MigrateType::Movable).on_cpu(CpuId(0)));
        out.latencies_ns
            .push(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
        match r {
            Ok(pfn) => got.push(pfn),
            Err(_) => break,
        }
    }
    out.successes += got.len() as u64;
    // A failure ends the burst; the attempts it cut short count as failures too.
    out.attempts += burst;
    for pfn in got {
        zone.free_on(CpuId(0), pfn, probe_order)
            .map_err(|e| lab_err("free probe", e))?;
    }
    Ok(())
}

/// At rest: frees the short-lived blocks, drains, allocates order 9 until failure, then frees
/// everything; how many order-9 blocks it got.
fn at_rest(
    zone: &TracedZone<'_>,
    cpus: u32,
    deaths: Vec<Vec<Block>>,
    probe_order: Order,
    rng: &mut SplitMix,
) -> Result<u64, LabError> {
    let mut kept = Vec::new();
    for b in deaths.into_iter().flatten() {
        if b.long {
            kept.push(b);
        } else {
            let cpu = rng.below(cpus as u64) as u32;
            free_block(zone, cpu, &b)?;
        }
    }
    zone.drain_all();
    let mut rest = Vec::new();
    while let Ok(pfn) = zone.alloc_with(probe_order, nowait(MigrateType::Movable).on_cpu(CpuId(0)))
    {
        rest.push(Block {
            pfn,
            order: probe_order,
            long: false,
        });
    }
    for b in rest.iter().chain(kept.iter()) {
        free_block(zone, 0, b)?;
    }
    zone.drain_all();
    Ok(rest.len() as u64)
}

impl RunOut {
    /// Order-9 successes under load, in percent of the attempts.
    pub(super) fn success_pct(&self) -> f64 {
        100.0 * self.successes as f64 / self.attempts.max(1) as f64
    }

    /// Median wall time of one order-9 attempt under load (ns). The median, not the mean: an
    /// attempt of ~100 ns that the scheduler preempts takes milliseconds, and a handful of
    /// those in a thousand attempts would set the mean on a busy machine (the kernel's
    /// allocation runs under a spinlock, with preemption off).
    pub(super) fn latency_ns(&self) -> f64 {
        nearest_rank(&self.latencies_ns, 0.5) as f64
    }

    /// The order-9 unusable free space index (%), averaged over the ticks.
    pub(super) fn unusable_mean(&self) -> f64 {
        self.unusable
            .iter()
            .map(|u| u[PROBE_ORDER as usize])
            .sum::<f64>()
            / self.unusable.len().max(1) as f64
    }
}
