//! The start-count walk's pins: what a free-triggered drain run, and the allocation after an
//! order-1..=3 free's, say of the count at the start, and the bounds every later event adds.
//!
//! A pin that leaves a range (a THP free crosses `high` by up to 511 pages) is narrowed by
//! the bounds after it: each later free that drains nothing (`count < high`), each later
//! free-triggered drain (`high <= count` after the free), and the count never going
//! negative hold of the count at the start as well, the delta since the start being known.
//! The walk waits for such a CPU until its range is one count. 6.1-4g p_pressure's Normal
//! CPU 3 was left at 66..=524 by a THP free's drain (852.903331); its next runs put the
//! count at the marker where zoneinfo's 202 was not: the replay drained 2 THPs and 197
//! order-0 pages where the kernel drained 3 THPs (line 71873).

use super::{Cpu, Free, Run, Walk};

/// The most frees [`Cpu::since_candidate`] holds: past them the candidate is dropped.
pub(super) const SINCE_CANDIDATE: usize = 4096;

impl Cpu {
    /// A page of head `pfn` went on the lists: while a candidate pin waits, remembered.
    pub(super) fn freed_since_candidate(&mut self, pfn: u64) {
        if self.candidate.is_none() {
            return;
        }
        if self.since_candidate.len() == SINCE_CANDIDATE {
            self.drop_candidate();
        } else {
            self.since_candidate.push(pfn);
        }
    }

    /// No candidate pin: it held, or nothing more can be read of it.
    pub(super) fn drop_candidate(&mut self) {
        self.candidate = None;
        self.since_candidate.clear();
    }

    /// [`Walk::bound`] on this CPU: whether it closed an open pin the walk waited for.
    pub(super) fn bound(&mut self, lo: i64, hi: i64) -> bool {
        let Some((alo, ahi)) = self.after else {
            if self.pin.is_none() {
                self.lo = self.lo.max(lo);
                self.hi = self.hi.min(hi);
            }
            return false;
        };
        let (l, h) = (alo.max(lo), ahi.min(hi));
        if l > h || (l, h) == (alo, ahi) {
            return false;
        }
        self.after = Some((l, h));
        l == h && self.wanted
    }
}

impl Walk {
    /// `lo <= c0 <= hi` for the count `c0` at the start of `zone`'s CPU `cpu`: before the
    /// pin, it narrows the walk's bounds; after an open pin, the pin's range where they agree.
    pub(super) fn bound(&mut self, zone: usize, cpu: u32, lo: i64, hi: i64) {
        if let Some(c) = self.at(zone, cpu) {
            if c.bound(lo, hi) {
                self.waiting -= 1;
            }
        }
    }

    /// A pin: `lo <= c0 <= hi` from a drain run (`ts`: when it began). The first one is the
    /// pin; a later one narrows an open pin.
    fn pin(&mut self, zone: usize, cpu: u32, lo: i64, hi: i64, ts: Option<u64>) {
        let Some(c) = self.at(zone, cpu) else {
            return;
        };
        if c.pin.is_some() {
            self.bound(zone, cpu, lo, hi);
            return;
        }
        c.pin = Some((lo, hi, ts));
        if lo < hi {
            c.after = Some((lo, hi));
        } else if c.wanted {
            self.waiting -= 1;
        }
    }

    /// The drain run the last free on `cpu` triggered has ended: pin.
    pub(super) fn end_run(&mut self, zone_hint: usize, cpu: u32) {
        let (fixed, scale_max) = (self.fixed_high, self.scale_max);
        let start_high = self.start_high;
        let Some(c) = self.at(zone_hint, cpu) else {
            return;
        };
        let Some(Run {
            free:
                Free {
                    order,
                    delta,
                    high_lo: hlo,
                    high_hi: hhi,
                    high_fell,
                    free_high: sure,
                    open_hi,
                    ..
                },
            drained,
            block,
            ts,
        }) = c.run.take()
        else {
            return;
        };
        // `--whole-file`: the drain may name `free_count` at the start (`start_free.rs`),
        // where nothing but `nr_pcp_free`'s clamp sized it.
        if !high_fell && open_hi.is_none() {
            let z = (c.high.lo, c.high.batch, c.high.batch << scale_max);
            c.start_free.drained(order, (drained, block), z);
        }
        let free_high_order = (1..=3).contains(&order);
        // The starts a reachable `high` gives (`reach.rs`), for an order-0 or THP free's
        // drain at `high`; then nr_pcp_high's own changes of `high` at this drain.
        let open = c.pin.is_none() || c.after.is_some();
        let allowed = (!high_fell && !free_high_order && !start_high && open)
            .then(|| c.reach.allowed((hlo, hhi), delta, (1 << order) - 1))
            .flatten();
        c.reach.drained(order, &c.high, scale_max);
        if c.pin.is_some() && c.after.is_none() {
            return;
        }
        // count was below high before the free, at or above it after (not free_high).
        let normal = (hlo - delta, hhi + (1 << order) - 1 - delta);
        // 6.1: more than nr_pcp_free's most (high - batch, and free_pcppages_bulk's last
        // block past it): free_high drained the whole count.
        let emptied = (fixed && drained > hlo - c.high.batch + block - 1)
            || c.free_high_emptied(sure, drained, scale_max);
        let pin = if high_fell && !emptied {
            // The count may have been at or above the fallen `high` before the free: it was
            // at least `high` after it (free_high aside), no more is known.
            (!free_high_order).then_some((normal.0, i64::MAX))
        } else if !free_high_order {
            Some(normal)
        } else if emptied {
            Some((drained - delta, drained - delta))
        } else {
            // free_high empties the lists (6.1: the whole count; 7.2: up to
            // batch << CONFIG_PCP_BATCH_SCALE_MAX, less than that only when it is all): if
            // the next allocation finds a page on a list, the drain was nr_pcp_free's.
            if fixed || drained < c.high.batch << scale_max {
                c.drop_candidate();
                c.candidate = Some((normal.0, normal.1, ts));
            }
            None
        };
        match pin {
            // A lower bound alone is no pin.
            Some((lo, i64::MAX)) => self.bound(zone_hint, cpu, lo, i64::MAX),
            Some((lo, hi)) => {
                if let Some(c) = self.at(zone_hint, cpu) {
                    c.allowed = match (c.pin.is_some(), c.allowed.take(), allowed) {
                        (false, _, a) => a,
                        // A later pin narrows the starts the first allows: none left, and
                        // the trace's own pages disagree (an untraced page): no move.
                        (true, Some(p), Some(a)) => Some(super::reach::intersect(&p, &a)),
                        (true, p, _) => p,
                    };
                }
                self.pin(zone_hint, cpu, lo, hi, ts)
            }
            None => {}
        }
    }

    /// An allocation of `pfn` off `cpu`'s lists of `zone`: a candidate pin holds when the
    /// list had a page the drain left (no refill just before), and is dropped otherwise. A
    /// page freed after the drain may be all the lists held (6.12-4g-more p_sock: the
    /// allocation after the order-3 drain at 66.763289 takes a block freed at 66.763310),
    /// so its allocation leaves the candidate waiting for the next one.
    pub(super) fn confirm(&mut self, zone: usize, cpu: u32, had_page: bool, pfn: Option<u64>) {
        let Some(c) = self.at(zone, cpu) else {
            return;
        };
        let Some((lo, hi, ts)) = c.candidate else {
            return;
        };
        if had_page && pfn.is_some_and(|p| c.since_candidate.contains(&p)) {
            return;
        }
        c.drop_candidate();
        if had_page {
            self.pin(zone, cpu, lo, hi, ts);
        }
    }
}

#[cfg(test)]
mod tests;
