//! Zone configuration: geometry, watermarks and one knob per seed change.
//!
//! Every default is the mainline kernel's (x86-64, 4 KiB pages, `CONFIG_CMA=n`); every seed
//! change is a `bool` that defaults to on, so an experiment can show its effect by turning it
//! off.

use crate::error::ConfigError;
use crate::types::{MAX_NR_ZONES, MAX_ORDER_LIMIT};

mod kernel;
mod pcp;

pub use kernel::KernelVersion;
pub use pcp::{
    DrainMigratetype, DrainMode, FreeHigh, FreeScaling, HighMode, PcpConfig, PcpLocking,
};

/// How a zone's min/low/high watermarks are set.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum WatermarkConfig {
    /// Computed as `__setup_per_zone_wmarks` does, from `min_free_kbytes`; `None` derives
    /// `min_free_kbytes` from managed memory (`calculate_min_free_kbytes`:
    /// `clamp(int_sqrt(lowmem_kbytes * 16), 128, 262144)`).
    Auto {
        /// Override for the `vm.min_free_kbytes` sysctl.
        min_free_kbytes: Option<u64>,
    },
    /// Fixed watermarks in pages; `min <= low <= high` is required.
    Fixed {
        /// `WMARK_MIN`.
        min: u64,
        /// `WMARK_LOW`.
        low: u64,
        /// `WMARK_HIGH`.
        high: u64,
    },
}

impl WatermarkConfig {
    /// `Auto` with `min_free_kbytes` derived from managed memory, as the kernel boots.
    pub const AUTO: WatermarkConfig = WatermarkConfig::Auto {
        min_free_kbytes: None,
    };

    /// Fixed watermarks in pages (`min <= low <= high`, checked by [`ZoneConfig::validate`]).
    pub const fn fixed(min: u64, low: u64, high: u64) -> Self {
        WatermarkConfig::Fixed { min, low, high }
    }

    /// `Auto` with the `vm.min_free_kbytes` sysctl set to `kbytes`.
    pub const fn min_free_kbytes(kbytes: u64) -> Self {
        WatermarkConfig::Auto {
            min_free_kbytes: Some(kbytes),
        }
    }
}

/// Whether allocations are grouped by mobility (`page_group_by_mobility_disabled`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MobilityGrouping {
    /// As the kernel decides in `build_all_zonelists`: disabled when the pages above the
    /// high watermark are fewer than `pageblock_nr_pages * MIGRATE_TYPES`.
    Auto,
    /// Always group by mobility.
    Enabled,
    /// Never: every request is treated as Unmovable and fallbacks always claim.
    Disabled,
}

/// The cap on the HighAtomic reserve (`reserve_highatomic_pageblock`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HighatomicCap {
    /// 6.12+: `ALIGN(managed / 100, pageblock_nr_pages)`, and no reserve at all when that is
    /// below one pageblock.
    Aligned,
    /// 6.1: `managed / 100 + pageblock_nr_pages`.
    PlusPageblock,
}

/// The HighAtomic pages a watermark check counts as unusable
/// (`__zone_watermark_unusable_free`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HighatomicUnusable {
    /// 6.12+: the free HighAtomic pages (`zone->nr_free_highatomic`).
    Free,
    /// 6.1: the whole reserve (`zone->nr_reserved_highatomic`).
    Reserved,
}

/// How `__rmqueue` falls back to another migratetype's free lists.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FallbackRule {
    /// 6.15+ (and Debian 6.12.117's backport): `__rmqueue_claim` (largest block, claim its
    /// pageblock or nothing), then `__rmqueue_steal` (smallest block, no retyping), with the
    /// `rmqueue_mode` a bulk refill remembers.
    ClaimSteal,
    /// 6.1 (up to 6.14): `__rmqueue_fallback` → `steal_suitable_fallback`: largest block
    /// first (smallest for a movable request that cannot steal the block), the block's free
    /// pages moved to the request's lists even when the pageblock is not claimed, and
    /// `__rmqueue_smallest` retried.
    Legacy,
}

/// When boot hands the SMP-alternatives lock table (`__smp_locks`) back to the allocator
/// ("Freeing SMP alternatives memory"), relative to the watermark setups of boot
/// ([`Node::boot_with`](crate::Node::boot_with)).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SmpLocksFree {
    /// `alternative_instructions` (`start_kernel` → `arch_cpu_finalize_init`), before any
    /// initcall: every watermark setup of boot counts it (5.15 to 6.12).
    BeforeInitcalls,
    /// `free_smp_locks`, an `arch_initcall` (7.2: it waits for the deferred struct-page
    /// init): after `init_per_zone_wmark_min` (`postcore_initcall`), before `hugepage_init`
    /// (`subsys_initcall`), so only khugepaged's watermark setup counts it.
    ArchInitcall,
}

/// Configuration of one zone.
///
/// `#[non_exhaustive]`: start from [`ZoneConfig::new`] (or `default()`,
/// [`ZoneConfig::without_watermarks`]) and change fields with the `with_*` methods, which are
/// `const`:
///
/// ```
/// use zonealloc::{PcpConfig, WatermarkConfig, ZoneConfig};
/// const SMALL: ZoneConfig = ZoneConfig::new()
///     .with_max_order(5)
///     .with_pageblock_order(3)
///     .with_watermarks(WatermarkConfig::fixed(0, 0, 0))
///     .with_pcp(PcpConfig::new().with_cpus(2).with_batch(Some(4)));
/// SMALL.validate().unwrap();
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct ZoneConfig {
    /// `MAX_PAGE_ORDER`: the largest block order (default 10: 4 MiB blocks of 4 KiB pages).
    pub max_order: u8,
    /// `pageblock_order`: the unit of migratetype grouping (default 9: 2 MiB).
    pub pageblock_order: u8,
    /// Page size in bytes, a power of two (default 4096). Used to convert `min_free_kbytes`
    /// and for reporting; frames are always addressed by number.
    pub page_size: u64,
    /// Seed 003 (`buddy_merge_likely`): put a freed block whose buddy one order up is free at
    /// the tail of its free list. Upstream default: on.
    pub tail_merge: bool,
    /// Watermark policy.
    pub watermarks: WatermarkConfig,
    /// `vm.watermark_scale_factor` (default 10, i.e. 0.1% of the zone between marks).
    pub watermark_scale_factor: u32,
    /// `vm.watermark_boost_factor` (default 15000; 0 disables boosting on fallback).
    pub watermark_boost_factor: u32,
    /// Mobility grouping policy.
    pub mobility_grouping: MobilityGrouping,
    /// `vm.lowmem_reserve_ratio`, per zone type (DMA 256, DMA32 256, Normal 32, others 0).
    pub lowmem_reserve_ratio: [u32; MAX_NR_ZONES],
    /// `reserve_highatomic_pageblock`'s cap on the HighAtomic reserve.
    pub highatomic_cap: HighatomicCap,
    /// What `__zone_watermark_unusable_free` holds back for HighAtomic.
    pub highatomic_unusable: HighatomicUnusable,
    /// `__setup_per_zone_wmarks` (6.6+): `ZONE_MOVABLE` is left out of `lowmem_pages` and
    /// gets `clamp(managed / 1024, 32, 128)` as its min mark, like highmem. Off (5.15, 6.1),
    /// it is lowmem.
    pub movable_like_highmem: bool,
    /// `set_recommended_min_free_kbytes` (`mm/khugepaged.c`, run when THP is enabled): an
    /// automatic `min_free_kbytes` is raised to `pageblock_nr_pages * nr_zones * (2 +
    /// MIGRATE_PCPTYPES^2)` KiB-worth of pages (zones up to Normal), at most 5% of
    /// `nr_free_buffer_pages()`. Off by default (THP off); every kernel preset turns it on,
    /// as Debian's `transparent_hugepage=always` kernels do. An explicit
    /// `WatermarkConfig::Auto { min_free_kbytes: Some(_) }` is taken as the final value.
    pub thp_min_free_kbytes: bool,
    /// `hugepage_init` (`mm/huge_memory.c`, every version): below this many MiB of
    /// `totalram_pages()` (the managed pages of every zone when the `subsys_initcall` runs),
    /// THP is turned off at boot and khugepaged never starts, so
    /// [`ZoneConfig::thp_min_free_kbytes`] raises nothing and its second watermark setup does
    /// not run. The kernel's figure: 512. 0 keeps THP on at every size.
    pub thp_min_totalram_mib: u64,
    /// When the SMP-alternatives memory is freed at boot ([`SmpLocksFree`]).
    pub smp_locks_free: SmpLocksFree,
    /// 7.2's `adjust_managed_page_count` calls `setup_per_zone_lowmem_reserve`: pages freed
    /// late ([`Node::free_reserved_area`](crate::Node::free_reserved_area)) update the lowmem
    /// reserve (never the watermarks or PCP sizes). Off (6.1, 6.12), the reserve keeps its
    /// value until the next watermark setup.
    pub lowmem_reserve_follows_managed: bool,
    /// The migratetype fallback (`__rmqueue`): 6.1's `__rmqueue_fallback` or the claim/steal
    /// split.
    pub fallback: FallbackRule,
    /// Per-CPU lists.
    pub pcp: PcpConfig,
}

impl Default for ZoneConfig {
    fn default() -> Self {
        ZoneConfig::new()
    }
}

impl ZoneConfig {
    /// The mainline kernel's configuration (the same as `default()`, usable in `const`).
    pub const fn new() -> Self {
        ZoneConfig {
            max_order: 10,
            pageblock_order: 9,
            page_size: 4096,
            tail_merge: true,
            watermarks: WatermarkConfig::Auto {
                min_free_kbytes: None,
            },
            watermark_scale_factor: 10,
            watermark_boost_factor: 15000,
            mobility_grouping: MobilityGrouping::Auto,
            lowmem_reserve_ratio: [256, 256, 32, 0, 0, 0],
            highatomic_cap: HighatomicCap::Aligned,
            highatomic_unusable: HighatomicUnusable::Free,
            movable_like_highmem: true,
            thp_min_free_kbytes: false,
            thp_min_totalram_mib: 512,
            smp_locks_free: SmpLocksFree::ArchInitcall,
            lowmem_reserve_follows_managed: true,
            fallback: FallbackRule::ClaimSteal,
            pcp: PcpConfig::new(),
        }
    }

    /// A configuration with zero watermarks, for tests and users who manage memory that has
    /// no reclaim behind it (device memory, buffer pools): every free frame is usable.
    pub const fn without_watermarks() -> Self {
        ZoneConfig::new().with_watermarks(WatermarkConfig::fixed(0, 0, 0))
    }

    /// This configuration with per-CPU lists for `cpus` CPUs.
    pub const fn with_cpus(mut self, cpus: u32) -> Self {
        self.pcp.cpus = cpus;
        self
    }

    /// This configuration without per-CPU lists (buddy only).
    pub const fn without_pcp(mut self) -> Self {
        self.pcp.enabled = false;
        self
    }

    /// With `MAX_PAGE_ORDER` ([`ZoneConfig::max_order`]).
    pub const fn with_max_order(mut self, max_order: u8) -> Self {
        self.max_order = max_order;
        self
    }

    /// With `pageblock_order` ([`ZoneConfig::pageblock_order`]).
    pub const fn with_pageblock_order(mut self, pageblock_order: u8) -> Self {
        self.pageblock_order = pageblock_order;
        self
    }

    /// With the page size in bytes ([`ZoneConfig::page_size`]).
    pub const fn with_page_size(mut self, page_size: u64) -> Self {
        self.page_size = page_size;
        self
    }

    /// With `buddy_merge_likely` on or off ([`ZoneConfig::tail_merge`], seed 003).
    pub const fn with_tail_merge(mut self, tail_merge: bool) -> Self {
        self.tail_merge = tail_merge;
        self
    }

    /// With the watermark policy ([`ZoneConfig::watermarks`]).
    pub const fn with_watermarks(mut self, watermarks: WatermarkConfig) -> Self {
        self.watermarks = watermarks;
        self
    }

    /// With `vm.watermark_scale_factor` ([`ZoneConfig::watermark_scale_factor`]).
    pub const fn with_watermark_scale_factor(mut self, factor: u32) -> Self {
        self.watermark_scale_factor = factor;
        self
    }

    /// With `vm.watermark_boost_factor` ([`ZoneConfig::watermark_boost_factor`]).
    pub const fn with_watermark_boost_factor(mut self, factor: u32) -> Self {
        self.watermark_boost_factor = factor;
        self
    }

    /// With the mobility grouping policy ([`ZoneConfig::mobility_grouping`]).
    pub const fn with_mobility_grouping(mut self, grouping: MobilityGrouping) -> Self {
        self.mobility_grouping = grouping;
        self
    }

    /// With `vm.lowmem_reserve_ratio` ([`ZoneConfig::lowmem_reserve_ratio`]).
    pub const fn with_lowmem_reserve_ratio(mut self, ratio: [u32; MAX_NR_ZONES]) -> Self {
        self.lowmem_reserve_ratio = ratio;
        self
    }

    /// With these per-CPU list settings ([`ZoneConfig::pcp`]).
    pub const fn with_pcp(mut self, pcp: PcpConfig) -> Self {
        self.pcp = pcp;
        self
    }

    /// With `highatomic_cap` set ([`ZoneConfig::highatomic_cap`]).
    pub const fn with_highatomic_cap(mut self, highatomic_cap: HighatomicCap) -> Self {
        self.highatomic_cap = highatomic_cap;
        self
    }

    /// With `highatomic_unusable` set ([`ZoneConfig::highatomic_unusable`]).
    pub const fn with_highatomic_unusable(
        mut self,
        highatomic_unusable: HighatomicUnusable,
    ) -> Self {
        self.highatomic_unusable = highatomic_unusable;
        self
    }

    /// With `movable_like_highmem` set ([`ZoneConfig::movable_like_highmem`]).
    pub const fn with_movable_like_highmem(mut self, movable_like_highmem: bool) -> Self {
        self.movable_like_highmem = movable_like_highmem;
        self
    }

    /// With `thp_min_free_kbytes` set ([`ZoneConfig::thp_min_free_kbytes`]).
    pub const fn with_thp_min_free_kbytes(mut self, thp_min_free_kbytes: bool) -> Self {
        self.thp_min_free_kbytes = thp_min_free_kbytes;
        self
    }

    /// With `thp_min_totalram_mib` set ([`ZoneConfig::thp_min_totalram_mib`]).
    pub const fn with_thp_min_totalram_mib(mut self, mib: u64) -> Self {
        self.thp_min_totalram_mib = mib;
        self
    }

    /// With `smp_locks_free` set ([`ZoneConfig::smp_locks_free`]).
    pub const fn with_smp_locks_free(mut self, when: SmpLocksFree) -> Self {
        self.smp_locks_free = when;
        self
    }

    /// With `lowmem_reserve_follows_managed` set ([`ZoneConfig::lowmem_reserve_follows_managed`]).
    pub const fn with_lowmem_reserve_follows_managed(
        mut self,
        lowmem_reserve_follows_managed: bool,
    ) -> Self {
        self.lowmem_reserve_follows_managed = lowmem_reserve_follows_managed;
        self
    }

    /// With `fallback` set ([`ZoneConfig::fallback`]).
    pub const fn with_fallback(mut self, fallback: FallbackRule) -> Self {
        self.fallback = fallback;
        self
    }

    /// Whether a free block can sit on a list other than its pageblock's type (6.1's rules):
    /// invariant Z5 then holds only for the list a block records.
    pub(crate) const fn lists_may_differ_from_blocks(&self) -> bool {
        matches!(self.fallback, FallbackRule::Legacy)
            || matches!(self.pcp.drain_migratetype, DrainMigratetype::AtFree)
    }

    /// Checks the configuration.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_order > MAX_ORDER_LIMIT {
            return Err(ConfigError::MaxOrderTooLarge(self.max_order));
        }
        if self.pageblock_order > self.max_order {
            return Err(ConfigError::PageblockOrderTooLarge {
                pageblock_order: self.pageblock_order,
                max_order: self.max_order,
            });
        }
        if !self.page_size.is_power_of_two() || self.page_size < 512 {
            return Err(ConfigError::BadPageSize(self.page_size));
        }
        if let WatermarkConfig::Fixed { min, low, high } = self.watermarks {
            if !(min <= low && low <= high) {
                return Err(ConfigError::BadWatermarks);
            }
        }
        self.pcp.validate(self.max_order)
    }

    /// `pageblock_nr_pages`.
    #[inline]
    pub const fn pageblock_pages(&self) -> u64 {
        1u64 << self.pageblock_order
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::string::ToString;

    /// Each preset sets what docs/kernel-versions.md §0.2 says.
    #[test]
    fn presets_follow_the_research_table() {
        let c61 = ZoneConfig::for_kernel(KernelVersion::V6_1);
        let p = &c61.pcp;
        assert_eq!(p.high_mode, HighMode::Fixed);
        assert!(!p.alloc_scaling);
        assert_eq!(p.free_scaling, FreeScaling::FreeFactor);
        assert_eq!(p.batch_scale_max, 5);
        assert_eq!(p.free_high, FreeHigh::FreeFactor);
        assert!(!p.decay);
        assert!(!p.drain_in_batches);
        assert!(!p.highatomic_no_refill);
        assert_eq!(c61.highatomic_cap, HighatomicCap::PlusPageblock);
        assert_eq!(c61.highatomic_unusable, HighatomicUnusable::Reserved);
        assert!(!c61.movable_like_highmem);
        assert!(c61.thp_min_free_kbytes);
        assert_eq!(c61.thp_min_totalram_mib, 512);
        assert_eq!(c61.smp_locks_free, SmpLocksFree::BeforeInitcalls);
        assert!(!c61.lowmem_reserve_follows_managed);
        assert_eq!(c61.fallback, FallbackRule::Legacy);
        assert_eq!(p.drain_migratetype, DrainMigratetype::AtFree);

        let c612 = ZoneConfig::for_kernel(KernelVersion::V6_12);
        let p = &c612.pcp;
        assert_eq!(p.high_mode, HighMode::AutoTune);
        assert!(p.alloc_scaling);
        assert_eq!(p.free_scaling, FreeScaling::FreeCount);
        assert_eq!(p.free_high, FreeHigh::Batch);
        assert!(p.decay);
        assert!(!p.drain_in_batches);
        assert!(!p.highatomic_no_refill);
        assert_eq!(c612.highatomic_cap, HighatomicCap::Aligned);
        assert_eq!(c612.highatomic_unusable, HighatomicUnusable::Free);
        assert!(c612.movable_like_highmem);
        assert!(c612.thp_min_free_kbytes);
        assert_eq!(c612.smp_locks_free, SmpLocksFree::BeforeInitcalls);
        assert!(!c612.lowmem_reserve_follows_managed);
        assert_eq!(c612.fallback, FallbackRule::ClaimSteal);
        assert_eq!(p.drain_migratetype, DrainMigratetype::AtDrain);

        let c72 = ZoneConfig::for_kernel(KernelVersion::V7_2);
        let p = &c72.pcp;
        assert_eq!(p.high_mode, HighMode::AutoTune);
        assert!(p.alloc_scaling);
        assert_eq!(p.free_scaling, FreeScaling::FreeCount);
        assert_eq!(p.free_high, FreeHigh::Current);
        assert!(p.decay && p.drain_in_batches && p.highatomic_no_refill);
        assert_eq!(c72.highatomic_cap, HighatomicCap::Aligned);
        assert_eq!(c72.highatomic_unusable, HighatomicUnusable::Free);
        assert_eq!(c72.thp_min_totalram_mib, 512);
        assert_eq!(c72.smp_locks_free, SmpLocksFree::ArchInitcall);
        assert!(c72.movable_like_highmem && c72.thp_min_free_kbytes);
        assert!(c72.lowmem_reserve_follows_managed);
        assert_eq!(c72.fallback, FallbackRule::ClaimSteal);
        assert_eq!(p.drain_migratetype, DrainMigratetype::AtDrain);
        assert_eq!(ZoneConfig::for_kernel(KernelVersion::Mainline), c72);
        // The default is mainline's rules with THP off (no khugepaged raise).
        let d = ZoneConfig::default();
        assert_eq!(
            ZoneConfig {
                thp_min_free_kbytes: true,
                ..d
            },
            c72
        );
        for v in KernelVersion::ALL {
            ZoneConfig::for_kernel(v).validate().unwrap();
        }
    }

    #[test]
    fn kernel_versions_parse_and_print() {
        for v in KernelVersion::ALL {
            assert_eq!(v.to_string().parse::<KernelVersion>(), Ok(v));
        }
        assert_eq!("6.1".parse(), Ok(KernelVersion::V6_1));
        assert_eq!("6.12".parse(), Ok(KernelVersion::V6_12));
        assert_eq!("7.2".parse(), Ok(KernelVersion::V7_2));
        assert_eq!("mainline".parse(), Ok(KernelVersion::Mainline));
        assert_eq!("5.15".parse(), Ok(KernelVersion::V5_15));
        assert_eq!("6.6".parse(), Ok(KernelVersion::V6_6));
        assert_eq!(
            "6.7".parse::<KernelVersion>(),
            Err(ConfigError::UnknownKernel)
        );
        // apply() on a config keeps what it does not own.
        let mut c = ZoneConfig::default().with_cpus(4);
        c.watermark_scale_factor = 30;
        KernelVersion::V6_1.apply(&mut c);
        assert_eq!((c.pcp.cpus, c.watermark_scale_factor), (4, 30));
    }

    #[test]
    fn default_config_is_valid_and_mainline() {
        let c = ZoneConfig::default();
        c.validate().unwrap();
        assert_eq!(c.max_order, 10);
        assert_eq!(c.pageblock_order, 9);
        assert!(c.tail_merge);
    }

    #[test]
    fn bad_configs_are_rejected() {
        let bad = ZoneConfig {
            pageblock_order: 11,
            ..ZoneConfig::default()
        };
        assert!(matches!(
            bad.validate(),
            Err(ConfigError::PageblockOrderTooLarge { .. })
        ));
        let bad = ZoneConfig {
            page_size: 3000,
            ..ZoneConfig::default()
        };
        assert_eq!(bad.validate(), Err(ConfigError::BadPageSize(3000)));
        let bad = ZoneConfig {
            max_order: 21,
            ..ZoneConfig::default()
        };
        assert_eq!(bad.validate(), Err(ConfigError::MaxOrderTooLarge(21)));
        let bad = ZoneConfig {
            watermarks: WatermarkConfig::Fixed {
                min: 5,
                low: 4,
                high: 6,
            },
            ..ZoneConfig::default()
        };
        assert_eq!(bad.validate(), Err(ConfigError::BadWatermarks));
    }
}
