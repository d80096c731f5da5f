//! The model's worker runs against the trace's where the trace shows every run
//! (`capture-kmem --workqueue`: `workqueue_execute_start` of `vmstat_update`) but they are not
//! taken as the runs (`--no-traced-workers`): how many of the kernel's runs the timers put a
//! run of the model near, on the same CPU. The `*-4g-wq` captures so replayed are the check
//! that the timer rules are not fitted to (BENCHMARKS.md: the timer wheel, the shepherd).

use serde::Serialize;

/// A modelled run within this of a traced one on its CPU matches it: well under the
/// second between a worker's runs, above a late or deferred run's usual delay in the
/// `*-4g-wq` captures.
const NEAR_NS: u64 = 50_000_000;

/// A modelled run within this of a traced one is on time (a tick is 4 ms at HZ 250; the
/// kworker starts well within it).
const EXACT_NS: u64 = 1_000_000;

/// The runs of each CPU's worker, the trace's and the model's, in trace time.
#[derive(Clone, Debug, Default)]
pub struct RunLog {
    traced: Vec<Vec<u64>>,
    modelled: Vec<Vec<u64>>,
}

/// The trace's `vmstat_update` runs, the model's, and how many of the trace's had one of the
/// model's on its CPU within 50 ms and within 1 ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RunCheck {
    /// `vmstat_update` runs the trace showed (not taken as the runs).
    pub traced: u64,
    /// Runs the model did.
    pub modelled: u64,
    /// Traced runs with a modelled run on their CPU within 50 ms.
    pub near: u64,
    /// Traced runs with a modelled run on their CPU within 1 ms.
    pub exact: u64,
}

fn push(runs: &mut Vec<Vec<u64>>, cpu: usize, t: u64) {
    if runs.len() <= cpu {
        runs.resize(cpu + 1, Vec::new());
    }
    runs[cpu].push(t);
}

impl RunLog {
    /// The trace shows CPU slot `cpu`'s `vmstat_update` starting at `t`.
    pub fn traced(&mut self, cpu: usize, t: u64) {
        push(&mut self.traced, cpu, t);
    }

    /// The model ran CPU slot `cpu`'s worker at `t`.
    pub fn modelled(&mut self, cpu: usize, t: u64) {
        push(&mut self.modelled, cpu, t);
    }

    /// The figures; all zero where the trace showed no run.
    pub fn check(&self) -> RunCheck {
        let mut out = RunCheck::default();
        if self.traced.iter().all(Vec::is_empty) {
            return out;
        }
        for (cpu, traced) in self.traced.iter().enumerate() {
            let mut ours = self.modelled.get(cpu).cloned().unwrap_or_default();
            ours.sort_unstable();
            for &t in traced {
                let i = ours.partition_point(|&m| m < t);
                let gap = [i.checked_sub(1), Some(i)]
                    .into_iter()
                    .flatten()
                    .filter_map(|k| ours.get(k))
                    .map(|&m| m.abs_diff(t))
                    .min();
                out.traced += 1;
                out.near += u64::from(gap.is_some_and(|g| g <= NEAR_NS));
                out.exact += u64::from(gap.is_some_and(|g| g <= EXACT_NS));
            }
        }
        out.modelled = self.modelled.iter().map(|m| m.len() as u64).sum();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_traced_run_matches_the_nearest_of_its_cpus_modelled_runs() {
        let mut log = RunLog::default();
        assert_eq!(log.check(), RunCheck::default());
        for t in [1000, 2000, 3000, 4000] {
            log.traced(0, t * MS);
        }
        // On time, 30 ms late, on another CPU, 60 ms early.
        log.modelled(0, 1000 * MS + MS / 2);
        log.modelled(0, 2030 * MS);
        log.modelled(1, 3000 * MS);
        log.modelled(0, 3940 * MS);
        let c = log.check();
        assert_eq!((c.traced, c.modelled, c.near, c.exact), (4, 4, 2, 1));
    }
}
