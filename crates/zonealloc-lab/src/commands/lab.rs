//! `zonealloc lab [EXPERIMENT]`: runs the registered experiments and writes the report folder.
//!
//! A new lab verb (judging a run against the seeds' published figures, say) is a variant of
//! [`crate::cli::Command`] with its own function here, over [`zonealloc_lab::report`].

use std::io::{IsTerminal, Write as _};

use zonealloc_lab::experiments::{self, Experiment, ExperimentResult, LabOpts};
use zonealloc_lab::machine;
use zonealloc_lab::report::{self, ExperimentReport, Failure, LabReport};

use super::{command_line, emit, progress_bar, Exit};
use crate::cli::{known_names, LabArgs};

/// Picks the experiments to run: all, or the one named.
fn select(
    all: &[&'static dyn Experiment],
    name: Option<&str>,
) -> Result<Vec<&'static dyn Experiment>, String> {
    match name {
        None => Ok(all.to_vec()),
        Some(name) => match all.iter().find(|e| e.name() == name) {
            Some(e) => Ok(vec![*e]),
            None => Err(format!(
                "unknown experiment '{name}'; known experiments:\n{}",
                known_names(all)
            )),
        },
    }
}

fn to_usize(v: Option<u64>, flag: &str) -> Result<Option<usize>, String> {
    v.map(|v| usize::try_from(v).map_err(|_| format!("--{flag} {v} is too large for this machine")))
        .transpose()
}

/// The options every experiment receives, from the flags.
fn lab_opts(args: &LabArgs) -> Result<LabOpts, String> {
    Ok(LabOpts {
        quick: args.quick,
        seed: args.seed,
        threads: to_usize(args.threads, "threads")?,
        iterations: to_usize(args.iterations, "iterations")?,
        zone_pages: args.zone_pages,
        variants: args.variants.clone(),
        record_traces: args.record_traces.clone(),
    })
}

/// Runs the chosen experiments, writes the report and prints the summary (or JSON). A failed
/// experiment is reported and fails the command, after the others' results are written.
pub fn lab(args: &LabArgs) -> Result<(), Exit> {
    let all = experiments::all();
    if args.list {
        return emit(&format!("{}\n", known_names(&all)));
    }
    let chosen = select(&all, args.experiment.as_deref()).map_err(Exit::Usage)?;
    let opts = lab_opts(args).map_err(Exit::Usage)?;
    if let Some(dir) = &opts.record_traces {
        std::fs::create_dir_all(dir)
            .map_err(|e| Exit::Failure(format!("--record-traces {}: {e}", dir.display())))?;
    }

    let show_progress = !args.json && std::io::stdout().is_terminal();
    let mut results = Vec::new();
    let mut failures = Vec::new();
    for e in &chosen {
        let started = std::time::Instant::now();
        match run_one(*e, &opts, show_progress) {
            Ok(r) => results.push(ExperimentReport::new(r, started.elapsed().as_secs_f64())),
            Err(err) => {
                eprintln!("error: experiment {} failed: {err}", e.name());
                failures.push(Failure {
                    experiment: e.name().to_owned(),
                    error: err,
                });
            }
        }
    }

    let report = LabReport {
        tool: format!("{} {}", env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
        command: command_line(),
        machine: machine::Machine::detect(),
        opts,
        significance_test: report::compare::SIGNIFICANCE_TEST.to_owned(),
        experiments: results,
        failures,
    };
    let mut ok = report.failures.is_empty();
    match report::write(&args.out, &report) {
        Ok(warnings) => {
            for w in warnings {
                eprintln!("warning: {w}");
            }
        }
        Err(e) => {
            eprintln!("error: writing the report: {e}");
            ok = false;
        }
    }

    let mut stdout = std::io::stdout().lock();
    let printed = if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => writeln!(stdout, "{s}"),
            Err(e) => {
                eprintln!("error: serialising the results: {e}");
                ok = false;
                Ok(())
            }
        }
    } else {
        write!(
            stdout,
            "{}\nreport: {}\n",
            report::summary_table(&report),
            args.out.display()
        )
    };
    // A closed pipe (`zonealloc lab | head`) is not worth a panic; report it and fail.
    if let Err(e) = printed.and_then(|()| stdout.flush()) {
        eprintln!("error: writing to stdout: {e}");
        ok = false;
    }
    if args.json {
        eprintln!("report: {}", args.out.display());
    }
    if ok {
        Ok(())
    } else {
        Err(Exit::Reported)
    }
}

/// Runs one experiment with a progress bar (drawn on stderr when `show` is set).
fn run_one(e: &dyn Experiment, opts: &LabOpts, show: bool) -> Result<ExperimentResult, String> {
    let bar = progress_bar(show, e.name());
    let progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done.min(total));
    };
    // A panicking experiment is a bug in it, but it must not take the other experiments'
    // results down with it: it becomes a failure in the report.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| e.run(opts, &progress)))
        .map_err(|payload| {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown payload".to_owned());
            format!("panicked: {msg}")
        })
        .and_then(|r| r.map_err(|err| err.to_string()));
    match &result {
        Ok(_) => bar.finish_with_message("done"),
        Err(_) => bar.abandon_with_message("failed"),
    }
    result
}
