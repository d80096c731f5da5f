//! [`super::take`] with both inferences: the start-count walk on a thread of its own, the
//! list inference (and the hints) in the caller's, which hands each chunk on to the walk.
//! On 6.1 p1 the walk is 134 M instructions and the lists 95 M.
//!
//! The walk leaves off the lists the interrupts' frees that went to the buddy
//! ([`Collector::held_frees`]). The list walk reads them off where their pages went next
//! (`pcp_state/irq_fate.rs`: a run of them went to the buddy where more of its pages came
//! back by zone-locked takes than through the list), which it knows for sure only at its
//! end. So the walk reads each chunk [`LAG`] chunks behind the list walk, with the frees the
//! list walk holds for the buddy by then, and checks them against the final ones at the end
//! ([`Took::again`]): where one it read differs, it walks again from a copy of itself kept
//! before it read with that set.
//!
//! 0b09392 walked with none held, and again from its start where a held free lay in what it
//! took: 38 of the fidelity table's 276 replays, 7.2 p2_procs_pipe `--proc` among them
//! (callgrind, all threads, 601.4 -> 749.8 M instructions). Its first held free is its
//! 11,733rd event of 176 k; over the 38, the first lies a median 23% into what the walk
//! reads, 29% of their events: a copy of the walk kept every so often to walk again from
//! would have saved less than a third of the second walk, and none of it here.

use super::super::pcp_state::Collector;
use super::super::start_count::Walk;
use super::{feed_chunk, take_here, FirstEvents, Taken};
use crate::trace::ingest::Chunk;
use crate::trace::replay::layout::HintCollector;
use std::collections::VecDeque;
use std::ops::Range;

/// Chunks the list walk reads ahead of the count walk (32 Ki events), so that the pages of
/// an interrupt's run of frees have come back before the walk reads the run. Of the
/// fidelity table's 276 replays, by lag in chunks, how many may walk again (a set taken and
/// the final one differ in a free within the timestamps of a chunk read with it): 0: 35,
/// 1: 27, 2: 21, 4: 13, 8: 8, 16: 5, 32: 1, 64: 0 (7.2 p2_procs_pipe's from 2 on). The
/// walk, the slower of the two, seldom waits for the lag; at the end it reads the last
/// chunks after the list walk, with the final frees.
pub(super) const LAG: usize = 8;

/// Interrupts' frees, (timestamp, CPU) sorted, as [`Collector::held_frees`] gives them.
type Frees = Vec<(u64, u32)>;

/// What the list walk hands the walk.
enum ToWalk {
    /// A chunk, how many of its events to read, and the frees the list walk holds for the
    /// buddy now, where they changed since the chunk before.
    Chunk(Chunk, usize, Option<Frees>),
    /// The frees that went to the buddy, final.
    Final(Frees),
}

/// Copies of the walk kept to walk again from ([`Took::hold`]): some 0.45 M instructions
/// and 0.6 MiB each at the end of 7.2 p2_procs_pipe's walk. Of the fidelity table's 276
/// replays 8 walk again, 7.2-4g-loads p_fork's whole-file and to-after replays from their
/// 12th chunk (of 84 and 75), the others from their first or second.
const CHECKPOINTS: usize = 8;

/// The frees the walk took as gone to the buddy: each set, the chunks it read while it held
/// (by their index), and for the first [`CHECKPOINTS`] sets the walk as it was before it
/// read with it (`W`: a [`Walk`]).
struct Took<W>(Vec<(Frees, Range<usize>, Option<W>)>);

impl<W: Clone> Took<W> {
    /// None held, no chunk read, from `start`.
    fn new(start: W) -> Took<W> {
        Took(vec![(Vec::new(), 0..0, Some(start))])
    }

    /// The walk, now `walk`, holds `frees` from its next chunk on.
    fn hold(&mut self, frees: Frees, walk: &W) {
        let at = self.0.last().map_or(0, |(_, r, _)| r.end);
        let copy = (self.0.len() < CHECKPOINTS).then(|| walk.clone());
        self.0.push((frees, at..at, copy));
    }

    /// The walk read one more chunk with the last set.
    fn read(&mut self) {
        if let Some((_, r, _)) = self.0.last_mut() {
            r.end += 1;
        }
    }

    /// Where the walk walks again from, if anywhere: from the first set that may have let
    /// an event of `chunks` go as `fin` would not ([`differ`]), the copy kept last at or
    /// before it, and the index of the chunk it reads first.
    fn again(&mut self, fin: &[(u64, u32)], chunks: &[Chunk]) -> Option<(W, usize)> {
        let first = (self.0.iter()).position(|(set, read, _)| differ(set, fin, read, chunks))?;
        (self.0[..=first].iter_mut().rev())
            .find_map(|(_, read, copy)| Some((copy.take()?, read.start)))
    }
}

/// Whether `set` and `fin` differ in a free stamped as an event of `chunks[read]`. By the
/// timestamp alone (the CPU, the kind and the events past the walk's end aside): at worst a
/// walk again that finds the same. Nothing is read where the sets agree, the common case.
fn differ(set: &[(u64, u32)], fin: &[(u64, u32)], read: &Range<usize>, chunks: &[Chunk]) -> bool {
    let outside = |of: &[(u64, u32)], f: &(u64, u32)| of.binary_search(f).is_err();
    let mut differ: Vec<u64> = (set.iter().filter(|f| outside(fin, f)))
        .chain(fin.iter().filter(|f| outside(set, f)))
        .map(|f| f.0)
        .collect();
    differ.sort_unstable();
    !differ.is_empty()
        && (chunks.get(read.clone()).unwrap_or_default().iter())
            .flat_map(Chunk::times)
            .any(|t| t.is_some_and(|t| differ.binary_search(&t).is_ok()))
}

/// The walk's thread in [`take`]: feeds `w` each chunk it is sent, with the held frees as
/// they stood when it was sent, and at the end walks again where the final frees differ
/// ([`Took::again`]); gives back the chunks it read.
fn walk_chunks(w: &mut Walk, rx: std::sync::mpsc::Receiver<ToWalk>) -> Vec<Chunk> {
    let mut took = Took::new(w.clone());
    let mut held = Vec::new();
    let mut counts = Vec::new();
    for m in rx {
        match m {
            ToWalk::Chunk(chunk, n, frees) => {
                if let Some(f) = frees {
                    took.hold(f.clone(), w);
                    w.set_held_frees(f);
                }
                feed_chunk(w, &chunk, n);
                took.read();
                held.push(chunk);
                counts.push(n);
            }
            ToWalk::Final(frees) => match took.again(&frees, &held) {
                Some((from, at)) => {
                    *w = from;
                    w.set_held_frees(frees);
                    for (chunk, &n) in held.iter().zip(&counts).skip(at) {
                        feed_chunk(w, chunk, n);
                    }
                }
                None => w.set_held_frees(frees),
            },
        }
    }
    held
}

/// [`super::take`] with both inferences (and the hints where asked), the walk `lag` chunks
/// behind the lists ([`LAG`]).
pub(super) fn take(
    mut next: impl FnMut() -> Option<Chunk>,
    (mut walk, mut collect): (Walk, Collector),
    mut hints: Option<HintCollector>,
    limit: usize,
    lag: usize,
) -> Taken {
    let mut ended = false;
    let held = std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel::<ToWalk>();
        let w = &mut walk;
        // A thread refused (by the system): all here, below.
        let walker = std::thread::Builder::new()
            .name("trace-walk".into())
            .spawn_scoped(s, move || walk_chunks(w, rx))
            .ok()?;
        let mut sent = Frees::new();
        // The walk ended only if it panicked, which the join passes on.
        let mut send = |chunk: Chunk, n: usize, now: &Frees| {
            let frees = (*now != sent).then(|| {
                sent.clone_from(now);
                now.clone()
            });
            tx.send(ToWalk::Chunk(chunk, n, frees)).is_ok()
        };
        let mut behind = VecDeque::with_capacity(lag + 1);
        let mut events = 0usize;
        while events < limit {
            let Some(chunk) = next() else {
                ended = true;
                break;
            };
            let n = limit - events;
            for ev in chunk.events().take(n) {
                collect.feed(&ev);
                if let Some(h) = hints.as_mut() {
                    h.feed(&ev);
                }
            }
            events += chunk.len();
            behind.push_back((chunk, n));
            if behind.len() > lag {
                let (chunk, n) = behind.pop_front().expect("more than lag chunks behind");
                if !send(chunk, n, &collect.held_frees()) {
                    break;
                }
            }
        }
        let fin = collect.held_frees();
        for (chunk, n) in behind {
            if !send(chunk, n, &fin) {
                break;
            }
        }
        let _ = tx.send(ToWalk::Final(fin));
        drop(tx);
        Some(
            walker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        )
    });
    match held {
        Some(held) => {
            let first = FirstEvents {
                held,
                kernel: walk.hand_over(),
                counts: Some(walk.finish()),
                lists: None,
                hints: None,
                ended,
            };
            (first, hints, Some(collect), ended)
        }
        None => take_here(next, Some(walk), Some(collect), hints, limit),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{inferences, Which, LIST_EVENTS};
    use super::*;
    use crate::procfs::ProcSnapshot;
    use crate::trace::ingest::pipe::ParseAhead;
    use crate::trace::ingest::CHUNK_EVENTS;
    use crate::trace::migratetype::Numbering;
    use crate::trace::parse::Parser;
    use crate::trace::replay::infer::start_count::Found;
    use crate::trace::replay::proc_setup;
    use std::io::Cursor;

    /// One chunk of `kmem-7`'s compaction lines on CPU 3 at `us` microseconds past 10 s.
    fn chunk(us: &[u32]) -> Chunk {
        let text: String = us.iter().map(|&u| line(3, ".....", u, ISOLATE)).collect();
        let ahead =
            ParseAhead::spawn(Parser::new(), Box::new(Cursor::new(text.into_bytes()))).unwrap();
        let c = ahead.next().unwrap();
        assert!(ahead.next().is_none());
        drop(ahead.finish());
        c
    }

    /// A free at `us` microseconds past 10 s on `cpu`.
    fn at(us: u32, cpu: u32) -> (u64, u32) {
        (10_000_000_000 + u64::from(us) * 1000, cpu)
    }

    #[test]
    fn the_walk_goes_again_from_the_copy_before_the_first_set_that_differs() {
        let chunks = [chunk(&[10, 15, 20]), chunk(&[25, 30, 40]), chunk(&[45, 50])];
        // Read a chunk with none held, one with 30 held, one with 50 too; each copy named
        // by the number of chunks it had read.
        let took = || {
            let mut took = Took::new(0);
            took.read();
            took.hold(vec![at(30, 1)], &1);
            took.read();
            took.hold(vec![at(30, 1), at(50, 2)], &2);
            took.read();
            took
        };
        assert_eq!(took().again(&[at(30, 1), at(50, 2)], &chunks), None);
        // Held beyond what the walk read, or at no event it read: nothing it read moved.
        assert_eq!(
            took().again(&[at(30, 1), at(50, 2), at(60, 1)], &chunks),
            None
        );
        assert_eq!(
            took().again(&[at(12, 1), at(30, 1), at(50, 2)], &chunks),
            None
        );
        // Not held at 50 after all; held at 40 too; at 15 too.
        assert_eq!(took().again(&[at(30, 1)], &chunks), Some((2, 2)));
        assert_eq!(
            took().again(&[at(30, 1), at(40, 1), at(50, 2)], &chunks),
            Some((1, 1))
        );
        assert_eq!(took().again(&[at(15, 1), at(30, 1)], &chunks), Some((0, 0)));
        // At an event read with another CPU's free held: the CPU aside, walk again.
        assert_eq!(took().again(&[at(30, 2), at(50, 2)], &chunks), Some((1, 1)));
        // A set past the copies kept goes again from the last copy.
        let many: Vec<Chunk> = (0..=CHECKPOINTS as u32)
            .map(|i| chunk(&[10 * i + 1]))
            .collect();
        let mut took = Took::new(0);
        took.read();
        for i in 1..=CHECKPOINTS {
            took.hold(Vec::new(), &i);
            took.read();
        }
        let last = 10 * CHECKPOINTS as u32 + 1;
        assert_eq!(
            took.again(&[at(last, 1)], &many),
            Some((CHECKPOINTS - 1, CHECKPOINTS - 1))
        );
    }

    const PAGE: &str = "page=(____ptrval____)";

    /// A line by `kmem-7` on `cpu` at `us` microseconds past 10 s, with the latency column
    /// `flags`.
    fn line(cpu: u32, flags: &str, us: u32, ev: &str) -> String {
        format!("          kmem-7     [{cpu:03}] {flags}    10.{us:06}: {ev}\n")
    }

    const ISOLATE: &str =
        "mm_compaction_isolate_freepages: range=(0x13b400 ~ 0x13b600) nr_scanned=0 nr_taken=0";

    /// `kmem-7`'s allocation of the order-0 page `pfn`.
    fn alloc(pfn: u64) -> String {
        format!("mm_page_alloc: {PAGE} pfn={pfn:#x} order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE")
    }

    /// `mm_page_free` of the order-0 page `pfn`.
    fn free(pfn: u64) -> String {
        format!("mm_page_free: {PAGE} pfn={pfn:#x} order=0")
    }

    /// A softirq's frees of `pfns` on CPU 1 from `us` on, one a microsecond.
    fn softirq_frees(pfns: Range<u64>, us: u32) -> String {
        (pfns.zip(us..))
            .map(|(pfn, us)| line(1, "..s2.", us, &free(pfn)))
            .collect()
    }

    /// CPU 2's refill of `pfns` from `us` on.
    fn taken_back(pfns: Range<u64>, us: u32) -> String {
        let take = |pfn: u64| {
            format!("mm_page_alloc_zone_locked: {PAGE} pfn={pfn:#x} order=0 migratetype=1 percpu_refill=1")
        };
        (pfns.zip(us..))
            .map(|(pfn, us)| line(2, "d..3.", us, &take(pfn)))
            .collect()
    }

    /// The task's free of 0x70000 on CPU 1 at `us`, which drains 63 pages.
    fn drain_after_free(us: u32) -> String {
        let mut t = line(1, ".....", us, &free(0x70000));
        for pfn in 0x60000..0x6003fu64 {
            let ev = format!("mm_page_pcpu_drain: {PAGE} pfn={pfn:#x} order=0 migratetype=1");
            t += &line(1, "d..3.", us + 10, &ev);
        }
        t
    }

    /// `start_count/tests/held_frees.rs`'s first trace, its softirq's three pages coming back
    /// by CPU 2's refill `filler` events (CPU 3's) later.
    fn held_late(filler: u32) -> String {
        let mut t = String::from("# tracer: nop\n");
        t += &line(1, ".....", 10, &alloc(0x20000));
        t += &softirq_frees(0x50000..0x50003, 20);
        t += &line(1, ".....", 30, &alloc(0x20001));
        for i in 0..filler {
            t += &line(3, ".....", 100 + i, ISOLATE);
        }
        t += &taken_back(0x50000..0x50003, 200_000);
        t + &drain_after_free(200_060)
    }

    /// DMA32 CPU 1's start count for `text` on the 7.2 snapshot, the walk `lag` chunks behind.
    fn cpu1(text: &str, lag: usize) -> (u64, Found) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/proc/linux-7.2-p1-before");
        let snap = ProcSnapshot::read_dir(&dir).unwrap();
        let geo = proc_setup::geometry(&snap, None, Numbering::Current).unwrap();
        let which = Which {
            fixed_high: false,
            ..Which::both_on_6_1()
        };
        let (walk, collect, hints) = inferences(&geo, &snap, which);
        let ahead = ParseAhead::spawn(
            Parser::new(),
            Box::new(Cursor::new(text.as_bytes().to_vec())),
        )
        .unwrap();
        let both = (walk.unwrap(), collect.unwrap());
        let (first, _, _, _) = take(|| ahead.next(), both, hints, LIST_EVENTS, lag);
        drop(ahead.finish());
        let c = (first.counts.unwrap().cpus.into_iter())
            .find(|c| c.zone == "DMA32" && c.cpu == 1)
            .unwrap();
        (c.inferred, c.found)
    }

    /// The softirq's frees in the first chunk, their pages back by a refill in the second:
    /// the walk a chunk behind reads them with the final frees; with none behind, it reads
    /// them as none held, finds them held at the end and walks again. Either way the drain
    /// pins 3493 (`held_frees.rs`: 3490 with the three counted onto the list, which a walk
    /// that did not walk again finds).
    #[test]
    fn a_walk_that_read_a_free_held_later_walks_again_and_finds_the_same() {
        let text = held_late(CHUNK_EVENTS as u32);
        for lag in [0, 1, LAG] {
            assert_eq!(cpu1(&text, lag), (3493, Found::Pinned), "lag {lag}");
        }
    }

    /// A chunk of CPU 3's compaction lines, then CPU 1's: an allocation, a softirq's frees
    /// 0x50010.. that CPU 2's refill takes back (held, known in the chunk), an allocation, a
    /// softirq's frees 0x50000.. taken back only in the third chunk, an allocation; then the
    /// task's free of 0x70000 that drains 63 pages.
    fn held_in_two_runs() -> String {
        let filler = CHUNK_EVENTS as u32;
        let mut t = String::from("# tracer: nop\n");
        for i in 0..filler {
            t += &line(3, ".....", 100 + i, ISOLATE);
        }
        t += &line(1, ".....", 10_000, &alloc(0x20000));
        t += &softirq_frees(0x50010..0x50014, 10_010);
        t += &line(1, ".....", 10_020, &alloc(0x20002));
        t += &taken_back(0x50010..0x50014, 10_030);
        t += &softirq_frees(0x50000..0x50003, 10_040);
        t += &line(1, ".....", 10_050, &alloc(0x20001));
        for i in 0..filler - 14 {
            t += &line(3, ".....", 20_000 + i, ISOLATE);
        }
        t += &taken_back(0x50000..0x50003, 200_000);
        t + &drain_after_free(200_060)
    }

    /// The walk reads the second chunk holding the first run only, finds the second held
    /// too at the end, and goes again from its copy before that chunk: the same pin as a
    /// walk a chunk or more behind, which reads it with the final frees. Walking from that
    /// copy a chunk too late, or not again, the second run's three pages go onto the list.
    #[test]
    fn a_walk_again_from_a_copy_finds_what_a_walk_with_the_final_frees_finds() {
        let text = held_in_two_runs();
        let behind = cpu1(&text, 1);
        assert_eq!(behind.1, Found::Pinned);
        for lag in [0, LAG] {
            assert_eq!(cpu1(&text, lag), behind, "lag {lag}");
        }
    }
}
