//! From 6.7 on, each CPU's `free_count` at the walk's start: the file's (`--whole-file`), or
//! the window's where the text before the marker shows nothing of the CPU's lists in the zone
//! (else `infer/free_count.rs` counts it there). zoneinfo does not print it, so the replay
//! started it at 0. Yet a free's drain takes `nr_pcp_free`'s `clamp(free_count, batch, high -
//! batch)` pages (7.2 `free_frozen_page_commit`, 6.12 `free_unref_page_commit`), so a drain of
//! more than `batch` order-0 pages, and fewer than `high_min - batch`, names `free_count` at
//! that free. Back to the start, the steps between are the walk's: each free onto the lists
//! adds its pages (`if (pcp->free_count < (batch << CONFIG_PCP_BATCH_SCALE_MAX))
//! pcp->free_count += (1 << order)`), each allocation a list may have served halves it
//! (`rmqueue_pcplist`'s `pcp->free_count >>= 1`), as `free_high.rs`'s floor counts them.
//!
//! 7.2-6g-12cpu-wq p_fork, Normal CPU 9: `cat-398`'s single free at 25.702490 drained 69
//! order-0 pages, its CPU's first event since `kworker/9:1`'s quiet run at 8.713452 and its
//! first free in the file: `free_count` was 68 at the file's start. From 0, ours drained 63
//! there, and its refills and drains were 9% over the kernel's from 26.207 on.
//!
//! 7.2-3g-16cpu p_file (the window), DMA32 CPU 3, no event before 137.466026:
//! `kmem-phases-1101` drains 63, 100, 200 and 400 pages (137.466846-137.473069) after 21, 63,
//! 100 and 200 commits: `free_count` was 16 at the window's start. From 0, ours drained 84,
//! 168 and 336 pages, and at 137.473066 its count (587) was under `high` (875) where the
//! kernel drained 400.

/// Halvings after which `free_count` at the start no longer shows (it is at most `batch <<
/// CONFIG_PCP_BATCH_SCALE_MAX`, under 2^11 for any batch the kernel sets).
const FORGOTTEN_AFTER: u32 = 12;

/// One step of `free_count` since the walk's start.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// `rmqueue_pcplist`: halved.
    Halve,
    /// `n` frees of order 0 in a row (each adds a page while under the cap).
    Pages(i64),
    /// A free of a higher order: `1 << order` pages while under the cap.
    Block(i64),
}

/// What the walk saw of one CPU's `free_count` since its start, up to the first drain that
/// names it.
#[derive(Clone, Debug, Default)]
pub(super) struct StartFree {
    /// The walk reads `free_count` at the start ([`StartFree::open`]).
    on: bool,
    steps: Vec<Step>,
    halvings: u32,
    /// No more is noted: a drain named it, or the start no longer shows.
    closed: bool,
    /// `free_count` at the start, where a drain named it.
    found: Option<i64>,
}

impl StartFree {
    /// The walk reads `free_count` at its start (from 6.7 on): note the steps.
    pub(super) fn open(&mut self) {
        self.on = true;
    }

    /// A free of `order` onto the lists.
    pub(super) fn freed(&mut self, order: u8) {
        if self.closed || !self.on {
            return;
        }
        match (order, self.steps.last_mut()) {
            (0, Some(Step::Pages(n))) => *n += 1,
            (0, _) => self.steps.push(Step::Pages(1)),
            (o, _) => self.steps.push(Step::Block(1i64 << o.min(30))),
        }
    }

    /// An allocation of a list order, which may have run `rmqueue_pcplist`.
    pub(super) fn allocated(&mut self) {
        if self.closed || !self.on {
            return;
        }
        self.halvings += 1;
        if self.halvings >= FORGOTTEN_AFTER {
            self.closed = true;
            self.steps = Vec::new();
            return;
        }
        self.steps.push(Step::Halve);
    }

    /// `free_count` now for `x` at the start, under `cap` (`batch <<
    /// CONFIG_PCP_BATCH_SCALE_MAX`).
    fn now(&self, mut x: i64, cap: i64) -> i64 {
        for s in &self.steps {
            match *s {
                Step::Halve => x >>= 1,
                Step::Pages(n) if x < cap => x = (x + n).min(cap),
                Step::Block(p) if x < cap => x += p,
                _ => {}
            }
        }
        x
    }

    /// The drain a free of `order` triggered took `drained` pages, in blocks of at most
    /// `block` pages; `(high_min, batch, cap)` the zone's. An order-0 drain (each block one
    /// page: `free_pcppages_bulk` took no more than asked) of more than `batch` and fewer
    /// than `high_min - batch` pages, after a free that is no `free_high` one (order 0, or
    /// above `PAGE_ALLOC_COSTLY_ORDER`), names `free_count` then: the least start that gives
    /// it, where one does. A drain of `batch` pages or fewer (the clamp from below) names
    /// nothing, nor does one of `3 * batch` (the clamp from above while kswapd reclaims the
    /// zone: `nr_pcp_high` under `ZONE_RECLAIM_ACTIVE` returns at most `batch << 2`), and the
    /// steps go on to the next.
    pub(super) fn drained(&mut self, order: u8, (drained, block): (i64, i64), z: (i64, i64, i64)) {
        let (high_min, batch, cap) = z;
        if self.closed || !self.on || (1..=3).contains(&order) || block != 1 {
            return;
        }
        if drained <= batch || drained == 3 * batch {
            return;
        }
        self.closed = true;
        if drained >= high_min - batch {
            return;
        }
        let x = super::start_high::first_above(0, cap, |x| self.now(x, cap) >= drained);
        self.found = (x <= cap && self.now(x, cap) == drained).then_some(x);
        self.steps = Vec::new();
    }

    /// `free_count` at the start, where a drain named it.
    pub(super) fn found(&self) -> Option<i64> {
        self.found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const Z: (i64, i64, i64) = (879, 63, 63 << 5);

    fn open() -> StartFree {
        let mut s = StartFree::default();
        s.open();
        s
    }

    #[test]
    fn a_drain_above_batch_names_free_count_at_the_start() {
        // 7.2-6g-12cpu-wq p_fork, Normal CPU 9: one free, then a drain of 69 order-0 pages.
        let mut s = open();
        s.freed(0);
        s.drained(0, (69, 1), Z);
        assert_eq!(s.found(), Some(68));
        // Through an allocation's halving: 2 * 34 or 2 * 34 + 1 gives 34, then 35 frees.
        let mut s = open();
        s.allocated();
        for _ in 0..35 {
            s.freed(0);
        }
        s.drained(0, (35 + 34, 1), Z);
        assert_eq!(s.found(), Some(68));
    }

    /// 7.2-3g-16cpu p_file's DMA32 CPU 3: 21 frees drain `batch` (63, the clamp: the count
    /// was at most 63), 63 more drain 100: 16 at the start. Fails on the old code (the first
    /// drain closed the walk).
    #[test]
    fn a_drain_of_batch_names_nothing_and_the_next_one_does() {
        let mut s = open();
        for _ in 0..21 {
            s.freed(0);
        }
        s.drained(0, (63, 1), Z);
        assert_eq!(s.found(), None);
        for _ in 0..63 {
            s.freed(0);
        }
        s.drained(0, (100, 1), Z);
        assert_eq!(s.found(), Some(16));
    }

    /// Under `ZONE_RECLAIM_ACTIVE` a drain of `3 * batch` may be `nr_pcp_free`'s clamp from
    /// above (`high` at most `batch << 2`): it names nothing, the next drain does. Fails on
    /// the old code (189 read as the count: 188 at the start).
    #[test]
    fn a_drain_of_three_batches_names_nothing_and_the_next_one_does() {
        let mut s = open();
        s.freed(0);
        s.drained(0, (3 * 63, 1), Z);
        assert_eq!(s.found(), None);
        for _ in 0..10 {
            s.freed(0);
        }
        s.drained(0, (100, 1), Z);
        assert_eq!(s.found(), Some(89));
    }

    #[test]
    fn a_drain_of_batch_or_of_blocks_or_after_many_halvings_names_nothing() {
        for (order, drained, block) in [(0, 63, 1), (0, 69, 2), (1, 69, 1), (0, 817, 1)] {
            let mut s = open();
            s.freed(order);
            s.drained(order, (drained, block), Z);
            assert_eq!(s.found(), None, "{order} {drained} {block}");
        }
        let mut s = open();
        for _ in 0..FORGOTTEN_AFTER {
            s.allocated();
        }
        s.freed(0);
        s.drained(0, (69, 1), Z);
        assert_eq!(s.found(), None);
        // More than the steps can give from any start: none.
        let mut s = open();
        s.allocated();
        s.drained(0, (1500, 1), (4000, 63, 63 << 5));
        assert_eq!(s.found(), None);
    }
}
