//! What an event on a CPU tells its vmstat worker: the CPU is awake (a deferrable timer that
//! expired while it slept fires now), and, unless the event moves no counter (`counted`), its
//! `need_update` is set.

use super::{jiffy_at, round_rel, Vmstat, Work};
use crate::trace::parse::EventKind;

/// An event of worker `w`'s CPU at `t`: its last, the one before kept (`prev_ns`) when `t`
/// is a later time.
#[inline(always)]
fn saw(w: &mut Work, t: u64) {
    if w.last_ns != Some(t) {
        w.prev_ns = w.last_ns;
    }
    w.last_ns = Some(t);
}

impl Vmstat {
    /// An event on `cpu` at `t` (after its runs): the CPU is awake and its counters moved.
    #[inline(always)]
    pub fn event(&mut self, cpu: u32, t: u64) {
        // The replay's CPUs are folded already: the modulo only for other callers.
        let n = self.work.len();
        let c = cpu as usize;
        let w = match self.work.get_mut(c) {
            Some(w) => w,
            None => &mut self.work[c % n],
        };
        w.dirty = true;
        saw(w, t);
        if w.held | w.woke {
            self.woke_for(c % n, t);
        }
    }

    /// An event of `kind` on `cpu` at `t` (after its runs): the CPU is awake, and its
    /// counters moved ([`Vmstat::event`]) unless the event moves none (`need_update`, a
    /// pipe buffer's page: `counted`).
    #[inline(always)]
    pub fn event_of(&mut self, cpu: u32, t: u64, kind: &EventKind<'_>) {
        if self.pipe.counts(kind) {
            self.event(cpu, t);
        } else {
            self.awake(cpu, t);
        }
    }

    /// Whether CPU `cpu` slept before its event at `t` (none in the two ticks before) with
    /// its worker pending: when its tick stopped, `quiet_vmstat` (`tick_nohz_stop_tick`;
    /// `mm/vmstat.c`: `delayed_work_pending`, then `need_update`) folded its diffs
    /// (`refresh_cpu_vm_stats(false)`, no decay). A fold of zero diffs moves nothing, so
    /// `need_update` is left to the counters.
    ///
    /// Two ticks, not one: the idle loop stops the tick only when no timer is due within a
    /// tick (`tick_nohz_next_event`: `delta <= TICK_NSEC` keeps it; so do RCU callbacks,
    /// `rcu_needs_cpu`), and asks again at each tick it keeps. A gap of one to two ticks
    /// fits a CPU whose tick ran throughout (a task preempted for a tick, or asleep on a
    /// timer due within the tick); only a longer one needs a stopped tick. 7.2-3g-16cpu-wq
    /// p_pressure: CPU 1's worker at 172.703471 folded, then its decay drained 0x185 (diff
    /// +1); kmem-phases-1791's events on CPU 1 then paused 4.068 ms (172.718 to 172.722)
    /// and 4.067 ms (172.770 to 172.774); its exit frees from 172.780355 drained 1, 2, ...,
    /// 6 DMA pages under `ZONE_BELOW_HIGH`, then 5 (`high - batch` with `pcp->high` 6): the
    /// flag cleared after the drain at 172.780419 (DMA free 3040, high mark 84 plus 2955
    /// protection), which needs the counter exact there: the diff of 1 the run left, unfolded
    /// (21 pages drained since: folded at the 10th and the 21st), not a diff folded to 0 in a
    /// gap (the counter 10 behind: the flag held one free more, and CPU 1's DMA list ended
    /// with 4 pages against the kernel's 24).
    #[inline(always)]
    pub fn quieted(&self, cpu: u32, t: u64) -> bool {
        // The replay's CPUs are folded already (as in `Vmstat::event`).
        self.work
            .get(cpu as usize)
            .is_some_and(|w| w.pending && w.last_ns.is_some_and(|l| l + 2 * self.tick < t))
    }

    /// An event on `cpu` at `t` that moved no counter: the CPU is awake, its `need_update`
    /// as it was, and a woken run that stopped stays stopped (the run had nothing to fold).
    fn awake(&mut self, cpu: u32, t: u64) {
        let c = cpu as usize % self.work.len();
        saw(&mut self.work[c], t);
        if self.work[c].held {
            self.moved(c, t);
        }
    }

    /// An event on CPU slot `c` at `t` after its worker's woken run that stopped
    /// ([`super::Work::woke`]), or after a late run held back at its pause ([`super::Work::held`]).
    ///
    /// The worker's timer is deferrable (`INIT_DEFERRABLE_WORK(.., vmstat_update)`,
    /// `mm/vmstat.c`): on an idle CPU it expires at the CPU's first tick after it wakes
    /// (`kernel/time/timer.c`: a deferrable timer is not a wake-up event). An event of the
    /// CPU within a tick after the run is the task the CPU woke for, which ran before the
    /// kworker: it moved a counter that the run's `refresh_cpu_vm_stats` folded, and
    /// `vmstat_update` re-queued itself from the run (`round_jiffies_relative`), pending,
    /// so `vmstat_shepherd` does not queue it. 7.2-4g-2node p_prodcons, CPU 1 (second near
    /// x.796): idle from 188.675, `od-391` allocates at 188.798; ours stopped at 188.796,
    /// the shepherd queued it at 189.505, after `od-391`'s 1008-page refill at 189.263170,
    /// and its decay drained 717 pages the kernel did not.
    #[cold]
    #[inline(never)]
    fn woke_for(&mut self, c: usize, t: u64) {
        if self.work[c].held {
            self.moved(c, t);
        }
        let tick = self.tick_ns();
        let w = &mut self.work[c];
        if !std::mem::replace(&mut w.woke, false) || w.pending || t > w.woke_ns + tick {
            return;
        }
        w.dirty = false;
        w.pending = true;
        let j = jiffy_at(w.phase_ns.or(self.phase_ns), self.hz, w.woke_ns);
        self.arm(c, round_rel(j, c as u32, self.hz), j);
        self.refresh_due();
    }

    /// A late run held back at its pause ([`Vmstat::still_late`]): CPU slot `c` moved at
    /// `t`, its next pause is due.
    #[cold]
    #[inline(never)]
    fn moved(&mut self, c: usize, t: u64) {
        self.work[c].held = false;
        self.next_due_ns = self.next_due_ns.min(t + self.tick_ns());
    }
}
