//! What a replay counts: [`ReplayCounts`] per variant and the [`FragSample`]s over time.

use serde::Serialize;

/// What one variant's replay did with the trace.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReplayCounts {
    /// Traced allocations replayed successfully.
    pub allocs: u64,
    /// Traced allocations that succeeded in the kernel and failed here.
    pub alloc_failures: u64,
    /// Traced failed allocations.
    pub kernel_failures: u64,
    /// Traced failures that succeeded here (freed at once).
    pub kernel_failures_satisfied: u64,
    /// Allocations skipped: order above `MAX_PAGE_ORDER` or not a GFP migratetype.
    pub skipped_allocs: u64,
    /// Allocations whose frame is the one the kernel handed out.
    pub same_frame: u64,
    /// Allocations of a frame this replay had handed out before.
    pub reused: u64,
    /// Frees replayed.
    pub frees: u64,
    /// Frees of frames not allocated in the trace (skipped, unless `--proc` gave the pages
    /// in use: then counted in `frees_from_snapshot` too).
    pub frees_before_trace: u64,
    /// Frees of pages allocated before the trace, replayed as frees of pages in use at the
    /// `/proc` snapshot.
    pub frees_from_snapshot: u64,
    /// Frees of frames whose allocation failed here (skipped).
    pub frees_of_failed: u64,
    /// Frees covering part of a traced block (`split_page`).
    pub partial_frees: u64,
    /// Frees with a larger order than the block's (the block is freed).
    pub order_mismatches: u64,
    /// Frames allocated again without a traced free (freed first).
    pub implicit_frees: u64,
    /// `mm_page_free_batched` events that repeated an `mm_page_free`.
    pub batched_duplicates: u64,
    /// Our `mm_page_alloc_extfrag` events.
    pub extfrag: u64,
    /// Drains of a CPU's lists inferred from unexplained drain runs ([`kernel`](super::kernel)).
    pub inferred_drains: u64,
    /// Allocations the trace does not show, inferred from refilled pages no traced allocation
    /// took (at the refill run's next allocation or refill, else at the page's free)
    /// ([`kernel::Inferred::UntracedAlloc`](super::kernel::Inferred::UntracedAlloc)).
    pub untraced_allocs: u64,
    /// Pages compaction's free scanner took off our free lists at its traced
    /// `mm_compaction_isolate_freepages` and `mm_compaction_fast_isolate_freepages` lines
    /// (`isolate_freepages_block`, `fast_isolate_freepages`: no `mm_page_alloc`), then in use.
    pub compaction_isolated: u64,
    /// Pages those lines say the kernel took and ours had no free block for (ours differs).
    pub compaction_short: u64,
    /// kswapd wake-ups on node 0 (`mm_vmscan_kswapd_wake`), each setting reclaim-active on
    /// the zones until the pass ends (the next wake, or the nap before a sleep).
    pub kswapd_wakes: u64,
    /// Runs of the per-CPU vmstat workers' `decay_pcp_high` ([`super::vmstat`]), their
    /// drained pages, the worker runs the trace showed (a kworker's depth-2 drains), those
    /// whose CPU's worker the simulation had run in that second already, and whether the
    /// timers' phase came from such a run (else it was assumed: the first event's time).
    pub decay_runs: u64,
    /// Pages the vmstat workers' decay drained.
    pub decay_drained_pages: u64,
    /// Worker runs the trace showed.
    pub decay_marks: u64,
    /// Of those, runs the simulation had done already.
    pub decay_marks_early: u64,
    /// The workers' phase came from the trace.
    pub decay_phase_from_trace: bool,
    /// The workers' and shepherd's runs the trace showed (`workqueue_execute_start`), each
    /// the run ([`super::vmstat::Vmstat::set_traced`]), and those of a worker the model had
    /// stopped.
    pub decay_traced: super::vmstat::TracedRuns,
    /// With `--no-traced-workers`, the trace's `vmstat_update` runs against the model's
    /// ([`super::vmstat::RunCheck`]; zero where the trace shows none).
    pub decay_check: super::vmstat::RunCheck,
    /// `MAX_PAGE_ORDER` blocks brought online as the trace touched them ([`Online::Touched`](super::Online::Touched)).
    pub onlined_blocks: u64,
}

/// One sample of the fragmentation indices.
#[derive(Clone, Debug, Serialize)]
pub struct FragSample {
    /// Trace events replayed so far.
    pub event: u64,
    /// The trace's timestamp then (seconds), if it has them.
    pub t_s: Option<f64>,
    /// Unusable free space index (thousandths) for each of [`FRAG_ORDERS`](super::FRAG_ORDERS).
    pub unusable: [u32; 3],
    /// Fragmentation index (thousandths) for order 9.
    pub fragmentation_9: i32,
}
