//! The netperf-like workload itself (the sender's `page_frag` carving) and its deterministic
//! mode: producer (CPU 0) and consumer (CPU 1) steps interleaved in one thread in bursts
//! drawn from the seed, so every reuse count and zone-lock count is the same on every machine
//! for a given seed.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};

use zonealloc::{AllocRequest, CpuId, MigrateType, Order, Pfn};

use super::{err, make_zone, Policy, BLOCK_ORDER, PAGE, QUEUE, SIZES};
use crate::experiments::{LabError, SplitMix};
use crate::trace::record::TracedZone;

/// A message in flight: its size, where its bytes are (the block's head and the offset in
/// it), and the blocks to free once it is consumed.
#[derive(Debug)]
pub(super) struct Msg {
    pub(super) bytes: u32,
    pub(super) at: (Pfn, u32),
    pub(super) free: Vec<(Pfn, Order)>,
}

fn block_order() -> Order {
    Order::new(BLOCK_ORDER).expect("order 3")
}

/// The producer's `page_frag` state: carves messages out of the current block; the message
/// carved last from a block carries the block, so the consumer frees it with that message
/// (FIFO order makes it the block's last message).
pub(super) struct Carver {
    rng: SplitMix,
    cur: Option<(Pfn, u32)>, // head, bytes left
    pending: Option<Msg>,
    /// Blocks allocated (order-3, or order-0 fallbacks).
    pub(super) blocks: u64,
    /// Order-0 fallback pages (an order-3 allocation failed).
    pub(super) fallbacks: u64,
}

impl Carver {
    pub(super) fn new(seed: u64) -> Self {
        Carver {
            rng: SplitMix::new(seed),
            cur: None,
            pending: None,
            blocks: 0,
            fallbacks: 0,
        }
    }

    /// Makes the next message with `alloc`; returns the message now complete, if any.
    pub(super) fn step(
        &mut self,
        mut alloc: impl FnMut(Order) -> Result<Pfn, LabError>,
    ) -> Result<Option<Msg>, LabError> {
        let bytes = SIZES[self.rng.below(SIZES.len() as u64) as usize];
        let fits = matches!(self.cur, Some((_, left)) if left >= bytes);
        let mut out = None;
        if !fits {
            // Close the current block: the pending message is its last one.
            if let Some(mut p) = self.pending.take() {
                if let Some((head, _)) = self.cur.take() {
                    p.free.push((head, block_order()));
                }
                out = Some(p);
            }
            self.cur = None;
            match alloc(block_order()) {
                Ok(head) => {
                    self.blocks += 1;
                    self.cur = Some((head, PAGE << BLOCK_ORDER));
                }
                Err(_) => {
                    // Fallback: order-0 pages just for this message, freed with it.
                    let mut free = Vec::new();
                    for _ in 0..bytes.div_ceil(PAGE) {
                        free.push((alloc(Order::ZERO)?, Order::ZERO));
                        self.blocks += 1;
                        self.fallbacks += 1;
                    }
                    let msg = Msg {
                        bytes: bytes.min(PAGE),
                        at: (free[0].0, 0),
                        free,
                    };
                    return Ok(match out {
                        Some(o) => {
                            self.pending = Some(msg);
                            Some(o)
                        }
                        None => Some(msg),
                    });
                }
            }
        }
        let mut at = (Pfn(0), 0);
        if let Some((head, left)) = self.cur.as_mut() {
            at = (*head, (PAGE << BLOCK_ORDER) - *left);
            *left -= bytes;
        }
        if let Some(p) = self.pending.replace(Msg {
            bytes,
            at,
            free: Vec::new(),
        }) {
            debug_assert!(out.is_none());
            out = Some(p);
        }
        Ok(out)
    }

    /// The last message, carrying the current block.
    pub(super) fn finish(&mut self) -> Option<Msg> {
        let mut p = self.pending.take()?;
        if let Some((head, _)) = self.cur.take() {
            p.free.push((head, block_order()));
        }
        Some(p)
    }
}

/// What one deterministic run measured.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct DetRun {
    pub(super) blocks: u64,
    pub(super) fallbacks: u64,
    pub(super) lock_per_1000: f64,
    pub(super) dist_mean: f64,
    pub(super) distances: Vec<u64>,
    /// (head pfn, allocations), most allocated first.
    pub(super) top: Vec<(u64, u64)>,
    pub(super) distinct: u64,
}

impl DetRun {
    /// Mean allocations of the five most used frames (the seed's `perf kmem` table).
    pub(super) fn top5_mean(&self) -> f64 {
        self.top.iter().take(5).map(|t| t.1 as f64).sum::<f64>() / self.top.len().clamp(1, 5) as f64
    }
}

/// The interleaving of the deterministic mode: producer bursts (1..=16 messages, or until
/// the queue is full) and consumer bursts (1..=16 messages) drawn from the seed, in one
/// thread. `alloc` allocates the producer's blocks (CPU 0), `sent` sees each message as it is
/// queued (the sender's copy), `consume` takes each off the queue (the receiver's copy, and
/// the frees on CPU 1). Returns the carver, with its counts.
pub(super) fn interleave(
    messages: u64,
    seed: u64,
    mut alloc: impl FnMut(Order) -> Result<Pfn, LabError>,
    mut sent: impl FnMut(&Msg) -> Result<(), LabError>,
    mut consume: impl FnMut(Msg) -> Result<(), LabError>,
) -> Result<Carver, LabError> {
    let mut carver = Carver::new(seed);
    let mut pattern = SplitMix::new(seed ^ 0x5eed_f00d);
    let mut queue: VecDeque<Msg> = VecDeque::with_capacity(QUEUE);
    let mut made = 0u64;
    let mut done = false;
    while !done || !queue.is_empty() {
        // Producer burst: 1..=16 messages, or until the queue is full.
        let burst = 1 + pattern.below(16);
        for _ in 0..burst {
            if done || queue.len() >= QUEUE {
                break;
            }
            let msg = if made < messages {
                made += 1;
                carver.step(&mut alloc)?
            } else {
                done = true;
                carver.finish()
            };
            if let Some(m) = msg {
                sent(&m)?;
                queue.push_back(m);
            }
        }
        // Consumer burst: 1..=16 messages.
        let burst = 1 + pattern.below(16);
        for _ in 0..burst {
            let Some(m) = queue.pop_front() else { break };
            consume(m)?;
        }
    }
    Ok(carver)
}

/// The deterministic mode: producer (CPU 0) and consumer (CPU 1) steps interleaved in one
/// thread in bursts drawn from the seed.
pub(super) fn run_det(
    pages: u64,
    policy: Policy,
    messages: u64,
    seed: u64,
    record: Option<&std::path::Path>,
) -> Result<DetRun, LabError> {
    let plain = make_zone(pages, policy)?;
    let zone = TracedZone::new(&plain, record).map_err(err("--record-traces"))?;
    let lock0 = plain.stats().zone_lock_acquisitions;
    let mut counts: HashMap<u64, u64> = HashMap::new();
    // Frame -> the allocation count when it was last freed.
    let freed_at: RefCell<HashMap<u64, u64>> = RefCell::new(HashMap::new());
    let mut distances = Vec::new();
    let allocs = Cell::new(0u64);
    let p0 = AllocRequest::new(MigrateType::Unmovable).on_cpu(CpuId(0));
    let carver = interleave(
        messages,
        seed,
        |o| {
            let pfn = zone.alloc_with(o, p0).map_err(err("alloc"))?;
            allocs.set(allocs.get() + 1);
            *counts.entry(pfn.0).or_default() += 1;
            if let Some(f) = freed_at.borrow_mut().remove(&pfn.0) {
                distances.push(allocs.get() - f);
            }
            Ok(pfn)
        },
        |_| Ok(()),
        |m| {
            std::hint::black_box(m.bytes);
            for (pfn, o) in m.free {
                zone.free_on(CpuId(1), pfn, o).map_err(err("free"))?;
                freed_at.borrow_mut().insert(pfn.0, allocs.get());
            }
            Ok(())
        },
    )?;
    let blocks = carver.blocks;
    let lock = plain.stats().zone_lock_acquisitions - lock0;
    zone.drain_all();
    zone.finish().map_err(err("--record-traces"))?;
    plain.check().map_err(err("zone check"))?;
    let mut top: Vec<(u64, u64)> = counts.iter().map(|(&p, &c)| (p, c)).collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let distinct = top.len() as u64;
    top.truncate(20);
    let dist_mean = if distances.is_empty() {
        0.0
    } else {
        distances.iter().sum::<u64>() as f64 / distances.len() as f64
    };
    Ok(DetRun {
        blocks,
        fallbacks: carver.fallbacks,
        lock_per_1000: lock as f64 * 1000.0 / blocks.max(1) as f64,
        dist_mean,
        distances,
        top,
        distinct,
    })
}
