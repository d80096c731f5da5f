//! Deferred initialisation: the pageblocks of a heap table that are still the zero bytes they
//! were allocated with, settled a pageblock at a time as memory is added (Linux's
//! `deferred_init_memmap`).

use super::state::FrameState;
use super::table::FrameTable;
// The pending bitmap's words: the zone lock orders every access (see `Pending`), so they are
// `core`'s atomics even under loom.
use crate::sync::LockedU32 as PendingWord;
use crate::sync::{Ordering, StaticSlice};
use crate::types::MigrateType;

/// The pageblocks of a heap table whose entries are still the all-zero bytes it was allocated
/// with ([`super::state::FrameMeta::new`]: absent, unlinked, but a pageblock byte of 0, `Unmovable`), not
/// yet the boot entry (a `Movable` pageblock). Linux defers `struct page` initialisation the
/// same way (`deferred_init_memmap`; memory hotplug's `memmap_init_range` at online time), so
/// that a zone spanning memory it has not been given costs no time to set up: memory is
/// settled, a pageblock at a time, as it is added ([`FrameTable::settle`]).
///
/// A pending entry reads as absent, unlinked, and in a pageblock whose copies of its type all
/// agree, which is what every path that may meet one (a buddy search, `check()`) wants; only
/// its pageblock's type differs from a settled entry's, and that is read only for frames of
/// settled pageblocks (a frame in use or free), except by [`FrameTable::settled_block_type`]
/// (the `/proc` counts and `pageblock_migratetype`, which may ask of any frame). One bit per
/// pageblock, set while pending. Written only under the zone lock (`add_free_range`), read
/// under it too.
pub(super) struct Pending {
    words: StaticSlice<PendingWord>,
}

impl Pending {
    /// No pageblock pending: a table initialised whole.
    pub(super) fn none() -> Pending {
        Pending {
            words: StaticSlice::borrowed(&[]),
        }
    }

    /// All `blocks` pageblocks pending; `None` where the memory cannot be had.
    #[cfg(all(feature = "std", not(loom)))]
    pub(super) fn all(blocks: u32) -> Option<Pending> {
        let n = blocks.div_ceil(32) as usize;
        let mut v = std::vec::Vec::new();
        v.try_reserve_exact(n).ok()?;
        v.extend((0..n).map(|w| {
            let left = blocks - 32 * w as u32;
            PendingWord::new(if left >= 32 { !0 } else { (1 << left) - 1 })
        }));
        Some(Pending {
            words: StaticSlice::from_box(v.into_boxed_slice()),
        })
    }

    #[inline]
    pub(super) fn word(&self, w: usize) -> u32 {
        self.words
            .get()
            .get(w)
            .map_or(0, |x| x.load(Ordering::Relaxed))
    }

    /// Whether pageblock `b` is pending.
    #[inline]
    pub(super) fn is(&self, b: u32) -> bool {
        self.word(b as usize / 32) & (1 << (b % 32)) != 0
    }

    /// Marks pageblock `b` settled.
    pub(super) fn clear(&self, b: u32) {
        if let Some(x) = self.words.get().get(b as usize / 32) {
            x.fetch_and(!(1 << (b % 32)), Ordering::Relaxed);
        }
    }

    /// The first pageblock from `b` on that is pending (`want`) or settled (`!want`), if any
    /// below `end`.
    pub(super) fn next(&self, mut b: u32, end: u32, want: bool) -> Option<u32> {
        while b < end {
            let w = self.word(b as usize / 32);
            let w = if want { w } else { !w } >> (b % 32);
            if w != 0 {
                let found = b + w.trailing_zeros();
                return (found < end).then_some(found);
            }
            b = (b / 32 + 1) * 32;
        }
        None
    }
}

impl FrameTable {
    /// Frames per pageblock, as a shift.
    fn block_shift(&self) -> u32 {
        (!self.block_mask).count_ones()
    }

    /// Gives every pending pageblock that `range` touches its boot entries: a `Movable`
    /// pageblock of absent, unlinked frames (`memmap_init_range`, which memory hotplug runs on
    /// the range it onlines, and `deferred_init_memmap`). Call it under the zone lock before
    /// the range's frames change. A table initialised whole has nothing to settle.
    pub(crate) fn settle(&self, range: core::ops::Range<u32>) {
        if range.is_empty() {
            return;
        }
        let shift = self.block_shift();
        let (first, end) = (range.start >> shift, ((range.end - 1) >> shift) + 1);
        let mut b = first;
        while let Some(p) = self.pending.next(b, end, true) {
            // Zero bytes already make the entry absent and unlinked.
            self.set_block_type(p << shift, MigrateType::Movable);
            self.pending.clear(p);
            b = p + 1;
        }
    }

    /// The migratetype of the pageblock containing `idx` as [`FrameTable::block_type`] reads
    /// it, a pending pageblock's being its boot type (`Movable`): for readers that may ask of
    /// a frame memory was never added to (the `/proc` block counts, `pageblock_migratetype`).
    pub(crate) fn settled_block_type(&self, idx: u32) -> MigrateType {
        let head = idx & self.block_mask;
        if self.pending.is(head >> self.block_shift()) {
            return MigrateType::Movable;
        }
        self.block_type(head)
    }

    /// The first index in `range` whose frame is not absent ([`FrameTable::first_not_of_kind`]
    /// of `Absent`), pending pageblocks (absent throughout) skipped unread: `check()` over a
    /// zone with memory added to a corner of its span reads only that corner.
    pub(crate) fn first_present(&self, range: core::ops::Range<u32>) -> Option<u32> {
        let shift = self.block_shift();
        let blocks = self.len.div_ceil(1 << shift);
        let mut i = range.start;
        while i < range.end {
            // The run of settled pageblocks from `i`'s on.
            let b = self.pending.next(i >> shift, blocks, false)?;
            let from = i.max(b << shift);
            let to = self
                .pending
                .next(b, blocks, true)
                .map_or(range.end, |p| (p << shift).min(range.end));
            if from >= to {
                return None;
            }
            if let Some(x) = self.first_not_of_kind(from..to, FrameState::Absent) {
                return Some(x);
            }
            i = to;
        }
        None
    }
}
