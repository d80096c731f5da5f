//! The command line: every flag of `zonealloc`, as clap definitions. No work happens here;
//! [`commands`](crate::commands) runs what was parsed.

use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use zonealloc_lab::bench::{peers::Peer, workloads::Workload};
use zonealloc_lab::experiments::{self, Experiment};
use zonealloc_lab::{inspect, trace};

/// Parses the process's arguments (exiting with clap's message and status 2 on a bad flag).
///
/// `zonealloc lab --help` lists the registered experiments, which only exist at run time.
pub fn parse() -> Cli {
    let matches = command().get_matches();
    match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    }
}

/// The whole command line as clap knows it: what [`parse`] parses, and what the man page and
/// the shell completions are generated from.
pub fn command() -> clap::Command {
    let listing = format!("Experiments:\n{}", known_names(&experiments::all()));
    Cli::command().mut_subcommand("lab", |c| c.after_help(listing))
}

/// The registered experiments' names, for error messages and `--list`.
pub fn known_names(all: &[&'static dyn Experiment]) -> String {
    if all.is_empty() {
        return "(none registered)".to_owned();
    }
    all.iter()
        .map(|e| format!("  {:<14} {}", e.name(), e.about()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The page-frame allocator lab.
#[derive(Debug, Parser)]
// `--version` and `-V`: the crate's version and the commit it was built from (build.rs).
#[command(name = "zonealloc", version = env!("ZONEALLOC_LONG_VERSION"), about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: TopCommand,
}

/// Every subcommand: the work ([`Command`]) and two that describe the command line itself.
#[derive(Debug, Subcommand)]
// Parsed once per run, as `Command` is: its size costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum TopCommand {
    #[command(flatten)]
    Run(Command),
    /// Print a completion script for a shell (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Load it in bash with `source <(zonealloc completions bash)`, or \
        save it where the shell looks: `zonealloc completions zsh > ~/.zfunc/_zonealloc`, \
        `zonealloc completions fish > ~/.config/fish/completions/zonealloc.fish`."
    )]
    Completions(CompletionsArgs),
    /// Print the man page (roff), or write one page per subcommand into a folder.
    #[command(
        after_help = "Read it with `zonealloc man | man -l -`; install the pages with \
        `zonealloc man --out ~/.local/share/man/man1`."
    )]
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write zonealloc.1 and a page per subcommand (zonealloc-trace-replay.1, ...) into this
    /// folder (created if missing) instead of printing zonealloc.1.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
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
// Parsed once per run: the size of the replay's arguments costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum TraceCommand {
    /// Summarise what a trace says: events, orders, CPUs, reused frames, refills, drains.
    Stats(TraceStatsArgs),
    /// Replay a trace against one or more policy variants and write a report folder.
    Replay(TraceReplayArgs),
    /// Write a synthetic trace of one of the lab's workloads.
    Gen(TraceGenArgs),
}

#[derive(Debug, Args)]
pub struct TraceReplayArgs {
    /// The trace: a file (plain text, gzip or zstd), a FIFO or `<(xz -dc …)`, or `-` for
    /// standard input. It is read once, as a stream.
    pub file: PathBuf,
    /// A policy set: `upstream` (the --kernel preset), or comma-separated knob=value items on
    /// top of it, every zone configuration field by its name (tail_merge, batch_scale_max,
    /// free_high, llc_slice_bytes, batch, high_min, high_max, high_fraction, pcp, thp_order,
    /// mobility_grouping, min_free_kbytes, watermarks=MIN:LOW:HIGH, ...). Repeat the flag to
    /// compare several in one run; the first is the baseline.
    #[arg(long = "variant", value_name = "SPEC", default_value = "upstream")]
    pub variants: Vec<String>,
    /// Which kernel's PCP rules to replay: 5.15, 6.1, 6.6, 6.12, 7.2 or mainline (any version
    /// names its family: 5.x is 5.15, 6.0-6.1 is 6.1, 6.2-6.6 is 6.6, 6.7-6.14 is 6.12, later
    /// is 7.2; e.g. 6.1.192). Default: inferred from --proc's zoneinfo (5.15 and 6.6 print
    /// 6.1's format, so name them), else mainline.
    #[arg(long, value_name = "VERSION")]
    pub kernel: Option<String>,
    /// Set the zones up as the traced kernel had them, from a folder with its /proc
    /// zoneinfo and pagetypeinfo and/or buddyinfo (as `cat /proc/X > DIR/X` writes them):
    /// one zone per populated kernel zone, its watermarks, PCP sizes and counts, pageblocks
    /// and pages in use.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["zone_start", "zone_pages", "online"])]
    pub proc: Option<PathBuf>,
    /// Compare the replay's end state with this /proc snapshot (buddyinfo per order,
    /// pagetypeinfo per migratetype, PCP pages).
    #[arg(long, value_name = "DIR", requires = "proc")]
    pub proc_after: Option<PathBuf>,
    /// Leave out the `layout` files of --proc and --proc-after (the kernel's pfn layout): the
    /// start's free blocks are synthesised from the counts, as for a capture without them, and
    /// the end state is compared per order and migratetype only.
    #[arg(long, requires = "proc")]
    pub no_layout: bool,
    /// Replay from the line after the first one containing TEXT (a trace without it is an
    /// error: nothing would be replayed; default with --proc: KT_SNAPSHOT_BEFORE_END, where the
    /// trace has it: in its first 4 MiB, or after a KT_SNAPSHOT_BEFORE_BEGIN there).
    #[arg(long, value_name = "TEXT")]
    pub from_marker: Option<String>,
    /// Stop before the first line containing TEXT (default with --proc:
    /// KT_SNAPSHOT_AFTER_BEGIN).
    #[arg(long, value_name = "TEXT")]
    pub to_marker: Option<String>,
    /// Replay the whole file, the snapshot reads included, even with --proc (whose default
    /// window is between its markers); the kernel is counted over the same events. With
    /// --proc each CPU's count starts from zoneinfo's rolled back from its read to the file's
    /// start (--infer whole-start=off: as read). With --to-marker: from the file's start to
    /// that marker (KT_SNAPSHOT_AFTER_BEGIN: all but the after-snapshot's reads).
    #[arg(long, conflicts_with = "from_marker")]
    pub whole_file: bool,
    /// Zone size in pages (default: 4194304 from --zone-start, its memory onlined as the
    /// trace touches it; given, the whole zone is free from the start).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..(1u64 << 32)))]
    pub zone_pages: Option<u64>,
    /// First pfn of the zone (default 0).
    #[arg(long, value_parser = parse_pfn_arg)]
    pub zone_start: Option<u64>,
    /// Which frames of the zone are free at the start: `all`, or `touched` (each
    /// MAX_PAGE_ORDER block comes online when the trace first touches it). Default: all with
    /// --zone-pages, else touched.
    #[arg(long, value_enum, value_name = "MEMORY")]
    pub online: Option<trace::replay::Online>,
    /// CPUs (default: the trace header's `#P:N`, else the highest CPU among its first events
    /// plus one); trace CPU c replays on c % N.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub cpus: Option<u32>,
    /// Switch the per-CPU lists off in every variant (buddy only).
    #[arg(long)]
    pub no_pcp: bool,
    /// Replay what a kernel trace shows without a cause: drain runs no free explains
    /// (drain_all_pages, drain_local_pages) as drains of the lists they emptied (a run by a
    /// kworker of its CPU at preempt depth 2 is that CPU's vmstat worker, replayed as its
    /// decay_pcp_high with or without this), and frees of pages a
    /// refill put on a CPU's lists but no mm_page_alloc handed out as untraced
    /// (alloc_pages_bulk) allocations on that CPU; a free is replayed at its commit (its
    /// mm_page_free_batched on the batched path); and set each CPU's lists up from the
    /// trace: `lists` (which lists hold its pages, from the trace's first events) and
    /// `start-count` (its count at the start marker, bounded by the kernel's arithmetic up to
    /// its first free-triggered drain; on by default for 6.1, 6.12 and 7.2 without --whole-file,
    /// else off unless named: see BENCHMARKS.md; `off` for all turns it off too), and with
    /// --whole-file `whole-start` (each CPU's count at the file's start: zoneinfo's, read by
    /// the before-snapshot's last `cat`, rolled back over the events before its read, then
    /// bounded as start-count's; from 6.7 on its `high` too, as the trace before the read
    /// bounds it; on by default there). They read the
    /// window's first 512 Ki events, held from the replay's own parse (a pipe gets what a
    /// file gets). `layout-roll`: with a kernel layout (--proc DIR/layout) and the default
    /// window, bring the layout from its read to the window's start with the events between
    /// (KT_SNAPSHOT_BEFORE_BEGIN to KT_SNAPSHOT_BEFORE_END); never with --whole-file.
    /// `lists-after`: with the default window and --proc-after, `lists` reads on past the
    /// window through the after-snapshot's reads (a CPU the window leaves alone shows its
    /// lists there). `on` or `off` for all, `NAME=on|off` for one, which overrides on/off
    /// for it; comma-separated or repeated, the last of each kind wins.
    /// `first-free-takes` (off unless named): a page whose first event is a batch's free
    /// (mm_page_free_batched), freed again with no allocation between, was taken off that
    /// CPU's list untraced before its first free too (copy_splice_read's alloc_pages_bulk,
    /// then release_pages), and lay there from the start. `on` or `off` for all,
    /// `NAME=on|off` for one, which overrides on/off for it; comma-separated or repeated,
    /// the last of each kind wins. Default: on with --proc (start-count and
    /// first-free-takes: as above).
    #[arg(long, value_name = "ON|OFF|NAME=ON|OFF", value_parser = parse_infer, value_delimiter = ',')]
    pub infer: Vec<Infer>,
    /// Do not run the per-CPU vmstat workers' decay of `high` (decay_pcp_high; by default
    /// each CPU's worker runs on its own timer, as the kernel schedules it, for kernels from
    /// 6.7 on, which have it).
    #[arg(long)]
    pub no_decay: bool,
    /// On 7.2, free a contiguous range's order-0 frees (vfree: free_pages_bulk ->
    /// __free_contig_range) page by page, not as the aligned blocks the kernel frees them as
    /// (free_prepared_contig_range).
    #[arg(long)]
    pub no_contig_free: bool,
    /// Apply a free's drain at the free's commit, whole, not chunk by chunk at its
    /// mm_page_pcpu_drain lines after the refills other CPUs began under the zone lock
    /// before them (free_frozen_page_commit's free_pcppages_bulk calls; on by default for a
    /// kernel's trace with the inferences).
    #[arg(long)]
    pub no_lock_order: bool,
    /// With the lock order, where a drain's chunk waits for another CPU's refill (its
    /// zone_locked lines came first) and the draining CPU moves on before that CPU's
    /// mm_page_alloc line, make the refill and its allocation's take then, ahead of the line
    /// (off by default: the drain is then applied first, the refill at its line).
    #[arg(long)]
    pub refill_ahead: bool,
    /// With the lock order, make two CPUs' refills at their allocations' mm_page_alloc
    /// lines, not in the order of their zone_locked lines (rmqueue_bulk holds the zone lock
    /// for a refill's lines; the allocation's line can come after another CPU's refill).
    #[arg(long)]
    pub no_refill_order: bool,
    /// The kernel's HZ, which the vmstat workers' timers round to (round_jiffies_relative;
    /// default 250, Debian's amd64 CONFIG_HZ).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub hz: Option<u32>,
    /// An idle CPU's expired vmstat worker waits for the CPU's next traced event (by default
    /// it runs at its expiry: the CPU wakes for things the kmem trace does not show).
    #[arg(long)]
    pub decay_waits_for_event: bool,
    /// A busy CPU's expired vmstat worker runs at its expiry (by default it waits, queued on
    /// mm_percpu_wq, for the scheduler: until the trace shows its drain, its CPU's task
    /// pauses, or the last tick before its next second), and so does an idle CPU's whose
    /// decay would drain (by default its deferrable timer waits for the CPU's next event).
    #[arg(long)]
    pub no_late_workers: bool,
    /// Ignore the vmstat workers' and shepherd's runs a trace shows
    /// (workqueue:workqueue_execute_start of vmstat_update and vmstat_shepherd, capture-kmem
    /// --workqueue): by default each is the run, and the timers are not modelled.
    #[arg(long)]
    pub no_traced_workers: bool,
    /// The vmstat workers' timers fire at their bucket on the kernel's timer wheel, not at
    /// their expiry: a timer of a second fires at the next multiple of 8 jiffies after its
    /// expiry, 1 to 8 jiffies late (kernel/time/timer.c's calc_index), and a worker's run
    /// in the trace shows its CPU's second up to 8 jiffies before it.
    #[arg(long)]
    pub timer_wheel: bool,
    /// The trace time (seconds, as the trace prints it) of a jiffies-second boundary, for
    /// the vmstat workers' timers: CPU c's worker runs 3 * c jiffies before each such second.
    /// By default it comes from the first worker run the trace shows (a kworker of the CPU
    /// draining at preempt depth 2), else it is assumed at the first event; with --proc, a
    /// CPU whose worker ran before the window keeps to that run's second until then. Another
    /// capture of the same boot can give it: a run of CPU c at t puts it at
    /// t - 1/HZ + 3 * c / HZ. With --timer-wheel it is taken modulo 4 s at HZ 250, and the
    /// second of the four it names is one whose jiffies count is a multiple of 8.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub jiffies_phase: Option<u64>,
    /// The trace's migratetype numbering (inferred from gfp_flags when not given).
    #[arg(long, value_enum, value_name = "NUMBERING")]
    pub migratetypes: Option<trace::migratetype::Numbering>,
    /// Fragmentation samples taken over the trace.
    #[arg(long, default_value_t = trace::replay::DEFAULT_SAMPLES, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub samples: u64,
    /// Write the replayed run's own events in ftrace format to FILE (with several variants,
    /// FILE.<variant>.<ext> each).
    #[arg(long, value_name = "FILE")]
    pub emit: Option<PathBuf>,
    /// The report folder. A folder given here must be absent or empty, unless --force (the
    /// lab's rule); without --out the report goes to `replay-report/`, the replay's own
    /// folder, replacing the report of the run before.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write into a non-empty --out folder (its previous report.md, results.json and plots
    /// are removed first).
    #[arg(long)]
    pub force: bool,
    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Fail (exit 1) if any line is malformed, or if a --proc snapshot's free pages and
    /// free lists differ by more than vmstat drift and a batch per CPU (a warning without it).
    #[arg(long)]
    pub strict: bool,
}

#[derive(Debug, Args)]
pub struct TraceGenArgs {
    /// The workload.
    #[arg(long, value_enum, default_value_t = trace::gen::GenWorkload::Mixed)]
    pub workload: trace::gen::GenWorkload,
    /// Where to write the trace (`-`: stdout; a name ending in .gz is gzip-compressed).
    #[arg(short, long, default_value = "-")]
    pub output: PathBuf,
    /// Operations (allocations plus frees), roughly.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub ops: u64,
    /// CPUs.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub cpus: u32,
    /// Zone size in pages.
    #[arg(long, default_value_t = 1 << 16, value_parser = clap::value_parser!(u64).range(1..(1u64 << 32)))]
    pub zone_pages: u64,
    /// First pfn of the zone.
    #[arg(long, default_value = "0", value_parser = parse_pfn_arg)]
    pub zone_start: u64,
    /// The policy set of the recorded zone (as for `trace replay --variant`).
    #[arg(long, default_value = "upstream")]
    pub variant: String,
    /// Seed of the workload's choices.
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
}

/// One `--infer` item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Infer {
    /// Every inference on or off.
    All(bool),
    /// Each CPU's count at the start marker from the trace (`start-count`).
    StartCount(bool),
    /// Which lists each CPU's count is on, from the trace's first events (`lists`).
    Lists(bool),
    /// With --whole-file: the counts at the file's start, rolled back from zoneinfo's read
    /// (`whole-start`).
    WholeStart(bool),
    /// The kernel's layout rolled forward from its read to the window's start
    /// (`layout-roll`).
    LayoutRoll(bool),
    /// The lists' inference reads on past the window (`lists-after`).
    ListsAfter(bool),
    /// A page first freed in a batch and freed again was on the list from the start
    /// (`first-free-takes`).
    FirstFreeTakes(bool),
}

impl Infer {
    /// Whether the item turns its inference (or all of them) on.
    pub fn on(&self) -> bool {
        match *self {
            Infer::All(on)
            | Infer::StartCount(on)
            | Infer::Lists(on)
            | Infer::WholeStart(on)
            | Infer::LayoutRoll(on)
            | Infer::ListsAfter(on)
            | Infer::FirstFreeTakes(on) => on,
        }
    }
}

/// An `--infer` item: `on`, `off`, or `NAME=on|off` (`start-count`, `lists`, `whole-start`,
/// `layout-roll`, `lists-after`, `first-free-takes`).
fn parse_infer(s: &str) -> Result<Infer, String> {
    let on_off = |v: &str| match v {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("'{v}': expected on or off")),
    };
    match s.split_once('=') {
        None => on_off(s).map(Infer::All),
        Some(("start-count", v)) => on_off(v).map(Infer::StartCount),
        Some(("lists", v)) => on_off(v).map(Infer::Lists),
        Some(("whole-start", v)) => on_off(v).map(Infer::WholeStart),
        Some(("layout-roll", v)) => on_off(v).map(Infer::LayoutRoll),
        Some(("lists-after", v)) => on_off(v).map(Infer::ListsAfter),
        Some(("first-free-takes", v)) => on_off(v).map(Infer::FirstFreeTakes),
        Some((name, _)) => Err(format!(
            "no inference named '{name}' (one of: start-count, lists, whole-start, layout-roll, \
             lists-after, first-free-takes)"
        )),
    }
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
pub struct TraceStatsArgs {
    /// The trace file (plain text, gzip, zstd or xz; `-`: standard input).
    pub file: PathBuf,
    /// The trace's migratetype numbering: `legacy` for kernels before 4.4 (Movable and
    /// Reclaimable swapped). Inferred from the allocations' gfp_flags when not given.
    #[arg(long, value_enum, value_name = "NUMBERING")]
    pub migratetypes: Option<trace::migratetype::Numbering>,
    /// Fail (exit 1) if any line is malformed.
    #[arg(long)]
    pub strict: bool,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LabArgs {
    /// `zonealloc lab compare RUN...`: compare earlier runs.
    #[command(subcommand)]
    pub action: Option<LabAction>,
    /// The experiment to run (default: all, in order). `zonealloc lab --list` names them.
    pub experiment: Option<String>,
    /// List the registered experiments and exit.
    #[arg(long)]
    pub list: bool,
    /// The report folder. Default: a new folder per run under `lab-report/`, named by the
    /// run's UTC start (`lab-report/latest` points at the newest). A folder given here must
    /// be absent or empty, unless --force.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Write into a non-empty --out folder (its previous report.md, results.json and plots
    /// are removed first).
    #[arg(long, requires = "out")]
    pub force: bool,
    /// Repeat timing experiments until the 95% confidence interval of every timing figure a
    /// seed claim reads is within this fraction of its mean (0.05: ±5%); later rounds add
    /// timing samples only, counts and indices keep the first round's seeds...
    #[arg(long, value_name = "FRACTION", default_value_t = 0.05, value_parser = parse_fraction)]
    pub ci_target: f64,
    /// ... or until this many seconds per experiment have gone (default 20; 0 with --quick:
    /// one round).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub time_cap: Option<u64>,
    /// Print the results as JSON on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,
    /// Tiny sizes (about a second per experiment), for tests and smoke runs.
    #[arg(long)]
    pub quick: bool,
    /// Seed of every pseudo-random choice.
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
    /// Worker threads (default: each experiment's own).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub threads: Option<u64>,
    /// Repetitions of each measurement (default: each experiment's own).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub iterations: Option<u64>,
    /// Zone size in pages (default: each experiment's own); with --nodes, each node's zone.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=(1u64 << 40)))]
    pub zone_pages: Option<u64>,
    /// Run on a machine of this many NUMA nodes: the experiments whose effect depends on
    /// nodes (drain: seed 004, batch-scale: seed 001) split their workers' CPUs across the
    /// nodes, each node one zone, allocation node-local. Above 1, only those experiments run
    /// when none is named, and naming another is an error.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=8))]
    pub nodes: u64,
    /// Run only these variants (comma-separated names as the report prints them); the
    /// baseline always runs too, since every comparison is against it.
    #[arg(long, value_delimiter = ',')]
    pub variants: Option<Vec<String>>,
    /// Also write the deterministic experiments' runs (free-high's interleaved mode and
    /// tail-merge; the first iteration of each variant) as kernel traces into DIR, readable
    /// by `zonealloc trace stats|replay` and the usual trace tools.
    #[arg(long, value_name = "DIR")]
    pub record_traces: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum LabAction {
    /// Compare runs: per metric and variant, each run's figure and its change against the
    /// first run's; then each seed claim's verdict per run.
    Compare(LabCompareArgs),
}

#[derive(Debug, Args)]
pub struct LabCompareArgs {
    /// Run folders (or their results.json); a runs folder such as `lab-report` means its
    /// `latest` run.
    #[arg(required = true, num_args = 1.., value_name = "RUN")]
    pub runs: Vec<PathBuf>,
}

/// `--ci-target`: a fraction in (0, 1].
fn parse_fraction(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if v > 0.0 && v <= 1.0 {
        Ok(v)
    } else {
        Err(format!("{v} is not a fraction in (0, 1] (0.05 means ±5%)"))
    }
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Workloads to run (repeat the flag or separate with commas; default: all).
    #[arg(
        long = "workload",
        value_enum,
        value_delimiter = ',',
        value_name = "WORKLOAD"
    )]
    pub workloads: Vec<Workload>,
    /// Allocators to compare (default: all in this build). zonealloc always runs: every
    /// ratio is against it.
    #[arg(long = "peer", value_enum, value_delimiter = ',', value_name = "PEER")]
    pub peers: Vec<Peer>,
    /// Thread counts for the multi-threaded workloads, e.g. `1,2,4` (default: 1, the
    /// machine's cores and twice that; rows with more threads than cores are flagged).
    #[arg(long, value_delimiter = ',', value_name = "N,...",
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub threads: Vec<u64>,
    /// Length of each timed repetition in milliseconds, ops sized by the warm-up (default
    /// 100; with --quick, a fixed 128 ops instead).
    #[arg(long, value_name = "MS", conflicts_with = "ops",
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub duration_ms: Option<u64>,
    /// Ops per thread in each timed repetition, instead of a duration.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=(1u64 << 32)))]
    pub ops: Option<u64>,
    /// Timed repetitions per row; the table shows their median (default 5; 1 with --quick).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub repetitions: Option<u64>,
    /// Pages each frame allocator manages, a power of two from 1024 to 2^20 (default 65536,
    /// 256 MiB; 4096 with --quick). `mixed` keeps 80% of it allocated, also on the memory
    /// allocators, where `mmap` really faults that much in.
    #[arg(long, value_name = "PAGES", value_parser = parse_pool_pages)]
    pub pool_pages: Option<u64>,
    /// Write the JSON document (every repetition, the machine, the options): to FILE, or
    /// without FILE to stdout instead of the table.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pub json: Option<Option<PathBuf>>,
    /// Tiny sizes (about a second for everything), for tests and smoke runs; not for quoting.
    #[arg(long)]
    pub quick: bool,
    /// Seed of the workloads' random choices.
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
    /// Do not count instructions per op under valgrind (counted by default where valgrind is
    /// on PATH, except with --quick).
    #[arg(long)]
    pub no_icount: bool,
    /// Internal: run OPS ops of the one --workload on the one --peer on one thread and exit
    /// (what the instruction count runs under callgrind).
    #[arg(long, value_name = "OPS", hide = true)]
    pub icount_child: Option<u64>,
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
pub struct InspectArgs {
    /// The workload run before printing.
    #[arg(long, value_enum, default_value_t = inspect::Workload::Mixed)]
    pub workload: inspect::Workload,
    /// Seed of the workload's pseudo-random choices.
    #[arg(long, default_value_t = 0x5eed_2024)]
    pub seed: u64,
}

/// `SECONDS` (a non-negative decimal, up to nine places) as nanoseconds.
fn parse_seconds(s: &str) -> Result<u64, String> {
    let bad = || format!("'{s}': expected seconds, e.g. 22.171788");
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty() || frac.len() > 9 {
        return Err(bad());
    }
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || !digits(frac) {
        return Err(bad());
    }
    let secs: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| bad())?
    };
    let ns: u64 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<9}").parse().map_err(|_| bad())?
    };
    secs.checked_mul(1_000_000_000)
        .and_then(|v| v.checked_add(ns))
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests;
