//! Kernel release presets: [`KernelVersion`] and [`ZoneConfig::for_kernel`].

use super::{
    DrainMigratetype, FallbackRule, FreeHigh, FreeScaling, HighMode, HighatomicCap,
    HighatomicUnusable, SmpLocksFree, ZoneConfig,
};
use crate::error::ConfigError;

/// A kernel release whose PCP, buddy and boot rules a [`ZoneConfig`] can follow
/// ([`ZoneConfig::for_kernel`]). The presets follow the trees the research read
/// (`docs/kernel-versions.md`): Android's common 5.15 (5.15.202), Debian 6.1.192, upstream
/// 6.6.14, Debian 6.12.117 and 7.2.13, whose backports differ from the upstream `.0` releases
/// (6.1.192 has `CONFIG_PCP_BATCH_SCALE_MAX`; 6.12.117 has 6.15's claim/steal fallback).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum KernelVersion {
    /// 5.15 (Android common 5.15.202): 6.1's fixed `high`, `batch` refills and cached drain
    /// migratetype, but `free_factor` drains without a cap, no `free_high`, and
    /// `free_pcppages_bulk`'s `batch_free` round robin.
    V5_15,
    /// Debian 6.1.192: fixed `high`, `free_factor` drains, 6.1's `free_high`, no decay.
    V6_1,
    /// 6.6.14: 6.1's PCP rules with `free_factor` uncapped, and `ZONE_MOVABLE` watermarks like
    /// highmem's.
    V6_6,
    /// Debian 6.12.117: auto-tuned `high`, `free_high` at `free_count >= batch`.
    V6_12,
    /// Debian 7.2.13 (= mainline for every rule the research checked).
    V7_2,
    /// The newest release modelled: the same rules as [`KernelVersion::V7_2`].
    Mainline,
}

impl KernelVersion {
    /// Every version, oldest first.
    pub const ALL: [KernelVersion; 6] = [
        KernelVersion::V5_15,
        KernelVersion::V6_1,
        KernelVersion::V6_6,
        KernelVersion::V6_12,
        KernelVersion::V7_2,
        KernelVersion::Mainline,
    ];

    /// The name `FromStr` accepts and `Display` prints.
    pub const fn name(self) -> &'static str {
        match self {
            KernelVersion::V5_15 => "5.15",
            KernelVersion::V6_1 => "6.1",
            KernelVersion::V6_6 => "6.6",
            KernelVersion::V6_12 => "6.12",
            KernelVersion::V7_2 => "7.2",
            KernelVersion::Mainline => "mainline",
        }
    }

    /// Sets every rule this version has its own way of doing on `cfg` (the other fields,
    /// geometry and sysctls included, are left alone). Each rule is a separate field, so an
    /// experiment can turn any one of them back afterwards.
    pub fn apply(self, cfg: &mut ZoneConfig) {
        use KernelVersion::{Mainline, V5_15, V6_1, V6_12, V6_6, V7_2};
        // Before 6.7: one fixed `high`, `free_factor`, no decay, no alloc_factor.
        let pre67 = matches!(self, V5_15 | V6_1 | V6_6);
        let v72 = matches!(self, V7_2 | Mainline);
        let p = &mut cfg.pcp;
        // zone_set_pageset_high_and_batch / pageset_update: before 6.7 one `high`.
        p.high_mode = if pre67 {
            HighMode::Fixed
        } else {
            HighMode::AutoTune
        };
        // __rmqueue_pcplist (5.15-6.6: `batch`) vs nr_pcp_alloc (6.7+: `batch << alloc_factor`).
        p.alloc_scaling = !pre67;
        // nr_pcp_free: `batch << free_factor` (5.15 and 6.6.14 uncapped, Debian 6.1.192 capped
        // at CONFIG_PCP_BATCH_SCALE_MAX), 6.7+ `clamp(free_count, ...)`.
        p.free_scaling = match self {
            V5_15 | V6_6 => FreeScaling::FreeFactorUncapped,
            V6_1 => FreeScaling::FreeFactor,
            V6_12 | V7_2 | Mainline => FreeScaling::FreeCount,
        };
        // CONFIG_PCP_BATCH_SCALE_MAX: 5 in the Debian trees. 5.15 and 6.6.14 have no such
        // option; under their rules only drain_pages_zone's chunks read it, and those drain
        // the same pages as their one call (5.15's batch_free drains in one call).
        p.batch_scale_max = 5;
        // free_unref_page_commit (5.15: none; 6.1, 6.6: `free_factor && order <= 3`; 6.12)
        // / free_frozen_page_commit (7.2).
        p.free_high = match self {
            V5_15 => FreeHigh::Off,
            V6_1 | V6_6 => FreeHigh::FreeFactor,
            V6_12 => FreeHigh::Batch,
            V7_2 | Mainline => FreeHigh::Current,
        };
        // refresh_cpu_vm_stats -> decay_pcp_high: 6.7+.
        p.decay = !pre67;
        // free_frozen_page_commit's chunked drain: 7.2 only.
        p.drain_in_batches = v72;
        // __rmqueue_pcplist's ALLOC_HIGHATOMIC refusal: 7.2 only.
        p.highatomic_no_refill = v72;
        // free_pcppages_bulk: `get_pcppage_migratetype` before 6.7 (5.15, 6.1, 6.6),
        // `get_pfnblock_migratetype` in 6.12+.
        p.drain_migratetype = if pre67 {
            DrainMigratetype::AtFree
        } else {
            DrainMigratetype::AtDrain
        };
        // free_pcppages_bulk's `batch_free` round robin from list 0: 5.15 (gone in 5.18).
        p.drain_batch_free = self == V5_15;
        // reserve_highatomic_pageblock and __zone_watermark_unusable_free: the old forms
        // (`managed / 100 + pageblock`, `nr_reserved_highatomic`) up to 6.6.
        cfg.highatomic_cap = if pre67 {
            HighatomicCap::PlusPageblock
        } else {
            HighatomicCap::Aligned
        };
        cfg.highatomic_unusable = if pre67 {
            HighatomicUnusable::Reserved
        } else {
            HighatomicUnusable::Free
        };
        // __setup_per_zone_wmarks: Movable like highmem in 6.6.14 and later, not in 5.15
        // or 6.1.
        cfg.movable_like_highmem = !matches!(self, V5_15 | V6_1);
        // set_recommended_min_free_kbytes: the Debian kernels boot with THP `always`.
        cfg.thp_min_free_kbytes = true;
        // hugepage_init: `totalram_pages() < (512 << (20 - PAGE_SHIFT))` (6.1; 7.2:
        // `MB_TO_PAGES(512)`) turns THP off and returns before start_stop_khugepaged.
        cfg.thp_min_totalram_mib = 512;
        // "Freeing SMP alternatives memory": alternative_instructions (start_kernel) up to
        // 6.12; 7.2's free_smp_locks is an arch_initcall, between init_per_zone_wmark_min
        // (postcore) and hugepage_init (subsys).
        cfg.smp_locks_free = if v72 {
            SmpLocksFree::ArchInitcall
        } else {
            SmpLocksFree::BeforeInitcalls
        };
        // __rmqueue: `__rmqueue_fallback` up to 6.6; 6.12.117 has 6.15's claim/steal backported.
        cfg.fallback = if pre67 {
            FallbackRule::Legacy
        } else {
            FallbackRule::ClaimSteal
        };
        // adjust_managed_page_count -> setup_per_zone_lowmem_reserve: 7.2 only.
        cfg.lowmem_reserve_follows_managed = v72;
    }
}

impl core::fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

impl core::str::FromStr for KernelVersion {
    type Err = ConfigError;
    /// `5.15`, `6.1`, `6.6`, `6.12`, `7.2` or `mainline`.
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
