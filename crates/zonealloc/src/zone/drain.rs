//! Draining and decay: `drain_pages_zone`, `__drain_all_pages`, `decay_pcp_high`, and the
//! owner-drain protocol that stands in for the kernel's per-CPU drain work items.
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
//! `owned` and the tickets are accessed with `SeqCst`: the drainer takes its ticket then loads
//! `owned`; the departing owner stores `owned` then loads the tickets. One of them always sees
//! the other (the store-load pattern needs sequential consistency), so a request is never left
//! behind by an owner that leaves.

use super::pcp::PcpGuard;
use super::Zone;
use crate::config::{DrainMode, PcpLocking};
use crate::pcp::{DrainReason, PcpAccess, PcpSlot, PerCpuPages};
use crate::sync::{relax_hard, thread_token, Ordering, SpinGuard};
use crate::types::CpuId;

impl Zone {
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

    /// `drain_pages_zone` on lists the caller holds: empties them in chunks of up to
    /// `batch << SCALE` pages.
    pub(crate) fn drain_locked(&self, pcp: &mut PerCpuPages, reason: DrainReason) {
        while pcp.count > 0 {
            let n = pcp.count.min(pcp.batch.max(1) << self.pcp.policy.scale);
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
            let n = pcp.count.min(pcp.batch.max(1) << self.pcp.policy.scale);
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
    /// If the owner has gone (or is idle), drains the CPU itself.
    fn wait_owner(&self, c: usize, ticket: u64, me: &mut PcpAccess<'_>) {
        let slot = self.pcp.slot(c);
        while !slot.served(ticket) {
            let away = !slot.owned.load(Ordering::SeqCst) || slot.idle.load(Ordering::SeqCst);
            if away {
                let want = slot.tickets_to_serve();
                if self.drain_pages_zone(c, DrainReason::Remote) {
                    slot.mark_served(want);
                    return;
                }
            }
            self.serve_own(me);
            relax_hard();
        }
    }

    /// Drains one CPU's lists back to the buddy. Under [`DrainMode::Remote`] the caller does it
    /// by taking that CPU's lock; under [`DrainMode::Owner`] a CPU with a registered
    /// [`CpuHandle`](crate::CpuHandle) is asked to, and this call waits until it has (a thread
    /// that owns a CPU should drain through its handle: see [`CpuHandle::drain_cpu`]).
    ///
    /// [`CpuHandle::drain_cpu`]: crate::CpuHandle::drain_cpu
    pub fn drain_cpu(&self, cpu: CpuId) {
        self.drain_cpu_for(cpu, &mut self.caller());
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
        let c = cpu.0 as usize % self.pcp.cpus();
        if let Some(ticket) = self.start_drain(c, me) {
            self.wait_owner(c, ticket, me);
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
    /// every busy owner: see the module documentation.
    pub fn drain_all(&self) {
        self.drain_all_with(&mut self.caller(), true);
    }

    /// `__drain_all_pages` on behalf of `me`. Without `wait_if_busy`, returns at once when
    /// another drain is running (the kernel's `drain_all_pages(NULL)` from reclaim).
    pub(crate) fn drain_all_with(&self, me: &mut PcpAccess<'_>, wait_if_busy: bool) {
        if !self.pcp.enabled() {
            return;
        }
        let _m = loop {
            if let Some(m) = self.pcp.drain_mutex.try_lock() {
                break m;
            }
            if !wait_if_busy {
                return;
            }
            self.serve_own(me); // the drainer holding the mutex may be waiting for us
            relax_hard();
        };
        let n = self.pcp.cpus();
        // Raise every request first so that busy owners drain in parallel, then wait.
        let mut waiting = [0u64; 64]; // tickets of the first 64 CPUs; later ones waited in turn
        for c in 0..n {
            if self.pcp.slot(c).count_hint.load(Ordering::Relaxed) == 0 {
                continue;
            }
            if let Some(ticket) = self.start_drain(c, me) {
                match waiting.get_mut(c) {
                    Some(w) => *w = ticket,
                    None => self.wait_owner(c, ticket, me),
                }
            }
        }
        for (c, &ticket) in waiting.iter().enumerate().take(n) {
            if ticket != 0 {
                self.wait_owner(c, ticket, me);
            }
        }
    }

    /// `decay_pcp_high` for one CPU, plus the periodic drain it implies.
    pub(crate) fn decay_locked(&self, pcp: &mut PerCpuPages) -> bool {
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
            // Owner-held lists decay through their owner's `CpuHandle::tick`.
            let Some(pcp) = self.lock_unless_owned(c) else {
                continue;
            };
            let mut pcp = self.pcp_enter(self.pcp.slot(c), pcp);
            todo |= self.decay_locked(&mut pcp);
        }
        todo
    }
}
