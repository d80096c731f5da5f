//! The free side: `free_frozen_page_commit` (push at the head, tune `high`, drain from the
//! tails when the list is full, in `batch`-sized chunks with the lock dropped between them),
//! `free_pcppages_bulk`'s zone-lock hold, and `free_one_page` for frees that bypass the lists.

use super::slot::PcpAccess;
use super::{DrainReason, PerCpuPages};
use crate::buddy::{AllocFlags, FreePlacement};
use crate::error::FreeError;
use crate::shared::{ZONE_BELOW_HIGH, ZONE_RECLAIM_ACTIVE};
use crate::sync::now_ns;
use crate::types::{MigrateType, Order, Pfn, MIGRATE_PCPTYPES};
use crate::zone::Zone;

/// Pages a free decided to drain, and from which list to start.
struct DrainWork {
    to_free: i32,
    pindex: usize,
    reason: DrainReason,
}

impl Zone {
    /// Frees through the CPU's lists when the order allows, else straight to the buddy
    /// (`__free_frozen_pages`).
    #[inline]
    pub(crate) fn free_with(
        &self,
        pfn: Pfn,
        order: Order,
        access: &mut PcpAccess<'_>,
    ) -> Result<(), FreeError> {
        let idx = self.validate_free(pfn, order)?;
        let o = order.get();
        if !self.pcp.enabled() || !self.pcp.policy.allowed_order(o) {
            return self.free_to_buddy(idx, pfn, order);
        }
        self.claim_for_free(idx, pfn, order)?;
        let mut mt = self.block_mt_racy(idx);
        if mt.index() >= MIGRATE_PCPTYPES {
            if mt == MigrateType::Isolate {
                self.free_one_page(idx, o);
                return Ok(());
            }
            mt = MigrateType::Movable; // HighAtomic pages ride the Movable list
        }
        match access {
            PcpAccess::Held(cpu, pcp) => {
                let slot = self.pcp.slot(*cpu);
                self.enter(slot, pcp);
                if let Some(work) = self.commit_free(pcp, idx, o, mt) {
                    // The owner holds its lists throughout: no unlock between chunks.
                    let mut rem = work.to_free;
                    while rem > 0 && pcp.count > 0 {
                        rem = self.drain_chunk(pcp, rem, work.pindex, work.reason);
                    }
                    self.clear_below_high();
                }
                self.leave(slot, pcp);
            }
            PcpAccess::Cpu(cpu) | PcpAccess::Owner(cpu) => {
                let cpu = *cpu;
                let slot = self.pcp.slot(cpu);
                let Some(mut pcp) = slot.try_lists() else {
                    self.free_one_page(idx, o);
                    return Ok(());
                };
                self.enter(slot, &mut pcp);
                let Some(work) = self.commit_free(&mut pcp, idx, o, mt) else {
                    self.leave(slot, &pcp);
                    return Ok(());
                };
                // Free in batch-sized chunks, unlocking between them to let remote drainers
                // in; give up if the lock is taken meanwhile.
                let mut guard = Some(pcp);
                let mut rem = work.to_free;
                while let Some(p) = guard.as_mut() {
                    if rem <= 0 || p.count <= 0 {
                        break;
                    }
                    rem = self.drain_chunk(p, rem, work.pindex, work.reason);
                    if rem <= 0 || p.count <= 0 {
                        break;
                    }
                    self.leave(slot, p);
                    drop(guard.take()); // unlock, then try to take it back
                    guard = slot.lists.try_lock();
                }
                if let Some(p) = guard {
                    self.leave(slot, &p);
                }
                self.clear_below_high();
            }
        }
        Ok(())
    }

    /// `free_frozen_page_commit` up to the drain decision: the block goes on its list, the
    /// tuning state moves, and the pages to drain (if any) are returned.
    #[inline]
    fn commit_free(
        &self,
        pcp: &mut PerCpuPages,
        idx: u32,
        order: u8,
        mt: MigrateType,
    ) -> Option<DrainWork> {
        let policy = self.pcp.policy;
        let t = &self.table;
        let pi = policy.pindex(mt, order);
        pcp.put_head(t, pi, idx, order);
        let free_high = pcp.note_free(order, &policy);
        let reclaim = self.shared.test_flag(ZONE_RECLAIM_ACTIVE);
        let below = self.shared.test_flag(ZONE_BELOW_HIGH);
        let high = pcp.nr_pcp_high(free_high, reclaim, below, &policy);
        if pcp.count < high {
            return None;
        }
        Some(DrainWork {
            to_free: pcp.nr_pcp_free(high, free_high, &policy),
            pindex: pi,
            reason: if free_high {
                DrainReason::FreeHigh
            } else {
                DrainReason::High
            },
        })
    }

    /// One `batch`-sized `free_pcppages_bulk` under its own zone-lock hold; returns what is
    /// left of `to_free`.
    fn drain_chunk(
        &self,
        pcp: &mut PerCpuPages,
        to_free: i32,
        pindex: usize,
        reason: DrainReason,
    ) -> i32 {
        let chunk = to_free.min(pcp.batch.max(1));
        self.bulk_free(pcp, chunk, pindex, reason);
        to_free - chunk
    }

    /// `free_pcppages_bulk` with the zone lock taken here.
    pub(crate) fn bulk_free(
        &self,
        pcp: &mut PerCpuPages,
        count: i32,
        pindex: usize,
        reason: DrainReason,
    ) {
        let policy = self.pcp.policy;
        let mut z = self.lock();
        let t0 = self.hold_start();
        pcp.free_bulk(&mut z, &self.table, count, pindex, &policy, reason);
        if let Some(t0) = t0 {
            z.hold.bulk_free.record(now_ns().saturating_sub(t0));
        }
    }

    /// Clears `ZONE_BELOW_HIGH` once free memory is back above the high mark (the tail of
    /// `free_frozen_page_commit`).
    fn clear_below_high(&self) {
        let sh = &self.shared;
        if sh.test_flag(ZONE_BELOW_HIGH)
            && sh.watermark_ok(
                0,
                sh.mark(2),
                crate::types::ZoneType::Movable.index(),
                AllocFlags(0),
            )
        {
            sh.clear_flag(ZONE_BELOW_HIGH);
        }
    }

    /// `free_one_page`: straight to the buddy, for orders the PCP does not take and for frees
    /// whose trylock failed. The block is already claimed.
    pub(crate) fn free_one_page(&self, idx: u32, order: u8) {
        let mut z = self.lock();
        z.split_large_buddy(&self.table, idx, order, FreePlacement::Normal);
        z.stats.frees[order as usize] += 1;
    }
}
