//! [`Node`]: the zones of one NUMA node, tried in zonelist order, and the allocation walk
//! shared by a node and a lone zone (`get_page_from_freelist`, `__alloc_pages_slowpath`).

use crate::buddy::{setup_node_watermarks, ZoneSize};
use crate::config::ZoneConfig;
use crate::error::{AllocError, ConfigError, FreeError, RangeError};
use crate::pcp::PcpAccess;
use crate::request::AllocRequest;
use crate::stats::FreeAreaSnapshot;
use crate::types::{CpuId, MigrateType, Order, Pfn, ZoneType, MAX_NR_ZONES};
use crate::zone::{alloc_walk, Zone, ZoneList};

/// Up to one zone of each [`ZoneType`], in ascending type order with disjoint spans.
#[derive(Debug)]
pub struct Node {
    id: u32,
    zones: [Option<Zone>; MAX_NR_ZONES],
    count: usize,
}

impl Node {
    /// A node of the given zones, which must be in ascending zone-type order with disjoint,
    /// ascending spans. Watermarks are computed across them, as `__setup_per_zone_wmarks`
    /// does for a node.
    pub fn new(id: u32, zones: impl IntoIterator<Item = Zone>) -> Result<Node, ConfigError> {
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

    /// A node built from a firmware memory map the way x86-64 lays out zones: DMA below
    /// 16 MiB, DMA32 below 4 GiB, Normal above. Each zone spans from its first to its last
    /// usable frame; holes and reserved regions inside stay absent. Metadata tables are
    /// allocated on the heap.
    #[cfg(feature = "std")]
    pub fn from_memory_map(
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
        let mut pieces = std::vec::Vec::new();
        crate::memmap::usable_frames(regions, ps, |s, e| pieces.push((s.0, e.0)));
        let mut zones = std::vec::Vec::new();
        for &(t, lo, hi) in &bounds {
            let clipped = pieces
                .iter()
                .map(|&(s, e)| (s.max(lo), e.min(hi)))
                .filter(|&(s, e)| s < e);
            let (mut zs, mut ze) = (u64::MAX, 0u64);
            for (s, e) in clipped {
                zs = zs.min(s);
                ze = ze.max(e);
            }
            if zs < ze {
                zones.push(Zone::new(t, Pfn(zs), Pfn(ze), cfg)?);
            }
        }
        let node = Node::new(id, zones)?;
        for &(s, e) in &pieces {
            // Pieces are disjoint and inside the zones by construction.
            node.add_free_range(Pfn(s), Pfn(e))
                .map_err(ConfigError::Range)?;
        }
        Ok(node)
    }

    /// The node id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The zones, lowest type first.
    pub fn zones(&self) -> impl DoubleEndedIterator<Item = &Zone> + Clone {
        self.zones[..self.count].iter().flatten()
    }

    /// The zone of a type, if the node has one.
    pub fn zone(&self, t: ZoneType) -> Option<&Zone> {
        self.zones().find(|z| z.zone_type() == t)
    }

    /// The zone whose span contains `pfn`.
    pub fn zone_of(&self, pfn: Pfn) -> Option<&Zone> {
        self.zones().find(|z| z.spans(pfn))
    }

    /// `setup_per_zone_wmarks` over the node, then `page_group_by_mobility_disabled`.
    pub fn setup_watermarks(&self) {
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
        let (wm, reserve) = setup_node_watermarks(&sizes[..n], &cfgs[..n]);
        // build_all_zonelists: vm_total_pages = pages above the high marks of all zones.
        let above_high: u64 = (0..n)
            .map(|i| sizes[i].managed.saturating_sub(wm[i].high))
            .sum();
        let pb_pages = 1u64 << cfgs.first().map_or(9, |c| c.pageblock_order);
        let disabled = above_high < pb_pages * crate::types::MIGRATE_TYPES as u64;
        for (i, z) in self.zones().enumerate() {
            z.apply_watermarks(wm[i], reserve[i], Some(disabled));
        }
    }

    /// Hands `start..end` to the zones that span it, then recomputes the node's watermarks.
    /// The range may cross zone boundaries; parts outside every zone are an error and nothing
    /// is added then.
    pub fn add_free_range(&self, start: Pfn, end: Pfn) -> Result<u64, RangeError> {
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
        self.setup_watermarks();
        self.debug_check("Node::add_free_range");
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
        let mut list: [&Zone; MAX_NR_ZONES] = [first; MAX_NR_ZONES];
        let mut n = 1;
        for z in allowed {
            list[n] = z;
            n += 1;
        }
        let zonelist = ZoneList { zones: &list[..n] };
        let cpu = req
            .cpu
            .map_or_else(|| crate::sync::current_cpu() as usize, |c| c.0 as usize);
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
