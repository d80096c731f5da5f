//! `zonealloc-icount-single CASE ORDER PAIRS`: as `zonealloc-icount`, but each API has one
//! call site in the program (one loop function serves the warm-up and the measured pairs), so
//! rustc may inline it the way it inlines a function with a single caller. Kept beside the
//! two-call-site figure to show what the entry points cost when that inlining is not needed.

use std::hint::black_box;
use std::process::ExitCode;

#[path = "../harness.rs"]
mod harness;
use harness::{Loops, CPU, MT};

pair_loops!(handle_pairs, on_cpu_pairs, zone_pairs);

fn main() -> ExitCode {
    harness::run(Loops {
        handle: [handle_pairs, handle_pairs],
        on_cpu: [on_cpu_pairs, on_cpu_pairs],
        zone: [zone_pairs, zone_pairs],
    })
}
