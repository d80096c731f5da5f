//! Which runs of CPU `c`'s vmstat worker come at or before trace time `t`: the one schedule
//! that the replay's workers keep ([`Vmstat`]: the first timers at the first event, the
//! re-queue at each run) and that the start-count walk times its bounds on `high` at the
//! file's start with (`--whole-file`, `StartCounts::time_highs`). The two had a clock each:
//! the walk counted one run a second from the file's start, while the replay runs CPU `c`'s
//! worker on its own second (`vmstat_update` re-queues with `round_jiffies_relative`,
//! `mm/vmstat.c`), placed from its runs in the trace ([`Vmstat::align_ahead`]). 7.2-4g-6cpu
//! p_thp, Normal CPU 1: the file starts at 127.62 s and CPU 1's timer fires at x.81, so four
//! runs come before the free that drained 682 pages at 131.043609, where the walk counted
//! three; the `high` it read decayed one eighth too far in the replay.
//!
//! [`Schedule`] is the replay's timers as they stand before the first event: each run at its
//! timer's firing (or, for a CPU's first run in the trace, at that run where it waits for
//! it: `ahead::waits_for_mark`), on a busy CPU at its task's pause as the CPU's events show
//! it (`late.rs`, [`Pauses`]; where the kernel's preemption is voluntary, not inside a free
//! call: `Replayer::inside_free`), re-queued from there. 6.12-4g-loads p_file, Normal CPU 1:
//! `awk-1214` frees a page every 1 to 12 ms from the file's start (103.785 s); each pause
//! follows a single free, so the replay's run of 104.80 waits to its limit (105.80) and the
//! re-queue from there skips a second: two runs before the free that drained at 107.663140,
//! not four. What it leaves out is what the replay
//! decides from state the walk does not have when it reads a bound, the count and `high`:
//! a late run the replay holds past a pause because its decay would drain there
//! (`Vmstat::still_late`), an idle CPU's run held to its wake for the same reason
//! (`Vmstat::hold_woken`), a worker that stopped because its decay had nothing left to do
//! (`high` at `high_min`, where a further run changes nothing) and the shepherd's runs (only
//! a stopped worker's); and the phases the trace's runs move later (a CPU's own runs: the
//! walk stops reading `high` at its first drain). Before that drain the kernel's runs
//! drained nothing, so neither would the replay's from the `high` the walk reads.

use super::clock::{jiffy_at, next_boundary, ns_of_at, round_rel};
use super::late::limit;
use super::wheel::fire_at;
use super::{RunsAhead, Vmstat};
use crate::trace::replay::infer::worker_runs::Pauses;

/// CPU `cpu`'s first timer at the first event, at `t`, on its phase `phase`: pending at its
/// next boundary, `(expires, fires)` ([`Vmstat`]'s start: a machine whose workers run).
pub(super) fn first_timer(
    phase: Option<u64>,
    cpu: u32,
    t: u64,
    hz: u32,
    wheel: bool,
) -> (i64, i64) {
    let expires = next_boundary(jiffy_at(phase, hz, t), cpu, hz);
    (
        expires,
        fire_at(wheel, expires, expires - i64::from(hz), hz),
    )
}

/// The timer CPU `cpu`'s worker re-queues at its run at jiffy `j`, `(expires, fires)`:
/// `queue_delayed_work_on(.., round_jiffies_relative(sysctl_stat_interval))`
/// (`vmstat_update`, `mm/vmstat.c`).
pub(super) fn requeue(j: i64, cpu: u32, hz: u32, wheel: bool) -> (i64, i64) {
    let expires = round_rel(j, cpu, hz);
    (expires, fire_at(wheel, expires, j, hz))
}

/// Whether a CPU's run firing at `fire_ns` (expired at `expiry_ns`) waits, at an event at
/// `t`, for the CPU's run ahead at `at` (`ahead::waits_for_mark`).
pub(super) fn waits(at: u64, (fire_ns, expiry_ns): (u64, u64), t: u64) -> bool {
    at >= fire_ns && at.saturating_sub(expiry_ns) < 1_000_000_000 && t <= at
}

/// One CPU's worker timer at the first event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Timer {
    /// The CPU's phase (its own, or the shared one).
    phase: Option<u64>,
    expires: i64,
    fires: i64,
    /// Its first run in the trace ([`RunsAhead`]).
    ahead_ns: Option<u64>,
}

/// The workers' on-time runs from the first event ([`Vmstat::schedule`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    hz: u32,
    wheel: bool,
    /// The trace's `vmstat_update` lines are the runs: no timer runs one.
    traced: bool,
    /// A busy CPU's worker waits for its task's pause ([`Vmstat::set_late_runs`]).
    late: bool,
    /// Not inside a batch of frees (voluntary preemption, [`Schedule::no_switch_in_free`]).
    in_batch: bool,
    cpus: Vec<Timer>,
}

impl Schedule {
    /// CPU `cpu`'s worker runs the replay has done by trace time `t` (none where the trace's
    /// lines are the runs: they count them), a busy CPU's late ones placed at its `pauses`
    /// where given ([`Pauses::run_at`]: dated at the pause, done there or, held inside a
    /// free call, at the CPU's next event that is no free), else at their timers.
    pub fn runs_through(&self, cpu: u32, t: u64, pauses: Option<&Pauses>) -> u32 {
        self.runs_around(cpu, t, pauses).1
    }

    /// [`Schedule::runs_through`] before an event at `t` and through it: the replay does the
    /// runs due by an event before it and its commits, but the trace's run at `t` is the
    /// event (`Vmstat::mark`), after them.
    pub fn runs_around(&self, cpu: u32, t: u64, pauses: Option<&Pauses>) -> (u32, u32) {
        let n = self.cpus.len();
        let Some(w) = self
            .cpus
            .get(cpu as usize % n.max(1))
            .filter(|_| !self.traced)
        else {
            return (0, 0);
        };
        let (hz, own) = (self.hz, w.phase);
        let (mut expires, mut fires, mut ahead_ns) = (w.expires, w.fires, w.ahead_ns);
        let mut runs = 0u32;
        loop {
            let fire_ns = ns_of_at(own, hz, fires);
            let expiry_ns = ns_of_at(own, hz, expires);
            // The trace's run of the CPU comes where the trace shows it: before the timer (a
            // mark runs the worker, `Vmstat::mark`), or the one the timer waits for.
            let (at, done) = match ahead_ns {
                Some(a) if a < fire_ns || waits(a, (fire_ns, expiry_ns), fire_ns) => {
                    if a == t {
                        return (runs, runs.saturating_add(1));
                    }
                    ahead_ns = None;
                    (a, a)
                }
                _ => match pauses.filter(|_| self.late) {
                    Some(p) => {
                        let limit = ns_of_at(own, hz, limit(expires, hz));
                        p.run_at(fire_ns, limit, self.in_batch)
                    }
                    None => (fire_ns, fire_ns),
                },
            };
            if done > t || runs == u32::MAX {
                return (runs, runs);
            }
            runs += 1;
            (expires, fires) = requeue(jiffy_at(own, hz, at), cpu, hz, self.wheel);
        }
    }

    /// A late run waits for a pause outside a batch of frees: the kernel's preemption is
    /// voluntary (6.12), so no kworker runs between `free_unref_folios`' prepare and commit
    /// (`Replayer::inside_free`, `mid_free_no_switch`).
    pub fn no_switch_in_free(mut self, on: bool) -> Schedule {
        self.in_batch = on;
        self
    }
}

impl Vmstat {
    /// The workers as the replay sets them up before its first event: `cpus` CPUs under
    /// `hz` (0: [`super::DEFAULT_HZ`]), on the timer wheel or not
    /// ([`Vmstat::set_timer_wheel`]), the phase given or not ([`Vmstat::set_phase`]), late
    /// runs or not ([`Vmstat::set_late_runs`]), placed
    /// from the runs ahead ([`Vmstat::align_ahead`]), the trace's runs the runs or not
    /// ([`Vmstat::set_traced`]).
    pub fn placed(
        cpus: u32,
        hz: u32,
        (wheel, phase, late): (bool, Option<u64>, bool),
        ahead: &RunsAhead,
        traced: bool,
    ) -> Vmstat {
        let mut v = Vmstat::new(cpus, hz);
        v.set_timer_wheel(wheel);
        v.set_late_runs(late);
        if let Some(p) = phase {
            v.set_phase(p);
        }
        v.align_ahead(ahead);
        if traced {
            v.set_traced(true);
        }
        v
    }

    /// The schedule of the workers' runs from a first event at `first_ns`, as their timers
    /// stand now (before the first event): the phase assumed there where nothing placed it,
    /// each CPU's first timer as [`Vmstat`]'s start arms it.
    pub fn schedule(&self, first_ns: u64) -> Schedule {
        let shared = if self.aligned {
            self.phase_ns
        } else {
            Some(first_ns)
        };
        let cpus = self.work.iter().enumerate().map(|(c, w)| {
            let phase = w.phase_ns.or(shared);
            let (expires, fires) = first_timer(phase, c as u32, first_ns, self.hz, self.wheel);
            Timer {
                phase,
                expires,
                fires,
                ahead_ns: w.ahead_ns,
            }
        });
        Schedule {
            hz: self.hz,
            wheel: self.wheel,
            traced: self.traced,
            late: self.late_runs,
            in_batch: false,
            cpus: cpus.collect(),
        }
    }
}

#[cfg(test)]
mod tests;
