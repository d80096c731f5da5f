//! Free blocks [`ZoneLayout::make_up`] cannot make in pageblocks of their type, made by
//! retyping pageblocks as the kernel does on a fallback.
//!
//! A type's pageblocks may hold no pages in use where a free block it lacks fits: 6.12-8g
//! p_pressure's six Reclaimable pageblocks are four reserved ones and two nearly free, and
//! pagetypeinfo counts 241 Reclaimable pages free in blocks the layout does not show. In the
//! kernel such a block comes from a fallback: `__rmqueue_fallback` (7.2's
//! `try_to_claim_block`, 6.12's `try_to_steal_block`, 6.1's `steal_suitable_fallback`) claims
//! a pageblock of a type in `fallbacks[]` for the requested type (`change_pageblock_range` /
//! `set_pageblock_migratetype`), and `move_freepages_block` moves its free pages to the new
//! type's lists. Here a pageblock `P` of a fallback type, holding no free block and the pages
//! in use where the block fits, takes the type, and the block is made there; a pageblock `Q`
//! of the type, holding no free block either (the fewest pages in use first: the reserved
//! ones above), takes `P`'s old type, so that pagetypeinfo's pageblocks per type still match.
//! Neither holds a free block, so no free block changes lists; a pageblock the trace names
//! ([`super::hints`]) keeps its type, and a pageblock of holes only (which pagetypeinfo does
//! not count) is never a `Q`.

use std::collections::{HashMap, HashSet};

use zonealloc::MigrateType;

use super::canvas::{Page, ZoneLayout};

/// `fallbacks[]` (mm/page_alloc.c): the types whose pageblocks `mt` falls back to, in order.
fn fallbacks(mt: MigrateType) -> &'static [MigrateType] {
    match mt {
        MigrateType::Unmovable => &[MigrateType::Reclaimable, MigrateType::Movable],
        MigrateType::Movable => &[MigrateType::Reclaimable, MigrateType::Unmovable],
        MigrateType::Reclaimable => &[MigrateType::Unmovable, MigrateType::Movable],
        _ => &[],
    }
}

/// Per pageblock of the span: whether it holds a free page, its pages in use, and whether it
/// is holes only.
pub(super) struct BlockUse {
    pub(super) free: Vec<bool>,
    pub(super) in_use: Vec<u64>,
    pub(super) holes_only: Vec<bool>,
}

impl ZoneLayout {
    /// The pfns of pageblock `b` inside the span.
    pub(super) fn block_span(&self, b: usize) -> (u64, u64) {
        let first = ((self.start >> self.pb_order) + b as u64) << self.pb_order;
        (
            first.max(self.start),
            (first + (1u64 << self.pb_order)).min(self.end()),
        )
    }

    pub(super) fn block_use(&self) -> BlockUse {
        let n = self.blocks.len();
        let mut u = BlockUse {
            free: vec![false; n],
            in_use: vec![0; n],
            holes_only: vec![false; n],
        };
        for b in 0..n {
            let (s, e) = self.block_span(b);
            let pages = &self.pages[(s - self.start) as usize..(e - self.start) as usize];
            u.free[b] = pages.contains(&Page::Free);
            u.in_use[b] = pages
                .iter()
                .filter(|p| matches!(p, Page::Used | Page::Flagless))
                .count() as u64;
            u.holes_only[b] = pages.iter().all(|&p| p == Page::Hole);
        }
        u
    }

    /// Makes up to `lack` free blocks of `order` on `mt`'s list by retyping pageblocks (module
    /// docs); `named`: the pageblock numbers the trace names; `heads`: the free blocks' orders
    /// by pfn. Returns how many it made.
    pub(super) fn make_by_retyping(
        &mut self,
        mt: MigrateType,
        order: u8,
        mut lack: u64,
        named: &HashSet<u64>,
        heads: &mut HashMap<u64, u8>,
    ) -> u64 {
        let size = 1u64 << order;
        let pb = 1u64 << self.pb_order;
        let base = self.start >> self.pb_order;
        let mut uses = self.block_use();
        // The pageblocks of type `mt` that may take another type, fewest pages in use first.
        let mut partners: Vec<usize> = (0..self.blocks.len())
            .filter(|&b| {
                self.blocks[b] == mt
                    && !uses.free[b]
                    && !uses.holes_only[b]
                    && !named.contains(&(base + b as u64))
            })
            .collect();
        partners.sort_by_key(|&b| std::cmp::Reverse((uses.in_use[b], b)));
        let mut made = 0u64;
        for &from in fallbacks(mt) {
            for flagless_only in [true, false] {
                let mut pfn = self.start.div_ceil(size) * size;
                while lack > 0 && pfn + size <= self.end() {
                    let b0 = self.block_of(pfn);
                    let open = |b: usize| {
                        let t = self.blocks[b];
                        !uses.free[b]
                            && !named.contains(&(base + b as u64))
                            && (t == from || t == mt)
                    };
                    if !open(b0) {
                        // The next pageblock, aligned to the block.
                        pfn = ((pfn / pb + 1) * pb).div_ceil(size) * size;
                        continue;
                    }
                    let blocks: Vec<usize> = (pfn..pfn + size)
                        .step_by(pb.min(size) as usize)
                        .map(|p| self.block_of(p))
                        .collect();
                    let retyped: Vec<usize> = blocks
                        .iter()
                        .copied()
                        .filter(|&b| self.blocks[b] == from)
                        .collect();
                    // Partners outside the block (the last ones: fewest pages in use).
                    let q: Vec<usize> = partners
                        .iter()
                        .rev()
                        .copied()
                        .filter(|b| !blocks.contains(b))
                        .take(retyped.len())
                        .collect();
                    let ok = blocks.iter().all(|&b| open(b))
                        && !retyped.is_empty()
                        && q.len() == retyped.len()
                        && self.fits_in_use(pfn, order, flagless_only, heads);
                    if !ok {
                        pfn += size;
                        continue;
                    }
                    partners.retain(|b| !q.contains(b) && !blocks.contains(b));
                    for (&p, &q) in retyped.iter().zip(&q) {
                        self.blocks[p] = mt;
                        self.blocks[q] = from;
                        self.retyped += 2;
                    }
                    for &b in &blocks {
                        uses.free[b] = true;
                    }
                    self.add_made_up(pfn, order, mt, heads);
                    made += 1;
                    lack -= 1;
                    pfn += size;
                }
            }
        }
        made
    }

    /// Whether `pfn..pfn + 2^order` is all in use (flagless only, if so asked) and its buddy
    /// is not a free block of the order (`heads`), so that a free block there merges with
    /// nothing.
    pub(super) fn fits_in_use(
        &self,
        pfn: u64,
        order: u8,
        flagless_only: bool,
        heads: &HashMap<u64, u8>,
    ) -> bool {
        let size = 1u64 << order;
        let i = (pfn - self.start) as usize;
        let in_use = |p: &Page| match p {
            Page::Flagless => true,
            Page::Used => !flagless_only,
            _ => false,
        };
        self.pages[i..i + size as usize].iter().all(in_use)
            && (order >= self.max_order || heads.get(&(pfn ^ size)) != Some(&order))
    }
}
