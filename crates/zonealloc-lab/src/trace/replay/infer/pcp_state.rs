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
//! Before 6.15 (`Kernel::bulk_takes_head`), pages freed onto a list's head that a traced
//! allocation passes over were taken untraced just before it (`alloc_pages_bulk`: a fork's
//! vmalloc'd stack), and leave the balance there, as the replay takes them
//! (`balance/head_take.rs`).
//!
//! The pages themselves tell a list's start too (`shown.rs`): a list's start blocks sit at its
//! tail, behind all the head puts on it, and a drain takes the tail, so the first drain that
//! takes a block the head put on the CPU's lists shows the list's start blocks all gone: the
//! list held exactly those taken off it before. That reading needs no free's list, and
//! stands over the balance's, a lower bound or an exact start alike.
//!
//! A free's pageblock migratetype is read off the trace: the migratetype of an allocation or a
//! drain in the same pageblock (the latest one before the free, else the first after it in the
//! head); a pageblock the head never names counts as Movable (the pages a boot leaves in use
//! outside the kernel's own pageblocks are page cache and anon). An allocation that the
//! kernel served from the buddy directly (a `percpu_refill=0` event just before it on the CPU)
//! takes nothing from a list. A refill's page that only an `mm_page_alloc_extfrag` names
//! (6.15 on, and Debian's 6.12: a claimed whole block, `runs.rs`) goes on the list too. On
//! 7.2, a kworker's order-0 frees of consecutive pfns (`vfree`'s `__free_contig_range`) go
//! on the lists as the aligned blocks the kernel frees them as (`contig.rs`).
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

use crate::trace::migratetype::Numbering;
use balance::ZoneBalance;

mod balance;
mod contig;
mod irq_fate;
pub use irq_fate::went_to_buddy;
mod runs;
mod shown;
mod span_map;
#[cfg(test)]
mod tests;

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
    /// `[cpu][slot][migratetype]`: of the `exact` ones, those first shown empty past the
    /// window, in the text the end state replays ([`Head::past`]). A block that text shows
    /// on such a list from the start ([`crate::trace::replay::layout::StartHints::late`])
    /// was among those taken off it before it was shown empty, so it was there.
    pub empty_past: Vec<[[bool; TYPES]; SLOTS]>,
    /// The THP order slot 4 stands for.
    pub thp_order: Option<u8>,
    /// Events of the head read (of this zone).
    pub events: u64,
    /// Per CPU: of those, the ones on the CPU.
    pub cpu_events: Vec<u64>,
    /// Per CPU: the count at the trace's start where [`super::start_count`] inferred it
    /// (else the snapshot's).
    pub start_count: Vec<Option<u64>>,
    /// Per CPU: the least count the trace allows at its start, where
    /// [`super::start_count`] inferred the count.
    pub start_floor: Vec<Option<u64>>,
    /// Per CPU: `high` at the trace's start where [`super::start_count`] inferred it
    /// (`--whole-file` from 6.7 on; else the snapshot's).
    pub start_high: Vec<Option<u64>>,
    /// What the head shows of the zone's layout at the start
    /// ([`crate::trace::replay::layout::StartHints`]).
    pub hints: crate::trace::replay::layout::StartHints,
    /// Per CPU: the pages of its first order-0 refill, and the pages freed on the CPU's
    /// lists before it (at most [`FREES_BEFORE_REFILL`]: [`ListDemand::alloc_factor`]).
    pub first_refill: Vec<Option<(u64, u8)>>,
}

impl ListDemand {
    /// CPU `cpu`'s `alloc_factor` at the start (6.7 on), where its first order-0 refill
    /// shows it: `nr_pcp_alloc` refills `batch << alloc_factor` pages unless `high` caps it
    /// (`max_nr_alloc`), and only a free changes the factor before a refill
    /// (`free_unref_page_commit`, `free_frozen_page_commit`: `alloc_factor >>= 1`), so a
    /// refill of exactly `batch << k` pages (`k` up to `CONFIG_PCP_BATCH_SCALE_MAX`,
    /// `max_scale`) after `m` frees started at `k << m`: any larger factor that halves to `k`
    /// refills the same and leaves the same factor (`k + 1`) after. 6.12-8g p_thp: Normal's
    /// CPU 2 refills 252 pages at its first allocation off an empty list (line 37469),
    /// `alloc_factor` 2; zoneinfo prints none. 7.2-4g p_thp: Normal's CPU 3 frees a page,
    /// then refills 126 (line 9921 on): the factor was 2 (`od-589` refilled 63, then 126,
    /// before the window), which the free halved to 1.
    pub fn alloc_factor(&self, cpu: u32, batch: u64, max_scale: u8) -> Option<u8> {
        let (n, m) = self.first_refill.get(cpu as usize).copied().flatten()?;
        let k = (0..=max_scale).find(|&k| batch > 0 && batch << k == n)?;
        let start = u32::from(k) << m.min(8);
        u8::try_from(start).ok().filter(|&f| f <= max_scale)
    }

    /// The lists of `cpu` as `(order, migratetype index, blocks)` holding `count` pages: the
    /// inferred blocks (less what they exceed a count of the trace's own by, off the lowest
    /// orders first: `trim`; scaled down in proportion when they exceed zoneinfo's, read
    /// before the trace's start), and the rest of `count` as order-0 pages of the first type whose list the head never shows empty
    /// (Movable, Unmovable, Reclaimable): such a list's start is known exactly; where every
    /// one was, of the first never shown refilled (a drain shows a list empty at one point
    /// only), where `count` is the snapshot's. When every order-0 list was refilled, the rest
    /// is dropped where `count` is the snapshot's, which is older than the trace's start
    /// (`/proc` is read before the start marker). Where it is the trace's own
    /// ([`ListDemand::start_count`]: rolled back or bounded to the trace's start), an order-0
    /// list a drain showed empty held what the head shows too (`free_pcppages_bulk` empties a
    /// list before it moves on to the next), and the rest lies on lists of higher orders the
    /// head never shows. 7.2-4g-loads p_fork (`--whole-file`): Normal's CPU 0 drained 13
    /// Reclaimable order-0 pages at 14.842076, then its order-1 and order-2 lists; given the
    /// 8 pages of its count beyond the lists shown, our Reclaimable list drained 21, and two
    /// order-2 blocks the kernel drained (0x1030ec, 0x1030f4) stayed on ours. What those
    /// lists cannot hold (an odd page, what the least count does not prove) stays on that
    /// list, as before: the set-up keeps the trace's count. Higher-order lists the head never
    /// shows exist: 7.2's lists keep order 1 to 3 and the THP order too (`pcp_allowed_order`),
    /// and 7.2-4g-2node p_idle's Node 1 Normal CPU 3, whose order-0 lists all refill, held 3275
    /// pages at the file's start (its free at 484.433981 drained 137 at `high_min` 3554) of
    /// which the order-0 and order-2 lists the trace shows hold 155; its layout has aligned
    /// 512-page runs of free pages off the buddy lists. What the trace's least count
    /// ([`ListDemand::start_floor`]) proves beyond the lists it shows goes on the largest
    /// such lists first (`ListDemand::unshown`); the rest of a loosely bounded count is
    /// dropped as before.
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
        // The trace's own count, of the same moment as the lists, not zoneinfo's older one.
        let own = self.start_count.get(cpu as usize).copied().flatten() == Some(count);
        if pages > count && own {
            trim(&mut lists, pages - count);
        } else if pages > count {
            for l in &mut lists {
                l.2 = l.2 * count / pages;
            }
            lists.retain(|l| l.2 > 0);
        }
        let rest = count.saturating_sub(lists.iter().map(|&(o, _, n)| n << o).sum());
        let first =
            |known: &[[bool; TYPES]; SLOTS]| [MOVABLE, 0, 2].into_iter().find(|&t| !known[0][t]);
        // Under the trace's own count an order-0 list shown empty by a drain is held to it.
        let drained_only = || (!own).then(|| first(refilled)).flatten();
        if let Some(mt) = first(exact).or_else(drained_only) {
            add_order_0(&mut lists, mt, rest);
        } else if own {
            // Only what the trace's least count proves is there.
            let floor = self.start_floor.get(cpu as usize).copied().flatten();
            let proven = floor.unwrap_or(0).min(count).saturating_sub(count - rest);
            let higher = self.unshown(b, exact, proven);
            let placed: u64 = higher.iter().map(|&(o, _, n)| n << o).sum();
            lists.extend(higher);
            // What those lists cannot hold stays on the first order-0 list only a drain
            // showed exact, as with zoneinfo's count: what the least count does not prove,
            // and an odd page (a list of order k holds blocks of 2^k pages,
            // `pcp->count += 1 << order`). The rest of an all-refilled CPU's is dropped.
            if let Some(mt) = first(refilled) {
                add_order_0(&mut lists, mt, rest - placed);
            }
        }
        lists
    }

    /// `rest` pages as blocks of lists above order 0 that the head never shows (no block, not
    /// shown empty), the largest order first (the THP order's, then 3, 2, 1), of the first
    /// type (Movable, Unmovable, Reclaimable) that has one; what no such list takes is dropped.
    fn unshown(
        &self,
        blocks: &[[u64; TYPES]; SLOTS],
        exact: &[[bool; TYPES]; SLOTS],
        mut rest: u64,
    ) -> Vec<(u8, usize, u64)> {
        let mut out = Vec::new();
        for slot in [4usize, 3, 2, 1] {
            let order = match slot {
                4 => match self.thp_order {
                    Some(o) => o,
                    None => continue,
                },
                s => s as u8,
            };
            let free = |&t: &usize| blocks[slot][t] == 0 && !exact[slot][t];
            let (Some(mt), n) = ([MOVABLE, 0, 2].into_iter().find(free), rest >> order) else {
                continue;
            };
            if n > 0 {
                out.push((order, mt, n));
                rest -= n << order;
            }
        }
        out
    }
}

impl ListDemand {
    /// The blocks the trace shows `cpu`'s list of `order` and migratetype index `mt` held at
    /// the start, at least (exactly where [`ListDemand::is_exact`]).
    pub fn at_least(&self, cpu: u32, order: u8, mt: usize) -> u64 {
        let slot = slot_of(order, self.thp_order);
        let blocks = self.blocks.get(cpu as usize);
        slot.zip(blocks)
            .and_then(|(s, b)| b[s].get(mt).copied())
            .unwrap_or(0)
    }

    /// Whether the trace shows `cpu`'s list of `order` and migratetype index `mt` exactly at
    /// the start (refilled, or drained empty, before anything else reached it).
    pub fn is_exact(&self, cpu: u32, order: u8, mt: usize) -> bool {
        flag(&self.exact, self.thp_order, (cpu, order, mt))
    }

    /// Whether the window itself shows the list exactly ([`ListDemand::is_exact`]): not only
    /// the text past it ([`ListDemand::empty_past`]).
    pub fn is_exact_in_window(&self, cpu: u32, order: u8, mt: usize) -> bool {
        let key = (cpu, order, mt);
        self.is_exact(cpu, order, mt) && !flag(&self.empty_past, self.thp_order, key)
    }
}

/// The flag of `cpu`'s list of `order` and migratetype index `mt` in `flags` (per CPU, slot
/// and type); false where there is none.
fn flag(
    flags: &[[[bool; TYPES]; SLOTS]],
    thp_order: Option<u8>,
    (cpu, order, mt): (u32, u8, usize),
) -> bool {
    let slot = slot_of(order, thp_order);
    slot.zip(flags.get(cpu as usize))
        .and_then(|(s, e)| e[s].get(mt).copied())
        .unwrap_or(false)
}

impl Head {
    /// The window's head (`self`), with the lists of each CPU it shows no event of in a zone
    /// taken from `read_on`: the same walk read on past the window, through the text the end
    /// state replays (the after-snapshot's reads). Those lists first shown empty past the
    /// window are marked ([`ListDemand::empty_past`]).
    ///
    /// A CPU the window leaves alone keeps its lists to the text past it, and there its
    /// first events show them as a busy CPU's first events in the window do:
    /// `__rmqueue_pcplist` refills only an empty list, so a refill shows the list's start
    /// exactly, less what came off it before. 7.2-4g-6cpu p_idle: Normal's CPU 3 has no
    /// event in the window (281.70-307.59 s) and 805 pages at zoneinfo's read; `cat-945`, the
    /// after-snapshot's buddyinfo reader, takes two Movable pages off its list (0x1025b0 and
    /// 0x110833, trace lines 67044 and 67050) and refills 63 at 307.604347 (line 67052). Read
    /// in the window alone, all 805 were Movable (the rest of a count goes to the first
    /// order-0 list never shown empty), and ours served `cat-945` from them where the
    /// kernel refilled: buddyinfo's order 0 was 63 blocks off (Normal 9.1%).
    ///
    /// A CPU the window shows keeps the window's reading: past it a list's balance has run
    /// through every event of the window, and a drain prints its pageblock's type now, not
    /// its list's (`free_pcppages_bulk`, 6.10 on), so a long balance drifts. 6.12-4g-loads
    /// p_file: read on, Normal's CPU 2 needed 253 Unmovable pages at the start where the
    /// window shows 2, which took the Movable list from 409 pages to 94, and the window's
    /// refill events went 0.00 -> 14.51% off.
    pub fn past(mut self, read_on: Head) -> Head {
        for (d, on) in self.zones.iter_mut().zip(read_on.zones) {
            let cpus = d.exact.len();
            d.empty_past = vec![[[false; TYPES]; SLOTS]; cpus];
            for cpu in 0..cpus {
                let quiet = d.cpu_events.get(cpu).is_some_and(|&n| n == 0);
                if !quiet || on.cpu_events.get(cpu).is_none_or(|&n| n == 0) {
                    continue;
                }
                let (Some(b), Some(e), Some(r)) =
                    (on.blocks.get(cpu), on.exact.get(cpu), on.refilled.get(cpu))
                else {
                    continue;
                };
                (d.blocks[cpu], d.exact[cpu], d.refilled[cpu]) = (*b, *e, *r);
                d.empty_past[cpu] = *e;
                if let (Some(f), Some(to)) = (on.first_refill.get(cpu), d.first_refill.get_mut(cpu))
                {
                    *to = *f;
                }
            }
        }
        self
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
    /// Interrupts' frees that found their CPU's lists held and went to the buddy, as
    /// (timestamp, CPU), sorted (`irq_fate.rs`).
    pub held_frees: Vec<(u64, u32)>,
}

/// The inference fed one event at a time (the window's first events,
/// [`super::first_events`]): each zone's balances are kept as it goes (`balance::ZoneBalance`), so
/// [`Collector::finish`] has little left to do once the parse is over. It holds a few hundred
/// bytes per CPU, the pageblocks named, and 8 bytes per free of a pageblock no event had
/// named before it (a handful in a real trace).
#[derive(Clone)]
pub struct Collector {
    cpus: u32,
    zones: Vec<std::ops::Range<u64>>,
    pageblock_order: u8,
    numbering: Numbering,
    /// Per pageblock: the first migratetype named (the trace's numbering), plus one.
    first_named: span_map::SpanMap<u16>,
    balances: Vec<ZoneBalance>,
    shown: Vec<shown::Shown>,
    runs: runs::Runs,
    contig: contig::Contig,
    irq: irq_fate::IrqFate,
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
        let cpus = cpus.max(1);
        Collector {
            cpus,
            zones: zones.to_vec(),
            pageblock_order,
            numbering,
            first_named: span_map::SpanMap::new(blocks_of(zones, pageblock_order)),
            balances: (zones.iter())
                .map(|z| ZoneBalance::new(z.clone(), cpus, pageblock_order, thp_order))
                .collect(),
            shown: (zones.iter())
                .map(|z| shown::Shown::new(z.clone(), cpus, thp_order))
                .collect(),
            runs: runs::Runs::new(cpus),
            contig: contig::Contig::new(cpus),
            irq: irq_fate::IrqFate::new(cpus),
        }
    }

    /// Reads untraced bulk takes off the lists' heads as the replay does
    /// ([`super::kernel::KernelSide::set_bulk_takes_head`]; off by default).
    pub fn set_bulk_takes_head(&mut self, on: bool) {
        for b in &mut self.balances {
            b.set_bulk_takes_head(on);
        }
    }

    /// Reads a page the trace first shows freed, then freed again, as taken off its list
    /// before its first free too, as the replay does
    /// ([`super::kernel::KernelSide::set_appeared_takes`]; off by default).
    pub fn set_appeared_takes(&mut self, on: bool) {
        for b in &mut self.balances {
            b.appeared_takes = on;
        }
    }

    /// Reads 7.2's contiguous-range frees as the replay does (`contig.rs`; off by default).
    pub fn set_contig_free(&mut self, on: bool) {
        self.contig.on = on;
    }

    /// Takes one event.
    pub fn feed(&mut self, ev: &crate::trace::parse::Event<'_>) {
        if ev.kind.is_work() {
            return;
        }
        let numbering = self.numbering;
        let mt_of = |m: u8| usize::from(numbering.to_current(m));
        let pb = |pfn: u64| pfn >> self.pageblock_order;
        let cpu = super::fold::fold(ev.cpu.unwrap_or(0), self.cpus);
        let (rec, named) = reduce(ev, numbering);
        let zones = &self.zones;
        (self.irq).step(ev, cpu, |pfn| zones.iter().position(|z| z.contains(&pfn)));
        if let Some((pfn, m)) = named {
            if self.first_named.get(pb(pfn)).is_none() {
                self.first_named.insert(pb(pfn), u16::from(m) + 1);
            }
        }
        let extfrag = match ev.kind {
            EventKind::Extfrag {
                pfn,
                alloc_order,
                alloc_migratetype,
                ..
            } => Some((pfn, alloc_order, mt_of(alloc_migratetype))),
            _ => None,
        };
        // A refilled block only an `mm_page_alloc_extfrag` names (`runs.rs`).
        if let Some(page) = self.runs.step(cpu, rec, extfrag) {
            self.apply(cpu, page, None);
        }
        if let Some(rec) = rec {
            // A kworker's order-0 frees are held until their run ends (`contig.rs`).
            let (held, ended) = self.contig.step(cpu, rec, ev.who);
            if let Some(ended) = ended {
                for free in ended.frees() {
                    self.apply(cpu, free, None);
                }
            }
            if !held {
                self.apply(cpu, rec, named);
            }
        }
    }

    /// The interrupts' frees its events showed going to the buddy, (timestamp, CPU) sorted
    /// (`irq_fate.rs`; [`Head::held_frees`]).
    pub fn held_frees(&self) -> Vec<(u64, u32)> {
        self.irq.held()
    }

    /// `mm_page_alloc_extfrag` names the page taken (6.15 on: [`super::kernel::KernelSide`]):
    /// a refill's page that only it names goes on the list (`runs.rs`).
    pub fn set_extfrag_names_page(&mut self, names_page: bool) {
        self.runs.names_page = names_page;
    }

    /// One record of an event on `cpu`, naming `named` (pfn, migratetype in the trace's
    /// numbering) where its event names one.
    fn apply(&mut self, cpu: u32, rec: Rec, named: Option<(u64, u8)>) {
        let numbering = self.numbering;
        let mt_of = |m: u8| usize::from(numbering.to_current(m));
        let pb = |pfn: u64| pfn >> self.pageblock_order;
        let pfn = rec.pfn();
        if let Some(z) = self.zones.iter().position(|z| z.contains(&pfn)) {
            let first_named = &self.first_named;
            // An allocation of a block a refill put on another CPU's lists ran on that CPU:
            // the task moved before `trace_mm_page_alloc` stamped it (the replay's own rule,
            // `KernelSide::alloc_cpu`). Read on the stamped CPU, its list served one block
            // it never held: 7.2-4g p_pressure, CPU 1 refills THPs 0x123600 and 0x123800
            // (trace line 15135), the task's allocation of 0x123600 is stamped CPU 2, and
            // CPU 2's order-9 list got a start block the kernel's did not have (its refill
            // at line 15140 shows it empty): every later THP refill of CPU 2 came one late,
            // and the after-snapshot's Normal zone was 15.5% off per order.
            let cpu = match rec {
                Rec::Alloc(..) => self.shown[z].refill_listed(pfn).unwrap_or(cpu),
                _ => cpu,
            };
            self.shown[z].step(cpu, rec);
            self.balances[z].step(
                cpu,
                rec,
                named.map(|(pfn, m)| (pb(pfn), mt_of(m))),
                |block| first_named.get(block).map(|m| mt_of(m as u8 - 1)),
            );
        }
    }

    /// The lists' start per zone, and the pageblocks named, from the events fed.
    pub fn finish(mut self) -> Head {
        for (cpu, frees) in self.contig.finish() {
            for free in frees {
                self.apply(cpu, free, None);
            }
        }
        let (pageblock_order, numbering) = (self.pageblock_order, self.numbering);
        let mt_of = |m: u8| usize::from(numbering.to_current(m));
        let named = |block: u64| self.first_named.get(block).map(|m| mt_of(m as u8 - 1));
        let zones = (self.balances.into_iter().zip(self.shown))
            .map(|(b, s)| {
                let mut d = b.finish(&named);
                shown::apply(&mut d, &s.finish());
                d
            })
            .collect();
        let mut first_named: Vec<(u64, u8)> = (self.first_named.iter())
            .map(|(b, m)| (b << pageblock_order, m as u8 - 1))
            .collect();
        first_named.sort_unstable();
        Head {
            zones,
            first_named,
            held_frees: self.irq.held(),
        }
    }
}

/// Adds `pages` order-0 pages to the list of migratetype index `mt` in `lists`.
fn add_order_0(lists: &mut Vec<(u8, usize, u64)>, mt: usize, pages: u64) {
    if pages == 0 {
        return;
    }
    match lists.iter_mut().find(|l| l.0 == 0 && l.1 == mt) {
        Some(l) => l.2 += pages,
        None => lists.push((0, mt, pages)),
    }
}

/// Takes `excess` pages off the inferred `lists` (`(order, migratetype index, blocks)`), the
/// lowest order first and, within an order, the list of most blocks first: a block fewer on a
/// list of order `o` puts that list `1 << o` pages off, so the lists end within the excess of
/// what the trace showed, where scaling every list in proportion rounded a lone block of a
/// high order away. 7.2-4g-wq p_idle, Normal CPU 1 (`--whole-file`): the trace shows 8 + 47
/// order-0 pages, 7 order-3 Unmovable blocks and one THP block (0x110c00, which no event
/// before its drain at 399.086033 names) on its lists at the file's start, 623 pages, and
/// its count is bounded at 609. Scaled, the THP block went (`1 * 609 / 623 == 0`) and an
/// order-3 block with it; the kernel's `nr_pcp_free` at 399.086004 drained 733 pages (the
/// THP block among them), ours 276, and the 457 pages more went out later as 457 order-0
/// drain events (whole-file drain events 3.14% off). Only where the count is the trace's
/// own ([`ListDemand::start_count`], of the same moment as the lists): zoneinfo's, read
/// before the trace's start, exceeds no list at that moment (the lists changed since),
/// and trimming it too moved four window rows of the fidelity table, three of them worse
/// (7.2-8g p_thp drain events 0.27% -> 0.59%, 7.2-4g-wq p_thp 0.03% -> 0.43%).
fn trim(lists: &mut Vec<(u8, usize, u64)>, mut excess: u64) {
    let mut by: Vec<usize> = (0..lists.len()).collect();
    by.sort_by_key(|&i| (lists[i].0, std::cmp::Reverse(lists[i].2)));
    for i in by {
        if excess == 0 {
            break;
        }
        let (order, _, n) = lists[i];
        let take = excess.div_ceil(1 << order).min(n);
        lists[i].2 -= take;
        excess = excess.saturating_sub(take << order);
    }
    lists.retain(|l| l.2 > 0);
}

/// The pageblocks of `zones`, from the lowest start to the highest end (none for no zone).
fn blocks_of(zones: &[std::ops::Range<u64>], pageblock_order: u8) -> std::ops::Range<u64> {
    let block = |pfn: u64| pfn.checked_shr(pageblock_order.into()).unwrap_or(0);
    let start = zones.iter().map(|z| z.start).min().unwrap_or(0);
    let end = zones.iter().map(|z| z.end).max().unwrap_or(0);
    block(start)..end.checked_sub(1).map_or(0, |l| block(l) + 1)
}

/// What the inference reads of `ev` (migratetypes in the current numbering), and the
/// pfn and migratetype (the trace's numbering) it names, if any.
fn reduce(
    ev: &crate::trace::parse::Event<'_>,
    numbering: Numbering,
) -> (Option<Rec>, Option<(u64, u8)>) {
    let mt_of = |m: u8| usize::from(numbering.to_current(m));
    match ev.kind {
        EventKind::Alloc {
            pfn,
            order,
            migratetype,
            ..
        } if !ev.is_failed_alloc() => (
            Some(Rec::Alloc(pfn, order, mt_of(migratetype))),
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

/// Distinct pages freed on a CPU's lists before its first refill that
/// [`ListDemand::first_refill`] counts: past `CONFIG_PCP_BATCH_SCALE_MAX` frees, a factor
/// that halves to anything but 0 is above the cap.
pub const FREES_BEFORE_REFILL: usize = 8;

/// One event of the head, reduced to what the inference reads.
#[derive(Clone, Copy, Debug)]
enum Rec {
    Alloc(u64, u8, usize),
    Free(u64, u8),
    FreeBatched(u64, u8),
    ZoneLocked(u64, u8, usize, bool),
    Drain(u64, u8, usize),
}

impl Rec {
    /// The block's first pfn.
    fn pfn(self) -> u64 {
        match self {
            Rec::Alloc(pfn, ..)
            | Rec::Free(pfn, _)
            | Rec::FreeBatched(pfn, _)
            | Rec::ZoneLocked(pfn, ..)
            | Rec::Drain(pfn, ..) => pfn,
        }
    }
}
