//! A busy CPU's late vmstat worker ([`Vmstat::set_late_runs`]): its timer expired, the work
//! is queued on `mm_percpu_wq` (`queue_delayed_work_on`, `mm/vmstat.c`), and its kworker
//! waits until the scheduler switches to it (7.2's `Dynamic Preempt: lazy`, 6.12's
//! `voluntary`).

use super::{jiffy_at, ns_of_at, Run, Vmstat, Work};

impl Vmstat {
    /// Whether some CPU's worker is queued behind its busy task, which runs before the CPU's
    /// idle task (`late::deadline`): the idle task's events ask [`Vmstat::due`] then.
    #[inline(always)]
    pub fn any_late(&self) -> bool {
        self.any_late
    }

    /// Whether CPU `cpu`'s worker is queued behind its busy task ([`Vmstat::set_late_runs`])
    /// and may run at the CPU's going idle ([`Vmstat::set_went_idle`]).
    #[inline]
    pub(super) fn late_queued(&self, cpu: u32) -> bool {
        let n = self.work.len().max(1);
        self.work
            .get(cpu as usize % n)
            .is_some_and(|w| w.pending && w.late && !w.held)
    }

    /// CPU `cpu`'s last event's time (before the event at hand is counted).
    pub fn last_event(&self, cpu: u32) -> Option<u64> {
        let n = self.work.len().max(1);
        self.work.get(cpu as usize % n).and_then(|w| w.last_ns)
    }

    /// The events [`Vmstat::due`] is asked about next are their CPU's first of the idle task
    /// (`<idle>-0`) after another task's: a late worker queued on that CPU ran before it
    /// (`late::deadline`).
    pub fn set_went_idle(&mut self, on: bool) {
        self.went_idle = on;
    }

    /// Whether a busy CPU's expired worker waits for its CPU (the kernel's kworker waits for
    /// the scheduler; off, it runs at its expiry). It runs at the trace's drain of it
    /// ([`Vmstat::mark`]), else a tick after the CPU's task last showed an event, when it
    /// paused (slept, or went back to user space, where a pending switch takes effect),
    /// unless the replay finds its decay would drain there ([`Vmstat::still_late`]), else
    /// at the last tick before its next second (`late::limit`). 7.2-8g p_prodcons: CPU 1's worker
    /// expired at 253.766 s while `kmem-phases` unmapped, freeing every millisecond or two;
    /// its frees drained at `high` 3344 until 253.779 s and at 3281, the decayed one, from
    /// 253.789 s. Run at the expiry, ours drained 130 Unmovable pages at 253.764 s where the
    /// kernel drained Movable ones; its lists parted from the kernel's, and through the
    /// after-snapshot's reads `alloc_factor` climbed to 5 where the kernel's stayed at 1
    /// (whole-file refills 12.32% off the kernel, 3.51% run at the task's pause).
    pub fn set_late_runs(&mut self, on: bool) {
        self.late_runs = on;
    }

    /// An idle CPU's run at its timer's expiry that the replay does not do: its decay would
    /// drain, which the trace would show as the worker's drain ([`Vmstat::mark`]). The
    /// timer is deferrable (`INIT_DEFERRABLE_WORK(.., vmstat_update)`, `mm/vmstat.c`): an
    /// idle CPU does not wake for it, and the run comes when the CPU wakes, at its next
    /// event. 6.12-2g p_thp: CPU 3 has no event from 595.0 s until `kworker/3:1` drains
    /// 515 pages at 597.916420; ours ran at 596.762 too and drained 381 more.
    /// Where that event is not the worker's drain, its task runs first ([`Vmstat::wake_late`]).
    pub fn hold_woken(&mut self, run: Run) {
        if let Some(w) = self.work.get_mut(run.cpu as usize) {
            w.pending = true;
            w.waiting = true;
        }
        self.refresh_due();
    }

    /// An idle CPU's held run ([`Vmstat::hold_woken`]) due at the event the CPU woke for,
    /// whose decay would drain there: the timer fires at the woken CPU's tick and queues the
    /// work, whose kworker waits for the scheduler while the task the CPU woke for runs
    /// (`__queue_work` wakes it; under 7.2's lazy preemption the running task keeps the CPU
    /// to its next tick or pause). A late run from here ([`Vmstat::set_late_runs`]): at the
    /// trace's drain of it, or its task's pause where it drains nothing. 7.2-4g-loads
    /// p_fork, CPU 2: idle from 50.763114 over its expiry (50.774), it woke for
    /// `kmem-phases-350` at 50.778959 and drained nothing; `high` fell to `high_min` in the
    /// pause at 50.8326 (count 1272), the free at 50.851450 drained 63 pages at 1283. Run at
    /// the wake, ours drained 29 pages there and 73 and 16 after.
    ///
    /// Its limit (`late::limit`) counts from the wake, when the timer queued the work, not
    /// from the expiry the CPU slept over: a run dated there would run on a CPU still asleep
    /// (the deferrable timer fires at the woken CPU's tick: `run_local_timers` raises
    /// `TIMER_SOFTIRQ` for `BASE_DEF`, `kernel/time/timer.c`). 7.2-4g-loads p_file, CPU 0:
    /// expired at 159.782 while idle from 159.411586 to `dash-1222`'s free at 161.414505;
    /// counted from the expiry, ours ran at 160.778 at that free and drained 184 pages (63
    /// more at the free), where the kernel's first run is `kworker/0:0`'s drain of 214 at
    /// 161.786228 (Normal end 7.0% off the kernel's -> 1.7%). (Counted from the expiry,
    /// 7.2-2g p_idle's window matched only while a gap with no event did one run per CPU,
    /// [`Vmstat::due_again`].)
    pub fn wake_late(&mut self, run: Run) {
        let (phase, hz) = (self.phase_ns, self.hz);
        if let Some(w) = self.work.get_mut(run.cpu as usize) {
            w.pending = true;
            w.waiting = false;
            w.late = true;
            w.held = false;
            // The deferrable timer fires at the woken CPU's tick and queues the work then.
            w.late_from = jiffy_at(w.phase_ns.or(phase), hz, run.at_ns);
        }
        self.refresh_due();
    }

    /// A held late run ([`Vmstat::still_late`]) the replay does now, at the pause it held
    /// it at (a single free's, `Replayer::mid_pause_seen`): no longer late nor pending.
    pub fn take_held(&mut self, cpu: u32) {
        let n = self.work.len();
        if let Some(w) = self.work.get_mut(cpu as usize % n.max(1)) {
            w.late = false;
            w.held = false;
            w.pending = false;
        }
        self.refresh_due();
    }

    /// A late run placed at its task's pause ([`Run::paused`]) that the replay does not do:
    /// it would drain, and the kernel's would show in the trace as the worker's drain
    /// ([`Vmstat::mark`]); it waits on for that, the task's next pause, or its limit. Until
    /// then no event is due for it: the same pause is not offered again (the replay asked
    /// at every event on any CPU, a decay preview of every zone each time).
    pub fn still_late(&mut self, run: Run) {
        if let Some(w) = self.work.get_mut(run.cpu as usize) {
            w.late = true;
            w.pending = true;
            w.held = true;
        }
        self.refresh_due();
    }
}

/// Where [`deadline`] asks about a late worker: CPU `cpu` (own phase `own`, `hz`), at an event
/// at `t`, which is the CPU's first of the idle task after another task's (`went_idle`).
#[derive(Clone, Copy, Debug)]
pub(super) struct At {
    pub cpu: u32,
    pub own: Option<u64>,
    pub hz: u32,
    pub t: u64,
    pub went_idle: bool,
}

/// A late worker `w` at an event (`at`): it runs a tick after the CPU's last event when the
/// event is later (its task left the CPU: slept, or went back to user space, where the
/// scheduler's pending switch takes effect), or at the event where the CPU went idle after
/// its task ran past the timer's firing tick, else at [`limit`].
///
/// The idle task runs only when nothing else is runnable on the CPU (`__pick_next_task`:
/// `pick_task_fair` finds none, then `pick_task_idle`, `kernel/sched/core.c`), and the
/// kworker has been runnable since the tick that fired the timer (`run_timer_softirq` ->
/// `delayed_work_timer_fn` -> `__queue_work`, which wakes it: `kick_pool`,
/// `kernel/workqueue.c`): it ran between the task's last event and the idle task's first,
/// however short the gap. (A task that left the CPU before that tick left the deferrable
/// timer unfired: the CPU's wake fires it, `Vmstat::hold_woken`.) 7.2-4g-6cpu p_fork,
/// CPU 1: expired (ours, 399.7917) while `kmem-phases-1370` freed; its last commit was at
/// 399.793462 and `<idle>-0`'s softirq frees came from 399.796770, 3.3 ms later: the
/// kernel's free at 399.796774 drained 92 pages at `count` 914, the decayed `high` (1044 -
/// 1044/8). Waiting for a gap of a tick, ours decayed at 399.800984 and drained 93 a free
/// later, and the CPU's lists parted from the kernel's to 408.8 s; run here, its refills
/// and drains are the kernel's over the whole file.
pub(super) fn deadline(w: &mut Work, at: At, runs: &mut Vec<Run>) {
    let At {
        cpu,
        own,
        hz,
        t,
        went_idle,
    } = at;
    let tick = super::tick_ns(hz);
    let fire_ns = ns_of_at(own, hz, w.fires);
    let idled = went_idle && w.last_ns.is_some_and(|l| l >= fire_ns && l < t);
    let paused = w
        .last_ns
        .filter(|_| !w.held)
        .map(|l| l + tick)
        .filter(|&p| p <= t)
        .or((idled && !w.held).then_some(t));
    let deadline = ns_of_at(own, hz, limit(w.late_from, hz));
    let (at, paused) = match paused {
        Some(p) if p < deadline => (p, true),
        _ if deadline <= t => (deadline, false),
        _ => return,
    };
    w.late = false;
    w.held = false;
    w.pending = false;
    runs.push(Run {
        cpu,
        at_ns: at,
        woken: false,
        paused,
    });
}

/// The jiffy by which a worker queued at jiffy `expires` has run (its timer's expiry on a
/// busy CPU, the wake on an idle one, [`Vmstat::wake_late`]): the last one before its next
/// second. The kernel's queued work has no deadline (it stays pending,
/// and the timer is armed again only by its run, `vmstat_update` ->
/// `queue_delayed_work_on`); the scheduler runs the kworker when the task gives the CPU up,
/// which a task showing an event every millisecond need not do in the trace. Bound there,
/// the run keeps to the second the kernel's next expiry would come in. A quarter second
/// (where `round_jiffies_relative` still rounds the re-queue back onto the second) made
/// 6.12-4g p_idle's whole file 14.60/7.72% off (refills/drains), this 4.71/5.23%.
pub(super) fn limit(expires: i64, hz: u32) -> i64 {
    expires + (i64::from(hz.max(1)) - 1).max(0)
}
