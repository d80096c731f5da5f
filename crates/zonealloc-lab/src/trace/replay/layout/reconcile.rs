//! A kernel's layout brought to the snapshot's counts. `capture-kmem` reads the layout first
//! in `before/` (seconds of walking `/proc/kpageflags`, as far from the window as it can),
//! then pagetypeinfo, buddyinfo and, last, zoneinfo next to the window's start marker. A busy
//! zone's small blocks change in between (on the 7.2 4 GiB captures' Normal zone the layout
//! showed 195 free order-0 blocks where pagetypeinfo had 50, and 35 where it had 139), so the
//! start is brought to the later counts, keeping every block both agree on where the layout
//! has it:
//!
//! - [`ZoneLayout::trim`]: free blocks beyond pagetypeinfo's count of their order and type,
//!   the highest pfns first (which ones the kernel allocated the layout cannot say), are
//!   taken as in use without a flag (a refill may have put them on a per-CPU list);
//! - [`ZoneLayout::make_up`]: for a count the layout falls short of, pages in use of a
//!   pageblock of the type (flagless first, then any) become a free block of the order at
//!   the lowest pfn where it merges with nothing (its buddy is not a free block of its
//!   order; in a layout where every free run is split greedily, that is the only merge a
//!   new block can start); where the type's pageblocks have no such pages, a pageblock of
//!   another type is retyped for it, as a fallback would ([`super::retype`]).

use std::collections::{HashMap, HashSet};

use zonealloc::{LayoutBlock, MigrateType, Order, Pfn};

use super::canvas::{Page, ZoneLayout};

impl ZoneLayout {
    /// Free blocks beyond `want` (per migratetype index and order) taken as in use (module
    /// docs); counted in [`ZoneLayout::trimmed`].
    pub(super) fn trim(&mut self, want: &[Vec<u64>; 5]) {
        let mut have = self.free_by_type();
        let start = self.start;
        let pages = &mut self.pages;
        let mut trimmed = 0u64;
        let mut keep: Vec<bool> = vec![true; self.free.len()];
        for (k, b) in self.free.iter().enumerate().rev() {
            let (t, o) = (b.list.index(), b.order.index());
            let target = want[t].get(o).copied().unwrap_or(0);
            if have[t][o] > target {
                have[t][o] -= 1;
                keep[k] = false;
                trimmed += 1;
                let i = (b.pfn.0 - start) as usize;
                pages[i..i + (1usize << o)].fill(Page::Flagless);
            }
        }
        let mut k = 0;
        self.free.retain(|_| {
            k += 1;
            keep[k - 1]
        });
        self.trimmed = trimmed;
    }

    /// Free blocks up to `want` made from pages in use (module docs); counted in
    /// [`ZoneLayout::made_up`]. `named`: the pageblock numbers the trace names, which keep
    /// their type.
    pub(super) fn make_up(&mut self, want: &[Vec<u64>; 5], named: &HashSet<u64>) {
        let have = self.free_by_type();
        let mut heads: HashMap<u64, u8> =
            self.free.iter().map(|b| (b.pfn.0, b.order.get())).collect();
        for order in (0..=self.max_order).rev() {
            for mt in MigrateType::ALL {
                let (t, o) = (mt.index(), usize::from(order));
                let target = want[t].get(o).copied().unwrap_or(0);
                let mut lack = target.saturating_sub(have[t].get(o).copied().unwrap_or(0));
                for flagless_only in [true, false] {
                    let size = 1u64 << order;
                    let mut pfn = self.start.div_ceil(size) * size;
                    while lack > 0 && pfn + size <= self.end() {
                        if self.can_free(pfn, order, mt, flagless_only, &heads) {
                            self.add_made_up(pfn, order, mt, &mut heads);
                            lack -= 1;
                        }
                        pfn += size;
                    }
                }
                if lack > 0 {
                    self.make_by_retyping(mt, order, lack, named, &mut heads);
                }
            }
        }
        self.free.sort_by_key(|b| b.pfn);
    }

    /// Makes the pages at `pfn..pfn + 2^order` a free block on `mt`'s list, recorded in
    /// `heads` and counted in [`ZoneLayout::made_up`].
    pub(super) fn add_made_up(
        &mut self,
        pfn: u64,
        order: u8,
        mt: MigrateType,
        heads: &mut HashMap<u64, u8>,
    ) {
        let i = (pfn - self.start) as usize;
        self.pages[i..i + (1usize << order)].fill(Page::Free);
        heads.insert(pfn, order);
        self.free.push(LayoutBlock {
            pfn: Pfn(pfn),
            order: Order::new(order).unwrap_or(Order::ZERO),
            list: mt,
        });
        self.made_up += 1;
    }

    /// Whether the pages in use at `pfn..pfn + 2^order` may become a free block on `mt`'s
    /// list: all in pageblocks of `mt`, all in use (flagless only, if so asked), and the
    /// buddy not a free block of the order (`heads`: the free blocks' orders by pfn).
    fn can_free(
        &self,
        pfn: u64,
        order: u8,
        mt: MigrateType,
        flagless_only: bool,
        heads: &HashMap<u64, u8>,
    ) -> bool {
        let size = 1u64 << order;
        let step = (1u64 << self.pb_order).min(size);
        if !(pfn..pfn + size)
            .step_by(step as usize)
            .all(|p| self.type_of(p) == mt)
        {
            return false;
        }
        self.fits_in_use(pfn, order, flagless_only, heads)
    }
}
