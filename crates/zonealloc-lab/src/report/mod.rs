//! The lab's report folder: `report.md` (the seeds' verdicts, then compare-kernels style
//! tables, the experiment's own tables, expected shape, configuration, plot links),
//! `results.json` (the verdicts, every raw sample, the options, the machine, the run's commit,
//! compiler, date and load, and the comparisons) and one SVG per plot.
//!
//! The pieces: the result model every producer fills ([`ExperimentResult`], [`Sample`],
//! [`Plot`], [`LabOpts`]), [`stats`] (means, spread, Welch's and the paired t-test, confidence
//! intervals), [`compare`] (per metric and variant summaries against the baseline, tested as
//! the design says), [`verdict`] (the seeds' claims judged on a run), [`repetition`] (what
//! the repetition driver did), [`runs`] (earlier runs side by side, `lab compare`),
//! [`markdown`] (the text), [`table`] (plain and markdown tables), [`plot`] (plotters SVG). `experiments`, `trace` and `bench` depend on this
//! module, never on each other.

pub mod compare;
pub mod markdown;
pub mod plot;
pub mod repetition;
mod result;
pub mod runs;
pub mod stats;
pub mod table;
pub mod verdict;

pub use result::{
    file_slug, ExperimentResult, LabOpts, MetricDef, MetricKind, Plot, PlotKind, Sample, Series,
    Table,
};

use std::fs;
use std::path::Path;

use serde::Serialize;

use crate::machine::{Machine, RunInfo};
use compare::{Design, MetricComparison};
use repetition::Repetition;
use verdict::{Judgement, Verdict};

/// One experiment's result with its comparisons, as `results.json` stores it.
#[derive(Clone, Debug, Serialize)]
pub struct ExperimentReport {
    /// What the experiment returned (raw samples, tables, plots, config).
    #[serde(flatten)]
    pub result: ExperimentResult,
    /// The compare-kernels comparisons computed from the samples.
    pub comparisons: Vec<MetricComparison>,
    /// Wall-clock time the experiment took, seconds.
    pub wall_s: f64,
    /// How the variants' samples relate (which test the comparisons used).
    pub design: Design,
    /// What the repetition driver did (None where it did not run, e.g. trace replay).
    pub repetition: Option<Repetition>,
}

impl ExperimentReport {
    /// Computes the comparisons of `result` (independent samples: Welch's test), which took
    /// `wall_s` seconds to produce.
    pub fn new(result: ExperimentResult, wall_s: f64) -> Self {
        Self::with_design(result, wall_s, Design::Independent)
    }

    /// Computes the comparisons of `result` under `design`.
    pub fn with_design(result: ExperimentResult, wall_s: f64, design: Design) -> Self {
        let comparisons = compare::compare_with(&result, design);
        Self {
            result,
            comparisons,
            wall_s,
            design,
            repetition: None,
        }
    }
}

/// An experiment that failed, with its error.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    /// The experiment's name.
    pub experiment: String,
    /// The error it returned.
    pub error: String,
}

/// A whole lab run: the `results.json` document (and the `--json` output).
#[derive(Clone, Debug, Serialize)]
pub struct LabReport {
    /// The tool and its version, e.g. `zonealloc-lab 0.1.0`.
    pub tool: String,
    /// The command line that produced it.
    pub command: String,
    /// The machine it ran on.
    pub machine: Machine,
    /// The commit, compiler, date and load of the run.
    pub run: RunInfo,
    /// The seeds' claims judged on this run, by seed (empty for trace replays).
    pub verdicts: Vec<Judgement>,
    /// The options every experiment received.
    pub opts: LabOpts,
    /// The significance test used in the comparisons.
    pub significance_test: String,
    /// Results, in run order.
    pub experiments: Vec<ExperimentReport>,
    /// Experiments that returned an error.
    pub failures: Vec<Failure>,
}

/// Writes `report.md`, `results.json` and the SVG plots into `dir` (created if missing).
/// Plot failures are reported in `report.md` and returned as warnings, not errors.
pub fn write(dir: &Path, report: &LabReport) -> Result<Vec<String>, String> {
    fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    // The plots render on the other cores while results.json is serialised here, then here
    // too; the files are written in the same order as before (plots, report.md,
    // results.json).
    let (plot_errors, json) = render_plots(dir, report, || {
        serde_json::to_string_pretty(report).map_err(|e| format!("serialising results.json: {e}"))
    });
    let md = markdown::render(report, &plot_errors);
    write_file(&dir.join("report.md"), md.as_bytes())?;
    write_file(&dir.join("results.json"), json?.as_bytes())?;
    Ok(plot_errors.into_iter().map(|(_, err)| err).collect())
}

/// Renders every experiment's plots into `dir` on as many threads as the machine has cores,
/// this one among them once it has run `first` (a trace replay's five plots take 5 ms on one
/// core); returns the failures, by file stem key, in plot order, with what `first` returned.
///
/// This thread joins in rather than waiting: a thread spawned now may start on this core
/// and stay there for milliseconds while the others idle.
fn render_plots<T>(
    dir: &Path,
    report: &LabReport,
    first: impl FnOnce() -> T,
) -> (Vec<(String, String)>, T) {
    let jobs: Vec<(&str, &result::Plot)> = report
        .experiments
        .iter()
        .flat_map(|e| e.result.plots.iter().map(|p| (e.result.name.as_str(), p)))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    // Takes the plots not yet taken, one at a time; the failures with their plot's index.
    let work = || {
        let mut failed = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(&(name, p)) = jobs.get(i) else {
                return failed;
            };
            let file = dir.join(plot_file_name(name, &p.file_stem));
            if let Err(err) = plot::render(p, &file) {
                failed.push((i, file_stem_key(name, &p.file_stem), err));
            }
        }
    };
    let helpers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(jobs.len())
        .saturating_sub(1);
    let (mut failed, got) = std::thread::scope(|s| {
        let others: Vec<_> = (0..helpers)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("plots".to_owned())
                    .spawn_scoped(s, work)
                    .ok()
            })
            .collect();
        let got = first();
        let mut failed = work();
        for h in others {
            // A panic in the plotting library is one here too.
            failed.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        (failed, got)
    });
    failed.sort_by_key(|f| f.0);
    let failed = failed.into_iter().map(|(_, k, e)| (k, e)).collect();
    (failed, got)
}

/// The SVG file name of an experiment's plot: `<experiment>-<stem>.svg` (just `<stem>.svg`
/// when the stem already starts with the experiment's name), with characters unsafe in file
/// names replaced by `_`.
pub fn plot_file_name(experiment: &str, stem: &str) -> String {
    format!("{}.svg", file_stem_key(experiment, stem))
}

fn file_stem_key(experiment: &str, stem: &str) -> String {
    let key = if stem.starts_with(experiment) {
        stem.to_owned()
    } else {
        format!("{experiment}-{stem}")
    };
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    fs::write(path, bytes).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// The seeds' verdicts for the terminal, grouped by seed, the verdict first on each claim's
/// line, then the seed's figure, the lab's and the criterion beneath it.
pub fn verdict_summary(verdicts: &[Judgement]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if verdicts.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "Seeds against this run (verdicts computed from its numbers):"
    );
    let mut seed = "";
    for j in verdicts {
        let c = &j.claim;
        if c.seed != seed {
            seed = c.seed;
            let _ = writeln!(out, "\n{} {} ({})", c.seed, c.experiment, c.seed_file);
        }
        let _ = writeln!(out, "  {:<19} {}", j.verdict.label(), c.claim);
        let _ = writeln!(out, "  {:<19} seed: {}", "", c.seed_figure);
        let _ = writeln!(out, "  {:<19} lab:  {}", "", j.lab_figure);
        let _ = writeln!(out, "  {:<19} by:   {}", "", j.criterion_text);
        if !j.reason.is_empty() {
            let _ = writeln!(out, "  {:<19} why:  {}", "", j.reason);
        }
    }
    let count = |v: Verdict| verdicts.iter().filter(|j| j.verdict == v).count();
    let _ = writeln!(
        out,
        "\n{} reproduced, {} partly, {} not reproduced, {} not measurable here\n",
        count(Verdict::Reproduced),
        count(Verdict::Partly),
        count(Verdict::NotReproduced),
        count(Verdict::NotMeasurable)
    );
    out
}

/// The short closing summary for stdout: the verdicts first (grouped by seed), then per
/// experiment one row per metric and non-baseline variant, changes past a factor of two as
/// ratios.
pub fn summary_table(report: &LabReport) -> String {
    let mut out = verdict_summary(&report.verdicts);
    let mut rows = vec![[
        "experiment".to_owned(),
        "metric".to_owned(),
        "baseline".to_owned(),
        "variant".to_owned(),
        "change".to_owned(),
    ]];
    let mut experiments: Vec<&ExperimentReport> = report.experiments.iter().collect();
    // Grouped by seed, as the verdicts are.
    experiments.sort_by(|a, b| a.result.seed.cmp(&b.result.seed));
    for e in experiments {
        for m in &e.comparisons {
            let Some((base, rest)) = m.cells.split_first() else {
                continue;
            };
            for c in rest {
                rows.push([
                    e.result.name.clone(),
                    format!("{} ({})", m.metric.name, m.metric.unit),
                    format!("{} {}", base.variant, compare::fmt_value(base.summary)),
                    format!("{} {}", c.variant, compare::fmt_value(c.summary)),
                    format!(
                        "{}{}",
                        compare::fmt_change(base.summary, c.summary, c.pct_change),
                        match c.test {
                            compare::TestUsed::Exact => " exact",
                            _ if c.significant => " *",
                            _ => "",
                        }
                    ),
                ]);
            }
        }
    }
    if rows.len() == 1 {
        out.push_str("no results\n");
        return out;
    }
    out.push_str(&table::plain(&rows, usize::MAX, false));
    out.push_str(
        "change: % signed so that positive = improvement, ×N = the variant's value over the \
         baseline's; * = significant at 95% (paired t-test over repetitions on the same seeds; \
         Welch's test where unpaired); exact = the same difference in every repetition\n",
    );
    for e in &report.experiments {
        if let Some(r) = &e.repetition {
            out.push_str(&format!("{}: {}\n", e.result.name, r.describe()));
        }
    }
    if let Some(w) = &report.run.busy_warning {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}
