//! A refill that can take the count past `high`: `rmqueue_bulk` puts `nr_pcp_alloc`'s batch on
//! the lists and nothing on the allocation path drains, so only the next free's
//! `free_frozen_page_commit` (7.2; `free_unref_page_commit` before) checks the count against
//! `high` again. For an order above 0 the batch is `max(batch >> order, 2)` blocks whatever
//! the count (`nr_pcp_alloc`'s `if (order) batch = base_batch;`): a THP refill is 2 blocks,
//! 1024 pages, above a `high` of 855 to 5074. The next free's drain then shows the count at
//! or above `high`, not that this free crossed it: a bound from below only, as after kswapd's
//! wake, until a free that drains nothing shows the count below `high` again.
//!
//! An order-0 batch is `min(batch << alloc_factor, max(high - count - batch, batch))`, which
//! stays below `high` unless the list was within a batch of it: left as it was.
//!
//! 7.2-4g-6cpu p_thp, Normal CPU 0: two THP refills (168.177451, 168.180048) and two THP
//! allocations put 1024 pages on the lists; the softirq frees after them (from 168.180813)
//! drain 63 pages each, 6 in a row, 4 frees drain nothing, and the 11th drains again: the
//! count was 367 above `high` at the first. Read as a crossing, that first drain pinned the
//! start at 2133 where zoneinfo printed 2498, and the replay drained once.

use super::Cpu;

impl Cpu {
    /// A refill run of `order` began: a higher order's batch may leave the count at or above
    /// `high`.
    pub(super) fn refill_may_pass_high(&mut self, order: u8) {
        if order > 0 {
            self.high_fell = true;
        }
    }
}

#[cfg(test)]
mod tests;
