//! The result model: what an experiment, a trace replay or any other producer hands to the
//! report (samples per variant and metric, extra tables, plots, configuration), and the
//! options a lab run was given.
//!
//! It lives in `report` so that every producer (`experiments`, `trace`, `bench`) depends on
//! the report and none on another producer. Producers fill these types; [`compare`](super::compare)
//! summarises the samples, [`markdown`](super::markdown) and [`plot`](super::plot) render them.

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
    /// Zone size in pages (None: the experiment's default); with several nodes, each node's.
    pub zone_pages: Option<u64>,
    /// NUMA nodes of the machine the experiments that take nodes run on (`--nodes`; 1: the
    /// one zone every experiment runs on without it). See `experiments::numa`.
    pub nodes: usize,
    /// Variants to run besides the baseline (None: all).
    pub variants: Option<Vec<String>>,
    /// Write the first iteration of each variant of the deterministic experiments as a
    /// kernel trace into this folder (`<experiment>-<variant>.txt`).
    pub record_traces: Option<std::path::PathBuf>,
    /// Check the arguments only: every experiment checks its sizes and stops at
    /// [`pick`](crate::experiments) with a "validated" error, before any work. The CLI runs this
    /// pass first, so that a bad argument fails the command before anything is written.
    #[serde(skip)]
    pub validate_only: bool,
}

impl LabOpts {
    /// Options for tests: tiny sizes, the given seed, every default.
    #[cfg(test)]
    pub fn quick_test(seed: u64) -> LabOpts {
        LabOpts {
            quick: true,
            seed,
            threads: None,
            iterations: None,
            zone_pages: None,
            nodes: 1,
            variants: None,
            record_traces: None,
            validate_only: false,
        }
    }
}

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

/// One measured value: `variant` x `metric` x repetition. A producer records the samples of
/// each (variant, metric) in repetition order, so that the `k`-th sample of every variant is
/// repetition `k`, and every variant's repetition `k` ran on the same seed: the pairing the
/// paired tests use, explicit in [`repetition`](Sample::repetition) and
/// [`seed`](Sample::seed) (`check_pairing` holds a result to it).
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// The variant (policy set) it belongs to, e.g. `free_high=off`.
    pub variant: String,
    /// The metric's name (as in [`MetricDef::name`]).
    pub metric: String,
    /// Which repetition, from 0: the `k`-th sample recorded for this variant and metric.
    pub repetition: usize,
    /// The RNG seed the repetition ran on; `None` where it draws nothing at random (an
    /// instruction count, a sweep of fixed sizes, a trace replay).
    pub seed: Option<u64>,
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

/// Everything one experiment produced. In `results.json` each sample also carries its
/// `repetition` and its metric's `unit` ([`ExperimentResult`]'s `Serialize`).
#[derive(Clone, Debug)]
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
    /// compare with the tables (the verdicts on the seed's own figures come from
    /// `experiments::seeds` and [`verdict`](super::verdict)).
    pub expected_shape: String,
    /// The configuration used (sizes, threads, knobs).
    pub config: serde_json::Value,
    /// More worker threads than cores were used (the report flags it).
    pub oversubscribed: bool,
}

impl ExperimentResult {
    /// The samples of `metric` under `variant`, in the order the producer recorded them
    /// (repetition order).
    pub fn samples_of<'a>(
        &'a self,
        variant: &'a str,
        metric: &'a str,
    ) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples
            .iter()
            .filter(move |s| s.variant == variant && s.metric == metric)
    }
}

impl ExperimentResult {
    /// Whether the samples pair as the paired tests read them: the `k`-th sample recorded for
    /// a variant and metric is repetition `k`, and every variant's samples of one metric and
    /// one repetition ran on one seed. The first break, in words.
    pub fn check_pairing(&self) -> Result<(), String> {
        use std::collections::HashMap;
        let mut next: HashMap<(&str, &str), usize> = HashMap::new();
        let mut seeds: HashMap<(&str, usize), (&str, Option<u64>)> = HashMap::new();
        for s in &self.samples {
            let k = next.entry((&s.variant, &s.metric)).or_insert(0);
            if s.repetition != *k {
                return Err(format!(
                    "{}: sample {} of {} '{}' says repetition {}",
                    self.name, k, s.variant, s.metric, s.repetition
                ));
            }
            *k += 1;
            let first = seeds
                .entry((&s.metric, s.repetition))
                .or_insert((&s.variant, s.seed));
            if first.1 != s.seed {
                return Err(format!(
                    "{}: repetition {} of '{}' ran on seed {:?} under {} but {:?} under {}",
                    self.name, s.repetition, s.metric, first.1, first.0, s.seed, s.variant
                ));
            }
        }
        Ok(())
    }
}

/// `results.json`'s form of an [`ExperimentResult`]: its fields in declaration order, each
/// sample written as `SampleRow`s.
impl Serialize for ExperimentResult {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        // Destructured whole: a field added to the struct fails to compile here until it is
        // written out too.
        let ExperimentResult {
            name,
            seed,
            change,
            baseline,
            variants,
            metrics,
            samples,
            tables,
            plots,
            expected_shape,
            config,
            oversubscribed,
        } = self;
        #[derive(Serialize)]
        struct Doc<'a> {
            name: &'a str,
            seed: &'a str,
            change: &'a str,
            baseline: &'a str,
            variants: &'a [String],
            metrics: &'a [MetricDef],
            samples: Vec<SampleRow<'a>>,
            tables: &'a [Table],
            plots: &'a [Plot],
            expected_shape: &'a str,
            config: &'a serde_json::Value,
            oversubscribed: bool,
        }
        Doc {
            name,
            seed,
            change,
            baseline,
            variants,
            metrics,
            samples: sample_rows(samples, metrics),
            tables,
            plots,
            expected_shape,
            config,
            oversubscribed: *oversubscribed,
        }
        .serialize(ser)
    }
}

/// One sample as `results.json` writes it: the pairing and the unit explicit, so a reader
/// needs neither the recording order nor a join with `metrics` (docs/results-schema.md).
#[derive(Debug, PartialEq, Serialize)]
pub struct SampleRow<'a> {
    /// The variant.
    pub variant: &'a str,
    /// The metric's name.
    pub metric: &'a str,
    /// Which repetition, from 0: the `k`-th sample recorded for this variant and metric.
    /// Sample `k` of every variant is the same repetition on the same seed, so rows with one
    /// `metric` and one `repetition` are the pairs the paired tests compare.
    pub repetition: usize,
    /// The RNG seed of the repetition (the same for every variant of it); `None` where it
    /// draws nothing at random.
    pub seed: Option<u64>,
    /// The value, in `unit`.
    pub value: f64,
    /// The metric's unit (`MetricDef::unit`; empty for a count with none).
    pub unit: &'a str,
}

/// `samples` with their repetition, seed and unit.
pub fn sample_rows<'a>(samples: &'a [Sample], metrics: &'a [MetricDef]) -> Vec<SampleRow<'a>> {
    samples
        .iter()
        .map(|s| {
            let unit = metrics
                .iter()
                .find(|m| m.name == s.metric)
                .map_or("", |m| m.unit.as_str());
            SampleRow {
                variant: &s.variant,
                metric: &s.metric,
                repetition: s.repetition,
                seed: s.seed,
                value: s.value,
                unit,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(variant: &str, metric: &str, repetition: usize, seed: u64, value: f64) -> Sample {
        Sample {
            variant: variant.to_owned(),
            metric: metric.to_owned(),
            repetition,
            seed: Some(seed),
            value,
        }
    }

    fn result(samples: Vec<Sample>) -> ExperimentResult {
        ExperimentResult {
            name: "exp".into(),
            seed: "000".into(),
            change: String::new(),
            baseline: "off".into(),
            variants: vec!["off".into(), "on".into()],
            metrics: Vec::new(),
            samples,
            tables: Vec::new(),
            plots: Vec::new(),
            expected_shape: String::new(),
            config: serde_json::Value::Null,
            oversubscribed: false,
        }
    }

    /// Every row carries its sample's repetition and seed, and its metric's unit (none for a
    /// metric not defined).
    #[test]
    fn sample_rows_carry_repetition_seed_and_unit() {
        let metrics = [
            MetricDef {
                name: "ops/s".into(),
                unit: "ops/s".into(),
                kind: MetricKind::Rate,
            },
            MetricDef {
                name: "hold".into(),
                unit: "ns".into(),
                kind: MetricKind::Latency,
            },
        ];
        let samples = [
            sample("off", "ops/s", 0, 7, 1.0),
            sample("on", "ops/s", 0, 7, 2.0),
            sample("off", "hold", 0, 7, 3.0),
            sample("off", "ops/s", 1, 8, 4.0),
            sample("on", "other", 0, 7, 6.0),
        ];
        let rows = sample_rows(&samples, &metrics);
        let got: Vec<_> = rows
            .iter()
            .map(|r| (r.variant, r.metric, r.repetition, r.seed, r.value, r.unit))
            .collect();
        assert_eq!(
            got,
            [
                ("off", "ops/s", 0, Some(7), 1.0, "ops/s"),
                ("on", "ops/s", 0, Some(7), 2.0, "ops/s"),
                ("off", "hold", 0, Some(7), 3.0, "ns"),
                ("off", "ops/s", 1, Some(8), 4.0, "ops/s"),
                ("on", "other", 0, Some(7), 6.0, ""),
            ]
        );
        let json = serde_json::to_value(&rows[3]).unwrap();
        assert_eq!(json["seed"], 8);
        assert_eq!(json["repetition"], 1);
    }

    /// Two variants' samples of one repetition on different seeds, or a sample recorded out of
    /// its repetition's order, break the pairing; interleaved metrics and variants do not.
    #[test]
    fn pairing_fails_on_different_seeds_in_one_repetition() {
        let good = vec![
            sample("off", "m", 0, 1, 1.0),
            sample("off", "n", 0, 1, 1.0),
            sample("on", "m", 0, 1, 2.0),
            sample("off", "m", 1, 2, 1.0),
            sample("on", "m", 1, 2, 2.0),
        ];
        assert_eq!(result(good.clone()).check_pairing(), Ok(()));
        let mut bad = good.clone();
        bad[4].seed = Some(3);
        let e = result(bad).check_pairing().unwrap_err();
        assert!(e.contains("repetition 1 of 'm'"), "{e}");
        let mut unseeded = good.clone();
        unseeded[2].seed = None;
        assert!(result(unseeded).check_pairing().is_err());
        let mut skipped = good;
        skipped[3].repetition = 2;
        let e = result(skipped).check_pairing().unwrap_err();
        assert!(e.contains("sample 1 of off 'm' says repetition 2"), "{e}");
    }
}
