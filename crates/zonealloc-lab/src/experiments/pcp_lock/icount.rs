//! Instructions per operation of the hit path under valgrind's callgrind, which counts the
//! same on every run for a given build: the lab runs its own binary twice under callgrind
//! (`ZONEALLOC_LAB_ICOUNT=<scheme> <pairs>` makes it run the hit-path loop of `super::hit`
//! and exit), for two pair counts, and divides the difference of the totals by the difference
//! of the counts, so that setup and exit cancel out (as `crates/zonealloc-icount` does).

use std::process::ExitCode;

use zonealloc::{CpuId, PcpLocking};

use super::hit;
use crate::experiments::valgrind::{self, Tool};

/// The environment variable that turns the `zonealloc` binary into the hit-path loop.
pub const ENV: &str = "ZONEALLOC_LAB_ICOUNT";
const N1: u64 = 20_000;
const N2: u64 = 40_000;

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
        let (scheme, n) = spec
            .split_once(' ')
            .ok_or_else(|| format!("{ENV}: expected '<scheme> <pairs>', got '{spec}'"))?;
        let locking = [PcpLocking::Spinlock, PcpLocking::OwnerOnly]
            .into_iter()
            .find(|&l| scheme_name(l) == scheme)
            .ok_or_else(|| format!("{ENV}: unknown scheme '{scheme}'"))?;
        let n: u64 = n
            .parse()
            .map_err(|_| format!("{ENV}: bad pair count '{n}'"))?;
        let zone = hit::zone(locking)?;
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

/// Why instructions cannot be counted here, if they cannot.
pub(super) fn unavailable() -> Option<String> {
    valgrind::unavailable()
}

/// Total instructions callgrind counts for `pairs` pairs (setup and exit included).
fn total(locking: PcpLocking, pairs: u64) -> Result<u64, String> {
    let spec = format!("{} {pairs}", scheme_name(locking));
    valgrind::event(&valgrind::run(&Tool::Callgrind, ENV, &spec)?, "Ir")
}

/// Instructions per operation (half an alloc+free pair) of the hit path under `locking`.
pub(super) fn per_op(locking: PcpLocking) -> Result<f64, String> {
    let a = total(locking, N1)?;
    let b = total(locking, N2)?;
    Ok(valgrind::per_unit(a, b, N1, N2)? / 2.0)
}
