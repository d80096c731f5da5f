//! `zonealloc`: the lab.
//!
//! - `zonealloc lab [EXPERIMENT]` runs the registered experiments (all, in order, or the one
//!   named), each comparing a seed change's policy off (baseline) and on (variants), and writes
//!   a report folder: `report.md` (compare-kernels style tables), `results.json` (every raw
//!   sample, the options and the machine) and SVG plots. `--json` prints the results document
//!   to stdout instead of the human summary.
//! - `zonealloc buddyinfo|zoneinfo|pagetypeinfo` prints the kernel's `/proc` text for a node
//!   built from an embedded x86-64-like memory map after a chosen workload.
//!
//! - `zonealloc bench` runs the same workloads on zonealloc and on other allocators and prints
//!   a table of ops/s and ns/op with each one's ratio to zonealloc (and JSON with `--json`).
//!
//! Exit codes: 0 success, 1 an experiment, a bench cell or the report failed, 2 a usage
//! error (bad flag, unknown experiment).

use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use zonealloc_lab::bench::{self, peers::Peer, runner, workloads::Workload, BenchOpts};
use zonealloc_lab::experiments::{self, Experiment, LabOpts};
use zonealloc_lab::report::{self, ExperimentReport, Failure, LabReport};
use zonealloc_lab::{inspect, machine, trace};

/// Exit status of usage errors, as clap uses for bad flags.
const EXIT_USAGE: u8 = 2;

/// The page-frame allocator lab.
#[derive(Debug, Parser)]
#[command(name = "zonealloc", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the experiments (all, or the one named) and write a report folder.
    Lab(LabArgs),
    /// Print /proc/buddyinfo after a workload.
    Buddyinfo(InspectArgs),
    /// Print /proc/zoneinfo (free pages, watermarks, pagesets) after a workload.
    Zoneinfo(InspectArgs),
    /// Print /proc/pagetypeinfo after a workload.
    Pagetypeinfo(InspectArgs),
    /// Time the same workloads on zonealloc and on other allocators; print a table of ops/s,
    /// ns/op and each peer's ratio to zonealloc.
    Bench(BenchArgs),
    /// Read kernel kmem page-allocator traces (ftrace, perf script, trace-cmd report).
    #[command(subcommand)]
    Trace(TraceCommand),
}

#[derive(Debug, Subcommand)]
enum TraceCommand {
    /// Summarise what a trace says: events, orders, CPUs, reused frames, refills, drains.
    Stats(TraceStatsArgs),
    /// Replay a trace against one or more policy variants and write a report folder.
    Replay(TraceReplayArgs),
    /// Write a synthetic trace of one of the lab's workloads.
    Gen(TraceGenArgs),
}

#[derive(Debug, Args)]
struct TraceReplayArgs {
    /// The trace file (plain text, gzip or zstd).
    file: PathBuf,
    /// A policy set: `upstream`, or comma-separated knob=value items on top of it
    /// (tail_merge=on|off, batch_scale_max=0..=6, free_high=off|original|current, pcp=on|off,
    /// batch=N, high_min=N, high_max=N, high_fraction=N, mobility=on|off). Repeat the flag to
    /// compare several in one run; the first is the baseline.
    #[arg(long = "variant", value_name = "SPEC", default_value = "upstream")]
    variants: Vec<String>,
    /// Zone size in pages (default: the trace's pfn span, aligned to MAX_PAGE_ORDER blocks).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..(1u64 << 32)))]
    zone_pages: Option<u64>,
    /// First pfn of the zone (default: the trace's lowest pfn, aligned down).
    #[arg(long, value_parser = parse_pfn_arg)]
    zone_start: Option<u64>,
    /// CPUs (default: the highest CPU in the trace plus one); trace CPU c replays on c % N.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    cpus: Option<u32>,
    /// Switch the per-CPU lists off in every variant (buddy only).
    #[arg(long)]
    no_pcp: bool,
    /// The trace's migratetype numbering (inferred from gfp_flags when not given).
    #[arg(long, value_enum, value_name = "NUMBERING")]
    migratetypes: Option<trace::migratetype::Numbering>,
    /// Fragmentation samples taken over the trace.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    samples: u64,
    /// Write the replayed run's own events in ftrace format to FILE (with several variants,
    /// FILE.<variant>.<ext> each).
    #[arg(long, value_name = "FILE")]
    emit: Option<PathBuf>,
    /// The report folder.
    #[arg(long, default_value = "replay-report")]
    out: PathBuf,
    /// Print the results as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Fail (exit 1) before replaying if any line is malformed.
    #[arg(long)]
    strict: bool,
}

#[derive(Debug, Args)]
struct TraceGenArgs {
    /// The workload.
    #[arg(long, value_enum, default_value_t = trace::gen::GenWorkload::Mixed)]
    workload: trace::gen::GenWorkload,
    /// Where to write the trace (`-`: stdout; a name ending in .gz is gzip-compressed).
    #[arg(short, long, default_value = "-")]
    output: PathBuf,
    /// Operations (allocations plus frees), roughly.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    ops: u64,
    /// CPUs.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=4096))]
    cpus: u32,
    /// Zone size in pages.
    #[arg(long, default_value_t = 1 << 16, value_parser = clap::value_parser!(u64).range(1..(1u64 << 32)))]
    zone_pages: u64,
    /// First pfn of the zone.
    #[arg(long, default_value = "0", value_parser = parse_pfn_arg)]
    zone_start: u64,
    /// The policy set of the recorded zone (as for `trace replay --variant`).
    #[arg(long, default_value = "upstream")]
    variant: String,
    /// Seed of the workload's choices.
    #[arg(long, default_value_t = 0x5eed)]
    seed: u64,
}

/// A pfn flag: decimal, or hex with `0x`.
fn parse_pfn_arg(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("'{s}' is not a frame number (decimal, or hex with 0x)"))
}

#[derive(Debug, Args)]
struct TraceStatsArgs {
    /// The trace file (plain text, gzip or zstd).
    file: PathBuf,
    /// The trace's migratetype numbering: `legacy` for kernels before 4.4 (Movable and
    /// Reclaimable swapped). Inferred from the allocations' gfp_flags when not given.
    #[arg(long, value_enum, value_name = "NUMBERING")]
    migratetypes: Option<trace::migratetype::Numbering>,
    /// Fail (exit 1) if any line is malformed.
    #[arg(long)]
    strict: bool,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct LabArgs {
    /// The experiment to run (default: all, in order). `zonealloc lab --list` names them.
    experiment: Option<String>,
    /// List the registered experiments and exit.
    #[arg(long)]
    list: bool,
    /// The report folder.
    #[arg(long, default_value = "lab-report")]
    out: PathBuf,
    /// Print the results as JSON on stdout (and nothing else there).
    #[arg(long)]
    json: bool,
    /// Tiny sizes (about a second per experiment), for tests and smoke runs.
    #[arg(long)]
    quick: bool,
    /// Seed of every pseudo-random choice.
    #[arg(long, default_value_t = 0x5eed)]
    seed: u64,
    /// Worker threads (default: each experiment's own).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=4096))]
    threads: Option<u64>,
    /// Repetitions of each measurement (default: each experiment's own).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    iterations: Option<u64>,
    /// Zone size in pages (default: each experiment's own).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=(1u64 << 40)))]
    zone_pages: Option<u64>,
    /// Run only these variants (comma-separated names as the report prints them); the
    /// baseline always runs too, since every comparison is against it.
    #[arg(long, value_delimiter = ',')]
    variants: Option<Vec<String>>,
    /// Also write the deterministic experiments' runs (free-high's interleaved mode and
    /// tail-merge; the first iteration of each variant) as kernel traces into DIR, readable
    /// by `zonealloc trace stats|replay` and the usual trace tools.
    #[arg(long, value_name = "DIR")]
    record_traces: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct BenchArgs {
    /// Workloads to run (repeat the flag or separate with commas; default: all).
    #[arg(
        long = "workload",
        value_enum,
        value_delimiter = ',',
        value_name = "WORKLOAD"
    )]
    workloads: Vec<Workload>,
    /// Allocators to compare (default: all in this build). zonealloc always runs: every
    /// ratio is against it.
    #[arg(long = "peer", value_enum, value_delimiter = ',', value_name = "PEER")]
    peers: Vec<Peer>,
    /// Thread counts for the multi-threaded workloads, e.g. `1,2,4` (default: 1, the
    /// machine's cores and twice that; rows with more threads than cores are flagged).
    #[arg(long, value_delimiter = ',', value_name = "N,...",
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    threads: Vec<u64>,
    /// Length of each timed repetition in milliseconds, ops sized by the warm-up (default
    /// 100; with --quick, a fixed 128 ops instead).
    #[arg(long, value_name = "MS", conflicts_with = "ops",
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    duration_ms: Option<u64>,
    /// Ops per thread in each timed repetition, instead of a duration.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=(1u64 << 32)))]
    ops: Option<u64>,
    /// Timed repetitions per row; the table shows their median (default 5; 1 with --quick).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1000))]
    repetitions: Option<u64>,
    /// Pages each frame allocator manages, a power of two from 1024 to 2^20 (default 65536,
    /// 256 MiB; 4096 with --quick). `mixed` keeps 80% of it allocated, also on the memory
    /// allocators, where `mmap` really faults that much in.
    #[arg(long, value_name = "PAGES", value_parser = parse_pool_pages)]
    pool_pages: Option<u64>,
    /// Write the JSON document (every repetition, the machine, the options): to FILE, or
    /// without FILE to stdout instead of the table.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    json: Option<Option<PathBuf>>,
    /// Tiny sizes (about a second for everything), for tests and smoke runs; not for quoting.
    #[arg(long)]
    quick: bool,
    /// Seed of the workloads' random choices.
    #[arg(long, default_value_t = 0x5eed)]
    seed: u64,
}

/// `--pool-pages`: a power of two in `1024..=2^20`.
fn parse_pool_pages(s: &str) -> Result<u64, String> {
    let n: u64 = s.parse().map_err(|e| format!("{e}"))?;
    if !(1024..=1 << 20).contains(&n) || !n.is_power_of_two() {
        return Err(format!(
            "{n} is not a power of two from 1024 to 1048576 (the frame allocators need whole \
             max-order blocks)"
        ));
    }
    Ok(n)
}

#[derive(Debug, Args)]
struct InspectArgs {
    /// The workload run before printing.
    #[arg(long, value_enum, default_value_t = inspect::Workload::Mixed)]
    workload: inspect::Workload,
    /// Seed of the workload's pseudo-random choices.
    #[arg(long, default_value_t = 0x5eed_2024)]
    seed: u64,
}

fn main() -> ExitCode {
    // `zonealloc lab --help` lists the registered experiments, which only exist at run time.
    let listing = format!("Experiments:\n{}", known_names(&experiments::all()));
    let matches = Cli::command()
        .mut_subcommand("lab", |c| c.after_help(listing))
        .get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match cli.command {
        Command::Lab(args) => lab(&args),
        Command::Buddyinfo(a) => inspect_cmd(inspect::View::Buddyinfo, &a),
        Command::Zoneinfo(a) => inspect_cmd(inspect::View::Zoneinfo, &a),
        Command::Pagetypeinfo(a) => inspect_cmd(inspect::View::Pagetypeinfo, &a),
        Command::Trace(TraceCommand::Stats(a)) => trace_stats(&a),
        Command::Trace(TraceCommand::Replay(a)) => trace_replay(&a),
        Command::Trace(TraceCommand::Gen(a)) => trace_gen(&a),
        Command::Bench(a) => bench_cmd(&a),
    }
}

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
    };
    opts.normalize();
    Ok(opts)
}

fn bench_cmd(args: &BenchArgs) -> ExitCode {
    let machine = machine::Machine::detect();
    let opts = match bench_opts(args, machine.logical_cores) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
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
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let report = bench::run(&opts, machine, command, &progress);
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
    let json = match serde_json::to_string_pretty(&report) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: serialising the results: {e}");
            return ExitCode::FAILURE;
        }
    };
    let printed = match &args.json {
        Some(None) => emit(&format!("{json}\n")),
        Some(Some(path)) => match std::fs::write(path, format!("{json}\n")) {
            Ok(()) => emit(&report.render()),
            Err(e) => {
                eprintln!("error: writing {}: {e}", path.display());
                ok = false;
                emit(&report.render())
            }
        },
        None => emit(&report.render()),
    };
    if ok && printed == ExitCode::SUCCESS {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn trace_replay(args: &TraceReplayArgs) -> ExitCode {
    use trace::replay_report as rr;
    let mut variants = Vec::new();
    for spec in &args.variants {
        match trace::variant::Variant::parse(spec) {
            Ok(v)
                if variants
                    .iter()
                    .any(|w: &trace::variant::Variant| w.name == v.name) =>
            {
                eprintln!("error: --variant '{}' given twice", v.name);
                return ExitCode::from(EXIT_USAGE);
            }
            Ok(v) => variants.push(v),
            Err(e) => {
                eprintln!("error: --variant: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    let opts = rr::ReplayOptions {
        variants,
        zone_start: args.zone_start,
        zone_pages: args.zone_pages,
        cpus: args.cpus,
        no_pcp: args.no_pcp,
        numbering: args.migratetypes,
        samples: args.samples,
        emit: args.emit.clone(),
        strict: args.strict,
    };
    let bar = progress_bar(!args.json && std::io::stderr().is_terminal(), "replay");
    let progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done.min(total));
    };
    let started = std::time::Instant::now();
    let run = match rr::run(&args.file, &opts, &progress) {
        Ok(r) => r,
        Err(e) => {
            bar.abandon();
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    bar.finish_and_clear();
    let p = &run.stats.parser;
    if p.malformed > 0 {
        eprintln!(
            "warning: {}: {}",
            args.file.display(),
            p.malformed_summary()
        );
    }
    let result = rr::to_result(&run, &args.file, &opts);
    let summary = rr::summary(&result, &run);
    let report = LabReport {
        tool: format!("{} {}", env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine: machine::Machine::detect(),
        opts: LabOpts {
            quick: false,
            seed: 0,
            threads: Some(1),
            iterations: Some(1),
            zone_pages: Some(run.geo.zone_pages),
            variants: Some(args.variants.clone()),
            record_traces: None,
        },
        significance_test: report::compare::SIGNIFICANCE_TEST.to_owned(),
        experiments: vec![ExperimentReport::new(
            result,
            started.elapsed().as_secs_f64(),
        )],
        failures: Vec::new(),
    };
    let mut ok = true;
    match report::write(&args.out, &report) {
        Ok(warnings) => warnings.iter().for_each(|w| eprintln!("warning: {w}")),
        Err(e) => {
            eprintln!("error: writing the report: {e}");
            ok = false;
        }
    }
    for e in &run.emitted {
        eprintln!("emitted: {}", e.display());
    }
    let text = if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => format!("{s}\n"),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        format!("{summary}report: {}\n", args.out.display())
    };
    let code = emit(&text);
    if ok {
        code
    } else {
        ExitCode::FAILURE
    }
}

fn trace_gen(args: &TraceGenArgs) -> ExitCode {
    let variant = match trace::variant::Variant::parse(&args.variant) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: --variant: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let cfg = variant.cfg.with_cpus(args.cpus);
    let (start, end) = (
        args.zone_start,
        args.zone_start.saturating_add(args.zone_pages),
    );
    let zone = match zonealloc::Zone::new(
        zonealloc::ZoneType::Normal,
        zonealloc::Pfn(start),
        zonealloc::Pfn(end),
        cfg,
    )
    .and_then(|z| {
        z.add_free_range(zonealloc::Pfn(start), zonealloc::Pfn(end))
            .map(|_| z)
            .map_err(zonealloc::ConfigError::Range)
    }) {
        Ok(z) => z,
        Err(e) => {
            eprintln!("error: the zone: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let to_stdout = args.output.as_os_str() == "-";
    let out: Box<dyn std::io::Write> = if to_stdout {
        Box::new(std::io::BufWriter::new(std::io::stdout().lock()))
    } else {
        match std::fs::File::create(&args.output) {
            Ok(f) => {
                let f = std::io::BufWriter::with_capacity(1 << 16, f);
                if args.output.extension().is_some_and(|e| e == "gz") {
                    Box::new(flate2::write::GzEncoder::new(
                        f,
                        flate2::Compression::default(),
                    ))
                } else {
                    Box::new(f)
                }
            }
            Err(e) => {
                eprintln!("error: {}: {e}", args.output.display());
                return ExitCode::FAILURE;
            }
        }
    };
    let params = trace::gen::GenParams {
        ops: args.ops,
        cpus: args.cpus,
        seed: args.seed,
    };
    let mut rec = match trace::record::Recorder::new(&zone, out, 1_000) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: writing the trace: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = trace::gen::run(args.workload, &zone, &mut rec, params) {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    let n = rec.events();
    match rec.finish().and_then(|mut w| w.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: writing the trace: {e}");
            return ExitCode::FAILURE;
        }
    }
    if let Err(e) = zone.check() {
        eprintln!("error: allocator invariant violated: {e}");
        return ExitCode::FAILURE;
    }
    if !to_stdout {
        eprintln!("wrote {n} events to {}", args.output.display());
    }
    ExitCode::SUCCESS
}

/// A progress bar on stderr (hidden unless `show`).
fn progress_bar(show: bool, prefix: &'static str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        None,
        if show {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix:>14} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
    ) {
        bar.set_style(style);
    }
    bar.set_prefix(prefix);
    bar
}

fn trace_stats(args: &TraceStatsArgs) -> ExitCode {
    let mut stats = match trace::parse::open(&args.file).and_then(trace::stats::TraceStats::read) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: reading {}: {e}", args.file.display());
            return ExitCode::FAILURE;
        }
    };
    stats.given_numbering = args.migratetypes;
    let p = &stats.parser;
    if args.strict && p.malformed > 0 {
        eprintln!("error: {}: {}", args.file.display(), p.malformed_summary());
        return ExitCode::FAILURE;
    }
    if args.json {
        match serde_json::to_string_pretty(&stats.to_json()) {
            Ok(s) => emit(&format!("{s}\n")),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        }
    } else {
        emit(&stats.render())
    }
}

fn inspect_cmd(view: inspect::View, args: &InspectArgs) -> ExitCode {
    match inspect::run(view, args.workload, args.seed) {
        Ok(text) => emit(&text),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes `text` to stdout. A closed pipe (`zonealloc buddyinfo | head -1`) ends quietly
/// instead of panicking as `print!` would; other write errors are reported.
fn emit(text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: writing to stdout: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The registered experiments' names, for error messages and `--list`.
fn known_names(all: &[&'static dyn Experiment]) -> String {
    if all.is_empty() {
        return "(none registered)".to_owned();
    }
    all.iter()
        .map(|e| format!("  {:<14} {}", e.name(), e.about()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Picks the experiments to run: all, or the one named.
fn select(
    all: &[&'static dyn Experiment],
    name: Option<&str>,
) -> Result<Vec<&'static dyn Experiment>, String> {
    match name {
        None => Ok(all.to_vec()),
        Some(name) => match all.iter().find(|e| e.name() == name) {
            Some(e) => Ok(vec![*e]),
            None => Err(format!(
                "unknown experiment '{name}'; known experiments:\n{}",
                known_names(all)
            )),
        },
    }
}

fn to_usize(v: Option<u64>, flag: &str) -> Result<Option<usize>, String> {
    v.map(|v| usize::try_from(v).map_err(|_| format!("--{flag} {v} is too large for this machine")))
        .transpose()
}

/// The options every experiment receives, from the flags.
fn lab_opts(args: &LabArgs) -> Result<LabOpts, String> {
    Ok(LabOpts {
        quick: args.quick,
        seed: args.seed,
        threads: to_usize(args.threads, "threads")?,
        iterations: to_usize(args.iterations, "iterations")?,
        zone_pages: args.zone_pages,
        variants: args.variants.clone(),
        record_traces: args.record_traces.clone(),
    })
}

fn lab(args: &LabArgs) -> ExitCode {
    let all = experiments::all();
    if args.list {
        return emit(&format!("{}\n", known_names(&all)));
    }
    let chosen = match select(&all, args.experiment.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let opts = match lab_opts(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if let Some(dir) = &opts.record_traces {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("error: --record-traces {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
    }

    let show_progress = !args.json && std::io::stdout().is_terminal();
    let mut results = Vec::new();
    let mut failures = Vec::new();
    for e in &chosen {
        let started = std::time::Instant::now();
        match run_one(*e, &opts, show_progress) {
            Ok(r) => results.push(ExperimentReport::new(r, started.elapsed().as_secs_f64())),
            Err(err) => {
                eprintln!("error: experiment {} failed: {err}", e.name());
                failures.push(Failure {
                    experiment: e.name().to_owned(),
                    error: err,
                });
            }
        }
    }

    let report = LabReport {
        tool: format!("{} {}", env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine: machine::Machine::detect(),
        opts,
        significance_test: report::compare::SIGNIFICANCE_TEST.to_owned(),
        experiments: results,
        failures,
    };
    let mut ok = report.failures.is_empty();
    match report::write(&args.out, &report) {
        Ok(warnings) => {
            for w in warnings {
                eprintln!("warning: {w}");
            }
        }
        Err(e) => {
            eprintln!("error: writing the report: {e}");
            ok = false;
        }
    }

    let mut stdout = std::io::stdout().lock();
    let printed = if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => writeln!(stdout, "{s}"),
            Err(e) => {
                eprintln!("error: serialising the results: {e}");
                ok = false;
                Ok(())
            }
        }
    } else {
        write!(
            stdout,
            "{}\nreport: {}\n",
            report::summary_table(&report),
            args.out.display()
        )
    };
    // A closed pipe (`zonealloc lab | head`) is not worth a panic; report it and fail.
    if let Err(e) = printed.and_then(|()| stdout.flush()) {
        eprintln!("error: writing to stdout: {e}");
        ok = false;
    }
    if args.json {
        eprintln!("report: {}", args.out.display());
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs one experiment with a progress bar (drawn on stderr when `show` is set).
fn run_one(
    e: &dyn Experiment,
    opts: &LabOpts,
    show: bool,
) -> Result<experiments::ExperimentResult, String> {
    let bar = progress_bar(show, e.name());
    let progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done.min(total));
    };
    // A panicking experiment is a bug in it, but it must not take the other experiments'
    // results down with it: it becomes a failure in the report.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| e.run(opts, &progress)))
        .map_err(|payload| {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown payload".to_owned());
            format!("panicked: {msg}")
        })
        .and_then(|r| r.map_err(|err| err.to_string()));
    match &result {
        Ok(_) => bar.finish_with_message("done"),
        Err(_) => bar.abandon_with_message("failed"),
    }
    result
}
