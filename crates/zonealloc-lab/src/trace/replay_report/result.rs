//! The replay as a lab result: the metrics per variant, their definitions, and the stdout
//! summary.

use std::path::Path;

use serde_json::json;

use super::tables::{
    accounting_table, beside_table, end_state_table, fidelity_table, per_cpu, per_cpu_plots,
    per_cpu_table, reuse_table, setup_table, start_count_table, REUSE_ROWS,
};
use super::{ReplayOptions, ReplayRun};
use crate::report::{ExperimentResult, MetricDef, MetricKind, Plot, PlotKind, Sample, Series};
use crate::trace::replay::kernel::{self, KINDS};
use crate::trace::replay::FRAG_ORDERS;

const M_HIT: &str = "PCP hit rate";
const M_LOCK: &str = "zone-lock acquisitions";
const M_FAIL: &str = "allocation failures";
const M_UNUSABLE_MEAN: &str = "unusable index order-9 (mean)";
const M_UNUSABLE_END: &str = "unusable index order-9 (end)";
const M_REFILLS: &str = "PCP refill blocks";
const M_DRAINS: &str = "PCP drain blocks";
const M_EXTFRAG: &str = "extfrag fallbacks";
const M_TOP: &str = "allocations of the most reused frame";

/// The metric name of the fidelity figure of one event kind.
pub fn fidelity_metric(kind: &str) -> String {
    format!("{kind} off the kernel")
}

pub(super) fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// `ours` against `kernel` in percent, signed (`-` when the kernel has none).
pub(super) fn diff_pct(ours: u64, kernel: u64) -> String {
    if kernel == 0 {
        if ours == 0 {
            "0".to_owned()
        } else {
            "-".to_owned()
        }
    } else {
        format!(
            "{:+.1}%",
            100.0 * (ours as f64 - kernel as f64) / kernel as f64
        )
    }
}

/// The run as a lab [`ExperimentResult`] (one sample per variant and metric: a replay is
/// deterministic).
///
/// "Same frame as the kernel" is no metric: on a real trace our free lists are not the
/// kernel's, so which frame comes back says nothing. It stays in the accounting table, where
/// it means something for a replay of a trace we emitted ourselves.
pub fn to_result(run: &ReplayRun, file: &Path, opts: &ReplayOptions) -> ExperimentResult {
    let count = |higher| MetricKind::Count {
        higher_is_better: higher,
    };
    let mut defs = vec![
        (M_HIT.to_owned(), "%", count(true)),
        (M_LOCK.to_owned(), "", count(false)),
        (M_FAIL.to_owned(), "", count(false)),
        (M_UNUSABLE_MEAN.to_owned(), "%", count(false)),
        (M_UNUSABLE_END.to_owned(), "%", count(false)),
        (M_REFILLS.to_owned(), "", count(false)),
        (M_DRAINS.to_owned(), "", count(false)),
        (M_EXTFRAG.to_owned(), "", count(false)),
        (M_TOP.to_owned(), "", count(false)),
    ];
    for (kind, _) in KINDS {
        defs.push((fidelity_metric(kind), "%", count(false)));
    }
    let metrics = defs
        .into_iter()
        .map(|(name, unit, kind)| MetricDef {
            name,
            unit: unit.to_owned(),
            kind,
        })
        .collect();

    // Each variant's most reused frames, for its metric and the table: one scan of its
    // frames each.
    let reused: Vec<Vec<(u64, u32)>> = run
        .replayers
        .iter()
        .map(|r| r.most_reused(REUSE_ROWS))
        .collect();
    let mut samples = Vec::new();
    for (r, reused) in run.replayers.iter().zip(&reused) {
        let c = &r.counts;
        let (hits, misses, locks) = r.end_counts;
        // The /proc set-up's own allocations are not the trace's.
        let (sh, sm, sl) = r.setup_counts;
        let (hits, misses, locks) = (hits - sh, misses - sm, locks - sl);
        let unusable9: Vec<f64> = r
            .frag
            .iter()
            .map(|s| f64::from(s.unusable[1]) / 10.0)
            .collect();
        let mean9 = unusable9.iter().sum::<f64>() / unusable9.len().max(1) as f64;
        let mut values = vec![
            (M_HIT.to_owned(), pct(hits, hits + misses)),
            (M_LOCK.to_owned(), locks as f64),
            (M_FAIL.to_owned(), c.alloc_failures as f64),
            (M_UNUSABLE_MEAN.to_owned(), mean9),
            (
                M_UNUSABLE_END.to_owned(),
                unusable9.last().copied().unwrap_or(0.0),
            ),
            (M_REFILLS.to_owned(), r.ours.total(|t| t.refills) as f64),
            (M_DRAINS.to_owned(), r.ours.total(|t| t.drains) as f64),
            (M_EXTFRAG.to_owned(), c.extfrag as f64),
            (
                M_TOP.to_owned(),
                reused.first().map_or(0.0, |t| f64::from(t.1)),
            ),
        ];
        for (kind, f) in KINDS {
            if let Some(v) = kernel::fidelity(&r.ours, &run.kernel.grid, f) {
                values.push((fidelity_metric(kind), v));
            }
        }
        for (metric, value) in values {
            samples.push(Sample {
                variant: r.variant.name.clone(),
                metric,
                value,
            });
        }
    }

    let names: Vec<String> = run
        .replayers
        .iter()
        .map(|r| r.variant.name.clone())
        .collect();
    let mut tables = vec![
        fidelity_table(run, &names),
        accounting_table(run, &names),
        per_cpu_table(run, &names),
    ];
    tables.extend(run.replayers.iter().map(|r| beside_table(run, r)));
    if let Some(r) = run.replayers.first() {
        if !r.setup.is_empty() {
            tables.push(setup_table(r));
        }
    }
    if let Some(sc) = &run.start_counts {
        tables.push(start_count_table(sc));
    }
    for (r, ends) in run.replayers.iter().zip(&run.end_states) {
        tables.push(end_state_table(&r.variant.name, ends));
    }
    tables.push(reuse_table(run, &names, &reused));

    let x_label = if run.kernel.span_ns.is_some() {
        "trace time (s)"
    } else {
        "trace events replayed"
    };
    let mut plots: Vec<Plot> = FRAG_ORDERS
        .iter()
        .enumerate()
        .map(|(i, order)| Plot {
            file_stem: format!("unusable-order-{order}"),
            title: format!("Unusable free space index, order {order}, over the trace"),
            x_label: x_label.to_owned(),
            y_label: "unusable free space index (%)".to_owned(),
            kind: PlotKind::Lines,
            series: run
                .replayers
                .iter()
                .map(|r| Series {
                    name: r.variant.name.clone(),
                    points: r
                        .frag
                        .iter()
                        .map(|s| {
                            (
                                s.t_s.unwrap_or(s.event as f64),
                                f64::from(s.unusable[i]) / 10.0,
                            )
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    // The kernel's index where the snapshots give it: at the trace's start and end.
    let (x0, x1) = match run.kernel.span_ns {
        Some((a, b)) => (a as f64 / 1e9, b as f64 / 1e9),
        None => (0.0, run.parser.events as f64),
    };
    for (i, plot) in plots.iter_mut().enumerate() {
        let points: Vec<(f64, f64)> = [(x0, run.kernel_frag.0), (x1, run.kernel_frag.1)]
            .into_iter()
            .filter_map(|(x, v)| v.map(|v| (x, f64::from(v[i]) / 10.0)))
            .collect();
        if !points.is_empty() {
            plot.series.push(Series {
                name: "kernel (/proc snapshots, reference)".to_owned(),
                points,
            });
        }
    }
    plots.extend(per_cpu_plots(run));

    let p = &run.parser;
    let k = &run.kernel;
    ExperimentResult {
        name: "trace-replay".to_owned(),
        seed: "-".to_owned(),
        change: format!("replay of {}", file.display()),
        baseline: names.first().cloned().unwrap_or_default(),
        variants: names,
        metrics,
        samples,
        tables,
        plots,
        expected_shape: "A replay is deterministic: one sample per variant, so differences \
            are exact, not statistical. The kernel's own refills, drains, direct buddy \
            allocations and fallbacks (read from the trace) stand beside ours per zone and CPU; \
            each 'off the kernel' figure is the sum over zones and CPUs of |ours - kernel| over \
            the kernel's total. Without --proc the zones start empty of the pages the kernel \
            had in use before the trace, so frees of those are skipped and the sizes and \
            watermarks are ours, not the kernel's."
            .to_owned(),
        config: json!({
            "file": file.display().to_string(),
            "kernel": if run.preset.1 || opts.proc.is_some() {
                run.preset.0.name()
            } else {
                "mainline (the ZoneConfig defaults)"
            },
            "kernel_given": run.preset.1,
            "kernel_rules_not_modelled": run.preset.0.unmodelled(),
            "zones": run.geo.zones,
            "online": run.geo.online,
            "cpus": run.geo.cpus,
            "cpus_from": run.geo.cpus_from,
            "pcp": !opts.no_pcp,
            "decay_every_second": run.replayers.first().is_some_and(|r| r.decay),
            "inferences": run.infer,
            "migratetype_numbering": run.geo.numbering,
            "migratetype_numbering_given": opts.numbering.is_some(),
            "lines": p.lines,
            "events": p.events,
            "malformed": p.malformed,
            "replay_s": run.replay_s,
            "replay_lines_per_s": p.lines as f64 / run.replay_s.max(1e-9),
            "replay_events_per_s": p.events as f64 / run.replay_s.max(1e-9),
            "emitted": run.emitted.iter().map(|e| e.display().to_string()).collect::<Vec<_>>(),
            "proc": opts.proc.as_ref().map(|p| p.display().to_string()),
            "proc_after": opts.proc_after.as_ref().map(|p| p.display().to_string()),
            "window": {
                "from": run.window.0.from,
                "to": run.window.0.to,
                "from_found": run.window.1,
            },
            "setup": run.replayers.first().map(|r| &r.setup),
            "start_counts": run.start_counts,
            "end_state": run.replayers.iter().zip(&run.end_states).map(|(r, e)| json!({
                "variant": r.variant.name,
                "zones": e,
            })).collect::<Vec<_>>(),
            "kernel_side": {
                "per_zone_cpu": k.grid,
                "events_per_cpu": k.events_per_cpu,
                "folded_events": k.folded_events,
                "unexplained_drain_runs": k.unexplained_runs,
                "unexplained_drain_blocks": k.unexplained_blocks,
                "inferred_drains": k.inferred_drains,
                "remote_drained_blocks": k.remote_drained_blocks,
                "untraced_allocs": k.untraced_allocs,
                "untraced_allocs_early": k.untraced_early,
            },
            "counts": run.replayers.iter().map(|r| json!({
                "variant": r.variant.name,
                "counts": r.counts,
                "per_zone_cpu": r.ours,
                "fidelity_pct": KINDS.iter().map(|(kind, f)| {
                    (kind.to_string(), json!(kernel::fidelity(&r.ours, &run.kernel.grid, *f)))
                }).collect::<serde_json::Map<_, _>>(),
                "refills_per_cpu": per_cpu(&r.ours, |t| t.refills),
                "drains_per_cpu": per_cpu(&r.ours, |t| t.drains),
                "frag_samples": r.frag,
            })).collect::<Vec<_>>(),
        }),
        oversubscribed: false,
    }
}

/// The stdout summary: one row per metric, one column per variant.
pub fn summary(result: &ExperimentResult, run: &ReplayRun) -> String {
    let mut rows = vec![{
        let mut h = vec!["metric".to_owned()];
        h.extend(result.variants.iter().cloned());
        h
    }];
    for m in &result.metrics {
        let mut row = vec![if m.unit.is_empty() {
            m.name.clone()
        } else {
            format!("{} ({})", m.name, m.unit)
        }];
        for v in &result.variants {
            let value = result.samples_of(v, &m.name).next().map(|s| s.value);
            row.push(crate::report::compare::fmt_value(value));
        }
        rows.push(row);
    }
    let mut out = crate::report::table::plain(&rows, 1, true);
    let p = &run.parser;
    let zones: Vec<String> = run
        .geo
        .zones
        .iter()
        .map(|z| {
            format!(
                "{:?} {} pages from pfn {:#x}",
                z.zone_type, z.pages, z.start
            )
        })
        .collect();
    let (kernel, given) = run.preset;
    let kernel = if given || run.setup_from_proc {
        kernel.name()
    } else {
        "mainline (the ZoneConfig defaults)"
    };
    if let (Some(from), found) = (&run.window.0.from, run.window.1) {
        out.push_str(&format!(
            "\nwindow: after '{from}'{} to '{}'\n",
            if found == Some(true) {
                ""
            } else {
                " (not found in the trace's first 4 MiB: from the start)"
            },
            run.window.0.to.as_deref().unwrap_or("the end"),
        ));
    }
    for (r, ends) in run.replayers.iter().zip(&run.end_states) {
        for e in ends {
            if let Some(v) = e.free_blocks_off_pct {
                out.push_str(&format!(
                    "end state ({}), {}: free blocks per order {v:.1}% off the kernel's, PCP \
                     pages {} vs {}\n",
                    r.variant.name, e.zone, e.pcp.1, e.pcp.0
                ));
            }
        }
    }
    out.push_str(&format!(
        "\nkernel rules: {}{}; zones: {} (memory: {:?}), {} CPUs (from {}), migratetypes {:?}\n\
         kernel: {} refill and {} drain events, {} drain runs without a free before them \
         (replayed as {} drains)\n\
         replayed {} events ({} lines, {} malformed) under {} variant(s) in one pass of \
         {:.3} s: {:.2} M lines/s, {:.2} M events/s\n",
        kernel,
        if given {
            ""
        } else if run.setup_from_proc {
            " (from --proc's zoneinfo)"
        } else {
            " (default; --kernel to choose)"
        },
        zones.join(", "),
        run.geo.online,
        run.geo.cpus,
        run.geo.cpus_from,
        run.geo.numbering,
        run.kernel.grid.total(|t| t.refills),
        run.kernel.grid.total(|t| t.drains),
        run.kernel.unexplained_runs,
        run.kernel.inferred_drains,
        p.events,
        p.lines,
        p.malformed,
        run.replayers.len(),
        run.replay_s,
        p.lines as f64 / run.replay_s.max(1e-9) / 1e6,
        p.events as f64 / run.replay_s.max(1e-9) / 1e6,
    ));
    out
}
