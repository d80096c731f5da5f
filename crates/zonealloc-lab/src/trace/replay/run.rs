//! Running a replay over a trace: one streaming pass, every variant's [`Replayer`] and the
//! kernel's own counts ([`KernelSide`]) fed from one parse, into a [`ReplayRun`].

use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::end_state::{end_state, EndState};
use super::geometry::Geometry;
use super::infer::kernel::{self, KernelSide};
use super::infer::start_count;
use super::options::ReplayOptions;
use super::preset::Kernel;
use super::replayer::Replayer;
use super::sampling::FRAG_ORDERS;
use super::setup::{Setup, Snapshots};
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
    /// Whether causes were inferred ([`kernel`]).
    pub infer: bool,
    /// Whether the zones come from `--proc`.
    pub setup_from_proc: bool,
    /// Each CPU's count at the start marker, inferred from the trace ([`start_count`]);
    /// `None` when that inference is off.
    pub start_counts: Option<start_count::StartCounts>,
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

/// Events between fragmentation samples when the trace's length is not known in advance:
/// samples come every event at first, then the interval doubles (and every
/// other sample is dropped) whenever `2 * samples` have been taken, so a trace of any length
/// ends with between `samples` and `2 * samples` evenly spaced samples.
const FIRST_SAMPLE_INTERVAL: u64 = 1;
const _: () = assert!(FIRST_SAMPLE_INTERVAL.is_power_of_two());

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
    let mut source = Source::open(path, &window).map_err(read_err)?;
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
    progress(done);
    Ok(end(setup, parser, t1.elapsed().as_secs_f64(), window))
}

/// The sampling state of a pass (see [`FIRST_SAMPLE_INTERVAL`]).
struct Sampling {
    /// Samples wanted at least.
    samples: u64,
    /// Events between samples, a power of two.
    interval: u64,
}

impl Sampling {
    /// After `done` events: samples at multiples of `interval`; at 2 * samples, keeps the
    /// even ones and doubles the interval.
    #[inline]
    fn after(&mut self, done: u64, ts: Option<u64>, replayers: &mut [Replayer]) {
        // `interval` is a power of two: a mask, not a division per event.
        if done & (self.interval - 1) != 0 {
            return;
        }
        let thin = replayers
            .first()
            .is_some_and(|r| r.samples_kept() as u64 + 1 >= 2 * self.samples);
        for r in replayers.iter_mut() {
            r.sample(done, ts);
            if thin {
                r.thin_samples();
            }
        }
        if thin {
            self.interval *= 2;
        }
    }

    /// The last sample, at the end, unless one was just taken.
    fn last(&self, done: u64, ts: Option<u64>, replayers: &mut [Replayer]) {
        for r in replayers.iter_mut() {
            if !done.is_multiple_of(self.interval) || done == 0 {
                r.sample(done, ts);
            }
        }
    }
}

/// The pass: every event of `source` to the kernel's side and every replayer, in order, with
/// the fragmentation samples; the events done and the first replayer's failure.
fn pass(
    setup: &mut Setup,
    source: &mut Source,
    samples: u64,
    progress: &dyn Fn(u64),
) -> (u64, Option<io::Error>) {
    let Setup {
        infer,
        counted,
        geo,
        kernel,
        replayers,
        ..
    } = setup;
    let (infer, counted) = (*infer, *counted);
    let mut sampling = Sampling {
        samples: samples.max(1),
        interval: FIRST_SAMPLE_INTERVAL,
    };
    let mut failure: Option<io::Error> = None;
    let mut done = 0u64;
    let mut last_ts = None;
    'replay: while let Some(chunk) = source.next_chunk() {
        for ev in chunk.events() {
            let ev = &ev;
            // Without the inferences the kernel side only counts (the same figures).
            let inferred = if infer {
                kernel.add(ev, geo.zone_of(ev.kind.pfn()).unwrap_or(0))
            } else {
                if done >= counted {
                    kernel.add_counts(ev, geo.zone_of(ev.kind.pfn()).unwrap_or(0));
                }
                kernel::Inferred::None
            };
            let untraced: &[_] = if infer { &kernel.untraced_now } else { &[] };
            for r in replayers.iter_mut() {
                if !untraced.is_empty() {
                    if let Err(e) = r.untraced_allocs(ev, untraced) {
                        failure = Some(e);
                        break 'replay;
                    }
                }
                if let Err(e) = r.feed(ev, inferred) {
                    failure = Some(e);
                    break 'replay;
                }
            }
            done += 1;
            last_ts = ev.ts_ns.or(last_ts);
            sampling.after(done, last_ts, replayers);
            if done.is_multiple_of(65_536) {
                progress(done);
            }
        }
        source.recycle(chunk);
    }
    if failure.is_none() {
        sampling.last(done, last_ts, replayers);
    }
    (done, failure)
}

/// The finished run: `setup`'s replayers and kernel side, with the end states against
/// `--proc-after` and the kernel's fragmentation at both snapshots.
fn end(setup: Setup, parser: Parser, replay_s: f64, window: (Window, Option<bool>)) -> ReplayRun {
    let Setup {
        snaps,
        preset,
        geo,
        infer,
        start_counts,
        replayers,
        emitted,
        kernel,
        ..
    } = setup;
    let end_states = match &snaps.after {
        Some(a) => replayers
            .iter()
            .map(|r| {
                geo.zones
                    .iter()
                    .zip(&r.zones)
                    .enumerate()
                    .filter_map(|(i, (span, zone))| {
                        let setup = r.setup.get(i).cloned().unwrap_or_default();
                        a.zone(span.node, span.zone_type)
                            .map(|kz| end_state(zone, a, kz, &setup))
                    })
                    .collect()
            })
            .collect(),
        None => Vec::new(),
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
        infer,
        setup_from_proc: snaps.before.is_some(),
        start_counts,
        kernel_frag,
        proc_warnings,
        numastat_moved,
    }
}
