//! The replay's input, read once: a file, a FIFO, `<(xz -dc …)` or `-` (stdin).
//!
//! A replay has to decide two things before its first event: how many CPUs the zones have
//! and which migratetype numbering the trace uses. Neither needs the whole trace. The first
//! [`PREFIX_BYTES`] of the (decompressed) input are read into memory (a mapped file's are
//! looked at where they lie) and looked at ([`Sniff`](super::sniff::Sniff)): ftrace's
//! header names the CPU count (`#P:4`), and the allocations there carry the
//! gfp-versus-migratetype evidence of [`Evidence`](crate::trace::migratetype::Evidence). The
//! replay then reads the prefix again from memory, chained to the rest of the stream, so
//! nothing is read twice from the source and a pipe works as well as a file. The prefix is
//! kept as read ([`Input::prefix`]).
//!
//! Nor is anything parsed twice: the prefix's lines that the stream carries are looked at in
//! the replay's own parse (the events of its first [`Split::stream_bytes`], which the parse
//! marks, [`super::pipe::ParseAhead::spawn_marked`]), and only the lines a window cut out of
//! the stream ([`Split::region`]) are parsed here. Where the two halves could not give
//! exactly what one look at the prefix gives (a window's `to` marker inside the prefix, a cut
//! not at a line's start), [`Input::split`] is `None` and the caller looks at the whole
//! prefix ([`sniff`](super::sniff::sniff)).
//!
//! A plain-text file of a MiB or more is mapped (`Mapped`, in `mapped.rs`): the parser reads
//! the page cache where it lies. Any other source is read, and decompressed, on a thread of
//! its own (`ReadAhead`, in `read_ahead.rs`) a few chunks ahead of the parser: xz's decoding
//! (half the CPU time of a replay of an `.xz` trace) then runs beside the replay on a second
//! core instead of before it. The parser has a thread of its own too ([`super::pipe`]).

mod mapped;
mod read_ahead;
mod skip_past;
#[cfg(test)]
mod tests;

use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::before::BeforeWindow;
use super::sniff::Split;
use super::until_marker::{Tail, UntilMarker};
use crate::trace::parse;
use mapped::Mapped;
use read_ahead::ReadAhead;
use skip_past::SkipPast;

/// How much of the input is looked at before the replay starts (4 MiB: some 30 000 lines
/// of ftrace text, far more allocations than the numbering evidence needs).
pub const PREFIX_BYTES: usize = 4 << 20;

/// An opened input: the stream (prefix first) and the prefix as read.
pub struct Input {
    /// The whole input, from its first byte.
    pub reader: Box<dyn BufRead + Send>,
    /// The input's first [`PREFIX_BYTES`], before any window is cut: look at it with
    /// [`sniff`](super::sniff::sniff).
    pub prefix: Shared,
    /// How a look at the prefix divides between the stream and the window's cut.
    pub split: Option<Split>,
    /// The text the window's start cuts out of the stream, kept as the stream goes by.
    pub before: BeforeWindow,
}

/// Bytes shared between the stream and its reader's caller: read into memory, or the first
/// bytes of a mapped file (not copied).
#[derive(Clone)]
pub struct Shared(Bytes);

#[derive(Clone)]
enum Bytes {
    Read(Arc<Vec<u8>>),
    Mapped(Arc<memmap2::Mmap>, usize),
}

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        match &self.0 {
            Bytes::Read(v) => v,
            Bytes::Mapped(m, n) => &m[..*n],
        }
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Shared({} bytes)", self.as_ref().len())
    }
}

/// The part of a trace to replay: from the line after the first one containing `from` (when
/// it appears in the first [`PREFIX_BYTES`]) to the line before the first one containing
/// `to`. `scripts/capture-kmem` and the traces of `shared/kernel` mark the `/proc` snapshots
/// with `KT_SNAPSHOT_BEFORE_END` and `KT_SNAPSHOT_AFTER_BEGIN`: replaying between them starts
/// from the `before` snapshot's state and ends at the `after` one's.
#[derive(Clone, Debug, Default)]
pub struct Window {
    /// Text of the marker line the replay starts after.
    pub from: Option<String>,
    /// Text of the marker line the replay stops before.
    pub to: Option<String>,
    /// Where `from` is not in the prefix: look for it in the rest of the stream always
    /// (`None`), or only where the prefix holds this text (the default window's
    /// `KT_SNAPSHOT_BEFORE_BEGIN`: the capture's snapshot read began, so its end follows).
    pub beyond_prefix_if: Option<String>,
}

/// Opens `path` (`-`: standard input), decompressing as [`parse::open`] does, and reads
/// its prefix.
pub fn open(path: &Path) -> io::Result<Input> {
    open_window(path, &Window::default()).map(|(i, _)| i)
}

/// Whether a window's `from` marker was found: known at once where the prefix holds it,
/// else set by the stream when it reaches the marker (read it after the stream's end).
#[derive(Clone, Debug)]
pub struct Found(Arc<AtomicBool>, bool);

impl Found {
    fn new(found: bool) -> Found {
        Found(Arc::new(AtomicBool::new(found)), false)
    }

    /// Whether the marker has been found so far.
    pub fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Whether the stream looks for the marker (it was not in the prefix): then, if it is
    /// not found by the end, nothing was replayed.
    pub fn searched(&self) -> bool {
        self.1
    }
}

/// [`open`], keeping only `window` of the trace; also says whether the `from` marker was
/// found (`None` without one). A marker past the prefix is looked for in the stream, which
/// drops every line up to and including the marker's (`SkipPast`).
pub fn open_window(path: &Path, window: &Window) -> io::Result<(Input, Option<Found>)> {
    open_window_keeping(path, window, None)
}

/// [`open_window`], keeping the text after the window's `to` marker in `keep` where given
/// ([`Tail`]: the after-snapshot's reads, replayed for the end state only).
pub fn open_window_keeping(
    path: &Path,
    window: &Window,
    keep: Option<Tail>,
) -> io::Result<(Input, Option<Found>)> {
    open_window_keeping_to(path, window, keep, None)
}

/// [`open_window_keeping`]; without a window's `from`, keeping the stream's text up to the
/// line of `keep_to` in [`Input::before`] where given ([`super::keep_to`]), the stream
/// unchanged.
pub fn open_window_keeping_to(
    path: &Path,
    window: &Window,
    keep: Option<Tail>,
    keep_to: Option<&str>,
) -> io::Result<(Input, Option<Found>)> {
    let (src, prefix) = read_prefix(path)?;
    let bytes = prefix.as_ref();
    let WindowCut { cut, found, beyond } = WindowCut::of(bytes, window);
    // A `to` marker in the prefix shortens the stream: the whole prefix is sniffed then, as
    // it is when the stream, not the prefix, finds the `from` marker.
    let to_in_prefix = window
        .to
        .as_ref()
        .is_some_and(|to| memchr::memmem::find(bytes, to.as_bytes()).is_some());
    let split = (!to_in_prefix && beyond.is_none())
        .then(|| Split::new(bytes, cut.clone()))
        .flatten();
    // The prefix without the cut, shared with the caller (not copied).
    let mut after = Cursor::new(prefix.clone());
    after.set_position(cut.end as u64);
    let before = BeforeWindow::default();
    before.push(&bytes[cut.clone()]);
    let rest: Box<dyn BufRead + Send> = match beyond {
        Some((marker, f)) => Box::new(BufReader::with_capacity(
            1 << 16,
            SkipPast::new(after.chain(src), marker, f).keeping(before.clone()),
        )),
        None => Box::new(after.chain(src)),
    };
    let stream = Cursor::new(prefix.clone())
        .take(cut.start as u64)
        .chain(rest);
    let stream: Box<dyn BufRead + Send> = match keep_to.filter(|_| window.from.is_none()) {
        Some(m) => Box::new(BufReader::with_capacity(
            1 << 16,
            super::keep_to::KeepTo::new(stream, m.as_bytes(), before.clone()),
        )),
        None => Box::new(stream),
    };
    let reader: Box<dyn BufRead + Send> = match &window.to {
        // Both halves are buffered already: the marker is looked for in their buffers.
        Some(to) => {
            let until = UntilMarker::new(stream, to.as_bytes());
            match keep {
                Some(t) => Box::new(until.keeping(t)),
                None => Box::new(until),
            }
        }
        None => Box::new(stream),
    };
    Ok((
        Input {
            reader,
            prefix,
            split,
            before,
        },
        found,
    ))
}

/// The input at `path` (`-`: standard input), from the first byte after its prefix, and its
/// first [`PREFIX_BYTES`]: a mapped file's, where they lie, else read into memory.
fn read_prefix(path: &Path) -> io::Result<(Box<dyn BufRead + Send>, Shared)> {
    if path.as_os_str() == "-" {
        let src =
            ReadAhead::spawn(|| Ok(Box::new(BufReader::with_capacity(1 << 16, io::stdin()))))?;
        read_into_memory(Box::new(src))
    } else if let Some(mut m) = Mapped::open(path) {
        // The prefix is the mapping's first bytes, where they lie: nothing is copied before
        // the parse can start.
        let n = m.map.len().min(PREFIX_BYTES);
        let prefix = Shared(Bytes::Mapped(m.map.clone(), n));
        m.at = n;
        Ok((Box::new(m), prefix))
    } else {
        let path = path.to_owned();
        read_into_memory(Box::new(ReadAhead::spawn(move || parse::open(&path))?))
    }
}

/// `src` after its first [`PREFIX_BYTES`], and those bytes, read.
fn read_into_memory(
    mut src: Box<dyn BufRead + Send>,
) -> io::Result<(Box<dyn BufRead + Send>, Shared)> {
    let mut prefix = Vec::with_capacity(PREFIX_BYTES.min(1 << 20));
    (&mut src)
        .take(PREFIX_BYTES as u64)
        .read_to_end(&mut prefix)?;
    Ok((src, Shared(Bytes::Read(Arc::new(prefix)))))
}

/// What a window's `from` marker cuts out of the prefix.
struct WindowCut {
    /// The part of the prefix the window cuts out of the stream.
    cut: std::ops::Range<usize>,
    /// Whether the marker was found (`None` without one).
    found: Option<Found>,
    /// The marker when it is not in the prefix: the stream looks for it.
    beyond: Option<(Vec<u8>, Found)>,
}

impl WindowCut {
    /// The cut of `window`'s `from` marker in the prefix `bytes`: the lines before the
    /// marker's and the marker's own, the header (the comment lines) kept whatever the window
    /// cuts.
    fn of(bytes: &[u8], window: &Window) -> WindowCut {
        let mut found = None;
        let mut beyond = None;
        let mut cut = bytes.len()..bytes.len();
        let header = parse::lines(bytes)
            .take_while(|l| l.starts_with(b"#"))
            .map(<[u8]>::len)
            .sum::<usize>();
        if let Some(from) = &window.from {
            let at = memchr::memmem::find(bytes, from.as_bytes());
            let f = Found::new(at.is_some());
            found = Some(f.clone());
            match at {
                Some(at) => {
                    // Everything after the marker's line.
                    let end =
                        memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |nl| at + nl + 1);
                    cut = header.min(at)..end;
                }
                None if window
                    .beyond_prefix_if
                    .as_ref()
                    .is_none_or(|t| memchr::memmem::find(bytes, t.as_bytes()).is_some()) =>
                {
                    cut = header..header;
                    let f = Found(f.0, true);
                    found = Some(f.clone());
                    beyond = Some((from.as_bytes().to_vec(), f));
                }
                None => {}
            }
        }
        WindowCut { cut, found, beyond }
    }
}
