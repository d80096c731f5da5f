//! What the walk keeps of the line before: the runs of its bytes it read ([`Segment`]) and
//! what it read from them ([`Seen`]), so that a line that repeats them skips their walk.

use super::super::line::Name;
use super::super::{PagePtr, Who};

/// The most bytes a [`Segment`] keeps: ftrace's columns up to a timestamp's point take 36
/// to 45 bytes, an event's name and `page=` field up to its `pfn=0x` 40 to 57.
const SEGMENT_BYTES: usize = 64;

/// A run of a line's bytes the walk has read, kept to be compared with the next line's.
#[derive(Clone, Copy)]
pub(super) struct Segment {
    bytes: [u8; SEGMENT_BYTES],
    /// How many of `bytes` (0: none yet).
    len: usize,
}

impl Segment {
    const NONE: Segment = Segment {
        bytes: [0; SEGMENT_BYTES],
        len: 0,
    };

    /// Where `s` goes on after the same bytes at `at`, if it has them there.
    #[inline(always)]
    pub(super) fn after(&self, s: &[u8], at: usize) -> Option<usize> {
        let end = at + self.len;
        (self.len != 0 && s.get(at..end) == self.bytes.get(..self.len)).then_some(end)
    }

    /// Keeps `s[from..to]` (nothing where it is longer than a segment holds).
    #[inline(always)]
    pub(super) fn keep(&mut self, s: &[u8], from: usize, to: usize) {
        let n = to.saturating_sub(from);
        match (s.get(from..to), self.bytes.get_mut(..n)) {
            (Some(from), Some(into)) => {
                into.copy_from_slice(from);
                self.len = n;
            }
            _ => self.len = 0,
        }
    }
}

/// Two runs of the last line [`super::parse_after`] walked, and what the walk read from them: the
/// opening, from the line's start to its timestamp's point (`comm-pid [cpu] flags SSS.`),
/// and the middle, from the timestamp's end to the pfn's digits (` mm_page_free:
/// page=(____ptrval____) pfn=0x`). The walk's steps over each read no byte outside it (each
/// stops at a byte inside: a separator, the `]`, the point, the end of a literal), so a line
/// with the same bytes there has the same CPU, seconds, event and page, and its walk skips
/// them; in a kernel's trace nine lines in ten have the opening and the middle of the line
/// before.
#[derive(Clone, Copy)]
pub(in crate::trace::parse) struct Seen {
    pub(super) opening: Segment,
    pub(super) cpu: u32,
    pub(super) secs: u64,
    /// The task and latency column the opening shows.
    pub(super) who: Who,
    pub(super) middle: Segment,
    pub(super) name: Name,
    pub(super) page: PagePtr,
}

impl std::fmt::Debug for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seen")
            .field("cpu", &self.cpu)
            .field("secs", &self.secs)
            .finish_non_exhaustive()
    }
}

impl Default for Seen {
    fn default() -> Seen {
        Seen {
            opening: Segment::NONE,
            cpu: 0,
            secs: 0,
            who: Who::UNKNOWN,
            middle: Segment::NONE,
            name: Name::Free,
            page: PagePtr::Present,
        }
    }
}
