//! The PCP paths on a [`Zone`]: allocation (`rmqueue_pcplist`, `rmqueue_bulk`), free
//! (`free_frozen_page_commit`), draining (`drain_pages_zone`, `__drain_all_pages`), decay
//! (`decay_pcp_high`), and [`CpuHandle`], a thread's claim on one CPU's lists.
//!
//! # Locking
//! Every path that touches a PCP holds its [`SpinLock`]; the zone lock is only ever taken
//! inside it (PCP, then zone). Allocation and free `try_lock` and fall back to the buddy, so
//! they never wait for a drainer; drains and decay wait for the PCP lock.
//!
//! Under [`PcpLocking::OwnerOnly`] a [`CpuHandle`] takes its CPU's lock once, when it is
//! created, and keeps it: its operations then take no lock at all, as the kernel's
//! `local_lock_irqsave` lists did, and nobody else can drain them. `drain_all` then asks the
//! owner ([`DrainMode::Owner`]): it raises the CPU's `drain_requested` flag and waits until the
//! owner's next operation or [`CpuHandle::poll`] drains and clears it.

use core::fmt;

use super::{DrainReason, PcpPolicy, PcpStats, PerCpuPages, PCPF_FREE_HIGH_BATCH};
use crate::buddy::{AllocFlags, FreePlacement};
use crate::config::{DrainMode, PcpConfig, PcpLocking};
use crate::error::{AllocError, FreeError, HandleError};
use crate::list::FrameList;
use crate::meta::FrameState;
use crate::request::AllocRequest;
use crate::shared::{ZONE_BELOW_HIGH, ZONE_RECLAIM_ACTIVE};
use crate::stats::HoldTimes;
use crate::sync::{
    current_cpu, now_ns, relax_hard, AtomicBool, AtomicU32, AtomicU64, Lock, Ordering, SpinGuard,
    SpinLock, StaticSlice,
};
use crate::types::{CpuId, MigrateType, Order, Pfn, MIGRATE_PCPTYPES, ORDER_SLOTS};
use crate::zone::Zone;

/// One CPU's lists of one zone and the few atomics other threads read without its lock;
/// aligned to two cache lines so that CPUs never share a line. Opaque: `no_std` users provide
/// static storage for these (`[const { PcpSlot::new() }; CPUS]`) to
/// [`Zone::with_storage`](crate::Zone::with_storage).
#[derive(Debug)]
#[repr(align(128))]
pub struct PcpSlot {
    lists: SpinLock<PerCpuPages>,
    /// `pcp->count` as of the last unlock; read racily by `drain_all` (as the kernel reads
    /// `pcp->count` without the lock).
    count_hint: AtomicU32,
    /// A [`CpuHandle`] is registered for this CPU.
    owned: AtomicBool,
    /// An owner-drain request is pending (the kernel's queued drain work item).
    drain_requested: AtomicBool,
    trylock_failures: AtomicU64,
}

impl PcpSlot {
    /// An empty slot.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        PcpSlot {
            lists: SpinLock::new(PerCpuPages::new()),
            count_hint: AtomicU32::new(0),
            owned: AtomicBool::new(false),
            drain_requested: AtomicBool::new(false),
            trylock_failures: AtomicU64::new(0),
        }
    }
    /// An empty slot.
    #[cfg(loom)]
    pub fn new() -> Self {
        PcpSlot {
            lists: SpinLock::new(PerCpuPages::new()),
            count_hint: AtomicU32::new(0),
            owned: AtomicBool::new(false),
            drain_requested: AtomicBool::new(false),
            trylock_failures: AtomicU64::new(0),
        }
    }
}

impl Default for PcpSlot {
    fn default() -> Self {
        PcpSlot::new()
    }
}

/// The pageset parameters every CPU shares (`zone->pageset_*`), applied to each PCP lazily at
/// its next locked operation (the kernel writes them with `WRITE_ONCE` into every CPU's PCP).
#[derive(Debug)]
struct PagesetParams {
    generation: AtomicU32,
    batch: AtomicU32,
    high_min: AtomicU32,
    high_max: AtomicU32,
    free_high_batch: AtomicBool,
}

/// All CPUs' lists of one zone.
pub(crate) struct PcpSet {
    slots: StaticSlice<PcpSlot>,
    pub(crate) policy: PcpPolicy,
    pub(crate) cfg: PcpConfig,
    params: PagesetParams,
    /// `pcpu_drain_mutex`.
    drain_mutex: Lock<()>,
    /// Zone-lock hold times are recorded while set.
    pub(crate) instrument: AtomicBool,
}

impl fmt::Debug for PcpSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PcpSet")
            .field("cpus", &self.cpus())
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl PcpSet {
    /// Per-CPU lists on the heap, one slot per configured CPU.
    #[cfg(feature = "std")]
    pub(crate) fn new(cfg: PcpConfig, max_order: u8) -> Self {
        let slots = (0..cfg.cpus.max(1))
            .map(|_| PcpSlot::new())
            .collect::<std::vec::Vec<_>>()
            .into_boxed_slice();
        Self::with_slots(cfg, max_order, StaticSlice::from_box(slots))
    }

    /// Per-CPU lists in caller storage; no slots turns the lists off.
    pub(crate) fn with_slots(
        mut cfg: PcpConfig,
        max_order: u8,
        slots: StaticSlice<PcpSlot>,
    ) -> Self {
        if slots.get().is_empty() {
            cfg.enabled = false;
        }
        PcpSet {
            slots,
            policy: PcpPolicy {
                thp_order: cfg.thp_order.filter(|&t| t <= max_order),
                scale: cfg.batch_scale_max,
                free_high: cfg.free_high,
            },
            cfg,
            params: PagesetParams {
                generation: AtomicU32::new(0),
                batch: AtomicU32::new(1),
                high_min: AtomicU32::new(0),
                high_max: AtomicU32::new(0),
                free_high_batch: AtomicBool::new(false),
            },
            drain_mutex: Lock::new(()),
            instrument: AtomicBool::new(false),
        }
    }

    /// Number of CPUs with lists.
    pub(crate) fn cpus(&self) -> usize {
        self.slots.get().len()
    }

    /// CPU `cpu`'s slot; ids beyond the CPU count wrap (callers usually reduce them once,
    /// so the division is off the fast path).
    #[inline]
    fn slot(&self, cpu: usize) -> &PcpSlot {
        let s = self.slots.get();
        let n = s.len();
        &s[if cpu < n { cpu } else { cpu % n }]
    }

    #[inline]
    pub(crate) fn enabled(&self) -> bool {
        self.cfg.enabled
    }

    /// `zone_set_pageset_high_and_batch` + `zone_pcp_update_cacheinfo`: publish new pageset
    /// parameters (`pcp->high` itself is left alone and re-clamped lazily).
    pub(crate) fn set_params(&self, batch: u32, high_min: u32, high_max: u32, page_size: u64) {
        let r = Ordering::Relaxed;
        self.params.batch.store(batch, r);
        self.params.high_min.store(high_min, r);
        self.params.high_max.store(high_max, r);
        let slice_pages = self.cfg.llc_slice_bytes / page_size.max(1);
        self.params
            .free_high_batch
            .store(slice_pages > 3 * batch as u64, r);
        self.params.generation.fetch_add(1, Ordering::Release);
    }

    /// Brings a locked PCP's copy of the parameters up to date (one load when unchanged).
    #[inline]
    fn refresh(&self, pcp: &mut PerCpuPages, gen: &mut u32) {
        let g = self.params.generation.load(Ordering::Acquire);
        if g == *gen {
            return;
        }
        *gen = g;
        let r = Ordering::Relaxed;
        pcp.batch = self.params.batch.load(r) as i32;
        pcp.high_min = self.params.high_min.load(r) as i32;
        pcp.high_max = self.params.high_max.load(r) as i32;
        if self.params.free_high_batch.load(r) {
            pcp.flags |= PCPF_FREE_HIGH_BATCH;
        } else {
            pcp.flags &= !PCPF_FREE_HIGH_BATCH;
        }
    }
}

/// How an operation reaches a CPU's lists.
pub(crate) enum PcpAccess<'a> {
    /// Try-lock CPU `n`'s lists for this operation (the kernel's `pcp_spin_trylock`).
    Cpu(usize),
    /// The caller holds CPU `n`'s lists already (an owner-only [`CpuHandle`]).
    Held(usize, &'a mut PerCpuPages),
}

/// A snapshot of one CPU's lists (`/proc/zoneinfo`'s pageset block, plus the tuning state).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct PcpInfo {
    /// The CPU.
    pub cpu: u32,
    /// Pages on the lists.
    pub count: i32,
    /// Current high mark.
    pub high: i32,
    /// Batch size.
    pub batch: i32,
    /// Lower bound of `high`.
    pub high_min: i32,
    /// Upper bound of `high`.
    pub high_max: i32,
    /// Refill scale exponent.
    pub alloc_factor: u8,
    /// Consecutive-free counter.
    pub free_count: i32,
    /// `PCPF_*` flags.
    pub flags: u8,
    /// Pages per list, by pindex (orders 0..=3 times Unmovable, Movable, Reclaimable; then the
    /// two THP lists).
    pub list_pages: [u32; super::NR_PCP_LISTS],
    /// Counters.
    pub stats: PcpStats,
}

impl Zone {
    /// The CPU an operation without an explicit CPU runs on.
    #[inline]
    pub(crate) fn this_cpu(&self) -> usize {
        current_cpu() as usize % self.pcp.cpus().max(1)
    }

    #[inline]
    fn block_mt_racy(&self, idx: u32) -> MigrateType {
        let pb = self.config().pageblock_order;
        self.table.block_type(idx & !((1u32 << pb) - 1))
    }

    /// Applies pending parameters and serves a pending owner-drain request; for every path
    /// that has just locked (or holds) a PCP.
    #[inline]
    fn enter(&self, slot: &PcpSlot, pcp: &mut PerCpuPages) {
        self.pcp.refresh_locked(pcp);
        if slot.drain_requested.load(Ordering::Relaxed) {
            self.drain_locked(pcp, DrainReason::Local);
            slot.drain_requested.store(false, Ordering::SeqCst);
        }
    }

    #[inline]
    fn leave(&self, slot: &PcpSlot, pcp: &PerCpuPages) {
        slot.count_hint
            .store(pcp.count.max(0) as u32, Ordering::Relaxed);
    }

    /// `rmqueue_pcplist`: `None` when the lock was busy or the refill found nothing.
    #[inline]
    pub(crate) fn rmqueue_pcplist(
        &self,
        order: u8,
        mt: MigrateType,
        flags: AllocFlags,
        access: &mut PcpAccess<'_>,
    ) -> Option<u32> {
        match access {
            PcpAccess::Held(cpu, pcp) => {
                let slot = self.pcp.slot(*cpu);
                self.enter(slot, pcp);
                let r = self.rmqueue_pcplist_locked(pcp, order, mt, flags);
                self.leave(slot, pcp);
                r
            }
            PcpAccess::Cpu(cpu) => {
                let cpu = *cpu;
                let slot = self.pcp.slot(cpu);
                let Some(mut pcp) = slot.lists.try_lock() else {
                    slot.trylock_failures.fetch_add(1, Ordering::Relaxed);
                    return None;
                };
                self.enter(slot, &mut pcp);
                let r = self.rmqueue_pcplist_locked(&mut pcp, order, mt, flags);
                self.leave(slot, &pcp);
                r
            }
        }
    }

    #[inline]
    fn rmqueue_pcplist_locked(
        &self,
        pcp: &mut PerCpuPages,
        order: u8,
        mt: MigrateType,
        flags: AllocFlags,
    ) -> Option<u32> {
        let policy = self.pcp.policy;
        let t = &self.table;
        pcp.free_count >>= 1; // an allocation halves the free streak
        let pi = policy.pindex(mt, order);
        if pcp.lists[pi].is_empty() {
            let below_high = self.shared.test_flag(ZONE_BELOW_HIGH);
            let n = pcp.nr_pcp_alloc(order, below_high, policy.scale);
            let got = self.rmqueue_bulk(order, n, &mut pcp.lists[pi], mt, flags);
            pcp.count += got << order;
            pcp.stats.alloc_misses += 1;
            pcp.stats.refill_pages += (got as u64) << order;
        } else {
            pcp.stats.alloc_hits += 1;
        }
        let idx = pcp.lists[pi].first()?;
        pcp.lists[pi].unlink(t, idx);
        pcp.count -= 1 << order;
        t.set_state(idx, FrameState::Allocated(Order::from_raw(order), mt));
        pcp.allocs[PcpPolicy::order_slot(order)] += 1;
        Some(idx)
    }

    /// `rmqueue_bulk`: up to `count` blocks under one zone-lock hold, appended at the tail
    /// (ascending pfn order after `expand`).
    fn rmqueue_bulk(
        &self,
        order: u8,
        count: i32,
        list: &mut FrameList,
        mt: MigrateType,
        flags: AllocFlags,
    ) -> i32 {
        let t = &self.table;
        let mut z = self.lock();
        let t0 = self.hold_start();
        let mut mode = crate::buddy::RmqueueMode::Normal;
        let mut got = 0;
        while got < count {
            let Some(idx) = z.rmqueue(t, order, mt, flags, &mut mode) else {
                break;
            };
            t.set_state(idx, FrameState::Pcp(Order::from_raw(order)));
            list.push_tail(t, idx);
            got += 1;
        }
        self.kswapd_check(&mut z, flags);
        if let Some(t0) = t0 {
            z.hold.refill.record(now_ns().saturating_sub(t0));
        }
        got
    }

    #[inline]
    fn hold_start(&self) -> Option<u64> {
        self.pcp.instrument.load(Ordering::Relaxed).then(now_ns)
    }

    /// Frees through the CPU's lists when the order allows, else straight to the buddy
    /// (`__free_frozen_pages`).
    #[inline]
    pub(crate) fn free_with(
        &self,
        pfn: Pfn,
        order: Order,
        access: &mut PcpAccess<'_>,
    ) -> Result<(), FreeError> {
        let idx = self.validate_free(pfn, order)?;
        let o = order.get();
        if !self.pcp.enabled() || !self.pcp.policy.allowed_order(o) {
            return self.free_to_buddy(idx, pfn, order);
        }
        self.claim_for_free(idx, pfn, order)?;
        let mut mt = self.block_mt_racy(idx);
        if mt.index() >= MIGRATE_PCPTYPES {
            if mt == MigrateType::Isolate {
                self.free_one_page(idx, o);
                return Ok(());
            }
            mt = MigrateType::Movable; // HighAtomic pages ride the Movable list
        }
        match access {
            PcpAccess::Held(cpu, pcp) => {
                let slot = self.pcp.slot(*cpu);
                self.enter(slot, pcp);
                if let Some(work) = self.commit_free(pcp, idx, o, mt) {
                    // The owner holds its lists throughout: no unlock between chunks.
                    let mut rem = work.to_free;
                    while rem > 0 && pcp.count > 0 {
                        rem = self.drain_chunk(pcp, rem, work.pindex, work.reason);
                    }
                    self.clear_below_high();
                }
                self.leave(slot, pcp);
            }
            PcpAccess::Cpu(cpu) => {
                let cpu = *cpu;
                let slot = self.pcp.slot(cpu);
                let Some(mut pcp) = slot.lists.try_lock() else {
                    slot.trylock_failures.fetch_add(1, Ordering::Relaxed);
                    self.free_one_page(idx, o);
                    return Ok(());
                };
                self.enter(slot, &mut pcp);
                let Some(work) = self.commit_free(&mut pcp, idx, o, mt) else {
                    self.leave(slot, &pcp);
                    return Ok(());
                };
                // Free in batch-sized chunks, unlocking between them to let remote drainers
                // in; give up if the lock is taken meanwhile.
                let mut guard = Some(pcp);
                let mut rem = work.to_free;
                while let Some(p) = guard.as_mut() {
                    if rem <= 0 || p.count <= 0 {
                        break;
                    }
                    rem = self.drain_chunk(p, rem, work.pindex, work.reason);
                    if rem <= 0 || p.count <= 0 {
                        break;
                    }
                    self.leave(slot, p);
                    drop(guard.take()); // unlock, then try to take it back
                    guard = slot.lists.try_lock();
                }
                if let Some(p) = guard {
                    self.leave(slot, &p);
                }
                self.clear_below_high();
            }
        }
        Ok(())
    }

    /// `free_frozen_page_commit` up to the drain decision: the block goes on its list, the
    /// tuning state moves, and the pages to drain (if any) are returned.
    #[inline]
    fn commit_free(
        &self,
        pcp: &mut PerCpuPages,
        idx: u32,
        order: u8,
        mt: MigrateType,
    ) -> Option<DrainWork> {
        let policy = self.pcp.policy;
        let t = &self.table;
        pcp.alloc_factor >>= 1; // a free halves the refill scale
        let pi = policy.pindex(mt, order);
        pcp.lists[pi].push_head(t, idx);
        t.set_state(idx, FrameState::Pcp(Order::from_raw(order)));
        pcp.count += 1 << order;
        pcp.stats.frees += 1;
        pcp.frees_by_order[PcpPolicy::order_slot(order)] += 1;
        let free_high = pcp.note_free(order, &policy);
        let reclaim = self.shared.test_flag(ZONE_RECLAIM_ACTIVE);
        let below = self.shared.test_flag(ZONE_BELOW_HIGH);
        let high = pcp.nr_pcp_high(free_high, reclaim, below, &policy);
        if pcp.count < high {
            return None;
        }
        Some(DrainWork {
            to_free: pcp.nr_pcp_free(high, free_high, &policy),
            pindex: pi,
            reason: if free_high {
                DrainReason::FreeHigh
            } else {
                DrainReason::High
            },
        })
    }

    /// One `batch`-sized `free_pcppages_bulk` under its own zone-lock hold; returns what is
    /// left of `to_free`.
    fn drain_chunk(
        &self,
        pcp: &mut PerCpuPages,
        to_free: i32,
        pindex: usize,
        reason: DrainReason,
    ) -> i32 {
        let chunk = to_free.min(pcp.batch.max(1));
        self.bulk_free(pcp, chunk, pindex, reason);
        to_free - chunk
    }

    /// `free_pcppages_bulk` with the zone lock taken here.
    fn bulk_free(&self, pcp: &mut PerCpuPages, count: i32, pindex: usize, reason: DrainReason) {
        let policy = self.pcp.policy;
        let mut z = self.lock();
        let t0 = self.hold_start();
        pcp.free_bulk(&mut z, &self.table, count, pindex, &policy, reason);
        if let Some(t0) = t0 {
            z.hold.bulk_free.record(now_ns().saturating_sub(t0));
        }
    }

    /// Clears `ZONE_BELOW_HIGH` once free memory is back above the high mark (the tail of
    /// `free_frozen_page_commit`).
    fn clear_below_high(&self) {
        let sh = &self.shared;
        if sh.test_flag(ZONE_BELOW_HIGH)
            && sh.watermark_ok(
                0,
                sh.mark(2),
                crate::types::ZoneType::Movable.index(),
                AllocFlags(0),
            )
        {
            sh.clear_flag(ZONE_BELOW_HIGH);
        }
    }

    /// `free_one_page`: straight to the buddy, for orders the PCP does not take and for frees
    /// whose trylock failed. The block is already claimed.
    pub(crate) fn free_one_page(&self, idx: u32, order: u8) {
        let mut z = self.lock();
        z.split_large_buddy(&self.table, idx, order, FreePlacement::Normal);
        z.stats.frees[order as usize] += 1;
    }

    /// `drain_pages_zone` on a PCP already locked (or held): empties it in chunks of up to
    /// `batch << SCALE` pages.
    fn drain_locked(&self, pcp: &mut PerCpuPages, reason: DrainReason) {
        while pcp.count > 0 {
            let n = pcp.count.min(pcp.batch.max(1) << self.pcp.policy.scale);
            let before = pcp.count;
            self.bulk_free(pcp, n, 0, reason);
            if pcp.count == before {
                break; // count disagrees with the lists; `check` reports P1
            }
        }
    }

    /// `drain_pages_zone(cpu)` from any thread: takes that CPU's lock for each chunk.
    fn drain_pages_zone(&self, cpu: usize, reason: DrainReason) {
        let slot = self.pcp.slot(cpu);
        loop {
            let mut pcp = slot.lists.lock();
            self.pcp.refresh_locked(&mut pcp);
            let n = pcp.count.min(pcp.batch.max(1) << self.pcp.policy.scale);
            if n > 0 {
                let before = pcp.count;
                self.bulk_free(&mut pcp, n, 0, reason);
                if pcp.count == before {
                    self.leave(self.pcp.slot(cpu), &pcp);
                    return;
                }
            }
            let left = pcp.count;
            self.leave(self.pcp.slot(cpu), &pcp);
            if left <= 0 {
                return;
            }
        }
    }

    /// Drains one CPU's lists back to the buddy. Under [`DrainMode::Remote`] the caller does it
    /// by taking that CPU's lock; under [`DrainMode::Owner`] a CPU with a registered
    /// [`CpuHandle`] is asked to, and this call waits until it has.
    pub fn drain_cpu(&self, cpu: CpuId) {
        if !self.pcp.enabled() {
            return;
        }
        let c = cpu.0 as usize % self.pcp.cpus();
        let reason = if c == self.this_cpu() {
            DrainReason::Local
        } else {
            DrainReason::Remote
        };
        self.drain_one(c, reason);
    }

    /// Drains the calling CPU's lists (`drain_local_pages`).
    pub fn drain_local(&self) {
        if self.pcp.enabled() {
            self.drain_one(self.this_cpu(), DrainReason::Local);
        }
    }

    /// Drains every CPU's lists (`drain_all_pages(zone)`): waits for a drain already in
    /// progress, skips CPUs whose lists look empty. Under [`DrainMode::Owner`] it waits for
    /// every busy owner: see the module documentation.
    pub fn drain_all(&self) {
        self.drain_all_with(None, true);
    }

    /// `__drain_all_pages`. `held` is the caller's own owner-held lists, drained in place.
    /// Without `wait_if_busy`, returns at once when another drain is running (the
    /// `zone == NULL` case of the kernel).
    pub(crate) fn drain_all_with(
        &self,
        mut held: Option<(usize, &mut PerCpuPages)>,
        wait_if_busy: bool,
    ) {
        if !self.pcp.enabled() {
            return;
        }
        let _m = if wait_if_busy {
            self.pcp.drain_mutex.lock()
        } else {
            match self.pcp.drain_mutex.try_lock() {
                Some(m) => m,
                None => return,
            }
        };
        let n = self.pcp.cpus();
        // Raise all owner requests first so busy owners drain in parallel, then wait.
        let mut waiting: u64 = 0; // bitmap of the first 64 requested CPUs, rest waited in turn
        for c in 0..n {
            let slot = self.pcp.slot(c);
            if slot.count_hint.load(Ordering::Relaxed) == 0 {
                continue;
            }
            if let Some((hc, pcp)) = held.as_mut() {
                if *hc == c {
                    self.drain_locked(pcp, DrainReason::Local);
                    self.leave(self.pcp.slot(c), pcp);
                    continue;
                }
            }
            match self.drain_route(c) {
                Route::Remote => self.drain_pages_zone(c, DrainReason::Remote),
                Route::Owner => {
                    slot.drain_requested.store(true, Ordering::SeqCst);
                    if c < 64 {
                        waiting |= 1 << c;
                    } else {
                        self.wait_owner(c);
                    }
                }
            }
        }
        for c in 0..n.min(64) {
            if waiting & (1 << c) != 0 {
                self.wait_owner(c);
            }
        }
    }

    fn drain_one(&self, c: usize, reason: DrainReason) {
        match self.drain_route(c) {
            Route::Remote => self.drain_pages_zone(c, reason),
            Route::Owner => {
                self.pcp
                    .slot(c)
                    .drain_requested
                    .store(true, Ordering::SeqCst);
                self.wait_owner(c);
            }
        }
    }

    fn drain_route(&self, c: usize) -> Route {
        let owned = self.pcp.slot(c).owned.load(Ordering::SeqCst);
        match (self.pcp.cfg.drain, owned) {
            (DrainMode::Owner, true) => Route::Owner,
            // Owner-held lists can only be drained by their owner, whatever the mode says.
            (_, true) if self.pcp.cfg.locking == PcpLocking::OwnerOnly => Route::Owner,
            _ => Route::Remote,
        }
    }

    /// Waits until CPU `c`'s owner has served its drain request, or has gone away (then the
    /// lists are free and drained here).
    fn wait_owner(&self, c: usize) {
        let slot = self.pcp.slot(c);
        while slot.drain_requested.load(Ordering::SeqCst) {
            if !slot.owned.load(Ordering::SeqCst) {
                self.drain_pages_zone(c, DrainReason::Remote);
                slot.drain_requested.store(false, Ordering::SeqCst);
                return;
            }
            relax_hard();
        }
    }

    /// `decay_pcp_high` for one CPU, plus the periodic drain it implies.
    fn decay_locked(&self, pcp: &mut PerCpuPages) -> bool {
        let (mut todo, mut to_drain) = pcp.decay_high(self.pcp.policy.scale);
        while to_drain > 0 {
            let chunk = to_drain.min(pcp.batch.max(1));
            let before = pcp.count;
            self.bulk_free(pcp, chunk, 0, DrainReason::Decay);
            todo = true;
            to_drain -= chunk;
            if pcp.count == before {
                break;
            }
        }
        todo
    }

    /// The periodic work the kernel's vmstat worker and kswapd do, for every CPU whose lists
    /// are not held by an owner: `decay_pcp_high` (high falls by an eighth per tick and the
    /// excess drains), and the end of a watermark boost (kswapd's `balance_pgdat` resets it;
    /// no reclaim is modelled). Call it about once per simulated second. Returns whether more
    /// decay is pending.
    pub fn tick(&self) -> bool {
        {
            let mut z = self.lock();
            if z.wmark.boost != 0 {
                z.wmark.boost = 0;
                z.marks_dirty = true;
            }
        }
        if !self.pcp.enabled() {
            return false;
        }
        let mut todo = false;
        for c in 0..self.pcp.cpus() {
            if self.pcp.cfg.locking == PcpLocking::OwnerOnly
                && self.pcp.slot(c).owned.load(Ordering::SeqCst)
            {
                continue; // its owner ticks through its CpuHandle
            }
            let mut pcp = self.pcp.slot(c).lists.lock();
            self.enter(self.pcp.slot(c), &mut pcp);
            todo |= self.decay_locked(&mut pcp);
            self.leave(self.pcp.slot(c), &pcp);
        }
        todo
    }

    /// Switches recording of zone-lock hold times (refill and bulk free) on or off. Off, the
    /// paths pay one relaxed load per lock hold.
    pub fn set_instrumentation(&self, on: bool) {
        self.pcp.instrument.store(on, Ordering::Relaxed);
    }

    /// Hold times recorded so far.
    pub fn hold_times(&self) -> HoldTimes {
        self.buddy.lock().hold.clone()
    }

    /// Sets or clears `ZONE_RECLAIM_ACTIVE`, which makes frees shrink the PCPs hard (the
    /// kernel sets it while kswapd reclaims the zone).
    pub fn set_reclaim_active(&self, on: bool) {
        if on {
            self.shared.set_flag(ZONE_RECLAIM_ACTIVE);
        } else {
            self.shared.clear_flag(ZONE_RECLAIM_ACTIVE);
        }
    }

    /// Number of CPUs with per-CPU lists.
    pub fn cpus(&self) -> u32 {
        self.pcp.cpus() as u32
    }

    /// One CPU's lists. Waits for its lock; an owner-held CPU is reported from its last
    /// unlock count only.
    pub fn pcp_info(&self, cpu: CpuId) -> PcpInfo {
        let c = cpu.0 as usize % self.pcp.cpus();
        let slot = self.pcp.slot(c);
        let mut info = PcpInfo {
            cpu: c as u32,
            ..PcpInfo::default()
        };
        let Some(mut pcp) = self.lock_for_inspection(c) else {
            info.count = slot.count_hint.load(Ordering::Relaxed) as i32;
            return info;
        };
        self.pcp.refresh_locked(&mut pcp);
        info.count = pcp.count;
        info.high = pcp.high;
        info.batch = pcp.batch;
        info.high_min = pcp.high_min;
        info.high_max = pcp.high_max;
        info.alloc_factor = pcp.alloc_factor;
        info.free_count = pcp.free_count;
        info.flags = pcp.flags;
        for (p, l) in pcp.lists.iter().enumerate() {
            let order = self.pcp.policy.order_of(p);
            info.list_pages[p] = (l.iter(&self.table).count() as u32) << order;
        }
        info.stats = pcp.stats;
        info.stats.trylock_failures = slot.trylock_failures.load(Ordering::Relaxed);
        info
    }

    /// Locks a CPU's lists for inspection, unless an owner holds them.
    fn lock_for_inspection(&self, c: usize) -> Option<SpinGuard<'_, PerCpuPages>> {
        let slot = self.pcp.slot(c);
        if self.pcp.cfg.locking == PcpLocking::OwnerOnly && slot.owned.load(Ordering::SeqCst) {
            return slot.lists.try_lock();
        }
        Some(slot.lists.lock())
    }

    /// Sum of every CPU's PCP counters.
    pub fn pcp_stats(&self) -> PcpStats {
        let mut s = PcpStats::default();
        for c in 0..self.pcp.cpus() {
            s.add(&self.pcp_info(CpuId(c as u32)).stats);
        }
        s
    }

    /// Per-order allocation and free counts served by the PCPs (added into [`Zone::stats`]).
    pub(crate) fn pcp_order_counts(&self) -> ([u64; ORDER_SLOTS], [u64; ORDER_SLOTS]) {
        let (mut a, mut f) = ([0; ORDER_SLOTS], [0; ORDER_SLOTS]);
        for c in 0..self.pcp.cpus() {
            if let Some(pcp) = self.lock_for_inspection(c) {
                for s in 0..5 {
                    let o = if s < 4 {
                        s
                    } else {
                        match self.pcp.policy.thp_order {
                            Some(t) => t as usize,
                            None => continue,
                        }
                    };
                    a[o] += pcp.allocs[s];
                    f[o] += pcp.frees_by_order[s];
                }
            }
        }
        (a, f)
    }

    /// Writes the `pagesets` block of `/proc/zoneinfo` for this zone, byte for byte in the
    /// kernel's format (`zoneinfo_show_print`).
    pub fn write_pagesets<W: fmt::Write>(&self, w: &mut W) -> fmt::Result {
        let managed = self.managed_pages();
        let threshold = super::stat_threshold(managed, self.cpus(), self.config().page_size);
        w.write_str("\n  pagesets")?;
        for c in 0..self.pcp.cpus() {
            let i = self.pcp_info(CpuId(c as u32));
            write!(
                w,
                "\n    cpu: {}\n              count:    {}\n              high:     {}\n              batch:    {}\n              high_min: {}\n              high_max: {}",
                c, i.count, i.high, i.batch, i.high_min, i.high_max
            )?;
            write!(w, "\n  vm stats threshold: {threshold}")?;
        }
        Ok(())
    }

    /// Checks P1..P3 for every CPU and returns the pages on all PCP lists. Locks every PCP
    /// (PCP before zone, as everywhere).
    pub(crate) fn check_pcps(&self) -> Result<u64, crate::CheckError> {
        use crate::buddy::check_fail as fail;
        let t = &self.table;
        let mut total = 0u64;
        for c in 0..self.pcp.cpus() {
            let Some(pcp) = self.lock_for_inspection(c) else {
                return Err(fail(
                    "P0",
                    None,
                    "lists held by their owner: check at quiescence",
                ));
            };
            if pcp.high_min > pcp.high_max {
                return Err(fail("P3", None, "high_min exceeds high_max"));
            }
            let mut pages = 0i64;
            for (p, list) in pcp.lists.iter().enumerate() {
                let order = self.pcp.policy.order_of(p);
                let mut prev = crate::meta::NIL;
                let mut n = 0u64;
                for idx in list.iter(t) {
                    let pfn = t.pfn_of(idx);
                    n += 1;
                    if n > t.len() as u64 {
                        return Err(fail("P2", Some(pfn), "PCP list has a cycle"));
                    }
                    if t.prev(idx) != prev {
                        return Err(fail("P2", Some(pfn), "PCP list links disagree"));
                    }
                    prev = idx;
                    if t.state(idx) != FrameState::Pcp(Order::from_raw(order)) {
                        return Err(fail(
                            "P2",
                            Some(pfn),
                            "PCP list member is not a Pcp head of the list's order",
                        ));
                    }
                    if pfn & ((1u64 << order) - 1) != 0 {
                        return Err(fail("P2", Some(pfn), "PCP block not aligned to its order"));
                    }
                    pages += 1i64 << order;
                }
            }
            if pages != pcp.count as i64 {
                return Err(fail(
                    "P1",
                    None,
                    "pcp count differs from the pages on its lists",
                ));
            }
            total += pages as u64;
        }
        Ok(total)
    }

    /// Registers the calling thread as the owner of `cpu`'s lists.
    pub fn cpu_handle(&self, cpu: CpuId) -> Result<CpuHandle<'_>, HandleError> {
        let n = self.pcp.cpus() as u32;
        if cpu.0 >= n {
            return Err(HandleError::CpuOutOfRange { cpu, cpus: n });
        }
        let c = cpu.0 as usize;
        let slot = self.pcp.slot(c);
        if slot
            .owned
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Err(HandleError::AlreadyRegistered { cpu });
        }
        let held = (self.pcp.cfg.locking == PcpLocking::OwnerOnly && self.pcp.enabled())
            .then(|| slot.lists.lock());
        Ok(CpuHandle {
            zone: self,
            cpu: c,
            slot,
            held,
        })
    }
}

impl PcpSet {
    fn refresh_locked(&self, pcp: &mut PerCpuPages) {
        let mut gen = pcp.params_gen;
        self.refresh(pcp, &mut gen);
        pcp.params_gen = gen;
    }
}

#[derive(Clone, Copy)]
enum Route {
    Remote,
    Owner,
}

struct DrainWork {
    to_free: i32,
    pindex: usize,
    reason: DrainReason,
}

/// A thread's claim on one CPU's lists of a zone: the user-space analogue of running pinned
/// on that CPU. At most one handle per CPU exists at a time.
///
/// Under [`PcpLocking::Spinlock`] a handle only fixes the CPU id (each operation still
/// try-locks, as the kernel does). Under [`PcpLocking::OwnerOnly`] it holds the CPU's lists for
/// its whole life, so its operations take no lock, and other threads cannot drain them:
/// `drain_all` waits until this handle's next operation, [`CpuHandle::poll`] or drop.
pub struct CpuHandle<'z> {
    zone: &'z Zone,
    cpu: usize,
    slot: &'z PcpSlot,
    held: Option<SpinGuard<'z, PerCpuPages>>,
}

impl fmt::Debug for CpuHandle<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuHandle")
            .field("cpu", &self.cpu)
            .field("owner_only", &self.held.is_some())
            .finish()
    }
}

impl<'z> CpuHandle<'z> {
    #[inline]
    fn access(&mut self) -> PcpAccess<'_> {
        match self.held.as_mut() {
            Some(g) => PcpAccess::Held(self.cpu, g),
            None => PcpAccess::Cpu(self.cpu),
        }
    }

    /// The CPU this handle runs on.
    pub fn cpu(&self) -> CpuId {
        CpuId(self.cpu as u32)
    }

    /// The zone.
    pub fn zone(&self) -> &'z Zone {
        self.zone
    }

    /// Allocates on this CPU with the default request for `mt`.
    #[inline]
    pub fn alloc(&mut self, order: Order, mt: MigrateType) -> Result<Pfn, AllocError> {
        self.alloc_with(order, AllocRequest::new(mt))
    }

    /// Allocates on this CPU (the request's own `cpu` is ignored).
    #[inline]
    pub fn alloc_with(&mut self, order: Order, req: AllocRequest) -> Result<Pfn, AllocError> {
        let zone = self.zone;
        let mut access = self.access();
        crate::node::alloc_in_zone(zone, order, req, &mut access)
    }

    /// Frees on this CPU.
    #[inline]
    pub fn free(&mut self, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        let zone = self.zone;
        let mut access = self.access();
        zone.free_with(pfn, order, &mut access)
    }

    /// Serves a pending owner-drain request, if any (the kernel's drain work item running on
    /// this CPU). Operations do this too; a thread that does neither keeps `drain_all` waiting.
    pub fn poll(&mut self) {
        let zone = self.zone;
        let slot = self.slot;
        if !slot.drain_requested.load(Ordering::Relaxed) {
            return;
        }
        match self.held.as_mut() {
            Some(p) => {
                zone.enter(self.slot, p);
                zone.leave(self.slot, p);
            }
            None => {
                let mut p = slot.lists.lock();
                zone.enter(self.slot, &mut p);
                zone.leave(self.slot, &p);
            }
        }
    }

    /// Drains this CPU's lists.
    pub fn drain_local(&mut self) {
        let zone = self.zone;
        let cpu = self.cpu;
        match self.held.as_mut() {
            Some(p) => {
                zone.enter(self.slot, p);
                zone.drain_locked(p, DrainReason::Local);
                zone.leave(self.slot, p);
            }
            None => zone.drain_pages_zone(cpu, DrainReason::Local),
        }
    }

    /// Drains every CPU's lists, this one in place (needed under owner-only locking, where
    /// `Zone::drain_all` would wait for this very handle).
    pub fn drain_all(&mut self) {
        let zone = self.zone;
        let cpu = self.cpu;
        let held = self.held.as_mut().map(|g| (cpu, &mut **g));
        zone.drain_all_with(held, true);
    }

    /// This CPU's share of the periodic work (`decay_pcp_high`); see [`Zone::tick`].
    pub fn tick(&mut self) -> bool {
        let zone = self.zone;
        match self.held.as_mut() {
            Some(p) => {
                zone.enter(self.slot, p);
                let todo = zone.decay_locked(p);
                zone.leave(self.slot, p);
                todo
            }
            None => {
                let mut p = self.slot.lists.lock();
                zone.enter(self.slot, &mut p);
                let todo = zone.decay_locked(&mut p);
                zone.leave(self.slot, &p);
                todo
            }
        }
    }
}

impl Drop for CpuHandle<'_> {
    fn drop(&mut self) {
        let slot = self.slot;
        if let Some(p) = self.held.as_mut() {
            self.zone.leave(self.slot, p);
        }
        self.held = None;
        slot.owned.store(false, Ordering::SeqCst);
        // A drainer that saw us registered may be waiting: serve it now that we are gone.
        if slot.drain_requested.load(Ordering::SeqCst) {
            self.zone.drain_pages_zone(self.cpu, DrainReason::Local);
            slot.drain_requested.store(false, Ordering::SeqCst);
        }
    }
}
