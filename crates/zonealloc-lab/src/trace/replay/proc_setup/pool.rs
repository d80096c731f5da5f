//! The pages in use at a `/proc` snapshot, from which the replay frees what the kernel
//! frees of pages allocated before the trace ([`Pool`]).

use super::TYPES;

/// A zone's pages in use at the snapshot, handed out to frees of pages allocated before the
/// trace: per migratetype of the pageblock they lie in (Unmovable, Movable, Reclaimable), so
/// that a free goes to the list of the type the kernel's page had. Set up from the kernel's
/// layout, the pool's pages are the kernel's own pfns, and a free of one of them frees that
/// very page ([`Pool::take_at`]).
#[derive(Debug, Default)]
pub struct Pool {
    pages: [Vec<u64>; 3],
    /// With the kernel's layout: the span's first pfn, and per pfn still in the pool its
    /// pageblock's type index + 1, 0 for one not in the pool (a page taken by pfn stays in
    /// `pages` until a `take` pops and skips it).
    at: Option<(u64, Vec<u8>)>,
    left: usize,
}

impl Pool {
    /// A pool of `pages` (per migratetype index, in pfn order); `exact` gives the span
    /// (`start..end`) where the pages are the kernel's own pfns.
    pub fn new(pages: [Vec<u64>; 3], exact: Option<std::ops::Range<u64>>) -> Pool {
        let at = exact.map(|span| {
            let mut types = vec![0u8; (span.end - span.start) as usize];
            for (t, list) in pages.iter().enumerate() {
                for &p in list {
                    types[(p - span.start) as usize] = t as u8 + 1;
                }
            }
            (span.start, types)
        });
        let left = pages.iter().map(Vec::len).sum();
        Pool { pages, at, left }
    }

    /// Whether `pfn` is still in the pool (always, for a pool without pfns of its own).
    fn has(&self, pfn: u64) -> bool {
        self.at.is_none() || self.type_at(pfn).is_some()
    }

    /// The type index of the pageblock of `pfn`, a page still in the pool with its own pfn.
    fn type_at(&self, pfn: u64) -> Option<usize> {
        let (start, types) = self.at.as_ref()?;
        let i = usize::try_from(pfn.checked_sub(*start)?).ok()?;
        types.get(i).and_then(|&t| usize::from(t).checked_sub(1))
    }

    fn clear(&mut self, pfn: u64) {
        if let Some((start, types)) = &mut self.at {
            types[(pfn - *start) as usize] = 0;
        }
        self.left -= 1;
    }

    /// Takes `n` pages (fewer if the pool runs dry), the most recently allocated first, from
    /// pageblocks of migratetype index `mt` (0 Unmovable, 1 Movable, 2 Reclaimable), then
    /// Movable, Unmovable and Reclaimable ones (Movable first when `mt` is `None`).
    pub fn take(&mut self, n: u64, mt: Option<usize>) -> Vec<u64> {
        let mut got = Vec::new();
        let first = mt.filter(|&t| t < TYPES.len()).unwrap_or(1);
        for t in [first, 1, 0, 2] {
            // The last pages of the list, in list order.
            let mut chunk = Vec::new();
            while ((got.len() + chunk.len()) as u64) < n {
                let Some(p) = self.pages[t].pop() else { break };
                if self.has(p) {
                    self.clear(p);
                    chunk.push(p);
                }
            }
            got.extend(chunk.into_iter().rev());
        }
        got
    }

    /// The `n` pages from `pfn` on where all are in the pool with their own pfns (the
    /// kernel's page at the kernel's pfn) in pageblocks of the type `mt` the trace names for
    /// the kernel's (a HighAtomic one as Movable), else [`Pool::take`]'s. The list a free
    /// goes to is the pageblock's type (`free_frozen_pages`, `get_pfnblock_migratetype`),
    /// which the layout only infers: where the trace shows the kernel's pageblock was of
    /// another type than ours, its page went to another list than ours would, and a page of
    /// the named type keeps the CPU's lists, and so its refills and drains, the kernel's.
    pub fn take_at(&mut self, pfn: u64, n: u64, mt: Option<usize>) -> Vec<u64> {
        let want = mt.map(|t| if t < TYPES.len() { t } else { 1 });
        let exact = self.at.is_some()
            && pfn.checked_add(n).is_some_and(|end| {
                (pfn..end).all(|p| self.type_at(p).is_some_and(|t| want.is_none_or(|w| w == t)))
            });
        if !exact {
            // A block (`n` > 1): one aligned block of the named type, if the pool holds one,
            // so that it is freed as the kernel's, one block of its order
            // (`__free_frozen_pages`; 7.2's `free_prepared_contig_range` frees a `vfree`d
            // range's pages so too). Else page by page.
            return self
                .aligned_block(n, want)
                .unwrap_or_else(|| self.take(n, mt));
        }
        for p in pfn..pfn + n {
            self.clear(p);
        }
        (pfn..pfn + n).collect()
    }

    /// The most recently allocated aligned block of `n` pages all in the pool with their own
    /// pfns in pageblocks of type index `want` (Movable for none), taken.
    fn aligned_block(&mut self, n: u64, want: Option<usize>) -> Option<Vec<u64>> {
        let t = want.unwrap_or(1);
        if self.at.is_none() || n < 2 || !n.is_power_of_two() {
            return None;
        }
        let head = self
            .pages
            .get(t)?
            .iter()
            .rev()
            .copied()
            .find(|&p| p.is_multiple_of(n) && (p..p + n).all(|q| self.type_at(q) == Some(t)))?;
        for p in head..head + n {
            self.clear(p);
        }
        Some((head..head + n).collect())
    }

    /// Whether the `n` pages from `pfn` on are all still in the pool with their own pfns, in
    /// pageblocks of one type (so [`Pool::take_at`] takes exactly them).
    pub fn holds(&self, pfn: u64, n: u64) -> bool {
        let first = self.type_at(pfn);
        first.is_some()
            && pfn
                .checked_add(n)
                .is_some_and(|end| (pfn..end).all(|p| self.type_at(p) == first))
    }

    /// Pages left.
    pub fn len(&self) -> usize {
        self.left
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_hands_out_pages_of_the_asked_type_first() {
        let mut pool = Pool::new([vec![1, 2], vec![10, 11, 12], vec![20]], None);
        assert_eq!(pool.take(1, Some(2)), vec![20]);
        // Reclaimable ran dry: the rest from Movable (none asked: Movable first).
        assert_eq!(pool.take(2, Some(2)), vec![11, 12]);
        assert_eq!(pool.take(2, Some(0)), vec![1, 2]);
        assert_eq!(pool.take(5, None), vec![10]);
        assert!(pool.is_empty());
    }

    #[test]
    fn a_pool_of_the_kernels_pfns_frees_the_kernels_page() {
        let mut pool = Pool::new([vec![1, 2], vec![10, 11, 12, 13], vec![20]], Some(0..64));
        // The kernel frees its order-1 block at 10, in a Movable pageblock as ours.
        assert_eq!(pool.take_at(10, 2, Some(1)), vec![10, 11]);
        // Not all in the pool (11 went): by type, most recent first, 11 skipped.
        assert_eq!(pool.take_at(11, 2, Some(1)), vec![12, 13]);
        // No type named: the kernel's page.
        assert_eq!(pool.take_at(20, 1, None), vec![20]);
        // HighAtomic pageblocks' pages free to Movable lists, and are in Movable's pool.
        let mut pool = Pool::new([vec![], vec![5], vec![]], Some(0..64));
        assert_eq!(pool.take_at(5, 1, Some(3)), vec![5]);
        // Without pfns of its own, `take_at` is `take`.
        let mut pool = Pool::new([vec![1, 2], vec![], vec![]], None);
        assert_eq!(pool.take_at(1, 1, Some(0)), vec![2]);
    }

    /// p_prodcons (7.2, 4 GiB): CPU 3 frees pages in use before the trace, which it then
    /// hands out as Unmovable PCP hits (so the kernel's pageblocks were Unmovable); freed by
    /// pfn into pageblocks the layout typed otherwise, they went to our other lists, CPU 3's
    /// Unmovable list ran dry and refilled at 102.392667 where the kernel's did not (refill
    /// events 1.12% off the kernel; 0.00% with this rule).
    #[test]
    fn a_free_of_a_pageblock_the_trace_types_otherwise_takes_a_page_of_that_type() {
        let mut pool = Pool::new([vec![1, 2], vec![10, 11], vec![20]], Some(0..64));
        // Page 10 is ours in a Movable pageblock; the kernel's was Unmovable.
        assert_eq!(pool.take_at(10, 1, Some(0)), vec![2]);
        assert_eq!(pool.take_at(11, 1, Some(2)), vec![20]);
        assert_eq!(pool.take_at(10, 1, Some(1)), vec![10]);
        assert_eq!(pool.take_at(11, 1, Some(1)), vec![11]);
        assert_eq!(pool.len(), 1);
    }

    /// 7.2-4g p_thp: `kworker/1:0` frees 0x110018-0x11001b (line 10111), pages in use at the
    /// snapshot in a pageblock ours typed otherwise than the trace's Unmovable. A block's
    /// free takes an aligned block of the named type, not the type's last pages one by one.
    #[test]
    fn a_blocks_free_of_a_pageblock_typed_otherwise_takes_an_aligned_block_of_the_type() {
        let unmovable = vec![0x200, 0x201, 0x202, 0x203, 0x305, 0x307];
        let movable = vec![0x18, 0x19, 0x1a, 0x1b];
        let mut pool = Pool::new([unmovable, movable, vec![]], Some(0..0x400));
        assert_eq!(
            pool.take_at(0x18, 4, Some(0)),
            vec![0x200, 0x201, 0x202, 0x203]
        );
        // None left of the type: as before, its pages, then another type's.
        assert_eq!(
            pool.take_at(0x18, 4, Some(0)),
            vec![0x305, 0x307, 0x1a, 0x1b]
        );
        // Without the kernel's pfns, no block.
        let mut pool = Pool::new(
            [vec![0x200, 0x201, 0x202, 0x203, 0x305], vec![], vec![]],
            None,
        );
        assert_eq!(
            pool.take_at(0x18, 4, Some(0)),
            vec![0x201, 0x202, 0x203, 0x305]
        );
    }
}
