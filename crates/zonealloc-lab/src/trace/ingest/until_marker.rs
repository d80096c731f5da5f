//! The end of a trace's window: a reader that stops at a marker ([`UntilMarker`]), handing out
//! its inner reader's buffers where they lie, and keeping, where asked, the text after the
//! marker up to a second one ([`Tail`]: the after-snapshot's reads, for the end state).

use std::io::{self, BufRead, Read};
use std::sync::{Arc, Mutex};

/// The most text a [`Tail`] keeps (the after-snapshot's reads of an 8 GiB capture, the pfn
/// layout's walk included, are some 10 MB): beyond it the rest is not kept.
pub const TAIL_MAX_BYTES: usize = 64 << 20;

/// The text after a window's end marker, from the marker up to the line holding a second
/// marker (`capture-kmem`'s `KT_SNAPSHOT_AFTER_END`), kept by the `UntilMarker` once the
/// window's bytes are handed out, on the parse's thread: the replay reads it after the pass
/// ([`Tail::take`]). Shared: the stream keeps one handle, the replay another.
#[derive(Clone, Debug, Default)]
pub struct Tail(Arc<Mutex<TailState>>);

#[derive(Debug, Default)]
struct TailState {
    /// The second marker: the text is kept up to its line. `None`: no tail is kept.
    until: Option<Vec<u8>>,
    /// The text kept: from the window's end marker (its line's first bytes cut: the text
    /// begins inside the marker's line) to the second marker's line.
    text: Vec<u8>,
    /// How the keeping ended.
    end: TailEnd,
}

/// How a [`Tail`]'s keeping ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TailEnd {
    /// Not (yet) kept: no tail asked for, or the window's end marker not reached.
    #[default]
    NotKept,
    /// At the second marker's line.
    Marker,
    /// At the end of the input, without the second marker.
    Eof,
    /// At [`TAIL_MAX_BYTES`], without the second marker.
    Cap,
    /// At a read error: the text before it.
    ReadError,
}

impl Tail {
    /// A tail to keep, up to the line holding `until`.
    pub fn until(until: &[u8]) -> Tail {
        Tail(Arc::new(Mutex::new(TailState {
            until: Some(until.to_vec()),
            ..TailState::default()
        })))
    }

    /// The text kept and how its keeping ended, once (empty afterwards).
    pub fn take(&self) -> (Vec<u8>, TailEnd) {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        (std::mem::take(&mut s.text), s.end)
    }

    /// Runs `f` on the text kept so far and how its keeping ended, leaving both in place (for
    /// [`Tail::take`] later): the set-up reads the text after the window where the parse has
    /// read to the end before the replay starts ([`crate::trace::replay::layout::StartHints`]'s
    /// `late`).
    pub fn peek<T>(&self, f: impl FnOnce(&[u8], TailEnd) -> T) -> T {
        let s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f(&s.text, s.end)
    }

    /// Reads `inner` on from where the window ended into the text, up to the line holding
    /// the second marker, the end of the input or [`TAIL_MAX_BYTES`]; once.
    fn keep<R: BufRead>(&self, inner: &mut R) {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let Some(until) = s.until.take() else {
            return;
        };
        let finder = memchr::memmem::Finder::new(&until);
        let mut text = Vec::new();
        let end = loop {
            let buf = match inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break TailEnd::ReadError,
            };
            if buf.is_empty() {
                break TailEnd::Eof;
            }
            // A mapped file's buffer is the rest of the file: no more than the cap is copied.
            let n = buf.len().min(TAIL_MAX_BYTES + until.len() - text.len());
            // The new bytes and the marker's length before them (a marker across buffers).
            let from = text.len().saturating_sub(until.len());
            text.extend_from_slice(&buf[..n]);
            inner.consume(n);
            if let Some(at) = finder.find(&text[from..]) {
                // Up to the start of the marker's line.
                let at = from + at;
                let line = memchr::memrchr(b'\n', &text[..at]).map_or(0, |nl| nl + 1);
                text.truncate(line);
                break TailEnd::Marker;
            }
            if text.len() >= TAIL_MAX_BYTES {
                text.truncate(TAIL_MAX_BYTES);
                break TailEnd::Cap;
            }
        };
        s.text = text;
        s.end = end;
    }
}

/// A stream that ends where `marker` first appears: the bytes before it (or, for a marker
/// split across two of the inner reader's buffers, before its second part), then a newline
/// (the marker's line, cut, is an `other` line to the parser: `tracing_mark_write` is no
/// page-allocator event). It hands out the inner reader's own buffers: a mapped file is
/// parsed where it lies, not copied (a copy was 19 M of 7.2 p2's 505 M instructions with
/// `--proc`, on the parse's thread).
pub(crate) struct UntilMarker<R> {
    inner: R,
    /// The marker, searched for with a searcher built once.
    finder: memchr::memmem::Finder<'static>,
    /// Where the marker's rarest byte in a trace lies in it ([`rare_byte`]).
    rare: usize,
    /// The last `marker.len() - 1` bytes handed out, for a marker split across buffers.
    tail: Vec<u8>,
    cut: Cut,
    /// The text after the marker to keep, where asked ([`UntilMarker::keeping`]).
    after: Option<Tail>,
}

/// How far an [`UntilMarker`] has come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cut {
    /// The marker not seen yet.
    Before,
    /// The marker lies this many bytes into the inner reader's buffer.
    At(usize),
    /// The bytes before the marker handed out: the newline is next.
    Newline,
    /// The end.
    Done,
}

impl<R: BufRead> UntilMarker<R> {
    pub(crate) fn new(inner: R, marker: &[u8]) -> Self {
        UntilMarker {
            inner,
            finder: memchr::memmem::Finder::new(marker).into_owned(),
            rare: rare_byte(marker),
            tail: Vec::new(),
            cut: if marker.is_empty() {
                Cut::Done
            } else {
                Cut::Before
            },
            after: None,
        }
    }

    /// Keeps the text after the marker in `tail` once the window's bytes are handed out.
    pub(crate) fn keeping(mut self, tail: Tail) -> Self {
        // An empty marker ends the window at once: there is no "after" it.
        self.after = (self.cut != Cut::Done).then_some(tail);
        self
    }
}

/// The marker's byte least often seen in a kernel's trace: its first that is no lower-case
/// letter, digit or punctuation of ftrace's lines (`KT_SNAPSHOT_AFTER_BEGIN`: the `K`, some
/// 200 a million bytes of a shipped trace), else its first.
fn rare_byte(marker: &[u8]) -> usize {
    let common =
        |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b" _.:=[]()|-,<>/\t\n".contains(&b);
    marker.iter().position(|&b| !common(b)).unwrap_or(0)
}

/// The first place of `finder`'s needle in `hay`: `memchr` for the needle's byte at `rare`,
/// each place it finds checked, a third of the instructions of `finder`'s own search on a
/// shipped trace (4 M against 11 M on 7.2 p2's window). Where that byte is common in `hay`
/// (more than one place in 64 bytes checked), `finder` searches the rest.
fn find(finder: &memchr::memmem::Finder<'_>, rare: usize, hay: &[u8]) -> Option<usize> {
    let needle = finder.needle();
    let Some(&byte) = needle.get(rare) else {
        return finder.find(hay);
    };
    let mut at = rare;
    let mut checked = 0usize;
    while let Some(i) = hay.get(at..).and_then(|h| memchr::memchr(byte, h)) {
        let start = at + i - rare;
        if hay[start..].starts_with(needle) {
            return Some(start);
        }
        checked += 1;
        at += i + 1;
        if checked > 16 + at / 64 {
            let from = at - rare;
            return finder.find(&hay[from..]).map(|n| from + n);
        }
    }
    None
}

impl<R: BufRead> BufRead for UntilMarker<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self.cut {
            Cut::Done => {
                if let Some(t) = self.after.take() {
                    t.keep(&mut self.inner);
                }
                return Ok(&[]);
            }
            Cut::Newline => return Ok(b"\n"),
            Cut::At(_) | Cut::Before => {}
        }
        let m = self.finder.needle().len();
        let buf = self.inner.fill_buf()?;
        if let Cut::At(n) = self.cut {
            return Ok(&buf[..n.min(buf.len())]);
        }
        if buf.is_empty() {
            return Ok(buf);
        }
        // A marker that began in the bytes already handed out.
        let mut seam = std::mem::take(&mut self.tail);
        let kept = seam.len();
        seam.extend_from_slice(&buf[..buf.len().min(m - 1)]);
        let cut = match self.finder.find(&seam) {
            Some(_) => Some(0),
            None => find(&self.finder, self.rare, buf),
        };
        seam.truncate(kept);
        self.tail = seam;
        Ok(match cut {
            Some(0) => {
                self.cut = Cut::Newline;
                b"\n"
            }
            Some(n) => {
                self.cut = Cut::At(n);
                &buf[..n]
            }
            None => buf,
        })
    }

    fn consume(&mut self, n: usize) {
        match self.cut {
            Cut::Done => return,
            Cut::Newline => {
                if n > 0 {
                    self.cut = Cut::Done;
                }
                return;
            }
            Cut::At(left) => {
                let left = left.saturating_sub(n);
                self.cut = if left == 0 {
                    Cut::Newline
                } else {
                    Cut::At(left)
                };
            }
            Cut::Before => {}
        }
        // The last m - 1 bytes of the old tail and these (not the whole buffer copied).
        let keep = self.finder.needle().len() - 1;
        if let Ok(buf) = self.inner.fill_buf() {
            let buf = &buf[..n.min(buf.len())];
            if buf.len() >= keep {
                self.tail.clear();
                self.tail.extend_from_slice(&buf[buf.len() - keep..]);
            } else {
                self.tail.extend_from_slice(buf);
                let drop = self.tail.len().saturating_sub(keep);
                self.tail.drain(..drop);
            }
        }
        self.inner.consume(n);
    }
}

impl<R: BufRead> Read for UntilMarker<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let buf = self.fill_buf()?;
        let n = buf.len().min(out.len());
        out[..n].copy_from_slice(&buf[..n]);
        self.consume(n);
        Ok(n)
    }
}

/// Hands out at most `.1` bytes of `.0` a buffer (for tests).
#[cfg(test)]
pub(crate) struct Slices(pub &'static [u8], pub usize);
#[cfg(test)]
impl BufRead for Slices {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        Ok(&self.0[..self.0.len().min(self.1)])
    }
    fn consume(&mut self, n: usize) {
        self.0 = &self.0[n..];
    }
}
#[cfg(test)]
impl Read for Slices {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.1.min(self.0.len()).min(out.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn until_marker_hands_out_the_inner_buffers_and_ends_at_the_marker_s_line() {
        for text in [
            &b"abcMARKERdef"[..],
            b"MARKER\nafter",
            b"a\nMAR\nMARKER",
            b"MARKEMARKERx",
            b"no marker\n",
            b"",
        ] {
            let at = memchr::memmem::find(text, b"MARKER");
            for k in 1..=text.len() + 1 {
                let mut u = UntilMarker::new(Slices(text, k), b"MARKER");
                let mut got = Vec::new();
                // The parser's way: buffer by buffer.
                loop {
                    let b = u.fill_buf().unwrap();
                    if b.is_empty() {
                        break;
                    }
                    // Not copied: the inner's bytes where they lie (but the newline).
                    if b != b"\n" {
                        let within = text.as_ptr_range();
                        assert!(within.contains(&b.as_ptr()), "{text:?} by {k}");
                    }
                    let n = b.len().min(3);
                    got.extend_from_slice(&b[..n]);
                    u.consume(n);
                }
                match at {
                    None => assert_eq!(got, text, "{text:?} by {k}"),
                    Some(at) => {
                        // The bytes before the marker, at most its first bytes but one, then
                        // a newline: exactly the bytes before it when one buffer holds it.
                        let (line, nl) = got.split_at(got.len() - 1);
                        assert_eq!(nl, b"\n", "{text:?} by {k}");
                        assert!(text.starts_with(line), "{text:?} by {k}");
                        assert!(line.len() >= at && line.len() < at + 6, "{text:?} by {k}");
                        if k > text.len() {
                            assert_eq!(line, &text[..at]);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_text_after_the_marker_is_kept_to_the_second_markers_line_however_it_is_cut() {
        let text = &b"abc\nx MARKER p\nline1\nline2\n y END p\nrest\n"[..];
        for (until, want, end) in [
            (&b"END"[..], &b"line1\nline2\n"[..], TailEnd::Marker),
            (
                b"NOT THERE",
                b"line1\nline2\n y END p\nrest\n",
                TailEnd::Eof,
            ),
        ] {
            for k in 1..=text.len() + 1 {
                let tail = Tail::until(until);
                let mut u = UntilMarker::new(Slices(text, k), b"MARKER").keeping(tail.clone());
                let mut window = Vec::new();
                u.read_to_end(&mut window).unwrap();
                assert!(window.starts_with(b"abc\nx "), "by {k}");
                let (kept, how) = tail.take();
                assert_eq!(how, end, "by {k}");
                // The kept text begins inside the marker's line: its first line is cut.
                let nl = kept.iter().position(|&b| b == b'\n').unwrap();
                assert!(b"MARKER p".ends_with(&kept[..nl]), "by {k}: {kept:?}");
                assert_eq!(&kept[nl + 1..], want, "by {k}");
            }
        }
        // Without the window's marker, nothing is kept.
        let tail = Tail::until(b"END");
        let mut u = UntilMarker::new(Slices(b"a\nb END\n", 4), b"MARKER").keeping(tail.clone());
        u.read_to_end(&mut Vec::new()).unwrap();
        assert_eq!(tail.take(), (Vec::new(), TailEnd::NotKept));
    }

    /// [`find`] on `hay`, checked against `memmem`'s own search.
    fn same_as_memmem(hay: &[u8], needle: &[u8]) {
        let finder = memchr::memmem::Finder::new(needle);
        let want = memchr::memmem::find(hay, needle);
        assert_eq!(find(&finder, rare_byte(needle), hay), want, "{needle:?}");
    }

    #[test]
    fn the_rare_byte_search_finds_the_first_marker_in_a_trace() {
        let line = b" a-1 [000] .... 1.000001: mm_page_alloc: page=0x1 pfn=0x100 order=0 migratetype=1 gfp_flags=GFP_KERNEL\n";
        let mut hay = line.repeat(2000);
        let marker = b"KT_SNAPSHOT_AFTER_BEGIN";
        assert_eq!(marker[rare_byte(marker)], b'K');
        same_as_memmem(&hay, marker);
        // Twice, and a near miss (`KT_SNAPSHOT_AFTER_BEGI`) before.
        for at in [150_001, 70_000, 3] {
            hay.splice(at..at, marker.iter().copied());
            hay.splice(at - 2..at - 2, marker[..22].iter().copied());
            same_as_memmem(&hay, marker);
        }
        // A marker of common bytes: the search goes over to memmem's.
        same_as_memmem(
            &hay,
            b"order=0 migratetype=1 gfp_flags=GFP_KERNEL\n a-1 [000] .... 1.00",
        );
        same_as_memmem(&hay, b"zzz");
    }

    proptest::proptest! {
        /// Whatever the text and the marker (of few letters, so a byte that is rare in a
        /// trace is common here and the search goes over to memmem's), the first place.
        #[test]
        fn the_rare_byte_search_finds_what_memmem_finds(
            hay in proptest::collection::vec(proptest::sample::select(b"aK_T ".to_vec()), 0..3000),
            needle in proptest::collection::vec(proptest::sample::select(b"aK_T ".to_vec()), 1..6),
        ) {
            same_as_memmem(&hay, &needle);
        }
    }
}
