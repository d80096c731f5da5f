//! What each CPU's lists held when the trace began, inferred from the trace's own first
//! events: `/proc/zoneinfo` prints each CPU's page `count` (and, from 6.7, its current `high`)
//! but not which lists the pages are on, and a list the replay starts empty refills where the
//! kernel's did not (one refill of up to `batch << CONFIG_PCP_BATCH_SCALE_MAX` pages on 7.2,
//! which then shifts every later refill and drain of that CPU).
//!
//! # The inference
//! Per CPU and list (order, migratetype), walk the trace's first events ([`Collector`]) and keep a
//! balance of blocks: `+1` for each refilled block (`mm_page_alloc_zone_locked` with
//! `percpu_refill=1`: `rmqueue_bulk` puts it on the list of the requested migratetype and
//! order), `+1` for each free of a PCP order (`free_frozen_page_commit`, 6.1's
//! `free_unref_page_commit`: the list of the page's pageblock migratetype), `-1` for each
//! allocation of a PCP order (`rmqueue_pcplist` takes the head of the requested type's list) and
//! for each drained block (`free_pcppages_bulk` prints the list's order and the page's
//! migratetype). The lowest the balance goes below zero is the number of blocks the list
//! must have held at the start: the kernel served that many without a refill. Where the head
//! shows a list empty, its start is exact (minus the balance there): at its first refill
//! (`__rmqueue_pcplist` refills only an empty list), and where a run of drains moves on from
//! it to a list of a higher `pindex` (`free_pcppages_bulk` empties a list before the next;
//! `drained_empty`).
//!
//! A free's pageblock migratetype is read off the trace: the migratetype of an allocation or a
//! drain in the same pageblock (the latest one before the free, else the first after it in the
//! head); a pageblock the head never names counts as Movable (the pages a boot leaves in use
//! outside the kernel's own pageblocks are page cache and anon). An allocation that the
//! kernel served from the buddy directly (a `percpu_refill=0` event just before it on the CPU)
//! takes nothing from a list.
//!
//! How far the walk looks: the window's first [`super::first_events::LIST_EVENTS`] events,
//! which the replay's own parse holds before the replay starts ([`Collector`],
//! [`super::first_events`]), from a file, a pipe or a compressed input alike; the first
//! refill of a list can come many seconds in, and a list the walk ends before refilling keeps
//! only a lower bound. `--infer lists=off` leaves every count order-0 Movable.
//!
//! The result is a lower bound of each list's blocks; [`ListDemand::fit`] scales it into the
//! snapshot's `count` for that CPU, and the rest of the count stays order-0 Movable, the
//! type most pages on the lists have in a running system.

use crate::trace::parse::EventKind;
use crate::trace::stats::HashMap;

use crate::trace::migratetype::Numbering;

/// PCP order slots: orders 0..=3, then the THP order.
const SLOTS: usize = 5;
/// The PCP migratetypes (Unmovable, Movable, Reclaimable).
const TYPES: usize = 3;
/// The migratetype index a pageblock the head never names counts as (Movable).
const MOVABLE: usize = 1;

/// Per CPU, per PCP order slot and migratetype: blocks the list held at the start, at least.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListDemand {
    /// `[cpu][slot][migratetype]` blocks (slot 4 is the THP order).
    pub blocks: Vec<[[u64; TYPES]; SLOTS]>,
    /// `[cpu][slot][migratetype]`: the head shows the list empty at some point, so its start
    /// is exact: refilled (a refill runs only on an empty list, `__rmqueue_pcplist`), or
    /// drained to empty (`drained_empty`).
    pub exact: Vec<[[bool; TYPES]; SLOTS]>,
    /// `[cpu][slot][migratetype]`: of those, the ones shown refilled.
    pub refilled: Vec<[[bool; TYPES]; SLOTS]>,
    /// The THP order slot 4 stands for.
    pub thp_order: Option<u8>,
    /// Events of the head read (of this zone).
    pub events: u64,
    /// Per CPU: the count at the trace's start where [`super::start_count`] inferred it
    /// (else the snapshot's).
    pub start_count: Vec<Option<u64>>,
    /// What the head shows of the zone's layout at the start
    /// ([`crate::trace::replay::layout::StartHints`]).
    pub hints: crate::trace::replay::layout::StartHints,
    /// Per CPU: the pages of its first order-0 refill where no free on the CPU's lists came
    /// before it ([`ListDemand::alloc_factor`]).
    pub first_refill: Vec<Option<u64>>,
}

impl ListDemand {
    /// CPU `cpu`'s `alloc_factor` at the start (6.7 on), where its first order-0 refill
    /// shows it: `nr_pcp_alloc` refills `batch << alloc_factor` pages unless `high` caps it
    /// (`max_nr_alloc`), and only a free changes the factor before a refill
    /// (`free_unref_page_commit`: `alloc_factor >>= 1`), so a refill of exactly `batch << k`
    /// pages (`k` up to `CONFIG_PCP_BATCH_SCALE_MAX`, `max_scale`) with no free before it
    /// started at `k`. 6.12-8g p_thp: Normal's CPU 2 refills 252 pages at its first
    /// allocation off an empty list (line 37469), `alloc_factor` 2; zoneinfo prints none.
    pub fn alloc_factor(&self, cpu: u32, batch: u64, max_scale: u8) -> Option<u8> {
        let n = self.first_refill.get(cpu as usize).copied().flatten()?;
        (0..=max_scale).find(|&k| batch > 0 && batch << k == n)
    }

    /// The lists of `cpu` as `(order, migratetype index, blocks)` holding `count` pages: the
    /// inferred blocks (scaled down in proportion when they exceed `count`), and the rest of
    /// `count` as order-0 pages of the first type whose list the head never shows empty
    /// (Movable, Unmovable, Reclaimable): such a list's start is known exactly; where every
    /// one was, of the first never shown refilled (a drain shows a list empty at one point
    /// only). When every order-0 list was refilled, the rest is dropped: the snapshot's count is older than the
    /// trace's start (`/proc` is read before the start marker).
    pub fn fit(&self, cpu: u32, count: u64) -> Vec<(u8, usize, u64)> {
        let (Some(b), Some(exact), Some(refilled)) = (
            self.blocks.get(cpu as usize),
            self.exact.get(cpu as usize),
            self.refilled.get(cpu as usize),
        ) else {
            return vec![(0, MOVABLE, count)];
        };
        let mut lists = Vec::new();
        for (slot, per_type) in b.iter().enumerate() {
            let order = match slot {
                4 => match self.thp_order {
                    Some(o) => o,
                    None => continue,
                },
                s => s as u8,
            };
            for (mt, &n) in per_type.iter().enumerate() {
                if n > 0 {
                    lists.push((order, mt, n));
                }
            }
        }
        let pages: u64 = lists.iter().map(|&(o, _, n)| n << o).sum();
        if pages > count {
            for l in &mut lists {
                l.2 = l.2 * count / pages;
            }
            lists.retain(|l| l.2 > 0);
        }
        let rest = count.saturating_sub(lists.iter().map(|&(o, _, n)| n << o).sum());
        let first =
            |known: &[[bool; TYPES]; SLOTS]| [MOVABLE, 0, 2].into_iter().find(|&t| !known[0][t]);
        if let Some(mt) = first(exact).or_else(|| first(refilled)) {
            if rest > 0 {
                match lists.iter_mut().find(|l| l.0 == 0 && l.1 == mt) {
                    Some(l) => l.2 += rest,
                    None => lists.push((0, mt, rest)),
                }
            }
        }
        lists
    }
}

impl ListDemand {
    /// Whether the trace shows `cpu`'s list of `order` and migratetype index `mt` exactly at
    /// the start (refilled, or drained empty, before anything else reached it).
    pub fn is_exact(&self, cpu: u32, order: u8, mt: usize) -> bool {
        let slot = slot_of(order, self.thp_order);
        let exact = self.exact.get(cpu as usize);
        slot.zip(exact)
            .and_then(|(s, e)| e[s].get(mt).copied())
            .unwrap_or(false)
    }
}

/// The PCP order slot of `order`, if a list takes it (`pcp_allowed_order`).
fn slot_of(order: u8, thp_order: Option<u8>) -> Option<usize> {
    if order <= 3 {
        Some(usize::from(order))
    } else if Some(order) == thp_order {
        Some(4)
    } else {
        None
    }
}

/// What the trace's head says: the lists' start per zone, and the pageblocks it names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Head {
    /// Per zone (as the `zones` given to [`Collector::new`]).
    pub zones: Vec<ListDemand>,
    /// Per pageblock the head names: its first pfn and the first migratetype named (the
    /// trace's numbering), to seed [`super::kernel::BlockTypes`].
    pub first_named: Vec<(u64, u8)>,
}

/// An event kept: zone, CPU, what it is, its pageblock and migratetype where it names one.
type Kept = (usize, u32, Rec, Option<(u64, usize)>);

/// The inference fed one event at a time (the window's first events,
/// [`super::first_events`]): the events of the zones, reduced, and the pageblocks named, kept
/// until [`Collector::finish`]. It holds some 40 bytes per event fed: the caller bounds how
/// many it feeds.
pub struct Collector {
    cpus: u32,
    zones: Vec<std::ops::Range<u64>>,
    pageblock_order: u8,
    thp_order: Option<u8>,
    numbering: Numbering,
    first_named: HashMap<u64, u8>,
    events: Vec<Kept>,
}

impl Collector {
    /// Nothing fed yet: the lists of each zone spanning the pfns of `zones`, on `cpus` CPUs
    /// (trace CPU `c` is `c % cpus`), pageblocks of `1 << pageblock_order` pages and the THP
    /// order's lists.
    pub fn new(
        cpus: u32,
        zones: &[std::ops::Range<u64>],
        pageblock_order: u8,
        thp_order: Option<u8>,
        numbering: Numbering,
    ) -> Collector {
        Collector {
            cpus: cpus.max(1),
            zones: zones.to_vec(),
            pageblock_order,
            thp_order,
            numbering,
            first_named: HashMap::default(),
            events: Vec::new(),
        }
    }

    /// Events kept so far.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Takes one event.
    pub fn feed(&mut self, ev: &crate::trace::parse::Event<'_>) {
        let numbering = self.numbering;
        let mt_of = |m: u8| usize::from(numbering.to_current(m));
        let pb = |pfn: u64| pfn >> self.pageblock_order;
        let cpu = ev.cpu.unwrap_or(0) % self.cpus;
        let (rec, named) = match ev.kind {
            EventKind::Alloc {
                pfn,
                order,
                migratetype,
                ..
            } if !ev.is_failed_alloc() => (
                Some(Rec::Alloc(order, mt_of(migratetype))),
                Some((pfn, migratetype)),
            ),
            EventKind::Free { pfn, order } => (Some(Rec::Free(pfn, order)), None),
            EventKind::FreeBatched { pfn } => (Some(Rec::FreeBatched(pfn, 0)), None),
            EventKind::ZoneLocked {
                order,
                migratetype,
                percpu_refill,
                pfn,
            } => (
                Some(Rec::ZoneLocked(
                    pfn,
                    order,
                    mt_of(migratetype),
                    percpu_refill,
                )),
                Some((pfn, migratetype)),
            ),
            EventKind::PcpuDrain {
                pfn,
                order,
                migratetype,
            } => (
                Some(Rec::Drain(pfn, order, mt_of(migratetype))),
                Some((pfn, migratetype)),
            ),
            _ => (None, None),
        };
        if let Some((pfn, m)) = named {
            self.first_named.entry(pb(pfn)).or_insert(m);
        }
        let pfn = ev.kind.pfn();
        if let (Some(r), Some(z)) = (rec, self.zones.iter().position(|z| z.contains(&pfn))) {
            self.events
                .push((z, cpu, r, named.map(|(pfn, m)| (pb(pfn), mt_of(m)))));
        }
    }

    /// The lists' start per zone, and the pageblocks named, from the events fed.
    pub fn finish(self) -> Head {
        let (pageblock_order, numbering) = (self.pageblock_order, self.numbering);
        let mt_of = |m: u8| usize::from(numbering.to_current(m));
        let mut first_named: Vec<(u64, u8)> = self
            .first_named
            .into_iter()
            .map(|(b, m)| (b << pageblock_order, m))
            .collect();
        first_named.sort_unstable();
        let named = |block: u64| {
            first_named
                .binary_search_by_key(&(block << pageblock_order), |&(p, _)| p)
                .ok()
                .map(|i| mt_of(first_named[i].1))
        };
        let zones = (0..self.zones.len())
            .map(|z| {
                let of_zone = self
                    .events
                    .iter()
                    .filter(|e| e.0 == z)
                    .map(|e| (e.1, e.2, e.3));
                balance(of_zone, self.cpus, pageblock_order, self.thp_order, &named)
            })
            .collect();
        Head { zones, first_named }
    }
}

/// The balances of one zone's lists over its events fed ([`Collector`]); `first_named`
/// gives a pageblock's first named migratetype (current numbering).
fn balance(
    events: impl Iterator<Item = (u32, Rec, Option<(u64, usize)>)>,
    cpus: u32,
    pageblock_order: u8,
    thp_order: Option<u8>,
    first_named: &dyn Fn(u64) -> Option<usize>,
) -> ListDemand {
    let pb = |pfn: u64| pfn >> pageblock_order;

    let mut balance = vec![[[0i64; TYPES]; SLOTS]; cpus as usize];
    let mut low = vec![[[0i64; TYPES]; SLOTS]; cpus as usize];
    let mut direct = vec![false; cpus as usize];
    let mut exact = vec![[[false; TYPES]; SLOTS]; cpus as usize];
    let mut refilled = exact.clone();
    let mut at_refill = vec![[[0i64; TYPES]; SLOTS]; cpus as usize];
    // Per CPU: the list of its last event, if that was a drain.
    let mut last_drain: Vec<Option<(usize, usize)>> = vec![None; cpus as usize];
    let mut named: HashMap<u64, usize> = HashMap::default();
    let mut pending_batched: Vec<u64> = Vec::new();
    // The list each block a refill of the head put on one went on (by its first pfn).
    let mut on_list: HashMap<u64, usize> = HashMap::default();
    // Per CPU: the first order-0 refill run (pages so far), and whether it is over (or a
    // free came first, which leaves it unknown).
    let mut first_refill: Vec<Option<u64>> = vec![None; cpus as usize];
    let mut first_done = vec![false; cpus as usize];
    let mut n = 0;
    for (cpu, rec, name) in events {
        n += 1;
        let c = cpu as usize;
        if !first_done[c] {
            match rec {
                Rec::ZoneLocked(_, 0, _, true) => *first_refill[c].get_or_insert(0) += 1,
                Rec::Free(..) | Rec::FreeBatched(..) if first_refill[c].is_none() => {
                    first_done[c] = true;
                }
                _ => first_done[c] = first_refill[c].is_some(),
            }
        }
        if let Some((block, mt)) = name {
            named.insert(block, mt);
        }
        // A drained block a refill of the head put on a list (`rmqueue_bulk`: the list of
        // the requested type) is drained off that list, whatever type its line prints: from
        // 6.10 `free_pcppages_bulk` prints the pageblock's type now
        // (`get_pfnblock_migratetype`), which a fallback may have changed since.
        let rec = match rec {
            Rec::Drain(pfn, order, mt) => {
                Rec::Drain(pfn, order, on_list.remove(&pfn).unwrap_or(mt))
            }
            r => r,
        };
        // The list is empty here: it held exactly what was taken from it before, less what
        // was put on it; and never less than the most it served before (a free read onto
        // this list that went to another in the kernel must not undo an allocation the list
        // did serve). The first time the head shows it empty counts.
        let mut empty_here = |s: usize, mt: usize| {
            if !exact[c][s][mt] {
                exact[c][s][mt] = true;
                at_refill[c][s][mt] = balance[c][s][mt].min(low[c][s][mt]).min(0);
            }
        };
        match rec {
            // A refill runs only on an empty list (`__rmqueue_pcplist`).
            Rec::ZoneLocked(_, order, mt, true) => {
                if let (Some(s), true) = (slot_of(order, thp_order), mt < TYPES) {
                    empty_here(s, mt);
                    refilled[c][s][mt] = true;
                }
            }
            Rec::Drain(_, order, mt) => {
                if let (Some(s), Some((ps, pmt))) = (slot_of(order, thp_order), last_drain[c]) {
                    if drained_empty((ps, pmt), (s, mt)) {
                        empty_here(ps, pmt);
                    }
                }
            }
            _ => {}
        }
        last_drain[c] = match rec {
            Rec::Drain(_, order, mt) => slot_of(order, thp_order).map(|s| (s, mt)),
            _ => None,
        };
        let mut take = |slot: Option<usize>, mt: usize, d: i64| {
            if let (Some(s), true) = (slot, mt < TYPES) {
                let b = &mut balance[c][s][mt];
                *b += d;
                low[c][s][mt] = low[c][s][mt].min(*b);
            }
        };
        match rec {
            Rec::ZoneLocked(pfn, order, mt, refill) => {
                if refill {
                    take(slot_of(order, thp_order), mt, 1);
                    on_list.insert(pfn, mt);
                } else {
                    direct[c] = true;
                }
            }
            Rec::Alloc(order, mt) => {
                if !std::mem::take(&mut direct[c]) {
                    take(slot_of(order, thp_order), mt, -1);
                }
            }
            Rec::Drain(_, order, mt) => take(slot_of(order, thp_order), mt, -1),
            Rec::Free(pfn, order) | Rec::FreeBatched(pfn, order) => {
                if matches!(rec, Rec::Free(..)) {
                    pending_batched.push(pfn);
                    if pending_batched.len() > 64 {
                        pending_batched.remove(0);
                    }
                } else if let Some(i) = pending_batched.iter().position(|&p| p == pfn) {
                    // The `mm_page_free` of the same page came first: counted there.
                    pending_batched.swap_remove(i);
                    continue;
                }
                let block = pb(pfn);
                let mt = named
                    .get(&block)
                    .copied()
                    .or_else(|| first_named(block))
                    .unwrap_or(MOVABLE);
                take(slot_of(order, thp_order), mt, 1);
                // Its list is its pageblock's type at the free, which the head names only
                // by an allocation's requested type: a drain's own line tells it better.
                on_list.remove(&pfn);
            }
        }
    }
    let blocks = (0..cpus as usize)
        .map(|c| {
            let mut b = [[0u64; TYPES]; SLOTS];
            for s in 0..SLOTS {
                for t in 0..TYPES {
                    let l = if exact[c][s][t] {
                        at_refill[c][s][t]
                    } else {
                        low[c][s][t]
                    };
                    b[s][t] = l.unsigned_abs();
                }
            }
            b
        })
        .collect();
    ListDemand {
        exact,
        refilled,
        blocks,
        thp_order,
        events: n,
        start_count: Vec::new(),
        hints: Default::default(),
        first_refill,
    }
}

/// Whether a drain of list `next` (slot, migratetype) right after a drain of list `prev` on
/// the same CPU, with no other event of the zone on that CPU between, shows `prev` empty.
/// `free_pcppages_bulk` empties a list before it moves on to the next non-empty one, in
/// `pindex` order (`order_to_pindex`: `MIGRATE_PCPTYPES * order + migratetype` below the
/// THP lists), wrapping round; a call after another without an event between starts at
/// pindex 0 (`decay_pcp_high`, `drain_pages_zone`; the free path's call follows its free).
/// So a move to a higher pindex shows `prev` empty whether or not a new call began; a move
/// to a lower one may be a new call's start, and a THP list's type is not its list on 6.1
/// (one list for all types), so neither is read.
fn drained_empty(prev: (usize, usize), next: (usize, usize)) -> bool {
    let pindex = |(s, mt): (usize, usize)| s * TYPES + mt;
    prev.0 < SLOTS - 1 && prev.1 < TYPES && next.1 < TYPES && pindex(next) > pindex(prev)
}

/// One event of the head, reduced to what the inference reads.
#[derive(Clone, Copy, Debug)]
enum Rec {
    Alloc(u8, usize),
    Free(u64, u8),
    FreeBatched(u64, u8),
    ZoneLocked(u64, u8, usize, bool),
    Drain(u64, u8, usize),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::parse::Parser;

    /// The lists `head`'s whole lines give (a partial last line is not an event).
    fn infer(
        head: &[u8],
        cpus: u32,
        zones: &[std::ops::Range<u64>],
        pageblock_order: u8,
        thp_order: Option<u8>,
        numbering: Numbering,
    ) -> Head {
        let whole = &head[..memchr::memrchr(b'\n', head).map_or(0, |nl| nl + 1)];
        let mut c = Collector::new(cpus, zones, pageblock_order, thp_order, numbering);
        Parser::new().read_all(whole, |ev| c.feed(ev)).unwrap();
        c.finish()
    }

    /// [`infer`] on two CPUs, one zone of 4 GiB, pageblock and THP order 9.
    fn infer_one_zone(head: &str) -> Head {
        let zone = 0..1 << 20;
        infer(
            head.as_bytes(),
            2,
            std::slice::from_ref(&zone),
            9,
            Some(9),
            Numbering::Current,
        )
    }

    fn line(cpu: u32, ts: u32, ev: &str) -> String {
        format!("            x-1     [{cpu:03}] .....    {ts}.000001: {ev}\n")
    }

    #[test]
    fn allocations_served_before_a_refill_are_what_the_list_held() {
        let mut head = String::new();
        // CPU 0: two Unmovable order-0 allocations without a refill, a free of a page in a
        // Movable pageblock, then a refill and one more allocation (served by the refill).
        for pfn in [0x1000, 0x1001] {
            head += &line(0, 1, &format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=0 gfp_flags=GFP_KERNEL"));
        }
        head += &line(0, 2, "mm_page_alloc: page=(____ptrval____) pfn=0x2000 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE");
        head += &line(
            0,
            2,
            "mm_page_free: page=(____ptrval____) pfn=0x2000 order=0",
        );
        head += &line(0, 3, "mm_page_alloc_zone_locked: page=(____ptrval____) pfn=0x1100 order=0 migratetype=0 percpu_refill=1");
        head += &line(0, 3, "mm_page_alloc: page=(____ptrval____) pfn=0x1100 order=0 migratetype=0 gfp_flags=GFP_KERNEL");
        // CPU 1: an order-2 Reclaimable allocation, then a drain of an order-2 block.
        head += &line(1, 4, "mm_page_alloc: page=(____ptrval____) pfn=0x3000 order=2 migratetype=2 gfp_flags=GFP_KERNEL");
        head += &line(
            1,
            4,
            "mm_page_pcpu_drain: page=(____ptrval____) pfn=0x3004 order=2 migratetype=2",
        );
        head += "a partial last li";
        // Two zones: CPU 0's events lie in the first, CPU 1's in the second.
        let h = infer(
            head.as_bytes(),
            2,
            &[0..0x3000, 0x3000..1 << 20],
            9,
            Some(9),
            Numbering::Current,
        );
        let (d, high) = (&h.zones[0], &h.zones[1]);
        assert_eq!((d.events, high.events), (6, 2));
        // CPU 0: 2 Unmovable order-0 pages before the refill; the Movable allocation came
        // before the free that put a page back, so that list held one page.
        assert_eq!(d.blocks[0][0], [2, 1, 0]);
        assert!(d.exact[0][0][0] && !d.exact[0][0][1]);
        assert_eq!(high.blocks[1][2], [0, 0, 2]);
        assert_eq!(high.blocks[0], [[0; TYPES]; SLOTS]);
        assert_eq!(d.blocks[1], [[0; TYPES]; SLOTS]);
        // The rest of the count goes to the first order-0 list never shown empty: Movable.
        assert_eq!(d.fit(0, 10), vec![(0, 0, 2), (0, 1, 8)]);
        // Scaled into a small count.
        assert_eq!(high.fit(1, 4), vec![(2, 2, 1)]);
        assert_eq!(h.first_named.first(), Some(&(0x1000, 0)));
    }

    #[test]
    fn a_first_refill_of_batch_times_a_power_of_two_shows_the_alloc_factor() {
        let alloc = |pfn: u64| {
            format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=0 gfp_flags=GFP_KERNEL")
        };
        let refill = |pfn: u64| {
            format!("mm_page_alloc_zone_locked: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=0 percpu_refill=1")
        };
        let mut head = String::new();
        // CPU 0: an allocation off its list, then a refill of 252 = 63 << 2 pages.
        head += &line(0, 1, &alloc(0x1000));
        head += &(0..252)
            .map(|i| line(0, 2, &refill(0x2000 + i)))
            .collect::<String>();
        head += &line(0, 2, &alloc(0x2000));
        // CPU 1: a free before its refill of 252: the factor was halved on the way.
        head += &line(
            1,
            3,
            "mm_page_free: page=(____ptrval____) pfn=0x3000 order=0",
        );
        head += &(0..252)
            .map(|i| line(1, 4, &refill(0x4000 + i)))
            .collect::<String>();
        head += &line(1, 4, &alloc(0x4000));
        // CPU 2: a refill `high` capped (100 pages), then a second of 126 pages.
        head += &(0..100)
            .map(|i| line(2, 5, &refill(0x5000 + i)))
            .collect::<String>();
        head += &line(2, 5, &alloc(0x5000));
        head += &(0..126)
            .map(|i| line(2, 6, &refill(0x6000 + i)))
            .collect::<String>();
        let h = infer(
            head.as_bytes(),
            3,
            // A second zone, which no event names (a one-range array reads as a mistake).
            &[0..1 << 20, 1 << 20..2 << 20],
            9,
            Some(9),
            Numbering::Current,
        );
        let d = &h.zones[0];
        assert_eq!(d.first_refill, vec![Some(252), None, Some(100)]);
        assert_eq!(d.alloc_factor(0, 63, 5), Some(2));
        // Above CONFIG_PCP_BATCH_SCALE_MAX it cannot be.
        assert_eq!(d.alloc_factor(0, 63, 1), None);
        assert_eq!(d.alloc_factor(1, 63, 5), None);
        assert_eq!(d.alloc_factor(2, 63, 5), None);
    }

    #[test]
    fn a_refill_never_lowers_what_the_list_served_before_it() {
        let mut head = String::new();
        // Pageblock 0x2000 is named Unmovable; CPU 0 frees one of its pages, allocates two
        // Unmovable pages (the list served one more than it was given), then frees two more
        // pages read onto that list, and refills it. The balance at the refill is +1, but the
        // list must have held one page at the start to serve the second allocation.
        head += &line(1, 1, "mm_page_alloc: page=(____ptrval____) pfn=0x2000 order=0 migratetype=0 gfp_flags=GFP_KERNEL");
        for pfn in [0x2001, 0x1000, 0x1001, 0x2002, 0x2003] {
            let ev = if pfn >= 0x2000 {
                format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0")
            } else {
                format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=0 gfp_flags=GFP_KERNEL")
            };
            head += &line(0, 2, &ev);
        }
        head += &line(0, 3, "mm_page_alloc_zone_locked: page=(____ptrval____) pfn=0x1100 order=0 migratetype=0 percpu_refill=1");
        let h = infer_one_zone(&head);
        let d = &h.zones[0];
        assert!(d.exact[0][0][0]);
        assert_eq!(d.blocks[0][0][0], 1);
    }

    /// A line on CPU 1 at 5 s: an order-0 refill, drain or (any other `what`) allocation of
    /// `pfn` with migratetype `mt`.
    fn ev(pfn: u32, mt: u32, what: &str) -> String {
        let ev = match what {
            "refill" => format!("mm_page_alloc_zone_locked: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype={mt} percpu_refill=1"),
            "drain" => format!("mm_page_pcpu_drain: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype={mt}"),
            _ => format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype={mt} gfp_flags=GFP_KERNEL"),
        };
        line(1, 5, &ev)
    }

    #[test]
    fn a_drain_run_that_moves_on_to_a_higher_list_shows_the_one_before_empty() {
        let mut head = String::new();
        // One drain run on CPU 1: 2 Unmovable pages, 1 Movable, 1 Reclaimable. Unmovable
        // (pindex 0) and Movable (1) are empty where the run moves on to a higher pindex.
        head += &ev(0x1001, 0, "drain");
        head += &ev(0x1002, 0, "drain");
        head += &ev(0x2001, 1, "drain");
        head += &ev(0x3001, 2, "drain");
        // Three Unmovable allocations with no refill: the kernel's list got pages the head
        // reads onto other lists (say); its start stays the 2 it was shown to hold, not 5.
        for pfn in [0x1005, 0x1006, 0x1007] {
            head += &ev(pfn, 0, "alloc");
        }
        // A run from Reclaimable (pindex 2) down to Movable: perhaps a new call from pindex
        // 0, so Reclaimable is not shown empty; its start is the lowest balance, 2.
        head += &ev(0x3002, 2, "drain");
        head += &ev(0x2002, 1, "drain");
        let h = infer_one_zone(&head);
        let d = &h.zones[0];
        assert_eq!(d.exact[1][0], [true, true, false]);
        assert_eq!(d.blocks[1][0], [2, 1, 2]);
        // The rest of a count goes to the first order-0 list not shown empty: Reclaimable.
        assert_eq!(d.fit(1, 10), vec![(0, 0, 2), (0, 1, 1), (0, 2, 7)]);
        // Every order-0 list shown empty, none refilled: the rest goes to Movable's, not
        // dropped (the drains show each list empty at one point, not the count wrong).
        let mut all = d.clone();
        all.exact[1][0][2] = true;
        assert_eq!(all.fit(1, 10), vec![(0, 0, 2), (0, 1, 6), (0, 2, 2)]);
    }

    #[test]
    fn a_drained_page_is_read_off_the_list_it_went_on_not_its_pageblocks_type_now() {
        let mut head = String::new();
        // CPU 1 refills its Movable list with two pages and hands out one.
        head += &ev(0x2000, 1, "refill");
        head += &ev(0x2001, 1, "refill");
        head += &ev(0x2000, 1, "alloc");
        // A fallback has since made 0x2001's pageblock Unmovable: from 6.10 its drain off
        // the Movable list prints 0 (`get_pfnblock_migratetype`). Then a Reclaimable page.
        head += &ev(0x2001, 0, "drain");
        head += &ev(0x3001, 2, "drain");
        let h = infer_one_zone(&head);
        let d = &h.zones[0];
        // The Unmovable list served nothing and was never shown empty (read by its printed
        // type, it held one page and was drained empty).
        assert!(!d.exact[1][0][0]);
        assert_eq!(d.blocks[1][0][0], 0);
        // The Movable list was empty at its refill, the Reclaimable one held a page.
        assert!(d.exact[1][0][1]);
        assert_eq!(d.blocks[1][0], [0, 0, 1]);
    }
}
