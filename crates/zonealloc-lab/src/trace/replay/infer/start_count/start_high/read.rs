//! zoneinfo's read with the walk still open: the `high` it printed is the start's taken
//! through the steps before it ([`StartHigh::read`]).

use super::super::high::High;
use super::{first_above, Clock, Runs, StartHigh};

impl StartHigh {
    /// zoneinfo's read, `since_start` ns into the walk. Where nothing but the worker's
    /// runs and refills moved `high` since the start (no drain: the walk is open), the
    /// `high` it printed is the start's taken through them ([`StartHigh::through_read`]).
    pub(super) fn read(&mut self, since_start: u64) {
        if !self.closed && self.decay.is_none() {
            self.read = Some(match self.at() {
                0 => Runs::Through(since_start),
                n => Runs::Lines(n),
            });
        }
        self.close();
    }

    /// The starts whose `high` the steps before zoneinfo's read take to the one it printed
    /// (`decay_pcp_high` an eighth off at each run, `nr_pcp_alloc` a raise at each refill:
    /// while no free drains, nothing else moves it), from `least` up: `None` where the walk
    /// closed before the read, or where no start gives it that the bounds allow (something
    /// the trace does not show moved `high`). 7.2-6g-12cpu-wq p_fork, Normal CPU 8: five
    /// quiet runs from 9.496762 to 25.496788 and `mkdir-396`'s refill of 63 at 25.690132,
    /// then zoneinfo printed 3363 at 25.778; its worker's runs at 26.732893, 27.724764 and
    /// 28.712895 take that to the 2254 the after-snapshot printed. Started at 3363, the
    /// replay's five runs took it to 1790 by the read, and it drained 430 pages in 349
    /// events from 28.533227 where the kernel drained none.
    pub(super) fn through_read(
        &self,
        least: i64,
        h: &High,
        scale_max: u8,
        clock: Clock<'_>,
    ) -> Option<i64> {
        let runs = clock.count(self.read?);
        if runs > self.exact_steps(h.batch, scale_max) {
            return None;
        }
        let (lo, max, printed) = (h.lo, h.max.max(h.lo), self.printed);
        let at = |x: i64| self.evolve(x, runs, h, scale_max);
        let a = first_above(lo, max, |x| at(x) >= printed);
        if a > max {
            // None up to high_max: the worker ran less often than the runs counted, and
            // high_max comes nearest.
            return Some(max);
        }
        let b = first_above(lo, max, |x| at(x) > printed) - 1;
        (a <= b && least <= b).then(|| least.max(a))
    }
}
