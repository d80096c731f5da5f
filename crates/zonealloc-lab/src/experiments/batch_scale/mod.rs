//! `batch-scale`: seed 001 (`001_3feb33a812804082`), "mm, pcp: add PCP_BATCH_SCALE_MAX".
//!
//! Kernel mechanism: the per-CPU lists are refilled from the buddy (`rmqueue_bulk`) and
//! drained to it (`free_pcppages_bulk`) in batches of `pcp->batch` pages, each under the zone
//! lock; since 6.7 the batch scales up for long runs of allocations (`alloc_factor`) and frees
//! (`free_count`) to at most `batch << CONFIG_PCP_BATCH_SCALE_MAX`. The seed measured, with
//! `high = 2 * batch` and scaling off, how the zone-lock hold time grows with the batch while
//! page_fault1 throughput barely moves, and capped the scale at 5. The knob is
//! [`zonealloc::PcpConfig::batch_scale_max`].
//!
//! The workload is page_fault1-like: each worker, on its own CPU's lists (a
//! [`zonealloc::CpuHandle`]), allocates 32768 order-0 pages and frees them all, repeatedly.

use zonealloc::PcpConfig;

use super::{
    Experiment, ExperimentResult, LabError, LabOpts, MetricDef, MetricKind, Plot, PlotKind,
    Progress, Sample, Series, Table,
};
use conclusion::{conclusion_table, largest_cap_under};

mod conclusion;
pub mod icount;
mod result;
mod run;

use run::{run_once, Params};

/// The `batch-scale` experiment (seed 001): zone-lock hold time and throughput against the
/// PCP batch size, and the scale cap 0 vs 5 on the default zone.
pub struct BatchScale;

const SEED_NAME: &str = "001_3feb33a812804082";
/// The seed's batch sizes (its debug setup's 63..4095) and one step beyond, so that the
/// largest cap under 100 µs is found rather than cut off by the sweep's end; `high` is
/// 2 x batch throughout (16382 per CPU at 8191).
const BATCHES: [u32; 8] = [63, 127, 255, 511, 1023, 2047, 4095, 8191];
/// The batches whose instructions per page are counted (the seed's throughput claim).
const COUNTED: [u32; 2] = [63, 2047];
/// Pages allocated and freed per second (timing).
pub const M_RATE: &str = "pages/s";
/// Mean zone-lock hold time of a PCP refill, `rmqueue_bulk` (timing).
pub const M_REFILL_AVG: &str = "refill hold avg";
/// 99th percentile of the refill hold time (timing).
pub const M_REFILL_P99: &str = "refill hold p99";
/// Median refill hold time (timing; see [`M_FREE_P50`]).
pub const M_REFILL_P50: &str = "refill hold p50";
/// Mean zone-lock hold time of a PCP bulk free, `free_pcppages_bulk` (timing).
pub const M_FREE_AVG: &str = "bulk free hold avg";
/// 99th percentile of the bulk-free hold time (timing).
pub const M_FREE_P99: &str = "bulk free hold p99";
/// Median bulk-free hold time (timing): the typical hold, which the few holds that a busy
/// machine preempts (milliseconds each; the kernel holds the zone lock with preemption off)
/// do not move, unlike the mean.
pub const M_FREE_P50: &str = "bulk free hold p50";
/// Pages a refill brings in per zone-lock acquisition: the work done under the lock, the
/// deterministic proxy of the refill hold time (exact with one worker).
pub const M_REFILL_PAGES: &str = "pages per refill";
/// Pages refilled or drained per zone-lock acquisition, over the whole run: the deterministic
/// proxy of the hold time (exact with one worker).
pub const M_LOCK_PAGES: &str = "pages per zone-lock hold";
/// The seed's conclusion drawn from our numbers: the largest `batch_scale_max` whose swept
/// batch (63 << cap: 63, 127, .., 8191) keeps the typical (median) bulk-free hold under
/// 100 µs, as the verdict judges it; -1 if none. One sample per iteration, on the baseline
/// variant only.
pub const M_CAP: &str = "largest cap under 100 µs";
/// Instructions per page (one allocation and one free) under callgrind, for the batches of
/// `COUNTED` (deterministic for a build).
pub const M_INSNS: &str = "instructions/page";
/// Pages per 1000 instructions: [`M_INSNS`] as a throughput, the deterministic proxy of the
/// seed's page/s.
pub const M_PAGES_PER_KINSN: &str = "pages per 1000 instructions";
/// With several nodes: the most CPUs that took one zone's lock for their lists, over the
/// zones (deterministic). Node-local allocation gives each node's zone lock to that node's
/// CPUs only, where one node's lock serves every CPU.
pub const M_LOCK_SHARERS: &str = "CPUs per zone lock";
/// The seed's latency bound.
const LIMIT_NS: f64 = 100_000.0;

/// One variant: its name and its per-CPU list settings (CPU count filled in later).
#[derive(Clone)]
struct Spec {
    name: String,
    /// The swept batch, for the plot (None: the kernel-computed default).
    batch: Option<u32>,
    pcp: PcpConfig,
}

fn specs() -> Vec<Spec> {
    let mut v: Vec<Spec> = BATCHES
        .iter()
        .map(|&b| Spec {
            name: format!("batch={b}"),
            batch: Some(b),
            pcp: icount::pcp_for(b),
        })
        .collect();
    for scale in 0u8..=5 {
        v.push(Spec {
            name: format!("default scale={scale}"),
            batch: None,
            pcp: PcpConfig::new()
                .with_batch_scale_max(scale)
                .with_thp_order(None),
        });
    }
    v
}

fn params(opts: &LabOpts) -> Result<Params, LabError> {
    // One worker per node by default.
    let threads = opts.threads.unwrap_or(opts.nodes.max(1));
    if !(1..=256).contains(&threads) {
        return Err(LabError(format!(
            "batch-scale: {threads} threads: must be 1..=256"
        )));
    }
    let nodes = opts.nodes_for(threads, "batch-scale")?;
    // The same with --quick (fewer rounds): enough for batch 8191 (high 16382) to refill
    // and drain within a round.
    let pages = 32768;
    let rounds = if opts.quick { 2 } else { 64 };
    // Every worker's pages, plus room for the per-CPU lists (high up to 2 x 8191 per CPU):
    // in the zone, or in each node's zone for the workers of the node with the most.
    let local = threads.div_ceil(nodes);
    let needed = (local * pages) as u64 + local as u64 * 16384 + 4096;
    let zone_pages = match opts.zone_pages {
        Some(z) if z < needed => {
            return Err(LabError(format!(
                "batch-scale: zone of {z} pages is too small for {threads} workers x {pages} pages (needs {needed})"
            )))
        }
        Some(z) if z > 1 << 26 => {
            return Err(LabError(format!(
                "batch-scale: zone of {z} pages: at most 67108864"
            )))
        }
        Some(z) => z,
        // 1 GiB by default, where the kernel's own batch is 63 (zone_batchsize).
        None if opts.quick => needed,
        None => needed.max(1 << 18),
    };
    Ok(Params {
        threads,
        pages,
        rounds,
        zone_pages,
        nodes,
    })
}

impl Experiment for BatchScale {
    fn name(&self) -> &'static str {
        "batch-scale"
    }

    fn about(&self) -> &'static str {
        "seed 001: page_fault1-like alloc/free; zone-lock hold time and pages/s against PCP batch and the scale cap (0..=5)"
    }

    fn takes_nodes(&self) -> bool {
        true
    }

    fn run(&self, opts: &LabOpts, progress: Progress<'_>) -> Result<ExperimentResult, LabError> {
        let p = params(opts)?;
        let iterations = opts.iterations_or(1, 5, self.name())?;
        let specs = opts.pick(&specs(), |s| s.name.as_str(), self.name())?;
        let Measured {
            mut samples,
            means,
            effective,
        } = measure(p, &specs, iterations, progress)?;
        // Per swept batch: mean free p50, free p99, refill p99.
        let holds: Vec<(u32, [f64; 3])> = specs
            .iter()
            .zip(&means)
            .filter_map(|(s, v)| s.batch.map(|b| (b, [v[5], v[3], v[2]])))
            .collect();
        let conclusion = conclusion_table(&holds, LIMIT_NS);
        let counted = count_instructions(opts, &specs, &mut samples);
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        Ok(ExperimentResult {
            name: self.name().to_string(),
            seed: SEED_NAME.to_string(),
            change: "mm, pcp: cap the PCP batch scaling at CONFIG_PCP_BATCH_SCALE_MAX (default 5) to bound zone-lock hold time".to_string(),
            baseline: specs[0].name.clone(),
            variants: specs.iter().map(|s| s.name.clone()).collect(),
            metrics: result::metrics(p.nodes > 1, counted.is_ok()),
            samples,
            tables: vec![conclusion, result::effective_table(&specs, &effective)],
            plots: result::plots(&specs, &means),
            expected_shape: "batch=63..2047 (high = 2 x batch, scaling off, the seed's debug setup): zone-lock hold time for refill and bulk free grows about linearly with batch (about 2x per step) while pages/s gains little. default scale=0..5 (the kernel's own batch and auto-tuned high, which for a 1 GiB zone holds a whole 32768-page round, so far fewer lock holds; CONFIG_PCP_BATCH_SCALE_MAX swept): each step of the cap lets long runs of allocations and frees move up to batch << cap pages per lock hold, so refill hold times rise with the cap and throughput may rise slightly.".to_string(),
            config: result::config(p, iterations, &specs, &effective, &counted, cores),
            oversubscribed: p.threads > cores,
        })
    }
}

/// What the timed runs gave: every sample, and per variant the means over the iterations of
/// [refill avg, free avg, refill p99, free p99, pages/s, free p50] (for the plots and the
/// conclusion table) and its effective `(batch, high)`.
struct Measured {
    samples: Vec<Sample>,
    means: Vec<[f64; 6]>,
    effective: Vec<(i32, i32)>,
}

/// Runs every variant of `specs` `iterations` times, iterations outermost, so slow drifts of
/// the machine spread over all variants. The rounds draw nothing at random: the repetitions
/// carry no seed.
fn measure(
    p: Params,
    specs: &[Spec],
    iterations: usize,
    progress: Progress<'_>,
) -> Result<Measured, LabError> {
    let total = (specs.len() * iterations) as u64;
    progress(0, total);
    let mut samples = Vec::new();
    let mut sums = vec![[0.0f64; 6]; specs.len()];
    let mut effective = vec![(0i32, 0i32); specs.len()];
    let mut done = 0u64;
    let sample = |variant: &str, metric: &str, repetition: usize, value: f64| Sample {
        variant: variant.to_string(),
        metric: metric.to_string(),
        repetition,
        seed: None,
        value,
    };
    for it in 0..iterations {
        // This iteration's median bulk-free hold per swept batch, for the conclusion.
        let mut p50_by_batch: Vec<(u32, f64)> = Vec::new();
        for (k, spec) in specs.iter().enumerate() {
            let r = run_once(p, spec.pcp)?;
            for (metric, value) in [
                (M_RATE, r.pages_per_s),
                (M_REFILL_AVG, r.refill_avg),
                (M_REFILL_P99, r.refill_p99),
                (M_FREE_AVG, r.free_avg),
                (M_FREE_P99, r.free_p99),
                (M_FREE_P50, r.free_p50),
                (M_REFILL_P50, r.refill_p50),
                (M_REFILL_PAGES, r.refill_pages),
                (M_LOCK_PAGES, r.lock_pages),
            ]
            .into_iter()
            .chain((p.nodes > 1).then_some((M_LOCK_SHARERS, r.lock_sharers as f64)))
            {
                samples.push(sample(&spec.name, metric, it, value));
            }
            for (acc, v) in sums[k].iter_mut().zip([
                r.refill_avg,
                r.free_avg,
                r.refill_p99,
                r.free_p99,
                r.pages_per_s,
                r.free_p50,
            ]) {
                *acc += v;
            }
            if let Some(b) = spec.batch {
                p50_by_batch.push((b, r.free_p50));
            }
            effective[k] = (r.batch, r.high);
            done += 1;
            progress(done, total);
        }
        if !p50_by_batch.is_empty() {
            let cap = largest_cap_under(&p50_by_batch, LIMIT_NS);
            samples.push(sample(&specs[0].name, M_CAP, it, cap));
        }
    }
    let n = iterations as f64;
    let means = sums.iter().map(|v| v.map(|x| x / n)).collect();
    Ok(Measured {
        samples,
        means,
        effective,
    })
}

/// Instructions per page of the batches in [`COUNTED`] under callgrind, as samples of
/// [`M_INSNS`] and [`M_PAGES_PER_KINSN`] (once: the count is exact); what was counted, or
/// why nothing was (no valgrind, `--quick`, the batch not in the run).
fn count_instructions(
    opts: &LabOpts,
    specs: &[Spec],
    samples: &mut Vec<Sample>,
) -> Result<String, String> {
    if opts.quick {
        return Err("not counted with --quick (callgrind takes some seconds)".into());
    }
    if let Some(why) = super::valgrind::unavailable() {
        return Err(why);
    }
    let mut counted = Vec::new();
    for b in COUNTED {
        let Some(spec) = specs.iter().find(|s| s.batch == Some(b)) else {
            continue;
        };
        let n = icount::per_page(b)?;
        counted.push(format!("batch {b}: {n:.1}"));
        for (metric, value) in [(M_INSNS, n), (M_PAGES_PER_KINSN, 1000.0 / n)] {
            samples.push(Sample {
                variant: spec.name.clone(),
                metric: metric.to_string(),
                repetition: 0,
                seed: None,
                value,
            });
        }
    }
    if counted.is_empty() {
        return Err("none of the counted batches is in this run".into());
    }
    Ok(format!("callgrind: {}", counted.join(", ")))
}

#[cfg(test)]
mod tests;
