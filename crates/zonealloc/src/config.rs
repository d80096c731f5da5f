//! Zone configuration: geometry, watermarks and one knob per seed change.
//!
//! Every default is the mainline kernel's (x86-64, 4 KiB pages, `CONFIG_CMA=n`); every seed
//! change is a `bool` that defaults to on, so an experiment can show its effect by turning it
//! off.

use crate::error::ConfigError;
use crate::types::{Order, MAX_NR_ZONES, MAX_ORDER_LIMIT};

/// How a zone's min/low/high watermarks are set.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
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
    Current,
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
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
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
        PcpConfig {
            enabled: true,
            cpus: 1,
            batch: None,
            high_min: None,
            high_max: None,
            high_fraction: 0,
            batch_scale_max: 5,
            free_high: FreeHigh::Current,
            locking: PcpLocking::Spinlock,
            drain: DrainMode::Remote,
            llc_slice_bytes: 2 << 20,
            thp_order: Some(9),
        }
    }
}

impl PcpConfig {
    /// The default with `cpus` CPUs.
    pub fn with_cpus(cpus: u32) -> Self {
        PcpConfig {
            cpus,
            ..PcpConfig::default()
        }
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
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
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
    /// Per-CPU lists.
    pub pcp: PcpConfig,
}

impl Default for ZoneConfig {
    fn default() -> Self {
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
            pcp: PcpConfig::default(),
        }
    }
}

impl ZoneConfig {
    /// A configuration with zero watermarks, for tests and users who manage memory that has
    /// no reclaim behind it (device memory, buffer pools): every free frame is usable.
    pub fn without_watermarks() -> Self {
        ZoneConfig {
            watermarks: WatermarkConfig::Fixed {
                min: 0,
                low: 0,
                high: 0,
            },
            ..ZoneConfig::default()
        }
    }

    /// This configuration with per-CPU lists for `cpus` CPUs.
    pub fn with_cpus(self, cpus: u32) -> Self {
        ZoneConfig {
            pcp: PcpConfig { cpus, ..self.pcp },
            ..self
        }
    }

    /// This configuration without per-CPU lists (buddy only).
    pub fn without_pcp(self) -> Self {
        ZoneConfig {
            pcp: PcpConfig {
                enabled: false,
                ..self.pcp
            },
            ..self
        }
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
