//! `zonealloc trace replay`: drive zones from a kernel trace, one zone per policy variant, in
//! one pass over the file.
//!
//! Each traced `mm_page_alloc` becomes an allocation of the same order and migratetype on the
//! same CPU (CPU `c` of the trace is CPU `c % cpus` of the zone); each traced `mm_page_free`
//! frees the block that allocation returned. The zone spans the trace's frames (aligned to
//! `MAX_PAGE_ORDER` blocks) unless `--zone-start`/`--zone-pages` say otherwise, so our frame
//! numbers are the kernel's and "the same frame as the kernel" can be counted.
//!
//! The trace is not a closed world (spec §10), and the replay says how it was not:
//! - a free of a frame the trace never showed allocated (allocated before the trace began, or
//!   by the untraced `alloc_pages_bulk`) is counted and skipped;
//! - a free that covers only part of a traced block (a block split with `split_page`, freed
//!   page by page) is counted, and the block is freed once all of it has been;
//! - a frame allocated again without a traced free is freed first (counted);
//! - a free logged both as `mm_page_free` and `mm_page_free_batched` is replayed once;
//! - a traced failure (pfn 0, NULL page) is attempted too; if it succeeds here it is counted
//!   and freed at once;
//! - an order above the zone's `MAX_PAGE_ORDER` or a requested migratetype that is not one of
//!   the three GFP types is counted and skipped.
//!
//! `gfp_flags` printed symbolically set the request: `__GFP_HIGH` (also in `GFP_ATOMIC`) may
//! use part of the reserve, and a request without `__GFP_DIRECT_RECLAIM` (`GFP_ATOMIC`,
//! `GFP_NOWAIT`, `GFP_TRANSHUGE_LIGHT`) is atomic. Hex `gfp_flags` carry no portable meaning
//! (the bits moved between kernels) and replay as `GFP_KERNEL`-like requests.
//!
//! While replaying, the zones record their own `mm_page_alloc_zone_locked`,
//! `mm_page_pcpu_drain` and `mm_page_alloc_extfrag` events, which are counted per CPU against
//! the trace's and, with `--emit`, written with the replay's `mm_page_alloc`/`mm_page_free`
//! in ftrace format ([`super::emit`]).

mod counts;
pub mod first_events;
mod frames;
mod frees;
mod geometry;
mod gfp;
pub mod input;
pub mod kernel;
pub mod pcp_state;
pub mod pipe;
pub mod prefix;
pub mod preset;
pub mod proc_setup;
mod run;
pub mod start_count;

use std::io::{self, Write};

use zonealloc::stats::{fragmentation_index, unusable_free_index};
use zonealloc::{CpuId, MigrateType, Order, Pfn, Zone, ZoneEvent};

use super::emit::{zone_event, TraceWriter};
use super::parse::{Event, EventKind, PagePtr};
use super::variant::Variant;
use kernel::{Grid, Inferred};

pub use counts::{FragSample, ReplayCounts};
pub use geometry::{pick_cpus, Geometry, Online, ZoneSpan, DEFAULT_ZONE_PAGES};
pub use gfp::request;
pub use run::{check_zones, emit_path, run, run_unchecked, ReplayOptions, ReplayRun};

/// The orders whose unusable free space index is sampled over time.
pub const FRAG_ORDERS: [u8; 3] = [3, 9, 10];

/// A fragmentation sample as taken: the highest zone's free blocks per order.
#[derive(Clone, Copy, Debug)]
struct RawSample {
    event: u64,
    ts_ns: Option<u64>,
    nr_free: [u64; zonealloc::MAX_ORDER_LIMIT as usize + 1],
}

/// A traced block live in the replay.
#[derive(Clone, Copy, Debug)]
struct Live {
    ours: u64,
    order: u8,
    /// Our zone it came from.
    zone: u8,
    /// Pages of it the trace has freed so far (by partial frees).
    freed: u64,
}

/// A traced `mm_page_free` not replayed yet. `free_pages_prepare` prints it, and the page
/// goes on the lists at the commit (`free_unref_page_commit` in 6.1,
/// `free_frozen_page_commit` in 7.2): at once on the single-page path, but on the batched
/// one (`free_unref_page_list`, `free_unref_folios`) only after every page of the batch was
/// prepared, each commit printing `mm_page_free_batched`. So a free is replayed at its
/// `mm_page_free_batched`, or at the next other event on its CPU (drains aside: the commits
/// drain mid-batch).
#[derive(Clone, Copy, Debug)]
struct Deferred {
    ts_ns: Option<u64>,
    cpu: Option<u32>,
    page: PagePtr,
    pfn: u64,
    order: u8,
    inferred: Inferred,
}

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
    /// Per CPU: traced frees not on the lists yet ([`Deferred`]).
    deferred: Vec<Vec<Deferred>>,
    /// Per CPU: a batched commit has begun (a drain belongs to it; otherwise a drain follows
    /// a single free, committed before it).
    batching: Vec<bool>,
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
    /// Run the vmstat worker's `decay_pcp_high` on every CPU once a second of trace time.
    pub decay: bool,
    next_tick_ns: Option<u64>,
    /// Fragmentation over time (from the samples kept, at [`Replayer::finish`]).
    pub frag: Vec<FragSample>,
    /// The samples taken and kept so far, as taken: the indices are computed at the end for
    /// these only, not for the ones thinning drops.
    raw_samples: Vec<RawSample>,
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
        Self::with_zones(variant, geo, emit, &cfgs, None, &[])
    }

    /// Zones with one configuration each (`cfgs`, as `geo.zones`), set up from `snap` when
    /// given ([`proc_setup::populate`]), its CPUs' lists holding what `demand` (one per zone)
    /// infers.
    pub fn with_zones(
        variant: Variant,
        geo: &Geometry,
        emit: Option<Box<dyn Write>>,
        cfgs: &[zonealloc::ZoneConfig],
        snap: Option<&crate::procfs::ProcSnapshot>,
        demand: &[pcp_state::ListDemand],
    ) -> Result<Replayer, String> {
        let cfg = variant.cfg.with_cpus(geo.cpus);
        let err = |e: &dyn std::fmt::Display| format!("variant '{}': {e}", variant.name);
        let mut zones = Vec::with_capacity(geo.zones.len());
        let mut online = Vec::with_capacity(geo.zones.len());
        let mut pools = Vec::new();
        let mut setup = Vec::new();
        let mut setup_counts = (0, 0, 0);
        let block_shift = u32::from(cfg.max_order);
        for (i, span) in geo.zones.iter().enumerate() {
            let (start, end) = (span.start, span.end());
            let extra = if snap.is_some() {
                proc_setup::SETUP_CPUS
            } else {
                0
            };
            let zcfg = cfgs
                .get(i)
                .copied()
                .unwrap_or(cfg)
                .with_cpus(geo.cpus + extra);
            let zone =
                Zone::new(span.zone_type, Pfn(start), Pfn(end), zcfg).map_err(|e| err(&e))?;
            match (geo.online, snap) {
                (Online::All, _) => {
                    zone.add_free_range(Pfn(start), Pfn(end))
                        .map_err(|e| err(&e))?;
                }
                (Online::Snapshot, Some(snap)) => {
                    let kz = snap.zone(0, span.zone_type).ok_or_else(|| {
                        err(&format!("no {:?} zone in the snapshot", span.zone_type))
                    })?;
                    let (pool, facts) = proc_setup::populate(&zone, snap, kz, demand.get(i))
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
            deferred: vec![Vec::new(); geo.cpus as usize],
            batching: vec![false; geo.cpus as usize],
            gfp: gfp::GfpCache::default(),
            counts: ReplayCounts::default(),
            ours: Grid::new(geo.zones.len(), geo.cpus),
            pools,
            setup,
            setup_counts,
            end_counts: (0, 0, 0),
            decay: false,
            next_tick_ns: None,
            frag: Vec::new(),
            raw_samples: Vec::new(),
            events: Vec::new(),
            emit,
        })
    }

    /// Sets the trace's migratetype numbering, which the zones' set-up does not read: a
    /// replayer can be built before the parse has shown it ([`prefix`]).
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

    /// Replays one trace event (buddy-side events of the trace are counted by the caller;
    /// ours come from the zones), and what the caller inferred from it.
    pub fn feed(&mut self, ev: &Event<'_>, inferred: Inferred) -> io::Result<()> {
        if self.decay {
            if let Some(ts) = ev.ts_ns {
                self.tick_until(ev, ts)?;
            }
        }
        let cpu = self.cpu_of(ev);
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
            } => self.alloc_traced(ev, cpu, pfn, order, migratetype, gfp_flags)?,
            EventKind::Free { pfn, order } if !self.commit_at_batched => {
                self.zone_for(pfn)?;
                self.frames.set_pending_batched(pfn, true);
                self.free_traced(ev, cpu, pfn, order, inferred)?;
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
                self.deferred[cpu as usize].push(Deferred {
                    ts_ns: ev.ts_ns,
                    cpu: ev.cpu,
                    page: ev.page,
                    pfn,
                    order,
                    inferred,
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
                    for b in before {
                        self.frames.set_deferred_at(b.pfn, None);
                        self.commit_deferred(cpu, b)?;
                    }
                    self.frames.set_deferred_at(pfn, None);
                    self.batching[cpu as usize] = true;
                    self.counts.batched_duplicates += 1;
                    let e = Event {
                        cpu: ev.cpu,
                        ts_ns: ev.ts_ns,
                        page: d.page,
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
            EventKind::PcpuDrain { pfn, .. } => {
                if let Inferred::Drain { owner } = inferred {
                    // An unexplained drain run ([`kernel`]): drain the owner's lists of the
                    // page's zone, counted on the CPU the kernel drained from.
                    let z = self.geo.zone_of(pfn).unwrap_or(0);
                    self.counts.inferred_drains += 1;
                    self.zones[z].drain_cpu(CpuId(owner % self.geo.cpus));
                    self.flush_zone_events(ev, z, cpu)?;
                }
            }
            // kswapd's `balance_pgdat` sets `ZONE_RECLAIM_ACTIVE` on the node's zones while it
            // reclaims (`set_reclaim_active`) and clears it before it sleeps
            // (`clear_reclaim_active`); frees then shrink the lists hard (`nr_pcp_high`). The
            // trace shows the wake and the sleep: the flag is set from one to the other. One
            // node is replayed (node 0's zones).
            EventKind::KswapdWake { nid: 0, .. } | EventKind::KswapdSleep { nid: 0 } => {
                let on = matches!(ev.kind, EventKind::KswapdWake { .. });
                self.counts.kswapd_wakes += u64::from(on);
                for z in &self.zones {
                    z.set_reclaim_active(on);
                }
            }
            EventKind::ZoneLocked { .. }
            | EventKind::Extfrag { .. }
            | EventKind::KswapdWake { .. }
            | EventKind::KswapdSleep { .. } => {}
        }
        Ok(())
    }

    /// A traced `mm_page_alloc` (a function of its own: the other events, most of a trace,
    /// then pass through a small `feed`).
    #[inline(never)]
    fn alloc_traced(
        &mut self,
        ev: &Event<'_>,
        cpu: u32,
        pfn: u64,
        order: u8,
        migratetype: u8,
        gfp_flags: &str,
    ) -> io::Result<()> {
        let failed_in_trace = ev.is_failed_alloc();
        let z = if failed_in_trace {
            self.counts.kernel_failures += 1;
            // A failure names no zone: try the preferred (highest) one.
            self.zones.len() - 1
        } else {
            let z = self.zone_for(pfn)?;
            if let Some(old) = self.frames.take_live(pfn) {
                self.counts.implicit_frees += 1;
                self.free_ours(ev, cpu, old)?;
            } else {
                self.frames.set_failed(pfn, false);
            }
            z
        };
        let mt = MigrateType::from_index(usize::from(self.geo.numbering.to_current(migratetype)))
            .filter(|m| m.is_gfp_type());
        let (Some(mt), Some(ord)) = (
            mt,
            Order::new(order).filter(|o| o.get() <= self.zones[z].max_order().get()),
        ) else {
            self.counts.skipped_allocs += 1;
            return Ok(());
        };
        let req = self.gfp.request(mt, gfp_flags).on_cpu(CpuId(cpu));
        let got = self.zones[z].alloc_with(ord, req);
        self.flush_zone_events(ev, z, cpu)?;
        self.emit_event(
            ev,
            match got {
                Ok(p) => (PagePtr::Present, p.0),
                Err(_) => (PagePtr::Null, 0),
            },
            |pfn| EventKind::Alloc {
                pfn,
                order,
                migratetype: mt.index() as u8,
                gfp_flags,
            },
        )?;
        let live = |p: Pfn| Live {
            ours: p.0,
            order,
            zone: z as u8,
            freed: 0,
        };
        match got {
            Ok(p) if failed_in_trace => {
                self.counts.kernel_failures_satisfied += 1;
                self.free_ours(ev, cpu, live(p))?;
            }
            Ok(p) => {
                self.counts.allocs += 1;
                self.counts.same_frame += u64::from(p.0 == pfn);
                let before = self.frames.count_allocation(p.0);
                self.counts.reused += u64::from(before > 0);
                self.frames.set_live(pfn, live(p));
                self.frames.set_pending_batched(pfn, false);
            }
            Err(_) if failed_in_trace => {}
            Err(_) => {
                self.counts.alloc_failures += 1;
                self.frames.set_failed(pfn, true);
            }
        }
        Ok(())
    }

    /// `vmstat_update` → `refresh_cpu_vm_stats` → `decay_pcp_high` (6.7 and later), which the
    /// kernel runs on each CPU about once a second (`sysctl_stat_interval` = HZ): at each whole
    /// second of trace time up to `ts`, every CPU's lists decay, and their drains count on
    /// that CPU.
    fn tick_until(&mut self, ev: &Event<'_>, ts: u64) -> io::Result<()> {
        const SECOND: u64 = 1_000_000_000;
        let next = *self.next_tick_ns.get_or_insert(ts + SECOND);
        if ts < next {
            return Ok(());
        }
        self.next_tick_ns = Some(next + (ts - next) / SECOND * SECOND + SECOND);
        for z in 0..self.zones.len() {
            for cpu in 0..self.geo.cpus {
                if let Ok(mut h) = self.zones[z].cpu_handle(CpuId(cpu)) {
                    h.tick();
                }
                self.flush_zone_events(ev, z, cpu)?;
            }
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
                // Our events carry the kernel's CPU number, unfolded.
                w.write(&Event {
                    cpu: Some(ev.cpu.unwrap_or(cpu)),
                    ts_ns: ev.ts_ns,
                    page: PagePtr::Present,
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
                kind: kind(pfn),
            })?;
        }
        Ok(())
    }

    /// Samples the fragmentation (of the highest zone) after `event` trace events; its
    /// indices reach [`Replayer::frag`] at [`Replayer::finish`].
    pub fn sample(&mut self, event: u64, ts_ns: Option<u64>) {
        let Some(zone) = self.zones.last() else {
            return;
        };
        // Only the per-order free counts matter to both indices; `Zone::snapshot` would also
        // walk every free list and pageblock.
        self.raw_samples.push(RawSample {
            event,
            ts_ns,
            nr_free: zone.nr_free(),
        });
    }

    /// The samples taken and kept so far.
    pub fn samples_kept(&self) -> usize {
        self.raw_samples.len()
    }

    /// Keeps every other sample, the second, fourth, ... (the sampling interval doubled).
    pub fn thin_samples(&mut self) {
        self.raw_samples = self.raw_samples.drain(..).skip(1).step_by(2).collect();
    }

    /// The indices of one sample.
    fn frag_sample(&self, raw: &RawSample) -> Option<FragSample> {
        let zone = self.zones.last()?;
        let cfg = zone.config();
        let s = zonealloc::FreeAreaSnapshot {
            node: 0,
            zone_name: zone.zone_type().name(),
            max_order: cfg.max_order,
            pageblock_order: cfg.pageblock_order,
            nr_free: raw.nr_free,
            free_by_type: Default::default(),
            pageblocks_by_type: Default::default(),
        };
        Some(FragSample {
            event: raw.event,
            t_s: raw.ts_ns.map(|t| t as f64 / 1e9),
            unusable: FRAG_ORDERS.map(|o| unusable_free_index(&s, o.min(s.max_order))),
            fragmentation_9: fragmentation_index(&s, 9.min(s.max_order)),
        })
    }

    /// Flushes the emitted trace and computes the fragmentation samples kept.
    pub fn finish(&mut self) -> io::Result<()> {
        self.end_counts = self
            .zones
            .iter()
            .map(zone_counts)
            .fold((0, 0, 0), add_counts);
        let raw = std::mem::take(&mut self.raw_samples);
        self.frag = raw.iter().filter_map(|r| self.frag_sample(r)).collect();
        for cpu in 0..self.geo.cpus {
            self.flush_deferred(cpu)?;
        }
        if let Some(w) = self.emit.take() {
            w.finish()?;
        }
        Ok(())
    }

    /// Commits `cpu`'s deferred frees, in the order they were traced.
    fn flush_deferred(&mut self, cpu: u32) -> io::Result<()> {
        if let Some(b) = self.batching.get_mut(cpu as usize) {
            *b = false;
        }
        let Some(list) = self.deferred.get_mut(cpu as usize) else {
            return Ok(());
        };
        if list.is_empty() {
            return Ok(());
        }
        for d in std::mem::take(list) {
            self.frames.set_deferred_at(d.pfn, None);
            self.commit_deferred(cpu, d)?;
        }
        Ok(())
    }

    /// Replays one deferred free, at its own time.
    fn commit_deferred(&mut self, cpu: u32, d: Deferred) -> io::Result<()> {
        let e = Event {
            cpu: d.cpu,
            ts_ns: d.ts_ns,
            page: d.page,
            kind: EventKind::Free {
                pfn: d.pfn,
                order: d.order,
            },
        };
        self.free_traced(&e, cpu, d.pfn, d.order, d.inferred)
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

/// The `n` first of `items` (pfns, each once, with a count) by count, most first, ties by
/// pfn: what sorting them all gives, in one pass that keeps `n` (a replay's frames number
/// hundreds of thousands, the table shows five).
pub(crate) fn most_first<C: Ord + Copy>(
    items: impl Iterator<Item = (u64, C)>,
    n: usize,
) -> Vec<(u64, C)> {
    // `a` comes before `b`.
    let before = |a: &(u64, C), b: &(u64, C)| a.1 > b.1 || (a.1 == b.1 && a.0 < b.0);
    let mut best: Vec<(u64, C)> = Vec::with_capacity(n + 1);
    for it in items {
        if best.len() == n && best.last().is_none_or(|last| !before(&it, last)) {
            continue;
        }
        let at = best.partition_point(|b| before(b, &it));
        best.insert(at, it);
        best.truncate(n);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::migratetype::Numbering;
    use zonealloc::{AllocRequest, ZoneType};

    #[test]
    fn most_first_is_the_head_of_the_sorted_list() {
        let items: Vec<(u64, u32)> = (0..500u64)
            .map(|p| (p * 7919 % 1009, (p * 31 % 13) as u32))
            .collect();
        let mut sorted = items.clone();
        sorted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        for n in [0, 1, 5, 499, 500, 600] {
            assert_eq!(
                most_first(items.iter().copied(), n),
                sorted[..n.min(items.len())],
                "n = {n}"
            );
        }
    }

    #[test]
    fn gfp_text_sets_the_request() {
        let k = request(MigrateType::Unmovable, "GFP_KERNEL|__GFP_ZERO");
        assert!(k.can_reclaim && !k.high && !k.no_watermarks);
        let a = request(MigrateType::Unmovable, "GFP_ATOMIC|__GFP_NOWARN");
        assert!(!a.can_reclaim && a.high);
        let n = request(MigrateType::Movable, "GFP_NOWAIT|__GFP_NOWARN");
        assert!(!n.can_reclaim && !n.high);
        let t = request(MigrateType::Movable, "GFP_TRANSHUGE_LIGHT|__GFP_THISNODE");
        assert!(!t.can_reclaim);
        let m = request(MigrateType::Unmovable, "GFP_KERNEL|__GFP_MEMALLOC");
        assert!(m.no_watermarks);
        let d = request(MigrateType::Unmovable, "GFP_KERNEL|__GFP_DMA32");
        assert_eq!(
            (d.highest_zone, k.highest_zone),
            (ZoneType::Dma32, ZoneType::Normal)
        );
        assert_eq!(
            request(MigrateType::Unmovable, "GFP_DMA").highest_zone,
            ZoneType::Dma
        );
        let h = request(MigrateType::Movable, "0x100cca");
        assert_eq!(h, AllocRequest::new(MigrateType::Movable));
    }

    #[test]
    fn the_zone_comes_from_the_flags_or_spans_the_default_and_fills_as_touched() {
        let sniff = input::Sniff {
            header_cpus: None,
            max_cpu: Some(3),
            ..input::Sniff::default()
        };
        let g = Geometry::from_flags(None, None, None, None, &sniff, Numbering::Current).unwrap();
        assert_eq!(
            (g.zones[0].start, g.zones[0].pages, g.cpus, g.online),
            (0, DEFAULT_ZONE_PAGES, 4, Online::Touched)
        );
        let head = input::Sniff {
            header_cpus: Some(8),
            ..sniff
        };
        let g = Geometry::from_flags(
            Some(0x2400),
            Some(4096),
            None,
            None,
            &head,
            Numbering::Current,
        )
        .unwrap();
        assert_eq!(
            (g.zones[0].start, g.zones[0].pages, g.cpus, g.online),
            (0x2400, 4096, 8, Online::All)
        );
        assert_eq!(g.zone_of(0x2400), Some(0));
        assert_eq!(g.zone_of(0x2400 + 4096), None);
        assert!(g.outside(0x9999).contains("--zone-pages"));
        let g = Geometry::from_flags(None, None, None, Some(2), &head, Numbering::Current).unwrap();
        assert_eq!(g.cpus, 2);
        assert!(
            Geometry::from_flags(None, Some(0), None, None, &sniff, Numbering::Current).is_err()
        );
        assert!(
            Geometry::from_flags(None, None, None, Some(0), &sniff, Numbering::Current).is_err()
        );
    }

    /// One zone of `pages` frames from pfn 0, all free, one CPU.
    fn one_cpu_zone(pages: u64) -> Geometry {
        let sniff = input::Sniff::default();
        Geometry::from_flags(None, Some(pages), None, Some(1), &sniff, Numbering::Current).unwrap()
    }

    #[test]
    fn kswapd_awake_makes_frees_shrink_the_lists() {
        // One CPU, mainline rules, a whole zone free; allocate 1024 pages, then free them
        // with kswapd asleep or awake: awake (ZONE_RECLAIM_ACTIVE), nr_pcp_high keeps at most
        // `batch << 2` pages on the lists.
        let g = one_cpu_zone(1 << 16);
        let at = |kind| Event {
            cpu: Some(0),
            ts_ns: None,
            page: PagePtr::Present,
            kind,
        };
        let run = |wake: bool| {
            let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
            for pfn in 0..1024 {
                let alloc = EventKind::Alloc {
                    pfn,
                    order: 0,
                    migratetype: 1,
                    gfp_flags: "GFP_HIGHUSER_MOVABLE",
                };
                r.feed(&at(alloc), Inferred::None).unwrap();
            }
            if wake {
                let wake = EventKind::KswapdWake { nid: 0, order: 0 };
                r.feed(&at(wake), Inferred::None).unwrap();
            }
            for pfn in 0..1024 {
                let free = EventKind::Free { pfn, order: 0 };
                r.feed(&at(free), Inferred::None).unwrap();
            }
            r.feed(&at(EventKind::KswapdSleep { nid: 0 }), Inferred::None)
                .unwrap();
            (
                r.zones[0].pcp_pages(),
                r.zones[0].pcp_info(CpuId(0)).batch,
                r.counts.kswapd_wakes,
            )
        };
        let (asleep, batch, _) = run(false);
        let (awake, _, wakes) = run(true);
        assert_eq!(wakes, 1);
        assert!(
            awake <= (batch as u64) << 2,
            "{awake} pages kept, batch {batch}"
        );
        assert!(asleep > awake, "asleep {asleep}, awake {awake}");
    }

    /// Samples keep the zone's state when taken (not at the end, when their indices are
    /// computed), and thinning keeps the second, fourth, ... of them.
    #[test]
    fn samples_are_computed_from_the_state_they_were_taken_in() {
        let g = one_cpu_zone(1 << 12);
        let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
        let alloc = |pfn| Event {
            cpu: Some(0),
            ts_ns: None,
            page: PagePtr::Present,
            kind: EventKind::Alloc {
                pfn,
                order: 0,
                migratetype: 0,
                gfp_flags: "GFP_KERNEL",
            },
        };
        // Samples 1..=4, each after another quarter of the zone was allocated page by page.
        for k in 1..=4u64 {
            r.sample(k, Some(k * 1_000_000_000));
            for pfn in (k - 1) * 1024..k * 1024 {
                r.feed(&alloc(pfn), Inferred::None).unwrap();
            }
        }
        assert_eq!(r.samples_kept(), 4);
        r.thin_samples();
        assert_eq!(r.samples_kept(), 2);
        r.finish().unwrap();
        let events: Vec<u64> = r.frag.iter().map(|f| f.event).collect();
        assert_eq!(events, vec![2, 4]);
        assert_eq!(r.frag[1].t_s, Some(4.0));
        // A quarter allocated at sample 2, three quarters at sample 4: fewer free order-10
        // blocks later, so more of the free space unusable at order 10 (computed from the
        // zone at the end, the two would be equal).
        let u10 = |i: usize| r.frag[i].unusable[2];
        assert!(u10(0) < u10(1), "{:?}", r.frag);
    }

    #[test]
    fn touched_memory_comes_online_block_by_block() {
        let sniff = input::Sniff::default();
        let g = Geometry::from_flags(
            None,
            Some(1 << 14),
            Some(Online::Touched),
            Some(1),
            &sniff,
            Numbering::Current,
        )
        .unwrap();
        let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
        assert_eq!(r.zones[0].managed_pages(), 0);
        let alloc = Event {
            cpu: Some(0),
            ts_ns: None,
            page: PagePtr::Present,
            kind: EventKind::Alloc {
                pfn: 0x1234,
                order: 0,
                migratetype: 1,
                gfp_flags: "GFP_HIGHUSER_MOVABLE",
            },
        };
        r.feed(&alloc, Inferred::None).unwrap();
        assert_eq!(r.zones[0].managed_pages(), 1024);
        assert_eq!(r.counts.allocs, 1);
        let free = Event {
            kind: EventKind::Free {
                pfn: 0x3000,
                order: 0,
            },
            ..alloc.clone()
        };
        r.feed(&free, Inferred::None).unwrap();
        assert_eq!(
            (r.zones[0].managed_pages(), r.counts.onlined_blocks),
            (2048, 2)
        );
        let outside = Event {
            kind: EventKind::Free {
                pfn: 1 << 14,
                order: 0,
            },
            ..alloc
        };
        assert!(r
            .feed(&outside, Inferred::None)
            .unwrap_err()
            .to_string()
            .contains("--zone-start"));
    }
}
