//! The replay report's plots: each variant's unusable free space index over the trace, with
//! the kernel's at its snapshots, and the refill and drain pages per CPU.

use super::tables::per_cpu;
use crate::report::{Plot, PlotKind, Series};
use crate::trace::replay::tally;
use crate::trace::replay::{ReplayRun, FRAG_ORDERS};

/// Every plot of the report, in order.
pub(super) fn plots(run: &ReplayRun) -> Vec<Plot> {
    let mut plots = unusable_plots(run);
    plots.extend(per_cpu_plots(run));
    plots
}

/// The unusable free space index per [`FRAG_ORDERS`] over the trace, one series per variant,
/// and the kernel's where the snapshots give it: at the trace's start and end.
fn unusable_plots(run: &ReplayRun) -> Vec<Plot> {
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
                name: "kernel (its /proc snapshots)".to_owned(),
                points,
            });
        }
    }
    plots
}

/// Refill and drain pages per CPU, the kernel's as the reference series.
fn per_cpu_plots(run: &ReplayRun) -> Vec<Plot> {
    let cpus = run.geo.cpus;
    let kinds: [(&str, tally::Count); 2] =
        [("refill", |t| t.refill_pages), ("drain", |t| t.drain_pages)];
    kinds
        .into_iter()
        .map(|(what, f)| {
            let series_of = |name: String, g: &tally::Grid| Series {
                name,
                points: per_cpu(g, f)
                    .iter()
                    .enumerate()
                    .map(|(c, &v)| (c as f64, v as f64))
                    .collect(),
            };
            let mut series = vec![series_of(
                "kernel (from the trace)".to_owned(),
                &run.kernel.grid,
            )];
            series.extend(
                run.replayers
                    .iter()
                    .map(|r| series_of(r.variant.name.clone(), &r.ours)),
            );
            Plot {
                file_stem: format!("{what}-pages-per-cpu"),
                title: format!("PCP {what} pages per CPU ({cpus} CPUs): the kernel's and ours"),
                x_label: "CPU".to_owned(),
                y_label: format!("{what} pages"),
                kind: PlotKind::Bars,
                series,
            }
        })
        .collect()
}
