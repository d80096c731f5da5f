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
//!
//! Both variants run on the same seeds (iteration `i` uses seed `--seed + i` for both), and
//! everything but the attempt latency is deterministic for a seed, so the comparison is
//! paired and exact: the report gets, per seed, both variants' index and their difference,
//! and a difference plot (on − off per tick, averaged over the seeds).

mod stress;
#[cfg(test)]
mod tests;

use serde_json::json;

use super::{
    Experiment, ExperimentResult, LabError, LabOpts, MetricDef, MetricKind, Plot, PlotKind,
    Progress, Sample, Series, Table,
};
use stress::{run_once, Params, RunOut};

/// The `tail-merge` experiment (seed 003): tail placement of likely-merging buddies off vs on.
pub struct TailMerge;

const SEED_NAME: &str = "003_6156cd1fe50dd7c6";
const PROBE_ORDER: u8 = 9;
const VARIANTS: [(&str, bool); 2] = [("tail_merge=off", false), ("tail_merge=on", true)];
/// Shape of the Pareto lifetimes (smaller: heavier tail, more long-lived blocks).
const LIFETIME_ALPHA: f64 = 0.7;
/// Order-9 successes of the bursts under load, % of attempts (deterministic).
pub const M_SUCCESS: &str = "order-9 success under load";
/// Order-9 blocks allocated at rest, after the churn (deterministic).
pub const M_REST: &str = "order-9 successes at rest";
/// The same on a zone of `REST_ZONE_PAGES`, where one block is under 1% of the count
/// (deterministic).
pub const M_REST_BIG: &str = "order-9 successes at rest, 4 GiB zone";
/// The at-rest zone: 1 Mi pages (4 GiB, 2048 order-9 blocks). With the default zone's 128
/// blocks some 4 are free at rest, one block a quarter of the count; here some 170 are.
const REST_ZONE_PAGES: u64 = 1 << 20;
/// Seeds of the at-rest runs (the main runs' first ones).
const REST_SEEDS: usize = 6;
/// Median wall time of one order-9 attempt under load (timing; the median, so that the few
/// attempts a busy machine preempts do not set it).
pub const M_LATENCY: &str = "order-9 attempt latency p50";
/// The order-9 unusable free space index, mean over the run (deterministic).
pub const M_UNUSABLE: &str = "unusable index order-9";
/// Orders 0..=10 (the zone's `MAX_PAGE_ORDER` is the default 10).
const ORDERS: usize = 11;
/// Orders drawn in the per-order plots (order 0 is always 0; every order is in the table).
const PLOTTED_ORDERS: [usize; 6] = [1, 3, 5, 7, 9, 10];

fn params(opts: &LabOpts) -> Result<Params, LabError> {
    let zone_pages = opts
        .zone_pages
        .unwrap_or(if opts.quick { 1 << 15 } else { 1 << 16 });
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
    let ticks = if opts.quick { 80 } else { 240 };
    // Quick: 20 ticks per occupancy cycle; otherwise 60.
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

/// The at-rest runs: the same churn on a zone of `REST_ZONE_PAGES` (`--quick`: the quick
/// zone), over one occupancy cycle, on the first [`REST_SEEDS`] seeds; per seed, each
/// variant's order-9 successes at rest. Deterministic, so the seeds run side by side.
fn rest_runs(
    opts: &LabOpts,
    p: Params,
    variants: &[(&str, bool)],
) -> Result<Vec<(u64, Vec<u64>)>, LabError> {
    let rest = Params {
        zone_pages: if opts.quick {
            p.zone_pages
        } else {
            REST_ZONE_PAGES
        },
        ticks: p.period,
        long_after: p.long_after,
        period: p.period,
        burst: (if opts.quick {
            p.zone_pages
        } else {
            REST_ZONE_PAGES
        } / 20
            / 512)
            .max(1),
        ..p
    };
    let seeds: Vec<u64> = (0..REST_SEEDS as u64)
        .map(|i| opts.seed.wrapping_add(i))
        .collect();
    let jobs: Vec<(u64, bool)> = seeds
        .iter()
        .flat_map(|&s| variants.iter().map(move |v| (s, v.1)))
        .collect();
    let out = super::in_parallel(jobs.len(), |i| {
        run_once(rest, jobs[i].1, jobs[i].0, None, &mut || {}).map(|r| r.rest_successes)
    });
    let mut per_seed = Vec::new();
    for (&seed, chunk) in seeds.iter().zip(out.chunks(variants.len())) {
        let counts: Result<Vec<u64>, LabError> = chunk
            .iter()
            .map(|r| r.as_ref().map(|&n| n).map_err(|e| LabError(e.0.clone())))
            .collect();
        per_seed.push((seed, counts?));
    }
    Ok(per_seed)
}

/// The at-rest runs per seed, in blocks, with the differences.
fn rest_table(variants: &[(&str, bool)], runs: &[(u64, Vec<u64>)], zone_pages: u64) -> Table {
    let mut header = vec!["seed".to_string()];
    header.extend(variants.iter().map(|v| v.0.to_string()));
    header.push("on − off (blocks)".into());
    let rows = runs
        .iter()
        .map(|(seed, counts)| {
            let mut row = vec![seed.to_string()];
            row.extend(counts.iter().map(|c| c.to_string()));
            row.push(match counts[..] {
                [off, on] => format!("{:+}", on as i64 - off as i64),
                _ => "-".into(),
            });
            row
        })
        .collect();
    Table {
        title: format!(
            "Order-9 blocks allocated at rest on a zone of {zone_pages} pages ({} order-9 blocks), per seed (exact, deterministic)",
            zone_pages / 512
        ),
        header,
        rows,
    }
}

impl Experiment for TailMerge {
    fn name(&self) -> &'static str {
        "tail-merge"
    }

    fn about(&self) -> &'static str {
        "seed 003: free likely-merging buddies to the free-list tail; order-9 success and unusable index under churn"
    }

    fn run(&self, opts: &LabOpts, progress: Progress<'_>) -> Result<ExperimentResult, LabError> {
        opts.one_node_only(self.name())?;
        let p = params(opts)?;
        // At least 10 seeds, so that the paired comparison has something to stand on.
        let iterations = opts.iterations_or(10, 12, self.name())?;
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
        // Per seed: (seed, per variant (unusable mean, success %, rest successes)).
        let mut paired: Vec<PairedSeed> = Vec::new();
        // Iterations outermost, so drifts of the machine (frequency, caches) spread over both
        // variants; each iteration runs both on the same seed.
        for i in 0..iterations {
            let seed = opts.seed.wrapping_add(i as u64);
            let mut per_variant = Vec::new();
            for (k, (variant, on)) in variants.iter().copied().enumerate() {
                let trace = opts.trace_path(self.name(), variant, i);
                let r: RunOut = run_once(p, on, seed, trace.as_deref(), &mut || {
                    done += 1;
                    progress(done, total);
                })?;
                per_variant.push(add_run(
                    (k, variant, i, seed),
                    &r,
                    iterations,
                    (&mut samples, &mut curves, &mut totals),
                ));
            }
            paired.push((seed, per_variant));
        }
        let (order_plots, order_rows) =
            variant_outputs(&variants, &curves, &totals, (&mut series, &mut rows));

        // The huge-page count at rest on a zone where one block is under 1% of it.
        let rest = rest_runs(opts, p, &variants)?;
        let rest_zone = if opts.quick {
            p.zone_pages
        } else {
            REST_ZONE_PAGES
        };
        samples.extend(rest_samples(&rest, &variants));
        // The paired comparison and the difference plot, when both variants ran.
        let mut paired_tables = Vec::new();
        let mut diff_plots = Vec::new();
        if variants.len() == 2 {
            paired_tables.push(paired_table(&paired));
            diff_plots.push(diff_plot(&curves, iterations));
        }

        Ok(ExperimentResult {
            name: self.name().to_string(),
            seed: SEED_NAME.to_string(),
            change: "page allocator: add buddies that are about to merge to the tail of the free lists (buddy_merge_likely)".to_string(),
            baseline: variants[0].0.to_string(),
            variants: variants.iter().map(|(v, _)| v.to_string()).collect(),
            metrics: metrics(),
            samples,
            tables: [vec![Table {
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
            }, rest_table(&variants, &rest, rest_zone)], paired_tables].concat(),
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
            .chain(diff_plots)
            .chain(order_plots)
            .collect(),
            expected_shape: "Tail placement keeps likely-merging buddies free longer, so the unusable free space index is slightly lower throughout the run (the seed: 'slightly lower (lower is better) throughout the lifetime of the system'), the same number of huge pages is allocated, and a huge page is found slightly sooner. Paired over seeds, the difference is small but one-sided.".to_string(),
            config: config(p, iterations, opts.seed, rest_zone),
            oversubscribed: false,
        })
    }
}

/// The huge pages at rest of each seed's run per variant, as samples.
fn rest_samples<'a>(
    rest: &'a [(u64, Vec<u64>)],
    variants: &'a [(&'static str, bool)],
) -> impl Iterator<Item = Sample> + 'a {
    rest.iter()
        .enumerate()
        .flat_map(move |(k, (seed, counts))| {
            variants
                .iter()
                .zip(counts)
                .map(move |((variant, _), &n)| Sample {
                    variant: variant.to_string(),
                    metric: M_REST_BIG.to_string(),
                    repetition: k,
                    seed: Some(*seed),
                    value: n as f64,
                })
        })
}

/// What the runs add up to: the samples, per variant the mean unusable index per tick and
/// order (`curves[variant][tick][order]`), and per variant the churn totals (allocations,
/// failures, merges, tail placements).
type Tally<'a> = (
    &'a mut Vec<Sample>,
    &'a mut [Vec<[f64; ORDERS]>],
    &'a mut [[u64; 4]],
);

/// One run's samples, curves and churn totals added to the experiment's (variant `k`, named
/// `variant`, iteration `i` on `seed`); its order-9 unusable mean, success % and passes at rest.
fn add_run(
    (k, variant, i, seed): (usize, &str, usize, u64),
    r: &RunOut,
    iterations: usize,
    (samples, curves, totals): Tally<'_>,
) -> (f64, f64, u64) {
    let unusable = r.unusable_mean();
    for (metric, value) in [
        (M_SUCCESS, r.success_pct()),
        (M_REST, r.rest_successes as f64),
        (M_LATENCY, r.latency_ns()),
        (M_UNUSABLE, unusable),
    ] {
        samples.push(Sample {
            variant: variant.to_string(),
            metric: metric.to_string(),
            repetition: i,
            seed: Some(seed),
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
    (unusable, r.success_pct(), r.rest_successes)
}

/// Per variant: its order-9 curve into `series` and its churn totals into `rows`; the plots of
/// its unusable index per order and the row of their means, returned.
fn variant_outputs(
    variants: &[(&'static str, bool)],
    curves: &[Vec<[f64; ORDERS]>],
    totals: &[[u64; 4]],
    (series, rows): (&mut Vec<Series>, &mut Vec<Vec<String>>),
) -> (Vec<Plot>, Vec<Vec<String>>) {
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
    (order_plots, order_rows)
}

/// The order-9 unusable index of `tail_merge=on` less `off` per tick (`curves` of both
/// variants, in that order), with its mean over the run.
fn diff_plot(curves: &[Vec<[f64; ORDERS]>], iterations: usize) -> Plot {
    let diff: Vec<(f64, f64)> = curves[1]
        .iter()
        .zip(&curves[0])
        .enumerate()
        .map(|(t, (on, off))| {
            let o = PROBE_ORDER as usize;
            (t as f64, on[o] - off[o])
        })
        .collect();
    let mean = diff.iter().map(|d| d.1).sum::<f64>() / diff.len().max(1) as f64;
    Plot {
        file_stem: "tail-merge-unusable-diff".to_string(),
        title: format!(
            "Unusable index order 9: tail_merge=on − off per tick (mean of {iterations} paired seeds; below 0: tail placement better)"
        ),
        x_label: "tick".to_string(),
        y_label: "difference (percentage points)".to_string(),
        kind: PlotKind::Lines,
        series: vec![
            Series {
                name: "on − off".to_string(),
                points: diff.clone(),
            },
            Series {
                name: format!("mean over the run ({mean:+.3})"),
                points: diff.iter().map(|d| (d.0, mean)).collect(),
            },
        ],
    }
}

/// The experiment's metrics, their units and directions.
fn metrics() -> Vec<MetricDef> {
    vec![
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
            name: M_REST_BIG.to_string(),
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
    ]
}

/// The run's configuration, for `results.json`.
fn config(p: Params, iterations: usize, seed: u64, rest_zone: u64) -> serde_json::Value {
    json!({
        "zone_pages": p.zone_pages,
        "simulated_cpus": p.cpus,
        "ticks": p.ticks,
        "iterations": iterations,
        "seed": seed,
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
        "paired": "iteration i runs both variants on seed --seed + i; samples are in iteration order",
        "deterministic_metrics": [M_SUCCESS, M_REST, M_REST_BIG, M_UNUSABLE],
        "rest_zone_pages": rest_zone,
        "rest_runs": format!("{REST_SEEDS} seeds (--seed + i), {} ticks (one occupancy cycle), run side by side", p.period),
        "timing_metrics": [M_LATENCY],
    })
}

/// One seed's runs: the seed, and per variant (order-9 unusable index mean, success %, passes
/// at rest).
type PairedSeed = (u64, Vec<(f64, f64, u64)>);

/// Per seed: each variant's order-9 unusable index, success rate and passes at rest, and the
/// differences on − off; a last row counts the seeds where tail placement was better.
fn paired_table(paired: &[PairedSeed]) -> Table {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let (mut better, mut worse, mut sum) = (0, 0, 0.0);
    for (seed, v) in paired {
        let [(u_off, s_off, r_off), (u_on, s_on, r_on)] = v[..] else {
            continue;
        };
        let d = u_on - u_off;
        sum += d;
        if d < 0.0 {
            better += 1;
        } else if d > 0.0 {
            worse += 1;
        }
        rows.push(vec![
            seed.to_string(),
            format!("{u_off:.3}"),
            format!("{u_on:.3}"),
            format!("{d:+.3}"),
            format!("{s_off:.1}"),
            format!("{s_on:.1}"),
            format!("{:+.1}", s_on - s_off),
            format!("{:+}", r_on as i64 - r_off as i64),
        ]);
    }
    let n = rows.len();
    rows.push(vec![
        format!("{n} seeds"),
        String::new(),
        String::new(),
        format!("{:+.3} mean", sum / n.max(1) as f64),
        String::new(),
        String::new(),
        String::new(),
        format!(
            "on lower in {better}, higher in {worse}, equal in {}",
            n - better - worse
        ),
    ]);
    Table {
        title: "Paired by seed (both variants on the same seed; exact, deterministic): order-9 unusable index (%), success under load (%), passes at rest".to_string(),
        header: [
            "seed",
            "unusable off",
            "unusable on",
            "on − off",
            "success off",
            "success on",
            "on − off",
            "rest on − off",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows,
    }
}
