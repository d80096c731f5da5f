//! `drain`: seed 004 (`d6fe163515c3f354`, "mm/page_alloc: remotely drain per-cpu lists").
//!
//! The kernel mechanism: `__drain_all_pages` used to queue a drain work item on every CPU with
//! pages on its per-CPU lists and wait for all of them; a CPU busy in user space
//! (`NOHZ_FULL`) or fully booked runs the work late, so the drainer (direct reclaim,
//! `alloc_contig_range`) waits on the slowest CPU (Minchan Kim saw 166 ms). With the per-CPU
//! spinlock of seed 002, the drainer takes each CPU's lock and drains it itself.
//!
//! The experiment: workers allocate and free busily on their own
//! [`CpuHandle`](zonealloc::CpuHandle); odd-numbered workers (or the only one) "never yield":
//! between bursts they spin on non-allocator work for 1-5 ms without polling, as a
//! `NOHZ_FULL` CPU busy in user space; the others poll between bursts. A drainer thread calls
//! [`Zone::drain_all`] every 10 ms and times it. Owner drain (baseline:
//! [`PcpLocking::Spinlock`] with [`DrainMode::Owner`]) against remote drain
//! ([`DrainMode::Remote`]): drain latency avg/p50/p99/max, workers' throughput and longest stall
//! (the longest gap between consecutive allocator operations of a worker within its bursts,
//! the busy loops excluded).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use serde_json::json;
use zonealloc::{
    CpuId, DrainMode, MigrateType, Order, PcpLocking, Pfn, Zone, ZoneConfig, ZoneType,
};

use super::{
    Experiment, ExperimentResult, LabError, LabOpts, MetricDef, MetricKind, Plot, PlotKind,
    Progress, Sample, Series,
};
use crate::report::stats::{cdf_points, nearest_rank};
use crate::rng::SplitMix;

/// The `drain` experiment (seed 004).
pub struct DrainExp;

const VARIANTS: [(&str, DrainMode); 2] = [
    ("owner drain", DrainMode::Owner),
    ("remote drain", DrainMode::Remote),
];

/// Pages a worker allocates, then frees, per burst.
const BURST: usize = 64;

const M_AVG: &str = "drain avg";
const M_P50: &str = "drain p50";
const M_P99: &str = "drain p99";
const M_MAX: &str = "drain max";
const M_OPS: &str = "ops/s";
const M_STALL: &str = "longest stall";

fn err<E: std::fmt::Debug>(what: &'static str) -> impl FnOnce(E) -> LabError {
    move |e| LabError(format!("drain: {what}: {e:?}"))
}

/// Sizes of one run.
#[derive(Clone, Copy, Debug)]
struct Plan {
    pages: u64,
    workers: usize,
    interval: Duration,
    rounds: usize,
    /// Busy-loop bounds of the never-yielding workers, in microseconds.
    busy_us: (u64, u64),
}

/// What one run measured.
#[derive(Debug)]
struct RunOut {
    drains_ns: Vec<u64>,
    ops: u64,
    secs: f64,
    stall_ns: u64,
}

fn never_yields(w: usize, workers: usize) -> bool {
    workers == 1 || w % 2 == 1
}

/// Spins for `d` doing work that does not touch the allocator.
fn busy(d: Duration) {
    let end = Instant::now() + d;
    let mut x = SplitMix::new(1);
    while Instant::now() < end {
        for _ in 0..64 {
            std::hint::black_box(x.next_u64());
        }
    }
}

fn worker(
    zone: &Zone,
    w: usize,
    plan: Plan,
    seed: u64,
    barrier: &Barrier,
    stop: &AtomicBool,
) -> Result<(u64, u64), LabError> {
    let mut h = match zone.cpu_handle(CpuId(w as u32)) {
        Ok(h) => h,
        Err(e) => {
            // Let the others start (and stop at once) rather than leave them at the barrier.
            stop.store(true, Ordering::Relaxed);
            barrier.wait();
            return Err(LabError(format!("drain: cpu_handle: {e:?}")));
        }
    };
    h.idle(|| barrier.wait());
    let stubborn = never_yields(w, plan.workers);
    let mut rng = SplitMix::new(seed ^ ((w as u64) << 32));
    let mut pfns: Vec<Pfn> = Vec::with_capacity(BURST);
    let mut ops = 0u64;
    let mut stall = 0u64;
    let mut failure = None;
    while !stop.load(Ordering::Relaxed) {
        if stubborn {
            let (lo, hi) = plan.busy_us;
            busy(Duration::from_micros(lo + rng.below(hi - lo + 1)));
        } else {
            h.poll();
        }
        let mut prev = Instant::now();
        let mut note = |prev: &mut Instant| {
            let now = Instant::now();
            stall = stall.max(now.duration_since(*prev).as_nanos() as u64);
            *prev = now;
        };
        for _ in 0..BURST {
            match h.alloc(Order::ZERO, MigrateType::Movable) {
                Ok(p) => pfns.push(p),
                Err(e) => {
                    failure = Some(LabError(format!("drain: alloc failed: {e:?}")));
                    break;
                }
            }
            note(&mut prev);
        }
        for p in pfns.drain(..) {
            h.free(p, Order::ZERO).map_err(err("free"))?;
            note(&mut prev);
        }
        ops += 2 * BURST as u64;
        if failure.is_some() {
            break;
        }
    }
    drop(h); // serves a pending owner drain, if any
    match failure {
        Some(e) => Err(e),
        None => Ok((ops, stall)),
    }
}

fn run_once(plan: Plan, mode: DrainMode, seed: u64) -> Result<RunOut, LabError> {
    let mut cfg = ZoneConfig::without_watermarks().with_cpus(plan.workers as u32);
    cfg.pcp.locking = PcpLocking::Spinlock;
    cfg.pcp.drain = mode;
    let zone = Zone::new(ZoneType::Normal, Pfn(0), Pfn(plan.pages), cfg).map_err(err("zone"))?;
    zone.add_free_range(Pfn(0), Pfn(plan.pages))
        .map_err(err("add_free_range"))?;
    let barrier = Barrier::new(plan.workers + 1);
    let stop = AtomicBool::new(false);
    let (drains, workers, secs) = std::thread::scope(|s| {
        let (zone, barrier, stop) = (&zone, &barrier, &stop);
        let ws: Vec<_> = (0..plan.workers)
            .map(|w| {
                s.spawn(move || {
                    let r = worker(zone, w, plan, seed, barrier, stop);
                    if r.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        // The drainer: this thread, which owns no CPU.
        barrier.wait();
        let start = Instant::now();
        let mut drains = Vec::with_capacity(plan.rounds);
        let mut next = start;
        for _ in 0..plan.rounds {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            next += plan.interval;
            if let Some(d) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(d);
            }
            let t = Instant::now();
            zone.drain_all();
            drains.push(t.elapsed().as_nanos() as u64);
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
        (drains, workers, secs)
    });
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
        drains_ns: drains,
        ops,
        secs,
        stall_ns: stall,
    })
}

/// Evenly spaced order statistics of `v`, at most `n`, as CDF points (µs).
fn thin_us(v: &[u64], n: usize) -> Vec<(f64, f64)> {
    cdf_points(v, n)
        .into_iter()
        .map(|x| (x as f64 / 1000.0, 0.0))
        .collect()
}

impl Experiment for DrainExp {
    fn name(&self) -> &'static str {
        "drain"
    }

    fn about(&self) -> &'static str {
        "seed 004: remote drain vs owner drain with workers that never yield"
    }

    fn run(&self, opts: &LabOpts, progress: Progress<'_>) -> Result<ExperimentResult, LabError> {
        let workers = opts.threads_or(2, 1024, self.name())?;
        let iterations = opts.iterations_or(2, 3, self.name())?;
        let variants = opts.pick(&VARIANTS, |v| v.0, self.name())?;
        let pages = opts.zone_pages.unwrap_or(1 << 16);
        if pages < (workers as u64) * 4096 {
            return Err(LabError(format!(
                "drain: zone of {pages} pages is too small for {workers} workers (need 4096 pages each)"
            )));
        }
        let plan = if opts.quick {
            Plan {
                pages,
                workers,
                interval: Duration::from_millis(1),
                rounds: 20,
                busy_us: (200, 1000),
            }
        } else {
            Plan {
                pages,
                workers,
                interval: Duration::from_millis(10),
                rounds: 200,
                busy_us: (1000, 5000),
            }
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let lat = |name: &str| MetricDef {
            name: name.into(),
            unit: "ns".into(),
            kind: MetricKind::Latency,
        };
        let metrics = vec![
            lat(M_AVG),
            lat(M_P50),
            lat(M_P99),
            lat(M_MAX),
            MetricDef {
                name: M_OPS.into(),
                unit: "ops/s".into(),
                kind: MetricKind::Rate,
            },
            lat(M_STALL),
        ];
        let total = (iterations * variants.len()) as u64;
        let mut done = 0;
        progress(0, total);
        let mut samples = Vec::new();
        let mut all: Vec<Vec<u64>> = vec![Vec::new(); variants.len()];
        for it in 0..iterations {
            let seed = opts.seed ^ (it as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            for (vi, (name, mode)) in variants.iter().enumerate() {
                let out = run_once(plan, *mode, seed)?;
                let d = &out.drains_ns;
                let avg = if d.is_empty() {
                    0.0
                } else {
                    d.iter().sum::<u64>() as f64 / d.len() as f64
                };
                for (m, v) in [
                    (M_AVG, avg),
                    (M_P50, nearest_rank(d, 0.5) as f64),
                    (M_P99, nearest_rank(d, 0.99) as f64),
                    (M_MAX, d.iter().copied().max().unwrap_or(0) as f64),
                    (M_OPS, out.ops as f64 / out.secs.max(1e-9)),
                    (M_STALL, out.stall_ns as f64),
                ] {
                    samples.push(Sample {
                        variant: (*name).into(),
                        metric: m.into(),
                        value: v,
                    });
                }
                all[vi].extend_from_slice(d);
                done += 1;
                progress(done, total);
            }
        }
        let plot = Plot {
            file_stem: "drain-latency".into(),
            title: "drain_all latency".into(),
            x_label: "latency (µs)".into(),
            y_label: "fraction of drains".into(),
            kind: PlotKind::Cdf,
            series: variants
                .iter()
                .zip(&all)
                .map(|((name, _), d)| Series {
                    name: (*name).into(),
                    points: thin_us(d, 400),
                })
                .collect(),
        };
        Ok(ExperimentResult {
            name: self.name().into(),
            seed: "004_d6fe163515c3f354".into(),
            change: "mm/page_alloc: remotely drain per-cpu lists".into(),
            baseline: variants[0].0.into(),
            variants: variants.iter().map(|v| v.0.to_string()).collect(),
            metrics,
            samples,
            tables: Vec::new(),
            plots: vec![plot],
            expected_shape: "Remote drain is bounded (microseconds, independent of the \
                workers) where owner drain waits on the slowest owner (up to its busy loop, \
                milliseconds); workers' throughput is about the same (the seed: no regression)."
                .into(),
            config: json!({
                "zone_pages": pages,
                "workers": workers,
                "never_yielding": (0..workers).filter(|&w| never_yields(w, workers)).count(),
                "burst": BURST,
                "busy_us": [plan.busy_us.0, plan.busy_us.1],
                "drain_interval_us": plan.interval.as_micros() as u64,
                "rounds": plan.rounds,
                "iterations": iterations,
                "locking": "spinlock",
                "seed": opts.seed,
            }),
            // The drainer is a thread too (it mostly sleeps).
            oversubscribed: workers + 1 > cores,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// Runs `opts` on another thread and fails if it does not finish within a minute (an
    /// owner drain that waits forever).
    fn run_guarded(opts: LabOpts) -> Result<ExperimentResult, LabError> {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(DrainExp.run(&opts, &|_, _| {}));
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("drain experiment hung")
    }

    #[test]
    fn quick_run_has_the_expected_structure() {
        let r = run_guarded(LabOpts::quick_test(1)).unwrap();
        assert_eq!(r.baseline, "owner drain");
        assert_eq!(r.variants, ["owner drain", "remote drain"]);
        assert_eq!(r.metrics.len(), 6);
        for v in &r.variants {
            for m in &r.metrics {
                let n = r
                    .samples
                    .iter()
                    .filter(|s| &s.variant == v && s.metric == m.name)
                    .count();
                assert_eq!(n, 2);
            }
        }
        assert_eq!(r.plots.len(), 1);
        assert_eq!(r.plots[0].kind, PlotKind::Cdf);
        assert!(r.plots[0].series.iter().all(|s| s.points.len() == 40));
    }

    #[test]
    fn one_and_three_workers_finish() {
        for t in [1, 3] {
            let r = run_guarded(LabOpts {
                threads: Some(t),
                iterations: Some(1),
                ..LabOpts::quick_test(1)
            })
            .unwrap();
            assert_eq!(r.samples.len(), 12);
        }
        assert!(run_guarded(LabOpts {
            zone_pages: Some(100),
            ..LabOpts::quick_test(1)
        })
        .is_err());
    }
}
