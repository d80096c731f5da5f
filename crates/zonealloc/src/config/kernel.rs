//! Kernel release presets: [`KernelVersion`] and [`ZoneConfig::for_kernel`].

use super::{
    DrainMigratetype, FallbackRule, FreeHigh, FreeScaling, HighMode, HighatomicCap,
    HighatomicUnusable, ZoneConfig,
};
use crate::error::ConfigError;

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
        // free_pcppages_bulk: 6.1 `get_pcppage_migratetype`, 6.12+ `get_pfnblock_migratetype`.
        p.drain_migratetype = if v61 {
            DrainMigratetype::AtFree
        } else {
            DrainMigratetype::AtDrain
        };
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
        // __rmqueue: 6.1 `__rmqueue_fallback`; 6.12.117 has 6.15's claim/steal backported.
        cfg.fallback = if v61 {
            FallbackRule::Legacy
        } else {
            FallbackRule::ClaimSteal
        };
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
