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
//!
//! each tier in pfn order. A block goes onto the list of its pageblock's type here, as the
//! set-up frees it (`free_frozen_pages` picks the list by `get_pfnblock_migratetype`): one
//! of another type's pageblock would land on that type's list, one list long by what
//! another lacks, so a page of the type, even one read in use, comes before it. A
//! synthesised layout has only flagless pages in use.

use crate::trace::stats::HashMap;

use zonealloc::MigrateType;

use super::canvas::{Page, ZoneLayout};

/// One CPU's lists: the CPU, and its lists as `(order, migratetype index, blocks)`.
pub type CpuLists = (u32, Vec<(u8, usize, u64)>);

/// Candidate block heads of one tier, and how far they have been taken.
#[derive(Default)]
struct Tier {
    heads: Vec<u64>,
    next: usize,
}

impl ZoneLayout {
    /// Chooses the blocks each CPU's lists hold: `lists` has per CPU its lists as `(order,
    /// migratetype index, blocks)`. Marks them [`Page::Pcp`] and records them in
    /// [`ZoneLayout::pcp`]; returns the pages for which no block was found.
    pub fn choose_pcp(&mut self, lists: &[CpuLists]) -> u64 {
        let free: HashMap<u64, u8> = self.free.iter().map(|b| (b.pfn.0, b.order.get())).collect();
        let mut tiers: HashMap<(u8, usize, u8), Tier> = HashMap::default();
        let mut missing = 0u64;
        for (cpu, cpu_lists) in lists {
            for &(order, mt, n) in cpu_lists {
                let mut left = n;
                // The blocks the trace shows on this list first (module docs); those it
                // shows allocated go on last, at the list's head.
                let (tail, head) = self.hinted(*cpu, order, mt, &mut left);
                for &pfn in &tail {
                    self.pcp.push((*cpu, pfn, order));
                }
                // Typed tiers first (module docs): flagless, in use, then of any type.
                for tier in [0u8, 2, 1, 3] {
                    if left == 0 {
                        break;
                    }
                    let t = tiers
                        .entry((order, mt, tier))
                        .or_insert_with(|| self.tier(order, mt, tier, &free));
                    while left > 0 && t.next < t.heads.len() {
                        let pfn = t.heads[t.next];
                        t.next += 1;
                        let (i, size) = ((pfn - self.start) as usize, 1usize << order);
                        let class = if tier < 2 { Page::Flagless } else { Page::Used };
                        if self.pages[i..i + size].iter().all(|&p| p == class) {
                            self.pages[i..i + size].fill(Page::Pcp);
                            self.pcp.push((*cpu, pfn, order));
                            left -= 1;
                        }
                    }
                }
                for &pfn in head.iter().rev() {
                    self.pcp.push((*cpu, pfn, order));
                }
                missing += left << order;
            }
        }
        missing
    }

    /// Takes, up to `left` blocks, the blocks the trace shows on `cpu`'s list of `order` and
    /// type `mt` at the start ([`ZoneLayout::pcp_hints`]) where the layout has them in use
    /// in a pageblock of the type (a block it shows free was allocated after the layout was
    /// read; one in another type's pageblock would be freed onto that type's list). Marks
    /// them [`Page::Pcp`]; returns those first drained (in the order drained: the list's
    /// tail, where `free_pcppages_bulk` takes from) and those first allocated (in the order
    /// allocated: the list's head, where `rmqueue_pcplist` takes from).
    fn hinted(&mut self, cpu: u32, order: u8, mt: usize, left: &mut u64) -> (Vec<u64>, Vec<u64>) {
        let (mut tail, mut head) = (Vec::new(), Vec::new());
        let typ = MigrateType::from_index(mt);
        let size = 1usize << order;
        for h in std::mem::take(&mut self.pcp_hints) {
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
            self.pcp_hints.push(h);
        }
        (tail, head)
    }

    /// The heads of tier `tier` (0 the flagless pages of type `mt`, those with a free buddy
    /// first; 2 in use of type `mt`; 1 flagless of any type; 3 in use of any), taken in the
    /// order 0, 2, 1, 3 (module docs).
    fn tier(&self, order: u8, mt: usize, tier: u8, free: &HashMap<u64, u8>) -> Tier {
        let size = 1u64 << order;
        let class = if tier < 2 { Page::Flagless } else { Page::Used };
        let typed = tier.is_multiple_of(2);
        let mt = MigrateType::from_index(mt).unwrap_or(MigrateType::Movable);
        let (mut first, mut rest) = (Vec::new(), Vec::new());
        let mut pfn = self.start.div_ceil(size) * size;
        while pfn + size <= self.end() {
            let i = (pfn - self.start) as usize;
            let ok = (!typed || self.type_of(pfn) == mt)
                && self.pages[i..i + size as usize].iter().all(|&p| p == class);
            if ok {
                if typed && free.get(&(pfn ^ size)) == Some(&order) {
                    first.push(pfn);
                } else {
                    rest.push(pfn);
                }
            }
            pfn += size;
        }
        first.extend(rest);
        Tier {
            heads: first,
            next: 0,
        }
    }
}
