//! Running a replay over a trace: the snapshots read, the source opened, the [`Setup`] built,
//! one streaming pass (`pass.rs`: every variant's [`Replayer`] and the kernel's own counts,
//! [`KernelSide`], fed from one parse), and the end, into a [`ReplayRun`].

use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::end_state::EndState;
use super::geometry::Geometry;
use super::infer::kernel::KernelSide;
use super::infer::start_count;
use super::options::ReplayOptions;
use super::pass::pass;
use super::preset::Kernel;
use super::replayer::Replayer;
use super::sampling::FRAG_ORDERS;
use super::setup::Setup;
use super::snapshots::Snapshots;
use super::to_reads::{self, EndReads};
use super::whole_start;
use crate::procfs::ProcSnapshot;
use crate::trace::ingest::{Source, Window};
use crate::trace::parse::Parser;

/// A finished replay.
pub struct ReplayRun {
    /// The kernel's side: its refills, drains, fallbacks per zone and CPU.
    pub kernel: KernelSide,
    /// The kernel family the variants started from, and whether it was given.
    pub preset: (Kernel, bool),
    /// The zones' shape.
    pub geo: Geometry,
    /// One per variant, in order.
    pub replayers: Vec<Replayer>,
    /// Lines and events of the pass.
    pub parser: Parser,
    /// Seconds of the pass (reading, parsing, the set-up it overlaps, and replaying).
    pub replay_s: f64,
    /// The files written by `--emit`.
    pub emitted: Vec<PathBuf>,
    /// The window replayed, and whether its start marker was found.
    pub window: (Window, Option<bool>),
    /// Per variant, per zone: the end state against `--proc-after`.
    pub end_states: Vec<Vec<EndState>>,
    /// Where the end state was taken past the window: at each after-snapshot file's read
    /// (`to_reads`); `None`: at the window's end.
    pub end_reads: Option<EndReads>,
    /// The most reused frames in the window, taken at its end, before any replay past it.
    pub reused: Reused,
    /// Whether causes were inferred ([`kernel`](super::infer::kernel)).
    pub infer: bool,
    /// Whether the zones come from `--proc`.
    pub setup_from_proc: bool,
    /// Each CPU's count at the start marker, inferred from the trace ([`start_count`]);
    /// `None` when that inference is off.
    pub start_counts: Option<start_count::StartCounts>,
    /// With `--whole-file` and `--proc`, the start state used ([`whole_start`]).
    pub whole_start: Option<whole_start::WholeStart>,
    /// The kernel's unusable free space index of the highest zone (thousandths, per
    /// [`FRAG_ORDERS`]) at `--proc` (the trace's start) and `--proc-after` (its end).
    pub kernel_frag: (Option<[u32; 3]>, Option<[u32; 3]>),
    /// Per node, what its `numastat` moved by from `--proc` to `--proc-after`
    /// ([`super::numa::numastat_moved`]); empty without both or without `nodes/`.
    pub numastat_moved: Vec<(u32, zonealloc::numa::NumaStat)>,
    /// What the `/proc` snapshots' reader accepted with a warning
    /// ([`ProcSnapshot::warnings`]), each prefixed with its flag.
    pub proc_warnings: Vec<String>,
}

/// Rows of the most reused frames' table (seed 000's), kept per side at the window's end.
pub const REUSE_ROWS: usize = 5;

/// The most reused frames in the window, most first ([`REUSE_ROWS`] a side): pfns with their
/// allocations.
#[derive(Clone, Debug, Default)]
pub struct Reused {
    /// The kernel's frames.
    pub kernel: Vec<(u64, u64)>,
    /// Every variant's frames, in the variants' order.
    pub ours: Vec<Vec<(u64, u32)>>,
}

/// The unusable free space index of a snapshot's zone, per [`FRAG_ORDERS`].
fn kernel_unusable(snap: &ProcSnapshot, node: u32, zone: zonealloc::ZoneType) -> Option<[u32; 3]> {
    let z = snap.zone(node, zone)?;
    let blocks = z.free_blocks()?;
    let mut nr_free = [0u64; zonealloc::MAX_ORDER_LIMIT as usize + 1];
    for (o, n) in blocks.iter().enumerate().take(nr_free.len()) {
        nr_free[o] = *n;
    }
    let s = zonealloc::FreeAreaSnapshot {
        node,
        zone_name: zone.name(),
        max_order: (blocks.len().max(1) - 1) as u8,
        pageblock_order: snap.pageblock_order.unwrap_or(9),
        nr_free,
        free_by_type: Default::default(),
        pageblocks_by_type: Default::default(),
    };
    Some(FRAG_ORDERS.map(|o| zonealloc::stats::unusable_free_index(&s, o.min(s.max_order))))
}
/// Replays `path` (`-`: standard input) under every variant of `opts` in one pass,
/// reporting the events done so far; every zone passes its [`zonealloc::Zone::check`] at the
/// end ([`ReplayRun::check`]).
pub fn run(path: &Path, opts: &ReplayOptions, progress: &dyn Fn(u64)) -> Result<ReplayRun, String> {
    let run = run_unchecked(path, opts, progress)?;
    run.check()?;
    Ok(run)
}

impl ReplayRun {
    /// Every variant's zones pass their [`zonealloc::Zone::check`].
    pub fn check(&self) -> Result<(), String> {
        check_zones(&self.zones())
    }

    /// Every variant's zones, with the variant's name (shareable with another thread, which
    /// the replayers' `--emit` writers are not).
    pub fn zones(&self) -> Vec<(&str, &zonealloc::Zone)> {
        self.replayers
            .iter()
            .flat_map(|r| r.zones.iter().map(|z| (r.variant.name.as_str(), z)))
            .collect()
    }
}

/// Each zone passes its [`zonealloc::Zone::check`] ([`ReplayRun::zones`]).
pub fn check_zones(zones: &[(&str, &zonealloc::Zone)]) -> Result<(), String> {
    for (name, z) in zones {
        z.check()
            .map_err(|e| format!("variant '{name}': zone check failed: {e}"))?;
    }
    Ok(())
}

/// [`run`] without the zones' check at the end, for a caller that runs it beside other work
/// ([`ReplayRun::check`]; the report is built meanwhile, on a machine whose second core the
/// parse no longer needs): the snapshots read, the [`Source`] opened, the [`Setup`] built
/// while it parses, the `pass` over its events, and the end.
pub fn run_unchecked(
    path: &Path,
    opts: &ReplayOptions,
    progress: &dyn Fn(u64),
) -> Result<ReplayRun, String> {
    let read_err = |e: io::Error| format!("reading {}: {e}", path.display());
    let snaps = Snapshots::read(opts)?;
    let window = snaps.window(opts);
    let t1 = Instant::now();
    // Parsing runs on a thread of its own (`ingest::pipe`), the replay here; it starts now,
    // so the zones are built while it parses.
    // The text after the window, for the end state at the after-snapshot's reads.
    let tail = to_reads::keep(opts, &snaps);
    // `--whole-file`: the text up to the before-snapshot's end names zoneinfo's reader.
    let keep_to = whole_start::wanted(opts, snaps.before.as_ref()).then_some(whole_start::MARKER);
    let mut source =
        Source::open_keeping_to(path, &window, tail.clone(), keep_to).map_err(read_err)?;
    let mut setup = Setup::new(opts, snaps, &mut source)?;
    let (done, failure) = pass(&mut setup, &mut source, opts.samples, progress);
    // After the pass: a start marker beyond the prefix is found by the stream.
    let window = (source.window().0.clone(), source.window().1);
    let source_missing = source.marker_missing();
    // The parser reads to the end even after a failure here: a read error comes first.
    let (parser, read) = source.finish();
    read.map_err(read_err)?;
    if let Some(e) = failure {
        return Err(e.to_string());
    }
    if source_missing {
        return Err(format!(
            "{}: the start marker '{}' is not in the trace, so nothing was replayed \
             (name another with --from-marker, or replay it all with --whole-file)",
            path.display(),
            window.0.from.as_deref().unwrap_or_default()
        ));
    }
    if opts.strict && parser.malformed > 0 {
        return Err(format!(
            "{}: {}",
            path.display(),
            parser.malformed_summary()
        ));
    }
    for r in setup.replayers.iter_mut() {
        r.finish().map_err(|e| format!("--emit: {e}"))?;
    }
    // The window's frame reuse, before the replay past it adds to the frames' counts.
    let reused = Reused {
        kernel: setup.kernel.most_reused(REUSE_ROWS),
        ours: setup
            .replayers
            .iter()
            .map(|r| r.most_reused(REUSE_ROWS))
            .collect(),
    };
    let reads = to_reads::replay(&mut setup, tail.as_ref())?;
    progress(done);
    Ok(end(
        setup,
        parser,
        t1.elapsed().as_secs_f64(),
        window,
        (reads, reused),
    ))
}
/// The finished run: `setup`'s replayers and kernel side, with the end states against
/// `--proc-after` and the kernel's fragmentation at both snapshots.
fn end(
    setup: Setup,
    parser: Parser,
    replay_s: f64,
    window: (Window, Option<bool>),
    (reads, reused): (Option<to_reads::AtReads>, Reused),
) -> ReplayRun {
    let Setup {
        snaps,
        preset,
        geo,
        infer,
        start_counts,
        whole_start,
        replayers,
        emitted,
        kernel,
        ..
    } = setup;
    let (end_states, end_reads) = match (reads, &snaps.after) {
        (Some((states, reads)), _) => (states, Some(reads)),
        (None, Some(a)) => (to_reads::states_now(&replayers, &geo, a), None),
        (None, None) => (Vec::new(), None),
    };
    let kernel_frag = match geo.zones.last() {
        Some(z) => (
            snaps
                .before
                .as_ref()
                .and_then(|s| kernel_unusable(s, z.node, z.zone_type)),
            snaps
                .after
                .as_ref()
                .and_then(|s| kernel_unusable(s, z.node, z.zone_type)),
        ),
        None => (None, None),
    };
    let proc_warnings = snaps.warnings();
    let numastat_moved = match (&snaps.before, &snaps.after) {
        (Some(b), Some(a)) => super::numa::numastat_moved(b, a),
        _ => Vec::new(),
    };
    ReplayRun {
        kernel,
        preset,
        geo,
        replayers,
        parser,
        replay_s,
        emitted,
        window,
        end_states,
        end_reads,
        reused,
        infer,
        setup_from_proc: snaps.before.is_some(),
        start_counts,
        whole_start,
        kernel_frag,
        proc_warnings,
        numastat_moved,
    }
}
