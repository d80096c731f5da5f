//! Threads that start together, and what happens when one of them cannot be started.
//!
//! [`Gate`] is `std::sync::Barrier` with a way out: [`Gate::cancel`] releases every thread
//! waiting at it (and any that comes later) with [`Cancelled`]. [`Spawner::spawn_each`]
//! starts scoped threads through `std::thread::Builder`, which reports a refused thread as an
//! `io::Error` where `Scope::spawn` panics ("failed to spawn thread": a limit on threads or
//! on memory), and on such an error cancels the gate and joins the threads already started,
//! which would otherwise wait at the gate for ever and hang the scope. The caller gets a
//! [`SpawnError`] naming the thread: a clear error, and the run ends.

use std::fmt;
use std::io;
use std::sync::{Condvar, Mutex, PoisonError};
use std::thread::{Builder, Scope, ScopedJoinHandle};

/// A barrier for a fixed number of parties, reusable, that can be cancelled.
#[derive(Debug)]
pub struct Gate {
    state: Mutex<State>,
    turned: Condvar,
    parties: usize,
}

#[derive(Debug)]
struct State {
    /// Parties waiting in the current round.
    arrived: usize,
    /// Rounds completed.
    round: u64,
    cancelled: bool,
}

/// What [`Gate::wait`] returns once the gate is cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cancelled;

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("stopped at the start: another thread failed or could not be started")
    }
}

impl Gate {
    /// A gate that opens when `parties` threads wait at it (each round).
    pub fn new(parties: usize) -> Self {
        Gate {
            state: Mutex::new(State {
                arrived: 0,
                round: 0,
                cancelled: false,
            }),
            turned: Condvar::new(),
            parties,
        }
    }

    /// Waits until all parties have arrived, or the gate is cancelled (then, and from then on
    /// at once, `Err(Cancelled)`).
    pub fn wait(&self) -> Result<(), Cancelled> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if s.cancelled {
            return Err(Cancelled);
        }
        let round = s.round;
        s.arrived += 1;
        if s.arrived >= self.parties {
            s.arrived = 0;
            s.round += 1;
            self.turned.notify_all();
            return Ok(());
        }
        while s.round == round && !s.cancelled {
            s = self.turned.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        if s.round != round {
            Ok(())
        } else {
            Err(Cancelled)
        }
    }

    /// Releases every thread waiting, now and later, with [`Cancelled`].
    pub fn cancel(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cancelled = true;
        self.turned.notify_all();
    }

    /// Whether [`Gate::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cancelled
    }
}

/// A thread that could not be started.
#[derive(Debug)]
pub struct SpawnError {
    /// Which thread (from 0).
    pub index: usize,
    /// Of how many.
    pub of: usize,
    /// What the system said.
    pub error: io::Error,
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "could not start thread {} of {}: {} (a limit on threads or memory; the {} started \
             were stopped: try fewer threads)",
            self.index + 1,
            self.of,
            self.error,
            self.index
        )
    }
}

impl std::error::Error for SpawnError {}

impl From<SpawnError> for String {
    fn from(e: SpawnError) -> String {
        e.to_string()
    }
}

/// How threads are started: named `name-i`, through `std::thread::Builder`.
#[derive(Clone, Copy, Debug)]
pub struct Spawner {
    name: &'static str,
    limit: usize,
}

impl Spawner {
    /// Threads named `name-0`, `name-1`, ….
    pub fn new(name: &'static str) -> Self {
        Spawner {
            name,
            limit: usize::MAX,
        }
    }

    /// This spawner, refusing thread `limit` and every later one as a system limit would
    /// (`EAGAIN`): how tests make a run meet a refused thread.
    pub fn with_limit(self, limit: usize) -> Self {
        Spawner { limit, ..self }
    }

    /// Starts thread `i` of scope `s`, running `f`.
    pub fn spawn<'scope, 'env, T, F>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        i: usize,
        f: F,
    ) -> io::Result<ScopedJoinHandle<'scope, T>>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        if i >= self.limit {
            return Err(io::Error::from_raw_os_error(libc::EAGAIN));
        }
        Builder::new()
            .name(format!("{}-{i}", self.name))
            .spawn_scoped(s, f)
    }

    /// Starts `n` threads in `s`, thread `i` running `make(i)`. If one cannot be started,
    /// cancels `gate` (where the started ones wait), joins every thread started (a thread
    /// must return, or panic, once the gate is cancelled: what they return or raise then is
    /// an echo of this error and dropped), and returns the error.
    pub fn spawn_each<'scope, 'env, T, F>(
        &self,
        s: &'scope Scope<'scope, 'env>,
        n: usize,
        gate: &Gate,
        mut make: impl FnMut(usize) -> F,
    ) -> Result<Vec<ScopedJoinHandle<'scope, T>>, SpawnError>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let mut handles = Vec::with_capacity(n);
        for index in 0..n {
            match self.spawn(s, index, make(index)) {
                Ok(h) => handles.push(h),
                Err(error) => {
                    gate.cancel();
                    for h in handles {
                        let _ = h.join();
                    }
                    return Err(SpawnError {
                        index,
                        of: n,
                        error,
                    });
                }
            }
        }
        Ok(handles)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn the_gate_opens_each_round_for_all_parties() {
        let gate = Gate::new(3);
        let passed = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..5 {
                        gate.wait().unwrap();
                        passed.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(passed.load(Ordering::Relaxed), 15);
        assert!(!gate.is_cancelled());
    }

    #[test]
    fn a_refused_thread_cancels_the_gate_and_the_started_ones_are_joined() {
        // Five threads and this one make the gate's six parties; the fifth thread is refused.
        // Without the cancel the four started would wait for ever and the scope never end.
        let gate = Gate::new(6);
        let released = AtomicUsize::new(0);
        let spawner = Spawner::new("t").with_limit(4);
        let r = std::thread::scope(|s| {
            let (gate, released) = (&gate, &released);
            let handles = spawner.spawn_each(s, 5, gate, |_| {
                move || {
                    if gate.wait() == Err(Cancelled) {
                        released.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
            handles.map(|hs| hs.into_iter().for_each(|h| h.join().unwrap()))
        });
        let e = r.unwrap_err();
        assert_eq!((e.index, e.of), (4, 5));
        assert_eq!(e.error.raw_os_error(), Some(libc::EAGAIN));
        assert!(
            e.to_string().starts_with("could not start thread 5 of 5"),
            "{e}"
        );
        assert_eq!(released.load(Ordering::Relaxed), 4, "all four released");
        assert_eq!(gate.wait(), Err(Cancelled), "and any later one at once");
    }
}
