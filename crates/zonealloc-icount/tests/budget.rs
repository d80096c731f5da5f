//! The instruction budget of the PCP hit path, checked without timing anything.
//!
//! Builds `zonealloc-icount` (`src/main.rs`: every API called from two places) and
//! `zonealloc-icount-single` (one place) in release, in their own target directory
//! (`target/icount`: the outer `cargo test` holds the lock of the usual one, and a test build
//! is unoptimised, so its counts would mean nothing). Then, for each case and order of
//! `budget.toml`, runs it under `valgrind --tool=callgrind` for two pair counts and takes
//! `(total(N2) - total(N1)) / (N2 - N1)`: the instructions of one alloc+free pair, with the
//! zone's setup, the warm-up and the exit cancelled out. Callgrind counts instructions
//! exactly, so the figure is the same on every run of a build and the check cannot be flaky.
//!
//! Needs valgrind (`sudo apt-get install -y valgrind`); `ZONEALLOC_SKIP_ICOUNT=1` skips the
//! check where it cannot be installed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Pair counts of the two runs: the same number of digits, so that parsing the argument costs
/// the same in both, and the difference (20,000 pairs) gives instructions per pair to the
/// hundredth. A run takes under a second under callgrind.
const N1: u64 = 20_000;
const N2: u64 = 40_000;

/// The most a pair of another PCP order may cost, as a multiple of the same API's order-0 pair
/// (issue 16's goal for orders 1 to 3 and the THP order).
const MAX_ORDER_RATIO: f64 = 1.3;

/// The tables of `budget.toml` and the binaries they measure.
const BINARIES: [(&str, &str); 2] = [
    ("two_sites", "zonealloc-icount"),
    ("one_site", "zonealloc-icount-single"),
];

/// One budget: binary, case, order, most instructions per pair.
struct Budget {
    bin: &'static str,
    case: String,
    order: u8,
    max: f64,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/zonealloc-icount sits two levels below the workspace root")
        .to_path_buf()
}

/// Every budget of `budget.toml`: `[TABLE.CASE]` tables of `orderN = budget`, `TABLE` one of
/// [`BINARIES`].
fn budgets() -> Vec<Budget> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("budget.toml");
    let text = std::fs::read_to_string(&path).expect("read budget.toml");
    let doc: toml::Table = text
        .parse()
        .unwrap_or_else(|e| panic!("budget.toml is not valid TOML: {e}"));
    let mut out = Vec::new();
    for (table, cases) in &doc {
        let bin = BINARIES
            .iter()
            .find(|(t, _)| t == table)
            .unwrap_or_else(|| panic!("budget.toml: unknown table [{table}]"))
            .1;
        let cases = cases
            .as_table()
            .unwrap_or_else(|| panic!("budget.toml: [{table}] is not a table"));
        for (case, orders) in cases {
            let orders = orders
                .as_table()
                .unwrap_or_else(|| panic!("budget.toml: [{table}.{case}] is not a table"));
            for (key, v) in orders {
                let order = key
                    .strip_prefix("order")
                    .and_then(|o| o.parse::<u8>().ok())
                    .unwrap_or_else(|| panic!("budget.toml: [{table}.{case}] key `{key}`"));
                let max = v.as_integer().unwrap_or_else(|| {
                    panic!("budget.toml: [{table}.{case}] {key} is not an integer")
                });
                out.push(Budget {
                    bin,
                    case: case.clone(),
                    order,
                    max: max as f64,
                });
            }
        }
    }
    assert!(!out.is_empty(), "budget.toml has no budgets");
    out
}

fn valgrind_available() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Builds the pair loops in release and returns their directory.
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
    target.join("release")
}

/// Instructions callgrind counts for one run of `case` at `order` with `pairs` pairs.
fn count(bin: &Path, case: &str, order: u8, pairs: u64, out_dir: &Path) -> u64 {
    let name = bin.file_name().and_then(|n| n.to_str()).unwrap_or("bin");
    let out = out_dir.join(format!("callgrind.{name}.{case}.{order}.{pairs}.out"));
    let run = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(bin)
        .arg(case)
        .arg(order.to_string())
        .arg(pairs.to_string())
        .output()
        .expect("run valgrind");
    assert!(
        run.status.success(),
        "{name} {case} {order} {pairs} failed under valgrind:\n{}",
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
    let dir = build(&root);
    let out_dir = root.join("target").join("icount");
    let mut over = Vec::new();
    let mut measured: Vec<(&'static str, String, u8, f64)> = Vec::new();
    for b in budgets() {
        let bin = dir.join(format!("{}{}", b.bin, std::env::consts::EXE_SUFFIX));
        let (x, y) = (
            count(&bin, &b.case, b.order, N1, &out_dir),
            count(&bin, &b.case, b.order, N2, &out_dir),
        );
        // To the hundredth: a stray instruction or two outside the loop must not fail the check.
        let per_pair = (y.saturating_sub(x) as f64 / (N2 - N1) as f64 * 100.0).round() / 100.0;
        let what = format!("{} {} order {}", b.bin, b.case, b.order);
        eprintln!(
            "{what}: {per_pair:.2} instructions per pair (budget {})",
            b.max
        );
        measured.push((b.bin, b.case.clone(), b.order, per_pair));
        if per_pair > b.max {
            over.push(format!("{what}: {per_pair:.2} > {}", b.max));
        } else if per_pair < b.max * 0.9 {
            eprintln!("  {what} is well under budget: lower it in budget.toml to keep the gain");
        }
    }
    // Every other PCP order within MAX_ORDER_RATIO of the same API's order-0 pair.
    for (bin, case, order, per_pair) in &measured {
        let order0 = measured
            .iter()
            .find(|(b, c, o, _)| b == bin && c == case && *o == 0);
        if let Some(&(_, _, _, zero)) = order0 {
            if *order != 0 && *per_pair > zero * MAX_ORDER_RATIO {
                over.push(format!(
                    "{bin} {case} order {order}: {per_pair:.2} > {MAX_ORDER_RATIO} x order 0 \
                     ({zero:.2})"
                ));
            }
        }
    }
    assert!(
        over.is_empty(),
        "PCP hit path over its instruction budget (crates/zonealloc-icount/budget.toml):\n  {}",
        over.join("\n  ")
    );
}
