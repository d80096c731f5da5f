//! The buddy allocator of one zone: free areas, split (`expand`), merge (`__free_one_page`).
//!
//! Mirrors `mm/page_alloc.c`. [`BuddyZone`] is a plain struct: every method takes `&mut self`,
//! which only the zone-lock guard can hand out, so "caller holds `zone->lock`" (Linux's
//! `lockdep_assert_held`) is checked by the compiler. The per-frame metadata table is passed
//! alongside because it is shared with the per-CPU lists.
//!
//! # The buddy system
//! A free block of order `n` is `2^n` frames starting at a multiple of `2^n`. Its *buddy* is the
//! other half of the order-`n+1` block containing it: `pfn ^ (1 << n)`. Freeing a block merges it
//! with its buddy while the buddy is free and of the same order, climbing orders; allocating an
//! order-`n` block takes the smallest free block of order `>= n` and splits it, keeping the lower
//! half and returning the upper halves to the free lists (`expand`).
//!
//! # Invariants (checked by [`BuddyZone::check`], ids in messages)
//! - Z1: every managed frame is in exactly one place: inside one free block on one free list,
//!   or inside a block that is allocated (or, with PCP, on one per-CPU list).
//! - Z2: every free list is well formed (links agree both ways, no cycles) and every member is
//!   a `Buddy` head of the list's order.
//! - Z3: `nr_free[order]` equals the number of blocks on that order's lists.
//! - Z4: every free block is aligned to its order and lies inside the zone's managed frames.
//! - Z5: a free block is on the list it records, which is its pageblock's migratetype unless
//!   6.1's rules are on (`FallbackRule::Legacy`, `DrainMigratetype::AtFree`), under which a
//!   free block may sit on another type's list as it may in 6.1.
//! - Z6: no two free buddies of the same order are left unmerged where `__free_one_page` would
//!   have merged them.
//! - Z7: `NR_FREE_PAGES`, `nr_free_highatomic` and `NR_FREE_PAGES_BLOCKS` equal the sums over
//!   the free lists.
//! - Z8: the non-empty-list bits published for lock-free watermark checks match the lists.
//! - Z9: every frame of a pageblock carries the pageblock's migratetype (the free fast path
//!   reads it from the frame's own entry).

mod check;
mod fallback;
mod highatomic;
mod legacy_fallback;
mod vmstat;
mod watermark;

pub(crate) use vmstat::StatDrift;

pub use check::CheckFacts;
pub(crate) use fallback::RmqueueMode;
#[cfg(feature = "std")]
pub(crate) use watermark::setup_per_zone_wmarks;
pub use watermark::Watermarks;
// The machine-wide setup (`numa`) needs these without `std` too.
pub(crate) use watermark::{
    calculate_min_free_kbytes, khugepaged_min_free_kbytes, setup_per_zone_wmarks_into,
};
pub(crate) use watermark::{setup_node_watermarks, setup_per_zone_lowmem_reserve, ZoneSize};

use crate::config::{DrainMigratetype, ZoneConfig};
use crate::list::FrameList;
use crate::meta::{FrameState, FrameTable};
use crate::shared::{ZoneShared, NONEMPTY_WORDS};
use crate::stats::{HoldTimes, ZoneStats};
use crate::sync::Ordering;
use crate::tracepoint::{EventLog, ZoneEvent};
use crate::types::{
    pcp_allowed_order, MigrateType, Order, Pfn, MAX_NR_ZONES, MIGRATE_TYPES, ORDER_SLOTS,
};

/// `free_area[order]`: one list per migratetype and the block count over all of them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FreeArea {
    pub(crate) lists: [FrameList; MIGRATE_TYPES],
    /// Blocks on all lists of this order (Linux counts Isolate blocks too).
    pub(crate) nr_free: u64,
}

/// `fpi_t` flags of the free path that the buddy honours.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum FreePlacement {
    /// `FPI_NONE`: head, or tail when `buddy_merge_likely` says so (seed 003 knob).
    Normal,
    /// `FPI_TO_TAIL`: always the tail (boot and hotplug memory).
    ToTail,
}

/// Zone flags that only change under the zone lock (the others live in `ZoneShared`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ZoneFlags {
    /// `ZONE_BOOSTED_WATERMARK`.
    pub(crate) boosted_watermark: bool,
}

/// The buddy allocator state of one zone; everything `zone->lock` protects.
#[derive(Debug)]
pub(crate) struct BuddyZone {
    pub(crate) cfg: ZoneConfig,
    /// Zone span `[start, end)` in frames (`zone_start_pfn`, `zone_end_pfn`).
    pub(crate) span_start: u64,
    pub(crate) span_end: u64,
    pub(crate) free_area: [FreeArea; ORDER_SLOTS],
    /// `NR_FREE_PAGES`: free pages in the buddy (not on PCP lists), Isolate excluded.
    pub(crate) nr_free_pages: u64,
    /// `NR_FREE_PAGES_BLOCKS`: free pages in blocks of at least pageblock order.
    pub(crate) nr_free_pages_blocks: u64,
    /// `zone->nr_free_highatomic`.
    pub(crate) nr_free_highatomic: u64,
    /// `zone->nr_reserved_highatomic`.
    pub(crate) nr_reserved_highatomic: u64,
    /// `managed_pages`: frames handed to the allocator.
    pub(crate) managed_pages: u64,
    /// `present_pages` as set by the memory map (RAM in the span, reserved or not); 0 when
    /// never set, and reported as at least `managed_pages`.
    pub(crate) present_pages: u64,
    /// `vm.percpu_pagelist_high_fraction` now (the sysctl can change it after boot).
    pub(crate) high_fraction: u32,
    pub(crate) wmark: Watermarks,
    /// `lowmem_reserve[]`: pages kept back from requests whose highest allowed zone is higher.
    pub(crate) lowmem_reserve: [u64; MAX_NR_ZONES],
    pub(crate) flags: ZoneFlags,
    /// `page_group_by_mobility_disabled`.
    pub(crate) mobility_disabled: bool,
    pub(crate) stats: ZoneStats,
    /// Zone-lock hold times of PCP refills and bulk frees (recorded when instrumented).
    pub(crate) hold: HoldTimes,
    /// The buddy-side tracepoints, while recording is on.
    pub(crate) events: EventLog,
    /// Which free lists are non-empty: byte `order` of the packed words, bit = migratetype.
    nonempty: [u64; NONEMPTY_WORDS],
    /// Words of `nonempty` changed since the last publish.
    nonempty_dirty: u8,
    /// Watermarks or reserves changed since the last publish.
    pub(crate) marks_dirty: bool,
    /// `NR_FREE_PAGES` as `zone_page_state` reads it, when the embedder models the lag.
    pub(crate) vmstat: StatDrift,
}

impl BuddyZone {
    pub(crate) fn new(cfg: ZoneConfig, span_start: u64, span_end: u64) -> Self {
        BuddyZone {
            cfg,
            span_start,
            span_end,
            free_area: [FreeArea::default(); ORDER_SLOTS],
            nr_free_pages: 0,
            nr_free_pages_blocks: 0,
            nr_free_highatomic: 0,
            nr_reserved_highatomic: 0,
            managed_pages: 0,
            present_pages: 0,
            high_fraction: cfg.pcp.high_fraction,
            wmark: Watermarks::default(),
            lowmem_reserve: [0; MAX_NR_ZONES],
            flags: ZoneFlags::default(),
            mobility_disabled: false,
            stats: ZoneStats::default(),
            hold: HoldTimes::default(),
            events: EventLog::default(),
            nonempty: [0; NONEMPTY_WORDS],
            nonempty_dirty: 0,
            marks_dirty: true,
            vmstat: StatDrift::OFF,
        }
    }

    /// Whether the published bit for (order, mt) says non-empty (for `check`).
    pub(crate) fn nonempty_bit(&self, order: Order, mt: MigrateType) -> bool {
        let bit = 1u64 << ((order.index() % 8) * 8 + mt.index());
        self.nonempty[order.index() / 8] & bit != 0
    }

    /// Sets a non-empty bit without touching the lists: only for tests of `check`.
    #[cfg(test)]
    pub(crate) fn note_nonempty_for_test(&mut self, order: Order, mt: MigrateType) {
        self.note_nonempty(order, mt, true);
    }

    #[inline]
    fn note_nonempty(&mut self, order: Order, mt: MigrateType, nonempty: bool) {
        let bit = 1u64 << ((order.index() % 8) * 8 + mt.index());
        let word = order.index() / 8;
        let w = &mut self.nonempty[word];
        let old = *w;
        if nonempty {
            *w |= bit;
        } else {
            *w &= !bit;
        }
        if *w != old {
            self.nonempty_dirty |= 1 << word;
        }
    }

    /// Copies what lock-free readers need into `shared` (called as the zone lock is released).
    #[inline]
    pub(crate) fn publish(&mut self, shared: &ZoneShared) {
        let r = Ordering::Relaxed;
        // What `zone_page_state(NR_FREE_PAGES)` reads: the exact count unless the lag of
        // the per-CPU diffs is modelled.
        let free = if self.vmstat.on {
            self.vmstat.read()
        } else {
            self.nr_free_pages
        };
        shared.nr_free_pages.store(free, r);
        // What __zone_watermark_unusable_free holds back: the free HighAtomic pages (6.12+)
        // or, in 6.1, the whole reserve (`z->nr_reserved_highatomic`).
        let unusable_ha = match self.cfg.highatomic_unusable {
            crate::config::HighatomicUnusable::Free => self.nr_free_highatomic,
            crate::config::HighatomicUnusable::Reserved => self.nr_reserved_highatomic,
        };
        shared.nr_free_highatomic.store(unusable_ha, r);
        let free = free as i64;
        let usable = free - free.min(unusable_ha as i64);
        let headroom = usable - self.wmark.mark(2) as i64;
        shared.order0_high_headroom.store(headroom as u64, r);
        if self.nonempty_dirty != 0 {
            for (w, (d, s)) in shared.nonempty.iter().zip(self.nonempty).enumerate() {
                if self.nonempty_dirty & (1 << w) != 0 {
                    d.store(s, r);
                }
            }
            self.nonempty_dirty = 0;
        }
        if let Some(pending) = self.events.publish() {
            shared.events_pending.store(pending, r);
        }
        if self.marks_dirty {
            self.marks_dirty = false;
            for i in 0..3 {
                shared.marks[i].store(self.wmark.mark(i), r);
            }
            shared.min_unboosted.store(self.wmark.min, r);
            shared.boost.store(self.wmark.boost, r);
            for (d, s) in shared.lowmem_reserve.iter().zip(self.lowmem_reserve) {
                d.store(s, r);
            }
        }
    }

    #[inline]
    pub(crate) fn max_order(&self) -> Order {
        Order::from_raw(self.cfg.max_order)
    }

    /// Index of the first frame of the pageblock containing `idx` (the table base is
    /// pageblock-aligned, so index arithmetic equals pfn arithmetic).
    #[inline]
    pub(crate) fn block_start(&self, idx: u32) -> u32 {
        idx & !((1u32 << self.cfg.pageblock_order) - 1)
    }

    /// `get_pfnblock_migratetype`.
    #[inline]
    pub(crate) fn block_mt(&self, t: &FrameTable, idx: u32) -> MigrateType {
        t.block_type(self.block_start(idx))
    }

    /// `set_pageblock_migratetype`.
    #[inline]
    pub(crate) fn set_block_mt(&self, t: &FrameTable, idx: u32, mt: MigrateType) {
        t.set_block_type(self.block_start(idx), mt);
    }

    /// `change_pageblock_range`: retype every pageblock of a block of order `order`
    /// (`order >= pageblock_order`).
    pub(crate) fn change_pageblock_range(
        &self,
        t: &FrameTable,
        idx: u32,
        order: Order,
        mt: MigrateType,
    ) {
        let pb = self.cfg.pageblock_order;
        let n = 1u32 << (order.get() - pb);
        for i in 0..n {
            t.set_block_type(idx + (i << pb), mt);
        }
    }

    /// `account_freepages`.
    #[inline]
    pub(crate) fn account_freepages(&mut self, nr: i64, mt: MigrateType) {
        if mt == MigrateType::Isolate {
            return;
        }
        self.nr_free_pages = self.nr_free_pages.wrapping_add_signed(nr);
        if self.vmstat.on {
            self.vmstat.add(nr);
        }
        if mt == MigrateType::HighAtomic {
            self.nr_free_highatomic = self.nr_free_highatomic.wrapping_add_signed(nr);
        }
    }

    /// `__add_to_free_list` plus `set_buddy_order`.
    #[inline(always)]
    pub(crate) fn add_to_free_list(
        &mut self,
        t: &FrameTable,
        idx: u32,
        order: Order,
        mt: MigrateType,
        tail: bool,
    ) {
        let area = &mut self.free_area[order.index()];
        let list = &mut area.lists[mt.index()];
        if tail {
            list.push_tail(t, idx);
        } else {
            list.push_head(t, idx);
        }
        area.nr_free += 1;
        self.note_nonempty(order, mt, true);
        t.set_buddy(idx, order, mt);
        if order >= Order::from_raw(self.cfg.pageblock_order) && mt != MigrateType::Isolate {
            self.nr_free_pages_blocks += 1u64 << order.get();
        }
    }

    /// `__del_page_from_free_list`: unlink a free block head and clear its `Buddy` state.
    #[inline]
    pub(crate) fn del_from_free_list(
        &mut self,
        t: &FrameTable,
        idx: u32,
        order: Order,
        mt: MigrateType,
    ) {
        let area = &mut self.free_area[order.index()];
        area.lists[mt.index()].unlink(t, idx);
        area.nr_free -= 1;
        let empty = area.lists[mt.index()].is_empty();
        if empty {
            self.note_nonempty(order, mt, false);
        }
        t.set_state(idx, FrameState::Tail);
        if order >= Order::from_raw(self.cfg.pageblock_order) && mt != MigrateType::Isolate {
            self.nr_free_pages_blocks -= 1u64 << order.get();
        }
    }

    /// `move_to_free_list`: move a free block to the tail of another migratetype's list.
    pub(crate) fn move_to_free_list(
        &mut self,
        t: &FrameTable,
        idx: u32,
        order: Order,
        old_mt: MigrateType,
        new_mt: MigrateType,
    ) {
        let area = &mut self.free_area[order.index()];
        area.lists[old_mt.index()].unlink(t, idx);
        area.lists[new_mt.index()].push_tail(t, idx);
        t.set_buddy(idx, order, new_mt);
        let old_empty = area.lists[old_mt.index()].is_empty();
        self.note_nonempty(order, new_mt, true);
        if old_empty {
            self.note_nonempty(order, old_mt, false);
        }
        let nr = 1i64 << order.get();
        self.account_freepages(-nr, old_mt);
        self.account_freepages(nr, new_mt);
        let pb = self.cfg.pageblock_order;
        if order >= Order::from_raw(pb)
            && (old_mt == MigrateType::Isolate) != (new_mt == MigrateType::Isolate)
        {
            if old_mt == MigrateType::Isolate {
                self.nr_free_pages_blocks += nr as u64;
            } else {
                self.nr_free_pages_blocks -= nr as u64;
            }
        }
    }

    /// `expand`: split a block of order `high` at `idx` down to order `low`, putting each upper
    /// half at the head of its order's list. Returns the pages put back.
    #[inline]
    pub(crate) fn expand(
        &mut self,
        t: &FrameTable,
        idx: u32,
        low: Order,
        mut high: Order,
        mt: MigrateType,
    ) -> u64 {
        let mut size = 1u32 << high.get();
        let mut added = 0u64;
        while high > low {
            high = Order::from_raw(high.get() - 1);
            size >>= 1;
            self.add_to_free_list(t, idx + size, high, mt, false);
            added += size as u64;
            self.stats.splits += 1;
        }
        added
    }

    /// `page_del_and_expand`.
    #[inline]
    pub(crate) fn page_del_and_expand(
        &mut self,
        t: &FrameTable,
        idx: u32,
        low: Order,
        high: Order,
        mt: MigrateType,
    ) {
        self.del_from_free_list(t, idx, high, mt);
        let nr = (1u64 << high.get()) - self.expand(t, idx, low, high, mt);
        self.account_freepages(-(nr as i64), mt);
    }

    /// `__rmqueue_smallest`: the head of the smallest non-empty list of `mt` at `order` or
    /// above, split down to `order`.
    #[inline]
    pub(crate) fn rmqueue_smallest(
        &mut self,
        t: &FrameTable,
        order: Order,
        mt: MigrateType,
    ) -> Option<u32> {
        for cur in order.through(Order::from_raw(self.cfg.max_order)) {
            if let Some(idx) = self.free_area[cur.index()].lists[mt.index()].first() {
                self.page_del_and_expand(t, idx, order, cur, mt);
                let percpu_refill =
                    pcp_allowed_order(order, self.cfg.pcp.thp_order) && mt.is_gfp_type();
                self.events.log(|| ZoneEvent::AllocZoneLocked {
                    pfn: t.pfn_of(idx),
                    order,
                    migratetype: mt,
                    percpu_refill,
                });
                return Some(idx);
            }
        }
        None
    }

    /// `find_buddy_page_pfn`: the buddy of the order-`order` block at `idx` if it is a free
    /// block of the same order in this zone; always returns the buddy's index (which may lie
    /// outside the table, hence `i64`).
    #[inline]
    pub(crate) fn find_buddy(&self, t: &FrameTable, idx: u32, order: Order) -> (Option<u32>, u64) {
        let pfn = t.pfn_of(idx).0;
        let buddy_pfn = pfn ^ (1u64 << order.get());
        let found = t.index_of(Pfn(buddy_pfn)).filter(|&b| t.is_buddy(b, order));
        (found, buddy_pfn)
    }

    /// `buddy_merge_likely` (seed 003): is the order-`order+1` block containing us about to
    /// merge one level up, because *its* buddy is free?
    #[inline]
    fn buddy_merge_likely(&self, t: &FrameTable, pfn: u64, buddy_pfn: u64, order: Order) -> bool {
        if order.get() + 1 >= self.cfg.max_order {
            return false;
        }
        let higher_pfn = buddy_pfn & pfn;
        match t.index_of(Pfn(higher_pfn)) {
            Some(hi) => self
                .find_buddy(t, hi, Order::from_raw(order.get() + 1))
                .0
                .is_some(),
            None => false,
        }
    }

    /// `__free_one_page`: give the block of order `order` at `idx` back to the free lists of
    /// `mt`, merging with free buddies as far as possible.
    pub(crate) fn free_one_page(
        &mut self,
        t: &FrameTable,
        mut idx: u32,
        order: Order,
        mt: MigrateType,
        placement: FreePlacement,
    ) {
        let mut order = order.get();
        self.account_freepages(1i64 << order, mt);
        let mut pfn = t.pfn_of(idx).0;
        let mut buddy_pfn = 0u64;
        let pb = self.cfg.pageblock_order;
        while order < self.cfg.max_order {
            let (buddy, bpfn) = self.find_buddy(t, idx, Order::from_raw(order));
            buddy_pfn = bpfn;
            let Some(buddy) = buddy else { break };
            let mut buddy_mt = mt;
            if order >= pb {
                // Never merge a HighAtomic/Isolate block with a block of another type.
                buddy_mt = self.block_mt(t, buddy);
                if mt != buddy_mt && (!mt.is_mergeable() || !buddy_mt.is_mergeable()) {
                    break;
                }
            }
            // Unlink from the list the buddy is on: its pageblock's type, or under 6.1's
            // rules possibly another (`del_page_from_free_list` needs no type).
            let list_mt = t.buddy_list(buddy);
            self.del_from_free_list(t, buddy, Order::from_raw(order), list_mt);
            if list_mt != mt {
                let nr = 1i64 << order;
                self.account_freepages(-nr, list_mt);
                self.account_freepages(nr, mt);
            }
            // 6.1's `__free_one_page` leaves the buddy's pageblock type alone; the retype
            // came (6.10, "fix up block types when merging compatible blocks") in the series
            // that also dropped the type cached at free, so it follows that knob.
            if buddy_mt != mt && self.cfg.pcp.drain_migratetype == DrainMigratetype::AtDrain {
                // Match the buddy's type so expand() later files the halves correctly.
                self.change_pageblock_range(t, buddy, Order::from_raw(order), mt);
            }
            let combined = buddy_pfn & pfn;
            // The higher half stops being a head.
            t.set_state(idx, FrameState::Tail);
            idx = t.index_of(Pfn(combined)).unwrap_or(idx);
            pfn = combined;
            order += 1;
            self.stats.merges += 1;
        }
        let to_tail = match placement {
            FreePlacement::ToTail => true,
            FreePlacement::Normal => {
                self.cfg.tail_merge
                    && self.buddy_merge_likely(t, pfn, buddy_pfn, Order::from_raw(order))
            }
        };
        if to_tail && placement == FreePlacement::Normal {
            self.stats.tail_placements += 1;
        }
        self.add_to_free_list(t, idx, Order::from_raw(order), mt, to_tail);
    }

    /// `split_large_buddy`: free a block above pageblock order one pageblock at a time, each
    /// with its own pageblock's migratetype.
    pub(crate) fn split_large_buddy(
        &mut self,
        t: &FrameTable,
        idx: u32,
        order: Order,
        placement: FreePlacement,
    ) {
        let o = order.min(Order::from_raw(self.cfg.pageblock_order));
        let end = idx + (1u32 << order.get());
        let mut i = idx;
        while i < end {
            let mt = self.block_mt(t, i);
            self.free_one_page(t, i, o, mt, placement);
            i += 1u32 << o.get();
        }
    }
}
