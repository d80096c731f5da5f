//! The state encoding of a frame (kind, order, migratetype in 16 bits) and [`FrameMeta`], the
//! 12-byte entry of the side table (see the [module](super) documentation for its layout).

use crate::sync::{AtomicU16, AtomicU32, AtomicU8, Ordering};
use crate::types::{MigrateType, Order};

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

pub(super) const KIND_SHIFT: u16 = 5;
pub(super) const MT_SHIFT: u16 = 8;
/// The migratetype bits of a state word (`Allocated`'s type, a `Buddy` head's list, a `Pcp`
/// head's cached type).
pub(super) const MT_BITS: u16 = 0x7 << MT_SHIFT;
pub(super) const ORDER_MASK: u16 = 0x1f;
pub(super) const KIND_ABSENT: u16 = 0;
pub(super) const KIND_TAIL: u16 = 1;
pub(super) const KIND_BUDDY: u16 = 2;
pub(super) const KIND_ALLOCATED: u16 = 3;
pub(super) const KIND_PCP: u16 = 4;

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
    pub(super) next: AtomicU32,
    pub(super) prev: AtomicU32,
    pub(super) state: AtomicU16,
    pub(super) block: AtomicU8,
    /// 1 while a zone's table holds this entry (see the module documentation).
    pub(super) claim: AtomicU8,
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

    pub(super) fn reset(&self) {
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
