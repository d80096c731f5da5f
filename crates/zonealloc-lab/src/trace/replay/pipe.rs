//! Parsing on a thread of its own: the parser turns the input into chunks of owned events
//! while the replay consumes the chunks before them, in order, so splitting and parsing
//! (two thirds of a replay's instructions) run beside the replay on a second core.
//!
//! A [`Chunk`] holds [`CHUNK_EVENTS`] events with their text (the `gfp_flags` strings)
//! copied into one buffer of its own; chunks go back to the parser to be filled again, so
//! nothing is allocated per event. The parser's counts (bad lines, their numbers) and its
//! error come back with it at the end ([`ParseAhead::finish`]), and it reads to the end of the
//! input even when the replay stops early, as a parse in the replay's own loop did.

use std::io::{self, BufRead, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use crate::trace::parse::{Event, EventKind, Parser};

/// Events per chunk.
pub const CHUNK_EVENTS: usize = 4096;
/// Text per chunk before it is handed over early (a trace of long `gfp_flags` strings).
const CHUNK_TEXT: usize = 256 << 10;
/// Chunks parsed ahead of the replay: 64 Ki events (some 5 MiB), so the parse goes on
/// through the replay's set-up (the zones built, the prefix looked at) instead of waiting.
const CHUNKS_AHEAD: usize = 16;

/// Parsed events, owned: each event's text lies in the chunk's buffer.
pub struct Chunk {
    /// The events, their text left empty.
    events: Vec<Event<'static>>,
    /// Per event, where its text lies in `text`.
    spans: Vec<(u32, u32)>,
    text: String,
    /// Set on the chunk that ends the input's first bytes in a marked parse
    /// ([`ParseAhead::spawn_marked`]): how many of them were read.
    mark: Option<u64>,
}

impl Chunk {
    fn new() -> Chunk {
        Chunk {
            events: Vec::with_capacity(CHUNK_EVENTS),
            spans: Vec::with_capacity(CHUNK_EVENTS),
            text: String::new(),
            mark: None,
        }
    }

    fn clear(&mut self) {
        self.events.clear();
        self.spans.clear();
        self.text.clear();
        self.mark = None;
    }

    fn is_full(&self) -> bool {
        self.events.len() >= CHUNK_EVENTS || self.text.len() >= CHUNK_TEXT
    }

    /// Adds `ev`, copying its text unless it repeats the event before's.
    #[inline]
    fn push(&mut self, ev: &Event<'_>) {
        let mut span = (0, 0);
        let kind = detach(&ev.kind, |s| {
            let (a, b) = self.spans.last().copied().unwrap_or_default();
            span = if self.text.get(a as usize..b as usize) == Some(s) {
                (a, b)
            } else {
                // `CHUNK_TEXT` plus one line's text: far below 4 GiB.
                let a = self.text.len() as u32;
                self.text.push_str(s);
                (a, self.text.len() as u32)
            };
        });
        self.events.push(Event {
            cpu: ev.cpu,
            ts_ns: ev.ts_ns,
            page: ev.page,
            kind,
        });
        self.spans.push(span);
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

    /// The events in order, as the parser produced them.
    pub fn events(&self) -> impl Iterator<Item = Event<'_>> {
        self.events.iter().zip(&self.spans).map(|(ev, &(a, b))| {
            let mut ev: Event<'_> = ev.clone();
            if let Some(s) = text_mut(&mut ev.kind) {
                *s = &self.text[a as usize..b as usize];
            }
            ev
        })
    }
}

/// `kind` with its text (if it has any) handed to `keep` and left empty: the one place that
/// lists every event kind.
#[inline]
fn detach(kind: &EventKind<'_>, keep: impl FnOnce(&str)) -> EventKind<'static> {
    match *kind {
        EventKind::Alloc {
            pfn,
            order,
            migratetype,
            gfp_flags,
        } => {
            keep(gfp_flags);
            EventKind::Alloc {
                pfn,
                order,
                migratetype,
                gfp_flags: "",
            }
        }
        EventKind::Free { pfn, order } => EventKind::Free { pfn, order },
        EventKind::FreeBatched { pfn } => EventKind::FreeBatched { pfn },
        EventKind::ZoneLocked {
            pfn,
            order,
            migratetype,
            percpu_refill,
        } => EventKind::ZoneLocked {
            pfn,
            order,
            migratetype,
            percpu_refill,
        },
        EventKind::PcpuDrain {
            pfn,
            order,
            migratetype,
        } => EventKind::PcpuDrain {
            pfn,
            order,
            migratetype,
        },
        EventKind::Extfrag {
            pfn,
            alloc_order,
            fallback_order,
            alloc_migratetype,
            fallback_migratetype,
            fragmenting,
            change_ownership,
        } => EventKind::Extfrag {
            pfn,
            alloc_order,
            fallback_order,
            alloc_migratetype,
            fallback_migratetype,
            fragmenting,
            change_ownership,
        },
        EventKind::KswapdWake { nid, order } => EventKind::KswapdWake { nid, order },
        EventKind::KswapdSleep { nid } => EventKind::KswapdSleep { nid },
    }
}

/// The text field of `kind`, where [`detach`] took one.
fn text_mut<'k, 'a>(kind: &'k mut EventKind<'a>) -> Option<&'k mut &'a str> {
    match kind {
        EventKind::Alloc { gfp_flags, .. } => Some(gfp_flags),
        _ => None,
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
    #[inline]
    fn push(&mut self, ev: &Event<'_>) {
        self.chunk.push(ev);
        if self.chunk.is_full() {
            self.hand_over();
        }
    }

    /// Sends the chunk being filled, and starts a recycled (or new) one.
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
mod tests {
    use super::*;
    use std::io::Cursor;

    const LINES: &str = "\
 a-1 [000] .... 1.000001: mm_page_alloc: page=0x1 pfn=0x100 order=0 migratetype=1 gfp_flags=GFP_KERNEL
 a-1 [001] .... 1.000002: mm_page_alloc: page=0x1 pfn=0x101 order=0 migratetype=1 gfp_flags=GFP_KERNEL
 a-1 [001] .... 1.000003: mm_page_free: page=0x1 pfn=0x100 order=0
 a-1 [001] .... 1.000004: mm_page_alloc: page=0x1 pfn=0x102 order=1 migratetype=0 gfp_flags=GFP_ATOMIC|__GFP_NOWARN
this line is malformed: mm_page_alloc: pfn=zz
 a-1 [000] .... 1.000005: mm_page_pcpu_drain: page=0x1 pfn=0x103 order=0 migratetype=1
";

    /// Every event, in order, as a parse in this thread gives them.
    fn direct(text: &str) -> (Vec<String>, u64, u64) {
        let mut p = Parser::new();
        let mut out = Vec::new();
        p.read_all(text.as_bytes(), |ev| out.push(format!("{ev:?}")))
            .unwrap();
        (out, p.lines, p.malformed)
    }

    #[test]
    fn chunks_carry_every_event_and_its_text_in_order() {
        // Over two chunks, with the text of one chunk repeated and changed.
        let text = LINES.repeat(CHUNK_EVENTS / 4);
        let ahead = ParseAhead::spawn(
            Parser::new(),
            Box::new(Cursor::new(text.clone().into_bytes())),
        )
        .unwrap();
        let mut got = Vec::new();
        let mut chunks = 0;
        while let Some(c) = ahead.next() {
            chunks += 1;
            got.extend(c.events().map(|ev| format!("{ev:?}")));
            ahead.recycle(c);
        }
        let (parser, read) = ahead.finish();
        read.unwrap();
        let (want, lines, malformed) = direct(&text);
        assert!(chunks > 1);
        assert_eq!(got, want);
        assert_eq!((parser.lines, parser.malformed), (lines, malformed));
    }

    #[test]
    fn the_parser_reads_to_the_end_when_the_replay_stops_and_returns_its_error() {
        let mut text = LINES.repeat(CHUNK_EVENTS);
        text.push_str(&"x".repeat(300));
        let mut parser = Parser::new();
        parser.max_line_bytes = 200;
        let ahead = ParseAhead::spawn(parser, Box::new(Cursor::new(text.into_bytes()))).unwrap();
        // One chunk taken, the rest left.
        assert!(ahead.next().is_some());
        let (parser, read) = ahead.finish();
        let e = read.unwrap_err();
        assert!(e.to_string().contains("longer than 200 bytes"), "{e}");
        assert_eq!(parser.lines, 6 * CHUNK_EVENTS as u64);
    }
}
