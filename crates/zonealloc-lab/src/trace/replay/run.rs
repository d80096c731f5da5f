//! Running a replay over a trace: one streaming pass, every variant's [`Replayer`] and the
//! kernel's own counts ([`KernelSide`]) fed from one parse, into a [`ReplayRun`].

use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::Instant;

use super::end_state::EndState;
use super::geometry::Geometry;
use super::infer::kernel::{self, KernelSide};
use super::infer::start_count;
use super::kswapd_nap::NapLook;
use super::options::ReplayOptions;
use super::preset::Kernel;
use super::replayer::Replayer;
use super::sampling::FRAG_ORDERS;
use super::setup::{Setup, Snapshots};
use super::to_reads::{self, EndReads};
use super::vmstat;
use super::whole_start;
use crate::procfs::ProcSnapshot;
use crate::trace::ingest::{Chunk, Source, Window};
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
    /// Whether causes were inferred ([`kernel`]).
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

/// What the kernel's side inferred for a chunk's events, computed a chunk ahead of the
/// replayers on a thread of its own ([`kernel_side`]): per event its [`kernel::Inferred`] and
/// the end of its pages in `untraced` (which start where the event before's end); without the
/// inferences only the naps.
#[derive(Default)]
struct Notes {
    inferred: Vec<kernel::Inferred>,
    /// `(event index, node)`: node's kswapd pass ended before that event ([`super::kswapd_nap`]).
    naps: Vec<(u32, u32)>,
    untraced_end: Vec<u32>,
    untraced: Vec<(u64, u32, u8)>,
}

/// Chunks the kernel's side runs ahead of the replayers (of
/// [`crate::trace::ingest::CHUNK_EVENTS`] events each).
const NOTES_AHEAD: usize = 4;

/// The kernel's side of a pass: every event of `source`, in order, to `kernel` (with the
/// inferences when `infer`, else counting each event from the `counted`-th on, as
/// [`pass_here`] does), each chunk sent on `tx` with its [`Notes`]; the replayers' spent
/// chunks and notes come back on `back`. Stops at the end of the input or when the replayers
/// stop.
fn kernel_side(
    source: &mut NapLook<'_>,
    (kernel, geo): (&mut KernelSide, &Geometry),
    (infer, counted): (bool, u64),
    tx: SyncSender<(Chunk, Notes)>,
    back: Receiver<(Chunk, Notes)>,
) {
    let mut seen = 0u64;
    while let Some((chunk, naps)) = source.next_chunk() {
        let mut notes = match back.try_recv() {
            Ok((spent, notes)) => {
                source.recycle(spent);
                notes
            }
            Err(_) => Notes::default(),
        };
        notes.inferred.clear();
        notes.naps = naps;
        notes.untraced_end.clear();
        notes.untraced.clear();
        if infer {
            for ev in chunk.events() {
                notes
                    .inferred
                    .push(kernel.add(&ev, geo.zone_of(ev.kind.pfn()).unwrap_or(0)));
                notes.untraced.extend_from_slice(&kernel.untraced_now);
                // A chunk's untraced pages are far fewer than 4 Gi.
                notes.untraced_end.push(notes.untraced.len() as u32);
            }
        } else {
            // Counts only: the notes stay empty (the replayers infer nothing, and are handed
            // no untraced page).
            for ev in chunk.events() {
                if seen >= counted {
                    kernel.add_counts(&ev, geo.zone_of(ev.kind.pfn()).unwrap_or(0));
                }
                seen += 1;
            }
        }
        if tx.send((chunk, notes)).is_err() {
            return;
        }
    }
}

/// The replayers' side of a pass: every variant fed each event in order, with the
/// fragmentation samples and the progress.
struct Feed<'a> {
    replayers: &'a mut [Replayer],
    sampling: Sampling,
    done: u64,
    last_ts: Option<u64>,
    progress: &'a dyn Fn(u64),
}

impl Feed<'_> {
    /// Node `nid`'s kswapd pass ended here ([`super::kswapd_nap`]), in every variant.
    fn naps(&mut self, naps: &[(u32, u32)], i: usize) {
        for &(_, nid) in naps.iter().filter(|&&(at, _)| at as usize == i) {
            for r in self.replayers.iter_mut() {
                r.kswapd_napped(nid);
            }
        }
    }

    /// Feeds `ev` to every replayer, after the allocations of `untraced` that the kernel's
    /// side inferred; the first replayer's failure.
    #[inline(always)]
    fn event(
        &mut self,
        ev: &crate::trace::parse::Event<'_>,
        inferred: kernel::Inferred,
        untraced: &[(u64, u32, u8)],
    ) -> io::Result<()> {
        for r in self.replayers.iter_mut() {
            r.feed_inferred(ev, inferred, untraced)?;
        }
        self.done += 1;
        self.last_ts = ev.ts_ns.or(self.last_ts);
        self.sampling.after(self.done, self.last_ts, self.replayers);
        if self.done.is_multiple_of(65_536) {
            (self.progress)(self.done);
        }
        Ok(())
    }
}

impl Feed<'_> {
    /// A chunk's events with the kernel side's inferences (`notes`, one per event).
    // Inlined, as the loop was before it had a name: out of line, its iterator's `next` was
    // not (7.2 p2 `--proc`: 4.5 M more instructions).
    #[inline(always)]
    fn inferred_chunk(&mut self, chunk: &Chunk, notes: &Notes) -> io::Result<()> {
        let mut from = 0usize;
        for (i, ev) in chunk.events().enumerate() {
            self.naps(&notes.naps, i);
            let to = notes.untraced_end[i] as usize;
            self.event(&ev, notes.inferred[i], &notes.untraced[from..to])?;
            from = to;
        }
        Ok(())
    }

    /// A chunk's events without the inferences (the kernel side only counted them).
    #[inline(always)]
    fn counted_chunk(&mut self, chunk: &Chunk, naps: &[(u32, u32)]) -> io::Result<()> {
        for (i, ev) in chunk.events().enumerate() {
            self.naps(naps, i);
            self.event(&ev, kernel::Inferred::None, &[])?;
        }
        Ok(())
    }
}

/// The pass: every event of `source` to the kernel's side and every replayer, in order, with
/// the fragmentation samples; the events done and the first replayer's failure. On a machine
/// of more than one core the kernel's side ([`kernel_side`]) runs on a thread of its own, a
/// few chunks ahead: it reads nothing of the replayers, so the two share the pass on two
/// cores (the parse is over by then on a trace the inferences read whole). Without the
/// inferences it only counts, there too (7.2 p2 as typed: 152.5 M instructions on the
/// replayers' thread with the counting, 111.5 M without, callgrind).
fn pass(
    setup: &mut Setup,
    source: &mut Source,
    samples: u64,
    progress: &dyn Fn(u64),
) -> (u64, Option<io::Error>) {
    let beside = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    pass_with(setup, source, samples, progress, beside)
}

/// [`pass`], the kernel's side beside the replayers or not.
pub(super) fn pass_with(
    setup: &mut Setup,
    source: &mut Source,
    samples: u64,
    progress: &dyn Fn(u64),
    beside: bool,
) -> (u64, Option<io::Error>) {
    let Setup {
        infer,
        counted,
        geo,
        kernel,
        replayers,
        ..
    } = setup;
    let mut feed = Feed {
        replayers,
        sampling: Sampling {
            samples: samples.max(1),
            interval: FIRST_SAMPLE_INTERVAL,
        },
        done: 0,
        last_ts: None,
        progress,
    };
    let hz = feed.replayers.first().map_or(vmstat::DEFAULT_HZ, |r| r.hz);
    let mut source = NapLook::new(source, hz);
    let failure = if beside {
        pass_beside(&mut feed, &mut source, (kernel, geo), (*infer, *counted))
    } else {
        pass_here(&mut feed, &mut source, kernel, geo, (*infer, *counted))
    };
    if failure.is_none() {
        feed.sampling.last(feed.done, feed.last_ts, feed.replayers);
    }
    (feed.done, failure)
}

/// [`pass`] with the kernel's side here, event by event: with the inferences when `infer`,
/// else counting each event from the `counted`-th on (the look counted those before).
fn pass_here(
    feed: &mut Feed<'_>,
    source: &mut NapLook<'_>,
    kernel: &mut KernelSide,
    geo: &Geometry,
    (infer, counted): (bool, u64),
) -> Option<io::Error> {
    while let Some((chunk, naps)) = source.next_chunk() {
        for (i, ev) in chunk.events().enumerate() {
            feed.naps(&naps, i);
            let zone = geo.zone_of(ev.kind.pfn()).unwrap_or(0);
            // Without the inferences the kernel side only counts (the same figures).
            let inferred = if infer {
                kernel.add(&ev, zone)
            } else {
                if feed.done >= counted {
                    kernel.add_counts(&ev, zone);
                }
                kernel::Inferred::None
            };
            let untraced: &[_] = if infer { &kernel.untraced_now } else { &[] };
            if let Err(e) = feed.event(&ev, inferred, untraced) {
                return Some(e);
            }
        }
        source.recycle(chunk);
    }
    None
}

/// [`pass`] with the kernel's side on a thread of its own ([`kernel_side`]), the replayers
/// here.
fn pass_beside(
    feed: &mut Feed<'_>,
    source: &mut NapLook<'_>,
    side: (&mut KernelSide, &Geometry),
    how: (bool, u64),
) -> Option<io::Error> {
    std::thread::scope(|s| {
        let (tx, rx) = sync_channel(NOTES_AHEAD);
        let (spent, back) = sync_channel(NOTES_AHEAD + 2);
        let side = std::thread::Builder::new()
            .name("trace-kernel".into())
            .spawn_scoped(s, move || kernel_side(source, side, how, tx, back));
        if let Err(e) = side {
            return Some(e);
        }
        // Leaving the loop early drops `rx`: the kernel's side stops at its next chunk.
        for (chunk, notes) in rx {
            let failed = if notes.inferred.is_empty() {
                feed.counted_chunk(&chunk, &notes.naps)
            } else {
                feed.inferred_chunk(&chunk, &notes)
            };
            if let Err(e) = failed {
                return Some(e);
            }
            let _ = spent.try_send((chunk, notes));
        }
        None
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared 6.1 sample, `copies` times, in a file, and a replay of it from the 6.1
    /// snapshot with the inferences.
    fn sample(copies: usize) -> (tempfile::TempDir, std::path::PathBuf, ReplayOptions) {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let text = std::fs::read_to_string(data.join("linux-6.1-ftrace-sample.txt")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.txt");
        std::fs::write(&path, text.repeat(copies)).unwrap();
        let opts = ReplayOptions {
            proc: Some(data.join("proc/linux-6.1-p1-before")),
            infer: Some(true),
            samples: 16,
            ..ReplayOptions::default()
        };
        (dir, path, opts)
    }

    /// What a pass left: the events done, the failure, the drains and allocations the kernel's
    /// side inferred, and that side and every replayer's counts and samples, as text.
    fn pass_of(
        path: &Path,
        opts: &ReplayOptions,
        beside: bool,
    ) -> (u64, Option<String>, u64, String) {
        let snaps = Snapshots::read(opts).unwrap();
        let window = snaps.window(opts);
        let mut source = Source::open(path, &window).unwrap();
        let mut setup = Setup::new(opts, snaps, &mut source).unwrap();
        let (done, failure) = pass_with(&mut setup, &mut source, opts.samples, &|_| {}, beside);
        source.finish().1.unwrap();
        let k = &setup.kernel;
        let mut seen = format!(
            "{:?} {:?} {} {} {} {} {}",
            k.grid,
            k.events_per_cpu,
            k.unexplained_runs,
            k.inferred_drains,
            k.untraced_allocs,
            k.untraced_early,
            k.remote_drained_blocks
        );
        for r in &setup.replayers {
            seen += &format!("\n{:?} {:?} {:?}", r.counts, r.ours, r.frag);
        }
        // The untraced allocations the replayers were handed, and the drains inferred.
        let inferred = k.inferred_drains
            + (setup.replayers.iter())
                .map(|r| r.counts.untraced_allocs)
                .sum::<u64>();
        (done, failure.map(|e| e.to_string()), inferred, seen)
    }

    /// [`pass_of`] in line, after checking that the pass beside gives the same, over many
    /// chunks (so the kernel's side runs chunks ahead of the replayers) and without failure.
    fn same_beside(path: &Path, opts: &ReplayOptions) -> (u64, Option<String>, u64, String) {
        let here = pass_of(path, opts, false);
        let beside = pass_of(path, opts, true);
        assert!(
            here.0 > 20 * crate::trace::ingest::CHUNK_EVENTS as u64,
            "{}",
            here.0
        );
        assert_eq!(here.1, None);
        assert_eq!(here, beside);
        here
    }

    #[test]
    fn the_kernel_side_beside_the_replayers_gives_what_it_gives_in_line() {
        let (_dir, path, opts) = sample(40);
        let here = same_beside(&path, &opts);
        // The inferences did infer something.
        assert!(here.2 > 0, "{}", here.3);
    }

    #[test]
    fn the_counting_kernel_side_beside_the_replayers_counts_what_it_counts_in_line() {
        // Without the inferences: the look counted the prefix's events before the pass, so
        // the side skips them (counted twice, the refills come out higher).
        // The zones' span and CPUs given, so they are built before the look.
        let (_dir, path, mut opts) = sample(40);
        opts.infer = Some(false);
        opts.proc = None;
        opts.zone_start = Some(0x2400);
        opts.zone_pages = Some(70656);
        opts.cpus = Some(4);
        let snaps = Snapshots::read(&opts).unwrap();
        let mut source = Source::open(&path, &snaps.window(&opts)).unwrap();
        let counted = Setup::new(&opts, snaps, &mut source).unwrap().counted;
        source.finish().1.unwrap();
        assert!(counted > 0);
        let here = same_beside(&path, &opts);
        // Nothing inferred, but the kernel's side counted its refills and drains.
        assert_eq!(here.2, 0, "{}", here.3);
        let kernel_line = here.3.lines().next().unwrap_or_default();
        assert!(
            kernel_line
                .split("refills: ")
                .skip(1)
                .any(|n| !n.starts_with('0')),
            "{kernel_line}"
        );
    }

    #[test]
    fn a_replayer_failure_beside_the_kernel_side_stops_the_pass_and_says_so() {
        // An allocation of a frame the zones do not span, after many chunks.
        let (dir, path, opts) = sample(8);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(
            " a-1 [000] .... 9.000001: mm_page_alloc: page=0x1 pfn=0xfffffffff order=0 \
             migratetype=1 gfp_flags=GFP_KERNEL\n",
        );
        text.push_str(&std::fs::read_to_string(&path).unwrap());
        let bad = dir.path().join("bad.txt");
        std::fs::write(&bad, text).unwrap();
        let here = pass_of(&bad, &opts, false);
        let beside = pass_of(&bad, &opts, true);
        assert!(here.1.is_some(), "{here:?}");
        assert_eq!(here.0, beside.0);
        assert_eq!(here.1, beside.1);
    }
}
