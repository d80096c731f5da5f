//! The values a tuned `high` (6.7 on) can have at each point of the walk, where the trace
//! bounds them: a pin then names only the start counts that a reachable `high` gives.
//!
//! The kernel moves `high` in steps: `nr_pcp_alloc` raises it once per refill run (6.12 and
//! 7.2: `min(high + batch, high_max)`, `batch << alloc_factor` for order 0, which the run's
//! size shows, the base `batch` above it), `decay_pcp_high` (the vmstat worker's) takes an
//! eighth off it, not below `high_min`, and `nr_pcp_high` lowers it by `batch <<
//! CONFIG_PCP_BATCH_SCALE_MAX` on a `free_high` drain (an order-1..=3 free's) and raises it to
//! `free_count + batch` at a drain where it is below that. `free_unref_page_commit` (7.2
//! `free_frozen_page_commit`) drains when the count reaches the `high` `nr_pcp_high`
//! returns, so a free-triggered drain puts the count at one of those values, not anywhere
//! in `high_min..=high_max`.
//!
//! 6.12-4g-loads p_fork, Normal CPU 3 (zoneinfo `high` 1281 = `high_min`, batch 63): three
//! refill runs (47.210993 order 1, 47.222892, 47.719750) raised `high` by 63 each to 1470,
//! one worker run took it to 1287, and the drain at 48.058504 came at 1287. Known as the
//! range 1281..=1470, that drain left starts 1164..=1240; the values the kernel can reach
//! (1281, 1287, 1344, 1407, 1470) leave 1164 or 1221. zoneinfo's 1127, carried to the
//! marker (1168), is neither: the replay drained 63 Movable pages four commits before the
//! kernel drained 63 Unmovable (48.058527). 1164 is the kernel's count (4 pages, likely a
//! kernel stack `alloc_pages_bulk` took, untraced).
//!
//! A later pin, while the first leaves a range, narrows the starts it allows; none left
//! means the trace's pages disagree by a page the walk did not see, and nothing is moved
//! ([`intersect`]). 7.2-2g p2_procs_pipe, DMA32 CPU 2 (zoneinfo `high` 11632): the order-0
//! softirq free's drain at 22.156429 allows 2405, 2413, 2912, ... (the decay chain from
//! 11632), the drain at 23.188 after it 2414 but not 2413: moved to 2912 by the first pin
//! alone, the window's refills went 0.86% -> 8.18% (carried 2443 stays).
//!
//! The worker's runs are not all traced: the set is closed under any number of decay steps.
//! Where the trace cannot bound the steps (kswapd's pass or `ZONE_BELOW_HIGH` lowering
//! `high` at each free, a refill run whose raise its size does not show, `free_count` high
//! enough for `nr_pcp_high`'s raise, a set grown past [`MOST`] values), the set is dropped
//! and the walk keeps the range alone.

use super::high::High;
use super::start_high::{less, raise};

/// The most values a set holds: past them it is dropped.
const MOST: usize = 256;

/// The values `high` can have, where known.
#[derive(Clone, Debug, Default)]
pub(super) struct Reach {
    /// Sorted, no duplicates; `None`: not bounded past the range.
    vals: Option<Vec<i64>>,
    /// The refill run on the CPU, its order and pages, whose raise is not applied yet.
    run: Option<(u8, i64)>,
    /// At least the CPU's `free_count` (`nr_pcp_high`'s raise reads it).
    free_hi: i64,
    /// The refill runs and `free_high` drains that may have moved `high` so far, and their
    /// number at zoneinfo's print ([`Reach::moved_since_print`]).
    moves: u32,
    at_print: Option<u32>,
}

impl Reach {
    /// The set from `high` at the start (zoneinfo's), where it is tuned (`grow > 0`).
    pub(super) fn new(start: i64, h: &High, scale_max: u8) -> Reach {
        let mut r = Reach {
            vals: (h.grow > 0).then(|| vec![start]),
            run: None,
            free_hi: h.batch << scale_max,
            moves: 0,
            at_print: None,
        };
        r.decay_closure(h);
        r
    }

    /// The set is not bounded from here on.
    pub(super) fn drop_set(&mut self) {
        self.vals = None;
    }

    /// A page of a refill run of `order` (`new_run`: its first): the run's raise is applied
    /// at its end, sized by its pages.
    pub(super) fn refill(&mut self, order: u8, new_run: bool, h: &High, scale_max: u8) {
        match &mut self.run {
            Some((_, pages)) if !new_run => *pages += 1i64 << order,
            _ => {
                self.settle(h, scale_max);
                self.run = Some((order, 1i64 << order));
            }
        }
    }

    /// The last refill run's raise (`nr_pcp_alloc`), if one is pending.
    pub(super) fn settle(&mut self, h: &High, scale_max: u8) {
        let Some((order, pages)) = self.run.take() else {
            return;
        };
        self.moves += 1;
        let Some(r) = raise(order, pages, h.batch, scale_max) else {
            return self.drop_set();
        };
        if let Some(v) = &mut self.vals {
            for x in v.iter_mut() {
                *x = (*x + r).min(h.max);
            }
        }
        self.decay_closure(h);
    }

    /// A free of `order` went on the lists (`free_count` grows, up to `batch <<
    /// CONFIG_PCP_BATCH_SCALE_MAX`).
    pub(super) fn freed(&mut self, order: u8, h: &High, scale_max: u8) {
        self.free_hi = (self.free_hi + (1i64 << order)).min(h.batch << scale_max);
    }

    /// An allocation off the lists (`rmqueue_pcplist`: `free_count >>= 1`).
    pub(super) fn allocated(&mut self) {
        self.free_hi >>= 1;
    }

    /// A free of `order`'s drain run ended (`nr_pcp_high`): a `free_high` drain (orders
    /// 1..=3) may have lowered `high` by `batch << CONFIG_PCP_BATCH_SCALE_MAX`, and `high`
    /// below `free_count + batch` was raised to it.
    pub(super) fn drained(&mut self, order: u8, h: &High, scale_max: u8) {
        let Some(v) = &mut self.vals else {
            return;
        };
        if v.first().is_some_and(|&m| m < self.free_hi + h.batch) {
            return self.drop_set();
        }
        if (1..=3).contains(&order) {
            self.moves += 1;
            let low: Vec<i64> = v
                .iter()
                .map(|&x| (x - (h.batch << scale_max)).max(h.lo))
                .collect();
            v.extend(low);
        }
        self.decay_closure(h);
    }

    /// The start counts a pin (`high <= c0 + delta <= high + span` just after the free,
    /// `high` in `lo..=hi`) allows with a reachable `high`, as ranges; `None` where the set
    /// is not known.
    pub(super) fn allowed(
        &self,
        (lo, hi): (i64, i64),
        delta: i64,
        span: i64,
    ) -> Option<Vec<(i64, i64)>> {
        let v = self.vals.as_ref()?;
        let out: Vec<(i64, i64)> = v
            .iter()
            .filter(|&&x| (lo..=hi).contains(&x))
            .map(|&x| (x - delta, x + span - delta))
            .collect();
        (!out.is_empty()).then(|| merge(out))
    }

    /// zoneinfo printed the CPU's `high` now (`roll.rs`).
    pub(super) fn printed(&mut self) {
        self.at_print = Some(self.moves + u32::from(self.run.is_some()));
    }

    /// Whether a refill run or a `free_high` drain since zoneinfo's print may have moved
    /// `high` from the value printed (`None`: no print seen).
    pub(super) fn moved_since_print(&self) -> Option<bool> {
        Some(self.moves + u32::from(self.run.is_some()) > self.at_print?)
    }

    /// Adds every value `decay_pcp_high` steps reach from the set's (`high - (high >> 3)`,
    /// not below `high_min`), sorted.
    fn decay_closure(&mut self, h: &High) {
        let Some(v) = &mut self.vals else {
            return;
        };
        let mut i = 0;
        while i < v.len() {
            let (x, y) = (v[i], less(v[i]).max(h.lo));
            if x > h.lo && y < x {
                v.push(y);
            }
            i += 1;
            if v.len() > MOST * 8 {
                break;
            }
        }
        v.sort_unstable();
        v.dedup();
        if v.len() > MOST {
            self.vals = None;
        }
    }
}

/// `c` moved to the nearest count in `allowed` within `lo..=hi` (the nearer one below on a
/// tie), where one is; `c` where none is or `c` is in one.
pub fn nearest(c: i64, allowed: &[(i64, i64)], (lo, hi): (i64, i64)) -> i64 {
    allowed
        .iter()
        .filter_map(|&(a, b)| {
            let (a, b) = (a.max(lo), b.min(hi));
            (a <= b).then(|| c.clamp(a, b))
        })
        .min_by_key(|&x| ((x - c).abs(), x))
        .unwrap_or(c)
}

/// The starts both `a` and `b` allow (each sorted, disjoint: [`merge`]).
pub(super) fn intersect(a: &[(i64, i64)], b: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while let (Some(&(a0, a1)), Some(&(b0, b1))) = (a.get(i), b.get(j)) {
        let (l, h) = (a0.max(b0), a1.min(b1));
        if l <= h {
            out.push((l, h));
        }
        if a1 < b1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// `v` sorted, overlapping or adjacent ranges joined.
fn merge(mut v: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    v.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(v.len());
    for (l, h) in v {
        match out.last_mut() {
            Some(last) if l <= last.1 + 1 => last.1 = last.1.max(h),
            _ => out.push((l, h)),
        }
    }
    out
}

#[cfg(test)]
mod tests;
