//! Running a replay over a trace (one streaming pass: every variant's [`Replayer`] and the
//! kernel's own counts, [`KernelSide`], fed from one parse) and turning it into the lab's
//! report shapes: metrics per variant, the kernel beside us, tables, plots over time.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;

use super::migratetype::Numbering;
use super::parse::Parser;
use super::replay::kernel::{self, KernelSide, KINDS};
use super::replay::preset::Kernel;
use super::replay::{input, proc_setup, Geometry, Online, Replayer, FRAG_ORDERS};
use super::variant::Variant;
use crate::procfs::ProcSnapshot;
use crate::report::{
    ExperimentResult, MetricDef, MetricKind, Plot, PlotKind, Sample, Series, Table,
};

/// What `zonealloc trace replay` was asked to do.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// The policy specs, in report order (the first is the baseline of the comparisons);
    /// parsed on top of the `--kernel` preset.
    pub variants: Vec<String>,
    /// The kernel family whose rules the replay runs (default: mainline, or inferred).
    pub kernel: Option<Kernel>,
    /// First frame of the zone (default 0).
    pub zone_start: Option<u64>,
    /// Zone size in frames (default: [`super::replay::DEFAULT_ZONE_PAGES`], onlined as the
    /// trace touches it).
    pub zone_pages: Option<u64>,
    /// Which frames are free at the start (default: all with `--zone-pages`, else touched).
    pub online: Option<Online>,
    /// CPUs (default: from the trace's header or first events).
    pub cpus: Option<u32>,
    /// Per-CPU lists off in every variant.
    pub no_pcp: bool,
    /// Migratetype numbering (default: inferred from the trace's first events).
    pub numbering: Option<Numbering>,
    /// Fragmentation samples over the trace (taken every `sample_every` events).
    pub samples: u64,
    /// Write each variant's run in ftrace format here.
    pub emit: Option<PathBuf>,
    /// Fail if any line is malformed.
    pub strict: bool,
    /// Replay what the trace shows without a cause ([`kernel`]): drains and untraced
    /// allocations (default: with `--proc`).
    pub infer: Option<bool>,
    /// No once-a-second `decay_pcp_high` even where the kernel family has it.
    pub no_decay: bool,
    /// Set the zones up from this `/proc` snapshot folder.
    pub proc: Option<PathBuf>,
    /// Compare the end state with this `/proc` snapshot folder.
    pub proc_after: Option<PathBuf>,
    /// The part of the trace to replay (with `--proc` and no markers given: between
    /// `KT_SNAPSHOT_BEFORE_END` and `KT_SNAPSHOT_AFTER_BEGIN`, where the trace has them).
    pub window: input::Window,
}

/// A finished replay.
pub struct ReplayRun {
    /// The kernel's side: its refills, drains, fallbacks per zone and CPU.
    pub kernel: KernelSide,
    /// The kernel family the variants started from, and whether it was given.
    pub preset: (Kernel, bool),
    /// The zones' shape.
    pub geo: Geometry,
    /// One per variant, in order.
    pub replayers: Vec<Replayer>,
    /// Lines and events of the pass.
    pub parser: Parser,
    /// Seconds of the pass (reading, parsing and replaying).
    pub replay_s: f64,
    /// The files written by `--emit`.
    pub emitted: Vec<PathBuf>,
    /// The window replayed, and whether its start marker was found.
    pub window: (input::Window, Option<bool>),
    /// Per variant, per zone: the end state against `--proc-after`.
    pub end_states: Vec<Vec<proc_setup::EndState>>,
    /// Whether causes were inferred ([`kernel`]).
    pub infer: bool,
    /// Whether the zones come from `--proc`.
    pub setup_from_proc: bool,
    /// The kernel's unusable free space index of the highest zone (thousandths, per
    /// [`FRAG_ORDERS`]) at `--proc` (the trace's start) and `--proc-after` (its end).
    pub kernel_frag: (Option<[u32; 3]>, Option<[u32; 3]>),
}

/// The unusable free space index of a snapshot's zone, per [`FRAG_ORDERS`].
fn kernel_unusable(snap: &ProcSnapshot, zone: zonealloc::ZoneType) -> Option<[u32; 3]> {
    let z = snap.zone(0, zone)?;
    let blocks = z.free_blocks()?;
    let mut nr_free = [0u64; zonealloc::MAX_ORDER_LIMIT as usize + 1];
    for (o, n) in blocks.iter().enumerate().take(nr_free.len()) {
        nr_free[o] = *n;
    }
    let s = zonealloc::FreeAreaSnapshot {
        node: 0,
        zone_name: zone.name(),
        max_order: (blocks.len().max(1) - 1) as u8,
        pageblock_order: snap.pageblock_order.unwrap_or(9),
        nr_free,
        free_by_type: Default::default(),
        pageblocks_by_type: Default::default(),
    };
    Some(FRAG_ORDERS.map(|o| zonealloc::stats::unusable_free_index(&s, o.min(s.max_order))))
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

/// Events between fragmentation samples when the trace's length is not known in advance:
/// samples come every event at first, then the interval doubles (and every
/// other sample is dropped) whenever `2 * samples` have been taken, so a trace of any length
/// ends with between `samples` and `2 * samples` evenly spaced samples.
const FIRST_SAMPLE_INTERVAL: u64 = 1;

/// Replays `path` (`-`: standard input) under every variant of `opts` in one pass,
/// reporting the events done so far.
pub fn run(path: &Path, opts: &ReplayOptions, progress: &dyn Fn(u64)) -> Result<ReplayRun, String> {
    let read_err = |e: io::Error| format!("reading {}: {e}", path.display());
    let snap = match &opts.proc {
        Some(dir) => Some(ProcSnapshot::read_dir(dir).map_err(|e| format!("--proc: {e}"))?),
        None => None,
    };
    let after = match &opts.proc_after {
        Some(dir) => Some(ProcSnapshot::read_dir(dir).map_err(|e| format!("--proc-after: {e}"))?),
        None => None,
    };
    let mut window = opts.window.clone();
    if snap.is_some() && window.from.is_none() && window.to.is_none() {
        window.from = Some("KT_SNAPSHOT_BEFORE_END".to_owned());
        window.to = Some("KT_SNAPSHOT_AFTER_BEGIN".to_owned());
    }
    let (input, found) = input::open_window(path, &window).map_err(read_err)?;
    let numbering = opts
        .numbering
        .unwrap_or_else(|| input.sniff.evidence.verdict());
    let geo = match &snap {
        Some(s) => proc_setup::geometry(s, opts.cpus, numbering)?,
        None => Geometry::from_flags(
            opts.zone_start,
            opts.zone_pages,
            opts.online,
            opts.cpus,
            &input.sniff,
            numbering,
        )?,
    };
    let preset = match (opts.kernel, &snap) {
        (Some(k), _) => (k, true),
        (None, Some(s)) => (proc_setup::kernel_of(s), false),
        (None, None) => (Kernel::V7_2, false),
    };
    // Without --kernel or --proc, the defaults (the mainline rules, and the zone a `trace gen`
    // or `lab` run records, so our own traces replay to themselves); the 7.2 preset also sets
    // the Debian kernels' boot-time choices (THP's min_free_kbytes).
    let mut base = zonealloc::ZoneConfig::default();
    if opts.kernel.is_some() || snap.is_some() {
        preset.0.apply(&mut base);
    }
    let n = opts.variants.len();
    let mut emitted = Vec::new();
    let mut replayers = Vec::with_capacity(n);
    for spec in &opts.variants {
        let mut v = Variant::parse_on(spec, &base)?;
        if opts.no_pcp {
            v.cfg.pcp.enabled = false;
        }
        // Per zone: the snapshot's sizes on the preset, then the variant's knobs.
        let mut cfgs = Vec::with_capacity(geo.zones.len());
        for z in &geo.zones {
            let zbase = match snap.as_ref().and_then(|s| s.zone(0, z.zone_type)) {
                Some(kz) => proc_setup::zone_config(&base, kz, preset.0),
                None => base,
            };
            let mut c = Variant::parse_on(spec, &zbase)?.cfg;
            if opts.no_pcp {
                c.pcp.enabled = false;
            }
            cfgs.push(c);
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
        let mut r = Replayer::with_zones(v, &geo, out, &cfgs, snap.as_ref())?;
        r.decay = cfgs.first().is_some_and(|c| c.pcp.decay && c.pcp.enabled) && !opts.no_decay;
        replayers.push(r);
    }
    let mut kernel = KernelSide::new(geo.zones.len(), geo.cpus);
    // The inferences read a kernel's trace, where untraced work leaves its marks; a trace we
    // wrote ourselves is a closed world (its slow-path drains are our own).
    let infer = opts.infer.unwrap_or(snap.is_some());

    let t1 = Instant::now();
    let mut parser = Parser::new();
    let mut failure: Option<io::Error> = None;
    let mut done = 0u64;
    let mut last_ts = None;
    let samples = opts.samples.max(1);
    let mut interval = FIRST_SAMPLE_INTERVAL;
    parser
        .read_all(input.reader, |ev| {
            if failure.is_some() {
                return;
            }
            let zone = geo.zone_of(ev.kind.pfn()).unwrap_or(0);
            let mut inferred = kernel.add(ev, zone);
            if !infer {
                inferred = kernel::Inferred::None;
            }
            for r in replayers.iter_mut() {
                if let Err(e) = r.feed(ev, inferred) {
                    failure = Some(e);
                    return;
                }
            }
            done += 1;
            last_ts = ev.ts_ns.or(last_ts);
            if done.is_multiple_of(interval) {
                // Samples at multiples of `interval`; at 2 * samples, keep the even ones and
                // double the interval.
                let thin = replayers
                    .first()
                    .is_some_and(|r| r.frag.len() as u64 + 1 >= 2 * samples);
                for r in replayers.iter_mut() {
                    r.sample(done, last_ts);
                    if thin {
                        r.frag = r.frag.drain(..).skip(1).step_by(2).collect();
                    }
                }
                if thin {
                    interval *= 2;
                }
            }
            if done.is_multiple_of(65_536) {
                progress(done);
            }
        })
        .map_err(read_err)?;
    if let Some(e) = failure {
        return Err(e.to_string());
    }
    if opts.strict && parser.malformed > 0 {
        return Err(format!(
            "{}: {}",
            path.display(),
            parser.malformed_summary()
        ));
    }
    for r in replayers.iter_mut() {
        if !done.is_multiple_of(interval) || done == 0 {
            r.sample(done, last_ts);
        }
        r.finish().map_err(|e| format!("--emit: {e}"))?;
        for z in &r.zones {
            z.check()
                .map_err(|e| format!("variant '{}': zone check failed: {e}", r.variant.name))?;
        }
    }
    progress(done);
    let end_states = match &after {
        Some(a) => replayers
            .iter()
            .map(|r| {
                geo.zones
                    .iter()
                    .zip(&r.zones)
                    .filter_map(|(span, zone)| {
                        a.zone(0, span.zone_type)
                            .map(|kz| proc_setup::end_state(zone, a, kz))
                    })
                    .collect()
            })
            .collect(),
        None => Vec::new(),
    };
    let kernel_frag = match geo.zones.last() {
        Some(z) => (
            snap.as_ref().and_then(|s| kernel_unusable(s, z.zone_type)),
            after.as_ref().and_then(|s| kernel_unusable(s, z.zone_type)),
        ),
        None => (None, None),
    };
    Ok(ReplayRun {
        kernel,
        preset,
        geo,
        replayers,
        parser,
        replay_s: t1.elapsed().as_secs_f64(),
        emitted,
        window: (window, found),
        end_states,
        infer,
        setup_from_proc: snap.is_some(),
        kernel_frag,
    })
}

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

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// `ours` against `kernel` in percent, signed (`-` when the kernel has none).
fn diff_pct(ours: u64, kernel: u64) -> String {
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

    let mut samples = Vec::new();
    for r in &run.replayers {
        let c = &r.counts;
        let (mut hits, mut misses, mut locks) = (0, 0, 0);
        for z in &r.zones {
            let pcp = z.pcp_stats();
            hits += pcp.alloc_hits;
            misses += pcp.alloc_misses;
            locks += z.stats().zone_lock_acquisitions;
        }
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
                r.most_reused(1).first().map_or(0.0, |t| f64::from(t.1)),
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
    for (r, ends) in run.replayers.iter().zip(&run.end_states) {
        tables.push(end_state_table(&r.variant.name, ends));
    }
    tables.push(reuse_table(run, &names));

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

/// One kind per CPU, summed over zones.
fn per_cpu(g: &kernel::Grid, f: fn(&kernel::Tally) -> u64) -> Vec<u64> {
    (0..g.cpus)
        .map(|c| (0..g.zones).map(|z| f(g.get(z, c))).sum())
        .collect()
}

fn zone_name(run: &ReplayRun, z: usize) -> String {
    run.geo
        .zones
        .get(z)
        .map_or_else(|| z.to_string(), |s| format!("{:?}", s.zone_type))
}

/// The headline: each event kind's kernel total, and per variant its total and how far off
/// the kernel it is.
fn fidelity_table(run: &ReplayRun, names: &[String]) -> Table {
    let mut header = vec!["event kind".to_owned(), "kernel".to_owned()];
    for n in names {
        header.push(n.clone());
        header.push(format!("{n}: off the kernel"));
    }
    let rows = KINDS
        .iter()
        .map(|(kind, f)| {
            let mut row = vec![(*kind).to_owned(), run.kernel.grid.total(*f).to_string()];
            for r in &run.replayers {
                row.push(r.ours.total(*f).to_string());
                row.push(
                    kernel::fidelity(&r.ours, &run.kernel.grid, *f)
                        .map_or_else(|| "-".to_owned(), |v| format!("{v:.1}%")),
                );
            }
            row
        })
        .collect();
    Table {
        title: "The kernel beside us: event totals, and sum over zones and CPUs of \
                |ours - kernel| / kernel total"
            .to_owned(),
        header,
        rows,
    }
}

/// One variant against the kernel per zone and CPU, every kind, with the difference in %.
fn beside_table(run: &ReplayRun, r: &Replayer) -> Table {
    let mut header = vec!["zone".to_owned(), "cpu".to_owned()];
    for (kind, _) in KINDS {
        header.push(format!("kernel {kind}"));
        header.push("ours (diff)".to_owned());
    }
    let k = &run.kernel.grid;
    let mut rows = Vec::new();
    for z in 0..k.zones {
        for cpu in 0..k.cpus {
            let (kt, ot) = (k.get(z, cpu), r.ours.get(z, cpu));
            if *kt == kernel::Tally::default() && *ot == kernel::Tally::default() {
                continue;
            }
            let mut row = vec![zone_name(run, z), cpu.to_string()];
            for (_, f) in KINDS {
                row.push(f(kt).to_string());
                row.push(format!("{} ({})", f(ot), diff_pct(f(ot), f(kt))));
            }
            rows.push(row);
        }
    }
    Table {
        title: format!(
            "Variant {}: the kernel's refills, drains, direct buddy allocations and fallbacks \
             per zone and CPU, and ours",
            r.variant.name
        ),
        header,
        rows,
    }
}

/// Refill and drain pages per CPU, the kernel's as the reference series.
fn per_cpu_plots(run: &ReplayRun) -> Vec<Plot> {
    let cpus = run.geo.cpus;
    let kinds: [(&str, kernel::Count); 2] =
        [("refill", |t| t.refill_pages), ("drain", |t| t.drain_pages)];
    kinds
        .into_iter()
        .map(|(what, f)| {
            let series_of = |name: String, g: &kernel::Grid| Series {
                name,
                points: per_cpu(g, f)
                    .iter()
                    .enumerate()
                    .map(|(c, &v)| (c as f64, v as f64))
                    .collect(),
            };
            let mut series = vec![series_of("kernel (reference)".to_owned(), &run.kernel.grid)];
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

/// Reads one counter of a variant's [`super::replay::ReplayCounts`].
type CountOf = fn(&super::replay::ReplayCounts) -> u64;

fn accounting_table(run: &ReplayRun, names: &[String]) -> Table {
    let mut header = vec!["what".to_owned()];
    header.extend(names.iter().cloned());
    let rows: [(&str, CountOf); 19] = [
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
        (
            "same frame as the kernel (meaningful for a replay of our own emitted trace)",
            |c| c.same_frame,
        ),
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
        ("drains inferred from unexplained drain runs", |c| {
            c.inferred_drains
        }),
        (
            "untraced allocations inferred (frees of refilled pages)",
            |c| c.untraced_allocs,
        ),
        ("frees of pages in use at the /proc snapshot", |c| {
            c.frees_from_snapshot
        }),
        (
            "MAX_PAGE_ORDER blocks onlined as the trace touched them",
            |c| c.onlined_blocks,
        ),
        ("extfrag fallbacks", |c| c.extfrag),
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
    let kr = per_cpu(&run.kernel.grid, |t| t.refills);
    let kd = per_cpu(&run.kernel.grid, |t| t.drains);
    let ours: Vec<(Vec<u64>, Vec<u64>)> = run
        .replayers
        .iter()
        .map(|r| {
            (
                per_cpu(&r.ours, |t| t.refills),
                per_cpu(&r.ours, |t| t.drains),
            )
        })
        .collect();
    let rows = (0..run.geo.cpus as usize)
        .map(|c| {
            let mut row = vec![c.to_string(), kr[c].to_string(), kd[c].to_string()];
            for (r, d) in &ours {
                row.push(format!("{} ({})", r[c], diff_pct(r[c], kr[c])));
                row.push(format!("{} ({})", d[c], diff_pct(d[c], kd[c])));
            }
            row
        })
        .collect();
    Table {
        title: "PCP refills (mm_page_alloc_zone_locked with percpu_refill=1) and drains \
                (mm_page_pcpu_drain) per CPU: the kernel's, from the trace, and ours (trace \
                CPUs beyond the replay's fold onto CPU c % N)"
            .to_owned(),
        header,
        rows,
    }
}

const TYPE_NAMES: [&str; 3] = ["Unmovable", "Movable", "Reclaimable"];

/// What the `/proc` set-up reached against the snapshot (the first variant's zones; every
/// variant is set up the same way).
fn setup_table(r: &Replayer) -> Table {
    let mut rows = Vec::new();
    for f in &r.setup {
        let mut row = |what: &str, k: u64, o: u64| {
            rows.push(vec![
                f.zone.clone(),
                what.to_owned(),
                k.to_string(),
                o.to_string(),
            ])
        };
        row("managed pages", f.managed, f.managed);
        row("pages in use", f.used.0, f.used.1);
        row("buddy free pages", f.free.0, f.free.1);
        row("PCP pages", f.pcp.0, f.pcp.1);
        for (t, name) in TYPE_NAMES.iter().enumerate() {
            row(
                &format!("{name} pageblocks"),
                f.pageblocks.0[t],
                f.pageblocks.1[t],
            );
        }
    }
    Table {
        title: "The --proc set-up: the kernel's state at the snapshot and ours at the start"
            .to_owned(),
        header: vec![
            "zone".to_owned(),
            "what".to_owned(),
            "kernel".to_owned(),
            "ours".to_owned(),
        ],
        rows,
    }
}

/// The end state against `--proc-after`, per zone: buddyinfo per order, pagetypeinfo per
/// migratetype, PCP pages.
fn end_state_table(name: &str, ends: &[proc_setup::EndState]) -> Table {
    let mut rows = Vec::new();
    for e in ends {
        for (o, (k, ours)) in e
            .kernel_free_blocks
            .iter()
            .zip(&e.ours_free_blocks)
            .enumerate()
        {
            rows.push(vec![
                e.zone.clone(),
                format!("free blocks, order {o}"),
                k.to_string(),
                format!("{ours} ({})", diff_pct(*ours, *k)),
            ]);
        }
        for (t, tn) in TYPE_NAMES.iter().enumerate() {
            let (k, o) = (e.free_pages_by_type.0[t], e.free_pages_by_type.1[t]);
            rows.push(vec![
                e.zone.clone(),
                format!("{tn} free pages"),
                k.to_string(),
                format!("{o} ({})", diff_pct(o, k)),
            ]);
            let (k, o) = (e.pageblocks.0[t], e.pageblocks.1[t]);
            rows.push(vec![
                e.zone.clone(),
                format!("{tn} pageblocks"),
                k.to_string(),
                format!("{o} ({})", diff_pct(o, k)),
            ]);
        }
        rows.push(vec![
            e.zone.clone(),
            "PCP pages".to_owned(),
            e.pcp.0.to_string(),
            format!("{} ({})", e.pcp.1, diff_pct(e.pcp.1, e.pcp.0)),
        ]);
        for (cpu, ((kc, kh), (oc, oh))) in e.pagesets.iter().enumerate() {
            rows.push(vec![
                e.zone.clone(),
                format!("CPU {cpu} PCP count / high"),
                format!("{kc} / {kh}"),
                format!("{oc} / {oh}"),
            ]);
        }
        rows.push(vec![
            e.zone.clone(),
            "free blocks off the kernel (sum over orders)".to_owned(),
            "-".to_owned(),
            e.free_blocks_off_pct
                .map_or_else(|| "-".to_owned(), |v| format!("{v:.1}%")),
        ]);
    }
    Table {
        title: format!(
            "Variant {name}: the end state against --proc-after (buddyinfo, pagetypeinfo, PCP)"
        ),
        header: vec![
            "zone".to_owned(),
            "what".to_owned(),
            "kernel".to_owned(),
            "ours (diff)".to_owned(),
        ],
        rows,
    }
}

fn reuse_table(run: &ReplayRun, names: &[String]) -> Table {
    const N: usize = 5;
    let mut header = vec!["rank".to_owned(), "kernel: pfn (allocs)".to_owned()];
    header.extend(names.iter().map(|n| format!("{n}: pfn (allocs)")));
    let kernel = run.kernel.most_reused(N);
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
