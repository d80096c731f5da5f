//! [`Node`]: the zones of one NUMA node, tried in zonelist order, and the allocation walk
//! shared by a node and a lone zone (`get_page_from_freelist`, `__alloc_pages_slowpath`).

use crate::buddy::{setup_node_watermarks, setup_per_zone_lowmem_reserve, Watermarks, ZoneSize};
use crate::config::ZoneConfig;
use crate::error::{AllocError, ConfigError, FreeError, RangeError};
use crate::pcp::PcpAccess;
use crate::platform::{DefaultPlatform, Platform};
use crate::request::AllocRequest;
use crate::stats::FreeAreaSnapshot;
use crate::types::{CpuId, MigrateType, Order, Pfn, ZoneType, MAX_NR_ZONES};
use crate::zone::{alloc_walk, Zone, ZoneList};

/// Up to one zone of each [`ZoneType`], in ascending type order with disjoint spans, on the
/// [`Platform`] `P` (see [`Zone`]).
pub struct Node<P: Platform = DefaultPlatform> {
    id: u32,
    zones: [Option<Zone<P>>; MAX_NR_ZONES],
    count: usize,
}

impl<P: Platform> core::fmt::Debug for Node<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Node")
            .field("id", &self.id)
            .field("zones", &self.zones)
            .field("count", &self.count)
            .finish()
    }
}

impl Node {
    /// A node built from a firmware memory map the way x86-64 lays out zones: DMA below
    /// 16 MiB, DMA32 below 4 GiB, Normal above. Each zone spans the node's span (its first
    /// to its last usable frame) clipped to the zone's bounds, as
    /// `zone_spanned_pages_in_node` does; holes and reserved regions inside stay absent.
    /// Metadata tables are allocated on the heap.
    #[cfg(feature = "std")]
    pub fn from_memory_map(
        id: u32,
        regions: &[crate::memmap::MemoryRegion],
        cfg: ZoneConfig,
    ) -> Result<Node, ConfigError> {
        Node::boot(id, regions, &[], cfg)
    }

    /// A node booted the way the kernel boots one, with no SMP-alternatives memory:
    /// [`Node::boot_with`] with `late` as its [`BootFrees::late`].
    #[cfg(feature = "std")]
    pub fn boot(
        id: u32,
        regions: &[crate::memmap::MemoryRegion],
        late: &[(Pfn, Pfn)],
        cfg: ZoneConfig,
    ) -> Result<Node, ConfigError> {
        let frees = BootFrees {
            smp_alternatives: &[],
            late,
        };
        Node::boot_with(id, regions, &frees, cfg)
    }

    /// A node booted the way the kernel boots one (`init/main.c`): the zones of
    /// [`Node::from_memory_map`] get their usable frames except the init memory of `frees`
    /// (`memblock_free_all`); then, in initcall order:
    /// - `init_per_zone_wmark_min` (`postcore_initcall`): `calculate_min_free_kbytes`, the
    ///   watermarks, PCP sizes and lowmem reserve;
    /// - `free_smp_locks` (`arch_initcall`, where `cfg.smp_locks_free` is
    ///   [`SmpLocksFree::ArchInitcall`](crate::config::SmpLocksFree::ArchInitcall); before the initcalls otherwise): the
    ///   SMP-alternatives memory, by [`Node::free_reserved_area`];
    /// - `hugepage_init` (`subsys_initcall`): where khugepaged starts
    ///   (`cfg.thp_min_free_kbytes`, and at least `cfg.thp_min_totalram_mib` of managed
    ///   memory), `set_recommended_min_free_kbytes` and the watermark setup that follows it;
    /// - the `late` frees (initrd, `free_initmem`, `mark_rodata_ro`), which leave the
    ///   watermarks and PCP sizes as they were.
    ///
    /// Each zone's present pages are the RAM the map gives it (reserved cuts included). The
    /// `frees` must lie in usable, unreserved memory.
    #[cfg(feature = "std")]
    pub fn boot_with(
        id: u32,
        regions: &[crate::memmap::MemoryRegion],
        frees: &BootFrees<'_>,
        cfg: ZoneConfig,
    ) -> Result<Node, ConfigError> {
        let node = Node::zones_of_map(id, regions, cfg)?;
        let at_arch_initcall = node.add_early_memory(regions, frees, cfg)?;
        let mfk = node.init_per_zone_wmark_min();
        if at_arch_initcall {
            for &(s, e) in frees.smp_alternatives {
                node.free_reserved_area(s, e).map_err(ConfigError::Range)?;
            }
        }
        node.hugepage_init(mfk);
        for &(s, e) in frees.late {
            node.free_reserved_area(s, e).map_err(ConfigError::Range)?;
        }
        Ok(node)
    }

    /// `memblock_free_all` for one node: its usable pieces of `regions` less the memory
    /// `frees` hands back later (the late frees, and the SMP-alternatives memory where
    /// `cfg` frees it at an `arch_initcall`, which the result says).
    #[cfg(feature = "std")]
    pub(crate) fn add_early_memory(
        &self,
        regions: &[crate::memmap::MemoryRegion],
        frees: &BootFrees<'_>,
        cfg: ZoneConfig,
    ) -> Result<bool, ConfigError> {
        let node = self;
        let at_arch_initcall = cfg.smp_locks_free == crate::config::SmpLocksFree::ArchInitcall;
        let held: std::vec::Vec<(Pfn, Pfn)> = frees
            .late
            .iter()
            .chain(frees.smp_alternatives.iter().filter(|_| at_arch_initcall))
            .copied()
            .collect();
        // Early memory: the usable pieces less the memory freed later (memblock_free_all).
        let mut pieces = std::vec::Vec::new();
        crate::memmap::usable_frames(regions, cfg.page_size, |s, e| pieces.push((s.0, e.0)));
        for &(s, e) in &pieces {
            let mut cur = s;
            while cur < e {
                let cut = held
                    .iter()
                    .filter(|&&(ls, le)| le.0 > cur && ls.0 < e)
                    .min_by_key(|&&(ls, _)| ls.0);
                let (next, resume) = match cut {
                    Some(&(ls, le)) => (ls.0.max(cur), le.0.max(cur)),
                    None => (e, e),
                };
                if next > cur {
                    // Pieces are disjoint and inside the zones by construction.
                    node.add_early_range(Pfn(cur), Pfn(next))
                        .map_err(ConfigError::Range)?;
                }
                cur = resume;
            }
        }
        Ok(at_arch_initcall)
    }

    /// The zones of [`Node::from_memory_map`], with their present pages and nothing free.
    #[cfg(feature = "std")]
    pub(crate) fn zones_of_map(
        id: u32,
        regions: &[crate::memmap::MemoryRegion],
        cfg: ZoneConfig,
    ) -> Result<Node, ConfigError> {
        cfg.validate()?;
        let ps = cfg.page_size;
        let bounds = [
            (ZoneType::Dma, 0u64, (16u64 << 20) / ps),
            (ZoneType::Dma32, (16u64 << 20) / ps, (4u64 << 30) / ps),
            (ZoneType::Normal, (4u64 << 30) / ps, u64::MAX),
        ];
        // The RAM of the map, in whole frames (reserved cuts not applied: reserved RAM is
        // present, as memblock.memory is in the kernel).
        let ram = || {
            regions
                .iter()
                .filter(|r| r.kind == crate::memmap::RegionKind::Usable)
                .map(|r| (r.start.div_ceil(ps), r.start.saturating_add(r.len) / ps))
                .filter(|&(s, e)| s < e)
        };
        // zone_spanned_pages_in_node: the node's span clipped to the zone's bounds.
        let node_start = ram().map(|(s, _)| s).min().unwrap_or(0);
        let node_end = ram().map(|(_, e)| e).max().unwrap_or(0);
        let mut zones = std::vec::Vec::new();
        for &(t, lo, hi) in &bounds {
            let present: u64 = ram()
                .map(|(s, e)| e.min(hi).saturating_sub(s.max(lo)))
                .sum();
            let (zs, ze) = (node_start.max(lo), node_end.min(hi));
            // Only populated zones (present pages) are built.
            if present > 0 && zs < ze {
                let z = Zone::new(t, Pfn(zs), Pfn(ze), cfg)?;
                z.set_present_pages(present);
                zones.push(z);
            }
        }
        Node::new(id, zones)
    }
}

/// Init memory the kernel hands back to the allocator while it boots
/// (`free_init_pages` → `free_reserved_area`), by when: [`Node::boot_with`].
#[derive(Clone, Copy, Debug, Default)]
pub struct BootFrees<'a> {
    /// "Freeing SMP alternatives memory" (`__smp_locks`): freed before the initcalls or at
    /// an `arch_initcall`, as the configuration's
    /// [`smp_locks_free`](ZoneConfig::smp_locks_free) says.
    pub smp_alternatives: &'a [(Pfn, Pfn)],
    /// Freed after every watermark setup of boot: "Freeing initrd memory"
    /// (`populate_rootfs`), "unused decrypted", "unused kernel image (initmem)"
    /// (`free_initmem`), "text/rodata gap", "rodata/data gap" (`mark_rodata_ro`).
    pub late: &'a [(Pfn, Pfn)],
}

impl<P: Platform> Node<P> {
    /// A node of the given zones, which must be in ascending zone-type order with disjoint,
    /// ascending spans. Watermarks are computed across them, as `__setup_per_zone_wmarks`
    /// does for a node.
    pub fn new(id: u32, zones: impl IntoIterator<Item = Zone<P>>) -> Result<Self, ConfigError> {
        let mut node = Node {
            id,
            zones: Default::default(),
            count: 0,
        };
        let mut last: Option<(ZoneType, Pfn)> = None;
        for z in zones {
            if let Some((t, end)) = last {
                if z.zone_type() <= t || z.span().0 < end {
                    return Err(ConfigError::BadZoneLayout);
                }
            }
            last = Some((z.zone_type(), z.span().1));
            let slot = node.count;
            if slot >= MAX_NR_ZONES {
                return Err(ConfigError::BadZoneLayout);
            }
            node.zones[slot] = Some(z);
            node.count += 1;
        }
        node.setup_watermarks();
        Ok(node)
    }

    /// The node id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The zones, lowest type first.
    pub fn zones(&self) -> impl DoubleEndedIterator<Item = &Zone<P>> + Clone {
        self.zones[..self.count].iter().flatten()
    }

    /// The zone of a type, if the node has one.
    pub fn zone(&self, t: ZoneType) -> Option<&Zone<P>> {
        self.zones().find(|z| z.zone_type() == t)
    }

    /// The zone whose span contains `pfn`.
    pub fn zone_of(&self, pfn: Pfn) -> Option<&Zone<P>> {
        self.zones().find(|z| z.spans(pfn))
    }

    /// The managed pages and configuration of each zone, as the node-wide setups see them.
    pub(crate) fn sizes(&self) -> ([ZoneSize; MAX_NR_ZONES], [ZoneConfig; MAX_NR_ZONES], usize) {
        let mut sizes = [ZoneSize {
            zone_type: ZoneType::Normal,
            managed: 0,
        }; MAX_NR_ZONES];
        let mut cfgs = [ZoneConfig::default(); MAX_NR_ZONES];
        let mut n = 0;
        for z in self.zones() {
            sizes[n] = ZoneSize {
                zone_type: z.zone_type(),
                managed: z.managed_pages(),
            };
            cfgs[n] = *z.config();
            n += 1;
        }
        (sizes, cfgs, n)
    }

    /// `setup_per_zone_lowmem_reserve` alone, from the managed pages of now. 7.2 runs it on
    /// every `adjust_managed_page_count`; 6.1 also runs it whenever
    /// `/proc/sys/vm/lowmem_reserve_ratio` is read (its handler does not check `write`).
    pub fn setup_lowmem_reserve(&self) {
        let (sizes, cfgs, n) = self.sizes();
        let reserve = setup_per_zone_lowmem_reserve(&sizes[..n], &cfgs[..n]);
        for (i, z) in self.zones().enumerate() {
            z.apply_lowmem_reserve(reserve[i]);
        }
    }

    /// `free_reserved_area`: hands `start..end` (reserved until now) to the zones that span
    /// it, as the kernel frees its init memory after boot (`free_reserved_page` →
    /// `adjust_managed_page_count`). The watermarks and PCP sizes are not recomputed, in any
    /// version; the lowmem reserve is when the first zone's `lowmem_reserve_follows_managed`
    /// is on (7.2). Returns the pages added; on error nothing is added.
    pub fn free_reserved_area(&self, start: Pfn, end: Pfn) -> Result<u64, RangeError> {
        let added = self.add_early_range(start, end)?;
        if self
            .zones()
            .next()
            .is_some_and(|z| z.config().lowmem_reserve_follows_managed)
        {
            self.setup_lowmem_reserve();
        }
        Ok(added)
    }

    /// Writes `vm.percpu_pagelist_high_fraction` (0, or at least 8) for every zone: their
    /// `batch` and `high` bounds are recomputed from the managed pages and low watermarks of
    /// now (`percpu_pagelist_high_fraction_sysctl_handler`).
    pub fn set_high_fraction(&self, fraction: u32) -> Result<(), ConfigError> {
        for z in self.zones() {
            z.set_high_fraction(fraction)?;
        }
        Ok(())
    }

    /// `setup_per_zone_wmarks` over the node, then `page_group_by_mobility_disabled`.
    pub fn setup_watermarks(&self) {
        let (sizes, cfgs, n) = self.sizes();
        let (wm, reserve) = setup_node_watermarks(&sizes[..n], &cfgs[..n]);
        self.apply_watermarks(&wm, &reserve);
    }

    /// `init_per_zone_wmark_min` at boot: `calculate_min_free_kbytes` (no high marks yet),
    /// `setup_per_zone_wmarks`, `setup_per_zone_lowmem_reserve`. Returns the
    /// `min_free_kbytes` it set.
    #[cfg(feature = "std")]
    fn init_per_zone_wmark_min(&self) -> u64 {
        let (sizes, cfgs, n) = self.sizes();
        let unset = [Watermarks::default(); MAX_NR_ZONES];
        let mfk = crate::buddy::calculate_min_free_kbytes(&sizes[..n], &cfgs[..n], &unset);
        let wm = crate::buddy::setup_per_zone_wmarks(&sizes[..n], &cfgs[..n], mfk);
        let reserve = setup_per_zone_lowmem_reserve(&sizes[..n], &cfgs[..n]);
        self.apply_watermarks(&wm, &reserve);
        mfk
    }

    /// `hugepage_init` at boot, `mfk` being the `min_free_kbytes` of before: where
    /// khugepaged starts, `set_recommended_min_free_kbytes` and its `setup_per_zone_wmarks`
    /// over the managed pages of now; the lowmem reserve stays.
    #[cfg(feature = "std")]
    fn hugepage_init(&self, mfk: u64) {
        let (sizes, cfgs, n) = self.sizes();
        let mut wm = [Watermarks::default(); MAX_NR_ZONES];
        let mut reserve = [[0; MAX_NR_ZONES]; MAX_NR_ZONES];
        for (i, z) in self.zones().enumerate() {
            wm[i] = z.watermarks();
            reserve[i] = z.lowmem_reserve();
        }
        if let Some(raised) =
            crate::buddy::khugepaged_min_free_kbytes(&sizes[..n], &cfgs[..n], &wm[..n], mfk)
        {
            let wm = crate::buddy::setup_per_zone_wmarks(&sizes[..n], &cfgs[..n], raised);
            self.apply_watermarks(&wm, &reserve);
        }
    }

    /// Sets each zone's marks and reserve, and `page_group_by_mobility_disabled`.
    fn apply_watermarks(
        &self,
        wm: &[Watermarks; MAX_NR_ZONES],
        reserve: &[[u64; MAX_NR_ZONES]; MAX_NR_ZONES],
    ) {
        let (sizes, cfgs, n) = self.sizes();
        // build_all_zonelists: vm_total_pages = pages above the high marks of all zones.
        let above_high: u64 = (0..n)
            .map(|i| sizes[i].managed.saturating_sub(wm[i].high))
            .sum();
        let pb_pages = 1u64 << cfgs.first().map_or(9, |c| c.pageblock_order);
        let disabled = above_high < pb_pages * crate::types::MIGRATE_TYPES as u64;
        self.apply_marks(wm, reserve, disabled);
    }

    /// Sets each zone's marks and reserve, and `page_group_by_mobility_disabled` as given
    /// (a machine of several nodes decides it over all of them).
    pub(crate) fn apply_marks(
        &self,
        wm: &[Watermarks],
        reserve: &[[u64; MAX_NR_ZONES]; MAX_NR_ZONES],
        disabled: bool,
    ) {
        for ((z, w), r) in self.zones().zip(wm).zip(reserve) {
            z.apply_watermarks(*w, *r, Some(disabled));
        }
    }

    /// Hands `start..end` to the zones that span it, then recomputes the node's watermarks.
    /// The range may cross zone boundaries; parts outside every zone are an error and nothing
    /// is added then.
    pub fn add_free_range(&self, start: Pfn, end: Pfn) -> Result<u64, RangeError> {
        let added = self.add_early_range(start, end)?;
        self.setup_watermarks();
        self.debug_check("Node::add_free_range");
        Ok(added)
    }

    /// Hands `start..end` to the zones that span it and recomputes nothing.
    fn add_early_range(&self, start: Pfn, end: Pfn) -> Result<u64, RangeError> {
        if start >= end {
            return Err(RangeError::Empty { start, end });
        }
        // Validate every piece first so that an error adds nothing.
        let mut pfn = start;
        while pfn < end {
            let z = self.zone_of(pfn).ok_or(RangeError::OutOfZone { pfn })?;
            let piece_end = Pfn(end.0.min(z.span().1 .0));
            for p in pfn.0..piece_end.0 {
                if z.frame_state(Pfn(p)) != Some(crate::FrameState::Absent) {
                    return Err(RangeError::Overlap { pfn: Pfn(p) });
                }
            }
            pfn = piece_end;
        }
        let mut added = 0;
        let mut pfn = start;
        while pfn < end {
            let z = self.zone_of(pfn).ok_or(RangeError::OutOfZone { pfn })?;
            let piece_end = Pfn(end.0.min(z.span().1 .0));
            let mut g = z.lock();
            added += z.add_free_range_locked(&mut g, pfn, piece_end)?;
            pfn = piece_end;
        }
        Ok(added)
    }

    /// Allocates with the default request for `mt`.
    pub fn alloc(&self, order: Order, mt: MigrateType) -> Result<Pfn, AllocError> {
        self.alloc_with(order, AllocRequest::new(mt))
    }

    /// Allocates from the highest zone `req` allows, falling back to lower zones.
    pub fn alloc_with(&self, order: Order, req: AllocRequest) -> Result<Pfn, AllocError> {
        let mut allowed = self
            .zones()
            .rev()
            .filter(|z| z.zone_type() <= req.highest_zone);
        let Some(first) = allowed.next() else {
            return Err(AllocError::NoZone);
        };
        let mut list: [&Zone<P>; MAX_NR_ZONES] = [first; MAX_NR_ZONES];
        let mut n = 1;
        for z in allowed {
            list[n] = z;
            n += 1;
        }
        let zonelist = ZoneList {
            zones: &list[..n],
            nids: &[],
        };
        let cpu = req
            .cpu
            .map_or_else(|| P::current_cpu() as usize, |c| c.0 as usize);
        let got = alloc_walk(&zonelist, order, req, &mut PcpAccess::Cpu(cpu));
        self.debug_check("Node::alloc");
        got
    }

    /// [`Zone::debug_check`] on every zone.
    fn debug_check(&self, op: &'static str) {
        for z in self.zones() {
            z.debug_check(op);
        }
    }

    /// Frees a block in whichever zone holds it.
    pub fn free(&self, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        self.zone_of(pfn)
            .ok_or(FreeError::OutOfZone { pfn })?
            .free(pfn, order)
    }

    /// Frees a block on CPU `cpu`'s lists of whichever zone holds it (the counterpart of
    /// [`AllocRequest::on_cpu`], for deterministic multi-CPU runs).
    pub fn free_on(&self, cpu: CpuId, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        self.zone_of(pfn)
            .ok_or(FreeError::OutOfZone { pfn })?
            .free_on(cpu, pfn, order)
    }

    /// Drains every CPU's lists in every zone.
    pub fn drain_all(&self) {
        for z in self.zones() {
            z.drain_all();
        }
    }

    /// The periodic work of every zone (see [`Zone::tick`]).
    pub fn tick(&self) -> bool {
        let mut todo = false;
        for z in self.zones() {
            todo |= z.tick();
        }
        todo
    }

    /// Snapshots of every zone, for the `/proc` formatters.
    pub fn snapshots(&self) -> impl Iterator<Item = FreeAreaSnapshot> + '_ {
        self.zones().map(move |z| z.snapshot(self.id))
    }

    /// Checks every zone's invariants and returns what they counted, summed over the zones.
    pub fn check(&self) -> Result<crate::CheckFacts, crate::CheckError> {
        let mut total = crate::CheckFacts::default();
        for z in self.zones() {
            let f = z.check()?;
            total.free_pages += f.free_pages;
            total.allocated_pages += f.allocated_pages;
            total.allocated_blocks += f.allocated_blocks;
            total.pcp_pages += f.pcp_pages;
        }
        Ok(total)
    }
}
