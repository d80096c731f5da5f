//! Frees that find their CPU's lists held: an interrupt that cuts into a refill.
//!
//! `rmqueue_pcplist` holds the CPU's lists of a zone (`pcp_spin_trylock`: the task pinned and
//! the lists' spin lock, two preempt levels) from before its refill (`rmqueue_bulk`, printing
//! `mm_page_alloc_zone_locked ... percpu_refill=1`) until the page is off the list; the
//! allocation is printed (`mm_page_alloc`) after that. A softirq or hardirq that frees a page
//! of the same zone in between finds the lock taken, and `__free_frozen_pages` frees it to the
//! buddy (`free_one_page`): neither the list nor its `alloc_factor` sees the free.
//!
//! 7.2-8g p_thp, CPU 2: the refill of 504 pages at 755.240537 is followed by 13 frees at
//! `..s3.` (755.241894..755.242466) and then the allocation at 755.242525; the next refill is
//! 1008 pages (`alloc_factor` kept), and the freed pages (0x104a4b, 0x103bc5, ...) come back
//! only through a refill from the buddy at 761.5. Replayed onto the list, the 13 frees halved
//! `alloc_factor` to 0 and the replay refilled 63, 126, 252, 504, 1008, 2016: 441 pages more.

use super::Replayer;
use crate::trace::parse::{Event, EventKind};

/// Preempt levels `pcp_spin_trylock` adds (`pcpu_task_pin` and the spin lock): an interrupt
/// that cut into the held lists shows at least these.
const HELD_DEPTH: u8 = 2;

impl Replayer {
    /// Whether the traced free `ev` of frame `pfn` on `cpu` found the CPU's lists of its zone
    /// held by a refill it interrupted (see the module's comment).
    pub(super) fn lists_held_for(&self, ev: &Event<'_>, cpu: u32, pfn: u64) -> bool {
        let ctx = ev.who.ctx();
        let interrupt = ctx.softirq() || ctx.hardirq();
        let deep = ctx.preempt_depth().is_some_and(|d| d >= HELD_DEPTH);
        let held = self.held.get(cpu as usize).copied().flatten();
        interrupt && deep && held.is_some() && held == self.geo.zone_of(pfn)
    }

    /// Follows which zone's lists a traced refill holds on `cpu`: from a refill's
    /// `percpu_refill=1` to the CPU's next event outside an interrupt (the allocation, at the
    /// latest); frees in an interrupt keep it.
    pub(super) fn track_held(&mut self, ev: &Event<'_>, cpu: u32) {
        let ctx = ev.who.ctx();
        let interrupt = ctx.softirq() || ctx.hardirq();
        let Some(held) = self.held.get_mut(cpu as usize) else {
            return;
        };
        match ev.kind {
            EventKind::ZoneLocked {
                pfn,
                percpu_refill: true,
                ..
            } => *held = self.geo.zone_of(pfn),
            EventKind::Free { .. } if interrupt => {}
            _ => *held = None,
        }
    }
}
