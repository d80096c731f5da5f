//! A plain-text file read where it lies ([`Mapped`]).

use std::io::{self, BufRead, Read};
use std::path::Path;
use std::sync::Arc;

use super::read_ahead::read_buffered;

/// Files smaller than this are read, not mapped (a mapping's set-up is not worth it).
pub(super) const MAP_MIN_BYTES: u64 = 1 << 20;
/// Bytes read from a [`Mapped`] file between two releases of the pages behind them (a power
/// of two, a multiple of the page size).
pub(super) const MAP_RELEASE_BYTES: usize = 4 << 20;
/// The most a [`Mapped`] file hands over at once, so that the parser consumes (and the pages
/// are released) as it goes.
pub(super) const MAP_SLICE_BYTES: usize = 1 << 20;

/// A plain-text regular file, mapped: the parser reads the page cache where it lies, with no
/// read thread and no copy out of the kernel (`read` copied every byte, on a core the parse and
/// the replay need: 12 to 17% of the whole command's wall time on the real traces,
/// BENCHMARKS.md). The pages read are unmapped every [`MAP_RELEASE_BYTES`], so the resident
/// set stays bounded whatever the file's size. Compressed files, FIFOs, standard input and
/// small files are read on a [`ReadAhead`](super::read_ahead::ReadAhead) thread as before.
///
/// A file truncated by another process while it is replayed ends the replay with `SIGBUS`
/// (as for every reader of a mapped file); `cat trace | zonealloc trace replay -` reads it
/// without a mapping.
pub(super) struct Mapped {
    pub(super) map: Arc<memmap2::Mmap>,
    /// Bytes handed out.
    pub(super) at: usize,
    /// Bytes whose pages were released.
    pub(super) released: usize,
}

impl Mapped {
    /// The file at `path` mapped, or `None` where it is not a regular plain-text file of
    /// [`MAP_MIN_BYTES`] or more, or cannot be mapped (the caller reads it then, and reports
    /// any error as reading does).
    pub(super) fn open(path: &Path) -> Option<Mapped> {
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
