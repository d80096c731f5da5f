//! [`super::take`] with both inferences: the start-count walk on a thread of its own, the
//! list inference (and the hints) in the caller's, each chunk handed to the walk once read
//! there. On 6.1 p1 the walk is 134 M instructions and the lists 95 M.
//!
//! The walk leaves off the lists the interrupts' frees that went to the buddy
//! ([`Collector::held_frees`]). The list walk reads them off where their pages went next
//! (`pcp_state/irq_fate.rs`: a run of them went to the buddy where more of its pages came
//! back by zone-locked takes than through the list), which it knows for sure only at its
//! end. So the walk reads each chunk [`LAG`] chunks behind the list walk, with the frees the
//! list walk holds for the buddy by then, and checks them against the final ones at the end
//! ([`Took::again`]): where one it read differs, it walks again from its start.
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

/// The frees the walk took as gone to the buddy, each set with the chunks it read while it
/// held (by their index).
struct Took(Vec<(Frees, Range<usize>)>);

impl Took {
    /// None held, no chunk read.
    fn new() -> Took {
        Took(vec![(Vec::new(), 0..0)])
    }

    /// The walk holds `frees` from its next chunk on.
    fn hold(&mut self, frees: Frees) {
        let at = self.0.last().map_or(0, |(_, r)| r.end);
        self.0.push((frees, at..at));
    }

    /// The walk read one more chunk with the last set.
    fn read(&mut self) {
        if let Some((_, r)) = self.0.last_mut() {
            r.end += 1;
        }
    }

    /// Whether an event of `chunks` the walk read may have gone as `fin` would not have it
    /// go: one set and `fin` differ in a free stamped as an event of the chunks read with
    /// that set. By the timestamp alone (the CPU, the kind and the events past the walk's
    /// end aside): at worst a walk again that finds the same. Nothing is read where the
    /// sets agree, the common case.
    fn again(&self, fin: &[(u64, u32)], chunks: &[Chunk]) -> bool {
        self.0.iter().any(|(set, read)| {
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
        })
    }
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
            .spawn_scoped(s, move || {
                let mut fresh = Some(w.clone());
                let mut took = Took::new();
                let mut held = Vec::new();
                let mut counts = Vec::new();
                for m in rx {
                    match m {
                        ToWalk::Chunk(chunk, n, frees) => {
                            if let Some(f) = frees {
                                w.set_held_frees(f.clone());
                                took.hold(f);
                            }
                            feed_chunk(w, &chunk, n);
                            took.read();
                            held.push(chunk);
                            counts.push(n);
                        }
                        ToWalk::Final(frees) => {
                            match fresh.take().filter(|_| took.again(&frees, &held)) {
                                Some(f) => {
                                    *w = f;
                                    w.set_held_frees(frees);
                                    for (chunk, &n) in held.iter().zip(&counts) {
                                        feed_chunk(w, chunk, n);
                                    }
                                }
                                None => w.set_held_frees(frees),
                            }
                        }
                    }
                }
                held
            })
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
                lists: Some(collect.finish()),
                hints: None,
                ended,
            };
            (first, hints, ended)
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
    use crate::trace::migratetype::Numbering;
    use crate::trace::parse::Parser;
    use crate::trace::replay::infer::start_count::Found;
    use crate::trace::replay::proc_setup;
    use std::io::Cursor;

    /// One chunk of `kmem-7`'s compaction lines on CPU 3 at `us` microseconds past 10 s.
    fn chunk(us: &[u32]) -> Chunk {
        let isolate =
            "mm_compaction_isolate_freepages: range=(0x13b400 ~ 0x13b600) nr_scanned=0 nr_taken=0";
        let text: String = us.iter().map(|&u| line(3, ".....", u, isolate)).collect();
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
    fn a_set_taken_differs_from_the_final_only_at_an_event_read_with_it() {
        let chunks = [chunk(&[10, 15, 20]), chunk(&[25, 30, 40]), chunk(&[45, 50])];
        let mut took = Took::new();
        took.read();
        took.hold(vec![at(30, 1)]);
        took.read();
        // The final frees as the walk took them where it read.
        assert!(!took.again(&[at(30, 1)], &chunks));
        // Held beyond what the walk read, or at no event it read: nothing it read moved.
        assert!(!took.again(&[at(30, 1), at(50, 2)], &chunks));
        assert!(!took.again(&[at(12, 1), at(30, 1)], &chunks));
        // Held at an event read with none held; not held where the walk held it.
        assert!(took.again(&[at(15, 1), at(30, 1)], &chunks));
        assert!(took.again(&[], &chunks));
        // At an event read with another CPU's free held: the CPU aside, walk again.
        assert!(took.again(&[at(30, 2)], &chunks));
    }

    const PAGE: &str = "page=(____ptrval____)";

    /// A line by `kmem-7` on `cpu` at `us` microseconds past 10 s, with the latency column
    /// `flags`.
    fn line(cpu: u32, flags: &str, us: u32, ev: &str) -> String {
        format!("          kmem-7     [{cpu:03}] {flags}    10.{us:06}: {ev}\n")
    }

    /// `start_count/tests/held_frees.rs`'s first trace, its softirq's three pages coming back
    /// by CPU 2's refill `filler` events (CPU 3's) later.
    fn held_late(filler: u32) -> String {
        let alloc = |pfn: u64| {
            format!("mm_page_alloc: {PAGE} pfn={pfn:#x} order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE")
        };
        let free = |pfn: u64| format!("mm_page_free: {PAGE} pfn={pfn:#x} order=0");
        let mut t = String::from("# tracer: nop\n");
        t += &line(1, ".....", 10, &alloc(0x20000));
        for (i, pfn) in (0x50000..0x50003u64).enumerate() {
            t += &line(1, "..s2.", 20 + i as u32, &free(pfn));
        }
        t += &line(1, ".....", 30, &alloc(0x20001));
        let isolate =
            "mm_compaction_isolate_freepages: range=(0x13b400 ~ 0x13b600) nr_scanned=0 nr_taken=0";
        for i in 0..filler {
            t += &line(3, ".....", 100 + i, isolate);
        }
        for (i, pfn) in (0x50000..0x50003u64).enumerate() {
            let ev = format!(
                "mm_page_alloc_zone_locked: {PAGE} pfn={pfn:#x} order=0 migratetype=1 percpu_refill=1"
            );
            t += &line(2, "d..3.", 200_000 + i as u32, &ev);
        }
        t += &line(1, ".....", 200_060, &free(0x70000));
        for pfn in 0x60000..0x6003fu64 {
            let ev = format!("mm_page_pcpu_drain: {PAGE} pfn={pfn:#x} order=0 migratetype=1");
            t += &line(1, "d..3.", 200_070, &ev);
        }
        t
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
        let (first, _, _) = take(|| ahead.next(), both, hints, LIST_EVENTS, lag);
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
        let text = held_late(crate::trace::ingest::CHUNK_EVENTS as u32);
        for lag in [0, 1, LAG] {
            assert_eq!(cpu1(&text, lag), (3493, Found::Pinned), "lag {lag}");
        }
    }
}
