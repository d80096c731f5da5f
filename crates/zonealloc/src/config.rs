//! Zone configuration: geometry, watermarks and one knob per seed change.
//!
//! Every default is the mainline kernel's (x86-64, 4 KiB pages, `CONFIG_CMA=n`); every seed
//! change is a `bool` that defaults to on, so an experiment can show its effect by turning it
//! off.

use crate::error::ConfigError;
use crate::types::{MAX_NR_ZONES, MAX_ORDER_LIMIT};

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
        Ok(())
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
