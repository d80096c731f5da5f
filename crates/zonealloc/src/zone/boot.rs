//! Construction and boot: a zone over its frame table, memory handed to it
//! (`memblock_free_all` → `__free_pages_core`), and the watermark and pageset sizing that
//! follow every change of managed memory (`setup_per_zone_wmarks`, `zone_pcp_update`).

use super::Zone;
use crate::buddy::{BuddyZone, FreePlacement, Watermarks};
use crate::config::ZoneConfig;
use crate::error::{ConfigError, RangeError};
use crate::meta::{FrameMeta, FrameState, FrameTable};
use crate::pcp::{zone_batchsize, zone_highsize, PcpSet, PcpSlot};
use crate::platform::Platform;
use crate::shared::{ZoneBits, ZoneShared};
use crate::sync::{init_slice, Lock, StaticSlice};
use crate::types::{Order, Pfn, ZoneType, MIGRATE_TYPES};
use core::mem::MaybeUninit;

fn check_span(start: Pfn, end: Pfn, cfg: &ZoneConfig) -> Result<u32, ConfigError> {
    cfg.validate()?;
    if start >= end {
        return Err(ConfigError::BadSpan { start, end });
    }
    let n = FrameTable::geometry(start, end, cfg.pageblock_order)?;
    if n >= u32::MAX as u64 {
        return Err(ConfigError::BadSpan { start, end });
    }
    Ok(n as u32)
}

impl Zone {
    /// A zone spanning frames `start..end`, with nothing free yet; its metadata table
    /// (12 bytes per frame) is allocated on the heap, zero pages until memory is added
    /// ([`Zone::add_free_range`] settles it a pageblock at a time, as Linux's deferred
    /// `struct page` init does): a wide span with memory in a corner of it costs the table
    /// only for that corner.
    #[cfg(feature = "std")]
    pub fn new(
        zone_type: ZoneType,
        start: Pfn,
        end: Pfn,
        cfg: ZoneConfig,
    ) -> Result<Zone, ConfigError> {
        let n = check_span(start, end, &cfg)?;
        let table = FrameTable::allocate(start, Order::from_raw(cfg.pageblock_order), n).ok_or(
            ConfigError::TableAllocation {
                bytes: u64::from(n) * core::mem::size_of::<FrameMeta>() as u64,
            },
        )?;
        let pcp = PcpSet::new(cfg.pcp, Order::from_raw(cfg.max_order));
        Ok(Zone::from_parts(zone_type, start, end, cfg, table, pcp))
    }

    /// Like [`Zone::new`] over a caller-provided metadata table, with per-CPU lists on the
    /// heap under `std` and none without it. The table needs [`Zone::table_entries`] entries;
    /// it is reset. It serves one zone at a time: while a zone uses an entry, another zone
    /// over it is [`ConfigError::TableInUse`] (the entries are free again once the first zone
    /// is dropped).
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
        let pcp = PcpSet::new(cfg.pcp, Order::from_raw(cfg.max_order));
        #[cfg(not(feature = "std"))]
        let pcp = PcpSet::with_slots(
            cfg.pcp,
            Order::from_raw(cfg.max_order),
            StaticSlice::borrowed(&[]),
        );
        Ok(Zone::from_parts(zone_type, start, end, cfg, table, pcp))
    }

    /// Everything in caller storage, for kernels and unikernels without a heap: the metadata
    /// table ([`Zone::table_entries`] entries) and one [`PcpSlot`] per CPU (the slot count
    /// overrides `cfg.pcp.cpus`; an empty slice turns the per-CPU lists off). Both serve one
    /// zone at a time ([`ConfigError::TableInUse`], [`ConfigError::PcpSlotInUse`]; free again
    /// once that zone is dropped).
    ///
    /// Superseded by [`Zone::from_uninit`], which takes the storage by `&'static mut` (so two
    /// zones can never share one table), needs no initialised table (boot memory, `.bss`),
    /// can reserve a table carved out of the zone's own frames, and takes any
    /// [`Platform`]. Kept for existing callers:
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
        // On error `table` is dropped here, which gives its entries back.
        PcpSet::claim(pcps).map_err(|slot| ConfigError::PcpSlotInUse { slot })?;
        cfg.pcp.cpus = pcps.len() as u32;
        let pcp = PcpSet::with_slots(
            cfg.pcp,
            Order::from_raw(cfg.max_order),
            StaticSlice::borrowed(pcps),
        );
        Ok(Zone::from_parts(zone_type, start, end, cfg, table, pcp))
    }

    /// Metadata entries a zone spanning `start..end` needs (the span rounded out to
    /// pageblocks).
    pub fn table_entries(start: Pfn, end: Pfn, cfg: &ZoneConfig) -> u64 {
        FrameTable::entries_needed(start, end, cfg.pageblock_order)
    }
}

impl<P: Platform> Zone<P> {
    /// A zone on the platform `P` over storage the caller hands over for good, for kernels
    /// and unikernels without a heap: `table`, uninitialised memory of at least
    /// [`Zone::table_entries`] entries (from a
    /// [`StaticStorage`](crate::platform::StaticStorage), or boot memory), and `pcps`, one
    /// [`PcpSlot`] per CPU (the slot count overrides `cfg.pcp.cpus`; an empty slice turns the
    /// per-CPU lists off). Both are initialised here (one pass over the table), and borrowed `&'static mut`, so no other zone can use them.
    /// Nothing is free yet: hand memory over with [`Zone::add_free_range`].
    ///
    /// ```
    /// use zonealloc::platform::{SingleCpu, StaticStorage};
    /// use zonealloc::{FrameMeta, PcpSlot, Pfn, Zone, ZoneConfig, ZoneType};
    /// static TABLE: StaticStorage<FrameMeta, 4096> = StaticStorage::new();
    /// static PCPS: StaticStorage<PcpSlot, 2> = StaticStorage::new();
    /// let zone = Zone::<SingleCpu>::from_uninit(
    ///     ZoneType::Normal, Pfn(0), Pfn(4096), ZoneConfig::default(),
    ///     TABLE.take().unwrap(), PCPS.take().unwrap(),
    /// ).unwrap();
    /// zone.add_free_range(Pfn(0), Pfn(4096)).unwrap();
    /// assert_eq!(zone.cpus(), 2);
    /// ```
    pub fn from_uninit(
        zone_type: ZoneType,
        start: Pfn,
        end: Pfn,
        cfg: ZoneConfig,
        table: &'static mut [MaybeUninit<FrameMeta>],
        pcps: &'static mut [MaybeUninit<PcpSlot>],
    ) -> Result<Self, ConfigError> {
        Self::from_uninit_carved(zone_type, start, end, cfg, table, None, pcps)
    }

    /// [`Zone::from_uninit`] with the table carved out of the zone's own frames, as the
    /// kernel places its `memmap` (`memblock_alloc`): `table_frames` are the frames that
    /// hold the table (and whatever else the caller put there, its per-CPU slots for
    /// example), and the zone treats them as reserved: [`Zone::add_free_range`] (and
    /// `Node::add_free_range`) skip them, so the caller may hand over whole RAM ranges,
    /// table included (`memblock_free_all` after `memblock_reserve`). An empty or
    /// out-of-zone `table_frames` is refused (`BadSpan`).
    pub fn from_uninit_carved(
        zone_type: ZoneType,
        start: Pfn,
        end: Pfn,
        mut cfg: ZoneConfig,
        table: &'static mut [MaybeUninit<FrameMeta>],
        table_frames: Option<(Pfn, Pfn)>,
        pcps: &'static mut [MaybeUninit<PcpSlot>],
    ) -> Result<Self, ConfigError> {
        let n = check_span(start, end, &cfg)?;
        if table.len() < n as usize {
            return Err(ConfigError::TableTooSmall {
                needed: n as usize,
                provided: table.len(),
            });
        }
        let reserved = match table_frames {
            None => (0, 0),
            Some((s, e)) if s < e && s >= start && e <= end => (s.0, e.0),
            Some((s, e)) => return Err(ConfigError::BadSpan { start: s, end: e }),
        };
        let table = FrameTable::from_uninit(start, Order::from_raw(cfg.pageblock_order), n, table);
        cfg.pcp.cpus = pcps.len() as u32;
        let pcps: &'static [PcpSlot] = init_slice(pcps, PcpSlot::new);
        let pcp = PcpSet::with_slots(
            cfg.pcp,
            Order::from_raw(cfg.max_order),
            StaticSlice::borrowed(pcps),
        );
        let mut zone = Zone::from_parts(zone_type, start, end, cfg, table, pcp);
        zone.reserved = reserved;
        Ok(zone)
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
        FrameTable::borrowed(start, Order::from_raw(cfg.pageblock_order), n, table)
            .map_err(|entry| ConfigError::TableInUse { entry })
    }

    fn from_parts(
        zone_type: ZoneType,
        start: Pfn,
        end: Pfn,
        cfg: ZoneConfig,
        table: FrameTable,
        pcp: PcpSet,
    ) -> Self {
        let buddy = BuddyZone::new(cfg, start.0, end.0);
        Zone {
            table,
            buddy: Lock::new(buddy),
            shared: ZoneShared::new(Order::from_raw(cfg.max_order), pcp.enabled()),
            pcp,
            zone_type,
            cfg,
            span: (start.0, end.0),
            reserved: (0, 0),
            platform: core::marker::PhantomData,
        }
    }
}

impl<P: Platform> Zone<P> {
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
        self.debug_check("add_free_range");
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
        if start.0 < self.reserved.1 && self.reserved.0 < end.0 {
            return self.add_free_range_around_reserved(z, start, end);
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
            t.index_of(start).unwrap_or(0),
            t.index_of(Pfn(end.0 - 1)).unwrap_or(0),
        );
        // Both walks over the range's slice of the table, not one call per frame; the first
        // skips a heap table's untouched pageblocks, absent throughout (all of a new zone's).
        if let Some(i) = t.first_present(first..last + 1) {
            return Err(RangeError::Overlap { pfn: t.pfn_of(i) });
        }
        // Memory added to a heap table's untouched pageblocks settles them first.
        t.settle(first..last + 1);
        t.set_states(first..last + 1, FrameState::Tail);
        let max = z.max_order().get() as u32;
        let mut pfn = start.0;
        while pfn < end.0 {
            // Free in the largest chunks alignment allows (pfn 0 is max-order aligned).
            let mut order = if pfn == 0 {
                max
            } else {
                pfn.trailing_zeros().min(max)
            };
            // `end - pfn`, not `pfn + (1 << order)`: a zone may end at the top of the pfn
            // space, where the sum would wrap.
            while end.0 - pfn < (1u64 << order) {
                order -= 1;
            }
            let idx = t.index_of(Pfn(pfn)).unwrap_or(0);
            z.managed_pages += 1u64 << order;
            z.split_large_buddy(t, idx, Order::from_raw(order as u8), FreePlacement::ToTail);
            pfn += 1u64 << order;
        }
        Ok(end.0 - start.0)
    }

    /// `free_reserved_area` for a lone zone: hands `start..end` to the allocator the way the
    /// kernel frees its init memory after boot (`free_reserved_page` →
    /// `adjust_managed_page_count`), without recomputing watermarks or PCP sizes. A lone
    /// zone has no zone above it, so its lowmem reserve stays 0 either way. Returns the pages
    /// added.
    pub fn free_reserved_area(&self, start: Pfn, end: Pfn) -> Result<u64, RangeError> {
        let mut z = self.lock();
        self.add_free_range_locked(&mut z, start, end)
    }

    /// Sets `present_pages` (RAM in the span, managed or reserved), as the memory map says.
    pub fn set_present_pages(&self, pages: u64) {
        self.lock().present_pages = pages;
    }

    /// Writes `vm.percpu_pagelist_high_fraction` for this zone
    /// (`percpu_pagelist_high_fraction_sysctl_handler` → `zone_set_pageset_high_and_batch`):
    /// `batch` and the `high` bounds are recomputed from the managed pages and low watermark
    /// of now; the watermarks are not. 0 or at least 8.
    pub fn set_high_fraction(&self, fraction: u32) -> Result<(), ConfigError> {
        if fraction != 0 && fraction < 8 {
            return Err(ConfigError::BadPcp("high_fraction must be 0 or >= 8"));
        }
        let mut z = self.lock();
        z.high_fraction = fraction;
        self.pcp_update(z.managed_pages, z.wmark.mark(1), fraction);
        Ok(())
    }

    /// Sets the lowmem reserve alone (`setup_per_zone_lowmem_reserve`).
    pub(crate) fn apply_lowmem_reserve(&self, reserve: [u64; crate::types::MAX_NR_ZONES]) {
        let mut z = self.lock();
        z.lowmem_reserve = reserve;
        z.marks_dirty = true;
    }

    /// [`Zone::add_free_range_locked`] of a range that overlaps the reserved frames (the
    /// table of [`Zone::from_uninit_carved`]): the parts below and above them, all or
    /// nothing.
    fn add_free_range_around_reserved(
        &self,
        z: &mut BuddyZone,
        start: Pfn,
        end: Pfn,
    ) -> Result<u64, RangeError> {
        let (rs, re) = self.reserved;
        let parts = [(start.0, rs.min(end.0)), (re.max(start.0), end.0)];
        let parts = parts.iter().filter(|(s, e)| s < e);
        for &(s, e) in parts.clone() {
            // The checks `add_free_range_locked` makes, first, so that a refused part adds
            // nothing of the other.
            if s < self.span.0 || e > self.span.1 {
                return Err(RangeError::OutOfZone { pfn: Pfn(s) });
            }
            for pfn in s..e {
                let i = self.table.index_of(Pfn(pfn)).unwrap_or(0);
                if self.table.state(i) != FrameState::Absent {
                    return Err(RangeError::Overlap { pfn: Pfn(pfn) });
                }
            }
        }
        let mut added = 0;
        for &(s, e) in parts {
            added += self.add_free_range_locked(z, Pfn(s), Pfn(e))?;
        }
        Ok(added)
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
        self.pcp_update(z.managed_pages, z.wmark.mark(1), z.high_fraction);
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
            self.set_zone_flag(ZoneBits::MOBILITY_DISABLED);
        } else {
            self.shared.clear_flag(ZoneBits::MOBILITY_DISABLED);
        }
    }

    /// `zone_pcp_update`: recompute batch and high bounds from managed pages and the low
    /// watermark (`zone_set_pageset_high_and_batch`), honouring the configured overrides.
    fn pcp_update(&self, managed: u64, low_wmark: u64, high_fraction: u32) {
        let c = &self.cfg.pcp;
        let batch = c
            .batch
            .unwrap_or_else(|| zone_batchsize(managed, self.cfg.page_size));
        // zone_highsize: split across the CPUs local to the zone's node, or every CPU where
        // the node has none.
        let cpus = match c.split_cpus {
            Some(n) if n > 0 => n,
            _ => self.pcp.cpus() as u32,
        };
        let (mut hmin, mut hmax) = if high_fraction != 0 {
            let h = zone_highsize(managed, low_wmark, batch, cpus, high_fraction);
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
        // 6.1 zone_set_pageset_high_and_batch: one `high`, zone_highsize(low watermark or
        // fraction); nothing tunes it.
        if c.high_mode == crate::config::HighMode::Fixed {
            hmax = hmin;
        }
        self.pcp
            .set_params(batch, hmin, hmax.max(hmin), self.cfg.page_size);
    }
}
