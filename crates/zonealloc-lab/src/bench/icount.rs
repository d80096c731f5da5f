//! Instructions per op: the single-thread rows of `zonealloc bench` (the pairs of each order
//! and `burst64`) measured under valgrind's callgrind, next to their ns/op.
//!
//! A timing on a shared machine moves with its load; an instruction count does not. For
//! each row, the bench runs itself (`zonealloc bench --icount-child OPS ...`, a hidden flag
//! that runs one peer's workload for a fixed number of ops on one thread and exits) under
//! `valgrind --tool=callgrind` twice, with [`OPS`] and twice that, and divides the
//! difference of the two instruction totals by the difference of the ops run: setup, the
//! warm-up and exit cancel out. Callgrind counts exactly, so the figure is the same on every
//! run of a build (for a given seed and pool). Where valgrind is not on `PATH` the column
//! says `n/a`.
//!
//! The count is of the whole op as the workload runs it through its peer's adapter (loop,
//! bookkeeping and all), so it is higher than `crates/zonealloc-icount`'s count of the bare
//! API calls. Under valgrind glibc has no rseq area: zonealloc then finds the CPU from its
//! per-thread cache (see `StdPlatform`), a few instructions more than a native run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::peers::Peer;
use super::runner::{self, OpsPlan, Plan};
use super::workloads::Workload;

/// Ops of the shorter of the two runs (the longer runs twice as many). A multiple of 10, so
/// that the warm-up (a tenth, see `runner::measure`) is exact too.
pub const OPS: u64 = 10_000;

/// Whether `valgrind` is on `PATH`.
pub fn valgrind_available() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether a row of `wl` gets an instruction count: single-thread workloads only (threads
/// under valgrind run one at a time, which measures something else).
pub fn counted(wl: Workload) -> bool {
    !wl.multi_threaded()
}

/// The child: `ops` ops of `wl` on `peer`, one thread, one repetition after the usual warm-up.
pub fn run_child(
    peer: Peer,
    wl: Workload,
    ops: u64,
    pool_pages: u64,
    seed: u64,
) -> Result<(), String> {
    let plan = Plan {
        ops: OpsPlan::Fixed(ops),
        repetitions: 1,
        pool_pages,
        seed,
    };
    runner::measure_peer(peer, wl, 1, &plan).map(|_| ())
}

/// Instructions per op of `wl` on `peer` (see the module docs), or why there is none.
pub fn instructions_per_op(peer: Peer, wl: Workload, plan: &Plan) -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding this program: {e}"))?;
    let total = |ops: u64| total_instructions(&exe, peer, wl, ops, plan);
    let (t1, t2) = (total(OPS)?, total(2 * OPS)?);
    // Each run does `ops` plus a warm-up of a tenth of that.
    let done = |ops: u64| ops + (ops / 10).max(1);
    per_op(t1, t2, done(OPS), done(2 * OPS))
}

/// `(t2 - t1) / (ops2 - ops1)`, refusing a negative or empty difference.
fn per_op(t1: u64, t2: u64, ops1: u64, ops2: u64) -> Result<f64, String> {
    if t2 <= t1 || ops2 <= ops1 {
        return Err(format!(
            "no growth: {t1} instructions for {ops1} ops, {t2} for {ops2}"
        ));
    }
    Ok((t2 - t1) as f64 / (ops2 - ops1) as f64)
}

/// Runs the child under callgrind and returns its instruction total.
fn total_instructions(
    exe: &Path,
    peer: Peer,
    wl: Workload,
    ops: u64,
    plan: &Plan,
) -> Result<u64, String> {
    let out: PathBuf = std::env::temp_dir().join(format!(
        "zonealloc-bench-callgrind.{}.{ops}.out",
        std::process::id()
    ));
    let status = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(exe)
        .args(["bench", "--icount-child", &ops.to_string()])
        .args(["--workload", wl.name(), "--peer", peer.name()])
        .args(["--pool-pages", &plan.pool_pages.to_string()])
        .args(["--seed", &plan.seed.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("running valgrind: {e}"))?;
    if !status.success() {
        let _ = std::fs::remove_file(&out);
        return Err(format!("the callgrind run failed ({status})"));
    }
    let text = std::fs::read_to_string(&out);
    let _ = std::fs::remove_file(&out);
    let text = text.map_err(|e| format!("reading {}: {e}", out.display()))?;
    parse_total(&text).ok_or_else(|| format!("no instruction total in {}", out.display()))
}

/// The `summary:` (or `totals:`) line of a callgrind output file: its first event, `Ir`.
fn parse_total(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_op_divides_the_growth_by_the_extra_ops() {
        assert_eq!(per_op(1_000, 3_000, 11, 31), Ok(100.0));
        assert!(per_op(3_000, 1_000, 11, 31).is_err());
        assert!(per_op(1_000, 3_000, 31, 31).is_err());
    }

    #[test]
    fn parse_total_reads_the_summary_line() {
        let text = "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 12558538\n";
        assert_eq!(parse_total(text), Some(12_558_538));
        assert_eq!(parse_total("totals: 42 7\n"), Some(42));
        assert_eq!(parse_total("events: Ir\n"), None);
    }

    #[test]
    fn only_single_thread_workloads_are_counted() {
        assert!(counted(Workload::Pair0) && counted(Workload::Pair9) && counted(Workload::Burst64));
        assert!(!counted(Workload::Local) && !counted(Workload::Mixed));
    }
}
