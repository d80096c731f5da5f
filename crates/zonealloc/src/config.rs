//! Zone configuration: geometry, watermarks and one knob per seed change.
//!
//! Every default is the mainline kernel's (x86-64, 4 KiB pages, `CONFIG_CMA=n`); every seed
//! change is a `bool` that defaults to on, so an experiment can show its effect by turning it
//! off.

use crate::error::ConfigError;
use crate::types::{Order, MAX_NR_ZONES, MAX_ORDER_LIMIT};

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

/// Seed 000 (`free_high`): how a PCP that only frees limits the high-order pages it keeps.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FreeHigh {
    /// No limit: high-order frees are kept like order-0 ones (the kernel before the seed).
    Off,
    /// The seed's original rule: a high-order free (orders 1..=3) that follows another free
    /// with no allocation in between drains the whole PCP.
    Original,
    /// Current mainline: drain hard (up to `batch << SCALE`) once `free_count >= batch +
    /// high_min / 2` after consecutive high-order frees (`PCPF_PREV_FREE_HIGH_ORDER`), and, on
    /// CPUs with a large LLC slice (`PCPF_FREE_HIGH_BATCH`), only while `count >= batch`.
    /// 7.2 and mainline (`free_frozen_page_commit`).
    Current,
    /// 6.12's rule (`free_unref_page_commit`): as [`FreeHigh::Current`] but the threshold is
    /// `free_count >= batch`.
    Batch,
    /// 6.1's rule (`free_unref_page_commit`: `free_high = pcp->free_factor && order &&
    /// order <= PAGE_ALLOC_COSTLY_ORDER`): a high-order free (orders 1..=3) drains the whole
    /// PCP (`nr_pcp_free` returns `pcp->count`, `high` untouched) once a drain has happened
    /// since allocations last halved `free_factor` to 0. Meant with
    /// [`FreeScaling::FreeFactor`]; under [`FreeScaling::FreeCount`] it tests `free_count`
    /// instead and is [`FreeHigh::Original`].
    FreeFactor,
}

/// How `nr_pcp_free` sizes a drain of a PCP that reached `high`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FreeScaling {
    /// 6.7+ (`nr_pcp_free`): `clamp(free_count, batch, high - batch)`; `free_count` grows by
    /// the pages of each free up to `batch << batch_scale_max` and halves on each allocation.
    FreeCount,
    /// 6.1 (`nr_pcp_free`): `clamp(batch << free_factor, batch, high - batch)`, where
    /// `free_factor` grows by one per drain (while `batch << free_factor < high - batch`, up to
    /// `batch_scale_max`: the Debian 6.1 backport of `CONFIG_PCP_BATCH_SCALE_MAX`) and halves
    /// on each PCP allocation (`rmqueue_pcplist`).
    FreeFactor,
}

/// How `pcp->high` is set (`zone_set_pageset_high_and_batch`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HighMode {
    /// 6.7+: a range `high_min..=high_max` within which `nr_pcp_high`, `nr_pcp_alloc` and
    /// `decay_pcp_high` tune `high` (fixed when `high_fraction` is set).
    AutoTune,
    /// 6.1: one fixed `high` (`pageset_update(pcp, high, batch)`), `zone_highsize` of the low
    /// watermark or of the high fraction; modelled as `high_min = high_max = high`.
    Fixed,
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

/// Seed 002: how a PCP's lists are protected.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PcpLocking {
    /// `pcp->lock`, a spinlock every allocation and free takes with a trylock; on failure the
    /// operation goes straight to the buddy. Upstream since 5.19.
    Spinlock,
    /// Before the seed: the lists belong to their CPU (`local_lock_irqsave`). A
    /// [`CpuHandle`](crate::CpuHandle) holds its CPU's lists for its whole life, so its
    /// operations take no lock at all; nobody else can touch them, so draining needs the
    /// owner's help ([`DrainMode::Owner`]).
    OwnerOnly,
}

/// Seed 004: how `drain_all` empties other CPUs' lists.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DrainMode {
    /// The drainer takes each CPU's PCP lock and drains it itself. Upstream since 5.19.
    Remote,
    /// Before the seed: the drainer asks each CPU to drain itself (a per-CPU work item) and
    /// waits; a CPU whose owner is busy and does not poll keeps the drainer waiting. CPUs with
    /// no registered [`CpuHandle`](crate::CpuHandle) are idle and drained at once.
    Owner,
}

/// Per-CPU page list (PCP) settings. `None` fields are computed as the kernel does
/// (`zone_batchsize`, `zone_highsize`).
///
/// `#[non_exhaustive]`: start from [`PcpConfig::new`] (or `default()`) and change fields with
/// the `with_*` methods, which are `const`, so a configuration can be a `const` item.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct PcpConfig {
    /// Per-CPU lists on. Off, every order goes to the buddy (the lab's `--no-pcp`).
    pub enabled: bool,
    /// Number of CPUs with their own lists.
    pub cpus: u32,
    /// Override of `pcp->batch`.
    pub batch: Option<u32>,
    /// Override of `pcp->high_min`.
    pub high_min: Option<u32>,
    /// Override of `pcp->high_max`.
    pub high_max: Option<u32>,
    /// `vm.percpu_pagelist_high_fraction` (0: auto-tune `high` between a low-watermark share
    /// and managed/8; otherwise at least 8, and `high` is fixed at managed/fraction/cpus).
    pub high_fraction: u32,
    /// Seed 001: `CONFIG_PCP_BATCH_SCALE_MAX`, the cap on `alloc_factor` (refills of up to
    /// `batch << scale`) and on `free_count` (`batch << scale`). Range 0..=6; 0 turns scaling
    /// off. Upstream default 5.
    pub batch_scale_max: u8,
    /// Seed 000.
    pub free_high: FreeHigh,
    /// Whether `pcp->high` is tuned (6.7+) or fixed (6.1).
    pub high_mode: HighMode,
    /// `alloc_factor` (6.7+ `nr_pcp_alloc`): refills double up to `batch << batch_scale_max`.
    /// Off, a refill is `batch` blocks (`>> order`, at least 2), as 6.1's
    /// `__rmqueue_pcplist` does.
    pub alloc_scaling: bool,
    /// How a drain on free is sized (`nr_pcp_free`).
    pub free_scaling: FreeScaling,
    /// `decay_pcp_high` on ticks (6.7+, from `refresh_cpu_vm_stats`). Off, a PCP on a single
    /// node never shrinks on its own (6.1).
    pub decay: bool,
    /// 7.2's `free_frozen_page_commit`: a drain on free runs in `batch`-sized
    /// `free_pcppages_bulk` calls, the lock dropped between them, each restarting the round
    /// robin at the freed list. Off, one `free_pcppages_bulk` call (6.1, 6.12).
    pub drain_in_batches: bool,
    /// 7.2's `__rmqueue_pcplist`: an `ALLOC_HIGHATOMIC` request that finds its list empty
    /// does not refill it (`if (alloc_flags & ALLOC_HIGHATOMIC) return NULL;`) and goes to
    /// the buddy. Off, it refills like any other (6.1, 6.12).
    pub highatomic_no_refill: bool,
    /// Seed 002.
    pub locking: PcpLocking,
    /// Seed 004.
    pub drain: DrainMode,
    /// Bytes of last-level cache per CPU (`per_cpu_data_slice_size`); sets
    /// `PCPF_FREE_HIGH_BATCH` when it holds more than `3 * batch` pages.
    pub llc_slice_bytes: u64,
    /// The THP order that has its own PCP lists (`HPAGE_PMD_ORDER`, 9 on x86-64); `None`
    /// without THP. Ignored when above the zone's `max_order`.
    pub thp_order: Option<u8>,
}

impl Default for PcpConfig {
    fn default() -> Self {
        PcpConfig::new()
    }
}

impl PcpConfig {
    /// The mainline kernel's settings for one CPU (the same as `default()`, usable in `const`).
    pub const fn new() -> Self {
        PcpConfig {
            enabled: true,
            cpus: 1,
            batch: None,
            high_min: None,
            high_max: None,
            high_fraction: 0,
            batch_scale_max: 5,
            free_high: FreeHigh::Current,
            high_mode: HighMode::AutoTune,
            alloc_scaling: true,
            free_scaling: FreeScaling::FreeCount,
            decay: true,
            drain_in_batches: true,
            highatomic_no_refill: true,
            locking: PcpLocking::Spinlock,
            drain: DrainMode::Remote,
            llc_slice_bytes: 2 << 20,
            thp_order: Some(9),
        }
    }

    /// With per-CPU lists on or off ([`PcpConfig::enabled`]).
    pub const fn with_enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// With `cpus` CPUs ([`PcpConfig::cpus`]).
    pub const fn with_cpus(mut self, cpus: u32) -> Self {
        self.cpus = cpus;
        self
    }

    /// With `pcp->batch` overridden, or computed when `None` ([`PcpConfig::batch`]).
    pub const fn with_batch(mut self, batch: Option<u32>) -> Self {
        self.batch = batch;
        self
    }

    /// With `pcp->high_min` overridden, or computed when `None` ([`PcpConfig::high_min`]).
    pub const fn with_high_min(mut self, high_min: Option<u32>) -> Self {
        self.high_min = high_min;
        self
    }

    /// With `pcp->high_max` overridden, or computed when `None` ([`PcpConfig::high_max`]).
    pub const fn with_high_max(mut self, high_max: Option<u32>) -> Self {
        self.high_max = high_max;
        self
    }

    /// With `vm.percpu_pagelist_high_fraction` ([`PcpConfig::high_fraction`]).
    pub const fn with_high_fraction(mut self, high_fraction: u32) -> Self {
        self.high_fraction = high_fraction;
        self
    }

    /// With `CONFIG_PCP_BATCH_SCALE_MAX` ([`PcpConfig::batch_scale_max`], seed 001).
    pub const fn with_batch_scale_max(mut self, batch_scale_max: u8) -> Self {
        self.batch_scale_max = batch_scale_max;
        self
    }

    /// With the `free_high` rule ([`PcpConfig::free_high`], seed 000).
    pub const fn with_free_high(mut self, free_high: FreeHigh) -> Self {
        self.free_high = free_high;
        self
    }

    /// With the list locking ([`PcpConfig::locking`], seed 002).
    pub const fn with_locking(mut self, locking: PcpLocking) -> Self {
        self.locking = locking;
        self
    }

    /// With the drain mode ([`PcpConfig::drain`], seed 004).
    pub const fn with_drain(mut self, drain: DrainMode) -> Self {
        self.drain = drain;
        self
    }

    /// With the last-level cache per CPU ([`PcpConfig::llc_slice_bytes`]).
    pub const fn with_llc_slice_bytes(mut self, llc_slice_bytes: u64) -> Self {
        self.llc_slice_bytes = llc_slice_bytes;
        self
    }

    /// With the THP order's own lists, or none ([`PcpConfig::thp_order`]).
    pub const fn with_thp_order(mut self, thp_order: Option<u8>) -> Self {
        self.thp_order = thp_order;
        self
    }

    /// With `high_mode` set ([`PcpConfig::high_mode`]).
    pub const fn with_high_mode(mut self, high_mode: HighMode) -> Self {
        self.high_mode = high_mode;
        self
    }

    /// With `alloc_scaling` set ([`PcpConfig::alloc_scaling`]).
    pub const fn with_alloc_scaling(mut self, alloc_scaling: bool) -> Self {
        self.alloc_scaling = alloc_scaling;
        self
    }

    /// With `free_scaling` set ([`PcpConfig::free_scaling`]).
    pub const fn with_free_scaling(mut self, free_scaling: FreeScaling) -> Self {
        self.free_scaling = free_scaling;
        self
    }

    /// With `decay` set ([`PcpConfig::decay`]).
    pub const fn with_decay(mut self, decay: bool) -> Self {
        self.decay = decay;
        self
    }

    /// With `drain_in_batches` set ([`PcpConfig::drain_in_batches`]).
    pub const fn with_drain_in_batches(mut self, drain_in_batches: bool) -> Self {
        self.drain_in_batches = drain_in_batches;
        self
    }

    /// With `highatomic_no_refill` set ([`PcpConfig::highatomic_no_refill`]).
    pub const fn with_highatomic_no_refill(mut self, highatomic_no_refill: bool) -> Self {
        self.highatomic_no_refill = highatomic_no_refill;
        self
    }

    /// Checks the settings against a zone's geometry. `_max_order` is not needed today: a THP
    /// order above it simply has no lists.
    pub fn validate(&self, _max_order: u8) -> Result<(), ConfigError> {
        if self.cpus == 0 || self.cpus > 4096 {
            return Err(ConfigError::BadPcp("cpus must be 1..=4096"));
        }
        if self.batch_scale_max > 6 {
            return Err(ConfigError::BadPcp("batch_scale_max must be 0..=6"));
        }
        if self.high_fraction != 0 && self.high_fraction < 8 {
            return Err(ConfigError::BadPcp("high_fraction must be 0 or >= 8"));
        }
        if self.batch == Some(0) {
            return Err(ConfigError::BadPcp("batch must be >= 1"));
        }
        if let (Some(lo), Some(hi)) = (self.high_min, self.high_max) {
            if lo > hi {
                return Err(ConfigError::BadPcp("high_min must not exceed high_max"));
            }
        }
        if let Some(t) = self.thp_order {
            if t <= Order::COSTLY.get() {
                return Err(ConfigError::BadPcp("thp_order must be above 3"));
            }
        }
        if self.locking == PcpLocking::OwnerOnly && self.drain == DrainMode::Remote {
            return Err(ConfigError::BadPcp(
                "owner-only lists cannot be drained remotely (use DrainMode::Owner)",
            ));
        }
        Ok(())
    }
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
    /// `__setup_per_zone_wmarks` (6.12+): `ZONE_MOVABLE` is left out of `lowmem_pages` and
    /// gets `clamp(managed / 1024, 32, 128)` as its min mark, like highmem. Off (6.1), it is
    /// lowmem.
    pub movable_like_highmem: bool,
    /// `set_recommended_min_free_kbytes` (`mm/khugepaged.c`, run when THP is enabled): an
    /// automatic `min_free_kbytes` is raised to `pageblock_nr_pages * nr_zones * (2 +
    /// MIGRATE_PCPTYPES^2)` KiB-worth of pages (zones up to Normal), at most 5% of
    /// `nr_free_buffer_pages()`. Off by default (THP off); every kernel preset turns it on,
    /// as Debian's `transparent_hugepage=always` kernels do. An explicit
    /// `WatermarkConfig::Auto { min_free_kbytes: Some(_) }` is taken as the final value.
    pub thp_min_free_kbytes: bool,
    /// 7.2's `adjust_managed_page_count` calls `setup_per_zone_lowmem_reserve`: pages freed
    /// late ([`Node::free_reserved_area`](crate::Node::free_reserved_area)) update the lowmem
    /// reserve (never the watermarks or PCP sizes). Off (6.1, 6.12), the reserve keeps its
    /// value until the next watermark setup.
    pub lowmem_reserve_follows_managed: bool,
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
            lowmem_reserve_follows_managed: true,
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

    /// With `lowmem_reserve_follows_managed` set ([`ZoneConfig::lowmem_reserve_follows_managed`]).
    pub const fn with_lowmem_reserve_follows_managed(
        mut self,
        lowmem_reserve_follows_managed: bool,
    ) -> Self {
        self.lowmem_reserve_follows_managed = lowmem_reserve_follows_managed;
        self
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

/// A kernel release whose PCP, buddy and boot rules a [`ZoneConfig`] can follow
/// ([`ZoneConfig::for_kernel`]). The presets follow the Debian trees the research read
/// (`docs/kernel-versions.md`): 6.1.192, 6.12.117 and 7.2.13, whose backports differ from the
/// upstream `.0` releases (6.1.192 has `CONFIG_PCP_BATCH_SCALE_MAX`; 6.12.117 has 6.15's
/// claim/steal fallback). 5.15 and 6.6 are not offered: their sources were not verified.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum KernelVersion {
    /// Debian 6.1.192: fixed `high`, `free_factor` drains, 6.1's `free_high`, no decay.
    V6_1,
    /// Debian 6.12.117: auto-tuned `high`, `free_high` at `free_count >= batch`.
    V6_12,
    /// Debian 7.2.13 (= mainline for every rule the research checked).
    V7_2,
    /// The newest release modelled: the same rules as [`KernelVersion::V7_2`].
    Mainline,
}

impl KernelVersion {
    /// Every version, oldest first.
    pub const ALL: [KernelVersion; 4] = [
        KernelVersion::V6_1,
        KernelVersion::V6_12,
        KernelVersion::V7_2,
        KernelVersion::Mainline,
    ];

    /// The name `FromStr` accepts and `Display` prints.
    pub const fn name(self) -> &'static str {
        match self {
            KernelVersion::V6_1 => "6.1",
            KernelVersion::V6_12 => "6.12",
            KernelVersion::V7_2 => "7.2",
            KernelVersion::Mainline => "mainline",
        }
    }

    /// Sets every rule this version has its own way of doing on `cfg` (the other fields,
    /// geometry and sysctls included, are left alone). Each rule is a separate field, so an
    /// experiment can turn any one of them back afterwards.
    pub fn apply(self, cfg: &mut ZoneConfig) {
        let v61 = self == KernelVersion::V6_1;
        let v612 = self == KernelVersion::V6_12;
        let p = &mut cfg.pcp;
        // zone_set_pageset_high_and_batch / pageset_update: 6.1 stores one `high`.
        p.high_mode = if v61 {
            HighMode::Fixed
        } else {
            HighMode::AutoTune
        };
        // __rmqueue_pcplist (6.1: `batch`) vs nr_pcp_alloc (6.7+: `batch << alloc_factor`).
        p.alloc_scaling = !v61;
        // nr_pcp_free: 6.1 `batch << free_factor`, 6.7+ `clamp(free_count, ...)`.
        p.free_scaling = if v61 {
            FreeScaling::FreeFactor
        } else {
            FreeScaling::FreeCount
        };
        // CONFIG_PCP_BATCH_SCALE_MAX: 5 in all three Debian trees.
        p.batch_scale_max = 5;
        // free_unref_page_commit (6.1, 6.12) / free_frozen_page_commit (7.2).
        p.free_high = match self {
            KernelVersion::V6_1 => FreeHigh::FreeFactor,
            KernelVersion::V6_12 => FreeHigh::Batch,
            KernelVersion::V7_2 | KernelVersion::Mainline => FreeHigh::Current,
        };
        // refresh_cpu_vm_stats -> decay_pcp_high: 6.7+.
        p.decay = !v61;
        // free_frozen_page_commit's chunked drain: 7.2 only.
        p.drain_in_batches = !(v61 || v612);
        // __rmqueue_pcplist's ALLOC_HIGHATOMIC refusal: 7.2 only.
        p.highatomic_no_refill = !(v61 || v612);
        // reserve_highatomic_pageblock and __zone_watermark_unusable_free: 6.1 forms.
        cfg.highatomic_cap = if v61 {
            HighatomicCap::PlusPageblock
        } else {
            HighatomicCap::Aligned
        };
        cfg.highatomic_unusable = if v61 {
            HighatomicUnusable::Reserved
        } else {
            HighatomicUnusable::Free
        };
        // __setup_per_zone_wmarks: Movable like highmem from 6.7 on (6.12 has it).
        cfg.movable_like_highmem = !v61;
        // set_recommended_min_free_kbytes: the Debian kernels boot with THP `always`.
        cfg.thp_min_free_kbytes = true;
        // adjust_managed_page_count -> setup_per_zone_lowmem_reserve: 7.2 only.
        cfg.lowmem_reserve_follows_managed = !(v61 || v612);
    }
}

impl core::fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

impl core::str::FromStr for KernelVersion {
    type Err = ConfigError;
    /// `6.1`, `6.12`, `7.2` or `mainline`.
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        KernelVersion::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or(ConfigError::UnknownKernel)
    }
}

impl ZoneConfig {
    /// The default configuration with `version`'s rules ([`KernelVersion::apply`]).
    pub fn for_kernel(version: KernelVersion) -> ZoneConfig {
        let mut cfg = ZoneConfig::default();
        version.apply(&mut cfg);
        cfg
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
        assert!(!c61.lowmem_reserve_follows_managed);

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
        assert!(!c612.lowmem_reserve_follows_managed);

        let c72 = ZoneConfig::for_kernel(KernelVersion::V7_2);
        let p = &c72.pcp;
        assert_eq!(p.high_mode, HighMode::AutoTune);
        assert!(p.alloc_scaling);
        assert_eq!(p.free_scaling, FreeScaling::FreeCount);
        assert_eq!(p.free_high, FreeHigh::Current);
        assert!(p.decay && p.drain_in_batches && p.highatomic_no_refill);
        assert_eq!(c72.highatomic_cap, HighatomicCap::Aligned);
        assert_eq!(c72.highatomic_unusable, HighatomicUnusable::Free);
        assert!(c72.movable_like_highmem && c72.thp_min_free_kbytes);
        assert!(c72.lowmem_reserve_follows_managed);
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
        assert_eq!(
            "5.15".parse::<KernelVersion>(),
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
