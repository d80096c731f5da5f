//! The HighAtomic reserve: pageblocks set aside for high-order atomic allocations
//! (`reserve_highatomic_pageblock`, `unreserve_highatomic_pageblock`).

use super::BuddyZone;
use crate::config::HighatomicCap;
use crate::meta::FrameTable;
use crate::types::{MigrateType, Order};

impl BuddyZone {
    /// `reserve_highatomic_pageblock`: after a successful `ALLOC_HIGHATOMIC` allocation of the
    /// block at `idx`, convert its pageblock to HighAtomic, up to about 1% of the zone.
    pub(crate) fn reserve_highatomic_pageblock(&mut self, t: &FrameTable, idx: u32, order: Order) {
        let order = order.get();
        let pb = self.cfg.pageblock_order;
        let pb_pages = 1u64 << pb;
        let max_managed = match self.cfg.highatomic_cap {
            HighatomicCap::Aligned => {
                if self.managed_pages / 100 < pb_pages {
                    return;
                }
                // ALIGN(managed / 100, pageblock_nr_pages)
                (self.managed_pages / 100).div_ceil(pb_pages) * pb_pages
            }
            // 6.1: `max_managed = (zone_managed_pages(zone) / 100) + pageblock_nr_pages;`
            HighatomicCap::PlusPageblock => self.managed_pages / 100 + pb_pages,
        };
        if self.nr_reserved_highatomic >= max_managed {
            return;
        }
        let mt = self.block_mt(t, idx);
        if !mt.is_mergeable() {
            return;
        }
        if order < pb {
            let start = self.block_start(idx);
            let start_pfn = t.pfn_of(start).0;
            if start_pfn < self.span_start || start_pfn + pb_pages > self.span_end {
                return;
            }
            self.move_freepages_block(t, start, MigrateType::HighAtomic);
            self.set_block_mt(t, start, MigrateType::HighAtomic);
            self.nr_reserved_highatomic += pb_pages;
        } else {
            self.change_pageblock_range(t, idx, Order::from_raw(order), MigrateType::HighAtomic);
            self.nr_reserved_highatomic += 1u64 << order;
        }
    }

    /// `unreserve_highatomic_pageblock` for one zone: give one HighAtomic pageblock back to
    /// `to_mt`. Without `force`, one pageblock of reserve is kept. Returns whether any free
    /// pages were moved.
    pub(crate) fn unreserve_highatomic_pageblock(
        &mut self,
        t: &FrameTable,
        to_mt: MigrateType,
        force: bool,
    ) -> bool {
        let pb = self.cfg.pageblock_order;
        let pb_pages = 1u64 << pb;
        if !force && self.nr_reserved_highatomic <= pb_pages {
            return false;
        }
        for order in 0..=self.cfg.max_order {
            let Some(idx) =
                self.free_area[order as usize].lists[MigrateType::HighAtomic.index()].first()
            else {
                continue;
            };
            let size = pb_pages.max(1u64 << order).min(self.nr_reserved_highatomic);
            self.nr_reserved_highatomic -= size;
            let moved = if order < pb {
                let start = self.block_start(idx);
                let start_pfn = t.pfn_of(start).0;
                if start_pfn < self.span_start || start_pfn + pb_pages > self.span_end {
                    continue;
                }
                let n = self.move_freepages_block(t, start, to_mt);
                self.set_block_mt(t, start, to_mt);
                n
            } else {
                self.move_to_free_list(
                    t,
                    idx,
                    Order::from_raw(order),
                    MigrateType::HighAtomic,
                    to_mt,
                );
                self.change_pageblock_range(t, idx, Order::from_raw(order), to_mt);
                1
            };
            if moved > 0 {
                return true;
            }
        }
        false
    }
}
