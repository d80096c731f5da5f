//! One zone's list balances, kept event by event as the walk reads the window's first events
//! ([`super::Collector`]), so the parse's end leaves only the frees whose pageblock no event
//! had named yet to settle.
//!
//! A free goes onto the list of its pageblock's migratetype: the latest named before it, else
//! the first named after it in the head, else Movable. Only the last needs the whole head. Such
//! a free starts a new *segment* of its CPU's lists of its order: the balances go on without it,
//! and each segment keeps its lowest balance per type. Once the head is read, the free's type
//! is known, and it adds one to its type's balance in every segment from its own on: the
//! lowest balance is the lowest of the segments' so raised, which is what a walk that knew the
//! type at the free would have found.

use std::ops::Range;

use super::span_map::SpanMap;
use super::{drained_empty, slot_of, ListDemand, Rec, MOVABLE, SLOTS, TYPES};

mod head_take;

/// Per PCP order slot and migratetype.
type PerList<T> = [[T; TYPES]; SLOTS];

/// One zone's lists, as the events so far leave them.
#[derive(Clone)]
pub(super) struct ZoneBalance {
    cpus: Vec<CpuBalance>,
    pageblock_order: u8,
    thp_order: Option<u8>,
    /// Per pageblock of the zone named so far: the latest migratetype named (current
    /// numbering).
    named: SpanMap<u8>,
    /// Per frame whose last event was its `mm_page_free` (1): the `mm_page_free_batched` of
    /// it that follows repeats that free, which was counted there. Per frame, not the last
    /// few frees: `free_unref_page_list` (6.1; `free_unref_folios` from 6.10) prints every
    /// page's `mm_page_free` (`free_pages_prepare`) before the first `mm_page_free_batched`
    /// (its commit loop), and a batch is as long as the list its caller built.
    pending_batched: SpanMap<u8>,
    /// The list each block a refill put on one went on (by its first pfn), until it leaves.
    on_list: SpanMap<u8>,
    /// Per order-0 frame the walk put on a list (a free of a named pageblock, an order-0
    /// refill) and nothing took off since: that list's CPU and type, and whether a refill put
    /// it there ([`listed_code`]).
    listed: SpanMap<u32>,
    /// Per CPU and order-0 list (`cpu * TYPES + mt`): the pages frees put on its head, the
    /// last freed last, with `bulk_takes_head` ([`ZoneBalance::head_take`]).
    tops: Vec<Vec<u64>>,
    /// Untraced bulk allocations take the pages frees put on a list's head
    /// (`Kernel::bulk_takes_head`; [`head_take`]).
    bulk_takes_head: bool,
    /// Per frame, what the head has shown of it: [`SHOWN_FREED_FIRST`] while its only
    /// event is its first order-0 free, [`SHOWN_FREED_FIRST_BATCHED`] once that free's
    /// `mm_page_free_batched` came, [`SHOWN_FREED_AGAIN`] when a single first free is
    /// followed by a free again, [`SHOWN_MORE`] after any other, 0 before any.
    shown: SpanMap<u8>,
    /// A page first shown freed, then freed again, was taken off its list before its first
    /// free too (`KernelSide::appeared`): one block more off that list at the free again.
    pub(super) appeared_takes: bool,
    events: u64,
}

/// [`ZoneBalance::shown`]: the frame's only events are its first order-0 free.
const SHOWN_FREED_FIRST: u8 = 1;
/// [`ZoneBalance::shown`]: that first free's `mm_page_free_batched` came too.
const SHOWN_FREED_FIRST_BATCHED: u8 = 3;
/// [`ZoneBalance::shown`]: first freed singly, then freed again on that CPU, awaiting the
/// free again's `mm_page_free_batched`.
const SHOWN_FREED_AGAIN: u8 = 4;
/// [`ZoneBalance::shown`]: any other event of the frame.
const SHOWN_MORE: u8 = 2;

/// One CPU's lists of a zone.
#[derive(Clone)]
struct CpuBalance {
    balance: PerList<i64>,
    /// Per slot, per segment (the first from the start, then one from each free of a
    /// pageblock not named yet): the lowest balance of each type in it so far.
    low: [Vec<[i64; TYPES]>; SLOTS],
    /// Per slot: the pageblock of the free that starts each segment after the first.
    unnamed: [Vec<u64>; SLOTS],
    /// The list is shown empty at some point (see [`ListDemand::exact`]).
    exact: PerList<bool>,
    /// Of those, the ones shown refilled.
    refilled: PerList<bool>,
    /// Where `exact`: the segment and its lowest balance when the list was first shown empty.
    at_empty: PerList<(usize, i64)>,
    /// The last event was a `percpu_refill=0` allocation from the buddy: the allocation
    /// after it took nothing from a list.
    direct: bool,
    /// The list of the last event, if that was a drain.
    last_drain: Option<(usize, usize)>,
    /// The first order-0 refill run (pages so far), and whether it is over; the pages freed
    /// on the lists before it (distinct: a batched free prints two lines).
    first_refill: Option<u64>,
    first_done: bool,
    frees_before: Vec<u64>,
    /// Events of the zone read on the CPU.
    events: u64,
    /// Per order-0 list: the pages on it from the start that no event shows until the bulk
    /// take `ZoneBalance::free` infers before their first free (`KernelSide::appeared`).
    /// Nothing the trace shows took them before that take (a traced allocation or a drain
    /// of one would name it), so the list's other pages served every event until then: the
    /// list held these on top of what its balance asks, as if taken at the start.
    reserved: [i64; TYPES],
}

impl CpuBalance {
    fn new() -> CpuBalance {
        CpuBalance {
            balance: [[0; TYPES]; SLOTS],
            low: std::array::from_fn(|_| vec![[0; TYPES]]),
            unnamed: Default::default(),
            exact: [[false; TYPES]; SLOTS],
            refilled: [[false; TYPES]; SLOTS],
            at_empty: [[(0, 0); TYPES]; SLOTS],
            direct: false,
            last_drain: None,
            first_refill: None,
            first_done: false,
            frees_before: Vec::new(),
            events: 0,
            reserved: [0; TYPES],
        }
    }

    /// Adds `d` blocks to the list (`slot`, `mt`), where there is one.
    #[inline]
    fn take(&mut self, slot: Option<usize>, mt: usize, d: i64) {
        if let (Some(s), true) = (slot, mt < TYPES) {
            let b = &mut self.balance[s][mt];
            *b += d;
            // Never empty: the first segment is there from the start.
            if let Some(low) = self.low[s].last_mut() {
                low[mt] = low[mt].min(*b);
            }
        }
    }

    /// The list is empty here: it held exactly what was taken from it before, less what
    /// was put on it; and never less than the most it served before (a free read onto this
    /// list that went to another in the kernel must not undo an allocation the list did
    /// serve). The first time the head shows it empty counts.
    fn empty_here(&mut self, s: usize, mt: usize) {
        if !self.exact[s][mt] {
            self.exact[s][mt] = true;
            let seg = self.low[s].len() - 1;
            self.at_empty[s][mt] = (seg, self.low[s][seg][mt]);
        }
    }

    /// A free onto a list of `slot` whose type (the pageblock `block`'s) the head shows later
    /// or never: a new segment.
    fn unnamed_free(&mut self, s: usize, block: u64) {
        self.unnamed[s].push(block);
        let b = self.balance[s];
        self.low[s].push(b);
    }

    /// The first order-0 refill run, as `rec` extends or ends it.
    fn first_refill(&mut self, rec: Rec) {
        if !self.first_done {
            match rec {
                Rec::ZoneLocked(_, 0, _, true) => *self.first_refill.get_or_insert(0) += 1,
                Rec::Free(pfn, _) | Rec::FreeBatched(pfn, _) if self.first_refill.is_none() => {
                    let f = &mut self.frees_before;
                    if f.len() < super::FREES_BEFORE_REFILL && !f.contains(&pfn) {
                        f.push(pfn);
                    }
                }
                _ => self.first_done = self.first_refill.is_some(),
            }
        }
    }

    /// Per list, the blocks it held at the start, at least, with each unnamed free's type
    /// given by `named` (else Movable).
    fn blocks(&self, named: &dyn Fn(u64) -> Option<usize>) -> PerList<u64> {
        std::array::from_fn(|s| self.slot_blocks(s, named))
    }

    /// [`CpuBalance::blocks`] of the lists of slot `s`.
    fn slot_blocks(&self, s: usize, named: &dyn Fn(u64) -> Option<usize>) -> [u64; TYPES] {
        // The unnamed frees' blocks so far, per type, and the lowest raised balance.
        let mut k = [0i64; TYPES];
        let mut lowest = [i64::MAX; TYPES];
        let mut at = [0i64; TYPES];
        for (seg, low) in self.low[s].iter().enumerate() {
            if seg > 0 {
                let mt = named(self.unnamed[s][seg - 1]).unwrap_or(MOVABLE);
                if mt < TYPES {
                    k[mt] += 1;
                }
            }
            for t in 0..TYPES {
                let (at_seg, at_low) = self.at_empty[s][t];
                if self.exact[s][t] && at_seg == seg {
                    at[t] = lowest[t].min(at_low + k[t]);
                }
                lowest[t] = lowest[t].min(low[t] + k[t]);
            }
        }
        let reserved = if s == 0 { self.reserved } else { [0; TYPES] };
        std::array::from_fn(|t| {
            let l = if self.exact[s][t] { at[t] } else { lowest[t] };
            l.unsigned_abs() + reserved[t].unsigned_abs()
        })
    }
}

impl ZoneBalance {
    /// No event yet, for the zone spanning the pfns of `span`, on `cpus` CPUs (at least one).
    pub(super) fn new(
        span: Range<u64>,
        cpus: u32,
        pageblock_order: u8,
        thp_order: Option<u8>,
    ) -> ZoneBalance {
        let blocks = super::blocks_of(std::slice::from_ref(&span), pageblock_order);
        ZoneBalance {
            cpus: vec![CpuBalance::new(); cpus.max(1) as usize],
            pageblock_order,
            thp_order,
            named: SpanMap::new(blocks),
            pending_batched: SpanMap::new(span.clone()),
            on_list: SpanMap::new(span.clone()),
            listed: SpanMap::new(span.clone()),
            shown: SpanMap::new(span),
            tops: vec![Vec::new(); cpus.max(1) as usize * TYPES],
            bulk_takes_head: false,
            appeared_takes: false,
            events: 0,
        }
    }

    /// Reads untraced bulk takes off the lists' heads ([`head_take`]).
    pub(super) fn set_bulk_takes_head(&mut self, on: bool) {
        self.bulk_takes_head = on;
    }

    /// One event of the zone on `cpu` (below the CPU count), naming `name` (pageblock,
    /// migratetype) where it names one; `first_named` gives a pageblock's first migratetype
    /// named so far in the whole head (final once there).
    pub(super) fn step(
        &mut self,
        cpu: u32,
        rec: Rec,
        name: Option<(u64, usize)>,
        first_named: impl Fn(u64) -> Option<usize>,
    ) {
        let thp = self.thp_order;
        if cpu as usize >= self.cpus.len() {
            return;
        }
        self.head_take(cpu, rec);
        let c = &mut self.cpus[cpu as usize];
        self.events += 1;
        c.events += 1;
        c.first_refill(rec);
        if let Some((block, mt)) = name {
            self.named.insert(block, type_code(mt));
        }
        // A drained block a refill of the head put on a list (`rmqueue_bulk`: the list of
        // the requested type) is drained off that list, whatever type its line prints: from
        // 6.10 `free_pcppages_bulk` prints the pageblock's type now
        // (`get_pfnblock_migratetype`), which a fallback may have changed since.
        let rec = match rec {
            Rec::Drain(pfn, order, mt) => {
                Rec::Drain(pfn, order, self.on_list.remove(pfn).map_or(mt, type_of))
            }
            r => r,
        };
        match rec {
            // A refill runs only on an empty list (`__rmqueue_pcplist`).
            Rec::ZoneLocked(_, order, mt, true) => {
                if let (Some(s), true) = (slot_of(order, thp), mt < TYPES) {
                    c.empty_here(s, mt);
                    c.refilled[s][mt] = true;
                }
            }
            Rec::Drain(_, order, mt) => {
                if let (Some(s), Some(prev)) = (slot_of(order, thp), c.last_drain) {
                    if drained_empty(prev, (s, mt)) {
                        c.empty_here(prev.0, prev.1);
                    }
                }
            }
            _ => {}
        }
        c.last_drain = match rec {
            Rec::Drain(_, order, mt) => slot_of(order, thp).map(|s| (s, mt)),
            _ => None,
        };
        match rec {
            Rec::ZoneLocked(pfn, order, mt, refill) => {
                if refill {
                    c.take(slot_of(order, thp), mt, 1);
                    self.on_list.insert(pfn, type_code(mt));
                } else {
                    c.direct = true;
                }
                self.forget_listed(pfn, order);
                if refill && order == 0 && mt < TYPES {
                    self.listed.insert(pfn, listed_code(cpu, mt, true));
                }
                self.show(pfn, 0);
            }
            Rec::Alloc(pfn, order, mt) => {
                if !std::mem::take(&mut c.direct) {
                    c.take(slot_of(order, thp), mt, -1);
                }
                self.forget_listed(pfn, order);
                self.show(pfn, order);
            }
            Rec::Drain(pfn, order, mt) => {
                c.take(slot_of(order, thp), mt, -1);
                self.forget_listed(pfn, order);
                self.show(pfn, 0);
            }
            Rec::Free(pfn, order) | Rec::FreeBatched(pfn, order) => {
                self.free(cpu, rec, pfn, order, first_named);
            }
        }
    }

    /// A free of `pfn` at `order` on `cpu` (`rec`, below the CPU count): onto the list of its
    /// pageblock's type, unless it repeats the `mm_page_free` of a batched page.
    ///
    /// An order-0 free of a page the walk last put on a list (a free or an order-0 refill),
    /// with no allocation, refill or drain of it since, was taken off that list untraced
    /// first: `alloc_pages_bulk` (`alloc_pages_bulk_noprof` in 6.12 and 7.2,
    /// `__alloc_pages_bulk` in 6.1) takes pages through `__rmqueue_pcplist` and prints no
    /// `mm_page_alloc`; the replay reads such a free as that take and the free
    /// (`KernelSide::freed_again`, `KernelSide::on_free`), and so does the walk, one block off
    /// that list and one onto the free's. Counted as a free alone, it raised the list's
    /// balance and lowered what the list must have held. 7.2-8g p_idle (`--whole-file`): `cat`
    /// tasks free again 384 Unmovable pages on Normal's CPU 3, which never refills; served
    /// from its start, its Unmovable list went 431 blocks below it by the file's end
    /// (`od-920`, line 57038), where the walk read 345 (line 940) and our list, given 345,
    /// ran dry at 1313.0185 under `od-920` and refilled twice (189 pages).
    #[inline]
    fn free(
        &mut self,
        cpu: u32,
        rec: Rec,
        pfn: u64,
        order: u8,
        first_named: impl Fn(u64) -> Option<usize>,
    ) {
        // (Followed only for `appeared_takes`: 0 throughout without it.)
        let shown = match self.appeared_takes {
            true => self.shown.get(pfn).unwrap_or(0),
            false => 0,
        };
        if matches!(rec, Rec::Free(..)) {
            self.pending_batched.insert(pfn, 1);
        } else if self.pending_batched.remove(pfn).is_some() {
            // The `mm_page_free` of the same page came first: counted there.
            if shown == SHOWN_FREED_FIRST {
                self.shown.insert(pfn, SHOWN_FREED_FIRST_BATCHED);
            } else if shown == SHOWN_FREED_AGAIN {
                // A page first freed singly, freed again in a batch: on the list it lies on
                // now, the first free's (`KernelSide::appeared`).
                self.shown.insert(pfn, SHOWN_MORE);
                let on = self.listed.get(pfn).map(listed_of);
                if let Some((by, mt, _)) = on.filter(|o| o.0 == cpu && self.appeared_takes) {
                    self.cpus[by as usize].reserved[mt] += 1;
                }
            }
            return;
        }
        let single = order == 0 && matches!(rec, Rec::Free(..));
        // Its list is its pageblock's type at the free, which the head names only
        // by an allocation's requested type: a drain's own line tells it better.
        self.on_list.remove(pfn);
        // Taken off the list the walk last put it on (`forget_listed` without its first remove).
        let again = self.listed.remove(pfn).map(listed_of);
        if order > 0 {
            self.forget_tails(pfn, order);
        }
        let state = match shown {
            0 if single => SHOWN_FREED_FIRST,
            // Freed again on the first free's CPU: its batch's line, if one comes, decides.
            SHOWN_FREED_FIRST if single && again.is_some_and(|a| a.0 == cpu) => SHOWN_FREED_AGAIN,
            _ => SHOWN_MORE,
        };
        if self.appeared_takes {
            self.shown.insert(pfn, state);
        }
        // The replay reads a refilled page's free of either kind so, a page freed before
        // only at its `mm_page_free` (`KernelSide::on_free`).
        if let Some((by, mt, refilled)) = again.filter(|_| order == 0) {
            let b = self.cpus.get_mut(by as usize);
            if let Some(b) = b.filter(|_| refilled || matches!(rec, Rec::Free(..))) {
                b.take(Some(0), mt, -1);
                // Its first free was of a page taken off that list too.
                if shown == SHOWN_FREED_FIRST_BATCHED && self.appeared_takes && mt < TYPES {
                    b.reserved[mt] += 1;
                }
            }
        }
        let (thp, c) = (self.thp_order, &mut self.cpus[cpu as usize]);
        let Some(s) = slot_of(order, thp) else {
            return;
        };
        let block = pfn >> self.pageblock_order;
        match (self.named.get(block).map(type_of)).or_else(|| first_named(block)) {
            Some(mt) => {
                c.take(Some(s), mt, 1);
                if order == 0 && mt < TYPES {
                    self.listed.insert(pfn, listed_code(cpu, mt, false));
                    if matches!(rec, Rec::Free(..)) {
                        self.push_top(cpu, pfn, mt);
                    }
                }
            }
            None => c.unnamed_free(s, block),
        }
    }

    /// The frames of the block of `order` at `pfn` are on no list the walk knows of.
    #[inline]
    fn forget_listed(&mut self, pfn: u64, order: u8) {
        self.listed.remove(pfn);
        self.pending_batched.remove(pfn);
        if order > 0 {
            self.forget_tails(pfn, order);
        }
    }

    /// The block of `order` at `pfn` was shown by an event other than a first free (its
    /// frames after the first too, handed out: `KernelSide::hand_out_tails`); followed only
    /// for `appeared_takes`.
    #[inline]
    fn show(&mut self, pfn: u64, order: u8) {
        if !self.appeared_takes {
            return;
        }
        for f in pfn..pfn + (1u64 << order.min(zonealloc::MAX_ORDER_LIMIT)) {
            self.shown.insert(f, SHOWN_MORE);
        }
    }

    /// [`ZoneBalance::forget_listed`]'s frames after the first.
    #[inline(never)]
    fn forget_tails(&mut self, pfn: u64, order: u8) {
        for tail in pfn + 1..pfn + (1u64 << order.min(zonealloc::MAX_ORDER_LIMIT)) {
            self.listed.remove(tail);
        }
    }

    /// The lists' start, the unnamed frees' types given by `first_named` (the whole head's).
    pub(super) fn finish(self, first_named: &dyn Fn(u64) -> Option<usize>) -> ListDemand {
        ListDemand {
            blocks: self.cpus.iter().map(|c| c.blocks(first_named)).collect(),
            exact: self.cpus.iter().map(|c| c.exact).collect(),
            refilled: self.cpus.iter().map(|c| c.refilled).collect(),
            empty_past: Vec::new(),
            thp_order: self.thp_order,
            events: self.events,
            cpu_events: self.cpus.iter().map(|c| c.events).collect(),
            start_count: Vec::new(),
            start_floor: Vec::new(),
            start_high: Vec::new(),
            hints: Default::default(),
            first_refill: self
                .cpus
                .iter()
                .map(|c| c.first_refill.map(|n| (n, c.frees_before.len() as u8)))
                .collect(),
        }
    }
}

/// A migratetype as a [`SpanMap`] holds it: plus one, 0 for none. A type from [`TYPES`] on is
/// kept as `TYPES` (no list takes any of them: every use of a type checks it against `TYPES`
/// first).
fn type_code(mt: usize) -> u8 {
    mt.min(TYPES) as u8 + 1
}

/// A list, CPU `cpu` and migratetype `mt` (below [`TYPES`]), and whether a refill (not a
/// free) put the frame there, as a [`SpanMap`] holds them: not zero.
fn listed_code(cpu: u32, mt: usize, refilled: bool) -> u32 {
    (cpu << 3 | u32::from(refilled) << 2 | mt as u32) + 1
}

/// The CPU, migratetype and refill a [`listed_code`] stands for.
fn listed_of(code: u32) -> (u32, usize, bool) {
    let c = code - 1;
    (c >> 3, (c & 3) as usize, c & 4 != 0)
}

/// The migratetype a [`type_code`] stands for.
fn type_of(code: u8) -> usize {
    usize::from(code) - 1
}
