//! A traced `mm_page_alloc`: the zone its pfn names (or, for a failure, the zonelist), the
//! page taken as the kernel took it, and what the replay counts of it.

use std::io;

use zonealloc::{CpuId, MigrateType, Order, Pfn};

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
        let (got, z) = self.take_traced(cpu, z, (ord, mt, gfp_flags), failed_in_trace);
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
}
