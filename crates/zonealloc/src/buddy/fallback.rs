//! Migratetype fallback: when a request's own free lists are empty, claim a whole pageblock of
//! another type (`__rmqueue_claim`) or steal one block from it (`__rmqueue_steal`).
//!
//! Mirrors the current mainline split of the older `__rmqueue_fallback` (≤ 6.14), including the
//! remembered `rmqueue_mode` that lets `rmqueue_bulk` skip searches that already failed.

use super::BuddyZone;
use crate::config::FallbackRule;
use crate::meta::{FrameState, FrameTable};
use crate::request::AllocFlags;
use crate::tracepoint::ZoneEvent;
use crate::types::{MigrateType, Order};

/// `fallbacks[]`: the order in which other types' lists are raided.
pub(super) const FALLBACKS: [[MigrateType; 2]; 3] = [
    [MigrateType::Reclaimable, MigrateType::Movable], // Unmovable
    [MigrateType::Reclaimable, MigrateType::Unmovable], // Movable
    [MigrateType::Unmovable, MigrateType::Movable],   // Reclaimable
];

/// `enum rmqueue_mode`: where the previous `__rmqueue` of a bulk refill found memory.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) enum RmqueueMode {
    /// Own free lists first, then claims, then steals. (The kernel's `RMQUEUE_CLAIM` is only
    /// ever reached by falling through, never stored, so it needs no variant here; CMA is not
    /// modelled.)
    #[default]
    Normal,
    /// Single-block steals.
    Steal,
}

enum Suitable {
    Found(MigrateType),
    /// `-1`: nothing at this order.
    None,
    /// `-2`: the order is too low to claim a block.
    TooLow,
}

impl BuddyZone {
    /// `should_try_claim_block`.
    pub(super) fn should_try_claim_block(&self, order: Order, start_mt: MigrateType) -> bool {
        let pb = self.cfg.pageblock_order;
        order >= Order::from_raw(pb)
            || order >= Order::from_raw(pb / 2)
            || matches!(start_mt, MigrateType::Reclaimable | MigrateType::Unmovable)
            || self.mobility_disabled
    }

    /// `find_suitable_fallback`.
    fn find_suitable_fallback(
        &self,
        order: Order,
        start_mt: MigrateType,
        claimable: bool,
    ) -> Suitable {
        if claimable && !self.should_try_claim_block(order, start_mt) {
            return Suitable::TooLow;
        }
        let area = &self.free_area[order.index()];
        if area.nr_free == 0 {
            return Suitable::None;
        }
        for &f in &FALLBACKS[start_mt.index()] {
            if !area.lists[f.index()].is_empty() {
                return Suitable::Found(f);
            }
        }
        Suitable::None
    }

    /// `boost_watermark`: raise the watermarks by a pageblock after a fragmenting fallback.
    pub(super) fn boost_watermark(&mut self) -> bool {
        let factor = self.cfg.watermark_boost_factor as u64;
        let pb_pages = 1u64 << self.cfg.pageblock_order;
        if factor == 0 || pb_pages * 4 > self.managed_pages {
            return false;
        }
        // mult_frac(high, factor, 10000)
        let high = self.wmark.high;
        let max_boost = (high / 10000) * factor + (high % 10000) * factor / 10000;
        if max_boost == 0 {
            return false;
        }
        let max_boost = max_boost.max(pb_pages);
        self.wmark.boost = (self.wmark.boost + pb_pages).min(max_boost);
        self.marks_dirty = true;
        true
    }

    /// `prep_move_freepages_block`: the pageblock containing `idx`, if the zone spans all of it,
    /// with its free pages and its movable allocated pages counted.
    fn prep_move_freepages_block(&self, t: &FrameTable, idx: u32) -> Option<(u32, u64, u64)> {
        let start = self.block_start(idx);
        let pages = 1u32 << self.cfg.pageblock_order;
        let start_pfn = t.pfn_of(start).0;
        let end_pfn = start_pfn + pages as u64;
        if start_pfn < self.span_start || end_pfn > self.span_end {
            return None;
        }
        let (mut free, mut movable) = (0u64, 0u64);
        let mut i = start;
        while i < start + pages {
            match t.state(i) {
                FrameState::Buddy(o) => {
                    free += o.pages();
                    i += o.pages() as u32;
                }
                // Linux counts `PageLRU || page_has_movable_ops` per page; zonealloc has no
                // LRU, so a frame counts as movable when its block was allocated Movable.
                FrameState::Allocated(o, MigrateType::Movable) => {
                    let n = o.pages().min((start + pages - i) as u64);
                    movable += n;
                    i += n as u32;
                }
                FrameState::Allocated(o, _) => {
                    i += o.pages().min((start + pages - i) as u64) as u32
                }
                _ => i += 1,
            }
        }
        Some((start, free, movable))
    }

    /// `__move_freepages_block`: move every free block of a pageblock to `new_mt`'s lists
    /// (each from the list it is on: the pageblock's type, or under 6.1's rules another).
    pub(crate) fn move_freepages_block(
        &mut self,
        t: &FrameTable,
        start: u32,
        new_mt: MigrateType,
    ) -> u64 {
        let end = start + (1u32 << self.cfg.pageblock_order);
        let mut i = start;
        let mut moved = 0;
        while i < end {
            if let FrameState::Buddy(o) = t.state(i) {
                self.move_to_free_list(t, i, o, t.buddy_list(i), new_mt);
                i += o.pages() as u32;
                moved += o.pages();
            } else {
                i += 1;
            }
        }
        moved
    }

    /// `try_to_claim_block`.
    #[allow(clippy::too_many_arguments)]
    fn try_to_claim_block(
        &mut self,
        t: &FrameTable,
        idx: u32,
        cur_order: Order,
        order: Order,
        start_mt: MigrateType,
        block_mt: MigrateType,
        flags: AllocFlags,
    ) -> Option<u32> {
        let pb = self.cfg.pageblock_order;
        if cur_order >= Order::from_raw(pb) {
            // Take ownership of whole pageblocks.
            self.del_from_free_list(t, idx, cur_order, block_mt);
            self.account_freepages(-(1i64 << cur_order.get()), block_mt);
            self.change_pageblock_range(t, idx, cur_order, start_mt);
            let added = self.expand(t, idx, order, cur_order, start_mt);
            self.account_freepages(added as i64, start_mt);
            self.stats.claims += 1;
            return Some(idx);
        }
        if self.boost_watermark() && flags.intersects(AllocFlags::KSWAPD) {
            self.flags.boosted_watermark = true;
        }
        let (start, free, movable) = self.prep_move_freepages_block(t, idx)?;
        let alike = if start_mt == MigrateType::Movable {
            movable
        } else if block_mt == MigrateType::Movable {
            (1u64 << pb) - (free + movable)
        } else {
            0
        };
        if free + alike >= (1u64 << (pb.saturating_sub(1))) || self.mobility_disabled {
            self.move_freepages_block(t, start, start_mt);
            self.set_block_mt(t, start, start_mt);
            self.stats.claims += 1;
            return self.rmqueue_smallest(t, order, start_mt);
        }
        None
    }

    /// `trace_mm_page_alloc_extfrag`; `change_ownership` reads the pageblock type after the
    /// claim or steal, as the tracepoint's `TP_fast_assign` does.
    pub(super) fn log_extfrag(
        &mut self,
        t: &FrameTable,
        idx: u32,
        order: Order,
        fallback_order: Order,
        start_mt: MigrateType,
        fallback_mt: MigrateType,
    ) {
        let change_ownership = self.block_mt(t, idx) == start_mt;
        self.events.log(|| ZoneEvent::AllocExtfrag {
            pfn: t.pfn_of(idx),
            alloc_order: order,
            fallback_order,
            alloc_migratetype: start_mt,
            fallback_migratetype: fallback_mt,
            change_ownership,
        });
    }

    /// `__rmqueue_claim`: largest block first (roughly the emptiest pageblock).
    fn rmqueue_claim(
        &mut self,
        t: &FrameTable,
        order: Order,
        start_mt: MigrateType,
        flags: AllocFlags,
    ) -> Option<u32> {
        let pb = self.cfg.pageblock_order;
        let min_order = if order < Order::from_raw(pb) && flags.intersects(AllocFlags::NOFRAGMENT) {
            pb
        } else {
            order.get()
        };
        let mut cur = self.cfg.max_order as i32;
        while cur >= min_order as i32 {
            let o = cur as u8;
            cur -= 1;
            let f = match self.find_suitable_fallback(Order::from_raw(o), start_mt, true) {
                Suitable::Found(f) => f,
                Suitable::None => continue,
                Suitable::TooLow => break,
            };
            let Some(head) = self.free_area[o as usize].lists[f.index()].first() else {
                continue;
            };
            if let Some(idx) =
                self.try_to_claim_block(t, head, Order::from_raw(o), order, start_mt, f, flags)
            {
                self.stats.fallbacks += 1;
                self.log_extfrag(t, idx, order, Order::from_raw(o), start_mt, f);
                return Some(idx);
            }
        }
        None
    }

    /// `__rmqueue_steal`: take the smallest suitable block of another type without retyping
    /// its pageblock.
    fn rmqueue_steal(
        &mut self,
        t: &FrameTable,
        order: Order,
        start_mt: MigrateType,
    ) -> Option<u32> {
        for o in order.through(Order::from_raw(self.cfg.max_order)) {
            let Suitable::Found(f) = self.find_suitable_fallback(o, start_mt, false) else {
                continue;
            };
            let idx = self.free_area[o.index()].lists[f.index()].first()?;
            self.page_del_and_expand(t, idx, order, o, f);
            self.stats.fallbacks += 1;
            self.stats.steals += 1;
            self.log_extfrag(t, idx, order, o, start_mt, f);
            return Some(idx);
        }
        None
    }

    /// `__rmqueue`: own lists, then claim, then steal; `mode` remembers where the last call of a
    /// bulk refill succeeded (CMA is not modelled).
    pub(crate) fn rmqueue(
        &mut self,
        t: &FrameTable,
        order: Order,
        mt: MigrateType,
        flags: AllocFlags,
        mode: &mut RmqueueMode,
    ) -> Option<u32> {
        if self.cfg.fallback == FallbackRule::Legacy {
            return self.rmqueue_legacy(t, order, mt, flags);
        }
        if *mode == RmqueueMode::Normal {
            if let Some(idx) = self.rmqueue_smallest(t, order, mt) {
                return Some(idx);
            }
        }
        if *mode != RmqueueMode::Steal {
            if let Some(idx) = self.rmqueue_claim(t, order, mt, flags) {
                *mode = RmqueueMode::Normal;
                return Some(idx);
            }
        }
        if !flags.intersects(AllocFlags::NOFRAGMENT) {
            if let Some(idx) = self.rmqueue_steal(t, order, mt) {
                *mode = RmqueueMode::Steal;
                return Some(idx);
            }
        }
        None
    }
}
