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
//!    then those the text after the window shows there and the window never names
//!    ([`super::StartHints::late`]), the drained ones behind the window's drained ones and
//!    the allocated ones ahead of the window's allocated ones;
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
//! each tier in pfn order, and every list's tier 0 before any list walks tier 1. A page of
//! the type, even one read in use, comes before one of another type's pageblock. Such a block is recorded ([`ZoneLayout::pcp_list`]), and the
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
use super::hints::PcpHint;

/// Which of the layout's hints [`ZoneLayout::hinted`] takes.
#[derive(Clone, Copy)]
enum Hints {
    /// The window's first events' ([`ZoneLayout::pcp_hints`]).
    Window,
    /// The text after the window's ([`ZoneLayout::late_hints`]).
    Late,
    /// The roll to the window's start's ([`ZoneLayout::roll_hints`]).
    Rolled,
}

/// One CPU's lists: the CPU, and its lists as `(order, migratetype index, blocks)`.
pub type CpuLists = (u32, Vec<(u8, usize, u64)>);

/// The blocks the trace shows on one list ([`ZoneLayout::hinted`]), taken before any list
/// walks the tiers, and how many blocks the list still needs.
struct Hinted {
    /// Shown drained first, in the order drained (the list's tail).
    tail: Vec<u64>,
    /// Shown allocated first, in the order allocated (the list's head).
    head: Vec<u64>,
    /// Shown drained first after the window, in the order drained (behind `tail`).
    late_tail: Vec<u64>,
    /// Shown allocated first after the window, in the order allocated (ahead of `head`).
    late_head: Vec<u64>,
    /// Left there by the roll: refilled ones (toward the tail).
    rolled_tail: Vec<u64>,
    /// Left there by the roll: freed ones (toward the head).
    rolled_head: Vec<u64>,
    /// The blocks still to choose.
    left: u64,
}

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
    /// migratetype index, blocks)`, in the order they choose (a CPU may come twice). Marks
    /// them [`Page::Pcp`] and records them in [`ZoneLayout::pcp`]; returns the pages for which
    /// no block was found.
    ///
    /// Every list takes the blocks the trace shows on it before any list walks the tiers: a
    /// block `rmqueue_pcplist` served on one CPU was on that CPU's list, not on another's.
    /// 6.1-4g-2node p_crossnode: CPU 2 of Node 1 Normal served 13 Movable pages off its list
    /// at the window's start (lines 18076-18416); CPU 1's Movable list, the rest of its count
    /// and chosen first, took them, and CPU 2's list held pages of an Unmovable pageblock that
    /// its frees then put on the Unmovable list, which missed the kernel's refill at line 18671.
    pub fn choose_pcp(&mut self, lists: &[CpuLists]) -> u64 {
        let hinted: Vec<Vec<Hinted>> = (lists.iter())
            .map(|(cpu, cpu_lists)| {
                (cpu_lists.iter())
                    .map(|&(order, mt, n)| self.take_hinted(*cpu, order, mt, n))
                    .collect()
            })
            .collect();
        let paired = self.paired_heads();
        // A class no page has (a synthesised layout has no page in use with a flag) gives
        // its tiers nothing: no walk over the span for them.
        let has = [Page::Flagless, Page::Used].map(|c| self.pages.contains(&c));
        let mut tiers: HashMap<(u8, usize, u8), Tier> = HashMap::default();
        let mut missing = 0u64;
        // The blocks the trace shows at the lists' heads, recorded after every other block:
        // the set-up frees each CPU's blocks in this order, each at its list's head
        // (`free_frozen_page_commit`'s `list_add`), and a block taken for another list can
        // land on theirs (`fill_lists`), which would put it ahead of them.
        let mut heads = Vec::new();
        for ((cpu, cpu_lists), hinted) in lists.iter().zip(hinted) {
            for (&(order, mt, _), h) in cpu_lists.iter().zip(hinted) {
                let mut left = h.left;
                for &pfn in h.tail.iter().chain(&h.late_tail).chain(&h.rolled_tail) {
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
                let late_head = h.late_head.iter().rev();
                for &pfn in late_head.chain(&h.rolled_head).chain(h.head.iter().rev()) {
                    heads.push((*cpu, pfn, order));
                }
                missing += left << order;
            }
        }
        self.pcp.extend(heads);
        missing
    }

    /// The blocks of `cpu`'s list of `order` and type `mt`, `n` blocks long, that the trace
    /// shows there (module docs): first the window's, then those the roll to the window's
    /// start leaves there (`super::roll`; refilled ones toward the tail, freed ones toward
    /// the head).
    fn take_hinted(&mut self, cpu: u32, order: u8, mt: usize, n: u64) -> Hinted {
        let mut left = n;
        // Those it shows allocated go on last, at the list's head.
        let (tail, head) = self.hinted(cpu, order, mt, &mut left, Hints::Window);
        // Then those the text after the window shows there (`super::hints`): behind the
        // window's drained ones (they outlasted its drains), ahead of its allocated ones.
        let (late_tail, late_head) = self.hinted(cpu, order, mt, &mut left, Hints::Late);
        // Then those the roll to the window's start leaves there (`super::roll`).
        let (rolled_tail, rolled_head) = self.hinted(cpu, order, mt, &mut left, Hints::Rolled);
        Hinted {
            tail,
            head,
            late_tail,
            late_head,
            rolled_tail,
            rolled_head,
            left,
        }
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
    /// allocated: the list's head, where `rmqueue_pcplist` takes from). `which`: of
    /// [`ZoneLayout::pcp_hints`], [`ZoneLayout::late_hints`] or [`ZoneLayout::roll_hints`]
    /// (refilled ones as drained), each in their own order.
    fn hinted(
        &mut self,
        cpu: u32,
        order: u8,
        mt: usize,
        left: &mut u64,
        which: Hints,
    ) -> (Vec<u64>, Vec<u64>) {
        let (mut tail, mut head) = (Vec::new(), Vec::new());
        let typ = MigrateType::from_index(mt);
        let size = 1usize << order;
        let hints = std::mem::take(self.hints_mut(which));
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
        *self.hints_mut(which) = kept;
        (tail, head)
    }

    /// The hints `which` names.
    fn hints_mut(&mut self, which: Hints) -> &mut Vec<PcpHint> {
        match which {
            Hints::Window => &mut self.pcp_hints,
            Hints::Late => &mut self.late_hints,
            Hints::Rolled => &mut self.roll_hints,
        }
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
mod tests;
