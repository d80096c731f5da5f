//! The simulated clock behind seed 004's worst drain: the workers' requests (the same sizes
//! the timed run draws, from the same seeds) laid out on one clock counted in steps, and a
//! `drain_all` every [`INTERVAL`] steps, so that a drain's length is a count, the same on
//! every machine.
//!
//! A step is one unit of a worker's work: one allocator call (an allocation or a free of one
//! page) or one page of processing (the request's checksum, no allocator call). A request of
//! `n` pages takes `n` allocation steps, `n` processing steps and `n` free steps, as in the
//! timed run. A drain waits as each scheme makes it wait:
//! - owner drain (`__drain_all_pages` queueing `drain_local_pages` on every CPU with pages,
//!   then `flush_work`): each owner serves the request at its next allocator call, so an
//!   owner in the middle of processing makes the drainer wait for the rest of it; serving
//!   takes the owner one step (its drain), which delays the rest of its work by that step.
//!   The drain ends when the last owner has served: its length is the longest of those waits.
//! - remote drain (`drain_pages_zone` under each CPU's `pcp->lock`): the drainer takes each
//!   CPU's lock in turn and drains it itself, one step per CPU; an allocator call holds the
//!   lock only within its own step, so the drainer never waits on an owner's processing.
//!
//! Every worker always has pages on its lists here (it frees each request's pages to them),
//! so every drain asks every owner, as the timed run's probe counts.

use super::run::request_pages;
use crate::experiments::SplitMix;
use zonealloc::DrainMode;

/// Steps between the starts of two drains (10 ms at a step of about 1 µs).
pub(super) const INTERVAL: u64 = 10_000;

/// One worker's clock: where its current request's phases end.
struct Worker {
    rng: SplitMix,
    /// The step at which the current request started, and its pages.
    start: u64,
    pages: u64,
}

impl Worker {
    fn new(seed: u64, w: usize) -> Worker {
        let mut rng = SplitMix::new(seed ^ ((w as u64) << 32));
        let pages = request_pages(&mut rng);
        Worker {
            rng,
            start: 0,
            pages,
        }
    }

    /// Moves on to the request in progress at step `t`.
    fn advance(&mut self, t: u64) {
        while self.start + 3 * self.pages <= t {
            self.start += 3 * self.pages;
            self.pages = request_pages(&mut self.rng);
        }
    }

    /// Steps from `t` to this worker's next allocator call: none while it allocates or frees,
    /// the rest of its processing while it processes.
    fn steps_to_next_call(&mut self, t: u64) -> u64 {
        self.advance(t);
        let processing = self.start + self.pages..self.start + 2 * self.pages;
        if processing.contains(&t) {
            processing.end - t
        } else {
            0
        }
    }

    /// Delays everything after step `t` by `steps` (the worker served a drain).
    fn delay(&mut self, t: u64, steps: u64) {
        self.advance(t);
        self.start += steps;
    }
}

/// The lengths, in steps, of `drains` drains under `mode` with `workers` workers on `seed`,
/// each CPU with a pageset in `zones` populated zones (one per node).
pub(super) fn drain_steps(
    mode: DrainMode,
    workers: usize,
    zones: u64,
    drains: usize,
    seed: u64,
) -> Vec<u64> {
    let mut ws: Vec<Worker> = (0..workers).map(|w| Worker::new(seed, w)).collect();
    (1..=drains as u64)
        .map(|k| {
            let t = k * INTERVAL;
            match mode {
                DrainMode::Owner => {
                    let mut longest = 0;
                    for w in &mut ws {
                        // Served at its next call, which its drain then takes one step per
                        // zone of (`drain_local_pages` -> `drain_pages`: every populated zone).
                        let wait = w.steps_to_next_call(t) + zones;
                        w.delay(t + wait - zones, zones);
                        longest = longest.max(wait);
                    }
                    longest
                }
                // One step per CPU and zone, whatever its owner is doing (`drain_pages`
                // takes each zone's `pcp->lock` in turn).
                DrainMode::Remote => workers as u64 * zones,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_drain_waits_for_the_processing_in_progress() {
        let mut w = Worker {
            rng: SplitMix::new(1),
            start: 100,
            pages: 10,
        };
        // Allocating (100..110): the next step is a call.
        assert_eq!(w.steps_to_next_call(105), 0);
        // Processing (110..120): the rest of it.
        assert_eq!(w.steps_to_next_call(110), 10);
        assert_eq!(w.steps_to_next_call(119), 1);
        // Freeing (120..130).
        assert_eq!(w.steps_to_next_call(125), 0);
        w.delay(125, 1);
        assert_eq!(w.start, 101);
    }

    #[test]
    fn remote_drains_take_one_step_per_cpu_and_owner_drains_vary_with_the_requests() {
        let remote = drain_steps(DrainMode::Remote, 2, 1, 50, 7);
        assert!(remote.iter().all(|&s| s == 2));
        let owner = drain_steps(DrainMode::Owner, 2, 1, 50, 7);
        assert_eq!(owner, drain_steps(DrainMode::Owner, 2, 1, 50, 7));
        assert!(owner.iter().all(|&s| s >= 1));
        // Some drain found an owner processing a request of more than one page.
        assert!(owner.iter().any(|&s| s > 2), "{owner:?}");
        assert_ne!(owner, drain_steps(DrainMode::Owner, 2, 1, 50, 8));
    }

    /// Two nodes: every CPU has a pageset in both nodes' zones. A remote drain takes each of
    /// them in turn, twice the steps of one node; an owner drains both in its one work item,
    /// so its drain waits for the same owners as on one node, plus a step per zone.
    #[test]
    fn on_two_nodes_a_remote_drain_takes_every_pageset_and_an_owner_both_zones() {
        let remote = drain_steps(DrainMode::Remote, 2, 2, 50, 7);
        assert!(remote.iter().all(|&s| s == 4));
        let two = drain_steps(DrainMode::Owner, 2, 2, 50, 7);
        assert!(two.iter().all(|&s| s >= 2), "{two:?}");
        assert!(two.iter().any(|&s| s > 4), "{two:?}");
    }
}
