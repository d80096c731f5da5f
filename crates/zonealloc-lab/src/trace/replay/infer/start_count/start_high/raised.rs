//! A file that traces no worker runs: the walk closes at a CPU's first refill
//! ([`StartHigh::no_lines`]), since the runs before it are not counted by lines. Where a
//! free drained after refills, with no run of the worker's schedule before it, the raises
//! alone moved `high` from the start to that free: `high` at the start, raised by them, was
//! at most the count there ([`StartHigh::raised_bound`]).

use super::super::high::High;
use super::{first_above, raise, Clock, Runs, StartHigh, Step};

/// What the walk, read on past the first refill, saw of a free that drained.
#[derive(Clone, Debug)]
pub(super) struct Raised {
    /// The count's `delta` after that free.
    delta: i64,
    /// When it came, ns after the walk's first event.
    since_start: u64,
    /// The refill runs before it, in order: each run's order and pages.
    raises: Vec<(u8, i64)>,
}

impl StartHigh {
    /// The walk as read on past the first refill: its first drain a free's, with only
    /// refills (no traced run) before it.
    pub(super) fn raised_drain(&self) -> Option<Raised> {
        let (delta, Runs::Lines(n)) = self.free_drain? else {
            return None;
        };
        let raises = (self.steps.get(..n as usize)?.iter())
            .map(|s| match *s {
                Step::Raise { order, pages } => Some((order, pages)),
                Step::Decay => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Raised {
            delta,
            since_start: self.free_drain_ns,
            raises,
        })
    }

    /// `high` at the start, `high`, bounded by the free that drained after refills
    /// ([`Raised`]) where the workers' schedule (`clock`) places no run at or before it:
    /// `nr_pcp_alloc` (7.2's as 6.12's) raised `high` by each refill's `batch <<
    /// alloc_factor`, up to `high_max`, and `free_frozen_page_commit` drains only when
    /// `count >= high`. 7.2-3g-16cpu p_prodcons, DMA32 CPU 6: `awk-407` refilled 63 pages
    /// at 17.012185, and its batched frees drained 63 at 17.017450 with 938 pages on the
    /// lists; zoneinfo printed `high` 938 at 31.687. Started at 938 (1001 after the raise),
    /// the replay drained first at 17.548169: `high` was `high_min`, 875.
    pub(super) fn raised_bound(
        &self,
        high: i64,
        c0: i64,
        h: &High,
        scale_max: u8,
        clock: Clock<'_>,
    ) -> i64 {
        let Some(r) = &self.raised else {
            return high;
        };
        if clock.count(Runs::Through(r.since_start)) > 0 {
            return high;
        }
        let (lo, max) = (h.lo, h.max.max(h.lo));
        let ups = r
            .raises
            .iter()
            .map(|&(o, p)| raise(o, p, h.batch, scale_max));
        let Some(total) = ups.sum::<Option<i64>>() else {
            return high;
        };
        let most = first_above(lo, max, |x| (x + total).min(max) > c0 + r.delta);
        high.min((most - 1).max(lo))
    }
}
