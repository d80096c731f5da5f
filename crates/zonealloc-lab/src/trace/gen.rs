//! `zonealloc trace gen`: synthetic kernel traces of the lab's workloads, for users with no
//! kernel trace at hand. Each workload drives a zone through a [`Recorder`] with explicit CPU
//! ids and a seeded generator, so a given command always writes the same trace; the trace
//! holds the zone's own refills, drains and fallbacks, so replaying it with the same zone
//! (same `--zone-start`, `--zone-pages`, `--cpus` and variant) hands out the same frames.
//!
//! - `cross-cpu` (seed 000's netperf shape): CPU pairs; the even CPU of each pair allocates
//!   bursts of order-3 Unmovable blocks (network buffers), the odd one frees them.
//! - `page-fault` (seed 001's page_fault1 shape): every CPU in turn faults in a run of order-0
//!   Movable pages, then unmaps (frees) them all.
//! - `high-order` (seed 003's shape): mixed orders and migratetypes with heavy-tailed
//!   lifetimes hold 70-90% of the zone, and every so often a burst of order-9 requests.
//! - `mixed` (the `buddyinfo` workload's mix): orders 0-10, all three migratetypes, some
//!   atomic, grown to a steady size and churned.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::Write;

use clap::ValueEnum;
use zonealloc::{AllocError, AllocRequest, MigrateType, Order, Pfn, Zone};

use super::record::Recorder;
use crate::mix;
use crate::rng::SplitMix;

/// The workload a synthetic trace records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GenWorkload {
    /// Seed 000: allocations on one CPU freed on another (order-3 bursts).
    CrossCpu,
    /// Seed 001: every CPU faults in a run of order-0 pages, then frees them.
    PageFault,
    /// Seed 003: mixed-order churn at 70-90% occupancy with order-9 bursts.
    HighOrder,
    /// The buddyinfo mix: orders 0-10, three migratetypes, some atomic.
    Mixed,
}

/// How large and long a generated trace is.
#[derive(Clone, Copy, Debug)]
pub struct GenParams {
    /// Operations (allocations plus frees), roughly.
    pub ops: u64,
    /// CPUs.
    pub cpus: u32,
    /// Seed of every choice.
    pub seed: u64,
}

/// The largest zone `trace gen` builds: 2^24 pages (64 GiB of 4 KiB frames, 192 MiB of frame
/// metadata). Every workload is shaped by `--ops`, not by the zone, far below this.
pub const MAX_ZONE_PAGES: u64 = 1 << 24;

impl GenWorkload {
    /// The fewest pages a zone needs to run this workload as designed, with `cpus` CPUs and
    /// blocks up to `max_order`.
    pub fn min_zone_pages(self, cpus: u32, max_order: u8) -> u64 {
        match self {
            // One burst: 64 blocks, three in four of order 3.
            GenWorkload::CrossCpu => 64 * 8,
            // A run of at least one page per CPU (a run is a quarter of the zone per CPU), and
            // 64 pages: below about 40 the min watermark refuses every order-0 allocation.
            GenWorkload::PageFault => (4 * u64::from(cpus.max(1))).max(64),
            // Room for an order-9 (THP) block beside the 70-90% the churn holds.
            GenWorkload::HighOrder => 2 << 9,
            // Orders up to 10 (those above the zone's max_order are skipped).
            GenWorkload::Mixed => 2 << max_order.min(10),
        }
    }

    fn name(self) -> &'static str {
        match self {
            GenWorkload::CrossCpu => "cross-cpu",
            GenWorkload::PageFault => "page-fault",
            GenWorkload::HighOrder => "high-order",
            GenWorkload::Mixed => "mixed",
        }
    }
}

/// Checks a `trace gen` zone before anything is built: `pages` from `start` must fit in the
/// pfn space with the zone's last `max_order` block (no pfn sum may pass 2^64), stay within
/// [`MAX_ZONE_PAGES`], and hold workload `w` ([`GenWorkload::min_zone_pages`]). The error
/// names the flag to change.
pub fn check_zone(
    w: GenWorkload,
    start: u64,
    pages: u64,
    cpus: u32,
    max_order: u8,
) -> Result<(), String> {
    let block = 1u64 << max_order.min(63);
    if start
        .checked_add(pages)
        .and_then(|end| end.checked_add(block))
        .is_none()
    {
        return Err(format!(
            "--zone-start {start:#x} with --zone-pages {pages} passes the end of the pfn space \
             (2^64, with room for one order-{max_order} block): lower --zone-start"
        ));
    }
    if pages > MAX_ZONE_PAGES {
        return Err(format!(
            "--zone-pages {pages} is more than trace gen builds ({MAX_ZONE_PAGES} pages)"
        ));
    }
    let need = w.min_zone_pages(cpus, max_order);
    if pages < need {
        return Err(format!(
            "--zone-pages {pages} cannot hold the {} workload: it needs at least {need} pages \
             (with --cpus {cpus})",
            w.name()
        ));
    }
    Ok(())
}

/// What a workload did: allocations tried and how many the zone refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GenSummary {
    /// Allocations tried.
    pub allocs: u64,
    /// Allocations the zone refused (written as failed `mm_page_alloc` events).
    pub failed: u64,
}

impl GenSummary {
    /// An error when most allocations failed: the zone was too small for the workload after
    /// all (its shape, not only its size, decides).
    pub fn check(&self, w: GenWorkload, pages: u64) -> Result<(), String> {
        if self.failed * 2 > self.allocs {
            return Err(format!(
                "{} of {} allocations failed: --zone-pages {pages} is too small for the {} \
                 workload; raise it",
                self.failed,
                self.allocs,
                w.name()
            ));
        }
        Ok(())
    }
}

/// `rec.alloc`, counted in `sum`.
fn alloc<W: Write>(
    sum: &mut GenSummary,
    rec: &mut Recorder<'_, W>,
    cpu: u32,
    order: Order,
    req: AllocRequest,
) -> Result<Pfn, AllocError> {
    sum.allocs += 1;
    let got = rec.alloc(cpu, order, req);
    sum.failed += u64::from(got.is_err());
    got
}

fn o(n: u8) -> Result<Order, String> {
    Order::new(n).ok_or_else(|| format!("order {n} out of range"))
}

/// Runs `w` on `zone` through `rec`. Allocation failures are part of a workload (counted in
/// the summary); a refused free (a bug) stops it with an error, a failed write stops it early
/// (see [`Recorder::finish`]).
pub fn run<W: Write>(
    w: GenWorkload,
    zone: &Zone,
    rec: &mut Recorder<'_, W>,
    p: GenParams,
) -> Result<GenSummary, String> {
    let mut sum = GenSummary::default();
    let mut g = Gen {
        sum: &mut sum,
        rng: SplitMix::new(p.seed),
        rec,
        cpus: p.cpus.max(1),
        want: p.ops,
    };
    let managed = zone.managed_pages();
    match w {
        GenWorkload::CrossCpu => cross_cpu(&mut g)?,
        GenWorkload::PageFault => page_fault(&mut g, managed)?,
        GenWorkload::HighOrder => high_order(&mut g, managed)?,
        GenWorkload::Mixed => mixed(&mut g, zone)?,
    }
    Ok(sum)
}

/// What every workload of [`run`] works with: the summary, the random stream, the recorder,
/// the CPUs (at least one) and the operations wanted.
struct Gen<'s, 'r, 'w, W: Write> {
    sum: &'s mut GenSummary,
    rng: SplitMix,
    rec: &'r mut Recorder<'w, W>,
    cpus: u32,
    want: u64,
}

/// [`GenWorkload::CrossCpu`]: pairs of CPUs, one allocating bursts of order-0 and order-3
/// blocks, the other freeing them.
fn cross_cpu<W: Write>(g: &mut Gen<'_, '_, '_, W>) -> Result<(), String> {
    let cpus = g.cpus;
    let mut ops = 0u64;
    let pairs = (cpus / 2).max(1);
    let burst = 64;
    let mut round = 0u32;
    while ops < g.want && !g.rec.failed() {
        let pair = round % pairs;
        let (prod, cons) = (2 * pair % cpus, (2 * pair + 1) % cpus);
        let mut held = Vec::with_capacity(burst);
        for _ in 0..burst {
            let order = if g.rng.below(4) == 0 { 0 } else { 3 };
            let ord = o(order)?;
            if let Ok(pfn) = alloc(
                g.sum,
                g.rec,
                prod,
                ord,
                AllocRequest::new(MigrateType::Unmovable),
            ) {
                held.push((pfn, ord));
            }
            ops += 1;
        }
        for (pfn, ord) in held {
            g.rec.free(cons, pfn, ord).map_err(|e| e.to_string())?;
            ops += 1;
        }
        round += 1;
    }
    Ok(())
}

/// [`GenWorkload::PageFault`]: each CPU in turn allocates a run of order-0 pages and frees
/// them all.
fn page_fault<W: Write>(g: &mut Gen<'_, '_, '_, W>, managed: u64) -> Result<(), String> {
    let cpus = g.cpus;
    let mut ops = 0u64;
    let run_pages = (managed / 4 / u64::from(cpus)).clamp(1, 4096);
    let mut cpu = 0;
    while ops < g.want && !g.rec.failed() {
        let mut held = Vec::with_capacity(run_pages as usize);
        for _ in 0..run_pages {
            if let Ok(pfn) = alloc(
                g.sum,
                g.rec,
                cpu,
                o(0)?,
                AllocRequest::new(MigrateType::Movable),
            ) {
                held.push(pfn);
            }
            ops += 1;
        }
        for pfn in held {
            g.rec.free(cpu, pfn, o(0)?).map_err(|e| e.to_string())?;
            ops += 1;
        }
        cpu = (cpu + 1) % cpus;
    }
    Ok(())
}

/// [`GenWorkload::HighOrder`]: mixed orders and types with Pareto-like lifetimes at an
/// occupancy swinging between 70% and 90%, and bursts of THP faults.
fn high_order<W: Write>(g: &mut Gen<'_, '_, '_, W>, managed: u64) -> Result<(), String> {
    let cpus = g.cpus;
    let mut ops = 0u64;
    // Live blocks by the op at which they die; allocations aim at an occupancy that
    // swings between 70% and 90%, and above it the block due first is freed.
    let mut live: BinaryHeap<Reverse<(u64, u64, u8, u32)>> = BinaryHeap::new();
    let mut used = 0u64;
    while ops < g.want && !g.rec.failed() {
        let phase = (ops % 20_000) as f64 / 20_000.0;
        let target = managed as f64 * (0.8 + 0.1 * (phase * std::f64::consts::TAU).sin());
        let cpu = g.rng.below(u64::from(cpus)) as u32;
        if (used as f64) < target {
            let order = match g.rng.below(100) {
                0..=59 => 0,
                60..=79 => 1,
                80..=89 => 2,
                90..=97 => 3,
                _ => 4,
            };
            let mt = match g.rng.below(10) {
                0..=6 => MigrateType::Movable,
                7..=8 => MigrateType::Unmovable,
                _ => MigrateType::Reclaimable,
            };
            // Pareto-like lifetimes: most short, some very long.
            let life = (50.0 / g.rng.unit().powf(1.0 / 0.7)) as u64;
            if let Ok(pfn) = alloc(g.sum, g.rec, cpu, o(order)?, AllocRequest::new(mt)) {
                live.push(Reverse((ops.saturating_add(life), pfn.0, order, cpu)));
                used += 1 << order;
            }
        } else if let Some(Reverse((_, pfn, order, _))) = live.pop() {
            g.rec
                .free(cpu, Pfn(pfn), o(order)?)
                .map_err(|e| e.to_string())?;
            used -= 1 << order;
        }
        ops += 1;
        if ops.is_multiple_of(2_000) {
            // A burst of THP faults, held until it ends.
            let mut thp = Vec::new();
            for _ in 0..8 {
                match alloc(
                    g.sum,
                    g.rec,
                    cpu,
                    o(9)?,
                    AllocRequest::new(MigrateType::Movable),
                ) {
                    Ok(pfn) => thp.push(pfn),
                    Err(_) => break,
                }
                ops += 1;
            }
            for pfn in thp {
                g.rec.free(cpu, pfn, o(9)?).map_err(|e| e.to_string())?;
                ops += 1;
            }
        }
    }
    // At rest: everything freed, as the lab's tail-merge experiment ends. (Not drained:
    // a drain is not an event a trace can replay, only the pcpu_drain it causes.)
    for Reverse((_, pfn, order, cpu)) in live {
        g.rec
            .free(cpu, Pfn(pfn), o(order)?)
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// [`GenWorkload::Mixed`]: random allocations (some atomic, up to order 10) and frees, growing
/// for the first third of the operations.
fn mixed<W: Write>(g: &mut Gen<'_, '_, '_, W>, zone: &Zone) -> Result<(), String> {
    let cpus = g.cpus;
    let mut ops = 0u64;
    let mut live: VecDeque<(Pfn, Order, u32)> = VecDeque::new();
    while ops < g.want && !g.rec.failed() {
        let cpu = g.rng.below(u64::from(cpus)) as u32;
        let grow = ops < g.want / 3;
        if live.is_empty() || g.rng.below(100) < if grow { 60 } else { 50 } {
            let order = mix::order(g.rng.below(1000));
            let mt = mix::migratetype(g.rng.below(100));
            let req = if g.rng.below(100) < 3 {
                AllocRequest::atomic(mt)
            } else {
                AllocRequest::new(mt)
            };
            if order <= zone.max_order().get() {
                if let Ok(pfn) = alloc(g.sum, g.rec, cpu, o(order)?, req) {
                    live.push_back((pfn, o(order)?, cpu));
                }
            }
        } else {
            let i = g.rng.below(live.len() as u64) as usize;
            if let Some((pfn, ord, _)) = live.swap_remove_back(i) {
                g.rec.free(cpu, pfn, ord).map_err(|e| e.to_string())?;
            }
        }
        ops += 1;
    }
    Ok(())
}
