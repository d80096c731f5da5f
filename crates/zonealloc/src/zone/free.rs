//! The free side: `free_frozen_page_commit` (push at the head, tune `high`, drain from the
//! tails when the list is full, in `batch`-sized chunks with the lock dropped between them),
//! `free_pcppages_bulk`'s zone-lock hold, and `free_one_page` for frees that bypass the lists.

use super::pcp::PcpGuard;
use super::Zone;
use crate::buddy::FreePlacement;
use crate::config::DrainMigratetype;
use crate::error::FreeError;
use crate::meta::FrameState;
use crate::pcp::{DrainReason, PcpAccess, PerCpuPages};
use crate::platform::Platform;
use crate::request::AllocFlags;
use crate::shared::ZoneBits;
use crate::types::{CpuId, MigrateType, Order, Pfn, MIGRATE_PCPTYPES};

/// What `prepare_list_free` left to do with a block being freed.
enum ListFree {
    /// It went to the buddy.
    Done,
    /// It goes on the list of type `mt` (`cached`: the type its page records).
    Commit {
        idx: u32,
        mt: MigrateType,
        cached: MigrateType,
    },
}

/// Pages a free decided to drain, and from which list to start.
struct DrainWork {
    to_free: i32,
    pindex: usize,
    reason: DrainReason,
}

/// The drain a free's commit decided on, left to its caller ([`Zone::free_on_pending`]):
/// applied chunk by chunk with [`Zone::drain_pending`], each chunk one `free_pcppages_bulk`
/// under its own zone-lock hold, as `free_frozen_page_commit` does (7.2: `batch` pages a
/// chunk, the lists let go between chunks; 6.1 and 6.12: one chunk, the whole drain). A
/// replay of a kernel's trace applies each chunk where the trace shows its lines, so that
/// another CPU's refill that took the zone lock between two chunks (or before the drain)
/// goes first, as it did.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingDrain {
    cpu: usize,
    rem: i32,
    pindex: usize,
    reason: DrainReason,
}

impl PendingDrain {
    /// The pages still to drain (0 once done).
    pub fn pages_left(&self) -> i32 {
        self.rem.max(0)
    }

    /// Whether nothing is left to drain.
    pub fn is_done(&self) -> bool {
        self.rem <= 0
    }
}

impl<P: Platform> Zone<P> {
    /// Frees through the CPU's lists when the order allows, else straight to the buddy
    /// (`__free_frozen_pages`).
    #[inline]
    pub(crate) fn free_with(
        &self,
        pfn: Pfn,
        order: Order,
        access: &mut PcpAccess<'_>,
    ) -> Result<(), FreeError> {
        if let ListFree::Commit { idx, mt, cached } = self.prepare_list_free(pfn, order)? {
            self.free_committing(idx, order, mt, cached, access);
        }
        Ok(())
    }

    /// The checks and the list choice of `__free_frozen_pages` before the commit: the block
    /// is validated and claimed, and goes straight to the buddy (orders the lists do not
    /// take, lists off, an isolated pageblock) or is to be committed to the list of its
    /// pageblock's type.
    #[inline(always)]
    fn prepare_list_free(&self, pfn: Pfn, order: Order) -> Result<ListFree, FreeError> {
        let idx = self.validate_free(pfn, order)?;
        if !self.pcp.enabled() || !self.pcp.policy.allowed_order(order) {
            return self.free_to_buddy(idx, pfn, order).map(|()| ListFree::Done);
        }
        self.claim_for_free(idx, pfn, order)?;
        let mut mt = self.block_mt_racy(idx);
        // free_unref_page_prepare → set_pcppage_migratetype (6.1): HighAtomic stays cached.
        let cached = mt;
        if mt.index() >= MIGRATE_PCPTYPES {
            if mt == MigrateType::Isolate {
                self.free_one_page(idx, order);
                return Ok(ListFree::Done);
            }
            mt = MigrateType::Movable; // HighAtomic pages ride the Movable list
        }
        Ok(ListFree::Commit { idx, mt, cached })
    }

    /// As [`Zone::free_on`], but a drain the commit decides on is returned, not done: the
    /// block goes on CPU `cpu`'s list (or to the buddy, as `free_on` sends it) and its tuning
    /// moves; the caller drains with [`Zone::drain_pending`] until it is done. For a replay
    /// that follows a trace's order of zone-lock sections across CPUs, not for concurrent
    /// use: the lists are let go between the two calls.
    #[doc(hidden)]
    pub fn free_on_pending(
        &self,
        cpu: CpuId,
        pfn: Pfn,
        order: Order,
    ) -> Result<Option<PendingDrain>, FreeError> {
        let c = self.pcp.cpu_index(cpu);
        if let Some(slot) = self.pcp.slot_of(c) {
            // The hit path never drains.
            if self.pcp_free_fast(pfn, order, slot, None) {
                self.debug_check("free");
                return Ok(None);
            }
        }
        let ListFree::Commit { idx, mt, cached } = self.prepare_list_free(pfn, order)? else {
            self.debug_check("free");
            return Ok(None);
        };
        let slot = self.pcp.slot(c);
        let Some(pcp) = slot.try_lists() else {
            self.free_one_page(idx, order);
            self.debug_check("free");
            return Ok(None);
        };
        let mut pcp = self.pcp_enter(slot, pcp);
        let work = self.commit_free(&mut pcp, idx, order, mt, cached);
        drop(pcp);
        self.debug_check("free");
        Ok(work.map(|w| PendingDrain {
            cpu: c,
            rem: w.to_free,
            pindex: w.pindex,
            reason: w.reason,
        }))
    }

    /// One chunk of `drain` ([`Zone::free_on_pending`]): `batch` pages with
    /// `drain_in_batches` (7.2's `free_frozen_page_commit`), else all of it, under one
    /// zone-lock hold. Once it is done (nothing left, or the lists empty), `ZONE_BELOW_HIGH`
    /// is cleared if free memory is back above the high mark, as after the commit's drain.
    /// Returns whether it is done.
    #[doc(hidden)]
    pub fn drain_pending(&self, drain: &mut PendingDrain) -> bool {
        if drain.rem <= 0 {
            return true;
        }
        let slot = self.pcp.slot(drain.cpu);
        let Some(pcp) = slot.try_lists() else {
            // `pcp_spin_trylock` failed between two chunks: the kernel gives up.
            drain.rem = 0;
            return true;
        };
        let mut pcp = self.pcp_enter(slot, pcp);
        if pcp.count > 0 {
            drain.rem = self.drain_chunk(&mut pcp, drain.rem, drain.pindex, drain.reason);
        }
        let done = drain.rem <= 0 || pcp.count <= 0;
        drop(pcp);
        if done {
            drain.rem = 0;
            self.clear_below_high();
        }
        self.debug_check("free");
        done
    }

    /// For a set-up from a snapshot: frees `pfn` onto CPU `cpu`'s list of type `list`
    /// (Unmovable, Movable or Reclaimable), whatever its pageblock's type is now. The kernel
    /// puts a page on the list of the type `free_unref_page_prepare` read at its free (6.1
    /// `free_unref_page_commit`, 7.2 `free_frozen_page_commit` take it as an argument), and
    /// the pageblock may change type while the page waits there (`steal_suitable_fallback`),
    /// so a running kernel's list can hold a page of another type's pageblock. Otherwise as
    /// [`Zone::free_on`]: the same checks, the same drain decision; a `list` of no per-CPU
    /// list, an order the lists do not take, or lists switched off: as [`Zone::free_on`].
    pub fn free_on_list(
        &self,
        cpu: CpuId,
        pfn: Pfn,
        order: Order,
        list: MigrateType,
    ) -> Result<(), FreeError> {
        if list.index() >= MIGRATE_PCPTYPES
            || !self.pcp.enabled()
            || !self.pcp.policy.allowed_order(order)
        {
            return self.free_on(cpu, pfn, order);
        }
        let idx = self.validate_free(pfn, order)?;
        self.claim_for_free(idx, pfn, order)?;
        let cpu = self.pcp.cpu_index(cpu);
        self.free_committing(idx, order, list, list, &mut PcpAccess::Cpu(cpu));
        self.debug_check("free");
        Ok(())
    }

    /// The claimed block `idx` goes on the list of type `mt` (`cached`: the type its page
    /// records) of the CPU `access` names, and the lists drain if the commit says so.
    #[inline(always)]
    fn free_committing(
        &self,
        idx: u32,
        order: Order,
        mt: MigrateType,
        cached: MigrateType,
        access: &mut PcpAccess<'_>,
    ) {
        match access {
            PcpAccess::Held(cpu, pcp) => {
                let mut pcp = self.pcp_enter(self.pcp.slot(*cpu), &mut **pcp);
                if let Some(work) = self.commit_free(&mut pcp, idx, order, mt, cached) {
                    // The owner holds its lists throughout: no unlock between chunks.
                    let mut rem = work.to_free;
                    while rem > 0 && pcp.count > 0 {
                        rem = self.drain_chunk(&mut pcp, rem, work.pindex, work.reason);
                    }
                    self.clear_below_high();
                }
            }
            PcpAccess::Cpu(cpu) | PcpAccess::Owner(cpu) => {
                let slot = self.pcp.slot(*cpu);
                let Some(pcp) = slot.try_lists() else {
                    self.free_one_page(idx, order);
                    return;
                };
                let mut pcp = self.pcp_enter(slot, pcp);
                let Some(work) = self.commit_free(&mut pcp, idx, order, mt, cached) else {
                    return;
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
                    drop(guard.take()); // leave and unlock, then try to take it back
                    guard = slot.lists.try_lock().map(|p| PcpGuard::resume(slot, p));
                }
                drop(guard);
                self.clear_below_high();
            }
        }
    }

    /// `free_frozen_page_commit` up to the drain decision: the block goes on its list, the
    /// tuning state moves, and the pages to drain (if any) are returned.
    #[inline]
    fn commit_free(
        &self,
        pcp: &mut PerCpuPages,
        idx: u32,
        order: Order,
        mt: MigrateType,
        cached: MigrateType,
    ) -> Option<DrainWork> {
        let policy = self.pcp.policy;
        let t = &self.table;
        let o = order;
        let pi = policy.pindex(mt, o);
        pcp.put_head(t, pi, idx, o);
        if policy.drain_migratetype == DrainMigratetype::AtFree {
            t.set_pcp_cached(idx, o, cached);
        }
        let free_high = pcp.note_free(o, &policy);
        let reclaim = self.shared.test_flag(ZoneBits::ZONE_RECLAIM_ACTIVE);
        let below = self.shared.test_flag(ZoneBits::ZONE_BELOW_HIGH);
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
        // 7.2 frees in `batch` chunks; 6.1 and 6.12 in one `free_pcppages_bulk` call.
        let chunk = if self.pcp.policy.drain_in_batches {
            to_free.min(pcp.batch.max(1))
        } else {
            to_free
        };
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
            z.hold.bulk_free.record(P::now_ns().saturating_sub(t0));
        }
    }

    /// Clears `ZONE_BELOW_HIGH` once free memory is back above the high mark (the tail of
    /// `free_frozen_page_commit`).
    fn clear_below_high(&self) {
        let sh = &self.shared;
        if sh.test_flag(ZoneBits::ZONE_BELOW_HIGH)
            && sh.watermark_ok(
                Order::ZERO,
                sh.mark(2),
                crate::types::ZoneType::Movable.index(),
                AllocFlags(0),
            )
        {
            sh.clear_flag(ZoneBits::ZONE_BELOW_HIGH);
        }
    }

    /// `free_one_page`: straight to the buddy, for orders the PCP does not take and for frees
    /// whose trylock failed. The block is already claimed.
    pub(crate) fn free_one_page(&self, idx: u32, order: Order) {
        let mut z = self.lock();
        z.split_large_buddy(&self.table, idx, order, FreePlacement::Normal);
        z.stats.frees[order.index()] += 1;
    }
}

impl<P: Platform> Zone<P> {
    /// Frees the block of `order` at `pfn` on the calling thread's CPU (`__free_pages`):
    /// orders the per-CPU lists take go there, others straight to the buddy.
    ///
    /// Detects double frees (also of blocks sitting on a per-CPU list), frees of frames that
    /// are not the head of an allocated block, wrong orders, misaligned frames and frames
    /// outside the zone or in holes; on error the zone is unchanged.
    ///
    /// The PCP hit path is inlined into every caller; everything else is one out-of-line call.
    #[inline(always)]
    pub fn free(&self, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        self.free_via(pfn, order, None)
    }

    /// Frees on CPU `cpu`, the calling one's if `None` (reduced to the CPU count only off the
    /// hit path, where the calling CPU is asked for again: it is a hint either way).
    #[inline(always)]
    fn free_via(&self, pfn: Pfn, order: Order, cpu: Option<CpuId>) -> Result<(), FreeError> {
        if let Some(slot) = self
            .pcp
            .slot_of(cpu.map_or_else(P::current_cpu_index, |c| c.0 as usize))
        {
            if self.pcp_free_fast(pfn, order, slot, None) {
                self.debug_check("free");
                return Ok(());
            }
        }
        self.free_slow(pfn, order, cpu)
    }

    /// Everything but a PCP hit, out of line so that the hit path inlined into callers stays
    /// small.
    #[cold]
    #[inline(never)]
    fn free_slow(&self, pfn: Pfn, order: Order, cpu: Option<CpuId>) -> Result<(), FreeError> {
        let cpu = cpu.map_or_else(|| self.this_cpu(), |c| self.pcp.cpu_index(c));
        let done = self.free_with(pfn, order, &mut PcpAccess::Cpu(cpu));
        self.debug_check("free");
        done
    }

    /// Like [`Zone::free`] on CPU `cpu`'s lists.
    ///
    /// The PCP hit path is inlined into every caller; everything else is one out-of-line call.
    #[inline(always)]
    pub fn free_on(&self, cpu: CpuId, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        self.free_via(pfn, order, Some(cpu))
    }

    /// Frees as `__free_frozen_pages` does when its `pcp_spin_trylock` fails: the CPU's lists
    /// are held by the code an interrupt cut into (a refill in `rmqueue_pcplist`), so the
    /// block goes straight to the buddy (`free_one_page`), leaving the lists and their tuning
    /// (`alloc_factor`, `free_count`, `high`) as they were.
    pub fn free_while_lists_held(&self, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        let idx = self.validate_free(pfn, order)?;
        let done = self.free_to_buddy(idx, pfn, order);
        self.debug_check("free");
        done
    }

    /// `__free_pages_ok`: validated and claimed here, then `free_one_page`.
    pub(crate) fn free_to_buddy(&self, idx: u32, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        self.claim_for_free(idx, pfn, order)?;
        self.free_one_page(idx, order);
        Ok(())
    }

    /// The checks that need no lock: order, span, alignment. Returns the frame index.
    #[inline]
    pub(crate) fn validate_free(&self, pfn: Pfn, order: Order) -> Result<u32, FreeError> {
        if order.get() > self.cfg.max_order {
            return Err(FreeError::OrderTooLarge { pfn, order });
        }
        if !self.spans(pfn) {
            return Err(FreeError::OutOfZone { pfn });
        }
        if !pfn.is_aligned(order) {
            return Err(FreeError::Misaligned { pfn, order });
        }
        self.table.index_of(pfn).ok_or(FreeError::OutOfZone { pfn })
    }

    /// Atomically takes ownership of an allocated head for freeing (state becomes `Tail`), or
    /// says precisely why the frame cannot be freed.
    #[inline]
    pub(crate) fn claim_for_free(&self, idx: u32, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        let t = &self.table;
        if t.try_claim_allocated(idx, order, FrameState::Tail) {
            return Ok(());
        }
        loop {
            match t.state(idx) {
                FrameState::Allocated(o, mt) if o == order => {
                    match t.claim_allocated(idx, order, mt, FrameState::Tail) {
                        Ok(()) => return Ok(()),
                        Err(_) => continue, // raced with another free: classify again
                    }
                }
                FrameState::Allocated(o, _) => {
                    return Err(FreeError::WrongOrder {
                        pfn,
                        given: order,
                        allocated: o,
                    })
                }
                FrameState::Absent => return Err(FreeError::NotManaged { pfn }),
                FrameState::Buddy(_) | FrameState::Pcp(_) => {
                    return Err(FreeError::DoubleFree { pfn })
                }
                FrameState::Tail => return Err(self.classify_tail(pfn)),
            }
        }
    }

    /// A tail frame was passed to free: find the block containing it.
    fn classify_tail(&self, pfn: Pfn) -> FreeError {
        let t = &self.table;
        for o in 1..=self.cfg.max_order {
            let head_pfn = pfn.0 & !((1u64 << o) - 1);
            let Some(h) = t.index_of(Pfn(head_pfn)) else {
                break;
            };
            match t.state(h) {
                FrameState::Buddy(bo) | FrameState::Pcp(bo) if bo.get() >= o => {
                    return FreeError::DoubleFree { pfn }
                }
                FrameState::Allocated(ao, _) if ao.get() >= o => {
                    return FreeError::NotBlockHead {
                        pfn,
                        head: Pfn(head_pfn),
                    }
                }
                _ => {}
            }
        }
        // A tail whose block head is being freed right now by another thread.
        FreeError::DoubleFree { pfn }
    }
}
