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
//!   `if (pcp->count < high) return`): `high > c0 + delta`, `high` decayed by the runs
//!   before that free;
//! - the CPU's first worker run that drains (`vmstat_update` -> `refresh_cpu_vm_stats` ->
//!   `decay_pcp_high`) sets `high = max3(count - (batch << CONFIG_PCP_BATCH_SCALE_MAX),
//!   high - (high >> 3), high_min)` and drains the count down to it: where the count it
//!   leaves is above `high_min` and the first term, `high - (high >> 3)` was that count,
//!   which names `high` before the run to one or two values; where it is `high_min`, `high`
//!   was at most the largest value an eighth less of which is `high_min`;
//! - the worker ran each second before that run too (`vmstat_update` re-queues itself with
//!   `round_jiffies_relative(sysctl_stat_interval)` while `decay_pcp_high` reports work, which
//!   it does while `high > high_min`), taking an eighth off `high` each time and draining
//!   nothing: `high` at the start is the one those runs, and then the draining one, bring to
//!   what the draining run left;
//! - where nothing drained before zoneinfo's read, the `high` it printed is the start's taken
//!   through the runs and refills before the read (`read.rs`).
//!
//! 7.2-4g p_thp, Normal CPU 0: zoneinfo printed `high` 1283 (`high_min`) at 278.700 s; the
//! count at the file's start (195.284 s) rolls back to 2033. Set up at 1283, the replay's
//! first free drained 63 pages where the kernel drained none, four times, and its drains
//! before the window were 820 pages short of the kernel's. The kernel's worker on CPU 0
//! drained 170 pages at 195.817868, leaving 1862: `high` was 2127 or 2128 before it.
//!
//! 7.2-4g p_idle, Normal CPU 2 (no refill in the file): its worker's first drain is 46 pages
//! at 373.805217, 8.9 s after the file's start (364.950), so 8 runs before it drained
//! nothing. Taken as `high` at the start, the `high` before that run (1756) fell by the
//! replay's own 8 runs to 658 below the count, and the replay drained at 366.747772, seven
//! seconds before the kernel's first drain.

use super::high::High;
use super::Walk;
use crate::trace::parse::{Event, EventKind};
use crate::trace::replay::infer::worker_runs::{Pauses, Step as PauseStep};

/// Lines of a CPU's worker further apart than this (HZ/4, whatever HZ) are two runs.
const RUN_GAP_NS: u64 = 250_000_000;

/// What the walk saw of one CPU's `high` at the start, up to its first refill or drain.
#[derive(Clone, Debug, Default)]
pub(super) struct StartHigh {
    /// The CPU refilled, or drained other than by its worker's first run, or that run ended:
    /// nothing more is noted.
    closed: bool,
    /// The largest `delta` a free that drained nothing left.
    top: Option<i64>,
    /// The same after the worker's runs: (runs before, largest `delta`), the runs counted by
    /// the trace's lines or timed on the workers' schedule ([`Runs`]; each took an eighth off
    /// `high` before those frees). Timed ones, in time order, each with a larger `delta`
    /// than every later one (a later free of as large a `delta` bounds `high` at least as
    /// far: it came after as many runs).
    tops: Vec<(Runs, i64)>,
    /// The worker's first run that drains: `delta` before it, and the pages it drained so far.
    decay: Option<(i64, i64)>,
    /// The worker's runs between the walk's start and that one, which drained nothing.
    runs_before: Runs,
    /// The CPU's last event was a drain of that run.
    in_decay: bool,
    /// `vmstat_update` lines the trace showed on the CPU up to that run's
    /// (`capture-kmem --workqueue`; 0 without them): the runs themselves, counted.
    work_lines: u32,
    /// When the run's last drained line came, ns after the walk's first event.
    last_ns: u64,
    /// The run the last `vmstat_update` line began, before the first that drains: its
    /// number and the count's `delta` then, until a drain shows it was no quiet one.
    pending: Option<(u32, i64)>,
    /// The traced runs that drained nothing: each left the count at or below its `high`.
    quiet: Vec<(u32, i64)>,
    /// The first drain was a free's, not the worker's: `delta` after that free, and the
    /// worker's runs before it.
    free_drain: Option<(i64, Runs)>,
    /// When that free came, ns after the walk's first event.
    free_drain_ns: u64,
    /// A file that traces no runs: the walk read on past its first refill to a free that
    /// drained with nothing but refills before it ([`raised::Raised`]).
    raised: Option<raised::Raised>,
    /// zoneinfo's `high`, at its read, held in `high_min..=high_max`.
    printed: i64,
    /// What moved `high` since the walk's start, where the trace's lines count the runs:
    /// each traced run's decay and each refill run's raise ([`Step`]). The runs and bounds
    /// above count their place in it (without the lines: the runs alone, one a second).
    steps: Vec<Step>,
    /// The CPU showed a `vmstat_update` line, whether or not the walk was still reading.
    line_seen: bool,
    /// The walk as it stood at the CPU's first refill with no `vmstat_update` line before
    /// it, closed there: what it read if the file traces no runs ([`StartHigh::no_lines`]).
    unlined: Option<Box<StartHigh>>,
    /// zoneinfo's read came with the walk still open (no drain before it): the steps, or
    /// without lines the runs, that took the start's `high` to the printed one
    /// ([`StartHigh::read`]).
    read: Option<Runs>,
}

/// One move of `high` between the walk's start and a bound.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// A traced run of the worker: `decay_pcp_high` takes an eighth off.
    Decay,
    /// A refill run (`nr_pcp_alloc`) of `pages` pages of `order`.
    Raise { order: u8, pages: i64 },
}

/// The worker's runs before a bound: counted by the trace's lines (`vmstat_update`, each a
/// step), or, without lines, timed: the runs the replay's workers do before trace time
/// `since_start` ns into the walk, as their schedule places them
/// ([`crate::trace::replay::vmstat::Schedule`]), read when the walk is done and the
/// workers' phases are known ([`Clock`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Runs {
    /// The first `n` steps.
    Lines(u32),
    /// The runs at or before a free `since_start` ns in.
    Through(u64),
    /// The runs before the worker's own run at `since_start` ns in (that one not counted).
    Before(u64),
}

impl Default for Runs {
    fn default() -> Runs {
        Runs::Lines(0)
    }
}

/// What times the runs without lines ([`Runs`]).
#[derive(Clone, Copy)]
pub(super) enum Clock<'a> {
    /// One a second from the walk's first event (no schedule known: [`runs_before`]).
    OneASecond,
    /// The workers' schedule for this CPU: its runs done before an event `since_start` ns
    /// into the walk (a run the trace shows at that event comes after it: its drain is the
    /// event), and those at or before it.
    Schedule(&'a dyn Fn(u64) -> (u32, u32)),
}

impl Clock<'_> {
    /// The runs `r` names.
    fn count(&self, r: Runs) -> u32 {
        match (r, self) {
            (Runs::Lines(n), _) => n,
            (Runs::Through(t) | Runs::Before(t), Clock::OneASecond) => runs_before(t),
            (Runs::Through(t), Clock::Schedule(f)) => f(t).0,
            // The worker's own run is one of those the schedule places at or before it.
            (Runs::Before(t), Clock::Schedule(f)) => f(t).1.saturating_sub(1),
        }
    }
}

impl StartHigh {
    /// A free `since_start` ns into the walk left `delta` and drained nothing: `high`, after
    /// the worker's runs before it, was above the count then. The runs are those the trace's
    /// lines count, or without lines the clock's, one a second ([`runs_before`]), as for the
    /// free that drains ([`StartHigh::free_drain`]): read as the start's own, the bound
    /// named a `high` those runs then take below the count. 7.2-4g-6cpu p_thp, Normal CPU 1:
    /// `awk-619`'s single frees from 127.708 drained nothing up to 1441 pages and the one
    /// at 131.043609 drained 682 at 1442; started at 1442, the replay's runs took it to 855
    /// and it drained 95, 190 and 380 pages from 128.419 where the kernel drained nothing.
    pub(super) fn no_drain(&mut self, delta: i64, since_start: u64) {
        if !self.closed {
            // After a raise `high` may be above the start's: only through the steps.
            if !self.steps.iter().any(|s| matches!(s, Step::Raise { .. })) {
                self.top = Some(self.top.map_or(delta, |t| t.max(delta)));
            }
            match self.at() {
                0 => {
                    // A timed bound dominates the earlier ones of no larger `delta`.
                    while let Some(&(Runs::Through(_), d)) = self.tops.last() {
                        if d > delta {
                            break;
                        }
                        self.tops.pop();
                    }
                    self.tops.push((Runs::Through(since_start), delta));
                }
                n => match self.tops.last_mut() {
                    Some((Runs::Lines(k), t)) if *k == n => *t = (*t).max(delta),
                    _ => self.tops.push((Runs::Lines(n), delta)),
                },
            }
        }
    }

    /// Any event on the CPU but a drain of its worker's first run.
    pub(super) fn other(&mut self) {
        if let Some(run) = self.pending.take() {
            self.quiet.push(run);
        }
        if self.in_decay {
            self.in_decay = false;
            self.closed = true;
        }
    }

    /// A `vmstat_update` line on the CPU: its worker's next run begins. Where the first run
    /// that drained was going on, it is over: the next run's drains are its own
    /// (`decay_pcp_high` takes another eighth off `high` then). 7.2-4g-wq p_thp, Normal
    /// CPU 3: the runs at 105.951052, 107.517088, 108.573863 and 109.598871 drained 78,
    /// 237, 207 and 171 pages with no other event on the CPU between them; read as one run
    /// of 693 pages, it took `high` down to `high_min` at the first and set the start at
    /// 1466, where the first alone names 2169 (1976 pages, 1898 left).
    ///
    /// A run whose line no drain of its own follows drained nothing: `decay_pcp_high` left
    /// the count at or below the `high` it set (`to_drain = count - high`), so
    /// `decayed(high, runs) >= count` then. 7.2-4g-wq p_prodcons, Normal CPU 2: nine runs
    /// from 13.402123 drained nothing before the one at 25.229822 drained 70 pages to
    /// `high_min`; set up at zoneinfo's 1346 under a count of 1600, the replay's first run
    /// drained 317 pages.
    pub(super) fn work_line(&mut self, delta: i64) {
        self.line_seen = true;
        self.other();
        if !self.closed && self.decay.is_none() {
            self.work_lines += 1;
            self.steps.push(Step::Decay);
            self.pending = Some((self.at(), delta));
        }
    }

    /// A free that left `delta` drained (order 0 or above `PAGE_ALLOC_COSTLY_ORDER`, so not
    /// `free_high`; `ZONE_RECLAIM_ACTIVE` clear), `since_start` ns into the walk, before
    /// anything else moved `high`: `free_frozen_page_commit` drains only when `count >=
    /// high` (`nr_pcp_high` returns the clamped `high`), so `high` was at most the count
    /// then. 7.2-4g-wq p_prodcons, Normal CPU 3: `awk-311`'s free at 13.333103 drained 66
    /// pages at 1778, one page above the count its free before drained nothing at; zoneinfo
    /// printed 2900 at 53.944654. Started at 2900, the replay drained nothing until 16.586
    /// where the kernel drained 66, 154, 189 and 47 pages (to its worker's 13.400647,
    /// 14.397858 and 15.429456 runs): `high` was 1778, which those runs take to `high_min`.
    pub(super) fn free_drain(&mut self, delta: i64, since_start: u64) {
        if self.closed || self.decay.is_some() {
            return;
        }
        let runs = match self.at() {
            0 => Runs::Through(since_start),
            n => Runs::Lines(n),
        };
        self.free_drain = Some((delta, runs));
        self.free_drain_ns = since_start;
        self.close();
    }

    /// A page of a refill run of `order` (`new_run`: the run's first). Where the trace's
    /// lines count the worker's runs, and before the first that drains, the walk goes on
    /// through it: `nr_pcp_alloc` (7.2's as 6.12's) raises `high` by `batch << alloc_factor` for order 0
    /// (the run's own size, `min(batch << alloc_factor, max_nr_alloc)`, where that is `batch`
    /// times a power of two), by `batch` for a higher order, to at most `high_max` (unless
    /// `ZONE_BELOW_HIGH`: the walk stops at kswapd's wake, [`StartHigh::close`]). 7.2-4g-wq
    /// p_thp, Normal CPU 1 (3115 pages at the file's start): quiet runs at 106.385989 and
    /// 108.402162, then `od-595` took 41 pages and refilled 63, 126, 252 and 504 from
    /// 108.572559; the runs at 109.431012 to 113.430100 drained nothing. Closed at the first
    /// refill, the walk read `high` off the first two runs alone (about 4070), which the
    /// replay's runs from 109.431 took below the count: 130 to 214 pages drained at each of
    /// five runs where the kernel drained none.
    ///
    /// A refill before the CPU's first `vmstat_update` line: in a file that traces the runs,
    /// no run came before it, so the walk goes on through its raise too; kept closed there
    /// for a file that traces none ([`StartHigh::no_lines`]). 6.12-4g-more p_sock, Normal
    /// CPU 3: the refill at 13.644 came before its first line (13.787840); the runs from
    /// there to 23.81 drained nothing, then 41, 81 and 98 pages. Closed at the refill, the
    /// walk fell back on zoneinfo's 1357 (read at 66.09), and the replay's run at 14.775746
    /// drained 20 pages where the kernel drained none: only a start `high` of 3775-3859 fits.
    pub(super) fn refill(&mut self, order: u8, new_run: bool) {
        if self.closed {
            return;
        }
        if self.decay.is_some() {
            return self.close();
        }
        if self.work_lines == 0 && self.unlined.is_none() {
            let mut closed = self.clone();
            closed.close();
            self.unlined = Some(Box::new(closed));
        }
        if let Some(run) = self.pending.take() {
            self.quiet.push(run);
        }
        match self.steps.last_mut() {
            Some(Step::Raise { pages, .. }) if !new_run => *pages += 1i64 << order,
            _ => self.steps.push(Step::Raise {
                order,
                pages: 1i64 << order,
            }),
        }
    }

    /// The file traces no worker runs: no line before a refill says nothing of the runs
    /// before it, so the walk reads no further than the first refill.
    pub(super) fn no_lines(&mut self) {
        if let Some(mut closed) = self.unlined.take() {
            closed.raised = self.raised_drain();
            *self = *closed;
        }
    }

    /// Where a bound read now lies among the steps (the traced runs before it, without
    /// raises).
    fn at(&self) -> u32 {
        u32::try_from(self.steps.len()).unwrap_or(u32::MAX)
    }

    /// `high` after the first `n` steps from `x` at the start: a step past those noted is a
    /// run the clock counts (no lines: [`runs_before`]).
    fn evolve(&self, mut x: i64, n: u32, h: &High, scale_max: u8) -> i64 {
        let max = h.max.max(h.lo);
        for i in 0..n as usize {
            match self.steps.get(i) {
                Some(&Step::Raise { order, pages }) => {
                    let r = raise(order, pages, h.batch, scale_max).unwrap_or(0);
                    x = (x + r).min(max);
                }
                _ if x > h.lo => x = less(x).max(h.lo),
                _ => {}
            }
        }
        x
    }

    /// The steps up to the first raise the trace does not size (all of them, and more,
    /// where each is sized).
    fn exact_steps(&self, batch: i64, scale_max: u8) -> u32 {
        let unknown = self.steps.iter().position(|s| match *s {
            Step::Raise { order, pages } => raise(order, pages, batch, scale_max).is_none(),
            Step::Decay => false,
        });
        unknown.map_or(u32::MAX, |i| u32::try_from(i).unwrap_or(u32::MAX))
    }

    /// A refill, or a drain that is not the worker's first run.
    pub(super) fn close(&mut self) {
        if let Some(run) = self.pending.take() {
            self.quiet.push(run);
        }
        self.in_decay = false;
        self.closed = true;
    }

    /// A drained block of `pages` of the CPU's worker (on a zone of its own node, whose
    /// pagesets' expiry never drains them), `delta` before it; `since_start` ns after the
    /// walk's first event.
    pub(super) fn worker_drain(&mut self, delta: i64, pages: i64, since_start: u64) {
        if self.closed {
            return;
        }
        self.pending = None;
        // Lines more than HZ/4 apart are two runs, as the replay reads them
        // (`Replayer::traced_drain`): a run drains in far less.
        let gap = since_start.saturating_sub(self.last_ns) > RUN_GAP_NS;
        self.last_ns = since_start;
        match &mut self.decay {
            Some((_, drained)) if self.in_decay && !gap => *drained += pages,
            Some(_) => self.close(),
            None => {
                self.decay = Some((delta, pages));
                // The trace's own lines count the runs before this one (its line is the
                // last counted); without them, one a second.
                self.runs_before = match self.at() {
                    0 => Runs::Before(since_start),
                    n => Runs::Lines(n - 1),
                };
                self.in_decay = true;
            }
        }
    }

    /// [`StartHigh::infer_on`], the runs without lines one a second ([`Clock::OneASecond`]).
    #[cfg(test)]
    pub(super) fn infer(&self, c0: i64, h: &High, scale_max: u8) -> i64 {
        self.infer_on(c0, h, scale_max, Clock::OneASecond)
    }

    /// `high` at the start for a count `c0` there, within `h`'s `high_min..=high_max`;
    /// zoneinfo's where the trace does not say more; the runs without lines timed by
    /// `clock`.
    pub(super) fn infer_on(&self, c0: i64, h: &High, scale_max: u8, clock: Clock<'_>) -> i64 {
        let (lo, max) = (h.lo, h.max.max(h.lo));
        let printed = self.printed;
        let at = |x: i64, n: u32| self.evolve(x, n, h, scale_max);
        // Bounds read after a raise the trace does not size are dropped.
        let cut = self.exact_steps(h.batch, scale_max);
        let least = self.top.map_or(lo, |t| c0 + t + 1);
        // After traced runs: decayed(high, runs) > the count those frees left.
        let tops = self.tops.iter().map(|&(r, d)| (clock.count(r), d));
        let least = tops
            .filter(|b| b.0 > 0 && b.0 <= cut)
            .fold(least, |l, (runs, delta)| {
                l.max(first_above(lo, max, |x| at(x, runs) > c0 + delta))
            });
        // Each quiet traced run: decayed(high, runs) >= the count then.
        let quiet = self.quiet.iter().filter(|b| b.0 <= cut);
        let least = quiet.fold(least, |l, &(runs, delta)| {
            l.max(first_above(lo, max, |x| at(x, runs) >= c0 + delta))
        });
        // The runs before the draining one and that one: high -> decayed(high, runs).
        let runs = clock.count(self.runs_before).saturating_add(1);
        let high = match self.decay.filter(|_| runs <= cut) {
            Some((before, drained)) => {
                let count = c0 + before;
                let left = count - drained;
                if left > lo && left > count - (h.batch << scale_max) {
                    // decayed(high, runs) == left: the `high`s that give it (a run takes at
                    // most one page off for each page more, so they are `a..=b`), from `least`
                    // up. None up to high_max: the worker ran less often than each second,
                    // and high_max comes nearest.
                    let a = first_above(lo, max, |x| at(x, runs) >= left);
                    let b = first_above(lo, max, |x| at(x, runs) > left) - 1;
                    if a <= b {
                        least.clamp(a, b)
                    } else {
                        max
                    }
                } else {
                    // Down to high_min: decayed(high, runs) <= high_min.
                    let most = first_above(lo, max, |x| at(x, runs) > lo) - 1;
                    printed.max(least).min(most.max(lo))
                }
            }
            None => {
                let through = self.through_read(least, h, scale_max, clock);
                let high = through.unwrap_or(printed.max(least));
                let free_drain = self.free_drain.map(|(d, r)| (d, clock.count(r)));
                let high = match free_drain.filter(|f| f.1 <= cut) {
                    // decayed(high, runs) <= the count at that free.
                    Some((delta, runs)) => {
                        let most = first_above(lo, max, |x| at(x, runs) > c0 + delta);
                        high.min((most - 1).max(lo))
                    }
                    None => high,
                };
                self.raised_bound(high, c0, h, scale_max, clock)
            }
        };
        high.clamp(lo, max)
    }
}

/// What `nr_pcp_alloc` raised `high` by for a refill run of `pages` pages of `order`: `batch`
/// above order 0; for order 0 `batch << alloc_factor`, which the run's size shows where it
/// is `batch` times a power of two up to `CONFIG_PCP_BATCH_SCALE_MAX` (else `max_nr_alloc`
/// cut it short: `None`).
pub(super) fn raise(order: u8, pages: i64, batch: i64, scale_max: u8) -> Option<i64> {
    if order > 0 {
        return Some(batch);
    }
    (0..=scale_max).map(|k| batch << k).find(|&b| b == pages)
}

/// `decay_pcp_high`'s `high - (high >> 3)`.
pub(super) fn less(high: i64) -> i64 {
    high - (high >> 3)
}

/// `high` after `runs` of the worker's `decay_pcp_high` that leave it above the count less
/// `batch << CONFIG_PCP_BATCH_SCALE_MAX`: an eighth off each time, not below `high_min`.
#[cfg(test)]
fn decayed(mut high: i64, runs: u32, high_min: i64) -> i64 {
    for _ in 0..runs {
        if high <= high_min {
            break;
        }
        high = less(high).max(high_min);
    }
    high
}

/// The least `x` in `lo..=hi` for which the monotone `p` holds, else `hi + 1`.
pub(super) fn first_above(mut lo: i64, hi: i64, p: impl Fn(i64) -> bool) -> i64 {
    let mut end = hi + 1;
    while lo < end {
        let mid = lo + (end - lo) / 2;
        if p(mid) {
            end = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// The worker's runs (one a second, `sysctl_stat_interval`) in the `since_start` ns between
/// the walk's first event and a run: those a whole number of seconds before it, after the
/// start (where the workers' schedule is not known, [`Clock::OneASecond`]).
fn runs_before(since_start: u64) -> u32 {
    u32::try_from(since_start.saturating_sub(1) / 1_000_000_000).unwrap_or(u32::MAX)
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
            c.start_free.open();
            c.start_high.printed = c.high.hi;
            c.high.hi = c.high.max.max(c.high.lo);
        }
    }

    /// A workqueue line (`capture-kmem --workqueue`): `vmstat_update` begins a run of the
    /// CPU's worker on each of its zones ([`StartHigh::work_line`]).
    pub(super) fn work_line(&mut self, ev: &Event<'_>) {
        if !matches!(ev.kind, EventKind::VmstatUpdate) {
            return;
        }
        let cpu = super::super::fold::fold(ev.cpu.unwrap_or(0), self.cpus);
        for z in 0..self.zones {
            if let Some(c) = self.at(z, cpu) {
                c.start_high.work_line(c.delta);
            }
        }
    }

    /// Before the start's `high` is read: where no CPU showed a `vmstat_update` line, the
    /// file traces no runs ([`StartHigh::no_lines`]).
    pub(super) fn settle_start_high(&mut self) {
        if !self.per.iter().flatten().any(|c| c.start_high.line_seen) {
            let per = self.per.iter_mut().flatten();
            per.for_each(|c| c.start_high.no_lines());
        }
    }

    /// An event on `cpu` at `ts`: its pauses ([`Pauses`]) time the worker's late runs on
    /// the workers' schedule ([`super::StartCounts::time_highs`]).
    pub(super) fn pause_event(&mut self, cpu: u32, ev: &Event<'_>) {
        let (pauses, tick) = &mut self.pauses;
        if pauses.len() < self.cpus as usize {
            pauses.resize(self.cpus as usize, Pauses::new(*tick));
        }
        let step = match ev.kind {
            EventKind::Free { .. } => PauseStep::Free,
            EventKind::FreeBatched { .. } | EventKind::PcpuDrain { .. } => PauseStep::Commit,
            _ => PauseStep::Other,
        };
        if let (Some(p), Some(t)) = (pauses.get_mut(cpu as usize), ev.ts_ns) {
            p.event(t, step);
        }
    }

    /// zoneinfo's read: `high` is the one it printed (the walk's bound goes on from there),
    /// and what comes after tells nothing more of the start's.
    pub(super) fn close_start_high(&mut self) {
        if !self.start_high {
            return;
        }
        let since_start = self
            .now
            .zip(self.first_ns)
            .map_or(0, |(t, s)| t.saturating_sub(s));
        for c in self.per.iter_mut().flatten() {
            c.high.hi = c.start_high.printed;
            c.start_high.read(since_start);
        }
    }
}

mod raised;
mod read;

#[cfg(test)]
mod clock_tests;
#[cfg(test)]
mod refill_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod walk_tests;
