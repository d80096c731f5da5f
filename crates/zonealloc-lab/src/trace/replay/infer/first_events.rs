//! The window's first events, parsed once and held: the inferences that set each CPU's lists
//! up before the replay ([`super::pcp_state`], [`super::start_count`]) read them off the
//! replay's own parse ([`crate::trace::ingest::Source`]), and the replay then starts with the same events, so
//! nothing is read twice. A file, a pipe and a compressed input get the same inferences.
//!
//! At most [`LIST_EVENTS`] events are held (the parser's own [`Chunk`]s, some 72 bytes an
//! event plus the `gfp_flags` text that changes from one event to the next: 40 to 50 MiB at
//! the most); fewer when the trace window is shorter, or when only the start-count walk runs
//! and every CPU is pinned before. Memory beyond them is the replay's, as before.

use super::kernel::Handover;
use super::pcp_state::{self, Collector};
use super::start_count::{StartCounts, Walk};
use crate::procfs::ProcSnapshot;
use crate::trace::ingest::{Chunk, Tail, TailEnd};
use crate::trace::replay::geometry::Geometry;
use crate::trace::replay::layout::{HintCollector, StartHints};
use crate::trace::replay::vmstat::RunsAhead;

mod after;
mod beside;

/// Events of the window the inferences read at most: 512 Ki events, some 70 MiB of ftrace
/// text (a list's first refill can come many seconds in).
pub const LIST_EVENTS: usize = 512 << 10;

/// Which inferences run on the held events, and the kernel rules they follow.
#[derive(Clone, Copy, Debug)]
pub struct Which {
    /// Each CPU's count at the start marker ([`Walk`]).
    pub counts: bool,
    /// Which lists each CPU's count is on ([`Collector`]).
    pub lists: bool,
    /// One `high` per zone (kernels before 6.7).
    pub fixed_high: bool,
    /// `CONFIG_PCP_BATCH_SCALE_MAX`.
    pub scale_max: u8,
    /// The THP order the lists take.
    pub thp_order: Option<u8>,
    /// `pageblock_order`.
    pub pageblock_order: u8,
    /// `mm_page_alloc_extfrag` names the page taken (6.15 on: [`super::kernel::KernelSide`]).
    pub extfrag_names_page: bool,
    /// The kernel's `HZ` (kswapd's nap before its sleep: [`Walk::set_hz`]).
    pub hz: u32,
    /// Where zoneinfo was read, to roll the counts back from (`--whole-file`,
    /// [`super::start_count::roll`]).
    pub roll_at: Option<super::start_count::ReadPoint>,
    /// Keep the walk's kernel side for the replay's pass ([`FirstEvents::kernel`]).
    pub keep_kernel: bool,
    /// The kept side and the lists' walk infer bulk takes off a list's head
    /// ([`super::kernel::KernelSide::set_bulk_takes_head`], [`Collector::set_bulk_takes_head`]).
    pub bulk_takes_head: bool,
    /// The walk's kernel side and the lists' walk read a page first freed in a batch and
    /// freed again as on its list from the start
    /// ([`super::kernel::KernelSide::set_appeared_takes`], [`Collector::set_appeared_takes`]).
    pub first_free_takes: bool,
    /// 7.2's `vfree` frees a contiguous range as aligned blocks ([`Walk::set_contig_free`]).
    pub contig_free: bool,
    /// The lists' walk reads on past the window, through the text the end state replays
    /// ([`pcp_state::Head::past`]), where the window ended before the limit.
    pub lists_after: bool,
    /// The kernel's `free_high` rule ([`Walk::set_free_high`]).
    pub free_high: zonealloc::FreeHigh,
}

/// The held events and what the inferences found in them (nothing, by default).
#[derive(Default)]
pub struct FirstEvents {
    /// The chunks taken off the parse, in order: the replay starts with them.
    pub held: Vec<Chunk>,
    /// Each CPU's start count (`None`: not asked for).
    pub counts: Option<StartCounts>,
    /// The lists' start (`None`: not asked for).
    pub lists: Option<pcp_state::Head>,
    /// Per zone, what the events show of the layout's start (with `lists` and the kernel's
    /// layout, [`crate::trace::replay::layout::StartHints`]).
    pub hints: Option<Vec<StartHints>>,
    /// The walk's kernel side after its events, with what it inferred for each, where
    /// [`Which::keep_kernel`] asked for it ([`super::kernel::Handover`]).
    pub kernel: Option<Handover>,
    /// The input ended (the window's end marker) before the limit: `held` is the whole
    /// window.
    pub ended: bool,
}

/// Takes chunks off `next` and feeds their events to the inferences `which` asks for, until
/// the walk is done (every CPU with lists pinned) and the list inference has read `limit`
/// events (the replay passes [`LIST_EVENTS`]), or the input ends; `snap` is the `--proc`
/// snapshot the zones of `geo` come from. The chunks taken are returned
/// ([`FirstEvents::held`]), not consumed.
pub fn take(
    next: impl FnMut() -> Option<Chunk>,
    geo: &Geometry,
    snap: &ProcSnapshot,
    which: Which,
    limit: usize,
) -> FirstEvents {
    take_to_after(next, geo, snap, which, limit, (None, None))
}

/// [`take`], and where the input ended (the window's end marker) before `limit` events and
/// `after` holds the text past it ([`Tail`]), the hints read that text too: a block the
/// window never names that it shows on a per-CPU list was there all along
/// ([`StartHints::late`]). `ahead` (the vmstat workers' runs, where they decay the lists)
/// reads the held events, then the text past the window in the same parse as the hints
/// (`first_events/after.rs`); so does the lists' walk with [`Which::lists_after`]
/// ([`pcp_state::Head::past`]).
pub fn take_to_after(
    next: impl FnMut() -> Option<Chunk>,
    geo: &Geometry,
    snap: &ProcSnapshot,
    which: Which,
    limit: usize,
    (after, mut ahead): (Option<&Tail>, Option<&mut RunsAhead>),
) -> FirstEvents {
    let (walk, collect, hints) = inferences(geo, snap, which);
    let (mut first, mut hints, mut collect, ended) = match (walk, collect) {
        (Some(walk), Some(collect)) => {
            beside::take(next, (walk, collect), hints, limit, beside::LAG)
        }
        (walk, collect) => take_here(next, walk, collect, hints, limit),
    };
    if let Some(a) = ahead.as_deref_mut() {
        first
            .held
            .iter()
            .flat_map(|c| c.events())
            .for_each(|ev| a.feed(&ev));
    }
    // Only where every event of the window went by: a block the head never reached may be
    // named later in the window, and a worker's run too.
    // The lists' walk as it stood at the window's end, where it reads on past it.
    let mut at_end = None;
    if let Some(tail) = after.filter(|_| ended) {
        tail.peek(|text, end| {
            if end != TailEnd::NotKept {
                let lists = collect.as_mut().filter(|_| which.lists_after);
                at_end = lists.as_deref().cloned();
                after::read(text, hints.as_mut(), ahead, lists);
            }
        });
    }
    first.lists = collect.map(|c| match at_end {
        // `c` read on past the window, `w` stopped at its end.
        Some(w) => w.finish().past(c.finish()),
        None => c.finish(),
    });
    first.hints = hints.map(HintCollector::finish);
    first
}

/// The inferences `which` asks for, on the zones of `geo` as `snap` printed them, none fed
/// yet: the start-count walk, the lists' and the hints'.
type Inferences = (Option<Walk>, Option<Collector>, Option<HintCollector>);

/// [`Inferences`] for `which`.
fn inferences(geo: &Geometry, snap: &ProcSnapshot, which: Which) -> Inferences {
    let walk = which.counts.then(|| {
        let mut w = Walk::new(
            geo,
            snap,
            which.fixed_high,
            which.scale_max,
            which.thp_order,
            which.pageblock_order,
        );
        w.set_extfrag_names_page(which.extfrag_names_page);
        w.set_hz(which.hz);
        w.set_contig_free(which.contig_free);
        w.set_appeared_takes(which.first_free_takes);
        w.set_free_high(which.free_high);
        match which.roll_at {
            Some(at) => w.roll_back_from(at),
            // The window's start: `free_count` where the text before it shows nothing of a
            // CPU's lists (`start_count/start_free.rs`).
            None => w.open_start_free(),
        }
        if which.keep_kernel {
            w.keep_notes(which.bulk_takes_head);
        }
        w
    });
    let spans: Vec<_> = geo.zones.iter().map(|z| z.start..z.end()).collect();
    let collect = which.lists.then(|| {
        let mut c = Collector::new(
            geo.cpus,
            &spans,
            which.pageblock_order,
            which.thp_order,
            geo.numbering,
        );
        c.set_bulk_takes_head(which.bulk_takes_head);
        c.set_appeared_takes(which.first_free_takes);
        c.set_extfrag_names_page(which.extfrag_names_page);
        c.set_contig_free(which.contig_free);
        c
    });
    // Only a kernel layout reads the hints (`ZoneLayout::from_kernel_hinted`); a synthesised
    // one places its blocks by the counts alone.
    let hints = (which.lists && snap.layout.is_some())
        .then(|| HintCollector::new(geo.cpus, &spans, which.pageblock_order, geo.numbering));
    (walk, collect, hints)
}

/// What [`take_here`] and [`beside::take`] leave: the events and the inferences' results but
/// the hints' and the lists', the hints' collector, the lists' walk (not finished: it may read
/// on past the window), and whether the input ended before the limit.
type Taken = (FirstEvents, Option<HintCollector>, Option<Collector>, bool);

/// [`take`] in this thread.
fn take_here(
    mut next: impl FnMut() -> Option<Chunk>,
    mut walk: Option<Walk>,
    mut collect: Option<Collector>,
    mut hints: Option<HintCollector>,
    limit: usize,
) -> Taken {
    let mut events = 0usize;
    let done = |w: &Option<Walk>, c: &Option<Collector>, n: usize| {
        n >= limit || (w.as_ref().is_none_or(Walk::done) && c.is_none())
    };
    let mut held = Vec::new();
    let mut ended = false;
    while !done(&walk, &collect, events) {
        let Some(chunk) = next() else {
            ended = true;
            break;
        };
        for ev in chunk.events().take(limit - events) {
            // With the lists' walk, the count walk goes after it (below).
            if let Some(w) = walk.as_mut().filter(|w| !w.done() && collect.is_none()) {
                w.feed(&ev);
            }
            if let Some(c) = collect.as_mut() {
                c.feed(&ev);
            }
            if let Some(h) = hints.as_mut() {
                h.feed(&ev);
            }
        }
        events += chunk.len();
        held.push(chunk);
    }
    // The interrupts' frees the lists' walk saw go to the buddy, which the count walk
    // leaves off the lists (`pcp_state/irq_fate.rs`).
    if let (Some(w), Some(c)) = (walk.as_mut(), collect.as_ref()) {
        w.set_held_frees(c.held_frees());
        let mut left = limit;
        for chunk in &held {
            feed_chunk(w, chunk, left);
            left = left.saturating_sub(chunk.len());
        }
    }
    let first = FirstEvents {
        held,
        kernel: walk.as_mut().and_then(Walk::hand_over),
        counts: walk.map(Walk::finish),
        lists: None,
        hints: None,
        ended,
    };
    (first, hints, collect, ended)
}

/// Feeds `walk` the first `n` events of `chunk`, until it is done.
fn feed_chunk(walk: &mut Walk, chunk: &Chunk, n: usize) {
    for ev in chunk.events().take(n) {
        if walk.done() {
            break;
        }
        walk.feed(&ev);
    }
}

#[cfg(test)]
impl Which {
    /// Both inferences on 6.1's rules (a fixed `high`, THP and pageblocks of order 9), for tests.
    pub(crate) fn both_on_6_1() -> Which {
        Which {
            counts: true,
            lists: true,
            fixed_high: true,
            scale_max: 5,
            thp_order: Some(9),
            pageblock_order: 9,
            extfrag_names_page: false,
            hz: crate::trace::replay::vmstat::DEFAULT_HZ,
            roll_at: None,
            keep_kernel: false,
            bulk_takes_head: false,
            first_free_takes: false,
            contig_free: false,
            lists_after: false,
            free_high: zonealloc::FreeHigh::FreeFactor,
        }
    }
}

/// [`take`] on the window of a file, for tests: the held events' inferences.
impl FirstEvents {
    /// Events held.
    pub fn events(&self) -> usize {
        self.held.iter().map(Chunk::len).sum()
    }
}

#[cfg(test)]
pub(crate) fn of_file(
    path: &std::path::Path,
    window: &crate::trace::ingest::Window,
    geo: &Geometry,
    snap: &ProcSnapshot,
    which: Which,
) -> FirstEvents {
    let mut source = crate::trace::ingest::Source::open(path, window).unwrap();
    let first = take(|| source.next_chunk(), geo, snap, which, LIST_EVENTS);
    source.finish().1.unwrap();
    first
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::ingest::pipe::ParseAhead;
    use crate::trace::migratetype::Numbering;
    use crate::trace::parse::Parser;
    use crate::trace::replay::proc_setup;
    use std::io::Cursor;

    fn snap() -> ProcSnapshot {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/proc/linux-6.1-p1-before");
        ProcSnapshot::read_dir(&dir).unwrap()
    }

    /// The shared 6.1 sample, repeated: 3000 lines a copy.
    fn sample(copies: usize) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/linux-6.1-ftrace-sample.txt");
        std::fs::read_to_string(p).unwrap().repeat(copies)
    }

    fn which() -> Which {
        Which::both_on_6_1()
    }

    /// Every event of `text` as a parse in this thread gives them.
    fn direct(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        Parser::new()
            .read_all(text.as_bytes(), |ev| out.push(format!("{ev:?}")))
            .unwrap();
        out
    }

    #[test]
    fn the_held_events_then_the_rest_are_the_stream_and_the_inferences_see_the_first_limit() {
        let snap = snap();
        let geo = proc_setup::geometry(&snap, None, Numbering::Current).unwrap();
        let text = sample(4);
        let all = direct(&text);
        // Held events beyond a chunk, fewer than the trace has; and more than it has.
        for limit in [crate::trace::ingest::CHUNK_EVENTS + 100, all.len() + 1] {
            let ahead = ParseAhead::spawn(
                Parser::new(),
                Box::new(Cursor::new(text.clone().into_bytes())),
            )
            .unwrap();
            let first = take(|| ahead.next(), &geo, &snap, which(), limit);
            let mut got = Vec::new();
            for c in &first.held {
                got.extend(c.events().map(|ev| format!("{ev:?}")));
            }
            assert_eq!(first.events(), got.len());
            assert!(first.events() >= limit.min(all.len()));
            while let Some(c) = ahead.next() {
                got.extend(c.events().map(|ev| format!("{ev:?}")));
                ahead.recycle(c);
            }
            ahead.finish().1.unwrap();
            assert_eq!(got, all, "limit {limit}");
            // The lists are inferred from the first `limit` events exactly: the same as a
            // collector fed those alone.
            let spans: Vec<_> = geo.zones.iter().map(|z| z.start..z.end()).collect();
            let mut c = Collector::new(geo.cpus, &spans, 9, Some(9), geo.numbering);
            let mut n = 0;
            Parser::new()
                .read_all(text.as_bytes(), |ev| {
                    if n < limit {
                        c.feed(ev);
                    }
                    n += 1;
                })
                .unwrap();
            let lists = first.lists.unwrap();
            assert_eq!(lists, c.finish());
            let seen: u64 = lists.zones.iter().map(|z| z.events).sum();
            assert!(seen > 0 && seen <= limit as u64);
        }
    }

    /// [`take`] on the parse of `text`, the parse then read to its end.
    fn take_of(
        text: &str,
        geo: &Geometry,
        snap: &ProcSnapshot,
        which: Which,
        limit: usize,
    ) -> FirstEvents {
        let ahead = ParseAhead::spawn(
            Parser::new(),
            Box::new(Cursor::new(text.as_bytes().to_vec())),
        )
        .unwrap();
        let first = take(|| ahead.next(), geo, snap, which, limit);
        drop(ahead.finish());
        first
    }

    #[test]
    fn the_walk_on_its_own_thread_counts_what_it_counts_alone() {
        // With the lists too the walk runs beside them (`beside.rs`); alone, here.
        let snap = snap();
        let geo = proc_setup::geometry(&snap, None, Numbering::Current).unwrap();
        let text = sample(4);
        for limit in [crate::trace::ingest::CHUNK_EVENTS + 100, LIST_EVENTS] {
            let run = |which: Which| take_of(&text, &geo, &snap, which, limit);
            let both = run(which());
            let alone = run(Which {
                lists: false,
                ..which()
            });
            let (both, alone) = (both.counts.unwrap(), alone.counts.unwrap());
            assert!(both.events > 0 && both.events <= limit as u64);
            assert!(!both.cpus.is_empty());
            assert_eq!(format!("{both:?}"), format!("{alone:?}"), "limit {limit}");
        }
    }

    #[test]
    fn nothing_is_held_without_an_inference_and_a_pinned_walk_stops_early() {
        let snap = snap();
        let geo = proc_setup::geometry(&snap, None, Numbering::Current).unwrap();
        let text = sample(2);
        let run = |which: Which| take_of(&text, &geo, &snap, which, LIST_EVENTS);
        let none = run(Which {
            counts: false,
            lists: false,
            ..which()
        });
        assert!(none.held.is_empty() && none.counts.is_none() && none.lists.is_none());
        // The lists read the whole (short) trace; the walk alone reads it all too unless
        // every CPU is pinned first.
        let lists = run(Which {
            counts: false,
            ..which()
        });
        assert_eq!(lists.events(), direct(&text).len());
        let counts = run(Which {
            lists: false,
            ..which()
        });
        let held = counts.events();
        let sc = counts.counts.unwrap();
        assert!(sc.events <= held as u64 && held <= direct(&text).len());
    }

    #[test]
    fn chunks_taken_before_are_read_first_and_the_rest_stay_in_order() {
        let snap = snap();
        let geo = proc_setup::geometry(&snap, None, Numbering::Current).unwrap();
        let text = sample(4);
        let ahead = ParseAhead::spawn(
            Parser::new(),
            Box::new(Cursor::new(text.clone().into_bytes())),
        )
        .unwrap();
        let taken: Vec<Chunk> = (0..3).map_while(|_| ahead.next()).collect();
        let first_len = taken[0].len();
        let mut taken = taken.into_iter();
        // A limit inside the first chunk: the inferences read that many and hold that chunk;
        // the other taken chunks, then the parse's, follow in order.
        let first = take(
            || taken.next().or_else(|| ahead.next()),
            &geo,
            &snap,
            which(),
            10,
        );
        assert_eq!(first.events(), first_len);
        let mut got = Vec::new();
        let rest: Vec<Chunk> = taken.chain(std::iter::from_fn(|| ahead.next())).collect();
        for c in first.held.iter().chain(&rest) {
            got.extend(c.events().map(|ev| format!("{ev:?}")));
        }
        ahead.finish().1.unwrap();
        assert_eq!(got, direct(&text));
        let seen: u64 = first.lists.unwrap().zones.iter().map(|z| z.events).sum();
        assert!(seen > 0 && seen <= 10);
    }
}
