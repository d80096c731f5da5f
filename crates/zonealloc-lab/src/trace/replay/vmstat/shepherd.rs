//! `vmstat_shepherd`'s own timer: a deferrable work (`DECLARE_DEFERRABLE_WORK(shepherd,
//! vmstat_shepherd)`, `mm/vmstat.c`) that an idle machine does not wake for.

use super::{jiffy_at, late, ns_of_at, round_rel, Run, Vmstat, Work};

/// When the shepherd that expired at `expiry_ns` runs, seen at an event at `t`: at its expiry
/// if a CPU was awake then (an event within `tick` before), else at `t`. It is a deferrable
/// work (`DECLARE_DEFERRABLE_WORK(shepherd, vmstat_shepherd)`, `mm/vmstat.c`): an idle
/// machine does not wake for it. 6.12-2g p_idle: every CPU idle from 1220.9 to 1237.667 s;
/// dated at its stale expiry, ours re-armed it for the next jiffy and it queued CPU 1's
/// worker, dirtied by `sleep-917`'s refill, at 1237.671 s: its decay drained 62 pages where
/// the trace shows no worker run until `kworker/1:1`'s drain of 22 at 1238.077906.
pub(super) fn at(work: &[Work], expiry_ns: u64, t: u64, tick: u64) -> u64 {
    let awake = work
        .iter()
        .filter_map(|w| w.last_ns)
        .max()
        .is_some_and(|l| l + tick >= expiry_ns);
    if awake {
        expiry_ns.min(t)
    } else {
        t
    }
}

/// Whether the shepherd running at `at` (jiffy `j`) leaves CPU slot `c`'s worker `w` (on
/// `phase` and `hz`) unqueued: the trace ahead (`starts`, each CPU's runs' first lines,
/// [`super::RunsAhead`]) shows a run of it after `at` and before a run queued at `at` would
/// have re-queued itself (`vmstat_update`: `round_jiffies_relative(HZ)`, `mm/vmstat.c`).
/// That run is then the first after the worker stopped, and the kernel's shepherd queued it
/// there, not at `at` (its timer deferrable on CPU 0, whose wakes the trace does not show):
/// it runs at its line ([`Vmstat::mark`]). 6.12-8g p_thp: CPU 3's worker, stopped while its
/// task moved pipe pages, was queued by ours at 654.863633 (its assumed second, x.8636) and
/// stepped `high` 4000 -> 3500 without a drain; the free path then drained against 3500 from
/// 654.920, and `kworker/3:0` drained 533 at 654.927277, the kernel's first step (taken as
/// done this second). Only runs the trace ahead holds are known (the window's first events,
/// and past it those of CPUs with none in it).
pub(super) fn run_ahead(
    starts: &[Vec<u64>],
    c: usize,
    (at, j): (u64, i64),
    (w, phase, hz): (&Work, Option<u64>, u32),
) -> bool {
    let Some(s) = starts.get(c) else {
        return false;
    };
    let k = s.partition_point(|&x| x <= at);
    let Some(&next) = s.get(k) else {
        return false;
    };
    let own = w.phase_ns.or(phase);
    next < ns_of_at(own, hz, round_rel(j, c as u32, hz))
}

impl Vmstat {
    /// Whether CPU `cpu`'s worker was last queued by the shepherd, with no run of it in the
    /// trace since ([`Vmstat::mark`]): when it ran is not known. The shepherd is deferrable
    /// work on CPU 0 (`DECLARE_DEFERRABLE_WORK(shepherd, vmstat_shepherd)`, `mm/vmstat.c`,
    /// 6.12 and 7.2): its timer fires at CPU 0's first tick after it expires, and an idle
    /// CPU 0's wakes are not in the kmem trace (6.12-4g p_prodcons: no CPU 0 event from
    /// 55.186 to 122.403 s; in the `*-4g-wq` captures its runs came a median 1.03-1.20 s
    /// apart on 6.12, at most 3.68 s). The worker's runs from there re-queue onto its CPU's
    /// seconds (`round_jiffies_relative`), one second apart, so an early shepherd puts every
    /// one of them early, each a `decay_pcp_high` step ahead of the kernel's.
    pub fn shepherded(&self, cpu: u32) -> bool {
        let n = self.work.len();
        self.work
            .get(cpu as usize % n.max(1))
            .is_some_and(|w| w.shepherded)
    }

    /// A run of a worker the shepherd queued ([`Vmstat::shepherded`]) that the replay does
    /// not do: its `decay_pcp_high` would drain, and a drain of the kernel's worker shows in
    /// the trace (`free_pcppages_bulk`'s `mm_page_pcpu_drain` lines, a `kworker` of the CPU
    /// at preempt depth 2) where there is none. The kernel's run had not come yet, or came
    /// a step behind ours and found `count` under its `high`: the chain from the shepherd
    /// started later. The worker waits as a late run does ([`Vmstat::set_late_runs`]): for
    /// its drain in the trace ([`Vmstat::mark`]), or a pause of its CPU's task where the
    /// step drains nothing; past the last tick before its next second it waits into that
    /// one. 6.12-4g p_prodcons: `od-341`'s refill at 91.215196 raised CPU 1's `high` 1281
    /// -> 2289; ours, queued by the shepherd at 91.790905, stepped it to 2003 and 1753 and
    /// drained 96 pages at 94.774905, where the trace shows no drain; the kernel's
    /// `kworker/1:1` drained 55, 155 and 23 at 95.786, 96.814 and 97.802 s, the steps 1753
    /// -> 1534 -> 1343 -> 1281, which ours now does at those lines.
    pub fn put_off(&mut self, run: Run) {
        let n = self.work.len();
        let c = run.cpu as usize % n.max(1);
        let own = self.work[c].phase_ns.or(self.phase_ns);
        if ns_of_at(own, self.hz, late::limit(self.work[c].expires, self.hz)) <= run.at_ns {
            let j = jiffy_at(own, self.hz, run.at_ns);
            self.work[c].expires = round_rel(j, run.cpu, self.hz);
        }
        let w = &mut self.work[c];
        w.pending = true;
        w.late = true;
        // Its limit (`late::limit`) counts from that expiry.
        w.late_from = w.expires;
        w.held = true;
        w.waiting = false;
        self.refresh_due();
    }
}
