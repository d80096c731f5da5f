//! [`Zone`]: one zone's buddy allocator behind its lock, with the public alloc/free API.
//!
//! # Locking
//! `zone->lock` is [`Zone::buddy`]; every buddy operation runs with it held and takes
//! `&mut BuddyZone` from the guard, which publishes the lock-free mirror (`shared`) as it
//! is released. The frame table is shared and accessed with relaxed atomics (see `meta`).
//! Per-CPU lists have their own locks, always taken before the zone lock (see `pcp`).

use core::ops::{Deref, DerefMut};

use crate::buddy::Watermarks;
use crate::buddy::{AllocFlags, BuddyZone, CheckError, CheckFacts, FreePlacement, RmqueueMode};
use crate::config::ZoneConfig;
use crate::error::{AllocError, ConfigError, FreeError, RangeError};
use crate::meta::{FrameMeta, FrameState, FrameTable};
use crate::pcp::{zone_batchsize, zone_highsize, PcpAccess, PcpSet, PcpSlot};
use crate::request::AllocRequest;
use crate::shared::{ZoneShared, MOBILITY_DISABLED, ZONE_BELOW_HIGH, ZONE_FLAGS};
use crate::stats::{FreeAreaSnapshot, ZoneStats};
use crate::sync::{Ordering, SpinGuard, SpinLock, StaticSlice};
use crate::types::CpuId;
use crate::types::{MigrateType, Order, Pfn, ZoneType, MIGRATE_TYPES, ORDER_SLOTS};

/// One memory zone: a span of frames (which may contain holes), its metadata table and its
/// buddy allocator. `Send + Sync`: every method takes `&self`.
pub struct Zone {
    pub(crate) table: FrameTable,
    pub(crate) buddy: SpinLock<BuddyZone>,
    pub(crate) shared: ZoneShared,
    pub(crate) pcp: PcpSet,
    zone_type: ZoneType,
    cfg: ZoneConfig,
    span: (u64, u64),
}

impl core::fmt::Debug for Zone {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Zone")
            .field("type", &self.zone_type)
            .field("span", &(Pfn(self.span.0)..Pfn(self.span.1)))
            .finish_non_exhaustive()
    }
}

fn check_span(start: Pfn, end: Pfn, cfg: &ZoneConfig) -> Result<u32, ConfigError> {
    cfg.validate()?;
    if start >= end {
        return Err(ConfigError::BadSpan { start, end });
    }
    let n = FrameTable::entries_needed(start, end, cfg.pageblock_order);
    if n >= u32::MAX as u64 {
        return Err(ConfigError::BadSpan { start, end });
    }
    Ok(n as u32)
}

impl Zone {
    /// A zone spanning frames `start..end`, with nothing free yet; its metadata table
    /// (12 bytes per frame) is allocated on the heap.
    #[cfg(feature = "std")]
    pub fn new(
        zone_type: ZoneType,
        start: Pfn,
        end: Pfn,
        cfg: ZoneConfig,
    ) -> Result<Zone, ConfigError> {
        let n = check_span(start, end, &cfg)?;
        let table = FrameTable::allocate(start, cfg.pageblock_order, n).ok_or(
            ConfigError::TableAllocation {
                bytes: u64::from(n) * core::mem::size_of::<FrameMeta>() as u64,
            },
        )?;
        let pcp = PcpSet::new(cfg.pcp, cfg.max_order);
        Ok(Zone::from_parts(zone_type, start, end, cfg, table, pcp))
    }

    /// Like [`Zone::new`] over a caller-provided metadata table, with per-CPU lists on the
    /// heap under `std` and none without it. The table needs [`Zone::table_entries`] entries;
    /// it is reset.
    pub fn with_table(
        zone_type: ZoneType,
        start: Pfn,
        end: Pfn,
        cfg: ZoneConfig,
        table: &'static [FrameMeta],
    ) -> Result<Zone, ConfigError> {
        let n = check_span(start, end, &cfg)?;
        let table = Self::borrow_table(start, &cfg, n, table)?;
        #[cfg(feature = "std")]
        let pcp = PcpSet::new(cfg.pcp, cfg.max_order);
        #[cfg(not(feature = "std"))]
        let pcp = PcpSet::with_slots(cfg.pcp, cfg.max_order, StaticSlice::borrowed(&[]));
        Ok(Zone::from_parts(zone_type, start, end, cfg, table, pcp))
    }

    /// Everything in caller storage, for kernels and unikernels without a heap: the metadata
    /// table ([`Zone::table_entries`] entries) and one [`PcpSlot`] per CPU (the slot count
    /// overrides `cfg.pcp.cpus`; an empty slice turns the per-CPU lists off):
    ///
    /// ```
    /// use zonealloc::{FrameMeta, PcpSlot, Pfn, Zone, ZoneConfig, ZoneType};
    /// static TABLE: [FrameMeta; 4096] = [const { FrameMeta::new() }; 4096];
    /// static PCPS: [PcpSlot; 2] = [const { PcpSlot::new() }; 2];
    /// let zone = Zone::with_storage(
    ///     ZoneType::Normal, Pfn(0), Pfn(4096), ZoneConfig::default(), &TABLE, &PCPS,
    /// ).unwrap();
    /// zone.add_free_range(Pfn(0), Pfn(4096)).unwrap();
    /// assert_eq!(zone.cpus(), 2);
    /// ```
    pub fn with_storage(
        zone_type: ZoneType,
        start: Pfn,
        end: Pfn,
        mut cfg: ZoneConfig,
        table: &'static [FrameMeta],
        pcps: &'static [PcpSlot],
    ) -> Result<Zone, ConfigError> {
        let n = check_span(start, end, &cfg)?;
        let table = Self::borrow_table(start, &cfg, n, table)?;
        cfg.pcp.cpus = pcps.len() as u32;
        let pcp = PcpSet::with_slots(cfg.pcp, cfg.max_order, StaticSlice::borrowed(pcps));
        Ok(Zone::from_parts(zone_type, start, end, cfg, table, pcp))
    }

    fn borrow_table(
        start: Pfn,
        cfg: &ZoneConfig,
        n: u32,
        table: &'static [FrameMeta],
    ) -> Result<FrameTable, ConfigError> {
        if table.len() < n as usize {
            return Err(ConfigError::TableTooSmall {
                needed: n as usize,
                provided: table.len(),
            });
        }
        Ok(FrameTable::borrowed(start, cfg.pageblock_order, n, table))
    }

    /// Metadata entries a zone spanning `start..end` needs (the span rounded out to
    /// pageblocks).
    pub fn table_entries(start: Pfn, end: Pfn, cfg: &ZoneConfig) -> u64 {
        FrameTable::entries_needed(start, end, cfg.pageblock_order)
    }

    fn from_parts(
        zone_type: ZoneType,
        start: Pfn,
        end: Pfn,
        cfg: ZoneConfig,
        table: FrameTable,
        pcp: PcpSet,
    ) -> Zone {
        let buddy = BuddyZone::new(cfg, start.0, end.0);
        Zone {
            table,
            buddy: SpinLock::new(buddy),
            shared: ZoneShared::new(cfg.max_order, pcp.enabled()),
            pcp,
            zone_type,
            cfg,
            span: (start.0, end.0),
        }
    }

    /// Takes the zone lock, counting the acquisition. The guard publishes the lock-free
    /// mirror when dropped.
    #[inline]
    pub(crate) fn lock(&self) -> ZoneGuard<'_> {
        let mut g = self.buddy.lock();
        g.stats.zone_lock_acquisitions += 1;
        ZoneGuard {
            g,
            shared: &self.shared,
        }
    }

    /// The zone type.
    pub fn zone_type(&self) -> ZoneType {
        self.zone_type
    }

    /// The configuration.
    pub fn config(&self) -> &ZoneConfig {
        &self.cfg
    }

    /// The span `[start, end)`.
    pub fn span(&self) -> (Pfn, Pfn) {
        (Pfn(self.span.0), Pfn(self.span.1))
    }

    /// Whether `pfn` is inside the span (`zone_spans_pfn`).
    #[inline]
    pub fn spans(&self, pfn: Pfn) -> bool {
        pfn.0 >= self.span.0 && pfn.0 < self.span.1
    }

    /// The largest order this zone hands out.
    pub fn max_order(&self) -> Order {
        Order::from_raw(self.cfg.max_order)
    }

    /// Bytes of per-frame metadata this zone uses (Linux: 64 per frame in `struct page`).
    pub fn metadata_bytes(&self) -> usize {
        self.table.len() as usize * FrameTable::bytes_per_frame()
    }

    /// Hands `start..end` to the allocator, as boot does (`__free_pages_memory` →
    /// `__free_pages_core`): the largest aligned blocks in ascending frame order, each placed
    /// at the tail of its free list (`FPI_TO_TAIL`), bypassing the per-CPU lists. Frames never
    /// added stay absent (holes, reserved ranges). Returns the pages added.
    ///
    /// On error nothing is added.
    pub fn add_free_range(&self, start: Pfn, end: Pfn) -> Result<u64, RangeError> {
        let added = {
            let mut z = self.lock();
            self.add_free_range_locked(&mut z, start, end)?
        };
        self.setup_standalone_watermarks();
        Ok(added)
    }

    pub(crate) fn add_free_range_locked(
        &self,
        z: &mut BuddyZone,
        start: Pfn,
        end: Pfn,
    ) -> Result<u64, RangeError> {
        if start >= end {
            return Err(RangeError::Empty { start, end });
        }
        if !self.spans(start) {
            return Err(RangeError::OutOfZone { pfn: start });
        }
        if end.0 > self.span.1 {
            return Err(RangeError::OutOfZone {
                pfn: Pfn(self.span.1),
            });
        }
        let t = &self.table;
        let (first, last) = (
            t.index_of(start.0).unwrap_or(0),
            t.index_of(end.0 - 1).unwrap_or(0),
        );
        for i in first..=last {
            if t.state(i) != FrameState::Absent {
                return Err(RangeError::Overlap {
                    pfn: Pfn(t.pfn_of(i)),
                });
            }
        }
        for i in first..=last {
            t.set_state(i, FrameState::Tail);
        }
        let max = z.max_order() as u32;
        let mut pfn = start.0;
        while pfn < end.0 {
            // Free in the largest chunks alignment allows (pfn 0 is max-order aligned).
            let mut order = if pfn == 0 {
                max
            } else {
                pfn.trailing_zeros().min(max)
            };
            while pfn + (1u64 << order) > end.0 {
                order -= 1;
            }
            let idx = t.index_of(pfn).unwrap_or(0);
            z.managed_pages += 1u64 << order;
            z.split_large_buddy(t, idx, order as u8, FreePlacement::ToTail);
            pfn += 1u64 << order;
        }
        Ok(end.0 - start.0)
    }

    /// Recomputes this zone's watermarks as if it were the only zone of its node.
    pub(crate) fn setup_standalone_watermarks(&self) {
        let managed = self.lock().managed_pages;
        let sizes = [crate::buddy::ZoneSize {
            zone_type: self.zone_type,
            managed,
        }];
        let (wm, reserve) = crate::buddy::setup_node_watermarks(&sizes, &[self.cfg]);
        self.apply_watermarks(wm[0], reserve[0], None);
    }

    pub(crate) fn apply_watermarks(
        &self,
        wm: Watermarks,
        reserve: [u64; crate::types::MAX_NR_ZONES],
        mobility_disabled: Option<bool>,
    ) {
        let mut z = self.lock();
        z.wmark = Watermarks {
            boost: z.wmark.boost,
            ..wm
        };
        z.lowmem_reserve = reserve;
        z.marks_dirty = true;
        self.pcp_update(z.managed_pages, z.wmark.mark(1));
        z.mobility_disabled = match self.cfg.mobility_grouping {
            crate::config::MobilityGrouping::Enabled => false,
            crate::config::MobilityGrouping::Disabled => true,
            crate::config::MobilityGrouping::Auto => mobility_disabled.unwrap_or_else(|| {
                // build_all_zonelists: too few pages above the high mark to group by mobility.
                z.managed_pages.saturating_sub(wm.high)
                    < (1u64 << self.cfg.pageblock_order) * MIGRATE_TYPES as u64
            }),
        };
        if z.mobility_disabled {
            self.shared.set_flag(MOBILITY_DISABLED);
        } else {
            self.shared.clear_flag(MOBILITY_DISABLED);
        }
    }

    /// `zone_pcp_update`: recompute batch and high bounds from managed pages and the low
    /// watermark (`zone_set_pageset_high_and_batch`), honouring the configured overrides.
    fn pcp_update(&self, managed: u64, low_wmark: u64) {
        let c = &self.cfg.pcp;
        let batch = c
            .batch
            .unwrap_or_else(|| zone_batchsize(managed, self.cfg.page_size));
        let cpus = self.pcp.cpus() as u32;
        let (mut hmin, mut hmax) = if c.high_fraction != 0 {
            let h = zone_highsize(managed, low_wmark, batch, cpus, c.high_fraction);
            (h, h)
        } else {
            (
                zone_highsize(managed, low_wmark, batch, cpus, 0),
                zone_highsize(managed, low_wmark, batch, cpus, 8),
            )
        };
        if let Some(v) = c.high_min {
            hmin = v;
        }
        if let Some(v) = c.high_max {
            hmax = v;
        }
        self.pcp
            .set_params(batch, hmin, hmax.max(hmin), self.cfg.page_size);
    }

    /// Allocates a block of `order` with the default request for `mt` ([`AllocRequest::new`]).
    #[inline]
    pub fn alloc(&self, order: Order, mt: MigrateType) -> Result<Pfn, AllocError> {
        self.alloc_with(order, AllocRequest::new(mt))
    }

    /// Allocates a block of `order` as `req` describes, walking the kernel's fast and slow
    /// paths over this one zone.
    #[inline(always)]
    pub fn alloc_with(&self, order: Order, req: AllocRequest) -> Result<Pfn, AllocError> {
        let cpu = req
            .cpu
            .map_or_else(|| self.this_cpu(), |c| self.pcp.cpu_index(c));
        // A zone without per-CPU lists has `PCP_OFF` in its flag byte: the hit path steps
        // aside without a test of its own here.
        if let Some(slot) = self.pcp.slot_at(cpu) {
            let (mt, hz) = (req.migratetype, req.highest_zone);
            if let Some(p) = self.pcp_alloc_fast(order.get(), mt, hz, slot, None) {
                return Ok(p);
            }
        }
        self.alloc_full(order, req, cpu)
    }

    /// Everything but a PCP hit, out of line so that the hit path inlined into callers stays
    /// small.
    #[inline(never)]
    fn alloc_full(&self, order: Order, req: AllocRequest, cpu: usize) -> Result<Pfn, AllocError> {
        if let Some(p) = self.buddy_alloc_fast(order.get(), &req) {
            return Ok(p);
        }
        crate::node::alloc_in_zone(self, order, req, &mut PcpAccess::Cpu(cpu))
    }

    /// `gfp_migratetype` after `page_group_by_mobility_disabled`.
    #[inline]
    pub(crate) fn effective_migratetype(&self, mt: MigrateType) -> MigrateType {
        if self.shared.mobility_disabled() {
            MigrateType::Unmovable
        } else {
            mt
        }
    }

    /// One zone of `get_page_from_freelist`: the lock-free watermark checks, then `rmqueue`
    /// (the CPU's lists for PCP orders, else or on failure the buddy).
    #[inline]
    pub(crate) fn try_alloc(
        &self,
        order: u8,
        mt: MigrateType,
        flags: AllocFlags,
        highest_zoneidx: usize,
        access: &mut PcpAccess<'_>,
    ) -> Option<Pfn> {
        let sh = &self.shared;
        let mut ok = false;
        if !sh.test_flag(ZONE_BELOW_HIGH) {
            if sh.watermark_fast(order, sh.mark(2), highest_zoneidx, flags) {
                ok = true;
            } else {
                sh.set_flag(ZONE_BELOW_HIGH);
            }
        }
        if !ok
            && !sh.watermark_fast(order, sh.mark(flags.wmark_index()), highest_zoneidx, flags)
            && !flags.intersects(AllocFlags::NO_WATERMARKS)
        {
            return None;
        }
        let t = &self.table;
        if self.pcp.enabled() && self.pcp.policy.allowed_order(order) {
            if let Some(idx) = self.rmqueue_pcplist(order, mt, flags, access) {
                if flags.intersects(AllocFlags::HIGHATOMIC) {
                    self.lock().reserve_highatomic_pageblock(t, idx, order);
                }
                return Some(Pfn(t.pfn_of(idx)));
            }
        }
        let mut z = self.lock();
        let idx = rmqueue_buddy(&mut z, t, order, mt, flags);
        self.kswapd_check(&mut z, flags);
        let idx = idx?;
        t.set_state(idx, FrameState::Allocated(Order::from_raw(order), mt));
        z.stats.allocs[order as usize] += 1;
        if flags.intersects(AllocFlags::HIGHATOMIC) {
            z.reserve_highatomic_pageblock(t, idx, order);
        }
        Some(Pfn(t.pfn_of(idx)))
    }

    /// The buddy allocation in its most common case, in one function: an order the per-CPU
    /// lists do not take, a zone above its high watermark with its flags clear, and a block
    /// on the request's own migratetype's lists (`__rmqueue_smallest` succeeds). Exactly what
    /// `get_page_from_freelist` → `rmqueue_buddy` → `__rmqueue` does then; anything else
    /// returns `None` having changed nothing, and the full walk runs.
    #[inline]
    pub(crate) fn buddy_alloc_fast(&self, order: u8, req: &AllocRequest) -> Option<Pfn> {
        let sh = &self.shared;
        let mt = req.migratetype;
        if (self.pcp.enabled() && self.pcp.policy.allowed_order(order))
            || order > self.cfg.max_order
            || !mt.is_gfp_type()
            || sh.flags.load(Ordering::Relaxed) & (ZONE_FLAGS | MOBILITY_DISABLED) != 0
        {
            return None;
        }
        let flags = req.fast_flags();
        if !sh.watermark_fast(order, sh.mark(2), req.highest_zone.index(), flags) {
            return None;
        }
        let t = &self.table;
        let mut z = self.lock();
        let idx = z.rmqueue_smallest(t, order, mt)?;
        self.kswapd_check(&mut z, flags);
        t.set_state(idx, FrameState::Allocated(Order::from_raw(order), mt));
        z.stats.allocs[order as usize] += 1;
        Some(Pfn(t.pfn_of(idx)))
    }

    /// The exit of `rmqueue`: a fallback that boosted the watermarks wakes kswapd.
    pub(crate) fn kswapd_check(&self, z: &mut BuddyZone, flags: AllocFlags) {
        if flags.intersects(AllocFlags::KSWAPD) && z.flags.boosted_watermark {
            z.flags.boosted_watermark = false;
            z.stats.kswapd_wakeups += 1;
        }
    }

    /// Counts a request that failed with this zone preferred.
    pub(crate) fn count_alloc_failure(&self) {
        self.lock().stats.alloc_failures += 1;
    }

    /// `unreserve_highatomic_pageblock` on this zone.
    pub(crate) fn unreserve_highatomic(&self, to_mt: MigrateType, force: bool) -> bool {
        let mut z = self.lock();
        z.unreserve_highatomic_pageblock(&self.table, to_mt, force)
    }

    /// Frees the block of `order` at `pfn` on the calling thread's CPU (`__free_pages`):
    /// orders the per-CPU lists take go there, others straight to the buddy.
    ///
    /// Detects double frees (also of blocks sitting on a per-CPU list), frees of frames that
    /// are not the head of an allocated block, wrong orders, misaligned frames and frames
    /// outside the zone or in holes; on error the zone is unchanged.
    #[inline]
    pub fn free(&self, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        self.free_via(pfn, order, self.this_cpu())
    }

    /// Frees on CPU slot `cpu` (already reduced to the CPU count).
    #[inline(always)]
    fn free_via(&self, pfn: Pfn, order: Order, cpu: usize) -> Result<(), FreeError> {
        if let Some(slot) = self.pcp.slot_at(cpu) {
            if self.pcp_free_fast(pfn, order, slot, None) {
                return Ok(());
            }
        }
        self.free_with(pfn, order, &mut PcpAccess::Cpu(cpu))
    }

    /// Like [`Zone::free`] on CPU `cpu`'s lists.
    #[inline]
    pub fn free_on(&self, cpu: CpuId, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        self.free_via(pfn, order, self.pcp.cpu_index(cpu))
    }

    /// `__free_pages_ok`: validated and claimed here, then `free_one_page`.
    pub(crate) fn free_to_buddy(&self, idx: u32, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        self.claim_for_free(idx, pfn, order)?;
        self.free_one_page(idx, order.get());
        Ok(())
    }

    /// The checks that need no lock: order, span, alignment. Returns the frame index.
    #[inline]
    pub(crate) fn validate_free(&self, pfn: Pfn, order: Order) -> Result<u32, FreeError> {
        if order.get() > self.cfg.max_order {
            return Err(FreeError::OrderTooLarge { pfn, order });
        }
        if !self.spans(pfn) {
            return Err(FreeError::OutOfZone { pfn });
        }
        if !pfn.is_aligned(order) {
            return Err(FreeError::Misaligned { pfn, order });
        }
        self.table
            .index_of(pfn.0)
            .ok_or(FreeError::OutOfZone { pfn })
    }

    /// Atomically takes ownership of an allocated head for freeing (state becomes `Tail`), or
    /// says precisely why the frame cannot be freed.
    #[inline]
    pub(crate) fn claim_for_free(&self, idx: u32, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        let t = &self.table;
        if t.try_claim_allocated(idx, order, FrameState::Tail) {
            return Ok(());
        }
        loop {
            match t.state(idx) {
                FrameState::Allocated(o, mt) if o == order => {
                    match t.claim_allocated(idx, order, mt, FrameState::Tail) {
                        Ok(()) => return Ok(()),
                        Err(_) => continue, // raced with another free: classify again
                    }
                }
                FrameState::Allocated(o, _) => {
                    return Err(FreeError::WrongOrder {
                        pfn,
                        given: order,
                        allocated: o,
                    })
                }
                FrameState::Absent => return Err(FreeError::NotManaged { pfn }),
                FrameState::Buddy(_) | FrameState::Pcp(_) => {
                    return Err(FreeError::DoubleFree { pfn })
                }
                FrameState::Tail => return Err(self.classify_tail(idx, pfn)),
            }
        }
    }

    /// A tail frame was passed to free: find the block containing it.
    fn classify_tail(&self, idx: u32, pfn: Pfn) -> FreeError {
        let t = &self.table;
        for o in 1..=self.cfg.max_order {
            let head_pfn = pfn.0 & !((1u64 << o) - 1);
            let Some(h) = t.index_of(head_pfn) else { break };
            let _ = idx;
            match t.state(h) {
                FrameState::Buddy(bo) | FrameState::Pcp(bo) if bo.get() >= o => {
                    return FreeError::DoubleFree { pfn }
                }
                FrameState::Allocated(ao, _) if ao.get() >= o => {
                    return FreeError::NotBlockHead {
                        pfn,
                        head: Pfn(head_pfn),
                    }
                }
                _ => {}
            }
        }
        // A tail whose block head is being freed right now by another thread.
        FreeError::DoubleFree { pfn }
    }

    /// Free pages in the buddy allocator (`NR_FREE_PAGES`; per-CPU lists not included).
    pub fn free_pages(&self) -> u64 {
        self.buddy.lock().nr_free_pages
    }

    /// Pages handed to the allocator (`managed_pages`).
    pub fn managed_pages(&self) -> u64 {
        self.buddy.lock().managed_pages
    }

    /// Current watermarks.
    pub fn watermarks(&self) -> Watermarks {
        self.buddy.lock().wmark
    }

    /// Pages reserved for HighAtomic allocations (`nr_reserved_highatomic`).
    pub fn reserved_highatomic(&self) -> u64 {
        self.buddy.lock().nr_reserved_highatomic
    }

    /// A copy of the zone's counters; `allocs` and `frees` include those the per-CPU lists
    /// served.
    pub fn stats(&self) -> ZoneStats {
        let (a, f) = self.pcp_order_counts();
        let mut s = self.buddy.lock().stats;
        for o in 0..ORDER_SLOTS {
            s.allocs[o] += a[o];
            s.frees[o] += f[o];
        }
        s
    }

    /// The migratetype of the pageblock containing `pfn`, if the zone spans it.
    pub fn pageblock_migratetype(&self, pfn: Pfn) -> Option<MigrateType> {
        if !self.spans(pfn) {
            return None;
        }
        let idx = self.table.index_of(pfn.0)?;
        let z = self.buddy.lock();
        Some(z.block_mt(&self.table, idx))
    }

    /// What the frame `pfn` currently is, if the zone spans it.
    pub fn frame_state(&self, pfn: Pfn) -> Option<FrameState> {
        if !self.spans(pfn) {
            return None;
        }
        Some(self.table.state(self.table.index_of(pfn.0)?))
    }

    /// Free blocks per order (`free_area[order].nr_free`), the numbers of `/proc/buddyinfo`.
    pub fn nr_free(&self) -> [u64; ORDER_SLOTS] {
        let z = self.buddy.lock();
        let mut out = [0; ORDER_SLOTS];
        for (o, a) in z.free_area.iter().enumerate() {
            out[o] = a.nr_free;
        }
        out
    }

    /// The free lists' block heads for one order and migratetype, head to tail. For tests
    /// and teaching; O(list length).
    pub fn free_list(&self, order: Order, mt: MigrateType, out: &mut [Pfn]) -> usize {
        let z = self.buddy.lock();
        let mut n = 0;
        if order.get() > self.cfg.max_order {
            return 0;
        }
        for idx in z.free_area[order.index()].lists[mt.index()].iter(&self.table) {
            if n == out.len() {
                break;
            }
            out[n] = Pfn(self.table.pfn_of(idx));
            n += 1;
        }
        n
    }

    /// The free-area state for `/proc` text and fragmentation indices, taken under the lock.
    pub fn snapshot(&self, node: u32) -> FreeAreaSnapshot {
        let z = self.buddy.lock();
        let t = &self.table;
        let mut s = FreeAreaSnapshot {
            node,
            zone_name: self.zone_type.name(),
            max_order: self.cfg.max_order,
            pageblock_order: self.cfg.pageblock_order,
            nr_free: [0; ORDER_SLOTS],
            free_by_type: [[0; ORDER_SLOTS]; MIGRATE_TYPES],
            pageblocks_by_type: [0; MIGRATE_TYPES],
        };
        for o in 0..=self.cfg.max_order as usize {
            s.nr_free[o] = z.free_area[o].nr_free;
            for mt in 0..MIGRATE_TYPES {
                s.free_by_type[mt][o] =
                    z.free_area[o].lists[mt].iter(t).take(100_000).count() as u64;
            }
        }
        // pagetypeinfo_showblockcount_print: step from zone_start_pfn by pageblock_nr_pages.
        let step = 1u64 << self.cfg.pageblock_order;
        let mut pfn = self.span.0;
        while pfn < self.span.1 {
            if let Some(i) = t.index_of(pfn) {
                s.pageblocks_by_type[z.block_mt(t, i).index()] += 1;
            }
            pfn += step;
        }
        s
    }

    /// Checks the invariants: Z1..Z9 of the buddy, P1..P3 of every CPU's lists, and G1,
    /// global conservation (free + per-CPU + allocated = managed, each frame in exactly one
    /// place). Locks every per-CPU list, then the zone; O(frames). Under owner-only locking,
    /// call it when no [`CpuHandle`](crate::CpuHandle) is alive.
    pub fn check(&self) -> Result<CheckFacts, CheckError> {
        let on_lists = self.check_pcps()?;
        let z = self.buddy.lock();
        let facts = z.check(&self.table)?;
        if facts.pcp_pages != on_lists {
            return Err(crate::buddy::check_fail(
                "G1",
                None,
                "frames marked as on a per-CPU list differ from the pages on the lists",
            ));
        }
        Ok(facts)
    }
}

/// `rmqueue_buddy`: HighAtomic first for `ALLOC_HIGHATOMIC`, then `__rmqueue`, then HighAtomic
/// for OOM and non-blocking requests.
pub(crate) fn rmqueue_buddy(
    z: &mut BuddyZone,
    t: &FrameTable,
    order: u8,
    mt: MigrateType,
    flags: AllocFlags,
) -> Option<u32> {
    if flags.intersects(AllocFlags::HIGHATOMIC) {
        if let Some(idx) = z.rmqueue_smallest(t, order, MigrateType::HighAtomic) {
            return Some(idx);
        }
    }
    let mut mode = RmqueueMode::Normal;
    if let Some(idx) = z.rmqueue(t, order, mt, flags, &mut mode) {
        return Some(idx);
    }
    if flags.intersects(AllocFlags::OOM.with(AllocFlags::NON_BLOCK)) {
        return z.rmqueue_smallest(t, order, MigrateType::HighAtomic);
    }
    None
}

/// The zone lock's guard: derefs to the buddy state and publishes the lock-free mirror
/// (`ZoneShared`) when released.
pub(crate) struct ZoneGuard<'a> {
    g: SpinGuard<'a, BuddyZone>,
    shared: &'a ZoneShared,
}

impl Deref for ZoneGuard<'_> {
    type Target = BuddyZone;
    #[inline]
    fn deref(&self) -> &BuddyZone {
        &self.g
    }
}

impl DerefMut for ZoneGuard<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut BuddyZone {
        &mut self.g
    }
}

impl Drop for ZoneGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.g.publish(self.shared);
    }
}

/// Small enough for Miri: exercises the only `unsafe` (the owned and borrowed `StaticSlice`s
/// behind the frame table and the per-CPU slots) through every path that reads or frees them.
#[cfg(all(test, feature = "std", not(loom)))]
mod miri_smoke {
    use super::*;
    use crate::{PcpConfig, ZoneType};

    fn small_cfg() -> ZoneConfig {
        ZoneConfig {
            max_order: 3,
            pageblock_order: 2,
            pcp: PcpConfig {
                cpus: 2,
                batch: Some(2),
                high_min: Some(4),
                high_max: Some(8),
                thp_order: None,
                ..PcpConfig::default()
            },
            ..ZoneConfig::without_watermarks()
        }
    }

    fn churn(z: &Zone) {
        let o0 = Order::ZERO;
        let mut live = std::vec::Vec::new();
        for i in 0..12u32 {
            let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(i % 2));
            live.push(z.alloc_with(o0, req).unwrap());
        }
        let big = z
            .alloc(Order::new(3).unwrap(), MigrateType::Unmovable)
            .unwrap();
        for (i, p) in live.into_iter().enumerate() {
            z.free_on(CpuId(i as u32 % 2), p, o0).unwrap();
        }
        z.free(big, Order::new(3).unwrap()).unwrap();
        z.drain_all();
        z.check().unwrap();
    }

    #[test]
    fn heap_storage_zone_is_used_and_freed_cleanly() {
        let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(32), small_cfg()).unwrap();
        z.add_free_range(Pfn(0), Pfn(32)).unwrap();
        churn(&z);
        std::thread::scope(|s| {
            for c in 0..2u32 {
                let z = &z;
                s.spawn(move || {
                    let mut h = z.cpu_handle(CpuId(c)).unwrap();
                    for _ in 0..4 {
                        let p = h.alloc(Order::ZERO, MigrateType::Movable).unwrap();
                        h.free(p, Order::ZERO).unwrap();
                    }
                });
            }
        });
        z.drain_all();
        assert_eq!(z.free_pages(), 32);
        drop(z);
    }

    #[test]
    fn static_storage_zone_is_used_and_not_freed() {
        static TABLE: [FrameMeta; 32] = [const { FrameMeta::new() }; 32];
        static PCPS: [PcpSlot; 2] = [const { PcpSlot::new() }; 2];
        let z = Zone::with_storage(
            ZoneType::Normal,
            Pfn(0),
            Pfn(32),
            small_cfg(),
            &TABLE,
            &PCPS,
        )
        .unwrap();
        z.add_free_range(Pfn(0), Pfn(32)).unwrap();
        churn(&z);
        drop(z);
        assert_eq!(TABLE.len(), 32);
    }
}

/// `check()` must catch corruption, not only pass on good states: each test breaks one thing
/// behind the allocator's back and expects the invariant that names it.
#[cfg(all(test, feature = "std", not(loom)))]
mod check_catches_corruption {
    use super::*;
    use crate::{PcpConfig, ZoneType};

    fn zone() -> Zone {
        let cfg = ZoneConfig {
            pcp: PcpConfig {
                cpus: 1,
                batch: Some(4),
                high_min: Some(64),
                high_max: Some(64),
                ..PcpConfig::default()
            },
            ..ZoneConfig::without_watermarks()
        };
        let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(4096), cfg).unwrap();
        z.add_free_range(Pfn(0), Pfn(4096)).unwrap();
        // Some pages on the CPU's list, some blocks allocated, free blocks of several orders.
        let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0));
        let a = z.alloc_with(Order::ZERO, req).unwrap();
        z.alloc_with(Order::new(3).unwrap(), req).unwrap();
        z.free_on(CpuId(0), a, Order::ZERO).unwrap();
        z.check().unwrap();
        z
    }

    fn id(z: &Zone) -> &'static str {
        z.check().map(|_| "ok").unwrap_or_else(|e| e.invariant)
    }

    #[test]
    fn wrong_nr_free_is_z3() {
        let z = zone();
        z.buddy.lock().free_area[10].nr_free += 1;
        assert_eq!(id(&z), "Z3");
    }

    #[test]
    fn wrong_free_page_count_is_z7() {
        let z = zone();
        z.buddy.lock().nr_free_pages -= 1;
        assert_eq!(id(&z), "Z7");
    }

    #[test]
    fn stale_nonempty_bit_is_z8() {
        let z = zone();
        let empty_order = (0..=10u8)
            .find(|&o| z.buddy.lock().free_area[o as usize].lists[1].is_empty())
            .unwrap();
        z.buddy
            .lock()
            .note_nonempty_for_test(empty_order, MigrateType::Movable);
        assert_eq!(id(&z), "Z8");
    }

    #[test]
    fn a_tail_frame_claiming_to_be_free_is_caught() {
        let z = zone();
        // Frame 2048+1 lies inside a free order-10 block: make it look like a free head.
        z.table.set_state(2049, FrameState::Buddy(Order::ZERO));
        assert_eq!(id(&z), "Z1");
    }

    #[test]
    fn a_free_head_on_no_list_is_z1() {
        let z = zone();
        let idx = z.buddy.lock().free_area[10].lists[1].first().unwrap();
        let mut g = z.buddy.lock();
        g.free_area[10].lists[1].unlink(&z.table, idx);
        g.free_area[10].nr_free -= 1;
        // Keep the page counters consistent with the lists, so only the orphan is wrong.
        g.nr_free_pages -= 1024;
        g.nr_free_pages_blocks -= 1024;
        drop(g);
        assert_eq!(id(&z), "Z1");
    }

    #[test]
    fn wrong_pcp_count_is_p1() {
        let z = zone();
        z.pcp.slot(0).lists.lock().count += 1;
        assert_eq!(id(&z), "P1");
    }

    #[test]
    fn a_pcp_member_in_the_wrong_state_is_p2() {
        let z = zone();
        let idx = {
            let p = z.pcp.slot(0).lists.lock();
            p.lists.iter().find_map(|l| l.first()).unwrap()
        };
        z.table.set_state(
            idx,
            FrameState::Allocated(Order::ZERO, MigrateType::Movable),
        );
        assert_eq!(id(&z), "P2");
    }
}
