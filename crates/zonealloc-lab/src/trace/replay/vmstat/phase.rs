//! Each CPU's phase from its worker's runs in the trace ([`Vmstat::mark`]): the alignment of
//! the timers onto the seconds (and, with the timer wheel, the buckets) that the runs show.

use super::clock::late_on;
use super::{jiffy_at, next_boundary, ns_of_at, round_rel, wheel, Vmstat, SECOND_NS};

impl Vmstat {
    /// CPU `cpu`'s own phase from its worker's run at `t` (slot `c`), as [`Vmstat::align`]
    /// places it: each CPU's timer keeps to the seconds its own runs show. Under QEMU the
    /// workers' seconds drift against the trace clock and apart (6.12-4g p_idle: CPU 0's
    /// worker drains at 626.825, 627.817, 628.813, 629.801 and 630.825 s, CPU 1's at
    /// 565.042 s), so the first run seen, on whichever CPU, placed CPU 0's decay 0.77 s
    /// early. A pending timer moves to the CPU's next boundary on it (the run re-queues
    /// there, `round_jiffies_relative`); the jiffy of its last run moves with it.
    ///
    /// But a run less than a quarter second after the boundary of the CPU's own phase (from
    /// its earlier runs) is a late run on that rhythm, not a new one: the kworker waited for
    /// the CPU, and `round_jiffies_relative` from the late run rounds back down onto the
    /// same boundary ([`super::round_rel`]), so the phase stays. 7.2-8g p_thp: `od` holds CPU 2
    /// while it reads `/proc/kpageflags`, its worker drains at 785.780 and 786.774 s (the
    /// boundary near x.76); moved to the first, the phase put the second in the same
    /// second, taken as the run the replay had done already, and the decay it skipped left
    /// `alloc_factor` at 2 (189-page refills every second to the end, the kernel's 63).
    ///
    /// On the timer wheel, a run before the bucket the CPU's phase puts its expired timer
    /// at moves the phase by whole seconds onto the run's bucket ([`Vmstat::regrid`]): the
    /// second was right, the jiffies count mod 8 was not.
    pub(super) fn align_cpu(&mut self, c: usize, cpu: u32, t: u64) {
        let (hz, old) = (self.hz, self.work[c].phase_ns.or(self.phase_ns));
        let phase = match self.regrid(c, t) {
            Some(p) => p,
            None => {
                let phase = self.reading(cpu, t);
                if let (Some(own), false) = (self.work[c].phase_ns, self.work[c].before) {
                    if late_on(own, phase) {
                        return;
                    }
                }
                phase
            }
        };
        let w = &mut self.work[c];
        w.phase_ns = Some(phase);
        w.before = false;
        let j = jiffy_at(w.phase_ns, hz, t);
        if let Some(r) = w.ran {
            w.ran = Some(jiffy_at(w.phase_ns, hz, ns_of_at(old, hz, r)));
        }
        if w.pending {
            let e = next_boundary(j, cpu, hz);
            self.arm(c, e, e - i64::from(hz));
        }
        self.refresh_due();
    }

    /// Whether CPU `cpu`'s worker run at `t` (slot `c`) reads a phase less than a quarter
    /// second earlier than the CPU's own: its timer came earlier in the second than the
    /// CPU's phase says (a worker never runs before its timer), and the phase moves back
    /// onto it ([`Vmstat::align_cpu`]) before [`Vmstat::mark`] asks whether the CPU's
    /// worker ran this second already. 6.12-4g-loads p_fork: `kworker/0` drains at
    /// 50.835198 s, late (the fork parent held the CPU), then at 51.829215, earlier in its
    /// second; read from the first, the second fell 2 ms before CPU 0's second and was taken
    /// as the run done already (`--jiffies-phase 51.825215` matched the kernel).
    pub(super) fn reads_earlier(&self, c: usize, cpu: u32, t: u64) -> bool {
        let w = &self.work[c];
        match (w.phase_ns, w.before) {
            (Some(own), false) => {
                const S: u64 = SECOND_NS as u64;
                let phase = self.reading(cpu, t);
                let d = (own % S + S - phase % S) % S;
                d > 0 && d < S / 4
            }
            _ => false,
        }
    }

    /// Whether CPU `cpu`'s worker (slot `c`) ran in the second (of its own phase) that
    /// trace time `t` lies in.
    pub(super) fn ran_this_second(&self, c: usize, cpu: u32, t: u64) -> bool {
        let j = jiffy_at(self.work[c].phase_ns.or(self.phase_ns), self.hz, t);
        let boundary = j - (j + 3 * i64::from(cpu)).rem_euclid(i64::from(self.hz));
        self.work[c].ran.is_some_and(|r| r >= boundary)
    }

    /// Whether a worker's run in the trace at `t` on CPU slot `c` came after its timer's
    /// bucket on the CPU's own phase, where the kernel could not run it on time: its CPU
    /// was idle then (deferrable: it ran when the CPU woke; `ran`: the replay ran it there
    /// already, as if the CPU woke) or busy (late, waiting for the scheduler). Such a run
    /// reads a later phase than the CPU's, and the phase stays (a CPU's own phase only); so
    /// does one of a second ours ran already that does not read earlier ([`reads_earlier`]:
    /// the kernel's run of that second, later than ours). 6.12-4g-loads p_file: every CPU
    /// idle from 146.746377 s until `kworker/3:1` drains 264 pages at 147.517265, off CPU
    /// 3's second (x.79: its runs at 131.79, 132.79 and 133.79).
    ///
    /// [`reads_earlier`]: Vmstat::reads_earlier
    pub(super) fn came_late(&self, c: usize, t: u64, ran: bool, earlier: bool) -> bool {
        let w = &self.work[c];
        if w.before || w.phase_ns.is_none() {
            return false;
        }
        if ran && !earlier {
            return true;
        }
        // The run's own event is the CPU's last already (`Vmstat::event`, before the mark):
        // idle means no event between the expiry and the one before it.
        let last = if w.last_ns == Some(t) {
            w.prev_ns
        } else {
            w.last_ns
        };
        let idle_since = |x: u64| last.is_none_or(|l| l + self.tick_ns() < x);
        let fires = ns_of_at(w.phase_ns, self.hz, w.fires);
        let expired = w.pending && fires <= t && (w.late || idle_since(fires));
        let ran_idle = ran
            && w.ran
                .is_some_and(|r| idle_since(ns_of_at(w.phase_ns, self.hz, r)));
        expired || ran_idle
    }

    /// The trace's run at `t` of CPU `cpu`'s worker (slot `c`) whose run this second ours
    /// did already, earlier: the kernel's `vmstat_update` re-queued itself from its own run
    /// (`queue_delayed_work_on(.., round_jiffies_relative(sysctl_stat_interval))`,
    /// `mm/vmstat.c`), not from ours, so a pending timer moves to where that puts it, if
    /// later. A run a quarter second or more past its CPU's second (deferred on an idle
    /// CPU, or late behind a task) rounds up past the next second, and the kernel skips
    /// it. 6.12-4g p_thp: `kworker/0` drains at 334.989, 336.080 and 338.354 s (CPU 0's
    /// second near x.82): from 336.080 the timer expires at 337.82, and ran on time, ours
    /// did one decay more than the kernel from 336.82 on. The run's jiffy is counted from
    /// the latest the CPU's boundary can lie (a run reads it to within a tick), so only a
    /// second the kernel surely skipped is: 6.12-4g p_idle, CPU 0 (second near x.797):
    /// `kworker/0` drains at 484.046 s, 62.1 jiffies past, and again at 485.806.
    pub(super) fn requeue_from_mark(&mut self, c: usize, cpu: u32, t: u64) {
        if !self.work[c].pending || self.work[c].late {
            return;
        }
        let at = t.saturating_sub(self.tick_ns());
        let j = jiffy_at(self.work[c].phase_ns.or(self.phase_ns), self.hz, at);
        let e = round_rel(j, cpu, self.hz);
        if e > self.work[c].expires {
            self.arm(c, e, j);
            self.refresh_due();
        }
    }

    /// The phase from a worker's run of CPU `cpu` at `t`: its boundary (`jiffies + 3 * cpu
    /// ≡ 0 mod HZ`) in the tick before `t`; pending timers move to the same place in their
    /// CPU's second on it.
    pub(super) fn align(&mut self, cpu: u32, t: u64) {
        let (old_phase, hz) = (self.phase_ns, self.hz);
        let shepherd_ns = self.ns_of(self.shepherd);
        self.phase_ns = Some(self.reading(cpu, t));
        self.aligned = true;
        let now = self.jiffy(t);
        self.onto_shared(old_phase, now, true);
        // The shepherd's expiry is a jiffy of the old phase: kept where it was in time (left
        // as it was, the shepherd of 7.2-2g p_thp, 1500 jiffies in, fell 545 s back onto the
        // new phase and queued every idle CPU's worker at once, stamped 6.79 s).
        let j = jiffy_at(self.phase_ns, hz, shepherd_ns);
        let e = next_boundary(j - 1, 0, hz).max(now + 1);
        self.arm_shepherd(e, e - i64::from(hz));
        self.refresh_due();
    }

    /// Moves timers onto the shared phase at jiffy `now` on it: those of the CPUs on the own
    /// phase of a run before the window ([`Vmstat::set_runs_before`]), which gives way at
    /// the window's first mark, and with `all` those on the shared phase `old_phase` before
    /// ([`Vmstat::align`]); a CPU on the phase of its run ahead or its mark keeps its timer.
    /// A pending timer moves to its CPU's first boundary at or after its old time; the
    /// jiffy of the last run is kept in time.
    pub(super) fn onto_shared(&mut self, old_phase: Option<u64>, now: i64, all: bool) {
        let (new, hz, on) = (self.phase_ns, self.hz, self.wheel);
        for (c, w) in self.work.iter_mut().enumerate() {
            let old = if w.before {
                w.before = false;
                w.phase_ns.take()
            } else if all && w.phase_ns.is_none() {
                old_phase
            } else {
                continue;
            };
            if let Some(r) = w.ran {
                w.ran = Some(jiffy_at(new, hz, ns_of_at(old, hz, r)));
            }
            if w.pending {
                let j = jiffy_at(new, hz, ns_of_at(old, hz, w.expires));
                w.expires = next_boundary(j - 1, c as u32, hz).max(now + 1);
                w.fires = wheel::fire_at(on, w.expires, w.expires - i64::from(hz), hz);
            }
        }
    }
}

#[cfg(test)]
mod tests;
