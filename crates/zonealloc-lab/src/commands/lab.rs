//! `zonealloc lab [EXPERIMENT]`: checks every argument, runs the registered experiments (each
//! under the repetition driver), judges the seeds' claims on the run and writes a new report
//! folder; `zonealloc lab compare RUN...` compares earlier runs.
//!
//! A run never destroys an earlier one: by default each run gets its own folder under
//! `lab-report/` (and `lab-report/latest` points at it); an explicit `--out` must be empty or
//! absent unless `--force`. A usage error (an unknown experiment or variant) writes nothing.

use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use zonealloc_lab::experiments::repeat::{self, RepeatPolicy, Repetition};
use zonealloc_lab::experiments::{self, seeds, Experiment, ExperimentResult, LabOpts};
use zonealloc_lab::machine;
use zonealloc_lab::report::compare::{self, Design};
use zonealloc_lab::report::out::{check_out, clear_report};
use zonealloc_lab::report::{self, runs, verdict, ExperimentReport, Failure, LabReport};

use super::{command_line, emit, progress_bar, Exit};
use crate::cli::{known_names, LabAction, LabArgs, LabCompareArgs};

/// Picks the experiments to run: all, or the one named. With several `nodes`, only those that
/// take nodes: all of them when none is named, and naming another is an error.
fn select(
    all: &[&'static dyn Experiment],
    name: Option<&str>,
    nodes: u64,
) -> Result<Vec<&'static dyn Experiment>, String> {
    let chosen = match name {
        None => all.to_vec(),
        Some(name) => match all.iter().find(|e| e.name() == name) {
            Some(e) => vec![*e],
            None => {
                return Err(format!(
                    "unknown experiment '{name}'; known experiments:\n{}",
                    known_names(all)
                ))
            }
        },
    };
    if nodes <= 1 {
        return Ok(chosen);
    }
    let takes: Vec<&str> = all
        .iter()
        .filter(|e| e.takes_nodes())
        .map(|e| e.name())
        .collect();
    match name {
        Some(n) if !chosen.iter().all(|e| e.takes_nodes()) => Err(format!(
            "--nodes {nodes}: experiment '{n}' runs on one node only; --nodes applies to {}",
            takes.join(", ")
        )),
        _ => Ok(chosen.into_iter().filter(|e| e.takes_nodes()).collect()),
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
        nodes: to_usize(Some(args.nodes), "nodes")?.unwrap_or(1),
        variants: args.variants.clone(),
        record_traces: args.record_traces.clone(),
        validate_only: false,
    })
}

/// Where a run writes: the folder, and the runs folder whose `latest` link to update.
struct OutDir {
    dir: PathBuf,
    runs_root: Option<PathBuf>,
}

/// Default runs folder.
const RUNS_ROOT: &str = "lab-report";

/// The report folder of this run; refuses a non-empty `--out` without `--force`. Creates
/// nothing.
fn out_dir(args: &LabArgs, date_utc: &str) -> Result<OutDir, String> {
    match &args.out {
        Some(dir) => {
            let other = format!("leave --out out for a new folder under {RUNS_ROOT}/");
            check_out(dir, args.force, &other)?;
            Ok(OutDir {
                dir: dir.clone(),
                runs_root: None,
            })
        }
        None => {
            let root = PathBuf::from(RUNS_ROOT);
            // `2026-11-23T13:20:00Z` -> `2026-11-23T13-20-00Z` (no colons in file names).
            let stamp = date_utc.replace(':', "-");
            let mut dir = root.join(&stamp);
            let mut k = 2;
            while dir.exists() {
                dir = root.join(format!("{stamp}-{k}"));
                k += 1;
            }
            Ok(OutDir {
                dir,
                runs_root: Some(root),
            })
        }
    }
}

/// Points `<root>/latest` at `dir` (a symlink; `latest.txt` with the folder's name where
/// links are not available).
fn update_latest(root: &Path, dir: &Path) -> Result<(), String> {
    let name = dir
        .file_name()
        .ok_or_else(|| format!("{}: no folder name", dir.display()))?;
    let link = root.join("latest");
    #[cfg(unix)]
    {
        if link.symlink_metadata().is_ok() {
            std::fs::remove_file(&link).map_err(|e| format!("{}: {e}", link.display()))?;
        }
        if std::os::unix::fs::symlink(name, &link).is_ok() {
            return Ok(());
        }
    }
    std::fs::write(
        root.join("latest.txt"),
        format!("{}\n", name.to_string_lossy()),
    )
    .map_err(|e| format!("{}: {e}", root.join("latest.txt").display()))
}

/// The validate-only pass: every chosen experiment checks its arguments and stops at `pick`.
/// A `--variants` name an experiment does not know is a usage error; other argument errors
/// (sizes) are left to the run, which reports them per experiment.
fn validate(chosen: &[&'static dyn Experiment], opts: &LabOpts) -> Result<(), String> {
    let mut v = opts.clone();
    v.validate_only = true;
    for e in chosen {
        let Err(err) = e.run(&v, &|_, _| {}) else {
            continue;
        };
        if err.is_validated() {
            continue;
        }
        // Is it the names? Without --variants the same checks pass.
        let mut plain = v.clone();
        plain.variants = None;
        if opts.variants.is_some()
            && e.run(&plain, &|_, _| {})
                .err()
                .is_some_and(|e| e.is_validated())
        {
            return Err(err.to_string());
        }
    }
    Ok(())
}

/// Runs the chosen experiments, writes the report and prints the summary (or JSON). Every
/// argument is checked before anything is created; a failed experiment is reported and fails
/// the command, after the others' results are written.
pub fn lab(args: &LabArgs) -> Result<(), Exit> {
    if let Some(LabAction::Compare(c)) = &args.action {
        return compare_runs(c);
    }
    let all = experiments::all();
    if args.list {
        return emit(&format!("{}\n", known_names(&all)));
    }
    let chosen = select(&all, args.experiment.as_deref(), args.nodes).map_err(Exit::Usage)?;
    if args.nodes > 1 && args.experiment.is_none() {
        let names: Vec<&str> = chosen.iter().map(|e| e.name()).collect();
        eprintln!(
            "lab: --nodes {}: running the experiments that take nodes: {}",
            args.nodes,
            names.join(", ")
        );
    }
    let opts = lab_opts(args).map_err(Exit::Usage)?;
    validate(&chosen, &opts).map_err(Exit::Usage)?;
    let mut run = machine::RunInfo::start();
    let out = out_dir(args, &run.date_utc).map_err(Exit::Usage)?;
    if let Some(dir) = &opts.record_traces {
        std::fs::create_dir_all(dir)
            .map_err(|e| Exit::Failure(format!("--record-traces {}: {e}", dir.display())))?;
    }
    if args.force {
        clear_report(&out.dir).map_err(Exit::Failure)?;
    }

    let claims = seeds::claims();
    let policy = RepeatPolicy {
        ci_target: args.ci_target,
        time_cap_s: args
            .time_cap
            .map_or(if opts.quick { 0.0 } else { 20.0 }, |s| s as f64),
        max_rounds: 20,
    };
    let (results, failures) = run_all(&chosen, &opts, &claims, policy);
    run.finish();
    if let Some(w) = &run.busy_warning {
        eprintln!("warning: {w}");
    }
    let failed: Vec<String> = failures.iter().map(|f| f.experiment.clone()).collect();
    let verdicts = verdict::judge_all(&claims, &results, &failed);

    let report = LabReport {
        tool: format!("{} {}", env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
        command: command_line(),
        machine: machine::Machine::detect(),
        run,
        verdicts,
        opts,
        significance_test: compare::PAIRED_TEST.to_owned(),
        experiments: results,
        failures,
    };
    let ok = publish(args, &report, &out);
    if ok && report.failures.is_empty() {
        Ok(())
    } else {
        Err(Exit::Reported)
    }
}

/// Runs each chosen experiment (its repetitions as `policy` says), with progress bars on a
/// terminal and a line per experiment otherwise: the reports of those that ran, and the
/// failures of those that did not.
fn run_all(
    chosen: &[&'static dyn Experiment],
    opts: &LabOpts,
    claims: &[verdict::Claim],
    policy: RepeatPolicy,
) -> (Vec<ExperimentReport>, Vec<Failure>) {
    let bars = std::io::stderr().is_terminal();
    let mut results = Vec::new();
    let mut failures = Vec::new();
    for e in chosen {
        let started = std::time::Instant::now();
        match run_one(*e, opts, claims, policy, bars) {
            Ok((r, rep)) => {
                let mut report = ExperimentReport::with_design(
                    r,
                    started.elapsed().as_secs_f64(),
                    Design::PairedByRepetition,
                );
                if !bars {
                    eprintln!(
                        "lab: {} done in {:.1} s; {}",
                        e.name(),
                        report.wall_s,
                        rep.describe()
                    );
                }
                report.repetition = Some(rep);
                results.push(report);
            }
            Err(err) => {
                eprintln!("error: experiment {} failed: {err}", e.name());
                failures.push(Failure {
                    experiment: e.name().to_owned(),
                    error: err,
                });
            }
        }
    }
    (results, failures)
}

/// Writes the report folder (and `latest`), then prints the summary or the JSON; whether all
/// of that worked.
fn publish(args: &LabArgs, report: &LabReport, out: &OutDir) -> bool {
    let mut ok = true;
    match report::write(&out.dir, report) {
        Ok(warnings) => {
            for w in warnings {
                eprintln!("warning: {w}");
            }
            if let Some(root) = &out.runs_root {
                if let Err(e) = update_latest(root, &out.dir) {
                    eprintln!("warning: updating {}/latest: {e}", root.display());
                }
            }
        }
        Err(e) => {
            eprintln!("error: writing the report: {e}");
            ok = false;
        }
    }

    let mut stdout = std::io::stdout().lock();
    let printed = if args.json {
        match zonealloc_lab::report::json::to_string(report) {
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
            report::summary_table(report),
            out.dir.display()
        )
    };
    // A closed pipe (`zonealloc lab | head`) is not worth a panic; report it and fail.
    if let Err(e) = printed.and_then(|()| stdout.flush()) {
        eprintln!("error: writing to stdout: {e}");
        ok = false;
    }
    if args.json {
        eprintln!("report: {}", out.dir.display());
    }
    ok
}

/// `zonealloc lab compare RUN...`.
fn compare_runs(args: &LabCompareArgs) -> Result<(), Exit> {
    let runs = runs::load_all(&args.runs).map_err(Exit::Failure)?;
    emit(&runs::compare_table(&runs))
}

/// Progress without a terminal: a line on stderr at every tenth of the way, so logs show
/// that the run is alive.
struct Lines {
    name: &'static str,
    next_tenth: Mutex<u64>,
}

impl Lines {
    fn step(&self, done: u64, total: u64) {
        if total == 0 {
            return;
        }
        let tenth = done.min(total) * 10 / total;
        let Ok(mut next) = self.next_tenth.lock() else {
            return;
        };
        if tenth >= *next {
            eprintln!("lab: {} {done}/{total} ({}%)", self.name, tenth * 10);
            *next = tenth + 1;
        }
    }
}

/// Runs one experiment under the repetition driver, with a progress bar on a terminal and
/// progress lines otherwise.
fn run_one(
    e: &dyn Experiment,
    opts: &LabOpts,
    claims: &[verdict::Claim],
    policy: RepeatPolicy,
    bars: bool,
) -> Result<(ExperimentResult, Repetition), String> {
    let bar = progress_bar(bars, e.name());
    let lines = Lines {
        name: e.name(),
        next_tenth: Mutex::new(0),
    };
    let progress = |done: u64, total: u64| {
        if bars {
            bar.set_length(total);
            bar.set_position(done.min(total));
        } else {
            lines.step(done, total);
        }
    };
    let on_round = |_round: usize, line: &str| {
        if bars {
            bar.set_message(line.to_owned());
        } else {
            if let Ok(mut next) = lines.next_tenth.lock() {
                *next = 0;
            }
            eprintln!("lab: {} {line}", e.name());
        }
    };
    if !bars {
        eprintln!("lab: {} started", e.name());
    }
    // A panicking experiment is a bug in it, but it must not take the other experiments'
    // results down with it: it becomes a failure in the report.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        repeat::run_repeated(e, opts, claims, policy, &progress, &on_round)
    }))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&'static dyn Experiment]) -> Vec<&'static str> {
        v.iter().map(|e| e.name()).collect()
    }

    #[test]
    fn several_nodes_select_only_the_experiments_that_take_them() {
        let all = experiments::all();
        assert_eq!(names(&select(&all, None, 1).unwrap()).len(), 5);
        assert_eq!(
            names(&select(&all, None, 2).unwrap()),
            ["batch-scale", "drain"]
        );
        assert_eq!(names(&select(&all, Some("drain"), 2).unwrap()), ["drain"]);
        let Err(e) = select(&all, Some("free-high"), 2) else {
            panic!("free-high on two nodes");
        };
        assert!(e.contains("runs on one node only"), "{e}");
        assert!(e.contains("batch-scale, drain"), "{e}");
        assert_eq!(
            names(&select(&all, Some("free-high"), 1).unwrap()),
            ["free-high"]
        );
        assert!(select(&all, Some("nope"), 2).is_err());
    }
}
