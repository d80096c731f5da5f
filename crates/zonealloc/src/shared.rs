//! The part of a zone's state that is read without the zone lock: free-page counts, watermarks,
//! lowmem reserves, which free lists are non-empty, and the zone flags.
//!
//! Linux reads `NR_FREE_PAGES`, the watermarks and `free_area[].nr_free` racily in
//! `zone_watermark_fast` before it takes any lock, and keeps `ZONE_BELOW_HIGH` as an atomic
//! bit. zonealloc does the same: the buddy state under the zone lock is authoritative, and each
//! release of the lock publishes the fields below (a handful of relaxed stores), so the
//! allocation fast path checks watermarks with plain loads and no lock.

use crate::request::AllocFlags;
use crate::sync::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use crate::types::{MigrateType, Order, MAX_NR_ZONES, MIGRATE_PCPTYPES};

bitflags::bitflags! {
    /// The bits of [`ZoneShared::flags`]: the kernel's zone flags that change without the zone
    /// lock, and the other reasons to leave the PCP hit paths, each of which keeps them off
    /// while set (`Zone::set_zone_flag`, `Zone::pcp_enter`).
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub(crate) struct ZoneBits: u8 {
        /// `ZONE_BELOW_HIGH`.
        const ZONE_BELOW_HIGH = 1;
        /// `ZONE_RECLAIM_ACTIVE` (set by the caller; there is no kswapd).
        const ZONE_RECLAIM_ACTIVE = 2;
        /// `page_group_by_mobility_disabled`. A global in the kernel, kept beside the zone
        /// flags so that the allocation fast path tests one byte for every reason to leave it.
        const MOBILITY_DISABLED = 4;
        /// The zone has no per-CPU lists (fixed at construction), so that the PCP hit paths
        /// need no separate test.
        const PCP_OFF = 8;
        /// The bits that are kernel zone flags.
        const ZONE_FLAGS = Self::ZONE_BELOW_HIGH.bits() | Self::ZONE_RECLAIM_ACTIVE.bits();
    }
}

/// Non-empty free lists, one byte (a bit per migratetype) per order, packed eight orders to a
/// word.
pub(crate) const NONEMPTY_WORDS: usize = 3;

/// The bits of one order's byte in [`ZoneShared::nonempty`] that are PCP types.
const PCP_TYPE_BITS: u8 = (1 << MIGRATE_PCPTYPES) - 1;

/// For each byte position `i` of a [`ZoneShared::nonempty`] word: the PCP-type bits of the
/// orders at `i` and above in that word.
const NONEMPTY_FROM: [u64; 8] = {
    let word = u64::from_ne_bytes([PCP_TYPE_BITS; 8]);
    let mut m = [0; 8];
    let mut i = 0;
    while i < 8 {
        m[i] = word << (8 * i);
        i += 1;
    }
    m
};

#[derive(Debug)]
pub(crate) struct ZoneShared {
    pub(crate) nr_free_pages: AtomicU64,
    /// The HighAtomic pages a watermark check holds back: `nr_free_highatomic`, or
    /// `nr_reserved_highatomic` under `HighatomicUnusable::Reserved` (6.1).
    pub(crate) nr_free_highatomic: AtomicU64,
    /// min, low, high, each including the boost.
    pub(crate) marks: [AtomicU64; 3],
    /// `_watermark[WMARK_MIN]` without the boost.
    pub(crate) min_unboosted: AtomicU64,
    pub(crate) boost: AtomicU64,
    pub(crate) lowmem_reserve: [AtomicU64; MAX_NR_ZONES],
    pub(crate) nonempty: [AtomicU64; NONEMPTY_WORDS],
    /// The order-0 test of `zone_watermark_fast` at the high mark, precomputed at each publish:
    /// free pages less the HighAtomic reserve (at least 0), less the boosted high mark, as an
    /// `i64` in two's complement. An order-0 request passes that test when this exceeds its
    /// `lowmem_reserve`.
    pub(crate) order0_high_headroom: AtomicU64,
    /// [`ZoneBits`]: zero exactly when the PCP hit paths may run. Set through
    /// `Zone::set_zone_flag`, so that the hit paths need not read it (they test the CPU's
    /// `PcpSlot::attention`, which `Zone::pcp_enter` turns off while a bit is set).
    pub(crate) flags: AtomicU8,
    /// Recorded tracepoint events are waiting to be taken ([`crate::tracepoint`]).
    pub(crate) events_pending: AtomicBool,
    /// The CPU index the zone's operations run on (`smp_processor_id`) for the vmstat lag:
    /// set without the lock (`Zone::set_stat_cpu`, at each change of CPU), taken into
    /// `StatDrift::cpu` by each lock while the lag is modelled.
    pub(crate) stat_cpu: AtomicU32,
    max_order: u8,
}

#[inline]
fn ld(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

impl ZoneShared {
    pub(crate) fn new(max_order: Order, pcp_enabled: bool) -> Self {
        let max_order = max_order.get();
        ZoneShared {
            nr_free_pages: AtomicU64::new(0),
            nr_free_highatomic: AtomicU64::new(0),
            marks: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
            min_unboosted: AtomicU64::new(0),
            boost: AtomicU64::new(0),
            lowmem_reserve: [
                AtomicU64::new(0),
                AtomicU64::new(0),
                AtomicU64::new(0),
                AtomicU64::new(0),
                AtomicU64::new(0),
                AtomicU64::new(0),
            ],
            nonempty: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
            order0_high_headroom: AtomicU64::new(0),
            flags: AtomicU8::new(if pcp_enabled {
                0
            } else {
                ZoneBits::PCP_OFF.bits()
            }),
            events_pending: AtomicBool::new(false),
            stat_cpu: AtomicU32::new(0),
            max_order,
        }
    }

    #[inline]
    pub(crate) fn test_flag(&self, bit: ZoneBits) -> bool {
        self.flags.load(Ordering::Relaxed) & bit.bits() != 0
    }

    /// `page_group_by_mobility_disabled`.
    #[inline]
    pub(crate) fn mobility_disabled(&self) -> bool {
        self.test_flag(ZoneBits::MOBILITY_DISABLED)
    }

    /// Whether an order-0 request limited to zone `highest_zoneidx` passes
    /// `zone_watermark_fast` at the high mark by its order-0 shortcut (what
    /// `get_page_from_freelist` checks first while `ZONE_BELOW_HIGH` is clear).
    #[inline(always)]
    pub(crate) fn order0_above_high(&self, highest_zoneidx: usize) -> bool {
        ld(&self.order0_high_headroom) as i64 > ld(&self.lowmem_reserve[highest_zoneidx]) as i64
    }

    /// `zone_watermark_fast` at the high mark for an order above 0 with the fast path's flags
    /// (no reserves): `__zone_watermark_ok`'s page test from the order-0 headroom (equal to
    /// it whenever free pages exceed the HighAtomic reserve, and failing otherwise, as the
    /// exact test then does), then its search for a free block of `order` or above on a PCP
    /// type's lists.
    #[inline(always)]
    pub(crate) fn above_high_fast(&self, order: Order, highest_zoneidx: usize) -> bool {
        // headroom - (2^order - 1) > reserve, as (headroom - reserve) >> order >= 1 (an
        // arithmetic shift is a division rounding down): no mask to build.
        let room = (ld(&self.order0_high_headroom) as i64)
            .wrapping_sub(ld(&self.lowmem_reserve[highest_zoneidx]) as i64);
        if room >> order.get() <= 0 {
            return false;
        }
        // The word holding `order`'s byte answers for `order` and the orders above it there
        // (the bytes of orders above `max_order` stay zero); the rest only when it says no.
        // (The masks come from a table: one memory operand instead of a shift of a constant
        // that needs a register of its own.)
        if let Some(word) = self.nonempty.get(order.index() / 8) {
            if ld(word) & NONEMPTY_FROM[order.index() % 8] != 0 {
                return true;
            }
        }
        ((order.get() | 7) + 1..=self.max_order)
            .any(|o| self.nonempty_bits(Order::from_raw(o)) & PCP_TYPE_BITS != 0)
    }

    #[inline]
    pub(crate) fn clear_flag(&self, bit: ZoneBits) {
        if self.test_flag(bit) {
            self.flags.fetch_and(!bit.bits(), Ordering::Relaxed);
        }
    }

    /// The boosted mark for index 0 (min), 1 (low) or 2 (high) (`wmark_pages`).
    #[inline]
    pub(crate) fn mark(&self, index: usize) -> u64 {
        ld(&self.marks[index.min(2)])
    }

    #[inline]
    fn nonempty_bits(&self, order: Order) -> u8 {
        let word = ld(&self.nonempty[order.index() / 8]);
        (word >> ((order.index() % 8) * 8)) as u8
    }

    /// `__zone_watermark_unusable_free`.
    #[inline]
    fn unusable_free(&self, order: Order, flags: AllocFlags) -> i64 {
        let mut unusable = (1i64 << order.get()) - 1;
        if !flags.intersects(AllocFlags::RESERVES) {
            unusable += ld(&self.nr_free_highatomic) as i64;
        }
        unusable
    }

    /// `__zone_watermark_ok`.
    #[inline]
    pub(crate) fn watermark_ok_with(
        &self,
        order: Order,
        mark: u64,
        highest_zoneidx: usize,
        flags: AllocFlags,
        free_pages: i64,
    ) -> bool {
        let free = free_pages - self.unusable_free(order, flags);
        let mut min = mark as i64;
        if flags.intersects(AllocFlags::RESERVES) {
            if flags.intersects(AllocFlags::MIN_RESERVE) {
                min -= min / 2;
                if flags.intersects(AllocFlags::NON_BLOCK) {
                    min -= min / 4;
                }
            }
            if flags.intersects(AllocFlags::OOM) {
                min -= min / 2;
            }
        }
        if free <= min + ld(&self.lowmem_reserve[highest_zoneidx]) as i64 {
            return false;
        }
        if order == Order::ZERO {
            return true;
        }
        let pcp_types = (1u8 << MIGRATE_PCPTYPES) - 1;
        let ha = 1u8 << MigrateType::HighAtomic.index();
        let use_ha = flags.intersects(AllocFlags::HIGHATOMIC.with(AllocFlags::OOM));
        for o in order.through(Order::from_raw(self.max_order)) {
            let bits = self.nonempty_bits(o);
            if bits & pcp_types != 0 || (use_ha && bits & ha != 0) {
                return true;
            }
        }
        false
    }

    /// `zone_watermark_ok`.
    pub(crate) fn watermark_ok(
        &self,
        order: Order,
        mark: u64,
        hz: usize,
        flags: AllocFlags,
    ) -> bool {
        self.watermark_ok_with(order, mark, hz, flags, ld(&self.nr_free_pages) as i64)
    }

    /// `zone_watermark_fast`.
    #[inline]
    pub(crate) fn watermark_fast(
        &self,
        order: Order,
        mark: u64,
        highest_zoneidx: usize,
        flags: AllocFlags,
    ) -> bool {
        let free = ld(&self.nr_free_pages) as i64;
        if order == Order::ZERO {
            let reserved = self.unusable_free(Order::ZERO, flags);
            let usable = free - free.min(reserved);
            if usable > (mark + ld(&self.lowmem_reserve[highest_zoneidx])) as i64 {
                return true;
            }
        }
        if self.watermark_ok_with(order, mark, highest_zoneidx, flags, free) {
            return true;
        }
        if order == Order::ZERO
            && flags.intersects(AllocFlags::MIN_RESERVE)
            && ld(&self.boost) != 0
            && flags.wmark_index() == 0
        {
            let min = ld(&self.min_unboosted);
            return self.watermark_ok_with(order, min, highest_zoneidx, flags, free);
        }
        false
    }
}
