//! `--whole-file` from 6.7 on: each CPU's `high` at the file's start. The kernel tunes `high`
//! per CPU (`nr_pcp_alloc` raises it on each refill, `decay_pcp_high` takes an eighth off it
//! each second, `nr_pcp_high` lowers it under pressure), so the `high` zoneinfo prints at its
//! read, a minute or more into the file, is not the one at the file's start: at the start
//! `high` lies anywhere from `high_min` to `high_max`, and the walk's bounds start there
//! ([`Walk::open_start_high`]).
//!
//! Up to the CPU's first refill (which raises it) or drain, and before zoneinfo's read (from
//! which on the walk's bound is the printed `high` again), `high` stays where it started, or
//! falls by a worker's decay that drained nothing; so the trace bounds it:
//! - each free that drains nothing left the count below it (`free_frozen_page_commit`:
//!   `if (pcp->count < high) return`): `high > c0 + delta`;
//! - the CPU's first worker run that drains (`vmstat_update` -> `refresh_cpu_vm_stats` ->
//!   `decay_pcp_high`) sets `high = max3(count - (batch << CONFIG_PCP_BATCH_SCALE_MAX),
//!   high - (high >> 3), high_min)` and drains the count down to it: where the count it
//!   leaves is above `high_min` and the first term, `high - (high >> 3)` was that count,
//!   which names `high` before the run to one or two values; where it is `high_min`, `high`
//!   was at most the largest value an eighth less of which is `high_min`.
//!
//! 7.2-4g p_thp, Normal CPU 0: zoneinfo printed `high` 1283 (`high_min`) at 278.700 s; the
//! count at the file's start (195.284 s) rolls back to 2033. Set up at 1283, the replay's
//! first free drained 63 pages where the kernel drained none, four times, and its drains
//! before the window were 820 pages short of the kernel's. The kernel's worker on CPU 0
//! drained 170 pages at 195.817868, leaving 1862: `high` was 2127 or 2128 before it.

use super::high::High;
use super::Walk;

/// What the walk saw of one CPU's `high` at the start, up to its first refill or drain.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct StartHigh {
    /// The CPU refilled, or drained other than by its worker's first run, or that run ended:
    /// nothing more is noted.
    closed: bool,
    /// The largest `delta` a free that drained nothing left.
    top: Option<i64>,
    /// The worker's first run: `delta` before it, and the pages it drained so far.
    decay: Option<(i64, i64)>,
    /// The CPU's last event was a drain of that run.
    in_decay: bool,
    /// zoneinfo's `high`, at its read, held in `high_min..=high_max`.
    printed: i64,
}

impl StartHigh {
    /// A free left `delta` and drained nothing.
    pub(super) fn no_drain(&mut self, delta: i64) {
        if !self.closed {
            self.top = Some(self.top.map_or(delta, |t| t.max(delta)));
        }
    }

    /// Any event on the CPU but a drain of its worker's first run.
    pub(super) fn other(&mut self) {
        if self.in_decay {
            self.in_decay = false;
            self.closed = true;
        }
    }

    /// A refill, or a drain that is not the worker's first run.
    pub(super) fn close(&mut self) {
        self.in_decay = false;
        self.closed = true;
    }

    /// A drained block of `pages` of the CPU's worker (on a zone of its own node, whose
    /// pagesets' expiry never drains them), `delta` before it.
    pub(super) fn worker_drain(&mut self, delta: i64, pages: i64) {
        if self.closed {
            return;
        }
        match &mut self.decay {
            Some((_, drained)) if self.in_decay => *drained += pages,
            Some(_) => self.close(),
            None => {
                self.decay = Some((delta, pages));
                self.in_decay = true;
            }
        }
    }

    /// `high` at the start for a count `c0` there, within `h`'s `high_min..=high_max`;
    /// zoneinfo's where the trace does not say more.
    pub(super) fn infer(&self, c0: i64, h: &High, scale_max: u8) -> i64 {
        let (lo, max) = (h.lo, h.max.max(h.lo));
        let printed = self.printed;
        let least = self.top.map_or(lo, |t| c0 + t + 1);
        let high = match self.decay {
            Some((before, drained)) => {
                let count = c0 + before;
                let left = count - drained;
                if left > lo && left > count - (h.batch << scale_max) {
                    // high - (high >> 3) == left: the least such high at or above `least`.
                    let first = (0..=8)
                        .map(|k| left + left / 7 - 2 + k)
                        .find(|&x| less(x) == left);
                    match first {
                        Some(x) if less(x + 1) == left && x < least => x + 1,
                        Some(x) => x,
                        None => printed.max(least),
                    }
                } else {
                    // Down to high_min: high - (high >> 3) <= high_min.
                    let most = (0..=8)
                        .map(|k| lo + lo / 7 + 2 - k)
                        .find(|&x| less(x) <= lo)
                        .unwrap_or(lo);
                    printed.max(least).min(most)
                }
            }
            None => printed.max(least),
        };
        high.clamp(lo, max)
    }
}

/// `decay_pcp_high`'s `high - (high >> 3)`.
fn less(high: i64) -> i64 {
    high - (high >> 3)
}

impl Walk {
    /// The walk starts at the file's start, not at zoneinfo's read: from 6.7 on, each CPU's
    /// `high` there is anywhere from `high_min` to `high_max` (this module's docs).
    pub(super) fn open_start_high(&mut self) {
        if self.fixed_high {
            return;
        }
        self.start_high = true;
        for c in self.per.iter_mut().flatten() {
            c.start_high.printed = c.high.hi;
            c.high.hi = c.high.max.max(c.high.lo);
        }
    }

    /// zoneinfo's read: `high` is the one it printed (the walk's bound goes on from there),
    /// and what comes after tells nothing more of the start's.
    pub(super) fn close_start_high(&mut self) {
        if !self.start_high {
            return;
        }
        for c in self.per.iter_mut().flatten() {
            c.high.hi = c.start_high.printed;
            c.start_high.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn high(lo: i64, max: i64) -> High {
        High {
            lo,
            hi: lo,
            max,
            grow: 63 << 5,
            batch: 63,
        }
    }

    fn printed(printed: i64) -> StartHigh {
        StartHigh {
            printed,
            ..StartHigh::default()
        }
    }

    #[test]
    fn a_decay_that_leaves_more_than_high_min_names_high_before_it() {
        // 7.2-4g p_thp, Normal CPU 0: 2032 pages, 170 drained, 1862 left.
        let mut s = printed(1283);
        s.no_drain(1);
        s.worker_drain(-1, 1);
        s.worker_drain(-2, 169);
        s.other();
        let h = s.infer(2033, &high(1283, 7615), 5);
        assert!(h == 2127 || h == 2128, "{h}");
        assert_eq!(less(h), 1862);
    }

    #[test]
    fn frees_that_drain_nothing_hold_high_above_the_count() {
        let mut s = printed(1283);
        s.no_drain(4);
        s.no_drain(9);
        assert_eq!(s.infer(1846, &high(1283, 7615), 5), 1856);
        // Down to high_min at the first run: at most the largest high an eighth less of
        // which is high_min, whatever the frees said.
        s.worker_drain(0, 563);
        assert_eq!(s.infer(1846, &high(1283, 7615), 5), 1466);
        assert_eq!(less(1466), 1283);
        assert!(less(1467) > 1283);
    }

    #[test]
    fn a_refill_closes_what_the_start_shows() {
        let mut s = printed(1300);
        s.close();
        s.no_drain(400);
        s.worker_drain(0, 100);
        assert_eq!(s.infer(1000, &high(1283, 7615), 5), 1300);
    }
}
