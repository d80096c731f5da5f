//! One variant's replay: its zones, fed the trace's events one by one ([`Replayer::feed`]),
//! what it counted and sampled; the frees in [`frees`], a traced allocation in [`traced`].

mod contig_free;
mod decay;
mod frees;
mod held;
mod kswapd;
#[cfg(test)]
pub(crate) mod tests;
mod traced;

use std::io::{self, Write};

use zonealloc::{Pfn, Zone, ZoneEvent};

use super::counts::{FragSample, ReplayCounts};
use super::frames::{self, most_first};
use super::geometry::{Geometry, Online};
use super::gfp;
use super::infer::kernel::Inferred;
use super::infer::pcp_state;
use super::numa::NumaReplay;
use super::proc_setup;
use super::sampling::Samples;
use super::tally::Grid;
use super::vmstat::{self, Run, Vmstat};
use crate::trace::emit::{zone_event, TraceWriter};
use crate::trace::parse::{Event, EventKind, PagePtr, Who};
use crate::trace::variant::Variant;
pub(super) use contig_free::contig_free_on;
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
    /// Per CPU: traced frees not on the lists yet ([`Deferred`]).
    deferred: Vec<Vec<Deferred>>,
    /// Per CPU: a batched commit has begun (a drain belongs to it; otherwise a drain follows
    /// a single free, committed before it).
    batching: Vec<bool>,
    /// Per CPU: the zone whose lists a traced refill holds ([`held`]).
    held: Vec<Option<usize>>,
    /// The free being replayed found its CPU's lists held: it goes to the buddy.
    lists_held: bool,
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
    /// Their phase, if given ([`Replayer::set_vmstat`]).
    jiffies_phase_ns: Option<u64>,
    /// Their first runs ahead ([`Replayer::set_runs_ahead`]).
    runs_ahead: vmstat::RunsAhead,
    /// The workers, from the first event with a timestamp (with `decay`).
    pub vmstat: Option<Vmstat>,
    /// The runs due before the event at hand (a buffer kept for its allocation).
    runs: Vec<Run>,
    /// Per CPU: its last event was a drain of its vmstat worker ([`Replayer::traced_drain`]).
    worker_run: Vec<bool>,
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
        let mut zones = Vec::with_capacity(geo.zones.len());
        let mut online = Vec::with_capacity(geo.zones.len());
        let mut pools = Vec::new();
        let mut setup = Vec::new();
        let mut setup_counts = (0, 0, 0);
        let block_shift = u32::from(cfg.max_order);
        let numa = NumaReplay::for_geometry(geo, snap).map_err(|e| err(&e))?;
        for (i, span) in geo.zones.iter().enumerate() {
            let (start, end) = (span.start, span.end());
            let extra = if snap.is_some() {
                proc_setup::SETUP_CPUS
            } else {
                0
            };
            let mut zcfg = cfgs
                .get(i)
                .copied()
                .unwrap_or(cfg)
                .with_cpus(geo.cpus + extra);
            // zone_highsize splits `high` across the traced machine's CPUs
            // (`cpumask_of_node`); the set-up's own CPU is none of them. Split across all
            // five, 6.12's auto-tuned range (not printed, so computed) came out a fifth
            // short: 6.12-4g p_thp's CPU 0 drained 2136 pages the kernel kept.
            if extra > 0 && zcfg.pcp.split_cpus.is_none() {
                zcfg.pcp.split_cpus = Some(geo.cpus);
            }
            let zone =
                Zone::new(span.zone_type, Pfn(start), Pfn(end), zcfg).map_err(|e| err(&e))?;
            match (geo.online, snap) {
                (Online::All, _) => {
                    zone.add_free_range(Pfn(start), Pfn(end))
                        .map_err(|e| err(&e))?;
                }
                (Online::Snapshot, Some(snap)) => {
                    let kz = snap
                        .zone(span.node, span.zone_type)
                        .ok_or_else(|| err(&format!("no {} in the snapshot", geo.zone_label(i))))?;
                    let early = early.get(i).and_then(Option::as_ref);
                    let (pool, facts) =
                        proc_setup::populate_from(&zone, snap, kz, demand.get(i), early)
                            .map_err(|e| err(&e))?;
                    pools.push(pool);
                    setup.push(facts);
                    setup_counts = add_counts(setup_counts, zone_counts(&zone));
                }
                _ => {}
            }
            zone.record_events(true);
            zones.push(zone);
            let blocks = (end - (start >> block_shift << block_shift)).div_ceil(1 << block_shift);
            online.push(vec![0u64; blocks.div_ceil(64) as usize]);
        }
        let frames = frames::Frames::new(geo.span()).map_err(|e| err(&e))?;
        let emit = match emit {
            Some(w) => {
                let mut w = TraceWriter::new(w, "zonealloc", cfg.pageblock_order);
                w.header(geo.cpus).map_err(|e| format!("--emit: {e}"))?;
                Some(w)
            }
            None => None,
        };
        Ok(Replayer {
            variant,
            zones,
            geo: geo.clone(),
            online,
            block_shift,
            frames,
            commit_at_batched: false,
            contig_free: false,
            deferred: vec![Vec::new(); geo.cpus as usize],
            batching: vec![false; geo.cpus as usize],
            held: vec![None; geo.cpus as usize],
            lists_held: false,
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
            decay_waits_for_event: false,
            jiffies_phase_ns: None,
            runs_ahead: vmstat::RunsAhead::default(),
            runs: Vec::new(),
            worker_run: vec![false; geo.cpus as usize],
            numa,

            frag: Vec::new(),
            samples: Samples::default(),
            events: Vec::new(),
            emit,
        })
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
        untraced: &[(u64, u32, u8)],
    ) -> io::Result<()> {
        if !untraced.is_empty() {
            self.untraced_allocs(ev, untraced)?;
        }
        self.feed(ev, inferred)
    }

    /// Replays one trace event (buddy-side events of the trace are counted by the caller;
    /// ours come from the zones), and what the caller inferred from it.
    pub fn feed(&mut self, ev: &Event<'_>, inferred: Inferred) -> io::Result<()> {
        let cpu = self.cpu_of(ev);
        if self.decay {
            if let Some(ts) = ev.ts_ns {
                self.vmstat_due(cpu, ts)?;
            }
            // A worker's run of drains ends at any other event on its CPU.
            if !matches!(ev.kind, EventKind::PcpuDrain { .. }) {
                if let Some(w) = self.worker_run.get_mut(cpu as usize) {
                    *w = false;
                }
            }
        }
        // Any other event on this CPU commits its deferred frees first (not a drain: the
        // commits drain mid-batch); an allocation of a deferred frame, the free of it.
        if self.commit_at_batched {
            let batching = self.batching.get(cpu as usize).copied().unwrap_or(false);
            match ev.kind {
                // A new free after a batch's commits: the batch is over.
                EventKind::Free { .. } if batching => self.flush_deferred(cpu)?,
                EventKind::PcpuDrain { .. } if !batching => self.flush_deferred(cpu)?,
                EventKind::Free { .. }
                | EventKind::FreeBatched { .. }
                | EventKind::PcpuDrain { .. } => {}
                EventKind::Alloc { pfn, .. } => {
                    self.flush_deferred(cpu)?;
                    if let Some(c) = self.frames.deferred_at(pfn) {
                        self.flush_deferred(c)?;
                    }
                }
                _ => self.flush_deferred(cpu)?,
            }
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
            EventKind::Free { pfn, order } => {
                self.zone_for(pfn)?;
                if let Some(at) = self.frames.deferred_at(pfn) {
                    self.flush_deferred(at)?;
                }
                let held = self.lists_held_for(ev, cpu, pfn);
                self.deferred[cpu as usize].push(Deferred {
                    ts_ns: ev.ts_ns,
                    cpu: ev.cpu,
                    page: ev.page,
                    who: ev.who,
                    pfn,
                    order,
                    inferred,
                    held,
                });
                self.frames.set_deferred_at(pfn, Some(cpu));
            }
            EventKind::FreeBatched { pfn } => {
                let list = &mut self.deferred[cpu as usize];
                let at = list.iter().position(|d| d.pfn == pfn);
                if let (Some(i), Some(c)) = (at, self.frames.deferred_at(pfn)) {
                    // The commit of a free `mm_page_free` announced: the page goes on the list
                    // now (free_unref_folios / free_unref_page_list).
                    debug_assert_eq!(c, cpu);
                    // The batch's first commit: the frees before its pages were single ones,
                    // committed at once.
                    let first = !self.batching[cpu as usize];
                    let before: Vec<Deferred> = if first {
                        list.drain(..i).collect()
                    } else {
                        Vec::new()
                    };
                    let d = list.remove(if first { 0 } else { i });
                    self.commit_frees(cpu, &before)?;
                    self.frames.set_deferred_at(pfn, None);
                    self.batching[cpu as usize] = true;
                    self.counts.batched_duplicates += 1;
                    let e = Event {
                        cpu: ev.cpu,
                        ts_ns: ev.ts_ns,
                        page: d.page,
                        who: ev.who,
                        kind: EventKind::Free {
                            pfn,
                            order: d.order,
                        },
                    };
                    self.free_traced(&e, cpu, pfn, d.order, d.inferred)?;
                } else {
                    if let Some(c) = self.frames.deferred_at(pfn) {
                        self.flush_deferred(c)?;
                    }
                    self.zone_for(pfn)?;
                    self.free_traced(ev, cpu, pfn, 0, inferred)?;
                }
            }
            EventKind::PcpuDrain { pfn, .. } => self.traced_drain(ev, cpu, pfn, inferred)?,
            // kswapd's passes on the node's zones ([`kswapd`]; each node has its own kswapd).
            EventKind::KswapdWake { nid, .. } | EventKind::KswapdSleep { nid }
                if self.geo.zones.iter().any(|z| z.node == nid) =>
            {
                self.kswapd(nid, matches!(ev.kind, EventKind::KswapdWake { .. }));
            }
            EventKind::ZoneLocked { .. }
            | EventKind::Extfrag { .. }
            | EventKind::KswapdWake { .. }
            | EventKind::KswapdSleep { .. } => {}
        }
        self.track_held(ev, cpu);
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
        }
        for cpu in 0..self.geo.cpus {
            self.flush_deferred(cpu)?;
        }
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
