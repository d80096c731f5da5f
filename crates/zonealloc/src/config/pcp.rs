//! Per-CPU page list settings: [`PcpConfig`] and the enums of its seed changes and kernel
//! rules.

use crate::error::ConfigError;
use crate::types::Order;

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
    /// 5.15 to 6.6 upstream (`nr_pcp_free`: `if (batch < max_nr_free) pcp->free_factor++;`):
    /// [`FreeScaling::FreeFactor`] without the `CONFIG_PCP_BATCH_SCALE_MAX` cap, so drains
    /// double until they reach `high - batch` (3429 at batch 63 and high 3492, where the
    /// capped form stops at 2016). The cap reached 6.1 only as a Debian backport.
    FreeFactorUncapped,
}

impl FreeScaling {
    /// Whether `free_count` holds the pre-6.7 `free_factor` (drains since allocations last
    /// halved it) rather than 6.7+'s count of freed pages.
    #[inline]
    pub const fn is_free_factor(self) -> bool {
        matches!(
            self,
            FreeScaling::FreeFactor | FreeScaling::FreeFactorUncapped
        )
    }
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

/// Which migratetype `free_pcppages_bulk` returns a drained block to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DrainMigratetype {
    /// 6.12+: the pageblock's type at drain (`get_pfnblock_migratetype`).
    AtDrain,
    /// 6.1: the type cached in the page when it went on the list (`get_pcppage_migratetype`):
    /// its pageblock's type at free (`free_unref_page_prepare` → `set_pcppage_migratetype`,
    /// HighAtomic kept though the block rides the Movable list), or the refill's type
    /// (`__rmqueue_smallest` → `set_pcppage_migratetype`). A pageblock re-typed meanwhile
    /// gets the block back on the old type's free list.
    AtFree,
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
    /// The CPUs `high` is split across (`zone_highsize`'s `nr_split_cpus`: the CPUs of the
    /// zone's node, `cpumask_weight(cpumask_of_node(zone_to_nid(zone)))`, in 6.1 and 7.2
    /// alike); `None`: all [`cpus`](PcpConfig::cpus), as on a single node. A node without
    /// CPUs splits across every online CPU (`if (!nr_split_cpus) nr_split_cpus =
    /// num_online_cpus()`), which `Some(0)` gives.
    pub split_cpus: Option<u32>,
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
    /// The migratetype a drained block is freed with (6.1: cached at free).
    pub drain_migratetype: DrainMigratetype,
    /// 5.15's `free_pcppages_bulk`: the round robin always starts after list 0 (no `pindex`
    /// argument: the freed list is not drained first) and takes `batch_free` blocks from each
    /// list it reaches, `batch_free` being one more for every list it stepped over (the whole
    /// count when only one list holds pages); and `drain_pages_zone` drains in one call. Off,
    /// each list is drained to empty before the next, starting at the freed list (5.18 on).
    pub drain_batch_free: bool,
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
            split_cpus: None,
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
            drain_migratetype: DrainMigratetype::AtDrain,
            drain_batch_free: false,
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

    /// With `high` split across `split_cpus` CPUs ([`PcpConfig::split_cpus`]).
    pub const fn with_split_cpus(mut self, split_cpus: Option<u32>) -> Self {
        self.split_cpus = split_cpus;
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

    /// With `drain_migratetype` set ([`PcpConfig::drain_migratetype`]).
    pub const fn with_drain_migratetype(mut self, drain_migratetype: DrainMigratetype) -> Self {
        self.drain_migratetype = drain_migratetype;
        self
    }

    /// With `drain_batch_free` set ([`PcpConfig::drain_batch_free`]).
    pub const fn with_drain_batch_free(mut self, drain_batch_free: bool) -> Self {
        self.drain_batch_free = drain_batch_free;
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
