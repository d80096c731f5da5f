//! The workers' and the shepherd's runs as the trace shows them (`capture-kmem --workqueue`:
//! `workqueue:workqueue_execute_start` of `vmstat_update` and of `vmstat_shepherd`). Each
//! line is the run, at its time and on its CPU: the timers ([`Vmstat::due`]), the late-worker
//! rule ([`Vmstat::set_late_runs`]) and the kworker-drain marks ([`Vmstat::mark`]) stand
//! aside, since they only guess when the kernel's deferrable work ran. The model's own state
//! (pending, `need_update`) is kept up to compare: a run of a worker it had stopped is
//! counted, and the trace wins.

use serde::Serialize;

use super::{Run, Vmstat};

/// What the traced runs were, against the model's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TracedRuns {
    /// `vmstat_update` runs the trace showed, each replayed as the worker's run.
    pub runs: u64,
    /// `vmstat_shepherd` runs the trace showed.
    pub shepherd: u64,
    /// Runs of a worker the model held stopped: its last run changed nothing (as the model
    /// saw it, so `vmstat_update` did not re-queue it) and no traced shepherd run queued it
    /// since. The run is replayed all the same.
    pub unexpected: u64,
}

impl Vmstat {
    /// Takes the trace's runs as the runs (`on`), the timers standing aside, from now on.
    pub fn set_traced(&mut self, on: bool) {
        self.traced = on;
        if on {
            for w in &mut self.work {
                (w.waiting, w.late, w.held) = (false, false, false);
            }
        }
        self.refresh_due();
    }

    /// Whether the trace's runs are the runs ([`Vmstat::set_traced`]).
    pub fn traced(&self) -> bool {
        self.traced
    }

    /// The trace shows CPU `cpu`'s `vmstat_update` starting at `t`: the run to do now, then
    /// [`Vmstat::ran`]. Woken: its CPU had no event in the tick before (`quiet_vmstat` folded
    /// its counters when the tick stopped).
    pub fn traced_run(&mut self, cpu: u32, t: u64) -> Run {
        self.traced_runs.runs += 1;
        let tick = self.tick_ns();
        let c = cpu as usize % self.work.len();
        let w = &mut self.work[c];
        if !w.pending && w.ran.is_some() {
            self.traced_runs.unexpected += 1;
        }
        w.pending = false;
        Run {
            cpu,
            at_ns: t,
            woken: w.last_ns.is_none_or(|l| l + tick < t),
            paused: false,
        }
    }

    /// The trace shows `vmstat_shepherd` starting. It queues, with no delay, the work of
    /// each CPU that is not pending (`delayed_work_pending`) and `need_update` (`mm/vmstat.c`,
    /// `vmstat_shepherd`): that run is the CPU's next traced `vmstat_update`.
    pub fn traced_shepherd(&mut self) {
        self.traced_runs.shepherd += 1;
        for w in &mut self.work {
            w.pending |= w.dirty;
        }
    }
}
