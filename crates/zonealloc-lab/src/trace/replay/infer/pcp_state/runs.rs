//! The refill runs of the head, for the one page a 7.2 refill lists that no
//! `mm_page_alloc_zone_locked` prints.
//!
//! `rmqueue_bulk` takes its batch with the zone lock held and interrupts off, one `__rmqueue`
//! a page, so on the refilling CPU only the batch's own fallbacks interleave its lines. From
//! 6.15 `mm_page_alloc_extfrag` names the page a fallback took (`__rmqueue_claim`,
//! `__rmqueue_steal`), and a claim of a whole block (`try_to_claim_block` at or above
//! `pageblock_order`: `change_pageblock_range`, `expand`) or a steal prints no `zone_locked`
//! for it: the extfrag line is the only one that page gets, and it goes on the list as the
//! batch's other pages do. (A claim below `pageblock_order` takes the page through
//! `__rmqueue_smallest`, which prints `zone_locked` for it just before.) Before 6.15 the
//! line names the block fallen back to, and the retry's `zone_locked` the page.
//!
//! 7.2-4g-wq p_pressure, Normal CPU 3: the THP refill at 474.195559 prints `zone_locked` for
//! 0x137e00 and `extfrag` (alloc_order 9, fallback_order 10) for 0x103c00, and the task takes
//! both (474.207493, 474.208659). Read without the second, the THP list served a block it
//! never got, and the start lists held one THP more than the kernel's, whose first THP
//! allocation (470.897147) refilled: 512 pages the count then took off the Unmovable
//! order-0 list (trimmed to 0 where the trace shows 413 blocks), which refilled at the
//! window's first allocation.

use super::Rec;

/// A refill run's, or a lone fallback's, order, list type (current numbering) and last page.
type Run = (u8, usize, u64);

/// Per CPU: the refill run its last event was part of, and a fallback outside a run that
/// named its page (a batch's first page, if a refill of its order and type follows).
#[derive(Clone, Debug, Default)]
pub(super) struct Runs {
    /// `mm_page_alloc_extfrag` names the page taken (6.15 on).
    pub(super) names_page: bool,
    run: Vec<Option<Run>>,
    fallback: Vec<Option<Run>>,
}

impl Runs {
    /// Nothing read yet, on `cpus` CPUs.
    pub(super) fn new(cpus: u32) -> Runs {
        Runs {
            names_page: false,
            run: vec![None; cpus.max(1) as usize],
            fallback: vec![None; cpus.max(1) as usize],
        }
    }

    /// The event `rec` on `cpu` (below the CPU count), or `extfrag` (page, order and type
    /// taken) where it is an `mm_page_alloc_extfrag`: the refilled block the trace shows no
    /// `zone_locked` for, which goes on the lists before `rec` does, if any.
    #[inline]
    pub(super) fn step(
        &mut self,
        cpu: u32,
        rec: Option<Rec>,
        extfrag: Option<(u64, u8, usize)>,
    ) -> Option<Rec> {
        let c = cpu as usize;
        let (Some(run), Some(fallback)) = (self.run.get_mut(c), self.fallback.get_mut(c)) else {
            return None;
        };
        if let Some((pfn, order, mt)) = extfrag {
            return match *run {
                // One of the batch's pages: the run goes on.
                Some((o, m, last)) if (o, m) == (order, mt) => {
                    let named = self.names_page && last != pfn;
                    if named {
                        *run = Some((o, m, pfn));
                    }
                    named.then_some(Rec::ZoneLocked(pfn, order, mt, true))
                }
                // A direct allocation's fallback, or the first page of a batch.
                _ => {
                    *run = None;
                    *fallback = self.names_page.then_some((order, mt, pfn));
                    None
                }
            };
        }
        let was = run.take();
        let first = fallback.take();
        let Some(Rec::ZoneLocked(pfn, order, mt, true)) = rec else {
            return None;
        };
        *run = Some((order, mt, pfn));
        let same = |r: Option<Run>| r.is_some_and(|(o, m, _)| (o, m) == (order, mt));
        // The batch's first page was a fallback that printed no zone_locked.
        let first = first.filter(|&(_, _, p)| !same(was) && same(first) && p != pfn);
        first.map(|(o, m, p)| Rec::ZoneLocked(p, o, m, true))
    }
}
