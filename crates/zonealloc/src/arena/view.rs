//! [`ArenaZone`]: what the arena lets safe code see of its zone.
//!
//! A [`PageBlock`](super::PageBlock) is the only owner of its pages, and the zone cannot tell
//! who owns an allocated frame: it trusts any free of the block's head at the right order. So
//! a safe path to the arena's zone that could free a frame (`Zone::free`, `Zone::free_on`, a
//! `CpuHandle`) would let safe code free a live block, and the next allocation would hand the
//! same memory out a second time: two owners, aliased `&mut [u8]`. The view offers only what
//! moves no frame between owners: counters, text, the invariant check, and the drains and
//! ticks, which move free pages between the per-CPU lists and the buddy allocator.
//!
//! ```compile_fail,E0599
//! use zonealloc::arena::{ArenaConfig, PageArena};
//! use zonealloc::{MigrateType, Order};
//!
//! let arena = PageArena::new(ArenaConfig::with_pages(64)).unwrap();
//! let mut block = arena.alloc(Order::ZERO, MigrateType::Movable).unwrap();
//! let pfn = block.pfn();
//! arena.zone().free(pfn, Order::ZERO).unwrap(); // no `free`: the block has one owner
//! let again = arena.alloc(Order::ZERO, MigrateType::Movable).unwrap();
//! block.as_mut_slice()[0] = again.as_slice()[0];
//! ```
//!
//! ```compile_fail,E0599
//! use zonealloc::arena::{ArenaConfig, PageArena};
//! use zonealloc::{CpuId, MigrateType, Order};
//!
//! let arena = PageArena::new(ArenaConfig::with_pages(64)).unwrap();
//! let block = arena.alloc(Order::ZERO, MigrateType::Movable).unwrap();
//! let mut h = arena.zone().cpu_handle(CpuId(0)).unwrap(); // no handles either
//! h.free(block.pfn(), Order::ZERO).unwrap();
//! ```

use core::fmt;

use crate::types::ORDER_SLOTS;
use crate::{
    CheckError, CheckFacts, CpuId, FrameState, FreeAreaSnapshot, MigrateType, Order, PcpInfo,
    PcpStats, Pfn, Watermarks, Zone, ZoneConfig, ZoneStats, ZoneType,
};

/// A read-only view of a [`PageArena`](super::PageArena)'s zone, from
/// [`PageArena::zone`](super::PageArena::zone): statistics, `/proc` text, the invariant
/// check, drains and ticks; no allocation, no free, no per-CPU handle. Pages come and go
/// through the arena only, so no safe program can free or reuse a block a
/// [`PageBlock`](super::PageBlock) owns.
#[derive(Clone, Copy)]
pub struct ArenaZone<'a> {
    zone: &'a Zone,
}

impl<'a> ArenaZone<'a> {
    pub(super) fn new(zone: &'a Zone) -> Self {
        ArenaZone { zone }
    }

    /// The zone type (`Zone::zone_type`).
    pub fn zone_type(&self) -> ZoneType {
        self.zone.zone_type()
    }

    /// The zone's configuration.
    pub fn config(&self) -> &'a ZoneConfig {
        self.zone.config()
    }

    /// The span `(start, end)`: the arena's frames.
    pub fn span(&self) -> (Pfn, Pfn) {
        self.zone.span()
    }

    /// The largest order the zone hands out.
    pub fn max_order(&self) -> Order {
        self.zone.max_order()
    }

    /// Bytes of frame metadata.
    pub fn metadata_bytes(&self) -> usize {
        self.zone.metadata_bytes()
    }

    /// Free pages in the buddy allocator (`NR_FREE_PAGES`).
    pub fn free_pages(&self) -> u64 {
        self.zone.free_pages()
    }

    /// Pages handed to the zone.
    pub fn managed_pages(&self) -> u64 {
        self.zone.managed_pages()
    }

    /// Pages on the per-CPU lists.
    pub fn pcp_pages(&self) -> u64 {
        self.zone.pcp_pages()
    }

    /// The watermarks.
    pub fn watermarks(&self) -> Watermarks {
        self.zone.watermarks()
    }

    /// Counters of the buddy allocator.
    pub fn stats(&self) -> ZoneStats {
        self.zone.stats()
    }

    /// Counters of the per-CPU lists.
    pub fn pcp_stats(&self) -> PcpStats {
        self.zone.pcp_stats()
    }

    /// One CPU's per-CPU list state.
    pub fn pcp_info(&self, cpu: CpuId) -> PcpInfo {
        self.zone.pcp_info(cpu)
    }

    /// CPUs with per-CPU lists.
    pub fn cpus(&self) -> u32 {
        self.zone.cpus()
    }

    /// The free areas, for `/proc/buddyinfo` and `/proc/pagetypeinfo`.
    pub fn snapshot(&self, node: u32) -> FreeAreaSnapshot {
        self.zone.snapshot(node)
    }

    /// Free blocks per order.
    pub fn nr_free(&self) -> [u64; ORDER_SLOTS] {
        self.zone.nr_free()
    }

    /// The state of one frame's metadata.
    pub fn frame_state(&self, pfn: Pfn) -> Option<FrameState> {
        self.zone.frame_state(pfn)
    }

    /// The migratetype of the pageblock holding `pfn`.
    pub fn pageblock_migratetype(&self, pfn: Pfn) -> Option<MigrateType> {
        self.zone.pageblock_migratetype(pfn)
    }

    /// The `pagesets` block of `/proc/zoneinfo`.
    pub fn write_pagesets<W: fmt::Write>(&self, w: &mut W) -> fmt::Result {
        self.zone.write_pagesets(w)
    }

    /// The zone's invariant check (Z1..Z8, P1..P3, G1); [`PageArena::check`] adds A2.
    ///
    /// [`PageArena::check`]: super::PageArena::check
    pub fn check(&self) -> Result<CheckFacts, CheckError> {
        self.zone.check()
    }

    /// Drains every CPU's per-CPU lists into the buddy allocator (`drain_all_pages`).
    pub fn drain_all(&self) {
        self.zone.drain_all()
    }

    /// Drains one CPU's per-CPU lists (`drain_pages`).
    pub fn drain_cpu(&self, cpu: CpuId) {
        self.zone.drain_cpu(cpu)
    }

    /// One vmstat tick (`Zone::tick`); whether more work is pending.
    pub fn tick(&self) -> bool {
        self.zone.tick()
    }
}

impl fmt::Debug for ArenaZone<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.zone, f)
    }
}
