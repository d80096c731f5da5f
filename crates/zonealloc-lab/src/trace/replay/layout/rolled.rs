//! The canvas brought to a roll (`roll.rs`): the roll's states on the pages, the free blocks
//! re-formed from the canvas's free pages as the buddy merges them (the greedy split,
//! [`crate::procfs::free_blocks`]), and the blocks the roll leaves on lists as hints for the
//! lists' set-up ([`ZoneLayout::choose_pcp`]).

use zonealloc::{LayoutBlock, Order, Pfn};

use super::canvas::{Page, ZoneLayout};
use super::hints::{PcpHint, StartHints};
use super::roll::{After, Listed, Roll};
use crate::procfs::{free_blocks, LayoutRun, PageClass};

impl ZoneLayout {
    /// Puts `roll` on the canvas (module docs): pages in use become [`Page::Used`], free ones
    /// [`Page::Free`], listed ones [`Page::Flagless`] (where kpageflags shows a page on a
    /// list); then the blocks the window first frees (`freed`, `(pfn, order)`,
    /// [`super::StartHints::freed`]) are in use, whatever came before: a page freed onto a
    /// list before the start and allocated off it untraced (`alloc_pages_bulk`; 6.1-4g-2node
    /// p_prodcons: 0x106273, freed onto CPU 2's list at 73.124312, line 12517, is freed by
    /// `kworker/1:1` at 125.169405, line 27413, with no event between). Pages not managed
    /// stay so. Returns the pages whose class changed.
    pub(super) fn apply_roll(&mut self, roll: &Roll, freed: &[(u64, u8)]) -> u64 {
        let mut roll = roll.clone();
        for &(pfn, order) in freed {
            roll.set(pfn..pfn.saturating_add(1u64 << order.min(20)), After::InUse);
        }
        let mut changed = 0u64;
        for (r, st) in roll.spans() {
            let (s, e) = (r.start.max(self.start), r.end.min(self.end()));
            if s >= e {
                continue;
            }
            let to = match st {
                After::InUse => Page::Used,
                After::Free => Page::Free,
                After::Listed(_) => Page::Flagless,
            };
            let (i, j) = ((s - self.start) as usize, (e - self.start) as usize);
            for p in &mut self.pages[i..j] {
                if !matches!(p, Page::Absent | Page::Hole) && *p != to {
                    *p = to;
                    changed += 1;
                }
            }
        }
        changed
    }

    /// The free blocks of the canvas's free pages: each run's greedy split into aligned blocks
    /// of at most `max_order`, as `__free_one_page` merges free buddies.
    pub(super) fn free_of_canvas(&self) -> Vec<(u64, u8)> {
        let mut out = Vec::new();
        let mut i = 0usize;
        let n = self.pages.len();
        while let Some(k) = self.pages[i..].iter().position(|&p| p == Page::Free) {
            let j = i + k;
            let len = self.pages[j..].iter().position(|&p| p != Page::Free);
            i = j + len.unwrap_or(n - j);
            let run = LayoutRun {
                start: self.start + j as u64,
                count: (i - j) as u64,
                class: PageClass::Buddy,
            };
            free_blocks(&run, self.max_order, &mut out);
        }
        out
    }

    /// The blocks `roll` leaves on lists, as hints in the order the set-up frees them
    /// ([`ZoneLayout::choose_pcp`]): the refilled ones first, the last refilled first (tail
    /// to head, `rmqueue_bulk` appends), then the freed ones, the first freed first (each
    /// free puts its block at the head). A free's list is its pageblock's type here.
    pub(super) fn hints_of_roll(&self, roll: &Roll) -> Vec<PcpHint> {
        let mut listed: Vec<Listed> = (roll.listed().into_iter())
            .filter(|l| l.head >= self.start && l.head + (1u64 << l.order) <= self.end())
            .collect();
        listed.sort_by_key(|l| {
            (
                !l.refilled,
                if l.refilled { u64::MAX - l.seq } else { l.seq },
            )
        });
        listed
            .iter()
            .map(|l| PcpHint {
                cpu: l.cpu,
                pfn: l.head,
                order: l.order,
                mt: l.mt.unwrap_or_else(|| self.type_of(l.head).index()),
                drained: l.refilled,
            })
            .collect()
    }

    /// The free blocks of `free` as [`LayoutBlock`]s on their pageblocks' lists.
    pub(super) fn blocks_of(&self, free: Vec<(u64, u8)>) -> Vec<LayoutBlock> {
        free.into_iter()
            .filter_map(|(pfn, order)| {
                Some(LayoutBlock {
                    pfn: Pfn(pfn),
                    order: Order::new(order)?,
                    list: self.type_of(pfn),
                })
            })
            .collect()
    }

    /// The layout rolled *back* to the replay's first event (`--whole-file`), as a [`Roll`]
    /// for [`ZoneLayout::apply_roll`]: `capture-kmem` reads the layout first, right after
    /// the file's start, but its `od` walk of `/proc/kpageflags` takes seconds (6.12-4g-wq
    /// p_pressure: 499.19-541.69 s, 44 000 trace lines), and a pfn read after its first event
    /// shows what that event left. The state *before* each pfn's first event is the start's,
    /// whenever the walk read it, so the first event names it (`hints`, first events only):
    /// a block first taken off a free list (`mm_page_alloc_zone_locked`, from
    /// `__rmqueue_smallest`) was free; one first freed (`mm_page_free`,
    /// `mm_page_free_batched`) in use; one first allocated off a list or drained
    /// (`rmqueue_pcplist`, `free_pcppages_bulk`) on that CPU's list. A pfn no event names
    /// is as the layout read it.
    pub(super) fn roll_back(&self, hints: &StartHints) -> Roll {
        let mut roll = Roll::default();
        let span = |pfn: u64, order: u8| pfn..pfn.saturating_add(1u64 << order.min(20));
        for &(pfn, order) in &hints.taken_blocks {
            roll.set(span(pfn, order), After::Free);
        }
        for &(pfn, order) in &hints.freed {
            roll.set(span(pfn, order), After::InUse);
        }
        for (seq, h) in hints.pcp.iter().enumerate() {
            let listed = Listed {
                cpu: h.cpu,
                head: h.pfn,
                order: h.order,
                mt: Some(h.mt),
                refilled: h.drained,
                seq: seq as u64,
                ts: None,
            };
            roll.set(span(h.pfn, h.order), After::Listed(listed));
        }
        roll.events = (hints.taken_blocks.len() + hints.freed.len() + hints.pcp.len()) as u64;
        roll
    }
}
