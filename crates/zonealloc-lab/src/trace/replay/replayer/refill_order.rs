//! Two CPUs' refills in the trace's order of zone-lock sections (`refill_order`).
//!
//! A refill (`rmqueue_bulk`) holds the zone lock for all its pages, and `__rmqueue_smallest`
//! prints each page's `mm_page_alloc_zone_locked ... percpu_refill=1` line under it, so the
//! order of two CPUs' refill lines in a zone is the order in which they took pages off the
//! buddy. The allocation's `mm_page_alloc` line comes later, from
//! `__alloc_frozen_pages_noprof` after `get_page_from_freelist` returned, with preemption
//! on: the task can be preempted between its refill and its line. The replay makes a refill
//! at its allocation's line ([`super::lock_order`] keeps it open from its first
//! `zone_locked` line to then), so where another CPU's refill came between the two, that
//! refill was made first and took the buddy's pages the first one's took in the kernel.
//!
//! 7.2-6g-12cpu-wq p_sock: CPU 0's softirq drains 0x102f78 (144.822630) among 8 order-3
//! blocks; `kmem-phases-1335` refills CPU 1's order-3 list under the zone lock
//! (144.822677-.822685, first 0x102f78, then 0x106d38, ...) and is preempted
//! (`kmem-phases-1332` runs on CPU 1 at 144.826279) before its `mm_page_alloc` of 0x102f78
//! at 144.826714; CPU 0's refill (144.822760-.822768, first 0x1190e8) and its allocation
//! (144.822774) come between. Made at CPU 1's line, ours was second, and CPU 0 got 0x102f78.
//!
//! So with `refill_order`, at the first `zone_locked` line of a refill on a CPU, another
//! CPU's open refill in the zone is made now, ahead of its allocation's line
//! ([`Replayer::refill_ahead`], which also takes the allocation's block off the list, as
//! `rmqueue_pcplist` does, for the task's line), where
//! - its last `zone_locked` line came at most `REFILL_WAIT_NS` before (a refill whose
//!   allocation the trace never shows, `alloc_pages_bulk`'s, stays open until the CPU's next
//!   event, and is not one to make: 6.12-3g-16cpu-wq p_compact, `dash-1349` refills CPU
//!   10's list at 174.527027-.527097 and allocates nothing traced);
//! - our list it fills is empty: ours refills there too. Where ours still holds pages (its
//!   lists were off before), making it takes a page of ours where the kernel refilled, and
//!   the whole-file replay of that p_compact row drifts (CPU 10 then refills 126 times fewer
//!   than the kernel).

use std::io;

use zonealloc::{CpuId, Order};

use super::lock_order::Refill;
use super::Replayer;
use crate::trace::parse::{Event, EventKind};

#[cfg(test)]
mod tests;

impl Replayer {
    /// Before a `zone_locked` refill line `ev` on `cpu` opens the CPU's refill (module docs):
    /// other CPUs' open refills in the zone that held the zone lock first are made now.
    #[inline(never)]
    pub(super) fn order_refills(&mut self, ev: &Event<'_>, cpu: u32) -> io::Result<()> {
        let EventKind::ZoneLocked {
            pfn,
            percpu_refill: true,
            ..
        } = ev.kind
        else {
            return Ok(());
        };
        let Some(zone) = self.geo.zone_of(pfn) else {
            return Ok(());
        };
        // A later line of the CPU's own open refill is no new zone-lock section.
        let c = cpu as usize;
        if self
            .lock
            .refilling
            .get(c)
            .copied()
            .flatten()
            .is_some_and(|r| r.zone == zone)
        {
            return Ok(());
        }
        for o in 0..self.geo.cpus {
            let Some(r) = self.lock.refilling.get(o as usize).copied().flatten() else {
                continue;
            };
            if o != cpu && r.zone == zone && r.recent(ev.ts_ns) && self.would_refill(o, r) {
                self.refills_ordered += 1;
                self.refill_ahead(o, ev.ts_ns)?;
            }
        }
        Ok(())
    }

    /// Whether our list of `cpu` that refill `r` fills is empty: ours refills there too.
    fn would_refill(&self, cpu: u32, r: Refill) -> bool {
        let (Some(mt), Some(order)) = (self.gfp_type(r.migratetype), Order::new(r.order)) else {
            return false;
        };
        !self.zones[r.zone].pcp_list_holds(CpuId(cpu), mt, order)
    }
}
