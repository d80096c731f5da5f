//! `zonealloc bench`: the same workloads on zonealloc and on the allocators it is compared
//! with, in one table of ops/s and ns/op with each peer's ratio to zonealloc.
//!
//! The pieces, one concept each:
//! - [`peers`]: the allocators behind one interface, [`peers::PageSource`] (shared) and
//!   [`peers::PageWorker`] (one per thread): zonealloc with per-CPU lists (the baseline),
//!   buddy only, behind one global mutex, `buddy_system_allocator`'s frame allocator and
//!   heap, `posix_memalign`, mimalloc and the kernel's own page allocator through `mmap`;
//! - [`workloads`]: what each thread does: pairs, bursts, threads working locally, a
//!   producer and a consumer, random orders and lifetimes at 80% occupancy;
//! - [`runner`]: warm-up and calibration, repetitions, the median, the conservation check;
//!   `threads` starts a repetition's threads together and times and counts each;
//! - [`report`]: the table (markdown), its legend and the JSON document;
//! - [`icount`]: instructions per op of the single-thread rows, under valgrind's callgrind.
//!
//! A run is a list of *cells*, one per workload, thread count and peer, in that order.
//! Single-thread workloads run once whatever `--threads` says. Every cell starts from a
//! fresh allocator, so the order of cells does not matter except through the machine's
//! caches and whoever else is using it.
//!
//! The criterion bench `benches/peers.rs` runs the same workloads through the same adapters.

pub mod icount;
pub mod peers;
pub mod report;
pub mod runner;
mod threads;
pub mod workloads;

use serde::Serialize;

use crate::machine::Machine;
use peers::Peer;
use report::{BenchReport, Cell, Outcome};
use runner::Plan;
use workloads::Workload;

/// What to run (the `zonealloc bench` flags, checked).
#[derive(Clone, Debug, Serialize)]
pub struct BenchOpts {
    /// Workloads, in table order.
    pub workloads: Vec<Workload>,
    /// Peers, in table order; zonealloc (the baseline of every ratio) first.
    pub peers: Vec<Peer>,
    /// Thread counts for the multi-threaded workloads.
    pub threads: Vec<usize>,
    /// Sizes, repetitions and seed.
    pub plan: Plan,
    /// `--quick`: tiny sizes for tests and smoke runs.
    pub quick: bool,
    /// Count instructions per op of the single-thread rows under callgrind (valgrind is on
    /// `PATH`, and neither `--quick` nor `--no-icount` was given).
    pub icount: bool,
}

impl BenchOpts {
    /// The default thread counts on a machine with `cores` cores: 1, `cores` and `2 * cores`
    /// (the last one oversubscribed on purpose, and flagged).
    pub fn default_threads(cores: usize) -> Vec<usize> {
        let mut t = vec![1, cores.max(1), 2 * cores.max(1)];
        t.dedup();
        t
    }

    /// Puts zonealloc first (adding it if missing: every ratio needs it) and removes
    /// duplicates from every list, keeping the given order otherwise.
    pub fn normalize(&mut self) {
        self.peers.retain(|p| *p != Peer::Zonealloc);
        self.peers.insert(0, Peer::Zonealloc);
        dedup_in_order(&mut self.peers);
        dedup_in_order(&mut self.workloads);
        dedup_in_order(&mut self.threads);
    }
}

fn dedup_in_order<T: PartialEq + Copy>(v: &mut Vec<T>) {
    let mut seen = Vec::with_capacity(v.len());
    v.retain(|x| {
        let new = !seen.contains(x);
        seen.push(*x);
        new
    });
}

/// The cells of a run, in table order: `(workload, threads, peer)`, with the threads each
/// workload really uses (so `producer-consumer` at 3 threads is its 2-thread row, once), and
/// the thread counts a workload cannot use, with the reason.
pub fn cells(opts: &BenchOpts) -> (Vec<(Workload, usize, Peer)>, Vec<String>) {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for &wl in &opts.workloads {
        let mut threads = Vec::new();
        for &t in &opts.threads {
            match wl.threads_used(t) {
                Ok(n) if !threads.contains(&n) => threads.push(n),
                Ok(_) => {}
                Err(why) => skipped.push(format!("{} at {t} thread(s): {why}", wl.name())),
            }
        }
        for t in threads {
            for &p in &opts.peers {
                out.push((wl, t, p));
            }
        }
    }
    (out, skipped)
}

/// Runs every cell, calling `progress(done, total, what)` before each, and builds the report.
pub fn run(
    opts: &BenchOpts,
    machine: Machine,
    command: String,
    progress: &dyn Fn(usize, usize, &str),
) -> BenchReport {
    let (todo, skipped) = cells(opts);
    let load_before = load_average();
    let cores = machine.logical_cores;
    let mut done = Vec::with_capacity(todo.len());
    for (i, &(wl, threads, peer)) in todo.iter().enumerate() {
        progress(
            i,
            todo.len(),
            &format!("{} {}t {}", wl.name(), threads, peer.name()),
        );
        let outcome = if peer.available() {
            run_cell(peer, wl, threads, &opts.plan)
        } else {
            Outcome::Skipped("not in this build (feature `mimalloc` off)".into())
        };
        let instructions_per_op =
            (opts.icount && icount::counted(wl) && matches!(outcome, Outcome::Measured { .. }))
                .then(|| {
                    progress(
                        i,
                        todo.len(),
                        &format!("{} {} under callgrind", wl.name(), peer.name()),
                    );
                    icount::instructions_per_op(peer, wl, &opts.plan)
                });
        done.push(Cell {
            workload: wl,
            peer,
            threads,
            oversubscribed: threads > cores,
            outcome,
            ratio: None,
            cpu_ratio: None,
            instructions_per_op,
        });
    }
    progress(todo.len(), todo.len(), "done");
    let mut report = BenchReport::new(command, machine, opts.clone(), done, skipped);
    report.load_average = [load_before, load_average()];
    report
}

/// The 1-minute load average (`/proc/loadavg`), to say how busy a shared machine was.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// One cell, a panic becoming its failure.
fn run_cell(peer: Peer, wl: Workload, threads: usize, plan: &Plan) -> Outcome {
    let r = std::panic::catch_unwind(|| runner::measure_peer(peer, wl, threads, plan));
    match r {
        Ok(Ok((reps, counters))) => match runner::summarize(&reps) {
            Some(summary) => Outcome::Measured {
                summary,
                reps,
                counters,
            },
            None => Outcome::Failed("no op completed".into()),
        },
        Ok(Err(e)) => Outcome::Failed(e),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown payload".into());
            Outcome::Failed(format!("panicked: {msg}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_threads_are_one_cores_and_twice_cores() {
        assert_eq!(BenchOpts::default_threads(2), [1, 2, 4]);
        assert_eq!(BenchOpts::default_threads(1), [1, 2]);
        assert_eq!(BenchOpts::default_threads(0), [1, 2]);
    }

    #[test]
    fn normalize_puts_zonealloc_first_and_dedups() {
        let mut o = BenchOpts {
            workloads: vec![Workload::Mixed, Workload::Pair0, Workload::Mixed],
            peers: vec![Peer::Mmap, Peer::Zonealloc, Peer::Mmap],
            threads: vec![2, 1, 2],
            plan: Plan {
                ops: runner::OpsPlan::Fixed(1),
                repetitions: 1,
                pool_pages: 4096,
                seed: 0,
            },
            quick: true,
            icount: false,
        };
        o.normalize();
        assert_eq!(o.peers, [Peer::Zonealloc, Peer::Mmap]);
        assert_eq!(o.workloads, [Workload::Mixed, Workload::Pair0]);
        assert_eq!(o.threads, [2, 1]);
        let (c, skipped) = cells(&o);
        // mixed at 2 and 1 threads, pair0 once: 3 rows of 2 peers.
        assert_eq!(c.len(), 6);
        assert_eq!(c[0], (Workload::Mixed, 2, Peer::Zonealloc));
        assert_eq!(c[5], (Workload::Pair0, 1, Peer::Mmap));
        assert!(skipped.is_empty());
    }

    #[test]
    fn producer_consumer_rows_use_whole_pairs() {
        let mut o = BenchOpts {
            workloads: vec![Workload::ProducerConsumer],
            peers: vec![Peer::Zonealloc],
            threads: vec![1, 2, 3, 4],
            plan: Plan {
                ops: runner::OpsPlan::Fixed(1),
                repetitions: 1,
                pool_pages: 4096,
                seed: 0,
            },
            quick: true,
            icount: false,
        };
        o.normalize();
        let (c, skipped) = cells(&o);
        let threads: Vec<usize> = c.iter().map(|c| c.1).collect();
        assert_eq!(threads, [2, 4]);
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].starts_with("producer-consumer at 1 thread(s): needs"));
    }
}
