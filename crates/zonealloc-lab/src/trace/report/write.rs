//! `zonealloc trace replay`'s report: the lab's [`LabReport`] of one replay, written to its
//! folder once every zone has passed its check. The machine's facts are read on a thread of
//! their own from before the replay ([`Context::start`]), and the zones' check runs beside the
//! result's tables and the report's rendering.

use std::path::Path;
use std::thread::JoinHandle;
use std::time::Instant;

use super::page::pages;
use super::result::to_result;
use super::summary::summary;
use crate::machine::{Machine, RunInfo};
use crate::report::{self, ExperimentReport, LabOpts, LabReport};
use crate::trace::replay::{check_zones, ReplayOptions, ReplayRun};

/// What a replay's report records beside the run, started before it.
pub struct Context {
    started: Instant,
    run_info: RunInfo,
    machine: std::io::Result<JoinHandle<Machine>>,
}

/// A written (or refused) report.
pub struct Reported {
    /// The report as written (`--json` prints it).
    pub report: LabReport,
    /// The stdout summary ([`summary`]).
    pub summary: String,
    /// `Err`: a zone failed its check and nothing was written; `Ok(Err)`: writing failed;
    /// `Ok(Ok)`: the warnings of the writing.
    pub written: Result<Result<Vec<String>, String>, String>,
}

/// Where a report goes: the folder, and whether an earlier report's files there are removed
/// first (`--force`; the lab's rule, [`crate::report::out`]).
#[derive(Clone, Copy, Debug)]
pub struct OutDir<'a> {
    /// The folder.
    pub dir: &'a Path,
    /// Remove an earlier report's files first.
    pub force: bool,
}

impl Context {
    /// Starts the clock and the run's record, and reads the machine's facts beside the
    /// replay: a thread started for them after it waited for its own start as well as for
    /// their `/proc` reads (0.7 ms of the serial end).
    pub fn start() -> Context {
        let started = Instant::now();
        let run_info = RunInfo::start();
        let machine = std::thread::Builder::new()
            .name("machine".to_owned())
            .spawn(Machine::detect);
        Context {
            started,
            run_info,
            machine,
        }
    }

    /// Writes `run`'s report into `out` (`variants`: the `--variant` specs as given,
    /// `command`: the command line as typed) once its zones have passed their check, which
    /// runs beside the result's tables and the rendering (the parse's core is free by now).
    pub fn write(
        self,
        run: &ReplayRun,
        file: &Path,
        opts: &ReplayOptions,
        variants: &[String],
        out: OutDir<'_>,
        command: String,
    ) -> Reported {
        let OutDir { dir: out, force } = out;
        let Context {
            started,
            mut run_info,
            machine,
        } = self;
        let zones = run.zones();
        std::thread::scope(|s| {
            let zones = &zones;
            let check = std::thread::Builder::new()
                .name("check".to_owned())
                .spawn_scoped(s, move || check_zones(zones));
            let result = to_result(run, file, opts);
            let summary = summary(&result, run);
            let pages = pages(&result, run, file);
            let report = LabReport {
                tool: format!("{} {}", env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
                command,
                // Detected here where the thread could not start.
                machine: machine
                    .ok()
                    .and_then(|h| h.join().ok())
                    .unwrap_or_else(Machine::detect),
                run: {
                    run_info.finish();
                    run_info
                },
                verdicts: Vec::new(),
                opts: lab_opts(run, variants),
                significance_test: report::compare::SIGNIFICANCE_TEST.to_owned(),
                experiments: vec![ExperimentReport::new(
                    result,
                    started.elapsed().as_secs_f64(),
                )],
                failures: Vec::new(),
            };
            let checked = || match check {
                Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                Err(_) => check_zones(zones),
            };
            // With `force`, the earlier report's files go first (the lab's rule).
            let cleared = if force {
                report::out::clear_report(out)
            } else {
                Ok(())
            };
            let written =
                cleared.and_then(|()| report::write_pages(out, &report, Some(&pages), checked));
            Reported {
                report,
                summary,
                written,
            }
        })
    }
}

/// The lab options a replay's report records.
fn lab_opts(run: &ReplayRun, variants: &[String]) -> LabOpts {
    LabOpts {
        quick: false,
        seed: 0,
        threads: Some(1),
        iterations: Some(1),
        zone_pages: Some(run.geo.zones.iter().map(|z| z.pages).sum()),
        nodes: 1,
        variants: Some(variants.to_vec()),
        record_traces: None,
        validate_only: false,
    }
}
