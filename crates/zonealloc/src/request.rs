//! Allocation requests: the subset of GFP semantics a page allocator acts on, and their
//! translation into `ALLOC_*` flags (`prepare_alloc_pages`, `alloc_flags_nofragment`,
//! `gfp_to_alloc_flags`).

use crate::types::{CpuId, MigrateType, Order, ZoneType};

/// Allocation flags (`ALLOC_*` in `mm/internal.h`), with the kernel's values. The set
/// operations (`intersects`, `contains`, `union`, ...) come from [`bitflags`]; the kernel's
/// watermark index shares the low bits with the flags, as `ALLOC_WMARK_MASK` does.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct AllocFlags(pub u32);

bitflags::bitflags! {
    impl AllocFlags: u32 {
        /// Check against the min watermark.
        const WMARK_MIN = 0x00;
        /// Check against the low watermark.
        const WMARK_LOW = 0x01;
        /// Check against the high watermark.
        const WMARK_HIGH = 0x02;
        /// Ignore watermarks entirely.
        const NO_WATERMARKS = 0x04;
        /// Mask of the watermark index.
        const WMARK_MASK = 0x03;
        /// The OOM victim may dip further into reserves.
        const OOM = 0x08;
        /// The caller cannot sleep (GFP_ATOMIC-like): may use part of the min reserve.
        const NON_BLOCK = 0x10;
        /// `__GFP_HIGH`: may use half of the min reserve.
        const MIN_RESERVE = 0x20;
        /// Do not fall back into other pageblocks below pageblock order.
        const NOFRAGMENT = 0x100;
        /// May use (and create) the HighAtomic reserve.
        const HIGHATOMIC = 0x200;
        /// Wake kswapd (here: allows watermark boosting to flag the zone).
        const KSWAPD = 0x800;
        /// `ALLOC_RESERVES`.
        const RESERVES = Self::NON_BLOCK.bits()
            | Self::MIN_RESERVE.bits()
            | Self::HIGHATOMIC.bits()
            | Self::OOM.bits();
    }
}

impl AllocFlags {
    /// Union (`const`, for the flag sets of the request paths).
    #[inline]
    pub const fn with(self, other: AllocFlags) -> AllocFlags {
        self.union(other)
    }

    /// Without the flags of `other`.
    #[inline]
    pub const fn without(self, other: AllocFlags) -> AllocFlags {
        self.difference(other)
    }

    /// The watermark index (0 min, 1 low, 2 high).
    #[inline]
    pub const fn wmark_index(self) -> usize {
        (self.0 & AllocFlags::WMARK_MASK.0) as usize
    }
}

/// Flags of every request's fast path (`ALLOC_WMARK_LOW`, plus `ALLOC_KSWAPD`).
pub(crate) const FAST_ALLOC_FLAGS: AllocFlags = AllocFlags::WMARK_LOW.with(AllocFlags::KSWAPD);

/// What an allocation asks for besides its order.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct AllocRequest {
    /// The gfp migratetype (Unmovable, Movable or Reclaimable).
    pub migratetype: MigrateType,
    /// The highest zone the block may come from (`gfp_zone`); lower zones are tried after it,
    /// in the kernel's zonelist order.
    pub highest_zone: ZoneType,
    /// `__GFP_HIGH`: may dip into half of the min reserve.
    pub high: bool,
    /// `__GFP_DIRECT_RECLAIM`: the caller can wait, so on failure the slow path gives back
    /// HighAtomic reserves and drains the per-CPU lists, then retries. Without it the request
    /// is atomic (`ALLOC_NON_BLOCK`).
    pub can_reclaim: bool,
    /// `__GFP_MEMALLOC` / `PF_MEMALLOC`: ignore watermarks entirely as a last resort.
    pub no_watermarks: bool,
    /// The CPU whose per-CPU lists serve the request; `None` means the calling thread's.
    pub cpu: Option<CpuId>,
}

impl AllocRequest {
    /// `GFP_KERNEL`-like: may wait, limited to ZONE_NORMAL (or ZONE_MOVABLE for Movable
    /// requests, like `GFP_HIGHUSER_MOVABLE`).
    pub const fn new(migratetype: MigrateType) -> Self {
        AllocRequest {
            migratetype,
            highest_zone: match migratetype {
                MigrateType::Movable => ZoneType::Movable,
                _ => ZoneType::Normal,
            },
            high: false,
            can_reclaim: true,
            no_watermarks: false,
            cpu: None,
        }
    }

    /// `GFP_ATOMIC`-like: cannot wait, may use part of the min reserve and, for order > 0, the
    /// HighAtomic reserve.
    pub const fn atomic(migratetype: MigrateType) -> Self {
        AllocRequest {
            high: true,
            can_reclaim: false,
            ..AllocRequest::new(migratetype)
        }
    }

    /// Limits the request to zones up to `zone` (for example `ZoneType::Dma32` for a device
    /// that addresses 32 bits, `__GFP_DMA32`).
    pub const fn zone_limit(self, zone: ZoneType) -> Self {
        AllocRequest {
            highest_zone: zone,
            ..self
        }
    }

    /// Ignores watermarks when everything else fails (`__GFP_MEMALLOC`).
    pub const fn no_watermarks(self) -> Self {
        AllocRequest {
            no_watermarks: true,
            ..self
        }
    }

    /// Serves the request from `cpu`'s per-CPU lists.
    pub const fn on_cpu(self, cpu: CpuId) -> Self {
        AllocRequest {
            cpu: Some(cpu),
            ..self
        }
    }

    /// The three gfp bits of the request in a byte, so that the out-of-line slow paths of the
    /// entry points take the request as scalars (in registers) rather than through memory.
    #[inline(always)]
    pub(crate) const fn gfp_bits(&self) -> u8 {
        self.high as u8 | (self.can_reclaim as u8) << 1 | (self.no_watermarks as u8) << 2
    }

    /// The request that [`AllocRequest::gfp_bits`] and its other fields describe.
    #[inline(always)]
    pub(crate) const fn from_parts(
        migratetype: MigrateType,
        highest_zone: ZoneType,
        gfp_bits: u8,
        cpu: Option<CpuId>,
    ) -> Self {
        AllocRequest {
            migratetype,
            highest_zone,
            high: gfp_bits & 1 != 0,
            can_reclaim: gfp_bits & 2 != 0,
            no_watermarks: gfp_bits & 4 != 0,
            cpu,
        }
    }

    /// Flags of the fast path (`ALLOC_WMARK_LOW`, plus `ALLOC_KSWAPD`).
    pub(crate) fn fast_flags(&self) -> AllocFlags {
        FAST_ALLOC_FLAGS
    }

    /// `gfp_to_alloc_flags`: flags of the slow path.
    pub(crate) fn slow_flags(&self, order: Order) -> AllocFlags {
        let order = order.get();
        let mut f = AllocFlags::WMARK_MIN.with(AllocFlags::KSWAPD);
        if self.high {
            f = f.with(AllocFlags::MIN_RESERVE);
        }
        if !self.can_reclaim {
            f = f.with(AllocFlags::NON_BLOCK);
            if order > 0 && f.intersects(AllocFlags::MIN_RESERVE) {
                f = f.with(AllocFlags::HIGHATOMIC);
            }
        }
        f
    }
}
