//! The pass over a trace's events: the kernel's side ([`KernelSide`]) and every variant's
//! [`Replayer`] fed each event in order, with the fragmentation samples; on a machine of more
//! than one core the kernel's side runs on a thread of its own, a few chunks ahead.

use std::io;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use super::geometry::Geometry;
use super::infer::kernel::{self, KernelSide, Untraced};
use super::kswapd_nap::NapLook;
use super::replayer::Replayer;
use super::setup::Setup;
use super::vmstat;
use crate::trace::ingest::{Chunk, Source};

/// Events between fragmentation samples when the trace's length is not known in advance:
/// samples come every event at first, then the interval doubles (and every
/// other sample is dropped) whenever `2 * samples` have been taken, so a trace of any length
/// ends with between `samples` and `2 * samples` evenly spaced samples.
const FIRST_SAMPLE_INTERVAL: u64 = 1;
const _: () = assert!(FIRST_SAMPLE_INTERVAL.is_power_of_two());
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
    untraced: Vec<Untraced>,
}

/// Chunks the kernel's side runs ahead of the replayers (of
/// [`crate::trace::ingest::CHUNK_EVENTS`] events each).
const NOTES_AHEAD: usize = 4;

/// How the kernel's side takes the pass's events: with the inferences or not, the first
/// events it has counted already without them ([`Setup::counted`]), and with them the first
/// events it has taken already, with its notes ([`Setup::noted`]).
type How<'a> = (bool, u64, (u64, &'a mut kernel::Notes));

/// The kernel's side of a pass: every event of `source`, in order, to `kernel` (with the
/// inferences when `infer`, from the notes for the first `noted` events; else counting each
/// event from the `counted`-th on, as [`pass_here`] does), each chunk sent on `tx` with its
/// [`Notes`]; the replayers' spent chunks and notes come back on `back`. Stops at the end of
/// the input or when the replayers stop.
fn kernel_side(
    source: &mut NapLook<'_>,
    (kernel, geo): (&mut KernelSide, &Geometry),
    (infer, counted, (noted, by_walk)): How<'_>,
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
            infer_chunk(
                (kernel, geo),
                &chunk,
                &mut notes,
                (&mut seen, noted, by_walk),
            );
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

/// The kernel's side of a chunk's events with the inferences, into `notes`: from the walk's
/// notes (`by_walk`) while fewer than `noted` events were `seen`. Out of line: inlined, it
/// changed the counting loop beside it (s300: 3.9% more instructions on the side's thread).
#[inline(never)]
fn infer_chunk(
    (kernel, geo): (&mut KernelSide, &Geometry),
    chunk: &Chunk,
    notes: &mut Notes,
    (seen, noted, by_walk): (&mut u64, u64, &mut kernel::Notes),
) {
    for ev in chunk.events() {
        notes.inferred.push(if *seen < noted {
            kernel.add_noted(&ev, *seen, by_walk)
        } else {
            kernel.add(&ev, geo.zone_of(ev.kind.pfn()).unwrap_or(0))
        });
        *seen += 1;
        notes.untraced.extend_from_slice(&kernel.untraced_now);
        // A chunk's untraced pages are far fewer than 4 Gi.
        notes.untraced_end.push(notes.untraced.len() as u32);
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
        untraced: &[Untraced],
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
        for i in 0..chunk.len() {
            let ev = chunk.event_at(i);
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
        for i in 0..chunk.len() {
            let ev = chunk.event_at(i);
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
pub(super) fn pass(
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
        noted,
        geo,
        kernel,
        replayers,
        ..
    } = setup;
    let how = (*infer, *counted, (noted.0, &mut noted.1));
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
        pass_beside(&mut feed, &mut source, (kernel, geo), how)
    } else {
        pass_here(&mut feed, &mut source, (kernel, geo), how)
    };
    if failure.is_none() {
        feed.sampling.last(feed.done, feed.last_ts, feed.replayers);
    }
    (feed.done, failure)
}

/// [`pass`] with the kernel's side here, event by event: with the inferences when `infer`
/// (from the notes for the first `noted` events), else counting each event from the
/// `counted`-th on (the look counted those before).
fn pass_here(
    feed: &mut Feed<'_>,
    source: &mut NapLook<'_>,
    (kernel, geo): (&mut KernelSide, &Geometry),
    (infer, counted, (noted, by_walk)): How<'_>,
) -> Option<io::Error> {
    while let Some((chunk, naps)) = source.next_chunk() {
        for i in 0..chunk.len() {
            let ev = chunk.event_at(i);
            feed.naps(&naps, i);
            let zone = geo.zone_of(ev.kind.pfn()).unwrap_or(0);
            // Without the inferences the kernel side only counts (the same figures).
            let inferred = if infer && feed.done < noted {
                kernel.add_noted(&ev, feed.done, by_walk)
            } else if infer {
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
    how: How<'_>,
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
#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::trace::replay::{ReplayOptions, Snapshots};

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
        pass_handed(path, opts, beside, true).0
    }

    /// [`pass_of`], the kernel's side handed over by the start-count walk where `handed`,
    /// else one of the pass's own from the first event, as before the walk handed it; and
    /// the events the walk had taken.
    fn pass_handed(
        path: &Path,
        opts: &ReplayOptions,
        beside: bool,
        handed: bool,
    ) -> ((u64, Option<String>, u64, String), u64) {
        let snaps = Snapshots::read(opts).unwrap();
        let window = snaps.window(opts);
        let mut source = Source::open(path, &window).unwrap();
        let mut setup = Setup::new(opts, snaps, &mut source).unwrap();
        let walked = setup.noted.0;
        if !handed {
            // The pageblock types the set-up seeded, no event named yet.
            let mut own = KernelSide::for_geometry(&setup.geo);
            own.block_types = setup.kernel.block_types.clone();
            own.set_extfrag_names_page(setup.preset.0.extfrag_names_page());
            own.set_bulk_takes_head(setup.infer && setup.preset.0.bulk_takes_head());
            setup.kernel = own;
            setup.noted = (0, kernel::Notes::default());
        }
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
        let most = k.most_reused(5);
        seen += &format!("\n{most:?} {} {:?}", k.allocs_on_refilling_cpu, k.span_ns);
        (
            (done, failure.map(|e| e.to_string()), inferred, seen),
            walked,
        )
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

    /// Per event of the window, what the kernel's side inferred and found untraced, handed
    /// over by the walk or not ([`pass_handed`]).
    fn inferred_of(path: &Path, opts: &ReplayOptions, handed: bool) -> Vec<String> {
        let snaps = Snapshots::read(opts).unwrap();
        let mut source = Source::open(path, &snaps.window(opts)).unwrap();
        let mut setup = Setup::new(opts, snaps, &mut source).unwrap();
        let (k, geo) = (&mut setup.kernel, &setup.geo);
        let (noted, notes) = (setup.noted.0, &mut setup.noted.1);
        if !handed {
            let mut own = KernelSide::for_geometry(geo);
            own.block_types = k.block_types.clone();
            own.set_extfrag_names_page(setup.preset.0.extfrag_names_page());
            own.set_bulk_takes_head(setup.infer && setup.preset.0.bulk_takes_head());
            *k = own;
        }
        let mut out = Vec::new();
        while let Some(chunk) = source.next_chunk() {
            for ev in chunk.events() {
                let i = out.len() as u64;
                let inferred = if handed && i < noted {
                    k.add_noted(&ev, i, notes)
                } else {
                    k.add(&ev, geo.zone_of(ev.kind.pfn()).unwrap_or(0))
                };
                out.push(format!("{inferred:?} {:?}", k.untraced_now));
            }
        }
        source.finish().1.unwrap();
        out
    }

    #[test]
    fn the_kernel_side_the_walk_hands_over_infers_what_the_passes_own_infers() {
        let (_dir, path, opts) = sample(40);
        // At the end, an allocation names a pageblock the sample names Movable (0x2e64's)
        // Unmovable; a free in it then goes to the Unmovable list, not the head's first type.
        let mut text = std::fs::read_to_string(&path).unwrap();
        for l in [
            "mm_page_alloc: page=(____ptrval____) pfn=0x2e00 order=0 migratetype=0 gfp_flags=GFP_KERNEL",
            "mm_page_free: page=(____ptrval____) pfn=0x2e01 order=0",
        ] {
            text += &format!("  init-1 [003] ..... 9.000001: {l}\n");
        }
        std::fs::write(&path, text).unwrap();
        let (handed, own) = (
            inferred_of(&path, &opts, true),
            inferred_of(&path, &opts, false),
        );
        assert!(handed.iter().any(|n| n.starts_with("FreeOfType")));
        // And some the notes keep: pages taken untraced (`alloc_pages_bulk`).
        assert!(handed.iter().any(|n| !n.ends_with(" []")));
        assert_eq!(
            handed.last().map(String::as_str),
            Some("FreeOfType { migratetype: 0 } []")
        );
        assert_eq!(handed, own);
    }

    #[test]
    fn the_kernel_side_the_walk_hands_over_gives_what_the_passes_own_gives() {
        // The walk runs on 6.1 (its start counts on by default) over the whole sample (no CPU
        // is pinned), so the pass reads the notes for every event; where it ends sooner (its
        // CPUs pinned, or `LIST_EVENTS` read), the pass adds the rest on its own.
        let (_dir, path, opts) = sample(40);
        for beside in [false, true] {
            let (handed, walked) = pass_handed(&path, &opts, beside, true);
            let (own, _) = pass_handed(&path, &opts, beside, false);
            assert!(walked > 0 && walked <= handed.0, "{walked} of {}", handed.0);
            assert_eq!(handed.1, None);
            assert!(handed.2 > 0, "{}", handed.3);
            assert_eq!(handed, own);
        }
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
