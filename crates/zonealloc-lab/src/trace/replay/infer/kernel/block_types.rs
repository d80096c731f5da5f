//! Pageblock naming: the migratetype the trace names for each pageblock, read for the frees of
//! pages in use before the trace ([`Inferred::FreeOfType`]).

use super::Inferred;
use crate::trace::parse::{Event, EventKind};

/// Pageblocks the trace has named the migratetype of: the latest allocation, refill or drain
/// in each (an allocation without fallback comes from a pageblock of its own type;
/// `free_pcppages_bulk` prints the pageblock's), seeded with the first one the trace's head
/// names ([`super::super::pcp_state`]) for frees before the pageblock's first event.
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

    /// Names the pageblock of the event's page, if the event names one: a successful
    /// allocation (`mm_page_alloc`, its page taken from a pageblock of its own type unless it
    /// fell back), a buddy allocation or refill (`mm_page_alloc_zone_locked`) and a drain
    /// (`mm_page_pcpu_drain`, which prints the pageblock's type). Shared by
    /// [`KernelSide::add`](super::KernelSide::add) and
    /// [`KernelSide::add_noted`](super::KernelSide::add_noted).
    #[inline(always)]
    pub fn name_by(&mut self, ev: &Event<'_>) {
        match ev.kind {
            EventKind::Alloc {
                pfn, migratetype, ..
            } if !ev.is_failed_alloc() => self.name(pfn, migratetype),
            EventKind::ZoneLocked {
                pfn, migratetype, ..
            }
            | EventKind::PcpuDrain {
                pfn, migratetype, ..
            } => self.name(pfn, migratetype),
            _ => {}
        }
    }

    /// The named migratetype of `pfn`'s pageblock.
    #[inline]
    pub fn of(&self, pfn: u64) -> Option<u8> {
        let b = usize::try_from(pfn >> self.shift).ok()?;
        self.types.get(b).and_then(|&t| t.checked_sub(1))
    }

    /// What a free of `pfn` with no other inference is replayed as: a free onto the list of
    /// its pageblock's named type ([`Inferred::FreeOfType`]), or nothing if none is named.
    #[inline]
    pub fn free_of_type(&self, pfn: u64) -> Inferred {
        match self.of(pfn) {
            Some(migratetype) => Inferred::FreeOfType { migratetype },
            None => Inferred::None,
        }
    }
}
