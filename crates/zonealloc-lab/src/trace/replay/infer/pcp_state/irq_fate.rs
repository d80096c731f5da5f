//! Interrupts' frees that found their CPU's lists held where the trace shows no holder, read
//! off where their pages went next.
//!
//! `__free_frozen_pages` (7.2; `free_unref_page` in 6.1 and 6.12) takes the CPU's lists with
//! `pcp_spin_trylock`; an interrupt that came in while its task held them (`rmqueue_pcplist`
//! taking a page off a list, a single free's `free_frozen_page_commit`) fails it and frees to
//! the buddy (`free_one_page`). `replayer/held.rs` follows the holds the trace prints (a
//! refill's `percpu_refill=1`, a free's drain, a batch's commits); a list take or a commit
//! without a drain prints nothing until the task's next line, and neither the preempt depth
//! nor the gaps tell such a cut from an interrupt between two of the task's calls (a fork's
//! copy holds two page-table locks at the same depth).
//!
//! The pages tell: a page the list took leaves it only by an allocation on that CPU
//! (`rmqueue_pcplist`) or a drain (`free_pcppages_bulk` prints each page), and a page the
//! buddy took comes back by a zone-locked take (`mm_page_alloc_zone_locked`: `rmqueue_bulk`'s
//! refill or `rmqueue_buddy`). One interrupt's frees of one zone all find the lists as the
//! task left them (the task cannot let go while the interrupt runs), so a run of them whose
//! pages came back by zone-locked takes more than through the list went to the buddy, every
//! free of it.
//!
//! 7.2-4g-6cpu p_fork, CPU 5: `kmem-phases-1580` allocates at depth 0 (401.791069), a
//! softirq frees 24 pages at `..s3.` (401.797341-.797389), and the task allocates next at
//! `...1.` (401.797439): 21 of the 24 come back by refills on CPUs 1, 3, 4 and 5. Onto the
//! list, CPU 5 drained 109 pages at the idle CPU's RCU frees at 401.808842, which the kernel
//! did not, and its later refills and drains moved. 7.2-4g-loads p_fork, CPU 2: the 50
//! frees at `..s2.` under `kmem-phases-520`'s single free (52.416838) all come back by
//! refills.

use crate::trace::parse::{Event, EventKind};
use crate::trace::stats::HashMap;

#[cfg(test)]
mod tests;

/// One interrupt's run of frees on a CPU's lists of one zone: when each was, and how many of
/// its pages came back by a zone-locked take (`buddy`) or left through the list (`list`).
#[derive(Clone)]
struct Run {
    cpu: u32,
    stamps: Vec<u64>,
    buddy: u32,
    list: u32,
}

/// Whether `ev` on `cpu` (folded) is an interrupt's free that `held` names (as
/// [`super::Head::held_frees`] holds them): its lists were held, and it went to the buddy.
/// The replay's reading and the start-count walk's.
#[inline]
pub fn went_to_buddy(held: &[(u64, u32)], ev: &Event<'_>, cpu: u32) -> bool {
    let ctx = ev.who.ctx();
    (ctx.softirq() || ctx.hardirq())
        && !held.is_empty()
        && (ev.ts_ns).is_some_and(|t| held.binary_search(&(t, cpu)).is_ok())
}

/// Who freed in an interrupt's run: its pid, its latency column's bits and the zone.
type RunKey = (Option<u32>, u8, usize);

/// Fed the walk's events ([`super::Collector::feed`]); [`IrqFate::held`] gives the frees
/// that went to the buddy.
#[derive(Clone, Default)]
pub(super) struct IrqFate {
    /// Per CPU: the run an interrupt has open (its index) and who freed in it.
    open: Vec<Option<(usize, RunKey)>>,
    runs: Vec<Run>,
    /// The pages freed by a run, until their next line.
    pending: HashMap<u64, usize>,
}

impl IrqFate {
    /// Nothing fed yet, on `cpus` CPUs.
    pub(super) fn new(cpus: u32) -> IrqFate {
        IrqFate {
            open: vec![None; cpus as usize],
            ..IrqFate::default()
        }
    }

    /// Takes event `ev` on `cpu` (folded); `zone_of` gives a pfn's zone.
    #[inline]
    pub(super) fn step(
        &mut self,
        ev: &Event<'_>,
        cpu: u32,
        zone_of: impl Fn(u64) -> Option<usize>,
    ) {
        let (pfn, free) = match ev.kind {
            EventKind::Free { pfn, .. } => (pfn, true),
            EventKind::Alloc { pfn, .. }
            | EventKind::FreeBatched { pfn }
            | EventKind::ZoneLocked { pfn, .. }
            | EventKind::PcpuDrain { pfn, .. } => (pfn, false),
            _ => return,
        };
        if let Some(r) = (!self.pending.is_empty())
            .then(|| self.pending.remove(&pfn))
            .flatten()
        {
            let run = &mut self.runs[r];
            match ev.kind {
                EventKind::ZoneLocked { .. } => run.buddy += 1,
                EventKind::PcpuDrain { .. } => run.list += 1,
                EventKind::Alloc { .. } if cpu == run.cpu => run.list += 1,
                _ => {}
            }
        }
        let ctx = ev.who.ctx();
        let Some(open) = self.open.get_mut(cpu as usize) else {
            return;
        };
        let zone = match zone_of(pfn) {
            Some(z) if free && (ctx.softirq() || ctx.hardirq()) => z,
            _ => {
                *open = None;
                return;
            }
        };
        let key = (ev.who.pid(), ctx.bits(), zone);
        let r = match *open {
            Some((r, k)) if k == key => r,
            _ => {
                self.runs.push(Run {
                    cpu,
                    stamps: Vec::new(),
                    buddy: 0,
                    list: 0,
                });
                *open = Some((self.runs.len() - 1, key));
                self.runs.len() - 1
            }
        };
        if let Some(t) = ev.ts_ns {
            self.runs[r].stamps.push(t);
        }
        self.pending.insert(pfn, r);
    }

    /// The interrupts' frees that went to the buddy: (timestamp, CPU), sorted.
    pub(super) fn held(&self) -> Vec<(u64, u32)> {
        let mut held: Vec<(u64, u32)> = (self.runs.iter())
            .filter(|r| r.buddy > r.list)
            .flat_map(|r| r.stamps.iter().map(move |&t| (t, r.cpu)))
            .collect();
        held.sort_unstable();
        held.dedup();
        held
    }
}
