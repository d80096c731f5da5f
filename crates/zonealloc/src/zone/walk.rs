//! The allocation walk shared by a node and a lone zone: `__alloc_frozen_pages` →
//! `get_page_from_freelist` over a zonelist, then `__alloc_pages_slowpath` without reclaim or
//! compaction (reserves, HighAtomic unreserve, PCP drain, retry).

use super::Zone;
use crate::error::AllocError;
use crate::pcp::PcpAccess;
use crate::platform::Platform;
use crate::request::{AllocFlags, AllocRequest};
use crate::types::{MigrateType, Order, Pfn, ZoneType};

/// The zones one request may use, preferred (highest) first; never empty.
pub(crate) struct ZoneList<'a, P: Platform> {
    pub(crate) zones: &'a [&'a Zone<P>],
    /// The node of each zone, where the zonelist spans several nodes; empty on one node
    /// (`nr_online_nodes == 1`), where `ALLOC_NOFRAGMENT` never looks at nodes.
    pub(crate) nids: &'a [u32],
}

impl<'a, P: Platform> ZoneList<'a, P> {
    #[inline]
    fn iter(&self) -> impl Iterator<Item = &'a Zone<P>> + 'a {
        self.zones.iter().copied()
    }

    /// alloc_flags_nofragment: "if (nr_online_nodes > 1 && !populated_zone(--zone)) return
    /// alloc_flags;": on several nodes, only where the preferred zone's own node has a
    /// populated DMA32 (the zone after it in the list, on the same node). One node is
    /// assumed to have one.
    fn dma32_below_preferred(&self) -> bool {
        self.nids.is_empty()
            || (self.nids.get(1) == self.nids.first()
                && self
                    .zones
                    .get(1)
                    .is_some_and(|z| z.zone_type() == ZoneType::Dma32))
    }
}

/// A lone zone's allocation: the same walk over a one-zone zonelist.
#[inline]
pub(crate) fn alloc_in_zone<P: Platform>(
    zone: &Zone<P>,
    order: Order,
    req: AllocRequest,
    access: &mut PcpAccess<'_>,
) -> Result<Pfn, AllocError> {
    alloc_walk(
        &ZoneList {
            zones: &[zone],
            nids: &[],
        },
        order,
        req,
        access,
    )
}

/// `get_page_from_freelist`: each zone in turn; with `ALLOC_NOFRAGMENT`, a second pass
/// without it.
#[inline]
fn get_page_from_freelist<P: Platform>(
    list: &ZoneList<'_, P>,
    order: Order,
    mt: MigrateType,
    mut flags: AllocFlags,
    hz: usize,
    access: &mut PcpAccess<'_>,
) -> Option<Pfn> {
    'retry: loop {
        for (i, z) in list.iter().enumerate() {
            // get_page_from_freelist: "if (no_fallback && nr_online_nodes > 1 && zone !=
            // ac->preferred_zoneref->zone)": a zone of another node than the preferred
            // zone's ends the fragment-avoiding pass; retry from the top without it.
            if i > 0
                && flags.intersects(AllocFlags::NOFRAGMENT)
                && list.nids.len() > i
                && list.nids[i] != list.nids[0]
            {
                flags = flags.without(AllocFlags::NOFRAGMENT);
                continue 'retry;
            }
            if let Some(p) = z.try_alloc(order, mt, flags, hz, access) {
                return Some(p);
            }
        }
        if flags.intersects(AllocFlags::NOFRAGMENT) {
            flags = flags.without(AllocFlags::NOFRAGMENT);
            continue;
        }
        return None;
    }
}

/// `__alloc_frozen_pages` without reclaim or compaction: the fast path at the low watermark,
/// then the slow path at min (with the caller's reserves), then for callers that may wait,
/// giving back HighAtomic reserves (and, with per-CPU lists, draining them) before retrying.
#[inline]
pub(crate) fn alloc_walk<P: Platform>(
    list: &ZoneList<'_, P>,
    order: Order,
    req: AllocRequest,
    access: &mut PcpAccess<'_>,
) -> Result<Pfn, AllocError> {
    let preferred = list.zones[0];
    if order.get() > preferred.config().max_order {
        return Err(AllocError::OrderTooLarge {
            order,
            max: preferred.max_order(),
        });
    }
    if !req.migratetype.is_gfp_type() {
        return Err(AllocError::InvalidMigrateType(req.migratetype));
    }
    let mt = preferred.effective_migratetype(req.migratetype);
    let hz = req.highest_zone.index();
    let oom = AllocError::OutOfMemory {
        order,
        migratetype: req.migratetype,
    };

    // Fast path. alloc_flags_nofragment: when the preferred zone is Normal, first try without
    // fragmenting pageblocks (the kernel assumes ZONE_DMA32 exists on a single node).
    let mut fast = req.fast_flags();
    if preferred.zone_type() == ZoneType::Normal && list.dma32_below_preferred() {
        fast = fast.with(AllocFlags::NOFRAGMENT);
    }
    if let Some(p) = get_page_from_freelist(list, order, mt, fast, hz, access) {
        return Ok(p);
    }

    // Slow path.
    let slow = req.slow_flags(order);
    if let Some(p) = get_page_from_freelist(list, order, mt, slow, hz, access) {
        return Ok(p);
    }
    if req.no_watermarks {
        let f = AllocFlags::NO_WATERMARKS.with(AllocFlags::KSWAPD);
        if let Some(p) = get_page_from_freelist(list, order, mt, f, hz, access) {
            return Ok(p);
        }
    }
    if !req.can_reclaim {
        preferred.count_alloc_failure();
        return Err(oom);
    }
    // __alloc_pages_direct_reclaim found nothing to reclaim: unreserve (keeping one block)
    // and drain every CPU's lists (`drain_all_pages(NULL)`), then retry once.
    for z in list.iter() {
        if z.unreserve_highatomic(mt, false) {
            break;
        }
    }
    for z in list.iter() {
        z.drain_all_for_reclaim(access);
    }
    if let Some(p) = get_page_from_freelist(list, order, mt, slow, hz, access) {
        return Ok(p);
    }
    // should_reclaim_retry before OOM: exhaust the HighAtomic reserve.
    loop {
        let released = list.iter().any(|z| z.unreserve_highatomic(mt, true));
        if !released {
            preferred.count_alloc_failure();
            return Err(oom);
        }
        if let Some(p) = get_page_from_freelist(list, order, mt, slow, hz, access) {
            return Ok(p);
        }
    }
}
