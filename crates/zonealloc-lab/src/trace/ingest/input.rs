//! The replay's input, read once: a file, a FIFO, `<(xz -dc …)` or `-` (stdin).
//!
//! A replay has to decide two things before its first event: how many CPUs the zones have
//! and which migratetype numbering the trace uses. Neither needs the whole trace. The first
//! [`PREFIX_BYTES`] of the (decompressed) input are read into memory (a mapped file's are
//! looked at where they lie) and looked at
//! ([`Sniff`]): ftrace's header names the CPU count (`#P:4`), and the allocations there
//! carry the gfp-versus-migratetype evidence of [`Evidence`]. The replay then reads the
//! prefix again from memory, chained to the rest of the stream, so nothing is read twice
//! from the source and a pipe works as well as a file. The prefix is kept as read
//! ([`Input::prefix`]).
//!
//! Nor is anything parsed twice: the prefix's lines that the stream carries are looked at in
//! the replay's own parse (the events of its first [`Split::stream_bytes`], which the parse
//! marks, [`super::pipe::ParseAhead::spawn_marked`]), and only the lines a window cut out of
//! the stream ([`Split::region`]) are parsed here. Where the two halves could not give
//! exactly what one look at the prefix gives (a window's `to` marker inside the prefix, a cut
//! not at a line's start), [`Input::split`] is `None` and the caller [`sniff`]s the whole
//! prefix.
//!
//! A plain-text file of a MiB or more is mapped (`Mapped`): the parser reads the page cache
//! where it lies. Any other source is read, and decompressed, on a thread of its own
//! (`ReadAhead`) a few chunks ahead of the parser: xz's decoding (half the CPU time of a
//! replay of an `.xz` trace) then runs beside the replay on a second core instead of before
//! it. The parser has a thread of its own too ([`super::pipe`]).

use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

use super::before::BeforeWindow;
use super::until_marker::{Tail, UntilMarker};
use crate::trace::migratetype::Evidence;
use crate::trace::parse::{self, Event, EventKind, Parser};

/// How much of the input is looked at before the replay starts (4 MiB: some 30 000 lines
/// of ftrace text, far more allocations than the numbering evidence needs).
pub const PREFIX_BYTES: usize = 4 << 20;

/// What the start of a trace says.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sniff {
    /// The CPU count of ftrace's header (`# entries-in-buffer/entries-written: … #P:N`).
    pub header_cpus: Option<u32>,
    /// The highest CPU of an event in the prefix.
    pub max_cpu: Option<u32>,
    /// The highest pfn of an event in the prefix (what the default zone span is sized by).
    pub max_pfn: Option<u64>,
    /// Migratetype-numbering evidence from the prefix's allocations.
    pub evidence: Evidence,
    /// Bytes looked at.
    pub bytes: usize,
}

/// An opened input: the stream (prefix first) and the prefix as read.
pub struct Input {
    /// The whole input, from its first byte.
    pub reader: Box<dyn BufRead + Send>,
    /// The input's first [`PREFIX_BYTES`], before any window is cut: [`sniff`] it.
    pub prefix: Shared,
    /// How a look at the prefix divides between the stream and the window's cut.
    pub split: Option<Split>,
    /// The text the window's start cuts out of the stream, kept as the stream goes by.
    pub before: BeforeWindow,
}

/// The prefix's complete lines (those [`sniff`] looks at) as two parts: the stream's first
/// `stream_bytes`, which are the prefix's lines before and after the cut, at line
/// boundaries, and the lines of `region` the window cut out of the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// The part of the prefix the stream does not carry.
    pub region: std::ops::Range<usize>,
    /// The stream's bytes that are the rest of the prefix's complete lines.
    pub stream_bytes: u64,
}

impl Split {
    /// The split of `prefix` when `cut` (a window's `from` cut) is taken out of the stream,
    /// or `None` where the parts would not be whole lines: the cut's ends, and the end of
    /// the prefix's last complete line, are all line starts.
    fn new(prefix: &[u8], cut: std::ops::Range<usize>) -> Option<Split> {
        let whole = complete_lines(prefix).len();
        let (lo, hi) = (cut.start.min(whole), cut.end.min(whole));
        let line_start = |at: usize| at == 0 || prefix.get(at - 1) == Some(&b'\n');
        (line_start(lo) && line_start(hi)).then(|| Split {
            region: lo..hi,
            stream_bytes: (lo + (whole - hi)) as u64,
        })
    }
}

/// `prefix` up to the end of its last complete line.
fn complete_lines(prefix: &[u8]) -> &[u8] {
    match memchr::memrchr(b'\n', prefix) {
        Some(nl) => &prefix[..=nl],
        None => &[][..],
    }
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
    let mut mapped_prefix = None;
    let mut src: Box<dyn BufRead + Send> = if path.as_os_str() == "-" {
        Box::new(ReadAhead::spawn(|| {
            Ok(Box::new(BufReader::with_capacity(1 << 16, io::stdin())))
        })?)
    } else if let Some(mut m) = Mapped::open(path) {
        // The prefix is the mapping's first bytes, where they lie: nothing is copied before
        // the parse can start.
        let n = m.map.len().min(PREFIX_BYTES);
        mapped_prefix = Some(Shared(Bytes::Mapped(m.map.clone(), n)));
        m.at = n;
        Box::new(m)
    } else {
        let path = path.to_owned();
        Box::new(ReadAhead::spawn(move || parse::open(&path))?)
    };
    let prefix = match mapped_prefix {
        Some(p) => p,
        None => {
            let mut prefix = Vec::with_capacity(PREFIX_BYTES.min(1 << 20));
            (&mut src)
                .take(PREFIX_BYTES as u64)
                .read_to_end(&mut prefix)?;
            Shared(Bytes::Read(Arc::new(prefix)))
        }
    };
    let bytes = prefix.as_ref();
    let mut found = None;
    // The marker when it is not in the prefix: the stream looks for it.
    let mut beyond = None;
    // The part of the prefix the window cuts out of the stream.
    let mut cut = bytes.len()..bytes.len();
    // The header (the comment lines) is kept whatever the window cuts.
    let header = bytes
        .split_inclusive(|&b| b == b'\n')
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
                let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |nl| at + nl + 1);
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

/// Files smaller than this are read, not mapped (a mapping's set-up is not worth it).
const MAP_MIN_BYTES: u64 = 1 << 20;
/// Bytes read from a [`Mapped`] file between two releases of the pages behind them (a power
/// of two, a multiple of the page size).
const MAP_RELEASE_BYTES: usize = 4 << 20;
/// The most a [`Mapped`] file hands over at once, so that the parser consumes (and the pages
/// are released) as it goes.
const MAP_SLICE_BYTES: usize = 1 << 20;

/// A plain-text regular file, mapped: the parser reads the page cache where it lies, with no
/// read thread and no copy out of the kernel (`read` copied every byte, on a core the parse and
/// the replay need: 12 to 17% of the whole command's wall time on the real traces,
/// BENCHMARKS.md). The pages read are unmapped every [`MAP_RELEASE_BYTES`], so the resident
/// set stays bounded whatever the file's size. Compressed files, FIFOs, standard input and
/// small files are read on a [`ReadAhead`] thread as before.
///
/// A file truncated by another process while it is replayed ends the replay with `SIGBUS`
/// (as for every reader of a mapped file); `cat trace | zonealloc trace replay -` reads it
/// without a mapping.
struct Mapped {
    map: Arc<memmap2::Mmap>,
    /// Bytes handed out.
    at: usize,
    /// Bytes whose pages were released.
    released: usize,
}

impl Mapped {
    /// The file at `path` mapped, or `None` where it is not a regular plain-text file of
    /// [`MAP_MIN_BYTES`] or more, or cannot be mapped (the caller reads it then, and reports
    /// any error as reading does).
    fn open(path: &Path) -> Option<Mapped> {
        let file = std::fs::File::open(path).ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() < MAP_MIN_BYTES {
            return None;
        }
        // SAFETY: the mapping is read-only and private to this process; the bytes behind it
        // are only ever read as `[u8]` (any value is valid). Another process writing the file
        // meanwhile changes bytes not yet read (as a `read` would see them); one truncating
        // it makes a later access fault (`SIGBUS`), documented above.
        let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
        if crate::trace::input::Compression::sniff(&map[..map.len().min(16)])
            != crate::trace::input::Compression::None
        {
            return None;
        }
        // Read once, front to back: the kernel reads ahead and may drop pages behind.
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Sequential);
        Some(Mapped {
            map: Arc::new(map),
            at: 0,
            released: 0,
        })
    }
}

impl BufRead for Mapped {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let end = self.map.len().min(self.at + MAP_SLICE_BYTES);
        Ok(&self.map[self.at..end])
    }

    fn consume(&mut self, n: usize) {
        self.at = (self.at + n).min(self.map.len());
        #[cfg(unix)]
        if self.at - self.released >= MAP_RELEASE_BYTES || self.at == self.map.len() {
            // Whole pages only (the mapping starts on a page boundary), and at the end of the
            // file all of them: here, on the parse's thread, rather than at the unmapping,
            // which the replay's thread does at its end when its prefix holds the mapping
            // last (0.5 ms of a replay's serial end).
            let end = if self.at == self.map.len() {
                self.at
            } else {
                self.at & !(MAP_RELEASE_BYTES - 1)
            };
            if end > self.released {
                // SAFETY: `MADV_DONTNEED` on a read-only private file mapping only drops the
                // page-table entries: the mapping was never written, so a later access (the
                // prefix's [`Shared`] bytes, which the caller may still read) faults the same
                // bytes in again from the file. Every byte below `at` has been handed out.
                let _ = unsafe {
                    self.map.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        self.released,
                        end - self.released,
                    )
                };
                self.released = end;
            }
        }
    }
}

impl Read for Mapped {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        read_buffered(self, out)
    }
}

/// `Read::read` of a [`BufRead`] whose `fill_buf` does the work.
fn read_buffered(r: &mut impl BufRead, out: &mut [u8]) -> io::Result<usize> {
    let buf = r.fill_buf()?;
    let n = buf.len().min(out.len());
    out[..n].copy_from_slice(&buf[..n]);
    r.consume(n);
    Ok(n)
}

/// Bytes per chunk a [`ReadAhead`] hands over.
const AHEAD_CHUNK: usize = 256 << 10;
/// Chunks read ahead of the parser (and so the memory it holds: 1 MiB).
const AHEAD_CHUNKS: usize = 4;

/// A source read on a thread of its own, up to [`AHEAD_CHUNKS`] chunks ahead: the same
/// bytes, and the same errors, in the same order as reading it here. The thread opens the
/// source itself (so nothing it reads from need be `Send`), and stops at the end of the input,
/// at its first error, or when this reader is dropped.
struct ReadAhead {
    chunks: Receiver<io::Result<Vec<u8>>>,
    /// Read chunks going back to the thread, to be filled again.
    spent: SyncSender<Vec<u8>>,
    cur: Vec<u8>,
    at: usize,
    done: bool,
}

impl ReadAhead {
    fn spawn(
        open: impl FnOnce() -> io::Result<Box<dyn BufRead>> + Send + 'static,
    ) -> io::Result<ReadAhead> {
        let (tx, chunks) = sync_channel::<io::Result<Vec<u8>>>(AHEAD_CHUNKS);
        let (spent, back) = sync_channel::<Vec<u8>>(AHEAD_CHUNKS + 2);
        std::thread::Builder::new()
            .name("trace-read".into())
            .spawn(move || {
                let mut src = match open() {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                loop {
                    let mut buf = back
                        .try_recv()
                        .unwrap_or_else(|_| Vec::with_capacity(AHEAD_CHUNK));
                    buf.clear();
                    let got = match (&mut src).take(AHEAD_CHUNK as u64).read_to_end(&mut buf) {
                        Ok(0) => return,
                        Ok(_) => Ok(buf),
                        Err(e) => Err(e),
                    };
                    let failed = got.is_err();
                    // A closed channel: the reader is gone, nobody wants the rest.
                    if tx.send(got).is_err() || failed {
                        return;
                    }
                }
            })?;
        Ok(ReadAhead {
            chunks,
            spent,
            cur: Vec::new(),
            at: 0,
            done: false,
        })
    }
}

impl BufRead for ReadAhead {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.at == self.cur.len() && !self.done {
            match self.chunks.recv() {
                Ok(Ok(buf)) => {
                    let old = std::mem::replace(&mut self.cur, buf);
                    let _ = self.spent.try_send(old);
                    self.at = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                // The thread is done: the end of the input.
                Err(_) => self.done = true,
            }
        }
        Ok(&self.cur[self.at..])
    }

    fn consume(&mut self, n: usize) {
        self.at = (self.at + n).min(self.cur.len());
    }
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        read_buffered(self, out)
    }
}

/// A reader that drops everything up to and including the first line containing `marker`,
/// then hands the rest over unchanged; at the marker it sets `found`. Holds at most the
/// marker's length less one byte of what it dropped (a marker split across reads).
struct SkipPast<R> {
    inner: BufReader<R>,
    marker: Vec<u8>,
    /// The last `marker.len() - 1` bytes dropped, for a marker split across reads.
    tail: Vec<u8>,
    /// The marker was seen: dropping the rest of its line.
    in_line: bool,
    found: Found,
    /// Where the dropped text is kept.
    kept: BeforeWindow,
}

impl<R: Read> SkipPast<R> {
    fn new(inner: R, marker: Vec<u8>, found: Found) -> Self {
        SkipPast {
            inner: BufReader::with_capacity(1 << 16, inner),
            marker,
            tail: Vec::new(),
            in_line: false,
            found,
            kept: BeforeWindow::default(),
        }
    }

    /// Keeps the text it drops in `kept`.
    fn keeping(mut self, kept: BeforeWindow) -> Self {
        self.kept = kept;
        self
    }

    /// Drops input until just after the marker's line; `false` at the end of the input.
    fn skip(&mut self) -> io::Result<bool> {
        let m = self.marker.len().max(1);
        loop {
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                return Ok(false);
            }
            let n = buf.len();
            if self.in_line {
                if let Some(nl) = memchr::memchr(b'\n', buf) {
                    self.kept.push(&buf[..nl + 1]);
                    self.inner.consume(nl + 1);
                    self.found.0.store(true, Ordering::Relaxed);
                    return Ok(true);
                }
                self.kept.push(buf);
                self.inner.consume(n);
                continue;
            }
            let mut seam = std::mem::take(&mut self.tail);
            let old = seam.len();
            seam.extend_from_slice(&buf[..n.min(m - 1)]);
            // Where the marker starts, as an offset into `buf` (0 if it began in the tail).
            let hit = memchr::memmem::find(&seam, &self.marker)
                .map(|at| at.saturating_sub(old))
                .or_else(|| memchr::memmem::find(buf, &self.marker));
            if let Some(at) = hit {
                // The marker holds no newline: its line ends at the next one after it.
                self.in_line = true;
                self.kept.push(&buf[..at]);
                self.inner.consume(at);
                continue;
            }
            if n >= m - 1 {
                seam.clear();
                seam.extend_from_slice(&buf[n - (m - 1)..]);
            } else {
                let keep = seam.len().saturating_sub(m - 1);
                seam.drain(..keep);
            }
            self.tail = seam;
            self.kept.push(buf);
            self.inner.consume(n);
        }
    }
}

impl<R: Read> Read for SkipPast<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if !self.found.get() && !self.skip()? {
            return Ok(0);
        }
        self.inner.read(out)
    }
}

/// Looks at the complete lines of `prefix`.
pub fn sniff(prefix: &[u8]) -> Sniff {
    // Reading from memory cannot fail; a line over the parser's limit ends the look there.
    Sniff::looked(prefix, None).0
}

impl Sniff {
    /// The header's CPU count (the comment lines at the start of `whole`), nothing else yet.
    pub fn of_header(whole: &[u8]) -> Sniff {
        let mut s = Sniff::default();
        for line in whole
            .split(|&b| b == b'\n')
            .take_while(|l| l.starts_with(b"#"))
        {
            if let Some(at) = memchr::memmem::find(line, b"#P:") {
                let digits: Vec<u8> = line[at + 3..]
                    .iter()
                    .copied()
                    .take_while(u8::is_ascii_digit)
                    .collect();
                s.header_cpus = std::str::from_utf8(&digits)
                    .ok()
                    .and_then(|d| d.parse().ok())
                    .filter(|&n| n > 0);
            }
        }
        s
    }

    /// [`Sniff::of_header`] and the events of `split`'s region of `prefix`: what [`sniff`]
    /// gives less the events of the stream's first `split.stream_bytes`, which the caller
    /// adds ([`Sniff::add`]) from the parse. `None` where the region has a line over the
    /// parser's limit (one look at the prefix stops there: [`sniff`] it whole).
    pub fn of_region(prefix: &[u8], split: &Split) -> Option<Sniff> {
        let (s, read) = Sniff::looked(prefix, Some(split.region.clone()));
        read.ok().map(|()| s)
    }

    /// The header of `prefix`'s complete lines and the events of `region` of them (all of
    /// them without one), with the parse's result (an error at a line over the limit, the
    /// events before it counted).
    fn looked(prefix: &[u8], region: Option<std::ops::Range<usize>>) -> (Sniff, io::Result<()>) {
        let whole = complete_lines(prefix);
        let mut s = Sniff::of_header(whole);
        let text = region.map_or(whole, |r| &whole[r]);
        let read = Parser::new().read_all(text, |ev| s.add(ev));
        s.bytes = whole.len();
        (s, read)
    }

    /// Adds one event of the prefix: its CPU, and an allocation's numbering evidence.
    pub fn add(&mut self, ev: &Event<'_>) {
        self.add_with(ev, Evidence::expected);
    }

    /// [`Sniff::add`], with `expected` standing for [`Evidence::expected`] (a cache of it).
    pub fn add_with(&mut self, ev: &Event<'_>, expected: impl FnOnce(&str) -> Option<u8>) {
        if let Some(c) = ev.cpu {
            self.max_cpu = Some(self.max_cpu.map_or(c, |m| m.max(c)));
        }
        let pfn = ev.kind.pfn();
        self.max_pfn = Some(self.max_pfn.map_or(pfn, |m| m.max(pfn)));
        if let EventKind::Alloc {
            gfp_flags,
            migratetype,
            ..
        } = ev.kind
        {
            self.evidence.add_expected(expected(gfp_flags), migratetype);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_names_cpus_and_numbering_and_the_stream_starts_at_byte_zero() {
        let text = "# tracer: nop\n\
            # entries-in-buffer/entries-written: 3/3   #P:8\n\
            a-1 [002] 1.0: mm_page_alloc: page=p pfn=0x10 order=0 migratetype=1 \
            gfp_flags=GFP_HIGHUSER_MOVABLE\n\
            a-1 [005] 1.1: mm_page_free: page=p pfn=0x10 order=0\n\
            a-1 [001] 1.2: mm_page_free: page=p pfn=0x1";
        let s = sniff(text.as_bytes());
        assert_eq!(s.header_cpus, Some(8));
        assert_eq!(
            s.max_cpu,
            Some(5),
            "the unterminated last line is not looked at"
        );
        assert_eq!(s.evidence.current, 1);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.txt");
        std::fs::write(&p, text).unwrap();
        let mut back = String::new();
        open(&p).unwrap().reader.read_to_string(&mut back).unwrap();
        assert_eq!(back, text);
    }

    /// A file of `len` bytes of letters, a newline every `line` bytes, in a folder of its own.
    fn text_file(len: usize, line: usize) -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
        let text: Vec<u8> = (0..len)
            .map(|i| {
                if i % line == line - 1 {
                    b'\n'
                } else {
                    b'a' + (i % 26) as u8
                }
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.txt");
        std::fs::write(&p, &text).unwrap();
        (dir, p, text)
    }

    /// A capture whose start marker lies past the prefix (a 4 GiB machine's layout walk
    /// between the snapshot markers): `header`, `BEFORE_BEGIN`, `filler` bytes, the end
    /// marker, two events.
    fn late_marker(begin: &str, filler: usize) -> (tempfile::TempDir, std::path::PathBuf) {
        let mut t = format!("# tracer: nop\n#P:4\na-1 [000] 1.0: tracing_mark_write: {begin}\n");
        let line = "a-1 [000] 1.1: mm_page_alloc: page=p pfn=0x9 order=0 migratetype=0 \
                    gfp_flags=GFP_KERNEL\n";
        while t.len() < filler {
            t.push_str(line);
        }
        t.push_str("a-1 [000] 1.2: tracing_mark_write: KT_SNAPSHOT_BEFORE_END p\n");
        t.push_str("a-1 [000] 1.3: mm_page_free: page=p pfn=0x1 order=0\n");
        t.push_str("a-1 [000] 1.4: mm_page_free: page=p pfn=0x2 order=0\n");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.txt");
        std::fs::write(&p, t).unwrap();
        (dir, p)
    }

    fn default_window() -> Window {
        Window {
            from: Some("KT_SNAPSHOT_BEFORE_END".into()),
            to: None,
            beyond_prefix_if: Some("KT_SNAPSHOT_BEFORE_BEGIN".into()),
        }
    }

    #[test]
    fn a_start_marker_past_the_prefix_is_found_by_the_stream() {
        let (_d, p) = late_marker("KT_SNAPSHOT_BEFORE_BEGIN p", PREFIX_BYTES + (1 << 20));
        let (mut input, found) = open_window(&p, &default_window()).unwrap();
        let found = found.unwrap();
        assert!(!found.get() && found.searched());
        let mut back = String::new();
        input.reader.read_to_string(&mut back).unwrap();
        assert!(found.get());
        assert_eq!(
            back,
            "# tracer: nop\n#P:4\n\
             a-1 [000] 1.3: mm_page_free: page=p pfn=0x1 order=0\n\
             a-1 [000] 1.4: mm_page_free: page=p pfn=0x2 order=0\n"
        );
        // The look sniffs the whole prefix on its own: the stream does not carry it.
        assert!(input.split.is_none());
    }

    #[test]
    fn without_the_begin_marker_in_the_prefix_the_stream_is_replayed_from_its_start() {
        let (_d, p) = late_marker("SOMETHING_ELSE", PREFIX_BYTES + (1 << 20));
        let (mut input, found) = open_window(&p, &default_window()).unwrap();
        let found = found.unwrap();
        let mut back = Vec::new();
        input.reader.read_to_end(&mut back).unwrap();
        assert!(!found.get() && !found.searched());
        assert_eq!(back, std::fs::read(&p).unwrap());
    }

    #[test]
    fn a_named_marker_absent_from_the_whole_trace_leaves_nothing_and_says_so() {
        let (_d, p) = late_marker("KT_SNAPSHOT_BEFORE_BEGIN p", 1000);
        let w = Window {
            from: Some("NOT_THERE".into()),
            to: None,
            beyond_prefix_if: None,
        };
        let (mut input, found) = open_window(&p, &w).unwrap();
        let found = found.unwrap();
        let mut back = String::new();
        input.reader.read_to_string(&mut back).unwrap();
        assert_eq!(back, "# tracer: nop\n#P:4\n");
        assert!(found.searched() && !found.get());
    }

    #[test]
    fn skip_past_finds_a_marker_split_across_reads_and_not_a_line_before_it() {
        /// Hands out at most 3 bytes a read.
        struct Trickle(io::Cursor<Vec<u8>>);
        impl Read for Trickle {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = out.len().min(3);
                self.0.read(&mut out[..n])
            }
        }
        for text in [
            "x\nyyMARKERzz\nafter\n",
            "MARKER\nafter\n",
            "a\nMARKER",
            "MAR\nafter\n",
        ] {
            let f = Found::new(false);
            let inner = Trickle(io::Cursor::new(text.as_bytes().to_vec()));
            let mut r = SkipPast::new(inner, b"MARKER".to_vec(), f.clone());
            let mut back = String::new();
            r.read_to_string(&mut back).unwrap();
            let want = if text.contains("MARKER\n") || text.contains("MARKERzz\n") {
                "after\n"
            } else {
                ""
            };
            assert_eq!(back, want, "{text:?}");
            assert_eq!(f.get(), !want.is_empty(), "{text:?}");
        }
    }

    #[test]
    fn a_mapped_file_hands_over_every_byte_and_releases_what_was_read() {
        // Several slices and releases, and an odd tail.
        let (dir, p, text) = text_file(2 * MAP_RELEASE_BYTES + 3 * MAP_SLICE_BYTES + 4099, 89);
        // By slices, as the parser reads it.
        let mut m = Mapped::open(&p).expect("a plain file of 9 MiB is mapped");
        let mut back = Vec::new();
        loop {
            let buf = m.fill_buf().unwrap();
            if buf.is_empty() {
                break;
            }
            assert!(buf.len() <= MAP_SLICE_BYTES);
            // Part of a slice at a time, as a line split across two fills leaves it.
            let n = buf.len().min(MAP_SLICE_BYTES / 3 + 1);
            back.extend_from_slice(&buf[..n]);
            m.consume(n);
        }
        assert!(back == text, "{} bytes back of {}", back.len(), text.len());
        #[cfg(unix)]
        assert_eq!(m.released, text.len(), "every page is released at the end");
        // Through `open`, prefix and all, by `read`; the prefix (the mapping's first bytes,
        // not a copy) stays readable after the reader has released their pages.
        let mut back = Vec::new();
        let mut input = open(&p).unwrap();
        input.reader.read_to_end(&mut back).unwrap();
        assert!(back == text);
        assert!(input.prefix.as_ref() == &text[..PREFIX_BYTES]);
        // Compressed and small files are read, not mapped.
        let gz = dir.path().join("t.txt.gz");
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).unwrap(),
            flate2::Compression::fast(),
        );
        std::io::Write::write_all(&mut enc, &text).unwrap();
        enc.finish().unwrap();
        assert!(Mapped::open(&gz).is_none());
        let mut back = Vec::new();
        open(&gz).unwrap().reader.read_to_end(&mut back).unwrap();
        assert!(back == text);
        let small = dir.path().join("s.txt");
        std::fs::write(&small, &text[..1000]).unwrap();
        assert!(Mapped::open(&small).is_none());
        assert!(Mapped::open(dir.path()).is_none());
    }

    #[test]
    fn reading_ahead_hands_over_every_byte_and_the_first_error() {
        // More than the prefix and several chunks: every byte, in order.
        let (_dir, p, text) = text_file(PREFIX_BYTES + 3 * AHEAD_CHUNK + 17, 97);
        let mut back = Vec::new();
        open(&p).unwrap().reader.read_to_end(&mut back).unwrap();
        assert!(back == text, "{} bytes back of {}", back.len(), text.len());
        // A source that fails after a chunk: its bytes, then its error, then the end.
        let mut r = ReadAhead::spawn(|| {
            let failing = Cursor::new(vec![b'x'; AHEAD_CHUNK]).chain(Failing);
            Ok(Box::new(BufReader::new(failing)))
        })
        .unwrap();
        assert_eq!(r.fill_buf().unwrap().len(), AHEAD_CHUNK);
        r.consume(AHEAD_CHUNK);
        assert_eq!(r.fill_buf().unwrap_err().to_string(), "broken source");
        assert!(r.fill_buf().unwrap().is_empty());
        // An error opening the source is the first read's.
        let mut r = ReadAhead::spawn(|| Err(io::Error::other("cannot open"))).unwrap();
        assert_eq!(r.fill_buf().unwrap_err().to_string(), "cannot open");
    }

    struct Failing;
    impl Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::other("broken source"))
        }
    }

    #[test]
    fn a_window_keeps_the_header_and_the_lines_between_the_markers() {
        let text = "# tracer: nop\n# entries-in-buffer/entries-written: 3/3   #P:2\n\
            a-1 [000] 1.0: mm_page_free: page=p pfn=0x1 order=0\n\
            a-1 [000] 1.1: tracing_mark_write: KT_SNAPSHOT_BEFORE_END p1\n\
            a-1 [001] 1.2: mm_page_free: page=p pfn=0x2 order=0\n\
            a-1 [000] 1.3: tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN p1\n\
            a-1 [000] 1.4: mm_page_free: page=p pfn=0x3 order=0\n";
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.txt");
        std::fs::write(&p, text).unwrap();
        let w = Window {
            from: Some("KT_SNAPSHOT_BEFORE_END".into()),
            to: Some("KT_SNAPSHOT_AFTER_BEGIN".into()),
            beyond_prefix_if: None,
        };
        let (mut input, found) = open_window(&p, &w).unwrap();
        let mut back = String::new();
        input.reader.read_to_string(&mut back).unwrap();
        assert_eq!(found.map(|f| f.get()), Some(true));
        // The prefix to sniff is the input as read, the lines outside the window included.
        assert_eq!(input.prefix.as_ref(), text.as_bytes());
        assert!(back.starts_with("# tracer: nop\n# entries"), "{back}");
        assert!(
            back.contains("pfn=0x2") && !back.contains("pfn=0x1 ") && !back.contains("pfn=0x3")
        );
        // A marker split across the inner reader's buffers is found too.
        let mut u = UntilMarker::new(
            super::super::until_marker::Slices(b"abcMARKERdef", 5),
            b"MARKER",
        );
        let mut got = Vec::new();
        u.read_to_end(&mut got).unwrap();
        // (The marker's first bytes were handed out before it was seen: its line is cut.)
        assert_eq!(got, b"abcMA\n");
    }

    #[test]
    fn a_split_divides_the_prefix_s_lines_at_line_starts_only() {
        let p = b"# h\na\nmark\nb\nc";
        // No cut: the stream carries every complete line (not the unterminated `c`).
        assert_eq!(
            Split::new(p, p.len()..p.len()),
            Some(Split {
                region: 13..13,
                stream_bytes: 13
            })
        );
        // The window cuts `a` and the marker's line: the stream has the header and `b`.
        assert_eq!(
            Split::new(p, 4..11),
            Some(Split {
                region: 4..11,
                stream_bytes: 6
            })
        );
        // A cut through the last, unterminated line: only the header is the stream's.
        assert_eq!(
            Split::new(p, 4..p.len()),
            Some(Split {
                region: 4..13,
                stream_bytes: 4
            })
        );
        // A cut that starts or ends inside a line cannot be split.
        assert_eq!(Split::new(p, 3..11), None);
        assert_eq!(Split::new(p, 4..10), None);
        // With a `to` marker in the prefix the caller sniffs the whole prefix.
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t.txt");
        std::fs::write(&f, p).unwrap();
        let to = |m: &str| Window {
            from: None,
            to: Some(m.into()),
            beyond_prefix_if: None,
        };
        assert!(open_window(&f, &to("mark")).unwrap().0.split.is_none());
        assert!(open_window(&f, &to("absent")).unwrap().0.split.is_some());
    }
}
