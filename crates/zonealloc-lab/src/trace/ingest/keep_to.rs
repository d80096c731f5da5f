//! The text of a stream up to a marker's line, kept as the stream goes by, the stream itself
//! unchanged: `--whole-file` with `--proc` replays the snapshot's reads but needs to know
//! which task read which file (`replay::snapshot_reads`), which only the
//! text's task column shows. Kept in a [`BeforeWindow`] (its last
//! [`super::before::BEFORE_BYTES`] at most), up to and including the first line containing
//! the marker; nothing after it.

use std::io::{self, Read};

use super::before::BeforeWindow;

/// Where the marker search is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not seen yet.
    Looking,
    /// Seen: keeping the rest of its line.
    InLine,
    /// Its line kept: nothing more is.
    Done,
}

/// A reader handing `inner`'s bytes over unchanged and keeping them in `kept` up to the end
/// of the first line containing `marker`. Holds at most the marker's length less one byte
/// (a marker split across reads).
pub struct KeepTo<R> {
    inner: R,
    marker: Vec<u8>,
    /// The last `marker.len() - 1` bytes read, for a marker split across reads.
    seam: Vec<u8>,
    state: State,
    kept: BeforeWindow,
}

impl<R: Read> KeepTo<R> {
    /// Keeps `inner`'s text up to `marker`'s line in `kept`.
    pub fn new(inner: R, marker: &[u8], kept: BeforeWindow) -> Self {
        KeepTo {
            inner,
            marker: marker.to_vec(),
            seam: Vec::new(),
            state: State::Looking,
            kept,
        }
    }

    /// Keeps what of `buf` (the bytes just read) lies up to the marker's line's end.
    fn keep(&mut self, buf: &[u8]) {
        if self.state == State::Looking {
            let m = self.marker.len().max(1);
            let old = self.seam.len();
            self.seam.extend_from_slice(&buf[..buf.len().min(m - 1)]);
            // Where the marker ends, as an offset into `buf`.
            let end = memchr::memmem::find(&self.seam, &self.marker)
                .map(|at| (at + self.marker.len()).saturating_sub(old))
                .or_else(|| memchr::memmem::find(buf, &self.marker).map(|at| at + m));
            match end {
                Some(end) => {
                    self.state = State::InLine;
                    self.kept.push(&buf[..end]);
                    self.seam = Vec::new();
                    self.keep_line(&buf[end..]);
                }
                None => {
                    if buf.len() >= m - 1 {
                        self.seam.clear();
                        self.seam.extend_from_slice(&buf[buf.len() - (m - 1)..]);
                    } else {
                        let all: Vec<u8> = [&self.seam[..old], buf].concat();
                        self.seam = all[all.len().saturating_sub(m - 1)..].to_vec();
                    }
                    self.kept.push(buf);
                }
            }
        } else if self.state == State::InLine {
            self.keep_line(buf);
        }
    }

    /// The rest of the marker's line.
    fn keep_line(&mut self, buf: &[u8]) {
        match memchr::memchr(b'\n', buf) {
            Some(nl) => {
                self.kept.push(&buf[..=nl]);
                self.state = State::Done;
            }
            None => self.kept.push(buf),
        }
    }
}

impl<R: Read> Read for KeepTo<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        if self.state != State::Done {
            self.keep(&out[..n]);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `text` through a [`KeepTo`] in reads of `step` bytes.
    fn through(text: &[u8], marker: &str, step: usize) -> (Vec<u8>, Vec<u8>) {
        let kept = BeforeWindow::default();
        let mut r = KeepTo::new(text, marker.as_bytes(), kept.clone());
        let (mut out, mut buf) = (Vec::new(), vec![0u8; step]);
        loop {
            let n = r.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        (out, kept.take())
    }

    #[test]
    fn the_text_to_the_markers_line_is_kept_and_the_stream_is_unchanged_whatever_the_reads() {
        let text = b"a line\nb KT_SNAPSHOT_BEFORE_END p_x\nc line\nd KT_SNAPSHOT_BEFORE_END\n";
        for step in [1, 2, 3, 7, 20, 23, 100] {
            let (out, kept) = through(text, "KT_SNAPSHOT_BEFORE_END", step);
            assert_eq!(out, text, "step {step}");
            assert_eq!(
                String::from_utf8(kept).unwrap(),
                "a line\nb KT_SNAPSHOT_BEFORE_END p_x\n",
                "step {step}"
            );
        }
        // No marker: all of it is kept.
        let (out, kept) = through(b"x\ny\n", "KT_SNAPSHOT_BEFORE_END", 3);
        assert_eq!(
            (out.as_slice(), kept.as_slice()),
            (&b"x\ny\n"[..], &b"x\ny\n"[..])
        );
    }
}
