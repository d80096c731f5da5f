//! The zone's side of its per-CPU lists: which CPU an operation runs on, the [`PcpGuard`]
//! through which every full path enters and leaves a CPU's lists, and the instrumentation
//! switches.
//!
//! The hit paths (`fast.rs`) do not use the guard: they refuse to run unless the lists are
//! quiet (nothing for `enter` to do) and store the count hint themselves.

use core::ops::{Deref, DerefMut};

use super::Zone;
use crate::pcp::{DrainReason, PcpSlot, PerCpuPages, ATTENTION_OFF};
use crate::platform::Platform;
use crate::shared::ZoneBits;
use crate::stats::HoldTimes;
use crate::sync::Ordering;
use crate::types::MigrateType;

impl<P: Platform> Zone<P> {
    /// The CPU an operation without an explicit CPU runs on.
    #[inline]
    pub(crate) fn this_cpu(&self) -> usize {
        self.pcp.cpu_index(crate::types::CpuId(P::current_cpu()))
    }

    #[inline]
    pub(crate) fn block_mt_racy(&self, idx: u32) -> MigrateType {
        let pb = self.config().pageblock_order;
        self.table.block_type(idx & !((1u32 << pb) - 1))
    }

    /// Enters CPU `slot`'s lists, locked (or held by their owner) as `pcp`: applies pending
    /// parameters and serves a pending owner-drain request. The guard leaves them when dropped.
    #[inline]
    pub(crate) fn pcp_enter<'a, L: DerefMut<Target = PerCpuPages>>(
        &self,
        slot: &'a PcpSlot,
        mut pcp: L,
    ) -> PcpGuard<'a, L> {
        self.enter(slot, &mut pcp);
        PcpGuard { slot, pcp }
    }

    /// Applies pending parameters and serves a pending owner-drain request; for every path
    /// that has just locked (or holds) a PCP.
    #[inline]
    fn enter(&self, slot: &PcpSlot, pcp: &mut PerCpuPages) {
        // Read before looking at what it announces: a bump after this read stays unseen, so
        // the next hit path comes back here.
        let seen = slot.attention.load(Ordering::SeqCst);
        self.pcp.refresh_locked(pcp);
        if slot.drain_pending() {
            let want = slot.tickets_to_serve();
            self.drain_locked(pcp, DrainReason::Local);
            slot.mark_served(want);
        }
        // Read after `seen`: a flag set after this read bumped `attention` after it (see
        // `set_zone_flag`), so the hit paths come back here either way.
        let off = self.shared.flags.load(Ordering::SeqCst) != 0;
        pcp.attention_seen = if off { ATTENTION_OFF } else { seen };
    }

    /// Sets a zone flag (Linux `set_bit` on `zone->flags`, and the other [`ZoneBits`]) and,
    /// when it was clear, sends every CPU's next hit path to `enter`, which keeps the hit
    /// paths off while any flag is set: they test the slot's `attention` only, not the flags.
    pub(crate) fn set_zone_flag(&self, bit: ZoneBits) {
        let sh = &self.shared;
        if !sh.test_flag(bit) {
            sh.flags.fetch_or(bit.bits(), Ordering::SeqCst);
            self.pcp.call_attention();
        }
    }

    #[inline]
    pub(crate) fn hold_start(&self) -> Option<u64> {
        self.pcp.instrument.load(Ordering::Relaxed).then(P::now_ns)
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
            self.set_zone_flag(ZoneBits::ZONE_RECLAIM_ACTIVE);
        } else {
            self.shared.clear_flag(ZoneBits::ZONE_RECLAIM_ACTIVE);
        }
    }

    /// The end of a kswapd pass (`balance_pgdat`'s exit): the watermark boost falls by
    /// `by`, what it was when the pass began (`zone->watermark_boost -= min(boost,
    /// zone_boosts[i])`); a boost raised during the pass stays for the next one.
    pub fn end_boost_reclaim(&self, by: u64) {
        let mut z = self.lock();
        let cut = z.wmark.boost.min(by);
        if cut != 0 {
            z.wmark.boost -= cut;
            z.marks_dirty = true;
        }
    }

    /// Number of CPUs with per-CPU lists.
    pub fn cpus(&self) -> u32 {
        self.pcp.cpus() as u32
    }
}

/// One CPU's lists, entered: what [`ZoneGuard`](super::ZoneGuard) is for the zone lock, this is
/// for a PCP lock. `L` is the lock's own guard (the lists are unlocked when this guard drops)
/// or a borrow of lists a [`CpuHandle`](crate::CpuHandle) holds for its whole life. Dropping
/// it leaves the lists: it publishes their page count to the slot's `count_hint`, which other
/// threads read without the lock, before `L` (and so the lock) is released. An early return
/// therefore cannot leave the lock held, nor the hint stale.
pub(crate) struct PcpGuard<'a, L: DerefMut<Target = PerCpuPages>> {
    slot: &'a PcpSlot,
    pcp: L,
}

impl<'a, L: DerefMut<Target = PerCpuPages>> PcpGuard<'a, L> {
    /// Takes lists that need no `enter` (a path that only drains them, or one that entered
    /// them before), so that leaving them is the guard's job too.
    #[inline]
    pub(crate) fn resume(slot: &'a PcpSlot, pcp: L) -> Self {
        PcpGuard { slot, pcp }
    }
}

impl<L: DerefMut<Target = PerCpuPages>> Deref for PcpGuard<'_, L> {
    type Target = PerCpuPages;
    #[inline]
    fn deref(&self) -> &PerCpuPages {
        &self.pcp
    }
}

impl<L: DerefMut<Target = PerCpuPages>> DerefMut for PcpGuard<'_, L> {
    #[inline]
    fn deref_mut(&mut self) -> &mut PerCpuPages {
        &mut self.pcp
    }
}

impl<L: DerefMut<Target = PerCpuPages>> Drop for PcpGuard<'_, L> {
    #[inline]
    fn drop(&mut self) {
        self.slot
            .count_hint
            .store(self.pcp.count.max(0) as u32, Ordering::Relaxed);
    }
}
