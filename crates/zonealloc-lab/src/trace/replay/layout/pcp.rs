//! Which pages are on the per-CPU lists at the snapshot.
//!
//! kpageflags shows a page on a per-CPU list as a page without any flag (`F`):
//! `free_pages_prepare` clears the flags, and `PageBuddy` is not set on it. So are pages the
//! kernel allocated without a flag, and the layout cannot tell them apart. zoneinfo gives
//! each CPU's `count`, and the trace's first events which lists hold it (order and
//! migratetype, [`super::super::pcp_state`]). A block of order `k` on a list of type `t` is
//! taken, in this order of preference, from
//!
//! 0. the blocks the window's first events show on that CPU's list of the order and type
//!    ([`super::hints`]: drained or allocated before anything put them there), where the
//!    layout has them in use in a pageblock of the type; the drained ones go on first (the
//!    list's tail, drained first), the allocated ones last (its head, allocated first);
//! 1. flagless pages in a pageblock of type `t` whose buddy of order `k` is a free block of
//!    order `k`: the buddy allocator would have merged the two, so the page is not in it,
//!    and a page freed onto a per-CPU list is held out of it exactly so
//!    (`free_frozen_page_commit`); then the other flagless pages of such pageblocks;
//! 2. pages in use with a flag, of a type-`t` pageblock (a busy machine's pages change state
//!    while the layout is read);
//! 3. flagless pages, then pages in use, of any pageblock (a list's type is the pageblock's
//!    at the free, which may have changed since);
//! 4. for a list of order 1 and up that is still short, a block whose pages are each
//!    flagless or in use, mixed, of any pageblock: the layout is read page by page while the
//!    machine runs, so a THP freed onto a list during the read shows part of its pages in
//!    use (6.12-2g p_pressure: no aligned order-9 block of DMA32 is all of one class, and
//!    the kernel's lists held one more than the other tiers found);
//!
//! each tier in pfn order. A page of the type, even one read in use, comes before one of
//! another type's pageblock. Such a block is recorded ([`ZoneLayout::pcp_list`]), and the
//! set-up frees it onto the list it was taken for (`Zone::free_on_list`) where the trace's
//! drains name lists (6.1), and from 6.10 where its pageblock's list is one the trace shows
//! exactly (`proc_setup.rs` `fill_lists`): the kernel's list is the type its free read
//! (`free_unref_page_commit`'s `migratetype`), which its pageblock may have lost since.
//! Freed as a page of its pageblock, it lands on that type's list, one list long by what
//! another lacks: 6.1-4g-2node p_pressure's node 0 CPU 0 held 677 pages on lists the
//! trace never touches (its Unmovable and Movable order-0 lists are exact at 31 and 30), the
//! Reclaimable pageblocks offered 271, and the other 406 on the Unmovable list put off 7 of
//! its refills. A synthesised layout has only flagless pages in use.

use crate::trace::stats::HashMap;

use zonealloc::MigrateType;

use super::canvas::{Page, ZoneLayout};

/// One CPU's lists: the CPU, and its lists as `(order, migratetype index, blocks)`.
pub type CpuLists = (u32, Vec<(u8, usize, u64)>);

/// The candidate block heads of one tier of one list's order and type (module docs), found
/// as they are taken: first those whose buddy is a free block of the order (typed tiers only,
/// from the free blocks, in pfn order), then a walk over the span in pfn order. Pages only
/// ever become [`Page::Pcp`] here, so a head that is of its tier's class when it is reached is
/// one that was so when the tier was first asked for: the walk takes the heads a list of
/// every head of the span, made up front, would.
struct Tier {
    /// The pages' class: flagless (tiers 0 and 1) or in use (2 and 3).
    class: Page,
    /// The pageblocks' type, for the typed tiers (0 and 2).
    typed: Option<MigrateType>,
    /// Heads whose buddy is a free block of the order, in pfn order (typed tiers).
    paired: Vec<u64>,
    /// How many of `paired` were taken or passed over.
    next_paired: usize,
    /// The walk's next head.
    cursor: u64,
    /// The first of `paired` not below `cursor` (the walk passes over those).
    skip: usize,
}

impl ZoneLayout {
    /// Chooses the blocks each CPU's lists hold: `lists` has per CPU its lists as `(order,
    /// migratetype index, blocks)`. Marks them [`Page::Pcp`] and records them in
    /// [`ZoneLayout::pcp`]; returns the pages for which no block was found.
    pub fn choose_pcp(&mut self, lists: &[CpuLists]) -> u64 {
        let paired = self.paired_heads();
        // A class no page has (a synthesised layout has no page in use with a flag) gives
        // its tiers nothing: no walk over the span for them.
        let has = [Page::Flagless, Page::Used].map(|c| self.pages.contains(&c));
        let mut tiers: HashMap<(u8, usize, u8), Tier> = HashMap::default();
        let mut missing = 0u64;
        for (cpu, cpu_lists) in lists {
            for &(order, mt, n) in cpu_lists {
                let mut left = n;
                // The blocks the trace shows on this list first (module docs); those it
                // shows allocated go on last, at the list's head.
                let (tail, head) = self.hinted(*cpu, order, mt, &mut left, false);
                // Then those the roll to the window's start leaves there (`super::roll`):
                // refilled ones toward the tail, freed ones toward the head.
                let (rolled_tail, rolled_head) = self.hinted(*cpu, order, mt, &mut left, true);
                for &pfn in tail.iter().chain(&rolled_tail) {
                    self.pcp.push((*cpu, pfn, order));
                }
                // Typed tiers first (module docs): flagless, in use, then of any type.
                for tier in [0u8, 2, 1, 3] {
                    if left == 0 {
                        break;
                    }
                    if !has[usize::from(tier >= 2)] {
                        continue;
                    }
                    let t = tiers
                        .entry((order, mt, tier))
                        .or_insert_with(|| self.tier(order, mt, tier, &paired));
                    while left > 0 {
                        let Some(pfn) = t.next(self, order) else {
                            break;
                        };
                        let (i, size) = ((pfn - self.start) as usize, 1usize << order);
                        self.pages[i..i + size].fill(Page::Pcp);
                        self.pcp.push((*cpu, pfn, order));
                        self.note_list(pfn, mt);
                        left -= 1;
                    }
                }
                if left > 0 && order > 0 {
                    left -= self.take_mixed(*cpu, order, mt, left);
                }
                for &pfn in rolled_head.iter().chain(head.iter().rev()) {
                    self.pcp.push((*cpu, pfn, order));
                }
                missing += left << order;
            }
        }
        missing
    }

    /// Records the list of type index `mt` for the block at `pfn` where its pageblock is of
    /// another type: the set-up frees it onto that list, not its pageblock's (module docs).
    fn note_list(&mut self, pfn: u64, mt: usize) {
        let list = MigrateType::from_index(mt).unwrap_or(MigrateType::Movable);
        if self.type_of(pfn) != list {
            self.pcp_list.insert(pfn, list);
        }
    }

    /// Tier 4 (module docs): up to `n` blocks of `order` whose pages are each flagless or in
    /// use, mixed, of any pageblock, in pfn order, put on `cpu`'s lists; returns how many.
    /// Only a list the other tiers left short walks it, so it costs nothing on the way a
    /// layout usually goes.
    /// Holds the blocks the window first frees (`freed`, [`super::StartHints::freed`]) out of
    /// the choice of list pages: `free_unref_page` frees a page in use, so each was in use at
    /// the start and on no list. Its in-use pages read [`Page::Absent`] to
    /// [`ZoneLayout::choose_pcp`] until [`ZoneLayout::release`] gives their class back.
    /// 6.1-2g/p_pressure: `dash-1130` frees 0xe6b4 at 1910.485205 (line 6181), in use in
    /// the layout (`M`); the set-up had put it on a list, and the replay freed another page
    /// of the pool in its place.
    pub fn hold_freed(&mut self, freed: &[(u64, u8)]) -> Vec<(usize, Page)> {
        let mut held = Vec::new();
        for &(pfn, order) in freed {
            let end = pfn.saturating_add(1u64 << order.min(20)).min(self.end());
            for p in pfn.max(self.start)..end {
                let i = (p - self.start) as usize;
                if matches!(self.pages[i], Page::Used | Page::Flagless) {
                    held.push((i, self.pages[i]));
                    self.pages[i] = Page::Absent;
                }
            }
        }
        held
    }

    /// Gives the pages [`ZoneLayout::hold_freed`] held their class back.
    pub fn release(&mut self, held: Vec<(usize, Page)>) {
        for (i, class) in held {
            self.pages[i] = class;
        }
    }

    fn take_mixed(&mut self, cpu: u32, order: u8, mt: usize, n: u64) -> u64 {
        let size = 1u64 << order;
        let mut pfn = self.start.div_ceil(size) * size;
        let mut taken = 0;
        while taken < n && pfn + size <= self.end() {
            let i = (pfn - self.start) as usize;
            let block = &mut self.pages[i..i + size as usize];
            if block
                .iter()
                .all(|&p| matches!(p, Page::Flagless | Page::Used))
            {
                block.fill(Page::Pcp);
                self.pcp.push((cpu, pfn, order));
                self.note_list(pfn, mt);
                taken += 1;
            }
            pfn += size;
        }
        taken
    }

    /// Takes, up to `left` blocks, the blocks the trace shows on `cpu`'s list of `order` and
    /// type `mt` at the start ([`ZoneLayout::pcp_hints`]) where the layout has them in use
    /// in a pageblock of the type (a block it shows free was allocated after the layout was
    /// read; one in another type's pageblock would be freed onto that type's list). Marks
    /// them [`Page::Pcp`]; returns those first drained (in the order drained: the list's
    /// tail, where `free_pcppages_bulk` takes from) and those first allocated (in the order
    /// allocated: the list's head, where `rmqueue_pcplist` takes from). `rolled`: the same of
    /// [`ZoneLayout::roll_hints`] (refilled ones as drained), each in their own order.
    fn hinted(
        &mut self,
        cpu: u32,
        order: u8,
        mt: usize,
        left: &mut u64,
        rolled: bool,
    ) -> (Vec<u64>, Vec<u64>) {
        let (mut tail, mut head) = (Vec::new(), Vec::new());
        let typ = MigrateType::from_index(mt);
        let size = 1usize << order;
        let hints = match rolled {
            true => std::mem::take(&mut self.roll_hints),
            false => std::mem::take(&mut self.pcp_hints),
        };
        let mut kept = Vec::with_capacity(hints.len());
        for h in hints {
            let i = h.pfn.wrapping_sub(self.start) as usize;
            let fits = *left > 0
                && (h.cpu, h.order, h.mt) == (cpu, order, mt)
                && h.pfn >= self.start
                && h.pfn.is_multiple_of(size as u64)
                && i + size <= self.pages.len()
                && Some(self.type_of(h.pfn)) == typ
                && self.pages[i..i + size]
                    .iter()
                    .all(|&p| matches!(p, Page::Flagless | Page::Used));
            if fits {
                self.pages[i..i + size].fill(Page::Pcp);
                *left -= 1;
                if h.drained { &mut tail } else { &mut head }.push(h.pfn);
            }
            kept.push(h);
        }
        match rolled {
            true => self.roll_hints = kept,
            false => self.pcp_hints = kept,
        }
        (tail, head)
    }
    /// Per order, the heads in the span whose buddy of that order is a free block of that
    /// order, in pfn order (a free pfn named twice counts with its last block, as a map from
    /// pfn to order would).
    fn paired_heads(&self) -> Vec<Vec<u64>> {
        // The last block of each pfn, whatever the free blocks' order.
        let mut last: Vec<(u64, usize)> = (self.free.iter().enumerate())
            .map(|(k, b)| (b.pfn.0, k))
            .collect();
        last.sort_unstable();
        let top = self.free.iter().map(|b| b.order.get()).max().unwrap_or(0);
        let mut paired = vec![Vec::new(); usize::from(top) + 1];
        for (j, &(pfn, k)) in last.iter().enumerate() {
            if last.get(j + 1).is_some_and(|n| n.0 == pfn) {
                continue;
            }
            let order = self.free[k].order.get();
            let size = 1u64 << order;
            let head = pfn ^ size;
            if pfn.is_multiple_of(size) && head >= self.start && head + size <= self.end() {
                paired[usize::from(order)].push(head);
            }
        }
        for p in &mut paired {
            p.sort_unstable();
        }
        paired
    }

    /// Tier `tier` of the lists of `order` and type `mt` (0 the flagless pages of type `mt`,
    /// those with a free buddy first; 2 in use of type `mt`, likewise; 1 flagless of any
    /// type; 3 in use of any), taken in the order 0, 2, 1, 3 (module docs).
    fn tier(&self, order: u8, mt: usize, tier: u8, paired: &[Vec<u64>]) -> Tier {
        let size = 1u64 << order;
        let typed = tier
            .is_multiple_of(2)
            .then(|| MigrateType::from_index(mt).unwrap_or(MigrateType::Movable));
        let paired = match typed {
            Some(mt) => (paired.get(usize::from(order)).into_iter().flatten())
                .copied()
                .filter(|&pfn| self.type_of(pfn) == mt)
                .collect(),
            None => Vec::new(),
        };
        Tier {
            class: if tier < 2 { Page::Flagless } else { Page::Used },
            typed,
            paired,
            next_paired: 0,
            cursor: self.start.div_ceil(size) * size,
            skip: 0,
        }
    }

    /// Whether every page of the block of `size` pages at `pfn` is of `class`.
    fn all_of(&self, pfn: u64, size: u64, class: Page) -> bool {
        let i = (pfn - self.start) as usize;
        self.pages[i..i + size as usize].iter().all(|&p| p == class)
    }
}

impl Tier {
    /// The tier's next head whose pages are all of its class, in its order; `None` when it
    /// has no more.
    fn next(&mut self, l: &ZoneLayout, order: u8) -> Option<u64> {
        let size = 1u64 << order;
        while let Some(&pfn) = self.paired.get(self.next_paired) {
            self.next_paired += 1;
            if l.all_of(pfn, size, self.class) {
                return Some(pfn);
            }
        }
        let pb = 1u64 << l.pb_order;
        while self.cursor + size <= l.end() {
            // The block of the next page of the class: the blocks before it hold none.
            let from = (self.cursor - l.start) as usize;
            let next = l.pages[from..].iter().position(|&p| p == self.class);
            let pfn = next.map_or(l.end(), |k| (l.start + (from + k) as u64) / size * size);
            if pfn + size > l.end() {
                // No page becomes of the class here: none is to come.
                self.cursor = l.end();
                return None;
            }
            if self.typed.is_some_and(|mt| l.type_of(pfn) != mt) {
                // The next pageblock, aligned to the block.
                self.cursor = ((pfn / pb + 1) * pb).div_ceil(size) * size;
                continue;
            }
            self.cursor = pfn + size;
            while self.paired.get(self.skip).is_some_and(|&p| p < pfn) {
                self.skip += 1;
            }
            if self.paired.get(self.skip) == Some(&pfn) {
                continue;
            }
            if l.all_of(pfn, size, self.class) {
                return Some(pfn);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zonealloc::{LayoutBlock, Order, Pfn};

    /// The choice as it was made before the tiers were walked as taken: every tier's heads
    /// listed up front, the free buddies looked up in a map.
    fn listed_up_front(l: &mut ZoneLayout, lists: &[CpuLists]) -> u64 {
        let free: HashMap<u64, u8> = l.free.iter().map(|b| (b.pfn.0, b.order.get())).collect();
        let mut tiers: HashMap<(u8, usize, u8), (Vec<u64>, usize)> = HashMap::default();
        let mut missing = 0u64;
        for (cpu, cpu_lists) in lists {
            for &(order, mt, n) in cpu_lists {
                let mut left = n;
                let (tail, head) = l.hinted(*cpu, order, mt, &mut left, false);
                for &pfn in &tail {
                    l.pcp.push((*cpu, pfn, order));
                }
                for tier in [0u8, 2, 1, 3] {
                    if left == 0 {
                        break;
                    }
                    let size = 1u64 << order;
                    let class = if tier < 2 { Page::Flagless } else { Page::Used };
                    let t = tiers.entry((order, mt, tier)).or_insert_with(|| {
                        let typed = tier.is_multiple_of(2);
                        let want = MigrateType::from_index(mt).unwrap_or(MigrateType::Movable);
                        let (mut first, mut rest) = (Vec::new(), Vec::new());
                        let mut pfn = l.start.div_ceil(size) * size;
                        while pfn + size <= l.end() {
                            let i = (pfn - l.start) as usize;
                            let ok = (!typed || l.type_of(pfn) == want)
                                && l.pages[i..i + size as usize].iter().all(|&p| p == class);
                            if ok && typed && free.get(&(pfn ^ size)) == Some(&order) {
                                first.push(pfn);
                            } else if ok {
                                rest.push(pfn);
                            }
                            pfn += size;
                        }
                        first.extend(rest);
                        (first, 0)
                    });
                    while left > 0 && t.1 < t.0.len() {
                        let pfn = t.0[t.1];
                        t.1 += 1;
                        let i = (pfn - l.start) as usize;
                        if l.pages[i..i + size as usize].iter().all(|&p| p == class) {
                            l.pages[i..i + size as usize].fill(Page::Pcp);
                            l.pcp.push((*cpu, pfn, order));
                            left -= 1;
                        }
                    }
                }
                if left > 0 && order > 0 {
                    left -= l.take_mixed(*cpu, order, mt, left);
                }
                for &pfn in head.iter().rev() {
                    l.pcp.push((*cpu, pfn, order));
                }
                missing += left << order;
            }
        }
        missing
    }

    /// A layout of `len` pages from an unaligned `start`, pageblocks of 32 pages of three
    /// types, pages in runs of every class, free blocks of orders 0 to 3 (one pfn named twice),
    /// and hints; all drawn from `seed`.
    fn drawn(seed: u64, start: u64, len: usize) -> ZoneLayout {
        let mut x = seed | 1;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let classes = [Page::Used, Page::Flagless, Page::Free, Page::Absent];
        let mut pages = Vec::with_capacity(len);
        while pages.len() < len {
            let c = classes[next(4) as usize];
            let run = 1 + next(24) as usize;
            pages.extend(std::iter::repeat_n(c, run.min(len - pages.len())));
        }
        let pb_order = 5;
        let nblocks = (start + len as u64).div_ceil(32) - start / 32;
        let types = [
            MigrateType::Unmovable,
            MigrateType::Movable,
            MigrateType::Reclaimable,
        ];
        let blocks = (0..nblocks).map(|_| types[next(3) as usize]).collect();
        let mut free: Vec<LayoutBlock> = (0..len / 16)
            .map(|_| {
                let order = next(4) as u8;
                let pfn = (start + next(len as u64)) >> order << order;
                LayoutBlock {
                    pfn: Pfn(pfn),
                    order: Order::new(order).unwrap(),
                    list: MigrateType::Movable,
                }
            })
            .collect();
        free.sort_by_key(|b| b.pfn);
        free.dedup_by_key(|b| b.pfn);
        let twice = LayoutBlock {
            order: Order::new(1).unwrap(),
            ..free[free.len() / 2]
        };
        free.insert(free.len() / 2 + 1, twice);
        let pcp_hints = (0..40)
            .map(|_| {
                let order = next(2) as u8;
                super::super::hints::PcpHint {
                    cpu: next(3) as u32,
                    pfn: (start + next(len as u64)) >> order << order,
                    order,
                    mt: next(3) as usize,
                    drained: next(2) == 0,
                }
            })
            .collect();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/proc/linux-6.1-p1-before");
        let snap = crate::procfs::ProcSnapshot::read_dir(&dir).unwrap();
        let mut z = snap.zones[0].clone();
        (z.start_pfn, z.spanned_pages) = (start, len as u64);
        let mut l = ZoneLayout::empty(&z, pb_order, 6, false);
        assert_eq!(l.blocks.len() as u64, nblocks);
        (l.pages, l.blocks, l.free, l.pcp_hints) = (pages, blocks, free, pcp_hints);
        l
    }

    /// A drawn layout of 256 pages from pfn 1024, all free, with no hint; the index of a pfn.
    fn all_free() -> (ZoneLayout, impl Fn(u64) -> usize) {
        let mut l = drawn(7, 1024, 256);
        l.pcp_hints.clear();
        l.pages.fill(Page::Free);
        (l, |pfn: u64| (pfn - 1024) as usize)
    }

    #[test]
    fn a_block_of_pages_flagless_and_in_use_mixed_is_the_last_choice_of_a_short_list() {
        let (mut l, at) = all_free();
        // One aligned order-2 block read half in use, half flagless (a THP freed onto a list
        // while the layout was read), and one flagless page alone.
        l.pages[at(1040)..at(1044)].copy_from_slice(&[
            Page::Used,
            Page::Flagless,
            Page::Used,
            Page::Flagless,
        ]);
        l.pages[at(1100)] = Page::Flagless;
        // Two order-2 blocks wanted: the mixed one is found, the other is missing.
        let missing = l.choose_pcp(&[(0, vec![(2, 1, 2)])]);
        assert_eq!(missing, 4);
        assert_eq!(l.pcp, vec![(0, 1040, 2)]);
        assert!(l.pages[at(1040)..at(1044)].iter().all(|&p| p == Page::Pcp));
        // Order 0 takes no mixed block (a page is one class): the lone page, then nothing.
        let missing = l.choose_pcp(&[(1, vec![(0, 1, 2)])]);
        assert_eq!((missing, l.pcp.last()), (1, Some(&(1, 1100, 0))));
    }

    /// 6.1-2g/p_pressure line 6181: a page the window first frees was in use at the start,
    /// so the lists take the next page of the tier, and it keeps its class after.
    #[test]
    fn a_page_the_window_first_frees_goes_on_no_list() {
        let (mut l, at) = all_free();
        l.pages[at(1100)] = Page::Flagless;
        l.pages[at(1101)] = Page::Flagless;
        let held = l.hold_freed(&[(1100, 0)]);
        let missing = l.choose_pcp(&[(0, vec![(0, 1, 1)])]);
        l.release(held);
        assert_eq!((missing, l.pcp.clone()), (0, vec![(0, 1101, 0)]));
        assert_eq!(l.pages[at(1100)], Page::Flagless);
    }

    #[test]
    fn the_tiers_walked_as_taken_choose_what_listing_them_up_front_chose() {
        let mut short = 0;
        for seed in 1..40u64 {
            let mut l = drawn(seed * 0x9e37_79b9, 1000 + seed, 6000);
            if seed.is_multiple_of(4) {
                // No page in use with a flag, as in a synthesised layout.
                for p in l.pages.iter_mut().filter(|p| **p == Page::Used) {
                    *p = Page::Flagless;
                }
            }
            // Lists of every order to 3 and type, some longer than any tier holds.
            let lists: Vec<CpuLists> = (0..3u32)
                .map(|cpu| {
                    let mut v = Vec::new();
                    for order in 0..4u8 {
                        for mt in 0..3usize {
                            let n =
                                (u64::from(cpu) * 7 + u64::from(order) * 5 + mt as u64 * 3 + seed)
                                    % 23;
                            v.push((
                                order,
                                mt,
                                if (seed + mt as u64).is_multiple_of(5) {
                                    900
                                } else {
                                    n
                                },
                            ));
                        }
                    }
                    (cpu, v)
                })
                .collect();
            let (mut a, mut b) = (l.clone(), l);
            let walked = a.choose_pcp(&lists);
            let listed = listed_up_front(&mut b, &lists);
            assert_eq!(walked, listed, "seed {seed}");
            assert_eq!(a.pcp, b.pcp, "seed {seed}");
            assert_eq!(a.pages, b.pages, "seed {seed}");
            assert!(!a.pcp.is_empty(), "seed {seed}");
            short += usize::from(walked > 0);
        }
        // Some lists ran out of every tier.
        assert!(short > 5, "{short}");
    }
}
