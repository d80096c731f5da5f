//! A list's start read off the pages themselves: the first drain that takes a block the head
//! put on the CPU's lists shows every block the list held at the start gone.
//!
//! A CPU's list is a queue with two ends: a free puts its block at the head
//! (`free_unref_page_commit`, 7.2 `free_frozen_page_commit`: `list_add`), an allocation takes
//! the head (`__rmqueue_pcplist`: `list_first_entry`), a refill appends at the tail
//! (`rmqueue_bulk`: `list_add_tail`, and only onto an empty list) and a drain takes the tail
//! (`free_pcppages_bulk`: `list_last_entry`). The blocks the list held at the trace's start
//! sit at its tail, behind everything the head puts on it; so when a drain takes a block an
//! event of the head put on this CPU's lists, the list has no start block left, and the
//! start blocks it held are exactly those taken off it before: allocations and drains of
//! blocks no event of the head put on the CPU's lists. 7.2-4g p_prodcons: CPU 1's drain at
//! trace line 18899 takes pfn 0x102631, freed in the window at line 15691, after 79 blocks
//! the window never put there: the Movable order-0 list held 79 at the start.
//!
//! Unlike the balance ([`super::balance`]) this needs no free's list: it follows blocks by
//! pfn. A drain's list is the refill's where a refill of the head listed the block (from
//! 6.10 a drain prints the pageblock's type now), else the type it prints.

use super::span_map::SpanMap;
use super::{slot_of, Rec, SLOTS, TYPES};

/// Per PCP order slot and migratetype.
type PerList<T> = [[T; TYPES]; SLOTS];

/// One zone's blocks the head put on lists, and what each CPU's lists gave up before.
#[derive(Clone, Debug)]
pub(super) struct Shown {
    thp_order: Option<u8>,
    /// Block (first pfn) -> the CPU whose list an event of the head put it on, and the
    /// refill's list type where a refill did. (Not its order: 7.2-2g p_thp drains 0x3ae4, freed
    /// as an order-0 page at line 5705, as an order-2 block at line 8539 with no event
    /// between; read as a start block, the drain events went 0.23 -> 0.55% off, and 7.2-2g
    /// p_pressure's 0.45 -> 3.01%.)
    /// Kept as [`listed_code`] gives it.
    listed: SpanMap<u32>,
    cpus: Vec<CpuShown>,
}

#[derive(Clone, Debug, Default)]
struct CpuShown {
    /// Start blocks taken off each list so far.
    taken: PerList<u64>,
    /// Where a drain took a block of the head off the list: the start blocks taken before.
    shown: PerList<Option<u64>>,
    /// The last event was a `percpu_refill=0` allocation from the buddy: the allocation
    /// after it took nothing from a list.
    direct: bool,
}

impl Shown {
    /// Nothing read yet, for the zone spanning the pfns of `span`, on `cpus` CPUs (at least
    /// one).
    pub(super) fn new(span: std::ops::Range<u64>, cpus: u32, thp_order: Option<u8>) -> Shown {
        // More CPUs than a code holds: every block in the map (none are, in practice).
        let span = if cpus < MAX_CPUS { span } else { 0..0 };
        Shown {
            thp_order,
            listed: SpanMap::new(span),
            cpus: vec![CpuShown::default(); cpus.max(1) as usize],
        }
    }

    /// The CPU whose refill of the head put block `pfn` on its lists, while it is still
    /// there (no allocation, free or drain of it since).
    pub(super) fn refill_listed(&self, pfn: u64) -> Option<u32> {
        let (cpu, refill_mt) = listed_of(self.listed.get(pfn)?);
        refill_mt.map(|_| cpu)
    }

    /// One event of the zone on `cpu`.
    // Inlined into `Collector::feed` (its one caller) whatever codegen unit each lands in:
    // out of line it took 8 M instructions more on 6.1 p1 `--proc`.
    #[inline]
    pub(super) fn step(&mut self, cpu: u32, rec: Rec) {
        let thp = self.thp_order;
        let Some(c) = self.cpus.get_mut(cpu as usize) else {
            return;
        };
        match rec {
            Rec::ZoneLocked(pfn, _, mt, true) => {
                self.listed.insert(pfn, listed_code(cpu, Some(mt)));
            }
            Rec::ZoneLocked(..) => c.direct = true,
            Rec::Free(pfn, order) | Rec::FreeBatched(pfn, order) => {
                if slot_of(order, thp).is_some() {
                    self.listed.insert(pfn, listed_code(cpu, None));
                } else {
                    self.listed.remove(pfn);
                }
            }
            Rec::Alloc(pfn, order, mt) => {
                let direct = std::mem::take(&mut c.direct);
                let ours = self.listed.remove(pfn).is_some();
                if let (Some(s), false, false, true) =
                    (slot_of(order, thp), direct, ours, mt < TYPES)
                {
                    c.taken[s][mt] += 1;
                }
            }
            Rec::Drain(pfn, order, mt) => {
                let Some(s) = slot_of(order, thp) else {
                    return;
                };
                match self.listed.remove(pfn).map(listed_of) {
                    Some((owner, refill_mt)) if owner == cpu => {
                        let mt = refill_mt.unwrap_or(mt);
                        if mt < TYPES && c.shown[s][mt].is_none() {
                            c.shown[s][mt] = Some(c.taken[s][mt]);
                        }
                    }
                    // Another CPU's block, drained from here (`drain_pages_zone` of a remote
                    // CPU): not this CPU's start.
                    Some(_) => {}
                    None if mt < TYPES => c.taken[s][mt] += 1,
                    None => {}
                }
            }
        }
    }

    /// Per CPU, per list: the blocks it held at the start where a drain showed them.
    pub(super) fn finish(self) -> Vec<PerList<Option<u64>>> {
        self.cpus.into_iter().map(|c| c.shown).collect()
    }
}

/// CPUs a [`listed_code`] holds.
const MAX_CPUS: u32 = 1 << 28;

/// A block's [`Shown::listed`] entry in one word, never 0: the CPU plus one above three bits
/// of the list's type, 0 for none and the type plus one otherwise (a type from [`TYPES`] on
/// kept as `TYPES`: no list takes any of them, and each use checks it against `TYPES`). For
/// a CPU below [`MAX_CPUS`].
fn listed_code(cpu: u32, mt: Option<usize>) -> u32 {
    (cpu + 1) << 3 | mt.map_or(0, |t| t.min(TYPES) as u32 + 1)
}

/// The CPU and list type a [`listed_code`] stands for.
fn listed_of(code: u32) -> (u32, Option<usize>) {
    (
        (code >> 3) - 1,
        (code & 7).checked_sub(1).map(|t| t as usize),
    )
}

/// `demand` with each list that `shown` reads held exactly at what it read, where the balance
/// has a lower bound and where it showed the list empty too: the balance reads a free onto
/// the list of its pageblock's type as the head names it, which a fallback may have changed
/// since; the pages need no free's list. 7.2 p2_procs_pipe: CPU 1's Unmovable list,
/// refilled at line 174126, balanced at 27 blocks; its drain at line 122237 reaches a block
/// of the head after 691. (The more of the two was worse: 7.2-2g p_pressure's drain events
/// went 0.42 -> 3.01% off.)
pub(super) fn apply(demand: &mut super::ListDemand, shown: &[PerList<Option<u64>>]) {
    for (cpu, per) in shown.iter().enumerate() {
        let (Some(b), Some(e)) = (demand.blocks.get_mut(cpu), demand.exact.get_mut(cpu)) else {
            continue;
        };
        for s in 0..SLOTS {
            for t in 0..TYPES {
                if let Some(n) = per[s][t] {
                    b[s][t] = n;
                    e[s][t] = true;
                }
            }
        }
    }
}
