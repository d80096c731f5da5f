//! `buddy_system_allocator` 0.11, the usual buddy crate of Rust kernels, both ways it is
//! used: `LockedFrameAllocator` over frame numbers and `LockedHeap` over memory.

use std::alloc::GlobalAlloc;
use std::alloc::Layout;

use buddy_system_allocator::{LockedFrameAllocator, LockedHeap};

use super::{block_layout, PageSource, PageWorker, Token, PAGE_BYTES};

/// `buddy_system_allocator::LockedFrameAllocator<32>` over the zone's frames.
pub struct BsaFrame {
    alloc: LockedFrameAllocator<32>,
    base: usize,
    pool_pages: usize,
}

impl std::fmt::Debug for BsaFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BsaFrame")
            .field("base", &self.base)
            .field("pool_pages", &self.pool_pages)
            .finish_non_exhaustive()
    }
}

impl BsaFrame {
    /// The frames `pool_pages..2 * pool_pages` (not from frame 0: `add_frame` special-cases
    /// it and would cap the first block at 32 frames).
    pub fn new(pool_pages: u64) -> Result<Self, String> {
        let n = usize::try_from(pool_pages).map_err(|_| format!("{pool_pages} pages"))?;
        let alloc = LockedFrameAllocator::<32>::new();
        alloc.lock().add_frame(n, 2 * n);
        Ok(Self {
            alloc,
            base: n,
            pool_pages: n,
        })
    }
}

/// A thread's view of a [`BsaFrame`].
pub struct BsaFrameWorker<'a>(&'a LockedFrameAllocator<32>);

impl PageWorker for BsaFrameWorker<'_> {
    #[inline]
    fn alloc(&mut self, o: u8) -> Option<Token> {
        self.0.lock().alloc(1 << o)
    }

    #[inline]
    fn free(&mut self, token: Token, o: u8) {
        self.0.lock().dealloc(token, 1 << o);
    }
}

impl PageSource for BsaFrame {
    type Worker<'a> = BsaFrameWorker<'a>;

    fn worker(&self, _thread: usize) -> BsaFrameWorker<'_> {
        BsaFrameWorker(&self.alloc)
    }

    /// `FrameAllocator` keeps its counters private, but a pool that is whole again merges
    /// back into one block: allocating the whole pool must succeed (and then it is freed).
    fn verify_empty(&self) -> Result<(), String> {
        let mut a = self.alloc.lock();
        match a.alloc(self.pool_pages) {
            Some(start) if start == self.base => {
                a.dealloc(start, self.pool_pages);
                Ok(())
            }
            Some(start) => Err(format!("whole pool at frame {start}, not {}", self.base)),
            None => Err("the pool did not merge back into one block: pages leaked".into()),
        }
    }
}

/// `buddy_system_allocator::LockedHeap<32>` managing a region taken from the system
/// allocator (aligned to the region's size, so the heap's blocks are whole buddies).
pub struct BsaHeap {
    heap: LockedHeap<32>,
    region: *mut u8,
    region_layout: Layout,
}

// SAFETY: `region` is owned memory that only the heap (behind its spin mutex) hands out
// and that `Drop` releases once; the raw pointer is what makes the type `!Send`/`!Sync`.
unsafe impl Send for BsaHeap {}
// SAFETY: as above: shared access goes through `LockedHeap`'s mutex only.
unsafe impl Sync for BsaHeap {}

impl std::fmt::Debug for BsaHeap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BsaHeap")
            .field("region_bytes", &self.region_layout.size())
            .finish_non_exhaustive()
    }
}

impl BsaHeap {
    /// A heap of `pool_pages` pages.
    pub fn new(pool_pages: u64) -> Result<Self, String> {
        let bytes = usize::try_from(pool_pages)
            .ok()
            .and_then(|n| n.checked_mul(PAGE_BYTES))
            .ok_or_else(|| format!("{pool_pages} pages do not fit the address space"))?;
        let region_layout = Layout::from_size_align(bytes, bytes)
            .map_err(|e| format!("heap region of {bytes} bytes: {e}"))?;
        if bytes == 0 {
            return Err("a heap of 0 pages".into());
        }
        // SAFETY: the layout's size is not zero.
        let region = unsafe { std::alloc::alloc(region_layout) };
        if region.is_null() {
            return Err(format!("no {bytes}-byte region for the heap"));
        }
        let heap = LockedHeap::<32>::new();
        // SAFETY: `region..region + bytes` is memory we own, unused elsewhere, valid until
        // `Drop` (after the heap is gone from every worker, as they borrow `self`).
        unsafe { heap.lock().init(region as usize, bytes) };
        Ok(Self {
            heap,
            region,
            region_layout,
        })
    }
}

impl Drop for BsaHeap {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once; no worker outlives `self`.
        unsafe { std::alloc::dealloc(self.region, self.region_layout) };
    }
}

/// A thread's view of a [`BsaHeap`].
pub struct BsaHeapWorker<'a>(&'a LockedHeap<32>);

impl PageWorker for BsaHeapWorker<'_> {
    #[inline]
    fn alloc(&mut self, o: u8) -> Option<Token> {
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { GlobalAlloc::alloc(self.0, block_layout(o)) };
        (!p.is_null()).then_some(p as Token)
    }

    #[inline]
    fn free(&mut self, token: Token, o: u8) {
        // SAFETY: `token` came from `alloc` of this heap with the same layout (the runner
        // frees each block once, with its order).
        unsafe { GlobalAlloc::dealloc(self.0, token as *mut u8, block_layout(o)) };
    }
}

impl PageSource for BsaHeap {
    type Worker<'a> = BsaHeapWorker<'a>;

    fn worker(&self, _thread: usize) -> BsaHeapWorker<'_> {
        BsaHeapWorker(&self.heap)
    }

    fn verify_empty(&self) -> Result<(), String> {
        match self.heap.lock().stats_alloc_actual() {
            0 => Ok(()),
            n => Err(format!("{n} bytes still allocated from the heap")),
        }
    }
}
