//! Timing: one *cell* is one workload on one peer with one thread count.
//!
//! Each cell gets a fresh allocator. A warm-up run, which also calibrates, grows the op count
//! fourfold until a run takes an eighth of the wanted duration and then sizes the
//! repetitions to that duration (or uses `--ops`, after a warm-up of a tenth of it). The
//! repetitions follow, each timed from the first thread's start to the last thread's stop,
//! and the cell reports their median. At the end the allocator must have everything back
//! ([`PageSource::verify_empty`]) and every thread's count of live blocks must sum to zero;
//! otherwise the cell fails. A panic in a cell fails that cell only.

use std::time::Duration;

use serde::Serialize;

#[cfg(feature = "mimalloc")]
use super::peers::Mimalloc;
use super::peers::{
    BsaFrame, BsaHeap, Counters, GlobalLock, Mmap, PageSource, Peer, PosixMemalign, ZoneallocBuddy,
    ZoneallocPcp,
};
use super::workloads::{Rep, Workload};
use crate::report::stats::median_sorted;

/// How many ops each thread does per repetition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpsPlan {
    /// Exactly this many (rounded up to the workload's granule).
    Fixed(u64),
    /// As many as take about this long, in milliseconds, found by the warm-up.
    DurationMs(u64),
}

/// What every cell shares.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Plan {
    /// Ops per thread per repetition.
    pub ops: OpsPlan,
    /// Timed repetitions (the median is reported).
    pub repetitions: usize,
    /// Frames the frame allocators manage, and the pool `mixed` fills to 80%.
    pub pool_pages: u64,
    /// Seed of the workloads' random choices.
    pub seed: u64,
}

/// Most ops per thread the calibration asks for.
const MAX_OPS: u64 = 1 << 32;

/// What a cell measured: every repetition, and the allocator's counters if it has any.
pub type Measured = (Vec<Rep>, Option<Counters>);

/// Measures `wl` on `src` with `threads` threads.
pub fn measure<S: PageSource>(
    src: &S,
    wl: Workload,
    threads: usize,
    plan: &Plan,
) -> Result<Measured, String> {
    let run = |ops: u64, rep: u64| {
        wl.run(
            src,
            threads,
            ops,
            plan.pool_pages,
            plan.seed.wrapping_add(rep),
        )
    };
    let ops = match plan.ops {
        OpsPlan::Fixed(n) => {
            run((n / 10).max(1), u64::MAX)?;
            n
        }
        OpsPlan::DurationMs(ms) => {
            let want = Duration::from_millis(ms).as_nanos() as f64;
            let mut ops = 16;
            loop {
                let r = run(ops, u64::MAX)?;
                if r.wall_ns as f64 >= want / 8.0 || ops >= MAX_OPS {
                    let per_op = r.wall_ns.max(1) as f64 / ops as f64;
                    break ((want / per_op) as u64).clamp(1, MAX_OPS);
                }
                ops *= 4;
            }
        }
    };
    let reps = (0..plan.repetitions as u64)
        .map(|r| run(ops, r))
        .collect::<Result<Vec<_>, _>>()?;
    src.verify_empty()?;
    Ok((reps, src.counters()))
}

/// [`measure`] on a fresh allocator of kind `peer`.
pub fn measure_peer(
    peer: Peer,
    wl: Workload,
    threads: usize,
    plan: &Plan,
) -> Result<Measured, String> {
    let pool = plan.pool_pages;
    match peer {
        Peer::Zonealloc => measure(&ZoneallocPcp::new(pool, threads)?, wl, threads, plan),
        Peer::ZoneallocBuddy => measure(&ZoneallocBuddy::new(pool)?, wl, threads, plan),
        Peer::GlobalLock => measure(&GlobalLock::new(pool)?, wl, threads, plan),
        Peer::BsaFrame => measure(&BsaFrame::new(pool)?, wl, threads, plan),
        Peer::BsaHeap => measure(&BsaHeap::new(pool)?, wl, threads, plan),
        Peer::PosixMemalign => measure(&PosixMemalign, wl, threads, plan),
        #[cfg(feature = "mimalloc")]
        Peer::Mimalloc => measure(&Mimalloc, wl, threads, plan),
        #[cfg(not(feature = "mimalloc"))]
        Peer::Mimalloc => Err("built without the `mimalloc` feature".into()),
        Peer::Mmap => measure(&Mmap, wl, threads, plan),
    }
}

/// A cell's median and spread.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Median over repetitions of ops per second (all threads together).
    pub ops_per_s: f64,
    /// `1e9 / ops_per_s`: wall-clock ns per op, all threads together.
    pub ns_per_op: f64,
    /// Pages allocated per second at the median (ops/s times the mean pages per op).
    pub pages_per_s: f64,
    /// Median over repetitions of the threads' CPU time per op, ns (summed over threads, so
    /// for N busy threads about N times `ns_per_op`; without time spent waiting for a core).
    pub cpu_ns_per_op: f64,
    /// (fastest - slowest) / median ops/s, percent.
    pub spread_pct: f64,
    /// Failed allocations over all repetitions.
    pub failures: u64,
}

/// The median of `reps`, `None` when there are none or none did any op.
pub fn summarize(reps: &[Rep]) -> Option<Summary> {
    let done: Vec<&Rep> = reps.iter().filter(|r| r.ops > 0 && r.wall_ns > 0).collect();
    if done.is_empty() {
        return None;
    }
    let mut rates: Vec<f64> = done
        .iter()
        .map(|r| r.ops as f64 / (r.wall_ns as f64 / 1e9))
        .collect();
    rates.sort_by(f64::total_cmp);
    let mut cpu: Vec<f64> = done
        .iter()
        .map(|r| r.cpu_ns as f64 / r.ops as f64)
        .collect();
    cpu.sort_by(f64::total_cmp);
    let pages_per_op = done
        .iter()
        .map(|r| r.pages as f64 / r.ops as f64)
        .sum::<f64>()
        / done.len() as f64;
    let ops_per_s = median_sorted(&rates);
    Some(Summary {
        ops_per_s,
        ns_per_op: 1e9 / ops_per_s,
        pages_per_s: ops_per_s * pages_per_op,
        cpu_ns_per_op: median_sorted(&cpu),
        spread_pct: (rates[rates.len() - 1] - rates[0]) / ops_per_s * 100.0,
        failures: reps.iter().map(|r| r.failures).sum(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(ops: u64, wall_ns: u64) -> Rep {
        Rep {
            threads: 1,
            ops,
            pages: ops * 2,
            failures: 1,
            wall_ns,
            cpu_ns: wall_ns / 2,
        }
    }

    #[test]
    fn summary_is_the_median_rate() {
        let s = summarize(&[rep(100, 1000), rep(100, 4000), rep(100, 2000)]).unwrap();
        assert!((s.ops_per_s - 5e7).abs() < 1.0, "{s:?}");
        assert!((s.ns_per_op - 20.0).abs() < 1e-9);
        assert!((s.pages_per_s - 1e8).abs() < 1.0);
        assert!((s.cpu_ns_per_op - 10.0).abs() < 1e-9);
        assert!((s.spread_pct - 150.0).abs() < 1e-9);
        assert_eq!(s.failures, 3);
        let even = summarize(&[rep(100, 1000), rep(100, 2000)]).unwrap();
        assert!((even.ops_per_s - 7.5e7).abs() < 1.0);
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[rep(0, 10)]).is_none());
    }

    #[test]
    fn fixed_plan_runs_the_repetitions_and_verifies() {
        let plan = Plan {
            ops: OpsPlan::Fixed(64),
            repetitions: 3,
            pool_pages: 4096,
            seed: 1,
        };
        let (reps, counters) =
            measure_peer(Peer::ZoneallocBuddy, Workload::Burst64, 1, &plan).unwrap();
        assert_eq!(reps.len(), 3);
        assert!(counters.is_none());
        assert!(reps.iter().all(|r| r.ops == 64));
    }

    #[test]
    fn duration_plan_calibrates() {
        let plan = Plan {
            ops: OpsPlan::DurationMs(2),
            repetitions: 1,
            pool_pages: 4096,
            seed: 1,
        };
        let (reps, counters) = measure_peer(Peer::Zonealloc, Workload::Pair0, 1, &plan).unwrap();
        assert!(reps[0].ops > 16, "{reps:?}");
        // One CPU freeing what it allocated refills its list once, whatever the number of
        // operations the duration allowed (a hit rate would move with the machine's load).
        let c = counters.expect("zonealloc has PCP counters");
        assert_eq!(c.refills, 1, "{c:?}");
        assert!(c.pcp_hit_pct > 0.0, "{c:?}");
    }
}
