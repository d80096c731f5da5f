//! `--whole-file`: each CPU's count at the file's start, zoneinfo's rolled back from its read.
//!
//! `capture-kmem` reads the before-snapshot's zoneinfo last, after the pfn layout's `od`s,
//! which take a minute or more (6.12-4g p_prodcons: the trace starts at 12.589 s, zoneinfo's
//! `cat` reads at 122.4 s): the counts it prints are those of its read, not of the file's
//! start. The walk ([`super::Walk`]) keeps each CPU's `delta`, the pages the events put on the
//! CPU's lists since the walk's start, classified as the replay's kernel side classifies them;
//! at the event of the read ([`ReadPoint`]) it notes every CPU's, and the count at the start is
//! zoneinfo's less that delta (`count(start) = count(read) - delta(start..read)`).
//!
//! The rolled-back count is then held in the bounds the walk finds, as zoneinfo's is for any
//! start count (a pin's exact value wins), with `high` between the kernel's own `high_min`
//! and `high_max`: one fixed `high` before 6.7, 7.2's printed ones, and on 6.7 to 6.14,
//! which print the current `high` only, the ones `zone_set_pageset_high_and_batch` ->
//! `zone_highsize` sets (`super::high`). 6.12-8g p_idle: Normal's CPU 1 rolls back to
//! 2881, but `awk-894`'s free at 1023.530 s drains it, so the count reached `high`, at least
//! `high_min` (3307, the low watermark over 4 CPUs): 3278 to 3304 at the start. Left at 2881
//! (as 6.7 to 6.14 were, their `high` once taken as fixed at zoneinfo's), its Unmovable list
//! ran out 2.5 s before the kernel's and its drain came 4.7 s late. Measured on every
//! capture (`scripts/fidelity-table`, whole-file columns): the 6.12 rows' summed error falls
//! (whole file, refill / drain events: 68.6 / 91.3 -> 57.7 / 73.1; to the after-snapshot
//! 41.9 / 59.4 -> 23.8 / 44.2), but 6.12-4g p_idle and p_pressure get worse (whole-file
//! drains 6.4 -> 10.9% and 6.0 -> 10.4%); 6.1 and 7.2 are as before.
//!
//! A free the walk has not committed yet at the read (it commits a free at the CPU's next
//! event, or at its batch's `mm_page_free_batched`) is in the delta: the kernel commits a
//! single free as it prints it, and a batch's within the same call.
//!
//! The read point is the reader's last allocation, but zoneinfo printed before it, with
//! pages off the reader's list: `cat` copies the file through `splice` (6.5 and later:
//! `copy_splice_read`, fs/splice.c), which takes the internal pipe's free slots
//! (`PIPE_DEF_BUFFERS`, 16 pages) with `alloc_pages_bulk` (untraced), has `seq_read_iter`
//! print into them, then gives the unused ones back (`release_pages`: `mm_page_free` and
//! `mm_page_free_batched`, re-frees of pages the trace last had on that list); the used ones
//! come back when the pipe is written out. 6.12-4g p_idle's `cat-910`, CPU 1: the release of
//! 14 pages at 538.607248, two page-cache allocations, the pipe's two pages freed at
//! 538.607494, two empty reads (16 pages out and back each), then the read point, its exit's
//! `GFP_NOWAIT` page at 538.607920: the count there is 14 - 2 + 2 - 1 = 13 above zoneinfo's,
//! and every 6.12 reader's CPU rolled back 13 pages short of its bounds (5 captures). So the
//! count at the read is the walk's just before the reader's first re-free less the 16 pages
//! (`Walk::note_print`); a reader with no re-free (6.1, which splices page by page with
//! traced allocations) is read at its last allocation.

use super::Walk;
use crate::trace::parse::{Event, EventKind};
use crate::trace::replay::infer::kernel::Inferred;

/// The pages `copy_splice_read` takes for a read into the empty internal pipe of
/// `splice_direct_to_actor`: its `max_usage`, `PIPE_DEF_BUFFERS` (include/linux/pipe_fs_i.h).
const SPLICE_BULK_PAGES: i64 = 16;

impl Walk {
    /// With a read point, notes each CPU's delta where the reader printed: at the reader's
    /// first free (`mm_page_free`) of a page `alloc_pages_bulk` took (a free the kernel side
    /// infers an untraced allocation from), before it, less the bulk's pages on the list it
    /// took them from.
    pub(super) fn note_print(&mut self, ev: &Event<'_>, zone: usize, inferred: Inferred) {
        if self.at_read.is_some() || self.at_print.is_some() {
            return;
        }
        let (Some(at), Inferred::UntracedAlloc { cpu: by, .. }, EventKind::Free { .. }) =
            (self.roll_at, inferred, &ev.kind)
        else {
            return;
        };
        if ev.who.pid() != Some(at.pid) {
            return;
        }
        let mut d = self.deltas_now();
        let i = zone * self.cpus as usize + (by % self.cpus) as usize;
        if let Some(v) = d.get_mut(i) {
            *v -= SPLICE_BULK_PAGES;
        }
        self.at_print = Some(d);
        for c in self.per.iter_mut().flatten() {
            c.reach.printed();
        }
    }
}

impl Walk {
    /// Each CPU's delta (as [`Walk::finish`] indexes them) from zoneinfo's print
    /// (`Walk::note_print`) to the last event fed; `None` where the walk did not pass a
    /// print (a reader without re-frees: its read point is an estimate).
    pub fn since_print(&self) -> Option<Vec<i64>> {
        if !self.printed {
            return None;
        }
        let at = self.at_read.as_ref()?;
        Some(
            self.deltas_now()
                .iter()
                .zip(at)
                .map(|(n, a)| n - a)
                .collect(),
        )
    }
}

impl Walk {
    /// Per CPU (as [`Walk::since_print`] indexes them): whether a refill run or a
    /// `free_high` drain since zoneinfo's print may have moved `high` from the value printed,
    /// which the window walk's reachable values start from (`reach.rs`); `None` without a
    /// print.
    pub fn high_moved_since_print(&self) -> Option<Vec<bool>> {
        if !self.printed {
            return None;
        }
        Some(
            self.per
                .iter()
                .map(|c| {
                    c.as_ref()
                        .is_some_and(|c| c.reach.moved_since_print() != Some(false))
                })
                .collect(),
        )
    }
}

/// The event at which a `/proc` file was read: its reader's last allocation
/// (`replay::snapshot_reads`), as the parse gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadPoint {
    /// The reader's pid.
    pub pid: u32,
    /// The allocation's timestamp (ns).
    pub ts_ns: u64,
    /// Its pfn.
    pub pfn: u64,
}

impl ReadPoint {
    /// The read point of the allocation `ev`, if it names its task and time.
    pub fn of(ev: &Event<'_>) -> Option<ReadPoint> {
        let EventKind::Alloc { pfn, .. } = ev.kind else {
            return None;
        };
        Some(ReadPoint {
            pid: ev.who.pid()?,
            ts_ns: ev.ts_ns?,
            pfn,
        })
    }

    /// Whether `ev` is the read's event.
    pub fn is(&self, ev: &Event<'_>) -> bool {
        ReadPoint::of(ev) == Some(*self)
    }
}
