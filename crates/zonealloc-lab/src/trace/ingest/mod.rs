//! The replay's first stage: a trace as one [`Source`] of parsed events. It opens the input
//! (a file, mapped where it can be, standard input, gzip, zstd or xz: [`input`]), cuts the
//! window (its end: `until_marker`), parses on a thread of its own ([`pipe`]) and looks at the
//! prefix ([`prefix`]: the CPU count of ftrace's header, the migratetype numbering's
//! evidence, [`sniff`]), and hands the replay event [`Chunk`]s in order, the ones its look
//! (or an inference) took first.
//!
//! Below it: [`crate::trace::input`] and [`crate::trace::zstd`] (bytes),
//! [`crate::trace::parse`] (events), [`crate::trace::migratetype`] (numbering evidence).

pub mod before;
pub mod input;
pub mod keep_to;
pub mod pipe;
pub mod prefix;
pub mod sniff;
mod until_marker;

use std::collections::VecDeque;
use std::io;
use std::path::Path;

use crate::trace::migratetype::Numbering;
use crate::trace::parse::{Event, Parser};
pub use input::Window;
use pipe::ParseAhead;
pub use pipe::{Chunk, Kept, CHUNK_EVENTS};
use prefix::PrefixLook;
pub use sniff::Sniff;
pub use until_marker::{Tail, TailEnd, TAIL_MAX_BYTES};

/// A trace being read: its window, the look at its prefix, and its events in chunks.
pub struct Source {
    look: PrefixLook,
    ahead: ParseAhead,
    /// Chunks taken off the parse before the replay's turn (by the look or an inference),
    /// handed out first, in order.
    held: VecDeque<Chunk>,
    window: Window,
    found: Option<input::Found>,
    before: before::BeforeWindow,
    /// The text after the window's end marker, where kept ([`Source::open_keeping`]).
    after: Option<Tail>,
}

impl Source {
    /// Opens `path` (`-`: standard input), keeping `window` of it, and starts its parse.
    pub fn open(path: &Path, window: &Window) -> io::Result<Source> {
        Source::open_keeping(path, window, None)
    }

    /// [`Source::open`], keeping the text after the window's end marker in `after` where
    /// given ([`Tail`]).
    pub fn open_keeping(path: &Path, window: &Window, after: Option<Tail>) -> io::Result<Source> {
        Source::open_keeping_to(path, window, after, None)
    }

    /// [`Source::open_keeping`]; without a window's `from`, keeping the text up to the line of
    /// `keep_to` as it streams by, for [`Source::kept_text`].
    pub fn open_keeping_to(
        path: &Path,
        window: &Window,
        after: Option<Tail>,
        keep_to: Option<&str>,
    ) -> io::Result<Source> {
        let (input, found) = input::open_window_keeping_to(path, window, after.clone(), keep_to)?;
        let before = input.before.clone();
        let (look, ahead) = PrefixLook::spawn(Parser::new(), input)?;
        Ok(Source {
            look,
            ahead,
            held: VecDeque::new(),
            window: window.clone(),
            found,
            before,
            after,
        })
    }

    /// The text after the window's end marker, as kept so far (nothing until the parse has
    /// read the window's last event), where [`Source::open_keeping`] asked for it.
    pub fn after_window(&self) -> Option<&Tail> {
        self.after.as_ref()
    }

    /// The text before the window's start marker (its last [`before::BEFORE_BYTES`]), once:
    /// where the stream looks for the marker, the parse is first taken past it (the chunks
    /// taken are put back). Empty without a start marker, or where it was not found.
    pub fn before_window(&mut self) -> Vec<u8> {
        // Chunks before the marker's are the header's, without events: few.
        let mut taken = Vec::new();
        while self
            .found
            .as_ref()
            .is_some_and(|f| f.searched() && !f.get())
        {
            match self.next_chunk() {
                Some(c) => taken.push(c),
                None => break,
            }
        }
        self.unread(taken);
        if self.found.as_ref().is_some_and(input::Found::get) {
            self.before.take()
        } else {
            Vec::new()
        }
    }

    /// The text kept so far of what [`Source::open_keeping_to`]'s `keep_to` asked for (the
    /// parse has read at least as far as the chunks taken), handed over.
    pub fn kept_text(&mut self) -> Vec<u8> {
        self.before.take()
    }

    /// Keeps no more of the text before the window's start ([`Source::before_window`] will
    /// not be asked for), and drops what was kept.
    pub fn drop_before_window(&self) {
        self.before.stop();
    }

    /// Whether the stream looked for the start marker beyond the prefix and, at the end of
    /// the input, has not found it: nothing was replayed.
    pub fn marker_missing(&self) -> bool {
        self.found
            .as_ref()
            .is_some_and(|f| f.searched() && !f.get())
    }

    /// The window read, and whether its start marker was found (`None` without one). A
    /// marker beyond the prefix is found by the stream: ask after the events are read.
    pub fn window(&self) -> (&Window, Option<bool>) {
        (&self.window, self.found.as_ref().map(input::Found::get))
    }

    /// What the prefix's look knows so far: the header's CPU count is final, the events'
    /// part may not be ([`Source::look`]).
    pub fn so_far(&self) -> &Sniff {
        self.look.so_far()
    }

    /// The prefix's whole look: the parse's events of it are taken (and held for the replay).
    pub fn look(&mut self) -> &Sniff {
        self.look_with(|_| {})
    }

    /// [`Source::look`], handing each event it takes to `each` too, in order (none where the
    /// look was whole already).
    pub fn look_with(&mut self, each: impl FnMut(&Event<'_>)) -> &Sniff {
        self.look.finish_with(&self.ahead, each);
        self.held.extend(self.look.take_held());
        self.look.so_far()
    }

    /// The trace's migratetype numbering: `given`, else what the look has seen so far.
    pub fn numbering(&self, given: Option<Numbering>) -> Numbering {
        given.unwrap_or_else(|| self.look.so_far().evidence.verdict())
    }

    /// The next chunk of events: the held ones first, then the parse's; `None` at the end of
    /// the input (or at a read error, which [`Source::finish`] returns).
    pub fn next_chunk(&mut self) -> Option<Chunk> {
        self.held.pop_front().or_else(|| self.ahead.next())
    }

    /// Puts `chunks`, taken by [`Source::next_chunk`], back before the rest, in order.
    pub fn unread(&mut self, chunks: Vec<Chunk>) {
        for c in chunks.into_iter().rev() {
            self.held.push_front(c);
        }
    }

    /// Hands a replayed chunk back to the parse, to be filled again.
    pub fn recycle(&self, chunk: Chunk) {
        self.ahead.recycle(chunk);
    }

    /// Waits for the parse to read to the end (it does even when the replay stopped early),
    /// and returns the parser (its counts) with the read's result.
    pub fn finish(self) -> (Parser, io::Result<()>) {
        drop(self.held);
        self.ahead.finish()
    }
}
