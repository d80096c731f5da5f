//! The workloads of `zonealloc bench`: what each thread does, between a start gate (a
//! barrier) and its stop watch.
//!
//! An *op* is one allocation together with its free, whoever frees it and whenever: a pair
//! is one op, a burst of 64 allocations and 64 frees is 64 ops, and in `mixed` an op is one
//! allocation plus the free that makes room for it. Only what happens between a thread's
//! start gate and its stop watch is timed: filling `mixed` to its occupancy and freeing
//! everything at the end are not. How threads start, are timed and counted is in
//! the private `bench::threads` module.

use std::sync::mpsc;

use clap::ValueEnum;
use serde::Serialize;

use super::peers::{PageSource, PageWorker, Token};
pub use super::threads::Rep;
use super::threads::{
    combine, join_all, on_threads, BreakOnPanic, Counted, Stamp, StartGate, ThreadOut,
};
use crate::gate::{SpawnError, Spawner};
use crate::rng::SplitMix;

/// Allocations per burst (`burst64`, `local`) and per batch handed from a producer to its
/// consumer (`producer-consumer`).
pub const BURST: usize = 64;

/// Share of the pool that `mixed` keeps allocated, in percent.
pub const MIXED_OCCUPANCY_PCT: u64 = 80;

/// Batches a producer may have in flight before it waits for its consumer.
const CHANNEL_BATCHES: usize = 4;

/// The workloads, as `--workload` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// One thread: allocate an order-0 page and free it, repeatedly.
    Pair0,
    /// One thread: 64 order-0 allocations, then their 64 frees (in allocation order).
    Burst64,
    /// One thread: order-1 (8 KiB) alloc+free pairs.
    Pair1,
    /// One thread: order-3 (32 KiB) alloc+free pairs.
    Pair3,
    /// One thread: order-9 (2 MiB, a THP) alloc+free pairs.
    Pair9,
    /// N threads, each doing `burst64` on its own pages at the same time.
    Local,
    /// N/2 producer threads allocating order-0 pages in batches of 64, each batch freed by
    /// its consumer thread (a page freed on another CPU than the one it came from).
    ProducerConsumer,
    /// N threads, each keeping its share of 80% of the pool allocated in blocks of random
    /// order (0 60%, 1 15%, 2 10%, 3 14.5%, 9 0.5%) and freeing a random live block (random
    /// lifetimes) to make room for each new one.
    Mixed,
}

impl Workload {
    /// Every workload, in table order.
    pub const ALL: [Workload; 8] = [
        Workload::Pair0,
        Workload::Burst64,
        Workload::Pair1,
        Workload::Pair3,
        Workload::Pair9,
        Workload::Local,
        Workload::ProducerConsumer,
        Workload::Mixed,
    ];

    /// The `--workload` name.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Pair0 => "pair0",
            Workload::Burst64 => "burst64",
            Workload::Pair1 => "pair1",
            Workload::Pair3 => "pair3",
            Workload::Pair9 => "pair9",
            Workload::Local => "local",
            Workload::ProducerConsumer => "producer-consumer",
            Workload::Mixed => "mixed",
        }
    }

    /// Whether `--threads` applies; the others always run on one thread.
    pub fn multi_threaded(self) -> bool {
        matches!(
            self,
            Workload::Local | Workload::ProducerConsumer | Workload::Mixed
        )
    }

    /// The threads a run asked for `requested` threads uses, or why it cannot run.
    pub fn threads_used(self, requested: usize) -> Result<usize, String> {
        match self {
            _ if !self.multi_threaded() => Ok(1),
            Workload::ProducerConsumer if requested < 2 => {
                Err("needs at least 2 threads (a producer and a consumer)".into())
            }
            Workload::ProducerConsumer => Ok(requested / 2 * 2),
            _ => Ok(requested.max(1)),
        }
    }

    /// Ops are counted in these units (a burst is all or nothing).
    pub fn ops_granule(self) -> u64 {
        match self {
            Workload::Burst64 | Workload::Local | Workload::ProducerConsumer => BURST as u64,
            _ => 1,
        }
    }

    /// Runs `ops_per_thread` ops (rounded up to [`Workload::ops_granule`]) on each of
    /// `threads` threads (as [`Workload::threads_used`] gives; producers count the ops of a
    /// producer-consumer pair), `pool_pages` being the size of the frame allocators' pool.
    pub fn run<S: PageSource>(
        self,
        src: &S,
        threads: usize,
        ops_per_thread: u64,
        pool_pages: u64,
        seed: u64,
    ) -> Result<Rep, String> {
        let sp = Spawner::new("bench");
        self.run_with(&sp, src, threads, ops_per_thread, pool_pages, seed)
    }

    /// [`Workload::run`] with its threads started by `sp`: a thread it cannot start is an
    /// error, once the threads started are released and joined.
    pub fn run_with<S: PageSource>(
        self,
        sp: &Spawner,
        src: &S,
        threads: usize,
        ops_per_thread: u64,
        pool_pages: u64,
        seed: u64,
    ) -> Result<Rep, String> {
        let g = self.ops_granule();
        let ops = ops_per_thread.max(1).div_ceil(g) * g;
        match self {
            Workload::Pair0 => on_threads(sp, 1, |i, g| pairs(src.worker(i), g, 0, ops)),
            Workload::Pair1 => on_threads(sp, 1, |i, g| pairs(src.worker(i), g, 1, ops)),
            Workload::Pair3 => on_threads(sp, 1, |i, g| pairs(src.worker(i), g, 3, ops)),
            Workload::Pair9 => on_threads(sp, 1, |i, g| pairs(src.worker(i), g, 9, ops)),
            Workload::Burst64 => on_threads(sp, 1, |i, g| bursts(src.worker(i), g, ops)),
            Workload::Local => on_threads(sp, threads, |i, g| bursts(src.worker(i), g, ops)),
            Workload::ProducerConsumer => producer_consumer(sp, src, threads, ops),
            Workload::Mixed => {
                let target = pool_pages * MIXED_OCCUPANCY_PCT / 100 / threads as u64;
                on_threads(sp, threads, |i, g| {
                    let rng = SplitMix::new(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                    mixed(src.worker(i), g, ops, target, rng)
                })
            }
        }
    }
}

fn pairs<W: PageWorker>(w: W, gate: &StartGate, order: u8, ops: u64) -> ThreadOut {
    let mut w = Counted::new(w);
    gate.wait();
    let start = Stamp::now();
    for _ in 0..ops {
        if let Some(t) = w.alloc(order) {
            w.free(t, order);
        }
    }
    let stop = Stamp::now();
    ThreadOut::new(&w, start, stop)
}

fn bursts<W: PageWorker>(w: W, gate: &StartGate, ops: u64) -> ThreadOut {
    let mut w = Counted::new(w);
    let mut held = [0 as Token; BURST];
    gate.wait();
    let start = Stamp::now();
    for _ in 0..ops / BURST as u64 {
        let mut n = 0;
        for _ in 0..BURST {
            if let Some(t) = w.alloc(0) {
                held[n] = t;
                n += 1;
            }
        }
        for &t in &held[..n] {
            w.free(t, 0);
        }
    }
    let stop = Stamp::now();
    ThreadOut::new(&w, start, stop)
}

/// Threads `2i` (producer) and `2i + 1` (consumer) form pair `i`. A producer allocates
/// batches of [`BURST`] order-0 pages and sends each to its consumer, which frees them and
/// sends the emptied batch back for reuse (so the channel allocates nothing while timed).
fn producer_consumer<S: PageSource>(
    spawner: &Spawner,
    src: &S,
    threads: usize,
    ops: u64,
) -> Result<Rep, String> {
    let pairs = threads / 2;
    if pairs == 0 {
        return Err("producer-consumer needs at least 2 threads".into());
    }
    let gate = StartGate::new(2 * pairs);
    let outs: Vec<ThreadOut> = std::thread::scope(|s| {
        let gate = &gate;
        // The consumer's ends of the pair whose producer was made last.
        let mut consumer = None;
        let handles = spawner.spawn_each(s, 2 * pairs, gate.gate(), |i| {
            let ends = match consumer.take() {
                Some((full_rx, empty_tx)) => Ends::Consumer(full_rx, empty_tx),
                None => {
                    let (full_tx, full_rx) = mpsc::sync_channel::<Vec<Token>>(CHANNEL_BATCHES);
                    let (empty_tx, empty_rx) = mpsc::channel::<Vec<Token>>();
                    for _ in 0..=CHANNEL_BATCHES {
                        // Cannot fail: `empty_rx` is alive.
                        let _ = empty_tx.send(Vec::with_capacity(BURST));
                    }
                    consumer = Some((full_rx, empty_tx));
                    Ends::Producer(full_tx, empty_rx)
                }
            };
            move || {
                let _guard = BreakOnPanic(gate);
                let mut w = Counted::new(src.worker(i));
                gate.wait();
                let start = Stamp::now();
                ends.run(&mut w, ops);
                ThreadOut::new(&w, start, Stamp::now())
            }
        })?;
        Ok::<_, SpawnError>(join_all(handles))
    })?;
    combine(&outs)
}

/// A producer-consumer thread's ends of its pair's two channels: full batches go from the
/// producer to the consumer, emptied ones come back.
enum Ends {
    Producer(mpsc::SyncSender<Vec<Token>>, mpsc::Receiver<Vec<Token>>),
    Consumer(mpsc::Receiver<Vec<Token>>, mpsc::Sender<Vec<Token>>),
}

impl Ends {
    /// The timed part: `ops` allocations in batches (a producer), or freeing every batch
    /// until the producer is done (a consumer).
    fn run<W: PageWorker>(self, w: &mut Counted<W>, ops: u64) {
        match self {
            Ends::Producer(full_tx, empty_rx) => {
                for _ in 0..ops / BURST as u64 {
                    let Ok(mut batch) = empty_rx.recv() else {
                        break;
                    };
                    for _ in 0..BURST {
                        if let Some(t) = w.alloc(0) {
                            batch.push(t);
                        }
                    }
                    if full_tx.send(batch).is_err() {
                        break;
                    }
                }
            }
            Ends::Consumer(full_rx, empty_tx) => {
                while let Ok(mut batch) = full_rx.recv() {
                    for t in batch.drain(..) {
                        w.free(t, 0);
                    }
                    // The producer may be done and gone; then the batch is simply dropped.
                    let _ = empty_tx.send(batch);
                }
            }
        }
    }
}

/// The order of a `mixed` allocation: 0 60%, 1 15%, 2 10%, 3 14.5%, 9 0.5%.
fn mixed_order(rng: &mut SplitMix) -> u8 {
    match rng.below(1000) {
        0..=599 => 0,
        600..=749 => 1,
        750..=849 => 2,
        850..=994 => 3,
        _ => 9,
    }
}

/// Live blocks of one `mixed` thread.
struct Live {
    blocks: Vec<(Token, u8)>,
    pages: u64,
}

impl Live {
    fn free_random<W: PageWorker>(&mut self, w: &mut Counted<W>, rng: &mut SplitMix) -> bool {
        if self.blocks.is_empty() {
            return false;
        }
        let i = rng.below(self.blocks.len() as u64) as usize;
        let (t, o) = self.blocks.swap_remove(i);
        w.free(t, o);
        self.pages -= 1 << o;
        true
    }
}

fn mixed<W: PageWorker>(
    w: W,
    gate: &StartGate,
    ops: u64,
    target_pages: u64,
    mut rng: SplitMix,
) -> ThreadOut {
    let mut w = Counted::new(w);
    let mut live = Live {
        blocks: Vec::with_capacity(target_pages as usize + 1),
        pages: 0,
    };
    // Untimed: fill to the target occupancy (giving up on an allocator that runs dry).
    let mut dry = 0;
    while live.pages < target_pages && dry < 64 {
        let o = mixed_order(&mut rng);
        if live.pages + (1 << o) > target_pages {
            continue;
        }
        match w.alloc(o) {
            Some(t) => {
                live.blocks.push((t, o));
                live.pages += 1 << o;
            }
            None => dry += 1,
        }
    }
    w.reset_counts();
    gate.wait();
    let start = Stamp::now();
    for _ in 0..ops {
        let o = mixed_order(&mut rng);
        while live.pages + (1 << o) > target_pages && live.free_random(&mut w, &mut rng) {}
        match w.alloc(o) {
            Some(t) => {
                live.blocks.push((t, o));
                live.pages += 1 << o;
            }
            // No block of that order (fragmentation, or pages cached on other CPUs' lists):
            // free one more, as reclaim would, and go on.
            None => {
                live.free_random(&mut w, &mut rng);
            }
        }
    }
    let stop = Stamp::now();
    let mut out = ThreadOut::new(&w, start, stop);
    for (t, o) in live.blocks.drain(..) {
        w.free(t, o);
    }
    out.live_blocks = w.live_blocks;
    out
}

#[cfg(test)]
mod tests {
    use super::super::peers::{PosixMemalign, ZoneallocPcp};
    use super::*;

    #[test]
    fn every_workload_conserves_on_zonealloc() {
        for wl in Workload::ALL {
            let threads = wl.threads_used(2).unwrap();
            let src = ZoneallocPcp::new(4096, threads).unwrap();
            let rep = wl.run(&src, threads, 100, 4096, 7).unwrap();
            assert_eq!(rep.threads, threads, "{wl:?}");
            assert!(rep.ops >= 100, "{wl:?}: {rep:?}");
            assert_eq!(rep.failures, 0, "{wl:?}");
            src.verify_empty().unwrap();
        }
    }

    /// A source whose thread 1 cannot get a worker.
    struct NoSecondWorker(PosixMemalign);

    impl PageSource for NoSecondWorker {
        type Worker<'a> = PosixMemalign;

        fn worker(&self, thread: usize) -> PosixMemalign {
            assert!(thread != 1, "no worker for thread {thread}");
            PosixMemalign
        }

        fn verify_empty(&self) -> Result<(), String> {
            self.0.verify_empty()
        }
    }

    #[test]
    fn a_thread_failing_before_the_start_fails_the_run_instead_of_hanging_it() {
        for wl in [Workload::Local, Workload::ProducerConsumer, Workload::Mixed] {
            let r =
                std::panic::catch_unwind(|| wl.run(&NoSecondWorker(PosixMemalign), 2, 64, 4096, 1));
            let payload = r.expect_err("the run fails");
            let msg = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .unwrap_or("");
            assert!(msg.contains("no worker for thread 1"), "{wl:?}: {msg:?}");
        }
    }

    #[test]
    fn a_thread_that_cannot_be_started_fails_the_run_instead_of_hanging_it() {
        // Threads 0..k start and wait at the gate; thread k is refused. Before, `Scope::spawn`
        // panicked there and the scope waited for ever for the threads at the gate.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for wl in [Workload::Local, Workload::ProducerConsumer, Workload::Mixed] {
                for k in [0, 1, 3] {
                    let sp = Spawner::new("test").with_limit(k);
                    let r = wl.run_with(&sp, &PosixMemalign, 4, 64, 4096, 1);
                    let _ = tx.send((wl, k, r));
                }
            }
        });
        for _ in 0..9 {
            let (wl, k, r) = rx
                .recv_timeout(std::time::Duration::from_secs(60))
                .expect("the run returns: it does not hang");
            let e = r.expect_err("the run fails");
            let want = format!("could not start thread {} of 4", k + 1);
            assert!(e.starts_with(&want), "{wl:?} {k}: {e}");
        }
        // The same workloads run whole when every thread starts.
        let sp = Spawner::new("test").with_limit(4);
        let r = Workload::ProducerConsumer.run_with(&sp, &PosixMemalign, 4, 64, 4096, 1);
        assert_eq!(r.unwrap().threads, 4);
    }

    #[test]
    fn producer_consumer_needs_two_threads() {
        assert!(Workload::ProducerConsumer.threads_used(1).is_err());
        assert_eq!(Workload::ProducerConsumer.threads_used(3), Ok(2));
        assert_eq!(Workload::Pair0.threads_used(4), Ok(1));
    }

    #[test]
    fn mixed_orders_follow_their_weights() {
        let mut rng = SplitMix::new(1);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[mixed_order(&mut rng) as usize] += 1;
        }
        assert!((59_000..61_000).contains(&counts[0]), "{counts:?}");
        assert!((300..700).contains(&counts[9]), "{counts:?}");
        assert_eq!(counts[4..9].iter().sum::<u32>(), 0);
    }
}
