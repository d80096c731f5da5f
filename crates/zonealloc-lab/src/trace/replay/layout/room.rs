//! Room in the pageblocks of a list's type for the pages the per-CPU lists hold.
//!
//! A page on a per-CPU list went there by the type of its pageblock at the free
//! (`free_frozen_pages` / `free_unref_page` pick the list by `get_pfnblock_migratetype`), so
//! the pages on a CPU's Reclaimable list lie, but for a later claim of their pageblock, in
//! Reclaimable pageblocks. kpageflags records no migratetype, and the pageblocks are typed
//! from the pages they hold ([`super::assign`]): the Reclaimable ones are those with the most
//! slab pages, which need not be those holding the flagless pages the lists hold. Where the
//! lists of a type want more pages than the pageblocks typed so offer (flagless or in use,
//! what [`ZoneLayout::choose_pcp`] takes first), the set-up took the rest from pageblocks of
//! other types, and its frees put them on *those* types' lists: 6.12-8g p_pressure's CPU 2
//! holds 1629 pages in Normal, the trace pins its Unmovable and Movable order-0 lists to 377
//! of them, and the rest (its Reclaimable list: the kernel drains 132 Reclaimable pages off
//! it at the end, none allocated) found 272 pages in Reclaimable pageblocks; the other 980
//! went onto the Unmovable list, whose first refill then came 70 s after the kernel's.
//!
//! So, before the lists are chosen, a pageblock `P` of another PCP type, holding no free
//! page and the most candidate pages, swaps types with a pageblock `Q` of the short type,
//! holding no free page either and the fewest candidates, while that gives the short type
//! more and leaves `P`'s old type no shorter than its own lists want. As in
//! [`super::retype`], neither holds a free block, so pagetypeinfo's free blocks per type
//! and its pageblocks per type still match; a pageblock the trace names ([`super::hints`])
//! keeps its type, and one of holes only is never a `Q`.

use std::collections::HashSet;

use zonealloc::MigrateType;

use super::canvas::{Page, ZoneLayout};
use super::pcp::CpuLists;

/// The PCP types, by index.
const PCP_TYPES: [MigrateType; 3] = [
    MigrateType::Unmovable,
    MigrateType::Movable,
    MigrateType::Reclaimable,
];

impl ZoneLayout {
    /// Swaps pageblock types (module docs) so that each PCP type's pageblocks offer the pages
    /// `lists` puts on that type's lists, as far as swaps allow; `named`: the pageblock
    /// numbers the trace names. Returns the pageblocks retyped (also counted in
    /// [`ZoneLayout::retyped`]).
    pub fn make_room(&mut self, lists: &[CpuLists], named: &HashSet<u64>) -> u64 {
        let mut want = [0u64; 3];
        for (_, ls) in lists {
            for &(order, mt, n) in ls {
                if let Some(w) = want.get_mut(mt) {
                    *w = w.saturating_add(n << order);
                }
            }
        }
        let uses = self.block_use();
        let base = self.start >> self.pb_order;
        let n = self.blocks.len();
        // Per pageblock: the pages the lists may take (flagless or in use), the flagless ones.
        let mut offer = vec![(0u64, 0u64); n];
        for (b, o) in offer.iter_mut().enumerate() {
            let (s, e) = self.block_span(b);
            let pages = &self.pages[(s - self.start) as usize..(e - self.start) as usize];
            let flagless = pages.iter().filter(|&&p| p == Page::Flagless).count() as u64;
            *o = (uses.in_use[b], flagless);
        }
        let index = |mt: MigrateType| PCP_TYPES.iter().position(|&t| t == mt);
        let mut have = [0u64; 3];
        for (&mt, o) in self.blocks.iter().zip(&offer) {
            if let Some(t) = index(mt) {
                have[t] += o.0;
            }
        }
        // A pageblock holding a block the trace shows on a list (at the window's start, after
        // the window, or rolled forward to it) keeps its type too.
        let hinted: HashSet<usize> = (self.pcp_hints.iter())
            .chain(&self.late_hints)
            .chain(&self.roll_hints)
            .filter(|h| (self.start..self.end()).contains(&h.pfn))
            .map(|h| self.block_of(h.pfn))
            .collect();
        let open =
            |b: usize| !uses.free[b] && !named.contains(&(base + b as u64)) && !hinted.contains(&b);
        let mut swapped = 0u64;
        for (t, &short) in PCP_TYPES.iter().enumerate() {
            if have[t] >= want[t] {
                continue;
            }
            // Partners of the short type: the fewest pages on offer first.
            let mut qs: Vec<usize> = (0..n)
                .filter(|&b| self.blocks[b] == short && open(b) && !uses.holes_only[b])
                .collect();
            qs.sort_by_key(|&b| (offer[b].0, b));
            // Pageblocks of the other PCP types: the most flagless pages first.
            let mut ps: Vec<usize> = (0..n)
                .filter(|&b| index(self.blocks[b]).is_some_and(|u| u != t) && open(b))
                .collect();
            ps.sort_by_key(|&b| (std::cmp::Reverse(offer[b].1), b));
            let mut qs = qs.into_iter();
            for p in ps {
                if have[t] >= want[t] {
                    break;
                }
                let Some(u) = index(self.blocks[p]) else {
                    continue;
                };
                let Some(&q) = qs.as_slice().first() else {
                    break;
                };
                let (gain, loss) = (offer[p].0, offer[q].0);
                // Only a swap that gives the short type more flagless pages than it had
                // candidates there, and leaves `u` what its lists want.
                if offer[p].1 <= loss || have[u] - gain + loss < want[u] {
                    continue;
                }
                qs.next();
                self.blocks[p] = short;
                self.blocks[q] = PCP_TYPES[u];
                have[t] += gain - loss;
                have[u] = have[u] - gain + loss;
                swapped += 2;
            }
        }
        self.retyped += swapped;
        swapped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zone of four pageblocks of 32 pages from pfn 0: 0 Unmovable, all flagless (pages
    /// freed onto lists); 1 Reclaimable, reserved; 2 Movable, user pages and a free page;
    /// 3 Unmovable, kernel pages and a free page.
    fn four_blocks() -> ZoneLayout {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/proc/linux-6.1-p1-before");
        let snap = crate::procfs::ProcSnapshot::read_dir(&dir).unwrap();
        let mut z = snap.zones[0].clone();
        (z.start_pfn, z.spanned_pages) = (0, 128);
        let mut l = ZoneLayout::empty(&z, 5, 6, false);
        l.blocks = vec![
            MigrateType::Unmovable,
            MigrateType::Reclaimable,
            MigrateType::Movable,
            MigrateType::Unmovable,
        ];
        l.pages = [
            [Page::Flagless; 32],
            [Page::Absent; 32],
            [Page::Used; 32],
            [Page::Used; 32],
        ]
        .concat();
        l.pages[64] = Page::Free;
        l.pages[96] = Page::Free;
        l
    }

    #[test]
    fn a_lists_pages_are_chosen_in_pageblocks_of_its_type_once_there_is_room() {
        // CPU 0 holds 20 Reclaimable pages and 5 Unmovable ones; the Reclaimable pageblock
        // offers none, the Unmovable ones 63.
        let lists: Vec<CpuLists> = vec![(0, vec![(0, 0, 5), (0, 2, 20)])];
        let mut before = four_blocks();
        assert_eq!(before.choose_pcp(&lists), 0);
        // Without room, the Reclaimable list's pages came from an Unmovable pageblock: the
        // set-up's frees would put them on the Unmovable list.
        let on = |l: &ZoneLayout, mt| l.pcp.iter().filter(|b| l.type_of(b.1) == mt).count();
        assert_eq!(on(&before, MigrateType::Reclaimable), 0);
        let mut l = four_blocks();
        assert_eq!(l.make_room(&lists, &HashSet::new()), 2);
        // The flagless pageblock and the reserved one swapped types; those with a free page
        // kept theirs, so pagetypeinfo's free blocks and pageblocks per type still match.
        assert_eq!(
            l.blocks,
            [
                MigrateType::Reclaimable,
                MigrateType::Unmovable,
                MigrateType::Movable,
                MigrateType::Unmovable,
            ]
        );
        assert_eq!((l.retyped, l.choose_pcp(&lists)), (2, 0));
        assert_eq!(on(&l, MigrateType::Reclaimable), 20);
        assert_eq!(on(&l, MigrateType::Unmovable), 5);
    }

    #[test]
    fn a_pageblock_the_trace_names_or_a_type_its_own_lists_need_keeps_its_type() {
        let lists: Vec<CpuLists> = vec![(0, vec![(0, 2, 20)])];
        // The trace names pageblock 0's type.
        let mut l = four_blocks();
        assert_eq!(l.make_room(&lists, &HashSet::from([0])), 0);
        // Unmovable's lists want all its 63 candidates: giving 32 away would leave them short.
        let mut l = four_blocks();
        let wants: Vec<CpuLists> = vec![(0, vec![(0, 0, 63), (0, 2, 20)])];
        assert_eq!(l.make_room(&wants, &HashSet::new()), 0);
        assert_eq!(l.blocks[0], MigrateType::Unmovable);
        // Enough room already: nothing moves.
        let mut l = four_blocks();
        l.pages[32..40].fill(Page::Flagless);
        assert_eq!(l.make_room(&[(1, vec![(0, 2, 8)])], &HashSet::new()), 0);
    }
}
