//! One variant's replay: its zones, fed the trace's events one by one ([`Replayer::feed`]),
//! what it counted and sampled; the frees in [`frees`], a traced allocation in [`traced`].

mod batched;
mod compaction;
mod contig_free;
mod decay;
mod frees;
mod held;
mod in_batch;
mod kswapd;
mod lock_order;
mod refill_order;
mod setup;
mod stat_drift;
#[cfg(test)]
pub(crate) mod tests;
mod traced;

use std::io::{self, Write};

use zonealloc::{Pfn, Zone, ZoneEvent};

use super::counts::{FragSample, ReplayCounts};
use super::frames::{self, most_first};
use super::geometry::{Geometry, Online};
use super::gfp;
use super::infer::kernel::{Inferred, Untraced};
use super::infer::pcp_state;
use super::numa::NumaReplay;
use super::proc_setup;
use super::sampling::Samples;
use super::tally::Grid;
use super::vmstat::{self, Run, Vmstat};
use crate::trace::emit::{zone_event, TraceWriter};
use crate::trace::parse::{Event, EventKind, PagePtr, Who};
use crate::trace::variant::Variant;
pub(super) use contig_free::{contig_blocks, contig_free_on, extends_range, range_freer};
use frees::Deferred;

/// One variant's zones and what its replay has seen.
pub struct Replayer {
    /// The variant.
    pub variant: Variant,
    /// The zones, as [`Geometry::zones`].
    pub zones: Vec<Zone>,
    geo: Geometry,
    /// Per zone, one bit per `MAX_PAGE_ORDER` block: online yet ([`Online::Touched`]).
    online: Vec<Vec<u64>>,
    block_shift: u32,
    /// Per traced frame: the live block it heads, whether its allocation failed here, its
    /// pending `mm_page_free_batched` and deferred free; per frame of ours, its allocations.
    frames: frames::Frames,
    /// Replay a traced free at its commit, not at its `mm_page_free`: on a kernel's batched
    /// path (`free_unref_page_list`, `free_unref_folios`) every page of the batch is prepared
    /// (`mm_page_free`) before the first commit (`mm_page_free_batched`). For a kernel's trace
    /// (with the inferences); our own traces free at `mm_page_free` (off by default).
    pub commit_at_batched: bool,
    /// Free a run of order-0 frees of contiguous pages by one kworker as 7.2's
    /// `free_prepared_contig_range` does (`replayer::contig_free`): the 7.2 preset, with the
    /// inferences (its runs are read off the deferred frees).
    pub contig_free: bool,
    /// Apply a free's drain chunk by chunk at its traced lines, after the refills other CPUs
    /// began under the zone lock before them (`replayer/lock_order.rs`): a kernel's trace with the
    /// inferences (`--no-lock-order` turns it off: the drain is applied at the commit).
    pub lock_order: bool,
    /// With the lock order, make another CPU's open refill at the first `zone_locked` line
    /// of a refill that came after it ([`refill_order`]: it held the zone lock first;
    /// `--no-refill-order` turns it off).
    refill_order: bool,
    /// Refills so made ahead of their allocation's line.
    pub refills_ordered: u64,
    /// The pending drains and open refills ([`lock_order`]).
    lock: lock_order::LockOrder,
    /// Per CPU: traced frees not on the lists yet ([`Deferred`]).
    deferred: Vec<Vec<Deferred>>,
    /// Per CPU: a batched commit has begun (a drain belongs to it; otherwise a drain follows
    /// a single free, committed before it).
    batching: Vec<bool>,
    /// Per CPU: the lists a traced refill or drain holds ([`held`]).
    held: Vec<Option<held::Held>>,
    /// Per CPU: the lists a batch's commits hold, and the interrupts' frees since its last
    /// commit ([`held`]).
    batch_holds: Vec<held::BatchHold>,
    /// The free being replayed found its CPU's lists held: it goes to the buddy.
    lists_held: bool,
    /// Interrupts' frees the list walk saw go to the buddy: (timestamp, CPU), sorted
    /// (`replayer/held.rs`).
    pub held_frees: Vec<(u64, u32)>,
    /// Per zone: the watermark boost when the kswapd pass under way began ([`kswapd`]).
    pass_boosts: Vec<Option<u64>>,
    /// The requests of the `gfp_flags` strings seen.
    gfp: gfp::GfpCache,
    /// The counts.
    pub counts: ReplayCounts,
    /// Our refills, drains, direct allocations and fallbacks per zone and CPU.
    pub ours: Grid,
    /// Per zone, the pages in use at the `/proc` snapshot ([`proc_setup::Pool`]).
    pools: Vec<proc_setup::Pool>,
    /// What the `/proc` set-up reached, per zone.
    pub setup: Vec<proc_setup::SetupFacts>,
    /// PCP hits, PCP misses and zone-lock acquisitions of the set-up, not the replay's.
    pub setup_counts: (u64, u64, u64),
    /// The same counts at [`Replayer::finish`], the set-up's included: read once there, so a
    /// report needs no zone lock (a check may hold one meanwhile).
    pub end_counts: (u64, u64, u64),
    /// Run each CPU's vmstat worker (`decay_pcp_high`) as the kernel schedules it
    /// ([`Vmstat`]): for kernels that have the decay (6.7 on).
    pub decay: bool,
    /// The kernel's `HZ`, which the workers' timers round to ([`vmstat::DEFAULT_HZ`]).
    pub hz: u32,
    /// An idle CPU's expired worker waits for its next event ([`Replayer::set_vmstat`]).
    decay_waits_for_event: bool,
    /// A busy CPU's expired worker waits for its CPU ([`Replayer::set_late_workers`]).
    late_workers: bool,
    /// A late worker's run is not placed in a gap its CPU's task shows inside a free call
    /// (a traced free not yet committed): the voluntary-preemption kernels (`decay.rs`).
    pub mid_free_no_switch: bool,
    /// Per CPU: the pause a late run skipped inside a free call, until the CPU's next event
    /// tells whether the free was a batch's (`decay.rs`, `inside_free`).
    mid_pause: Vec<Option<u64>>,
    /// Whether any CPU has a `mid_pause`.
    any_mid: bool,
    /// Per CPU: a model run waiting while its task may be inside a batch of frees
    /// ([`in_batch`]).
    parked: Vec<Option<in_batch::Parked>>,
    /// Whether any CPU has a `parked` run.
    any_parked: bool,
    /// The workers' and shepherd's runs the trace shows are the runs
    /// ([`Vmstat::set_traced`]; `--no-traced-workers` clears it).
    pub traced_workers: bool,
    /// Their timers fire at their bucket on the timer wheel ([`Replayer::set_timer_wheel`]).
    timer_wheel: bool,
    /// Their phase, if given ([`Replayer::set_vmstat`]).
    jiffies_phase_ns: Option<u64>,
    /// Their first runs ahead ([`Replayer::set_runs_ahead`]).
    runs_ahead: vmstat::RunsAhead,
    /// The workers, from the first event with a timestamp (with `decay`).
    pub vmstat: Option<Vmstat>,
    /// The zones' `NR_FREE_PAGES` counters lag their free lists ([`stat_drift`]).
    stat_drift: bool,
    /// The CPU the zones' operations were last set to run on (with `stat_drift`).
    stat_cpu: Option<u32>,
    /// The runs due before the event at hand (a buffer kept for its allocation).
    runs: Vec<Run>,
    /// Per CPU: its last event was a drain of its vmstat worker, printed then (ns;
    /// [`Replayer::traced_drain`]).
    worker_run: Vec<Option<u64>>,
    /// Per CPU: the time of its last event of the idle task (`<idle>-0`;
    /// [`Replayer::vmstat_due`]).
    idle_at: Vec<Option<u64>>,
    /// Zones on several nodes: node counters and remote pagesets' expiry ([`NumaReplay`]).
    pub numa: Option<Box<NumaReplay>>,

    /// Fragmentation over time (from the samples kept, at [`Replayer::finish`]).
    pub frag: Vec<FragSample>,
    /// The samples taken and kept so far.
    samples: Samples,
    events: Vec<ZoneEvent>,
    emit: Option<TraceWriter<Box<dyn Write>>>,
}

impl Replayer {
    /// Fresh zones for `variant` shaped by `geo` (all free, or empty to be onlined as the
    /// trace touches them); `emit` receives the replay's events in ftrace format.
    pub fn new(
        variant: Variant,
        geo: &Geometry,
        emit: Option<Box<dyn Write>>,
    ) -> Result<Replayer, String> {
        let cfgs = vec![variant.cfg; geo.zones.len()];
        Self::with_zones(variant, geo, emit, &cfgs, None, &[], &[])
    }

    /// Zones with one configuration each (`cfgs`, as `geo.zones`), set up from `snap` when
    /// given ([`proc_setup::populate`]), its CPUs' lists holding what `demand` (one per zone)
    /// infers; `early` (one per zone, or none) the layouts synthesised before the lists were
    /// known.
    pub fn with_zones(
        variant: Variant,
        geo: &Geometry,
        emit: Option<Box<dyn Write>>,
        cfgs: &[zonealloc::ZoneConfig],
        snap: Option<&crate::procfs::ProcSnapshot>,
        demand: &[pcp_state::ListDemand],
        early: &[Option<super::layout::Early>],
    ) -> Result<Replayer, String> {
        let cfg = variant.cfg.with_cpus(geo.cpus);
        let err = |e: &dyn std::fmt::Display| format!("variant '{}': {e}", variant.name);
        let numa = NumaReplay::for_geometry(geo, snap).map_err(|e| err(&e))?;
        let sources = setup::ZoneSources {
            geo,
            cfg,
            cfgs,
            snap,
            demand,
            early,
        };
        let setup::Zones {
            zones,
            online,
            pools,
            setup,
            setup_counts,
        } = sources.zones(&err)?;
        let frames = frames::Frames::new(geo.span()).map_err(|e| err(&e))?;
        let emit = setup::emit_writer(emit, geo, cfg.pageblock_order)?;
        Ok(Replayer {
            variant,
            zones,
            geo: geo.clone(),
            online,
            block_shift: u32::from(cfg.max_order),
            frames,
            commit_at_batched: false,
            contig_free: false,
            lock_order: false,
            refill_order: false,
            refills_ordered: 0,
            lock: lock_order::LockOrder::new(geo.cpus),
            deferred: vec![Vec::new(); geo.cpus as usize],
            batching: vec![false; geo.cpus as usize],
            held: vec![None; geo.cpus as usize],
            batch_holds: vec![held::BatchHold::default(); geo.cpus as usize],
            lists_held: false,
            held_frees: Vec::new(),
            pass_boosts: vec![None; geo.zones.len()],
            gfp: gfp::GfpCache::default(),
            counts: ReplayCounts::default(),
            ours: Grid::new(geo.zones.len(), geo.cpus),
            pools,
            setup,
            setup_counts,
            end_counts: (0, 0, 0),
            decay: false,
            hz: vmstat::DEFAULT_HZ,
            vmstat: None,
            stat_drift: false,
            stat_cpu: None,
            decay_waits_for_event: false,
            late_workers: true,
            mid_free_no_switch: false,
            mid_pause: vec![None; geo.cpus as usize],
            any_mid: false,
            parked: vec![None; geo.cpus as usize],
            any_parked: false,
            traced_workers: true,
            timer_wheel: false,
            jiffies_phase_ns: None,
            runs_ahead: vmstat::RunsAhead::default(),
            runs: Vec::new(),
            worker_run: vec![None; geo.cpus as usize],
            idle_at: vec![None; geo.cpus as usize],
            numa,

            frag: Vec::new(),
            samples: Samples::default(),
            events: Vec::new(),
            emit,
        })
    }

    /// Sets the lock order ([`Replayer::lock_order`]) and whether a refill a drain's chunk
    /// waits for is made ahead of its allocation where the drain's CPU moves on first
    /// (`lock_order::refill_ahead`; `--refill-ahead` turns it on).
    pub fn set_lock_order(&mut self, on: bool, ahead: bool) {
        self.lock_order = on;
        self.lock.set_ahead(ahead);
    }

    /// Sets whether, with the lock order, two CPUs' refills are made in the order of their
    /// `zone_locked` lines (`replayer/refill_order.rs`).
    pub fn set_refill_order(&mut self, on: bool) {
        self.refill_order = on;
    }

    /// Sets the trace's migratetype numbering, which the zones' set-up does not read: a
    /// replayer can be built before the parse has shown it (`prefix`).
    pub fn set_numbering(&mut self, numbering: crate::trace::migratetype::Numbering) {
        self.geo.numbering = numbering;
    }

    /// The replay's CPU for a trace event (trace CPU `c` is `c % cpus`).
    #[inline]
    fn cpu_of(&self, ev: &Event<'_>) -> u32 {
        let c = ev.cpu.unwrap_or(0);
        // Most traces have no CPU to fold: no division per event.
        if c < self.geo.cpus {
            c
        } else {
            c % self.geo.cpus
        }
    }

    /// The zone of traced frame `pfn`, bringing its block online first when memory comes
    /// online as the trace touches it.
    #[inline(always)]
    fn zone_for(&mut self, pfn: u64) -> io::Result<usize> {
        let Some(z) = self.geo.zone_of(pfn) else {
            return Err(self.outside(pfn));
        };
        if self.geo.online == Online::Touched {
            self.online_block(z, pfn)?;
        }
        Ok(z)
    }

    #[cold]
    fn outside(&self, pfn: u64) -> io::Error {
        io::Error::other(self.geo.outside(pfn))
    }

    /// Brings traced frame `pfn`'s `MAX_PAGE_ORDER` block of zone `z` online, if not yet:
    /// the test of its bit inline (every event asks), the onlining out of line.
    #[inline(always)]
    fn online_block(&mut self, z: usize, pfn: u64) -> io::Result<()> {
        let base = self.geo.zones[z].start >> self.block_shift << self.block_shift;
        let b = (pfn - base) >> self.block_shift;
        let (w, bit) = ((b / 64) as usize, 1u64 << (b % 64));
        if self.online[z][w] & bit != 0 {
            return Ok(());
        }
        self.bring_online(z, base, b)
    }

    /// Brings block `b` (from `base`) of zone `z` online.
    #[cold]
    #[inline(never)]
    fn bring_online(&mut self, z: usize, base: u64, b: u64) -> io::Result<()> {
        let span = self.geo.zones[z];
        self.online[z][(b / 64) as usize] |= 1u64 << (b % 64);
        let lo = (base + (b << self.block_shift)).max(span.start);
        let hi = (base + ((b + 1) << self.block_shift)).min(span.end());
        self.zones[z]
            .add_free_range(Pfn(lo), Pfn(hi))
            .map_err(|e| io::Error::other(format!("onlining {lo:#x}..{hi:#x}: {e}")))?;
        self.counts.onlined_blocks += 1;
        Ok(())
    }

    /// [`Replayer::feed`] after the allocations the kernel's side inferred were taken
    /// untraced before `ev` ([`Replayer::untraced_allocs`]; empty without the inferences).
    #[inline(always)]
    pub fn feed_inferred(
        &mut self,
        ev: &Event<'_>,
        inferred: Inferred,
        untraced: &[Untraced],
    ) -> io::Result<()> {
        if !untraced.is_empty() {
            self.untraced_before(ev, untraced)?;
        }
        self.feed(ev, inferred)
    }

    /// The allocations of [`Replayer::feed_inferred`], taken before `ev` is fed. An
    /// allocation commits its CPU's deferred frees first ([`Replayer::commit_before`]), and
    /// the pages it shows taken untraced were taken after those frees went on the list:
    /// `mm_page_free` prints before the commit, but a single free commits in the same call
    /// (`free_unref_page_commit`), so the bulk take that followed found the page on the head.
    /// 6.12-4g-loads p_fork: `kmem-phases-369` frees 0x1028bd on CPU 3 at 47.273091 (trace
    /// line 47963), then allocates 0x102ab8 (freed at 47.273043) at 47.273408: the four pages
    /// freed between were taken untraced. Taken before the commit, 0x1028bd was still ours
    /// in use, and CPU 3's list held one page more than the kernel's until its `vfree` at
    /// 48.081867, past the drain at 48.058527.
    #[inline(never)]
    fn untraced_before(&mut self, ev: &Event<'_>, untraced: &[Untraced]) -> io::Result<()> {
        let cpu = self.cpu_of(ev);
        let commits = self.commit_at_batched && matches!(ev.kind, EventKind::Alloc { .. });
        // In the order `feed` keeps: the workers due before the event, then the commits.
        if commits && self.decay {
            self.workers_before(ev, cpu)?;
        }
        self.stat_cpu_is(cpu);
        if commits {
            self.commit_before(ev, cpu)?;
        }
        // (A take applies its CPU's pending drain first: `untraced_alloc`.)
        self.untraced_allocs(ev, untraced)
    }

    /// Replays one trace event (buddy-side events of the trace are counted by the caller;
    /// ours come from the zones), and what the caller inferred from it: the vmstat workers
    /// due before it (`Replayer::workers_before`), the deferred frees it commits
    /// (`Replayer::commit_before`), then the event by its kind.
    pub fn feed(&mut self, ev: &Event<'_>, inferred: Inferred) -> io::Result<()> {
        if ev.kind.is_work() {
            return self.traced_work(ev);
        }
        let cpu = self.cpu_of(ev);
        if self.decay {
            self.workers_before(ev, cpu)?;
        }
        self.stat_cpu_is(cpu);
        if self.commit_at_batched {
            self.commit_before(ev, cpu)?;
        }
        if self.lock.any_pending() {
            self.lock_order_at(ev, cpu, inferred)?;
        }
        match ev.kind {
            EventKind::Alloc {
                pfn,
                order,
                migratetype,
                gfp_flags,
            } => self.alloc_traced(ev, cpu, pfn, order, (migratetype, gfp_flags), inferred)?,
            EventKind::Free { pfn, order } if !self.commit_at_batched => {
                self.zone_for(pfn)?;
                self.frames.set_pending_batched(pfn, true);
                self.lists_held = self.lists_held_for(ev, cpu, pfn);
                let done = self.free_traced(ev, cpu, pfn, order, inferred);
                self.lists_held = false;
                done?;
            }
            EventKind::FreeBatched { pfn } if !self.commit_at_batched => {
                if self.frames.set_pending_batched(pfn, false) {
                    self.counts.batched_duplicates += 1;
                } else {
                    self.zone_for(pfn)?;
                    self.free_traced(ev, cpu, pfn, 0, inferred)?;
                }
            }
            EventKind::Free { pfn, order } => self.defer_free(ev, cpu, pfn, order, inferred)?,
            EventKind::FreeBatched { pfn } => self.commit_batched(ev, cpu, pfn, inferred)?,
            EventKind::PcpuDrain { pfn, .. } => self.traced_drain(ev, cpu, pfn, inferred)?,
            // kswapd's passes on the node's zones ([`kswapd`]; each node has its own kswapd).
            EventKind::KswapdWake { nid, .. } | EventKind::KswapdSleep { nid }
                if self.geo.zones.iter().any(|z| z.node == nid) =>
            {
                let wake = matches!(ev.kind, EventKind::KswapdWake { .. });
                self.kswapd(nid, wake);
                self.stat_kswapd(nid, wake);
            }
            EventKind::CompactIsolate {
                start_pfn,
                end_pfn,
                nr_taken,
                fast,
            } => self.compact_isolate((start_pfn, end_pfn), nr_taken, fast)?,
            EventKind::ZoneLocked { .. }
            | EventKind::Extfrag { .. }
            | EventKind::KswapdWake { .. }
            | EventKind::KswapdSleep { .. }
            | EventKind::VmstatUpdate
            | EventKind::VmstatShepherd => {}
        }
        self.track_held(ev, cpu);
        if self.lock_order {
            let refill_line = matches!(
                ev.kind,
                EventKind::ZoneLocked {
                    percpu_refill: true,
                    ..
                }
            );
            if refill_line && self.refill_order && self.lock.any_refilling {
                self.order_refills(ev, cpu)?;
            }
            self.lock_order_after(ev, cpu)?;
        }
        Ok(())
    }

    /// Counts (and with `--emit` writes) the events zone `z` recorded since the last call.
    #[inline]
    fn flush_zone_events(&mut self, ev: &Event<'_>, z: usize, cpu: u32) -> io::Result<()> {
        // Most allocations and frees stay on the per-CPU lists and record nothing: checking
        // that (one load in `take_events`) inline, the work out of line.
        self.zones[z].take_events(&mut self.events);
        if self.events.is_empty() {
            return Ok(());
        }
        self.count_zone_events(ev, z, cpu)
    }

    #[inline(never)]
    fn count_zone_events(&mut self, ev: &Event<'_>, z: usize, cpu: u32) -> io::Result<()> {
        let pb = self.zones[z].config().pageblock_order;
        // Taken for the loop and put back, so its buffer is reused.
        let mut events = std::mem::take(&mut self.events);
        for e in events.drain(..) {
            let t = self.ours.at(z, cpu);
            match e {
                ZoneEvent::AllocZoneLocked {
                    order,
                    percpu_refill,
                    ..
                } => t.zone_locked(order.get(), percpu_refill),
                ZoneEvent::PcpuDrain { order, .. } => t.drain(order.get()),
                ZoneEvent::AllocExtfrag { .. } => {
                    t.extfrag += 1;
                    self.counts.extfrag += 1;
                }
            }
            if let Some(w) = self.emit.as_mut() {
                // Stamped, as counted, with the CPU that ran it (the kernel's trace stamps the
                // executing CPU: a decay drain runs on the CPU it drains, not on the one whose
                // event reached the tick); the kernel's CPU number, unfolded, where that CPU
                // is the event's.
                let stamp = match ev.cpu {
                    Some(c) if c % self.geo.cpus.max(1) == cpu => c,
                    _ => cpu,
                };
                w.write(&Event {
                    cpu: Some(stamp),
                    ts_ns: ev.ts_ns,
                    page: PagePtr::Present,
                    who: Who::UNKNOWN,
                    kind: zone_event(&e, pb),
                })?;
            }
        }
        self.events = events;
        Ok(())
    }

    fn emit_event<'g>(
        &mut self,
        ev: &Event<'_>,
        (page, pfn): (PagePtr, u64),
        kind: impl FnOnce(u64) -> EventKind<'g>,
    ) -> io::Result<()> {
        if let Some(w) = self.emit.as_mut() {
            w.write(&Event {
                cpu: Some(ev.cpu.unwrap_or(0)),
                ts_ns: ev.ts_ns,
                page,
                who: Who::UNKNOWN,
                kind: kind(pfn),
            })?;
        }
        Ok(())
    }

    /// Samples the fragmentation (of the highest zone) after `event` trace events; its
    /// indices reach [`Replayer::frag`] at [`Replayer::finish`].
    pub fn sample(&mut self, event: u64, ts_ns: Option<u64>) {
        if let Some(zone) = self.zones.last() {
            self.samples.take(zone, event, ts_ns);
        }
    }

    /// The samples taken and kept so far.
    pub fn samples_kept(&self) -> usize {
        self.samples.len()
    }

    /// Keeps every other sample, the second, fourth, ... (the sampling interval doubled).
    pub fn thin_samples(&mut self) {
        self.samples.thin();
    }

    /// Flushes the emitted trace and computes the fragmentation samples kept.
    pub fn finish(&mut self) -> io::Result<()> {
        self.end_counts = self
            .zones
            .iter()
            .map(zone_counts)
            .fold((0, 0, 0), add_counts);
        self.frag = self.samples.finish(self.zones.last());
        if let Some(vm) = &self.vmstat {
            self.counts.decay_runs = vm.runs;
            self.counts.decay_marks = vm.marks;
            self.counts.decay_marks_early = vm.marks_ran_already;
            self.counts.decay_phase_from_trace = vm.aligned();
            self.counts.decay_traced = vm.traced_runs;
            self.counts.decay_check = vm.run_log.check();
        }
        for cpu in 0..self.geo.cpus {
            self.flush_deferred(cpu)?;
        }
        self.flush_all_pending()?;
        self.give_all_back()?;
        if let Some(w) = self.emit.take() {
            w.finish()?;
        }
        Ok(())
    }

    /// Frames handed out at least once, most-allocated first: the seed 000 table.
    pub fn most_reused(&self, n: usize) -> Vec<(u64, u32)> {
        most_first(self.frames.allocated(), n)
    }
}

/// A zone's PCP hits, PCP misses and zone-lock acquisitions so far.
fn zone_counts(zone: &Zone) -> (u64, u64, u64) {
    let p = zone.pcp_stats();
    (
        p.alloc_hits,
        p.alloc_misses,
        zone.stats().zone_lock_acquisitions,
    )
}

fn add_counts(a: (u64, u64, u64), b: (u64, u64, u64)) -> (u64, u64, u64) {
    (a.0 + b.0, a.1 + b.1, a.2 + b.2)
}
