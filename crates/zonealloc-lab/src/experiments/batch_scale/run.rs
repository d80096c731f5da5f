//! One timed run of `batch-scale`: the workers, each on its own CPU's lists, allocating and
//! freeing page_fault1-style on the one zone or, with `--nodes`, on their own node's zone; and
//! what the run measured under the zone locks.

use crate::gate::{Cancelled, Gate, SpawnError, Spawner};
use std::time::{Duration, Instant};

use serde_json::json;
use zonealloc::{CpuId, MigrateType, Order, PcpConfig, Pfn, Zone, ZoneConfig};

use crate::experiments::numa::{cpu_nodes, slit_text, Memory};
use crate::experiments::LabError;

/// What one run of one variant measured.
pub(super) struct RunOut {
    pub(super) pages_per_s: f64,
    pub(super) refill_avg: f64,
    pub(super) refill_p99: f64,
    pub(super) free_avg: f64,
    pub(super) free_p99: f64,
    pub(super) free_p50: f64,
    pub(super) refill_p50: f64,
    pub(super) refill_pages: f64,
    pub(super) lock_pages: f64,
    /// The most CPUs that took one zone's lock (several nodes only).
    pub(super) lock_sharers: usize,
    pub(super) batch: i32,
    pub(super) high: i32,
}

pub(super) fn lab_err(what: &str, e: impl std::fmt::Display) -> LabError {
    LabError(format!("batch-scale: {what}: {e}"))
}

/// One worker: `rounds` times, allocate `pages` order-0 pages on `cpu` and free them all.
fn worker(
    zone: &Zone,
    cpu: u32,
    pages: usize,
    warmup: usize,
    rounds: usize,
    gate: &Gate,
) -> Result<Duration, LabError> {
    let order0 = Order::new(0).ok_or_else(|| lab_err("order", 0))?;
    let mut h = zone
        .cpu_handle(CpuId(cpu))
        .map_err(|e| lab_err("cpu_handle", e))?;
    let mut held: Vec<Pfn> = Vec::with_capacity(pages);
    let mut round = |h: &mut zonealloc::CpuHandle<'_>| -> Result<(), LabError> {
        for _ in 0..pages {
            held.push(
                h.alloc(order0, MigrateType::Movable)
                    .map_err(|e| lab_err("alloc", e))?,
            );
        }
        for pfn in held.drain(..) {
            h.free(pfn, order0).map_err(|e| lab_err("free", e))?;
        }
        Ok(())
    };
    for _ in 0..warmup {
        round(&mut h)?;
    }
    let at_gate = || gate.wait().map_err(|e| lab_err("start", e));
    at_gate()?;
    // The first thread through turns recording on; all start timing after the second wait.
    at_gate()?;
    let start = Instant::now();
    for _ in 0..rounds {
        round(&mut h)?;
    }
    Ok(start.elapsed())
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Params {
    pub(super) threads: usize,
    pub(super) pages: usize,
    pub(super) rounds: usize,
    /// The zone's pages; with several nodes, each node's.
    pub(super) zone_pages: u64,
    /// NUMA nodes (`--nodes`), the workers' CPUs split across them.
    pub(super) nodes: usize,
}

pub(super) fn run_once(p: Params, pcp: PcpConfig) -> Result<RunOut, LabError> {
    let cfg = ZoneConfig::without_watermarks().with_pcp(pcp);
    let cpu_node = cpu_nodes(p.threads, p.nodes);
    let mem =
        Memory::new(p.nodes, p.zone_pages, &cpu_node, cfg).map_err(|e| lab_err("memory", e))?;
    let zones = mem.zones();
    // Each worker's zone: its node's own (node-local allocation).
    let homes = (0..p.threads)
        .map(|c| mem.home(CpuId(c as u32)))
        .collect::<Result<Vec<&Zone>, String>>()
        .map_err(|e| lab_err("zonelist", e))?;
    let gate = Gate::new(p.threads + 1);
    let results = std::thread::scope(|s| {
        let (homes, zones, gate) = (&homes, &zones, &gate);
        let spawner = Spawner::new("batch-scale");
        let handles = spawner.spawn_each(s, p.threads, gate, |cpu| {
            move || {
                let r = worker(homes[cpu], cpu as u32, p.pages, 1, p.rounds, gate);
                if r.is_err() {
                    gate.cancel(); // never leave the others at the gate
                }
                r
            }
        })?;
        if gate.wait().is_ok() {
            for z in zones {
                z.set_instrumentation(true);
            }
            let _ = gate.wait();
        }
        Ok::<Vec<Result<Duration, LabError>>, SpawnError>(
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(LabError("batch-scale: worker panicked".into())))
                })
                .collect(),
        )
    })
    .map_err(|e| lab_err("threads", e));
    let mut results = results?;
    // The cause first, not the workers that the gate's cancel stopped.
    results.sort_by_key(|r| matches!(r, Err(e) if e.0.ends_with(&Cancelled.to_string())));
    let mut longest = Duration::ZERO;
    for r in results {
        longest = longest.max(r?);
    }
    // Every zone together: the holds of all, the lists' counters of all.
    let mut hold = zonealloc::stats::HoldTimes::default();
    let (mut refill_pages, mut misses, mut moved, mut locks) = (0, 0, 0, 0);
    for z in &zones {
        z.set_instrumentation(false);
        let h = z.hold_times();
        hold.refill.merge(&h.refill);
        hold.bulk_free.merge(&h.bulk_free);
        let pcp = z.pcp_stats();
        refill_pages += pcp.refill_pages;
        misses += pcp.alloc_misses;
        moved += pcp.refill_pages + pcp.drain_high_pages + pcp.drain_free_high_pages;
        // Every zone-lock acquisition of this workload is a refill or a bulk free (order 0
        // only, no watermarks): the pages moved per acquisition are the work each hold does.
        locks += z.stats().zone_lock_acquisitions;
    }
    let lock_sharers = (0..zones.len())
        .map(|k| mem.lock_sharers(k))
        .max()
        .unwrap_or(0);
    let info = homes[0].pcp_info(CpuId(0));
    mem.drain_all();
    mem.check()
        .map_err(|e| LabError(format!("batch-scale: zone check failed: {e}")))?;
    let pages = (p.threads * p.pages * p.rounds) as f64;
    Ok(RunOut {
        pages_per_s: pages / longest.as_secs_f64().max(1e-9),
        refill_avg: hold.refill.mean() as f64,
        refill_p99: hold.refill.quantile(0.99) as f64,
        free_avg: hold.bulk_free.mean() as f64,
        free_p99: hold.bulk_free.quantile(0.99) as f64,
        free_p50: hold.bulk_free.quantile(0.5) as f64,
        refill_p50: hold.refill.quantile(0.5) as f64,
        refill_pages: refill_pages as f64 / misses.max(1) as f64,
        lock_pages: moved as f64 / locks.max(1) as f64,
        lock_sharers,
        batch: info.batch,
        high: info.high_max,
    })
}

/// What the node configuration was (null on one node, whose results are as without `--nodes`).
pub(super) fn numa_config(p: Params) -> serde_json::Value {
    if p.nodes <= 1 {
        return serde_json::Value::Null;
    }
    json!({
        "cpu_nodes": cpu_nodes(p.threads, p.nodes),
        "distances": slit_text(p.nodes),
        "zone_pages_per_node": p.zone_pages,
        "allocation": "node-local: each worker's CPU allocates and frees in the first zone of its node's zonelist",
        "pcp_high": "split over the node's own CPUs (zone_highsize, cpumask_of_node)",
        "hold_times": "every node's zone lock together",
        "comparable": "the hold-time, pages-per-hold and cap claims judge work done under one zone lock, which nodes do not change; pages/s differs from one node where workers share a zone lock there",
    })
}
