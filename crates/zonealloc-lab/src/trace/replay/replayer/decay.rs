//! The vmstat workers in a replay: their runs before each event ([`super::Vmstat`]), a run
//! of `decay_pcp_high` on every zone, and the trace's own drains, told apart by who ran them.

use std::io;

use zonealloc::CpuId;

use super::Replayer;
use crate::trace::parse::{Event, EventKind, PagePtr, Who};
use crate::trace::replay::infer::kernel::Inferred;
use crate::trace::replay::vmstat::{Run, RunsAhead, Vmstat};

/// Lines of a CPU's vmstat worker further apart than this (a quarter second: HZ/4 jiffies,
/// whatever HZ) are two runs ([`Replayer::traced_drain`]).
const RUN_GAP_NS: u64 = 250_000_000;

/// At most this many passes over the workers before one event ([`Replayer::vmstat_runs`]):
/// each pass does a second of a CPU's runs at most, and a trace with no event for longer
/// than this many seconds leaves the rest to the next event.
const MAX_PASSES: u32 = 64;

impl Replayer {
    /// The vmstat workers' `HZ` (`None`: [`crate::trace::replay::vmstat::DEFAULT_HZ`]),
    /// whether an idle CPU's expired worker waits for its next event
    /// ([`Vmstat::set_defer_to_event`]), and their phase if given ([`Vmstat::set_phase`]).
    pub fn set_vmstat(&mut self, hz: Option<u32>, waits_for_event: bool, phase_ns: Option<u64>) {
        if let Some(hz) = hz {
            self.hz = hz.max(1);
        }
        self.decay_waits_for_event = waits_for_event;
        self.jiffies_phase_ns = phase_ns;
    }

    /// Whether a busy CPU's expired worker waits for its CPU, as the kernel's kworker waits
    /// for the scheduler ([`Vmstat::set_late_runs`]), an idle CPU's whose decay would
    /// drain waits for the CPU to wake ([`Vmstat::hold_woken`]), and one the shepherd
    /// queued waits for the trace's drain of it where its decay would drain
    /// ([`Vmstat::put_off`]); on by default,
    /// `--no-late-workers` turns both off: each runs at its expiry.
    pub fn set_late_workers(&mut self, on: bool) {
        self.late_workers = on;
        if let Some(vm) = self.vmstat.as_mut() {
            vm.set_late_runs(on);
        }
    }

    /// Whether the workers' timers fire at their bucket on the timer wheel, 1 to 8 jiffies
    /// after their expiry ([`Vmstat::set_timer_wheel`]; off by default, `--timer-wheel`
    /// turns it on). Before the first event.
    pub fn set_timer_wheel(&mut self, on: bool) {
        self.timer_wheel = on;
    }

    /// The vmstat workers' first runs in the trace ahead, which place their timers from
    /// the first event on ([`Vmstat::align_ahead`]; a given phase wins).
    pub fn set_runs_ahead(&mut self, ahead: RunsAhead) {
        self.runs_ahead = ahead;
        if let Some(vm) = self.vmstat.as_mut() {
            vm.align_ahead(&self.runs_ahead);
        }
    }

    /// Each CPU's last worker run before the window, as the trace before the start marker
    /// shows it ([`Vmstat::set_runs_before`]): the timers of the CPUs without a run ahead
    /// keep to their seconds. After [`Replayer::set_vmstat`], before the first event.
    pub fn set_worker_runs_before(&mut self, last: &[Option<u64>]) {
        if self.vmstat.is_none() {
            self.vmstat = Some(self.new_vmstat());
        }
        if let Some(vm) = self.vmstat.as_mut() {
            vm.set_runs_before(last);
        }
    }

    /// The workers as [`Replayer::set_vmstat`] and [`Replayer::set_runs_ahead`] set them,
    /// before their first event.
    fn new_vmstat(&self) -> Vmstat {
        let traced = self.traced_workers && self.runs_ahead.traced();
        let placed = (self.timer_wheel, self.jiffies_phase_ns, self.late_workers);
        let mut v = Vmstat::placed(self.geo.cpus, self.hz, placed, &self.runs_ahead, traced);
        v.set_defer_to_event(self.decay_waits_for_event);
        v
    }

    /// A `workqueue_execute_start` line of the vmstat workers ([`EventKind::is_work`]), with
    /// `decay`: with `--no-traced-workers` a `vmstat_update` is logged for the check against
    /// the model's runs ([`Vmstat::run_log`]) and nothing else; otherwise the run itself
    /// ([`Vmstat::set_traced`], from the first such line if the events ahead showed none). `vmstat_update` on the
    /// line's CPU is that CPU's run now ([`Replayer::run_worker`]); `vmstat_shepherd` queues
    /// the workers whose runs the next lines show. No other event is moved by either: the
    /// model's `need_update` and pending state follow for the count of runs it did not
    /// expect.
    #[cold]
    #[inline(never)]
    pub(super) fn traced_work(&mut self, ev: &Event<'_>) -> io::Result<()> {
        let (true, Some(ts)) = (self.decay, ev.ts_ns) else {
            return Ok(());
        };
        let cpu = self.cpu_of(ev);
        if self.vmstat.is_none() {
            self.vmstat = Some(self.new_vmstat());
        }
        let Some(vm) = self.vmstat.as_mut() else {
            return Ok(());
        };
        if !self.traced_workers {
            // `--no-traced-workers`: the model's timers run; the trace's runs are the check.
            if matches!(ev.kind, EventKind::VmstatUpdate) {
                vm.run_log.traced(cpu as usize, ts);
            }
            return Ok(());
        }
        if !vm.traced() {
            vm.set_traced(true);
        }
        match ev.kind {
            EventKind::VmstatUpdate => {
                let run = vm.traced_run(cpu, ts);
                if self.commit_at_batched {
                    self.commit_before_run(cpu, ts)?;
                }
                self.run_worker(run)
            }
            _ => {
                vm.traced_shepherd();
                Ok(())
            }
        }
    }

    /// Before event `ev` on `cpu` (with `decay`): the workers' runs due by its timestamp
    /// ([`Replayer::vmstat_due`]); any event but a drain ends a worker's run of drains on its
    /// CPU.
    #[inline(always)]
    pub(super) fn workers_before(&mut self, ev: &Event<'_>, cpu: u32) -> io::Result<()> {
        if let Some(ts) = ev.ts_ns {
            self.vmstat_due(cpu, ts, ev)?;
        }
        // A worker's run of drains ends at any other event on its CPU.
        if !matches!(ev.kind, EventKind::PcpuDrain { .. }) {
            if let Some(w) = self.worker_run.get_mut(cpu as usize) {
                *w = None;
            }
        }
        Ok(())
    }

    /// The vmstat workers' runs due before an event on `cpu` at `ts` ([`Vmstat::due`]),
    /// then the event marks the CPU awake and its counters moved. (Every event asks: the
    /// test that nothing is due inline, the rest out of line.)
    #[inline(always)]
    pub(super) fn vmstat_due(&mut self, cpu: u32, ts: u64, ev: &Event<'_>) -> io::Result<()> {
        if let Some(vm) = self.vmstat.as_mut() {
            let slow = vm.is_due(cpu, ts)
                || vm.any_late() && ev.who.is_idle()
                || self.any_mid
                || self.any_parked
                || self.stat_drift && vm.quieted(cpu, ts);
            if !slow {
                vm.event_of(cpu, ts, &ev.kind);
                return Ok(());
            }
        }
        self.vmstat_runs(cpu, ts, ev)
    }

    /// Whether the idle task's event on CPU `cpu` at `ts` is the CPU's first since another
    /// task's (a late worker queued there ran before it: `vmstat/late.rs`, `deadline`): the
    /// CPU's last event came after its last idle one. The idle task's events ask while a
    /// worker is late ([`Vmstat::any_late`]) and wherever the workers are asked (a worker
    /// turns late at such an event): they see each of the CPU's idle events of the late
    /// stretch.
    fn went_idle(&mut self, cpu: u32, ts: u64) -> bool {
        let last = self.vmstat.as_ref().and_then(|vm| vm.last_event(cpu));
        let Some(idle) = self.idle_at.get_mut(cpu as usize) else {
            return false;
        };
        let after_task = last.is_some_and(|l| idle.is_none_or(|i| l > i));
        *idle = Some(ts);
        after_task
    }

    /// `quiet_vmstat`: CPU `cpu` slept with its worker pending ([`Vmstat::quieted`]), and
    /// when its tick stopped its diffs were folded into the zones' counters, which the
    /// watermark checks read. The fold is done at the CPU's next event (no event of the CPU
    /// lies between).
    ///
    /// 6.12-3g-16cpu-wq p_pressure: CPU 2's worker at 230.133981 folded, then its decay
    /// drained one DMA page (diff +1); CPU 2 idled from 230.134026 to 230.157290. Its DMA
    /// frees from 230.226897 drained 3 pages at a time while `ZONE_BELOW_HIGH` held, until
    /// the drain at 230.227044 (DMA free 3052, high mark 84 plus 2959 protection), then 11
    /// frees drained nothing: the flag cleared there, not at 230.227041 (free 3049), so the
    /// counter lagged 8 to 10 pages, as a diff folded to 0 by the idle CPU gives (43 pages
    /// later, 10) and the diff of 1 the run left does not (0: ours cleared it at 3049).
    #[cold]
    #[inline(never)]
    fn quiet_vmstat(&mut self, cpu: u32) {
        for z in 0..self.zones.len() {
            self.stat_fold(z, cpu);
        }
    }

    /// [`Replayer::vmstat_due`] when something may be due (or at the first event, or the CPU
    /// slept with its worker pending: [`Replayer::quiet_vmstat`] first). A run done before
    /// the event re-queues its worker, whose next expiry may lie before the event too: the
    /// workers are asked again ([`Vmstat::due_again`]) until none is.
    #[inline(never)]
    fn vmstat_runs(&mut self, cpu: u32, ts: u64, ev: &Event<'_>) -> io::Result<()> {
        let went_idle = ev.who.is_idle() && self.went_idle(cpu, ts);
        if self.vmstat.is_none() {
            self.vmstat = Some(self.new_vmstat());
        } else if self.stat_drift && self.vmstat.as_ref().is_some_and(|vm| vm.quieted(cpu, ts)) {
            self.quiet_vmstat(cpu);
        }
        if self.any_parked {
            self.parked_seen(cpu, ts, ev)?;
        }
        let Some(vm) = self.vmstat.as_mut() else {
            return Ok(());
        };
        let mut runs = std::mem::take(&mut self.runs);
        vm.set_went_idle(went_idle);
        vm.due(cpu, ts, &mut runs);
        vm.set_went_idle(false);
        let mut passes = 0;
        while self.do_runs(&runs, cpu, ts, ev)? && passes < MAX_PASSES {
            passes += 1;
            if let Some(vm) = self.vmstat.as_mut() {
                vm.due_again(cpu, ts, &mut runs);
            }
        }
        self.runs = runs;
        if self.any_mid {
            self.mid_pause_seen(cpu, ev)?;
        }
        if let Some(vm) = self.vmstat.as_mut() {
            vm.event_of(cpu, ts, &ev.kind);
        }
        Ok(())
    }

    /// The workers' `runs` due before event `ev` on `cpu` at `ts`: each done, held or made
    /// late. Whether one was done before `ts`.
    fn do_runs(&mut self, runs: &[Run], cpu: u32, ts: u64, ev: &Event<'_>) -> io::Result<bool> {
        let mut before = false;
        for &run in runs {
            // A pause that may lie inside a batch of frees waits (`in_batch.rs`).
            if let Some(run) = self.park_in_batch(run, cpu, ts, ev)? {
                before |= self.do_run(run, cpu, ts, ev)?;
            }
        }
        Ok(before)
    }

    /// One of [`Replayer::do_runs`]' runs: done, held or made late. Whether it was done
    /// before `ts`.
    pub(super) fn do_run(
        &mut self,
        run: Run,
        cpu: u32,
        ts: u64,
        ev: &Event<'_>,
    ) -> io::Result<bool> {
        // Queued by the shepherd, whose time the trace does not show, and no run of it
        // in the trace since: a run that would drain was not the kernel's
        // (`Vmstat::put_off`).
        let shepherded = self.vmstat.as_ref().is_some_and(|v| v.shepherded(run.cpu));
        if self.late_workers && shepherded && self.decay_would_drain(run.cpu) {
            if let Some(vm) = self.vmstat.as_mut() {
                vm.put_off(run);
            }
            return Ok(false);
        }
        // An idle CPU's expired worker whose decay would drain: the kernel's, run then,
        // would show its kworker's drain. Its timer is deferrable (`vmstat_work`,
        // `INIT_DEFERRABLE_WORK`, mm/vmstat.c): it waits for the CPU to wake, at the
        // CPU's next event here (the worker's own drain, `Vmstat::mark`, or another).
        if self.late_workers && run.woken && run.at_ns < ts && self.decay_would_drain(run.cpu) {
            if let Some(vm) = self.vmstat.as_mut() {
                vm.hold_woken(run);
            }
            return Ok(false);
        }
        // Held to the CPU's wake, and this event is the task it woke for, not the
        // worker's own drain: the kworker waits for it (`Vmstat::wake_late`).
        if self.late_workers
            && run.woken
            && run.at_ns == ts
            && run.cpu == cpu
            && !ev.who.is_worker_drain()
            && self.decay_would_drain(run.cpu)
        {
            if let Some(vm) = self.vmstat.as_mut() {
                vm.wake_late(run);
            }
            return Ok(false);
        }
        let inside = run.paused && self.inside_free(run.cpu);
        if run.paused && (inside || self.decay_would_drain(run.cpu)) {
            if let Some(vm) = self.vmstat.as_mut() {
                vm.still_late(run);
            }
            if inside {
                if let Some(m) = self.mid_pause.get_mut(run.cpu as usize) {
                    *m = Some(run.at_ns);
                    self.any_mid = true;
                }
            }
            return Ok(false);
        }
        // Due at its kworker's own drain line (a run held to its idle CPU's wake) with
        // no batch's commits open: the task before it left the CPU, its single frees
        // committed in the calls that traced them (`free_unref_page` ->
        // `free_unref_page_commit`), so `decay_pcp_high` counts their pages
        // ([`Replayer::commit_before_run`]; `commit_before` commits them at the drain
        // line too, but after the run). 6.12-4g-6cpu p_fork: `kworker/4:1` frees 8
        // pages (396.658571 to 396.715504), CPU 4 idles over its expiry (396.7515), and
        // its decay drains 83 at 396.788917; ours drained 74, then 105 more when the
        // frees were committed after it.
        let open = self.batching.get(cpu as usize).copied().unwrap_or(false);
        if self.commit_at_batched && run.cpu == cpu && ev.who.is_worker_drain() && !open {
            self.commit_before_run(cpu, run.at_ns)?;
        }
        self.run_worker(run)?;
        Ok(run.at_ns < ts)
    }

    /// Whether CPU `cpu`'s task is inside a free call (with [`Replayer::mid_free_no_switch`]):
    /// a traced `mm_page_free` (`free_pages_prepare`) still waits for its commit. Under
    /// voluntary preemption there is no switch point before it (`free_unref_folios` prepares
    /// the whole batch, then commits it; `free_unref_page` commits at once): a gap there is
    /// an interrupt or the vCPU's stall, and the kworker cannot run in it. 6.12-4g
    /// p_pressure: `kmem-phases-1191`'s exit frees 0x10dd3d at 804.009006 and 0x10dd3c at
    /// 804.015427, one batch (every CPU silent for 37 ms between 0x10c116 and 0x10c117,
    /// 804.019005 to 804.056421); ours ran CPU 1's late worker in the first gap and lowered
    /// `high` 2387 -> 2089, draining 505 blocks at 804.016005 where the kernel drained 803
    /// at 804.016817 (and `high` was 2387 at the after-snapshot's read). The replay
    /// holds a single free to the CPU's next event too: that event tells the two apart
    /// ([`Replayer::mid_pause_seen`]).
    fn inside_free(&self, cpu: u32) -> bool {
        self.mid_free_no_switch
            && self
                .deferred
                .get(cpu as usize)
                .is_some_and(|d| !d.is_empty())
    }

    /// The first event on `cpu` after a pause skipped inside a free call ([`Self::inside_free`]):
    /// a commit (`mm_page_free_batched`, or its drain) shows the gap inside a batch, and the run
    /// waits on; any other event shows the free a single one (`free_unref_page`, committed at
    /// once), after which the task left the CPU: the run goes at the pause, its free committed
    /// first, unless its decay would drain there.
    #[cold]
    #[inline(never)]
    fn mid_pause_seen(&mut self, cpu: u32, ev: &Event<'_>) -> io::Result<()> {
        // More frees: still the batch's `free_pages_prepare` calls, or more single frees.
        if matches!(ev.kind, EventKind::Free { .. }) {
            return Ok(());
        }
        let Some(at_ns) = self.mid_pause.get_mut(cpu as usize).and_then(Option::take) else {
            return Ok(());
        };
        self.any_mid = self.mid_pause.iter().any(Option::is_some);
        if matches!(
            ev.kind,
            EventKind::FreeBatched { .. } | EventKind::PcpuDrain { .. }
        ) {
            return Ok(());
        }
        self.commit_before_run(cpu, at_ns)?;
        if self.decay_would_drain(cpu) {
            return Ok(());
        }
        let run = Run {
            cpu,
            at_ns,
            woken: false,
            paused: true,
        };
        if let Some(vm) = self.vmstat.as_mut() {
            vm.take_held(cpu);
        }
        self.run_worker(run)
    }

    /// Whether CPU `cpu`'s `decay_pcp_high` would drain pages now, in any zone. A late
    /// worker's run that drains shows in the trace (its kworker's drain, [`Vmstat::mark`]);
    /// where the trace shows none, the kernel's ran when it drained nothing.
    fn decay_would_drain(&self, cpu: u32) -> bool {
        self.zones
            .iter()
            .any(|z| z.decay_pcp_high_preview(CpuId(cpu)).drained > 0)
    }

    /// `vmstat_update` on CPU `run.cpu`: `refresh_cpu_vm_stats(true)` runs `decay_pcp_high`
    /// on every populated zone in zone order (`mm/vmstat.c`); its drains are booked on that
    /// CPU and stamped with it and the run's time (the kernel's trace stamps the executing
    /// CPU, and the work runs on the CPU it decays).
    #[inline(never)]
    fn run_worker(&mut self, run: Run) -> io::Result<()> {
        // The CPU's pending drain before its worker runs ([`super::lock_order`]).
        if self.lock.any_pending() {
            self.flush_pending(run.cpu, Some(run.at_ns))?;
        }
        let stamp = Event {
            cpu: Some(run.cpu),
            ts_ns: Some(run.at_ns),
            page: PagePtr::Present,
            kind: EventKind::FreeBatched { pfn: 0 },
            who: Who::UNKNOWN,
        };
        let mut todo = false;
        for z in 0..self.zones.len() {
            if let Some(n) = self.numa.as_mut() {
                n.expiry.fold(&self.zones[z], z, run.cpu);
            }
            // refresh_cpu_vm_stats folds the CPU's diffs before decay_pcp_high.
            self.stat_fold(z, run.cpu);
            let out = self.zones[z].decay_pcp_high(CpuId(run.cpu));
            todo |= out.todo;
            self.counts.decay_drained_pages += out.drained.max(0) as u64;
            // Then the CONFIG_NUMA block: a remote node's pageset expires.
            if let Some(n) = self.numa.as_mut() {
                let local = self.geo.zones[z].node == self.geo.cpu_node(run.cpu);
                todo |= n.expiry.step(&self.zones[z], z, run.cpu, local);
            }
            self.flush_zone_events(&stamp, z, run.cpu)?;
        }
        if let Some(vm) = self.vmstat.as_mut() {
            vm.ran(run, todo);
        }
        Ok(())
    }

    /// A traced `mm_page_pcpu_drain` on `cpu`. The vmstat worker's own run (a kworker of the
    /// CPU at preempt depth 2, [`Who::is_worker_drain`], draining its own CPU's lists, on a
    /// kernel with the decay) is `decay_pcp_high`, which drains `count - high` in chunks of
    /// `batch`, never the whole list: at the run's first line the replay runs that CPU's
    /// worker, its timer aligned to it ([`Vmstat::mark`]). Another run the kernel side found
    /// no free for ([`crate::trace::replay::kernel`]) is, at its first line that drains CPU `owner`'s lists,
    /// `drain_pages_zone` (`drain_all_pages`, `drain_local_pages`: direct reclaim,
    /// compaction, `alloc_contig_range`; or 6.1's `free_high`), which empties the owner's
    /// list of the page's zone; but the worker's drain of its own pageset of a remote node's
    /// zone is the expiry drain ([`Replayer::expiry_drain`]).
    pub(super) fn traced_drain(
        &mut self,
        ev: &Event<'_>,
        cpu: u32,
        pfn: u64,
        inferred: Inferred,
    ) -> io::Result<()> {
        let remote = matches!(inferred, Inferred::Drain { owner } if owner % self.geo.cpus != cpu);
        if self.decay && !remote && ev.who.is_worker_drain() {
            if let (Some(vm), Some(ts)) = (self.vmstat.as_mut(), ev.ts_ns) {
                let c = cpu as usize;
                // With `--no-traced-workers`: the traced run before it drained (the check's).
                vm.run_log.drained(c, ts);
                // A line after another of the worker's on an idle CPU begins a new run where
                // they lie more than HZ/4 apart: a run drains in far less, and the worker
                // re-queues itself a second on (`round_jiffies_relative(HZ)`, which moves it
                // by at most HZ/4). 7.2-4g-2node p_crossnode: CPU 3's worker, alone on its
                // CPU, drained its node 0 pageset for expiry at 718.938, 723.089, 727.936,
                // 732.158 and 737.032 s, read as one run.
                let new = match self.worker_run.get(c) {
                    Some(Some(last)) => ts.saturating_sub(*last) > RUN_GAP_NS,
                    Some(None) => true,
                    None => false,
                };
                if let Some(w) = self.worker_run.get_mut(c) {
                    *w = Some(ts);
                }
                if new {
                    if let Some(n) = self.numa.as_mut() {
                        n.expiry.new_run(cpu);
                    }
                    // With the trace's own runs, its drains are theirs: no mark.
                    let run = if vm.traced() { None } else { vm.mark(cpu, ts) };
                    if let Some(run) = run {
                        self.run_worker(run)?;
                    }
                }
                // A line in a remote node's zone (a free before the run or not: the
                // worker's own lines say who drained) is the kernel's expiry drain, which
                // ours does itself where its countdown is not known yet (numa::Expiry).
                let pages = match ev.kind {
                    EventKind::PcpuDrain { order, .. } => 1u64 << order.min(63),
                    _ => 1,
                };
                if let Some(z) = self.geo.zone_of(pfn) {
                    let remote = self.geo.zones[z].node != self.geo.cpu_node(cpu);
                    if self.numa.as_mut().is_some_and(|n| {
                        let first = n.expiry.first_in_run(z, cpu);
                        remote && n.expiry.traced(z, cpu, pages, first)
                    }) {
                        self.expiry_drain(ev, cpu, pfn)?;
                    }
                }
                return Ok(());
            }
        }
        let Inferred::Drain { owner } = inferred else {
            return Ok(());
        };
        let owner = owner % self.geo.cpus;
        if owner == cpu && ev.who.is_worker_drain() && self.expiry_drain(ev, cpu, pfn)? {
            return Ok(());
        }
        let z = self.geo.zone_of(pfn).unwrap_or(0);
        self.counts.inferred_drains += 1;
        if self.lock.any_pending() {
            self.flush_pending(owner, ev.ts_ns)?;
        }
        self.zones[z].drain_cpu(CpuId(owner));
        self.flush_zone_events(ev, z, cpu)
    }

    /// The vmstat worker on `cpu` draining its pageset of `pfn`'s zone, at the first line of
    /// a run the kernel side found no free for: where the zone is a remote node's, that is
    /// `refresh_cpu_vm_stats`' expiry drain (CONFIG_NUMA, 6.1 and 7.2: `drain_zone_pages`,
    /// `min(count, batch)` pages, not the whole list; in 6.1's two-node captures every
    /// worker drain is of a remote node's zone, in runs of 63 blocks, the batch). Whether it
    /// was one. The modelled countdown ([`crate::trace::replay::numa::Expiry`]) restarts.
    fn expiry_drain(&mut self, ev: &Event<'_>, cpu: u32, pfn: u64) -> io::Result<bool> {
        let Some(z) = self.geo.zone_of(pfn) else {
            return Ok(false);
        };
        let Some(n) = self.numa.as_mut() else {
            return Ok(false);
        };
        if self.geo.zones[z].node == self.geo.cpu_node(cpu) {
            return Ok(false);
        }
        self.counts.inferred_drains += 1;
        let pages = self.zones[z].drain_zone_pages(CpuId(cpu));
        n.expiry.restart(&self.zones[z], z, cpu, pages);
        self.flush_zone_events(ev, z, cpu)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod mid_free_tests;

#[cfg(test)]
mod idle_tests;

#[cfg(test)]
mod in_batch_tests;

#[cfg(test)]
mod went_idle_tests;
