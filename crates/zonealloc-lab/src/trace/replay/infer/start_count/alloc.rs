//! The start-count walk's allocations: a traced allocation of a PCP order that the buddy did
//! not serve directly takes its pages off a CPU's lists, the traced CPU's or, where the trace
//! shows the page still on another CPU's lists from that CPU's refill, that CPU's
//! (`KernelSide::alloc_cpu`).
//!
//! `rmqueue_pcplist` takes the page off the lists of the CPU it runs on and unpins the task
//! (`pcp_spin_unlock`) before `prep_new_page` and `trace_mm_page_alloc`: a preemptible
//! kernel (7.2's Debian kernel boots "Dynamic Preempt: lazy") can move the task in between,
//! and the line is stamped with the CPU it moved to. 7.2-8g p_pressure: CPU 2 refills THPs
//! 0x6a800 and 0x6aa00 onto its DMA32 lists at 1587.452480 (trace line 20687) and takes
//! 0x6a800 (line 20688); the task's `mm_page_alloc` of 0x6aa00 is stamped CPU 1, 116 ms
//! after the refill (line 20690), and its next events are CPU 1's. Read as CPU 1's, the 512
//! pages left CPU 1's `delta` 512 too low from there on, and its free-triggered drain at
//! 1593.024193 (line 56159) bounded the count at the marker at 1261 or more, where zoneinfo
//! printed 749 and the layout held only 256 more DMA32 pages in use.

use super::{Inferred, Walk};
use crate::trace::parse::{Event, EventKind};

impl Walk {
    /// A traced allocation of `order` on `cpu` (`direct`: the buddy served it, its
    /// `mm_page_alloc_zone_locked` with `percpu_refill=0` just before), with what the kernel
    /// side inferred of it.
    pub(super) fn alloc(
        &mut self,
        ev: &Event<'_>,
        zone: usize,
        cpu: u32,
        order: u8,
        (direct, inferred): (bool, Inferred),
    ) {
        let refilled = self.at(zone, cpu).is_some_and(|c| c.in_refill.is_some());
        let pfn = match ev.kind {
            EventKind::Alloc { pfn, .. } => Some(pfn),
            _ => None,
        };
        self.other(cpu);
        if self.pcp_order(order) {
            // rmqueue_pcplist may have run, and halved `free_count` (`free_high.rs`).
            if let Some(c) = self.at(zone, cpu) {
                c.flags.allocated();
                c.start_free.allocated();
            }
        }
        if ev.is_failed_alloc() || !self.pcp_order(order) || direct {
            return;
        }
        let pages = -(1i64 << order);
        // rmqueue_pcplist: `free_count >>= 1` on the CPU that runs it.
        if let Some(c) = self.at(zone, cpu) {
            c.reach.allocated();
        }
        match inferred {
            // The traced CPU's lists lost nothing, and its candidate pin waits for its own
            // next allocation.
            Inferred::AllocOn { cpu: on } => self.add(zone, on, pages),
            _ => {
                self.confirm(zone, cpu, !refilled, pfn);
                self.add(zone, cpu, pages);
            }
        }
    }
}
