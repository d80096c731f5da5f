//! Instructions per operation of the hit path under valgrind's callgrind, which counts the
//! same on every run for a given build: the lab runs its own binary twice under callgrind
//! (`ZONEALLOC_LAB_ICOUNT=<scheme> <pairs>` makes it run the hit-path loop of `super::hit`
//! and exit), for two pair counts, and divides the difference of the totals by the difference
//! of the counts, so that setup and exit cancel out (as `crates/zonealloc-icount` does).

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use zonealloc::{CpuId, PcpLocking};

use super::hit;

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
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => return Some(format!("cannot find the running binary: {e}")),
    };
    if exe.file_stem().and_then(|s| s.to_str()) != Some("zonealloc") {
        return Some(format!(
            "not running as the zonealloc binary ({}): run `zonealloc lab pcp-lock`",
            exe.display()
        ));
    }
    let ok = Command::new("valgrind")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    (!ok).then(|| "valgrind is not installed (its callgrind counts the instructions)".to_string())
}

/// Total instructions callgrind counts for `pairs` pairs (setup and exit included).
fn total(exe: &PathBuf, locking: PcpLocking, pairs: u64) -> Result<u64, String> {
    let out = std::env::temp_dir().join(format!(
        "zonealloc-lab-callgrind-{}-{}-{pairs}.out",
        std::process::id(),
        scheme_name(locking)
    ));
    let run = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(exe)
        .env(ENV, format!("{} {pairs}", scheme_name(locking)))
        .output()
        .map_err(|e| format!("running valgrind: {e}"))?;
    let text = std::fs::read_to_string(&out);
    let _ = std::fs::remove_file(&out);
    if !run.status.success() {
        return Err(format!(
            "the hit-path loop failed under valgrind: {}",
            String::from_utf8_lossy(&run.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ));
    }
    text.map_err(|e| format!("reading the callgrind output: {e}"))?
        .lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| "the callgrind output has no summary line".to_string())
}

/// Instructions per operation (half an alloc+free pair) of the hit path under `locking`.
pub(super) fn per_op(locking: PcpLocking) -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let a = total(&exe, locking, N1)?;
    let b = total(&exe, locking, N2)?;
    Ok(b.saturating_sub(a) as f64 / (N2 - N1) as f64 / 2.0)
}
