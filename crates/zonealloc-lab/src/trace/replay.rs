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

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::io::{self, Write};

use serde::Serialize;
use zonealloc::stats::{fragmentation_index, unusable_free_index};
use zonealloc::{AllocRequest, CpuId, MigrateType, Order, Pfn, Zone, ZoneEvent, ZoneType};

use super::emit::{zone_event, TraceWriter};
use super::migratetype::Numbering;
use super::parse::{Event, EventKind, PagePtr};
use super::variant::Variant;

/// The orders whose unusable free space index is sampled over time.
pub const FRAG_ORDERS: [u8; 3] = [3, 9, 10];

/// Where and how large the replay's zones are.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Geometry {
    /// First frame of the zone.
    pub zone_start: u64,
    /// Frames in the zone.
    pub zone_pages: u64,
    /// CPUs with per-CPU lists.
    pub cpus: u32,
    /// How the trace numbers migratetypes.
    pub numbering: Numbering,
}

impl Geometry {
    /// The zone from the flags, else from the frames the trace touched (`pfn_span`, end
    /// exclusive) aligned out to `2^max_order` frames; the CPUs from the flag, else the
    /// highest CPU in the trace plus one.
    pub fn choose(
        pfn_span: Option<(u64, u64)>,
        max_cpu: Option<u32>,
        zone_start: Option<u64>,
        zone_pages: Option<u64>,
        cpus: Option<u32>,
        max_order: u8,
        numbering: Numbering,
    ) -> Result<Geometry, String> {
        let block = 1u64 << max_order;
        let (lo, hi) = pfn_span.unwrap_or((0, block));
        let start = zone_start.unwrap_or(lo & !(block - 1));
        let pages = match zone_pages {
            Some(p) => p,
            None => hi
                .max(start + 1)
                .div_ceil(block)
                .saturating_mul(block)
                .saturating_sub(start),
        };
        if pages == 0 || pages >= u64::from(u32::MAX) {
            return Err(format!(
                "a zone of {pages} pages cannot be replayed (1 ..= {} pages); pass --zone-pages",
                u32::MAX - 1
            ));
        }
        let cpus = cpus.unwrap_or_else(|| max_cpu.map_or(1, |c| c.saturating_add(1)));
        if cpus == 0 || cpus > 4096 {
            return Err(format!("--cpus must be 1..=4096, not {cpus}"));
        }
        Ok(Geometry {
            zone_start: start,
            zone_pages: pages,
            cpus,
            numbering,
        })
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
    /// Frees of frames not allocated in the trace (skipped).
    pub frees_before_trace: u64,
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
    /// Pages of it the trace has freed so far (by partial frees).
    freed: u64,
}

/// One variant's zone and what its replay has seen.
pub struct Replayer {
    /// The variant.
    pub variant: Variant,
    /// The zone.
    pub zone: Zone,
    geo: Geometry,
    live: HashMap<u64, Live>,
    /// Traced frames whose allocation failed here and are still live in the trace.
    failed: HashSet<u64>,
    pending_batched: HashSet<u64>,
    allocated_once: HashMap<u64, u32>,
    /// The counts.
    pub counts: ReplayCounts,
    /// Our refills (`mm_page_alloc_zone_locked` with `percpu_refill=1`) per CPU.
    pub refills: Vec<u64>,
    /// Our `mm_page_pcpu_drain` blocks per CPU.
    pub drains: Vec<u64>,
    /// Fragmentation over time.
    pub frag: Vec<FragSample>,
    events: Vec<ZoneEvent>,
    emit: Option<TraceWriter<Box<dyn Write>>>,
}

impl Replayer {
    /// A fresh, all-free zone for `variant` shaped by `geo`; `emit` receives the replay's
    /// events in ftrace format.
    pub fn new(
        variant: Variant,
        geo: Geometry,
        emit: Option<Box<dyn Write>>,
    ) -> Result<Replayer, String> {
        let cfg = variant.cfg.with_cpus(geo.cpus);
        let (start, end) = (geo.zone_start, geo.zone_start + geo.zone_pages);
        let zone = Zone::new(ZoneType::Normal, Pfn(start), Pfn(end), cfg)
            .map_err(|e| format!("variant '{}': {e}", variant.name))?;
        zone.add_free_range(Pfn(start), Pfn(end))
            .map_err(|e| format!("variant '{}': {e}", variant.name))?;
        zone.record_events(true);
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
            zone,
            geo,
            live: HashMap::default(),
            failed: HashSet::default(),
            pending_batched: HashSet::default(),
            allocated_once: HashMap::default(),
            counts: ReplayCounts::default(),
            refills: vec![0; geo.cpus as usize],
            drains: vec![0; geo.cpus as usize],
            frag: Vec::new(),
            events: Vec::new(),
            emit,
        })
    }

    fn cpu_of(&self, ev: &Event<'_>) -> u32 {
        ev.cpu.unwrap_or(0) % self.geo.cpus
    }

    /// Replays one trace event (buddy-side events of the trace are only counted by the
    /// caller; ours come from the zone).
    pub fn feed(&mut self, ev: &Event<'_>) -> io::Result<()> {
        let cpu = self.cpu_of(ev);
        match ev.kind {
            EventKind::Alloc {
                pfn,
                order,
                migratetype,
                gfp_flags,
            } => {
                let failed_in_trace = ev.is_failed_alloc();
                if failed_in_trace {
                    self.counts.kernel_failures += 1;
                } else if let Some(old) = self.live.remove(&pfn) {
                    self.counts.implicit_frees += 1;
                    self.free_ours(ev, cpu, old.ours, old.order)?;
                } else {
                    self.failed.remove(&pfn);
                }
                let mt = MigrateType::from_index(usize::from(
                    self.geo.numbering.to_current(migratetype),
                ))
                .filter(|m| m.is_gfp_type());
                let (Some(mt), Some(ord)) = (
                    mt,
                    Order::new(order).filter(|o| o.get() <= self.zone.max_order().get()),
                ) else {
                    self.counts.skipped_allocs += 1;
                    return Ok(());
                };
                let req = request(mt, gfp_flags).on_cpu(CpuId(cpu));
                let got = self.zone.alloc_with(ord, req);
                self.flush_zone_events(ev, cpu)?;
                self.emit_event(
                    ev,
                    cpu,
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
                match got {
                    Ok(p) if failed_in_trace => {
                        self.counts.kernel_failures_satisfied += 1;
                        self.free_ours(ev, cpu, p.0, order)?;
                    }
                    Ok(p) => {
                        self.counts.allocs += 1;
                        self.counts.same_frame += u64::from(p.0 == pfn);
                        let n = self.allocated_once.entry(p.0).or_default();
                        self.counts.reused += u64::from(*n > 0);
                        *n += 1;
                        self.live.insert(
                            pfn,
                            Live {
                                ours: p.0,
                                order,
                                freed: 0,
                            },
                        );
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
                self.pending_batched.insert(pfn);
                self.free_traced(ev, cpu, pfn, order)?;
            }
            EventKind::FreeBatched { pfn } => {
                if self.pending_batched.remove(&pfn) {
                    self.counts.batched_duplicates += 1;
                } else {
                    self.free_traced(ev, cpu, pfn, 0)?;
                }
            }
            EventKind::ZoneLocked { .. }
            | EventKind::PcpuDrain { .. }
            | EventKind::Extfrag { .. } => {}
        }
        Ok(())
    }

    /// A traced free of `order` pages at traced frame `pfn`.
    fn free_traced(&mut self, ev: &Event<'_>, cpu: u32, pfn: u64, order: u8) -> io::Result<()> {
        let pages = 1u64 << order.min(63);
        if let Some(l) = self.live.get(&pfn).copied() {
            if order >= l.order && l.freed == 0 {
                self.counts.order_mismatches += u64::from(order > l.order);
                self.live.remove(&pfn);
                return self.free_ours(ev, cpu, l.ours, l.order);
            }
            return self.partial(ev, cpu, pfn, pages);
        }
        // A page inside a live traced block: the head is `pfn` aligned down to the block.
        for k in 1..=self.zone.max_order().get() {
            let head = pfn & !((1u64 << k) - 1);
            if let Some(l) = self.live.get(&head) {
                if l.order >= k && pfn.saturating_add(pages) <= head + (1u64 << l.order) {
                    return self.partial(ev, cpu, head, pages);
                }
            }
        }
        if self.failed.remove(&pfn) {
            self.counts.frees_of_failed += 1;
        } else {
            self.counts.frees_before_trace += 1;
        }
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
            self.free_ours(ev, cpu, l.ours, l.order)?;
        }
        Ok(())
    }

    fn free_ours(&mut self, ev: &Event<'_>, cpu: u32, ours: u64, order: u8) -> io::Result<()> {
        self.emit_event(ev, cpu, (PagePtr::Present, ours), |pfn| EventKind::Free {
            pfn,
            order,
        })?;
        let ord = Order::new(order)
            .ok_or_else(|| io::Error::other(format!("order {order} out of range")))?;
        if let Err(e) = self.zone.free_on(CpuId(cpu), Pfn(ours), ord) {
            return Err(io::Error::other(format!(
                "variant '{}': freeing our own block {ours:#x} order {order} failed: {e}",
                self.variant.name
            )));
        }
        self.counts.frees += 1;
        self.flush_zone_events(ev, cpu)
    }

    /// Counts (and emits) the zone's own events since the last call.
    fn flush_zone_events(&mut self, ev: &Event<'_>, cpu: u32) -> io::Result<()> {
        self.zone.take_events(&mut self.events);
        let pb = self.zone.config().pageblock_order;
        for z in std::mem::take(&mut self.events) {
            match z {
                ZoneEvent::AllocZoneLocked {
                    percpu_refill: true,
                    ..
                } => self.refills[cpu as usize] += 1,
                ZoneEvent::PcpuDrain { .. } => self.drains[cpu as usize] += 1,
                ZoneEvent::AllocExtfrag { .. } => self.counts.extfrag += 1,
                ZoneEvent::AllocZoneLocked { .. } => {}
            }
            if let Some(w) = self.emit.as_mut() {
                w.write(&Event {
                    cpu: Some(cpu),
                    ts_ns: ev.ts_ns,
                    page: PagePtr::Present,
                    kind: zone_event(&z, pb),
                })?;
            }
        }
        Ok(())
    }

    fn emit_event<'g>(
        &mut self,
        ev: &Event<'_>,
        cpu: u32,
        (page, pfn): (PagePtr, u64),
        kind: impl FnOnce(u64) -> EventKind<'g>,
    ) -> io::Result<()> {
        if let Some(w) = self.emit.as_mut() {
            w.write(&Event {
                cpu: Some(cpu),
                ts_ns: ev.ts_ns,
                page,
                kind: kind(pfn),
            })?;
        }
        Ok(())
    }

    /// Samples the fragmentation indices after `event` trace events.
    pub fn sample(&mut self, event: u64, ts_ns: Option<u64>) {
        let s = self.zone.snapshot(0);
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
    fn the_zone_is_the_traces_span_aligned_to_max_order_blocks() {
        let g = Geometry::choose(
            Some((0x25bc, 0x13629)),
            Some(3),
            None,
            None,
            None,
            10,
            Numbering::Current,
        )
        .unwrap();
        assert_eq!(
            (g.zone_start, g.zone_pages, g.cpus),
            (0x2400, 0x13800 - 0x2400, 4)
        );
        let g = Geometry::choose(
            Some((5, 9)),
            None,
            Some(0),
            Some(4096),
            Some(2),
            10,
            Numbering::Current,
        )
        .unwrap();
        assert_eq!((g.zone_start, g.zone_pages, g.cpus), (0, 4096, 2));
        assert!(Geometry::choose(None, None, None, Some(0), None, 10, Numbering::Current).is_err());
        assert!(Geometry::choose(None, None, None, None, Some(0), 10, Numbering::Current).is_err());
    }
}
