//! `zonealloc bench`: the same workloads on zonealloc and on other allocators, as a table of
//! ops/s, ns/op and ratios (or JSON).

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use zonealloc_lab::bench::{self, peers::Peer, runner, workloads::Workload, BenchOpts};
use zonealloc_lab::machine;

use super::{command_line, emit, Exit};
use crate::cli::BenchArgs;

/// The bench's options from its flags.
fn bench_opts(args: &BenchArgs, cores: usize) -> Result<BenchOpts, String> {
    let usize_of = |v: u64, flag: &str| {
        usize::try_from(v).map_err(|_| format!("--{flag} {v} is too large for this machine"))
    };
    let threads = if args.threads.is_empty() {
        BenchOpts::default_threads(cores)
    } else {
        args.threads
            .iter()
            .map(|&t| usize_of(t, "threads"))
            .collect::<Result<_, _>>()?
    };
    let ops = match (args.ops, args.duration_ms, args.quick) {
        (Some(n), _, _) => runner::OpsPlan::Fixed(n),
        (None, Some(ms), _) => runner::OpsPlan::DurationMs(ms),
        (None, None, true) => runner::OpsPlan::Fixed(128),
        (None, None, false) => runner::OpsPlan::DurationMs(100),
    };
    let repetitions = usize_of(
        args.repetitions.unwrap_or(if args.quick { 1 } else { 5 }),
        "repetitions",
    )?;
    let mut opts = BenchOpts {
        workloads: if args.workloads.is_empty() {
            Workload::ALL.to_vec()
        } else {
            args.workloads.clone()
        },
        peers: if args.peers.is_empty() {
            Peer::ALL.into_iter().filter(|p| p.available()).collect()
        } else {
            args.peers.clone()
        },
        threads,
        plan: runner::Plan {
            ops,
            repetitions,
            pool_pages: args
                .pool_pages
                .unwrap_or(if args.quick { 4096 } else { 65536 }),
            seed: args.seed,
        },
        quick: args.quick,
        icount: !args.quick && !args.no_icount && bench::icount::valgrind_available(),
    };
    opts.normalize();
    Ok(opts)
}

/// Runs the bench and prints its table (or JSON); a failed cell fails the command after
/// the table is printed.
pub fn bench(args: &BenchArgs) -> Result<(), Exit> {
    if let Some(ops) = args.icount_child {
        return icount_child(args, ops);
    }
    let machine = machine::Machine::detect();
    let opts = bench_opts(args, machine.logical_cores).map_err(Exit::Usage)?;
    let bar = ProgressBar::with_draw_target(
        None,
        if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(style) =
        ProgressStyle::with_template("bench [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
    {
        bar.set_style(style);
    }
    let progress = |done: usize, total: usize, what: &str| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        bar.set_message(what.to_owned());
    };
    let report = bench::run(&opts, machine, command_line(), &progress);
    bar.finish_and_clear();

    let mut ok = true;
    for c in report.failures() {
        if let bench::report::Outcome::Failed(why) = &c.outcome {
            eprintln!(
                "error: {} on {} with {} threads failed: {why}",
                c.workload.name(),
                c.peer.name(),
                c.threads
            );
        }
        ok = false;
    }
    let json = serde_json::to_string_pretty(&report)
        .map_err(|e| Exit::Failure(format!("serialising the results: {e}")))?;
    match &args.json {
        Some(None) => emit(&format!("{json}\n"))?,
        Some(Some(path)) => {
            if let Err(e) = std::fs::write(path, format!("{json}\n")) {
                eprintln!("error: writing {}: {e}", path.display());
                ok = false;
            }
            emit(&report.render())?;
        }
        None => emit(&report.render())?,
    }
    if ok {
        Ok(())
    } else {
        Err(Exit::Reported)
    }
}

/// `--icount-child OPS`: one workload on one peer, nothing printed (see `bench::icount`).
fn icount_child(args: &BenchArgs, ops: u64) -> Result<(), Exit> {
    let (&[wl], &[peer]) = (args.workloads.as_slice(), args.peers.as_slice()) else {
        return Err(Exit::Usage(
            "--icount-child needs exactly one --workload and one --peer".into(),
        ));
    };
    let pool = args.pool_pages.unwrap_or(65536);
    bench::icount::run_child(peer, wl, ops, pool, args.seed).map_err(Exit::Failure)
}
