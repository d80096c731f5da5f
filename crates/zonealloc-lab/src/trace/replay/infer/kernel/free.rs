//! A traced free (`mm_page_free`, `mm_page_free_batched`): the frame goes onto the freeing
//! CPU's lists, and a page a refill listed that no traced allocation took was allocated
//! untraced ([`Inferred::UntracedAlloc`]).

use super::{Inferred, KernelSide};
use crate::trace::parse::{Event, EventKind};

impl KernelSide {
    /// Accounts a free of `pfn` traced on `cpu`: the frame is on `cpu`'s lists now; if a
    /// refill had listed it and no traced allocation took it, `alloc_pages_bulk` did, untraced
    /// (the page leaves its refill run, [`KernelSide::bulk`]); else, with `NAME_BLOCKS`, the
    /// free goes to the list of its pageblock's named type ([`super::BlockTypes::free_of_type`]).
    #[inline(always)]
    pub(super) fn on_free<const NAME_BLOCKS: bool>(
        &mut self,
        ev: &Event<'_>,
        pfn: u64,
        zone: usize,
        cpu: u32,
    ) -> Inferred {
        if self.bulk_takes_head {
            self.push_top(ev, pfn, zone, cpu);
        }
        let f = self.pfns.get_mut(pfn);
        let freed_on = f.last_free_cpu();
        f.set_last_free_cpu(Some(cpu));
        let refilled = f.take_refilled();
        if refilled.is_some() {
            self.bulk(ev, zone, cpu, refilled);
        }
        if let Some((by, migratetype)) = refilled {
            self.untraced_allocs += 1;
            Inferred::UntracedAlloc {
                cpu: by,
                migratetype,
                freed_again: false,
            }
        } else if !NAME_BLOCKS {
            Inferred::None
        } else if let Some(u) = self.freed_again(ev, pfn, freed_on) {
            self.untraced_allocs += 1;
            u
        } else {
            self.block_types.free_of_type(pfn)
        }
    }

    /// A page freed again (`mm_page_free`) with no allocation, refill or drain traced since
    /// its last free (on `freed_on`): something took it off that CPU's list of its
    /// pageblock's type untraced (`free_frozen_pages` lists a page by
    /// `get_pfnblock_migratetype`): `alloc_pages_bulk`, which takes the list's first pages, the
    /// last freed. The replay takes a page off that list before the free, as for a refilled
    /// page. 7.2-2g p_prodcons: `cat-342` frees 0x393c and 0x3837 (on CPU 1's list since
    /// 104.2019) and 15 refilled pages at 118.6008-118.6065, then the same 17 twice more by
    /// 118.6103 (lines 85167-85265) with no `mm_page_alloc` between; read as frees of pages in
    /// use since the snapshot, the 34 put CPU 1's list over its `high`, a drain of 63 the
    /// kernel did not do. The `mm_page_free_batched` that repeats a batched page's
    /// `mm_page_free` is no second free.
    #[inline]
    fn freed_again(&self, ev: &Event<'_>, pfn: u64, freed_on: Option<u32>) -> Option<Inferred> {
        let on = freed_on.filter(|_| matches!(ev.kind, EventKind::Free { order: 0, .. }))?;
        // Pages of HighAtomic (and isolated) pageblocks go to another list: not inferred.
        let migratetype = self.block_types.of(pfn).filter(|&t| t < 3)?;
        Some(Inferred::UntracedAlloc {
            cpu: on,
            migratetype,
            freed_again: true,
        })
    }
}
