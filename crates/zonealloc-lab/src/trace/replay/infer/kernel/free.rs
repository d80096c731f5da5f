//! A traced free (`mm_page_free`, `mm_page_free_batched`): the frame goes onto the freeing
//! CPU's lists, and a page a refill listed that no traced allocation took was allocated
//! untraced ([`Inferred::UntracedAlloc`]).

use super::{Inferred, KernelSide};
use crate::trace::parse::Event;

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
        let f = self.pfns.get_mut(pfn);
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
            }
        } else if NAME_BLOCKS {
            self.block_types.free_of_type(pfn)
        } else {
            Inferred::None
        }
    }
}
