//! `zonealloc trace stats|replay|gen`: kernel `kmem` page-allocator traces.
//!
//! The work lives in [`zonealloc_lab::trace`]; a new way to set a replay up (another source
//! of the zone's geometry, a kernel-version preset) is a flag in [`crate::cli`] and a field
//! of [`replay::ReplayOptions`], resolved here.

use std::io::{IsTerminal, Write as _};

use zonealloc_lab::report as lab_report;
use zonealloc_lab::trace::{self, replay, report, variant::Variant};

use super::{command_line, emit, progress_bar, Exit};
use crate::cli::{Infer, TraceGenArgs, TraceReplayArgs, TraceStatsArgs};

/// `trace replay`: replays a trace under each `--variant`, writes the report folder and
/// prints the summary (or JSON).
pub fn replay(args: &TraceReplayArgs) -> Result<(), Exit> {
    let opts = replay_options(args)?;
    let bar = progress_bar(!args.json && std::io::stderr().is_terminal(), "replay");
    let progress = |done: u64| bar.set_position(done);
    let context = report::Context::start();
    let run = match replay::run_unchecked(&args.file, &opts, &progress) {
        Ok(r) => r,
        Err(e) => {
            bar.abandon();
            return Err(Exit::Failure(e.to_string()));
        }
    };
    bar.finish_and_clear();
    for w in &run.proc_warnings {
        eprintln!("warning: {w}");
    }
    let p = &run.parser;
    if p.malformed > 0 {
        eprintln!(
            "warning: {}: {}",
            args.file.display(),
            p.malformed_summary()
        );
    }
    let report::Reported {
        report,
        summary,
        written,
    } = context.write(
        &run,
        &args.file,
        &opts,
        &args.variants,
        report::OutDir {
            dir: out_dir(args),
            // The replay's own folder is replaced run by run; a folder given is so only
            // with --force.
            force: args.force || args.out.is_none(),
        },
        command_line(),
    );
    // A failed check is the run's failure: nothing was written.
    let written = written.map_err(Exit::Failure)?;
    let mut ok = true;
    match written {
        Ok(warnings) => warnings.iter().for_each(|w| eprintln!("warning: {w}")),
        Err(e) => {
            eprintln!("error: writing the report: {e}");
            ok = false;
        }
    }
    for e in &run.emitted {
        eprintln!("emitted: {}", e.display());
    }
    let text = if args.json {
        let s = zonealloc_lab::report::json::to_string(&report)
            .map_err(|e| Exit::Failure(e.to_string()))?;
        format!("{s}\n")
    } else {
        format!("{summary}report: {}\n", out_dir(args).display())
    };
    emit(&text)?;
    // The process ends here: its exit returns the zones, frame arrays and chunks (tens of MiB)
    // to the kernel at once, where dropping them one allocation at a time took a millisecond
    // or two of a short replay's wall time.
    std::mem::forget(run);
    std::mem::forget(report);
    if ok {
        Ok(())
    } else {
        Err(Exit::Reported)
    }
}

/// The replay's report folder: `--out`, else its own `replay-report/`.
fn out_dir(args: &TraceReplayArgs) -> &std::path::Path {
    args.out
        .as_deref()
        .unwrap_or(std::path::Path::new("replay-report"))
}

/// The replay's options from its flags; the `--kernel` and `--variant` specs are checked
/// before anything is read (they are parsed again on the preset).
fn replay_options(args: &TraceReplayArgs) -> Result<replay::ReplayOptions, Exit> {
    let kernel = match &args.kernel {
        Some(k) => Some(replay::preset::Kernel::parse(k).map_err(Exit::Usage)?),
        None => None,
    };
    // The last `--infer` item of a kind wins (`Infer::All` for `on`/`off`).
    let last_infer = |kind: fn(bool) -> Infer| {
        let want = std::mem::discriminant(&kind(false));
        args.infer
            .iter()
            .rev()
            .find(|i| std::mem::discriminant(*i) == want)
            .map(Infer::on)
    };
    // Check the specs before reading anything (they are parsed again on the preset).
    let mut names: Vec<String> = Vec::new();
    for spec in &args.variants {
        let v = Variant::parse(spec).map_err(|e| Exit::Usage(format!("--variant: {e}")))?;
        if names.contains(&v.name) {
            return Err(Exit::Usage(format!("--variant '{}' given twice", v.name)));
        }
        names.push(v.name);
    }
    // The lab's rule for --out, checked before the replay's work.
    if let Some(out) = &args.out {
        lab_report::out::check_out(out, args.force, "remove it").map_err(Exit::Usage)?;
    }
    Ok(replay::ReplayOptions {
        variants: names,
        kernel,
        zone_start: args.zone_start,
        zone_pages: args.zone_pages,
        online: args.online,
        cpus: args.cpus,
        no_pcp: args.no_pcp,
        numbering: args.migratetypes,
        samples: args.samples,
        emit: args.emit.clone(),
        strict: args.strict,
        no_decay: args.no_decay,
        no_contig_free: args.no_contig_free,
        no_lock_order: args.no_lock_order,
        refill_ahead: args.refill_ahead,
        no_refill_order: args.no_refill_order,
        hz: args.hz,
        decay_waits_for_event: args.decay_waits_for_event,
        no_late_workers: args.no_late_workers,
        no_traced_workers: args.no_traced_workers,
        timer_wheel: args.timer_wheel,
        jiffies_phase_ns: args.jiffies_phase,
        infer: last_infer(Infer::All),
        infer_start_count: last_infer(Infer::StartCount),
        infer_lists: last_infer(Infer::Lists),
        infer_whole_start: last_infer(Infer::WholeStart),
        infer_layout_roll: last_infer(Infer::LayoutRoll),
        infer_lists_after: last_infer(Infer::ListsAfter),
        infer_first_free_takes: last_infer(Infer::FirstFreeTakes),
        proc: args.proc.clone(),
        proc_after: args.proc_after.clone(),
        no_layout: args.no_layout,
        window: trace::ingest::Window {
            from: args.from_marker.clone(),
            to: args.to_marker.clone(),
            beyond_prefix_if: None,
        },
        whole_file: args.whole_file,
    })
}

/// `trace gen`: records one of the lab's workloads on a fresh zone as an ftrace text trace.
pub fn gen(args: &TraceGenArgs) -> Result<(), Exit> {
    let variant =
        Variant::parse(&args.variant).map_err(|e| Exit::Usage(format!("--variant: {e}")))?;
    let cfg = variant.cfg.with_cpus(args.cpus);
    trace::gen::check_zone(
        args.workload,
        args.zone_start,
        args.zone_pages,
        args.cpus,
        cfg.max_order,
    )
    .map_err(Exit::Usage)?;
    // Checked above: the sum cannot overflow.
    let (start, end) = (args.zone_start, args.zone_start + args.zone_pages);
    let zone = zonealloc::Zone::new(
        zonealloc::ZoneType::Normal,
        zonealloc::Pfn(start),
        zonealloc::Pfn(end),
        cfg,
    )
    .and_then(|z| {
        z.add_free_range(zonealloc::Pfn(start), zonealloc::Pfn(end))
            .map(|_| z)
            .map_err(zonealloc::ConfigError::Range)
    })
    .map_err(|e| Exit::Usage(format!("the zone: {e}")))?;
    let to_stdout = args.output.as_os_str() == "-";
    let out: Box<dyn std::io::Write> = if to_stdout {
        Box::new(std::io::BufWriter::new(std::io::stdout().lock()))
    } else {
        let f = std::fs::File::create(&args.output)
            .map_err(|e| Exit::Failure(format!("{}: {e}", args.output.display())))?;
        let f = std::io::BufWriter::with_capacity(1 << 16, f);
        if args.output.extension().is_some_and(|e| e == "gz") {
            Box::new(flate2::write::GzEncoder::new(
                f,
                flate2::Compression::default(),
            ))
        } else {
            Box::new(f)
        }
    };
    let params = trace::gen::GenParams {
        ops: args.ops,
        cpus: args.cpus,
        seed: args.seed,
    };
    let mut rec = trace::record::Recorder::new(&zone, out, 1_000)
        .map_err(|e| Exit::Failure(format!("writing the trace: {e}")))?;
    let summary = trace::gen::run(args.workload, &zone, &mut rec, params)
        .map_err(|e| Exit::Failure(e.to_string()))?;
    let n = rec.events();
    match rec.finish().and_then(|mut w| w.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
        Err(e) => return Err(Exit::Failure(format!("writing the trace: {e}"))),
    }
    zone.check()
        .map_err(|e| Exit::Failure(format!("allocator invariant violated: {e}")))?;
    summary
        .check(args.workload, args.zone_pages)
        .map_err(Exit::Failure)?;
    if !to_stdout {
        eprintln!("wrote {n} events to {}", args.output.display());
    }
    Ok(())
}

/// `trace stats`: what a trace says, as text or JSON.
pub fn stats(args: &TraceStatsArgs) -> Result<(), Exit> {
    let name = if args.file.as_os_str() == "-" {
        "standard input".into()
    } else {
        args.file.display().to_string()
    };
    let mut stats = trace::parse::open(&args.file)
        .and_then(trace::stats::TraceStats::read)
        .map_err(|e| Exit::Failure(format!("reading {name}: {e}")))?;
    stats.given_numbering = args.migratetypes;
    let p = &stats.parser;
    if args.strict && p.malformed > 0 {
        return Err(Exit::Failure(format!("{name}: {}", p.malformed_summary())));
    }
    if args.json {
        let s = serde_json::to_string_pretty(&stats.to_json())
            .map_err(|e| Exit::Failure(e.to_string()))?;
        emit(&format!("{s}\n"))
    } else {
        emit(&stats.render())
    }
}
