//! `decay_pcp_high`'s arithmetic ([`PerCpuPages::decay_target`]) and what one run of it did
//! to one CPU's lists ([`DecayOutcome`]).

use super::PerCpuPages;

/// One CPU's share of the vmstat worker's `refresh_cpu_vm_stats(true)` for one zone:
/// `decay_pcp_high` (6.7 and later; `mm/page_alloc.c`), as
/// [`Zone::decay_pcp_high`](crate::Zone::decay_pcp_high) runs it. The kernel lowers `high` by
/// an eighth toward `high_min`, never below `count - (batch << CONFIG_PCP_BATCH_SCALE_MAX)`,
/// then frees `count - high` pages in `free_pcppages_bulk` calls of at most `batch` pages,
/// each from list 0 (`pindex` 0) under its own PCP lock and zone-lock hold.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct DecayOutcome {
    /// The lists were reached. `false` when the zone has no per-CPU lists, or an owner holds
    /// this CPU's lists for good (owner-only locking: its `CpuHandle::tick` decays them).
    pub reached: bool,
    /// `pcp->high` before.
    pub high_before: i32,
    /// `pcp->high` after (equal to `high_before` when `high <= high_min`, or when the zone's
    /// rules have no decay: 6.6 and older).
    pub high_after: i32,
    /// `pcp->count` before.
    pub count_before: i32,
    /// Pages freed to the buddy: `count - high` after the new `high`, rounded up to whole
    /// blocks of the lists drained (a high-order block counts all its pages).
    pub drained: i32,
    /// `free_pcppages_bulk` calls: one zone-lock hold and one run of `mm_page_pcpu_drain`
    /// lines each, of at most `batch` pages.
    pub chunks: u32,
    /// `decay_pcp_high`'s return, "whether there are addition works to do": `high` is still
    /// above `high_min`, or pages were drained. `refresh_cpu_vm_stats` then returns `true`
    /// and `vmstat_update` queues the CPU's worker again.
    pub todo: bool,
}

impl PerCpuPages {
    /// `decay_pcp_high`'s new `high` and its first `todo`, without changing anything:
    /// `max3(count - (batch << scale), high - high / 8, high_min)` while `high > high_min`
    /// (then `todo` if it stays above `high_min`), else `high` as it is.
    pub(crate) fn decay_target(&self, scale: u8) -> (i32, bool) {
        let (hmin, batch) = (self.high_min, self.batch);
        if self.high <= hmin {
            return (self.high, false);
        }
        let high = (self.count - (batch << scale))
            .max(self.high - (self.high >> 3))
            .max(hmin);
        (high, high > hmin)
    }

    /// What `decay_pcp_high` would do to these lists, without doing it: `drained` is the
    /// pages it would ask for (`count - high`; the run itself may free a little more, a
    /// high-order block counting all its pages) and `chunks` the `free_pcppages_bulk` calls.
    pub(crate) fn decay_preview(&self, scale: u8) -> DecayOutcome {
        let (high, todo) = self.decay_target(scale);
        let to_drain = (self.count - high).max(0);
        let batch = self.batch.max(1);
        DecayOutcome {
            reached: true,
            high_before: self.high,
            high_after: high,
            count_before: self.count,
            drained: to_drain,
            chunks: (to_drain as u32).div_ceil(batch as u32),
            todo: todo || to_drain > 0,
        }
    }
}
