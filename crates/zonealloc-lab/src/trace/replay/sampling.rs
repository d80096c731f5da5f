//! Fragmentation over a replay: the highest zone's free blocks per order, sampled as taken
//! (cheap: no list walk), and their unusable free space and fragmentation indices
//! (`mm/vmstat.c`'s `unusable_free_index`, `__fragmentation_index`) computed at the end for
//! the samples kept only.

use zonealloc::stats::{fragmentation_index, unusable_free_index};
use zonealloc::Zone;

use super::counts::FragSample;

/// The orders whose unusable free space index is sampled over time.
pub const FRAG_ORDERS: [u8; 3] = [3, 9, 10];

/// A fragmentation sample as taken: the highest zone's free blocks per order.
#[derive(Clone, Copy, Debug)]
struct RawSample {
    event: u64,
    ts_ns: Option<u64>,
    nr_free: [u64; zonealloc::MAX_ORDER_LIMIT as usize + 1],
}

/// The samples taken and kept so far, as taken: the indices are computed at the end for
/// these only, not for the ones thinning drops.
#[derive(Default)]
pub(super) struct Samples(Vec<RawSample>);

impl Samples {
    /// Samples `zone` after `event` trace events.
    pub(super) fn take(&mut self, zone: &Zone, event: u64, ts_ns: Option<u64>) {
        // Only the per-order free counts matter to both indices; `Zone::snapshot` would also
        // walk every free list and pageblock.
        self.0.push(RawSample {
            event,
            ts_ns,
            nr_free: zone.nr_free(),
        });
    }

    /// The samples kept.
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    /// Keeps every other sample, the second, fourth, ... (the sampling interval doubled).
    pub(super) fn thin(&mut self) {
        self.0 = self.0.drain(..).skip(1).step_by(2).collect();
    }

    /// The indices of every sample kept, of `zone` (the zone sampled); none without one.
    pub(super) fn finish(&mut self, zone: Option<&Zone>) -> Vec<FragSample> {
        let raw = std::mem::take(&mut self.0);
        match zone {
            Some(zone) => raw.iter().map(|r| frag_sample(zone, r)).collect(),
            None => Vec::new(),
        }
    }
}

/// The indices of one sample of `zone`.
fn frag_sample(zone: &Zone, raw: &RawSample) -> FragSample {
    let cfg = zone.config();
    let s = zonealloc::FreeAreaSnapshot {
        node: 0,
        zone_name: zone.zone_type().name(),
        max_order: cfg.max_order,
        pageblock_order: cfg.pageblock_order,
        nr_free: raw.nr_free,
        free_by_type: Default::default(),
        pageblocks_by_type: Default::default(),
    };
    FragSample {
        event: raw.event,
        t_s: raw.ts_ns.map(|t| t as f64 / 1e9),
        unusable: FRAG_ORDERS.map(|o| unusable_free_index(&s, o.min(s.max_order))),
        fragmentation_9: fragmentation_index(&s, 9.min(s.max_order)),
    }
}
