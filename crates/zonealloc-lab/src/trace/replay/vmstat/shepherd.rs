//! `vmstat_shepherd`'s own timer: a deferrable work (`DECLARE_DEFERRABLE_WORK(shepherd,
//! vmstat_shepherd)`, `mm/vmstat.c`) that an idle machine does not wake for.

use super::Work;

/// When the shepherd that expired at `expiry_ns` runs, seen at an event at `t`: at its expiry
/// if a CPU was awake then (an event within `tick` before), else at `t`. It is a deferrable
/// work (`DECLARE_DEFERRABLE_WORK(shepherd, vmstat_shepherd)`, `mm/vmstat.c`): an idle
/// machine does not wake for it. 6.12-2g p_idle: every CPU idle from 1220.9 to 1237.667 s;
/// dated at its stale expiry, ours re-armed it for the next jiffy and it queued CPU 1's
/// worker, dirtied by `sleep-917`'s refill, at 1237.671 s: its decay drained 62 pages where
/// the trace shows no worker run until `kworker/1:1`'s drain of 22 at 1238.077906.
pub(super) fn at(work: &[Work], expiry_ns: u64, t: u64, tick: u64) -> u64 {
    let awake = work
        .iter()
        .filter_map(|w| w.last_ns)
        .max()
        .is_some_and(|l| l + tick >= expiry_ns);
    if awake {
        expiry_ns.min(t)
    } else {
        t
    }
}
