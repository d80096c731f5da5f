//! Each CPU's last vmstat worker run before the window's start marker, from the trace before
//! it, for the workers' timers ([`crate::trace::replay::vmstat::Vmstat::set_runs_before`]).
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
//! line is when the timer fired.

use crate::trace::parse::{Event, EventKind, Parser};

/// The walk over the text before the marker.
#[derive(Clone, Debug)]
pub struct Walk {
    /// Per CPU: the first line of its worker's last run.
    last: Vec<Option<u64>>,
    /// Per CPU: its last event was a drain of its worker's run.
    in_run: Vec<bool>,
}

impl Walk {
    /// A walk over `cpus` CPUs (a line of a CPU beyond them is left out).
    pub fn new(cpus: u32) -> Walk {
        let n = cpus.max(1) as usize;
        Walk {
            last: vec![None; n],
            in_run: vec![false; n],
        }
    }

    /// The next event.
    pub fn feed(&mut self, ev: &Event<'_>) {
        let Some(c) = ev.cpu.map(|c| c as usize).filter(|&c| c < self.last.len()) else {
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
            self.last[c] = Some(ts);
        }
        self.in_run[c] = true;
    }

    /// Per CPU: the time of its worker's last run, if any.
    pub fn finish(self) -> Vec<Option<u64>> {
        self.last
    }
}

/// Per CPU of `cpus`: its worker's last run in the complete lines of `text` (the trace before
/// the marker).
pub fn last_runs(text: &[u8], cpus: u32) -> Vec<Option<u64>> {
    let mut parser = Parser::new();
    let mut walk = Walk::new(cpus);
    for line in text.split_inclusive(|&b| b == b'\n') {
        if let Some(ev) = parser.feed(line) {
            walk.feed(&ev);
        }
    }
    walk.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn each_cpus_last_worker_run_is_its_first_drain_line() {
        let mut t = String::new();
        // CPU 1's worker: a run at 10.5 (two lines), a free, another run at 11.5.
        t += &drain("kworker/1:1-59", 1, "10.500000", "d..2.");
        t += &drain("kworker/1:1-59", 1, "10.500010", "d..2.");
        t += &free(1, "10.600000");
        t += &drain("kworker/1:1-59", 1, "11.500000", "d..2.");
        t += &drain("kworker/1:1-59", 1, "11.500020", "d..2.");
        // CPU 2: a free path's drain (depth 3), another CPU's kworker, drain_all_pages.
        t += &drain("kworker/2:0-34", 2, "12.000000", "d..3.");
        t += &drain("kworker/1:1-59", 2, "12.100000", "d..2.");
        t += &drain("dd-4242", 2, "12.200000", "d..2.");
        // CPU 3's worker, its line cut at the front as the kept text's first may be.
        t += &drain("kworker/3:2-77", 3, "13.250000", "d..2.")[20..];
        t += &drain("kworker/3:2-77", 3, "14.250000", "d..2.");
        // A CPU beyond the machine's.
        t += &drain("kworker/9:1-99", 9, "15.000000", "d..2.");
        let runs = last_runs(t.as_bytes(), 4);
        assert_eq!(
            runs,
            vec![None, Some(11_500_000_000), None, Some(14_250_000_000)]
        );
    }

    #[test]
    fn nothing_before_the_marker_is_no_run() {
        assert_eq!(last_runs(b"", 2), vec![None, None]);
        assert_eq!(last_runs(b"garbage\n\xff\xfe\n", 0), vec![None]);
    }
}
