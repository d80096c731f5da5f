//! Compaction's free scanner as the trace shows it: the free blocks it takes as migration
//! targets leave the free lists with no kmem event (`__isolate_free_page`; `compaction_alloc`
//! hands them out without `mm_page_alloc`), only its `mm_compaction_isolate_freepages` and
//! `mm_compaction_fast_isolate_freepages` lines say where. Taken here at those lines, the
//! pages are in use, so their later traced frees are frees of ours, not of pages in use
//! before the trace.

use std::io;

use zonealloc::{FrameState, MigrateType, Order, Pfn};

use super::Replayer;
use crate::trace::replay::frames::Live;

impl Replayer {
    /// A compaction isolate line: `nr_taken` pages from `start..end` (`fast`: the fast
    /// path's one block, [`Replayer::fast_isolate`]).
    pub(super) fn compact_isolate(
        &mut self,
        (start, end): (u64, u64),
        nr_taken: u32,
        fast: bool,
    ) -> io::Result<()> {
        let Some(z) = self.geo.zone_of(start).filter(|_| nr_taken > 0) else {
            return Ok(());
        };
        let want = u64::from(nr_taken);
        let taken = if fast {
            self.fast_isolate(z, start, want)
        } else {
            self.isolate_range(z, (start, end), want)
        };
        self.counts.compaction_isolated += taken;
        self.counts.compaction_short += want.saturating_sub(taken);
        Ok(())
    }

    /// `isolate_freepages_block` (mm/compaction.c): the scan from `start` takes every free
    /// buddy block it meets (a block on a CPU's list is no `PageBuddy`: skipped), whole,
    /// until the printed end (`blockpfn`, where it stopped: after the block that made
    /// `nr_freepages >= nr_migratepages`, or the pageblock's end). Ours takes the free
    /// blocks that lie in `start..end` in pfn order, up to `want` pages (the scan in async
    /// mode strides over some heads; ours may differ from the kernel's there).
    /// The scan never leaves `start`'s pageblock (`isolate_freepages` and
    /// `isolate_freepages_range` call it a pageblock at a time), nor the zone: a line that
    /// says more is cut to them.
    fn isolate_range(&mut self, z: usize, (start, end): (u64, u64), want: u64) -> u64 {
        let block = 1u64 << self.zones[z].config().pageblock_order;
        let end = end
            .min((start | (block - 1)).saturating_add(1))
            .min(self.geo.zones[z].end());
        let (mut p, mut taken) = (start, 0);
        while p < end && taken < want {
            let Some(FrameState::Buddy(o)) = self.zones[z].frame_state(Pfn(p)) else {
                p += 1;
                continue;
            };
            let n = o.pages();
            // The kernel's blocks lie inside the range and sum to `want`: ours, larger
            // there, is out of step (its pages were partly in use in the kernel).
            if p + n <= end && taken + n <= want {
                taken += self.take_block(z, p, n);
            }
            p += n;
        }
        taken
    }

    /// `fast_isolate_freepages` (6.12, 7.2): one block of `want` pages from the `Movable`
    /// free list, the first the reversed list shows at or above a bound the line does not
    /// print (`low_pfn`), else the highest at or above `min_pfn` (the line's `start`). Ours
    /// takes the highest at or above `min_pfn`: the line pins the order and the lower bound.
    fn fast_isolate(&mut self, z: usize, min_pfn: u64, want: u64) -> u64 {
        let Some(order) =
            Order::new(want.trailing_zeros() as u8).filter(|_| want.is_power_of_two())
        else {
            return 0;
        };
        let mut heads = vec![Pfn(0); self.zones[z].nr_free()[order.index()] as usize];
        let n = self.zones[z].free_list(order, MigrateType::Movable, &mut heads);
        let best = heads[..n]
            .iter()
            .map(|p| p.0)
            .filter(|&p| p >= min_pfn && !self.frames.is_live(p))
            .max();
        best.map_or(0, |p| self.take_block(z, p, want))
    }

    /// Takes our free block of `n` pages at `head` (`__isolate_free_page`), its pages then
    /// order-0 pages in use, each the trace's own frame; none where a frame of it is one the
    /// trace has live (ours is out of step there: the kernel's was in use).
    fn take_block(&mut self, z: usize, head: u64, n: u64) -> u64 {
        if (head..head + n).any(|p| self.frames.is_live(p))
            || self.zones[z].isolate_free_block(Pfn(head)).is_err()
        {
            return 0;
        }
        for ours in head..head + n {
            let l = Live {
                ours,
                order: 0,
                zone: z as u8,
                freed: 0,
            };
            self.frames.set_live(ours, l);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::at;
    use super::*;
    use crate::trace::ingest::sniff;
    use crate::trace::migratetype::Numbering;
    use crate::trace::parse::Event;
    use crate::trace::parse::EventKind;
    use crate::trace::replay::infer::kernel::Inferred;
    use crate::trace::replay::Geometry;
    use crate::trace::variant::Variant;

    fn isolate(start_pfn: u64, end_pfn: u64, nr_taken: u32, fast: bool) -> Event<'static> {
        let kind = EventKind::CompactIsolate {
            start_pfn,
            end_pfn,
            nr_taken,
            fast,
        };
        at(0, None, kind)
    }

    /// The scanner's line takes the free blocks that lie in its range and its pageblock, up
    /// to its pages: their later frees are frees of ours, none of a page in use before the
    /// trace (old code: 512 of them, our pages kept free). An order-10 block never fits a
    /// pageblock's scan (`blockpfn + (1 << order) <= end_pfn`), and a range past the
    /// pageblock is cut to it. The fast path takes the highest `Movable` block of its order
    /// at or above `min_pfn`.
    #[test]
    fn an_isolate_line_takes_the_free_blocks_of_its_range() {
        let s = sniff::Sniff::default();
        // Sixteen order-10 blocks, then one of order 9 at 0x4000.
        let pages = (1 << 14) + 512;
        let g =
            Geometry::from_flags(None, Some(pages), None, Some(1), &s, Numbering::Current).unwrap();
        let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
        let free0 = r.zones[0].free_pages() + r.zones[0].pcp_pages();
        r.feed(&isolate(0, 0x200, 512, false), Inferred::None)
            .unwrap();
        assert_eq!(r.counts.compaction_isolated, 0);
        r.feed(&isolate(0x4000, u64::MAX, 512, false), Inferred::None)
            .unwrap();
        assert_eq!(r.counts.compaction_isolated, 512);
        assert!(r.frames.is_live(0x41ff) && !r.frames.is_live(0x3fff));
        let free1 = r.zones[0].free_pages() + r.zones[0].pcp_pages();
        assert_eq!(free0 - free1, 512);
        for pfn in 0x4000..0x4200 {
            let free = EventKind::Free { pfn, order: 0 };
            r.feed(&at(0, None, free), Inferred::None).unwrap();
        }
        assert_eq!((r.counts.frees_before_trace, r.counts.frees), (0, 512));
        assert_eq!(r.zones[0].free_pages() + r.zones[0].pcp_pages(), free0);
        // Fast: one order-10 block, the zone's highest.
        r.feed(&isolate(0x800, 0x4000, 1024, true), Inferred::None)
            .unwrap();
        assert!(r.frames.is_live(0x3c00) && !r.frames.is_live(0x3800));
        assert_eq!(r.counts.compaction_short, 512);
    }
}
