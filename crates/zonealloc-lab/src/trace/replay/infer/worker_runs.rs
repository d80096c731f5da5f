//! Each CPU's vmstat worker runs before the window's start marker, from the trace before it,
//! for the workers' timers ([`crate::trace::replay::vmstat::Vmstat::set_runs_before`]).
//! The trace does not show jiffies, and a worker runs on its CPU's own skewed second
//! (`vmstat_update` re-queues with `round_jiffies_relative`, `mm/vmstat.c`): where the window
//! shows no run of a CPU's worker, its timer's phase was assumed at the window's first event.
//! On 6.12-4g p_pressure no worker drains in the window's first 28 s, while CPU 2's drained
//! at 768.783 s, 9 s before it: with that phase the refills are 0.16% off, not 5.45%.
//!
//! A worker's run is a `decay_pcp_high` drain (`refresh_cpu_vm_stats`), shown as
//! `mm_page_pcpu_drain` lines of a `kworker/N:M` of the line's CPU at preempt depth 2
//! ([`crate::trace::parse::Who::is_worker_drain`]); it ends at any other event on its CPU,
//! as the replay reads them ([`crate::trace::replay::replayer::Replayer::feed`]). Its first
//! line is when the work ran: at or after its timer's expiry, a CPU boundary (deferrable:
//! on a busy CPU at the next tick, on an idle one when it wakes; a run the shepherd queued
//! comes at CPU 0's boundary, which is `3 * cpu` jiffies after the CPU's own). So of a CPU's
//! runs, the one earliest in its second lies nearest its boundary, and stands for them
//! ([`earliest_in_second`]): 6.12-4g p_pressure's CPU 1 ran at x.79 to x.86 s, its last
//! run at 743.854 s; from that last run alone its drains were 2.47% off the kernel's, from
//! the earliest in its second (x.79) 1.53%.

use std::collections::VecDeque;

use crate::trace::parse::{Event, EventKind};

/// The most runs kept per CPU (the latest).
pub const RUNS_KEPT: usize = 64;

const SECOND_NS: u64 = 1_000_000_000;

/// The walk over the text before the marker.
#[derive(Clone, Debug)]
pub struct Walk {
    /// Per CPU: the first lines of its worker's latest runs, oldest first.
    runs: Vec<VecDeque<u64>>,
    /// Per CPU: its last event was a drain of its worker's run.
    in_run: Vec<bool>,
}

impl Walk {
    /// A walk over `cpus` CPUs (a line of a CPU beyond them is left out).
    pub fn new(cpus: u32) -> Walk {
        let n = cpus.max(1) as usize;
        Walk {
            runs: vec![VecDeque::new(); n],
            in_run: vec![false; n],
        }
    }

    /// The next event.
    pub fn feed(&mut self, ev: &Event<'_>) {
        let Some(c) = ev.cpu.map(|c| c as usize).filter(|&c| c < self.runs.len()) else {
            return;
        };
        if !matches!(ev.kind, EventKind::PcpuDrain { .. }) {
            self.in_run[c] = false;
            return;
        }
        if !ev.who.is_worker_drain() {
            return;
        }
        if let (false, Some(ts)) = (self.in_run[c], ev.ts_ns) {
            if self.runs[c].len() == RUNS_KEPT {
                self.runs[c].pop_front();
            }
            self.runs[c].push_back(ts);
        }
        self.in_run[c] = true;
    }

    /// Per CPU: the run of its worker earliest in its second ([`earliest_in_second`]), if
    /// any.
    pub fn finish(self) -> Vec<Option<u64>> {
        self.runs.iter().map(earliest_in_second).collect()
    }
}

/// Of a CPU's runs, the one earliest in its second: the run whose offset in the second, taken
/// as the CPU's boundary, makes the runs' delays past it (each going round the second) least
/// in sum; of runs as good, the latest (all sharing one time: the last run). A worker never
/// runs before its timer: a run on time comes at its expiry, a CPU boundary (on the timer
/// wheel its bucket's, a few jiffies on), a late one when its kworker gets the CPU or its
/// idle CPU wakes (`INIT_DEFERRABLE_WORK`, `mm/vmstat.c`), and `round_jiffies_relative`
/// re-queues either onto the boundary again. Where runs lie anywhere in the second, the run
/// after the widest gap between them is the earliest; where a few came late by a large part
/// of a second, the widest gap can lie among them. 6.12-4g p_thp: `kworker/0:2`'s runs after
/// the window lie at x.800 to x.961, three at x.088, x.202 and x.558 (late behind the THP
/// faults), and the widest gap (x.202 to x.558) took x.558.
pub fn earliest_in_second(runs: &VecDeque<u64>) -> Option<u64> {
    let last = *runs.back()?;
    let offset = |t: u64| t % SECOND_NS;
    let mut best = (u128::MAX, last);
    let mut by_offset: Vec<u64> = runs.iter().copied().collect();
    by_offset.sort_by_key(|&t| offset(t));
    for &t in &by_offset {
        let delays: u128 = by_offset
            .iter()
            .map(|&u| u128::from((offset(u) + SECOND_NS - offset(t)) % SECOND_NS))
            .sum();
        if delays <= best.0 {
            best = (delays, t);
        }
    }
    Some(best.1)
}

/// One CPU's pauses as the trace shows them, from the walk's first event: where its events
/// lie more than a tick apart. A busy CPU's worker whose timer fired runs when the CPU's
/// task pauses, as the replay places a late run (`vmstat/late.rs`: a tick after the CPU's
/// last event, `Vmstat::set_late_runs`), so the workers' schedule reads its runs' times off
/// them ([`Pauses::run_at`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pauses {
    /// The stretches longer than a tick with no event of the CPU, in time order; one from 0
    /// to its first event.
    gaps: Vec<Gap>,
    /// The CPU's last event, and whether it was a free waiting for its commit.
    last: Option<(u64, bool)>,
    /// The first gap after a free that no other event has resolved yet.
    open: Option<usize>,
    tick_ns: u64,
}

/// A stretch of a CPU with no event ([`Pauses`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Gap {
    /// The last event before it, and the next.
    from: u64,
    to: u64,
    /// The event before it was a free waiting for its commit: where no kworker runs inside
    /// a free call, the CPU's first event after it that is no free resolves it (`resolved`:
    /// when, and whether a commit).
    after_free: bool,
    resolved: Option<(u64, bool)>,
}

/// What an event is to a CPU's pauses ([`Pauses::event`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A traced free (`mm_page_free`: `free_pages_prepare`), committed later.
    Free,
    /// A batch's commit (`mm_page_free_batched`) or its drain.
    Commit,
    /// Anything else.
    Other,
}

impl Pauses {
    /// No event yet, a tick of `tick_ns`.
    pub fn new(tick_ns: u64) -> Pauses {
        Pauses {
            tick_ns,
            ..Pauses::default()
        }
    }

    /// The CPU's next event, at `t`.
    pub fn event(&mut self, t: u64, step: Step) {
        let (from, after_free) = match self.last {
            None => (Some(0), false),
            Some((l, free)) => (
                Some(l).filter(|&l| t > l.saturating_add(self.tick_ns)),
                free,
            ),
        };
        if let Some(from) = from {
            self.gaps.push(Gap {
                from,
                to: t,
                after_free,
                resolved: None,
            });
            if after_free && self.open.is_none() {
                self.open = Some(self.gaps.len() - 1);
            }
        }
        if step != Step::Free {
            let commit = step == Step::Commit;
            let open = self
                .open
                .take()
                .map_or(self.gaps.len(), |o| o.min(self.gaps.len()));
            for g in &mut self.gaps[open..] {
                g.resolved = Some((t, commit));
            }
        }
        self.last = Some((t, step == Step::Free));
    }

    /// When the CPU's worker whose timer fired at `fire` runs, as the replay places it,
    /// `(at, done)`: the time the run is dated at (its re-queue counts from it) and the time
    /// the replay does it. At `fire` where the CPU was idle (its last event more than a tick
    /// before: the timer is deferrable, the replay runs it at its expiry,
    /// `Vmstat::set_defer_to_event`); else a tick after the last event before the CPU's
    /// next pause, at `limit` at the latest (`late.rs`: the kworker waits for the task).
    /// `no_switch_in_free`: a pause after a free waiting for its commit holds the run
    /// (`Replayer::inside_free`) until the CPU's first event that is no free: a commit shows
    /// the pauses inside a batch (the run waits on), any other event places it at the last
    /// of them, done then (`Replayer::mid_pause_seen`).
    pub fn run_at(&self, fire: u64, limit: u64, no_switch_in_free: bool) -> (u64, u64) {
        let tick = self.tick_ns;
        let Some((last, _)) = self.last.filter(|l| l.0.saturating_add(tick) >= fire) else {
            return (fire, fire);
        };
        let i = self.gaps.partition_point(|g| g.to < fire);
        if let Some(g) = self.gaps.get(i) {
            // Idle at `fire`: the stretch it lies in began more than a tick before it.
            if g.from.saturating_add(tick) < fire {
                return (fire, fire);
            }
        }
        let cap = |at: u64, done: u64| (at.min(limit).max(fire), done.min(limit).max(fire));
        let mut k = i;
        while let Some(g) = self.gaps.get(k) {
            let pause = g.from.saturating_add(tick);
            match g.resolved.filter(|_| no_switch_in_free && g.after_free) {
                None => return cap(pause, pause),
                // Inside a batch: on past its commit.
                Some((r, true)) => k += self.gaps[k..].partition_point(|h| h.to <= r).max(1),
                Some((r, false)) => {
                    let held = self.gaps[k..].iter().take_while(|h| h.to <= r);
                    let at = held.last().map_or(pause, |h| h.from.saturating_add(tick));
                    return cap(at, r);
                }
            }
        }
        let pause = last.saturating_add(tick);
        cap(pause, pause)
    }
}

/// Per CPU of `cpus`: its worker's run earliest in its second among its latest
/// [`RUNS_KEPT`] in the complete lines of `text` (the trace before the marker).
#[cfg(test)]
pub fn last_runs(text: &[u8], cpus: u32) -> Vec<Option<u64>> {
    let mut walk = Walk::new(cpus);
    super::free_factor::each_event(text, |ev| walk.feed(ev));
    walk.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::parse::Parser;

    fn drain(who: &str, cpu: u32, ts: &str, ctx: &str) -> String {
        format!(
            "{who:>16} [{cpu:03}] {ctx} {ts}: mm_page_pcpu_drain: page=0xffffea0000b98000 \
             pfn=0x2e600 order=0 migratetype=1\n"
        )
    }

    fn free(cpu: u32, ts: &str) -> String {
        format!(
            "{:>16} [{cpu:03}] ..... {ts}: mm_page_free: page=0xffffea0000b98000 pfn=0x2e600 \
             order=0\n",
            "dd-4242"
        )
    }

    #[test]
    fn each_cpus_runs_are_their_first_drain_lines_and_the_earliest_in_the_second_stands() {
        let mut t = String::new();
        // CPU 1's worker: a run at 10.5 (two lines), a free, another run at 11.49 (its
        // second's earliest), one at 12.52; the second line of a run is no run.
        t += &drain("kworker/1:1-59", 1, "10.500000", "d..2.");
        t += &drain("kworker/1:1-59", 1, "10.480000", "d..2.");
        t += &free(1, "10.600000");
        t += &drain("kworker/1:1-59", 1, "11.490000", "d..2.");
        t += &drain("kworker/1:1-59", 1, "11.490020", "d..2.");
        t += &free(1, "11.600000");
        t += &drain("kworker/1:1-59", 1, "12.520000", "d..2.");
        // CPU 2: a free path's drain (depth 3), another CPU's kworker, drain_all_pages.
        t += &drain("kworker/2:0-34", 2, "12.000000", "d..3.");
        t += &drain("kworker/1:1-59", 2, "12.100000", "d..2.");
        t += &drain("dd-4242", 2, "12.200000", "d..2.");
        // CPU 3's worker, its line cut at the front as the kept text's first may be; its
        // runs at x.98 and x.02 go round the second: x.98 is the earliest.
        t += &drain("kworker/3:2-77", 3, "13.250000", "d..2.")[20..];
        t += &free(3, "13.300000");
        t += &drain("kworker/3:2-77", 3, "13.980000", "d..2.");
        t += &free(3, "14.000000");
        t += &drain("kworker/3:2-77", 3, "15.020000", "d..2.");
        // A CPU beyond the machine's.
        t += &drain("kworker/9:1-99", 9, "15.000000", "d..2.");
        let runs = last_runs(t.as_bytes(), 4);
        assert_eq!(
            runs,
            vec![None, Some(11_490_000_000), None, Some(13_980_000_000)]
        );
    }

    #[test]
    fn a_run_in_the_widest_gap_of_the_second_is_not_the_earliest() {
        const S: u64 = SECOND_NS;
        let runs = |ts: &[u64]| earliest_in_second(&ts.iter().copied().collect());
        assert_eq!(runs(&[]), None);
        assert_eq!(runs(&[7_250_000_000]), Some(7_250_000_000));
        assert_eq!(runs(&[1_800_000_000, 2_800_000_000]), Some(2_800_000_000));
        // Three runs near x.8, one at x.2 (late by 0.4 s): x.79 is the earliest.
        let ts = [1_810_000_000, 2_790_000_000, 3_200_000_000, 4_830_000_000];
        assert_eq!(runs(&ts), Some(2_790_000_000));
        // 6.12-4g p_thp's CPU 0: most runs at x.80 to x.96, stragglers at x.09, x.20 and
        // x.56; the widest gap (x.20 to x.56) is not where the runs on time begin.
        let mut ts: Vec<u64> = (0..20)
            .map(|k| k * S + 800_000_000 + k * 8_000_000)
            .collect();
        ts.extend([
            30 * S + 88_000_000,
            31 * S + 202_000_000,
            32 * S + 558_000_000,
        ]);
        assert_eq!(runs(&ts), Some(800_000_000));
        // Only the latest RUNS_KEPT are kept.
        let mut w = Walk::new(1);
        let line = |t: u64| drain("kworker/0:1-9", 0, &format!("{}.{:06}", t, 0), "d..2.");
        let mut parser = Parser::new();
        for t in 0..(RUNS_KEPT as u64 + 10) {
            for l in [line(t), free(0, &format!("{t}.500000"))] {
                let ev = parser.feed(l.as_bytes()).unwrap();
                w.feed(&ev);
            }
        }
        assert_eq!(w.runs[0].len(), RUNS_KEPT);
        assert_eq!(w.runs[0].front(), Some(&10_000_000_000));
    }

    /// A busy CPU's late run at its task's pause; where no kworker runs inside a free call
    /// (6.12), not at a pause after a free: at the last such pause before the CPU's next
    /// event that is no free, done then, or past a commit (a batch) at the next pause.
    #[test]
    fn a_late_run_waits_for_a_pause_outside_a_free_call() {
        const MS: u64 = 1_000_000;
        let cpu = |end: Step| {
            let mut p = Pauses::new(4 * MS);
            let steps = [
                (0, Step::Free),
                (1, Step::Free),
                (2, Step::Free),
                (10, Step::Free),
                (11, Step::Free),
                (20, Step::Free),
                (21, end),
                (22, Step::Other),
                (30, Step::Other),
            ];
            for (ms, step) in steps {
                p.event(ms * MS, step);
            }
            p
        };
        let p = cpu(Step::Other);
        // Busy at 1.5 ms: the pause after 2 ms; inside free calls, the last before 21 ms.
        assert_eq!(p.run_at(MS * 3 / 2, 900 * MS, false), (6 * MS, 6 * MS));
        assert_eq!(p.run_at(MS * 3 / 2, 900 * MS, true), (15 * MS, 21 * MS));
        assert_eq!(p.run_at(MS * 3 / 2, 12 * MS, true), (12 * MS, 12 * MS));
        // A commit at 21 ms: the pauses were inside a batch; the next after it.
        let p = cpu(Step::Commit);
        assert_eq!(p.run_at(MS * 3 / 2, 900 * MS, true), (26 * MS, 26 * MS));
        // Idle at 8 ms (its last event at 2 ms), and past the last event.
        assert_eq!(p.run_at(8 * MS, 900 * MS, true), (8 * MS, 8 * MS));
        assert_eq!(p.run_at(40 * MS, 900 * MS, true), (40 * MS, 40 * MS));
        assert_eq!(p.run_at(31 * MS, 900 * MS, true), (34 * MS, 34 * MS));
    }

    #[test]
    fn nothing_before_the_marker_is_no_run() {
        assert_eq!(last_runs(b"", 2), vec![None, None]);
        assert_eq!(last_runs(b"garbage\n\xff\xfe\n", 0), vec![None]);
    }
}
