//! The kernel beside us: what the trace says the kernel's zones did (refills, drains, direct
//! buddy allocations, fallbacks), counted per zone and CPU in the replay's own pass, and the
//! causes the replay infers for events the trace shows without one.
//!
//! # Inferred causes
//! A run of `mm_page_pcpu_drain` on a CPU is *explained* when the event before it on that
//! CPU was a free (`mm_page_free` or `mm_page_free_batched`): `free_pcppages_bulk` then ran
//! from the free path (`free_unref_page_commit` in 6.1, `free_frozen_page_commit` in 7.2),
//! which the replay's own frees reproduce. Any other run has a cause the trace does not show:
//! `drain_all_pages` / `drain_local_pages` (reclaim, compaction, hotplug, `lru_add_drain_all`),
//! the vmstat worker's `decay_pcp_high` (6.12 and later), or a remote-node drain. Such a run
//! is replayed as a drain of the lists it emptied: each drained page's owner is the CPU whose
//! lists it was last put on in the trace (by a free, or by a refill, `mm_page_alloc_zone_locked`
//! with `percpu_refill=1`; not another CPU's refill at the drain's own timestamp, which the
//! merged trace may print first: `KernelSide::refilled_after`), and each owner's lists in the
//! page's zone are drained once per run (`drain_pages_zone`). A drained block owned by another CPU than the one the event ran on
//! marks a remote drain even right after a free: the free path (`free_pcppages_bulk` from
//! the commit) drains only its own CPU's lists, while `drain_all_pages` runs
//! `drain_pages_zone(cpu, zone)` for every CPU from the caller's. The kernel's decay drains only down to its decayed `high`; the
//! replay drains the whole list, which is what the 6.1 kernels do (they have no decay, so
//! their unexplained drains are `drain_all_pages`).
//!
//! A free of an order-0 page that a refill put on some CPU's lists and no `mm_page_alloc`
//! handed out since was allocated untraced: `alloc_pages_bulk` takes pages off the lists
//! without the tracepoint (vmalloc'd kernel stacks at fork, `vm_area_alloc_pages`). The
//! replay allocates a page on the refilling CPU just before replaying the free, so its lists
//! lose the page as the kernel's did, only later.
//!
//! A traced allocation of a page that a refill (of any order) put on another CPU's lists, and
//! that no event took off them since, ran on that CPU: the task moved between
//! `rmqueue_pcplist` and the tracepoint (`KernelSide::alloc_cpu`). The replay allocates it
//! there ([`Inferred::AllocOn`]).
//!
//! A refill run is one `rmqueue_bulk` batch (up to `batch << CONFIG_PCP_BATCH_SCALE_MAX`
//! pages) on one CPU: with the zone lock held and interrupts off nothing else runs on that
//! CPU, so only the batch's own fallbacks (`mm_page_alloc_extfrag`) interleave it there; the
//! trace is merged from the per-CPU buffers in timestamp order (the shipped captures never go
//! back in time), so other CPUs' events interleave freely, and runs are kept per CPU
//! (`KernelSide::refill_run`) and per zone: each zone has its own lists, and under pressure an
//! allocation falls back from Normal to DMA32 and back (the zonelist walk of
//! `get_page_from_freelist`), refilling one zone's list while the other's still holds pages. A run that straddles the window's start begins at its first
//! page inside the window: the pages before sit ahead of it on the list and their
//! allocations, with no refill recorded, touch no run.
//!
//! # Window and attribution
//! The kernel is counted over exactly the events the replay replays: the window cuts the
//! stream before either side sees it (`--from-marker`/`--to-marker`; with `--proc`, between
//! `KT_SNAPSHOT_BEFORE_END` and `KT_SNAPSHOT_AFTER_BEGIN`, so the snapshot reads' own work is
//! in neither: before the window 133/94/78/0 refills in 6.1 p1/p2 and 7.2 p1/p2, after it 32
//! drains in 6.1 p1, 283 refills and 3271 drains in 6.1 p2). `--whole-file` replays, and
//! counts, every event (the JSON's `window` then has no markers). A drain, the kernel's
//! and ours, is booked on the CPU that ran `free_pcppages_bulk`, the CPU the kernel's trace
//! stamps: the freeing CPU, the caller of `drain_all_pages` (which drains other CPUs' lists
//! from there), or for the vmstat worker's decay the CPU whose list decays (its work runs
//! there); `--emit` stamps the same CPU.

use crate::trace::parse::{Event, EventKind};
use crate::trace::replay::tally::Grid;

mod notes;
mod pfn_map;
pub use notes::{Handover, Notes};
use pfn_map::PfnMap;
#[cfg(test)]
mod refill_tests;

/// What the replay should do, beyond replaying the event itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inferred {
    /// Nothing.
    None,
    /// Drain CPU `owner`'s lists of the page's zone (an unexplained drain run).
    Drain {
        /// The CPU whose lists are drained (folded onto the replay's CPUs).
        owner: u32,
    },
    /// The freed page was refilled onto CPU `cpu`'s lists of `migratetype` and never
    /// allocated in the trace: something allocated it without `mm_page_alloc`
    /// (`alloc_pages_bulk`, which takes pages off the lists untraced: vmalloc'd kernel stacks
    /// at fork, for one). Replay that allocation, late, before the free.
    UntracedAlloc {
        /// The CPU that refilled it.
        cpu: u32,
        /// The list's migratetype.
        migratetype: u8,
    },
    /// A free of a page in a pageblock the trace has named the migratetype of (by an
    /// allocation, refill or drain in it): a page in use before the trace is freed from the
    /// pool of that type, onto the list the kernel's free went to.
    FreeOfType {
        /// The pageblock's migratetype (the trace's numbering).
        migratetype: u8,
    },
    /// A traced allocation of a page that CPU `cpu`'s refill put on its lists, traced on
    /// another CPU: the allocation ran on `cpu` and took the page off `cpu`'s list; the task
    /// moved before `mm_page_alloc` (see `KernelSide::alloc_cpu`). Replay it on `cpu`.
    AllocOn {
        /// The CPU whose list held the page (folded onto the replay's CPUs).
        cpu: u32,
    },
}

/// Pageblocks the trace has named the migratetype of: the latest allocation, refill or drain
/// in each (an allocation without fallback comes from a pageblock of its own type;
/// `free_pcppages_bulk` prints the pageblock's), seeded with the first one the trace's head
/// names ([`super::pcp_state`]) for frees before the pageblock's first event.
#[derive(Clone, Debug, Default)]
pub struct BlockTypes {
    shift: u32,
    /// Per pageblock number: migratetype + 1, 0 unknown.
    types: Vec<u8>,
}

impl BlockTypes {
    /// No pageblock named yet, for pageblocks of `1 << pageblock_order` pages.
    pub fn new(pageblock_order: u8) -> BlockTypes {
        BlockTypes {
            shift: u32::from(pageblock_order),
            types: Vec::new(),
        }
    }

    /// The pageblock of `pfn` is of `migratetype`.
    #[inline]
    pub fn name(&mut self, pfn: u64, migratetype: u8) {
        let b = pfn >> self.shift;
        // Pfns beyond 64 Ti pages with 512-page blocks are not tracked (2^27 entries).
        if b >= 1 << 27 || migratetype == u8::MAX {
            return;
        }
        let b = b as usize;
        if b >= self.types.len() {
            self.types.resize(b + 1, 0);
        }
        self.types[b] = migratetype + 1;
    }

    /// The named migratetype of `pfn`'s pageblock.
    #[inline]
    pub fn of(&self, pfn: u64) -> Option<u8> {
        let b = usize::try_from(pfn >> self.shift).ok()?;
        self.types.get(b).and_then(|&t| t.checked_sub(1))
    }
}

/// The previous event on a CPU, as far as drain causes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prev {
    Free,
    Drain { explained: bool },
    Other,
}

/// The kernel's side of the trace, gathered in the replay's pass.
pub struct KernelSide {
    /// Per zone and (folded) CPU.
    pub grid: Grid,
    /// Events per trace CPU, unfolded.
    pub events_per_cpu: Vec<u64>,
    /// Events on CPUs at or above the replay's CPU count (folded modulo it).
    pub folded_events: u64,
    /// First and last timestamp.
    pub span_ns: Option<(u64, u64)>,
    /// Drain runs with no free before them (replayed as drains).
    pub unexplained_runs: u64,
    /// Blocks in those runs.
    pub unexplained_blocks: u64,
    /// Drains of some CPU's lists the replay was asked for.
    pub inferred_drains: u64,
    /// Drained blocks whose owner was another CPU than the draining one.
    pub remote_drained_blocks: u64,
    prev: Vec<Prev>,
    run_owners: Vec<Vec<u32>>,
    /// Per traced frame: its allocations (the seed 000 table's kernel column), the CPU whose
    /// lists it was last put on, and, for an order-0 page refilled onto a CPU's lists and not
    /// allocated (by the trace) since, that refill.
    pfns: PfnMap,
    /// Frees of pages that only an untraced allocation can have taken off the lists.
    pub untraced_allocs: u64,
    /// Traced allocations replayed on the CPU whose refill listed the page
    /// ([`Inferred::AllocOn`]).
    pub allocs_on_refilling_cpu: u64,
    /// Per zone, CPU and migratetype (the trace's numbering, `& 7`): the order-0 pages of the
    /// list's last refill run not allocated, drained or freed since, in refill order. Each
    /// zone has its own lists (`zone->per_cpu_pageset`): a refill of one zone's list says
    /// nothing of another zone's ([`KernelSide::list`]).
    runs: Vec<std::collections::VecDeque<u64>>,
    /// Per CPU: the last event was an order-0 refill of this zone and migratetype (or a
    /// fallback inside one: [`KernelSide::refill_run`]).
    in_refill: Vec<Option<(usize, u8)>>,
    /// Zones the runs are kept for.
    zones: usize,
    /// `mm_page_alloc_extfrag` names the page the allocation took (6.15 on: `__rmqueue_claim`
    /// and `__rmqueue_steal` return it, and only a claim below `pageblock_order` prints
    /// `mm_page_alloc_zone_locked` for it too); before 6.15 it names the block fallen back to
    /// and `__rmqueue` retries `__rmqueue_smallest`, which prints the page taken. Set from
    /// the kernel family ([`KernelSide::set_extfrag_names_page`]); the default is mainline's.
    extfrag_names_page: bool,
    /// Pages the event just added found taken untraced, as `(pfn, cpu, migratetype)`:
    /// replay their allocations now (`Replayer::untraced_allocs`).
    pub untraced_now: Vec<(u64, u32, u8)>,
    /// Pages inferred so, before their free.
    pub untraced_early: u64,
    /// Pageblock migratetypes the trace has named.
    pub block_types: BlockTypes,
    /// The last event, if a drained block: its owner (the CPU whose lists it was on) and
    /// whether the free path drained it (a free before the run, the block the draining CPU's
    /// own). Read by [`super::start_count`].
    pub last_drain: Option<(u32, bool)>,
    /// The last timestamp seen and its tick: a count of distinct timestamps (wrapping, never
    /// 0), stamped on each frame's listing to find a drain at the listing's own timestamp.
    ts_tick: (Option<u64>, u32),
    cpus: u32,
}

impl KernelSide {
    /// Nothing seen yet, for the zones and CPUs of `geo`; the frames of its zones' span are
    /// remembered in an array, any other in a map (`pfn_map::PfnMap`).
    pub fn for_geometry(geo: &crate::trace::replay::geometry::Geometry) -> KernelSide {
        KernelSide {
            pfns: PfnMap::new(geo.span()),
            ..KernelSide::new(geo.zones.len(), geo.cpus.max(1))
        }
    }

    /// Nothing seen yet, for `zones` zones and `cpus` CPUs, every frame remembered in a map.
    pub fn new(zones: usize, cpus: u32) -> KernelSide {
        KernelSide {
            grid: Grid::new(zones, cpus),
            events_per_cpu: Vec::new(),
            folded_events: 0,
            span_ns: None,
            unexplained_runs: 0,
            unexplained_blocks: 0,
            inferred_drains: 0,
            remote_drained_blocks: 0,
            prev: vec![Prev::Other; cpus as usize],
            run_owners: vec![Vec::new(); cpus as usize],
            pfns: PfnMap::default(),
            untraced_allocs: 0,
            allocs_on_refilling_cpu: 0,
            runs: vec![std::collections::VecDeque::new(); zones.max(1) * cpus as usize * 8],
            in_refill: vec![None; cpus as usize],
            extfrag_names_page: true,
            untraced_now: Vec::new(),
            untraced_early: 0,
            block_types: BlockTypes::new(9),
            last_drain: None,
            ts_tick: (None, 0),
            zones: zones.max(1),
            cpus,
        }
    }

    /// Whether `mm_page_alloc_extfrag` names the page taken (kernels from 6.15 on, the
    /// replay's 7.2 family) or the block fallen back to (before).
    pub fn set_extfrag_names_page(&mut self, names_page: bool) {
        self.extfrag_names_page = names_page;
    }

    /// Accounts one event, whose page lies in zone `zone`, and says what the replay should
    /// infer from it.
    pub fn add(&mut self, ev: &Event<'_>, zone: usize) -> Inferred {
        self.account::<true>(ev, zone)
    }

    /// [`add`](Self::add) for a replay that infers nothing: the same counts, without naming
    /// pageblocks' migratetypes (read only for [`Inferred::FreeOfType`]), and an inference
    /// the caller drops.
    // Inlined into both of the replay's calls (the prefix's and the loop's): out of line it
    // took 10% more instructions per event.
    #[inline(always)]
    pub fn add_counts(&mut self, ev: &Event<'_>, zone: usize) -> Inferred {
        self.account::<false>(ev, zone)
    }

    /// [`add`](Self::add), naming pageblock types when `NAME_BLOCKS`. Each event looks its
    /// frame up once: the refill-run bookkeeping ([`KernelSide::bulk`]) gets the frame's
    /// refill as it was before the event.
    #[inline(always)]
    fn account<const NAME_BLOCKS: bool>(&mut self, ev: &Event<'_>, zone: usize) -> Inferred {
        // The event's timestamp tick; 0 (no order known) without a timestamp.
        let mut tick = 0;
        if let Some(ts) = ev.ts_ns {
            self.span_ns = Some(match self.span_ns {
                None => (ts, ts),
                Some((a, b)) => (a.min(ts), b.max(ts)),
            });
            if self.ts_tick.0 != Some(ts) {
                self.ts_tick = (Some(ts), self.ts_tick.1.wrapping_add(1).max(1));
            }
            tick = self.ts_tick.1;
        }
        let raw = ev.cpu.unwrap_or(0);
        if let Some(n) = self.events_per_cpu.get_mut(raw as usize) {
            *n += 1;
        } else if raw < 1 << 16 {
            self.events_per_cpu.resize(raw as usize + 1, 0);
            self.events_per_cpu[raw as usize] = 1;
        }
        if raw >= self.cpus {
            self.folded_events += 1;
        }
        // Most traces have no CPU to fold: no division per event.
        let cpu = if raw < self.cpus {
            raw
        } else {
            raw % self.cpus
        };
        let c = cpu as usize;
        let mut inferred = Inferred::None;
        self.untraced_now.clear();
        self.last_drain = None;
        self.refill_run(ev, zone, cpu, tick);
        let prev = self.prev[c];
        self.prev[c] = match ev.kind {
            EventKind::Alloc {
                pfn,
                order,
                migratetype,
                ..
            } => {
                let (refilled, on) = if ev.is_failed_alloc() {
                    (self.pfns.get(pfn).refilled(), cpu)
                } else {
                    let f = self.pfns.get_mut(pfn);
                    let refilled = f.refilled();
                    let on = Self::alloc_cpu(cpu, f.refill_listed());
                    f.allocs += 1;
                    f.set_last_free_cpu(None);
                    f.set_refilled(None);
                    if NAME_BLOCKS {
                        self.block_types.name(pfn, migratetype);
                    }
                    (refilled, on)
                };
                if on != cpu {
                    self.allocs_on_refilling_cpu += 1;
                    inferred = Inferred::AllocOn { cpu: on };
                }
                // Only a page refilled by the allocating CPU can come from one of its runs.
                if order == 0 && refilled.is_some_and(|(by, _)| by == on) {
                    self.bulk(ev, zone, on, refilled);
                }
                Prev::Other
            }
            EventKind::Free { pfn, .. } | EventKind::FreeBatched { pfn } => {
                let f = self.pfns.get_mut(pfn);
                f.set_last_free_cpu(Some(cpu));
                let refilled = f.take_refilled();
                if refilled.is_some() {
                    self.bulk(ev, zone, cpu, refilled);
                }
                if let Some((by, migratetype)) = refilled {
                    self.untraced_allocs += 1;
                    inferred = Inferred::UntracedAlloc {
                        cpu: by,
                        migratetype,
                    };
                } else if NAME_BLOCKS {
                    if let Some(migratetype) = self.block_types.of(pfn) {
                        inferred = Inferred::FreeOfType { migratetype };
                    }
                }
                Prev::Free
            }
            EventKind::ZoneLocked {
                pfn,
                order,
                migratetype,
                percpu_refill,
            } => {
                self.grid.at(zone, cpu).zone_locked(order, percpu_refill);
                if NAME_BLOCKS {
                    self.block_types.name(pfn, migratetype);
                }
                let f = self.pfns.get_mut(pfn);
                if percpu_refill {
                    // The block goes onto this CPU's lists (unless the allocation takes it).
                    f.set_refill_listed(cpu, tick);
                    if order == 0 {
                        f.set_refilled(Some((cpu, migratetype)));
                    }
                } else {
                    // Handed out by the buddy: on no CPU's lists.
                    f.clear_refill_listed();
                }
                Prev::Other
            }
            EventKind::Extfrag { .. } => {
                self.grid.at(zone, cpu).extfrag += 1;
                Prev::Other
            }
            EventKind::KswapdWake { .. } | EventKind::KswapdSleep { .. } => Prev::Other,
            EventKind::PcpuDrain {
                pfn,
                order,
                migratetype,
            } => {
                self.grid.at(zone, cpu).drain(order);
                if NAME_BLOCKS {
                    self.block_types.name(pfn, migratetype);
                }
                let f = self.pfns.get_mut(pfn);
                let facts = *f;
                let refill_after = Self::refilled_after(facts, cpu, tick);
                if !refill_after {
                    f.clear_refill_listed();
                    if facts.refilled().is_some() {
                        self.bulk(ev, zone, cpu, facts.refilled());
                    }
                }
                let new_run = !matches!(prev, Prev::Drain { .. });
                if new_run {
                    self.run_owners[c].clear();
                }
                // A worker's drain (a kworker of the CPU at preempt depth 2: `decay_pcp_high`,
                // `drain_pages_zone`) is no free's, whatever came before it: the free path
                // drains with the CPU pinned, depth 3 and up.
                let explained = match prev {
                    Prev::Drain { explained } => explained,
                    Prev::Free => !ev.who.is_worker_drain(),
                    Prev::Other => false,
                };
                if new_run && !explained {
                    self.unexplained_runs += 1;
                }
                // The free path drains only its own CPU's lists: a block another CPU put on
                // its lists was drained by `drain_all_pages` from here.
                let owner = match facts.last_free_cpu() {
                    Some(o) if !refill_after => o,
                    _ => cpu,
                };
                let remote = owner != cpu;
                self.remote_drained_blocks += u64::from(remote);
                self.last_drain = Some((owner, explained && !remote));
                if !explained || remote {
                    self.unexplained_blocks += 1;
                    if !self.run_owners[c].contains(&owner) {
                        self.run_owners[c].push(owner);
                        self.inferred_drains += 1;
                        inferred = Inferred::Drain { owner };
                    }
                }
                Prev::Drain { explained }
            }
        };
        inferred
    }

    /// `alloc_pages_bulk` takes order-0 pages off a CPU's list without `mm_page_alloc`
    /// (`__alloc_pages_bulk` → `__rmqueue_pcplist`), refilling it when it runs empty. A refill
    /// appends its blocks to the list's tail (`rmqueue_bulk`) and only an empty list is refilled,
    /// so an allocation takes a refill run's pages in order unless a free put a page on top
    /// (frees add at the head): when the trace's allocation on that CPU takes the run's `k`-th
    /// page, the `k - 1` before it that no event took were allocated untraced, before it. At
    /// the list's next refill the list was empty: what is left of the run was too. Both are
    /// replayed then, not at the pages' frees, which come much later.
    ///
    /// An allocation, free or drain of a page, given the page's refill before the event
    /// (`refilled`): an order-0 allocation from a run takes the pages before it as untraced; a
    /// free or drain takes the page off its run.
    fn bulk(&mut self, ev: &Event<'_>, zone: usize, cpu: u32, refilled: Option<(u32, u8)>) {
        match ev.kind {
            EventKind::Alloc {
                pfn,
                order: 0,
                migratetype,
                ..
            } => {
                if refilled.map(|(by, _)| by) != Some(cpu) {
                    return;
                }
                let list = self.list(zone, cpu, migratetype);
                if let Some(k) = self.runs[list].iter().position(|&p| p == pfn) {
                    self.take_untraced(list, k, cpu, migratetype);
                    self.runs[list].pop_front();
                }
            }
            EventKind::PcpuDrain { pfn, .. }
            | EventKind::Free { pfn, .. }
            | EventKind::FreeBatched { pfn } => {
                if let Some((by, mt)) = refilled {
                    let list = self.list(zone, by, mt);
                    let run = &mut self.runs[list];
                    if let Some(k) = run.iter().position(|&p| p == pfn) {
                        run.remove(k);
                    }
                }
            }
            _ => {}
        }
    }

    /// The refill side of [`KernelSide::bulk`], before the event's frame is accounted: an
    /// order-0 refill onto this CPU's list of a migratetype extends the list's run, or starts
    /// a new one if the event before on this CPU was not such a refill.
    ///
    /// `rmqueue_bulk` calls `__rmqueue` once per page with the zone lock held and interrupts
    /// off, so nothing else runs on the CPU until the batch is done; the trace, merged from
    /// the per-CPU buffers by timestamp, interleaves other CPUs' events (runs are per CPU) and,
    /// on the refilling CPU, only the refill's own fallbacks: `mm_page_alloc_extfrag` of
    /// order 0 and the run's migratetype (`__rmqueue_claim` / `__rmqueue_steal` in 6.15 on,
    /// `__rmqueue_fallback` before) continues the run. From 6.15 it names a page of the batch
    /// (the one taken; a claim below `pageblock_order` printed its `zone_locked` just before,
    /// a claim of a whole pageblock or a steal did not), which joins the run; before, it names
    /// the block fallen back to, and the retry's `mm_page_alloc_zone_locked` the page taken.
    /// A fallback first in a batch starts the run as a refill page would. An order-0 fallback
    /// outside a refill (`rmqueue_buddy` when the lists' lock is contended) reads as one.
    #[inline(always)]
    fn refill_run(&mut self, ev: &Event<'_>, zone: usize, cpu: u32, tick: u32) {
        let c = cpu as usize;
        let (pfn, refill, page) = match ev.kind {
            EventKind::ZoneLocked {
                pfn,
                order: 0,
                migratetype,
                percpu_refill: true,
            } => (pfn, Some(migratetype), true),
            EventKind::Extfrag {
                pfn,
                alloc_order: 0,
                alloc_migratetype,
                ..
            } => (pfn, Some(alloc_migratetype), self.extfrag_names_page),
            _ => (0, None, false),
        };
        let zone = zone % self.zones;
        let was = std::mem::replace(&mut self.in_refill[c], refill.map(|mt| (zone, mt)));
        let Some(mt) = refill else {
            return;
        };
        let list = self.list(zone, cpu, mt);
        if was != Some((zone, mt)) {
            // A new batch: the list was empty, what was left of the last run is gone.
            let n = self.runs[list].len();
            self.take_untraced(list, n, cpu, mt);
        }
        // A claim below pageblock_order prints zone_locked, then extfrag, of the same page.
        if page && self.runs[list].back() != Some(&pfn) {
            if matches!(ev.kind, EventKind::Extfrag { .. }) {
                // The page goes onto this CPU's list, as a refilled block does.
                let f = self.pfns.get_mut(pfn);
                f.set_refill_listed(cpu, tick);
                f.set_refilled(Some((cpu, mt)));
            }
            self.runs[list].push_back(pfn);
        }
    }

    /// The run of zone `zone`'s list of `migratetype` on `cpu` (`runs`' index). Zones past the
    /// ones counted (a frame outside the geometry's zones, read as zone 0 elsewhere) fold.
    #[inline(always)]
    fn list(&self, zone: usize, cpu: u32, migratetype: u8) -> usize {
        ((zone % self.zones) * self.cpus as usize + cpu as usize) * 8 + usize::from(migratetype & 7)
    }

    /// The first `n` pages of run `list`, taken off it: allocated untraced unless something
    /// else took them since.
    fn take_untraced(&mut self, list: usize, n: usize, cpu: u32, mt: u8) {
        if n == 0 {
            return;
        }
        // Walked in place (a copy of the pages would cost an allocation per event).
        let mut run = std::mem::take(&mut self.runs[list]);
        for pfn in run.drain(..n) {
            let f = self.pfns.get_mut(pfn);
            if f.take_refilled().is_some() {
                f.set_last_free_cpu(None);
                self.untraced_now.push((pfn, cpu, mt));
                self.untraced_early += 1;
            }
        }
        self.runs[list] = run;
    }

    /// Whether a block drained on `cpu` at timestamp tick `tick` was refilled onto another
    /// CPU's lists after the drain, though the trace prints the refill first: the refill's
    /// facts stand (the block is on that CPU's lists), and the drain took it off the
    /// draining CPU's own.
    ///
    /// ftrace keeps one ring buffer per CPU and the trace reader (`__find_next_entry`, for
    /// `trace` and `trace_pipe`) merges them by timestamp, so events of equal timestamps on
    /// different CPUs come out in no true order. A refill by another CPU at the drain's own
    /// timestamp is read as after it: the drain (`free_pcppages_bulk`) gave the block back
    /// to the buddy, and that CPU's `rmqueue_bulk` took it from there. In 6.1-2g
    /// p2_procs_pipe (shipped trace), CPU 0 refills 0x152bb .. 0x15015 (lines 178297-178305,
    /// 11.710382) and CPU 2's free-path drain run at the same timestamp drains them in the
    /// reverse order (lines 179714-179722): the buddy's free lists are last in, first out.
    /// Read as CPU 0's, the run inferred a `drain_all_pages`, and the replay drained 2846
    /// pages there to the kernel's 2016. A free by another CPU at the drain's timestamp is
    /// not read so: a drain before it leaves the block in the buddy, and only an allocation
    /// takes it out to be freed.
    #[inline(always)]
    fn refilled_after(facts: pfn_map::PfnFacts, cpu: u32, tick: u32) -> bool {
        tick != 0
            && facts
                .refill_listed_at()
                .is_some_and(|(by, at)| by != cpu && at == tick)
    }

    /// The CPU a traced allocation on `cpu` ran on, given the CPU whose refill put its page on
    /// its lists (`listed`, while the trace shows it still there): that CPU.
    ///
    /// `rmqueue_pcplist` takes the page off the list of the CPU it runs on
    /// (`pcp_spin_trylock`: `pcpu_task_pin` then `this_cpu_ptr`), and `pcp_spin_unlock`
    /// unpins the task (`preempt_enable`) before `prep_new_page` and the
    /// `trace_mm_page_alloc` at the end of `__alloc_frozen_pages_noprof`. A preemptible kernel
    /// can move the task in between, and the tracepoint stamps the CPU it moved to. 7.2's
    /// Debian kernel boots with "Dynamic Preempt: lazy": in 7.2-2g p_pressure, CPU 2 refills
    /// THPs 0x11000 and 0x11200 (trace line 5424, its task taking 0x11000), and the task's
    /// `mm_page_alloc` of 0x11000 is stamped CPU 1, 118 ms later (line 5751). The 6.1 and 6.12
    /// kernels boot "voluntary", which has no preemption point there; none of their captures
    /// show such an allocation (7.2's show 10, all THPs), so the rule needs no knob. A page
    /// only freed onto a CPU's lists is not moved: a free that found the lists' lock taken
    /// went to the buddy (`free_one_page`), untraced.
    #[inline(always)]
    fn alloc_cpu(cpu: u32, listed: Option<u32>) -> u32 {
        listed.unwrap_or(cpu)
    }

    /// The `n` most allocated frames, most first (ties by pfn).
    pub fn most_reused(&self, n: usize) -> Vec<(u64, u64)> {
        let allocated = self
            .pfns
            .iter()
            .filter(|(_, f)| f.allocs > 0)
            .map(|(p, f)| (p, f.allocs));
        crate::trace::replay::frames::most_first(allocated, n)
    }
}

#[cfg(test)]
mod tests;
