//! Instructions per operation under valgrind's callgrind, which counts the same on every run
//! for a given build: the lab runs its own binary twice under callgrind
//! (`ZONEALLOC_LAB_ICOUNT=<scheme> <loop> <n>` makes it run a loop and exit), for two counts,
//! and divides the difference of the totals by the difference of the counts, so that setup
//! and exit cancel out (as `crates/zonealloc-icount` does). Two loops: `hit`, the hit path of
//! `super::hit` (alloc+free pairs on warm lists), and `fault`, the PFT-like fault of the
//! experiment's timed run (order-0 allocations with no frees, refills from the buddy
//! included): the seed's faults/s, counted.

use std::process::ExitCode;

use zonealloc::{CpuId, PcpLocking};

use super::hit;
use crate::experiments::valgrind::{self, Tool};

/// The environment variable that turns the `zonealloc` binary into the hit-path loop.
pub const ENV: &str = "ZONEALLOC_LAB_ICOUNT";
const N1: u64 = 20_000;
const N2: u64 = 40_000;
/// Faults of the two counted `fault` runs (the zone holds [`FAULT_FRAMES`]).
const F1: u64 = 16_384;
const F2: u64 = 49_152;
/// Frames of the fault zone: every fault finds a page, lists included.
const FAULT_FRAMES: u64 = 1 << 17;

/// Which loop a count runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Loop {
    /// Order-0 alloc+free pairs on warm lists (every one a PCP hit).
    Hit,
    /// Order-0 allocations with no frees (PFT's faults), refills included.
    Fault,
}

impl Loop {
    fn name(self) -> &'static str {
        match self {
            Loop::Hit => "hit",
            Loop::Fault => "fault",
        }
    }
}

fn scheme_name(l: PcpLocking) -> &'static str {
    match l {
        PcpLocking::Spinlock => "spinlock",
        PcpLocking::OwnerOnly => "owner-only",
    }
}

/// The child side: when [`ENV`] is set, runs the hit-path loop it names and returns the exit
/// code; `None` otherwise. The `zonealloc` binary calls it first thing in `main`.
pub fn icount_child() -> Option<ExitCode> {
    let spec = std::env::var(ENV).ok()?;
    let run = || -> Result<(), String> {
        let words: Vec<&str> = spec.split(' ').collect();
        let [scheme, what, n] = words[..] else {
            return Err(format!(
                "{ENV}: expected '<scheme> <hit|fault> <count>', got '{spec}'"
            ));
        };
        let locking = [PcpLocking::Spinlock, PcpLocking::OwnerOnly]
            .into_iter()
            .find(|&l| scheme_name(l) == scheme)
            .ok_or_else(|| format!("{ENV}: unknown scheme '{scheme}'"))?;
        let what = [Loop::Hit, Loop::Fault]
            .into_iter()
            .find(|l| l.name() == what)
            .ok_or_else(|| format!("{ENV}: unknown loop '{what}'"))?;
        let n: u64 = n.parse().map_err(|_| format!("{ENV}: bad count '{n}'"))?;
        if what == Loop::Fault {
            return faults(locking, n);
        }
        let zone = hit::zone(locking, hit::FRAMES)?;
        let mut h = zone.cpu_handle(CpuId(0)).map_err(|e| format!("{e:?}"))?;
        hit::pairs(&mut h, hit::WARMUP)?;
        hit::pairs(&mut h, std::hint::black_box(n))?;
        drop(h);
        let s = zone.pcp_stats();
        if s.alloc_misses > 1 || s.trylock_failures != 0 {
            return Err(format!("not a PCP-hit loop: {s:?}"));
        }
        Ok(())
    };
    Some(match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    })
}

/// The fault loop: `n` order-0 allocations on CPU 0 of a fresh zone, no frees (PFT's faults,
/// as the experiment's timed run makes them), then everything given back untimed.
fn faults(locking: PcpLocking, n: u64) -> Result<(), String> {
    if n > FAULT_FRAMES / 2 {
        return Err(format!("{ENV}: at most {} faults", FAULT_FRAMES / 2));
    }
    let zone = hit::zone(locking, FAULT_FRAMES)?;
    let mut h = zone.cpu_handle(CpuId(0)).map_err(|e| format!("{e:?}"))?;
    let held = hit::faults(&mut h, std::hint::black_box(n))?;
    for p in held {
        h.free(p, zonealloc::Order::ZERO)
            .map_err(|e| format!("{e:?}"))?;
    }
    Ok(())
}

/// Why instructions cannot be counted here, if they cannot.
pub(super) fn unavailable() -> Option<String> {
    valgrind::unavailable()
}

/// Total instructions callgrind counts for `n` iterations of `what` (setup and exit
/// included).
fn total(locking: PcpLocking, what: Loop, n: u64) -> Result<u64, String> {
    let spec = format!("{} {} {n}", scheme_name(locking), what.name());
    valgrind::event(&valgrind::run(&Tool::Callgrind, ENV, &spec)?, "Ir")
}

/// Instructions per operation under `locking`: of the hit path (half an alloc+free pair),
/// or per fault.
pub(super) fn per_op(locking: PcpLocking, what: Loop) -> Result<f64, String> {
    let (n1, n2, per) = match what {
        Loop::Hit => (N1, N2, 2.0),
        Loop::Fault => (F1, F2, 1.0),
    };
    let a = total(locking, what, n1)?;
    let b = total(locking, what, n2)?;
    Ok(valgrind::per_unit(a, b, n1, n2)? / per)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both counted fault runs fit their zone, under both schemes (49,152 faults once did not).
    #[test]
    fn the_counted_fault_runs_fit_their_zone() {
        for l in [PcpLocking::Spinlock, PcpLocking::OwnerOnly] {
            for n in [F1, F2] {
                assert_eq!(faults(l, n), Ok(()), "{l:?} {n}");
            }
        }
        assert!(faults(PcpLocking::Spinlock, FAULT_FRAMES).is_err());
    }
}
