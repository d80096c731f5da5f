//! The instruction budget of the PCP hit path, checked without timing anything.
//!
//! Builds `zonealloc-icount` (`src/main.rs`) in release, in its own target directory
//! (`target/icount`: the outer `cargo test` holds the lock of the usual one, and a test build
//! is unoptimised, so its counts would mean nothing). Then, for each case of `budget.toml`,
//! runs it under `valgrind --tool=callgrind` for two pair counts and takes
//! `(total(N2) - total(N1)) / (N2 - N1)`: the instructions of one alloc+free pair, with the
//! zone's setup, the warm-up and the exit cancelled out. Callgrind counts instructions
//! exactly, so the figure is the same on every run of a build and the check cannot be flaky.
//!
//! Needs valgrind (`sudo apt-get install -y valgrind`); `ZONEALLOC_SKIP_ICOUNT=1` skips the
//! check where it cannot be installed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Pair counts of the two runs: the same number of digits, so that parsing the argument costs
/// the same in both, and the difference (100,000 pairs) gives a whole number of instructions
/// per pair. A run takes one to two seconds under callgrind.
const N1: u64 = 100_000;
const N2: u64 = 200_000;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/zonealloc-icount sits two levels below the workspace root")
        .to_path_buf()
}

/// `(case, budget)` pairs from the `[pair]` table of `budget.toml`.
fn budgets() -> Vec<(String, f64)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("budget.toml");
    let text = std::fs::read_to_string(&path).expect("read budget.toml");
    let doc: toml::Table = text
        .parse()
        .unwrap_or_else(|e| panic!("budget.toml is not valid TOML: {e}"));
    let pair = doc
        .get("pair")
        .and_then(toml::Value::as_table)
        .expect("budget.toml has no [pair] table");
    let out: Vec<(String, f64)> = pair
        .iter()
        .map(|(case, v)| {
            let budget = v
                .as_integer()
                .unwrap_or_else(|| panic!("budget.toml: budget of `{case}` is not an integer"));
            (case.clone(), budget as f64)
        })
        .collect();
    assert!(!out.is_empty(), "budget.toml has no [pair] budgets");
    out
}

fn valgrind_available() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Builds the pair loop in release and returns the binary.
fn build(root: &Path) -> PathBuf {
    let target = root.join("target").join("icount");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .args(["build", "--release", "--quiet", "-p", "zonealloc-icount"])
        .env("CARGO_TARGET_DIR", &target)
        // The budget is for the plain release profile: flags meant for the outer build
        // (coverage, sanitizers, loom) would change the code measured.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .status()
        .expect("run cargo build for the instruction-count binary");
    assert!(status.success(), "cargo build of zonealloc-icount failed");
    target
        .join("release")
        .join(format!("zonealloc-icount{}", std::env::consts::EXE_SUFFIX))
}

/// Instructions callgrind counts for one run of `case` with `pairs` pairs.
fn count(bin: &Path, case: &str, pairs: u64, out_dir: &Path) -> u64 {
    let out = out_dir.join(format!("callgrind.{case}.{pairs}.out"));
    let run = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(bin)
        .arg(case)
        .arg(pairs.to_string())
        .output()
        .expect("run valgrind");
    assert!(
        run.status.success(),
        "zonealloc-icount {case} {pairs} failed under valgrind:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(&out).expect("read the callgrind output");
    let total = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.trim().parse::<u64>().ok())
        .expect("callgrind output has a summary line");
    let _ = std::fs::remove_file(&out);
    total
}

#[test]
fn pcp_hit_pair_is_within_its_instruction_budget() {
    if std::env::var_os("ZONEALLOC_SKIP_ICOUNT").is_some_and(|v| v == "1") {
        eprintln!("skipped: ZONEALLOC_SKIP_ICOUNT=1");
        return;
    }
    assert!(
        valgrind_available(),
        "the instruction-count check needs valgrind: install it (Debian/Ubuntu: \
         `sudo apt-get install -y valgrind`; Fedora: `sudo dnf install valgrind`), or set \
         ZONEALLOC_SKIP_ICOUNT=1 to skip this check"
    );
    let root = workspace_root();
    let bin = build(&root);
    let out_dir = root.join("target").join("icount");
    let mut over = Vec::new();
    for (case, budget) in budgets() {
        let (a, b) = (
            count(&bin, &case, N1, &out_dir),
            count(&bin, &case, N2, &out_dir),
        );
        // To the hundredth: a stray instruction or two outside the loop must not fail the check.
        let per_pair = (b.saturating_sub(a) as f64 / (N2 - N1) as f64 * 100.0).round() / 100.0;
        eprintln!("{case}: {per_pair:.2} instructions per pair (budget {budget})");
        if per_pair > budget {
            over.push(format!("{case}: {per_pair:.2} > {budget}"));
        } else if per_pair < budget * 0.9 {
            eprintln!("  {case} is well under budget: lower it in budget.toml to keep the gain");
        }
    }
    assert!(
        over.is_empty(),
        "PCP hit path over its instruction budget (crates/zonealloc-icount/budget.toml):\n  {}",
        over.join("\n  ")
    );
}
