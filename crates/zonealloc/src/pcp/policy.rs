//! The lists' geometry (which list an order and migratetype go on, `order_to_pindex`) and
//! the policy a zone's per-CPU lists share ([`PcpPolicy`]: the kernel-version rules).

use crate::buddy::BuddyZone;
use crate::config::{DrainMigratetype, FreeHigh, FreeScaling};
use crate::meta::FrameTable;
use crate::types::{pcp_allowed_order, MigrateType, Order, MIGRATE_PCPTYPES};

/// `NR_LOWORDER_PCP_LISTS`: three migratetypes times orders 0..=3 (`PAGE_ALLOC_COSTLY_ORDER`).
pub(crate) const NR_LOWORDER_PCP_LISTS: usize = MIGRATE_PCPTYPES * (Order::COSTLY.index() + 1);
/// The per-order counters of a CPU's lists: one slot per low order, then the THP order's.
pub(crate) const PCP_ORDER_SLOTS: usize = Order::COSTLY.index() + 2;
/// The counter slot of the THP order.
pub(crate) const THP_ORDER_SLOT: usize = PCP_ORDER_SLOTS - 1;
/// `NR_PCP_LISTS` with THP (one movable and one unmovable+reclaimable THP list).
pub(crate) const NR_PCP_LISTS: usize = NR_LOWORDER_PCP_LISTS + 2;

/// The list geometry and policy a zone's PCPs share.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PcpPolicy {
    /// The THP order with lists, if it is within the zone's max order.
    pub(crate) thp_order: Option<u8>,
    /// `thp_order`, or `u8::MAX` (no order) without one: one compare for the hit paths.
    pub(crate) thp_list_order: u8,
    /// `CONFIG_PCP_BATCH_SCALE_MAX`.
    pub(crate) scale: u8,
    pub(crate) free_high: FreeHigh,
    /// How `nr_pcp_free` sizes a drain (6.1's `free_factor` or 6.7+'s `free_count`).
    pub(crate) free_scaling: FreeScaling,
    /// `alloc_factor` grows refills (6.7+); off, refills are `batch` (6.1).
    pub(crate) alloc_scaling: bool,
    /// A drain on free runs in `batch`-sized chunks (7.2) rather than one call.
    pub(crate) drain_in_batches: bool,
    /// `decay_pcp_high` runs on ticks (6.7+).
    pub(crate) decay: bool,
    /// `ALLOC_HIGHATOMIC` does not refill an empty list (7.2).
    pub(crate) highatomic_no_refill: bool,
    /// `free_pcppages_bulk` frees with the type cached at free (6.1) or the pageblock's.
    pub(crate) drain_migratetype: DrainMigratetype,
    /// 5.15's `free_pcppages_bulk`: the `batch_free` round robin from list 0.
    pub(crate) drain_batch_free: bool,
}

impl PcpPolicy {
    /// `pcp_allowed_order` for this zone's geometry.
    #[inline]
    pub(crate) fn allowed_order(&self, order: Order) -> bool {
        pcp_allowed_order(order, self.thp_order)
    }

    /// `order_to_pindex`. `mt` must be a PCP type.
    #[inline]
    pub(crate) fn pindex(&self, mt: MigrateType, order: Order) -> usize {
        if order > Order::COSTLY {
            NR_LOWORDER_PCP_LISTS + (mt == MigrateType::Movable) as usize
        } else {
            MIGRATE_PCPTYPES * order.index() + mt.index()
        }
    }

    /// Slot of a PCP order in the per-order counters (0..=3, 4 for THP).
    #[inline]
    pub(crate) fn order_slot(order: Order) -> usize {
        order.index().min(THP_ORDER_SLOT)
    }

    /// 6.1's `get_pcppage_migratetype` for the block at `idx` on list `pindex`: the type
    /// cached when it went on the list. A block the PCP hit path freed caches nothing (that
    /// path stores a plain `Pcp` state); it was freed there only from a Unmovable, Movable or
    /// Reclaimable pageblock, onto that type's list, so the list tells the type at low
    /// orders and on the Movable THP list. On the other THP list (Unmovable and Reclaimable
    /// together) the pageblock's type now stands in: a THP-order block covers its pageblock
    /// (with `thp_order >= pageblock_order`, the usual geometry), which nothing can retype
    /// while the block sits on a list.
    /// "Pageblock could have been isolated meanwhile": an Isolate pageblock wins, as
    /// `free_pcppages_bulk`'s `isolated_pageblocks` test makes it.
    pub(crate) fn cached_migratetype(
        &self,
        z: &BuddyZone,
        t: &FrameTable,
        pindex: usize,
        idx: u32,
    ) -> MigrateType {
        let block = z.block_mt(t, idx);
        if block == MigrateType::Isolate {
            return block;
        }
        match t.pcp_cached(idx) {
            Some(mt) => mt,
            None if pindex < NR_LOWORDER_PCP_LISTS => {
                MigrateType::from_index(pindex % MIGRATE_PCPTYPES).unwrap_or(block)
            }
            None if pindex == NR_LOWORDER_PCP_LISTS + 1 => MigrateType::Movable,
            None => block,
        }
    }

    /// `pindex_to_order`.
    #[inline]
    pub(crate) fn order_of(&self, pindex: usize) -> Order {
        Order::from_raw(if pindex >= NR_LOWORDER_PCP_LISTS {
            self.thp_order.unwrap_or(0)
        } else {
            (pindex / MIGRATE_PCPTYPES) as u8
        })
    }
}
