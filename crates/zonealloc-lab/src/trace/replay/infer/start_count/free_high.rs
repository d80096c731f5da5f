//! A free whose drain the trace shows to be `free_high`'s, from 6.7 on: then the drain emptied
//! the lists, and its pages are the count.
//!
//! 6.12's `free_unref_page_commit` (7.2's `free_frozen_page_commit`) takes a free of order
//! 1..=3 as `free_high` when `pcp->free_count >= batch` (7.2: `batch + high_min / 2`), the
//! CPU's previous free onto the lists was of order 1..=3 too (`PCPF_PREV_FREE_HIGH_ORDER`),
//! and, on a CPU with a large LLC slice (`PCPF_FREE_HIGH_BATCH`), `count >= batch`. A drain
//! after such a free with the first two known is `free_high`'s: with the third failing, the
//! count is under `batch`, below any `nr_pcp_high`, and nothing drains. `nr_pcp_free` then
//! drains `min(count, batch << CONFIG_PCP_BATCH_SCALE_MAX)`, so a drain of fewer pages than
//! that took the whole count.
//!
//! The walk keeps, per zone and CPU, the flag once a free on the lists has shown it, and a
//! floor under `free_count`: each free adds its pages (up to the cap, as
//! `free_unref_page_commit` adds them), each allocation of a list order halves it
//! (`rmqueue_pcplist`'s `free_count >>= 1`; a direct or failed one too, which may have run
//! it). `alloc_pages_bulk` does not touch it. Before the walk's first events it is 0.
//!
//! 6.12-4g-more p_sock, Normal CPU 2 (zoneinfo count 192): nine order-3 softirq frees from
//! 66.505490, after seven order-3 allocations, the ninth drained 368 pages at 66.505563 (15
//! order-3 blocks, 190 order-0 pages, 29 order-1 blocks, round-robin over the lists, none
//! Reclaimable): the count was 177 at the start. Bounded only, the set-up kept zoneinfo's
//! 192 and put the 15 pages more on a Reclaimable list the kernel's CPU 2 did not have; our
//! drain freed them, and the Normal end state had 27 Reclaimable pages more (with CPU 3's).

use zonealloc::FreeHigh;

use super::Cpu;

/// What a CPU's frees show of `free_count` and `PCPF_PREV_FREE_HIGH_ORDER`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Flags {
    /// At most the CPU's `free_count`.
    free_lo: i64,
    /// `PCPF_PREV_FREE_HIGH_ORDER`, once a free on the lists has shown it.
    prev_high_order: Option<bool>,
}

impl Flags {
    /// A free of `order` onto the lists, with `high_min` and `batch` (`cap`: `batch <<
    /// CONFIG_PCP_BATCH_SCALE_MAX`): whether it is surely a `free_high` one under `rule`.
    pub(super) fn freed(
        &mut self,
        order: u8,
        rule: FreeHigh,
        (high_min, batch, cap): (i64, i64, i64),
    ) -> bool {
        let high_order = (1..=3).contains(&order);
        let at = match rule {
            FreeHigh::Batch => Some(batch),
            FreeHigh::Current => Some(batch + high_min / 2),
            _ => None,
        };
        let sure = high_order
            && self.prev_high_order == Some(true)
            && at.is_some_and(|at| self.free_lo >= at);
        self.prev_high_order = Some(high_order);
        if self.free_lo < cap {
            self.free_lo = (self.free_lo + (1i64 << order)).min(cap);
        }
        sure
    }

    /// An allocation that may have run `rmqueue_pcplist`.
    pub(super) fn allocated(&mut self) {
        self.free_lo >>= 1;
    }
}

impl Cpu {
    /// Whether a drain of `drained` pages after a free `free_high` surely took emptied the
    /// lists: fewer than `batch << CONFIG_PCP_BATCH_SCALE_MAX`, the most it takes. Only as
    /// the CPU's first pin: a later one carries every page the trace did not show since
    /// (6.12-4g-more p_memcg, Normal CPU 2: the order-0 free's drain at 186.807125 left
    /// zoneinfo's 453, with which the worker's drain at 186.801040 is the kernel's 491; the
    /// `free_high` drain at 193.402944, after a 2016-page drain and interrupts' frees, read
    /// 407, and the worker then drained 445).
    pub(super) fn free_high_emptied(&self, sure: bool, drained: i64, scale_max: u8) -> bool {
        sure && self.pin.is_none() && drained < self.high.batch << scale_max
    }
}
