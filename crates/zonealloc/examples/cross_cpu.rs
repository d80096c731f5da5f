//! Cross-CPU allocation and free, the netperf-like pattern of seed 000 (`free_high`): one thread
//! allocates on CPU 0, another frees on CPU 1, and the blocks travel between them through a
//! bounded channel. CPU 0's lists only ever refill from the buddy (`rmqueue_bulk`); CPU 1's only
//! ever fill up and drain back to it (`free_pcppages_bulk`), so every block crosses the zone
//! lock twice, in batches.
//!
//! For order 0 and order 3, with [`FreeHigh::Current`] and [`FreeHigh::Off`] (and, as a
//! baseline, without per-CPU lists), the table shows:
//! - `Mblk/s`: blocks allocated and freed per second (median of the repetitions);
//! - `lock/1k`: zone-lock acquisitions per 1000 blocks (the buddy-only baseline takes 2000);
//! - `refill`, `drain_high`, `drain_fh`: pages moved by refills, by `count >= high` drains and
//!   by `free_high` drains ([`PcpStats`]);
//! - `left`: pages still on the lists when the threads finish (drained by `drain_all`);
//! - `distinct` and `top`: how many different blocks the allocating CPU was handed, and how
//!   often the most reused one came back (seed 000's "page reuse" view: fewer, hotter blocks
//!   mean the freed blocks return to the allocator while still cache-warm);
//! - `check`: after `drain_all`, no block was lost (`free_pages == managed_pages`, every block
//!   sent was received and freed) and [`Zone::check`] passes.
//!
//! Both threads use a [`CpuHandle`] in the default [`PcpLocking::Spinlock`] mode. A first line
//! times the channel alone (the same two threads passing frame numbers, no allocator): with one
//! block per message the channel's hand-off is a large share of each block's cost, so compare
//! `Mblk/s` against it, and trust the counters, which do not depend on timing, more than the
//! rates on a loaded machine.
//!
//! Run: `cargo run --release -p zonealloc --example cross_cpu [blocks] [repetitions]`
//! (defaults: 2,000,000 blocks, 3 repetitions).

use std::sync::mpsc::sync_channel;
use std::time::Instant;

use zonealloc::{
    CpuId, FreeHigh, MigrateType, Order, PcpConfig, PcpLocking, PcpStats, Pfn, Zone, ZoneConfig,
    ZoneType,
};

/// Frames in the zone (1 GiB of 4 KiB pages).
const ZONE_FRAMES: u64 = 1 << 18;
/// Blocks in flight between the threads at most.
const CHANNEL_BOUND: usize = 1024;
const ALLOC_CPU: CpuId = CpuId(0);
const FREE_CPU: CpuId = CpuId(1);
const MT: MigrateType = MigrateType::Movable;

/// One row of the table.
#[derive(Clone, Copy)]
enum Setup {
    Pcp(FreeHigh),
    BuddyOnly,
}

impl Setup {
    fn name(self) -> &'static str {
        match self {
            Setup::Pcp(FreeHigh::Current) => "free_high=Current",
            Setup::Pcp(FreeHigh::Original) => "free_high=Original",
            Setup::Pcp(FreeHigh::Off) => "free_high=Off",
            Setup::Pcp(FreeHigh::Batch) => "free_high=Batch",
            Setup::Pcp(FreeHigh::FreeFactor) => "free_high=FreeFactor",
            Setup::BuddyOnly => "buddy only",
        }
    }

    fn config(self) -> ZoneConfig {
        let base = ZoneConfig::without_watermarks();
        match self {
            Setup::Pcp(free_high) => base.with_pcp(
                PcpConfig::new()
                    .with_cpus(2)
                    .with_free_high(free_high)
                    .with_locking(PcpLocking::Spinlock),
            ),
            Setup::BuddyOnly => base.with_cpus(2).without_pcp(),
        }
    }
}

/// What one run measured.
struct Run {
    seconds: f64,
    blocks: u64,
    lock_acquisitions: u64,
    pcp: PcpStats,
    left_on_pcp: u64,
    distinct: u64,
    top_reuse: u32,
}

fn run(setup: Setup, order: Order, blocks: u64) -> Result<Run, String> {
    let zone = Zone::new(ZoneType::Normal, Pfn(0), Pfn(ZONE_FRAMES), setup.config())
        .map_err(|e| format!("zone: {e}"))?;
    zone.add_free_range(Pfn(0), Pfn(ZONE_FRAMES))
        .map_err(|e| format!("add_free_range: {e}"))?;
    let locks_before = zone.stats().zone_lock_acquisitions;

    let (tx, rx) = sync_channel::<Pfn>(CHANNEL_BOUND);
    let start = Instant::now();
    let (reuse, freed) = std::thread::scope(|s| {
        let allocator = s.spawn(|| -> Result<Vec<u32>, String> {
            let mut h = zone.cpu_handle(ALLOC_CPU).map_err(|e| e.to_string())?;
            let mut reuse = vec![0u32; (ZONE_FRAMES >> order.get()) as usize];
            for _ in 0..blocks {
                let pfn = h.alloc(order, MT).map_err(|e| format!("alloc: {e}"))?;
                reuse[(pfn.get() >> order.get()) as usize] += 1;
                tx.send(pfn).map_err(|e| e.to_string())?;
            }
            drop(tx); // ends the freeing thread's loop
            Ok(reuse)
        });
        let freer = s.spawn(|| -> Result<u64, String> {
            let mut h = zone.cpu_handle(FREE_CPU).map_err(|e| e.to_string())?;
            let mut freed = 0u64;
            for pfn in rx {
                h.free(pfn, order).map_err(|e| format!("free {pfn}: {e}"))?;
                freed += 1;
            }
            Ok(freed)
        });
        let reuse = allocator.join().map_err(|_| "allocator panicked")?;
        let freed = freer.join().map_err(|_| "freer panicked")?;
        Ok::<_, String>((reuse?, freed?))
    })?;
    let seconds = start.elapsed().as_secs_f64();

    // Counters of the run itself, before the final drain adds its own.
    let lock_acquisitions = zone.stats().zone_lock_acquisitions - locks_before;
    let pcp = zone.pcp_stats();
    let left_on_pcp: u64 = (0..zone.cpus())
        .map(|c| zone.pcp_info(CpuId(c)).count.max(0) as u64)
        .sum();

    if freed != blocks {
        return Err(format!("{blocks} blocks allocated but {freed} freed"));
    }
    zone.drain_all();
    let (free, managed) = (zone.free_pages(), zone.managed_pages());
    if free != managed {
        return Err(format!("lost pages: {free} free of {managed} managed"));
    }
    zone.check().map_err(|e| format!("check: {e}"))?;

    Ok(Run {
        seconds,
        blocks,
        lock_acquisitions,
        pcp,
        left_on_pcp,
        distinct: reuse.iter().filter(|&&n| n > 0).count() as u64,
        top_reuse: reuse.iter().copied().max().unwrap_or(0),
    })
}

/// Blocks per second through the channel alone: the ceiling for every row.
fn channel_only(blocks: u64) -> f64 {
    let (tx, rx) = sync_channel::<Pfn>(CHANNEL_BOUND);
    let start = Instant::now();
    std::thread::scope(|s| {
        s.spawn(move || {
            for i in 0..blocks {
                if tx.send(Pfn(i)).is_err() {
                    return;
                }
            }
        });
        s.spawn(move || {
            rx.into_iter()
                .map(|p| p.get())
                .fold(0u64, u64::wrapping_add)
        });
    });
    blocks as f64 / start.elapsed().as_secs_f64()
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let blocks: u64 = match args.next() {
        Some(a) => a.parse().map_err(|_| format!("bad block count {a:?}"))?,
        None => 2_000_000,
    };
    let reps: usize = match args.next() {
        Some(a) => a
            .parse()
            .map_err(|_| format!("bad repetition count {a:?}"))?,
        None => 3,
    };
    if blocks == 0 || reps == 0 {
        return Err("blocks and repetitions must be positive".into());
    }

    println!(
        "cross_cpu: {blocks} blocks per run, median of {reps} runs; zone of {ZONE_FRAMES} frames, \
         alloc on CPU {}, free on CPU {}, channel bound {CHANNEL_BOUND}",
        ALLOC_CPU.0, FREE_CPU.0
    );
    let mut ceiling: Vec<f64> = (0..reps).map(|_| channel_only(blocks)).collect();
    ceiling.sort_by(f64::total_cmp);
    println!(
        "channel alone: {:.2} Mblk/s (median of {reps})",
        ceiling[reps / 2] / 1e6
    );
    println!();
    println!(
        "| order | setup              | Mblk/s | lock/1k | refill   | drain_high | drain_fh | left | distinct | top   | check |"
    );
    println!(
        "|------:|--------------------|-------:|--------:|---------:|-----------:|---------:|-----:|---------:|------:|-------|"
    );
    for order in [0u8, 3] {
        let order = Order::new(order).ok_or("order")?;
        for setup in [
            Setup::Pcp(FreeHigh::Current),
            Setup::Pcp(FreeHigh::Off),
            Setup::BuddyOnly,
        ] {
            let mut runs = (0..reps)
                .map(|_| run(setup, order, blocks))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("order {order}, {}: {e}", setup.name()))?;
            runs.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
            let r = &runs[runs.len() / 2];
            println!(
                "| {:>5} | {:<18} | {:>6.2} | {:>7.1} | {:>8} | {:>10} | {:>8} | {:>4} | {:>8} | {:>5} | ok    |",
                order.get(),
                setup.name(),
                r.blocks as f64 / r.seconds / 1e6,
                r.lock_acquisitions as f64 * 1000.0 / r.blocks as f64,
                r.pcp.refill_pages,
                r.pcp.drain_high_pages,
                r.pcp.drain_free_high_pages,
                r.left_on_pcp,
                r.distinct,
                r.top_reuse,
            );
        }
    }
    Ok(())
}
