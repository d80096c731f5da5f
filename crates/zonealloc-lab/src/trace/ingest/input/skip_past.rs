//! A reader that drops the stream up to a window's start marker found past the prefix
//! ([`SkipPast`]).

use std::io::{self, BufRead, BufReader, Read};
use std::sync::atomic::Ordering;

use super::Found;
use crate::trace::ingest::before::BeforeWindow;

/// A reader that drops everything up to and including the first line containing `marker`,
/// then hands the rest over unchanged; at the marker it sets `found`. Holds at most the
/// marker's length less one byte of what it dropped (a marker split across reads).
pub(super) struct SkipPast<R> {
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
    pub(super) fn new(inner: R, marker: Vec<u8>, found: Found) -> Self {
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
    pub(super) fn keeping(mut self, kept: BeforeWindow) -> Self {
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
#[cfg(test)]
mod tests {
    use super::*;

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
}
