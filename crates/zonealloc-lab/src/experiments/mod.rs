//! The five experiments, one per seed change, behind one interface.
//!
//! Each experiment runs the seed's policy off (the kernel before the change, the *baseline*)
//! and on (after, the *variant*) in the same run, repeats each measurement to get samples,
//! and returns an [`ExperimentResult`] that the report module turns into compare-kernels
//! style tables, plots and JSON. Experiments never print; they report progress through
//! [`Progress`].

pub mod batch_scale;
pub mod drain;
pub mod free_high;
pub mod pcp_lock;
pub mod tail_merge;

mod registry;
pub use registry::all;

use serde::Serialize;

/// How an experiment is sized and seeded (the `zonealloc lab` flags).
#[derive(Clone, Debug, Serialize)]
pub struct LabOpts {
    /// Tiny sizes for tests: every experiment must finish in about a second.
    pub quick: bool,
    /// Seed of every pseudo-random choice (experiments are deterministic given it, except
    /// for timings and real-thread interleavings).
    pub seed: u64,
    /// Worker threads (None: the experiment's default).
    pub threads: Option<usize>,
    /// Repetitions of each measurement (None: the experiment's default).
    pub iterations: Option<usize>,
    /// Zone size in pages (None: the experiment's default).
    pub zone_pages: Option<u64>,
    /// Variants to run besides the baseline (None: all).
    pub variants: Option<Vec<String>>,
    /// Write the first iteration of each variant of the deterministic experiments as a
    /// kernel trace into this folder (`<experiment>-<variant>.txt`).
    pub record_traces: Option<std::path::PathBuf>,
}

impl LabOpts {
    /// `--iterations`, or the experiment's default (`quick` or full); an error for 0.
    pub fn iterations_or(&self, quick: usize, full: usize, exp: &str) -> Result<usize, LabError> {
        let n = self
            .iterations
            .unwrap_or(if self.quick { quick } else { full });
        if n == 0 {
            return Err(LabError(format!("{exp}: iterations must be at least 1")));
        }
        Ok(n)
    }

    /// `--threads`, or `default`; an error outside `1..=max`.
    pub fn threads_or(&self, default: usize, max: usize, exp: &str) -> Result<usize, LabError> {
        let n = self.threads.unwrap_or(default);
        if n == 0 || n > max {
            return Err(LabError(format!(
                "{exp}: threads must be 1..={max}, not {n}"
            )));
        }
        Ok(n)
    }

    /// Options for tests: tiny sizes, the given seed, every default.
    #[cfg(test)]
    pub fn quick_test(seed: u64) -> LabOpts {
        LabOpts {
            quick: true,
            seed,
            threads: None,
            iterations: None,
            zone_pages: None,
            variants: None,
            record_traces: None,
        }
    }

    /// Where iteration `iteration` of `variant` of experiment `exp` records its trace: only
    /// the first iteration, only with `--record-traces`.
    pub fn trace_path(
        &self,
        exp: &str,
        variant: &str,
        iteration: usize,
    ) -> Option<std::path::PathBuf> {
        let dir = self.record_traces.as_ref().filter(|_| iteration == 0)?;
        Some(dir.join(format!("{exp}-{}.txt", file_slug(variant))))
    }

    /// The variants to run, in their order: all of `all`, or the baseline (the first) plus
    /// those named by `--variants`. An unknown name is an error that lists the valid ones.
    pub fn pick<T: Clone>(
        &self,
        all: &[T],
        name: impl Fn(&T) -> &str,
        exp: &str,
    ) -> Result<Vec<T>, LabError> {
        let Some(wanted) = &self.variants else {
            return Ok(all.to_vec());
        };
        if let Some(bad) = wanted
            .iter()
            .find(|w| !all.iter().any(|v| name(v) == w.as_str()))
        {
            let valid: Vec<&str> = all.iter().map(&name).collect();
            return Err(LabError(format!(
                "{exp}: no variant '{bad}'; its variants are: {}",
                valid.join(", ")
            )));
        }
        Ok(all
            .iter()
            .enumerate()
            .filter(|(i, v)| *i == 0 || wanted.iter().any(|w| w == name(v)))
            .map(|(_, v)| v.clone())
            .collect())
    }
}

pub use crate::rng::SplitMix;

/// `name` with every character but ASCII letters, digits and `-` replaced by `_`, for file
/// names made of variant names (`free_high=off,tail_merge=off`).
pub fn file_slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// What a metric measures, which decides how samples are summarised (mmtests'
/// compare-kernels: harmonic mean for rates, arithmetic mean for latencies and counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MetricKind {
    /// Higher is better; summarised by the harmonic mean.
    Rate,
    /// Lower is better; summarised by the mean.
    Latency,
    /// A count or index; summarised by the mean; `higher_is_better` says which way is good.
    Count {
        /// Whether a larger value is an improvement.
        higher_is_better: bool,
    },
}

/// One metric of an experiment.
#[derive(Clone, Debug, Serialize)]
pub struct MetricDef {
    /// Name, e.g. `pages/s` or `refill hold p99`.
    pub name: String,
    /// Unit for the tables, e.g. `ns`, `msg/s`, `%`.
    pub unit: String,
    /// How samples are summarised and compared.
    pub kind: MetricKind,
}

/// One measured value: `variant` x `metric` x repetition.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// The variant (policy set) it belongs to, e.g. `free_high=off`.
    pub variant: String,
    /// The metric's name (as in [`MetricDef::name`]).
    pub metric: String,
    /// The value.
    pub value: f64,
}

/// A free-form table (e.g. the five most reused frames of seed 000).
#[derive(Clone, Debug, Serialize)]
pub struct Table {
    /// Caption.
    pub title: String,
    /// Column headers.
    pub header: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
}

/// How a plot draws its series.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PlotKind {
    /// Lines through (x, y) points.
    Lines,
    /// Bars: x is the bar's index, y its height.
    Bars,
    /// A cumulative distribution: the points are raw values (x) and y is ignored.
    Cdf,
}

/// One named series of a plot.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// Points.
    pub points: Vec<(f64, f64)>,
}

/// A plot the report renders to `<file_stem>.svg`.
#[derive(Clone, Debug, Serialize)]
pub struct Plot {
    /// File name without extension.
    pub file_stem: String,
    /// Title.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// How to draw it.
    pub kind: PlotKind,
    /// The data.
    pub series: Vec<Series>,
}

/// Everything one experiment produced.
#[derive(Clone, Debug, Serialize)]
pub struct ExperimentResult {
    /// The experiment's CLI name, e.g. `tail-merge`.
    pub name: String,
    /// The seed file it reproduces, e.g. `003_6156cd1fe50dd7c6`.
    pub seed: String,
    /// One line: the upstream change.
    pub change: String,
    /// The variant all others are compared with (the seed's policy off).
    pub baseline: String,
    /// All variants, baseline first.
    pub variants: Vec<String>,
    /// Metrics, in table order.
    pub metrics: Vec<MetricDef>,
    /// Raw samples.
    pub samples: Vec<Sample>,
    /// Extra tables.
    pub tables: Vec<Table>,
    /// Plots.
    pub plots: Vec<Plot>,
    /// The shape the seed's measurements show, in one or two sentences, for the reader to
    /// compare with the tables (the report does not judge it).
    pub expected_shape: String,
    /// The configuration used (sizes, threads, knobs).
    pub config: serde_json::Value,
    /// More worker threads than cores were used (the report flags it).
    pub oversubscribed: bool,
}

/// Progress reporting: `(done, total)` in the experiment's own units.
pub type Progress<'a> = &'a (dyn Fn(u64, u64) + Sync);

/// An experiment's failure (bad sizes, an allocator error that should not happen).
#[derive(Debug)]
pub struct LabError(pub String);

impl std::fmt::Display for LabError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LabError {}

/// One experiment.
pub trait Experiment: Sync {
    /// CLI name, e.g. `tail-merge`.
    fn name(&self) -> &'static str;
    /// One line for `--help`.
    fn about(&self) -> &'static str;
    /// Runs it.
    fn run(&self, opts: &LabOpts, progress: Progress<'_>) -> Result<ExperimentResult, LabError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [&str; 3] = ["off", "on", "original"];

    #[test]
    fn pick_keeps_every_variant_by_default_and_the_baseline_always() {
        let mut o = LabOpts::quick_test(1);
        assert_eq!(o.pick(&ALL, |v| v, "x").unwrap(), ALL);
        o.variants = Some(vec!["original".into()]);
        assert_eq!(o.pick(&ALL, |v| v, "x").unwrap(), ["off", "original"]);
        o.variants = Some(vec!["off".into()]);
        assert_eq!(o.pick(&ALL, |v| v, "x").unwrap(), ["off"]);
    }

    #[test]
    fn pick_rejects_an_unknown_variant_and_names_the_valid_ones() {
        let mut o = LabOpts::quick_test(1);
        o.variants = Some(vec!["on".into(), "nope".into()]);
        let e = o.pick(&ALL, |v| v, "exp").unwrap_err();
        assert_eq!(
            e.0,
            "exp: no variant 'nope'; its variants are: off, on, original"
        );
    }

    #[test]
    fn zero_iterations_and_threads_out_of_range_are_errors() {
        let mut o = LabOpts::quick_test(1);
        o.iterations = Some(0);
        assert!(o.iterations_or(1, 2, "x").is_err());
        o.threads = Some(5);
        assert!(o.threads_or(1, 4, "x").is_err());
        assert_eq!(o.threads_or(1, 8, "x").unwrap(), 5);
    }
}
