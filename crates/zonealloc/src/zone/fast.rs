//! The PCP hit paths in one function each: an order-0..=3 allocation from a non-empty list and
//! an order-0 free that cannot trigger a drain. They do exactly what the full paths
//! (`get_page_from_freelist` → `rmqueue_pcplist`, `free_frozen_page_commit`) would do in
//! those cases, and hand everything else (an empty list, a list about to reach `high`, a zone
//! below its high watermark or under reclaim, pending parameters or drain requests, and any
//! input that is not a plain valid free) to the full paths untouched: when a fast path
//! returns "not taken", it has changed nothing, so the full path sees the same state.
//!
//! Bad input is never reported here. A free that fails any check (the frame table's bounds,
//! the state of the frame) falls through to the full path, which re-validates and returns the
//! typed error.
//!
//! The one difference from the kernel: a busy lock seen here is tried once more by the full
//! path before it falls back to the buddy, where the kernel tries once. Only the second
//! failure is counted.
//!
//! # Cost
//! About 50 instructions for an allocation and 70 for a free, 119 for a pair through a
//! [`CpuHandle`](crate::CpuHandle) (`crates/zonealloc-icount` checks the pair against a
//! budget on every `cargo test`). Each pays the lock (a compare-and-swap and a release store),
//! one byte of zone flags and one `attention` word instead of the several reads the full path
//! makes, and the list and counter updates the kernel makes; the allocation adds a
//! precomputed order-0 watermark test, the free the double-free compare-and-swap. The
//! allocation touches the zone's mirror, the CPU's slot and the frame's entry; the free the
//! same (the entry carries its pageblock's type) plus the entry of the list's previous head,
//! whose `prev` link it sets.

use super::Zone;
use crate::meta::{FrameMeta, FrameState};
use crate::pcp::{PcpFlags, PcpSlot, PerCpuPages};
use crate::request::FAST_ALLOC_FLAGS;
use crate::shared::ZoneBits;
use crate::sync::Ordering;
use crate::types::{MigrateType, Order, Pfn, ZoneType, MIGRATE_PCPTYPES};

impl Zone {
    /// A PCP-hit allocation from `slot` (locked here, or already held by its owner), or `None`
    /// to take the full path.
    #[inline(always)]
    pub(crate) fn pcp_alloc_fast(
        &self,
        order: u8,
        mt: MigrateType,
        highest_zone: ZoneType,
        slot: &PcpSlot,
        held: Option<&mut PerCpuPages>,
    ) -> Option<Pfn> {
        let sh = &self.shared;
        // Zone flags, mobility grouping off (which rewrites the migratetype) or no per-CPU
        // lists: full path.
        if order > Order::COSTLY.get() || !mt.is_gfp_type() || sh.flags.load(Ordering::Relaxed) != 0
        {
            return None;
        }
        // get_page_from_freelist with ZONE_BELOW_HIGH clear: zone_watermark_fast at the high
        // mark (its order-0 shortcut; the full check for higher orders).
        let hz = highest_zone.index();
        if order == 0 {
            // Order 0 gets its own copy of the pop, with the order a constant.
            if !sh.order0_above_high(hz) {
                return None;
            }
            return self.pcp_pop_at(slot, held, 0, mt);
        }
        if !sh.watermark_fast(Order::from_raw(order), sh.mark(2), hz, FAST_ALLOC_FLAGS) {
            return None;
        }
        self.pcp_pop_at(slot, held, order, mt)
    }

    /// Locks `slot`'s lists (unless its owner holds them) and pops.
    #[inline(always)]
    fn pcp_pop_at(
        &self,
        slot: &PcpSlot,
        held: Option<&mut PerCpuPages>,
        order: u8,
        mt: MigrateType,
    ) -> Option<Pfn> {
        match held {
            Some(pcp) => self.pcp_pop(slot, pcp, order, mt),
            None => {
                let mut g = slot.lists.try_lock()?;
                self.pcp_pop(slot, &mut g, order, mt)
            }
        }
    }

    /// `rmqueue_pcplist` → `__rmqueue_pcplist` on a locked, non-empty list.
    #[inline(always)]
    fn pcp_pop(
        &self,
        slot: &PcpSlot,
        pcp: &mut PerCpuPages,
        order: u8,
        mt: MigrateType,
    ) -> Option<Pfn> {
        if !slot.quiet(pcp) {
            return None; // new parameters or a drain request: `enter` first
        }
        let t = &self.table;
        let m = t.entries();
        // order_to_pindex for a low order; `order <= Order::COSTLY` and `mt` is a PCP type.
        let pi = MIGRATE_PCPTYPES * order as usize + mt.index();
        let idx = pcp.lists.get_mut(pi)?.pop_head_in(m)?;
        let count = pcp.count - (1 << order);
        pcp.count = count;
        m[idx as usize].set_state(FrameState::Allocated(Order::from_raw(order), mt));
        pcp.free_count >>= 1; // an allocation halves the free streak
        pcp.stats.alloc_hits += 1;
        pcp.allocs[order as usize] += 1;
        slot.count_hint.store(count as u32, Ordering::Relaxed);
        Some(Pfn(t.base() + idx as u64))
    }

    /// An order-0 free onto `slot`'s lists that cannot drain. Returns `false`, having changed
    /// nothing, when the full path must take it (including every kind of bad input, which the
    /// full path reports).
    #[inline(always)]
    pub(crate) fn pcp_free_fast(
        &self,
        pfn: Pfn,
        order: Order,
        slot: &PcpSlot,
        held: Option<&mut PerCpuPages>,
    ) -> bool {
        if order.get() != 0
            || self.shared.flags.load(Ordering::Relaxed) & ZoneBits::PCP_FREE_OFF.bits() != 0
        {
            return false;
        }
        // validate_free for order 0 (any frame is aligned), reduced to "the table covers the
        // frame": the frames the table covers outside the span are `Absent`, so the claim
        // below rejects them and the full path reports `OutOfZone`.
        let t = &self.table;
        let m = t.entries();
        let off = pfn.0.wrapping_sub(t.base());
        if off >= m.len() as u64 {
            return false;
        }
        let idx = off as u32;
        let e = &m[off as usize];
        // The pageblock type (every frame carries it), read before the lock as
        // `__free_frozen_pages` reads it.
        let Some(mt) = e.block_pcp_type() else {
            return false; // HighAtomic rides the Movable list, Isolate skips the lists
        };
        match held {
            Some(pcp) => self.pcp_push(slot, pcp, m, idx, e, mt),
            None => match slot.lists.try_lock() {
                Some(mut g) => self.pcp_push(slot, &mut g, m, idx, e, mt),
                None => false,
            },
        }
    }

    /// `free_frozen_page_commit` for order 0 when the list stays below `high`.
    #[inline(always)]
    fn pcp_push(
        &self,
        slot: &PcpSlot,
        pcp: &mut PerCpuPages,
        m: &[FrameMeta],
        idx: u32,
        e: &FrameMeta,
        mt: MigrateType,
    ) -> bool {
        if !slot.quiet(pcp) {
            return false; // new parameters or a drain request: `enter` first
        }
        // nr_pcp_high would return `high` unchanged and the list stays below it: no drain.
        let (high, count) = (pcp.high, pcp.count + 1);
        if high < pcp.high_min || high > pcp.high_max || count >= high {
            return false;
        }
        // The double-free check: `Allocated(0, _)` → `Pcp(0)` in one compare-and-swap, so
        // exactly one of two racing frees wins. Any other state is bad input: the full path
        // classifies it.
        if !e.try_claim_allocated(Order::ZERO, FrameState::Pcp(Order::ZERO)) {
            return false;
        }
        // A free halves the refill scale; order_to_pindex(mt, 0) is `mt`.
        pcp.alloc_factor >>= 1;
        pcp.lists[mt.index()].push_head_entry(m, idx, e);
        pcp.count = count;
        pcp.frees_by_order[0] += 1; // `PcpStats::frees` is their sum
                                    // note_free for order 0: never free_high, and it ends a run of high-order frees.
        pcp.flags.remove(PcpFlags::PREV_FREE_HIGH_ORDER);
        if pcp.free_count < pcp.free_count_max {
            pcp.free_count += 1;
        }
        slot.count_hint.store(count as u32, Ordering::Relaxed);
        true
    }
}
