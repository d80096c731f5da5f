//! A buffer pool: receive threads take page buffers from a `PageArena`, fill them with
//! "packets" and pass them over channels to worker threads, which check and drop them, so
//! every buffer is freed on another thread than the one that allocated it. The per-CPU lists
//! take the frees on the freeing CPU and the buddy allocator rebalances through refills and
//! drains, as the kernel's do for network buffers.
//!
//! Run: `cargo run --release -p zonealloc --features arena --example buffer_pool` (add
//! `-- --quick` for a twentieth of the packets, as CI does in a debug build).

use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Instant;

use zonealloc::arena::{ArenaConfig, PageArena, PageBlock};
use zonealloc::{MigrateType, Order};

const RX_THREADS: usize = 2;
const WORKERS: usize = 2;
const PACKETS_PER_RX: u64 = 200_000;
const QUICK_PACKETS_PER_RX: u64 = 10_000;

/// A packet: sequence number, length, then a payload derived from both, in one buffer.
fn fill(b: &mut PageBlock<'_>, seq: u64) {
    let buf = b.as_mut_slice();
    let len = 64 + (seq as usize * 97) % (buf.len() - 16 - 64);
    buf[..8].copy_from_slice(&seq.to_le_bytes());
    buf[8..16].copy_from_slice(&(len as u64).to_le_bytes());
    for (i, x) in buf[16..16 + len].iter_mut().enumerate() {
        *x = (seq as u8).wrapping_add(i as u8);
    }
}

fn valid(b: &PageBlock<'_>) -> bool {
    let buf = b.as_slice();
    let seq = u64::from_le_bytes(buf[..8].try_into().expect("8 bytes"));
    let len = u64::from_le_bytes(buf[8..16].try_into().expect("8 bytes")) as usize;
    len <= buf.len() - 16
        && buf[16..16 + len]
            .iter()
            .enumerate()
            .all(|(i, &x)| x == (seq as u8).wrapping_add(i as u8))
}

/// What went through the pool.
#[derive(Default)]
struct Tally {
    /// Packets a worker found intact.
    checked: u64,
    /// Packets a worker found corrupted.
    bad: u64,
    /// Packets a receive thread dropped for want of a buffer.
    dropped_full: u64,
}

/// A worker: checks each packet it is handed, then drops (frees) its buffer on its own CPU.
fn worker(rx: mpsc::Receiver<PageBlock<'_>>) -> (u64, u64) {
    let (mut ok, mut bad) = (0u64, 0u64);
    for b in rx {
        if valid(&b) {
            ok += 1;
        } else {
            bad += 1;
        }
        // `b` is dropped here: freed on the worker's CPU.
    }
    (ok, bad)
}

/// Receive thread `t`: `packets` buffers taken from `arena`, filled and handed round the
/// workers; the packets that found no buffer.
fn receive<'a>(
    arena: &'a PageArena,
    senders: &[mpsc::SyncSender<PageBlock<'a>>],
    t: usize,
    packets: u64,
) -> u64 {
    let mut no_buffer = 0u64;
    for seq in 0..packets {
        // Most packets fit a page; jumbo frames take an order-1 block.
        let order = Order::new(u8::from(seq % 8 == 0)).expect("order 0 or 1");
        match arena.alloc(order, MigrateType::Unmovable) {
            Ok(mut b) => {
                fill(&mut b, seq);
                let w = (seq as usize + t) % senders.len();
                if senders[w].send(b).is_err() {
                    break;
                }
            }
            Err(_) => no_buffer += 1,
        }
    }
    no_buffer
}

/// [`RX_THREADS`] receive threads and [`WORKERS`] workers over `arena`, `packets` each.
fn run(arena: &PageArena, packets: u64) -> Tally {
    let mut tally = Tally::default();
    std::thread::scope(|s| {
        let mut senders = Vec::new();
        let mut workers = Vec::new();
        for _ in 0..WORKERS {
            // Bounded: a slow worker pushes back on the receive threads.
            let (tx, rx) = mpsc::sync_channel::<PageBlock<'_>>(256);
            senders.push(tx);
            workers.push(s.spawn(move || worker(rx)));
        }
        let rx_threads: Vec<_> = (0..RX_THREADS)
            .map(|t| {
                let senders = senders.clone();
                s.spawn(move || receive(arena, &senders, t, packets))
            })
            .collect();
        drop(senders);
        for h in rx_threads {
            tally.dropped_full += h.join().expect("rx thread");
        }
        for h in workers {
            let (ok, b) = h.join().expect("worker");
            tally.checked += ok;
            tally.bad += b;
        }
    });
    tally
}

fn main() -> ExitCode {
    // 64 MiB of buffers, zeroed on allocation so no packet sees the previous one's bytes.
    let arena = match PageArena::new(ArenaConfig::with_bytes(64 << 20).zeroed_on_alloc()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("buffer_pool: {e}");
            return ExitCode::FAILURE;
        }
    };
    let packets = if std::env::args().any(|a| a == "--quick") {
        QUICK_PACKETS_PER_RX
    } else {
        PACKETS_PER_RX
    };
    let start = Instant::now();
    let Tally {
        checked,
        bad,
        dropped_full,
    } = run(&arena, packets);
    let secs = start.elapsed().as_secs_f64();
    arena.zone().drain_all();
    let s = arena.zone().stats();
    let p = arena.zone().pcp_stats();
    println!(
        "{checked} packets through {RX_THREADS} rx threads and {WORKERS} workers in {secs:.2} s \
         ({:.0} per second); {dropped_full} found no buffer, {bad} corrupted",
        checked as f64 / secs
    );
    println!(
        "zone: {} allocations, {} frees, {} splits, {} merges; per-CPU lists: {} hits, {} \
         refills ({} pages), {} pages drained at high, {} lock misses",
        s.allocs.iter().sum::<u64>(),
        s.frees.iter().sum::<u64>(),
        s.splits,
        s.merges,
        p.alloc_hits,
        p.alloc_misses,
        p.refill_pages,
        p.drain_high_pages,
        p.trylock_failures,
    );
    let all_back = arena.zone().free_pages() == arena.zone().managed_pages();
    match arena.check() {
        Ok(_) if bad == 0 && all_back => {
            println!("check: ok, every buffer back in the pool");
            ExitCode::SUCCESS
        }
        Ok(_) => {
            eprintln!("check: {bad} corrupted packets, all back: {all_back}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("check failed: {e}");
            ExitCode::FAILURE
        }
    }
}
