//! Per-CPU page lists (PCP): the cache in front of the buddy allocator that lets most
//! allocations and frees skip the zone lock (`struct per_cpu_pages`).
//!
//! Each CPU has lists for orders 0..=3 of the three PCP migratetypes and two THP lists. An
//! allocation takes the head of its list, refilling it in a batch from the buddy when empty
//! (`rmqueue_pcplist`, `nr_pcp_alloc`, `rmqueue_bulk`); a free pushes at the head and, once the
//! list count reaches `high`, drains a batch from the tails back to the buddy
//! (`free_frozen_page_commit`, `nr_pcp_high`, `nr_pcp_free`, `free_pcppages_bulk`).
//!
//! [`PerCpuPages`] is a plain struct with the kernel's fields and its pure policy functions;
//! `policy.rs` is the lists' geometry and the policy a zone's lists share, `slot.rs` is where
//! the lists live (per-CPU slots, the shared pageset parameters) and `sizing.rs` the kernel's
//! rules for `batch` and `high`. This module takes no lock and knows
//! no zone: the lock choreography on [`Zone`](crate::Zone) (refill, free, drain, decay, the
//! hit paths and [`CpuHandle`](crate::CpuHandle)) lives in `zone/`, one layer up. Policy
//! variants (kernel-version presets, say) belong here, as pure functions of `PerCpuPages`.
//!
//! # Locking
//! Each PCP has its own [`SpinLock`](crate::sync::SpinLock). Allocation and free only
//! `try_lock` it and go to the buddy on failure; drains and decay lock it. Lock order: PCP,
//! then zone, never the reverse (`rmqueue_bulk` and `free_pcppages_bulk` take the zone lock
//! with the PCP lock held).
//!
//! # Invariants (checked by `Zone::check`)
//! - P1: `count` equals the pages on all lists (a block of order n counts 2^n).
//! - P2: every list is well formed and every member is a `Pcp` head of the list's order,
//!   aligned to it.
//! - P3: `high_min <= high_max`.
//! - G1 (global conservation): buddy free pages + pages on all PCP lists + allocated pages =
//!   managed pages; every managed frame is in exactly one of those places.

mod decay;
mod policy;
mod sizing;
mod slot;

pub use decay::DecayOutcome;
pub(crate) use policy::{
    PcpPolicy, NR_LOWORDER_PCP_LISTS, NR_PCP_LISTS, PCP_ORDER_SLOTS, THP_ORDER_SLOT,
};
pub use sizing::zone_highsize;
pub(crate) use sizing::{stat_threshold, zone_batchsize};
pub(crate) use slot::{PcpAccess, PcpSet, ATTENTION_OFF};
pub use slot::{PcpInfo, PcpSlot, PcpTuning};

use crate::buddy::{BuddyZone, FreePlacement};
use crate::config::{DrainMigratetype, FreeHigh, FreeScaling};
use crate::list::FrameList;
use crate::meta::{FrameState, FrameTable};
use crate::tracepoint::ZoneEvent;
use crate::types::{MigrateType, Order};

bitflags::bitflags! {
    /// `per_cpu_pages.flags`: the `PCPF_*` bits.
    #[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
    pub(crate) struct PcpFlags: u8 {
        /// `PCPF_PREV_FREE_HIGH_ORDER`: the previous free was of a high order.
        const PREV_FREE_HIGH_ORDER = 1;
        /// `PCPF_FREE_HIGH_BATCH`: `free_high` keeps at least `batch` pages.
        const FREE_HIGH_BATCH = 2;
    }
}

/// Counters of one CPU's lists. Pages are base pages; events are counted once each.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct PcpStats {
    /// Allocations served from a non-empty list.
    pub alloc_hits: u64,
    /// Allocations that found their list empty and refilled it (`rmqueue_bulk`).
    pub alloc_misses: u64,
    /// Pages brought in by refills.
    pub refill_pages: u64,
    /// Frees put on a list.
    pub frees: u64,
    /// Pages drained because `count` reached `high` on a free.
    pub drain_high_pages: u64,
    /// Pages drained by the `free_high` rule (seed 000).
    pub drain_free_high_pages: u64,
    /// Pages drained by `decay_pcp_high` on ticks.
    pub drain_decay_pages: u64,
    /// Pages drained by this CPU itself (`drain_local`, or serving an owner-drain request).
    pub drain_local_pages: u64,
    /// Pages drained by another thread taking this CPU's lock (`drain_cpu`, `drain_all`).
    pub drain_remote_pages: u64,
    /// Allocations and frees that found the lock taken and went to the buddy.
    pub trylock_failures: u64,
}

impl PcpStats {
    /// All counters zero.
    pub const ZERO: PcpStats = PcpStats {
        alloc_hits: 0,
        alloc_misses: 0,
        refill_pages: 0,
        frees: 0,
        drain_high_pages: 0,
        drain_free_high_pages: 0,
        drain_decay_pages: 0,
        drain_local_pages: 0,
        drain_remote_pages: 0,
        trylock_failures: 0,
    };

    pub(crate) fn add(&mut self, o: &PcpStats) {
        self.alloc_hits += o.alloc_hits;
        self.alloc_misses += o.alloc_misses;
        self.refill_pages += o.refill_pages;
        self.frees += o.frees;
        self.drain_high_pages += o.drain_high_pages;
        self.drain_free_high_pages += o.drain_free_high_pages;
        self.drain_decay_pages += o.drain_decay_pages;
        self.drain_local_pages += o.drain_local_pages;
        self.drain_remote_pages += o.drain_remote_pages;
        self.trylock_failures += o.trylock_failures;
    }
}

/// Why pages leave a PCP for the buddy (selects the counter).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum DrainReason {
    High,
    FreeHigh,
    Decay,
    Local,
    Remote,
}

/// One CPU's lists for one zone (`struct per_cpu_pages`). Counts are in base pages and signed,
/// as in the kernel, because a drain of high-order blocks may overshoot.
#[derive(Debug)]
pub(crate) struct PerCpuPages {
    /// Pages on all lists.
    pub(crate) count: i32,
    /// Current high mark, auto-tuned within `high_min..=high_max`; starts at 0 and is clamped
    /// lazily.
    pub(crate) high: i32,
    pub(crate) high_min: i32,
    pub(crate) high_max: i32,
    /// Refill and drain chunk, in pages.
    pub(crate) batch: i32,
    /// `PCPF_*`.
    pub(crate) flags: PcpFlags,
    /// Refill scale exponent, `0..=CONFIG_PCP_BATCH_SCALE_MAX`; grows on refills, halves on
    /// frees.
    pub(crate) alloc_factor: u8,
    /// Pages freed since the last allocation halved it (`short` in the kernel; `i32` here so
    /// that the lab's large batches cannot overflow it). Under
    /// [`FreeScaling::FreeFactor`] it holds 6.1's `free_factor` instead: drains since
    /// allocations last halved it, `0..=CONFIG_PCP_BATCH_SCALE_MAX`. Both halve on every PCP
    /// allocation (`rmqueue_pcplist`), so the hit paths need not know which.
    pub(crate) free_count: i32,
    pub(crate) lists: [FrameList; NR_PCP_LISTS],
    pub(crate) stats: PcpStats,
    /// Allocations served per PCP order slot (orders 0..=3, then the THP order; added into
    /// the zone's per-order counts).
    pub(crate) allocs: [u64; PCP_ORDER_SLOTS],
    /// Allocations that refilled their list first (`PcpStats::alloc_hits` is the sum of
    /// `allocs` less these, filled in by a snapshot, so that a hit counts once).
    pub(crate) miss_allocs: u64,
    /// Frees taken per PCP order slot (their sum is `PcpStats::frees`, which a snapshot fills
    /// in, so that a free counts once).
    pub(crate) frees_by_order: [u64; PCP_ORDER_SLOTS],
    /// Generation of the shared pageset parameters last copied into this PCP.
    pub(crate) params_gen: u32,
    /// The slot's `attention` as of the last `Zone::pcp_enter` (see `PcpSlot::quiet`). Starts at
    /// a value `attention` does not have, so that a PCP's first operation takes the full path.
    pub(crate) attention_seen: u32,
    /// `batch << CONFIG_PCP_BATCH_SCALE_MAX`, where `free_count` stops growing; set with
    /// `batch` by `PcpSet::refresh_locked` (for the order-0 free hit path).
    pub(crate) free_count_max: i32,
    /// The least `free_count` at which a free of order 1..=3 may be `free_high`
    /// ([`PerCpuPages::free_high`]'s count test, streak aside): `i32::MAX` when the policy
    /// has none. Set with `batch` and `high_min` by `PcpSet::refresh_locked` (for the hit
    /// paths' [`PerCpuPages::may_free_high`]).
    pub(crate) free_high_min: i32,
    /// `high` while it lies within `high_min..=high_max`, else 0: the free hit path takes a
    /// block only while the count after it stays below this, so one comparison stands for
    /// nr_pcp_high's clamp and its `count >= high` test. Kept in step with `high`,
    /// `high_min` and `high_max` by [`PerCpuPages::set_high`] and `PcpSet::refresh`, the
    /// only places they change.
    pub(crate) free_fast_high: i32,
}

impl PerCpuPages {
    /// `per_cpu_pages_init`: everything zero, `batch` 1.
    pub(crate) const fn new() -> Self {
        PerCpuPages {
            count: 0,
            high: 0,
            high_min: 0,
            high_max: 0,
            batch: 1,
            flags: PcpFlags::empty(),
            alloc_factor: 0,
            free_count: 0,
            lists: [FrameList::new(); NR_PCP_LISTS],
            stats: PcpStats::ZERO,
            allocs: [0; PCP_ORDER_SLOTS],
            miss_allocs: 0,
            frees_by_order: [0; PCP_ORDER_SLOTS],
            params_gen: 0,
            attention_seen: u32::MAX,
            free_count_max: 0,
            free_high_min: 0,
            free_fast_high: 0,
        }
    }

    /// Sets `high` (and the hit path's copy of it, `free_fast_high`).
    #[inline]
    pub(crate) fn set_high(&mut self, high: i32) {
        self.high = high;
        self.sync_fast_high();
    }

    /// Recomputes `free_fast_high` from `high`, `high_min` and `high_max`.
    #[inline]
    pub(crate) fn sync_fast_high(&mut self) {
        let within = self.high >= self.high_min && self.high <= self.high_max;
        self.free_fast_high = if within { self.high } else { 0 };
    }

    #[inline]
    fn clamp_high(&mut self) -> i32 {
        self.set_high(self.high.max(self.high_min).min(self.high_max));
        self.high
    }

    /// Takes the head of list `pi` for an allocation (`__rmqueue_pcplist`'s unlink).
    #[inline(always)]
    pub(crate) fn take_head(
        &mut self,
        t: &FrameTable,
        pi: usize,
        order: Order,
        mt: MigrateType,
    ) -> Option<u32> {
        let idx = self.lists[pi].pop_head(t)?;
        self.count -= 1 << order.get();
        t.set_state(idx, FrameState::Allocated(order, mt));
        self.allocs[PcpPolicy::order_slot(order)] += 1;
        Some(idx)
    }

    /// Puts a freed block at the head of list `pi` (the first steps of
    /// `free_frozen_page_commit`: a free also halves the refill scale).
    #[inline(always)]
    pub(crate) fn put_head(&mut self, t: &FrameTable, pi: usize, idx: u32, order: Order) {
        self.alloc_factor >>= 1;
        self.lists[pi].push_head(t, idx);
        t.set_state(idx, FrameState::Pcp(order));
        self.count += 1 << order.get();
        self.frees_by_order[PcpPolicy::order_slot(order)] += 1;
    }

    /// The refill size of the zone's policy: `nr_pcp_alloc` (6.7+), or 6.1's fixed `batch`
    /// (`__rmqueue_pcplist`: `if (batch > 1) batch = max(batch >> order, 2);`, no
    /// `alloc_factor`, `high` neither read nor grown).
    pub(crate) fn refill_size(
        &mut self,
        order: Order,
        below_high: bool,
        policy: &PcpPolicy,
    ) -> i32 {
        if policy.alloc_scaling {
            return self.nr_pcp_alloc(order, below_high, policy.scale);
        }
        let batch = self.batch;
        if batch > 1 {
            (batch >> order.get()).max(2)
        } else {
            batch
        }
    }

    /// `nr_pcp_alloc`: how many blocks of `order` a refill fetches. Grows `high` and
    /// `alloc_factor` as the kernel does.
    pub(crate) fn nr_pcp_alloc(&mut self, order: Order, below_high: bool, scale: u8) -> i32 {
        let base = self.batch;
        let (hmin, hmax) = (self.high_min, self.high_max);
        let mut high = self.clamp_high();
        if high < base {
            return 1; // PCP disabled or boot pageset
        }
        let mut batch = if order == Order::ZERO {
            base << self.alloc_factor
        } else {
            base
        };
        if hmin != hmax && !below_high {
            high = (high + batch).min(hmax);
            self.set_high(high);
        }
        if order == Order::ZERO {
            let max_nr_alloc = (high - self.count - base).max(base);
            if batch <= max_nr_alloc && self.alloc_factor < scale {
                self.alloc_factor += 1;
            }
            batch = batch.min(max_nr_alloc);
        }
        if batch > 1 {
            batch = (batch >> order.get()).max(2);
        }
        batch
    }

    /// The free-side bookkeeping of `free_frozen_page_commit` after the block is on its list:
    /// `free_high` and `free_count`. Returns `free_high`.
    #[inline]
    pub(crate) fn note_free(&mut self, order: Order, policy: &PcpPolicy) -> bool {
        let free_high = self.free_high(order, policy);
        self.note_high_order(order);
        // 6.1 counts drains in `free_factor` (nr_pcp_free), not frees.
        if policy.free_scaling == FreeScaling::FreeCount
            && self.free_count < (self.batch << policy.scale)
        {
            self.free_count += 1 << order.get();
        }
        free_high
    }

    /// `free_high` of `free_frozen_page_commit` for a free of `order` whose block is already
    /// counted, before [`PerCpuPages::note_free`] updates anything: the pure half of it.
    #[inline]
    pub(crate) fn free_high(&self, order: Order, policy: &PcpPolicy) -> bool {
        if !(1..=3).contains(&order.get()) {
            return false;
        }
        let batch = self.batch;
        let streak = || {
            self.flags.contains(PcpFlags::PREV_FREE_HIGH_ORDER)
                && (!self.flags.contains(PcpFlags::FREE_HIGH_BATCH) || self.count >= batch)
        };
        // The count tests below are the ones `free_high_min` precomputes.
        match policy.free_high {
            FreeHigh::Off => false,
            FreeHigh::Original => self.free_count > 0,
            // 6.1 free_unref_page_commit: `pcp->free_factor && order && order <= 3`
            // (`free_count` holds `free_factor` under FreeScaling::FreeFactor).
            FreeHigh::FreeFactor => self.free_count != 0,
            // 6.12 free_unref_page_commit.
            FreeHigh::Batch => self.free_count >= batch && streak(),
            // 7.2 free_frozen_page_commit.
            FreeHigh::Current => self.free_count >= batch + self.high_min / 2 && streak(),
        }
    }

    /// `PCPF_PREV_FREE_HIGH_ORDER` after a free of `order`: set by orders 1..=3, cleared by
    /// the others.
    #[inline(always)]
    fn note_high_order(&mut self, order: Order) {
        let high_order = (1..=3).contains(&order.get());
        self.flags.set(PcpFlags::PREV_FREE_HIGH_ORDER, high_order);
    }

    /// The hit path's test for [`PerCpuPages::free_high`], without the streak: `false` means
    /// this free of `order` is certainly not a `free_high` one; `true` that it may be (the
    /// full path decides). Needs the parameters `refresh_locked` copied in (`free_high_min`).
    /// The comparison is unsigned, so a negative `free_count` (which no rule makes) says "may".
    #[inline(always)]
    pub(crate) fn may_free_high(&self, order: Order) -> bool {
        (1..=3).contains(&order.get()) && self.free_count as u32 >= self.free_high_min as u32
    }

    /// [`PerCpuPages::note_free`] for a free that [`PerCpuPages::may_free_high`] cleared, with
    /// `free_count_max` for the policy's limit (the parameters `refresh_locked` copied in).
    #[inline(always)]
    pub(crate) fn note_free_fast(&mut self, order: Order) {
        self.note_high_order(order);
        if order.get() == 0 {
            // The capped increment without a branch (both are at least 0, so the unsigned
            // compare is the signed one): a compare and an add-with-carry. (Orders above 0
            // keep the branch: with the shift it costs more than it saves.)
            let below = (self.free_count as u32) < (self.free_count_max as u32);
            self.free_count += below as i32;
        } else if self.free_count < self.free_count_max {
            self.free_count += 1 << order.get();
        }
    }

    /// `nr_pcp_high`: the effective high mark for this free; adapts `self.high`.
    #[inline]
    pub(crate) fn nr_pcp_high(
        &mut self,
        free_high: bool,
        reclaim_active: bool,
        below_high: bool,
        policy: &PcpPolicy,
    ) -> i32 {
        let batch = self.batch;
        let (hmin, hmax) = (self.high_min, self.high_max);
        let high = self.clamp_high();
        if high == 0 {
            return 0;
        }
        if free_high {
            // 6.7+ nr_pcp_high lowers `high`; 6.1's returns 0 and leaves it.
            if matches!(policy.free_high, FreeHigh::Current | FreeHigh::Batch) {
                self.set_high((high - (batch << policy.scale)).max(hmin));
            }
            return 0;
        }
        if reclaim_active {
            let fc = self.free_count.max(batch);
            self.set_high((high - fc).max(hmin));
            return (batch << 2).min(self.high);
        }
        if hmin == hmax {
            return high;
        }
        if below_high {
            let fc = self.free_count.max(batch);
            self.set_high((high - fc).max(hmin));
            return self.count.max(hmin);
        } else if self.count >= high {
            let need = self.free_count + batch;
            if self.high < need {
                self.set_high(need.max(hmin).min(hmax));
            }
        }
        high
    }

    /// `nr_pcp_free`: pages to drain now. Under [`FreeScaling::FreeFactor`] (and
    /// [`FreeScaling::FreeFactorUncapped`]) it grows the pre-6.7 `free_factor` (kept in
    /// `free_count`).
    pub(crate) fn nr_pcp_free(&mut self, high: i32, free_high: bool, policy: &PcpPolicy) -> i32 {
        let batch = self.batch;
        if free_high {
            return match policy.free_high {
                // 6.1: "Free everything if batch freeing high-order pages."
                FreeHigh::Original | FreeHigh::FreeFactor => self.count,
                _ => self.count.min(batch << policy.scale),
            };
        }
        if high < batch {
            return 1;
        }
        let (min_nr_free, max_nr_free) = (batch, high - batch);
        match policy.free_scaling {
            // Keep at least `batch` pages; free more after a long run of frees.
            FreeScaling::FreeCount => self.free_count.max(min_nr_free).min(max_nr_free),
            FreeScaling::FreeFactor | FreeScaling::FreeFactorUncapped => {
                // 6.1: `batch <<= pcp->free_factor; if (batch < max_nr_free &&
                // pcp->free_factor < CONFIG_PCP_BATCH_SCALE_MAX) pcp->free_factor++;`
                // 5.15 and 6.6: `if (batch < max_nr_free) pcp->free_factor++;` (no cap; the
                // growth stops by itself once `batch << free_factor` reaches `high - batch`).
                let factor = self.free_count.clamp(0, 30) as u32;
                let scaled = i64::from(batch) << factor;
                let capped = policy.free_scaling == FreeScaling::FreeFactor
                    && self.free_count >= i32::from(policy.scale);
                if scaled < i64::from(max_nr_free) && !capped {
                    self.free_count += 1;
                }
                scaled
                    .min(i64::from(max_nr_free))
                    .max(i64::from(min_nr_free)) as i32
            }
        }
    }

    /// `decay_pcp_high`'s adjustment of `high`; returns (more work to do, pages to drain).
    pub(crate) fn decay_high(&mut self, scale: u8) -> (bool, i32) {
        let (high, todo) = self.decay_target(scale);
        self.set_high(high);
        (todo, self.count - self.high)
    }

    /// `free_pcppages_bulk`: move up to `count` pages from the list tails to the buddy,
    /// round-robin from `pindex`, each list to empty before the next (under
    /// [`PcpPolicy::drain_batch_free`], 5.15's round robin from list 0 instead). Caller holds
    /// this PCP's lock and passes the zone's locked state. Returns the pages moved.
    pub(crate) fn free_bulk(
        &mut self,
        z: &mut BuddyZone,
        t: &FrameTable,
        count: i32,
        pindex: usize,
        policy: &PcpPolicy,
        reason: DrainReason,
    ) -> i32 {
        let mut count = count.min(self.count);
        let mut moved = 0;
        // 5.15 starts at `pindex = 0` and steps before looking, so list 1 comes first.
        let mut p = if policy.drain_batch_free {
            0
        } else {
            (pindex + NR_PCP_LISTS - 1) % NR_PCP_LISTS
        };
        // 5.15's `batch_free`: lists stepped to since the last block taken, carried over
        // from one list to the next.
        let mut batch_free: i32 = 0;
        while count > 0 {
            // Guard against a count that disagrees with the lists (P1 violated): never spin.
            let mut tries = 0;
            loop {
                p = (p + 1) % NR_PCP_LISTS;
                batch_free += 1;
                if !self.lists[p].is_empty() || tries == NR_PCP_LISTS {
                    break;
                }
                tries += 1;
            }
            if self.lists[p].is_empty() {
                break;
            }
            // Blocks to take from this list: 5.18 on, the whole list; 5.15, `batch_free` (the
            // whole count when "this is the only non-empty list").
            let mut take = if !policy.drain_batch_free {
                i32::MAX
            } else if batch_free == NR_PCP_LISTS as i32 {
                count
            } else {
                batch_free
            };
            let order = policy.order_of(p);
            let nr = 1i32 << order.get();
            while let Some(idx) = self.lists[p].last() {
                self.lists[p].unlink(t, idx);
                let mt = match policy.drain_migratetype {
                    DrainMigratetype::AtDrain => z.block_mt(t, idx),
                    DrainMigratetype::AtFree => policy.cached_migratetype(z, t, p, idx),
                };
                z.events.log(|| ZoneEvent::PcpuDrain {
                    pfn: t.pfn_of(idx),
                    order,
                    migratetype: mt,
                });
                count -= nr;
                self.count -= nr;
                moved += nr;
                z.free_one_page(t, idx, order, mt, FreePlacement::Normal);
                // 5.15: `while (count > 0 && --batch_free && !list_empty(list))`.
                if count <= 0 {
                    break;
                }
                take -= 1;
                if take == 0 || self.lists[p].is_empty() {
                    break;
                }
            }
            batch_free = if policy.drain_batch_free { take } else { 0 };
        }
        let m = moved as u64;
        match reason {
            DrainReason::High => self.stats.drain_high_pages += m,
            DrainReason::FreeHigh => self.stats.drain_free_high_pages += m,
            DrainReason::Decay => self.stats.drain_decay_pages += m,
            DrainReason::Local => self.stats.drain_local_pages += m,
            DrainReason::Remote => self.stats.drain_remote_pages += m,
        }
        moved
    }
}

#[cfg(test)]
mod tests;
