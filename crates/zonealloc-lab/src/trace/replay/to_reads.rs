//! The end state where the kernel's after-snapshot was read: past the window's end marker
//! (`KT_SNAPSHOT_AFTER_BEGIN`), up to each file's read ([`snapshot_reads`]).
//!
//! The window stays the window: the kernel's refills, drains and events, and ours, are
//! counted up to its end marker only, and `--emit` ends there. After the pass, the text
//! between the end marker and `KT_SNAPSHOT_AFTER_END` (kept by the stream: [`Tail`]) is
//! replayed on, the inferences with it, and each file of `--proc-after` is compared when the
//! replay reaches its read: zoneinfo's per-CPU counts at zoneinfo's, buddyinfo's free blocks
//! at buddyinfo's, pagetypeinfo's at pagetypeinfo's, the layout at the layout's. The counts
//! are then put back as they were at the window's end.
//!
//! Only with the default window of `--proc` and `--proc-after` (a `--to-marker` given ends the
//! end state at that marker too, as before).

use super::counts::ReplayCounts;
use super::end_state::{end_state, EndState};
use super::geometry::Geometry;
use super::infer::kernel::{Inferred, KernelSide};
use super::numa::NumaCounts;
use super::options::ReplayOptions;
use super::replayer::Replayer;
use super::setup::Setup;
use super::snapshot_reads::{self, ReadAt, SnapFile};
use super::snapshots::Snapshots;
use super::tally::Grid;
use crate::procfs::ProcSnapshot;
use crate::trace::ingest::{Tail, TailEnd};
use crate::trace::parse::{lines, Parser};

/// The marker the kept text ends at: `capture-kmem`'s after-snapshot is read before it.
pub const READS_END: &str = "KT_SNAPSHOT_AFTER_END";

/// The text after the window to keep, where the end state is taken at the after-snapshot's
/// reads: the default window (`--proc`, no `--from-marker`, `--to-marker` or `--whole-file`)
/// with `--proc-after`.
pub fn keep(opts: &ReplayOptions, snaps: &Snapshots) -> Option<Tail> {
    let default_window = opts.window.from.is_none() && opts.window.to.is_none();
    (default_window && !opts.whole_file && snaps.before.is_some() && snaps.after.is_some())
        .then(|| Tail::until(READS_END.as_bytes()))
}

/// Where the end state was taken: each file's read, and how the kept text ended.
#[derive(Clone, Debug, serde::Serialize)]
pub struct EndReads {
    /// Per file: zoneinfo, buddyinfo, pagetypeinfo, layout.
    pub reads: Vec<ReadAt>,
    /// How the kept text ended: `marker` (at `KT_SNAPSHOT_AFTER_END`), `eof`, `cap` (at
    /// [`crate::trace::ingest::TAIL_MAX_BYTES`]) or `read error`.
    pub text_end: &'static str,
    /// Events replayed past the window in all.
    pub events: u64,
}

impl EndReads {
    /// Where each file was compared, in a line: `zoneinfo at cat-1135's last allocation
    /// (+229 events), ...`.
    pub fn describe(&self) -> String {
        let each: Vec<String> = self
            .reads
            .iter()
            .map(|r| match &r.reader {
                Some(task) => format!(
                    "{} at {task}'s last allocation (+{} events)",
                    r.file, r.events_past_window
                ),
                None => format!("{} at the window's end (no reader found)", r.file),
            })
            .collect();
        each.join(", ")
    }
}

/// Every variant's end state against `after`, each zone as it stands now.
pub fn states_now(
    replayers: &[Replayer],
    geo: &Geometry,
    after: &ProcSnapshot,
) -> Vec<Vec<EndState>> {
    replayers
        .iter()
        .map(|r| {
            geo.zones
                .iter()
                .zip(&r.zones)
                .enumerate()
                .filter_map(|(i, (span, zone))| {
                    let setup = r.setup.get(i).cloned().unwrap_or_default();
                    after
                        .zone(span.node, span.zone_type)
                        .map(|kz| end_state(zone, after, kz, &setup))
                })
                .collect()
        })
        .collect()
}

/// A replayer's counts: its own, per zone and CPU, and its node counters (the trace's, ours).
type ReplayerCounted = (ReplayCounts, Grid, Option<(NumaCounts, NumaCounts)>);

/// Every variant's end state (per variant, per zone), and where it was taken.
pub type AtReads = (Vec<Vec<EndState>>, EndReads);

/// The window's counts, put back after the text past it is replayed.
struct Counted {
    grid: Grid,
    events_per_cpu: Vec<u64>,
    folded_events: u64,
    span_ns: Option<(u64, u64)>,
    runs: (u64, u64, u64, u64),
    untraced: (u64, u64, u64),
    replayers: Vec<ReplayerCounted>,
}

impl Counted {
    fn save(kernel: &KernelSide, replayers: &[Replayer]) -> Counted {
        Counted {
            grid: kernel.grid.clone(),
            events_per_cpu: kernel.events_per_cpu.clone(),
            folded_events: kernel.folded_events,
            span_ns: kernel.span_ns,
            runs: (
                kernel.unexplained_runs,
                kernel.unexplained_blocks,
                kernel.inferred_drains,
                kernel.remote_drained_blocks,
            ),
            untraced: (
                kernel.untraced_allocs,
                kernel.untraced_early,
                kernel.bulk_refills,
            ),
            replayers: replayers
                .iter()
                .map(|r| {
                    let numa = r.numa.as_ref().map(|n| (n.kernel.clone(), n.ours.clone()));
                    (r.counts.clone(), r.ours.clone(), numa)
                })
                .collect(),
        }
    }

    fn restore(self, kernel: &mut KernelSide, replayers: &mut [Replayer]) {
        kernel.grid = self.grid;
        kernel.events_per_cpu = self.events_per_cpu;
        kernel.folded_events = self.folded_events;
        kernel.span_ns = self.span_ns;
        (
            kernel.unexplained_runs,
            kernel.unexplained_blocks,
            kernel.inferred_drains,
            kernel.remote_drained_blocks,
        ) = self.runs;
        (
            kernel.untraced_allocs,
            kernel.untraced_early,
            kernel.bulk_refills,
        ) = self.untraced;
        for (r, (counts, ours, numa)) in replayers.iter_mut().zip(self.replayers) {
            r.counts = counts;
            r.ours = ours;
            if let (Some(n), Some((k, o))) = (r.numa.as_mut(), numa) {
                n.kernel = k;
                n.ours = o;
            }
        }
    }
}

/// Replays `tail` (the text after the window, [`keep`]) to each after-snapshot file's read,
/// and returns every variant's end state, each file compared at its read, with where they
/// were read. `None` where nothing was kept (no tail asked for, or the window's end marker
/// not in the trace) or without `--proc-after`.
pub fn replay(setup: &mut Setup, tail: Option<&Tail>) -> Result<Option<AtReads>, String> {
    let (Some(tail), Some(after)) = (tail, setup.snaps.after.as_ref()) else {
        return Ok(None);
    };
    let (text, how) = tail.take();
    let text_end = match how {
        TailEnd::NotKept => return Ok(None),
        TailEnd::Marker => "marker",
        TailEnd::Eof => "eof",
        TailEnd::Cap => "cap",
        TailEnd::ReadError => "read error",
    };
    // The kept text begins inside the end marker's line.
    let body = memchr::memchr(b'\n', &text).map_or(&text[..0], |nl| &text[nl + 1..]);
    let mut reads = snapshot_reads::find(body);
    let mut order: Vec<usize> = (0..reads.len()).collect();
    order.sort_by_key(|&i| reads[i].offset);
    let saved = Counted::save(&setup.kernel, &setup.replayers);
    let mut parser = Parser::new();
    let mut text_lines = lines(body);
    let (mut at, mut events) = (0usize, 0u64);
    let mut taken: Vec<Option<Vec<Vec<EndState>>>> = vec![None; reads.len()];
    let mut failure = None;
    'reads: for i in order {
        while at < reads[i].offset {
            let Some(line) = text_lines.next() else { break };
            at += line.len();
            if let Some(ev) = parser.feed(line) {
                let side = (&mut setup.kernel, setup.infer);
                if let Err(e) = feed(side, &mut setup.replayers, &setup.geo, &ev) {
                    failure = Some(format!(
                        "replaying past the window to the after-snapshot's reads: {e}"
                    ));
                    break 'reads;
                }
                events += 1;
            }
        }
        reads[i].events_past_window = events;
        taken[i] = Some(states_now(&setup.replayers, &setup.geo, after));
    }
    saved.restore(&mut setup.kernel, &mut setup.replayers);
    if let Some(e) = failure {
        return Err(e);
    }
    let part = |f: SnapFile| taken[f as usize].clone().unwrap_or_default();
    let mut states = part(SnapFile::Buddyinfo);
    for f in [SnapFile::Zoneinfo, SnapFile::Pagetypeinfo, SnapFile::Layout] {
        for (ours, theirs) in states.iter_mut().zip(part(f)) {
            for (e, from) in ours.iter_mut().zip(theirs) {
                e.take_file(&from, f);
            }
        }
    }
    // A snapshot without a layout file has no layout read to tell of.
    if after.layout.is_none() {
        reads.retain(|r| r.file != SnapFile::Layout.name());
    }
    Ok(Some((
        states,
        EndReads {
            reads,
            text_end,
            events,
        },
    )))
}

/// One event past the window to the kernel's side (for its inferences only: its counts are
/// put back) and every replayer.
fn feed(
    (kernel, infer): (&mut KernelSide, bool),
    replayers: &mut [Replayer],
    geo: &Geometry,
    ev: &crate::trace::parse::Event<'_>,
) -> std::io::Result<()> {
    let zone = geo.zone_of(ev.kind.pfn()).unwrap_or(0);
    let inferred = if infer {
        kernel.add(ev, zone)
    } else {
        Inferred::None
    };
    let untraced: &[_] = if infer { &kernel.untraced_now } else { &[] };
    for r in replayers.iter_mut() {
        r.feed_inferred(ev, inferred, untraced)?;
    }
    Ok(())
}
