//! A zone set up at a known page layout: the pageblock migratetypes, the pages in use and the
//! free blocks that a running kernel's snapshot shows, each at its own frames. Boot hands
//! memory over as free blocks in ascending order ([`Zone::add_free_range`]); a snapshot of a
//! machine that has run for a while is no boot, and these three put its state in place
//! directly, before any allocation:
//!
//! 1. [`Zone::set_pageblock_type`] for each pageblock (`set_pageblock_migratetype`), while
//!    none of its frames is managed;
//! 2. [`Zone::add_allocated_range`] for the pages in use, as allocated blocks;
//! 3. [`Zone::add_free_blocks`] for the free blocks, each on the free list the snapshot shows
//!    it on, merged with a free buddy as `__free_one_page` would (a layout that is a buddy
//!    allocator's own state has no two free buddies of one order, and nothing merges).
//!
//! Each is checked whole before anything changes: on error the zone is as it was.

use crate::buddy::FreePlacement;
use crate::error::RangeError;
use crate::meta::FrameState;
use crate::platform::Platform;
use crate::types::{MigrateType, Order, Pfn};

use super::Zone;

/// One free block of a layout: its first frame, its order and the migratetype of the free
/// list it is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutBlock {
    /// First frame, aligned to the order.
    pub pfn: Pfn,
    /// The block's order.
    pub order: Order,
    /// The free list: its pageblock's migratetype, unless the zone's rules let a free block
    /// sit on another type's list (6.1's, `FallbackRule::Legacy`).
    pub list: MigrateType,
}

impl<P: Platform> Zone<P> {
    /// `set_pageblock_migratetype` on the pageblock containing `pfn`, for a set-up: refused
    /// ([`RangeError::Overlap`]) once a frame of the pageblock is managed, since its free
    /// blocks would then sit on the old type's lists. A HighAtomic pageblock counts in
    /// `nr_reserved_highatomic`, as `reserve_highatomic_pageblock` counts it.
    pub fn set_pageblock_type(&self, pfn: Pfn, mt: MigrateType) -> Result<(), RangeError> {
        let idx = self.layout_index(pfn)?;
        let mut z = self.lock();
        let t = &self.table;
        let start = z.block_start(idx);
        let end = start
            .saturating_add(1u32 << self.config().pageblock_order)
            .min(t.len());
        if let Some(i) = t.first_present(start..end) {
            return Err(RangeError::Overlap { pfn: t.pfn_of(i) });
        }
        t.settle(start..end);
        let pb_pages = 1u64 << self.config().pageblock_order;
        if z.block_mt(t, start) == MigrateType::HighAtomic {
            z.nr_reserved_highatomic = z.nr_reserved_highatomic.saturating_sub(pb_pages);
        }
        if mt == MigrateType::HighAtomic {
            z.nr_reserved_highatomic += pb_pages;
        }
        z.set_block_mt(t, start, mt);
        Ok(())
    }

    /// Hands `start..end` to the allocator as allocated blocks of `order` (pages in use at a
    /// snapshot), each recording its pageblock's migratetype, and counts them as managed;
    /// watermarks and per-CPU sizes are recomputed as [`Zone::add_free_range`] does. `start`
    /// and `end` must be aligned to `order`. Freeing such a block later is an ordinary free.
    /// Returns the pages added.
    pub fn add_allocated_range(
        &self,
        start: Pfn,
        end: Pfn,
        order: Order,
    ) -> Result<u64, RangeError> {
        let added = self.add_allocated_unsized(start, end, order)?;
        self.setup_standalone_watermarks();
        self.debug_check("add_allocated_range");
        Ok(added)
    }

    /// [`Zone::add_allocated_range`] for each `(start, end, order)` of `ranges` in turn, with
    /// the watermarks and per-CPU sizes recomputed once, after the last (they follow from the
    /// managed pages alone): the zone one call a range leaves, without a recomputation a
    /// range (a snapshot's layout has thousands of runs in use and of per-CPU pages). Stops
    /// at the first range refused, the ranges before it added. Returns the pages added.
    pub fn add_allocated_ranges(&self, ranges: &[(Pfn, Pfn, Order)]) -> Result<u64, RangeError> {
        let (mut added, mut any) = (0, false);
        let mut failed = None;
        for &(start, end, order) in ranges {
            match self.add_allocated_unsized(start, end, order) {
                Ok(n) => (added, any) = (added + n, true),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        // As many recomputations as calls that added, none where none did.
        if any {
            self.setup_standalone_watermarks();
            self.debug_check("add_allocated_ranges");
        }
        failed.map_or(Ok(added), Err)
    }

    /// [`Zone::add_allocated_range`] but for the watermarks and per-CPU sizes.
    fn add_allocated_unsized(&self, start: Pfn, end: Pfn, order: Order) -> Result<u64, RangeError> {
        if start >= end {
            return Err(RangeError::Empty { start, end });
        }
        if order.get() > self.config().max_order {
            return Err(RangeError::Misaligned { pfn: start, order });
        }
        for p in [start, end] {
            if !p.is_aligned(order) {
                return Err(RangeError::Misaligned { pfn: p, order });
            }
        }
        let first = self.layout_index(start)?;
        let last = self.layout_index(Pfn(end.0 - 1))?;
        {
            let z = self.lock();
            let t = &self.table;
            if let Some(i) = t.first_present(first..last + 1) {
                return Err(RangeError::Overlap { pfn: t.pfn_of(i) });
            }
            t.settle(first..last + 1);
            t.set_states(first..last + 1, FrameState::Tail);
            let mut z = z;
            let step = 1u32 << order.get();
            let mut i = first;
            while i <= last {
                t.set_state(i, FrameState::Allocated(order, z.block_mt(t, i)));
                i += step;
            }
            z.managed_pages += end.0 - start.0;
        }
        Ok(end.0 - start.0)
    }

    /// Hands each block of `blocks` (in ascending frame order, none overlapping another) to
    /// the allocator as a free block on its list (`__free_one_page`, to the tail as boot
    /// places memory), counts it as managed, and recomputes watermarks and per-CPU sizes
    /// once. Refused, with nothing added, if a block is misaligned, above `max_order`, out of
    /// the zone, overlaps managed frames or the block before it, or names a list other than
    /// its pageblocks' type where the zone's rules keep lists and pageblocks together
    /// ([`RangeError::WrongList`]). Returns the pages added.
    pub fn add_free_blocks(&self, blocks: &[LayoutBlock]) -> Result<u64, RangeError> {
        let mut z = self.lock();
        let t = &self.table;
        let strict = !self.config().lists_may_differ_from_blocks();
        let pb = self.config().pageblock_order;
        let mut next = 0u64;
        let mut pages = 0u64;
        for b in blocks {
            let (pfn, order) = (b.pfn, b.order);
            if order.get() > self.config().max_order || !pfn.is_aligned(order) {
                return Err(RangeError::Misaligned { pfn, order });
            }
            if pfn.0 < next {
                return Err(RangeError::Overlap { pfn });
            }
            let size = 1u64 << order.get();
            let first = self.layout_index(pfn)?;
            let end = self.layout_index(Pfn(pfn.0 + size - 1))? + 1;
            if let Some(i) = t.first_present(first..end) {
                return Err(RangeError::Overlap { pfn: t.pfn_of(i) });
            }
            if strict {
                let mut i = first;
                while i < end {
                    let block = t.settled_block_type(i);
                    if block != b.list {
                        let (pfn, list) = (t.pfn_of(i), b.list);
                        return Err(RangeError::WrongList { pfn, list, block });
                    }
                    i = z.block_start(i) + (1u32 << pb);
                }
            }
            next = pfn.0 + size;
            pages += size;
        }
        for b in blocks {
            let first = t.index_of(b.pfn).unwrap_or(0);
            let end = first + (1u32 << b.order.get());
            t.settle(first..end);
            t.set_states(first..end, FrameState::Tail);
            z.managed_pages += 1u64 << b.order.get();
            z.free_one_page(t, first, b.order, b.list, FreePlacement::ToTail);
        }
        drop(z);
        self.setup_standalone_watermarks();
        self.debug_check("add_free_blocks");
        Ok(pages)
    }

    /// Makes the `1 << order` order-0 pages in use from `start` one allocated block of
    /// `order` (a compound page in use at a snapshot, whose pages the snapshot shows only as
    /// pages in use): freed later, it is one free of `order`, as the kernel's was. Refused
    /// with nothing changed ([`RangeError::Misaligned`], [`RangeError::OutOfZone`], or
    /// [`RangeError::Overlap`] naming the first frame that is not an order-0 page in use).
    pub fn join_allocated(&self, start: Pfn, order: Order) -> Result<(), RangeError> {
        if order.get() > self.config().max_order || !start.is_aligned(order) {
            return Err(RangeError::Misaligned { pfn: start, order });
        }
        let n = 1u32 << order.get();
        let first = self.layout_index(start)?;
        let last = self.layout_index(Pfn(start.0 + u64::from(n) - 1))?;
        if last - first != n - 1 {
            return Err(RangeError::OutOfZone { pfn: start });
        }
        let z = self.lock();
        let t = &self.table;
        if let Some(i) = (first..=last)
            .find(|&i| !matches!(t.state(i), FrameState::Allocated(o, _) if o == Order::ZERO))
        {
            return Err(RangeError::Overlap { pfn: t.pfn_of(i) });
        }
        t.set_states(first..last + 1, FrameState::Tail);
        t.set_state(first, FrameState::Allocated(order, z.block_mt(t, first)));
        drop(z);
        self.debug_check("join_allocated");
        Ok(())
    }

    /// The table index of `pfn`, a frame of the zone's span outside any carved-out table.
    fn layout_index(&self, pfn: Pfn) -> Result<u32, RangeError> {
        if !self.spans(pfn) {
            return Err(RangeError::OutOfZone { pfn });
        }
        if pfn.0 >= self.reserved.0 && pfn.0 < self.reserved.1 {
            return Err(RangeError::Overlap { pfn });
        }
        self.table
            .index_of(pfn)
            .ok_or(RangeError::OutOfZone { pfn })
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use crate::config::{FallbackRule, ZoneConfig};
    use crate::request::AllocRequest;
    use crate::types::{CpuId, ZoneType};
    use std::format;
    use std::vec;

    /// 64 frames from pfn 64, pageblocks of 8, blocks up to order 4, no per-CPU lists.
    fn zone(fallback: FallbackRule) -> Zone {
        let mut cfg = ZoneConfig {
            max_order: 4,
            pageblock_order: 3,
            fallback,
            ..ZoneConfig::without_watermarks()
        };
        cfg.pcp.enabled = false;
        Zone::new(ZoneType::Normal, Pfn(64), Pfn(128), cfg).unwrap()
    }

    fn block(pfn: u64, order: u8, list: MigrateType) -> LayoutBlock {
        LayoutBlock {
            pfn: Pfn(pfn),
            order: Order::new(order).unwrap(),
            list,
        }
    }

    #[test]
    fn a_layout_is_put_in_place_block_by_block_and_checks_clean() {
        let z = zone(FallbackRule::ClaimSteal);
        let (u, m) = (MigrateType::Unmovable, MigrateType::Movable);
        // Pageblock 64..72 Unmovable, the rest Movable (the boot type).
        z.set_pageblock_type(Pfn(64), u).unwrap();
        // In use: 65 (order 0), 72..80 (order 2 twice); free: 64 (0), 66..68 (1), 68..72 (2),
        // 80..96 (4), 96..128 (two order-4 blocks, which are not buddies: 96 ^ 16 = 112).
        z.add_allocated_range(Pfn(65), Pfn(66), Order::ZERO)
            .unwrap();
        z.add_allocated_range(Pfn(72), Pfn(80), Order::new(2).unwrap())
            .unwrap();
        let free = [
            block(64, 0, u),
            block(66, 1, u),
            block(68, 2, u),
            block(80, 4, m),
            block(96, 4, m),
            block(112, 4, m),
        ];
        assert_eq!(z.add_free_blocks(&free), Ok(1 + 2 + 4 + 48));
        z.check().unwrap();
        let s = z.snapshot(0);
        assert_eq!(&s.nr_free[..5], &[1, 1, 1, 0, 3]);
        assert_eq!(s.free_by_type[u.index()][..3], [1, 1, 1]);
        assert_eq!(z.managed_pages(), 64);
        assert_eq!(
            z.frame_state(Pfn(65)),
            Some(FrameState::Allocated(Order::ZERO, u))
        );
        // The pages in use free as allocated blocks, and merge with their free buddies: 64..72
        // is one order-3 block again, 72..80 with it one of order 4 (its buddy 64).
        z.free(Pfn(65), Order::ZERO).unwrap();
        z.free(Pfn(72), Order::new(2).unwrap()).unwrap();
        z.free(Pfn(76), Order::new(2).unwrap()).unwrap();
        z.check().unwrap();
        assert_eq!(&z.snapshot(0).nr_free[..5], &[0, 0, 0, 0, 4]);
        assert!(z
            .alloc_with(Order::ZERO, AllocRequest::new(m).on_cpu(CpuId(0)))
            .is_ok());
    }

    #[test]
    fn ranges_in_use_added_at_once_leave_the_zone_one_call_a_range_leaves() {
        // Watermarks and per-CPU lists on: the sizes follow the managed pages.
        let new = || Zone::new(ZoneType::Normal, Pfn(0), Pfn(4096), ZoneConfig::default()).unwrap();
        let looks = |z: &Zone| {
            let states: vec::Vec<_> = (0..4096).map(|p| z.frame_state(Pfn(p))).collect();
            format!(
                "{:?} {:?} {} {:?} {:?}",
                z.watermarks(),
                z.lowmem_reserve(),
                z.managed_pages(),
                z.pcp_info(CpuId(0)),
                states
            )
        };
        let o = |n| Order::new(n).unwrap();
        let ranges = [
            (Pfn(10), Pfn(20), o(0)),
            (Pfn(100), Pfn(300), o(0)),
            (Pfn(1000), Pfn(1001), o(0)),
            (Pfn(1024), Pfn(1032), o(3)),
        ];
        let (one, all) = (new(), new());
        for &(a, b, order) in &ranges {
            one.add_allocated_range(a, b, order).unwrap();
        }
        assert_eq!(all.add_allocated_ranges(&ranges), Ok(219));
        assert_eq!(looks(&one), looks(&all));
        assert_ne!(looks(&all), looks(&new()));
        // The sizes were recomputed (a zone of no managed page has none).
        let wm = |z: &Zone| format!("{:?} {:?}", z.watermarks(), z.pcp_info(CpuId(0)));
        assert_ne!(wm(&all), wm(&new()));
        // A range refused stops the rest; those before it stay, as one call a range.
        let more = [
            (Pfn(2000), Pfn(2100), o(0)),
            (Pfn(150), Pfn(160), o(0)),
            (Pfn(3000), Pfn(3001), o(0)),
        ];
        let e = one.add_allocated_range(more[0].0, more[0].1, more[0].2);
        assert_eq!(e, Ok(100));
        let e = one.add_allocated_range(more[1].0, more[1].1, more[1].2);
        assert_eq!(all.add_allocated_ranges(&more), e);
        assert!(e.is_err());
        assert_eq!(looks(&one), looks(&all));
        // None at all changes nothing.
        let none = new();
        assert_eq!(none.add_allocated_ranges(&[]), Ok(0));
        assert_eq!(looks(&none), looks(&new()));
    }

    #[test]
    fn a_bad_layout_is_refused_and_changes_nothing() {
        let z = zone(FallbackRule::ClaimSteal);
        let m = MigrateType::Movable;
        z.add_allocated_range(Pfn(64), Pfn(72), Order::ZERO)
            .unwrap();
        let cases = [
            (
                vec![block(65, 1, m)],
                RangeError::Misaligned {
                    pfn: Pfn(65),
                    order: Order::new(1).unwrap(),
                },
            ),
            (
                vec![block(72, 0, m), block(70, 0, m)],
                RangeError::Overlap { pfn: Pfn(70) },
            ),
            (
                vec![block(72, 0, m), block(64, 0, m)],
                RangeError::Overlap { pfn: Pfn(64) },
            ),
            (
                vec![block(128, 0, m)],
                RangeError::OutOfZone { pfn: Pfn(128) },
            ),
            (
                vec![block(72, 0, MigrateType::Unmovable)],
                RangeError::WrongList {
                    pfn: Pfn(72),
                    list: MigrateType::Unmovable,
                    block: m,
                },
            ),
        ];
        for (blocks, want) in cases {
            assert_eq!(z.add_free_blocks(&blocks), Err(want));
        }
        assert_eq!((z.free_pages(), z.managed_pages()), (0, 8));
        // A managed pageblock keeps its type; ranges must be aligned and new.
        assert_eq!(
            z.set_pageblock_type(Pfn(66), MigrateType::Unmovable),
            Err(RangeError::Overlap { pfn: Pfn(64) })
        );
        assert!(z
            .add_allocated_range(Pfn(70), Pfn(74), Order::ZERO)
            .is_err());
        assert!(z
            .add_allocated_range(Pfn(74), Pfn(78), Order::new(2).unwrap())
            .is_err());
        z.check().unwrap();
    }

    #[test]
    fn six_one_rules_let_a_free_block_sit_on_another_types_list() {
        let z = zone(FallbackRule::Legacy);
        z.add_allocated_range(Pfn(64), Pfn(72), Order::ZERO)
            .unwrap();
        let b = [block(72, 0, MigrateType::Unmovable)];
        assert_eq!(z.add_free_blocks(&b), Ok(1));
        z.check().unwrap();
        let s = z.snapshot(0);
        assert_eq!(s.free_by_type[MigrateType::Unmovable.index()][0], 1);
        assert_eq!(s.pageblocks_by_type[MigrateType::Movable.index()], 8);
    }

    #[test]
    fn pages_in_use_joined_into_one_block_free_as_one() {
        let z = zone(FallbackRule::ClaimSteal);
        z.add_allocated_range(Pfn(64), Pfn(72), Order::ZERO)
            .unwrap();
        let one = Order::new(1).unwrap();
        // Misaligned, or a frame that is not an order-0 page in use: nothing changes.
        assert_eq!(
            z.join_allocated(Pfn(65), one),
            Err(RangeError::Misaligned {
                pfn: Pfn(65),
                order: one
            })
        );
        assert_eq!(
            z.join_allocated(Pfn(72), one),
            Err(RangeError::Overlap { pfn: Pfn(72) })
        );
        z.join_allocated(Pfn(66), one).unwrap();
        assert_eq!(
            z.join_allocated(Pfn(64), Order::new(2).unwrap()),
            Err(RangeError::Overlap { pfn: Pfn(66) })
        );
        z.check().unwrap();
        // An order-0 free of the joined block's page is refused; the order-1 free is whole.
        assert!(z.free(Pfn(66), Order::ZERO).is_err());
        z.free(Pfn(66), one).unwrap();
        assert_eq!(z.free_pages(), 2);
        z.check().unwrap();
    }
}
