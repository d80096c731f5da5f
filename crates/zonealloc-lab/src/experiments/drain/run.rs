//! One timed run of `drain`: workers serving the workload's requests on their own CPUs, and
//! the drainer.

use crate::gate::{Cancelled, Gate, SpawnError, Spawner};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use zonealloc::{
    CpuId, DrainMode, MigrateType, Order, PcpLocking, Pfn, Zone, ZoneConfig, ZoneType,
};

use super::clock::{self, Split};
use super::err;
use crate::experiments::{LabError, SplitMix};

/// Sizes of one run.
#[derive(Clone, Copy, Debug)]
pub(super) struct Plan {
    pub(super) pages: u64,
    pub(super) workers: usize,
    /// Time between the starts of two drains.
    pub(super) interval: Duration,
    /// Drains per run.
    pub(super) rounds: usize,
}

/// What one run measured.
#[derive(Debug)]
pub(super) struct RunOut {
    pub(super) drains: Vec<Split>,
    pub(super) ops: u64,
    pub(super) secs: f64,
    pub(super) stall_ns: u64,
    /// The run-queue split was available.
    pub(super) schedstat: bool,
}

/// Largest request, in pages.
const MAX_REQUEST: u64 = 1024;
/// Shape of the request sizes (Pareto): mostly a few pages, now and then hundreds.
const REQUEST_ALPHA: f64 = 1.1;

/// The next request's size in pages, from the workload's generator.
pub(super) fn request_pages(rng: &mut SplitMix) -> u64 {
    let x = rng.unit().max(1e-12).powf(-1.0 / REQUEST_ALPHA);
    (x as u64).clamp(1, MAX_REQUEST)
}

/// Processes one page's worth of the request's data: a checksum over 4 KiB. No allocator
/// call; its cost is the machine's, its count the workload's.
fn process_page(data: &mut [u64; 512], pfn: Pfn) -> u64 {
    let mut h = pfn.0 ^ 0x9e37_79b9_7f4a_7c15;
    for w in data.iter_mut() {
        *w = w.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ h;
        h = h.rotate_left(5) ^ *w;
    }
    h
}

fn worker(
    zone: &Zone,
    w: usize,
    seed: u64,
    gate: &Gate,
    stop: &AtomicBool,
) -> Result<(u64, u64), LabError> {
    let mut h = match zone.cpu_handle(CpuId(w as u32)) {
        Ok(h) => h,
        Err(e) => {
            // Release the others (they stop at once) rather than leave them at the gate.
            stop.store(true, Ordering::Relaxed);
            gate.cancel();
            return Err(LabError(format!("drain: cpu_handle: {e:?}")));
        }
    };
    h.idle(|| gate.wait())
        .map_err(|e| LabError(format!("drain: {e}")))?;
    let mut rng = SplitMix::new(seed ^ ((w as u64) << 32));
    let mut data = [0u64; 512];
    let mut sum = 0u64;
    let mut pfns: Vec<Pfn> = Vec::with_capacity(MAX_REQUEST as usize);
    let (mut ops, mut stall) = (0u64, 0u64);
    let mut failure = None;
    while !stop.load(Ordering::Relaxed) {
        let n = request_pages(&mut rng);
        let mut prev = Instant::now();
        let mut note = |prev: &mut Instant| {
            let now = Instant::now();
            stall = stall.max(now.duration_since(*prev).as_nanos() as u64);
            *prev = now;
        };
        for _ in 0..n {
            match h.alloc(Order::ZERO, MigrateType::Movable) {
                Ok(p) => pfns.push(p),
                Err(e) => {
                    failure = Some(LabError(format!("drain: alloc failed: {e:?}")));
                    break;
                }
            }
            note(&mut prev);
        }
        // The request's work: no allocator call until it is done.
        for &p in &pfns {
            sum = sum.wrapping_add(process_page(&mut data, p));
        }
        prev = Instant::now();
        for p in pfns.drain(..) {
            h.free(p, Order::ZERO).map_err(err("free"))?;
            note(&mut prev);
        }
        ops += 2 * n;
        if failure.is_some() {
            break;
        }
    }
    std::hint::black_box(sum);
    drop(h); // serves a pending owner drain, if any
    match failure {
        Some(e) => Err(e),
        None => Ok((ops, stall)),
    }
}

pub(super) fn run_once(plan: Plan, mode: DrainMode, seed: u64) -> Result<RunOut, LabError> {
    let mut cfg = ZoneConfig::without_watermarks().with_cpus(plan.workers as u32);
    cfg.pcp.locking = PcpLocking::Spinlock;
    cfg.pcp.drain = mode;
    let zone = Zone::new(ZoneType::Normal, Pfn(0), Pfn(plan.pages), cfg).map_err(err("zone"))?;
    zone.add_free_range(Pfn(0), Pfn(plan.pages))
        .map_err(err("add_free_range"))?;
    let gate = Gate::new(plan.workers + 1);
    let stop = AtomicBool::new(false);
    let scoped = std::thread::scope(|s| {
        let (zone, gate, stop) = (&zone, &gate, &stop);
        let ws = Spawner::new("drain").spawn_each(s, plan.workers, gate, |w| {
            move || {
                let r = worker(zone, w, seed, gate, stop);
                if r.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                r
            }
        })?;
        // The drainer: this thread, which owns no CPU. A cancelled gate: a worker failed and
        // set `stop`, so no round runs.
        let _ = gate.wait();
        let start = Instant::now();
        let mut drains = Vec::with_capacity(plan.rounds);
        let mut schedstat = true;
        let mut next = start;
        for _ in 0..plan.rounds {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            next += plan.interval;
            if let Some(d) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(d);
            }
            let before = clock::now();
            let t = Instant::now();
            zone.drain_all();
            let wall = t.elapsed().as_nanos() as u64;
            let after = clock::now();
            schedstat &= after.run_delay_ns.is_some();
            drains.push(Split::new(wall, before, after));
        }
        stop.store(true, Ordering::Relaxed);
        let secs = start.elapsed().as_secs_f64();
        let workers: Vec<Result<(u64, u64), LabError>> = ws
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(LabError("drain: worker panicked".into())))
            })
            .collect();
        Ok::<_, SpawnError>((drains, schedstat, workers, secs))
    });
    let (drains, schedstat, mut workers, secs) =
        scoped.map_err(|e| LabError(format!("drain: {e}")))?;
    // The cause first, not the workers that the gate's cancel stopped.
    workers.sort_by_key(|r| matches!(r, Err(e) if e.0.ends_with(&Cancelled.to_string())));
    let mut ops = 0;
    let mut stall = 0;
    for r in workers {
        let (o, st) = r?;
        ops += o;
        stall = stall.max(st);
    }
    zone.drain_all();
    zone.check().map_err(err("zone check"))?;
    Ok(RunOut {
        drains,
        ops,
        secs,
        stall_ns: stall,
        schedstat,
    })
}
