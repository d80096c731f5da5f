//! `zonealloc`: the lab.
//!
//! - `zonealloc lab [EXPERIMENT]` runs the registered experiments (all, in order, or the one
//!   named), each comparing a seed change's policy off (baseline) and on (variants), judges
//!   the seeds' published claims on the run, and writes a new report folder per run (under
//!   `lab-report/`, or `--out`): `report.md` (the verdicts, then compare-kernels style
//!   tables), `results.json` (verdicts, every raw sample, the options, the machine, commit,
//!   compiler, date and load) and SVG plots. `--json` prints the results document to stdout
//!   instead of the human summary. `zonealloc lab compare RUN...` puts runs side by side.
//! - `zonealloc buddyinfo|zoneinfo|pagetypeinfo` prints the kernel's `/proc` text for a node
//!   built from an embedded x86-64-like memory map after a chosen workload.
//!
//! - `zonealloc bench` runs the same workloads on zonealloc and on other allocators and prints
//!   a table of ops/s and ns/op with each one's ratio to zonealloc (and JSON with `--json`).
//!
//! - `zonealloc trace stats|replay|gen` reads, replays and writes kernel `kmem` traces.
//!
//! - `zonealloc completions SHELL` and `zonealloc man` print shell completions and the man
//!   page, generated from the clap definition ([`manual`]); `--version` names the commit.
//!
//! Exit codes: 0 success, 1 an experiment, a bench cell or the report failed, 2 a usage
//! error (bad flag, unknown experiment).
//!
//! This binary is argument parsing ([`cli`]) and dispatch ([`commands`]); the work lives in
//! the `zonealloc_lab` library.

mod cli;
mod commands;
mod manual;

use std::process::ExitCode;

fn main() -> ExitCode {
    // `zonealloc lab` runs this binary under valgrind as the loops of its deterministic
    // proxies (instruction counts, simulated cache misses).
    if let Some(code) = zonealloc_lab::experiments::valgrind::child() {
        return code;
    }
    let done = match cli::parse().command {
        cli::TopCommand::Run(command) => commands::run(command),
        cli::TopCommand::Completions(a) => manual::completions(a.shell),
        cli::TopCommand::Man(a) => manual::man(a.out.as_deref()),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(exit) => exit.code(),
    }
}
