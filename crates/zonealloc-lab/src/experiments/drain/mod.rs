//! `drain`: seed 004 (`d6fe163515c3f354`, "mm/page_alloc: remotely drain per-cpu lists").
//!
//! The kernel mechanism: `__drain_all_pages` used to queue a drain work item on every CPU with
//! pages on its per-CPU lists and wait for all of them; a CPU busy in user space
//! (`NOHZ_FULL`) or fully booked runs the work late, so the drainer (direct reclaim,
//! `alloc_contig_range`) waits on the slowest CPU (Minchan Kim saw 166 ms). With the per-CPU
//! spinlock of seed 002, the drainer takes each CPU's lock and drains it itself.
//!
//! The experiment: each worker owns a CPU ([`CpuHandle`](zonealloc::CpuHandle)) and serves
//! requests drawn from the seed: a request needs `n` pages (heavy-tailed, 1..=1024, most
//! small), which the worker allocates, processes (a checksum over 4 KiB of data per page,
//! with no allocator call), and frees. The owner therefore makes no allocator call for as long
//! as its current request takes to process: that is how long an owner drain waits for it, and
//! the workload, not the lab, decides it (no worker sleeps or polls on a schedule the lab
//! sets). A drainer thread calls [`Zone::drain_all`](zonealloc::Zone::drain_all) every 10 ms (1 ms with `--quick`) and
//! times it. Owner drain (baseline: [`PcpLocking::Spinlock`](zonealloc::PcpLocking::Spinlock) with [`DrainMode::Owner`])
//! against remote drain ([`DrainMode::Remote`]).
//!
//! # What a drain waits on
//! Each drain's wall time is split with the drainer's own scheduler accounting (`clock`):
//! on a CPU (its work, and spinning), runnable in the run queue, and asleep (blocked on a
//! lock). A thread that yields (`sched_yield`) stays runnable, so the run-queue share holds
//! every yield too, and that is how both schemes wait:
//! - owner drain raises a request on every busy owner, then yields in a loop until each
//!   owner's next allocator call serves it: its run-queue share is the wait for the owners
//!   (their current request's processing, plus their own time off a CPU), the seed's problem;
//! - remote drain waits on no owner. It takes each CPU's list lock (spinning, then yielding
//!   every 64 spins) and the zone lock. Its run-queue share is the machine's: the drainer
//!   preempted, or yielding to a list-lock holder that was itself preempted mid-operation
//!   (a worker holds its lock for one allocation or free). With two workers and the drainer
//!   on two cores, both happen; the `drains with run-queue wait` metric counts them, and
//!   `drain p99 without run-queue wait` is what remote drain costs without them: our code's
//!   part of the tail. (For owner drain that figure also leaves out the wait for the owners,
//!   so compare it with owner drain's wall time, not with its own.)
//!
//! The seed's claim on the worst drain is judged on the p99 of 100 drains, the second
//! longest: where 1% or more of remote drains waited in the run queue (on this 2-core machine
//! under load, every run so far: 1-4%), that p99 is the scheduler's wait, and the claim is
//! `not measurable here` (see `experiments::seeds`).
//!
//! The deterministic count behind the claim, owner handshakes per drain, comes from
//! `probe`: remote drain needs none.

mod clock;
mod probe;
mod run;
mod sim;
#[cfg(test)]
mod tests;

use serde_json::json;
use zonealloc::DrainMode;

use super::{
    Experiment, ExperimentResult, LabError, LabOpts, MetricDef, MetricKind, Plot, PlotKind,
    Progress, Sample, Series, Table,
};
use crate::experiments::numa::{cpu_nodes, slit_text};
use crate::report::stats::{cdf_points, nearest_rank};
use run::{run_once, Plan};

/// The `drain` experiment (seed 004).
pub struct DrainExp;

const VARIANTS: [(&str, DrainMode); 2] = [
    ("owner drain", DrainMode::Owner),
    ("remote drain", DrainMode::Remote),
];

/// Mean `drain_all` wall time (timing).
pub const M_AVG: &str = "drain avg";
/// Median `drain_all` wall time (timing).
pub const M_P50: &str = "drain p50";
/// 99th percentile of the `drain_all` wall time (timing).
pub const M_P99: &str = "drain p99";
/// Longest `drain_all` (timing).
pub const M_MAX: &str = "drain max";
/// 99th percentile of the drain time less its run-queue wait: for remote drain, what our code
/// costs without the machine's preemptions (of the drainer, or of a list-lock holder it yields
/// to); for owner drain it also leaves out the yielding wait for the owners (timing).
pub const M_P99_OURS: &str = "drain p99 without run-queue wait";
/// Share of drains during which the drainer waited in the run queue at all (%).
pub const M_PREEMPTED: &str = "drains with run-queue wait";
/// Owners that had to drain their own lists for one `drain_all` (deterministic, `probe`).
pub const M_HANDSHAKES: &str = "owner handshakes per drain";
/// The longest of a run's drains on the simulated clock (`sim`), in steps (deterministic).
pub const M_SIM_MAX: &str = "simulated worst drain";
/// The mean of a run's drains on the simulated clock, in steps (deterministic).
pub const M_SIM_AVG: &str = "simulated drain avg";
/// Pagesets (one CPU's lists in one zone) one `drain_all` drains, with every owner busy and
/// pages in every zone (deterministic, `probe`; several nodes only).
pub const M_PAGESETS: &str = "pagesets per drain";
/// Seeds of the simulated clock: enough for a sign test, whatever the timed iterations.
const SIM_SEEDS: usize = 12;

/// The workers' allocator operations per second (timing).
pub const M_OPS: &str = "ops/s";
/// The longest gap between consecutive allocator operations of a worker within a request's
/// allocation or free phase (its processing excluded) (timing).
pub const M_STALL: &str = "longest stall";

fn err<E: std::fmt::Debug>(what: &'static str) -> impl FnOnce(E) -> LabError {
    move |e| LabError(format!("drain: {what}: {e:?}"))
}

/// Evenly spaced order statistics of `v`, at most `n`, as CDF points (µs).
fn thin_us(v: &[u64], n: usize) -> Vec<(f64, f64)> {
    cdf_points(v, n)
        .into_iter()
        .map(|x| (x as f64 / 1000.0, 0.0))
        .collect()
}

fn lat(name: &str) -> MetricDef {
    MetricDef {
        name: name.into(),
        unit: "ns".into(),
        kind: MetricKind::Latency,
    }
}

fn count(name: &str, unit: &str) -> MetricDef {
    MetricDef {
        name: name.into(),
        unit: unit.into(),
        kind: MetricKind::Count {
            higher_is_better: false,
        },
    }
}

/// What the node configuration was (null on one node, whose results are as without `--nodes`).
fn numa_config(nodes: usize, workers: usize) -> serde_json::Value {
    if nodes <= 1 {
        return serde_json::Value::Null;
    }
    json!({
        "cpu_nodes": cpu_nodes(workers, nodes),
        "distances": slit_text(nodes),
        "zone_pages": "each node's",
        "allocation": "node-local: each worker allocates in the first zone of its node's zonelist",
        "cross_node_frees": format!("{:.0}% of a worker's requests are handed to its peer on the next node, which frees them to its pageset of the pages' own zone (a remote node's), where only a drain (or the vmstat worker's expiry, seconds later, not reached in a run) takes them back", run::HANDOFF * 100.0),
        "drain": "Machine::drain_all as __drain_all_pages before seed 004: a remote drain takes every CPU's lock in every zone (drain_pages walks each populated zone); an owner drain asks every owner in every zone first and then waits for them once, as the kernel queues one work item per CPU for all zones and flushes them once, and an owner serves every zone's request at its next allocator call, as its one work item would",
        "simulated_clock": "a remote drain takes one step per CPU and zone, an owner's drain one step per zone; the requests are laid out as on one node (hand-offs left out)",
        "comparable": "every claim judges the same drain_all against the same owners; on two nodes it empties twice the pagesets, so remote drain's own work doubles, and the owners it no longer waits for are the same",
    })
}

/// Where the slowest drains' time went: per variant, the drains at or above the p99, their
/// mean wall time and its split.
fn tail_table(variants: &[(&str, DrainMode)], splits: &[Vec<clock::Split>]) -> Table {
    let rows = variants
        .iter()
        .zip(splits)
        .map(|((name, _), s)| {
            let walls: Vec<u64> = s.iter().map(|x| x.wall).collect();
            let p99 = nearest_rank(&walls, 0.99);
            let tail: Vec<&clock::Split> = s.iter().filter(|x| x.wall >= p99).collect();
            let n = tail.len().max(1) as f64;
            let mean = |f: fn(&clock::Split) -> u64| {
                format!(
                    "{:.1}",
                    tail.iter().map(|x| f(x)).sum::<u64>() as f64 / n / 1000.0
                )
            };
            vec![
                (*name).to_string(),
                tail.len().to_string(),
                mean(|x| x.wall),
                mean(|x| x.cpu),
                mean(|x| x.runqueue),
                mean(|x| x.blocked),
            ]
        })
        .collect();
    Table {
        title: "What the slowest drains (at or above p99) waited on, mean µs: on a CPU (work, spinning), in the run queue (preempted, or yielded: owner drain yields while it waits for the owners, remote drain only while a list-lock holder is off its CPU), blocked (asleep on a lock)".into(),
        header: ["variant", "drains", "wall", "on CPU", "run queue", "blocked"]
            .iter()
            .map(|h| h.to_string())
            .collect(),
        rows,
    }
}

impl Experiment for DrainExp {
    fn name(&self) -> &'static str {
        "drain"
    }

    fn about(&self) -> &'static str {
        "seed 004: remote drain vs owner drain while owners process requests of the workload's own sizes"
    }

    fn takes_nodes(&self) -> bool {
        true
    }

    fn run(&self, opts: &LabOpts, progress: Progress<'_>) -> Result<ExperimentResult, LabError> {
        let workers = opts.threads_or(2.max(opts.nodes), 1024, self.name())?;
        let nodes = opts.nodes_for(workers, self.name())?;
        let iterations = opts.iterations_or(2, 3, self.name())?;
        let plan = plan(opts, workers, nodes)?;
        let variants = opts.pick(&VARIANTS, |v| v.0, self.name())?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let total = (iterations * variants.len()) as u64;
        let mut done = 0;
        progress(0, total);
        let mut samples = Vec::new();
        let mut splits: Vec<Vec<clock::Split>> = vec![Vec::new(); variants.len()];
        let mut schedstat = true;
        for it in 0..iterations {
            let seed = opts.seed ^ (it as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            for (vi, (name, mode)) in variants.iter().enumerate() {
                let out = run_once(plan, *mode, seed)?;
                let hs = probe::probe(*mode, workers, 256, nodes)?;
                schedstat &= out.schedstat;
                samples.extend(timed_samples(name, (it, seed), &out, &hs, nodes));
                splits[vi].extend_from_slice(&out.drains);
                done += 1;
                progress(done, total);
            }
        }
        samples.extend(sim_samples(&variants, plan, iterations, opts.seed));
        Ok(ExperimentResult {
            name: self.name().into(),
            seed: "004_d6fe163515c3f354".into(),
            change: "mm/page_alloc: remotely drain per-cpu lists".into(),
            baseline: variants[0].0.into(),
            variants: variants.iter().map(|v| v.0.to_string()).collect(),
            metrics: metrics(nodes),
            samples,
            tables: vec![tail_table(&variants, &splits)],
            plots: vec![latency_plot(&variants, &splits)],
            expected_shape: "Remote drain asks no owner and no longer waits for busy owners: \
                drain_all is bounded by its own work (microseconds) where owner drain waits on \
                the slowest owner's current work (the seed: avg 487 µs, worst 166 ms in \
                Minchan Kim's traces, 'perfectly removed'); workers' throughput does not \
                regress (the seed: about 5% better)."
                .into(),
            config: config(plan, iterations, opts.seed, schedstat),
            // The drainer is a thread too.
            oversubscribed: workers + 1 > cores,
        })
    }
}

/// The timed runs' plan: the zone (`--zone-pages`, 4096 pages at least for each worker of
/// the node with the most, on that node's zone), the drain interval and the rounds.
fn plan(opts: &LabOpts, workers: usize, nodes: usize) -> Result<Plan, LabError> {
    let pages = opts.zone_pages.unwrap_or(1 << 16);
    // The workers of the node with the most, on that node's zone.
    let local = workers.div_ceil(nodes);
    if pages < (local as u64) * 4096 {
        return Err(LabError(format!(
            "drain: zone of {pages} pages is too small for {local} workers (need 4096 pages each)"
        )));
    }
    Ok(Plan {
        pages,
        workers,
        interval: std::time::Duration::from_millis(if opts.quick { 1 } else { 10 }),
        // 100 drains: the p99 is still the second longest (as with 150), and a round of
        // three iterations fits twice under the 20 s time cap at a load of 6 on 2 cores,
        // so the timing claims get six pairs there instead of three.
        rounds: if opts.quick { 40 } else { 100 },
        nodes,
    })
}

/// The experiment's metrics; pagesets per drain on more than one node.
fn metrics(nodes: usize) -> Vec<MetricDef> {
    let mut metrics = vec![
        lat(M_AVG),
        lat(M_P50),
        lat(M_P99),
        lat(M_MAX),
        lat(M_P99_OURS),
        count(M_PREEMPTED, "%"),
        count(M_HANDSHAKES, "owners"),
        count(M_SIM_MAX, "steps"),
        count(M_SIM_AVG, "steps"),
        MetricDef {
            name: M_OPS.into(),
            unit: "ops/s".into(),
            kind: MetricKind::Rate,
        },
        lat(M_STALL),
    ];
    if nodes > 1 {
        metrics.push(count(M_PAGESETS, "pagesets"));
    }
    metrics
}

/// One timed run's samples (variant `name`, iteration `it` on `seed`): its drains' latency
/// figures, the workers' throughput and longest stall, and the probe's handshakes (and
/// pagesets, on more than one node).
fn timed_samples<'a>(
    name: &'a str,
    (it, seed): (usize, u64),
    out: &run::RunOut,
    hs: &probe::Handshakes,
    nodes: usize,
) -> impl Iterator<Item = Sample> + 'a {
    let d: Vec<u64> = out.drains.iter().map(|s| s.wall).collect();
    let ours: Vec<u64> = out.drains.iter().map(|s| s.wall - s.runqueue).collect();
    let avg = d.iter().sum::<u64>() as f64 / d.len().max(1) as f64;
    let preempted =
        out.drains.iter().filter(|s| s.runqueue > 0).count() as f64 * 100.0 / d.len().max(1) as f64;
    [
        (M_AVG, avg),
        (M_P50, nearest_rank(&d, 0.5) as f64),
        (M_P99, nearest_rank(&d, 0.99) as f64),
        (M_MAX, d.iter().copied().max().unwrap_or(0) as f64),
        (M_P99_OURS, nearest_rank(&ours, 0.99) as f64),
        (M_PREEMPTED, preempted),
        (M_HANDSHAKES, hs.owner_served as f64),
        (M_OPS, out.ops as f64 / out.secs.max(1e-9)),
        (M_STALL, out.stall_ns as f64),
    ]
    .into_iter()
    .chain((nodes > 1).then_some((M_PAGESETS, hs.pagesets as f64)))
    .map(move |(m, v)| Sample {
        variant: name.into(),
        metric: m.into(),
        repetition: it,
        seed: Some(seed),
        value: v,
    })
}

/// The simulated clock's samples: cheap and exact, on more seeds than the timed run
/// (repetition k on the timed run's seed k).
fn sim_samples(
    variants: &[(&str, DrainMode)],
    plan: Plan,
    iterations: usize,
    seed: u64,
) -> Vec<Sample> {
    let mut samples = Vec::new();
    for k in 0..SIM_SEEDS.max(iterations) {
        let seed = seed ^ (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for (name, mode) in variants {
            let steps = sim::drain_steps(*mode, plan.workers, plan.nodes as u64, plan.rounds, seed);
            let avg = steps.iter().sum::<u64>() as f64 / steps.len().max(1) as f64;
            let max = steps.iter().copied().max().unwrap_or(0) as f64;
            for (m, v) in [(M_SIM_MAX, max), (M_SIM_AVG, avg)] {
                samples.push(Sample {
                    variant: (*name).into(),
                    metric: m.into(),
                    repetition: k,
                    seed: Some(seed),
                    value: v,
                });
            }
        }
    }
    samples
}

/// The CDF of each variant's drain latency, and of it without the run-queue wait.
fn latency_plot(variants: &[(&str, DrainMode)], splits: &[Vec<clock::Split>]) -> Plot {
    let cdf = |f: fn(&clock::Split) -> u64, what: &str| -> Vec<Series> {
        variants
            .iter()
            .zip(splits)
            .map(|((name, _), s)| Series {
                name: format!("{name}{what}"),
                points: thin_us(&s.iter().map(f).collect::<Vec<_>>(), 400),
            })
            .collect()
    };
    let mut series = cdf(|s| s.wall, "");
    series.extend(cdf(|s| s.wall - s.runqueue, ", run-queue wait removed"));
    Plot {
        file_stem: "drain-latency".into(),
        title: "drain_all latency (CDF; log x)".into(),
        x_label: "latency (µs)".into(),
        y_label: "fraction of drains".into(),
        kind: PlotKind::Cdf,
        series,
    }
}

/// The experiment's configuration: the plan, iterations and seed, whether schedstat split
/// the drains' time.
fn config(plan: Plan, iterations: usize, seed: u64, schedstat: bool) -> serde_json::Value {
    json!({
        "zone_pages": plan.pages,
        "workers": plan.workers,
        "request_pages": "Pareto alpha 1.1 on 1..=1024 pages, drawn from the seed",
        "processing": "a checksum over 4 KiB of data per page, no allocator call",
        "drain_interval_us": plan.interval.as_micros() as u64,
        "rounds": plan.rounds,
        "iterations": iterations,
        "locking": "spinlock",
        "seed": seed,
        "schedstat": schedstat,
        "deterministic_metrics": [M_HANDSHAKES, M_SIM_MAX, M_SIM_AVG],
        "nodes": plan.nodes,
        "numa": numa_config(plan.nodes, plan.workers),
        "simulated_clock": format!("{SIM_SEEDS} seeds, a drain every {} steps, {} drains; a step is one allocator call or one page of processing", sim::INTERVAL, plan.rounds),
    })
}
