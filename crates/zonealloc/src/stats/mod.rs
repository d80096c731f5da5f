//! Observability: vmstat-style counters, `/proc/buddyinfo` and `/proc/pagetypeinfo` text, and
//! the fragmentation indices of `mm/vmstat.c`.
//!
//! Counters are plain integers inside the locked zone state (Linux's per-CPU vmstat diffs are
//! an optimisation of the same sums). The text formats and indices work on a
//! [`FreeAreaSnapshot`], taken under the zone lock in one pass, so they never hold the lock
//! while formatting.

mod frag;
mod hist;
mod procfs;

pub use frag::{extfrag_for_order, fragmentation_index, unusable_free_index, ContigPageInfo};
pub use hist::Histogram;
pub use procfs::{write_buddyinfo, write_extfrag_index, write_pagetypeinfo, write_unusable_index};

use crate::types::{MIGRATE_TYPES, ORDER_SLOTS};

/// Event counters of one zone (the `/proc/vmstat` subset a page allocator owns).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct ZoneStats {
    /// Successful allocations per order (`pgalloc_*` counts pages; this counts blocks).
    pub allocs: [u64; ORDER_SLOTS],
    /// Frees per order (blocks).
    pub frees: [u64; ORDER_SLOTS],
    /// Requests that failed entirely with this zone as the preferred one.
    pub alloc_failures: u64,
    /// Times a watermark-boosting fallback would have woken kswapd (`ZONE_BOOSTED_WATERMARK`
    /// seen with `ALLOC_KSWAPD`). No reclaim is modelled; the boost decays in `tick`.
    pub kswapd_wakeups: u64,
    /// Blocks split in `expand` (one per halving).
    pub splits: u64,
    /// Buddy merges in `__free_one_page` (one per order climbed).
    pub merges: u64,
    /// Allocations satisfied from another migratetype's lists (`pgalloc_extfrag`-like).
    pub fallbacks: u64,
    /// Whole pageblocks claimed for another migratetype by a fallback.
    pub claims: u64,
    /// Single blocks stolen without retyping their pageblock.
    pub steals: u64,
    /// Frees placed at the tail of a free list because `buddy_merge_likely` said so (seed 003).
    pub tail_placements: u64,
    /// Times the zone lock was taken.
    pub zone_lock_acquisitions: u64,
}

/// Zone-lock hold times, recorded while instrumentation is switched on
/// ([`Zone::set_instrumentation`](crate::Zone::set_instrumentation)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HoldTimes {
    /// Hold times of PCP refills (`rmqueue_bulk`).
    pub refill: Histogram,
    /// Hold times of PCP bulk frees (`free_pcppages_bulk`, one per chunk).
    pub bulk_free: Histogram,
}

/// The free-area state of one zone, copied under its lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FreeAreaSnapshot {
    /// NUMA node id (always 0 unless the caller builds several nodes).
    pub node: u32,
    /// Zone name as the kernel prints it (`DMA`, `DMA32`, `Normal`, ...).
    pub zone_name: &'static str,
    /// `MAX_PAGE_ORDER`.
    pub max_order: u8,
    /// `pageblock_order`.
    pub pageblock_order: u8,
    /// `free_area[order].nr_free`: free blocks per order over all migratetypes.
    pub nr_free: [u64; ORDER_SLOTS],
    /// Free blocks per migratetype and order, counted by walking each list; a walk stops at
    /// 100,000 entries as the kernel's does (the formatter then prints `>100000`).
    pub free_by_type: [[u64; ORDER_SLOTS]; MIGRATE_TYPES],
    /// Pageblocks per migratetype over the zone span.
    pub pageblocks_by_type: [u64; MIGRATE_TYPES],
}

impl FreeAreaSnapshot {
    /// Orders `0..=max_order`.
    pub fn orders(&self) -> core::ops::RangeInclusive<u8> {
        0..=self.max_order
    }
}
