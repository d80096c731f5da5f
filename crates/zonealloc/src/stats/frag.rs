//! Fragmentation metrics of `mm/vmstat.c`: `fill_contig_page_info`, `unusable_free_index`,
//! `__fragmentation_index` (and its wrapper `fragmentation_index`) and `extfrag_for_order`.
//!
//! All of them read only `free_area[order].nr_free` (free blocks per order over every
//! migratetype), so per-CPU list pages are not counted, exactly as in the kernel.
//!
//! Arithmetic follows the kernel's `unsigned long` (64-bit) rules: sums, shifts and products wrap
//! instead of panicking, results are truncated to the C return type (`int` / `unsigned int`),
//! and every division floors. One deliberate difference: the kernel divides with `div_u64`,
//! whose divisor is a `u32`, so a divisor of 2^32 or more (`free_pages` or `free_blocks_total`)
//! is silently truncated there (and a divisor of exactly 2^32 would divide by zero). Here the
//! divisors are full `u64`; the two agree whenever the divisor fits in 32 bits, which is always
//! the case for a zonealloc zone below 2^32 frames.

use super::FreeAreaSnapshot;

/// The highest order whose counters a snapshot can hold: `max_order`, clamped to the length of
/// the per-order arrays so that a malformed `max_order` can never index out of bounds.
pub(super) fn last_order(s: &FreeAreaSnapshot) -> u8 {
    let slots_top = s.nr_free.len().saturating_sub(1);
    let top = u8::try_from(slots_top).unwrap_or(u8::MAX);
    s.max_order.min(top)
}

/// `value << shift` with C's `unsigned long` result for shifts below 64 (high bits dropped) and
/// 0 for larger shifts (undefined in C; only reachable with malformed orders).
pub(super) fn shl(value: u64, shift: u8) -> u64 {
    value.checked_shl(u32::from(shift)).unwrap_or(0)
}

/// Free-space summary of a zone for one target order (`struct contig_page_info`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct ContigPageInfo {
    /// Free base pages in the buddy lists: `Σ nr_free[o] << o`.
    pub free_pages: u64,
    /// Free blocks of every order: `Σ nr_free[o]`.
    pub free_blocks_total: u64,
    /// Free blocks large enough for the target order, counted in target-order units:
    /// `Σ_{o >= suitable_order} nr_free[o] << (o - suitable_order)`.
    pub free_blocks_suitable: u64,
}

impl ContigPageInfo {
    /// `fill_contig_page_info(zone, suitable_order, &info)`: sums `nr_free` over orders
    /// `0..=max_order`. A `suitable_order` above `max_order` yields no suitable blocks.
    #[must_use]
    pub fn new(s: &FreeAreaSnapshot, suitable_order: u8) -> Self {
        let mut info = ContigPageInfo::default();
        for order in 0..=last_order(s) {
            let blocks = s.nr_free[usize::from(order)];
            info.free_blocks_total = info.free_blocks_total.wrapping_add(blocks);
            info.free_pages = info.free_pages.wrapping_add(shl(blocks, order));
            if order >= suitable_order {
                info.free_blocks_suitable = info
                    .free_blocks_suitable
                    .wrapping_add(shl(blocks, order - suitable_order));
            }
        }
        info
    }

    /// The kernel's static `unusable_free_index(order, info)`, on an already-filled info.
    fn unusable_index(&self, order: u8) -> u32 {
        // No free memory is interpreted as all free memory being unusable.
        if self.free_pages == 0 {
            return 1000;
        }
        let unusable = self
            .free_pages
            .wrapping_sub(shl(self.free_blocks_suitable, order));
        // The kernel returns the u64 quotient as `int`: keep its low 32 bits.
        (unusable.wrapping_mul(1000) / self.free_pages) as u32
    }

    /// The kernel's `__fragmentation_index(order, info)`; `order <= last_order` is checked by the
    /// caller (the kernel's `WARN_ON_ONCE(order > MAX_PAGE_ORDER)` branch).
    fn fragmentation_index(&self, order: u8) -> i32 {
        if self.free_blocks_total == 0 {
            return 0;
        }
        // Fragmentation index only makes sense when a request would fail.
        if self.free_blocks_suitable != 0 {
            return -1000;
        }
        let requested = shl(1, order);
        if requested == 0 {
            return 0;
        }
        let scaled = self.free_pages.wrapping_mul(1000) / requested;
        let quotient = 1000u64.wrapping_add(scaled) / self.free_blocks_total;
        // C: `1000 - div_u64(...)` is computed in u64 (it wraps below zero) and then returned as
        // `int`, i.e. truncated to the low 32 bits. With one free block smaller than the request
        // the quotient exceeds 1000 and the index is negative (down to -500).
        1000u64.wrapping_sub(quotient) as i32
    }

    /// The body of the kernel's `extfrag_for_order`, on an already-filled info.
    fn extfrag_percent(&self, order: u8) -> u32 {
        if self.free_pages == 0 {
            return 0;
        }
        let unusable = self
            .free_pages
            .wrapping_sub(shl(self.free_blocks_suitable, order));
        (unusable.wrapping_mul(100) / self.free_pages) as u32
    }
}

/// Unusable free space index for an allocation of `order` (debugfs `extfrag/unusable_index`):
/// the share, in thousandths, of free memory that sits in blocks smaller than `order`.
///
/// `(free_pages - (free_blocks_suitable << order)) * 1000 / free_pages`, floored; 1000 when
/// the zone has no free pages. The result is in `0..=1000` for every snapshot whose page counts
/// do not overflow `u64`.
#[must_use]
pub fn unusable_free_index(s: &FreeAreaSnapshot, order: u8) -> u32 {
    ContigPageInfo::new(s, order).unusable_index(order)
}

/// Fragmentation index for an allocation of `order` (`fragmentation_index` /
/// `__fragmentation_index`, debugfs `extfrag/extfrag_index`, compared by compaction with
/// `vm.extfrag_threshold`).
///
/// - 0 when `order > max_order` or the zone has no free blocks;
/// - -1000 when a suitable free block exists (the allocation would succeed);
/// - otherwise `1000 - (1000 + free_pages * 1000 / 2^order) / free_blocks_total` with integer
///   division: near 0 means the request fails for lack of memory, near 1000 that it fails
///   because of fragmentation. As in the kernel, a zone whose only free block is smaller than
///   the request gives a negative value (e.g. one free order-0 page and order 1: -500).
#[must_use]
pub fn fragmentation_index(s: &FreeAreaSnapshot, order: u8) -> i32 {
    if order > last_order(s) {
        return 0;
    }
    ContigPageInfo::new(s, order).fragmentation_index(order)
}

/// External fragmentation for `order` as a percentage (`extfrag_for_order`, used by proactive
/// compaction): the share of free pages in blocks smaller than `order`, floored; 0 when the zone
/// has no free pages.
#[must_use]
pub fn extfrag_for_order(s: &FreeAreaSnapshot, order: u8) -> u32 {
    ContigPageInfo::new(s, order).extfrag_percent(order)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::types::{MIGRATE_TYPES, ORDER_SLOTS};

    /// A snapshot of zone Normal on node 0 with `nr_free` given for the low orders.
    fn snap(max_order: u8, nr_free: &[u64]) -> FreeAreaSnapshot {
        let mut counts = [0u64; ORDER_SLOTS];
        counts[..nr_free.len()].copy_from_slice(nr_free);
        FreeAreaSnapshot {
            node: 0,
            zone_name: "Normal",
            max_order,
            pageblock_order: max_order.min(9),
            nr_free: counts,
            free_by_type: [[0; ORDER_SLOTS]; MIGRATE_TYPES],
            pageblocks_by_type: [0; MIGRATE_TYPES],
        }
    }

    // Worked example, max_order 10, nr_free = [10, 5, 2, 1, 0, ...]:
    //   free_pages        = 10*1 + 5*2 + 2*4 + 1*8 = 36
    //   free_blocks_total = 10 + 5 + 2 + 1         = 18
    //   suitable(order 0) = 36, (1) = 5 + 2*2 + 1*4 = 13, (2) = 2 + 1*2 = 4, (3) = 1, (4+) = 0
    fn worked() -> FreeAreaSnapshot {
        snap(10, &[10, 5, 2, 1])
    }

    #[test]
    fn contig_page_info_sums_nr_free() {
        let s = worked();
        let expect = |suitable| ContigPageInfo {
            free_pages: 36,
            free_blocks_total: 18,
            free_blocks_suitable: suitable,
        };
        assert_eq!(ContigPageInfo::new(&s, 0), expect(36));
        assert_eq!(ContigPageInfo::new(&s, 1), expect(13));
        assert_eq!(ContigPageInfo::new(&s, 2), expect(4));
        assert_eq!(ContigPageInfo::new(&s, 3), expect(1));
        assert_eq!(ContigPageInfo::new(&s, 4), expect(0));
        // A suitable order beyond max_order counts nothing as suitable.
        assert_eq!(ContigPageInfo::new(&s, 200), expect(0));
    }

    #[test]
    fn contig_page_info_ignores_orders_above_max_order() {
        // nr_free[3] is outside max_order 2 and must not be summed.
        let s = snap(2, &[1, 1, 1, 100]);
        let info = ContigPageInfo::new(&s, 1);
        assert_eq!(info.free_pages, 1 + 2 + 4);
        assert_eq!(info.free_blocks_total, 3);
        assert_eq!(info.free_blocks_suitable, 1 + 2);
    }

    #[test]
    fn unusable_index_worked_example() {
        // (36 - (suitable << order)) * 1000 / 36, floored:
        //   order 0: (36 - 36) * 1000 / 36 = 0
        //   order 1: (36 - 26) * 1000 / 36 = 10000 / 36 = 277
        //   order 2: (36 - 16) * 1000 / 36 = 20000 / 36 = 555
        //   order 3: (36 -  8) * 1000 / 36 = 28000 / 36 = 777
        //   order 4: (36 -  0) * 1000 / 36 = 1000
        let s = worked();
        let got: std::vec::Vec<u32> = (0..=4).map(|o| unusable_free_index(&s, o)).collect();
        assert_eq!(got, [0, 277, 555, 777, 1000]);
        assert_eq!(unusable_free_index(&s, 10), 1000);
    }

    #[test]
    fn fragmentation_index_worked_example() {
        // Orders 0..=3 have a suitable block: -1000.
        // order 4: requested 16, A = 36000 / 16 = 2250, (1000 + 2250) / 18 = 180, 1000 - 180 = 820
        // order 5: requested 32, A = 36000 / 32 = 1125, (1000 + 1125) / 18 = 118 -> 882
        // order 10: requested 1024, A = 36000 / 1024 = 35, 1035 / 18 = 57 -> 943
        // order 11 > max_order 10 -> 0
        let s = worked();
        for o in 0..=3 {
            assert_eq!(fragmentation_index(&s, o), -1000, "order {o}");
        }
        assert_eq!(fragmentation_index(&s, 4), 820);
        assert_eq!(fragmentation_index(&s, 5), 882);
        assert_eq!(fragmentation_index(&s, 10), 943);
        assert_eq!(fragmentation_index(&s, 11), 0);
        assert_eq!(fragmentation_index(&s, 255), 0);
    }

    #[test]
    fn fragmentation_index_near_1000_when_all_memory_is_order_0() {
        // 1000 free order-0 pages, order 10: A = 1_000_000 / 1024 = 976,
        // (1000 + 976) / 1000 = 1, 1000 - 1 = 999.
        let s = snap(10, &[1000]);
        assert_eq!(fragmentation_index(&s, 10), 999);
    }

    #[test]
    fn fragmentation_index_goes_negative_like_the_kernel() {
        // One free order-0 page, T = 1, no suitable block.
        //   order 1: A = 1000 / 2 = 500, (1000 + 500) / 1 = 1500, 1000 - 1500 = -500
        //   order 3: A = 1000 / 8 = 125 -> -125
        //   order 7: A = 1000 / 128 = 7 -> -7
        //   order 10: A = 1000 / 1024 = 0 -> 0
        let s = snap(10, &[1]);
        assert_eq!(fragmentation_index(&s, 0), -1000);
        assert_eq!(fragmentation_index(&s, 1), -500);
        assert_eq!(fragmentation_index(&s, 3), -125);
        assert_eq!(fragmentation_index(&s, 7), -7);
        assert_eq!(fragmentation_index(&s, 10), 0);
        // Two free order-0 pages, order 1: A = 2000 / 2 = 1000, 2000 / 2 = 1000 -> 0.
        assert_eq!(fragmentation_index(&snap(10, &[2]), 1), 0);
    }

    #[test]
    fn extfrag_for_order_worked_example() {
        // (36 - (suitable << order)) * 100 / 36: order 0: 0, order 1: 1000 / 36 = 27,
        // order 2: 2000 / 36 = 55, order 3: 2800 / 36 = 77, order 4: 100.
        let s = worked();
        let got: std::vec::Vec<u32> = (0..=4).map(|o| extfrag_for_order(&s, o)).collect();
        assert_eq!(got, [0, 27, 55, 77, 100]);
    }

    #[test]
    fn empty_zone() {
        let s = snap(10, &[]);
        for o in 0..=10 {
            assert_eq!(unusable_free_index(&s, o), 1000);
            assert_eq!(fragmentation_index(&s, o), 0);
            assert_eq!(extfrag_for_order(&s, o), 0);
        }
        assert_eq!(ContigPageInfo::new(&s, 0), ContigPageInfo::default());
    }

    #[test]
    fn single_max_order_block_is_never_fragmented() {
        let s = snap(10, &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        for o in 0..=10 {
            assert_eq!(unusable_free_index(&s, o), 0, "order {o}");
            assert_eq!(fragmentation_index(&s, o), -1000, "order {o}");
            assert_eq!(extfrag_for_order(&s, o), 0, "order {o}");
        }
    }

    #[test]
    fn no_panic_on_extreme_snapshots() {
        let mut cases = std::vec![
            snap(20, &[u64::MAX; ORDER_SLOTS]),
            snap(255, &[u64::MAX; ORDER_SLOTS]),
            snap(0, &[]),
            snap(0, &[u64::MAX]),
            snap(20, &[]),
        ];
        let mut s = snap(20, &[]);
        s.nr_free[20] = u64::MAX / 3;
        cases.push(s);
        for s in &cases {
            for o in 0..=u8::MAX {
                let _ = ContigPageInfo::new(s, o);
                let _ = unusable_free_index(s, o);
                let _ = fragmentation_index(s, o);
                let _ = extfrag_for_order(s, o);
            }
        }
    }

    #[test]
    fn last_order_clamps_to_array_length() {
        assert_eq!(last_order(&snap(10, &[])), 10);
        assert_eq!(last_order(&snap(20, &[])), 20);
        assert_eq!(last_order(&snap(255, &[])), (ORDER_SLOTS - 1) as u8);
    }
}
