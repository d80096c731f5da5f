//! The per-frame metadata side table: zonealloc's `struct page`.
//!
//! Linux keeps 64 bytes of `struct page` per frame inside the memory it manages. zonealloc keeps
//! 12 bytes per frame in a separate table, so a zone can manage memory it cannot touch (device
//! memory, disk blocks, another process's pages):
//!
//! | field   | bytes | Linux equivalent |
//! |---------|-------|------------------|
//! | `next`  | 4     | `page->buddy_list.next` / `page->pcp_list.next` (as a frame index) |
//! | `prev`  | 4     | `.prev` |
//! | `state` | 2     | `PageBuddy` + `page_private` (order), plus allocation state, a free block's list and 6.1's cached type (`page->index`) |
//! | `block` | 1     | the pageblock bitmap entry, repeated in every frame of the pageblock |
//! | `claim` | 1     | (no Linux equivalent) the entry belongs to a live zone's table |
//!
//! `claim` lives in what was padding, so an entry is still 12 bytes. A table the caller
//! provides (`&'static [FrameMeta]`) can be handed to two zones; each zone claims every entry
//! it uses when it is built and releases them when dropped, so the second zone over an entry
//! in use is an error ([`ConfigError::TableInUse`](crate::ConfigError::TableInUse)) instead of
//! two allocators handing out the same frames.
//!
//! # The all-zero entry
//! [`FrameMeta::new`] is all zero bytes, so a static table goes to `.bss`, not into the
//! image: absent (`state` 0), unlinked (the links of a frame on no list mean nothing and the
//! next push overwrites them). Its `block` byte, 0, is `MIGRATE_UNMOVABLE`; the entries a
//! zone takes become a `MIGRATE_MOVABLE` pageblock, the type `memmap_init` gives every
//! pageblock (`init_pageblock_migratetype`): a table over caller storage in the pass that
//! makes them absent and unlinked, a heap table (zero bytes, never written) a pageblock at a
//! time as memory is added to it (`Pending`, Linux's deferred `struct page` init). The
//! `block` byte keeps the migratetype's own number: an encoding with `Movable` at 0 (so that
//! the zero entry would need no initialising) was measured at two instructions more per PCP
//! hit pair, for the permutation on the free path.
//!
//! Free lists link frames by index (`u32`, relative to the table's base frame), never by
//! pointer, so the buddy and per-CPU code need no `unsafe`.
//!
//! # Locking
//! A frame's fields are guarded by the lock of the list the frame is on (zone lock for the
//! buddy free lists and pageblock types, a PCP lock for a per-CPU list) or by its owner while
//! allocated. Code under the zone lock may *read* the state of a frame that sits on a PCP list
//! (to learn that it is not a free buddy), so every field is an atomic accessed with
//! `Relaxed` ordering: plain loads and stores on x86, ordered by the locks around them.
//! The one read-modify-write is the state transition on free ([`FrameTable::claim_allocated`]),
//! which makes two racing frees of one block detect each other.

use crate::error::ConfigError;
use crate::sync::{init_slice, AtomicU16, AtomicU32, AtomicU8, Ordering, StaticSlice};
use crate::types::{MigrateType, Order, Pfn};
// The pending bitmap's words: the zone lock orders every access (see `Pending`), so they are
// plain atomics even under loom.
use core::sync::atomic::AtomicU32 as PendingWord;

/// The "no frame" link value.
pub(crate) const NIL: u32 = u32::MAX;

/// What a frame currently is. Only the first frame of a block (its head) carries the block's
/// order; the other frames of a block are [`FrameState::Tail`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FrameState {
    /// Never handed to the allocator: a hole, a reserved range, or the padding the table has
    /// to align pageblocks.
    Absent,
    /// Inside a block whose head is another frame.
    Tail,
    /// Head of a free block on a buddy free list (`PageBuddy`).
    Buddy(Order),
    /// Head of an allocated block; remembers the requested migratetype (the stand-in for
    /// Linux's `PageLRU` test when a fallback counts movable pages in a pageblock).
    Allocated(Order, MigrateType),
    /// Head of a block on a per-CPU list.
    Pcp(Order),
}

const KIND_SHIFT: u16 = 5;
const MT_SHIFT: u16 = 8;
/// The migratetype bits of a state word (`Allocated`'s type, a `Buddy` head's list, a `Pcp`
/// head's cached type).
const MT_BITS: u16 = 0x7 << MT_SHIFT;
const ORDER_MASK: u16 = 0x1f;
const KIND_ABSENT: u16 = 0;
const KIND_TAIL: u16 = 1;
const KIND_BUDDY: u16 = 2;
const KIND_ALLOCATED: u16 = 3;
const KIND_PCP: u16 = 4;

impl FrameState {
    #[inline(always)]
    pub(crate) const fn encode(self) -> u16 {
        match self {
            FrameState::Absent => KIND_ABSENT << KIND_SHIFT,
            FrameState::Tail => KIND_TAIL << KIND_SHIFT,
            FrameState::Buddy(o) => (KIND_BUDDY << KIND_SHIFT) | o.get() as u16,
            FrameState::Allocated(o, mt) => {
                ((mt as u16) << MT_SHIFT) + ((KIND_ALLOCATED << KIND_SHIFT) | o.get() as u16)
            }
            FrameState::Pcp(o) => (KIND_PCP << KIND_SHIFT) | o.get() as u16,
        }
    }

    #[inline]
    pub(crate) fn decode(v: u16) -> FrameState {
        let order = Order::from_raw((v & ORDER_MASK) as u8);
        match (v >> KIND_SHIFT) & 0x7 {
            KIND_TAIL => FrameState::Tail,
            KIND_BUDDY => FrameState::Buddy(order),
            KIND_ALLOCATED => FrameState::Allocated(
                order,
                MigrateType::from_index(((v >> MT_SHIFT) & 0x7) as usize)
                    .unwrap_or(MigrateType::Unmovable),
            ),
            KIND_PCP => FrameState::Pcp(order),
            _ => FrameState::Absent,
        }
    }
}

/// An entry: absent and unlinked, in a pageblock of type `$block` (one expression for the
/// `const` and the loom constructors).
macro_rules! meta_of_block {
    ($block:expr) => {
        FrameMeta {
            next: AtomicU32::new(0),
            prev: AtomicU32::new(0),
            state: AtomicU16::new(FrameState::Absent.encode()),
            block: AtomicU8::new($block as u8),
            claim: AtomicU8::new(0),
        }
    };
}

/// Metadata of one frame. See the module documentation for the layout.
#[derive(Debug)]
pub struct FrameMeta {
    next: AtomicU32,
    prev: AtomicU32,
    state: AtomicU16,
    block: AtomicU8,
    /// 1 while a zone's table holds this entry (see the module documentation).
    claim: AtomicU8,
}

impl FrameMeta {
    /// An entry of all zero bytes, for building a static table under `no_std`:
    /// `static TABLE: [FrameMeta; N] = [const { FrameMeta::new() }; N];` goes to `.bss`. The
    /// zone built over it initialises every entry (absent, unlinked, in a movable pageblock).
    #[cfg(not(loom))]
    pub const fn new() -> FrameMeta {
        meta_of_block!(MigrateType::Unmovable)
    }

    /// An entry of all zero bytes (loom's atomics have no `const` constructors).
    #[cfg(loom)]
    pub fn new() -> FrameMeta {
        meta_of_block!(MigrateType::Unmovable)
    }

    /// The entry as a zone takes it: absent, unlinked, in a movable pageblock.
    pub(crate) fn boot() -> FrameMeta {
        meta_of_block!(MigrateType::Movable)
    }

    #[inline(always)]
    pub(crate) fn next(&self) -> u32 {
        self.next.load(Ordering::Relaxed)
    }

    #[inline(always)]
    pub(crate) fn set_next(&self, v: u32) {
        self.next.store(v, Ordering::Relaxed);
    }

    #[inline(always)]
    pub(crate) fn set_prev(&self, v: u32) {
        self.prev.store(v, Ordering::Relaxed);
    }

    #[inline(always)]
    pub(crate) fn set_state(&self, s: FrameState) {
        self.state.store(s.encode(), Ordering::Relaxed);
    }

    /// The pageblock migratetype stored here, if it is a PCP type (`get_pfnblock_migratetype`
    /// for the fast free path, which leaves the other types to the full path).
    #[inline(always)]
    pub(crate) fn block_pcp_type(&self) -> Option<MigrateType> {
        match self.block.load(Ordering::Relaxed) {
            0 => Some(MigrateType::Unmovable),
            1 => Some(MigrateType::Movable),
            2 => Some(MigrateType::Reclaimable),
            _ => None,
        }
    }

    /// If this is the head of an allocated block of `order`, atomically make it `to` and
    /// return `true`. Anything else (including losing a race to another free) returns `false`
    /// and changes nothing; the caller then classifies.
    #[inline(always)]
    pub(crate) fn try_claim_allocated(&self, order: Order, to: FrameState) -> bool {
        let cur = self.state.load(Ordering::Relaxed);
        let want = (KIND_ALLOCATED << KIND_SHIFT) | order.get() as u16;
        if cur & !(0x7 << MT_SHIFT) != want {
            return false;
        }
        self.state
            .compare_exchange(cur, to.encode(), Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// [`FrameMeta::try_claim_allocated`] for the free hit path. `guess` is the migratetype
    /// the block was most likely allocated as (its pageblock's): the first compare-and-swap
    /// expects `Allocated(order, guess)`, so that the usual free needs no load and mask
    /// first; when the state differs, the value it found is tested as before and swapped
    /// once more. Succeeds exactly when `try_claim_allocated` would.
    #[inline(always)]
    pub(crate) fn try_claim_allocated_as(
        &self,
        order: Order,
        guess: MigrateType,
        to: FrameState,
    ) -> bool {
        let (r, to) = (Ordering::Relaxed, to.encode());
        let guessed = FrameState::Allocated(order, guess).encode();
        match self.state.compare_exchange(guessed, to, r, r) {
            Ok(_) => true,
            Err(cur) => {
                let want = (KIND_ALLOCATED << KIND_SHIFT) | order.get() as u16;
                cur & !(0x7 << MT_SHIFT) == want
                    && self.state.compare_exchange(cur, to, r, r).is_ok()
            }
        }
    }

    fn reset(&self) {
        self.next.store(0, Ordering::Relaxed);
        self.prev.store(0, Ordering::Relaxed);
        self.state
            .store(FrameState::Absent.encode(), Ordering::Relaxed);
        self.block
            .store(MigrateType::Movable as u8, Ordering::Relaxed);
    }
}

// SAFETY: every field is an atomic integer, for which zero bytes are a valid value (the
// entry `FrameMeta::new` makes), and none needs a drop. (Loom's atomics are no plain memory.)
#[cfg(all(feature = "std", not(loom)))]
#[allow(unsafe_code)]
unsafe impl crate::sync::Zeroable for FrameMeta {}

impl Default for FrameMeta {
    fn default() -> Self {
        FrameMeta::new()
    }
}

/// The side table for a zone: one [`FrameMeta`] per frame from `base` (the zone start rounded
/// down to a pageblock boundary) to the zone end rounded up to one.
pub(crate) struct FrameTable {
    storage: StaticSlice<FrameMeta>,
    base: u64,
    len: u32,
    /// Clears the low bits of an index to its pageblock's first frame.
    block_mask: u32,
    /// The pageblocks whose entries are still a fresh heap table's zero bytes.
    pending: Pending,
}

/// The pageblocks of a heap table whose entries are still the all-zero bytes it was allocated
/// with ([`FrameMeta::new`]: absent, unlinked, but a pageblock byte of 0, `Unmovable`), not
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
struct Pending {
    words: StaticSlice<PendingWord>,
}

impl Pending {
    /// No pageblock pending: a table initialised whole.
    fn none() -> Pending {
        Pending {
            words: StaticSlice::borrowed(&[]),
        }
    }

    /// All `blocks` pageblocks pending; `None` where the memory cannot be had.
    #[cfg(all(feature = "std", not(loom)))]
    fn all(blocks: u32) -> Option<Pending> {
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
    fn word(&self, w: usize) -> u32 {
        self.words
            .get()
            .get(w)
            .map_or(0, |x| x.load(Ordering::Relaxed))
    }

    /// Whether pageblock `b` is pending.
    #[inline]
    fn is(&self, b: u32) -> bool {
        self.word(b as usize / 32) & (1 << (b % 32)) != 0
    }

    /// Marks pageblock `b` settled.
    fn clear(&self, b: u32) {
        if let Some(x) = self.words.get().get(b as usize / 32) {
            x.fetch_and(!(1 << (b % 32)), Ordering::Relaxed);
        }
    }

    /// The first pageblock from `b` on that is pending (`want`) or settled (`!want`), if any
    /// below `end`.
    fn next(&self, mut b: u32, end: u32, want: bool) -> Option<u32> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_encoding_round_trips() {
        let o = Order::of::<7>();
        for s in [
            FrameState::Absent,
            FrameState::Tail,
            FrameState::Buddy(o),
            FrameState::Pcp(o),
            FrameState::Allocated(o, MigrateType::Reclaimable),
            FrameState::Allocated(Order::of::<20>(), MigrateType::Movable),
        ] {
            assert_eq!(FrameState::decode(s.encode()), s);
        }
    }

    /// The guessed claim succeeds exactly where the plain one does, whatever the guess, and
    /// leaves the same state.
    #[cfg(all(feature = "std", not(loom)))]
    #[test]
    fn a_guessed_claim_matches_the_plain_one() {
        let (o, o2) = (Order::of::<0>(), Order::of::<3>());
        let mts = [
            MigrateType::Unmovable,
            MigrateType::Movable,
            MigrateType::Reclaimable,
        ];
        let mut states = std::vec![
            FrameState::Absent,
            FrameState::Tail,
            FrameState::Buddy(o),
            FrameState::Pcp(o),
            FrameState::Allocated(o2, MigrateType::Movable),
        ];
        states.extend(mts.iter().map(|&mt| FrameState::Allocated(o, mt)));
        for s in states {
            for guess in mts {
                let (a, b) = (FrameMeta::new(), FrameMeta::new());
                a.state.store(s.encode(), Ordering::Relaxed);
                b.state.store(s.encode(), Ordering::Relaxed);
                let to = FrameState::Pcp(o);
                assert_eq!(
                    a.try_claim_allocated_as(o, guess, to),
                    b.try_claim_allocated(o, to),
                    "{s:?} guess {guess:?}"
                );
                assert_eq!(
                    a.state.load(Ordering::Relaxed),
                    b.state.load(Ordering::Relaxed)
                );
            }
        }
    }

    #[cfg(not(loom))]
    #[test]
    fn metadata_is_at_most_sixteen_bytes_per_frame() {
        assert!(FrameTable::bytes_per_frame() <= 16);
        assert_eq!(FrameTable::bytes_per_frame(), 12);
    }

    /// Issue 13, item 2: `end + mask` wrapped near 2^64 (a panic in debug, an empty table and
    /// `Ok` in release).
    #[cfg(feature = "std")]
    #[test]
    fn spans_whose_blocks_would_pass_2_pow_64_are_refused() {
        use crate::{ConfigError, Zone, ZoneConfig, ZoneType};
        let top = u64::MAX;
        let near = |k: u64| Pfn(top - k);
        for (start, end) in [
            (Pfn(0), Pfn(top)),
            (near(1000), Pfn(top)),
            (near(1 << 12), near(1 << 11)), // a 2^10 block at the top, below the last pageblock
            (near(1 << 20), near(1 << 19)),
            // The last order-10 block, half of it: `pfn + (1 << 10)` in `add_free_range` wrapped.
            (near(1023), near(511)),
        ] {
            let e = ConfigError::SpanOverflow { start, end };
            assert_eq!(FrameTable::geometry(start, end, 9), Err(e));
            assert_eq!(FrameTable::entries_needed(start, end, 9), u64::MAX);
            let z = Zone::new(ZoneType::Normal, start, end, ZoneConfig::default());
            assert_eq!(z.err(), Some(e), "{start}..{end}");
            assert_eq!(
                Zone::table_entries(start, end, &ZoneConfig::default()),
                u64::MAX
            );
        }
        // The highest span that fits: its last largest block ends exactly at 2^64 - 2^20.
        let end = Pfn(top - (1 << 20) + 1);
        let start = Pfn(end.0 - 1024);
        assert_eq!(FrameTable::geometry(start, end, 9), Ok(1024));
        let z = Zone::new(ZoneType::Normal, start, end, ZoneConfig::default()).unwrap();
        assert_eq!(z.add_free_range(start, end), Ok(1024));
        z.check().unwrap();
    }

    #[cfg(not(loom))]
    #[test]
    fn the_initial_entry_is_all_zero_bytes() {
        static ONE: [FrameMeta; 1] = [FrameMeta::new()];
        let e = &ONE[0];
        assert_eq!(e.next.load(Ordering::Relaxed), 0);
        assert_eq!(e.prev.load(Ordering::Relaxed), 0);
        assert_eq!(e.state.load(Ordering::Relaxed), 0);
        assert_eq!(e.block.load(Ordering::Relaxed), 0);
        // ... and a zone over it reads it as absent, in a movable pageblock.
        let t = FrameTable::borrowed(Pfn(0), Order::ZERO, 1, &ONE).unwrap();
        assert_eq!(t.state(0), FrameState::Absent);
        assert_eq!(t.block_type(0), MigrateType::Movable);
    }

    /// The slice walks read a state word as [`FrameTable::state`] does, for every value the
    /// word can hold (kinds 5 to 7 read as absent; order and migratetype bits ignored).
    #[cfg(all(feature = "std", not(loom)))]
    #[test]
    fn slice_walks_read_states_as_state_does() {
        let t = FrameTable::allocate(Pfn(0), Order::ZERO, 3).unwrap();
        for v in 0..=u16::MAX >> 5 {
            // Every kind and migratetype bit pattern, with orders up to the limit (`state`
            // decodes the order, which must be in range).
            let v = v << 5 | (v % (u16::from(crate::MAX_ORDER_LIMIT) + 1));
            t.entries()[1].state.store(v, Ordering::Relaxed);
            for s in [FrameState::Absent, FrameState::Tail] {
                t.set_state(0, s);
                t.set_state(2, s);
                let differs = t.state(1) != s;
                assert_eq!(
                    t.first_not_of_kind(0..3, s),
                    differs.then_some(1),
                    "{v:#x} {s:?}"
                );
                assert_eq!(
                    t.first_not_of_kind(1..2, s),
                    differs.then_some(1),
                    "{v:#x} {s:?}"
                );
                assert_eq!(t.first_not_of_kind(2..3, s), None);
            }
        }
        t.set_states(0..3, FrameState::Tail);
        assert_eq!(t.first_not_of_kind(0..3, FrameState::Tail), None);
        // A range past the table's end is clamped.
        assert_eq!(t.first_not_of_kind(2..9, FrameState::Absent), Some(2));
    }

    #[test]
    fn entries_needed_rounds_to_pageblocks() {
        assert_eq!(FrameTable::entries_needed(Pfn(1), Pfn(513), 9), 1024);
        assert_eq!(FrameTable::entries_needed(Pfn(0), Pfn(512), 9), 512);
    }
}
