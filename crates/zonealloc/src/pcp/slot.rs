//! Per-CPU slots and the shared pageset parameters: where each CPU's lists live, the atomics
//! other threads may read without the lists' lock, and how an operation names the CPU it
//! runs on ([`PcpAccess`]).
//!
//! # Locking
//! Every path that touches a PCP holds its [`SpinLock`]; the zone lock is only ever taken
//! inside it (PCP, then zone). Allocation and free `try_lock` and fall back to the buddy, so
//! they never wait for a drainer; drains and decay wait for the PCP lock, except on lists an
//! owner holds (see `zone/drain.rs`).

use core::fmt;

use super::policy::PcpPolicy;
use super::{PcpFlags, PcpStats, PerCpuPages};
use crate::config::{FreeHigh, PcpConfig};
use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Ordering, SpinGuard, SpinLock, StaticSlice};
use crate::types::Order;

/// One CPU's lists of one zone and the few atomics other threads read without its lock;
/// aligned to 512 bytes, so that CPUs never share a cache line and a CPU's slot is one shift
/// away from the first (`Zone::alloc`/`free` find it on every call; it fills three 128-byte
/// lines, and a multiply by 384 costs one instruction more). Opaque: `no_std` users provide
/// storage for these to [`Zone::from_uninit`](crate::Zone::from_uninit) (uninitialised, a
/// `StaticStorage<PcpSlot, CPUS>`) or [`Zone::with_storage`](crate::Zone::with_storage)
/// (`[const { PcpSlot::new() }; CPUS]`).
#[derive(Debug)]
#[repr(align(512))]
pub struct PcpSlot {
    pub(crate) lists: SpinLock<PerCpuPages>,
    /// `pcp->count` as of the last unlock; read racily by `drain_all` (as the kernel reads
    /// `pcp->count` without the lock).
    pub(crate) count_hint: AtomicU32,
    /// A [`CpuHandle`](crate::CpuHandle) is registered for this CPU.
    pub(crate) owned: AtomicBool,
    /// The registering thread's token (`sync::thread_token`; 0 when unknown), so a drain
    /// started by that thread without its handle still never waits for it.
    pub(crate) owner_token: AtomicU64,
    /// The owner is idle ([`CpuHandle::idle`](crate::CpuHandle::idle)): its lists are
    /// unlocked and drainers drain them themselves.
    pub(crate) idle: AtomicBool,
    /// Bumped by everything the PCP hit paths must not skip: new pageset parameters
    /// (`PcpSet::set_params`) and owner-drain requests (`request_drain`). A hit path goes on
    /// only while it equals the value `Zone::pcp_enter` last saw (`PerCpuPages::attention_seen`),
    /// so it tests one word instead of the parameter generation, both drain tickets and the
    /// zone flags (a `Zone::set_zone_flag` bumps every slot; `Zone::pcp_enter` records
    /// [`ATTENTION_OFF`] while a flag is set). Bumped by [`ATTENTION_STEP`], so it stays even
    /// and never equals [`ATTENTION_OFF`]. (Equal after a wrap only if exactly 2^31 bumps fall
    /// between two operations.)
    pub(crate) attention: AtomicU32,
    /// Owner-drain tickets handed out (the kernel's queued drain work items, counted).
    pub(crate) drain_req: AtomicU64,
    /// Highest ticket served: every request up to it has seen a drain that started after it.
    pub(crate) drain_done: AtomicU64,
    pub(crate) trylock_failures: AtomicU64,
    /// A zone uses this slot (caller storage passed to `Zone::with_storage`; see
    /// [`PcpSet::claim`]).
    claimed: AtomicBool,
}

/// What [`PcpSlot::attention`] grows by: 2, so that it stays even.
const ATTENTION_STEP: u32 = 2;

/// An odd value, which [`PcpSlot::attention`] never takes: `Zone::pcp_enter` records it as seen
/// while a zone flag keeps the hit paths off, so that [`PcpSlot::quiet`] fails until an
/// `enter` finds the flags clear.
pub(crate) const ATTENTION_OFF: u32 = 1;

/// The initial value of a slot (one expression for the `const` and the loom constructor).
macro_rules! empty_slot {
    () => {
        PcpSlot {
            lists: SpinLock::new(PerCpuPages::new()),
            count_hint: AtomicU32::new(0),
            owned: AtomicBool::new(false),
            owner_token: AtomicU64::new(0),
            idle: AtomicBool::new(false),
            attention: AtomicU32::new(0),
            drain_req: AtomicU64::new(0),
            drain_done: AtomicU64::new(0),
            trylock_failures: AtomicU64::new(0),
            claimed: AtomicBool::new(false),
        }
    };
}

impl PcpSlot {
    /// An empty slot.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        empty_slot!()
    }

    /// An empty slot (loom's atomics have no `const` constructors).
    #[cfg(loom)]
    pub fn new() -> Self {
        empty_slot!()
    }
}

/// The owner-drain tickets (see `zone/drain.rs`). A flag cannot tell a request raised during a
/// drain from one the drain satisfied; tickets can: a server reads the ticket count before it
/// drains and marks exactly those served after.
impl PcpSlot {
    /// `pcp_spin_trylock` for the allocation and free paths: the lists, or `None` when they
    /// are busy, counted as a trylock failure (the caller then goes to the buddy).
    #[inline(always)]
    pub(crate) fn try_lists(&self) -> Option<SpinGuard<'_, PerCpuPages>> {
        let g = self.lists.try_lock();
        if g.is_none() {
            self.trylock_failures.fetch_add(1, Ordering::Relaxed);
        }
        g
    }

    /// Whether a drain request is waiting (a cheap check for the hot paths).
    #[inline(always)]
    pub(crate) fn drain_pending(&self) -> bool {
        self.drain_req.load(Ordering::Relaxed) != self.drain_done.load(Ordering::Relaxed)
    }

    /// Raises a request and returns its ticket.
    pub(crate) fn request_drain(&self) -> u64 {
        let t = self.drain_req.fetch_add(1, Ordering::SeqCst) + 1;
        self.call_attention();
        t
    }

    /// Sends the next hit path on these lists the full way, through `Zone::pcp_enter`.
    #[inline]
    pub(crate) fn call_attention(&self) {
        self.attention.fetch_add(ATTENTION_STEP, Ordering::SeqCst);
    }

    /// Whether nothing has asked for attention since the lists' last `Zone::pcp_enter`: no new
    /// parameters, no new drain request. The hit paths' one test; anything else goes the full
    /// way, whose `Zone::pcp_enter` deals with it.
    #[inline(always)]
    pub(crate) fn quiet(&self, pcp: &PerCpuPages) -> bool {
        self.attention.load(Ordering::Relaxed) == pcp.attention_seen
    }

    /// Read before draining: the tickets the coming drain will serve.
    pub(crate) fn tickets_to_serve(&self) -> u64 {
        self.drain_req.load(Ordering::SeqCst)
    }

    /// After draining: every ticket up to `upto` is served.
    pub(crate) fn mark_served(&self, upto: u64) {
        self.drain_done.fetch_max(upto, Ordering::SeqCst);
    }

    /// Whether ticket `t` has been served.
    pub(crate) fn served(&self, t: u64) -> bool {
        self.drain_done.load(Ordering::SeqCst) >= t
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
    pub(crate) drain_mutex: SpinLock<()>,
    /// Zone-lock hold times are recorded while set.
    pub(crate) instrument: AtomicBool,
}

/// Gives claimed `slots` back (see [`PcpSet::claim`]).
fn release(slots: &[PcpSlot]) {
    for slot in slots {
        slot.claimed.store(false, Ordering::Release);
    }
}

impl Drop for PcpSet {
    fn drop(&mut self) {
        if self.slots.is_borrowed() {
            release(self.slots.get());
        }
    }
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
    pub(crate) fn new(cfg: PcpConfig, max_order: Order) -> Self {
        let slots = (0..cfg.cpus.max(1))
            .map(|_| PcpSlot::new())
            .collect::<std::vec::Vec<_>>()
            .into_boxed_slice();
        Self::with_slots(cfg, max_order, StaticSlice::from_box(slots))
    }

    /// Claims caller-provided `slots` for one zone and resets them (a zone dropped earlier
    /// may have left frames of its own on them). `Err(i)`, nothing claimed, if slot `i`
    /// belongs to a live zone (or its lists are held by a handle that was leaked). Released
    /// when the [`PcpSet`] over them is dropped.
    pub(crate) fn claim(slots: &'static [PcpSlot]) -> Result<(), usize> {
        for (i, slot) in slots.iter().enumerate() {
            // Acquire: the previous zone's last writes (its drop released the slot).
            let fresh = slot
                .claimed
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok();
            let Some(mut lists) = fresh.then(|| slot.lists.try_lock()).flatten() else {
                if fresh {
                    slot.claimed.store(false, Ordering::Release);
                }
                release(&slots[..i]);
                return Err(i);
            };
            *lists = PerCpuPages::new();
            slot.count_hint.store(0, Ordering::Relaxed);
            slot.owned.store(false, Ordering::Relaxed);
            slot.owner_token.store(0, Ordering::Relaxed);
            slot.idle.store(false, Ordering::Relaxed);
            slot.drain_req.store(0, Ordering::Relaxed);
            slot.drain_done.store(0, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Per-CPU lists in caller storage; no slots turns the lists off.
    pub(crate) fn with_slots(
        mut cfg: PcpConfig,
        max_order: Order,
        slots: StaticSlice<PcpSlot>,
    ) -> Self {
        let max_order = max_order.get();
        if slots.get().is_empty() {
            cfg.enabled = false;
        }
        let thp_order = cfg.thp_order.filter(|&t| t <= max_order);
        PcpSet {
            slots,
            policy: PcpPolicy {
                thp_order,
                thp_list_order: thp_order.unwrap_or(u8::MAX),
                scale: cfg.batch_scale_max,
                free_high: cfg.free_high,
                free_scaling: cfg.free_scaling,
                alloc_scaling: cfg.alloc_scaling,
                drain_in_batches: cfg.drain_in_batches,
                decay: cfg.decay,
                highatomic_no_refill: cfg.highatomic_no_refill,
                drain_migratetype: cfg.drain_migratetype,
                drain_batch_free: cfg.drain_batch_free,
            },
            cfg,
            params: PagesetParams {
                generation: AtomicU32::new(0),
                batch: AtomicU32::new(1),
                high_min: AtomicU32::new(0),
                high_max: AtomicU32::new(0),
                free_high_batch: AtomicBool::new(false),
            },
            drain_mutex: SpinLock::new(()),
            instrument: AtomicBool::new(false),
        }
    }

    /// A caller's CPU id as a slot index (ids past the CPU count wrap; the division is only
    /// paid by those).
    #[inline]
    pub(crate) fn cpu_index(&self, cpu: crate::types::CpuId) -> usize {
        let (c, n) = (cpu.0 as usize, self.cpus());
        if c < n {
            c
        } else {
            c % n.max(1)
        }
    }

    /// Number of CPUs with lists.
    pub(crate) fn cpus(&self) -> usize {
        self.slots.get().len()
    }

    /// CPU `cpu`'s slot; ids beyond the CPU count wrap (callers usually reduce them once,
    /// so the division is off the fast path).
    ///
    /// Precondition: the set has a slot (`cpus() > 0`). A set without any (caller storage
    /// over an empty slice, [`PcpSet::with_slots`]) has its lists turned off, and every
    /// caller is behind that: the PCP paths of the allocation (`rmqueue_pcplist`, reached only
    /// where `Zone::try_alloc` found the lists on) and of `Zone::free_with` test
    /// [`PcpSet::enabled`] first; the drains and `Zone::caller` test it or walk
    /// `0..cpus()`; `Zone::cpu_handle` refuses an id at or past `cpus()`; the inspection
    /// paths (`pcp_info`, `set_pcp_tuning`) go through [`PcpSet::slot_at`] first or walk
    /// `0..cpus()`. Where the slot may be missing, [`PcpSet::slot_of`] is the total form.
    /// Broken, the precondition panics (a remainder by zero, or an index out of bounds),
    /// never reads out of bounds; debug builds name it. The release code is the unchecked
    /// form's, instruction for instruction (the hit paths' budget, `zonealloc-icount`).
    #[inline]
    pub(crate) fn slot(&self, cpu: usize) -> &PcpSlot {
        let s = self.slots.get();
        let n = s.len();
        debug_assert!(n > 0, "PcpSet::slot({cpu}) on a set without slots");
        &s[if cpu < n { cpu } else { cpu % n }]
    }

    /// The slot of CPU id `cpu` (ids past the CPU count wrap, as in [`PcpSet::cpu_index`]):
    /// one bounds test for an id in range, the division out of line. `None` only when there
    /// are no slots at all (caller storage without any).
    #[inline(always)]
    pub(crate) fn slot_of(&self, cpu: usize) -> Option<&PcpSlot> {
        match self.slots.get().get(cpu) {
            Some(s) => Some(s),
            None => self.slot_wrapped(cpu),
        }
    }

    #[cold]
    #[inline(never)]
    fn slot_wrapped(&self, cpu: usize) -> Option<&PcpSlot> {
        // Ids come from a `u32`.
        self.slot_at(self.cpu_index(crate::types::CpuId(cpu as u32)))
    }

    /// Slot `cpu` of a CPU id already reduced by [`PcpSet::cpu_index`]; `None` only when
    /// there are no slots at all (caller storage without any).
    #[inline(always)]
    pub(crate) fn slot_at(&self, cpu: usize) -> Option<&PcpSlot> {
        self.slots.get().get(cpu)
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
        self.call_attention();
    }

    /// Sends every CPU's next hit path the full way (see [`PcpSlot::attention`]).
    pub(crate) fn call_attention(&self) {
        for slot in self.slots.get() {
            slot.call_attention();
        }
    }

    /// Brings a locked PCP's copy of the parameters up to date (one load when unchanged).
    #[inline]
    pub(crate) fn refresh(&self, pcp: &mut PerCpuPages, gen: &mut u32) {
        let g = self.params.generation.load(Ordering::Acquire);
        if g == *gen {
            return;
        }
        *gen = g;
        let r = Ordering::Relaxed;
        pcp.batch = self.params.batch.load(r) as i32;
        pcp.high_min = self.params.high_min.load(r) as i32;
        pcp.high_max = self.params.high_max.load(r) as i32;
        pcp.flags.set(
            PcpFlags::FREE_HIGH_BATCH,
            self.params.free_high_batch.load(r),
        );
        // 6.1 pageset_update writes `pcp->high` itself; 6.7+ clamps it lazily.
        if self.cfg.high_mode == crate::config::HighMode::Fixed {
            pcp.high = pcp.high_min;
        }
        pcp.sync_fast_high();
    }
}

/// How an operation reaches a CPU's lists.
pub(crate) enum PcpAccess<'a> {
    /// A thread with no claim on any CPU: try-lock CPU `n`'s lists for each operation (the
    /// kernel's `pcp_spin_trylock`).
    Cpu(usize),
    /// The owner of CPU `n` (a [`CpuHandle`](crate::CpuHandle) over spin-locked lists):
    /// operations try-lock like `Cpu`, but drains know who is asking, so an owner never waits
    /// for itself.
    Owner(usize),
    /// The owner of CPU `n` holding its lists (a `CpuHandle` under owner-only locking).
    Held(usize, &'a mut PerCpuPages),
}

/// One CPU's tuning state, as [`Zone::set_pcp_tuning`](crate::Zone::set_pcp_tuning) sets it:
/// the part of `struct per_cpu_pages` that `/proc/zoneinfo` prints only in part (`high`) or
/// not at all, so that a zone can start where a kernel's was. `None` leaves a field as it is.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct PcpTuning {
    /// The current (auto-tuned) `high`; clamped into `high_min..=high_max` on use.
    pub high: Option<i32>,
    /// `alloc_factor` (6.7+), `0..=CONFIG_PCP_BATCH_SCALE_MAX`.
    pub alloc_factor: Option<u8>,
    /// `free_count` (6.7+), or the pre-6.7 `free_factor` under
    /// [`FreeScaling::FreeFactor`](crate::FreeScaling::FreeFactor) (and its uncapped form).
    pub free_count: Option<i32>,
    /// `PCPF_PREV_FREE_HIGH_ORDER`: the previous free on this CPU was of orders 1..=3.
    pub prev_free_high_order: Option<bool>,
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

impl PcpSet {
    pub(crate) fn refresh_locked(&self, pcp: &mut PerCpuPages) {
        let mut gen = pcp.params_gen;
        self.refresh(pcp, &mut gen);
        pcp.params_gen = gen;
        // Where an order-0 free stops growing `free_count`: `batch << scale`, or 0 (never)
        // when it holds 6.1's `free_factor`, which frees do not grow.
        pcp.free_count_max = match self.policy.free_scaling {
            crate::config::FreeScaling::FreeCount => pcp.batch << self.policy.scale,
            crate::config::FreeScaling::FreeFactor
            | crate::config::FreeScaling::FreeFactorUncapped => 0,
        };
        // The count half of `PerCpuPages::free_high`, one threshold per policy.
        pcp.free_high_min = match self.policy.free_high {
            FreeHigh::Off => i32::MAX,
            FreeHigh::Original | FreeHigh::FreeFactor => 1, // `> 0`, `!= 0`
            FreeHigh::Batch => pcp.batch,
            FreeHigh::Current => pcp.batch + pcp.high_min / 2,
        };
    }
}
