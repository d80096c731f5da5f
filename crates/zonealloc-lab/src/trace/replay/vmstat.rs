//! The per-CPU vmstat worker as the kernel schedules it (6.7 and later, where
//! `refresh_cpu_vm_stats` calls `decay_pcp_high`; `mm/vmstat.c`), for the replay to run
//! [`zonealloc::Zone::decay_pcp_high`] when the kernel's worker would have
//! (docs/kernel-versions/vmstat-decay.md).
//!
//! - Each CPU `c` has its own `vmstat_work`, a deferrable delayed work re-queued by
//!   `vmstat_update` with `round_jiffies_relative(sysctl_stat_interval)` (HZ jiffies) only
//!   when `refresh_cpu_vm_stats` returned `changed` (a counter folded, or `decay_pcp_high`
//!   has more to do). `round_jiffies_relative` rounds to the CPU's own whole second, skewed
//!   `3 * c` jiffies early (`round_jiffies_common`, `kernel/time/timer.c`): [`round_rel`].
//! - Deferrable (`TIMER_DEFERRABLE`): an idle CPU is not woken for it; it runs at the CPU's
//!   first tick at or after the expiry, which on an idle CPU is when it next wakes. Here: at
//!   the expiry when the CPU had an event within a tick before it, else at its next event.
//! - The work (`vmstat_update` on `mm_percpu_wq`, `queue_delayed_work_on`) runs in a kworker
//!   of the CPU when the scheduler switches to it: a task busy in the kernel at the expiry
//!   keeps it waiting (7.2's `Dynamic Preempt: lazy`, 6.12's `voluntary`: a task in the
//!   kernel gives the CPU up at its preemption points). The kmem trace shows such a late
//!   run only where it drained ([`Vmstat::set_late_runs`]).
//! - `quiet_vmstat` folds an idle CPU's counters without decay when its tick stops, so a run
//!   on waking has nothing to fold: it re-queues only if decay has more to do, or if the
//!   task the CPU woke for ran first (its event within a tick after the run).
//! - `vmstat_shepherd` (deferrable, every `round_jiffies_relative(HZ)`, on the CPU it last
//!   ran on, taken as CPU 0) queues, with delay 0, the work of every CPU that is not pending
//!   and `need_update`: it runs at once on that CPU (queueing wakes it).
//! - `need_update(c)`: a per-CPU counter diff is not zero. Nearly every event the trace shows
//!   moves one (a buddy operation moves `NR_FREE_PAGES`; page cache, anon and slab pages move
//!   node counters); an event on `c` marks it so, but a pipe buffer's page, taken from and
//!   given back to the CPU's list, moves none (`counted`, [`Vmstat::event_of`]).
//!
//! - The timers wait in the timer wheel (`calc_index`): a timer of a second fires at the next
//!   multiple of 8 jiffies after its expiry ([`Vmstat::set_timer_wheel`], `wheel`).
//!
//! Time is jiffies from a phase: the trace time of a jiffies-second boundary (`jiffies % HZ
//! == 0`; on the timer wheel one whose jiffies are a multiple of 8 too). The trace does not
//! show jiffies: the phase is assumed (the first event's time) until a worker's own drain in
//! the trace ([`Vmstat::mark`]) shows a CPU's boundary (`phase`).

mod ahead;
mod awake;
mod check;
mod clock;
mod counted;
mod late;
mod phase;
mod schedule;
mod shepherd;
mod traced;
mod wheel;

pub use ahead::{AfterRuns, RunsAhead};
pub use check::{RunCheck, RunLog};
use clock::{jiffy_at, next_boundary, ns_of_at};
pub use clock::{round_rel, tick_ns};
use counted::PipePages;
pub use schedule::Schedule;
pub use traced::TracedRuns;

/// The kernel's `HZ` when not told (Debian amd64's `CONFIG_HZ`).
pub const DEFAULT_HZ: u32 = 250;

const SECOND_NS: i128 = 1_000_000_000;

/// One CPU's `vmstat_work`.
#[derive(Clone, Copy, Debug, Default)]
struct Work {
    /// Queued (its timer armed).
    pending: bool,
    /// When pending: the jiffy its timer expires at (`timer->expires`).
    expires: i64,
    /// When pending: the jiffy its timer fires at, its bucket's on the timer wheel
    /// ([`Vmstat::set_timer_wheel`]), else `expires`.
    fires: i64,
    /// `need_update`: an event on the CPU since its last fold.
    dirty: bool,
    /// The trace time of the CPU's last event.
    last_ns: Option<u64>,
    /// The trace time of the CPU's event before `last_ns` (an earlier one): where a worker's
    /// run in the trace is asked about, its own event is `last_ns` already
    /// ([`Vmstat::came_late`]).
    prev_ns: Option<u64>,
    /// Expired while the CPU was idle: it runs at the CPU's next event (with
    /// [`Vmstat::set_defer_to_event`], or held there by [`Vmstat::hold_woken`]).
    waiting: bool,
    /// The jiffy of its last run.
    ran: Option<i64>,
    /// The CPU's own phase (the trace time of a jiffies-second boundary on its clock), from
    /// its last worker run in the trace; `None`: the shared one.
    phase_ns: Option<u64>,
    /// Its first run in the trace, ahead of the replay ([`RunsAhead`]): the simulated run of
    /// that second waits for it.
    ahead_ns: Option<u64>,
    /// Its own phase is that of its run before the window ([`Vmstat::set_runs_before`]),
    /// which gives way at the window's first mark.
    before: bool,
    /// Expired while its CPU was busy: queued, waiting for the CPU ([`Vmstat::set_late_runs`]).
    late: bool,
    /// When late: the jiffy the work was queued at, which its limit counts from
    /// (`late::limit`): its expiry on a busy CPU, the wake on an idle one
    /// ([`Vmstat::wake_late`]).
    late_from: i64,
    /// When late: the replay held its run back at the CPU's pause ([`Vmstat::still_late`]);
    /// that pause is not due again, the CPU's next event clears it.
    held: bool,
    /// Its last run was a woken one that stopped, at `woke_ns`: a CPU event within a tick
    /// after it came before it ([`Vmstat::woke_for`]).
    woke: bool,
    /// When `woke`: the trace time of that run.
    woke_ns: u64,
    /// Queued by the shepherd, and no run of it shown by the trace since
    /// ([`Vmstat::shepherded`]).
    shepherded: bool,
}

/// A run of one CPU's worker the replay is to do: `refresh_cpu_vm_stats(true)` on `cpu` at
/// trace time `at_ns`, then [`Vmstat::ran`] with what its `decay_pcp_high` calls said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// The CPU.
    pub cpu: u32,
    /// When, in trace time.
    pub at_ns: u64,
    /// The CPU woke for it (idle before): `quiet_vmstat` folded its counters already.
    pub woken: bool,
    /// A late run ([`Vmstat::set_late_runs`]) placed where its CPU's task paused: the
    /// replay may put it back ([`Vmstat::still_late`]).
    pub paused: bool,
}

/// Every CPU's vmstat worker and the shepherd.
#[derive(Clone, Debug)]
pub struct Vmstat {
    hz: u32,
    /// [`tick_ns`] of `hz`, for the per-event test of [`Vmstat::quieted`].
    tick: u64,
    /// The trace time of a jiffies-second boundary; `None` before the first event.
    phase_ns: Option<u64>,
    /// Whether the phase was taken from a worker's run in the trace or given (else assumed).
    aligned: bool,
    /// The phase was given ([`Vmstat::set_phase`]): marks do not move any CPU's.
    given: bool,
    /// The first event has set the timers up.
    started: bool,
    work: Vec<Work>,
    /// The shepherd's expiry (jiffy).
    shepherd: i64,
    /// The jiffy the shepherd's timer fires at (its bucket's, [`Vmstat::set_timer_wheel`]).
    shepherd_fires: i64,
    /// Timers fire at their bucket on the timer wheel (`calc_index`), not at their expiry.
    wheel: bool,
    /// The earliest time a timer expires at (trace time): nothing to do before it.
    next_due_ns: u64,
    /// An idle CPU's expired worker waits for the CPU's next traced event (else it runs at
    /// its expiry: [`Vmstat::set_defer_to_event`]).
    defer_to_event: bool,
    /// A busy CPU's expired worker waits for the CPU ([`Vmstat::set_late_runs`]).
    late_runs: bool,
    /// The event asking is its CPU's first of the idle task after another task's
    /// ([`Vmstat::set_went_idle`]).
    went_idle: bool,
    /// Some worker is queued behind its busy task ([`Vmstat::any_late`]).
    any_late: bool,
    /// The trace's runs are the runs ([`Vmstat::set_traced`]): no timer is due.
    traced: bool,
    /// The trace's runs, and those the model had not expected ([`TracedRuns`]).
    pub traced_runs: TracedRuns,
    /// The model's runs, and the trace's where they are not the runs ([`RunLog`]).
    pub run_log: RunLog,
    /// Runs done, runs aligned to the trace's marks, marks whose run the simulation had
    /// done already.
    pub runs: u64,
    /// Worker runs the trace showed ([`Vmstat::mark`]).
    pub marks: u64,
    /// Marks that found the CPU's worker run already this second (not run again).
    pub marks_ran_already: u64,
    /// The pages whose events move no counter ([`Vmstat::event_of`]).
    pipe: PipePages,
    /// Per CPU: the first lines of its worker's runs ahead ([`RunsAhead`]).
    starts_ahead: Vec<Vec<u64>>,
}

impl Vmstat {
    /// The workers of `cpus` CPUs under `hz` (0: [`DEFAULT_HZ`]).
    pub fn new(cpus: u32, hz: u32) -> Vmstat {
        let hz = if hz == 0 { DEFAULT_HZ } else { hz };
        Vmstat {
            hz,
            tick: tick_ns(hz),
            phase_ns: None,
            aligned: false,
            given: false,
            started: false,
            work: vec![Work::default(); cpus.max(1) as usize],
            shepherd: 0,
            shepherd_fires: 0,
            wheel: false,
            next_due_ns: 0,
            defer_to_event: false,
            late_runs: false,
            went_idle: false,
            any_late: false,
            traced: false,
            traced_runs: TracedRuns::default(),
            run_log: RunLog::default(),
            runs: 0,
            marks: 0,
            marks_ran_already: 0,
            pipe: PipePages::default(),
            starts_ahead: Vec::new(),
        }
    }

    /// Takes the phase as given: `phase_ns`, the trace time of a jiffies-second boundary
    /// (`jiffies % HZ == 0`; any one: it is taken modulo a second, or on the timer wheel
    /// modulo its cycle, [`Vmstat::set_timer_wheel`]), as a worker's run in another capture
    /// of the same boot shows it. Before the first event.
    pub fn set_phase(&mut self, phase_ns: u64) {
        self.phase_ns = Some(phase_ns % self.period_ns());
        self.aligned = true;
        self.given = true;
    }

    /// Places each CPU's timer from its worker's runs before the window (trace time, the run
    /// earliest in its second; `None` where the trace before the start marker shows none,
    /// [`crate::trace::replay::infer::worker_runs`]): the CPU keeps to its own second
    /// (`Vmstat::align_cpu`'s phase) until the window's first mark, which places every
    /// CPU's timer as before (`Vmstat::align`). A CPU without a run keeps the assumed phase:
    /// under QEMU the CPUs' seconds drift apart (6.12-8g p_thp: CPU 2's run 203 s before the
    /// window put CPU 3's decay 0.1 s before the kernel's, draining 76 pages it did not).
    /// 6.12-4g p_pressure: CPUs 0, 1 and 2 ran up to 63, 34 and 9 s before the window, and no
    /// worker drains in its first 28 s; refill events 5.45 -> 0.00% off the kernel, drain
    /// events 3.51 -> 1.53%. Before the first event; nothing where the phase was given.
    pub fn set_runs_before(&mut self, last: &[Option<u64>]) {
        if self.given || self.started {
            return;
        }
        for (c, t) in last.iter().take(self.work.len()).enumerate() {
            // A CPU with a run ahead keeps that run's phase ([`Vmstat::align_ahead`]).
            let reading = t.map(|t| self.reading(c as u32, t));
            let w = &mut self.work[c];
            if let (Some(p), None) = (reading, w.ahead_ns) {
                w.phase_ns = Some(p);
                w.before = true;
            }
        }
    }

    /// Whether an idle CPU's expired worker waits for the CPU's next traced event. The
    /// kernel runs it when the CPU next wakes, for any reason: a timer, an interrupt, a task,
    /// most of which the trace (kmem events only) does not show. Off (the default), it runs
    /// at its expiry, as if the CPU woke then; either way `quiet_vmstat` folded an idle
    /// CPU's counters without decay, so the run re-queues only while decay has more to do.
    /// (The shipped 7.2 `p2_procs_pipe`: CPU 3 has no event from 27.9 s to the end at
    /// 36.1 s, and its `high` still decayed to `high_min`, eight steps from where its last
    /// refill left it.) Neither setting is the kernel on every CPU, since wakes are not in
    /// the trace. 7.2-4g-2node p_idle: CPUs 2 and 3 have no event from 547.7 and 547.2 s to
    /// 572.6 s; CPU 2's worker drains its remote pageset at 557.3 and 569.3 (it woke), CPU
    /// 3's never (it did not: three runs would have reached the expiry drain). Off, ours drains CPU 3
    /// at 549.979 and CPU 2 at 550.3 and 559.3; on, CPU 2 at 557.3 only. Drain events stay
    /// 2.52% off either way, and on, the idle phases of 6.12-8g (0.55% -> 9.49%), 7.2-4g
    /// (0.14% -> 8.15%) and 7.2-8g (1.58% -> 16.76%) get worse.
    pub fn set_defer_to_event(&mut self, on: bool) {
        self.defer_to_event = on;
    }

    /// Whether the phase came from the trace (a worker's drain, in the window or before it
    /// for some CPU), not assumed.
    pub fn aligned(&self) -> bool {
        self.aligned || self.work.iter().any(|w| w.phase_ns.is_some())
    }

    /// A tick, in nanoseconds.
    fn tick_ns(&self) -> u64 {
        tick_ns(self.hz)
    }

    /// The jiffy at trace time `t` (floor).
    fn jiffy(&self, t: u64) -> i64 {
        jiffy_at(self.phase_ns, self.hz, t)
    }

    /// The trace time jiffy `j` begins at.
    fn ns_of(&self, j: i64) -> u64 {
        ns_of_at(self.phase_ns, self.hz, j)
    }

    /// The first event, at `t`: the phase assumed there, every CPU's worker pending at its
    /// next boundary (a machine whose workers run), the shepherd at CPU 0's.
    fn start(&mut self, t: u64) {
        if !self.aligned {
            self.phase_ns = Some(t);
        }
        let j = self.jiffy(t);
        self.start_timers(t);
        self.arm_shepherd(round_rel(j, 0, self.hz), j);
        self.refresh_due();
    }

    fn refresh_due(&mut self) {
        self.any_late = self.work.iter().any(|w| w.pending && w.late && !w.held);
        if self.traced {
            self.next_due_ns = u64::MAX;
            return;
        }
        let mut due = self.ns_of(self.shepherd_fires);
        for w in &self.work {
            if w.pending && !w.waiting {
                let own = w.phase_ns.or(self.phase_ns);
                let e = if w.late {
                    let d = ns_of_at(own, self.hz, late::limit(w.late_from, self.hz));
                    w.last_ns
                        .filter(|_| !w.held)
                        .map_or(d, |l| d.min(l + self.tick_ns()))
                } else {
                    let fire = ns_of_at(own, self.hz, w.fires);
                    ahead::due_ns(w, (fire, ns_of_at(own, self.hz, w.expires)))
                };
                due = due.min(e);
            }
        }
        self.next_due_ns = due;
    }

    /// Whether [`Vmstat::due`] may have runs for an event on `cpu` at `t` (`false`: none;
    /// one compare and one load, as every event asks).
    #[inline(always)]
    pub fn is_due(&self, cpu: u32, t: u64) -> bool {
        t >= self.next_due_ns || self.work.get(cpu as usize).is_none_or(|w| w.waiting)
    }

    /// The runs due before an event on `cpu` at `t`, in time order, into `runs` (cleared
    /// first). The replay does each and calls [`Vmstat::ran`], then [`Vmstat::event`].
    #[inline]
    pub fn due(&mut self, cpu: u32, t: u64, runs: &mut Vec<Run>) {
        runs.clear();
        let c = cpu as usize % self.work.len();
        let idled = self.went_idle && self.late_queued(cpu);
        if t < self.next_due_ns && !self.work[c].waiting && !idled {
            return;
        }
        self.due_slow(c, t, runs, false);
    }

    /// The runs due before an event on `cpu` at `t` once the replay did those
    /// [`Vmstat::due`] gave: a worker re-queued by a run before `t` may have expired again
    /// before it. CPU `cpu`'s own worker, held to its wake ([`Vmstat::hold_woken`]) at
    /// this event, is not run at it.
    pub fn due_again(&mut self, cpu: u32, t: u64, runs: &mut Vec<Run>) {
        runs.clear();
        let c = cpu as usize % self.work.len();
        self.due_slow(c, t, runs, true);
    }

    /// [`Vmstat::due`]'s work; `again`: asked again before the same event
    /// ([`Vmstat::due_again`]).
    #[inline(never)]
    fn due_slow(&mut self, c: usize, t: u64, runs: &mut Vec<Run>, again: bool) {
        if !self.started {
            self.started = true;
            self.start(t);
        }
        let now = self.jiffy(t);
        let (tick, phase, hz, defer, late_runs) = (
            self.tick_ns(),
            self.phase_ns,
            self.hz,
            self.defer_to_event,
            self.late_runs,
        );
        let went_idle = self.went_idle;
        for (i, w) in self.work.iter_mut().enumerate() {
            let own = w.phase_ns.or(phase);
            if !w.pending || w.fires > jiffy_at(own, hz, t) {
                continue;
            }
            if w.late {
                let at = late::At {
                    cpu: i as u32,
                    own,
                    hz,
                    t,
                    went_idle: went_idle && i == c,
                };
                late::deadline(w, at, runs);
                continue;
            }
            let fire_ns = ns_of_at(own, hz, w.fires);
            if ahead::waits_for_mark(w, (fire_ns, ns_of_at(own, hz, w.expires)), t) {
                continue;
            }
            let busy = w.last_ns.is_some_and(|l| l + tick >= fire_ns);
            if busy && late_runs {
                // Queued for the kworker, which waits for the busy task (still pending:
                // the shepherd does not queue it again).
                w.late = true;
                w.late_from = w.expires;
            } else if busy || !(defer || w.waiting) {
                // At its expiry, unless it waits for its CPU to wake.
                runs.push(Run {
                    cpu: i as u32,
                    at_ns: fire_ns.min(t),
                    woken: !busy,
                    paused: false,
                });
                w.pending = false;
            } else if i == c && !again {
                runs.push(Run {
                    cpu: i as u32,
                    at_ns: t,
                    woken: true,
                    paused: false,
                });
                w.pending = false;
                w.waiting = false;
            } else {
                w.waiting = true;
            }
        }
        if self.work[c].waiting && !again {
            self.work[c].waiting = false;
            self.work[c].pending = false;
            runs.push(Run {
                cpu: c as u32,
                at_ns: t,
                woken: true,
                paused: false,
            });
        }
        if self.shepherd_fires <= now {
            // `DECLARE_DEFERRABLE_WORK(shepherd, vmstat_shepherd)`: expired with no CPU
            // awake (no event within a tick before), it runs when a CPU wakes, at this
            // event, and re-arms a second from then (`schedule_delayed_work(&shepherd,
            // round_jiffies_relative(..))`), not at the next jiffy ([`shepherd::at`]).
            let expiry = ns_of_at(self.phase_ns, self.hz, self.shepherd_fires);
            let at = shepherd::at(&self.work, expiry, t, tick);
            let j = self.jiffy(at);
            for (i, w) in self.work.iter_mut().enumerate() {
                let queued = runs.iter().any(|r| r.cpu == i as u32);
                // Its run in the trace comes first (`shepherd::run_ahead`).
                let ahead = late_runs
                    && shepherd::run_ahead(&self.starts_ahead, i, (at, j), (w, phase, hz));
                if !w.pending && !queued && w.dirty && !ahead {
                    w.shepherded = true;
                    runs.push(Run {
                        cpu: i as u32,
                        at_ns: at,
                        woken: false,
                        paused: false,
                    });
                }
            }
            self.arm_shepherd(round_rel(j, 0, self.hz).max(now + 1), j);
        }
        runs.sort_by_key(|r| r.at_ns);
        self.refresh_due();
    }

    /// CPU `cpu`'s worker ran at `run.at_ns`; its `decay_pcp_high` calls returned `todo`
    /// (any of them). It folded the counters (`dirty` unless `quiet_vmstat` had, on a woken
    /// CPU) and re-queues itself if anything changed.
    ///
    /// A run ends a late wait ([`Vmstat::set_late_runs`]): the work ran (the workqueue
    /// clears its pending bit as `process_one_work` starts it), and the timer it re-queues
    /// (`queue_delayed_work_on`, `vmstat_update`) is a fresh one, whose limit counts from its
    /// own expiry. 6.12-4g p_pressure, CPU 1: late from its expiry at 901.7776, run at its
    /// wake at `kworker/1:1`'s drain at 901.808477 but still flagged late, ours ran again at
    /// the old limit, 902.773649, and the trace's run at 902.793369 decayed `high` a third
    /// time in two seconds.
    pub fn ran(&mut self, run: Run, todo: bool) {
        let c = run.cpu as usize % self.work.len();
        let j = jiffy_at(self.work[c].phase_ns.or(self.phase_ns), self.hz, run.at_ns);
        let w = &mut self.work[c];
        let changed = todo || (w.dirty && !run.woken);
        w.dirty = false;
        w.waiting = false;
        w.late = false;
        w.held = false;
        w.ran = Some(j);
        w.pending = changed;
        w.woke = run.woken && !changed;
        w.woke_ns = run.at_ns;
        self.run_log.modelled(c, run.at_ns);
        if changed {
            let (expires, fires) = schedule::requeue(j, run.cpu, self.hz, self.wheel);
            (w.expires, w.fires) = (expires, fires);
        }
        self.runs += 1;
        self.refresh_due();
    }

    /// The trace shows CPU `cpu`'s worker draining at `t` (a `kworker/cpu:*` at preempt
    /// depth 2, [`crate::trace::parse::Who::is_worker_drain`]): its timer expired just
    /// before. The phase is taken from it if none was yet (`t` a tick after the CPU's
    /// skewed boundary at most), moving every pending timer onto it. Whether to run the
    /// worker now: not if it ran in this second already and re-queued itself (the
    /// simulation's run was this one, early: what it did cannot be undone).
    ///
    /// But a run of this second that stopped the worker (`vmstat_update` re-queues only
    /// when `refresh_cpu_vm_stats` changed something) leaves it to `vmstat_shepherd`, which
    /// queues a worker that is not pending (`!delayed_work_pending`) with no delay, at the
    /// shepherd's own time: the trace's run is a second one, done now, and the CPU keeps
    /// its rhythm (that run re-queues onto the CPU's own second, [`round_rel`]).
    /// 6.12-4g p_pressure, whole file: our CPU 1 worker ran at 658.778 s with nothing to
    /// do and stopped; the refill at 658.906523 raised `high` from 1281 to 1407, and
    /// `kworker/1:1` drained 29 pages at 659.014856 (count 1310 down to `high_min`). Taken
    /// as the run already done, ours kept `high` at 1407 and parted from the kernel there.
    ///
    /// The CPU's phase is the earliest reading its runs give, not the first: a run that
    /// reads the CPU's second less than a quarter second earlier moves it there before the
    /// question whether it ran this second is asked; a run of a second ours ran already
    /// that reads it later, or one after its timer expired on an idle or busy CPU, leaves it
    /// (`Vmstat::came_late`); so does a run of a stopped worker (not pending), which only
    /// `vmstat_shepherd` queues (`queue_delayed_work_on(cpu, .., 0)`, at the shepherd's own
    /// time, off the CPU's second). 7.2-8g p_pressure: CPU 1 (second near x.780) idles
    /// from 1540.16 s, its worker stopped; `kworker/1:1` drains at 1573.022258, 0.256 s after
    /// `kmem-phases` woke the CPU, and read as the CPU's second it put the phase at x.030.
    pub fn mark(&mut self, cpu: u32, t: u64) -> Option<Run> {
        self.marks += 1;
        if !self.started {
            self.started = true;
            self.start(t);
        }
        if !self.aligned {
            self.align(cpu, t);
        } else if self.work.iter().any(|w| w.before) {
            // Aligned by the runs ahead: the runs before the window give way all the same.
            let now = self.jiffy(t);
            self.onto_shared(self.phase_ns, now, false);
        }
        let c = cpu as usize % self.work.len();
        self.work[c].ahead_ns = None;
        self.work[c].shepherded = false;
        let ran = self.ran_this_second(c, cpu, t);
        // Ran this second and stopped: the shepherd's run (`vmstat_shepherd`), off the
        // CPU's rhythm.
        let requeued = ran && !self.work[c].pending;
        let earlier = self.reads_earlier(c, cpu, t);
        // Stopped: the shepherd's run (`vmstat_shepherd`), off the CPU's second.
        let stopped = !self.work[c].pending && self.work[c].phase_ns.is_some();
        if !self.given && !requeued && !stopped && !self.came_late(c, t, ran, earlier) {
            self.align_cpu(c, cpu, t);
        }
        // Read earlier than the CPU's phase: asked again on the phase the run showed
        // ([`Vmstat::align_cpu`]).
        let ran = ran && (requeued || !earlier || self.ran_this_second(c, cpu, t));
        if ran && !requeued {
            self.marks_ran_already += 1;
            self.requeue_from_mark(c, cpu, t);
            return None;
        }
        self.work[c].waiting = false;
        self.work[c].pending = false;
        self.work[c].late = false;
        self.work[c].held = false;
        Some(Run {
            cpu,
            at_ns: t,
            woken: false,
            paused: false,
        })
    }
}

#[cfg(test)]
mod tests;
