//! One timed run of `drain`: workers serving the workload's requests on their own CPUs, and
//! the drainer.

use crate::gate::{Cancelled, Gate, SpawnError, Spawner};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use std::sync::Mutex;
use zonealloc::{CpuHandle, CpuId, DrainMode, MigrateType, Order, PcpLocking, Pfn, ZoneConfig};

use super::clock::{self, Split};
use super::err;
use crate::experiments::numa::{cpu_nodes, peer_of, Memory};
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
    /// NUMA nodes, the workers split across them (`pages` is each node's).
    pub(super) nodes: usize,
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

/// Share of a worker's requests handed to its peer on the next node, which frees them (on
/// several nodes only): a request received on one node and completed on another.
pub(super) const HANDOFF: f64 = 0.25;

/// What a worker shares with the others: the memory, the start gate, the stop flag and,
/// on several nodes, each worker's inbox of pages handed over for it to free.
pub(super) struct Shared<'a> {
    mem: &'a Memory,
    gate: &'a Gate,
    stop: &'a AtomicBool,
    inbox: &'a [Mutex<Vec<Pfn>>],
    /// Each worker's peer: the CPU of the next node its handed-over requests go to.
    peer: &'a [usize],
}

/// Runs `f` with every handle idle (each one's CPU free for drainers until `f` returns).
fn idle_all<R>(hs: &mut [CpuHandle<'_>], f: impl FnOnce() -> R) -> R {
    match hs.split_first_mut() {
        None => f(),
        Some((h, rest)) => h.idle(|| idle_all(rest, f)),
    }
}

/// The handles of CPU `w` in every zone, and the index of its home zone among them.
fn handles<'a>(mem: &'a Memory, w: usize) -> Result<(Vec<CpuHandle<'a>>, usize), LabError> {
    let cpu = CpuId(w as u32);
    let home = mem.home(cpu).map_err(|e| LabError(format!("drain: {e}")))?;
    let zones = mem.zones();
    let k = zones
        .iter()
        .position(|z| std::ptr::eq(*z, home))
        .ok_or_else(|| LabError("drain: the home zone is not a zone of the memory".into()))?;
    let hs = zones
        .iter()
        .map(|z| z.cpu_handle(cpu))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| LabError(format!("drain: cpu_handle: {e:?}")))?;
    Ok((hs, k))
}

fn worker(sh: &Shared<'_>, w: usize, seed: u64) -> Result<(u64, u64), LabError> {
    let (mut hs, home) = match handles(sh.mem, w) {
        Ok(h) => h,
        Err(e) => {
            // Release the others (they stop at once) rather than leave them at the gate.
            sh.stop.store(true, Ordering::Relaxed);
            sh.gate.cancel();
            return Err(e);
        }
    };
    idle_all(&mut hs, || sh.gate.wait()).map_err(|e| LabError(format!("drain: {e}")))?;
    let multi = hs.len() > 1;
    let spans: Vec<(Pfn, Pfn)> = sh.mem.zones().iter().map(|z| z.span()).collect();
    let zone_of = |p: Pfn| spans.iter().position(|&(s, e)| s <= p && p < e);
    let mut rng = SplitMix::new(seed ^ ((w as u64) << 32));
    // Its own stream, so that the request sizes are those of one node.
    let mut hand = SplitMix::new(seed ^ 0x4e55_4d41 ^ ((w as u64) << 40));
    let mut data = [0u64; 512];
    let mut sum = 0u64;
    let mut pfns: Vec<Pfn> = Vec::with_capacity(MAX_REQUEST as usize);
    let mut received: Vec<Pfn> = Vec::new();
    let (mut ops, mut stall) = (0u64, 0u64);
    let mut failure = None;
    // An allocator call serves the drain requests of the CPU's pagesets in every zone, as
    // the kernel's drain work item drains them all (`drain_local_pages` -> `drain_pages`).
    let poll_others = |hs: &mut [CpuHandle<'_>]| {
        for (k, h) in hs.iter_mut().enumerate() {
            if k != home {
                h.poll();
            }
        }
    };
    while !sh.stop.load(Ordering::Relaxed) {
        let mut prev = Instant::now();
        let mut note = |prev: &mut Instant| {
            let now = Instant::now();
            stall = stall.max(now.duration_since(*prev).as_nanos() as u64);
            *prev = now;
        };
        if multi {
            // Pages handed over by the other node's worker: freed to this CPU's pageset of
            // their own zone (`free_unref_page` on `page_zone(page)`), a remote node's.
            if let Ok(mut inbox) = sh.inbox[w].lock() {
                std::mem::swap(&mut *inbox, &mut received);
            }
            for p in received.drain(..) {
                let k = zone_of(p).unwrap_or(home);
                hs[k].free(p, Order::ZERO).map_err(err("free"))?;
                poll_others(&mut hs);
                ops += 1;
                note(&mut prev);
            }
        }
        let n = request_pages(&mut rng);
        for _ in 0..n {
            match hs[home].alloc(Order::ZERO, MigrateType::Movable) {
                Ok(p) => pfns.push(p),
                Err(e) => {
                    failure = Some(LabError(format!("drain: alloc failed: {e:?}")));
                    break;
                }
            }
            if multi {
                poll_others(&mut hs);
            }
            note(&mut prev);
        }
        // The request's work: no allocator call until it is done.
        for &p in &pfns {
            sum = sum.wrapping_add(process_page(&mut data, p));
        }
        prev = Instant::now();
        if multi && hand.unit() < HANDOFF {
            if let Ok(mut inbox) = sh.inbox[sh.peer[w]].lock() {
                inbox.append(&mut pfns);
            }
        }
        let freed = pfns.len() as u64;
        for p in pfns.drain(..) {
            hs[home].free(p, Order::ZERO).map_err(err("free"))?;
            if multi {
                poll_others(&mut hs);
            }
            note(&mut prev);
        }
        ops += n + freed;
        if failure.is_some() {
            break;
        }
    }
    std::hint::black_box(sum);
    drop(hs); // serves a pending owner drain, if any
    match failure {
        Some(e) => Err(e),
        None => Ok((ops, stall)),
    }
}

pub(super) fn run_once(plan: Plan, mode: DrainMode, seed: u64) -> Result<RunOut, LabError> {
    let mut cfg = ZoneConfig::without_watermarks();
    cfg.pcp.locking = PcpLocking::Spinlock;
    cfg.pcp.drain = mode;
    let cpu_node = cpu_nodes(plan.workers, plan.nodes);
    let mem = Memory::new(plan.nodes, plan.pages, &cpu_node, cfg)
        .map_err(|e| LabError(format!("drain: {e}")))?;
    let gate = Gate::new(plan.workers + 1);
    let stop = AtomicBool::new(false);
    let inbox: Vec<Mutex<Vec<Pfn>>> = (0..plan.workers).map(|_| Mutex::default()).collect();
    let peer: Vec<usize> = (0..plan.workers).map(|w| peer_of(&cpu_node, w)).collect();
    let sh = Shared {
        mem: &mem,
        gate: &gate,
        stop: &stop,
        inbox: &inbox,
        peer: &peer,
    };
    let scoped = std::thread::scope(|s| {
        let (mem, gate, stop, sh) = (&mem, &gate, &stop, &sh);
        let ws = Spawner::new("drain").spawn_each(s, plan.workers, gate, |w| {
            move || {
                let r = worker(sh, w, seed);
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
            mem.drain_all();
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
    // Pages handed over after their recipient stopped: freed on its CPU.
    for (w, b) in inbox.into_iter().enumerate() {
        for p in b.into_inner().unwrap_or_else(|e| e.into_inner()) {
            let z = mem.zones()[mem.zone_index(p).unwrap_or(0)];
            z.free_on(CpuId(w as u32), p, Order::ZERO)
                .map_err(err("free"))?;
        }
    }
    mem.drain_all();
    mem.check().map_err(err("memory check"))?;
    Ok(RunOut {
        drains,
        ops,
        secs,
        stall_ns: stall,
        schedstat,
    })
}
