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

pub mod input;
pub mod kernel;
pub mod preset;
pub mod proc_setup;

use crate::trace::stats::{HashMap, HashSet};
use std::io::{self, Write};

use serde::Serialize;
use zonealloc::stats::{fragmentation_index, unusable_free_index};
use zonealloc::{AllocRequest, CpuId, MigrateType, Order, Pfn, Zone, ZoneEvent, ZoneType};

use super::emit::{zone_event, TraceWriter};
use super::migratetype::Numbering;
use super::parse::{Event, EventKind, PagePtr};
use super::variant::Variant;
use kernel::{Grid, Inferred};

/// The orders whose unusable free space index is sampled over time.
pub const FRAG_ORDERS: [u8; 3] = [3, 9, 10];

/// The span of the default zone, in pages, when neither `--proc` nor `--zone-pages` gives
/// one: 2^22 (16 GiB of 4 KiB pages; its frame table takes 48 MiB).
pub const DEFAULT_ZONE_PAGES: u64 = 1 << 22;

/// Which frames of a zone's span are memory the allocator manages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Online {
    /// The whole span is free from the start.
    All,
    /// Memory comes online as the trace first touches it: before an allocation or free of a
    /// frame whose `MAX_PAGE_ORDER` block is not yet online, that block is handed to the
    /// allocator (`add_free_range`, which recomputes watermarks and per-CPU sizes as
    /// `online_pages` does on memory hotplug). The zone then holds the memory the trace
    /// showed, without a first pass over the trace to find it.
    Touched,
    /// Set up from a `/proc` snapshot ([`proc_setup`]): the kernel's managed pages, pages in
    /// use, pageblocks and per-CPU lists.
    #[value(skip)]
    Snapshot,
}

/// One replay zone: its type and span.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ZoneSpan {
    /// The zone type (DMA, DMA32, Normal, ...).
    #[serde(serialize_with = "zone_type_name")]
    pub zone_type: ZoneType,
    /// First frame.
    pub start: u64,
    /// Frames spanned.
    pub pages: u64,
}

fn zone_type_name<S: serde::Serializer>(t: &ZoneType, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{t:?}"))
}

impl ZoneSpan {
    /// One past the last frame.
    pub fn end(&self) -> u64 {
        self.start + self.pages
    }
}

/// Where and how large the replay's zones are.
#[derive(Clone, Debug, Serialize)]
pub struct Geometry {
    /// The zones, lowest first; a traced frame belongs to the zone that spans it (the
    /// kernel's zone choice, read from the pfn it handed out).
    pub zones: Vec<ZoneSpan>,
    /// Which frames are free at the start.
    pub online: Online,
    /// CPUs with per-CPU lists.
    pub cpus: u32,
    /// Where the CPU count came from.
    pub cpus_from: &'static str,
    /// How the trace numbers migratetypes.
    pub numbering: Numbering,
}

impl Geometry {
    /// One zone from the flags: `zone_start` (default 0) and `zone_pages` (default
    /// [`DEFAULT_ZONE_PAGES`]); without `zone_pages` its memory comes online as the trace
    /// touches it, with it the whole span is free (unless `online` says otherwise). The CPUs
    /// from the flag, else the trace's header, else the highest CPU of its first events
    /// plus one.
    pub fn from_flags(
        zone_start: Option<u64>,
        zone_pages: Option<u64>,
        online: Option<Online>,
        cpus: Option<u32>,
        sniff: &input::Sniff,
        numbering: Numbering,
    ) -> Result<Geometry, String> {
        let start = zone_start.unwrap_or(0);
        let pages = zone_pages.unwrap_or(DEFAULT_ZONE_PAGES);
        if pages == 0 || pages >= u64::from(u32::MAX) || start.checked_add(pages).is_none() {
            return Err(format!(
                "a zone of {pages} pages cannot be replayed (1 ..= {} pages); pass --zone-pages",
                u32::MAX - 1
            ));
        }
        let online = online.unwrap_or(if zone_pages.is_some() {
            Online::All
        } else {
            Online::Touched
        });
        let (cpus, cpus_from) = pick_cpus(cpus, sniff);
        if cpus == 0 || cpus > 4096 {
            return Err(format!("--cpus must be 1..=4096, not {cpus}"));
        }
        Ok(Geometry {
            zones: vec![ZoneSpan {
                zone_type: ZoneType::Normal,
                start,
                pages,
            }],
            online,
            cpus,
            cpus_from,
            numbering,
        })
    }

    /// The zone spanning `pfn`.
    #[inline]
    pub fn zone_of(&self, pfn: u64) -> Option<usize> {
        if let [z] = self.zones.as_slice() {
            return (pfn >= z.start && pfn < z.end()).then_some(0);
        }
        self.zones
            .iter()
            .position(|z| pfn >= z.start && pfn < z.end())
    }

    /// The error for a traced frame outside every zone.
    pub fn outside(&self, pfn: u64) -> String {
        let spans: Vec<String> = self
            .zones
            .iter()
            .map(|z| format!("{:?} {:#x}..{:#x}", z.zone_type, z.start, z.end()))
            .collect();
        format!(
            "the trace touches pfn {pfn:#x}, outside the replay's zone ({}); pass --zone-start \
             and --zone-pages to span it (the default span is {DEFAULT_ZONE_PAGES} pages from \
             pfn 0), or --proc with the traced machine's /proc snapshot",
            spans.join(", ")
        )
    }
}

/// The CPU count: the flag, the trace's header, or the highest CPU seen at its start plus one.
pub fn pick_cpus(cpus: Option<u32>, sniff: &input::Sniff) -> (u32, &'static str) {
    match (cpus, sniff.header_cpus, sniff.max_cpu) {
        (Some(c), _, _) => (c, "--cpus"),
        (None, Some(c), _) => (c, "the trace's header (#P:)"),
        (None, None, Some(c)) => (
            c.saturating_add(1),
            "the highest CPU in the trace's first events",
        ),
        (None, None, None) => (1, "default"),
    }
}

/// What one variant's replay did with the trace.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReplayCounts {
    /// Traced allocations replayed successfully.
    pub allocs: u64,
    /// Traced allocations that succeeded in the kernel and failed here.
    pub alloc_failures: u64,
    /// Traced failed allocations.
    pub kernel_failures: u64,
    /// Traced failures that succeeded here (freed at once).
    pub kernel_failures_satisfied: u64,
    /// Allocations skipped: order above `MAX_PAGE_ORDER` or not a GFP migratetype.
    pub skipped_allocs: u64,
    /// Allocations whose frame is the one the kernel handed out.
    pub same_frame: u64,
    /// Allocations of a frame this replay had handed out before.
    pub reused: u64,
    /// Frees replayed.
    pub frees: u64,
    /// Frees of frames not allocated in the trace (skipped, unless `--proc` gave the pages
    /// in use: then counted in `frees_from_snapshot` too).
    pub frees_before_trace: u64,
    /// Frees of pages allocated before the trace, replayed as frees of pages in use at the
    /// `/proc` snapshot.
    pub frees_from_snapshot: u64,
    /// Frees of frames whose allocation failed here (skipped).
    pub frees_of_failed: u64,
    /// Frees covering part of a traced block (`split_page`).
    pub partial_frees: u64,
    /// Frees with a larger order than the block's (the block is freed).
    pub order_mismatches: u64,
    /// Frames allocated again without a traced free (freed first).
    pub implicit_frees: u64,
    /// `mm_page_free_batched` events that repeated an `mm_page_free`.
    pub batched_duplicates: u64,
    /// Our `mm_page_alloc_extfrag` events.
    pub extfrag: u64,
    /// Drains of a CPU's lists inferred from unexplained drain runs ([`kernel`]).
    pub inferred_drains: u64,
    /// Allocations the trace does not show, inferred from frees of refilled pages
    /// ([`kernel::Inferred::UntracedAlloc`]).
    pub untraced_allocs: u64,
    /// `MAX_PAGE_ORDER` blocks brought online as the trace touched them ([`Online::Touched`]).
    pub onlined_blocks: u64,
}

/// One sample of the fragmentation indices.
#[derive(Clone, Debug, Serialize)]
pub struct FragSample {
    /// Trace events replayed so far.
    pub event: u64,
    /// The trace's timestamp then (seconds), if it has them.
    pub t_s: Option<f64>,
    /// Unusable free space index (thousandths) for each of [`FRAG_ORDERS`].
    pub unusable: [u32; 3],
    /// Fragmentation index (thousandths) for order 9.
    pub fragmentation_9: i32,
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
    live: HashMap<u64, Live>,
    /// Traced frames whose allocation failed here and are still live in the trace.
    failed: HashSet<u64>,
    pending_batched: HashSet<u64>,
    allocated_once: HashMap<u64, u32>,
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
    /// Run the vmstat worker's `decay_pcp_high` on every CPU once a second of trace time.
    pub decay: bool,
    next_tick_ns: Option<u64>,
    /// Fragmentation over time.
    pub frag: Vec<FragSample>,
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
        Self::with_zones(variant, geo, emit, &cfgs, None)
    }

    /// Zones with one configuration each (`cfgs`, as `geo.zones`), set up from `snap` when
    /// given ([`proc_setup::populate`]).
    pub fn with_zones(
        variant: Variant,
        geo: &Geometry,
        emit: Option<Box<dyn Write>>,
        cfgs: &[zonealloc::ZoneConfig],
        snap: Option<&crate::procfs::ProcSnapshot>,
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
                    let (pool, facts) =
                        proc_setup::populate(&zone, snap, kz).map_err(|e| err(&e))?;
                    pools.push(pool);
                    setup.push(facts);
                    let p = zone.pcp_stats();
                    setup_counts.0 += p.alloc_hits;
                    setup_counts.1 += p.alloc_misses;
                    setup_counts.2 += zone.stats().zone_lock_acquisitions;
                }
                _ => {}
            }
            zone.record_events(true);
            zones.push(zone);
            let blocks = (end - (start >> block_shift << block_shift)).div_ceil(1 << block_shift);
            online.push(vec![0u64; blocks.div_ceil(64) as usize]);
        }
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
            live: HashMap::default(),
            failed: HashSet::default(),
            pending_batched: HashSet::default(),
            allocated_once: HashMap::default(),
            counts: ReplayCounts::default(),
            ours: Grid::new(geo.zones.len(), geo.cpus),
            pools,
            setup,
            setup_counts,
            decay: false,
            next_tick_ns: None,
            frag: Vec::new(),
            events: Vec::new(),
            emit,
        })
    }

    /// The replay's CPU for a trace event (trace CPU `c` is `c % cpus`).
    #[inline]
    fn cpu_of(&self, ev: &Event<'_>) -> u32 {
        ev.cpu.unwrap_or(0) % self.geo.cpus
    }

    /// The zone of traced frame `pfn`, bringing its block online first when memory comes
    /// online as the trace touches it.
    #[inline]
    fn zone_for(&mut self, pfn: u64) -> io::Result<usize> {
        let Some(z) = self.geo.zone_of(pfn) else {
            return Err(io::Error::other(self.geo.outside(pfn)));
        };
        if self.geo.online == Online::Touched {
            let span = self.geo.zones[z];
            let base = span.start >> self.block_shift << self.block_shift;
            let b = (pfn - base) >> self.block_shift;
            let (w, bit) = ((b / 64) as usize, 1u64 << (b % 64));
            if self.online[z][w] & bit == 0 {
                self.online[z][w] |= bit;
                let lo = (base + (b << self.block_shift)).max(span.start);
                let hi = (base + ((b + 1) << self.block_shift)).min(span.end());
                self.zones[z]
                    .add_free_range(Pfn(lo), Pfn(hi))
                    .map_err(|e| io::Error::other(format!("onlining {lo:#x}..{hi:#x}: {e}")))?;
                self.counts.onlined_blocks += 1;
            }
        }
        Ok(z)
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
        match ev.kind {
            EventKind::Alloc {
                pfn,
                order,
                migratetype,
                gfp_flags,
            } => {
                let failed_in_trace = ev.is_failed_alloc();
                let z = if failed_in_trace {
                    self.counts.kernel_failures += 1;
                    // A failure names no zone: try the preferred (highest) one.
                    self.zones.len() - 1
                } else {
                    let z = self.zone_for(pfn)?;
                    if let Some(old) = self.live.remove(&pfn) {
                        self.counts.implicit_frees += 1;
                        self.free_ours(ev, cpu, old)?;
                    } else {
                        self.failed.remove(&pfn);
                    }
                    z
                };
                let mt = MigrateType::from_index(usize::from(
                    self.geo.numbering.to_current(migratetype),
                ))
                .filter(|m| m.is_gfp_type());
                let (Some(mt), Some(ord)) = (
                    mt,
                    Order::new(order).filter(|o| o.get() <= self.zones[z].max_order().get()),
                ) else {
                    self.counts.skipped_allocs += 1;
                    return Ok(());
                };
                let req = request(mt, gfp_flags).on_cpu(CpuId(cpu));
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
                        let n = self.allocated_once.entry(p.0).or_default();
                        self.counts.reused += u64::from(*n > 0);
                        *n += 1;
                        self.live.insert(pfn, live(p));
                        self.pending_batched.remove(&pfn);
                    }
                    Err(_) if failed_in_trace => {}
                    Err(_) => {
                        self.counts.alloc_failures += 1;
                        self.failed.insert(pfn);
                    }
                }
            }
            EventKind::Free { pfn, order } => {
                self.zone_for(pfn)?;
                self.pending_batched.insert(pfn);
                self.free_traced(ev, cpu, pfn, order, inferred)?;
            }
            EventKind::FreeBatched { pfn } => {
                if self.pending_batched.remove(&pfn) {
                    self.counts.batched_duplicates += 1;
                } else {
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
            EventKind::ZoneLocked { .. } | EventKind::Extfrag { .. } => {}
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

    /// The untraced allocation [`Inferred::UntracedAlloc`] infers, on the CPU that refilled
    /// the page: our page for the free that follows.
    fn untraced_alloc(
        &mut self,
        ev: &Event<'_>,
        z: usize,
        inferred: Inferred,
    ) -> io::Result<Option<Live>> {
        let Inferred::UntracedAlloc { cpu, migratetype } = inferred else {
            return Ok(None);
        };
        let mt = MigrateType::from_index(usize::from(self.geo.numbering.to_current(migratetype)))
            .filter(|m| m.is_gfp_type())
            .unwrap_or(MigrateType::Unmovable);
        let cpu = cpu % self.geo.cpus;
        let req = AllocRequest::new(mt).on_cpu(CpuId(cpu));
        let got = self.zones[z].alloc_with(Order::ZERO, req);
        self.flush_zone_events(ev, z, cpu)?;
        if let Ok(p) = got {
            // Ours is a traced allocation: `--emit` writes it, on the refilling CPU.
            let on = Event {
                cpu: Some(cpu),
                ..ev.clone()
            };
            self.emit_event(&on, (PagePtr::Present, p.0), |pfn| EventKind::Alloc {
                pfn,
                order: 0,
                migratetype: mt.index() as u8,
                gfp_flags: "GFP_KERNEL",
            })?;
        }
        Ok(got.ok().map(|p| Live {
            ours: p.0,
            order: 0,
            zone: z as u8,
            freed: 0,
        }))
    }

    /// A traced free of `order` pages at traced frame `pfn`.
    fn free_traced(
        &mut self,
        ev: &Event<'_>,
        cpu: u32,
        pfn: u64,
        order: u8,
        inferred: Inferred,
    ) -> io::Result<()> {
        let pages = 1u64 << order.min(63);
        if let Some(l) = self.live.get(&pfn).copied() {
            if order >= l.order && l.freed == 0 {
                self.counts.order_mismatches += u64::from(order > l.order);
                self.live.remove(&pfn);
                return self.free_ours(ev, cpu, l);
            }
            return self.partial(ev, cpu, pfn, pages);
        }
        // A page inside a live traced block: the head is `pfn` aligned down to the block.
        for k in 1..=self.zones[0].max_order().get() {
            let head = pfn & !((1u64 << k) - 1);
            if let Some(l) = self.live.get(&head) {
                if l.order >= k && pfn.saturating_add(pages) <= head + (1u64 << l.order) {
                    return self.partial(ev, cpu, head, pages);
                }
            }
        }
        if self.failed.remove(&pfn) {
            self.counts.frees_of_failed += 1;
            return Ok(());
        }
        self.counts.frees_before_trace += 1;
        let Some(z) = self.geo.zone_of(pfn) else {
            return Ok(());
        };
        // `frees` counts traced frees of traced allocations; these are counted above.
        let frees = self.counts.frees;
        // A page some untraced allocation took off a CPU's lists ([`kernel`]).
        if order == 0 {
            if let Some(l) = self.untraced_alloc(ev, z, inferred)? {
                self.counts.untraced_allocs += 1;
                self.free_ours(ev, cpu, l)?;
                self.counts.frees = frees;
                return Ok(());
            }
        }
        // With a /proc snapshot, a page in use before the trace is one of the pool's.
        let Some(pool) = self.pools.get_mut(z) else {
            return Ok(());
        };
        let pages = pool.take(pages);
        if !pages.is_empty() {
            self.counts.frees_from_snapshot += 1;
        }
        for ours in pages {
            let l = Live {
                ours,
                order: 0,
                zone: z as u8,
                freed: 0,
            };
            self.free_ours(ev, cpu, l)?;
        }
        self.counts.frees = frees;
        Ok(())
    }

    fn partial(&mut self, ev: &Event<'_>, cpu: u32, head: u64, pages: u64) -> io::Result<()> {
        self.counts.partial_frees += 1;
        let Some(l) = self.live.get_mut(&head) else {
            return Ok(());
        };
        l.freed += pages;
        if l.freed >= 1u64 << l.order {
            let l = *l;
            self.live.remove(&head);
            self.free_ours(ev, cpu, l)?;
        }
        Ok(())
    }

    fn free_ours(&mut self, ev: &Event<'_>, cpu: u32, l: Live) -> io::Result<()> {
        let (ours, order) = (l.ours, l.order);
        self.emit_event(ev, (PagePtr::Present, ours), |pfn| EventKind::Free {
            pfn,
            order,
        })?;
        let ord = Order::new(order)
            .ok_or_else(|| io::Error::other(format!("order {order} out of range")))?;
        let z = usize::from(l.zone);
        if let Err(e) = self.zones[z].free_on(CpuId(cpu), Pfn(ours), ord) {
            return Err(io::Error::other(format!(
                "variant '{}': freeing our own block {ours:#x} order {order} failed: {e}",
                self.variant.name
            )));
        }
        self.counts.frees += 1;
        self.flush_zone_events(ev, z, cpu)
    }

    /// Counts (and emits) zone `z`'s own events since the last call, on `cpu`.
    fn flush_zone_events(&mut self, ev: &Event<'_>, z: usize, cpu: u32) -> io::Result<()> {
        self.zones[z].take_events(&mut self.events);
        if self.events.is_empty() {
            return Ok(());
        }
        let pb = self.zones[z].config().pageblock_order;
        for e in std::mem::take(&mut self.events) {
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

    /// Samples the fragmentation indices (of the highest zone) after `event` trace events.
    pub fn sample(&mut self, event: u64, ts_ns: Option<u64>) {
        let Some(zone) = self.zones.last() else {
            return;
        };
        // Only the per-order free counts matter to both indices; `Zone::snapshot` would also
        // walk every free list and pageblock.
        let cfg = zone.config();
        let s = zonealloc::FreeAreaSnapshot {
            node: 0,
            zone_name: zone.zone_type().name(),
            max_order: cfg.max_order,
            pageblock_order: cfg.pageblock_order,
            nr_free: zone.nr_free(),
            free_by_type: Default::default(),
            pageblocks_by_type: Default::default(),
        };
        self.frag.push(FragSample {
            event,
            t_s: ts_ns.map(|t| t as f64 / 1e9),
            unusable: FRAG_ORDERS.map(|o| unusable_free_index(&s, o.min(s.max_order))),
            fragmentation_9: fragmentation_index(&s, 9.min(s.max_order)),
        });
    }

    /// Flushes the emitted trace.
    pub fn finish(&mut self) -> io::Result<()> {
        if let Some(w) = self.emit.take() {
            w.finish()?;
        }
        Ok(())
    }

    /// Frames handed out at least once, most-allocated first: the seed 000 table.
    pub fn most_reused(&self, n: usize) -> Vec<(u64, u32)> {
        let mut v: Vec<(u64, u32)> = self.allocated_once.iter().map(|(&p, &c)| (p, c)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }
}

/// The request a symbolic `gfp_flags` string describes (`gfp_to_alloc_flags`'s inputs).
pub fn request(mt: MigrateType, gfp: &str) -> AllocRequest {
    let mut req = AllocRequest::new(mt);
    if gfp.starts_with("0x") || gfp.chars().all(|c| c.is_ascii_digit()) {
        return req;
    }
    let mut direct = false;
    let mut high = false;
    let mut memalloc = false;
    for f in gfp.split('|') {
        match f {
            // Composites with __GFP_DIRECT_RECLAIM (include/linux/gfp_types.h).
            "GFP_KERNEL"
            | "GFP_KERNEL_ACCOUNT"
            | "GFP_NOFS"
            | "GFP_NOIO"
            | "GFP_USER"
            | "GFP_HIGHUSER"
            | "GFP_HIGHUSER_MOVABLE"
            | "GFP_TRANSHUGE"
            | "GFP_DMA"
            | "GFP_DMA32"
            | "__GFP_DIRECT_RECLAIM"
            | "__GFP_RECLAIM" => direct = true,
            "GFP_ATOMIC" | "__GFP_HIGH" => high = true,
            "__GFP_MEMALLOC" => memalloc = true,
            _ => {}
        }
    }
    req.can_reclaim = direct;
    req.high = high;
    req.no_watermarks = memalloc;
    req
}

#[cfg(test)]
mod tests {
    use super::*;

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
