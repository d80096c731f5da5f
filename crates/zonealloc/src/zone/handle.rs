//! [`CpuHandle`]: a thread's claim on one CPU's lists.

use super::pcp::PcpGuard;
use super::Zone;
use crate::config::PcpLocking;
use crate::error::{AllocError, FreeError, HandleError};
use crate::pcp::{DrainReason, PcpAccess, PcpSlot, PerCpuPages};
use crate::platform::{DefaultPlatform, Platform};
use crate::request::AllocRequest;
use crate::sync::{thread_token, Ordering, SpinGuard};
use crate::types::{CpuId, MigrateType, Order, Pfn, ZoneType};
use core::fmt;

impl<P: Platform> Zone<P> {
    /// Registers the calling thread as the owner of `cpu`'s lists.
    pub fn cpu_handle(&self, cpu: CpuId) -> Result<CpuHandle<'_, P>, HandleError> {
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
        slot.owner_token.store(thread_token(), Ordering::SeqCst);
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

/// A thread's claim on one CPU's lists of a zone: the user-space analogue of running pinned
/// on that CPU. At most one handle per CPU exists at a time.
///
/// Under [`PcpLocking::Spinlock`] a handle only fixes the CPU id (each operation still
/// try-locks, as the kernel does). Under [`PcpLocking::OwnerOnly`] it holds the CPU's lists for
/// its whole life, so its operations take no lock, and other threads cannot drain them:
/// `drain_all` waits until this handle's next operation, [`CpuHandle::poll`] or drop.
pub struct CpuHandle<'z, P: Platform = DefaultPlatform> {
    zone: &'z Zone<P>,
    cpu: usize,
    slot: &'z PcpSlot,
    held: Option<SpinGuard<'z, PerCpuPages>>,
}

impl<P: Platform> fmt::Debug for CpuHandle<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuHandle")
            .field("cpu", &self.cpu)
            .field("owner_only", &self.held.is_some())
            .finish()
    }
}

impl<'z, P: Platform> CpuHandle<'z, P> {
    /// Leaves and unlocks owner-held lists, if this handle holds them.
    fn release_held(&mut self) {
        if let Some(p) = self.held.take() {
            drop(PcpGuard::resume(self.slot, p));
        }
    }

    #[inline]
    fn access(&mut self) -> PcpAccess<'_> {
        match self.held.as_mut() {
            Some(g) => PcpAccess::Held(self.cpu, g),
            None => PcpAccess::Owner(self.cpu),
        }
    }

    /// The CPU this handle runs on.
    pub fn cpu(&self) -> CpuId {
        CpuId(self.cpu as u32)
    }

    /// The zone.
    pub fn zone(&self) -> &'z Zone<P> {
        self.zone
    }

    /// Allocates on this CPU with the default request for `mt`.
    ///
    /// The PCP hit path is inlined into the caller (see [`CpuHandle::alloc_with`]).
    #[inline(always)]
    pub fn alloc(&mut self, order: Order, mt: MigrateType) -> Result<Pfn, AllocError> {
        self.alloc_with(order, AllocRequest::new(mt))
    }

    /// Allocates on this CPU (the request's own `cpu` is ignored). When memory is short, the
    /// slow path drains every CPU's lists, this one in place.
    ///
    /// The PCP hit path is inlined into every caller; everything else is one out-of-line call.
    #[inline(always)]
    pub fn alloc_with(&mut self, order: Order, req: AllocRequest) -> Result<Pfn, AllocError> {
        let zone = self.zone;
        let held = self.held.as_deref_mut();
        let (mt, hz) = (req.migratetype, req.highest_zone);
        if let Some(p) = zone.pcp_alloc_fast(order, mt, hz, self.slot, held) {
            zone.debug_check("CpuHandle::alloc");
            return Ok(p);
        }
        self.alloc_slow(order, mt, hz, req.gfp_bits())
    }

    /// Everything but a PCP hit: the full allocation walk. The request comes as scalars.
    #[cold]
    #[inline(never)]
    fn alloc_slow(
        &mut self,
        order: Order,
        mt: MigrateType,
        hz: ZoneType,
        gfp_bits: u8,
    ) -> Result<Pfn, AllocError> {
        let zone = self.zone;
        let req = AllocRequest::from_parts(mt, hz, gfp_bits, None);
        let got = super::walk::alloc_in_zone(zone, order, req, &mut self.access());
        zone.debug_check("CpuHandle::alloc");
        got
    }

    /// Frees on this CPU.
    ///
    /// The PCP hit path is inlined into every caller; everything else is one out-of-line call.
    #[inline(always)]
    pub fn free(&mut self, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        let zone = self.zone;
        if zone.pcp_free_fast(pfn, order, self.slot, self.held.as_deref_mut()) {
            zone.debug_check("CpuHandle::free");
            return Ok(());
        }
        self.free_slow(pfn, order)
    }

    /// Everything but a PCP hit: the full free.
    #[cold]
    #[inline(never)]
    fn free_slow(&mut self, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        let zone = self.zone;
        let done = zone.free_with(pfn, order, &mut self.access());
        zone.debug_check("CpuHandle::free");
        done
    }

    /// Serves a pending owner-drain request, if any (the kernel's drain work item running on
    /// this CPU). Operations do this too; a thread that does neither keeps `drain_all` waiting.
    pub fn poll(&mut self) {
        if !self.slot.drain_pending() {
            return;
        }
        let zone = self.zone;
        zone.serve_own(&mut self.access());
        zone.debug_check("CpuHandle::poll");
    }

    /// Drains this CPU's lists.
    pub fn drain_local(&mut self) {
        let zone = self.zone;
        let cpu = self.cpu();
        zone.drain_cpu_for(cpu, &mut self.access());
        zone.debug_check("CpuHandle::drain_local");
    }

    /// Drains CPU `cpu`'s lists, as [`Zone::drain_cpu`] does, but as this CPU's owner: while it
    /// waits for another owner it keeps serving requests addressed to this CPU, so two owners
    /// draining each other cannot deadlock.
    pub fn drain_cpu(&mut self, cpu: CpuId) {
        let zone = self.zone;
        zone.drain_cpu_for(cpu, &mut self.access());
        zone.debug_check("CpuHandle::drain_cpu");
    }

    /// Drains every CPU's lists, this one in place (see [`CpuHandle::drain_cpu`]).
    pub fn drain_all(&mut self) {
        let zone = self.zone;
        // Cannot fail: it never gives up.
        let _ = zone.drain_all_with(&mut self.access(), true, &mut super::drain::GiveUp::Never);
        zone.debug_check("CpuHandle::drain_all");
    }

    /// Like [`CpuHandle::drain_all`], giving up as [`Zone::drain_all_until`] does.
    pub fn drain_all_until(
        &mut self,
        mut give_up: impl FnMut() -> bool,
    ) -> Result<(), crate::DrainError> {
        let zone = self.zone;
        let mut give_up = super::drain::GiveUp::When(&mut give_up);
        let done = zone.drain_all_with(&mut self.access(), true, &mut give_up);
        zone.debug_check("CpuHandle::drain_all_until");
        done
    }

    /// Runs `f` with this CPU idle, as a task that sleeps leaves its CPU free for the kernel's
    /// drain work: the lists are released (under owner-only locking) and drainers drain them
    /// themselves until `f` returns. Use it around anything that may block on another thread,
    /// such as a barrier or a channel, when drains use [`DrainMode::Owner`](crate::DrainMode).
    pub fn idle<R>(&mut self, f: impl FnOnce() -> R) -> R {
        let slot = self.slot;
        let zone = self.zone;
        self.release_held();
        slot.idle.store(true, Ordering::SeqCst);
        if slot.drain_pending() {
            let want = slot.tickets_to_serve();
            if zone.drain_pages_zone(self.cpu, DrainReason::Local) {
                slot.mark_served(want);
            }
        }
        let r = f();
        slot.idle.store(false, Ordering::SeqCst);
        if zone.pcp.cfg.locking == PcpLocking::OwnerOnly && zone.pcp.enabled() {
            self.held = Some(slot.lists.lock());
        }
        r
    }

    /// This CPU's share of the periodic work (`decay_pcp_high`); see [`Zone::tick`].
    pub fn tick(&mut self) -> bool {
        let zone = self.zone;
        let slot = self.slot;
        match self.held.as_mut() {
            Some(p) => zone.decay_locked(&mut zone.pcp_enter(slot, &mut **p)),
            None => zone.decay_locked(&mut zone.pcp_enter(slot, slot.lists.lock())),
        }
        .todo
    }
}

impl<P: Platform> Drop for CpuHandle<'_, P> {
    fn drop(&mut self) {
        let slot = self.slot;
        self.release_held();
        slot.owner_token.store(0, Ordering::SeqCst);
        slot.owned.store(false, Ordering::SeqCst);
        // A drainer that saw us registered may be waiting: serve it now that we are gone
        // (unless a new owner took the lists meanwhile; the request is then theirs to serve).
        if slot.drain_pending() {
            let want = slot.tickets_to_serve();
            if self.zone.drain_pages_zone(self.cpu, DrainReason::Local) {
                slot.mark_served(want);
            }
        }
    }
}
