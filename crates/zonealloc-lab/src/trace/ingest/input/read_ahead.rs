//! A source read on a thread of its own, a few chunks ahead of the parser ([`ReadAhead`]).

use std::io::{self, BufRead, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

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
    chunks: Receiver<io::Result<Vec<u8>>>,
    /// Read chunks going back to the thread, to be filled again.
    spent: SyncSender<Vec<u8>>,
    cur: Vec<u8>,
    at: usize,
    done: bool,
}

impl ReadAhead {
    pub(super) fn spawn(
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
