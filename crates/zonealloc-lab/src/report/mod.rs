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
//! [`markdown`] (the text), [`table`] (plain and markdown tables), [`terminal`] (text from
//! files made safe to print), [`plot`] (plotters SVG). `experiments`, `trace` and `bench` depend on this
//! module, never on each other.

pub mod change;
pub mod compare;
pub mod json;
pub mod markdown;
pub mod out;
pub mod plot;
pub mod repetition;
mod result;
pub mod runs;
pub mod stats;
pub mod table;
pub mod terminal;
pub mod verdict;

pub use result::{
    file_slug, ExperimentResult, LabOpts, MetricDef, MetricKind, Plot, PlotKind, Sample, Series,
    Table,
};

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

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

/// The version of `results.json`'s layout ([`LabReport`]), written first as
/// `schema_version` and described in `docs/results-schema.md`. Raise it when a field changes
/// name, type or meaning or goes away (a reader may rely on it); a field added is not a change.
/// Documents without it are version 0 (their samples carry no `repetition` or `unit`).
pub const SCHEMA_VERSION: u32 = 1;

/// A whole lab run: the `results.json` document (and the `--json` output), written with
/// `schema_version` ([`SCHEMA_VERSION`]) before its fields.
#[derive(Clone, Debug)]
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

impl Serialize for LabReport {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        // Destructured whole: a field added to the struct fails to compile here until it is
        // written out too.
        let LabReport {
            tool,
            command,
            machine,
            run,
            verdicts,
            opts,
            significance_test,
            experiments,
            failures,
        } = self;
        #[derive(Serialize)]
        struct Doc<'a> {
            schema_version: u32,
            tool: &'a str,
            command: &'a str,
            machine: &'a Machine,
            run: &'a RunInfo,
            verdicts: &'a [Judgement],
            opts: &'a LabOpts,
            significance_test: &'a str,
            experiments: &'a [ExperimentReport],
            failures: &'a [Failure],
        }
        Doc {
            schema_version: SCHEMA_VERSION,
            tool,
            command,
            machine,
            run,
            verdicts,
            opts,
            significance_test,
            experiments,
            failures,
        }
        .serialize(ser)
    }
}

/// Writes `report.md`, `results.json` and the SVG plots into `dir` (created if missing).
/// Plot failures are reported in `report.md` and returned as warnings, not errors.
pub fn write(dir: &Path, report: &LabReport) -> Result<Vec<String>, String> {
    write_checked(dir, report, || Ok(())).and_then(|written| written)
}

/// [`write()`] (the inner result), with nothing written (`dir` not even created) unless
/// `check` passes (its error is the outer one then).
///
/// `check` runs beside the rendering, which takes the machine's cores: one thread per core,
/// this one among them, takes the pieces in turn (`check`, `results.json`, each plot,
/// `report.md`), renders each in memory and writes it once `check` has passed; the last
/// piece done writes `report.md`, every plot's outcome known by then. A trace replay's
/// pieces take some 10 ms on one core, where a thread that waited for another would leave
/// its core idle.
pub fn write_checked(
    dir: &Path,
    report: &LabReport,
    check: impl FnOnce() -> Result<(), String> + Send,
) -> Result<Result<Vec<String>, String>, String> {
    write_pages(dir, report, None, check)
}

/// A report's own pages in place of the lab's layout: `report.md` as its producer rendered
/// it (the plots that failed are listed under it) and `report.txt`, its fixed-width text
/// (a trace replay's).
#[derive(Clone, Debug)]
pub struct Pages {
    /// `report.md`.
    pub markdown: String,
    /// `report.txt`.
    pub text: String,
}

/// [`write_checked`], with `report.md` and `report.txt` from `pages` where given.
pub fn write_pages(
    dir: &Path,
    report: &LabReport,
    pages: Option<&Pages>,
    check: impl FnOnce() -> Result<(), String> + Send,
) -> Result<Result<Vec<String>, String>, String> {
    // One colour per series name across an experiment's plots.
    let colours: Vec<plot::SeriesColours> = report
        .experiments
        .iter()
        .map(|e| plot::SeriesColours::new(&e.result.plots))
        .collect();
    let plots: Vec<(&str, &result::Plot, &plot::SeriesColours)> = report
        .experiments
        .iter()
        .zip(&colours)
        .flat_map(|(e, c)| {
            e.result
                .plots
                .iter()
                .map(move |p| (e.result.name.as_str(), p, c))
        })
        .collect();
    let pieces = Pieces {
        dir,
        report,
        pages,
        left: AtomicUsize::new(plots.len() + 3),
        plots,
        check: Mutex::new(Some(Box::new(check))),
        passed: (Mutex::new(None), Condvar::new()),
        next: AtomicUsize::new(0),
        out: Mutex::new(Written::default()),
    };
    let helpers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(pieces.count())
        .saturating_sub(1);
    std::thread::scope(|s| {
        let others: Vec<_> = (0..helpers)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("report".to_owned())
                    .spawn_scoped(s, || pieces.work())
                    .ok()
            })
            .collect();
        pieces.work();
        for h in others {
            // A panic in the plotting library is one here too.
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        }
    });
    let written = pieces
        .out
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(e) = written.check_error {
        return Err(e);
    }
    Ok(match written.error {
        Some(e) => Err(e),
        None => Ok(written.plot_errors.into_iter().map(|(_, _, e)| e).collect()),
    })
}

/// What [`write_checked`] renders and writes, taken by index: `check`, `results.json`, the
/// plots, `report.md`.
struct Pieces<'a> {
    dir: &'a Path,
    report: &'a LabReport,
    pages: Option<&'a Pages>,
    /// Each plot with its experiment's name and series colours.
    plots: Vec<(&'a str, &'a result::Plot, &'a plot::SeriesColours)>,
    check: Mutex<Option<Check<'a>>>,
    /// The check's outcome once it has run, and the threads waiting for it.
    passed: (Mutex<Option<bool>>, Condvar),
    /// The next piece to take.
    next: AtomicUsize,
    /// The pieces not yet done.
    left: AtomicUsize,
    out: Mutex<Written>,
}

type Check<'a> = Box<dyn FnOnce() -> Result<(), String> + Send + 'a>;

/// What the pieces left: the check's error, the first file's error, the plots that failed
/// (index, file stem key, error) and `report.md` as rendered before their outcome was known.
#[derive(Default)]
struct Written {
    check_error: Option<String>,
    error: Option<String>,
    plot_errors: Vec<(usize, String, String)>,
    md: Option<String>,
}

impl Pieces<'_> {
    /// The pieces: the check, `results.json`, the plots, `report.md`.
    fn count(&self) -> usize {
        self.plots.len() + 3
    }

    fn out(&self) -> std::sync::MutexGuard<'_, Written> {
        self.out
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes pieces until none is left.
    fn work(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.count() {
                return;
            }
            self.piece(i);
            // The last piece done writes report.md, every plot's outcome known by then.
            if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
                self.write_md();
            }
        }
    }

    fn piece(&self, i: usize) {
        let plots = self.plots.len();
        match i {
            0 => {
                let check = self.check.lock().ok().and_then(|mut c| c.take());
                let dir = self.dir;
                // A check that panics opens the gate shut before the panic goes on: the
                // other threads must not wait for it forever.
                let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    check.map_or(Ok(()), |c| c())
                }))
                .unwrap_or_else(|p| {
                    self.open(false);
                    std::panic::resume_unwind(p)
                });
                let ok = match checked {
                    Err(e) => {
                        self.out().check_error = Some(e);
                        false
                    }
                    Ok(()) => match fs::create_dir_all(dir) {
                        Ok(()) => true,
                        Err(e) => {
                            let e = format!("creating {}: {e}", dir.display());
                            self.out().error.get_or_insert(e);
                            false
                        }
                    },
                };
                self.open(ok);
            }
            1 => {
                let json = json::to_string(self.report)
                    .map_err(|e| format!("serialising results.json: {e}"));
                let written = json.and_then(|j| self.write("results.json", j.as_bytes()));
                if let Err(e) = written {
                    self.out().error.get_or_insert(e);
                }
            }
            i if i < plots + 2 => {
                let (name, p, colours) = self.plots[i - 2];
                let file = plot_file_name(name, &p.file_stem);
                let svg = plot::render_with(p, colours);
                if let Err(err) = svg.and_then(|svg| self.write(&file, svg.as_bytes())) {
                    let key = file_stem_key(name, &p.file_stem);
                    self.out().plot_errors.push((i, key, err));
                }
            }
            _ => {
                // Rendered now as if every plot succeeds; written by the last piece done.
                let md = match self.pages {
                    Some(p) => p.markdown.clone(),
                    None => markdown::render(self.report, &[]),
                };
                self.out().md = Some(md);
            }
        }
    }

    /// Lets the writes go ahead (`ok`) or not.
    fn open(&self, ok: bool) {
        let (passed, cv) = &self.passed;
        *passed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(ok);
        cv.notify_all();
    }

    /// Writes `name` into the directory once the check has passed; nothing otherwise.
    fn write(&self, name: &str, bytes: &[u8]) -> Result<(), String> {
        let (passed, cv) = &self.passed;
        let mut ok = passed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while ok.is_none() {
            ok = cv
                .wait(ok)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        if *ok != Some(true) {
            return Ok(());
        }
        drop(ok);
        write_file(&self.dir.join(name), bytes)
    }

    /// Writes `report.md`, rendered again with the plot failures if there were any.
    fn write_md(&self) {
        let (md, mut errors) = {
            let mut out = self.out();
            (out.md.take(), std::mem::take(&mut out.plot_errors))
        };
        errors.sort_by_key(|e| e.0);
        let md = match (md, self.pages) {
            (Some(md), _) if errors.is_empty() => md,
            (_, Some(p)) => {
                let mut md = p.markdown.clone();
                md.push_str("\n## Plots not rendered\n\n");
                for (_, k, e) in &errors {
                    md.push_str(&format!("- `{k}`: {e}\n"));
                }
                md
            }
            _ => {
                let keyed: Vec<(String, String)> = errors
                    .iter()
                    .map(|(_, k, e)| (k.clone(), e.clone()))
                    .collect();
                markdown::render(self.report, &keyed)
            }
        };
        let mut written = self.write("report.md", md.as_bytes());
        if let (Ok(()), Some(p)) = (&written, self.pages) {
            written = self.write("report.txt", p.text.as_bytes());
        }
        let mut out = self.out();
        out.plot_errors = errors;
        if let Err(e) = written {
            out.error.get_or_insert(e);
        }
    }
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

/// Writes `bytes` as a new file at `path`, replacing the one a run before left there: that one
/// is removed first, not truncated and rewritten. ext4 flushes a file truncated and written
/// again when it is closed (`auto_da_alloc`, its guard for programs that replace files so),
/// which took about 2 ms of a replay's serial end across its report's files (BENCHMARKS.md,
/// issue 16); a rename over the old file triggers the same flush. Whatever stands at `path`
/// and is no file (a directory) stays, and the write's error names it.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if fs::symlink_metadata(path).is_ok_and(|m| !m.is_dir()) {
        fs::remove_file(path).map_err(|e| format!("replacing {}: {e}", path.display()))?;
    }
    fs::write(path, bytes).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// The seeds' verdicts for the terminal, grouped by seed (with its links), the verdict and
/// the claim's kind first on each claim's line, then the seed's words and figure, the lab's
/// figure (and mainline's beside it) and the criterion beneath it; the tally closes it.
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
            for l in c.links {
                let _ = writeln!(out, "  Link: {l}");
            }
        }
        let _ = writeln!(
            out,
            "  {:<19} [{}] {}: {}",
            j.verdict.label(),
            c.kind.label(),
            c.item,
            c.claim
        );
        let _ = writeln!(out, "  {:<19} seed: \"{}\"", "", c.quote);
        if j.verdict == Verdict::NotModelled {
            let _ = writeln!(out, "  {:<19} why:  {}", "", j.reason);
            continue;
        }
        let _ = writeln!(out, "  {:<19}       {}", "", c.seed_figure);
        let _ = writeln!(out, "  {:<19} lab:  {}", "", j.lab_figure);
        if let Some(p) = c.proxy {
            let _ = writeln!(out, "  {:<19} proxy: {p}", "");
        }
        if let Some(m) = &j.mainline {
            let _ = writeln!(
                out,
                "  {:<19} mainline's rule ({}): {} ({})",
                "",
                m.variant,
                m.lab_figure,
                m.verdict.label()
            );
        }
        let _ = writeln!(out, "  {:<19} by:   {}", "", j.criterion_text);
        if !j.reason.is_empty() {
            let _ = writeln!(out, "  {:<19} why:  {}", "", j.reason);
        }
    }
    let _ = writeln!(out, "\n{}", verdict::tally(verdicts).text());
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
            for (i, c) in rest.iter().enumerate() {
                rows.push([
                    e.result.name.clone(),
                    format!("{} ({})", m.metric.name, m.metric.unit),
                    format!("{} {}", base.variant, compare::fmt_value(base.summary)),
                    format!("{} {}", c.variant, compare::fmt_value(c.summary)),
                    compare::change_text(m, i + 1),
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
        "change: the variant's value against the baseline's, a signed % within a factor of two, \
         else the ratio (×N, ÷N), better or worse by the metric's direction (the verdicts print \
         the same figure); *...* = significant at 95% (paired t-test over repetitions on the \
         same seeds; Welch's test where unpaired); exact = the same difference in every \
         repetition\n",
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

#[cfg(test)]
mod tests;
