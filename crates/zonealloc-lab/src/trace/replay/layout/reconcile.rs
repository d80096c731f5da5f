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
//!   taken as in use without a flag (a refill may have put them on a per-CPU list). A block
//!   the window's first event of it takes off a free list ([`ZoneLayout::taken_hints`]) was
//!   free at the start: it goes only where every other block of its count has gone, the
//!   last taken first. 7.2-3g-16cpu-wq p_compact's Movable order-2 blocks were one over
//!   pagetypeinfo's count, every one of them taken in the window, and the highest, 0xbfe2c,
//!   trimmed, is the one CPU 6's refill took first at 122.953713 (ours took 0x24810, and
//!   from there 676 of 33311 allocations were the kernel's frames; compaction's free scanner
//!   then found our pages in use where the kernel's were free, 5638 pages short, and DMA32
//!   ended 20.3% off);
//! - [`ZoneLayout::make_up`]: for a count the layout falls short of, pages in use of a
//!   pageblock of the type (flagless first, then any) become a free block of the order at
//!   the lowest pfn where it merges with nothing (its buddy is not a free block of its
//!   order; in a layout where every free run is split greedily, that is the only merge a
//!   new block can start); where the type's pageblocks have no such pages, a pageblock of
//!   another type is retyped for it, as a fallback would ([`super::retype`]).
//!
//! pagetypeinfo is read before the window's start marker, and the events in between move its
//! counts: on 6.1-4g-loads p_fork, after its `cat` (81.322914) `dash-188` refills 63 pages of
//! five order-0 and 29 order-1 Unmovable blocks (81.344274) and `cat-306` seven order-3 ones
//! (81.427298). The roll takes those blocks off the canvas; matched to pagetypeinfo's counts
//! as read, 41 blocks were made up for them, free to the end. So the counts are first
//! brought to the start ([`ZoneLayout::counts_at_start`]): by what the roll's events after
//! the read did to the canvas's free blocks.

use std::collections::{HashMap, HashSet};

use zonealloc::{LayoutBlock, MigrateType, Order, Pfn};

use super::canvas::{Page, ZoneLayout};
use super::roll::Roll;

impl ZoneLayout {
    /// `want` (pagetypeinfo's free blocks per migratetype index and order) brought from its
    /// read to the window's start (module docs): plus the canvas's free blocks now, less
    /// those of the canvas `as_read` (the layout as read) with the roll as it stood at the
    /// read (`roll`'s [`Roll::at_counts`]) and the blocks the window first frees (`freed`,
    /// in use in both) applied. `want` itself where the read was not found.
    pub(super) fn counts_at_start(
        &mut self,
        want: &[Vec<u64>; 5],
        as_read: Option<Vec<Page>>,
        roll: Option<&Roll>,
        freed: &[(u64, u8)],
    ) -> [Vec<u64>; 5] {
        let (Some(pages), Some(at)) = (as_read, roll.and_then(|r| r.at_counts.as_deref())) else {
            return want.clone();
        };
        let now = self.free_by_type();
        let start = std::mem::replace(&mut self.pages, pages);
        self.apply_roll(at, freed);
        let then_blocks = self.blocks_of(self.free_of_canvas());
        self.pages = start;
        let mut then: [Vec<u64>; 5] = std::array::from_fn(|t| vec![0; want[t].len()]);
        for b in &then_blocks {
            if let Some(n) = then[b.list.index()].get_mut(b.order.index()) {
                *n += 1;
            }
        }
        let at_start: [Vec<u64>; 5] = std::array::from_fn(|t| {
            let now = |o: usize| now[t].get(o).copied().unwrap_or(0);
            (want[t].iter().enumerate())
                .map(|(o, &w)| (w + now(o)).saturating_sub(then[t][o]))
                .collect()
        });
        self.at_start = Some(at_start.clone());
        at_start
    }

    /// Free blocks beyond `want` (per migratetype index and order) taken as in use (module
    /// docs): the highest pfns first, then, where the count is still over, the blocks the
    /// window takes off a free list, the last taken first; counted in
    /// [`ZoneLayout::trimmed`].
    pub(super) fn trim(&mut self, want: &[Vec<u64>; 5]) {
        let mut have = self.free_by_type();
        let start = self.start;
        // Each taken pfn with its place in the window's takes, by pfn.
        let mut taken: Vec<(u64, usize)> = self
            .taken_hints
            .iter()
            .enumerate()
            .map(|(i, &p)| (p, i))
            .collect();
        taken.sort_unstable();
        // The window's first event of a page of the block takes it off its free list
        // (`__rmqueue_smallest`, `__rmqueue_fallback`): its place among the takes.
        let taken_at = |b: &LayoutBlock| {
            let i = taken.partition_point(|&(p, _)| p < b.pfn.0);
            let end = b.pfn.0 + b.order.pages();
            taken[i..]
                .iter()
                .take_while(|&&(p, _)| p < end)
                .map(|&(_, k)| k)
                .min()
        };
        // Untaken blocks, highest first, then taken ones, the last taken first.
        let mut order: Vec<(Option<usize>, usize)> = (0..self.free.len())
            .map(|k| (taken_at(&self.free[k]), k))
            .collect();
        order.sort_unstable_by_key(|&(at, k)| (at.is_some(), std::cmp::Reverse((at, k))));
        let pages = &mut self.pages;
        let mut trimmed = 0u64;
        let mut keep: Vec<bool> = vec![true; self.free.len()];
        for (_, k) in order {
            let b = &self.free[k];
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
