//! `free-high`: seed 000 (`0216ab652fd4cf17`, "mm/page_alloc: limit number of high-order pages
//! on PCP during bulk free").
//!
//! The kernel mechanism: when a CPU only frees (netperf on localhost: the sender allocates
//! order-3 `page_frag` blocks for its skbs on one CPU, the receiver frees them on another),
//! high-order pages pile up on the freeing CPU's per-CPU lists and go cold before
//! `free_pcppages_bulk` returns them. `free_high` makes such a CPU drain them to the buddy at
//! once, where the allocating CPU finds them again while still cache hot.
//!
//! The experiment is netperf-like: a producer on CPU 0 allocates order-3 blocks (falling back
//! to order 0), carves them into messages of 64..16384 bytes and passes them through a bounded
//! queue; a consumer on CPU 1 frees a block when its last message is consumed. Messages/s come
//! from real threads; the reuse metrics (the seed's `perf kmem` table of the five most used
//! frames, reuse distances) and zone-lock acquisitions come from a deterministic mode that
//! interleaves producer and consumer steps on simulated CPUs in one thread, so they are the
//! same on every machine for a given seed.

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::sync_channel;
use std::time::Instant;

use serde_json::json;
use zonealloc::{
    AllocRequest, CpuId, FreeHigh, MigrateType, Order, Pfn, Zone, ZoneConfig, ZoneType,
};

use crate::trace::record::TracedZone;

use super::{
    Experiment, ExperimentResult, LabError, LabOpts, MetricDef, MetricKind, Plot, PlotKind,
    Progress, Sample, Series, SplitMix, Table,
};
use crate::report::stats::cdf_points;

/// The `free-high` experiment (seed 000).
pub struct FreeHighExp;

/// Message sizes, the seed's netperf-tcp sweep.
const SIZES: [u32; 9] = [64, 128, 256, 1024, 2048, 3312, 4096, 8192, 16384];
const PAGE: u32 = 4096;
const BLOCK_ORDER: u8 = 3;
/// Capacity of the bounded queue between producer and consumer (messages).
const QUEUE: usize = 128;

const M_RATE: &str = "messages/s";
const M_LOCK: &str = "zone-lock/1000 blocks";
const M_DIST: &str = "reuse distance mean";
const M_FRAMES: &str = "distinct frames";
const M_TOP: &str = "top-5 reuse mean";

/// A message in flight: its size and the blocks to free once it is consumed.
#[derive(Debug)]
struct Msg {
    bytes: u32,
    free: Vec<(Pfn, Order)>,
}

/// The producer's `page_frag` state: carves messages out of the current block; the message
/// carved last from a block carries the block, so the consumer frees it with that message
/// (FIFO order makes it the block's last message).
struct Carver {
    rng: SplitMix,
    cur: Option<(Pfn, u32)>, // head, bytes left
    pending: Option<Msg>,
    blocks: u64,
}

impl Carver {
    fn new(seed: u64) -> Self {
        Carver {
            rng: SplitMix::new(seed),
            cur: None,
            pending: None,
            blocks: 0,
        }
    }

    /// Makes the next message with `alloc`; returns the message now complete, if any.
    fn step(
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
                    p.free
                        .push((head, Order::new(BLOCK_ORDER).expect("order 3")));
                }
                out = Some(p);
            }
            self.cur = None;
            match alloc(Order::new(BLOCK_ORDER).expect("order 3")) {
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
                    }
                    let msg = Msg { bytes, free };
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
        if let Some((_, left)) = self.cur.as_mut() {
            *left -= bytes;
        }
        if let Some(p) = self.pending.replace(Msg {
            bytes,
            free: Vec::new(),
        }) {
            debug_assert!(out.is_none());
            out = Some(p);
        }
        Ok(out)
    }

    /// The last message, carrying the current block.
    fn finish(&mut self) -> Option<Msg> {
        let mut p = self.pending.take()?;
        if let Some((head, _)) = self.cur.take() {
            p.free
                .push((head, Order::new(BLOCK_ORDER).expect("order 3")));
        }
        Some(p)
    }
}

/// What one deterministic run measured.
#[derive(Clone, Debug, PartialEq)]
struct DetRun {
    blocks: u64,
    lock_per_1000: f64,
    dist_mean: f64,
    distances: Vec<u64>,
    /// (head pfn, allocations), most allocated first.
    top: Vec<(u64, u64)>,
    distinct: u64,
}

fn err<E: std::fmt::Debug>(what: &'static str) -> impl FnOnce(E) -> LabError {
    move |e| LabError(format!("free-high: {what}: {e:?}"))
}

fn make_zone(pages: u64, fh: FreeHigh) -> Result<Zone, LabError> {
    let mut cfg = ZoneConfig::without_watermarks().with_cpus(2);
    cfg.pcp.free_high = fh;
    let zone = Zone::new(ZoneType::Normal, Pfn(0), Pfn(pages), cfg).map_err(err("zone"))?;
    zone.add_free_range(Pfn(0), Pfn(pages))
        .map_err(err("add_free_range"))?;
    Ok(zone)
}

fn finish_zone(zone: &Zone) -> Result<(), LabError> {
    zone.drain_all();
    zone.check().map_err(err("zone check"))?;
    Ok(())
}

/// The deterministic mode: producer (CPU 0) and consumer (CPU 1) steps interleaved in one
/// thread in bursts drawn from the seed.
fn run_det(
    pages: u64,
    fh: FreeHigh,
    messages: u64,
    seed: u64,
    record: Option<&std::path::Path>,
) -> Result<DetRun, LabError> {
    let plain = make_zone(pages, fh)?;
    let zone = TracedZone::new(&plain, record).map_err(err("--record-traces"))?;
    let lock0 = plain.stats().zone_lock_acquisitions;
    let mut carver = Carver::new(seed);
    let mut pattern = SplitMix::new(seed ^ 0x5eed_f00d);
    let mut queue: VecDeque<Msg> = VecDeque::with_capacity(QUEUE);
    let mut counts: HashMap<u64, u64> = HashMap::new();
    let mut freed_at: HashMap<u64, u64> = HashMap::new();
    let mut distances = Vec::new();
    let mut allocs: u64 = 0;
    let mut made = 0u64;
    let mut done = false;
    let p0 = AllocRequest::new(MigrateType::Unmovable).on_cpu(CpuId(0));
    while !done || !queue.is_empty() {
        // Producer burst: 1..=16 messages, or until the queue is full.
        let burst = 1 + pattern.below(16);
        for _ in 0..burst {
            if done || queue.len() >= QUEUE {
                break;
            }
            let msg = if made < messages {
                made += 1;
                carver.step(|o| {
                    let pfn = zone.alloc_with(o, p0).map_err(err("alloc"))?;
                    allocs += 1;
                    *counts.entry(pfn.0).or_default() += 1;
                    if let Some(f) = freed_at.remove(&pfn.0) {
                        distances.push(allocs - f);
                    }
                    Ok(pfn)
                })?
            } else {
                done = true;
                carver.finish()
            };
            if let Some(m) = msg {
                queue.push_back(m);
            }
        }
        // Consumer burst: 1..=16 messages.
        let burst = 1 + pattern.below(16);
        for _ in 0..burst {
            let Some(m) = queue.pop_front() else { break };
            std::hint::black_box(m.bytes);
            for (pfn, o) in m.free {
                zone.free_on(CpuId(1), pfn, o).map_err(err("free"))?;
                freed_at.insert(pfn.0, allocs);
            }
        }
    }
    let blocks = carver.blocks;
    let lock = plain.stats().zone_lock_acquisitions - lock0;
    zone.drain_all();
    zone.finish().map_err(err("--record-traces"))?;
    finish_zone(&plain)?;
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
        lock_per_1000: lock as f64 * 1000.0 / blocks.max(1) as f64,
        dist_mean,
        distances,
        top,
        distinct,
    })
}

/// Real threads: producer on CPU 0, consumer on CPU 1, a bounded channel between. Returns
/// messages/s.
fn run_threads(pages: u64, fh: FreeHigh, messages: u64, seed: u64) -> Result<f64, LabError> {
    let zone = make_zone(pages, fh)?;
    let (tx, rx) = sync_channel::<Msg>(QUEUE);
    let start = Instant::now();
    let (p, c) = std::thread::scope(|s| {
        let zone = &zone;
        let prod = s.spawn(move || -> Result<(), LabError> {
            let mut h = zone.cpu_handle(CpuId(0)).map_err(err("cpu_handle 0"))?;
            let mut carver = Carver::new(seed);
            for _ in 0..messages {
                let m =
                    carver.step(|o| h.alloc(o, MigrateType::Unmovable).map_err(err("alloc")))?;
                if let Some(m) = m {
                    if tx.send(m).is_err() {
                        return Err(LabError("free-high: consumer gone".into()));
                    }
                }
            }
            if let Some(m) = carver.finish() {
                let _ = tx.send(m);
            }
            Ok(())
        });
        let cons = s.spawn(move || -> Result<Instant, LabError> {
            let mut h = zone.cpu_handle(CpuId(1)).map_err(err("cpu_handle 1"))?;
            while let Ok(m) = rx.recv() {
                std::hint::black_box(m.bytes);
                for (pfn, o) in m.free {
                    h.free(pfn, o).map_err(err("free"))?;
                }
            }
            Ok(Instant::now())
        });
        (prod.join(), cons.join())
    });
    let p = p.map_err(|_| LabError("free-high: producer panicked".into()))?;
    let c = c.map_err(|_| LabError("free-high: consumer panicked".into()))?;
    p?;
    let end = c?;
    finish_zone(&zone)?;
    let secs = end.duration_since(start).as_secs_f64().max(1e-9);
    Ok(messages as f64 / secs)
}

fn variant_list() -> Vec<(&'static str, FreeHigh)> {
    vec![
        ("free_high=off", FreeHigh::Off),
        ("free_high=on", FreeHigh::Current),
        ("free_high=original", FreeHigh::Original),
    ]
}

/// Evenly spaced quantiles of `v` (sorted copy), at most `n` points, for CDF plots.
fn thin(v: &[u64], n: usize) -> Vec<(f64, f64)> {
    cdf_points(v, n)
        .into_iter()
        .map(|x| (x as f64, 0.0))
        .collect()
}

impl Experiment for FreeHighExp {
    fn name(&self) -> &'static str {
        "free-high"
    }

    fn about(&self) -> &'static str {
        "seed 000: free_high drains high-order pages of a freeing-only CPU (netperf-like)"
    }

    fn run(&self, opts: &LabOpts, progress: Progress<'_>) -> Result<ExperimentResult, LabError> {
        let iterations = opts.iterations_or(2, 5, self.name())?;
        let pages = opts
            .zone_pages
            .unwrap_or(if opts.quick { 1 << 14 } else { 1 << 20 });
        if pages < 4096 {
            return Err(LabError(format!(
                "free-high: zone of {pages} pages is too small (need at least 4096)"
            )));
        }
        let det_msgs: u64 = if opts.quick { 3_000 } else { 200_000 };
        let thr_msgs: u64 = if opts.quick { 3_000 } else { 2_000_000 };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let variants = opts.pick(&variant_list(), |v| v.0, self.name())?;
        let metrics = vec![
            MetricDef {
                name: M_RATE.into(),
                unit: "msg/s".into(),
                kind: MetricKind::Rate,
            },
            MetricDef {
                name: M_LOCK.into(),
                unit: "acq".into(),
                kind: MetricKind::Count {
                    higher_is_better: false,
                },
            },
            MetricDef {
                name: M_DIST.into(),
                unit: "allocs".into(),
                kind: MetricKind::Count {
                    higher_is_better: false,
                },
            },
            MetricDef {
                name: M_FRAMES.into(),
                unit: "frames".into(),
                kind: MetricKind::Count {
                    higher_is_better: false,
                },
            },
            MetricDef {
                name: M_TOP.into(),
                unit: "allocs".into(),
                kind: MetricKind::Count {
                    higher_is_better: true,
                },
            },
        ];
        let total = (iterations * variants.len()) as u64;
        let mut done = 0u64;
        progress(0, total);
        let mut samples = Vec::new();
        let mut first: Vec<Option<DetRun>> = vec![None; variants.len()];
        for it in 0..iterations {
            let seed = opts.seed ^ (it as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            for (vi, (vname, fh)) in variants.iter().enumerate() {
                let trace = opts.trace_path(self.name(), vname, it);
                let det = run_det(pages, *fh, det_msgs, seed, trace.as_deref())?;
                let rate = run_threads(pages, *fh, thr_msgs, seed)?;
                let top5 = det.top.iter().take(5).map(|t| t.1 as f64).sum::<f64>()
                    / det.top.len().clamp(1, 5) as f64;
                for (m, v) in [
                    (M_RATE, rate),
                    (M_LOCK, det.lock_per_1000),
                    (M_DIST, det.dist_mean),
                    (M_FRAMES, det.distinct as f64),
                    (M_TOP, top5),
                ] {
                    samples.push(Sample {
                        variant: (*vname).into(),
                        metric: m.into(),
                        value: v,
                    });
                }
                if first[vi].is_none() {
                    first[vi] = Some(det);
                }
                done += 1;
                progress(done, total);
            }
        }
        let mut tables = Vec::new();
        let mut bars = Vec::new();
        let mut cdf = Vec::new();
        for ((vname, _), det) in variants.iter().zip(first.iter()) {
            let Some(det) = det else { continue };
            tables.push(Table {
                title: format!(
                    "{vname}: the 5 most used page frames (kmem:mm_page_alloc, deterministic mode, iteration 0)"
                ),
                header: vec!["rank".into(), "allocations".into(), "pfn".into()],
                rows: det
                    .top
                    .iter()
                    .take(5)
                    .enumerate()
                    .map(|(i, (p, c))| vec![(i + 1).to_string(), c.to_string(), format!("{p:#x}")])
                    .collect(),
            });
            bars.push(Series {
                name: (*vname).into(),
                points: det
                    .top
                    .iter()
                    .enumerate()
                    .map(|(i, (_, c))| (i as f64, *c as f64))
                    .collect(),
            });
            cdf.push(Series {
                name: (*vname).into(),
                points: thin(&det.distances, 400),
            });
        }
        let plots = vec![
            Plot {
                file_stem: "free-high-reuse".into(),
                title: "Allocations of the 20 most used frames (deterministic mode)".into(),
                x_label: "frame rank".into(),
                y_label: "allocations".into(),
                kind: PlotKind::Bars,
                series: bars,
            },
            Plot {
                file_stem: "free-high-reuse-distance".into(),
                title: "Reuse distance: allocations between a frame's free and its next allocation"
                    .into(),
                x_label: "allocations".into(),
                y_label: "fraction of reuses".into(),
                kind: PlotKind::Cdf,
                series: cdf,
            },
        ];
        Ok(ExperimentResult {
            name: self.name().into(),
            seed: "000_0216ab652fd4cf17".into(),
            change: "mm/page_alloc: limit number of high-order pages on PCP during bulk free"
                .into(),
            baseline: variants[0].0.into(),
            variants: variants.iter().map(|v| v.0.to_string()).collect(),
            metrics,
            samples,
            tables,
            plots,
            expected_shape: "free_high narrows the reuse spread: with it on, freed order-3 blocks \
                return to the buddy and are reallocated sooner (shorter reuse distance, fewer \
                distinct frames, the top frames reused more), at the cost of more zone-lock \
                acquisitions; messages/s roughly equal."
                .into(),
            config: json!({
                "zone_pages": pages,
                "cpus": 2,
                "block_order": BLOCK_ORDER,
                "message_sizes": SIZES,
                "queue": QUEUE,
                "deterministic_messages": det_msgs,
                "thread_messages": thr_msgs,
                "iterations": iterations,
                "seed": opts.seed,
                "threads": 2,
                "deterministic_metrics": [M_LOCK, M_DIST, M_FRAMES, M_TOP],
                "real_thread_metrics": [M_RATE],
            }),
            oversubscribed: 2 > cores,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_run_has_the_expected_structure() {
        let r = FreeHighExp
            .run(&LabOpts::quick_test(1), &|_, _| {})
            .unwrap();
        assert_eq!(r.baseline, "free_high=off");
        assert_eq!(r.variants.len(), 3);
        assert_eq!(r.metrics.len(), 5);
        for v in &r.variants {
            for m in &r.metrics {
                let n = r
                    .samples
                    .iter()
                    .filter(|s| &s.variant == v && s.metric == m.name)
                    .count();
                assert_eq!(n, 2, "{v} {}", m.name);
            }
        }
        assert_eq!(r.tables.len(), 3);
        assert!(r.tables.iter().all(|t| t.rows.len() == 5));
        assert_eq!(r.plots.len(), 2);
        assert!(r.plots.iter().all(|p| p.series.len() == 3));
    }

    #[test]
    fn deterministic_mode_repeats_exactly() {
        let a = run_det(1 << 14, FreeHigh::Current, 2_000, 7, None).unwrap();
        let b = run_det(1 << 14, FreeHigh::Current, 2_000, 7, None).unwrap();
        assert_eq!(a, b);
        let r1 = FreeHighExp
            .run(&LabOpts::quick_test(3), &|_, _| {})
            .unwrap();
        let r2 = FreeHighExp
            .run(&LabOpts::quick_test(3), &|_, _| {})
            .unwrap();
        let det = |r: &ExperimentResult| -> Vec<f64> {
            r.samples
                .iter()
                .filter(|s| s.metric != M_RATE)
                .map(|s| s.value)
                .collect()
        };
        assert_eq!(det(&r1), det(&r2));
        assert_eq!(r1.tables[0].rows, r2.tables[0].rows);
    }

    #[test]
    fn carver_frees_every_block_once() {
        let mut c = Carver::new(5);
        let mut next = 0u64;
        let mut allocated = Vec::new();
        let mut freed = Vec::new();
        for _ in 0..1000 {
            if let Some(m) = c
                .step(|_| {
                    next += 8;
                    allocated.push(next);
                    Ok(Pfn(next))
                })
                .unwrap()
            {
                freed.extend(m.free.iter().map(|f| f.0 .0));
            }
        }
        if let Some(m) = c.finish() {
            freed.extend(m.free.iter().map(|f| f.0 .0));
        }
        assert_eq!(allocated, freed);
    }
}
