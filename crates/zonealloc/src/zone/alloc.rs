//! The allocation side: `rmqueue_pcplist` (take the head of the CPU's list) and
//! `rmqueue_bulk` (refill it in a batch under one zone-lock hold, appending at the tail).

use super::Zone;
use crate::buddy::{BuddyZone, RmqueueMode};
use crate::config::DrainMigratetype;
use crate::error::AllocError;
use crate::list::FrameList;
use crate::meta::{FrameState, FrameTable};
use crate::pcp::{PcpAccess, PerCpuPages};
use crate::platform::Platform;
use crate::request::{AllocFlags, AllocRequest};
use crate::shared::ZoneBits;
use crate::sync::Ordering;
use crate::types::{CpuId, MigrateType, Order, Pfn, ZoneType};

impl<P: Platform> Zone<P> {
    /// `rmqueue_pcplist`: `None` when the lock was busy or the refill found nothing.
    #[inline]
    pub(crate) fn rmqueue_pcplist(
        &self,
        order: Order,
        mt: MigrateType,
        flags: AllocFlags,
        access: &mut PcpAccess<'_>,
    ) -> Option<u32> {
        match access {
            PcpAccess::Held(cpu, pcp) => {
                let mut pcp = self.pcp_enter(self.pcp.slot(*cpu), &mut **pcp);
                self.rmqueue_pcplist_locked(&mut pcp, order, mt, flags)
            }
            PcpAccess::Cpu(cpu) | PcpAccess::Owner(cpu) => {
                let slot = self.pcp.slot(*cpu);
                let mut pcp = self.pcp_enter(slot, slot.try_lists()?);
                self.rmqueue_pcplist_locked(&mut pcp, order, mt, flags)
            }
        }
    }

    #[inline]
    pub(crate) fn rmqueue_pcplist_locked(
        &self,
        pcp: &mut PerCpuPages,
        order: Order,
        mt: MigrateType,
        flags: AllocFlags,
    ) -> Option<u32> {
        let policy = self.pcp.policy;
        let t = &self.table;
        pcp.free_count >>= 1; // an allocation halves the free streak
        let pi = policy.pindex(mt, order);
        if pcp.lists[pi].is_empty() {
            // __rmqueue_pcplist: `nr_pcp_alloc` first (it clamps and may raise `high`, and
            // grows `alloc_factor`), then 7.2's "if (alloc_flags & ALLOC_HIGHATOMIC) return
            // NULL;" (the caller then tries the buddy).
            let below_high = self.shared.test_flag(ZoneBits::ZONE_BELOW_HIGH);
            let n = pcp.refill_size(order, below_high, &policy);
            if policy.highatomic_no_refill && flags.intersects(AllocFlags::HIGHATOMIC) {
                return None;
            }
            let got = self.rmqueue_bulk(order, n, &mut pcp.lists[pi], mt, flags);
            pcp.count += got << order.get();
            pcp.stats.alloc_misses += 1;
            pcp.stats.refill_pages += (got as u64) << order.get();
            let idx = pcp.take_head(t, pi, order, mt)?;
            pcp.miss_allocs += 1; // `PcpStats::alloc_hits` is `allocs` less these
            return Some(idx);
        }
        pcp.take_head(t, pi, order, mt)
    }

    /// `rmqueue_bulk`: up to `count` blocks under one zone-lock hold, appended at the tail
    /// (ascending pfn order after `expand`).
    fn rmqueue_bulk(
        &self,
        order: Order,
        count: i32,
        list: &mut FrameList,
        mt: MigrateType,
        flags: AllocFlags,
    ) -> i32 {
        let t = &self.table;
        let mut z = self.lock();
        let t0 = self.hold_start();
        let mut mode = crate::buddy::RmqueueMode::Normal;
        let cache = self.pcp.policy.drain_migratetype == DrainMigratetype::AtFree;
        let mut got = 0;
        while got < count {
            let Some(idx) = z.rmqueue(t, order, mt, flags, &mut mode) else {
                break;
            };
            if cache {
                // 6.1's __rmqueue_smallest: set_pcppage_migratetype(page, migratetype).
                t.set_pcp_cached(idx, order, mt);
            } else {
                t.set_state(idx, FrameState::Pcp(order));
            }
            list.push_tail(t, idx);
            got += 1;
        }
        self.kswapd_check(&mut z, flags);
        if let Some(t0) = t0 {
            z.hold.refill.record(P::now_ns().saturating_sub(t0));
        }
        got
    }
}

impl<P: Platform> Zone<P> {
    /// Allocates a block of `order` with the default request for `mt` ([`AllocRequest::new`]).
    ///
    /// The PCP hit path is inlined into every caller; everything else is one out-of-line call.
    #[inline(always)]
    pub fn alloc(&self, order: Order, mt: MigrateType) -> Result<Pfn, AllocError> {
        self.alloc_with(order, AllocRequest::new(mt))
    }

    /// Allocates a block of `order` as `req` describes, walking the kernel's fast and slow
    /// paths over this one zone.
    ///
    /// The PCP hit path is inlined into every caller; everything else is one out-of-line call.
    #[inline(always)]
    pub fn alloc_with(&self, order: Order, req: AllocRequest) -> Result<Pfn, AllocError> {
        let got = self.alloc_unchecked(order, req);
        self.debug_check("alloc");
        got
    }

    /// [`Zone::alloc_with`] without the `debug-invariants` check.
    #[inline(always)]
    fn alloc_unchecked(&self, order: Order, req: AllocRequest) -> Result<Pfn, AllocError> {
        // The CPU id as given, or the calling CPU's (which the slow path asks for again,
        // rather than keep it in a register across the hit path: it is a hint either way).
        let slot = self
            .pcp
            .slot_of(req.cpu.map_or_else(P::current_cpu_index, |c| c.0 as usize));
        // A zone without per-CPU lists has `PCP_OFF` in its flag byte, which keeps its lists
        // from looking quiet: the hit path steps aside without a test of its own here.
        let (mt, hz) = (req.migratetype, req.highest_zone);
        if let Some(slot) = slot {
            if let Some(p) = self.pcp_alloc_fast(order, mt, hz, slot, None) {
                return Ok(p);
            }
        }
        self.alloc_full(order, mt, hz, req.gfp_bits(), req.cpu)
    }

    /// Everything but a PCP hit, out of line so that the hit path inlined into callers stays
    /// small. The request comes as scalars (its CPU is `cpu`, the calling one's if `None`).
    #[cold]
    #[inline(never)]
    fn alloc_full(
        &self,
        order: Order,
        mt: MigrateType,
        hz: ZoneType,
        gfp_bits: u8,
        cpu: Option<CpuId>,
    ) -> Result<Pfn, AllocError> {
        let cpu = cpu.map_or_else(|| self.this_cpu(), |c| self.pcp.cpu_index(c));
        let req = AllocRequest::from_parts(mt, hz, gfp_bits, Some(CpuId(cpu as u32)));
        if let Some(p) = self.buddy_alloc_fast(order, &req) {
            return Ok(p);
        }
        super::walk::alloc_in_zone(self, order, req, &mut PcpAccess::Cpu(cpu))
    }

    /// `gfp_migratetype` after `page_group_by_mobility_disabled`.
    #[inline]
    pub(crate) fn effective_migratetype(&self, mt: MigrateType) -> MigrateType {
        if self.shared.mobility_disabled() {
            MigrateType::Unmovable
        } else {
            mt
        }
    }

    /// `get_page_from_freelist`'s watermark checks of one zone (from 6.7): while
    /// `ZONE_BELOW_HIGH` is clear, `zone_watermark_fast` at the high mark, which sets the flag
    /// where it fails ("Detect whether the number of free pages is below high watermark"),
    /// then at the request's own mark. Whether the zone passed.
    #[inline(always)]
    fn watermark_walk(&self, order: Order, flags: AllocFlags, highest_zoneidx: usize) -> bool {
        let sh = &self.shared;
        if !sh.test_flag(ZoneBits::ZONE_BELOW_HIGH) {
            if sh.watermark_fast(order, sh.mark(2), highest_zoneidx, flags) {
                return true;
            }
            self.set_zone_flag(ZoneBits::ZONE_BELOW_HIGH);
        }
        sh.watermark_fast(order, sh.mark(flags.wmark_index()), highest_zoneidx, flags)
    }

    /// `get_page_from_freelist` passing this zone over for a lower zone of the zonelist: an
    /// embedder that knows the request was served below this zone (the trace replay, from
    /// the page's pfn) replays the walk's checks here, which the kernel ran first, with the
    /// fast path's flags (`ALLOC_WMARK_LOW`). They set `ZONE_BELOW_HIGH` where the high mark
    /// fails (`try_alloc`'s checks, without its `rmqueue`). Whether the zone passed.
    pub fn pass_over(&self, order: Order, req: &AllocRequest) -> bool {
        self.watermark_walk(order, req.fast_flags(), req.highest_zone.index())
    }

    /// One zone of `get_page_from_freelist`: the lock-free watermark checks, then `rmqueue`
    /// (the CPU's lists for PCP orders, else or on failure the buddy).
    #[inline]
    pub(crate) fn try_alloc(
        &self,
        order: Order,
        mt: MigrateType,
        flags: AllocFlags,
        highest_zoneidx: usize,
        access: &mut PcpAccess<'_>,
    ) -> Option<Pfn> {
        if !self.watermark_walk(order, flags, highest_zoneidx)
            && !flags.intersects(AllocFlags::NO_WATERMARKS)
        {
            return None;
        }
        let t = &self.table;
        if self.pcp.enabled() && self.pcp.policy.allowed_order(order) {
            if let Some(idx) = self.rmqueue_pcplist(order, mt, flags, access) {
                if flags.intersects(AllocFlags::HIGHATOMIC) {
                    self.lock().reserve_highatomic_pageblock(t, idx, order);
                }
                return Some(t.pfn_of(idx));
            }
        }
        let mut z = self.lock();
        let idx = rmqueue_buddy(&mut z, t, order, mt, flags);
        self.kswapd_check(&mut z, flags);
        let idx = idx?;
        t.set_state(idx, FrameState::Allocated(order, mt));
        z.stats.allocs[order.index()] += 1;
        if flags.intersects(AllocFlags::HIGHATOMIC) {
            z.reserve_highatomic_pageblock(t, idx, order);
        }
        Some(t.pfn_of(idx))
    }

    /// The buddy allocation in its most common case, in one function: an order the per-CPU
    /// lists do not take, a zone above its high watermark with its flags clear, and a block
    /// on the request's own migratetype's lists (`__rmqueue_smallest` succeeds). Exactly what
    /// `get_page_from_freelist` → `rmqueue_buddy` → `__rmqueue` does then; anything else
    /// returns `None` having changed nothing, and the full walk runs.
    #[inline]
    pub(crate) fn buddy_alloc_fast(&self, order: Order, req: &AllocRequest) -> Option<Pfn> {
        let sh = &self.shared;
        let mt = req.migratetype;
        if (self.pcp.enabled() && self.pcp.policy.allowed_order(order))
            || order > Order::from_raw(self.cfg.max_order)
            || !mt.is_gfp_type()
            || sh.flags.load(Ordering::Relaxed)
                & ZoneBits::ZONE_FLAGS
                    .union(ZoneBits::MOBILITY_DISABLED)
                    .bits()
                != 0
        {
            return None;
        }
        let flags = req.fast_flags();
        if !sh.watermark_fast(order, sh.mark(2), req.highest_zone.index(), flags) {
            return None;
        }
        let t = &self.table;
        let mut z = self.lock();
        let idx = z.rmqueue_smallest(t, order, mt)?;
        self.kswapd_check(&mut z, flags);
        t.set_state(idx, FrameState::Allocated(order, mt));
        z.stats.allocs[order.index()] += 1;
        Some(t.pfn_of(idx))
    }

    /// The exit of `rmqueue`: a fallback that boosted the watermarks wakes kswapd.
    pub(crate) fn kswapd_check(&self, z: &mut BuddyZone, flags: AllocFlags) {
        if flags.intersects(AllocFlags::KSWAPD) && z.flags.boosted_watermark {
            z.flags.boosted_watermark = false;
            z.stats.kswapd_wakeups += 1;
        }
    }

    /// Counts a request that failed with this zone preferred.
    pub(crate) fn count_alloc_failure(&self) {
        self.lock().stats.alloc_failures += 1;
    }

    /// `unreserve_highatomic_pageblock` on this zone.
    pub(crate) fn unreserve_highatomic(&self, to_mt: MigrateType, force: bool) -> bool {
        let mut z = self.lock();
        z.unreserve_highatomic_pageblock(&self.table, to_mt, force)
    }
}

/// `rmqueue_buddy`: HighAtomic first for `ALLOC_HIGHATOMIC`, then `__rmqueue`, then HighAtomic
/// for OOM and non-blocking requests.
pub(crate) fn rmqueue_buddy(
    z: &mut BuddyZone,
    t: &FrameTable,
    order: Order,
    mt: MigrateType,
    flags: AllocFlags,
) -> Option<u32> {
    if flags.intersects(AllocFlags::HIGHATOMIC) {
        if let Some(idx) = z.rmqueue_smallest(t, order, MigrateType::HighAtomic) {
            return Some(idx);
        }
    }
    let mut mode = RmqueueMode::Normal;
    if let Some(idx) = z.rmqueue(t, order, mt, flags, &mut mode) {
        return Some(idx);
    }
    if flags.intersects(AllocFlags::OOM.with(AllocFlags::NON_BLOCK)) {
        return z.rmqueue_smallest(t, order, MigrateType::HighAtomic);
    }
    None
}
