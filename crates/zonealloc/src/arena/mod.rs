//! Real memory: [`PageArena`] maps a region and serves its pages from a [`Zone`] over it.
//!
//! # Mechanism
//! The zone never touches memory; it hands out frame numbers. An arena gives those numbers
//! memory behind them, the way the kernel's linear map does (`page_address`, `virt_to_pfn`):
//! it maps one region, aligned to the arena's largest block (`2^max_order` pages), and builds
//! a zone whose frames are the region's pages, numbered by virtual address
//! (`pfn = address / page_size`). Because the region is aligned to the largest block, a block
//! the buddy allocator hands out at an order-`n` aligned pfn is also `page_size << n` aligned
//! in memory, and a pointer converts to its pfn with one shift and back with another.
//!
//! An allocation is a zone allocation (per-CPU lists first, then the buddy allocator, exactly
//! as for frame numbers) followed by the arena's options: the poison check, then zeroing. A
//! free validates the pointer (null, outside the arena, not at a page start: typed errors),
//! then asks the zone whether the page is the head of an allocated block of that order; only
//! then does it poison the block, and hands it back to the zone, which does the rest of the
//! checks (double free, tail page, wrong order) and the merge. A refused free writes nothing.
//!
//! Three ways to hold memory:
//! - [`PageArena::alloc`] returns a [`PageBlock`]: an owning handle, freed on drop, with safe
//!   `as_slice`/`as_mut_slice`;
//! - [`PageArena::alloc_raw`] / [`PageArena::free_raw`]: pointers, for C and for memory whose
//!   lifetime no Rust value tracks;
//! - the [`allocator_api2::alloc::Allocator`] implementation: `allocator_api2` collections
//!   (`Vec::new_in(&arena)`) in arena pages, one block per allocation.
//!
//! ```
//! use zonealloc::arena::{ArenaConfig, PageArena};
//! use zonealloc::{MigrateType, Order};
//!
//! let arena = PageArena::new(ArenaConfig::with_pages(4096).poisoned_on_free()).unwrap();
//! let mut block = arena.alloc(Order::of::<2>(), MigrateType::Movable).unwrap();
//! block.as_mut_slice().fill(7); // 16 KiB, aligned to 16 KiB; freed (and poisoned) on drop
//! let mut v = allocator_api2::vec::Vec::new_in(&arena); // collections in arena pages
//! v.push(1u64);
//! # drop(v);
//! # drop(block);
//! # arena.check().unwrap();
//! ```
//!
//! Options ([`ArenaConfig`]): transparent huge pages (`madvise(MADV_HUGEPAGE)`), explicit
//! huge pages (`MAP_HUGETLB`, from the pool `vm.nr_hugepages` reserves), `MAP_POPULATE`,
//! zeroing on allocation (`init_on_alloc`), and page poisoning with a write-after-free check
//! (`CONFIG_PAGE_POISONING`, see [`PoisonReport`]).
//!
//! # Locking
//! The arena adds no lock to the allocation path: the zone's locks (per-CPU, then zone) are
//! the only ones, and they are what makes a block's memory change hands safely between
//! threads. Poison marks are per-page atomic bits written only by the page's owner (see
//! `poison`). The region is immutable once mapped.
//!
//! # Invariants
//! - A1: the region is `pages * page_size` bytes at `base`, aligned to
//!   `page_size << max_order`; frame `pfn` is at `pfn * page_size`.
//! - A2: the zone spans exactly the region's frames, all managed, or with
//!   [`PageArena::with_memory_map`] exactly the map's usable frames (the rest are holes).
//! - A3: memory of a block is touched by the arena only while the block is allocated to the
//!   caller of the operation in progress (poisoning on free happens after the zone confirmed
//!   the block is allocated with that order and before it is returned to the zone).
//! - A4: [`PageArena::check`] is the zone's `check` (Z1..Z8, P1..P3, G1) plus A2.
//! - A5: an allocated block has one owner: a [`PageBlock`], an `allocator_api2` allocation
//!   or the caller of [`PageArena::alloc_raw`]. Safe code frees only through those owners:
//!   [`PageArena::zone`] is an [`ArenaZone`], which cannot allocate, free or make per-CPU
//!   handles.

mod allocator;
mod block;
mod config;
mod error;
mod poison;
mod region;
mod view;

use core::fmt;
use core::ptr::NonNull;
use std::vec::Vec;

pub use block::PageBlock;
pub use config::{ArenaConfig, Backing, HugePages};
pub use error::{ArenaError, ArenaFreeError};
pub use poison::{PoisonReport, PAGE_POISON};
pub use view::ArenaZone;

use crate::buddy::CheckFacts;
use crate::check::CheckError;
use crate::error::{AllocError, FreeError};
use crate::meta::FrameState;
use crate::request::AllocRequest;
use crate::types::{CpuId, MigrateType, Order, Pfn, ZoneType};
use crate::zone::Zone;
use poison::Poison;
use region::Region;

/// A zone over real memory: an aligned region of pages, handed out as [`PageBlock`]s, raw
/// pointers or `allocator_api2` allocations. `Send + Sync`: every method takes `&self`.
///
/// Dropping the arena unmaps the region. [`PageBlock`]s and allocator users borrow the arena,
/// so they cannot outlive it; raw blocks ([`PageArena::alloc_raw`]) still outstanding then
/// dangle.
///
/// ```
/// use zonealloc::arena::{ArenaConfig, PageArena};
/// use zonealloc::{MigrateType, Order};
///
/// let arena = PageArena::new(ArenaConfig::with_pages(1024)).unwrap();
/// let mut block = arena.alloc(Order::of::<2>(), MigrateType::Movable).unwrap();
/// block.as_mut_slice().fill(7);
/// assert_eq!(block.len(), 4 * arena.page_size());
/// assert_eq!(block.as_ptr() as usize % block.len(), 0); // aligned to its size
/// drop(block); // freed
/// arena.check().unwrap();
/// ```
pub struct PageArena {
    zone: Zone,
    region: Region,
    /// The pfn of the region's first page (`base / page_size`).
    base_pfn: u64,
    /// `log2(page_size)`.
    page_shift: u32,
    /// Pages handed to the zone: all of them, or the usable frames of a memory map.
    managed_pages: u64,
    zero_on_alloc: bool,
    poison: Option<Poison>,
    huge_pages: HugePages,
}

impl PageArena {
    /// Maps the region and builds the zone over it, every page free.
    pub fn new(cfg: ArenaConfig) -> Result<PageArena, ArenaError> {
        Self::build(cfg, None)
    }

    /// Like [`PageArena::new`], with the pages laid out by a firmware-style memory map whose
    /// addresses are offsets from the region's start (the arena's "physical" addresses): only
    /// the usable frames, minus the reserved ranges, are handed to the zone; the rest are holes
    /// the zone never hands out (`free` of one is [`FreeError::NotManaged`]). The region is
    /// at least `cfg.pages` pages and covers every usable region.
    ///
    /// ```
    /// use zonealloc::arena::{ArenaConfig, PageArena};
    /// use zonealloc::MemoryRegion;
    ///
    /// let map = [
    ///     MemoryRegion::usable(0, 8 << 20),
    ///     MemoryRegion::reserved(1 << 20, 1 << 20), // a "kernel image"
    /// ];
    /// let arena = PageArena::with_memory_map(ArenaConfig::with_pages(0), &map).unwrap();
    /// assert_eq!(arena.pages(), 2048);
    /// assert_eq!(arena.zone().managed_pages(), 2048 - 256);
    /// ```
    pub fn with_memory_map(
        cfg: ArenaConfig,
        map: &[crate::memmap::MemoryRegion],
    ) -> Result<PageArena, ArenaError> {
        Self::build(cfg, Some(map))
    }

    fn build(
        mut cfg: ArenaConfig,
        map: Option<&[crate::memmap::MemoryRegion]>,
    ) -> Result<PageArena, ArenaError> {
        cfg.zone.validate()?;
        if let Some(map) = map {
            let mut last = 0u64;
            crate::memmap::usable_frames(map, cfg.zone.page_size, |_, end| last = last.max(end.0));
            cfg.pages = cfg.pages.max(last);
        }
        let system = region::system_page_size() as u64;
        let page_size = cfg.zone.page_size;
        if page_size < system {
            return Err(ArenaError::PageSizeBelowSystem {
                page_size,
                system_page_size: system,
            });
        }
        if cfg.pages == 0 {
            return Err(ArenaError::Empty);
        }
        let block_pages = 1u64 << cfg.zone.max_order;
        let too_large = ArenaError::TooLarge {
            bytes: cfg.pages.saturating_mul(page_size),
        };
        let pages = cfg
            .pages
            .checked_next_multiple_of(block_pages)
            .filter(|&p| p < u64::from(u32::MAX))
            .ok_or(too_large)?;
        let len = pages
            .checked_mul(page_size)
            .and_then(|b| usize::try_from(b).ok())
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or(too_large)?;
        let align = usize::try_from(page_size << cfg.zone.max_order).map_err(|_| too_large)?;
        let region = Region::new(len, align, cfg.backing, cfg.huge_pages, cfg.populate)?;
        let page_shift = page_size.trailing_zeros();
        let base_pfn = region.base().as_ptr() as u64 >> page_shift;
        let start = Pfn(base_pfn);
        let end = Pfn(base_pfn + pages);
        let zone = Zone::new(ZoneType::Normal, start, end, cfg.zone)?;
        let range_err = |e| ArenaError::Config(crate::ConfigError::Range(e));
        let mut managed = 0;
        match map {
            None => managed = zone.add_free_range(start, end).map_err(range_err)?,
            Some(map) => {
                let mut result = Ok(());
                crate::memmap::usable_frames(map, cfg.zone.page_size, |s, e| {
                    if result.is_ok() {
                        match zone.add_free_range(start.add(s.0), start.add(e.0)) {
                            Ok(n) => managed += n,
                            Err(err) => result = Err(range_err(err)),
                        }
                    }
                });
                result?;
            }
        }
        Ok(PageArena {
            managed_pages: managed,
            zone,
            poison: cfg.poison_on_free.then(|| Poison::new(pages as usize)),
            region,
            base_pfn,
            page_shift,
            zero_on_alloc: cfg.zero_on_alloc,
            huge_pages: cfg.huge_pages,
        })
    }

    /// Allocates a block of `2^order` pages, owned by the returned handle.
    pub fn alloc(&self, order: Order, mt: MigrateType) -> Result<PageBlock<'_>, AllocError> {
        let ptr = self.alloc_ptr(order, AllocRequest::new(mt), false)?;
        Ok(PageBlock {
            arena: self,
            ptr,
            order,
        })
    }

    /// Like [`PageArena::alloc`], with the block zeroed (`__GFP_ZERO`).
    pub fn alloc_zeroed(&self, order: Order, mt: MigrateType) -> Result<PageBlock<'_>, AllocError> {
        let ptr = self.alloc_ptr(order, AllocRequest::new(mt), true)?;
        Ok(PageBlock {
            arena: self,
            ptr,
            order,
        })
    }

    /// Allocates a block of `2^order` pages and returns its address, aligned to the block's
    /// size. Free it with [`PageArena::free_raw`] and the same order.
    pub fn alloc_raw(&self, order: Order, mt: MigrateType) -> Result<NonNull<u8>, AllocError> {
        self.alloc_ptr(order, AllocRequest::new(mt), false)
    }

    /// Like [`PageArena::alloc_raw`], from the per-CPU lists of `cpu` rather than the
    /// caller's CPU (as [`AllocRequest::on_cpu`] does for a zone): for programs that pin
    /// threads to CPU slots themselves. Free it with [`PageArena::free_raw`] or
    /// [`PageArena::free_raw_on`].
    pub fn alloc_raw_on(
        &self,
        cpu: CpuId,
        order: Order,
        mt: MigrateType,
    ) -> Result<NonNull<u8>, AllocError> {
        self.alloc_ptr(order, AllocRequest::new(mt).on_cpu(cpu), false)
    }

    /// Frees a block allocated with [`PageArena::alloc_raw`] (or given up by
    /// [`PageBlock::into_raw`]). Checks that `ptr` is not null, is inside the arena, is at a
    /// page start, and is the head of an allocated block of exactly `order`; otherwise returns
    /// the typed error and changes nothing.
    ///
    /// # Safety
    /// The checks catch every pointer that does not name an allocated block. What they cannot
    /// see is *who* owns a block that is allocated: the caller must own the block at `ptr`
    /// (it is not the block of a live [`PageBlock`] or of a live `allocator_api2`
    /// allocation), and must not use its memory after this call.
    pub unsafe fn free_raw(&self, ptr: *mut u8, order: Order) -> Result<(), ArenaFreeError> {
        self.pfn_of(ptr)?;
        // `pfn_of` rejected null.
        let ptr = NonNull::new(ptr).ok_or(ArenaFreeError::Null)?;
        Ok(self.free_owned(ptr, order, None)?)
    }

    /// Like [`PageArena::free_raw`], onto the per-CPU lists of `cpu` rather than the
    /// caller's CPU (as [`Zone::free_on`] does for a zone).
    ///
    /// # Safety
    /// As for [`PageArena::free_raw`]: the caller owns the block at `ptr` and does not use its
    /// memory after this call.
    pub unsafe fn free_raw_on(
        &self,
        cpu: CpuId,
        ptr: *mut u8,
        order: Order,
    ) -> Result<(), ArenaFreeError> {
        self.pfn_of(ptr)?;
        // `pfn_of` rejected null.
        let ptr = NonNull::new(ptr).ok_or(ArenaFreeError::Null)?;
        Ok(self.free_owned(ptr, order, Some(cpu))?)
    }

    /// The frame number of the page at `ptr` (`virt_to_pfn`), if `ptr` is a page start inside
    /// the arena.
    pub fn pfn_of(&self, ptr: *const u8) -> Result<Pfn, ArenaFreeError> {
        let addr = ptr as usize;
        if ptr.is_null() {
            return Err(ArenaFreeError::Null);
        }
        if !self.contains(ptr) {
            return Err(ArenaFreeError::Foreign { addr });
        }
        if addr & (self.page_size() - 1) != 0 {
            return Err(ArenaFreeError::Misaligned {
                addr,
                page_size: self.page_size(),
            });
        }
        Ok(Pfn((addr >> self.page_shift) as u64))
    }

    /// The address of frame `pfn` (`page_address`), if it is one of the arena's.
    pub fn ptr_of(&self, pfn: Pfn) -> Option<NonNull<u8>> {
        let i = pfn.0.checked_sub(self.base_pfn)?;
        (i < self.pages()).then(|| self.ptr_in_arena(pfn))
    }

    /// Whether `ptr` points into the region.
    pub fn contains(&self, ptr: *const u8) -> bool {
        let base = self.region.base().as_ptr() as usize;
        let a = ptr as usize;
        a >= base && a - base < self.region.len()
    }

    /// The zone serving the pages, as a read-only [`ArenaZone`]: statistics, `/proc` text,
    /// the check, drains and ticks. Pages are allocated and freed through the arena only, so
    /// that no safe program can free a block a [`PageBlock`] owns (see [`ArenaZone`]).
    pub fn zone(&self) -> ArenaZone<'_> {
        ArenaZone::new(&self.zone)
    }

    /// Checks the zone's invariants (Z1..Z8, P1..P3, G1) and that it manages exactly the
    /// arena's pages, or a memory map's usable ones (A2).
    pub fn check(&self) -> Result<CheckFacts, CheckError> {
        let facts = self.zone.check()?;
        if self.zone.managed_pages() != self.managed_pages {
            return Err(crate::check::check_fail(
                "A2",
                None,
                "the zone does not manage exactly the arena's usable pages",
            ));
        }
        Ok(facts)
    }

    /// Start of the region.
    pub fn base(&self) -> NonNull<u8> {
        self.region.base()
    }

    /// Size of the region in bytes.
    pub fn size_bytes(&self) -> usize {
        self.region.len()
    }

    /// Pages in the arena.
    pub fn pages(&self) -> u64 {
        (self.region.len() >> self.page_shift) as u64
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> usize {
        1 << self.page_shift
    }

    /// The largest order the arena hands out.
    pub fn max_order(&self) -> Order {
        self.zone.max_order()
    }

    /// Bytes in a block of `order`.
    #[inline]
    pub fn block_bytes(&self, order: Order) -> usize {
        self.page_size() << order.get()
    }

    /// The huge page backing asked for.
    pub fn huge_pages(&self) -> HugePages {
        self.huge_pages
    }

    /// Takes the write-after-free reports recorded since the last call (always empty unless
    /// [`ArenaConfig::poison_on_free`]).
    pub fn take_poison_reports(&self) -> Vec<PoisonReport> {
        self.poison
            .as_ref()
            .map_or_else(Vec::new, Poison::take_reports)
    }

    /// Write-after-free reports made since the arena was created.
    pub fn poison_reports_total(&self) -> u64 {
        self.poison.as_ref().map_or(0, Poison::count)
    }

    /// Index of `pfn` in the arena (a pfn of the arena).
    #[inline]
    fn index(&self, pfn: Pfn) -> usize {
        (pfn.0 - self.base_pfn) as usize
    }

    /// The address of a pfn known to be the arena's.
    #[inline]
    fn ptr_in_arena(&self, pfn: Pfn) -> NonNull<u8> {
        let off = self.index(pfn) << self.page_shift;
        // SAFETY: `pfn` is one of the arena's frames, so `off < len` and the result stays
        // inside the region (A1), hence non-null.
        unsafe { self.region.base().add(off) }
    }

    /// The pfn of a page address known to be inside the arena.
    #[inline]
    pub(crate) fn pfn_of_in_arena(&self, ptr: NonNull<u8>) -> Pfn {
        Pfn((ptr.as_ptr() as usize >> self.page_shift) as u64)
    }

    /// Zone allocation, then the poison check and zeroing.
    #[inline]
    fn alloc_ptr(
        &self,
        order: Order,
        req: AllocRequest,
        zero: bool,
    ) -> Result<NonNull<u8>, AllocError> {
        let pfn = self.zone.alloc_with(order, req)?;
        let ptr = self.ptr_in_arena(pfn);
        let len = self.block_bytes(order);
        if let Some(p) = &self.poison {
            // SAFETY: the zone just handed this block to us alone; it lies inside the region.
            let block = unsafe { core::slice::from_raw_parts(ptr.as_ptr(), len) };
            p.check(self.index(pfn), block, self.base_pfn, self.page_size());
        }
        if zero || self.zero_on_alloc {
            // SAFETY: as above: `len` bytes inside the region, owned by this allocation.
            unsafe { ptr.as_ptr().write_bytes(0, len) };
        }
        Ok(ptr)
    }

    /// Frees the block at `ptr`, a page start inside the arena that the caller owns, or says
    /// why not (writing nothing, A3).
    pub(crate) fn free_owned(
        &self,
        ptr: NonNull<u8>,
        order: Order,
        cpu: Option<CpuId>,
    ) -> Result<(), FreeError> {
        let pfn = self.pfn_of_in_arena(ptr);
        if let Some(p) = &self.poison {
            // Poison only a block the zone confirms is allocated with this order; otherwise
            // the zone's free below refuses it and says why.
            if let Some(FrameState::Allocated(o, _)) = self.zone.frame_state(pfn) {
                if o == order {
                    let len = self.block_bytes(order);
                    // SAFETY: the head of an allocated block of `order`, owned by the caller
                    // (handle ownership, or `free_raw`'s contract): `len` bytes in the region
                    // that no one else may touch.
                    let block = unsafe { core::slice::from_raw_parts_mut(ptr.as_ptr(), len) };
                    p.poison(self.index(pfn), block, self.page_size());
                }
            }
        }
        match cpu {
            Some(cpu) => self.zone.free_on(cpu, pfn, order),
            None => self.zone.free(pfn, order),
        }
    }
}

impl fmt::Debug for PageArena {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageArena")
            .field("base", &self.region.base())
            .field("pages", &self.pages())
            .field("page_size", &self.page_size())
            .field("max_order", &self.max_order())
            .field("huge_pages", &self.huge_pages)
            .field("zero_on_alloc", &self.zero_on_alloc)
            .field("poison_on_free", &self.poison.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests;
