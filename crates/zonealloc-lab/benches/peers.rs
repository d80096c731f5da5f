//! `zonealloc bench`'s workloads under criterion: the same adapters
//! (`zonealloc_lab::bench::peers`) and the same workload code
//! (`zonealloc_lab::bench::workloads`), timed by criterion instead of the lab's runner.
//!
//! One group per workload, one case per peer; a criterion iteration is one op (an
//! allocation and its free). A multi-threaded sample runs at least [`MIN_THREADED_OPS`] ops
//! per thread, so that the threads' staggered start does not weigh on it. Single-thread workloads run on one thread, the multi-threaded
//! ones (`local`, `producer-consumer`, `mixed`) on [`THREADS`]. Each case gets a fresh
//! allocator managing [`POOL_PAGES`] frames; at the end of each case the allocator must have
//! everything back.
//!
//! Run: `cargo bench -p zonealloc-lab --bench peers` (all, several minutes), or one group or
//! case with criterion's filter, e.g. `cargo bench -p zonealloc-lab --bench peers -- pair0/`.
//! The lab's own table is `cargo run --release -p zonealloc-lab -- bench`.

use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};
#[cfg(feature = "mimalloc")]
use zonealloc_lab::bench::peers::Mimalloc;
use zonealloc_lab::bench::peers::{
    BsaFrame, BsaHeap, GlobalLock, Mmap, PageSource, Peer, PosixMemalign, ZoneallocBuddy,
    ZoneallocPcp,
};
use zonealloc_lab::bench::workloads::Workload;

/// Frames each frame allocator manages (256 MiB of 4 KiB pages), as `zonealloc bench`.
const POOL_PAGES: u64 = 1 << 16;
/// Threads of the multi-threaded workloads.
const THREADS: usize = 2;
/// Fewest ops a multi-threaded sample runs (the time of `iters` ops is then scaled from it):
/// the threads leave the start barrier some microseconds apart, which must not be a large
/// part of the sample.
const MIN_THREADED_OPS: u64 = 10_000;

/// One case: `wl` on `src`, criterion choosing the op count.
fn case<S: PageSource>(g: &mut BenchmarkGroup<'_, WallTime>, peer: Peer, wl: Workload, src: S) {
    let threads = wl.threads_used(THREADS).expect("THREADS >= 2");
    g.bench_function(peer.name(), |b| {
        b.iter_custom(|iters| {
            let ops = if wl.multi_threaded() {
                iters.max(MIN_THREADED_OPS)
            } else {
                iters
            };
            let rep = wl
                .run(&src, threads, ops, POOL_PAGES, iters)
                .unwrap_or_else(|e| panic!("{} on {}: {e}", wl.name(), peer.name()));
            // Bursts round the op count up, threaded samples run at least
            // MIN_THREADED_OPS: report the time of `iters` ops.
            let per_op = rep.wall_ns as f64 / rep.ops.max(1) as f64;
            Duration::from_nanos((per_op * iters as f64) as u64)
        })
    });
    if let Err(e) = src.verify_empty() {
        panic!("{} on {}: {e}", wl.name(), peer.name());
    }
}

fn workload(c: &mut Criterion, wl: Workload) {
    let mut g = c.benchmark_group(wl.name());
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(1));
    g.sample_size(20);
    let cpus = wl.threads_used(THREADS).expect("THREADS >= 2");
    for peer in Peer::ALL {
        match peer {
            Peer::Zonealloc => case(
                &mut g,
                peer,
                wl,
                ZoneallocPcp::new(POOL_PAGES, cpus).unwrap(),
            ),
            Peer::ZoneallocBuddy => {
                case(&mut g, peer, wl, ZoneallocBuddy::new(POOL_PAGES).unwrap())
            }
            Peer::GlobalLock => case(&mut g, peer, wl, GlobalLock::new(POOL_PAGES).unwrap()),
            Peer::BsaFrame => case(&mut g, peer, wl, BsaFrame::new(POOL_PAGES).unwrap()),
            Peer::BsaHeap => case(&mut g, peer, wl, BsaHeap::new(POOL_PAGES).unwrap()),
            Peer::PosixMemalign => case(&mut g, peer, wl, PosixMemalign),
            #[cfg(feature = "mimalloc")]
            Peer::Mimalloc => case(&mut g, peer, wl, Mimalloc),
            #[cfg(not(feature = "mimalloc"))]
            Peer::Mimalloc => {}
            Peer::Mmap => case(&mut g, peer, wl, Mmap),
        }
    }
    g.finish();
}

// `criterion_main!` without `criterion_group!`, whose generated `pub fn` has no doc comment
// and so trips the workspace's `missing_docs` lint (as in the core's `benches/zone.rs`).
fn main() {
    let mut c = Criterion::default().configure_from_args();
    for wl in Workload::ALL {
        workload(&mut c, wl);
    }
    c.final_summary();
}
