//! Where a drain's wall time went, from the drainer thread's own scheduler accounting: time
//! on a CPU (`CLOCK_THREAD_CPUTIME_ID`), time runnable but waiting for a CPU (the second field
//! of `/proc/thread-self/schedstat`, `run_delay`: preempted, or yielded), and the rest, time
//! asleep (blocked on a lock or a futex).

/// The calling thread's CPU time and run-queue wait, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ThreadClock {
    pub(super) cpu_ns: u64,
    /// `None` where the kernel has no schedstat (`CONFIG_SCHED_INFO=n`) or it is not Linux.
    pub(super) run_delay_ns: Option<u64>,
}

/// Reads the calling thread's clocks.
pub(super) fn now() -> ThreadClock {
    ThreadClock {
        cpu_ns: thread_cpu_ns(),
        run_delay_ns: std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse().ok()),
    }
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID needs nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One drain's wall time split three ways (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Split {
    pub(super) wall: u64,
    /// On a CPU: the drain's own work, and any spinning.
    pub(super) cpu: u64,
    /// Runnable, waiting for a CPU (preempted, or yielded to another thread).
    pub(super) runqueue: u64,
    /// Neither: asleep, blocked on another thread (a lock).
    pub(super) blocked: u64,
}

impl Split {
    /// `wall` split with the clocks read before and after it; the run-queue share is 0 where
    /// schedstat is missing.
    pub(super) fn new(wall: u64, before: ThreadClock, after: ThreadClock) -> Split {
        let cpu = after.cpu_ns.saturating_sub(before.cpu_ns).min(wall);
        let runqueue = match (before.run_delay_ns, after.run_delay_ns) {
            (Some(b), Some(a)) => a.saturating_sub(b).min(wall - cpu),
            _ => 0,
        };
        Split {
            wall,
            cpu,
            runqueue,
            blocked: wall - cpu - runqueue,
        }
    }
}
