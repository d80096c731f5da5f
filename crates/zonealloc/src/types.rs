//! Newtypes for every quantity the allocator deals in.
//!
//! Linux passes bare `unsigned long pfn` and `unsigned int order` around; zonealloc gives each
//! its own type so that a page count can never be confused with a frame number, and an order is
//! validated once, where it enters the library.

use core::fmt;

/// A page frame number: the physical (or device, or block) address divided by the page size.
///
/// Linux: `unsigned long pfn`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pfn(pub u64);

impl Pfn {
    /// The frame number as an integer.
    #[inline]
    pub const fn get(self) -> u64 {
        self.0
    }

    /// Whether the frame is aligned to a block of `order` (Linux: `IS_ALIGNED(pfn, 1 << order)`).
    #[inline]
    pub const fn is_aligned(self, order: Order) -> bool {
        self.0 & ((1u64 << order.0) - 1) == 0
    }

    /// The frame `n` frames after this one.
    #[inline]
    pub const fn add(self, n: u64) -> Pfn {
        Pfn(self.0 + n)
    }

    /// This frame rounded up to a block of `order`, or `None` when that block boundary would
    /// pass 2^64 (Linux: `ALIGN(pfn, 1 << order)`, checked).
    #[inline]
    pub const fn checked_align_up(self, order: Order) -> Option<Pfn> {
        match self.0.checked_next_multiple_of(1u64 << order.0) {
            Some(p) => Some(Pfn(p)),
            None => None,
        }
    }
}

impl fmt::Debug for Pfn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pfn({:#x})", self.0)
    }
}

impl fmt::Display for Pfn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl From<u64> for Pfn {
    fn from(v: u64) -> Self {
        Pfn(v)
    }
}

/// The largest `MAX_PAGE_ORDER` a zone may be configured with. Frame indices are `u32`, so a
/// zone spans at most 2^32 frames; order 20 (4 GiB blocks at 4 KiB pages) is far above any
/// kernel configuration (x86-64: 10; arm64 with 64 KiB pages: 13).
pub const MAX_ORDER_LIMIT: u8 = 20;

/// Number of slots in per-order arrays (`NR_PAGE_ORDERS` for the largest allowed max order).
pub const ORDER_SLOTS: usize = MAX_ORDER_LIMIT as usize + 1;

/// The order of a block: a block of order `n` is `2^n` contiguous, `2^n`-aligned frames.
///
/// An `Order` is always `<= MAX_ORDER_LIMIT`; whether it is also `<=` a zone's configured
/// `MAX_PAGE_ORDER` is checked by the zone (`AllocError::OrderTooLarge`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Order(u8);

impl Order {
    /// Order 0: a single frame.
    pub const ZERO: Order = Order(0);
    /// `PAGE_ALLOC_COSTLY_ORDER` (3): the largest order kept on the low-order PCP lists.
    pub const COSTLY: Order = Order(3);
    /// [`MAX_ORDER_LIMIT`]: the largest order any zone may be configured with.
    pub const LIMIT: Order = Order(MAX_ORDER_LIMIT);

    /// An order, or `None` if it exceeds [`MAX_ORDER_LIMIT`].
    #[inline]
    pub const fn new(order: u8) -> Option<Order> {
        if order <= MAX_ORDER_LIMIT {
            Some(Order(order))
        } else {
            None
        }
    }

    /// The order `N`, checked at compile time: `Order::of::<3>()` is order 3, and
    /// `Order::of::<21>()` does not build (it exceeds [`MAX_ORDER_LIMIT`]). For an order known
    /// only at run time use [`Order::new`].
    ///
    /// ```
    /// use zonealloc::Order;
    /// const EIGHT_FRAMES: Order = Order::of::<3>();
    /// assert_eq!(EIGHT_FRAMES.pages(), 8);
    /// ```
    ///
    /// ```compile_fail
    /// let _ = zonealloc::Order::of::<21>();
    /// ```
    #[inline]
    pub const fn of<const N: u8>() -> Order {
        const { assert!(N <= MAX_ORDER_LIMIT, "order exceeds MAX_ORDER_LIMIT") };
        Order(N)
    }

    /// The order as an integer.
    #[inline]
    pub const fn get(self) -> u8 {
        self.0
    }

    /// The order as an array index.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// Frames in a block of this order (`1 << order`).
    #[inline]
    pub const fn pages(self) -> u64 {
        1u64 << self.0
    }

    /// The orders from this one up to `last`, both included (the kernel's
    /// `for (o = order; o <= last; o++)`).
    #[inline]
    pub(crate) fn through(self, last: Order) -> impl DoubleEndedIterator<Item = Order> + Clone {
        (self.0..=last.0).map(Order)
    }

    /// Internal: an order known to be in range (callers derive it from a valid order).
    #[inline]
    pub(crate) const fn from_raw(order: u8) -> Order {
        debug_assert!(order <= MAX_ORDER_LIMIT);
        Order(order)
    }
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Page mobility classes (`enum migratetype`), with the kernel's numbers for a kernel built
/// without `CONFIG_CMA` (so `Isolate` is 4). The numbers are what the tracepoints print.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[repr(u8)]
pub enum MigrateType {
    /// `MIGRATE_UNMOVABLE`: kernel allocations that can never move.
    Unmovable = 0,
    /// `MIGRATE_MOVABLE`: user pages and others that compaction may migrate.
    Movable = 1,
    /// `MIGRATE_RECLAIMABLE`: caches that reclaim can free.
    Reclaimable = 2,
    /// `MIGRATE_HIGHATOMIC`: pageblocks reserved for high-order atomic allocations.
    HighAtomic = 3,
    /// `MIGRATE_ISOLATE`: pageblocks taken out of use (offlining, contiguous allocation).
    Isolate = 4,
}

/// `MIGRATE_PCPTYPES`: the migratetypes that have PCP lists and fall back to each other.
pub const MIGRATE_PCPTYPES: usize = 3;
/// `MIGRATE_TYPES`: number of migratetypes (free lists per order).
pub const MIGRATE_TYPES: usize = 5;

impl MigrateType {
    /// All migratetypes in kernel order.
    pub const ALL: [MigrateType; MIGRATE_TYPES] = [
        MigrateType::Unmovable,
        MigrateType::Movable,
        MigrateType::Reclaimable,
        MigrateType::HighAtomic,
        MigrateType::Isolate,
    ];

    /// The kernel's name (`migratetype_names[]`), as `/proc/pagetypeinfo` prints it.
    pub const fn name(self) -> &'static str {
        match self {
            MigrateType::Unmovable => "Unmovable",
            MigrateType::Movable => "Movable",
            MigrateType::Reclaimable => "Reclaimable",
            MigrateType::HighAtomic => "HighAtomic",
            MigrateType::Isolate => "Isolate",
        }
    }

    /// The migratetype with the kernel's number, or `None`.
    pub const fn from_index(i: usize) -> Option<MigrateType> {
        if i < MIGRATE_TYPES {
            Some(Self::ALL[i])
        } else {
            None
        }
    }

    /// The kernel's number, usable as an array index.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// `migratetype_is_mergeable`: the three PCP types may merge with each other across
    /// pageblocks; HighAtomic and Isolate blocks merge only with their own kind.
    #[inline]
    pub const fn is_mergeable(self) -> bool {
        (self as usize) < MIGRATE_PCPTYPES
    }

    /// Whether callers may request this type directly (only the three PCP types are GFP types).
    #[inline]
    pub const fn is_gfp_type(self) -> bool {
        (self as usize) < MIGRATE_PCPTYPES
    }
}

impl fmt::Display for MigrateType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A CPU number, as Linux's `smp_processor_id()` returns it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct CpuId(pub u32);

/// A number of base pages (frames). Linux counts most things in pages (`nr_free_pages`,
/// watermarks, `pcp->count`); this type keeps those apart from frame numbers.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct PageCount(pub u64);

/// Memory zones, in the kernel's order (`enum zone_type`). Allocation walks from the highest
/// zone a request allows down to zone 0, as the kernel's zonelist does.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[repr(u8)]
pub enum ZoneType {
    /// `ZONE_DMA`: the first 16 MiB on x86.
    Dma = 0,
    /// `ZONE_DMA32`: below 4 GiB.
    Dma32 = 1,
    /// `ZONE_NORMAL`: everything else that is directly mapped.
    Normal = 2,
    /// `ZONE_HIGHMEM`: 32-bit only.
    HighMem = 3,
    /// `ZONE_MOVABLE`: only movable allocations.
    Movable = 4,
    /// `ZONE_DEVICE`: device memory.
    Device = 5,
}

/// `MAX_NR_ZONES`.
pub const MAX_NR_ZONES: usize = 6;

impl ZoneType {
    /// All zone types in kernel order.
    pub const ALL: [ZoneType; MAX_NR_ZONES] = [
        ZoneType::Dma,
        ZoneType::Dma32,
        ZoneType::Normal,
        ZoneType::HighMem,
        ZoneType::Movable,
        ZoneType::Device,
    ];

    /// The kernel's zone name (`zone_names[]`), as `/proc/buddyinfo` prints it.
    pub const fn name(self) -> &'static str {
        match self {
            ZoneType::Dma => "DMA",
            ZoneType::Dma32 => "DMA32",
            ZoneType::Normal => "Normal",
            ZoneType::HighMem => "HighMem",
            ZoneType::Movable => "Movable",
            ZoneType::Device => "Device",
        }
    }

    /// The zone index (`zone_idx`).
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ZoneType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `pcp_allowed_order`: the orders the per-CPU lists take, up to `PAGE_ALLOC_COSTLY_ORDER`
/// and the THP order. The one statement of the rule: the lists use it through
/// `PcpPolicy::allowed_order`, the buddy for the `percpu_refill` field of its tracepoint, and
/// the lab's roll of a kernel's layout for which traced frees reach a list.
#[inline]
pub fn pcp_allowed_order(order: Order, thp_order: Option<u8>) -> bool {
    order <= Order::COSTLY || Some(order.get()) == thp_order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_rejects_values_above_limit() {
        assert!(Order::new(MAX_ORDER_LIMIT).is_some());
        assert!(Order::new(MAX_ORDER_LIMIT + 1).is_none());
        assert_eq!(Order::new(3).unwrap().pages(), 8);
    }

    #[test]
    fn migratetype_numbers_match_kernel_without_cma() {
        assert_eq!(MigrateType::Unmovable as u8, 0);
        assert_eq!(MigrateType::Movable as u8, 1);
        assert_eq!(MigrateType::Reclaimable as u8, 2);
        assert_eq!(MigrateType::HighAtomic as u8, 3);
        assert_eq!(MigrateType::Isolate as u8, 4);
        assert!(MigrateType::Reclaimable.is_mergeable());
        assert!(!MigrateType::HighAtomic.is_mergeable());
    }

    #[test]
    fn pfn_alignment() {
        assert!(Pfn(512).is_aligned(Order::of::<9>()));
        assert!(!Pfn(513).is_aligned(Order::of::<1>()));
        assert!(Pfn(513).is_aligned(Order::ZERO));
    }
}
