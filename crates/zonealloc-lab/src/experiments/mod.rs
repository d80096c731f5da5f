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
pub mod numa;
pub mod pcp_lock;
pub mod repeat;
pub mod seeds;
pub mod tail_merge;
pub mod valgrind;

mod registry;
pub use registry::all;

// The result model lives in `report` (trace replay fills it too); experiments name it from
// here as before.
pub use crate::report::{
    file_slug, ExperimentResult, LabOpts, MetricDef, MetricKind, Plot, PlotKind, Sample, Series,
    Table,
};
pub use crate::rng::SplitMix;

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
    ///
    /// Every experiment calls this after checking its other arguments and before any work;
    /// with [`LabOpts::validate_only`] it ends the run there ([`LabError::validated`]).
    pub fn pick<T: Clone>(
        &self,
        all: &[T],
        name: impl Fn(&T) -> &str,
        exp: &str,
    ) -> Result<Vec<T>, LabError> {
        let Some(wanted) = &self.variants else {
            if self.validate_only {
                return Err(LabError::validated());
            }
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
        if self.validate_only {
            return Err(LabError::validated());
        }
        Ok(all
            .iter()
            .enumerate()
            .filter(|(i, v)| *i == 0 || wanted.iter().any(|w| w == name(v)))
            .map(|(_, v)| v.clone())
            .collect())
    }
}

/// `f(0)`, .., `f(n - 1)` on as many threads as the machine has cores, results in order:
/// for runs that are deterministic whatever else runs beside them (a simulation, a valgrind
/// child), never for timings.
pub fn in_parallel<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<T>>> = Mutex::new((0..n).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..cores.min(n) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let v = f(i);
                out.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(v);
            });
        }
    });
    out.into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|v| v.expect("every job ran"))
        .collect()
}

/// Progress reporting: `(done, total)` in the experiment's own units.
pub type Progress<'a> = &'a (dyn Fn(u64, u64) + Sync);

/// An experiment's failure (bad sizes, an allocator error that should not happen).
#[derive(Debug)]
pub struct LabError(pub String);

/// The message of [`LabError::validated`].
const VALIDATED: &str = "arguments valid (validate-only pass)";

impl LabError {
    /// What [`LabOpts::pick`] returns in a validate-only pass once every argument checked out:
    /// not a failure, the end of the pass.
    pub fn validated() -> Self {
        LabError(VALIDATED.to_owned())
    }

    /// Whether this is [`LabError::validated`].
    pub fn is_validated(&self) -> bool {
        self.0 == VALIDATED
    }
}

impl std::fmt::Display for LabError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LabError {}

/// One experiment.
///
/// `run` checks its arguments first and calls [`LabOpts::pick`] before any work (the CLI's
/// validate-only pass relies on it).
pub trait Experiment: Sync {
    /// CLI name, e.g. `tail-merge`.
    fn name(&self) -> &'static str;
    /// One line for `--help`.
    fn about(&self) -> &'static str;
    /// Whether it runs on several NUMA nodes (`--nodes`); one that does not refuses it.
    fn takes_nodes(&self) -> bool {
        false
    }
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
    fn validate_only_stops_at_pick_after_checking_the_names() {
        let mut o = LabOpts::quick_test(1);
        o.validate_only = true;
        assert!(o.pick(&ALL, |v| v, "x").unwrap_err().is_validated());
        o.variants = Some(vec!["nope".into()]);
        assert!(!o.pick(&ALL, |v| v, "x").unwrap_err().is_validated());
        for e in all() {
            let err = e.run(&o, &|_, _| {}).unwrap_err();
            assert!(!err.is_validated(), "{}", e.name());
            o.variants = None;
            assert!(
                e.run(&o, &|_, _| {}).unwrap_err().is_validated(),
                "{}",
                e.name()
            );
            o.variants = Some(vec!["nope".into()]);
        }
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
