//! Running a replay over a file (two streaming passes: [`super::stats`] to size the zones and
//! learn what the kernel did, then every variant's [`Replayer`] fed from one parse) and
//! turning it into the lab's report shapes: metrics per variant, tables, plots over time.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;

use super::migratetype::Numbering;
use super::parse::{self, Parser};
use super::replay::{Geometry, Replayer, FRAG_ORDERS};
use super::stats::TraceStats;
use super::variant::Variant;
use crate::report::{
    ExperimentResult, MetricDef, MetricKind, Plot, PlotKind, Sample, Series, Table,
};

/// What `zonealloc trace replay` was asked to do.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// The policy sets, in report order (the first is the baseline of the comparisons).
    pub variants: Vec<Variant>,
    /// First frame of the zone (default: from the trace).
    pub zone_start: Option<u64>,
    /// Zone size in frames (default: from the trace).
    pub zone_pages: Option<u64>,
    /// CPUs (default: from the trace).
    pub cpus: Option<u32>,
    /// Per-CPU lists off in every variant.
    pub no_pcp: bool,
    /// Migratetype numbering (default: inferred).
    pub numbering: Option<Numbering>,
    /// Fragmentation samples over the trace.
    pub samples: u64,
    /// Write each variant's run in ftrace format here.
    pub emit: Option<PathBuf>,
    /// Refuse to replay a trace with malformed lines.
    pub strict: bool,
}

/// A finished replay.
pub struct ReplayRun {
    /// What the trace itself says (the first pass).
    pub stats: TraceStats,
    /// The zones' shape.
    pub geo: Geometry,
    /// One per variant, in order.
    pub replayers: Vec<Replayer>,
    /// Lines and events of the second pass.
    pub parser: Parser,
    /// Seconds of the first pass.
    pub scan_s: f64,
    /// Seconds of the replay pass.
    pub replay_s: f64,
    /// The files written by `--emit`.
    pub emitted: Vec<PathBuf>,
}

/// Where variant `i` of `n` writes its trace: `path` itself for one variant, else
/// `path` with `.<variant>` before the extension.
pub fn emit_path(path: &Path, name: &str, n: usize) -> PathBuf {
    if n == 1 {
        return path.to_owned();
    }
    let slug = crate::report::file_slug(name);
    let stem = path
        .file_stem()
        .map_or_else(Default::default, |s| s.to_string_lossy());
    let file = match path.extension() {
        Some(ext) => format!("{stem}.{slug}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{slug}"),
    };
    path.with_file_name(file)
}

/// Replays `path` under every variant of `opts`, reporting `(events done, events total)`.
pub fn run(
    path: &Path,
    opts: &ReplayOptions,
    progress: &dyn Fn(u64, u64),
) -> Result<ReplayRun, String> {
    let read_err = |e: io::Error| format!("reading {}: {e}", path.display());
    let t0 = Instant::now();
    let mut stats = parse::open(path)
        .and_then(TraceStats::read)
        .map_err(read_err)?;
    stats.given_numbering = opts.numbering;
    if opts.strict && stats.parser.malformed > 0 {
        return Err(format!(
            "{}: {}",
            path.display(),
            stats.parser.malformed_summary()
        ));
    }
    let scan_s = t0.elapsed().as_secs_f64();
    let max_order = opts
        .variants
        .iter()
        .map(|v| v.cfg.max_order)
        .max()
        .unwrap_or(10);
    let geo = Geometry::choose(
        stats.pfn_span,
        stats.cpus.keys().next_back().copied(),
        opts.zone_start,
        opts.zone_pages,
        opts.cpus,
        max_order,
        stats.numbering(),
    )?;
    let n = opts.variants.len();
    let mut emitted = Vec::new();
    let mut replayers = Vec::with_capacity(n);
    for v in &opts.variants {
        let mut v = v.clone();
        if opts.no_pcp {
            v.cfg.pcp.enabled = false;
        }
        let out: Option<Box<dyn Write>> = match &opts.emit {
            Some(p) => {
                let p = emit_path(p, &v.name, n);
                let f = File::create(&p).map_err(|e| format!("--emit {}: {e}", p.display()))?;
                emitted.push(p);
                Some(Box::new(BufWriter::with_capacity(1 << 16, f)))
            }
            None => None,
        };
        replayers.push(Replayer::new(v, geo, out)?);
    }

    let total = stats.parser.events;
    let interval = (total / opts.samples.max(1)).max(1);
    let t1 = Instant::now();
    let mut parser = Parser::new();
    let mut failure: Option<io::Error> = None;
    let mut done = 0u64;
    let mut last_ts = None;
    parser
        .read_all(parse::open(path).map_err(read_err)?, |ev| {
            if failure.is_some() {
                return;
            }
            for r in replayers.iter_mut() {
                if let Err(e) = r.feed(ev) {
                    failure = Some(e);
                    return;
                }
            }
            done += 1;
            last_ts = ev.ts_ns.or(last_ts);
            if done.is_multiple_of(interval) {
                for r in replayers.iter_mut() {
                    r.sample(done, last_ts);
                }
            }
            if done.is_multiple_of(65_536) {
                progress(done, total);
            }
        })
        .map_err(read_err)?;
    if let Some(e) = failure {
        return Err(e.to_string());
    }
    for r in replayers.iter_mut() {
        if !done.is_multiple_of(interval) || done == 0 {
            r.sample(done, last_ts);
        }
        r.finish().map_err(|e| format!("--emit: {e}"))?;
        r.zone
            .check()
            .map_err(|e| format!("variant '{}': zone check failed: {e}", r.variant.name))?;
    }
    progress(done, total);
    Ok(ReplayRun {
        stats,
        geo,
        replayers,
        parser,
        scan_s,
        replay_s: t1.elapsed().as_secs_f64(),
        emitted,
    })
}

const M_HIT: &str = "PCP hit rate";
const M_LOCK: &str = "zone-lock acquisitions";
const M_FAIL: &str = "allocation failures";
const M_SAME: &str = "same frame as the kernel";
const M_UNUSABLE_MEAN: &str = "unusable index order-9 (mean)";
const M_UNUSABLE_END: &str = "unusable index order-9 (end)";
const M_REFILLS: &str = "PCP refill blocks";
const M_DRAINS: &str = "PCP drain blocks";
const M_EXTFRAG: &str = "extfrag fallbacks";
const M_TOP: &str = "allocations of the most reused frame";

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// The run as a lab [`ExperimentResult`] (one sample per variant and metric: a replay is
/// deterministic).
pub fn to_result(run: &ReplayRun, file: &Path, opts: &ReplayOptions) -> ExperimentResult {
    let count = |higher| MetricKind::Count {
        higher_is_better: higher,
    };
    let metrics = vec![
        (M_HIT, "%", count(true)),
        (M_LOCK, "", count(false)),
        (M_FAIL, "", count(false)),
        (M_SAME, "%", count(true)),
        (M_UNUSABLE_MEAN, "%", count(false)),
        (M_UNUSABLE_END, "%", count(false)),
        (M_REFILLS, "", count(false)),
        (M_DRAINS, "", count(false)),
        (M_EXTFRAG, "", count(false)),
        (M_TOP, "", count(false)),
    ]
    .into_iter()
    .map(|(name, unit, kind)| MetricDef {
        name: name.to_owned(),
        unit: unit.to_owned(),
        kind,
    })
    .collect();

    let mut samples = Vec::new();
    for r in &run.replayers {
        let c = &r.counts;
        let pcp = r.zone.pcp_stats();
        let unusable9: Vec<f64> = r
            .frag
            .iter()
            .map(|s| f64::from(s.unusable[1]) / 10.0)
            .collect();
        let mean9 = unusable9.iter().sum::<f64>() / unusable9.len().max(1) as f64;
        let values = [
            (
                M_HIT,
                pct(pcp.alloc_hits, pcp.alloc_hits + pcp.alloc_misses),
            ),
            (M_LOCK, r.zone.stats().zone_lock_acquisitions as f64),
            (M_FAIL, c.alloc_failures as f64),
            (M_SAME, pct(c.same_frame, c.allocs)),
            (M_UNUSABLE_MEAN, mean9),
            (M_UNUSABLE_END, unusable9.last().copied().unwrap_or(0.0)),
            (M_REFILLS, r.refills.iter().sum::<u64>() as f64),
            (M_DRAINS, r.drains.iter().sum::<u64>() as f64),
            (M_EXTFRAG, c.extfrag as f64),
            (
                M_TOP,
                r.most_reused(1).first().map_or(0.0, |t| f64::from(t.1)),
            ),
        ];
        for (metric, value) in values {
            samples.push(Sample {
                variant: r.variant.name.clone(),
                metric: metric.to_owned(),
                value,
            });
        }
    }

    let names: Vec<String> = run
        .replayers
        .iter()
        .map(|r| r.variant.name.clone())
        .collect();
    let mut tables = vec![accounting_table(run, &names), per_cpu_table(run, &names)];
    tables.push(reuse_table(run, &names));

    let x_label = if run.stats.span_ns.is_some() {
        "trace time (s)"
    } else {
        "trace events replayed"
    };
    let plots = FRAG_ORDERS
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

    let p = &run.parser;
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
            are exact, not statistical. Compare our refill and drain counts per CPU with the \
            kernel's (the per-CPU table); the zone starts empty, so pages the kernel had \
            allocated before the trace began are free here."
            .to_owned(),
        config: json!({
            "file": file.display().to_string(),
            "zone_start_pfn": run.geo.zone_start,
            "zone_pages": run.geo.zone_pages,
            "cpus": run.geo.cpus,
            "pcp": !opts.no_pcp,
            "migratetype_numbering": run.geo.numbering,
            "migratetype_numbering_given": opts.numbering.is_some(),
            "lines": p.lines,
            "events": p.events,
            "malformed": p.malformed,
            "scan_s": run.scan_s,
            "replay_s": run.replay_s,
            "replay_lines_per_s": p.lines as f64 / run.replay_s.max(1e-9),
            "replay_events_per_s": p.events as f64 / run.replay_s.max(1e-9),
            "emitted": run.emitted.iter().map(|e| e.display().to_string()).collect::<Vec<_>>(),
            "counts": run.replayers.iter().map(|r| json!({
                "variant": r.variant.name,
                "counts": r.counts,
                "refills_per_cpu": r.refills,
                "drains_per_cpu": r.drains,
                "frag_samples": r.frag,
            })).collect::<Vec<_>>(),
        }),
        oversubscribed: false,
    }
}

/// Reads one counter of a variant's [`super::replay::ReplayCounts`].
type CountOf = fn(&super::replay::ReplayCounts) -> u64;

fn accounting_table(run: &ReplayRun, names: &[String]) -> Table {
    let mut header = vec!["what".to_owned()];
    header.extend(names.iter().cloned());
    let rows: [(&str, CountOf); 14] = [
        ("allocations replayed", |c| c.allocs),
        ("allocation failures (kernel succeeded)", |c| {
            c.alloc_failures
        }),
        ("kernel failures in the trace", |c| c.kernel_failures),
        ("kernel failures that succeed here", |c| {
            c.kernel_failures_satisfied
        }),
        ("allocations skipped (order or migratetype)", |c| {
            c.skipped_allocs
        }),
        ("same frame as the kernel", |c| c.same_frame),
        ("allocations of a frame handed out before", |c| c.reused),
        ("frees replayed", |c| c.frees),
        ("frees of pages allocated before the trace (skipped)", |c| {
            c.frees_before_trace
        }),
        ("frees of blocks that failed here (skipped)", |c| {
            c.frees_of_failed
        }),
        ("partial frees (split blocks)", |c| c.partial_frees),
        ("frees with a larger order than allocated", |c| {
            c.order_mismatches
        }),
        ("re-allocations without a traced free", |c| c.implicit_frees),
        ("mm_page_free_batched repeats (counted once)", |c| {
            c.batched_duplicates
        }),
    ];
    Table {
        title: "What the replay did with the trace".to_owned(),
        header,
        rows: rows
            .iter()
            .map(|(label, f)| {
                let mut row = vec![(*label).to_owned()];
                row.extend(run.replayers.iter().map(|r| f(&r.counts).to_string()));
                row
            })
            .collect(),
    }
}

fn per_cpu_table(run: &ReplayRun, names: &[String]) -> Table {
    let mut header = vec![
        "cpu".to_owned(),
        "kernel refills".to_owned(),
        "kernel drains".to_owned(),
    ];
    for n in names {
        header.push(format!("{n} refills"));
        header.push(format!("{n} drains"));
    }
    let cpus = run.geo.cpus;
    let mut rows = Vec::new();
    for cpu in 0..cpus {
        // Trace CPUs fold onto ours modulo the CPU count, as the replay folds them.
        let (mut kr, mut kd) = (0u64, 0u64);
        for (&c, k) in &run.stats.cpus {
            if c % cpus == cpu {
                kr += k.refills;
                kd += k.drains;
            }
        }
        let mut row = vec![cpu.to_string(), kr.to_string(), kd.to_string()];
        for r in &run.replayers {
            row.push(r.refills[cpu as usize].to_string());
            row.push(r.drains[cpu as usize].to_string());
        }
        rows.push(row);
    }
    Table {
        title: "PCP refills (mm_page_alloc_zone_locked with percpu_refill=1) and drains \
                (mm_page_pcpu_drain) per CPU: the kernel's, from the trace, and ours"
            .to_owned(),
        header,
        rows,
    }
}

fn reuse_table(run: &ReplayRun, names: &[String]) -> Table {
    const N: usize = 5;
    let mut header = vec!["rank".to_owned(), "kernel: pfn (allocs)".to_owned()];
    header.extend(names.iter().map(|n| format!("{n}: pfn (allocs)")));
    let kernel = run.stats.most_reused(N);
    let ours: Vec<Vec<(u64, u32)>> = run.replayers.iter().map(|r| r.most_reused(N)).collect();
    let cell =
        |v: Option<(u64, u64)>| v.map_or_else(|| "-".to_owned(), |(p, c)| format!("{p:#x} ({c})"));
    let rows = (0..N)
        .map(|i| {
            let mut row = vec![(i + 1).to_string(), cell(kernel.get(i).copied())];
            row.extend(
                ours.iter()
                    .map(|o| cell(o.get(i).map(|&(p, c)| (p, u64::from(c))))),
            );
            row
        })
        .collect();
    Table {
        title: "Most reused frames (seed 000's table): the kernel's and each variant's".to_owned(),
        header,
        rows,
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
            let value = result
                .samples
                .iter()
                .find(|s| &s.variant == v && s.metric == m.name)
                .map(|s| s.value);
            row.push(crate::report::compare::fmt_value(value));
        }
        rows.push(row);
    }
    let mut out = crate::report::table::plain(&rows, 1, true);
    let p = &run.parser;
    out.push_str(&format!(
        "\nzone: {} pages from pfn {:#x}, {} CPUs, migratetypes {:?}\n\
         replayed {} events ({} lines, {} malformed) under {} variant(s) in {:.3} s: \
         {:.2} M lines/s, {:.2} M events/s (first pass {:.3} s)\n",
        run.geo.zone_pages,
        run.geo.zone_start,
        run.geo.cpus,
        run.geo.numbering,
        p.events,
        p.lines,
        p.malformed,
        run.replayers.len(),
        run.replay_s,
        p.lines as f64 / run.replay_s.max(1e-9) / 1e6,
        p.events as f64 / run.replay_s.max(1e-9) / 1e6,
        run.scan_s,
    ));
    out
}
