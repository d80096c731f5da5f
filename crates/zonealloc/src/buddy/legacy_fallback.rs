//! 6.1's migratetype fallback ([`FallbackRule::Legacy`](crate::FallbackRule::Legacy)):
//! `__rmqueue_fallback` and `steal_suitable_fallback`, as Debian 6.1.192's `mm/page_alloc.c`
//! has them (the rule of every release before 6.15 split it into `__rmqueue_claim` and
//! `__rmqueue_steal`, `fallback.rs`).
//!
//! What differs from the claim/steal split (docs/kernel-versions.md §4.1):
//! - one search, largest block first, for every request; a movable request that may not take
//!   the whole pageblock searches again from the smallest block (`find_smallest`);
//! - below pageblock order, a request allowed to take the pageblock (`can_steal`) moves *all*
//!   the block's free pages to its own lists, and retypes the pageblock only when free and
//!   alike pages make half of it; otherwise the block stays of its old type while its free
//!   pages sit on the request's lists;
//! - a single steal moves the whole found block to the request's list, so its split remainders
//!   land on the request's lists too;
//! - the watermark is boosted for every fallback below pageblock order, single steals included;
//! - `__rmqueue` retries `__rmqueue_smallest` after a fallback (no `rmqueue_mode`), so a fallback
//!   logs `mm_page_alloc_extfrag` and then `mm_page_alloc_zone_locked`.

use super::fallback::FALLBACKS;
use super::BuddyZone;
use crate::meta::{FrameState, FrameTable};
use crate::request::AllocFlags;
use crate::types::{MigrateType, Order};

impl BuddyZone {
    /// 6.1's `__rmqueue`: own lists, then `__rmqueue_fallback` and own lists again (`goto
    /// retry`; CMA is not modelled).
    pub(super) fn rmqueue_legacy(
        &mut self,
        t: &FrameTable,
        order: Order,
        mt: MigrateType,
        flags: AllocFlags,
    ) -> Option<u32> {
        // Ends: a successful fallback leaves a block of at least `order` on `mt`'s lists, so
        // the retry finds one.
        loop {
            if let Some(idx) = self.rmqueue_smallest(t, order, mt) {
                return Some(idx);
            }
            if !self.rmqueue_fallback_legacy(t, order, mt, flags) {
                return None;
            }
        }
    }

    /// 6.1's `find_suitable_fallback(area, order, start_mt, only_stealable = false,
    /// &can_steal)`: the first non-empty fallback list at `order`, and `can_steal_fallback`
    /// (the same test as `should_try_claim_block`).
    fn find_fallback_legacy(
        &self,
        order: Order,
        start_mt: MigrateType,
    ) -> Option<(MigrateType, bool)> {
        let area = &self.free_area[order.index()];
        if area.nr_free == 0 {
            return None;
        }
        let f = *FALLBACKS
            .get(start_mt.index())?
            .iter()
            .find(|f| !area.lists[f.index()].is_empty())?;
        Some((f, self.should_try_claim_block(order, start_mt)))
    }

    /// `__rmqueue_fallback`: moves a block of another type (and maybe its pageblock's other
    /// free pages) to `start_mt`'s lists. Returns whether it found one.
    fn rmqueue_fallback_legacy(
        &mut self,
        t: &FrameTable,
        order: Order,
        start_mt: MigrateType,
        flags: AllocFlags,
    ) -> bool {
        let (pb, max) = (self.cfg.pageblock_order, self.cfg.max_order);
        // Under ALLOC_NOFRAGMENT, no orders below a pageblock.
        let min_order = if order < Order::from_raw(pb) && flags.intersects(AllocFlags::NOFRAGMENT) {
            pb
        } else {
            order.get()
        };
        // The largest block first: roughly the pageblock with the most free pages.
        let mut found = None;
        for cur in (min_order..=max).rev() {
            let Some((f, can_steal)) = self.find_fallback_legacy(Order::from_raw(cur), start_mt)
            else {
                continue;
            };
            found = if !can_steal && start_mt == MigrateType::Movable && cur > order.get() {
                // find_smallest: a movable request that cannot take the pageblock splits the
                // smallest block instead.
                order.through(Order::from_raw(max)).find_map(|o| {
                    self.find_fallback_legacy(o, start_mt)
                        .map(|(f, c)| (o, f, c))
                })
            } else {
                Some((Order::from_raw(cur), f, can_steal))
            };
            break;
        }
        let Some((cur, f, can_steal)) = found else {
            return false;
        };
        let Some(idx) = self.free_area[cur.index()].lists[f.index()].first() else {
            return false;
        };
        self.steal_suitable_fallback(t, idx, cur, start_mt, flags, can_steal);
        self.stats.fallbacks += 1;
        self.log_extfrag(t, idx, order, cur, start_mt, f);
        true
    }

    /// `steal_suitable_fallback`: the free block of `cur_order` at `idx` goes to `start_mt`'s
    /// list; with `whole_block`, every free page of its pageblock does, and the pageblock is
    /// retyped when at least half of it is free or alike.
    fn steal_suitable_fallback(
        &mut self,
        t: &FrameTable,
        idx: u32,
        cur_order: Order,
        start_mt: MigrateType,
        flags: AllocFlags,
        whole_block: bool,
    ) {
        let pb = self.cfg.pageblock_order;
        let old_block_mt = self.block_mt(t, idx);
        let mut claimed = false;
        'single_page: {
            // "This can happen due to races": a HighAtomic block on another type's list.
            if old_block_mt == MigrateType::HighAtomic {
                break 'single_page;
            }
            // Take ownership for orders >= pageblock_order.
            if cur_order >= Order::from_raw(pb) {
                self.change_pageblock_range(t, idx, cur_order, start_mt);
                claimed = true;
                break 'single_page;
            }
            if self.boost_watermark() && flags.intersects(AllocFlags::KSWAPD) {
                self.flags.boosted_watermark = true;
            }
            if !whole_block {
                break 'single_page;
            }
            let (free, movable) = self.move_freepages_block_counting(t, idx, start_mt);
            let alike = if start_mt == MigrateType::Movable {
                movable
            } else if old_block_mt == MigrateType::Movable {
                (1u64 << pb) - (free + movable)
            } else {
                0
            };
            // Moving the whole block can fail at a zone boundary.
            if free == 0 {
                break 'single_page;
            }
            if free + alike >= 1u64 << (pb - 1) || self.mobility_disabled {
                self.set_block_mt(t, idx, start_mt);
                self.stats.claims += 1;
            } else {
                self.stats.steals += 1;
            }
            return;
        }
        self.move_to_free_list(t, idx, cur_order, t.buddy_list(idx), start_mt);
        if claimed {
            self.stats.claims += 1;
        } else {
            self.stats.steals += 1;
        }
    }

    /// 6.1's `move_freepages_block(zone, page, new_mt, &num_movable)`: moves every free block
    /// of the pageblock holding `idx` to `new_mt`'s lists, from the block's first frame (or
    /// from `idx` when the zone does not span it) to its last, and returns the pages moved
    /// (0, moving nothing, when the zone does not span the last frame) and the movable pages
    /// counted on the way.
    ///
    /// Linux counts a page movable when `PageLRU || __PageMovable`; zonealloc has no LRU, so
    /// it counts the frames of blocks allocated as Movable (every frame of such a block, as
    /// `PageLRU` of a compound page's tail reads its head). Frames on per-CPU lists count as
    /// neither free nor movable, as in Linux.
    fn move_freepages_block_counting(
        &mut self,
        t: &FrameTable,
        idx: u32,
        new_mt: MigrateType,
    ) -> (u64, u64) {
        let block = self.block_start(idx);
        let end = block + (1u32 << self.cfg.pageblock_order);
        let spans = |pfn: u64| pfn >= self.span_start && pfn < self.span_end;
        let mut i = if spans(t.pfn_of(block).0) { block } else { idx };
        if !spans(t.pfn_of(end - 1).0) {
            return (0, 0);
        }
        let (mut moved, mut movable) = (0u64, 0u64);
        while i < end {
            match t.state(i) {
                FrameState::Buddy(o) => {
                    self.move_to_free_list(t, i, o, t.buddy_list(i), new_mt);
                    moved += o.pages();
                    i += o.pages() as u32;
                }
                FrameState::Allocated(o, mt) => {
                    let n = o.pages().min((end - i) as u64);
                    if mt == MigrateType::Movable {
                        movable += n;
                    }
                    i += n as u32;
                }
                _ => i += 1,
            }
        }
        (moved, movable)
    }
}
