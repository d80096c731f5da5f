//! The workers' phase from the trace ahead: each CPU's first worker run among the window's
//! first events (those the inferences hold, [`crate::trace::replay::infer::first_events`]),
//! so that the timers keep the kernel's seconds from the window's start, not only from the
//! first run the replay reaches ([`Vmstat::mark`]); and the run the trace shows happens
//! where the trace shows it, not at the timer's expiry before it ([`waits_for_mark`]).
//!
//! The jiffies-second is not in the trace: before a worker's drain shows one, the replay
//! assumed it at the first event. 7.2-2g p_thp: CPU 0's worker drains 832 pages at 551.795 s,
//! near the window's end; assumed at the first event (x.152 s), its decay ran at 551.152,
//! cut `high` 8309 → 7271 while the kernel's stayed up (7552 at its run, from the snapshot
//! after: `high` 6608 = `count`), and the free at 551.415 drained 2016 pages the kernel
//! kept. Placed from the run ahead, CPU 0's runs come at x.791 and the trace's leaves
//! `count` and `high` at the kernel's 6608; CPU 2, with no run in the trace, on the same
//! seconds: drains 23.1% / 4.7% off → 0 / 0.

use std::collections::VecDeque;

use super::schedule::{first_timer, waits};
use super::{Vmstat, Work};
use crate::trace::parse::{lines, Event, EventKind, Parser};
use crate::trace::replay::infer::worker_runs::{earliest_in_second, RUNS_KEPT};

/// Each CPU's worker runs in the events ahead: the time of its worker's first drain (a
/// `kworker/N:M` of the line's CPU at preempt depth 2,
/// [`crate::trace::parse::Who::is_worker_drain`]), and of each run's first drain (a run ends
/// at any other event on its CPU, as the replay reads them), for the one earliest in its
/// second.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunsAhead {
    first: Vec<Option<u64>>,
    /// The trace shows the workers' runs themselves (`workqueue_execute_start`).
    traced: bool,
    /// Per CPU: the first lines of its worker's runs, oldest first (at most [`RUNS_KEPT`]).
    runs: Vec<VecDeque<u64>>,
    /// Per CPU: its last event was a drain of its worker's run.
    in_run: Vec<bool>,
    /// Per CPU: the first line of each of its worker's runs ahead, in time order (for the
    /// shepherd: `shepherd::run_ahead`).
    starts: Vec<Vec<u64>>,
}

impl RunsAhead {
    /// None yet for `cpus` CPUs (trace CPU `c` is `c % cpus`).
    pub fn new(cpus: u32) -> RunsAhead {
        let n = cpus.max(1) as usize;
        RunsAhead {
            first: vec![None; n],
            traced: false,
            runs: vec![VecDeque::new(); n],
            in_run: vec![false; n],
            starts: vec![Vec::new(); n],
        }
    }

    /// Reads one event ahead: a worker's drain with a time is its CPU's run, if the first,
    /// and a run's first line unless the CPU's last event was a drain of its worker too.
    #[inline]
    pub fn feed(&mut self, ev: &Event<'_>) {
        self.traced |= ev.kind.is_work();
        let Some(cpu) = ev.cpu else {
            return;
        };
        let n = self.in_run.len();
        let c = if (cpu as usize) < n {
            cpu as usize
        } else {
            cpu as usize % n.max(1)
        };
        match (&ev.kind, ev.ts_ns) {
            (EventKind::PcpuDrain { .. }, Some(t)) if ev.who.is_worker_drain() => {
                self.drained(c, t);
            }
            _ => {
                if let Some(r) = self.in_run.get_mut(c) {
                    *r = false;
                }
            }
        }
    }

    /// Reads the trace past the window (`text`, the after-snapshot's, [`crate::trace::ingest::Tail`])
    /// once the window's events went by: the runs of each CPU whose worker showed none in
    /// the window, as if ahead. A worker's timer keeps to its CPU's second from boot
    /// (`vmstat_update` re-queues with `round_jiffies_relative`, `mm/vmstat.c`), so a run
    /// after the window shows the second as well as one in it; without one, the replay
    /// assumed the phase at the window's first event. 6.12-4g p_thp: no worker drains in
    /// the 1.5 s window (329.233 to 330.717 s); `kworker/0:2` drains at 330.823455 and on
    /// (its second near x.80), and the assumed phase put CPU 0's worker at 330.23.
    pub fn feed_after(&mut self, text: &[u8]) {
        let Some(mut after) = self.after() else {
            return;
        };
        let mut parser = Parser::new();
        // Only a drain line starts a run, and another line matters only to end one: while
        // no CPU is in a run the rest is not parsed (the after-snapshot's layout walk is
        // most of the text, 6.12-4g p_thp: 191 -> 128 M instructions in the parser).
        let drain = memchr::memmem::Finder::new(b"mm_page_pcpu_drain");
        for line in lines(text) {
            if !after.watching && drain.find(line).is_none() {
                continue;
            }
            if let Some(ev) = parser.feed(line) {
                if after.feed(&ev) {
                    break;
                }
            }
        }
        after.finish();
    }

    /// The reading of the trace past the window ([`RunsAhead::feed_after`]) event by event,
    /// for a parse of that text that something else drives ([`AfterRuns::feed`]); `None`
    /// where every CPU had a run in the window (nothing past it is read).
    pub fn after(&mut self) -> Option<AfterRuns<'_>> {
        let had: Vec<bool> = self.first.iter().map(Option::is_some).collect();
        if had.iter().all(|&h| h) {
            return None;
        }
        self.in_run.fill(false);
        Some(AfterRuns {
            // Whether the trace shows the runs themselves is the window's to say.
            traced: self.traced,
            had,
            watching: false,
            done: false,
            ahead: self,
        })
    }

    /// CPU slot `c`'s worker drained at `t` (out of line: few events are).
    #[inline(never)]
    fn drained(&mut self, c: usize, t: u64) {
        if self.first[c].is_none() {
            self.first[c] = Some(t);
        }
        if !self.in_run[c] {
            if let Some(s) = self.starts.get_mut(c) {
                s.push(t);
            }
            if self.runs[c].len() == RUNS_KEPT {
                self.runs[c].pop_front();
            }
            self.runs[c].push_back(t);
        }
        self.in_run[c] = true;
    }

    /// CPU slot `c`'s run ahead earliest in its second ([`earliest_in_second`]): a worker
    /// never runs before its timer, so it shows the CPU's second, where its first run may
    /// have come late.
    fn earliest(&self, c: usize) -> Option<u64> {
        self.runs.get(c).and_then(earliest_in_second)
    }

    /// Whether the events ahead show the workers' or the shepherd's runs themselves
    /// (`workqueue_execute_start`, [`Vmstat::set_traced`]).
    pub fn traced(&self) -> bool {
        self.traced
    }

    /// The first run of each CPU that has one, as `(cpu, time)`.
    pub fn runs(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.first
            .iter()
            .enumerate()
            .filter_map(|(c, t)| t.map(|t| (c as u32, t)))
    }
}

/// [`RunsAhead`] reading the trace past the window ([`RunsAhead::after`]): the runs of each
/// CPU whose worker showed none in the window.
pub struct AfterRuns<'a> {
    ahead: &'a mut RunsAhead,
    /// The window's `traced`, put back at the end.
    traced: bool,
    /// Per CPU slot: its worker ran in the window (its lines past it are not read).
    had: Vec<bool>,
    /// A CPU is in a run: any line of its CPU may end it.
    watching: bool,
    /// Each CPU without a run in the window has its runs kept in full.
    done: bool,
}

impl AfterRuns<'_> {
    /// Reads the next event past the window (in order: every drain line, and while
    /// [`AfterRuns::watching`], every line); whether the reading is done (what follows is
    /// not read).
    pub fn feed(&mut self, ev: &Event<'_>) -> bool {
        let n = self.had.len();
        let Some(c) = ev.cpu.map(|c| c as usize % n).filter(|&c| !self.had[c]) else {
            return self.done;
        };
        if self.done {
            return true;
        }
        self.ahead.feed(ev);
        self.watching = self.ahead.in_run.contains(&true);
        // Each such CPU's runs kept in full: the rest is not read.
        let runs = &self.ahead.runs;
        let full = |(k, &h): (usize, &bool)| h || runs[k].len() == RUNS_KEPT;
        self.done = runs[c].len() == RUNS_KEPT && self.had.iter().enumerate().all(full);
        self.done
    }

    /// Whether a CPU is in a run: a line of any event may end it; else only a drain line
    /// matters.
    pub fn watching(&self) -> bool {
        self.watching
    }

    /// The reading ends: `traced` stays the window's.
    pub fn finish(self) {
        self.ahead.traced = self.traced;
    }
}

impl Vmstat {
    /// Before the first event: the shared phase from the CPU whose run ahead comes first
    /// among those whose worker ran again (any CPU's where none did), each CPU with a run
    /// ahead on its own phase, both read from the CPU's run ahead earliest in its second (a
    /// first run can be late: 6.12-4g-loads p_fork, CPU 0's worker drains at 50.835198 s
    /// behind the fork parent, then at 51.829215), and its first run waiting for the mark.
    /// The marks still move a CPU's phase to its runs as the replay reaches them. Nothing if
    /// the phase was given ([`Vmstat::set_phase`]).
    ///
    /// A worker that ran again re-queued itself on its CPU's second (`vmstat_update`:
    /// `queue_delayed_work_on(.., round_jiffies_relative(sysctl_stat_interval))`,
    /// `mm/vmstat.c`); a lone run can be the one `vmstat_shepherd` queued with no delay
    /// (`queue_delayed_work_on(cpu, mm_percpu_wq, dw, 0)`) for a worker stopped at the
    /// window's start, at the shepherd's time, which its deferrable timer puts off any
    /// CPU's second. In the `*-wq` captures most first runs in the window are the
    /// shepherd's: 7.2-6g-12cpu-wq p_memcg, 9 of 12 CPUs' within 0.5 ms after it. 7.2-4g-wq
    /// p_thp, whole file: CPU 0's only run ahead, 105.429918, came 84 us after
    /// `vmstat_shepherd`; its own runs from 106.422354 on lie at x.418 to x.444. Read from
    /// it (the shepherd's timer and the CPUs without runs keep the shared phase), refill
    /// and drain events were 3.20% and 2.89% off the kernel's; from CPU 3's (ten runs
    /// ahead), 0.30% and 0.43%.
    pub fn align_ahead(&mut self, ahead: &RunsAhead) {
        self.starts_ahead.clone_from(&ahead.starts);
        if self.given || self.started {
            return;
        }
        let lone = |c: u32| ahead.runs.get(c as usize).is_none_or(|r| r.len() < 2);
        let Some((cpu, t)) = ahead.runs().min_by_key(|&(c, t)| (lone(c), t)) else {
            return;
        };
        let earliest = |cpu: u32, t: u64| ahead.earliest(cpu as usize).unwrap_or(t);
        self.phase_ns = Some(self.reading(cpu, earliest(cpu, t)));
        self.aligned = true;
        for (cpu, t) in ahead.runs() {
            let phase = self.reading(cpu, earliest(cpu, t));
            if let Some(w) = self.work.get_mut(cpu as usize) {
                w.phase_ns = Some(phase);
                w.ahead_ns = Some(t);
                w.before = false;
            }
        }
    }

    /// The first event at `t` (its phase aligned, ahead or given, or assumed at `t`): each
    /// CPU's worker pending at its next boundary on its own phase (of its run ahead, or
    /// else of its run before the window, [`Vmstat::set_runs_before`]).
    pub(super) fn start_timers(&mut self, t: u64) {
        for c in 0..self.work.len() {
            let Work {
                phase_ns: own,
                ahead_ns,
                before,
                ..
            } = self.work[c];
            let phase = own.or(self.phase_ns);
            let (expires, fires) = first_timer(phase, c as u32, t, self.hz, self.wheel);
            self.work[c] = Work {
                pending: true,
                expires,
                fires,
                phase_ns: own,
                ahead_ns,
                before,
                ..Work::default()
            };
        }
    }
}

/// Whether worker `w`'s run firing at `fire_ns` (its timer expired at `expiry_ns`) waits, at
/// an event at `t`, for its run ahead, the trace's: the one of the same second (less than a
/// second after the expiry: on the timer wheel the next second's bucket can come less than a
/// second after this one's, [`super::wheel`]), at or after the firing, not passed yet.
/// The kernel's worker runs when its CPU next takes it, which can be later than the timer
/// (6.12-8g p_thp: CPU 3's expiry came a tick before 654.927, its task was flagged for
/// resched then, and the worker ran 4 ms later, after 1000 more pages of free-path drains;
/// run at the expiry, ours found `count` 2857 under `high` and drained none of the
/// kernel's 533). Past it (the run was not replayed as a mark), it runs.
pub(super) fn waits_for_mark(w: &Work, times: (u64, u64), t: u64) -> bool {
    w.ahead_ns.is_some_and(|at| waits(at, times, t))
}

/// When worker `w`'s run firing at `fire_ns` (expired at `expiry_ns`) is due: then, or just
/// after its run ahead where it waits for it ([`waits_for_mark`]).
pub(super) fn due_ns(w: &Work, (fire_ns, expiry_ns): (u64, u64)) -> u64 {
    match w.ahead_ns {
        Some(at) if waits_for_mark(w, (fire_ns, expiry_ns), fire_ns) => at.saturating_add(1),
        _ => fire_ns,
    }
}

#[cfg(test)]
mod tests;
