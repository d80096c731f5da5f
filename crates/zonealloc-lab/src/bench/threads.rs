//! The threads of one repetition: they start together at a [`StartGate`], each reads its
//! clocks at its own start and stop ([`Stamp`]), counts what it did ([`Counted`]), and the
//! sums become a [`Rep`].
//!
//! Each thread reads two clocks at its start and its stop: the wall clock, and its own CPU
//! time (`CLOCK_THREAD_CPUTIME_ID`, user and system), which leaves out the time the thread
//! waited for a core, so it stays meaningful on a machine shared with other work (and leaves
//! out time asleep on a lock or a channel too: compare the two).
//!
//! A panic in one thread fails the repetition; one before the start breaks the gate, so the
//! others do not wait for ever, and the first real panic, not its echoes, is the one resumed.
//! A thread that cannot be started (a limit on threads or memory) breaks it too, and the
//! repetition fails with that error once the threads started are joined.

use std::hint::black_box;
use std::time::Instant;

use serde::Serialize;

use super::peers::{PageWorker, Token};
use crate::gate::{Gate, SpawnError, Spawner};

/// One repetition of a workload: the sums over its threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Rep {
    /// Threads that ran.
    pub threads: usize,
    /// Ops done (successful allocations, each freed).
    pub ops: u64,
    /// Pages in those allocations.
    pub pages: u64,
    /// Allocations that failed (the allocator had no block).
    pub failures: u64,
    /// From the first thread's start to the last thread's stop, ns.
    pub wall_ns: u64,
    /// CPU time of all threads between their start and stop, ns.
    pub cpu_ns: u64,
}

/// A thread's two clocks at one moment.
#[derive(Clone, Copy, Debug)]
pub(super) struct Stamp {
    wall: Instant,
    cpu_ns: u64,
}

impl Stamp {
    pub(super) fn now() -> Self {
        Stamp {
            wall: Instant::now(),
            cpu_ns: thread_cpu_ns(),
        }
    }
}

/// The calling thread's CPU time, ns (0 where the clock cannot be read).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// A worker with the counts the runner checks: live blocks must be back to zero (summed over
/// threads) once every thread is done.
pub(super) struct Counted<W> {
    w: W,
    pub(super) live_blocks: i64,
    pub(super) ops: u64,
    pub(super) pages: u64,
    pub(super) failures: u64,
}

impl<W: PageWorker> Counted<W> {
    pub(super) fn new(w: W) -> Self {
        Counted {
            w,
            live_blocks: 0,
            ops: 0,
            pages: 0,
            failures: 0,
        }
    }

    #[inline]
    pub(super) fn alloc(&mut self, order: u8) -> Option<Token> {
        let t = self.w.alloc(black_box(order));
        match t {
            Some(_) => {
                self.live_blocks += 1;
                self.ops += 1;
                self.pages += 1 << order;
            }
            None => self.failures += 1,
        }
        t
    }

    #[inline]
    pub(super) fn free(&mut self, token: Token, order: u8) {
        self.w.free(black_box(token), order);
        self.live_blocks -= 1;
    }

    /// Forgets the untimed set-up's ops (its blocks stay live).
    pub(super) fn reset_counts(&mut self) {
        self.ops = 0;
        self.pages = 0;
        self.failures = 0;
    }
}

/// What one thread reports.
pub(super) struct ThreadOut {
    start: Instant,
    stop: Instant,
    cpu_ns: u64,
    ops: u64,
    pages: u64,
    failures: u64,
    pub(super) live_blocks: i64,
}

impl ThreadOut {
    pub(super) fn new<W>(c: &Counted<W>, start: Stamp, stop: Stamp) -> Self {
        ThreadOut {
            start: start.wall,
            stop: stop.wall,
            cpu_ns: stop.cpu_ns.saturating_sub(start.cpu_ns),
            ops: c.ops,
            pages: c.pages,
            failures: c.failures,
            live_blocks: c.live_blocks,
        }
    }
}

/// The start line of a run's threads: a [`Gate`], except that a thread released by a
/// cancelled gate unwinds (without a panic message: it is an echo) instead of running. A thread
/// that panics before the start (its worker could not be made, say) cancels it
/// ([`BreakOnPanic`]), and so does a thread that could not be started
/// ([`Spawner::spawn_each`]), so the others do not wait for ever.
pub(super) struct StartGate(Gate);

/// The panic payload of a thread released from a broken [`StartGate`].
struct GateBroken;

impl StartGate {
    pub(super) fn new(threads: usize) -> Self {
        StartGate(Gate::new(threads))
    }

    /// Waits until every thread has arrived; unwinds if the gate was cancelled instead.
    pub(super) fn wait(&self) {
        if self.0.wait().is_err() {
            // `resume_unwind`, not `panic_any`: no panic message for each echo.
            std::panic::resume_unwind(Box::new(GateBroken));
        }
    }

    fn fail(&self) {
        self.0.cancel();
    }

    /// The gate itself (to cancel it when a thread cannot be started).
    pub(super) fn gate(&self) -> &Gate {
        &self.0
    }
}

/// Breaks the gate if its thread unwinds.
pub(super) struct BreakOnPanic<'a>(pub(super) &'a StartGate);

impl Drop for BreakOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.fail();
        }
    }
}

/// Joins `handles`; if any thread panicked, resumes the first panic that is not a thread
/// released from a broken gate (the cause rather than its echoes).
pub(super) fn join_all<T>(handles: Vec<std::thread::ScopedJoinHandle<'_, T>>) -> Vec<T> {
    let mut outs = Vec::with_capacity(handles.len());
    let mut panic: Option<Box<dyn std::any::Any + Send>> = None;
    for h in handles {
        match h.join() {
            Ok(o) => outs.push(o),
            Err(p) => {
                if panic.as_ref().is_none_or(|q| q.is::<GateBroken>()) {
                    panic = Some(p);
                }
            }
        }
    }
    if let Some(p) = panic {
        std::panic::resume_unwind(p);
    }
    outs
}

/// Runs `body(thread, start_gate)` on `threads` scoped threads started by `spawner` and sums
/// what they report. Each body makes its worker on its own thread (a zonealloc `CpuHandle`
/// belongs to one), sets up, waits at the gate, and times itself. A thread that cannot be
/// started is an error once the others are released and joined.
pub(super) fn on_threads<F>(spawner: &Spawner, threads: usize, body: F) -> Result<Rep, String>
where
    F: Fn(usize, &StartGate) -> ThreadOut + Sync,
{
    let gate = StartGate::new(threads);
    let outs: Vec<ThreadOut> = std::thread::scope(|s| {
        let (body, gate) = (&body, &gate);
        let handles = spawner.spawn_each(s, threads, gate.gate(), |i| {
            move || {
                let _guard = BreakOnPanic(gate);
                body(i, gate)
            }
        })?;
        Ok::<_, SpawnError>(join_all(handles))
    })?;
    combine(&outs)
}

pub(super) fn combine(outs: &[ThreadOut]) -> Result<Rep, String> {
    let (Some(start), Some(stop)) = (
        outs.iter().map(|o| o.start).min(),
        outs.iter().map(|o| o.stop).max(),
    ) else {
        return Err("no thread ran".into());
    };
    let live: i64 = outs.iter().map(|o| o.live_blocks).sum();
    if live != 0 {
        return Err(format!("{live} blocks allocated and never freed"));
    }
    Ok(Rep {
        threads: outs.len(),
        ops: outs.iter().map(|o| o.ops).sum(),
        pages: outs.iter().map(|o| o.pages).sum(),
        failures: outs.iter().map(|o| o.failures).sum(),
        wall_ns: u64::try_from(stop.duration_since(start).as_nanos()).unwrap_or(u64::MAX),
        cpu_ns: outs.iter().map(|o| o.cpu_ns).sum(),
    })
}
