//! [`allocator_api2::alloc::Allocator`] for [`PageArena`]: each allocation is one block, the
//! smallest order whose `page_size << order` bytes cover both the layout's size and its
//! alignment (a block of order `n` is aligned to its size, A1), so any layout up to the
//! largest block is served, page-aligned ones without waste. Blocks are `Unmovable`: the
//! collections that own them pin them.
//!
//! The order is a pure function of `max(size, align)` rounded up to a power of two of pages,
//! and every size between the requested one and the returned block length maps to the same
//! order, so `deallocate` with any layout that "fits" the allocation (as the trait allows)
//! frees exactly the block allocated. Zero-sized layouts get a dangling, aligned pointer and
//! no block.

use core::alloc::Layout;
use core::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator};

use super::PageArena;
use crate::request::AllocRequest;
use crate::types::{MigrateType, Order};

impl PageArena {
    /// The order [`Allocator::allocate`] uses for `layout`, or `None` when the layout needs
    /// more than the largest block (or is zero-sized: no block at all).
    pub fn order_for(&self, layout: Layout) -> Option<Order> {
        if layout.size() == 0 {
            return None;
        }
        let pages = layout.size().max(layout.align()).div_ceil(self.page_size());
        let order = pages.checked_next_power_of_two()?.trailing_zeros();
        u8::try_from(order)
            .ok()
            .and_then(Order::new)
            .filter(|&o| o <= self.max_order())
    }
}

/// A non-null pointer aligned to `align`, for zero-sized allocations.
fn dangling(layout: Layout) -> NonNull<[u8]> {
    // `align` is a non-zero power of two; the address `align`, without provenance, is what
    // `NonNull::dangling` gives a type of that alignment (`dangling::<u8>` is address 1).
    let p = NonNull::<u8>::dangling()
        .as_ptr()
        .wrapping_add(layout.align() - 1);
    NonNull::slice_from_raw_parts(NonNull::new(p).unwrap_or(NonNull::dangling()), 0)
}

// SAFETY: `allocate` returns blocks the zone handed to this allocation alone, valid (inside
// the mapped region) until `deallocate` returns them or the arena is dropped, which the
// borrow of the arena (`&PageArena: Allocator`) rules out while allocations live. Each block
// is at least `layout.size()` bytes and aligned to `layout.align()` (block size >= align, and
// blocks are aligned to their size). `deallocate` frees exactly the block `allocate` chose
// (see the module docs), so memory is never freed twice or while another allocation uses it.
unsafe impl Allocator for PageArena {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if layout.size() == 0 {
            return Ok(dangling(layout));
        }
        let order = self.order_for(layout).ok_or(AllocError)?;
        let p = self
            .alloc_ptr(order, AllocRequest::new(MigrateType::Unmovable), false)
            .map_err(|_| AllocError)?;
        Ok(NonNull::slice_from_raw_parts(p, self.block_bytes(order)))
    }

    fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if layout.size() == 0 {
            return Ok(dangling(layout));
        }
        let order = self.order_for(layout).ok_or(AllocError)?;
        let p = self
            .alloc_ptr(order, AllocRequest::new(MigrateType::Unmovable), true)
            .map_err(|_| AllocError)?;
        Ok(NonNull::slice_from_raw_parts(p, self.block_bytes(order)))
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        let Some(order) = self.order_for(layout) else {
            return; // zero-sized: nothing was allocated
        };
        // The caller guarantees `ptr` came from `allocate` with a layout of this order, so
        // the free succeeds; a broken caller gets its block left allocated, not corrupted.
        let r = self.free_owned(ptr, order, None);
        debug_assert!(r.is_ok(), "deallocate of a block not allocated here: {r:?}");
    }
}
