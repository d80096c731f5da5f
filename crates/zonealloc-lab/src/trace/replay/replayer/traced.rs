//! A traced `mm_page_alloc`: the zone its pfn names (or, for a failure, the zonelist), the
//! page taken as the kernel took it, and what the replay counts of it.

use std::io;

use zonealloc::{AllocRequest, CpuId, MigrateType, Order, Pfn};

use super::super::frames::Live;
use super::Replayer;
use crate::trace::parse::{Event, EventKind, PagePtr};
use crate::trace::replay::infer::kernel::Inferred;

impl Replayer {
    /// A traced `mm_page_alloc` (a function of its own: the other events, most of a trace,
    /// then pass through a small `feed`): its zone ([`Replayer::traced_zone`]), the page
    /// taken ([`Replayer::take_traced`]) and what is booked of it
    /// ([`Replayer::book_traced`]).
    #[inline(never)]
    pub(super) fn alloc_traced(
        &mut self,
        ev: &Event<'_>,
        cpu: u32,
        pfn: u64,
        order: u8,
        (migratetype, gfp_flags): (u8, &str),
        inferred: Inferred,
    ) -> io::Result<()> {
        // The page sat on the list of the CPU whose refill put it there: the allocation ran
        // there, and the task moved before the tracepoint (`KernelSide::alloc_cpu`). It is
        // replayed, and what it does to the lists booked, on that CPU; `--emit` keeps the
        // trace's stamp on the `mm_page_alloc` line, as the kernel's trace does.
        let cpu = match inferred {
            Inferred::AllocOn { cpu: on } if on < self.geo.cpus => on,
            _ => cpu,
        };
        // The CPU's pending drain before its lists are used ([`super::lock_order`]).
        if self.lock.any_pending() {
            self.flush_pending(cpu, ev.ts_ns)?;
        }
        let failed_in_trace = ev.is_failed_alloc();
        let z = self.traced_zone(ev, cpu, pfn, failed_in_trace)?;
        let mt = self.gfp_type(migratetype);
        let (Some(mt), Some(ord)) = (
            mt,
            Order::new(order).filter(|o| o.get() <= self.zones[z].max_order().get()),
        ) else {
            self.counts.skipped_allocs += 1;
            return Ok(());
        };
        // Its refill's allocation, made ahead for a drain ([`super::lock_order`]).
        let ahead = if self.any_taken() {
            self.taken_ahead(cpu, z, order, ev.who.pid())
        } else {
            None
        };
        let (got, z) = match ahead {
            Some(ours) => (Ok(Pfn(ours)), z),
            None => self.take_traced(cpu, z, (ord, mt, gfp_flags), failed_in_trace),
        };
        if self.numa.is_some() {
            for other in 0..self.zones.len() {
                self.flush_zone_events(ev, other, cpu)?;
            }
        }
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
        self.book_traced(ev, cpu, pfn, (z, order), got.ok(), failed_in_trace)
    }

    /// The zone a traced allocation of `pfn` is replayed in: the one its pfn names, freeing
    /// first what ours still holds at that frame (an implicit free); for a failure, which
    /// names no zone, the preferred one (the highest of the CPU's node).
    #[inline(always)]
    fn traced_zone(
        &mut self,
        ev: &Event<'_>,
        cpu: u32,
        pfn: u64,
        failed_in_trace: bool,
    ) -> io::Result<usize> {
        if failed_in_trace {
            self.counts.kernel_failures += 1;
            return Ok(self.geo.preferred_zone(cpu));
        }
        let z = self.zone_for(pfn)?;
        if let Some(n) = self.numa.as_mut() {
            n.kernel
                .count(self.geo.zones[z].node, self.geo.cpu_node(cpu));
        }
        if let Some(old) = self.frames.take_live(pfn) {
            self.counts.implicit_frees += 1;
            self.free_ours(ev, cpu, old)?;
        } else {
            self.frames.set_failed(pfn, false);
        }
        Ok(z)
    }

    /// Our allocation for a traced one in zone `z` (on several nodes, down the zonelist):
    /// the page, or the error, and the zone it came from. (The caller counts the zones'
    /// events.)
    #[inline(always)]
    fn take_traced(
        &mut self,
        cpu: u32,
        z: usize,
        (ord, mt, gfp_flags): (Order, MigrateType, &str),
        failed_in_trace: bool,
    ) -> (Result<Pfn, zonealloc::AllocError>, usize) {
        let req = self.gfp.request(mt, gfp_flags).on_cpu(CpuId(cpu));
        if !failed_in_trace && self.numa.is_none() {
            self.pass_over_above(z, ord, &req);
            self.pass_over_below(z, ord, &req);
        }
        // The trace shows the kernel took this page from this zone: below its watermark in
        // ours, the replay takes it anyway rather than fail into the slow path's
        // `drain_all_pages` (a drain the kernel did shows in the trace, and is replayed from
        // there). 7.2-8g p_pressure: the OOM victim's allocation at 1593.014560 (ALLOC_OOM)
        // came from Normal's list below min; ours drained every list (7967 pages) first.
        let req = if failed_in_trace {
            req
        } else {
            req.no_watermarks()
        };
        match self.numa.as_deref() {
            None => (self.zones[z].alloc_with(ord, req), z),
            // Several nodes: the zonelist from the kernel's zone, or all of it for a failure.
            Some(n) => {
                let (kernel, node) = ((!failed_in_trace).then_some(z), self.geo.cpu_node(cpu));
                let got = n
                    .zonelists
                    .alloc(&self.zones, kernel, node, gfp_flags, ord, req);
                let at = got.ok().and_then(|p| self.geo.zone_of(p.0));
                (got, at.unwrap_or(z))
            }
        }
    }

    /// The kernel's walk down its zonelist to zone `z` (one node), which the trace says
    /// served the request: `get_page_from_freelist` checked each zone above it that the
    /// request may use first (`highest_zoneidx`), and those checks set `ZONE_BELOW_HIGH`
    /// where the high mark failed ([`zonealloc::Zone::pass_over`]). 6.12-4g-wq p_pressure:
    /// `kmem-phases-1209`'s THPs come from DMA32 from 554.329 (pfn 0xb5200 at 554.355101),
    /// so Normal's flag was set, and CPU 0's Normal refills at 554.356-554.370 (252, 504,
    /// 1008 pages) did not raise `high` (`nr_pcp_alloc`); its refill at 554.377292 took
    /// 1062 pages, `high - count - batch`. Ours raised `high` to 3171 and refilled 2016.
    #[inline(always)]
    fn pass_over_above(&self, z: usize, ord: Order, req: &AllocRequest) {
        // One node: the zones above `z` are those after it (`Geometry::zones`, lowest first).
        let (Some(zones), Some(spans)) = (self.zones.get(z + 1..), self.geo.zones.get(z + 1..))
        else {
            return;
        };
        for (zone, span) in zones.iter().zip(spans) {
            if span.zone_type <= req.highest_zone {
                zone.pass_over(ord, req);
            }
        }
    }

    /// The rest of the fast path's walk, when zone `z` (one node), which the trace says
    /// served the request, fails the request's mark there: `get_page_from_freelist` went on
    /// down the zonelist, and each lower zone it reached checked its high mark first, which
    /// sets `ZONE_BELOW_HIGH` where it fails ([`zonealloc::Zone::pass_over`]); the walk
    /// stops at a zone that passes (the kernel would have been served there), and the slow
    /// path came back to `z`. 7.2-3g-16cpu p_pressure: CPU 5's DMA refills (301.074-301.085)
    /// took DMA to 3035 free pages before its last one, under its high mark plus its
    /// protection against Movable requests (84 + 2955); DMA32 served again from 301.089233
    /// and `kswapd0` woke at 301.091917, so the slow path ran and its fast path had passed
    /// over DMA. DMA's frees at 302.284969-302.285037 then each drained one page more than
    /// the last (1 to 7): `nr_pcp_high` under the flag, `max(count, high_min)`.
    #[inline(always)]
    fn pass_over_below(&self, z: usize, ord: Order, req: &AllocRequest) {
        if z == 0 || self.zones[z].pass_over(ord, req) {
            return;
        }
        // One node: the zones below `z` are those before it, the next lower first.
        for zone in self.zones[..z].iter().rev() {
            if zone.pass_over(ord, req) {
                break;
            }
        }
    }

    /// Books our page `got` (of `order`, in zone `z`) for the traced allocation of `pfn`:
    /// live at that frame, or, where the kernel's failed, freed again at once.
    #[inline(always)]
    fn book_traced(
        &mut self,
        ev: &Event<'_>,
        cpu: u32,
        pfn: u64,
        (z, order): (usize, u8),
        got: Option<Pfn>,
        failed_in_trace: bool,
    ) -> io::Result<()> {
        let live = |p: Pfn| Live {
            ours: p.0,
            order,
            zone: z as u8,
            freed: 0,
        };
        if let (Some(n), Some(_)) = (self.numa.as_mut(), got) {
            n.ours.count(self.geo.zones[z].node, self.geo.cpu_node(cpu));
        }
        match got {
            Some(p) if failed_in_trace => {
                self.counts.kernel_failures_satisfied += 1;
                self.free_ours(ev, cpu, live(p))?;
            }
            Some(p) => {
                self.counts.allocs += 1;
                self.counts.same_frame += u64::from(p.0 == pfn);
                let before = self.frames.count_allocation(p.0);
                self.counts.reused += u64::from(before > 0);
                self.frames.set_live(pfn, live(p));
                self.frames.set_pending_batched(pfn, false);
            }
            None if failed_in_trace => {}
            None => {
                self.counts.alloc_failures += 1;
                self.frames.set_failed(pfn, true);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::at;
    use super::*;
    use crate::trace::replay::infer::kernel::KernelSide;
    use zonealloc::{WatermarkConfig, ZoneType};

    /// 7.2-2g p_pressure (lines 5424 and 5751): CPU 2 refills two THPs, the first for its
    /// task, whose `mm_page_alloc` is traced on CPU 1 after it moved; CPU 2 then allocates the
    /// second. The kernel refilled once, on CPU 2, and CPU 1's lists never held a THP. Ours,
    /// fed the kernel side's inference as the replay's pass does, refills where the kernel
    /// did: on CPU 2, and not on CPU 1 (before the rule it refilled CPU 1's list for the
    /// first and CPU 2's for the second, leaving a THP on each).
    #[test]
    fn a_thp_traced_after_its_task_moved_comes_off_the_refilling_cpus_list() {
        let g = super::super::tests::four_cpus();
        let mut r =
            Replayer::new(super::super::Variant::parse("upstream").unwrap(), &g, None).unwrap();
        let mut k = KernelSide::for_geometry(&g);
        let refill = |pfn| EventKind::ZoneLocked {
            pfn,
            order: 9,
            migratetype: 1,
            percpu_refill: true,
        };
        let alloc = |pfn| EventKind::Alloc {
            pfn,
            order: 9,
            migratetype: 1,
            gfp_flags: "GFP_TRANSHUGE_LIGHT|__GFP_NORETRY|__GFP_THISNODE",
        };
        let events = [
            at(2, Some(1_000), refill(0x1000)),
            at(2, Some(1_001), refill(0x1200)),
            at(1, Some(2_000), alloc(0x1000)),
            at(2, Some(3_000), alloc(0x1200)),
        ];
        for e in &events {
            let inferred = k.add(e, 0);
            r.feed(e, inferred).unwrap();
        }
        r.finish().unwrap();
        let refills = |t: &crate::trace::replay::tally::Grid, cpu| t.get(0, cpu).refills;
        assert_eq!(
            (0..3).map(|c| refills(&k.grid, c)).collect::<Vec<_>>(),
            vec![0, 0, 2]
        );
        assert_eq!(
            (0..3).map(|c| refills(&r.ours, c)).collect::<Vec<_>>(),
            (0..3).map(|c| refills(&k.grid, c)).collect::<Vec<_>>()
        );
    }

    /// A replayer (upstream) of one node of two zones on four CPUs, `lower` and `upper` (type,
    /// first pfn, pages), the upper zone's watermarks `marks`.
    fn two_zones(
        lower: (ZoneType, u64, u64),
        upper: (ZoneType, u64, u64),
        marks: WatermarkConfig,
    ) -> Replayer {
        use crate::trace::replay::geometry::{Geometry, Online, ZoneSpan};
        let span = |(zone_type, start, pages)| ZoneSpan {
            node: 0,
            zone_type,
            start,
            pages,
        };
        let g = Geometry {
            zones: vec![span(lower), span(upper)],
            online: Online::All,
            cpus: 4,
            cpus_from: "test",
            numbering: crate::trace::migratetype::Numbering::Current,
            cpu_nodes: Vec::new(),
        };
        let v = super::super::Variant::parse("upstream").unwrap();
        let mut above = v.cfg;
        above.watermarks = marks;
        Replayer::with_zones(v.clone(), &g, None, &[v.cfg, above], None, &[], &[]).unwrap()
    }

    /// 6.12-4g-wq p_pressure: a THP the trace shows from DMA32 (0xb5200 at 554.355101) was
    /// refused by Normal first, at the high mark, which set Normal's `ZONE_BELOW_HIGH`; CPU
    /// 0's next Normal refill then did not raise `high` (`nr_pcp_alloc`). Here Normal has
    /// 4096 free pages against a high mark of 3700: enough for order 0, not for order 9
    /// (`__zone_watermark_ok` takes 511 off). Fails on the old code (`high` grows by a batch).
    #[test]
    fn a_request_served_below_normal_leaves_normal_below_high() {
        let mut r = two_zones(
            (ZoneType::Dma32, 0x1000, 0x4000),
            (ZoneType::Normal, 0x10000, 0x10000),
            WatermarkConfig::fixed(3000, 3400, 3700),
        );
        let alloc = |pfn, order, gfp_flags| EventKind::Alloc {
            pfn,
            order,
            migratetype: 1,
            gfp_flags,
        };
        for k in 0..60 {
            let e = at(1, None, alloc(0x10000 + k * 1024, 10, "GFP_KERNEL"));
            r.feed(&e, Inferred::None).unwrap();
        }
        assert_eq!(r.zones[1].free_pages(), 4096);
        let high = r.zones[1].pcp_info(CpuId(0)).high;
        let thp = "GFP_TRANSHUGE_LIGHT|__GFP_NORETRY|__GFP_THISNODE";
        r.feed(&at(0, None, alloc(0x2000, 9, thp)), Inferred::None)
            .unwrap();
        let page = alloc(0x1f000, 0, "GFP_HIGHUSER_MOVABLE");
        r.feed(&at(0, None, page), Inferred::None).unwrap();
        let info = r.zones[1].pcp_info(CpuId(0));
        assert!(info.count > 0, "CPU 0's Normal list was refilled");
        assert_eq!(info.high, high.clamp(info.high_min, info.high_max));
    }

    /// 7.2-3g-16cpu p_pressure: DMA32 served requests below its low mark after CPU 5's DMA
    /// refills, so the kernel's fast path had passed over DMA, below its high mark plus its
    /// protection against those requests, and set DMA's `ZONE_BELOW_HIGH`. Here CPU 0's DMA
    /// list is refilled by `GFP_DMA` requests (no protection), which raise its `high`; DMA32
    /// serves a Movable request below its low mark, and DMA, protected by 4000 pages against
    /// Movable requests, lowers `high` at its next free (`nr_pcp_high` under the flag: `high
    /// - free_count`, not below `high_min`). Fails on the old code (`high` stays).
    #[test]
    fn a_request_served_below_its_mark_passed_over_the_zones_under_it() {
        let mut r = two_zones(
            (ZoneType::Dma, 0x1000, 0x1000),
            (ZoneType::Dma32, 0x2000, 0x4000),
            WatermarkConfig::fixed(30_000, 31_000, 32_000),
        );
        r.zones[0].set_lowmem_reserve([0, 4000, 4000, 4000, 4000, 4000]);
        let alloc = |pfn, gfp_flags| EventKind::Alloc {
            pfn,
            order: 0,
            migratetype: 1,
            gfp_flags,
        };
        for pfn in 0x1000..0x1008 {
            r.feed(&at(0, None, alloc(pfn, "GFP_DMA")), Inferred::None)
                .unwrap();
        }
        let raised = r.zones[0].pcp_info(CpuId(0));
        assert!(raised.high > raised.high_min, "{raised:?}");
        let movable = alloc(0x2000, "GFP_HIGHUSER_MOVABLE");
        r.feed(&at(0, None, movable), Inferred::None).unwrap();
        let free = EventKind::Free {
            pfn: 0x1000,
            order: 0,
        };
        r.feed(&at(0, None, free), Inferred::None).unwrap();
        let info = r.zones[0].pcp_info(CpuId(0));
        assert!(info.high < raised.high, "{raised:?}\n{info:?}");
    }
}
