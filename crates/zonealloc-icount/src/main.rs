//! `zonealloc-icount CASE ORDER PAIRS`, with every API called from two places (the warm-up
//! loop and the measured loop are separate functions), as in any program that allocates in
//! more than one place: rustc cannot inline an entry point the one-caller way. What CI
//! budgets. See `harness.rs` for the cases; `bin/zonealloc-icount-single.rs` is the same
//! with one call site per API.

use std::hint::black_box;
use std::process::ExitCode;

#[path = "harness.rs"]
mod harness;
use harness::{Loops, CPU, MT};

pair_loops!(handle_warm, on_cpu_warm, zone_warm);
pair_loops!(handle_run, on_cpu_run, zone_run);

fn main() -> ExitCode {
    harness::run(Loops {
        handle: [handle_warm, handle_run],
        on_cpu: [on_cpu_warm, on_cpu_run],
        zone: [zone_warm, zone_run],
    })
}
