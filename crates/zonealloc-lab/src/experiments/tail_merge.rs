//! `tail-merge`: seed 003 (`003_6156cd1fe50dd7c6`), "reduce fragmentation in buddy allocator
//! by adding buddies that are merging to the tail of the free lists".
//!
//! Kernel mechanism: in `__free_one_page`, once a freed block has merged as far as it can,
//! `buddy_merge_likely` looks at the buddy of the merged block one order up; when that buddy
//! is free, the block is likely to complete a higher-order merge soon, so it goes to the
//! *tail* of its free list (`add_to_free_list_tail`) instead of the head, where it stays free
//! longer while allocations take the head. The knob is [`zonealloc::ZoneConfig::tail_merge`].
//!
//! The workload is the seed's high-order stress test in miniature: a deterministic (given the
//! seed) background churn of mixed orders and migratetypes with heavy-tailed (Pareto-like)
//! lifetimes holds 70-90% of the zone on two simulated CPUs; every tick a burst of order-9
//! allocations asks for 5% of the zone in 2 MiB blocks (THP faults), holds them until the
//! burst ends or one fails, and frees them. (A single order-9 attempt per tick succeeded
//! every time with either policy: the buddy keeps large blocks whole while smaller ones
//! exist, so the burst is what puts high-order pressure on it.) After the churn stops, the
//! short-lived blocks are freed, the per-CPU lists drained, and order-9 blocks are allocated
//! until one fails ("passes under load and at rest").

use std::path::Path;
use std::time::Instant;

use serde_json::json;
use zonealloc::stats::unusable_free_index;
use zonealloc::{
    AllocRequest, CpuId, MigrateType, Order, PcpConfig, Pfn, Zone, ZoneConfig, ZoneType,
};

use crate::trace::record::TracedZone;

use super::{
    Experiment, ExperimentResult, LabError, LabOpts, MetricDef, MetricKind, Plot, PlotKind,
    Progress, Sample, Series, SplitMix, Table,
};

/// The `tail-merge` experiment (seed 003): tail placement of likely-merging buddies off vs on.
pub struct TailMerge;

const SEED_NAME: &str = "003_6156cd1fe50dd7c6";
const PROBE_ORDER: u8 = 9;
const VARIANTS: [(&str, bool); 2] = [("tail_merge=off", false), ("tail_merge=on", true)];
/// Shape of the Pareto lifetimes (smaller: heavier tail, more long-lived blocks).
const LIFETIME_ALPHA: f64 = 0.7;
const M_SUCCESS: &str = "order-9 success under load";
const M_REST: &str = "order-9 successes at rest";
const M_LATENCY: &str = "order-9 attempt latency";
const M_UNUSABLE: &str = "unusable index order-9";
/// Orders 0..=10 (the zone's `MAX_PAGE_ORDER` is the default 10).
const ORDERS: usize = 11;
/// Orders drawn in the per-order plots (order 0 is always 0; every order is in the table).
const PLOTTED_ORDERS: [usize; 6] = [1, 3, 5, 7, 9, 10];

/// Sizes of one run.
#[derive(Clone, Copy, Debug)]
struct Params {
    zone_pages: u64,
    cpus: u32,
    ticks: u64,
    /// Blocks whose lifetime is at least this many ticks are long-lived: they survive the
    /// end of the churn and are still held at rest.
    long_after: u64,
    /// Period of the occupancy target's oscillation between 70% and 90%, in ticks.
    period: u64,
    /// Order-9 blocks one probe burst asks for.
    burst: u64,
}

/// What one run measured.
struct RunOut {
    attempts: u64,
    successes: u64,
    latency_ns_sum: u128,
    /// Attempts actually made (and timed).
    timed: u64,
    rest_successes: u64,
    /// Per tick, the unusable free space index (%) of every order 0..=MAX_ORDER.
    unusable: Vec<[f64; ORDERS]>,
    tail_placements: u64,
    merges: u64,
    churn_allocs: u64,
    churn_failures: u64,
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
fn run_once(
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
        latency_ns_sum: 0,
        timed: 0,
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
        let mut failures_in_row = 0;
        while occupied < target && failures_in_row < 64 {
            let order = Order::new(pick_order(&mut rng)).ok_or_else(|| lab_err("order", ""))?;
            let mt = pick_migratetype(&mut rng);
            let cpu = rng.below(p.cpus as u64) as u32;
            let life = pick_lifetime(&mut rng, p.ticks);
            match zone.alloc_with(order, nowait(mt).on_cpu(CpuId(cpu))) {
                Ok(pfn) => {
                    failures_in_row = 0;
                    out.churn_allocs += 1;
                    occupied += order.pages();
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
        // The periodic high-order attempts: a burst of THP faults wanting `burst` order-9
        // blocks (5% of the zone) at once, held until the burst ends, then freed.
        let mut got = Vec::with_capacity(p.burst as usize);
        for _ in 0..p.burst {
            let start = Instant::now();
            let r = zone.alloc_with(probe_order, nowait(MigrateType::Movable).on_cpu(CpuId(0)));
            out.latency_ns_sum += start.elapsed().as_nanos();
            out.timed += 1;
            match r {
                Ok(pfn) => got.push(pfn),
                Err(_) => break,
            }
        }
        out.successes += got.len() as u64;
        // A failure ends the burst; the attempts it cut short count as failures too.
        out.attempts += p.burst;
        for pfn in got {
            zone.free_on(CpuId(0), pfn, probe_order)
                .map_err(|e| lab_err("free probe", e))?;
        }
        let snap = plain.snapshot(0);
        out.unusable.push(core::array::from_fn(|o| {
            unusable_free_index(&snap, o as u8) as f64 / 10.0
        }));
        on_tick();
    }

    // At rest: free the short-lived blocks, drain, allocate order 9 until failure.
    let mut kept = Vec::new();
    for b in deaths.into_iter().flatten() {
        if b.long {
            kept.push(b);
        } else {
            let cpu = rng.below(p.cpus as u64) as u32;
            free_block(&zone, cpu, &b)?;
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
    out.rest_successes = rest.len() as u64;
    for b in rest.iter().chain(kept.iter()) {
        free_block(&zone, 0, b)?;
    }
    zone.drain_all();
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

fn params(opts: &LabOpts) -> Result<Params, LabError> {
    let zone_pages = opts
        .zone_pages
        .unwrap_or(if opts.quick { 1 << 14 } else { 1 << 18 });
    if !(4096..=1 << 26).contains(&zone_pages) {
        return Err(LabError(format!(
            "tail-merge: zone of {zone_pages} pages: must be 4096..=67108864 (8 order-9 blocks at least)"
        )));
    }
    let cpus = opts.threads.unwrap_or(2);
    if !(1..=64).contains(&cpus) {
        return Err(LabError(format!(
            "tail-merge: {cpus} simulated CPUs: must be 1..=64"
        )));
    }
    let ticks = if opts.quick { 40 } else { 480 };
    // Quick: 10 ticks per occupancy cycle; otherwise 60.
    let cycle = if opts.quick { ticks / 4 } else { 60 };
    Ok(Params {
        zone_pages,
        cpus: cpus as u32,
        ticks,
        long_after: cycle,
        period: cycle,
        burst: (zone_pages / 20 / 512).max(1),
    })
}

impl Experiment for TailMerge {
    fn name(&self) -> &'static str {
        "tail-merge"
    }

    fn about(&self) -> &'static str {
        "seed 003: free likely-merging buddies to the free-list tail; order-9 success and unusable index under churn"
    }

    fn run(&self, opts: &LabOpts, progress: Progress<'_>) -> Result<ExperimentResult, LabError> {
        let p = params(opts)?;
        let iterations = opts.iterations_or(2, 5, self.name())?;
        let variants = opts.pick(&VARIANTS, |v| v.0, self.name())?;
        let total = variants.len() as u64 * iterations as u64 * p.ticks;
        let mut done = 0u64;
        progress(0, total);

        let mut samples = Vec::new();
        let mut series = Vec::new();
        let mut rows = Vec::new();
        // curves[variant][tick][order]: mean over iterations.
        let mut curves = vec![vec![[0.0f64; ORDERS]; p.ticks as usize]; variants.len()];
        // Per variant: churn allocations, churn failures, merges, tail placements.
        let mut totals = vec![[0u64; 4]; variants.len()];
        // Iterations outermost, so drifts of the machine (frequency, caches) spread over both
        // variants; each iteration runs both on the same seed.
        for i in 0..iterations {
            let seed = opts.seed.wrapping_add(i as u64);
            for (k, (variant, on)) in variants.iter().copied().enumerate() {
                let trace = opts.trace_path(self.name(), variant, i);
                let r = run_once(p, on, seed, trace.as_deref(), &mut || {
                    done += 1;
                    progress(done, total);
                })?;
                let success = 100.0 * r.successes as f64 / r.attempts.max(1) as f64;
                let latency = r.latency_ns_sum as f64 / r.timed.max(1) as f64;
                let unusable = r
                    .unusable
                    .iter()
                    .map(|u| u[PROBE_ORDER as usize])
                    .sum::<f64>()
                    / r.unusable.len().max(1) as f64;
                for (metric, value) in [
                    (M_SUCCESS, success),
                    (M_REST, r.rest_successes as f64),
                    (M_LATENCY, latency),
                    (M_UNUSABLE, unusable),
                ] {
                    samples.push(Sample {
                        variant: variant.to_string(),
                        metric: metric.to_string(),
                        value,
                    });
                }
                for (c, u) in curves[k].iter_mut().zip(&r.unusable) {
                    for (co, uo) in c.iter_mut().zip(u) {
                        *co += uo / iterations as f64;
                    }
                }
                let t = &mut totals[k];
                t[0] += r.churn_allocs;
                t[1] += r.churn_failures;
                t[2] += r.merges;
                t[3] += r.tail_placements;
            }
        }
        let mut order_plots = Vec::new();
        let mut order_rows = Vec::new();
        for (k, (variant, _)) in variants.iter().copied().enumerate() {
            let curve = |o: usize| -> Vec<(f64, f64)> {
                curves[k]
                    .iter()
                    .enumerate()
                    .map(|(t, u)| (t as f64, u[o]))
                    .collect()
            };
            series.push(Series {
                name: variant.to_string(),
                points: curve(PROBE_ORDER as usize),
            });
            order_plots.push(Plot {
                file_stem: format!("tail-merge-orders-{}", variant.replace(['=', ' '], "-")),
                title: format!("Unusable free space index per order, {variant}"),
                x_label: "tick".to_string(),
                y_label: "unusable index (%)".to_string(),
                kind: PlotKind::Lines,
                series: PLOTTED_ORDERS
                    .iter()
                    .map(|&o| Series {
                        name: format!("order {o}"),
                        points: curve(o),
                    })
                    .collect(),
            });
            let ticks = curves[k].len().max(1) as f64;
            let mut orow = vec![variant.to_string()];
            orow.extend(
                (0..ORDERS)
                    .map(|o| format!("{:.2}", curves[k].iter().map(|u| u[o]).sum::<f64>() / ticks)),
            );
            order_rows.push(orow);
            let mut row = vec![variant.to_string()];
            row.extend(totals[k].iter().map(|n| n.to_string()));
            rows.push(row);
        }

        Ok(ExperimentResult {
            name: self.name().to_string(),
            seed: SEED_NAME.to_string(),
            change: "page allocator: add buddies that are about to merge to the tail of the free lists (buddy_merge_likely)".to_string(),
            baseline: variants[0].0.to_string(),
            variants: variants.iter().map(|(v, _)| v.to_string()).collect(),
            metrics: vec![
                MetricDef {
                    name: M_SUCCESS.to_string(),
                    unit: "%".to_string(),
                    kind: MetricKind::Count {
                        higher_is_better: true,
                    },
                },
                MetricDef {
                    name: M_REST.to_string(),
                    unit: "blocks".to_string(),
                    kind: MetricKind::Count {
                        higher_is_better: true,
                    },
                },
                MetricDef {
                    name: M_LATENCY.to_string(),
                    unit: "ns".to_string(),
                    kind: MetricKind::Latency,
                },
                MetricDef {
                    name: M_UNUSABLE.to_string(),
                    unit: "%".to_string(),
                    kind: MetricKind::Count {
                        higher_is_better: false,
                    },
                },
            ],
            samples,
            tables: vec![Table {
                title: format!(
                    "Churn totals over {iterations} iterations (tail placements count buddy_merge_likely hits)"
                ),
                header: ["variant", "churn allocs", "churn failures", "merges", "tail placements"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                rows,
            }, Table {
                title: "Mean unusable free space index (%) per order over the run".to_string(),
                header: std::iter::once("variant".to_string())
                    .chain((0..ORDERS).map(|o| format!("order {o}")))
                    .collect(),
                rows: order_rows,
            }],
            plots: std::iter::once(Plot {
                file_stem: "tail-merge-unusable".to_string(),
                title: format!(
                    "Unusable free space index, order 9 (mean of {iterations} runs)"
                ),
                x_label: "tick".to_string(),
                y_label: "unusable index (%)".to_string(),
                kind: PlotKind::Lines,
                series,
            })
            .chain(order_plots)
            .collect(),
            expected_shape: "Tail placement keeps likely-merging buddies free longer, so the unusable free space index for order 9 is lower and more order-9 allocations succeed, under load and at rest (the seed's high-order stress test); the differences may be small.".to_string(),
            config: json!({
                "zone_pages": p.zone_pages,
                "simulated_cpus": p.cpus,
                "ticks": p.ticks,
                "iterations": iterations,
                "seed": opts.seed,
                "occupancy": "70-90% of the zone, sinusoidal target",
                "occupancy_period_ticks": p.period,
                "orders": "0: 70%, 1: 12%, 2: 8%, 3: 6%, 4: 2.5%, 5: 1%, 6: 0.5%",
                "migratetypes": "Movable 60%, Unmovable 30%, Reclaimable 10%",
                "lifetime": format!("Pareto alpha={LIFETIME_ALPHA}, x_m=1 tick, capped at the run"),
                "long_lived_after_ticks": p.long_after,
                "probe": "per tick a burst of Movable GFP_NOWAIT-like order-9 allocations (5% of the zone), held until the burst ends or one fails, then freed",
                "probe_burst_blocks": p.burst,
                "watermarks": "none",
                "pcp": "on, THP lists off",
            }),
            oversubscribed: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_run_has_the_expected_structure() {
        let r = TailMerge.run(&LabOpts::quick_test(7), &|_, _| {}).unwrap();
        assert_eq!(r.variants, vec!["tail_merge=off", "tail_merge=on"]);
        assert_eq!(r.baseline, "tail_merge=off");
        assert_eq!(r.metrics.len(), 4);
        assert_eq!(r.samples.len(), 2 * 4 * 2);
        for m in &r.metrics {
            for v in &r.variants {
                let n = r
                    .samples
                    .iter()
                    .filter(|s| &s.variant == v && s.metric == m.name)
                    .count();
                assert_eq!(n, 2, "{v} {}", m.name);
            }
        }
        assert!(r.samples.iter().all(|s| s.value.is_finite()));
        // The order-9 curve of both variants, then one per-order plot per variant.
        assert_eq!(r.plots.len(), 3);
        assert_eq!(r.plots[0].series.len(), 2);
        assert_eq!(r.plots[1].series.len(), PLOTTED_ORDERS.len());
        assert!(r
            .plots
            .iter()
            .all(|p| p.series.iter().all(|s| !s.points.is_empty())));
        // The per-order means: a row per variant, a column per order.
        let per_order = &r.tables[1];
        assert_eq!(per_order.rows.len(), 2);
        assert_eq!(per_order.header.len(), 1 + ORDERS);
        assert!(!r.oversubscribed);
    }

    #[test]
    fn same_seed_same_unusable_index() {
        let pick = |r: &ExperimentResult| -> Vec<f64> {
            r.samples
                .iter()
                .filter(|s| s.metric != M_LATENCY)
                .map(|s| s.value)
                .collect()
        };
        let a = TailMerge.run(&LabOpts::quick_test(42), &|_, _| {}).unwrap();
        let b = TailMerge.run(&LabOpts::quick_test(42), &|_, _| {}).unwrap();
        assert_eq!(pick(&a), pick(&b));
        assert_eq!(a.plots[0].series[0].points, b.plots[0].series[0].points);
    }

    #[test]
    fn bad_sizes_are_errors() {
        let mut o = LabOpts::quick_test(1);
        o.zone_pages = Some(100);
        assert!(TailMerge.run(&o, &|_, _| {}).is_err());
        let mut o = LabOpts::quick_test(1);
        o.iterations = Some(0);
        assert!(TailMerge.run(&o, &|_, _| {}).is_err());
    }
}
