//! The PCP hit paths in one function each: an order-0..=3 allocation from a non-empty list and
//! an order-0 free that cannot trigger a drain. They do exactly what the full paths
//! (`get_page_from_freelist` → `rmqueue_pcplist`, `free_frozen_page_commit`) would do in
//! those cases, and hand everything else (an empty list, a list about to reach `high`, a zone
//! below its high watermark or under reclaim, pending parameters or drain requests, bad input
//! to classify) to the full paths untouched.
//!
//! The one difference: a busy lock seen here is tried once more by the full path before it
//! falls back to the buddy, where the kernel tries once. Only the second failure is counted.

use super::slot::{PcpAccess, PcpSlot};
use super::PerCpuPages;
use crate::error::FreeError;
use crate::request::AllocRequest;
use crate::sync::Ordering;
use crate::types::{Order, Pfn, MIGRATE_PCPTYPES};
use crate::zone::Zone;

impl Zone {
    /// A PCP-hit allocation, or `None` to take the full path.
    #[inline(always)]
    pub(crate) fn pcp_alloc_fast(
        &self,
        order: u8,
        req: &AllocRequest,
        access: &mut PcpAccess<'_>,
    ) -> Option<Pfn> {
        let sh = &self.shared;
        let mt = req.migratetype;
        if order > 3
            || !mt.is_gfp_type()
            || !self.pcp.enabled()
            || sh.flags.load(Ordering::Relaxed) != 0
            || sh.mobility_disabled.load(Ordering::Relaxed)
        {
            return None;
        }
        // get_page_from_freelist with ZONE_BELOW_HIGH clear: zone_watermark_fast at the high
        // mark (its order-0 shortcut; the full check for higher orders).
        let hz = req.highest_zone.index();
        let mark = sh.mark(2);
        if order == 0 {
            let free = sh.nr_free_pages.load(Ordering::Relaxed) as i64;
            let usable = free - free.min(sh.nr_free_highatomic.load(Ordering::Relaxed) as i64);
            if usable <= (mark + sh.lowmem_reserve[hz].load(Ordering::Relaxed)) as i64 {
                return None;
            }
        } else if !sh.watermark_fast(order, mark, hz, req.fast_flags()) {
            return None;
        }
        match access {
            PcpAccess::Held(cpu, pcp) => {
                let slot = self.pcp.slot(*cpu);
                self.pcp_pop(slot, pcp, order, req)
            }
            PcpAccess::Cpu(cpu) | PcpAccess::Owner(cpu) => {
                let slot = self.pcp.slot(*cpu);
                let mut g = slot.lists.try_lock()?;
                self.pcp_pop(slot, &mut g, order, req)
            }
        }
    }

    #[inline(always)]
    fn pcp_pop(
        &self,
        slot: &PcpSlot,
        pcp: &mut PerCpuPages,
        order: u8,
        req: &AllocRequest,
    ) -> Option<Pfn> {
        if !self.pcp.params_current(pcp) || slot.drain_pending() {
            return None;
        }
        let mt = req.migratetype;
        let pi = self.pcp.policy.pindex(mt, order);
        let t = &self.table;
        let idx = pcp.take_head(t, pi, order, mt)?;
        pcp.free_count >>= 1;
        pcp.stats.alloc_hits += 1;
        slot.count_hint.store(pcp.count as u32, Ordering::Relaxed);
        Some(Pfn(t.pfn_of(idx)))
    }

    /// An order-0 free onto the CPU's list that cannot drain, or `None` to take the full path
    /// (nothing has been done then).
    #[inline(always)]
    pub(crate) fn pcp_free_fast(
        &self,
        pfn: Pfn,
        order: Order,
        access: &mut PcpAccess<'_>,
    ) -> Option<Result<(), FreeError>> {
        if order.get() != 0 || !self.pcp.enabled() || self.shared.flags.load(Ordering::Relaxed) != 0
        {
            return None;
        }
        match access {
            PcpAccess::Held(cpu, pcp) => {
                let slot = self.pcp.slot(*cpu);
                self.pcp_push(slot, pcp, pfn, order)
            }
            PcpAccess::Cpu(cpu) | PcpAccess::Owner(cpu) => {
                let slot = self.pcp.slot(*cpu);
                let mut g = slot.lists.try_lock()?;
                self.pcp_push(slot, &mut g, pfn, order)
            }
        }
    }

    #[inline(always)]
    fn pcp_push(
        &self,
        slot: &PcpSlot,
        pcp: &mut PerCpuPages,
        pfn: Pfn,
        order: Order,
    ) -> Option<Result<(), FreeError>> {
        if !self.pcp.params_current(pcp) || slot.drain_pending() {
            return None;
        }
        // nr_pcp_high would return `high` unchanged and the list stays below it: no drain.
        let high = pcp.high;
        if high < pcp.high_min || high > pcp.high_max || pcp.count + 1 >= high {
            return None;
        }
        let idx = match self.validate_free(pfn, order) {
            Ok(i) => i,
            Err(e) => return Some(Err(e)),
        };
        let mt = self.block_mt_racy(idx);
        if mt.index() >= MIGRATE_PCPTYPES {
            return None;
        }
        if let Err(e) = self.claim_for_free(idx, pfn, order) {
            return Some(Err(e));
        }
        let policy = self.pcp.policy;
        pcp.put_head(&self.table, policy.pindex(mt, 0), idx, 0);
        pcp.note_free(0, &policy); // order 0: never free_high
        slot.count_hint.store(pcp.count as u32, Ordering::Relaxed);
        Some(Ok(()))
    }
}
