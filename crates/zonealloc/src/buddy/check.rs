//! `check()`: the zone invariants Z1..Z9 (listed in the module doc of `buddy`), asserted by a
//! full walk of the free lists and the frame table. O(frames); for tests and debugging.

use super::BuddyZone;
use crate::check::{check_fail as fail, CheckError};
use crate::meta::{FrameState, FrameTable};
use crate::types::{MigrateType, Order};

impl BuddyZone {
    /// Walks every free list (Z2..Z5, Z7, Z8), then the frame table (Z1, Z6, Z9), and returns what
    /// it counted (the caller cross-checks the per-CPU share, G1).
    pub(crate) fn check(&self, t: &FrameTable) -> Result<CheckFacts, CheckError> {
        let listed_blocks = self.check_lists(t)?;
        self.check_table(t, listed_blocks)
    }

    /// Z2..Z5, Z7, Z8: every free list's blocks, the counts kept of them and the non-empty
    /// bits; how many blocks the lists hold.
    fn check_lists(&self, t: &FrameTable) -> Result<u64, CheckError> {
        let max = self.cfg.max_order;
        let (mut free_pages, mut free_ha, mut free_blocks_pages) = (0u64, 0u64, 0u64);
        let mut listed_blocks = 0u64;
        for o in 0..=max {
            let area = &self.free_area[o as usize];
            let mut count = 0u64;
            for (mti, list) in area.lists.iter().enumerate() {
                let mt = MigrateType::from_index(mti).unwrap_or(MigrateType::Movable);
                let want = FrameState::Buddy(Order::from_raw(o));
                let n = list.check(t, want, "Z2", |idx| {
                    let pfn = t.pfn_of(idx);
                    if pfn.0 & ((1u64 << o) - 1) != 0 {
                        return Err(fail("Z4", Some(pfn), "free block not aligned to its order"));
                    }
                    if pfn.0 < self.span_start || pfn.0 + (1u64 << o) > self.span_end {
                        return Err(fail("Z4", Some(pfn), "free block outside the zone span"));
                    }
                    if t.buddy_list(idx) != mt {
                        return Err(fail(
                            "Z5",
                            Some(pfn),
                            "free block on a list other than the one it records",
                        ));
                    }
                    // 6.1's rules leave blocks on another type's list (see `buddy_list`).
                    let lists_follow_blocks = !self.cfg.lists_may_differ_from_blocks();
                    if lists_follow_blocks && self.block_mt(t, idx) != mt {
                        return Err(fail(
                            "Z5",
                            Some(pfn),
                            "free block on a list other than its pageblock's type",
                        ));
                    }
                    if mt != MigrateType::Isolate {
                        free_pages += 1u64 << o;
                        if mt == MigrateType::HighAtomic {
                            free_ha += 1u64 << o;
                        }
                        if o >= self.cfg.pageblock_order {
                            free_blocks_pages += 1u64 << o;
                        }
                    }
                    Ok(())
                })?;
                if self.nonempty_bit(Order::from_raw(o), mt) != (n > 0) {
                    return Err(fail(
                        "Z8",
                        None,
                        "non-empty bit disagrees with its free list",
                    ));
                }
                count += n;
            }
            if count != area.nr_free {
                return Err(fail(
                    "Z3",
                    None,
                    "nr_free differs from the number of listed blocks",
                ));
            }
            listed_blocks += count;
        }
        if free_pages != self.nr_free_pages {
            return Err(fail(
                "Z7",
                None,
                "NR_FREE_PAGES differs from the pages on free lists",
            ));
        }
        if free_ha != self.nr_free_highatomic {
            return Err(fail(
                "Z7",
                None,
                "nr_free_highatomic differs from the HighAtomic free lists",
            ));
        }
        if free_blocks_pages != self.nr_free_pages_blocks {
            return Err(fail(
                "Z7",
                None,
                "NR_FREE_PAGES_BLOCKS differs from the free lists",
            ));
        }
        Ok(listed_blocks)
    }

    /// Z1, Z6, Z9: the frame table walked block by block, against the `listed_blocks` the free
    /// lists hold; what it counted.
    fn check_table(&self, t: &FrameTable, listed_blocks: u64) -> Result<CheckFacts, CheckError> {
        // Z1 and Z6: walk the table block by block. Every managed frame must be covered by
        // exactly one head, tails only inside a head's block.
        let mut facts = CheckFacts::default();
        let mut idx = 0u32;
        let mut heads = 0u64;
        while idx < t.len() {
            let pfn = t.pfn_of(idx);
            match t.state(idx) {
                FrameState::Absent => {
                    // Holes come in runs: skip to the next frame that is not absent.
                    idx = t.first_present(idx + 1..t.len()).unwrap_or(t.len());
                    continue;
                }
                FrameState::Tail => {
                    return Err(fail(
                        "Z1",
                        Some(pfn),
                        "frame belongs to no block (tail without a head)",
                    ));
                }
                FrameState::Buddy(o) => {
                    heads += 1;
                    facts.free_pages += o.pages();
                    let (buddy, _) = self.find_buddy(t, idx, o);
                    if let Some(b) = buddy {
                        let mergeable = o.get() < self.cfg.pageblock_order || {
                            let (a, bt) = (self.block_mt(t, idx), self.block_mt(t, b));
                            a == bt || (a.is_mergeable() && bt.is_mergeable())
                        };
                        if o.get() < self.cfg.max_order && mergeable {
                            return Err(fail("Z6", Some(pfn), "two free buddies left unmerged"));
                        }
                    }
                    self.check_tails(t, idx, o, &mut facts)?;
                    idx += o.pages() as u32;
                }
                FrameState::Allocated(o, _) => {
                    facts.allocated_pages += o.pages();
                    facts.allocated_blocks += 1;
                    self.check_tails(t, idx, o, &mut facts)?;
                    idx += o.pages() as u32;
                }
                FrameState::Pcp(o) => {
                    facts.pcp_pages += o.pages();
                    self.check_tails(t, idx, o, &mut facts)?;
                    idx += o.pages() as u32;
                }
            }
        }
        if heads != listed_blocks {
            return Err(fail("Z1", None, "a Buddy head is on no free list"));
        }
        if facts.free_pages + facts.allocated_pages + facts.pcp_pages != self.managed_pages {
            return Err(fail(
                "Z1",
                None,
                "free + allocated + per-CPU pages differ from managed pages",
            ));
        }
        // Z9: the pageblock type is repeated in every frame of the pageblock.
        if let Some(idx) = t.first_block_copy_differing() {
            return Err(fail(
                "Z9",
                Some(t.pfn_of(idx)),
                "frame's copy of its pageblock's migratetype differs from the pageblock's",
            ));
        }
        Ok(facts)
    }

    fn check_tails(
        &self,
        t: &FrameTable,
        head: u32,
        o: Order,
        _facts: &mut CheckFacts,
    ) -> Result<(), CheckError> {
        let end = head as u64 + o.pages();
        if end > t.len() as u64 {
            return Err(fail("Z4", Some(t.pfn_of(head)), "block runs past the zone"));
        }
        if t.pfn_of(head).0 & (o.pages() - 1) != 0 {
            return Err(fail(
                "Z4",
                Some(t.pfn_of(head)),
                "block not aligned to its order",
            ));
        }
        if let Some(i) = t.first_not_of_kind(head + 1..end as u32, FrameState::Tail) {
            return Err(fail(
                "Z1",
                Some(t.pfn_of(i)),
                "frame inside a block is not a tail (overlapping blocks or a hole)",
            ));
        }
        Ok(())
    }
}

/// What a successful check counted, for the caller's cross-checks (PCP, global conservation).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct CheckFacts {
    /// Pages in free buddy blocks (Isolate included).
    pub free_pages: u64,
    /// Pages in allocated blocks.
    pub allocated_pages: u64,
    /// Allocated blocks.
    pub allocated_blocks: u64,
    /// Pages in blocks on per-CPU lists.
    pub pcp_pages: u64,
}
