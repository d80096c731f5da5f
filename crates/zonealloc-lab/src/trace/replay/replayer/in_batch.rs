//! A late vmstat worker placed at its task's pause waits while the pause may lie inside a
//! batch of frees: the lazy-preemption kernel (7.2).
//!
//! `free_unref_folios` (6.12, 7.2; `mm/page_alloc.c`) prints `mm_page_free` for every folio
//! of the batch (`__free_pages_prepare`), then commits them one by one, each printing
//! `mm_page_free_batched` before `free_frozen_page_commit` (7.2; `free_unref_page_commit` in
//! 6.12). The commits hold the CPU's lists with `pcp_spin_trylock`, which pins the task with
//! `preempt_disable` (`pcpu_task_pin`, not `PREEMPT_RT`) to the batch's end: the CPU's
//! kworker cannot run there. Nor between the prints and the first commit: 7.2's lazy
//! preemption switches a task only at a tick or its return to user space, and the prints
//! take microseconds. The captures with every `vmstat_update` traced show it: of 4,476 runs
//! in 6.12-4g-wq, 6.12-3g-16cpu-wq, 7.2-4g-wq, 7.2-6g-12cpu-wq, 7.2-3g-16cpu-wq and
//! 7.2-4g-6cpu-wq (494,488 batch prints), none lands between a batch's first
//! `mm_page_free` and its last `mm_page_free_batched`. A single free (`free_frozen_pages`)
//! commits in the call that printed it, so a run after it counts its page.
//!
//! The replay holds a traced free until its commit ([`super::frees::Deferred`]): while a CPU
//! holds a task's free it does not know yet whether it was a single one or a batch's print.
//! A late run placed at the task's pause (a tick after its last event, `vmstat/late.rs`)
//! while the CPU holds one waits ([`Replayer::park_in_batch`]) for an event that tells
//! ([`Replayer::verdict`]): more frees tell nothing; a commit shows a batch, and the run goes
//! after it; another event on the CPU, or the CPU silent for a tick (a batch prints without
//! sleeping), shows the frees single, and the run is done at the pause with the frees
//! before it committed first. Before, it ran there with them held: its decay counted
//! none of them. 6.12 has a wait of its own for these runs ([`Replayer::mid_free_no_switch`]:
//! under voluntary preemption no switch inside a free call); applied to 7.2 it made the
//! sums worse (whole-file refills/drains 54.4/99.7 -> 59.5/107.5, 11 rows).
//!
//! The other model runs (an idle CPU's at its expiry, a late one at its limit, the
//! shepherd's) do not wait: held the same way, the sums got worse on 6.12 (whole
//! 54.4/99.7 -> 63.1/97.0; 6.12-6g-12cpu p_thp whole refills 0.00 -> 6.00%), though
//! 7.2-8g-8cpu p_compact came closer (whole drains 2.89 -> 1.34%: CPU 3's timer at
//! 714.310888 while `awk-1608`'s single frees, 713.411473 to 714.380390, were held).

use std::io;

use super::batched::in_interrupt;
use super::Replayer;
use crate::trace::parse::{Event, EventKind, Who};
use crate::trace::replay::vmstat::{tick_ns, Run};

/// A model run waiting for its CPU's next event to tell whether the frees the CPU holds
/// are a batch's ([`Replayer::park_in_batch`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Parked {
    run: Run,
    /// A commit showed the CPU inside a batch: the run goes after it.
    batch: bool,
    /// The CPU's last event seen (its last free held, at first).
    last_ns: u64,
    /// The event it came due before: its CPU, time and task.
    due: (u32, u64, Who),
}

impl Replayer {
    /// Whether `run`, a late run at its task's pause, waits: its CPU's task may be inside a
    /// batch of frees (it holds a task's free not yet committed); with the batched path's
    /// commits ([`Replayer::commit_at_batched`]), unless voluntary preemption's own wait
    /// holds it ([`Replayer::mid_free_no_switch`]). A run due while one waits is that one
    /// (its work is pending). Where event `ev` on `cpu` at `ts` tells already
    /// ([`Replayer::verdict`]), the run to do; `None` where it waits.
    pub(super) fn park_in_batch(
        &mut self,
        run: Run,
        cpu: u32,
        ts: u64,
        ev: &Event<'_>,
    ) -> io::Result<Option<Run>> {
        let c = run.cpu as usize;
        if !self.commit_at_batched || !run.paused || self.mid_free_no_switch {
            return Ok(Some(run));
        }
        let Some(slot) = self.parked.get(c) else {
            return Ok(Some(run));
        };
        if slot.is_some() {
            return Ok(None);
        }
        // A batch's commits done, none of its prints left: it is over.
        if !self.holds_prints(c) {
            return Ok(Some(run));
        }
        let open = self.batching.get(c).copied().unwrap_or(false);
        let last = self.deferred[c].last().and_then(|d| d.ts_ns);
        let mut p = Parked {
            run,
            batch: open,
            last_ns: last.unwrap_or(run.at_ns),
            due: (cpu, ts, ev.who),
        };
        if let Some(end) = self.verdict(&mut p, cpu, ts, ev) {
            return self.unpark(p, end).map(Some);
        }
        self.parked[c] = Some(p);
        self.any_parked = true;
        Ok(None)
    }

    /// Whether CPU slot `c` holds a task's free not yet committed (a batch's print, or a
    /// single free's until its next event).
    fn holds_prints(&self, c: usize) -> bool {
        self.deferred
            .get(c)
            .is_some_and(|l| l.iter().any(|d| !in_interrupt(d.who)))
    }

    /// Event `ev` on `cpu` at `ts` (before the workers' runs due before it) while runs wait
    /// ([`Replayer::park_in_batch`]): each whose wait it tells ([`Replayer::verdict`]) is
    /// done or held now ([`Replayer::unpark`]).
    #[cold]
    #[inline(never)]
    pub(super) fn parked_seen(&mut self, cpu: u32, ts: u64, ev: &Event<'_>) -> io::Result<()> {
        for c in 0..self.parked.len() {
            let Some(mut p) = self.parked[c] else {
                continue;
            };
            match self.verdict(&mut p, cpu, ts, ev) {
                None => self.parked[c] = Some(p),
                Some(end) => {
                    self.parked[c] = None;
                    let run = self.unpark(p, end)?;
                    if p.batch {
                        self.do_run(run, cpu, ts, ev)?;
                    } else {
                        // As it was due: before the event it came due before.
                        let (due_cpu, due_ts, who) = p.due;
                        let at = Event {
                            cpu: Some(due_cpu),
                            ts_ns: Some(due_ts),
                            who,
                            ..ev.clone()
                        };
                        self.do_run(run, due_cpu, due_ts, &at)?;
                    }
                }
            }
        }
        self.any_parked = self.parked.iter().any(Option::is_some);
        Ok(())
    }

    /// Whether event `ev` on `cpu` at `ts` tells `p`'s wait, and what: `Some(at)` its CPU
    /// was inside a batch that ended by `at` (`p.batch` set), or its frees were single
    /// ones; `None` not yet. On its CPU: a free tells nothing, unless it is the task's first
    /// after a batch's commits (the batch ended: the task is between two calls); a commit
    /// (or its drain) shows a batch; another event is the task's next step, and a batch
    /// followed by a tick's silence ended at its last line. On another CPU: `p`'s CPU,
    /// holding frees with no commit open, silent for a tick since its last event (a batch
    /// prints without sleeping, within microseconds); open commits wait for the CPU (they
    /// stall with it: 7.2-4g-loads p_fork, `kmem-phases-351`'s commits on CPU 0 pause
    /// from 50.804573 to 50.821618, with preemption off).
    fn verdict(&self, p: &mut Parked, cpu: u32, ts: u64, ev: &Event<'_>) -> Option<u64> {
        let c = p.run.cpu as usize;
        let open = self.batching.get(c).copied().unwrap_or(false);
        let silent = ts > p.last_ns.saturating_add(tick_ns(self.hz));
        if c != cpu as usize {
            let stalled = open && self.holds_prints(c);
            return (silent && !stalled).then_some(p.last_ns);
        }
        let end = if silent { p.last_ns } else { ts };
        p.last_ns = ts;
        p.batch |= open;
        match ev.kind {
            EventKind::FreeBatched { .. } => {
                p.batch = true;
                None
            }
            EventKind::Free { .. } => (open && !in_interrupt(ev.who)).then_some(ts),
            EventKind::PcpuDrain { .. } if open && !ev.who.is_worker_drain() => None,
            _ => Some(end),
        }
    }

    /// The run of `p`, its wait told ([`Replayer::verdict`]): after a batch that ended by
    /// `end`, done there (not before it was due) with every free held committed first;
    /// after single frees, as it was due, with the frees traced before it committed first.
    fn unpark(&mut self, p: Parked, end: u64) -> io::Result<Run> {
        let own = p.run.cpu;
        if p.batch {
            self.flush_deferred(own)?;
            let at_ns = end.max(p.run.at_ns);
            return Ok(Run { at_ns, ..p.run });
        }
        self.commit_before_run(own, p.run.at_ns)?;
        Ok(p.run)
    }
}
