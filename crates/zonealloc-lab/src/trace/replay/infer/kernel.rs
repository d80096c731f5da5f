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
use bulk::Awaited;

mod alloc;
mod block_types;
mod bulk;
mod drain;
mod free;
mod notes;
mod pfn_map;
mod refill;
pub use block_types::BlockTypes;
pub use notes::{Handover, Notes};
use pfn_map::PfnMap;
#[cfg(test)]
mod bulk_tests;
#[cfg(test)]
mod refill_tests;

/// A page `alloc_pages_bulk` took off a CPU's list without a trace line
/// ([`KernelSide::untraced_now`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Untraced {
    /// The page.
    pub pfn: u64,
    /// The CPU whose list held it.
    pub cpu: u32,
    /// The list's migratetype, in the trace's numbering.
    pub migratetype: u8,
    /// Taken first from a refill the bulk allocation made (`KernelSide::bulk_refill`): the
    /// CPU's list of that migratetype was empty before the refill, so the replay first takes
    /// what its own list holds (the bulk allocation took the kernel's).
    pub bulk_refill: bool,
    /// The page's free came before this inference (`KernelSide::bulk_refill_before`): the
    /// replay takes it now only while it holds that free (deferred), else the free's own
    /// inference took it.
    pub freed: bool,
    /// The take stands for an earlier one of `pfn`, before the first free the trace shows of
    /// it (`KernelSide::appeared`): a page of the list is taken and stays in use, bound to
    /// no frame of the trace (`pfn` names the zone only).
    pub unbound: bool,
}

impl Untraced {
    /// Page `pfn`, taken off CPU `cpu`'s list of `migratetype`, not from a bulk refill.
    pub const fn new(pfn: u64, cpu: u32, migratetype: u8) -> Untraced {
        Untraced {
            pfn,
            cpu,
            migratetype,
            bulk_refill: false,
            freed: false,
            unbound: false,
        }
    }
}

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
        /// The page was freed onto that list and taken off it untraced
        /// (`KernelSide::freed_again`), not refilled: the kernel's list held it, and the
        /// take made no refill.
        freed_again: bool,
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

/// The previous event on a CPU, as far as drain causes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prev {
    Free,
    Drain { explained: bool },
    Other,
}

/// The kernel's side of the trace, gathered in the replay's pass.
#[derive(Clone)]
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
    /// Per list, as [`KernelSide::runs`]: the order-0 pages frees put on its head, the last
    /// freed last ([`KernelSide::under_tops`]); an entry is stale once its frame left that
    /// CPU's lists or a refill listed it since.
    tops: Vec<Vec<u64>>,
    /// Per CPU: the last event was an order-0 refill of this zone and migratetype (or a
    /// fallback inside one: [`KernelSide::refill_run`]).
    in_refill: Vec<Option<(usize, u8)>>,
    /// Per CPU: the last order-0 refill run, until the refilling task's next event in the
    /// refill's own context shows whether a traced allocation took from it
    /// (`KernelSide::bulk_refill`).
    awaiting: Vec<Option<Awaited>>,
    /// Refill runs `alloc_pages_bulk` made (`KernelSide::bulk_refill`).
    pub bulk_refills: u64,
    /// Zones the runs are kept for.
    zones: usize,
    /// `mm_page_alloc_extfrag` names the page the allocation took (6.15 on: `__rmqueue_claim`
    /// and `__rmqueue_steal` return it, and only a claim below `pageblock_order` prints
    /// `mm_page_alloc_zone_locked` for it too); before 6.15 it names the block fallen back to
    /// and `__rmqueue` retries `__rmqueue_smallest`, which prints the page taken. Set from
    /// the kernel family ([`KernelSide::set_extfrag_names_page`]); the default is mainline's.
    extfrag_names_page: bool,
    /// Allocations take the head of a CPU's list untraced before 7.2: frees go on the head
    /// and `alloc_pages_bulk` takes from it without `mm_page_alloc` (`KernelSide::under_tops`).
    /// Off until the main replay sets it ([`KernelSide::set_bulk_takes_head`]): the set-up
    /// walks infer no such takes.
    bulk_takes_head: bool,
    /// Pages the event just added found taken untraced: replay their allocations now
    /// (`Replayer::untraced_allocs`).
    pub untraced_now: Vec<Untraced>,
    /// Pages inferred so, before their free.
    pub untraced_early: u64,
    /// Whether a page whose first event is a batch's free, freed again with a take between,
    /// was taken off that list before its first free too ([`KernelSide::appeared`]; off
    /// unless `--infer first-free-takes=on`, set with [`KernelSide::set_appeared_takes`]).
    appeared_takes: bool,
    /// Takes inferred so.
    pub appeared_taken: u64,
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
            tops: vec![Vec::new(); zones.max(1) * cpus as usize * 8],
            in_refill: vec![None; cpus as usize],
            awaiting: vec![None; cpus as usize],
            bulk_refills: 0,
            extfrag_names_page: true,
            bulk_takes_head: false,
            untraced_now: Vec::new(),
            untraced_early: 0,
            appeared_takes: false,
            appeared_taken: 0,
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

    /// Whether untraced bulk allocations take the freed pages on a list's head
    /// ([`Kernel::bulk_takes_head`](crate::trace::replay::preset::Kernel::bulk_takes_head)).
    pub fn set_bulk_takes_head(&mut self, on: bool) {
        self.bulk_takes_head = on;
    }

    /// Whether a page the trace first shows freed, then freed again with an untraced take
    /// between, was taken off the list before its first free too (`KernelSide::appeared`).
    pub fn set_appeared_takes(&mut self, on: bool) {
        self.appeared_takes = on;
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

    /// [`add`](Self::add), naming pageblock types when `NAME_BLOCKS`: the event's timestamp
    /// and CPU ([`KernelSide::stamp`]), the refill run it may extend
    /// ([`KernelSide::refill_run`]), its pageblock's naming ([`BlockTypes::name_by`]), then the
    /// step of its kind. Each event looks its frame up once: the refill-run bookkeeping
    /// ([`KernelSide::bulk`]) gets the frame's refill as it was before the event.
    #[inline(always)]
    fn account<const NAME_BLOCKS: bool>(&mut self, ev: &Event<'_>, zone: usize) -> Inferred {
        if ev.kind.is_work() {
            self.untraced_now.clear();
            return Inferred::None;
        }
        let (tick, cpu) = self.stamp(ev);
        self.untraced_now.clear();
        self.last_drain = None;
        self.refill_run(ev, zone, cpu, tick);
        if NAME_BLOCKS {
            self.block_types.name_by(ev);
        }
        let c = cpu as usize;
        let prev = self.prev[c];
        let (next, inferred) = match ev.kind {
            EventKind::Alloc { pfn, order, .. } => {
                (Prev::Other, self.on_alloc(ev, pfn, order, zone, cpu))
            }
            EventKind::Free { pfn, .. } | EventKind::FreeBatched { pfn } => {
                (Prev::Free, self.on_free::<NAME_BLOCKS>(ev, pfn, zone, cpu))
            }
            EventKind::ZoneLocked {
                pfn,
                order,
                migratetype,
                percpu_refill,
            } => {
                self.grid.at(zone, cpu).zone_locked(order, percpu_refill);
                self.on_zone_locked(pfn, order, migratetype, percpu_refill, cpu, tick);
                (Prev::Other, Inferred::None)
            }
            EventKind::Extfrag { .. } => {
                self.grid.at(zone, cpu).extfrag += 1;
                (Prev::Other, Inferred::None)
            }
            EventKind::KswapdWake { .. }
            | EventKind::KswapdSleep { .. }
            | EventKind::VmstatUpdate
            | EventKind::VmstatShepherd
            | EventKind::CompactIsolate { .. } => (Prev::Other, Inferred::None),
            EventKind::PcpuDrain { pfn, order, .. } => {
                self.grid.at(zone, cpu).drain(order);
                self.on_drain(ev, pfn, zone, cpu, tick, prev)
            }
        };
        self.prev[c] = next;
        inferred
    }

    /// The event's timestamp tick (a count of distinct timestamps, wrapping, never 0; 0 for
    /// an event without a timestamp) and its CPU folded onto the replay's, counting the span,
    /// the events per trace CPU and the folded ones.
    #[inline(always)]
    fn stamp(&mut self, ev: &Event<'_>) -> (u32, u32) {
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
        let cpu = super::fold::fold(raw, self.cpus);
        (tick, cpu)
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
