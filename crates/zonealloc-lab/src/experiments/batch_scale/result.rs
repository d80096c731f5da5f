//! The pieces of `batch-scale`'s result that its runs do not measure: the metrics' kinds and
//! units, the effective-settings table, the plots and the configuration.

use serde_json::{json, Value};

use super::run::{numa_config, Params};
use super::{
    MetricDef, MetricKind, Plot, PlotKind, Series, Spec, Table, LIMIT_NS, M_CAP, M_FREE_AVG,
    M_FREE_P50, M_FREE_P99, M_INSNS, M_LOCK_PAGES, M_LOCK_SHARERS, M_PAGES_PER_KINSN, M_RATE,
    M_REFILL_AVG, M_REFILL_P50, M_REFILL_P99, M_REFILL_PAGES,
};

/// The metrics, with [`M_LOCK_SHARERS`] on several nodes and the instruction counts where
/// they were `counted`.
pub(super) fn metrics(nodes: bool, counted: bool) -> Vec<MetricDef> {
    let metric = |name: &str, kind: MetricKind, unit: &str| MetricDef {
        name: name.to_string(),
        unit: unit.to_string(),
        kind,
    };
    let count = |name: &str, higher_is_better: bool, unit: &str| {
        metric(name, MetricKind::Count { higher_is_better }, unit)
    };
    let mut v = vec![
        metric(M_RATE, MetricKind::Rate, "pages/s"),
        metric(M_REFILL_AVG, MetricKind::Latency, "ns"),
        metric(M_REFILL_P99, MetricKind::Latency, "ns"),
        metric(M_FREE_AVG, MetricKind::Latency, "ns"),
        metric(M_FREE_P99, MetricKind::Latency, "ns"),
        metric(M_FREE_P50, MetricKind::Latency, "ns"),
        metric(M_REFILL_P50, MetricKind::Latency, "ns"),
        count(M_REFILL_PAGES, false, "pages"),
        count(M_LOCK_PAGES, false, "pages"),
        count(M_CAP, true, "cap"),
    ];
    if nodes {
        v.push(count(M_LOCK_SHARERS, false, "CPUs"));
    }
    if counted {
        v.push(count(M_INSNS, false, "instructions"));
        v.push(count(M_PAGES_PER_KINSN, true, "pages"));
    }
    v
}

/// Each variant's batch and high as CPU 0's lists had them after the run.
pub(super) fn effective_table(specs: &[Spec], effective: &[(i32, i32)]) -> Table {
    Table {
        title: "Effective per-CPU list settings (CPU 0, after the run)".to_string(),
        header: ["variant", "batch", "high", "batch_scale_max"]
            .iter()
            .map(|h| h.to_string())
            .collect(),
        rows: specs
            .iter()
            .zip(effective)
            .map(|(s, (b, h))| {
                vec![
                    s.name.clone(),
                    b.to_string(),
                    h.to_string(),
                    s.pcp.batch_scale_max.to_string(),
                ]
            })
            .collect(),
    }
}

/// The four plots: hold time and throughput against the swept batch, then against the cap.
/// `means` as [`super::Measured`] has them.
pub(super) fn plots(specs: &[Spec], means: &[[f64; 6]]) -> Vec<Plot> {
    let line = |i: usize| -> Vec<(f64, f64)> {
        specs
            .iter()
            .zip(means)
            .filter_map(|(s, v)| s.batch.map(|b| (b as f64, v[i])))
            .collect()
    };
    let by_cap = |i: usize| -> Vec<(f64, f64)> {
        specs
            .iter()
            .zip(means)
            .filter(|(s, _)| s.batch.is_none())
            .map(|(s, v)| (s.pcp.batch_scale_max as f64, v[i]))
            .collect()
    };
    let series = |name: &str, points: Vec<(f64, f64)>| Series {
        name: name.to_string(),
        points,
    };
    let plot = |file_stem: &str, title: &str, x_label: &str, y_label: &str, series| Plot {
        file_stem: file_stem.to_string(),
        title: title.to_string(),
        x_label: x_label.to_string(),
        y_label: y_label.to_string(),
        kind: PlotKind::Lines,
        series,
    };
    let swept = "against PCP batch (high = 2 x batch, no scaling)";
    let capped = "The kernel's own batch and high, CONFIG_PCP_BATCH_SCALE_MAX swept";
    vec![
        plot(
            "batch-scale-hold",
            &format!("Zone-lock hold time {swept}"),
            "batch (pages)",
            "hold time (ns)",
            vec![
                series("refill avg", line(0)),
                series("bulk free avg", line(1)),
                series("refill p99", line(2)),
                series("bulk free p99", line(3)),
                series(
                    "100 µs (the seed's bound)",
                    line(0).iter().map(|&(x, _)| (x, LIMIT_NS)).collect(),
                ),
            ],
        ),
        plot(
            "batch-scale-throughput",
            &format!("Throughput {swept}"),
            "batch (pages)",
            "pages/s",
            vec![series("pages/s", line(4))],
        ),
        plot(
            "batch-scale-cap",
            &format!("{capped}: hold time p99"),
            "batch_scale_max",
            "hold time (ns)",
            vec![
                series("refill p99", by_cap(2)),
                series("bulk free p99", by_cap(3)),
            ],
        ),
        plot(
            "batch-scale-cap-throughput",
            &format!("{capped}: throughput"),
            "batch_scale_max",
            "pages/s",
            vec![series("pages/s", by_cap(4))],
        ),
    ]
}

/// The run's configuration for `results.json`: `counted` is what
/// [`super::count_instructions`] gave.
pub(super) fn config(
    p: Params,
    iterations: usize,
    specs: &[Spec],
    effective: &[(i32, i32)],
    counted: &Result<String, String>,
    cores: usize,
) -> Value {
    json!({
        "threads": p.threads,
        "pages_per_worker": p.pages,
        "rounds": p.rounds,
        "warmup_rounds": 1,
        "iterations": iterations,
        "zone_pages": p.zone_pages,
        "nodes": p.nodes,
        "numa": numa_config(p),
        "watermarks": "none",
        "thp_lists": false,
        "variants": specs.iter().zip(effective).map(|(s, (b, h))| json!({
            "name": s.name,
            "batch": b,
            "high": h,
            "batch_scale_max": s.pcp.batch_scale_max,
        })).collect::<Vec<_>>(),
        "available_parallelism": cores,
        "instructions_per_page": match counted {
            Ok(text) => text.clone(),
            Err(why) => format!("not measurable here: {why}"),
        },
        "not_measured": match counted {
            Ok(_) => json!({}),
            Err(why) => super::super::valgrind::not_measured(&[M_INSNS, M_PAGES_PER_KINSN], why),
        },
    })
}
