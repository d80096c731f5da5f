//! What the window's first events show of the start that the kernel's layout file cannot:
//! kpageflags records no migratetype, and shows a page on a per-CPU list as a page without a
//! flag, like any other flagless page in use. The trace names both, for the pageblocks and
//! pages it touches ([`HintCollector`], fed the events [`super::super::first_events`] holds):
//!
//! - **a pageblock's type at the start**: the first event in the window that names the type
//!   of a page's pageblock. `mm_page_alloc_extfrag` prints the list it fell back to
//!   (`fallback_migratetype`: the pageblock's type before any claim, `__rmqueue_claim`,
//!   `__rmqueue_steal`); `mm_page_alloc_zone_locked` the free list the block came off
//!   (`__rmqueue_smallest` takes only from the requested type's list, and from 6.10 a free
//!   block sits on its pageblock's list; but a claim's `zone_locked` line, which its `extfrag`
//!   line follows, names the type the claim gave: [`claimed`]); `mm_page_pcpu_drain` the
//!   pageblock's type at the drain (`free_pcppages_bulk`: `get_pfnblock_migratetype` from
//!   6.10 on; 6.1's `get_pcppage_migratetype`, the type at the free). `mm_page_alloc`
//!   prints the requested type, not the pageblock's, and names nothing here. The first event
//!   is taken: a later one may follow a claim that retyped the pageblock.
//! - **a block on a per-CPU list at the start**: a block whose first event in the window is
//!   its drain (`free_pcppages_bulk` takes it off a list), or its allocation without a
//!   `mm_page_alloc_zone_locked` for it before (`rmqueue_pcplist` served it from a list:
//!   an allocation from the buddy prints `zone_locked` first, and a fallback
//!   `extfrag`). A block first freed, refilled or fallen back to was not on a list. The CPU
//!   is the event's (a drain by the vmstat worker runs on the list's own CPU,
//!   `refresh_cpu_vm_stats`; a remote drain is stamped with the draining CPU).
//!
//! - **a type a pageblock was not**: a page freed onto a CPU's list that no event names
//!   before that CPU refills its list of the page's order and type `T` was not on that list,
//!   so its pageblock was not of type `T` ([`not_listed`]).
//! - **a block on a per-CPU list at the start that the window never names**: the text after
//!   the window (the after-snapshot's reads, kept for the end state) shows it drained or
//!   allocated as above, where no event of the window or before it in that text named any of
//!   its pages ([`HintCollector::feed_after`]): nothing put it on a list in between, so it
//!   sat on that list from before the start to then ([`StartHints::late`]). The layout
//!   files show such a page flagless, on some list; the trace names the CPU, order and list.
//!   6.12-4g p_thp: `cat-648`'s free at 330.877845 drains 12 order-1 and 9 order-2 blocks
//!   off CPU 0's lists (trace lines 40683-40705) that no event of the window names, and
//!   CPU 0's vmstat worker drains 851 pages at 330.823455 (line 39659 on), the list's tail.
//!
//! - **the order of a free list**: the free blocks holding the pfns first named taken off a
//!   free list, in the order taken, were at the head of their lists in that order
//!   (`__rmqueue_smallest` takes the first entry; `expand` puts what it splits off at the
//!   head of lower orders' lists, where the next take finds it).
//!
//! The layout then gives hinted pageblocks their type before matching pagetypeinfo's counts
//! ([`super::assign`]), and puts hinted blocks on their lists first, in an order that makes
//! the kernel's first drains and allocations take them again ([`super::pcp`]), and puts the
//! free blocks on their lists in the order the kernel took them ([`super::ZoneLayout::apply`]).

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use crate::trace::stats::HashMap as FastMap;
use std::ops::Range;

use zonealloc::MigrateType;

use crate::trace::migratetype::Numbering;
use crate::trace::parse::{Event, EventKind};

mod claimed;
mod not_listed;

/// The highest order a block named by an event can have here: a late hint's overlap check
/// looks at the heads of every order up to it (`MAX_PAGE_ORDER` is 10 on x86-64).
const MAX_NAMED_ORDER: u8 = 12;

/// A block the trace shows on a per-CPU list at the start (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcpHint {
    /// The CPU (trace CPU modulo the zone's CPUs).
    pub cpu: u32,
    /// The block's first pfn.
    pub pfn: u64,
    /// Its order.
    pub order: u8,
    /// The list's migratetype index (current numbering).
    pub mt: usize,
    /// First seen drained (the list's tail), else allocated (its head).
    pub drained: bool,
}

/// What the trace shows of one zone's start (module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StartHints {
    /// Pageblock number (`pfn >> pageblock_order`) -> its type at the start.
    pub block_types: HashMap<u64, MigrateType>,
    /// Blocks on per-CPU lists at the start, in the order the trace first names them.
    pub pcp: Vec<PcpHint>,
    /// Pfns first named taken off a free list (`mm_page_alloc_zone_locked`,
    /// `mm_page_alloc_extfrag`), in the trace's order: the free blocks holding them were
    /// free at the start, and the first taken of a list was at its head
    /// (`get_page_from_free_area` takes the first entry).
    pub taken: Vec<u64>,
    /// [`StartHints::taken`] as `(pfn, order)`: the block the event took was free at the start
    /// (`__rmqueue_smallest` takes a free block of at least the order; an extfrag event's
    /// order is not read, 0).
    pub taken_blocks: Vec<(u64, u8)>,
    /// Blocks on per-CPU lists at the start that the window never names, from the text after
    /// it (module docs), in the order that text names them.
    pub late: Vec<PcpHint>,
    /// Blocks first named freed (`mm_page_free`, `mm_page_free_batched`), as `(pfn, order)`:
    /// in use at the start, whatever the layout rolled to it says (a page freed onto a list
    /// before the start and taken off it untraced, by `alloc_pages_bulk`, is freed again).
    pub freed: Vec<(u64, u8)>,
    /// The kernel's layout rolled forward to the window's start: what the events between
    /// its read and the start marker left each pfn they name as (`layout/roll.rs`).
    pub roll: Option<super::roll::Roll>,
    /// Pageblock number -> the types a refill rules out, a bit per migratetype index
    /// (`hints/not_listed.rs`).
    pub not_types: HashMap<u64, u8>,
    /// The layout was read at the replay's first event (`--whole-file`): its state is rolled
    /// back over the trace's first events (`ZoneLayout::roll_back`), not matched to
    /// pagetypeinfo's counts, read later.
    pub as_read: bool,
}

impl StartHints {
    /// Names the type of each pageblock no event named by the list a block of it sits on at
    /// the start ([`StartHints::pcp`], the first such block): a freed page goes on the list
    /// of its pageblock's type at the free (`free_frozen_page_commit`'s `migratetype`, from
    /// `get_pfnblock_migratetype` in `free_frozen_pages`, 7.2; 6.1's `free_unref_page`,
    /// `get_pcppage_migratetype`), so the pageblock was of the list's type then. Even where a
    /// refill ruled that type out ([`StartHints::not_types`]): a ruling rests on no event
    /// naming the freed page before the refill, and a take by `alloc_pages_bulk` prints none
    /// either, while a hit is an event. 7.2-2g p_prodcons: `awk-336` takes 0x140d-0x140f off
    /// CPU 0's Reclaimable list at 103.954975 (no event names their pageblock); typed
    /// Unmovable to match pagetypeinfo, the set-up put other pages there. 7.2-3g-16cpu-wq
    /// p_compact: `kworker/5:1` frees 0x29570-0x29573 at 122.882029 (line 9884), never named
    /// again, and CPU 5 refills its Unmovable list at 133.617727: ruled not Unmovable, yet
    /// `dash-1320` takes 0x295c8 of that pageblock off CPU 3's Unmovable list at 122.864350.
    fn type_by_lists(&mut self, pageblock_order: u8) {
        for h in &self.pcp {
            if let Some(mt) = MigrateType::from_index(h.mt).filter(|_| h.mt < 3) {
                (self.block_types)
                    .entry(h.pfn >> pageblock_order)
                    .or_insert(mt);
            }
        }
    }
}

/// Collects [`StartHints`] per zone, one event at a time.
pub struct HintCollector {
    cpus: u32,
    zones: Vec<Range<u64>>,
    pageblock_order: u8,
    numbering: Numbering,
    /// Each pfn an event named, with the highest order named there.
    seen: FastMap<u64, u8>,
    /// Fed the text after the window ([`HintCollector::feed_after`]).
    after: bool,
    hints: Vec<StartHints>,
    not_listed: not_listed::NotListed,
    claims: claimed::Claims,
}

impl HintCollector {
    /// Nothing fed yet: zones spanning `zones`, on `cpus` CPUs (trace CPU `c` is
    /// `c % cpus`), pageblocks of `1 << pageblock_order` pages.
    pub fn new(
        cpus: u32,
        zones: &[Range<u64>],
        pageblock_order: u8,
        numbering: Numbering,
    ) -> HintCollector {
        HintCollector {
            cpus: cpus.max(1),
            zones: zones.to_vec(),
            pageblock_order,
            numbering,
            seen: FastMap::default(),
            after: false,
            hints: vec![StartHints::default(); zones.len()],
            not_listed: not_listed::NotListed::new(cpus.max(1)),
            claims: claimed::Claims::new(cpus.max(1)),
        }
    }

    /// Takes one event.
    pub fn feed(&mut self, ev: &Event<'_>) {
        if ev.kind.is_work() {
            return;
        }
        let cpu = ev.cpu.unwrap_or(0) % self.cpus;
        let pfn = ev.kind.pfn();
        let Some(z) = self.zones.iter().position(|r| r.contains(&pfn)) else {
            return;
        };
        if self.after {
            return self.feed_late(ev, z, cpu);
        }
        let (pb, numbering) = (self.pageblock_order, self.numbering);
        // The lists' orders: to PAGE_ALLOC_COSTLY_ORDER, and the THP order (pageblock order).
        let pcp_order = |o: u8| o <= 3 || o == pb;
        let mt_of = |m: u8| usize::from(numbering.to_current(m));
        self.not_listed.feed(z, cpu, &ev.kind, pcp_order, mt_of);
        let claimed = self.claims.take(cpu, pfn);
        match ev.kind {
            EventKind::Extfrag {
                fallback_migratetype,
                ..
            } => {
                if claimed {
                    self.retype_block(z, pfn, fallback_migratetype);
                }
                self.name_block(z, pfn, 0, fallback_migratetype);
                self.off_free_list(z, pfn, 0);
            }
            EventKind::ZoneLocked {
                order, migratetype, ..
            } => {
                let typed = self.name_block(z, pfn, order, migratetype);
                self.claims.put(cpu, pfn, typed);
                self.off_free_list(z, pfn, order);
            }
            EventKind::PcpuDrain {
                order, migratetype, ..
            } => {
                self.name_block(z, pfn, 0, migratetype);
                self.on_list(z, cpu, pfn, order, migratetype, true);
            }
            EventKind::Alloc {
                order, migratetype, ..
            } if !ev.is_failed_alloc() => {
                self.on_list(z, cpu, pfn, order, migratetype, false);
            }
            EventKind::Free { order, .. } => self.freed_first(z, pfn, order),
            EventKind::FreeBatched { .. } => self.freed_first(z, pfn, 0),
            EventKind::Alloc { .. } => {
                self.name(pfn, 0);
            }
            EventKind::KswapdWake { .. }
            | EventKind::KswapdSleep { .. }
            | EventKind::VmstatUpdate
            | EventKind::VmstatShepherd
            | EventKind::CompactIsolate { .. } => {}
        }
    }

    /// Takes the text after the window (`text`: from inside the window's end marker's line,
    /// as [`crate::trace::ingest::Tail`] keeps it), once every event of the window was fed:
    /// its blocks first drained or allocated off a list, none of whose pages an earlier event
    /// named, go to [`StartHints::late`] (module docs); it names no pageblock, free list or
    /// free (the window's own first events do).
    pub fn feed_after(&mut self, text: &[u8]) {
        self.feed_after_with(text, |_| {});
    }

    /// [`HintCollector::feed_after`], each event also handed to `also` after the hints took
    /// it (one parse for both); whether the text was read to its end.
    pub fn feed_after_with(&mut self, text: &[u8], mut also: impl FnMut(&Event<'_>)) -> bool {
        self.after = true;
        let body = memchr::memchr(b'\n', text).map_or(&text[..0], |nl| &text[nl + 1..]);
        // A slice reads without error; a line over the parser's limit ends the hints there.
        crate::trace::parse::Parser::new()
            .read_all(body, |ev| {
                self.feed(ev);
                also(ev);
            })
            .is_ok()
    }

    /// [`HintCollector::feed`] past the window (`feed_after`): event `ev` of zone `z` on `cpu`.
    fn feed_late(&mut self, ev: &Event<'_>, z: usize, cpu: u32) {
        let (pfn, order, listed) = match ev.kind {
            EventKind::PcpuDrain {
                pfn,
                order,
                migratetype,
            } => (pfn, order, Some((migratetype, true))),
            EventKind::Alloc {
                pfn,
                order,
                migratetype,
                ..
            } if !ev.is_failed_alloc() => (pfn, order, Some((migratetype, false))),
            EventKind::Alloc { pfn, .. }
            | EventKind::Extfrag { pfn, .. }
            | EventKind::FreeBatched { pfn } => (pfn, 0, None),
            EventKind::ZoneLocked { pfn, order, .. } | EventKind::Free { pfn, order } => {
                (pfn, order, None)
            }
            EventKind::KswapdWake { .. }
            | EventKind::KswapdSleep { .. }
            | EventKind::VmstatUpdate
            | EventKind::VmstatShepherd
            | EventKind::CompactIsolate { .. } => return,
        };
        if let Some((m, drained)) = listed.filter(|_| !self.named_within(pfn, order)) {
            let h = self.hint(cpu, pfn, order, m, drained);
            self.hints[z].late.push(h);
        }
        self.name(pfn, order);
    }

    /// Records that an event named the block `pfn` of `order`; whether `pfn` was named
    /// before.
    fn name(&mut self, pfn: u64, order: u8) -> bool {
        match self.seen.entry(pfn) {
            Entry::Vacant(v) => {
                v.insert(order);
                true
            }
            Entry::Occupied(mut o) => {
                let top = o.get_mut();
                *top = (*top).max(order);
                false
            }
        }
    }

    /// Whether an event named a block holding a page of the block `pfn` of `order`: one at
    /// `pfn` aligned down to its order, or one inside the block.
    fn named_within(&self, pfn: u64, order: u8) -> bool {
        let inside = 1u64 << order.min(MAX_NAMED_ORDER);
        (0..=MAX_NAMED_ORDER).any(|k| {
            let head = pfn & !((1u64 << k) - 1);
            self.seen.get(&head).is_some_and(|&o| o >= k)
        }) || (1..inside).any(|i| self.seen.contains_key(&(pfn + i)))
    }

    /// The pageblocks of the block `pfn` of `order` were of type `m` (trace numbering), unless
    /// an earlier event named them; whether this named `pfn`'s own pageblock.
    fn name_block(&mut self, z: usize, pfn: u64, order: u8, m: u8) -> bool {
        let Some(mt) = MigrateType::from_index(usize::from(self.numbering.to_current(m))) else {
            return false;
        };
        let first = pfn >> self.pageblock_order;
        // A block above pageblock order spans several (at most 2^(MAX_ORDER - pb order)).
        let n = 1u64 << order.saturating_sub(self.pageblock_order).min(10);
        let named = !self.hints[z].block_types.contains_key(&first);
        for b in first..first + n {
            self.hints[z].block_types.entry(b).or_insert(mt);
        }
        named
    }

    /// `pfn`'s pageblock was of type `m` (trace numbering) at the start, not the type the
    /// claim's own `mm_page_alloc_zone_locked` named first ([`claimed`]).
    fn retype_block(&mut self, z: usize, pfn: u64, m: u8) {
        if let Some(mt) = MigrateType::from_index(usize::from(self.numbering.to_current(m))) {
            self.hints[z]
                .block_types
                .insert(pfn >> self.pageblock_order, mt);
        }
    }

    /// The block `pfn` of `order` was taken off a free list: recorded if this is the first
    /// event naming `pfn`.
    fn off_free_list(&mut self, z: usize, pfn: u64, order: u8) {
        if self.name(pfn, order) {
            self.hints[z].taken.push(pfn);
            self.hints[z].taken_blocks.push((pfn, order));
        }
    }

    /// The block `pfn` of `order` was in use at the start, if this is the first event naming
    /// it or a block holding a page of it: a page of a block the window took off a free list
    /// was free at the start, and a free of it (`split_page`'s pages, freed one by one) frees
    /// a page the window allocated.
    fn freed_first(&mut self, z: usize, pfn: u64, order: u8) {
        let first = !self.named_within(pfn, order);
        if self.name(pfn, order) && first {
            self.hints[z].freed.push((pfn, order));
        }
    }

    /// The block `pfn` was on `cpu`'s list of `order` and type `m` at the start, if this is
    /// the first event naming it.
    fn on_list(&mut self, z: usize, cpu: u32, pfn: u64, order: u8, m: u8, drained: bool) {
        if self.name(pfn, order) {
            let h = self.hint(cpu, pfn, order, m, drained);
            self.hints[z].pcp.push(h);
        }
    }

    /// The block `pfn` of `order` on `cpu`'s list of type `m` (the trace's numbering).
    fn hint(&self, cpu: u32, pfn: u64, order: u8, m: u8, drained: bool) -> PcpHint {
        PcpHint {
            cpu,
            pfn,
            order,
            mt: usize::from(self.numbering.to_current(m)),
            drained,
        }
    }

    /// The hints per zone (as the `zones` given to [`HintCollector::new`]).
    pub fn finish(mut self) -> Vec<StartHints> {
        let ruled_out = self
            .not_listed
            .finish(self.hints.len(), self.pageblock_order);
        for (h, not) in self.hints.iter_mut().zip(ruled_out) {
            h.not_types = not;
            h.type_by_lists(self.pageblock_order);
        }
        self.hints
    }
}

#[cfg(test)]
mod tests;
