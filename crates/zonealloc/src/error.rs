//! Typed errors. Every error names the offending frame or value, and every operation that
//! returns one leaves the allocator exactly as it was before the call.

use core::fmt;

use crate::types::{CpuId, MigrateType, Order, Pfn};

/// Why an allocation failed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum AllocError {
    /// No zone allowed by the request had a free block of this order above its watermark.
    OutOfMemory {
        /// The requested order.
        order: Order,
        /// The requested migratetype.
        migratetype: MigrateType,
    },
    /// The order exceeds the zone's `MAX_PAGE_ORDER`.
    OrderTooLarge {
        /// The requested order.
        order: Order,
        /// The zone's maximum order.
        max: Order,
    },
    /// Only Unmovable, Movable and Reclaimable can be requested (the GFP migratetypes).
    InvalidMigrateType(MigrateType),
    /// The request named no populated zone (for example a zone limit below every zone).
    NoZone,
}

/// Why a bounded drain ([`Zone::drain_all_until`](crate::Zone::drain_all_until),
/// [`Zone::drain_all_timeout`](crate::Zone::drain_all_timeout)) stopped waiting. What could be
/// drained was; the rest keeps its pages.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DrainError {
    /// The owner of CPU `cpu` (a [`CpuHandle`](crate::CpuHandle)) did not serve the drain
    /// request in time: busy without polling, blocked without `idle`, or leaked.
    NoAnswer {
        /// The first CPU that did not answer.
        cpu: CpuId,
        /// How many CPUs did not answer.
        cpus: u32,
    },
    /// Another drain held the zone's drain mutex the whole time (itself waiting for an
    /// owner, typically).
    Busy,
}

/// Why a free was refused. The frame and the allocator are left untouched.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum FreeError {
    /// The frame is already free: in the buddy allocator or on a per-CPU list.
    DoubleFree {
        /// The frame passed to `free`.
        pfn: Pfn,
    },
    /// The frame lies inside an allocated block but is not its first frame.
    NotBlockHead {
        /// The frame passed to `free`.
        pfn: Pfn,
        /// The head of the allocated block that contains it.
        head: Pfn,
    },
    /// The block was allocated with another order.
    WrongOrder {
        /// The frame passed to `free`.
        pfn: Pfn,
        /// The order passed to `free`.
        given: Order,
        /// The order the block was allocated with.
        allocated: Order,
    },
    /// The frame is outside the zone's span (or outside every zone of a node).
    OutOfZone {
        /// The frame passed to `free`.
        pfn: Pfn,
    },
    /// The frame is inside the zone's span but was never handed to the allocator (a hole or a
    /// reserved range), so it cannot have been allocated.
    NotManaged {
        /// The frame passed to `free`.
        pfn: Pfn,
    },
    /// The frame is not aligned to the order given (a block of order n starts at a multiple
    /// of 2^n).
    Misaligned {
        /// The frame passed to `free`.
        pfn: Pfn,
        /// The order passed to `free`.
        order: Order,
    },
    /// The order exceeds the zone's `MAX_PAGE_ORDER`.
    OrderTooLarge {
        /// The frame passed to `free`.
        pfn: Pfn,
        /// The order passed to `free`.
        order: Order,
    },
}

/// Why a range could not be handed to (or described to) a zone.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum RangeError {
    /// `start >= end`.
    Empty {
        /// Start of the range.
        start: Pfn,
        /// End of the range (exclusive).
        end: Pfn,
    },
    /// Part of the range lies outside the zone's span; `pfn` is the first such frame.
    OutOfZone {
        /// First frame outside the zone.
        pfn: Pfn,
    },
    /// Part of the range was already added; `pfn` is the first frame already managed.
    Overlap {
        /// First frame that is already managed.
        pfn: Pfn,
    },
    /// A block or range not aligned to its order, or of an order above `max_order`
    /// ([`Zone::add_allocated_range`](crate::Zone::add_allocated_range),
    /// [`Zone::add_free_blocks`](crate::Zone::add_free_blocks)).
    Misaligned {
        /// The frame.
        pfn: Pfn,
        /// The order.
        order: crate::types::Order,
    },
    /// A free block named for a list other than its pageblock's migratetype, where the
    /// zone's rules keep the two together ([`Zone::add_free_blocks`](crate::Zone::add_free_blocks)).
    WrongList {
        /// A frame of the block in the pageblock of the other type.
        pfn: Pfn,
        /// The list asked for.
        list: crate::types::MigrateType,
        /// The pageblock's type.
        block: crate::types::MigrateType,
    },
}

/// Why a [`CpuHandle`](crate::CpuHandle) could not be created.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum HandleError {
    /// The zone has fewer CPUs.
    CpuOutOfRange {
        /// The CPU asked for.
        cpu: crate::types::CpuId,
        /// The zone's CPU count.
        cpus: u32,
    },
    /// Another handle owns this CPU.
    AlreadyRegistered {
        /// The CPU asked for.
        cpu: crate::types::CpuId,
    },
}

impl fmt::Display for HandleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            HandleError::CpuOutOfRange { cpu, cpus } => {
                write!(f, "CPU {} out of range: the zone has {cpus} CPUs", cpu.0)
            }
            HandleError::AlreadyRegistered { cpu } => {
                write!(f, "CPU {} already has a handle", cpu.0)
            }
        }
    }
}

impl core::error::Error for HandleError {}

/// Why a configuration was rejected.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum ConfigError {
    /// `max_order` exceeds [`crate::MAX_ORDER_LIMIT`].
    MaxOrderTooLarge(u8),
    /// `pageblock_order` exceeds `max_order`.
    PageblockOrderTooLarge {
        /// The configured pageblock order.
        pageblock_order: u8,
        /// The configured max order.
        max_order: u8,
    },
    /// The page size is not a power of two of at least 512 bytes.
    BadPageSize(u64),
    /// The zone span is empty or too large for 32-bit frame indices.
    BadSpan {
        /// Start of the span.
        start: Pfn,
        /// End of the span (exclusive).
        end: Pfn,
    },
    /// The span ends so close to 2^64 that a block of the largest order containing its last
    /// frame would pass 2^64: frame arithmetic (`pfn + (1 << order)`, the table's rounding)
    /// would wrap.
    SpanOverflow {
        /// Start of the span.
        start: Pfn,
        /// End of the span (exclusive).
        end: Pfn,
    },
    /// The caller-provided metadata table is too small for the span.
    TableTooSmall {
        /// Entries needed.
        needed: usize,
        /// Entries provided.
        provided: usize,
    },
    /// The caller-provided metadata table is in use by another zone: two zones over one
    /// table would hand out the same frames.
    TableInUse {
        /// The first entry found in use.
        entry: usize,
    },
    /// A caller-provided per-CPU slot is in use by another zone (or its lists are held by a
    /// leaked owner-only handle of a dropped one).
    PcpSlotInUse {
        /// The first slot found in use.
        slot: usize,
    },
    /// Watermarks must satisfy min <= low <= high.
    BadWatermarks,
    /// Zones of a node must not overlap and must be given in ascending zone-type order.
    BadZoneLayout,
    /// A PCP setting is out of range (message names which).
    BadPcp(&'static str),
    /// The heap could not hold the zone's metadata table.
    TableAllocation {
        /// Bytes the table needed.
        bytes: u64,
    },
    /// A range of a memory map could not be added (overlapping usable regions, say).
    Range(RangeError),
    /// Not a kernel version [`KernelVersion`](crate::config::KernelVersion) knows (`5.15`,
    /// `6.1`, `6.6`, `6.12`, `7.2`, `mainline`).
    UnknownKernel,
    /// A multi-node layout is inconsistent (message names which: node ids, distance table,
    /// CPU-to-node map).
    BadNuma(&'static str),
}

impl fmt::Display for DrainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DrainError::NoAnswer { cpu, cpus } => write!(
                f,
                "the owner of CPU {} did not drain its lists in time ({cpus} CPU(s) did not answer)",
                cpu.0
            ),
            DrainError::Busy => write!(f, "another drain held the drain mutex the whole time"),
        }
    }
}

impl core::error::Error for DrainError {}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AllocError::OutOfMemory { order, migratetype } => write!(
                f,
                "out of memory: no free order-{order} block for a {migratetype} allocation"
            ),
            AllocError::OrderTooLarge { order, max } => {
                write!(f, "order {order} exceeds the zone's maximum order {max}")
            }
            AllocError::InvalidMigrateType(mt) => write!(
                f,
                "migratetype {mt} cannot be requested (use Unmovable, Movable or Reclaimable)"
            ),
            AllocError::NoZone => write!(f, "no populated zone matches the request"),
        }
    }
}

impl fmt::Display for FreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FreeError::DoubleFree { pfn } => write!(f, "double free of frame {pfn}"),
            FreeError::NotBlockHead { pfn, head } => write!(
                f,
                "frame {pfn} is inside the allocated block at {head}, not its head"
            ),
            FreeError::WrongOrder {
                pfn,
                given,
                allocated,
            } => write!(
                f,
                "frame {pfn} freed with order {given} but was allocated with order {allocated}"
            ),
            FreeError::OutOfZone { pfn } => write!(f, "frame {pfn} is outside the zone"),
            FreeError::NotManaged { pfn } => {
                write!(
                    f,
                    "frame {pfn} is in a hole or reserved range, never managed"
                )
            }
            FreeError::Misaligned { pfn, order } => {
                write!(f, "frame {pfn} is not aligned to an order-{order} block")
            }
            FreeError::OrderTooLarge { pfn, order } => {
                write!(
                    f,
                    "frame {pfn} freed with order {order}, above the zone maximum"
                )
            }
        }
    }
}

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RangeError::Empty { start, end } => write!(f, "empty range {start}..{end}"),
            RangeError::OutOfZone { pfn } => write!(f, "frame {pfn} is outside the zone span"),
            RangeError::Overlap { pfn } => write!(f, "frame {pfn} was already added"),
            RangeError::Misaligned { pfn, order } => write!(
                f,
                "frame {pfn} is not the start of a block of order {} the zone takes",
                order.get()
            ),
            RangeError::WrongList { pfn, list, block } => write!(
                f,
                "a free block on the {list:?} list, but frame {pfn}'s pageblock is {block:?}"
            ),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ConfigError::MaxOrderTooLarge(o) => write!(
                f,
                "max_order {o} exceeds the limit {}",
                crate::types::MAX_ORDER_LIMIT
            ),
            ConfigError::PageblockOrderTooLarge {
                pageblock_order,
                max_order,
            } => write!(
                f,
                "pageblock_order {pageblock_order} exceeds max_order {max_order}"
            ),
            ConfigError::BadPageSize(s) => {
                write!(f, "page size {s} is not a power of two >= 512")
            }
            ConfigError::BadSpan { start, end } => write!(
                f,
                "zone span {start}..{end} is empty or exceeds 2^32 frames"
            ),
            ConfigError::SpanOverflow { start, end } => write!(
                f,
                "zone span {start}..{end} ends too close to 2^64: its largest blocks would wrap"
            ),
            ConfigError::TableTooSmall { needed, provided } => {
                write!(f, "metadata table has {provided} entries, {needed} needed")
            }
            ConfigError::TableInUse { entry } => write!(
                f,
                "metadata table entry {entry} belongs to another live zone (a table serves one zone at a time)"
            ),
            ConfigError::PcpSlotInUse { slot } => write!(
                f,
                "per-CPU slot {slot} belongs to another live zone (slots serve one zone at a time)"
            ),
            ConfigError::BadWatermarks => write!(f, "watermarks must satisfy min <= low <= high"),
            ConfigError::TableAllocation { bytes } => write!(
                f,
                "the zone's metadata table ({bytes} bytes) could not be allocated"
            ),
            ConfigError::BadNuma(what) => write!(f, "bad NUMA layout: {what}"),
            ConfigError::UnknownKernel => {
                f.write_str("unknown kernel version (known: 5.15, 6.1, 6.6, 6.12, 7.2, mainline)")
            }
            ConfigError::BadZoneLayout => write!(
                f,
                "zones must be given in ascending zone order and must not overlap"
            ),
            ConfigError::BadPcp(what) => write!(f, "bad per-CPU list setting: {what}"),
            ConfigError::Range(e) => write!(f, "memory map: {e}"),
        }
    }
}

impl core::error::Error for AllocError {}
impl core::error::Error for FreeError {}
impl core::error::Error for RangeError {}
impl core::error::Error for ConfigError {}

// An allocation's result fits in two registers (rustc returns such values in them), so that
// the out-of-line slow path of the entry points does not return through memory. (A free's
// result does not: `NotBlockHead` carries two frames. Its hit path, inlined, builds `Ok(())`
// in place; only a slow free returns through memory.)
const _: () = assert!(core::mem::size_of::<Result<crate::types::Pfn, AllocError>>() <= 16);
