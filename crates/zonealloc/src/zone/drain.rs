//! Draining: `drain_pages_zone`, `__drain_all_pages`, and the owner-drain protocol that
//! stands in for the kernel's per-CPU drain work items (the decay is `decay.rs`).
//!
//! # The owner-drain protocol
//! Under [`DrainMode::Owner`] (or whenever lists are owner-held, [`PcpLocking::OwnerOnly`]) a
//! drainer cannot touch a CPU that has an owner. It takes a ticket from that CPU (the queued
//! work item) and waits until the ticket is served. The owner serves at its next operation,
//! [`CpuHandle::poll`](crate::CpuHandle::poll), or drop: it reads how many tickets exist,
//! drains, then marks those served, so a request raised while a drain is already running
//! waits for the next one (the kernel re-queues a work item queued while it runs). Three
//! rules keep it from deadlocking:
//! 1. A drainer never waits for itself: it knows who it is ([`PcpAccess`], and under `std` a
//!    per-thread token stored in the slot it owns), and drains its own CPU in place.
//! 2. While an owner waits for anything (the drain mutex, another owner), it keeps serving its
//!    own pending request, so two owners draining each other both make progress.
//! 3. Owner-held lists are never locked with a blocking lock: [`Zone::lock_unless_owned`]
//!    try-locks and gives up as soon as the CPU has an owner, which then gets asked instead.
//!    A CPU whose owner went away, or is idle ([`CpuHandle::idle`](crate::CpuHandle::idle)),
//!    is drained by the waiter itself.
//!
//! What the model cannot do is run work on the CPU of an owner that is blocked outside the
//! allocator (the kernel would run the drain work item while the task sleeps): such an owner
//! must say so with `CpuHandle::idle`, or poll. An owner that is busy and does neither keeps
//! drainers waiting, which is exactly the behaviour seed 004 removed.
//!
//! # An owner that never comes back
//! The rule: **a [`CpuHandle`](crate::CpuHandle) must be dropped, polled or idle**. A handle
//! that is leaked (`mem::forget`, a reference cycle) or whose thread blocks for good keeps its
//! CPU owned forever, and nothing can tell it from a busy one. [`Zone::drain_all`] then waits
//! forever, as the kernel's `flush_work` would for a CPU that never runs. The bounded forms,
//! [`Zone::drain_all_until`] (the caller's clock) and, under `std`,
//! [`Zone::drain_all_timeout`], give up and name the CPU that did not answer
//! ([`DrainError::NoAnswer`]). The allocation slow path waits at most
//! [`SLOW_PATH_DRAIN_WAIT_NS`] per drain under `std`, then goes on without that CPU's pages (as
//! reclaim's `drain_all_pages(NULL)` goes on when a drain is already running), and does not
//! wait again for an owner that has not served the request it gave up on; without `std` it
//! has no clock and waits as `drain_all` does.
//!
//! `owned` and the tickets are accessed with `SeqCst`: the drainer takes its ticket then loads
//! `owned`; the departing owner stores `owned` then loads the tickets. One of them always sees
//! the other (the store-load pattern needs sequential consistency), so a request is never left
//! behind by an owner that leaves.

use super::pcp::PcpGuard;
use super::Zone;
use crate::config::{DrainMode, PcpLocking};
use crate::error::DrainError;
use crate::pcp::{DrainReason, PcpAccess, PcpSlot, PerCpuPages};
use crate::platform::Platform;
use crate::sync::{relax_hard, thread_token, Ordering, SpinGuard};
use crate::types::CpuId;

/// How long the allocation slow path waits for owners to drain their lists under `std` (1 s),
/// before it goes on without them; an owner that let it down is not waited for again until it
/// has served that request (see the module documentation).
#[cfg_attr(any(not(feature = "std"), loom), allow(dead_code))] // no clock there
pub(crate) const SLOW_PATH_DRAIN_WAIT_NS: u64 = 1_000_000_000;

/// When a drain stops waiting for owners: never, or when the caller's test says so.
pub(crate) enum GiveUp<'a> {
    /// Wait for every owner, however long (`drain_all`).
    Never,
    /// Stop waiting once this returns `true` (polled between checks of the owners).
    When(&'a mut dyn FnMut() -> bool),
    /// Reclaim's drain: as `When`, and an owner still sitting on an earlier request (which
    /// an earlier drain gave up on) is not waited for again, so that a leaked owner costs
    /// one wait, not one per allocation.
    #[cfg_attr(any(not(feature = "std"), loom), allow(dead_code))] // no clock there
    Reclaim(&'a mut dyn FnMut() -> bool),
}

impl GiveUp<'_> {
    fn now(&mut self) -> bool {
        match self {
            GiveUp::Never => false,
            GiveUp::When(f) | GiveUp::Reclaim(f) => f(),
        }
    }
}

impl<P: Platform> Zone<P> {
    /// Locks CPU `c`'s lists, or `None` once an owner holds them for good (owner-only
    /// locking). Spin-locked lists are only ever held briefly, so they are simply waited for.
    pub(crate) fn lock_unless_owned(&self, c: usize) -> Option<SpinGuard<'_, PerCpuPages>> {
        let slot = self.pcp.slot(c);
        if self.pcp.cfg.locking != PcpLocking::OwnerOnly {
            return Some(slot.lists.lock());
        }
        loop {
            if let Some(g) = slot.lists.try_lock() {
                return Some(g);
            }
            if slot.owned.load(Ordering::SeqCst) && !slot.idle.load(Ordering::SeqCst) {
                return None;
            }
            relax_hard();
        }
    }

    /// `drain_pages_zone`'s chunk: up to `batch << SCALE` pages (Debian 6.1, 6.12+), or all
    /// of them in one `free_pcppages_bulk` call (5.15 with its `batch_free` round robin,
    /// which a restart would change; 6.6.14 drains in one call too, but its lists empty one
    /// after another, so chunks drain the same pages).
    fn drain_zone_chunk(&self, pcp: &PerCpuPages) -> i32 {
        if self.pcp.policy.drain_batch_free {
            pcp.count
        } else {
            pcp.count.min(pcp.batch.max(1) << self.pcp.policy.scale)
        }
    }

    /// `drain_pages_zone` on lists the caller holds: empties them in chunks
    /// ([`Zone::drain_zone_chunk`]).
    pub(crate) fn drain_locked(&self, pcp: &mut PerCpuPages, reason: DrainReason) {
        while pcp.count > 0 {
            let n = self.drain_zone_chunk(pcp);
            let before = pcp.count;
            self.bulk_free(pcp, n, 0, reason);
            if pcp.count == before {
                break; // count disagrees with the lists; `check` reports P1
            }
        }
    }

    /// `drain_pages_zone(cpu)`: takes CPU `c`'s lock for each chunk. Returns `false` if the
    /// lists became owner-held part-way (the owner must be asked).
    pub(crate) fn drain_pages_zone(&self, c: usize, reason: DrainReason) -> bool {
        let slot = self.pcp.slot(c);
        loop {
            let Some(pcp) = self.lock_unless_owned(c) else {
                return false;
            };
            let mut pcp = PcpGuard::resume(slot, pcp);
            self.pcp.refresh_locked(&mut pcp);
            let n = self.drain_zone_chunk(&pcp);
            let before = pcp.count;
            if n > 0 {
                self.bulk_free(&mut pcp, n, 0, reason);
            }
            let left = pcp.count;
            drop(pcp);
            if left <= 0 || left == before {
                return true;
            }
        }
    }

    /// Whether CPU `c` must be drained by its owner rather than by whoever asks.
    fn owner_route(&self, slot: &PcpSlot) -> bool {
        slot.owned.load(Ordering::SeqCst)
            && !slot.idle.load(Ordering::SeqCst)
            && (self.pcp.cfg.drain == DrainMode::Owner
                || self.pcp.cfg.locking == PcpLocking::OwnerOnly)
    }

    /// Serves the caller's own pending drain request, if it owns a CPU (the kernel's drain
    /// work item running on that CPU).
    pub(crate) fn serve_own(&self, me: &mut PcpAccess<'_>) {
        match me {
            PcpAccess::Cpu(_) => {}
            PcpAccess::Owner(c) => {
                let slot = self.pcp.slot(*c);
                if slot.drain_pending() {
                    let want = slot.tickets_to_serve();
                    if self.drain_pages_zone(*c, DrainReason::Local) {
                        slot.mark_served(want);
                    }
                }
            }
            PcpAccess::Held(c, pcp) => {
                let slot = self.pcp.slot(*c);
                if slot.drain_pending() {
                    let want = slot.tickets_to_serve();
                    self.drain_locked(&mut PcpGuard::resume(slot, &mut **pcp), DrainReason::Local);
                    slot.mark_served(want);
                }
            }
        }
    }

    /// Starts draining CPU `c` on behalf of `me`: in place if `me` owns it, remotely if
    /// allowed, else by raising its owner's request. Returns the ticket to wait for, if any.
    fn start_drain(&self, c: usize, me: &mut PcpAccess<'_>) -> Option<u64> {
        let slot = self.pcp.slot(c);
        match me {
            PcpAccess::Held(mc, pcp) if *mc == c => {
                self.drain_locked(&mut PcpGuard::resume(slot, &mut **pcp), DrainReason::Local);
                return None;
            }
            PcpAccess::Owner(mc) if *mc == c => {
                self.drain_pages_zone(c, DrainReason::Local);
                return None;
            }
            _ => {}
        }
        let mine = {
            let t = thread_token();
            t != 0 && slot.owner_token.load(Ordering::SeqCst) == t
        };
        let reason = if mine || c == self.this_cpu() {
            DrainReason::Local
        } else {
            DrainReason::Remote
        };
        let may_lock =
            !self.owner_route(slot) || (mine && self.pcp.cfg.locking != PcpLocking::OwnerOnly);
        if may_lock && self.drain_pages_zone(c, reason) {
            return None;
        }
        let ticket = slot.request_drain();
        // Never wait for ourselves: our handle serves the request at its next operation.
        (!mine).then_some(ticket)
    }

    /// Waits until CPU `c` has served `ticket`, serving the caller's own requests meanwhile.
    /// If the owner has gone (or is idle), drains the CPU itself. `false` if `give_up` said
    /// to stop first (the request stays raised: the owner serves it when it comes back).
    fn wait_owner(
        &self,
        c: usize,
        ticket: u64,
        me: &mut PcpAccess<'_>,
        give_up: &mut GiveUp<'_>,
    ) -> bool {
        let slot = self.pcp.slot(c);
        while !slot.served(ticket) {
            let away = !slot.owned.load(Ordering::SeqCst) || slot.idle.load(Ordering::SeqCst);
            if away {
                let want = slot.tickets_to_serve();
                if self.drain_pages_zone(c, DrainReason::Remote) {
                    slot.mark_served(want);
                    return true;
                }
            }
            if give_up.now() {
                return false;
            }
            self.serve_own(me);
            relax_hard();
        }
        true
    }

    /// Drains one CPU's lists back to the buddy. Under [`DrainMode::Remote`] the caller does it
    /// by taking that CPU's lock; under [`DrainMode::Owner`] a CPU with a registered
    /// [`CpuHandle`](crate::CpuHandle) is asked to, and this call waits until it has (a thread
    /// that owns a CPU should drain through its handle: see [`CpuHandle::drain_cpu`]).
    ///
    /// [`CpuHandle::drain_cpu`]: crate::CpuHandle::drain_cpu
    pub fn drain_cpu(&self, cpu: CpuId) {
        self.drain_cpu_for(cpu, &mut self.caller());
        self.debug_check("drain_cpu");
    }

    /// Who an anonymous call comes from: the owner of a CPU if this thread registered a
    /// spin-locked [`CpuHandle`](crate::CpuHandle) (found by its thread token), so that it
    /// serves its own requests while it waits; else an anonymous thread. (An owner-only owner
    /// cannot be served from here, its lists being held up its stack: it should drain through
    /// its handle, and `start_drain` never makes it wait for itself.)
    fn caller(&self) -> PcpAccess<'static> {
        let t = thread_token();
        if t != 0 && self.pcp.cfg.locking == PcpLocking::Spinlock {
            for c in 0..self.pcp.cpus() {
                if self.pcp.slot(c).owner_token.load(Ordering::Relaxed) == t {
                    return PcpAccess::Owner(c);
                }
            }
        }
        PcpAccess::Cpu(self.this_cpu())
    }

    pub(crate) fn drain_cpu_for(&self, cpu: CpuId, me: &mut PcpAccess<'_>) {
        if !self.pcp.enabled() {
            return;
        }
        // `enabled` implies slots (`PcpSet::with_slots`); `cpu_index` would not divide by
        // zero without them either.
        let c = self.pcp.cpu_index(cpu);
        if let Some(ticket) = self.start_drain(c, me) {
            self.wait_owner(c, ticket, me, &mut GiveUp::Never);
        }
    }

    /// Drains the calling thread's CPU's lists (`drain_local_pages`).
    pub fn drain_local(&self) {
        if self.pcp.enabled() {
            self.drain_cpu(CpuId(self.this_cpu() as u32));
        }
    }

    /// Drains every CPU's lists (`drain_all_pages(zone)`): waits for a drain already in
    /// progress, skips CPUs whose lists look empty. Under [`DrainMode::Owner`] it waits for
    /// every busy owner, and forever for a leaked one: see the module documentation and
    /// [`Zone::drain_all_timeout`].
    pub fn drain_all(&self) {
        // Cannot fail: it never gives up.
        let _ = self.drain_all_with(&mut self.caller(), true, &mut GiveUp::Never);
        self.debug_check("drain_all");
    }

    /// Like [`Zone::drain_all`], but stops waiting, for the drain mutex or for owners, once
    /// `give_up` returns `true` (called between checks; the caller's clock or spin budget).
    /// The CPUs whose owners had not answered by then keep their pages, and their requests
    /// stay raised for when they come back.
    pub fn drain_all_until(&self, mut give_up: impl FnMut() -> bool) -> Result<(), DrainError> {
        let done = self.drain_all_with(&mut self.caller(), true, &mut GiveUp::When(&mut give_up));
        self.debug_check("drain_all_until");
        done
    }

    /// Like [`Zone::drain_all`], but waits at most about `timeout` for owners (see
    /// [`Zone::drain_all_until`]). An owner-only [`CpuHandle`](crate::CpuHandle) that was
    /// leaked with `mem::forget` makes this an error naming its CPU instead of a hang.
    #[cfg(feature = "std")]
    pub fn drain_all_timeout(&self, timeout: core::time::Duration) -> Result<(), DrainError> {
        let end = deadline_ns(timeout);
        self.drain_all_until(|| crate::sync::now_ns() >= end)
    }

    /// `__drain_all_pages` on behalf of `me`. Without `wait_if_busy`, returns at once when
    /// another drain is running (the kernel's `drain_all_pages(NULL)` from reclaim).
    pub(crate) fn drain_all_with(
        &self,
        me: &mut PcpAccess<'_>,
        wait_if_busy: bool,
        give_up: &mut GiveUp<'_>,
    ) -> Result<(), DrainError> {
        if !self.pcp.enabled() {
            return Ok(());
        }
        let _m = loop {
            if let Some(m) = self.pcp.drain_mutex.try_lock() {
                break m;
            }
            if !wait_if_busy {
                return Ok(());
            }
            if give_up.now() {
                return Err(DrainError::Busy);
            }
            self.serve_own(me); // the drainer holding the mutex may be waiting for us
            relax_hard();
        };
        let n = self.pcp.cpus();
        let mut unanswered = Unanswered::default();
        // Raise every request first so that busy owners drain in parallel, then wait.
        let mut waiting = [0u64; 64]; // tickets of the first 64 CPUs; later ones waited in turn
        for c in 0..n {
            let slot = self.pcp.slot(c);
            if slot.count_hint.load(Ordering::Relaxed) == 0 {
                continue;
            }
            if matches!(give_up, GiveUp::Reclaim(_))
                && slot.drain_pending()
                && self.owner_route(slot)
            {
                unanswered.add(c, false);
                continue;
            }
            if let Some(ticket) = self.start_drain(c, me) {
                match waiting.get_mut(c) {
                    Some(w) => *w = ticket,
                    None => unanswered.add(c, self.wait_owner(c, ticket, me, give_up)),
                }
            }
        }
        for (c, &ticket) in waiting.iter().enumerate().take(n) {
            if ticket != 0 {
                unanswered.add(c, self.wait_owner(c, ticket, me, give_up));
            }
        }
        unanswered.result()
    }

    /// The queueing half of `__drain_all_pages` for this zone, for a drain of several zones
    /// that waits once ([`Machine::drain_all`](crate::Machine::drain_all)): under the drain
    /// mutex, every CPU with pages is drained in place where the caller may, else its owner
    /// is asked. Returns one bit per CPU (of the first 64) whose owner must be waited for
    /// ([`Zone::wait_raised`]); a later CPU is waited for at once, as in `drain_all`.
    pub(crate) fn raise_drains(&self) -> u64 {
        if !self.pcp.enabled() {
            return 0;
        }
        let me = &mut self.caller();
        let _m = loop {
            if let Some(m) = self.pcp.drain_mutex.try_lock() {
                break m;
            }
            self.serve_own(me); // the drainer holding the mutex may be waiting for us
            relax_hard();
        };
        let mut raised = 0u64;
        for c in 0..self.pcp.cpus() {
            if self.pcp.slot(c).count_hint.load(Ordering::Relaxed) == 0 {
                continue;
            }
            if let Some(ticket) = self.start_drain(c, me) {
                if c < 64 {
                    raised |= 1 << c;
                } else {
                    self.wait_owner(c, ticket, me, &mut GiveUp::Never);
                }
            }
        }
        raised
    }

    /// The flushing half: waits for the owners of the CPUs in `raised` to have served their
    /// requests (every request raised by the time this looks: at least the one
    /// [`Zone::raise_drains`] raised).
    pub(crate) fn wait_raised(&self, raised: u64) {
        let me = &mut self.caller();
        for c in (0..64.min(self.pcp.cpus())).filter(|&c| raised & (1 << c) != 0) {
            let ticket = self.pcp.slot(c).tickets_to_serve();
            self.wait_owner(c, ticket, me, &mut GiveUp::Never);
        }
        self.debug_check("drain_all");
    }

    /// The allocation slow path's drain (`drain_all_pages(NULL)`): skipped if another drain
    /// runs, and under `std` bounded by [`SLOW_PATH_DRAIN_WAIT_NS`] per call.
    pub(crate) fn drain_all_for_reclaim(&self, me: &mut PcpAccess<'_>) {
        #[cfg(all(feature = "std", not(loom)))]
        {
            let end = crate::sync::now_ns().saturating_add(SLOW_PATH_DRAIN_WAIT_NS);
            let mut past = || crate::sync::now_ns() >= end;
            // A CPU that did not answer keeps its pages; the caller retries without them.
            let _ = self.drain_all_with(me, false, &mut GiveUp::Reclaim(&mut past));
        }
        #[cfg(any(not(feature = "std"), loom))]
        {
            let _ = self.drain_all_with(me, false, &mut GiveUp::Never);
        }
    }
}

/// `now_ns()` plus `timeout`, saturating (a timeout of years waits "forever").
#[cfg(feature = "std")]
fn deadline_ns(timeout: core::time::Duration) -> u64 {
    let t = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
    crate::sync::now_ns().saturating_add(t)
}

/// The CPUs a drain gave up on: the first and how many.
#[derive(Default)]
struct Unanswered {
    first: Option<usize>,
    count: u32,
}

impl Unanswered {
    fn add(&mut self, c: usize, answered: bool) {
        if !answered {
            self.first.get_or_insert(c);
            self.count += 1;
        }
    }

    fn result(self) -> Result<(), DrainError> {
        match self.first {
            None => Ok(()),
            Some(c) => Err(DrainError::NoAnswer {
                cpu: CpuId(c as u32),
                cpus: self.count,
            }),
        }
    }
}
