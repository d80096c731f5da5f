//! `ZONE_BELOW_HIGH` where the trace shows it set: a free that drains nothing under it
//! left the count below `high_min`.
//!
//! From 6.7, `get_page_from_freelist` sets a zone's `ZONE_BELOW_HIGH` when the zone fails
//! its high watermark check (`zone_watermark_fast` at `high_wmark_pages`, for the request's
//! order), and only `free_unref_page_commit` (7.2 `free_frozen_page_commit`) clears it, after
//! a drain that leaves the zone's free pages at the high mark. An allocation whose page lies
//! in a zone below one the request may use (no `__GFP_DMA`/`__GFP_DMA32` limit) was refused
//! by every zone above it on the zonelist first, each of which failed that check on the way
//! (a zone already below high skips it, set): the flag is set on those zones from that line
//! until a free-triggered drain of the zone, after which it is not known. (`__GFP_WRITE`
//! requests may pass a node over for its dirty limit instead: they say nothing.) Only an
//! order-0 allocation is read so: a higher order's check also wants a free block of the
//! order, and its `rmqueue` may fail where the check passed. 6.12-4g-wq p_pressure's THP
//! from DMA32 at 544.556017 came while Normal's CPU 3, some 1865 pages listed at
//! `high_min` 1281, freed with no drain: read as below high, that bounded its count at 1246.
//!
//! Under the flag, with `ZONE_RECLAIM_ACTIVE` clear and `high_min != high_max`,
//! `nr_pcp_high` returns `max(count, high_min)`: a free drains once the count reaches
//! `high_min`, whatever `high` is. A free that drains nothing then bounds the count below
//! `high_min`, not below the walk's upper bound of `high` (`Walk::other`).
//!
//! 6.12-4g-wq p_pressure, Normal CPU 0: `kmem-phases-1209`'s GFP_NOWAIT allocation at
//! 555.663997 took DMA32's 0x1097; its frees to 555.664153 drained nothing, and the next
//! one drained 64 pages (555.664180). The count was `high_min` (1281) after it, so 648 at the
//! marker, where zoneinfo printed 660 at its read with no event of CPU 0 between: 12 pages
//! left CPU 0's lists with no line (likely `alloc_pages_bulk`, which prints no
//! `mm_page_alloc`: the phase's tasks 1204 to 1209 start there while `dash-1080` runs on
//! CPU 0, and a vmalloc'd kernel stack takes its pages so). Started at 660, each `high - count - batch`
//! refill at 554.377 to 554.622 came 12 pages short and every later drain of CPU 0 moved.

use super::Walk;
use zonealloc::ZoneType;

impl Walk {
    /// An allocation on zone `zone` (the geometry's index) with `gfp_flags` text `gfp`: the
    /// zones above it on its node that the request may use are below their high mark.
    pub(super) fn allocated_in(&mut self, zone: usize, gfp: &str) {
        let Some(span) = self.geo.zones.get(zone) else {
            return;
        };
        let (node, ty) = (span.node, span.zone_type);
        let above =
            |z: &crate::trace::replay::geometry::ZoneSpan| z.node == node && z.zone_type > ty;
        if !self.geo.zones.iter().any(above) {
            return;
        }
        let Some(limit) = highest_zone(gfp) else {
            return;
        };
        for (z, span) in self.geo.zones.iter().enumerate() {
            if above(span) && span.zone_type <= limit {
                if let Some(b) = self.below_high.get_mut(z) {
                    *b = true;
                }
            }
        }
    }

    /// A drain a free triggered on `zone`: `ZONE_BELOW_HIGH` may have been cleared.
    pub(super) fn free_drained(&mut self, zone: usize) {
        if let Some(b) = self.below_high.get_mut(zone) {
            *b = false;
        }
    }

    /// Whether `zone` is known to be below its high mark (always `false` before 6.7).
    pub(super) fn below_high(&self, zone: usize) -> bool {
        !self.fixed_high && self.below_high.get(zone).copied().unwrap_or(false)
    }
}

/// `gfp_zone()`: the highest zone a request of the symbolic `gfp` may use, or `None` where
/// the text does not say (a number), or where the request may skip a node for its dirty
/// limit (`__GFP_WRITE`: `ALLOC_SPREAD_DIRTY`'s `node_dirty_ok`).
fn highest_zone(gfp: &str) -> Option<ZoneType> {
    if gfp.is_empty() || gfp.starts_with("0x") || gfp.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut limit = ZoneType::Movable;
    for f in gfp.split('|') {
        match f {
            "__GFP_WRITE" => return None,
            "GFP_DMA" | "__GFP_DMA" => limit = limit.min(ZoneType::Dma),
            "GFP_DMA32" | "__GFP_DMA32" => limit = limit.min(ZoneType::Dma32),
            _ => {}
        }
    }
    Some(limit)
}

#[cfg(test)]
mod tests;
