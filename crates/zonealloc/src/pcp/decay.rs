//! What one run of `decay_pcp_high` did to one CPU's lists ([`DecayOutcome`]).

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
