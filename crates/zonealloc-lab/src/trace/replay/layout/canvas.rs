//! The canvas of a zone's layout: what each pfn of its span is, each pageblock's
//! migratetype, the free blocks and the per-CPU blocks ([`ZoneLayout`]), and how it is put in
//! place in a replay zone ([`ZoneLayout::apply`]).

use crate::trace::stats::HashMap;
use zonealloc::{LayoutBlock, MigrateType, Order, Pfn, Zone};

use super::hints::PcpHint;
use crate::procfs::ZoneSnapshot;

/// What a pfn of the span is at the snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Page {
    /// Not decided yet (the synthesis only).
    Open,
    /// In a free block.
    Free,
    /// Not managed: a reserved or an offline page (it has a `struct page`).
    Absent,
    /// Not managed, and no `struct page` either: a hole, whose pageblocks pagetypeinfo does
    /// not count (`pfn_to_online_page`).
    Hole,
    /// In use, with a flag that says so (slab, page table, user memory, ...).
    Used,
    /// In use without any flag: where the kernel's per-CPU lists are (layout class `F`).
    Flagless,
    /// On a per-CPU list ([`ZoneLayout::pcp`]).
    Pcp,
}

/// Per migratetype index ([`MigrateType::index`]): free blocks per order, and pageblocks.
pub type Targets = ([Vec<u64>; 5], [u64; 5]);

/// A zone's page layout at the snapshot (module docs).
#[derive(Clone, Debug)]
pub struct ZoneLayout {
    /// The span's first pfn.
    pub start: u64,
    /// One entry per pfn of the span.
    pub pages: Vec<Page>,
    /// `pageblock_order`.
    pub pb_order: u8,
    /// The highest order of the free lists.
    pub max_order: u8,
    /// Each pageblock's migratetype, from the pageblock holding `start` on.
    pub blocks: Vec<MigrateType>,
    /// The free blocks, in pfn order.
    pub free: Vec<LayoutBlock>,
    /// The blocks on per-CPU lists: `(cpu, pfn, order)`.
    pub pcp: Vec<(u32, u64, u8)>,
    /// Those of [`ZoneLayout::pcp`] taken for a list of another type than their pageblock's
    /// (`choose_pcp`'s untyped tiers), by head pfn: the list's type.
    pub pcp_list: HashMap<u64, MigrateType>,
    /// Synthesised from the counts (no layout file).
    pub synthesised: bool,
    /// Free blocks the synthesis found no place for.
    pub unplaced: u64,
    /// Free blocks of the kernel's layout beyond pagetypeinfo's counts, taken as in use.
    pub trimmed: u64,
    /// Free blocks made from pages in use where the kernel's layout fell short of them.
    pub made_up: u64,
    /// pagetypeinfo's free blocks per migratetype index and order brought from its read to
    /// the window's start by the events in between (`ZoneLayout::counts_at_start`), where
    /// its read was found.
    pub at_start: Option<[Vec<u64>; 5]>,
    /// Pageblocks retyped to make free blocks up (`layout::retype`; in pairs, so that the
    /// pageblocks per type stay pagetypeinfo's).
    pub retyped: u64,
    /// Pages in use the synthesis is still to mark not managed ([`ZoneLayout::place_absent`]).
    pub absent: u64,
    /// Blocks the trace shows on per-CPU lists at the start (`layout::hints`), taken first
    /// by [`ZoneLayout::choose_pcp`].
    pub pcp_hints: Vec<PcpHint>,
    /// Blocks the text after the window shows on per-CPU lists at the start, which the window
    /// never names (`layout::hints`, [`super::StartHints::late`]), taken by
    /// [`ZoneLayout::choose_pcp`] after [`ZoneLayout::pcp_hints`].
    pub late_hints: Vec<PcpHint>,
    /// Pfns the trace first shows taken off a free list, in its order (`layout::hints`).
    pub taken_hints: Vec<u64>,
    /// Blocks the layout rolled forward to the window's start leaves on per-CPU lists
    /// (`layout::roll`), taken by [`ZoneLayout::choose_pcp`] after [`ZoneLayout::pcp_hints`].
    pub roll_hints: Vec<PcpHint>,
    /// Pages whose class the roll changed.
    pub rolled: u64,
}

impl ZoneLayout {
    /// A canvas for zone `z`: every pfn [`Page::Open`], every pageblock Movable.
    pub(super) fn empty(
        z: &ZoneSnapshot,
        pb_order: u8,
        max_order: u8,
        synthesised: bool,
    ) -> ZoneLayout {
        let base = z.start_pfn >> pb_order << pb_order;
        let end = z.start_pfn + z.spanned_pages;
        let nblocks = (end - base).div_ceil(1 << pb_order) as usize;
        ZoneLayout {
            start: z.start_pfn,
            pages: vec![Page::Open; z.spanned_pages as usize],
            pb_order,
            max_order,
            blocks: vec![MigrateType::Movable; nblocks],
            free: Vec::new(),
            pcp: Vec::new(),
            synthesised,
            unplaced: 0,
            trimmed: 0,
            made_up: 0,
            at_start: None,
            retyped: 0,
            absent: 0,
            pcp_hints: Vec::new(),
            late_hints: Vec::new(),
            taken_hints: Vec::new(),
            roll_hints: Vec::new(),
            rolled: 0,
            pcp_list: HashMap::default(),
        }
    }

    /// One past the span's last pfn.
    pub fn end(&self) -> u64 {
        self.start + self.pages.len() as u64
    }

    /// The pageblock index of `pfn`.
    pub(super) fn block_of(&self, pfn: u64) -> usize {
        ((pfn >> self.pb_order) - (self.start >> self.pb_order)) as usize
    }

    /// The migratetype of `pfn`'s pageblock.
    pub fn type_of(&self, pfn: u64) -> MigrateType {
        self.blocks[self.block_of(pfn)]
    }

    /// What `pfn` is (absent outside the span).
    pub fn page(&self, pfn: u64) -> Page {
        match pfn.checked_sub(self.start) {
            Some(i) if i < self.pages.len() as u64 => self.pages[i as usize],
            _ => Page::Absent,
        }
    }

    /// Free blocks per migratetype index and order `0..=max_order`.
    pub fn free_by_type(&self) -> [Vec<u64>; 5] {
        let mut n: [Vec<u64>; 5] =
            std::array::from_fn(|_| vec![0u64; usize::from(self.max_order) + 1]);
        for b in &self.free {
            n[b.list.index()][b.order.index()] += 1;
        }
        n
    }

    /// Pages that are neither absent nor holes.
    pub fn managed(&self) -> u64 {
        let managed = |p: &&Page| !matches!(p, Page::Absent | Page::Hole);
        self.pages.iter().filter(managed).count() as u64
    }

    /// The first pfn of each pageblock whose pfns in the span are all holes: pageblocks the
    /// kernel's pagetypeinfo does not count.
    pub fn hole_blocks(&self) -> Vec<u64> {
        let pb = 1u64 << self.pb_order;
        let mut out = Vec::new();
        let mut first = self.start;
        while first < self.end() {
            let next = ((first / pb + 1) * pb).min(self.end());
            let (i, j) = ((first - self.start) as usize, (next - self.start) as usize);
            if self.pages[i..j].iter().all(|&p| p == Page::Hole) {
                out.push(first);
            }
            first = next;
        }
        out
    }

    /// Puts `zone` (fresh, spanning this layout's span) in this state: pageblock types,
    /// pages in use (the per-CPU blocks among them, allocated at their order), free blocks.
    /// Returns the pages in use, in pfn order, per pageblock migratetype index.
    pub fn apply(&self, zone: &Zone) -> Result<[Vec<u64>; 5], String> {
        let e = |what: &str, e: &dyn std::fmt::Display| format!("{what}: {e}");
        for (b, &mt) in self.blocks.iter().enumerate() {
            if mt != MigrateType::Movable {
                let first = ((self.start >> self.pb_order) + b as u64) << self.pb_order;
                zone.set_pageblock_type(Pfn(first.max(self.start)), mt)
                    .map_err(|x| e("a pageblock type", &x))?;
            }
        }
        let mut used: [Vec<u64>; 5] = Default::default();
        let in_use = |p: &Page| matches!(p, Page::Used | Page::Flagless | Page::Open);
        let n = self.pages.len();
        let mut i = 0usize;
        let mut runs = Vec::new();
        // Run by run of pages in use, each pageblock's part of a run at once.
        while let Some(k) = self.pages[i..].iter().position(in_use) {
            let j = i + k;
            let len = self.pages[j..].iter().position(|p| !in_use(p));
            i = j + len.unwrap_or(n - j);
            let (first, end) = (self.start + j as u64, self.start + i as u64);
            runs.push((Pfn(first), Pfn(end), Order::ZERO));
            let mut p = first;
            while p < end {
                let next = (((p >> self.pb_order) + 1) << self.pb_order).min(end);
                used[self.type_of(p).index()].extend(p..next);
                p = next;
            }
        }
        // Each kind at once: the zone's sizes are recomputed twice, not once a run and once a
        // per-CPU block (7.2 p2: 6962 calls, 6.2 M instructions).
        zone.add_allocated_ranges(&runs)
            .map_err(|x| e("pages in use", &x))?;
        let mut pcp = Vec::with_capacity(self.pcp.len());
        for &(_, pfn, order) in &self.pcp {
            let o = Order::new(order).ok_or_else(|| format!("per-CPU order {order}"))?;
            pcp.push((Pfn(pfn), Pfn(pfn + (1u64 << order)), o));
        }
        zone.add_allocated_ranges(&pcp)
            .map_err(|x| e("a per-CPU block", &x))?;
        // Each call adds its blocks at their lists' tails (`FreePlacement::ToTail`).
        for wave in self.free_waves() {
            zone.add_free_blocks(&wave)
                .map_err(|x| e("free blocks", &x))?;
        }
        Ok(used)
    }

    /// The free blocks in the calls that give each free list the kernel's head
    /// ([`ZoneLayout::taken_hints`]): wave `k` holds the `k`-th block the trace takes off each
    /// list, the last wave the blocks it does not take; each in pfn order.
    pub fn free_waves(&self) -> Vec<Vec<LayoutBlock>> {
        let mut ranked = vec![false; self.free.len()];
        let mut pos: std::collections::HashMap<(u8, usize), usize> = Default::default();
        let mut waves: Vec<Vec<LayoutBlock>> = Vec::new();
        for &pfn in &self.taken_hints {
            let k = self.free.partition_point(|b| b.pfn.0 <= pfn);
            let Some(k) = k.checked_sub(1) else {
                continue;
            };
            let b = self.free[k];
            if ranked[k] || pfn >= b.pfn.0 + (1u64 << b.order.get()) {
                continue;
            }
            ranked[k] = true;
            let p = pos.entry((b.order.get(), b.list.index())).or_insert(0);
            if waves.len() <= *p {
                waves.push(Vec::new());
            }
            waves[*p].push(b);
            *p += 1;
        }
        let rest = (self.free.iter().zip(&ranked)).filter(|(_, &r)| !r);
        waves.push(rest.map(|(b, _)| *b).collect());
        for w in &mut waves {
            w.sort_by_key(|b| b.pfn);
        }
        waves
    }
}
