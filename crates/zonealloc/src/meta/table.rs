//! [`FrameTable`]: the side table of one zone, one [`FrameMeta`] per frame of its span rounded
//! out to pageblocks, over heap, mapped or caller storage.

use super::deferred::Pending;
use super::state::{
    FrameMeta, FrameState, KIND_ABSENT, KIND_PCP, KIND_SHIFT, KIND_TAIL, MT_BITS, MT_SHIFT,
};
use crate::error::ConfigError;
use crate::sync::{init_slice, Ordering, StaticSlice};
use crate::types::{MigrateType, Order, Pfn};

/// The side table for a zone: one [`FrameMeta`] per frame from `base` (the zone start rounded
/// down to a pageblock boundary) to the zone end rounded up to one.
pub(crate) struct FrameTable {
    pub(super) storage: StaticSlice<FrameMeta>,
    pub(super) base: u64,
    pub(super) len: u32,
    /// Clears the low bits of an index to its pageblock's first frame.
    pub(super) block_mask: u32,
    /// The pageblocks whose entries are still a fresh heap table's zero bytes.
    pub(super) pending: Pending,
}

/// Gives `entries` back (see [`FrameTable::borrowed`]).
fn release(entries: &[FrameMeta]) {
    for m in entries {
        // Release: the next zone over these entries sees this one's last writes.
        m.claim.store(0, Ordering::Release);
    }
}

impl Drop for FrameTable {
    fn drop(&mut self) {
        // A heap table was never claimed, and is about to be freed.
        if self.storage.is_borrowed() {
            release(self.storage.get());
        }
    }
}

impl core::fmt::Debug for FrameTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FrameTable")
            .field("base", &Pfn(self.base))
            .field("len", &self.len)
            .finish()
    }
}

impl FrameTable {
    /// Entries needed to cover `start..end` (`start < end`) with pageblocks of
    /// `pageblock_order`, or [`ConfigError::SpanOverflow`] when the span ends so close to 2^64
    /// that a block of the largest order any zone may have ([`crate::MAX_ORDER_LIMIT`])
    /// containing its last frame would pass 2^64. Refusing those spans here keeps every later
    /// frame sum of the zone (`pfn + (1 << order)` for `order <= max_order`, the table's top)
    /// below 2^64; it costs the last 2^20 frames of the 64-bit frame space, which no machine
    /// has.
    pub(crate) fn geometry(start: Pfn, end: Pfn, pageblock_order: u8) -> Result<u64, ConfigError> {
        let overflow = ConfigError::SpanOverflow { start, end };
        end.checked_align_up(Order::LIMIT).ok_or(overflow)?;
        let pb = Order::new(pageblock_order).ok_or(overflow)?;
        // Cannot fail: a pageblock is at most a largest block, and that one fits.
        let top = end.checked_align_up(pb).ok_or(overflow)?;
        let base = start.0 & !((1u64 << pageblock_order) - 1);
        Ok(top.0.saturating_sub(base))
    }

    /// Entries needed to cover `start..end` with pageblocks of `pageblock_order`; `u64::MAX`
    /// (more than any table can hold) when [`FrameTable::geometry`] refuses the span.
    pub(crate) fn entries_needed(start: Pfn, end: Pfn, pageblock_order: u8) -> u64 {
        Self::geometry(start, end, pageblock_order).unwrap_or(u64::MAX)
    }

    /// A table allocated on the heap, none of it written: every pageblock [`Pending`] until
    /// memory is added to it. `None` when the heap cannot hold the table: a span the caller
    /// sized from untrusted input (a C config, a trace) gets an error, not an abort.
    #[cfg(feature = "std")]
    pub(crate) fn allocate(start: Pfn, pageblock_order: Order, len: u32) -> Option<FrameTable> {
        let pageblock_order = pageblock_order.get();
        let base = start.0 & !((1u64 << pageblock_order) - 1);
        // Zero bytes, every pageblock pending (settled as memory is added); loom's atomics
        // are written whole.
        #[cfg(not(loom))]
        let (storage, pending) = (
            StaticSlice::zeroed_heap(len as usize)?,
            Pending::all(len.div_ceil(1 << pageblock_order))?,
        );
        #[cfg(loom)]
        let (storage, pending) = (
            StaticSlice::new_heap(len as usize, FrameMeta::boot)?,
            Pending::none(),
        );
        Some(FrameTable {
            storage,
            base,
            len,
            block_mask: !((1u32 << pageblock_order) - 1),
            pending,
        })
    }

    /// A table over caller-provided storage, claimed and reset to the initial state; `None`
    /// (and nothing changed) if another live table holds one of its entries, whose index it
    /// returns.
    pub(crate) fn borrowed(
        start: Pfn,
        pageblock_order: Order,
        len: u32,
        table: &'static [FrameMeta],
    ) -> Result<FrameTable, usize> {
        let pageblock_order = pageblock_order.get();
        let base = start.0 & !((1u64 << pageblock_order) - 1);
        let table = &table[..len as usize];
        for (i, m) in table.iter().enumerate() {
            // Acquire: the previous zone's last writes to the entry (its drop released it).
            if m.claim
                .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                release(&table[..i]);
                return Err(i);
            }
            m.reset();
        }
        Ok(FrameTable {
            storage: StaticSlice::borrowed(table),
            base,
            len,
            block_mask: !((1u32 << pageblock_order) - 1),
            pending: Pending::none(),
        })
    }

    /// A table over uninitialised caller memory (boot memory, or a `StaticStorage`), which it
    /// initialises: the table owns it from now on (`&'static mut`), so no other zone can.
    pub(crate) fn from_uninit(
        start: Pfn,
        pageblock_order: Order,
        len: u32,
        table: &'static mut [core::mem::MaybeUninit<FrameMeta>],
    ) -> FrameTable {
        let pageblock_order = pageblock_order.get();
        let base = start.0 & !((1u64 << pageblock_order) - 1);
        let table: &'static [FrameMeta] = init_slice(&mut table[..len as usize], FrameMeta::boot);
        FrameTable {
            storage: StaticSlice::borrowed(table),
            base,
            len,
            block_mask: !((1u32 << pageblock_order) - 1),
            pending: Pending::none(),
        }
    }

    /// The entries, for paths that index them several times: a local slice keeps its bounds
    /// in a register, where each `at` reloads them after every atomic store.
    #[inline(always)]
    pub(crate) fn entries(&self) -> &[FrameMeta] {
        self.storage.get()
    }

    /// The table's first frame.
    #[inline(always)]
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    #[inline]
    fn at(&self, idx: u32) -> &FrameMeta {
        &self.storage.get()[idx as usize]
    }

    /// Number of entries.
    #[inline]
    pub(crate) fn len(&self) -> u32 {
        self.len
    }

    /// Bytes of metadata per frame.
    pub(crate) const fn bytes_per_frame() -> usize {
        core::mem::size_of::<FrameMeta>()
    }

    /// Index of `pfn`, if the table covers it.
    #[inline]
    pub(crate) fn index_of(&self, pfn: Pfn) -> Option<u32> {
        let off = pfn.0.wrapping_sub(self.base);
        if off < self.len as u64 {
            Some(off as u32)
        } else {
            None
        }
    }

    /// Frame number of index `idx`.
    #[inline]
    pub(crate) fn pfn_of(&self, idx: u32) -> Pfn {
        Pfn(self.base + idx as u64)
    }

    #[inline]
    pub(crate) fn state(&self, idx: u32) -> FrameState {
        FrameState::decode(self.at(idx).state.load(Ordering::Relaxed))
    }

    /// Whether `idx` is the head of a free buddy block of exactly `order` (`PageBuddy` and
    /// `buddy_order == order`), comparing the raw state word less the list's migratetype.
    #[inline]
    pub(crate) fn is_buddy(&self, idx: u32, order: Order) -> bool {
        self.at(idx).state.load(Ordering::Relaxed) & !MT_BITS == FrameState::Buddy(order).encode()
    }

    /// Makes `idx` the head of a free block of `order` on `list`'s free list. The list is kept
    /// in the bits `Allocated` keeps its migratetype in ([`FrameState::decode`] ignores them
    /// for `Buddy`), because under 6.1's rules a free block can sit on a list other than its
    /// pageblock's type (`move_freepages_block` without a claim, a drain with the type cached
    /// at free), and Linux's `list_del` needs no type to unlink it.
    #[inline]
    pub(crate) fn set_buddy(&self, idx: u32, order: Order, list: MigrateType) {
        let v = FrameState::Buddy(order).encode() | ((list as u16) << MT_SHIFT);
        self.at(idx).state.store(v, Ordering::Relaxed);
    }

    /// The free list a `Buddy` head is on ([`FrameTable::set_buddy`]).
    #[inline]
    pub(crate) fn buddy_list(&self, idx: u32) -> MigrateType {
        let v = self.at(idx).state.load(Ordering::Relaxed);
        MigrateType::from_index(((v & MT_BITS) >> MT_SHIFT) as usize)
            .unwrap_or(MigrateType::Movable)
    }

    /// Makes `idx` the head of a block of `order` on a per-CPU list, with `cached` as the
    /// migratetype 6.1 caches in the page (`set_pcppage_migratetype`). Stored plus one, so that
    /// a block the PCP hit path freed (which stores a plain `Pcp`) reads as not cached.
    #[inline]
    pub(crate) fn set_pcp_cached(&self, idx: u32, order: Order, cached: MigrateType) {
        let v = FrameState::Pcp(order).encode() | ((cached as u16 + 1) << MT_SHIFT);
        self.at(idx).state.store(v, Ordering::Relaxed);
    }

    /// The migratetype cached in a `Pcp` head by [`FrameTable::set_pcp_cached`], if any.
    #[inline]
    pub(crate) fn pcp_cached(&self, idx: u32) -> Option<MigrateType> {
        let v = (self.at(idx).state.load(Ordering::Relaxed) & MT_BITS) >> MT_SHIFT;
        (v as usize)
            .checked_sub(1)
            .and_then(MigrateType::from_index)
    }

    #[inline]
    pub(crate) fn set_state(&self, idx: u32, s: FrameState) {
        self.at(idx).state.store(s.encode(), Ordering::Relaxed);
    }

    /// The fast path of a free: if the frame is the head of an allocated block of `order`,
    /// atomically make it `to` and return `true`. Anything else (including losing a race to
    /// another free) returns `false` and changes nothing; the caller then classifies.
    #[inline]
    pub(crate) fn try_claim_allocated(&self, idx: u32, order: Order, to: FrameState) -> bool {
        self.at(idx).try_claim_allocated(order, to)
    }

    /// Atomically moves an allocated head from `Allocated(order, mt)` to `to`. Fails (returning
    /// the state found) if the frame is in any other state, for example because another thread
    /// freed it first. The caller owns the block afterwards.
    #[inline]
    pub(crate) fn claim_allocated(
        &self,
        idx: u32,
        order: Order,
        mt: MigrateType,
        to: FrameState,
    ) -> Result<(), FrameState> {
        self.at(idx)
            .state
            .compare_exchange(
                FrameState::Allocated(order, mt).encode(),
                to.encode(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .map(|_| ())
            .map_err(FrameState::decode)
    }

    #[inline]
    pub(crate) fn next(&self, idx: u32) -> u32 {
        self.at(idx).next.load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn prev(&self, idx: u32) -> u32 {
        self.at(idx).prev.load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn set_next(&self, idx: u32, v: u32) {
        self.at(idx).next.store(v, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn set_prev(&self, idx: u32, v: u32) {
        self.at(idx).prev.store(v, Ordering::Relaxed);
    }

    /// The entries of `range`, clamped to the table.
    #[inline]
    fn slice(&self, range: core::ops::Range<u32>) -> &[FrameMeta] {
        let e = self.entries();
        let end = (range.end as usize).min(e.len());
        &e[(range.start as usize).min(end)..end]
    }

    /// The first index in `range` whose frame reads as anything but `s`'s kind
    /// ([`FrameTable::state`]'s reading, `s`'s order ignored), found by one walk of the slice:
    /// the boot hand-over and `check()` test whole blocks of frames this way instead of one
    /// `state` call per frame (`memmap_init_range` and `__free_pages_core` walk `struct page`s
    /// the same way, as an array).
    pub(crate) fn first_not_of_kind(
        &self,
        range: core::ops::Range<u32>,
        s: FrameState,
    ) -> Option<u32> {
        let exact = s.encode();
        let want = exact >> KIND_SHIFT & 0x7;
        // `decode` reads kinds 5..=7 as `Absent`.
        let kind = |v: u16| match v >> KIND_SHIFT & 0x7 {
            k @ KIND_TAIL..=KIND_PCP => k,
            _ => KIND_ABSENT,
        };
        // The usual word is `s`'s own encoding (`set_state` writes no other bits for a tail
        // or a hole): one compare, the kind read only for any other word.
        self.slice(range.clone())
            .iter()
            .position(|m| {
                let v = m.state.load(Ordering::Relaxed);
                v != exact && kind(v) != want
            })
            .map(|i| range.start + i as u32)
    }

    /// Sets every frame of `range` to `s` (`memmap_init_range` writing a range of `struct
    /// page`s), one walk of the slice.
    pub(crate) fn set_states(&self, range: core::ops::Range<u32>, s: FrameState) {
        let v = s.encode();
        for m in self.slice(range) {
            m.state.store(v, Ordering::Relaxed);
        }
    }
    /// The first index whose copy of its pageblock's migratetype differs from the pageblock's
    /// first frame's (as [`FrameTable::block_type`] reads them), one walk of each settled
    /// pageblock's slice (a pending one's copies are all zero bytes).
    pub(crate) fn first_block_copy_differing(&self) -> Option<u32> {
        let n = (!self.block_mask) as usize + 1;
        let read = |raw: u8| MigrateType::from_index(raw as usize).unwrap_or(MigrateType::Movable);
        for (b, block) in self.entries().chunks(n).enumerate() {
            if self.pending.is(b as u32) {
                continue;
            }
            let first = block[0].block.load(Ordering::Relaxed);
            let want = read(first);
            // The same byte is the same type; any other byte is read as `block_type` reads it.
            if let Some(i) = block.iter().position(|m| {
                let raw = m.block.load(Ordering::Relaxed);
                raw != first && read(raw) != want
            }) {
                return Some((b * n + i) as u32);
            }
        }
        None
    }

    /// Sets one frame's copy of its pageblock's type, leaving the others: a corruption
    /// `check()` must catch (Z9).
    #[cfg(all(test, feature = "std"))]
    pub(crate) fn set_block_copy_for_test(&self, idx: u32, mt: MigrateType) {
        self.at(idx).block.store(mt as u8, Ordering::Relaxed);
    }

    /// The migratetype stored for the pageblock of frame `block_head_idx` (any of its frames
    /// will do: each carries it), as `get_pfnblock_migratetype` returns it.
    #[inline]
    pub(crate) fn block_type(&self, block_head_idx: u32) -> MigrateType {
        let raw = self.at(block_head_idx).block.load(Ordering::Relaxed);
        MigrateType::from_index(raw as usize).unwrap_or(MigrateType::Movable)
    }

    /// Sets the migratetype of the pageblock containing `idx` (`set_pageblock_migratetype`) in
    /// the `block` byte of every frame of the pageblock, so that a free reads its pageblock's
    /// type from the frame's own entry, one cache line fewer than the pageblock head's. A
    /// pageblock changes type rarely, and the callers (claiming a block, reserving or releasing
    /// a HighAtomic block) walk its frames anyway.
    pub(crate) fn set_block_type(&self, idx: u32, mt: MigrateType) {
        let start = (idx & self.block_mask) as usize;
        let n = (!self.block_mask) as usize + 1;
        // The table covers whole pageblocks, so the range is inside it.
        for m in &self.storage.get()[start..start + n] {
            m.block.store(mt as u8, Ordering::Relaxed);
        }
    }
}
