//! A source read on a thread of its own, a few chunks ahead of the parser ([`ReadAhead`]).

use std::io::{self, BufRead, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use crate::trace::input::read_full;

/// `Read::read` of a [`BufRead`] whose `fill_buf` does the work.
pub(super) fn read_buffered(r: &mut impl BufRead, out: &mut [u8]) -> io::Result<usize> {
    let buf = r.fill_buf()?;
    let n = buf.len().min(out.len());
    out[..n].copy_from_slice(&buf[..n]);
    r.consume(n);
    Ok(n)
}

/// Bytes per chunk a [`ReadAhead`] hands over.
pub(super) const AHEAD_CHUNK: usize = 256 << 10;
/// Chunks read ahead of the parser (and so the memory it holds: 1 MiB).
pub(super) const AHEAD_CHUNKS: usize = 4;

/// A source read on a thread of its own, up to [`AHEAD_CHUNKS`] chunks ahead: the same
/// bytes, and the same errors, in the same order as reading it here. The thread opens the
/// source itself (so nothing it reads from need be `Send`), and stops at the end of the input,
/// at its first error, or when this reader is dropped.
pub(super) struct ReadAhead {
    chunks: Receiver<io::Result<Chunk>>,
    /// Read chunks' buffers going back to the thread, to be filled again.
    spent: SyncSender<Vec<u8>>,
    cur: Chunk,
    at: usize,
    done: bool,
}

/// A buffer of [`AHEAD_CHUNK`] initialised bytes, the first `len` of them read.
///
/// Buffers keep their length on their way back to the thread, so each is zeroed once, when
/// it is made: reading into a `Vec`'s spare capacity instead (`read_to_end`) has every
/// `Read` that does not implement `read_buf` (the decompressors) zero the spare bytes before
/// each read, 5% of an xz trace's decompression thread.
struct Chunk {
    buf: Vec<u8>,
    len: usize,
}

impl ReadAhead {
    pub(super) fn spawn(
        open: impl FnOnce() -> io::Result<Box<dyn BufRead>> + Send + 'static,
    ) -> io::Result<ReadAhead> {
        let (tx, chunks) = sync_channel::<io::Result<Chunk>>(AHEAD_CHUNKS);
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
                    let mut buf = back.try_recv().unwrap_or_else(|_| vec![0; AHEAD_CHUNK]);
                    let (len, err) = read_full(&mut src, &mut buf);
                    // A closed channel: the reader is gone, nobody wants the rest.
                    if len > 0 && tx.send(Ok(Chunk { buf, len })).is_err() {
                        return;
                    }
                    match err {
                        Some(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                        None if len < AHEAD_CHUNK => return,
                        None => {}
                    }
                }
            })?;
        Ok(ReadAhead {
            chunks,
            spent,
            cur: Chunk {
                buf: Vec::new(),
                len: 0,
            },
            at: 0,
            done: false,
        })
    }
}

impl BufRead for ReadAhead {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.at == self.cur.len && !self.done {
            match self.chunks.recv() {
                Ok(Ok(chunk)) => {
                    let old = std::mem::replace(&mut self.cur, chunk);
                    if !old.buf.is_empty() {
                        let _ = self.spent.try_send(old.buf);
                    }
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
        Ok(&self.cur.buf[self.at..self.cur.len])
    }

    fn consume(&mut self, n: usize) {
        self.at = (self.at + n).min(self.cur.len);
    }
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        read_buffered(self, out)
    }
}
