//! Parsing on a thread of its own: the parser turns the input into chunks of owned events
//! while the replay consumes the chunks before them, in order, so splitting and parsing
//! (two thirds of a replay's instructions) run beside the replay on a second core.
//!
//! A [`Chunk`] holds [`CHUNK_EVENTS`] events, packed in 32 bytes each (`Packed`), with
//! their text (the `gfp_flags` strings) copied into one buffer of its own; chunks go back to
//! the parser to be filled again, so nothing is allocated per event. The parser's counts (bad lines, their numbers) and its
//! error come back with it at the end ([`ParseAhead::finish`]), and it reads to the end of the
//! input even when the replay stops early, as a parse in the replay's own loop did.

use std::io::{self, BufRead, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use crate::trace::parse::{Event, EventKind, PagePtr, Parser, Who};

/// Events per chunk.
pub const CHUNK_EVENTS: usize = 4096;
// An allocation names its text by a `u16` index, one text at most per event.
const _: () = assert!(CHUNK_EVENTS <= u16::MAX as usize);

/// Text per chunk before it is handed over early (a trace of long `gfp_flags` strings).
const CHUNK_TEXT: usize = 256 << 10;
/// Chunks parsed ahead of the replay: 64 Ki events (some 3 MiB), so the parse goes on
/// through the replay's set-up (the zones built, the prefix looked at) instead of waiting.
const CHUNKS_AHEAD: usize = 16;

/// Parsed events, owned: each event's text lies in the chunk's buffer.
pub struct Chunk {
    /// The events, packed.
    events: Vec<Packed>,
    /// The allocations' `gfp_flags` texts, one after the other: a run of allocations that
    /// share theirs has it once.
    text: String,
    /// Where the texts in `text` begin and end, in order, from 0: text `i` is
    /// `bounds[i]..bounds[i + 1]`. An allocation's [`Packed`] names its text by `i` (fewer
    /// than [`CHUNK_EVENTS`], so a `u16`).
    bounds: Vec<u32>,
    /// Set on the chunk that ends the input's first bytes in a marked parse
    /// ([`ParseAhead::spawn_marked`]): how many of them were read.
    mark: Option<u64>,
    /// How many of the events are kswapd's (wake or sleep): the kswapd nap's look-ahead
    /// reads only the timestamps of a chunk without any.
    kswapd: u32,
}

impl Chunk {
    fn new() -> Chunk {
        Chunk {
            events: Vec::with_capacity(CHUNK_EVENTS),
            text: String::new(),
            bounds: vec![0],
            mark: None,
            kswapd: 0,
        }
    }

    fn clear(&mut self) {
        self.events.clear();
        self.text.clear();
        self.bounds.clear();
        self.bounds.push(0);
        self.mark = None;
        self.kswapd = 0;
    }

    fn is_full(&self) -> bool {
        self.events.len() >= CHUNK_EVENTS || self.text.len() >= CHUNK_TEXT
    }

    /// The last text kept, if any.
    #[inline(always)]
    fn last_text(&self) -> Option<&str> {
        match self.bounds.len() {
            0 | 1 => None,
            n => self.text.get(self.bounds[n - 2] as usize..),
        }
    }

    /// Adds `ev`, copying its text unless it repeats the last allocation's.
    #[inline(always)]
    fn push(&mut self, ev: &Event<'_>) {
        let mut text = 0;
        if let EventKind::Alloc { gfp_flags: s, .. } = ev.kind {
            if self.last_text() != Some(s) {
                self.text.push_str(s);
                // `CHUNK_TEXT` plus one line's text: far below 4 GiB.
                self.bounds.push(self.text.len() as u32);
            }
            // One text at most per event, and `CHUNK_EVENTS` events: it fits.
            text = (self.bounds.len() - 2) as u16;
        }
        let packed = Packed::of(ev, text);
        self.kswapd += u32::from(matches!(packed.kind, 6 | 7));
        self.events.push(packed);
    }

    /// Events in the chunk.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether it holds no event.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// In a marked parse ([`ParseAhead::spawn_marked`]), on the chunk whose events are the
    /// last of the input's first bytes: how many of those bytes there were (fewer than asked
    /// where the input ended sooner).
    pub fn mark(&self) -> Option<u64> {
        self.mark
    }

    /// Whether any of the events is kswapd's (`mm_vmscan_kswapd_wake` or `_sleep`).
    pub fn has_kswapd(&self) -> bool {
        self.kswapd > 0
    }

    /// The events' timestamps in order ([`Event::ts_ns`]), without the rest of each event.
    #[inline]
    pub fn times(&self) -> impl DoubleEndedIterator<Item = Option<u64>> + ExactSizeIterator + '_ {
        self.events
            .iter()
            .map(|p| (p.bits & HAS_TS != 0).then_some(p.ts_ns))
    }

    /// The events in order, as the parser produced them.
    #[inline]
    pub fn events(&self) -> impl ExactSizeIterator<Item = Event<'_>> {
        self.events.iter().map(|p| p.event(self))
    }

    /// Event `i` of [`Chunk::events`] (`i < len()`). The replay's per-event loops index with
    /// it: whether the compiler inlined the `next` of an `events().enumerate()` changed from
    /// build to build (out of line: 13.5 M more instructions on the sample ×300, callgrind).
    #[inline(always)]
    pub fn event_at(&self, i: usize) -> Event<'_> {
        self.events[i].event(self)
    }

    /// Text `i` ([`Chunk::bounds`]), empty if there is none.
    #[inline(always)]
    fn text_at(&self, i: u16) -> &str {
        let i = usize::from(i);
        match self.bounds.get(i..i + 2) {
            Some(&[a, b]) => self.text.get(a as usize..b as usize).unwrap_or_default(),
            _ => "",
        }
    }
}

/// Events kept in order, owned, in chunks: a second walk over a text reads them instead of
/// parsing it again (the text before the window, [`crate::trace::replay`]'s set-up).
#[derive(Default)]
pub struct Kept {
    chunks: Vec<Chunk>,
}

impl Kept {
    /// Keeps `ev` after the ones kept.
    pub fn push(&mut self, ev: &Event<'_>) {
        match self.chunks.last_mut().filter(|c| !c.is_full()) {
            Some(c) => c.push(ev),
            None => {
                let mut c = Chunk::new();
                c.push(ev);
                self.chunks.push(c);
            }
        }
    }

    /// The events kept, in order, as the parser produced them.
    pub fn events(&self) -> impl Iterator<Item = Event<'_>> {
        self.chunks.iter().flat_map(Chunk::events)
    }
}

/// [`Packed::bits`]: the CPU and the timestamp are present, the `page=` pointer's shape
/// (present unless one of these), and the kind's two flags in the order it declares them.
const HAS_CPU: u8 = 1;
const HAS_TS: u8 = 2;
const PAGE_NULL: u8 = 4;
const PAGE_MISSING: u8 = 8;
const FLAG_A: u8 = 16;
const FLAG_B: u8 = 32;
/// [`Packed::kind`] of `mm_vmscan_kswapd_wake`; `mm_vmscan_kswapd_sleep` is the one after it.
const KIND_KSWAPD_WAKE: u8 = 6;
/// [`Packed::kind`] of a `vmstat_update` run; a `vmstat_shepherd` run is the one after it.
const KIND_VMSTAT_UPDATE: u8 = 8;
/// [`Packed::kind`] of a compaction isolate line, the last: its start pfn in the low
/// [`COMPACT_PFN_BITS`] of `pfn` and `nr_taken` above them, the end as an offset from the
/// start in `small` (a `u32`, saturated), [`FLAG_A`] the fast path.
const KIND_COMPACT: u8 = 10;
const COMPACT_PFN_BITS: u32 = 40;

/// An event as a chunk keeps it: 32 bytes where an [`Event`] and its text's span took 72,
/// so a chunk is written, read and faulted in over fewer pages (with `--proc` a shipped
/// trace's chunks are all held at once, until the zones are set up). An allocation's text is
/// the chunk's, named by its index in the two bytes of `small` it has no order or
/// migratetype for. [`Packed::of`] and [`Packed::event`] are the one place that lists every
/// event kind's fields.
#[derive(Clone, Copy, Debug, Default)]
struct Packed {
    /// The pfn, or a kswapd event's node.
    pfn: u64,
    ts_ns: u64,
    cpu: u32,
    /// Who ran it ([`Who::to_parts`]).
    pid: u32,
    who: u16,
    /// Which kind, in [`EventKind`]'s order.
    kind: u8,
    /// [`HAS_CPU`], [`HAS_TS`], [`PAGE_NULL`], [`PAGE_MISSING`], [`FLAG_A`], [`FLAG_B`].
    bits: u8,
    /// The kind's orders and migratetypes, in the order it declares them; an allocation's
    /// text's index after its two ([`Chunk::text_at`], little-endian).
    small: [u8; 4],
}

// The size the documentation gives.
const _: () = assert!(std::mem::size_of::<Packed>() == 32);

impl Packed {
    #[inline(always)]
    fn of(ev: &Event<'_>, text: u16) -> Packed {
        let flag = |b: bool, f: u8| if b { f } else { 0 };
        let (kind, pfn, small, flags) = match ev.kind {
            EventKind::Alloc {
                pfn,
                order,
                migratetype,
                gfp_flags: _,
            } => {
                let [t0, t1] = text.to_le_bytes();
                (0, pfn, [order, migratetype, t0, t1], 0)
            }
            EventKind::Free { pfn, order } => (1, pfn, [order, 0, 0, 0], 0),
            EventKind::FreeBatched { pfn } => (2, pfn, [0; 4], 0),
            EventKind::ZoneLocked {
                pfn,
                order,
                migratetype,
                percpu_refill,
            } => (
                3,
                pfn,
                [order, migratetype, 0, 0],
                flag(percpu_refill, FLAG_A),
            ),
            EventKind::PcpuDrain {
                pfn,
                order,
                migratetype,
            } => (4, pfn, [order, migratetype, 0, 0], 0),
            EventKind::Extfrag {
                pfn,
                alloc_order,
                fallback_order,
                alloc_migratetype,
                fallback_migratetype,
                fragmenting,
                change_ownership,
            } => (
                5,
                pfn,
                [
                    alloc_order,
                    fallback_order,
                    alloc_migratetype,
                    fallback_migratetype,
                ],
                flag(fragmenting, FLAG_A) | flag(change_ownership, FLAG_B),
            ),
            EventKind::KswapdWake { nid, order } => {
                (KIND_KSWAPD_WAKE, u64::from(nid), [order, 0, 0, 0], 0)
            }
            EventKind::KswapdSleep { nid } => (KIND_KSWAPD_WAKE + 1, u64::from(nid), [0; 4], 0),
            EventKind::VmstatUpdate => (KIND_VMSTAT_UPDATE, 0, [0; 4], 0),
            EventKind::VmstatShepherd => (KIND_VMSTAT_UPDATE + 1, 0, [0; 4], 0),
            EventKind::CompactIsolate {
                start_pfn,
                end_pfn,
                nr_taken,
                fast,
            } => {
                let span = u32::try_from(end_pfn.saturating_sub(start_pfn)).unwrap_or(u32::MAX);
                let taken = u64::from(nr_taken.min((1 << (64 - COMPACT_PFN_BITS)) - 1));
                let pfn = (start_pfn & ((1 << COMPACT_PFN_BITS) - 1)) | taken << COMPACT_PFN_BITS;
                (KIND_COMPACT, pfn, span.to_le_bytes(), flag(fast, FLAG_A))
            }
        };
        let page = match ev.page {
            PagePtr::Present => 0,
            PagePtr::Null => PAGE_NULL,
            PagePtr::Missing => PAGE_MISSING,
        };
        let (pid, who) = ev.who.to_parts();
        Packed {
            pfn,
            ts_ns: ev.ts_ns.unwrap_or(0),
            cpu: ev.cpu.unwrap_or(0),
            pid,
            who,
            kind,
            bits: flags | page | flag(ev.cpu.is_some(), HAS_CPU) | flag(ev.ts_ns.is_some(), HAS_TS),
            small,
        }
    }

    /// The event, an allocation's text read from `chunk` (its own).
    #[inline(always)]
    fn event<'t>(&self, chunk: &'t Chunk) -> Event<'t> {
        let [a, b, c, d] = self.small;
        let has = |f: u8| self.bits & f != 0;
        let pfn = self.pfn;
        // A node number was a `u32` when packed.
        let nid = pfn as u32;
        let kind = match self.kind {
            0 => EventKind::Alloc {
                pfn,
                order: a,
                migratetype: b,
                gfp_flags: chunk.text_at(u16::from_le_bytes([c, d])),
            },
            1 => EventKind::Free { pfn, order: a },
            2 => EventKind::FreeBatched { pfn },
            3 => EventKind::ZoneLocked {
                pfn,
                order: a,
                migratetype: b,
                percpu_refill: has(FLAG_A),
            },
            4 => EventKind::PcpuDrain {
                pfn,
                order: a,
                migratetype: b,
            },
            5 => EventKind::Extfrag {
                pfn,
                alloc_order: a,
                fallback_order: b,
                alloc_migratetype: c,
                fallback_migratetype: d,
                fragmenting: has(FLAG_A),
                change_ownership: has(FLAG_B),
            },
            KIND_KSWAPD_WAKE => EventKind::KswapdWake { nid, order: a },
            7 => EventKind::KswapdSleep { nid },
            KIND_VMSTAT_UPDATE => EventKind::VmstatUpdate,
            9 => EventKind::VmstatShepherd,
            _ => {
                let start_pfn = pfn & ((1 << COMPACT_PFN_BITS) - 1);
                EventKind::CompactIsolate {
                    start_pfn,
                    end_pfn: start_pfn + u64::from(u32::from_le_bytes(self.small)),
                    nr_taken: (pfn >> COMPACT_PFN_BITS) as u32,
                    fast: has(FLAG_A),
                }
            }
        };
        // By the two page bits: neither, NULL, missing (both never).
        const PAGES: [PagePtr; 4] = [
            PagePtr::Present,
            PagePtr::Null,
            PagePtr::Missing,
            PagePtr::Present,
        ];
        Event {
            cpu: has(HAS_CPU).then_some(self.cpu),
            ts_ns: has(HAS_TS).then_some(self.ts_ns),
            page: PAGES[usize::from((self.bits / PAGE_NULL) & 3)],
            kind,
            who: Who::from_parts(self.pid, self.who),
        }
    }
}

/// The parse thread's end of the pipe: the chunk being filled, the replay's channel (`None`
/// once the replay has stopped: the parse goes on for the counts and errors) and the chunks
/// coming back.
struct Out {
    tx: Option<SyncSender<Chunk>>,
    back: Receiver<Chunk>,
    chunk: Chunk,
}

impl Out {
    /// Adds `ev` to the chunk being filled, handing it over when full. Inlined into the
    /// parse's loop (`Parser::read_all`): a call per event saved its registers.
    #[inline(always)]
    fn push(&mut self, ev: &Event<'_>) {
        self.chunk.push(ev);
        if self.chunk.is_full() {
            self.hand_over();
        }
    }

    /// Sends the chunk being filled, and starts a recycled (or new) one.
    #[inline(never)]
    fn hand_over(&mut self) {
        let mut next = self.back.try_recv().unwrap_or_else(|_| Chunk::new());
        next.clear();
        let full = std::mem::replace(&mut self.chunk, next);
        if self.tx.as_ref().is_some_and(|t| t.send(full).is_err()) {
            self.tx = None;
        }
    }
}

/// A parser running on a thread of its own, some chunks (`CHUNKS_AHEAD`) ahead of the replay.
pub struct ParseAhead {
    chunks: Receiver<Chunk>,
    /// Replayed chunks going back to the parser.
    spent: SyncSender<Chunk>,
    thread: JoinHandle<(Parser, io::Result<()>)>,
}

impl ParseAhead {
    /// Starts `parser` reading `reader` ([`Parser::read_all`]).
    pub fn spawn(parser: Parser, reader: Box<dyn BufRead + Send>) -> io::Result<ParseAhead> {
        Self::spawn_marked(parser, reader, None)
    }

    /// [`ParseAhead::spawn`], handing the events of the input's first `mark` bytes (which must
    /// end at a line's end) over apart: the chunk that ends them, perhaps empty, carries the
    /// [`Chunk::mark`]. The parse reads them, then the rest, as one read would (no line spans
    /// the mark).
    pub fn spawn_marked(
        mut parser: Parser,
        mut reader: Box<dyn BufRead + Send>,
        mark: Option<u64>,
    ) -> io::Result<ParseAhead> {
        let (tx, chunks) = sync_channel::<Chunk>(CHUNKS_AHEAD);
        let (spent, back) = sync_channel::<Chunk>(CHUNKS_AHEAD + 2);
        let thread = std::thread::Builder::new()
            .name("trace-parse".into())
            .spawn(move || {
                let mut out = Out {
                    tx: Some(tx),
                    back,
                    chunk: Chunk::new(),
                };
                let mut read = Ok(());
                if let Some(bytes) = mark {
                    let mut head = (&mut reader).take(bytes);
                    read = parser.read_all(&mut head, |ev| out.push(ev));
                    if read.is_ok() {
                        out.chunk.mark = Some(bytes - head.limit());
                        out.hand_over();
                    }
                }
                if read.is_ok() {
                    read = parser.read_all(reader, |ev| out.push(ev));
                }
                if read.is_ok() && !out.chunk.events.is_empty() {
                    out.hand_over();
                }
                (parser, read)
            })?;
        Ok(ParseAhead {
            chunks,
            spent,
            thread,
        })
    }

    /// The next chunk, `None` at the end of the input (or at a read error, which
    /// [`ParseAhead::finish`] returns).
    pub fn next(&self) -> Option<Chunk> {
        self.chunks.recv().ok()
    }

    /// Hands a replayed chunk back to be filled again.
    pub fn recycle(&self, chunk: Chunk) {
        let _ = self.spent.try_send(chunk);
    }

    /// Waits for the parser to read to the end, and returns it with the read's result.
    pub fn finish(self) -> (Parser, io::Result<()>) {
        // Chunks not taken are dropped: the parser reads on without handing them over.
        drop(self.chunks);
        match self.thread.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

#[cfg(test)]
mod tests;
