//! A layout synthesised from the snapshot's counts, where the kernel's is not known: the free
//! blocks per order and migratetype exactly as pagetypeinfo has them, and the pageblocks per
//! migratetype as it counts them.
//!
//! - Pageblocks: the non-Movable types first, from the span's start, in the kernel's enum
//!   order (Unmovable, Reclaimable, HighAtomic, Isolate), as many as pagetypeinfo counts
//!   (capped at the span's pageblocks); the rest Movable. Boot makes every pageblock Movable
//!   (`memmap_init_range`) and fallbacks claim others from the lowest free memory, so the
//!   low end is where a kernel's other types gather too.
//! - Free blocks: highest order first, each at the lowest pfn where it fits in pageblocks of
//!   its type, only on pfns not taken yet, and only where its buddy (the other half of the
//!   block one order up) is not free as a whole: if the buddy has no page taken, its last
//!   page becomes a page in use. Then no placed block has a free buddy of its order, so
//!   `__free_one_page` merges nothing and the zone holds exactly these blocks.
//! - Holes (`spanned - present`): the highest pfns left (a 4 GiB machine's PCI hole ends
//!   DMA32; the free blocks gather at the low end).
//! - Everything else is in use, without a flag, so that the per-CPU lists may be chosen
//!   among it; then the reserved pages (`present - managed`) are the lowest pfns left
//!   ([`ZoneLayout::place_absent`]). Placed before the lists' pick, they would take pages
//!   the lists need.

use zonealloc::{LayoutBlock, MigrateType, Order, Pfn};

use super::canvas::{Page, Targets, ZoneLayout};
use crate::procfs::ZoneSnapshot;

/// The types placed from the span's start, in this order; Movable takes the rest.
const LOW_TYPES: [MigrateType; 4] = [
    MigrateType::Unmovable,
    MigrateType::Reclaimable,
    MigrateType::HighAtomic,
    MigrateType::Isolate,
];

/// Pageblocks per migratetype index: pagetypeinfo's, except where a type's free blocks, the
/// buddies that keep them apart (one page each at most) and its per-CPU pages `pcp` need
/// more; the pageblocks it lacks come from the type with the most to spare. 6.1 keeps a page
/// on the per-CPU list its pageblock had when it was freed, and a free block on another
/// type's list after a fallback, so a 6.1 snapshot can show more Movable pages free or on
/// the lists than its Movable pageblocks hold (6.1 p1: 826 Movable pageblocks, 421,256
/// Movable pages free and 2,306 on Movable lists, 2 pageblocks more than 826 hold); the
/// replay's lists take a page's type from its pageblock, so those pageblocks are made
/// Movable.
pub fn room(targets: &Targets, pcp: [u64; 5], pb_order: u8, max_order: u8) -> [u64; 5] {
    let (free, kblocks) = targets;
    let mut blocks = *kblocks;
    let need: [u64; 5] = std::array::from_fn(|t| {
        let pages: u64 = free[t]
            .iter()
            .enumerate()
            .map(|(o, &n)| (n << o) + if o < usize::from(max_order) { n } else { 0 })
            .sum::<u64>()
            + pcp[t];
        pages.div_ceil(1 << pb_order)
    });
    for t in 0..5 {
        while blocks[t] < need[t] {
            let spare = (0..5)
                .filter(|&s| s != t && blocks[s] > need[s])
                .max_by_key(|&s| blocks[s] - need[s]);
            let Some(s) = spare else { break };
            let n = (need[t] - blocks[t]).min(blocks[s] - need[s]);
            blocks[s] -= n;
            blocks[t] += n;
        }
    }
    blocks
}

impl ZoneLayout {
    /// The layout of module docs for zone `z` with the counts `targets`, and room for
    /// `pcp[t]` pages of per-CPU lists of each migratetype index `t` in pageblocks of that
    /// type (`room`).
    pub fn synthesise(
        z: &ZoneSnapshot,
        targets: &Targets,
        pcp: [u64; 5],
        pb_order: u8,
        max_order: u8,
    ) -> ZoneLayout {
        let mut l = ZoneLayout::empty(z, pb_order, max_order, true);
        let free = &targets.0;
        let kblocks = room(targets, pcp, pb_order, max_order);
        let mut next = 0usize;
        for mt in LOW_TYPES {
            let n = (kblocks[mt.index()] as usize).min(l.blocks.len() - next);
            l.blocks[next..next + n].fill(mt);
            next += n;
        }
        for order in (0..=max_order).rev() {
            for mt in MigrateType::ALL {
                let want = free[mt.index()].get(usize::from(order)).copied();
                let want = want.unwrap_or(0);
                let mut cursor = l.start;
                for k in 0..want {
                    match l.place(mt, order, cursor) {
                        Some(pfn) => cursor = pfn + (1u64 << order),
                        None => {
                            l.unplaced += want - k;
                            break;
                        }
                    }
                }
            }
        }
        l.free.sort_by_key(|b| b.pfn);
        // The rest in use; `spanned - managed` of them are not managed, placed once the
        // per-CPU lists have had their pick ([`ZoneLayout::place_absent`]).
        let mut holes = z.spanned_pages.saturating_sub(z.present_pages);
        for p in l.pages.iter_mut().rev().filter(|p| **p == Page::Open) {
            *p = if holes > 0 {
                holes -= 1;
                Page::Hole
            } else {
                Page::Flagless
            };
        }
        l.absent = z.present_pages.saturating_sub(z.managed_pages);
        l
    }

    /// Places a free block of `order` on `mt`'s list at the lowest pfn from `from` on where
    /// module docs allow it; its pfn, or `None` where there is none.
    fn place(&mut self, mt: MigrateType, order: u8, from: u64) -> Option<u64> {
        let size = 1u64 << order;
        let mut pfn = from.div_ceil(size) * size;
        let pb = 1u64 << self.pb_order;
        while pfn + size <= self.end() {
            if self.type_of(pfn) != mt {
                // The next pageblock, aligned to the block.
                pfn = ((pfn / pb + 1) * pb).div_ceil(size) * size;
                continue;
            }
            let i = (pfn - self.start) as usize;
            let fits = (pfn..pfn + size)
                .step_by(1 << self.pb_order)
                .all(|p| self.type_of(p) == mt)
                && self.pages[i..i + size as usize]
                    .iter()
                    .all(|&p| p == Page::Open);
            if fits && self.guard_buddy(pfn, order) {
                self.pages[i..i + size as usize].fill(Page::Free);
                self.free.push(LayoutBlock {
                    pfn: Pfn(pfn),
                    order: Order::new(order)?,
                    list: mt,
                });
                return Some(pfn);
            }
            pfn += size;
        }
        None
    }

    /// Marks the [`ZoneLayout::absent`] pages not managed: the lowest pfns in use and not on
    /// a per-CPU list (where firmware and the kernel image lie; the top pageblocks are
    /// Movable here, and their pages in use are the Movable pool the trace's frees of pages
    /// in use before it draw on).
    pub fn place_absent(&mut self) {
        for p in self.pages.iter_mut() {
            if self.absent == 0 {
                break;
            }
            if *p == Page::Flagless {
                *p = Page::Absent;
                self.absent -= 1;
            }
        }
    }

    /// Whether the block of `order` at `pfn` can be free without merging: its buddy is not
    /// free as a whole (a top-order block has none). Where the buddy has no page taken yet,
    /// its last page is taken as in use.
    fn guard_buddy(&mut self, pfn: u64, order: u8) -> bool {
        if order >= self.max_order {
            return true;
        }
        let size = 1u64 << order;
        let buddy = pfn ^ size;
        let mut open = None;
        for p in buddy..buddy + size {
            match self.page(p) {
                Page::Free => {}
                Page::Open => open = Some(p),
                _ => return true,
            }
        }
        match open {
            Some(p) => {
                self.pages[(p - self.start) as usize] = Page::Flagless;
                true
            }
            None => false,
        }
    }
}
