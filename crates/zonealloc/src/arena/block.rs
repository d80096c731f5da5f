//! [`PageBlock`]: an owning handle to one allocated block of an arena, freed on drop.

use core::fmt;
use core::ptr::NonNull;

use super::PageArena;
use crate::types::{Order, Pfn};

/// One allocated block of `2^order` pages of a [`PageArena`], owned by this handle: no one
/// else can reach its memory until the handle is dropped, which frees it (poisoning it first
/// if the arena poisons). `Send`, so a block may be freed on another thread than the one that
/// allocated it; the arena's per-CPU lists take it on the freeing thread's CPU, as the kernel
/// does.
pub struct PageBlock<'a> {
    pub(super) arena: &'a PageArena,
    pub(super) ptr: NonNull<u8>,
    pub(super) order: Order,
}

// SAFETY: the handle owns its block exclusively (the zone hands a block to one owner only),
// like a `Box<[u8]>`; the arena it borrows is `Sync`. Moving it to another thread and dropping
// it there frees the block through the thread-safe zone.
unsafe impl Send for PageBlock<'_> {}
// SAFETY: `&PageBlock` gives only `&[u8]` and plain values.
unsafe impl Sync for PageBlock<'_> {}

impl<'a> PageBlock<'a> {
    /// Address of the first byte; aligned to the block's size.
    #[inline]
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Address of the first byte, non-null.
    #[inline]
    pub fn as_non_null(&self) -> NonNull<u8> {
        self.ptr
    }

    /// The block's order.
    #[inline]
    pub fn order(&self) -> Order {
        self.order
    }

    /// The frame number of its first page (address / page size).
    #[inline]
    pub fn pfn(&self) -> Pfn {
        self.arena.pfn_of_in_arena(self.ptr)
    }

    /// Size in bytes (`page_size << order`).
    #[inline]
    pub fn len(&self) -> usize {
        self.arena.block_bytes(self.order)
    }

    /// Always false: a block has at least one page.
    #[inline]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The arena it came from.
    #[inline]
    pub fn arena(&self) -> &'a PageArena {
        self.arena
    }

    /// The block's bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr..ptr + len` lies inside the arena's mapping (alive for `'a`), is
        // initialised (mapped memory reads as bytes) and is owned by this handle, so nothing
        // writes it while the shared borrow of `self` lives.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len()) }
    }

    /// The block's bytes, writable.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and the exclusive borrow of the owning handle makes this
        // the only reference to the block.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len()) }
    }

    /// Gives up ownership without freeing: the block becomes a raw block, to be freed with
    /// [`PageArena::free_raw`] and this order.
    #[inline]
    pub fn into_raw(self) -> NonNull<u8> {
        let p = self.ptr;
        core::mem::forget(self);
        p
    }
}

impl Drop for PageBlock<'_> {
    fn drop(&mut self) {
        // A handle always holds the head of an allocated block of its order, so the free
        // cannot fail; were it to, the block would stay allocated (leaked), never corrupted.
        let r = self.arena.free_owned(self.ptr, self.order, None);
        debug_assert!(r.is_ok(), "PageBlock free failed: {r:?}");
    }
}

impl fmt::Debug for PageBlock<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageBlock")
            .field("ptr", &self.ptr)
            .field("pfn", &self.pfn())
            .field("order", &self.order)
            .finish()
    }
}
