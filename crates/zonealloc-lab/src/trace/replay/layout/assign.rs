//! The kernel's own layout for a zone, and the pageblock migratetypes it does not record.
//!
//! kpageflags has no migratetype; pagetypeinfo has, per zone, the pageblocks of each type and
//! the free blocks per order and type. Pageblocks are given types so that both agree as far
//! as a greedy choice gets:
//!
//! - a free block above `pageblock_order` spans several pageblocks, which take one type
//!   together (a *unit*; `__free_one_page` merges only blocks whose types may merge, and
//!   from 6.10 it retypes the buddy's pageblocks to the block's);
//! - a unit with a pageblock whose type the window's first events name takes that type
//!   ([`super::hints`]: the trace's word beats a guess from page classes);
//! - every other unit starts Movable (boot's type); then for Unmovable, Reclaimable, HighAtomic and
//!   Isolate in turn, as many pageblocks as pagetypeinfo counts are taken from the units
//!   least like user memory (for Reclaimable: the most slab pages, `S`, the class reclaimable
//!   slab caches are in; for the others: the most pages in use that are not user memory,
//!   `S`/`T`/`U`/`F`/`H`, against the user pages, `M`, which sit in Movable pageblocks except
//!   after a fallback): first units whose free blocks all fit in what the type still lacks
//!   per order, then units without free blocks, then those with the fewest free pages beyond
//!   what the type lacks;
//! - pages managed: every class but holes, reserved and offline pages, less the longest
//!   flagless runs where that leaves more than zoneinfo's `managed` (newer kernels read a
//!   hole as flagless);
//! - the free blocks are then brought to pagetypeinfo's count of each order and type
//!   ([`super::reconcile`]: the layout is read seconds before the counts), except with
//!   `--whole-file`, which starts where the layout was read: there its state is rolled back
//!   to the file's start instead ([`ZoneLayout::roll_back`]);
//! - each free block goes on its pageblock's list (which is the rule from 6.10 on; 6.1 may
//!   leave a block on another type's list after a fallback, which the layout cannot show).
//!
//! Free blocks then agree with pagetypeinfo per order and type wherever the choice of whole
//! units allows it, and the pageblock counts agree exactly unless the span holds fewer.

use std::collections::{HashMap, HashSet};

use zonealloc::MigrateType;

use super::canvas::{Page, Targets, ZoneLayout};
use super::hints::{PcpHint, StartHints};
use crate::procfs::{Layout, PageClass, ZoneSnapshot};

/// Per unit: its pageblocks, free blocks per order, and its pages by kind.
#[derive(Clone, Debug, Default)]
struct Unit {
    first: usize,
    blocks: usize,
    free: Vec<u64>,
    user: u64,
    slab: u64,
    kernel: u64,
}

impl ZoneLayout {
    /// Zone `z`'s part of the kernel's `layout`, typed as module docs say with the counts
    /// `targets`.
    pub fn from_kernel(
        layout: &Layout,
        z: &ZoneSnapshot,
        targets: &Targets,
        pb_order: u8,
        max_order: u8,
    ) -> ZoneLayout {
        let none = StartHints::default();
        ZoneLayout::from_kernel_hinted(layout, z, targets, pb_order, max_order, &none)
    }

    /// [`ZoneLayout::from_kernel`], with what the trace shows of the start (`hints`): the
    /// pageblocks it names take its type before the counts are matched, and the blocks it
    /// shows on per-CPU lists go there first ([`ZoneLayout::choose_pcp`]).
    pub fn from_kernel_hinted(
        layout: &Layout,
        z: &ZoneSnapshot,
        targets: &Targets,
        pb_order: u8,
        max_order: u8,
        hints: &StartHints,
    ) -> ZoneLayout {
        let mut l = ZoneLayout::empty(z, pb_order, max_order, false);
        let span = l.start..l.end();
        let mut units = l.units_of_layout(layout);
        // Beyond the layout's end (a capture cut at `max_pfn`): nothing there.
        for p in l.pages.iter_mut().filter(|p| **p == Page::Open) {
            *p = Page::Hole;
        }
        l.holes_from_flagless(layout, z.managed_pages);
        // Rolled forward to the window's start, the free blocks re-form from the canvas.
        let roll = hints.roll.as_ref().filter(|r| !r.is_empty());
        // The canvas as read, for the counts' own read ([`ZoneLayout::counts_at_start`]).
        let as_read = roll.and_then(|r| r.at_counts.as_ref().map(|_| l.pages.clone()));
        let free = match roll {
            Some(roll) => {
                l.rolled = l.apply_roll(roll, &hints.freed);
                l.free_of_canvas()
            }
            // `--whole-file`: rolled back to the file's start ([`ZoneLayout::roll_back`]).
            None if hints.as_read => {
                let back = l.roll_back(hints);
                l.rolled = l.apply_roll(&back, &[]);
                l.free_of_canvas()
            }
            None => layout.free_blocks(span, max_order),
        };
        // Units: a block above pageblock order joins the pageblocks it spans.
        let mut head: Vec<usize> = (0..l.blocks.len()).collect();
        for &(pfn, order) in &free {
            let b = l.block_of(pfn);
            if order > pb_order {
                let n = (1usize << (order - pb_order)).min(l.blocks.len() - b);
                for k in 1..n {
                    head[b + k] = b;
                    let u = std::mem::take(&mut units[b + k]);
                    let h = &mut units[b];
                    h.blocks += 1;
                    (h.user, h.slab, h.kernel) =
                        (h.user + u.user, h.slab + u.slab, h.kernel + u.kernel);
                }
            }
            units[head[b]].free[usize::from(order)] += 1;
        }
        units.retain(|u| u.blocks > 0);
        // The types the window's first events name, then those the events before it last
        // named ([`super::roll::Roll::block_types`]).
        let mut named = roll.map_or_else(HashMap::new, |r| r.block_types(pb_order));
        named.extend(hints.block_types.iter().map(|(&b, &mt)| (b, mt)));
        l.assign(&units, targets, &named, &hints.not_types);
        l.pcp_hints = hints.pcp.clone();
        l.late_hints = hints.late.clone();
        l.taken_hints = hints.taken.clone();
        if let Some(roll) = roll {
            // The window's own first events say more of a block than the roll.
            let named: HashSet<u64> = (hints.pcp.iter().map(|h| h.pfn))
                .chain(hints.freed.iter().map(|f| f.0))
                .collect();
            l.roll_hints = l.hints_of_roll(roll);
            l.roll_hints.retain(|h| !named.contains(&h.pfn));
            l.late_over_roll();
        }
        l.free = l.blocks_of(free);
        // At the file's start, the free blocks are the layout's: pagetypeinfo's counts are
        // a later read's.
        if hints.as_read {
            return l;
        }
        let want = l.counts_at_start(&targets.0, as_read, roll, &hints.freed);
        l.trim(&want);
        // A pageblock a refill rules a type out for keeps its type too.
        let named = (named.keys())
            .chain(hints.not_types.keys())
            .copied()
            .collect();
        l.make_up(&want, &named);
        l
    }

    /// The layout's pages on the canvas, and a unit per pageblock with its pages in use by
    /// kind (user, slab, kernel) for [`ZoneLayout::assign`]'s scores.
    fn units_of_layout(&mut self, layout: &Layout) -> Vec<Unit> {
        let pb_order = self.pb_order;
        let mut units: Vec<Unit> = (0..self.blocks.len())
            .map(|b| Unit {
                first: b,
                blocks: 1,
                free: vec![0; usize::from(self.max_order) + 1],
                ..Unit::default()
            })
            .collect();
        for run in layout.runs_in(self.start..self.end()) {
            let page = match run.class {
                PageClass::Buddy => Page::Free,
                PageClass::NoPage => Page::Hole,
                c if !c.managed() => Page::Absent,
                PageClass::Flagless => Page::Flagless,
                _ => Page::Used,
            };
            let i = (run.start - self.start) as usize;
            self.pages[i..i + run.count as usize].fill(page);
            // The run's pages per pageblock.
            let mut pfn = run.start;
            while pfn < run.end() {
                let b = self.block_of(pfn);
                let next = (((pfn >> pb_order) + 1) << pb_order).min(run.end());
                let n = next - pfn;
                let u = &mut units[b];
                match run.class {
                    PageClass::Mapped => u.user += n,
                    PageClass::Slab => u.slab += n,
                    PageClass::PageTable
                    | PageClass::Used
                    | PageClass::Flagless
                    | PageClass::Huge => u.kernel += n,
                    _ => {}
                }
                pfn = next;
            }
        }
        units
    }

    /// Newer kernels' `kpage_read` writes 0 for a pfn without a `struct page`, so a hole
    /// reads as flagless (`F`) there (scripts/README.md). Where the layout shows more pages
    /// managed than zoneinfo's `managed`, the longest flagless runs, the holes' shape (the
    /// PCI hole below 4 GiB is one run of 262,144 pfns; pages on per-CPU lists and flagless
    /// kernel pages lie in short runs), are taken as absent until the two agree.
    fn holes_from_flagless(&mut self, layout: &Layout, managed: u64) {
        let mut excess = self.managed().saturating_sub(managed);
        let mut runs: Vec<_> = layout
            .runs_in(self.start..self.end())
            .filter(|r| r.class == PageClass::Flagless)
            .collect();
        runs.sort_by_key(|r| std::cmp::Reverse(r.count));
        for r in runs {
            if excess == 0 {
                break;
            }
            let n = r.count.min(excess);
            let i = (r.start - self.start) as usize;
            self.pages[i..i + n as usize].fill(Page::Hole);
            excess -= n;
        }
    }

    /// A block both the roll and the text after the window show on a list: on the same list,
    /// the late hint says where on it (it outlasted the window, `super::hints`), and the
    /// roll's goes; on another, the roll's stays (it saw the free or refill that put the block
    /// on its CPU's list; a drain past the window is stamped with the CPU that ran it) and
    /// the late one goes. 6.12-4g p_thp: `awk-615` frees 0x10afda onto CPU 0's list at
    /// 298.008392 (trace line 12307), after the layout's read, and CPU 0's vmstat worker
    /// drains it, first of its run, at 330.823455 (line 39659), after the window.
    fn late_over_roll(&mut self) {
        let key = |h: &PcpHint| (h.cpu, h.order, h.mt);
        let rolled: HashMap<u64, _> = self.roll_hints.iter().map(|h| (h.pfn, key(h))).collect();
        self.late_hints
            .retain(|h| rolled.get(&h.pfn).is_none_or(|&k| k == key(h)));
        let late: HashSet<u64> = self.late_hints.iter().map(|h| h.pfn).collect();
        self.roll_hints.retain(|h| !late.contains(&h.pfn));
    }

    /// [`ZoneLayout::assign`]'s first step: each unit with a pageblock `named` takes its
    /// type. Which units are taken, and what they give each type (by migratetype index):
    /// pageblocks, and free blocks per order.
    fn assign_named(
        &mut self,
        units: &[Unit],
        named: &HashMap<u64, MigrateType>,
    ) -> (Vec<bool>, [usize; 5], [Vec<u64>; 5]) {
        let mut taken = vec![false; units.len()];
        let base = self.start >> self.pb_order;
        let mut given_blocks = [0usize; 5];
        let mut given_free: [Vec<u64>; 5] = std::array::from_fn(|_| Vec::new());
        for (i, u) in units.iter().enumerate() {
            let first = base + u.first as u64;
            let Some(&mt) = (first..first + u.blocks as u64).find_map(|b| named.get(&b)) else {
                continue;
            };
            taken[i] = true;
            self.blocks[u.first..u.first + u.blocks].fill(mt);
            let t = mt.index();
            given_blocks[t] += u.blocks;
            let g = &mut given_free[t];
            g.resize(g.len().max(u.free.len()), 0);
            for (o, &n) in u.free.iter().enumerate() {
                g[o] += n;
            }
        }
        (taken, given_blocks, given_free)
    }

    /// Types the pageblocks of `units` (module docs): a unit with a pageblock the trace names
    /// (`named`: pageblock number -> type, [`super::hints`]) takes the type named first
    /// (its lowest pageblock's, where they differ), the rest as the counts say, but never a
    /// type a refill rules out for one of its pageblocks (`not`: pageblock number -> a bit
    /// per migratetype index).
    fn assign(
        &mut self,
        units: &[Unit],
        targets: &Targets,
        named: &HashMap<u64, MigrateType>,
        not: &HashMap<u64, u8>,
    ) {
        let (kfree, kblocks) = targets;
        let base = self.start >> self.pb_order;
        let (mut taken, given_blocks, given_free) = self.assign_named(units, named);
        for mt in [
            MigrateType::Unmovable,
            MigrateType::Reclaimable,
            MigrateType::HighAtomic,
            MigrateType::Isolate,
        ] {
            let t = mt.index();
            let mut lack_blocks = (kblocks[t] as usize).saturating_sub(given_blocks[t]);
            let mut lack = kfree[t].clone();
            for (l, &n) in lack.iter_mut().zip(&given_free[t]) {
                *l = l.saturating_sub(n);
            }
            let score = |u: &Unit| -> i64 {
                let like = if mt == MigrateType::Reclaimable {
                    u.slab
                } else {
                    u.slab + u.kernel
                };
                like as i64 - u.user as i64
            };
            let mut order: Vec<usize> = (0..units.len()).collect();
            order.sort_by_key(|&i| std::cmp::Reverse(score(&units[i])));
            // The last pass's order: the fewest free pages beyond what the type lacks (as
            // it stands when that pass begins), then the score.
            let mut closest = Vec::new();
            for pass in 0..3 {
                if pass == 2 {
                    let excess = |u: &Unit| -> u64 {
                        let lack = lack.iter().chain(std::iter::repeat(&0));
                        u.free
                            .iter()
                            .zip(lack)
                            .enumerate()
                            .map(|(o, (&n, &l))| n.saturating_sub(l) << o)
                            .sum()
                    };
                    closest = order.clone();
                    closest.sort_by_key(|&i| excess(&units[i]));
                }
                let walk = if pass == 2 { &closest } else { &order };
                for &i in walk {
                    let u = &units[i];
                    if lack_blocks == 0 {
                        break;
                    }
                    let first = base + u.first as u64;
                    let ruled_out = (first..first + u.blocks as u64)
                        .any(|b| not.get(&b).is_some_and(|m| m & (1 << t) != 0));
                    if taken[i] || u.blocks > lack_blocks || ruled_out {
                        continue;
                    }
                    let has_free = u.free.iter().any(|&n| n > 0);
                    let fits = u
                        .free
                        .iter()
                        .zip(lack.iter().chain(std::iter::repeat(&0)))
                        .all(|(&n, &l)| n <= l);
                    let ok = match pass {
                        0 => has_free && fits,
                        1 => !has_free,
                        _ => true,
                    };
                    if ok {
                        taken[i] = true;
                        lack_blocks -= u.blocks;
                        for (l, &n) in lack.iter_mut().zip(&u.free) {
                            *l = l.saturating_sub(n);
                        }
                        self.blocks[u.first..u.first + u.blocks].fill(mt);
                    }
                }
            }
        }
    }
}
