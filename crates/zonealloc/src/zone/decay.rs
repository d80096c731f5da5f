//! The vmstat worker's periodic work on a zone's per-CPU lists: `decay_pcp_high` (6.7 and
//! later), the remote pagesets' `drain_zone_pages`, and [`Zone::tick`], which runs both as
//! the worker and kswapd would.

use super::Zone;
use crate::pcp::{DecayOutcome, DrainReason, PerCpuPages};
use crate::platform::Platform;
use crate::types::CpuId;

impl<P: Platform> Zone<P> {
    /// `decay_pcp_high` on lists the caller holds (`mm/page_alloc.c`, 6.7 and later):
    /// `high` falls by an eighth toward `high_min` (not below `count - (batch << SCALE)`),
    /// then `count - high` pages go back in `free_pcppages_bulk(zone, min(to_drain, batch),
    /// pcp, 0)` calls. 6.6 and older have none (`refresh_cpu_vm_stats` touches only
    /// remote-node pagesets there): the outcome then says nothing moved.
    pub(crate) fn decay_locked(&self, pcp: &mut PerCpuPages) -> DecayOutcome {
        let mut out = DecayOutcome {
            reached: true,
            high_before: pcp.high,
            high_after: pcp.high,
            count_before: pcp.count,
            ..DecayOutcome::default()
        };
        if !self.pcp.policy.decay {
            return out;
        }
        // `batch = READ_ONCE(pcp->batch)` once, for every chunk.
        let batch = pcp.batch.max(1);
        let (mut todo, mut to_drain) = pcp.decay_high(self.pcp.policy.scale);
        out.high_after = pcp.high;
        while to_drain > 0 {
            let chunk = to_drain.min(batch);
            let before = pcp.count;
            self.bulk_free(pcp, chunk, 0, DrainReason::Decay);
            out.chunks += 1;
            out.drained += before - pcp.count;
            todo = true;
            to_drain -= chunk;
            if pcp.count == before {
                break; // count disagrees with the lists; `check` reports P1
            }
        }
        out.todo = todo;
        out
    }

    /// One CPU's `decay_pcp_high` for this zone: what the kernel's vmstat worker
    /// (`vmstat_update` → `refresh_cpu_vm_stats(true)`) does to that CPU's lists each time it
    /// runs on that CPU, and nothing else (no other CPU, no watermark boost). A replay calls it
    /// when that CPU's worker runs; [`Zone::tick`] calls it for every CPU. Waits for the
    /// CPU's lock; lists an owner holds for good are not reached (their
    /// [`CpuHandle::tick`](crate::CpuHandle::tick) decays them).
    pub fn decay_pcp_high(&self, cpu: CpuId) -> DecayOutcome {
        if !self.pcp.enabled() {
            return DecayOutcome::default();
        }
        let c = self.pcp.cpu_index(cpu);
        let Some(pcp) = self.lock_unless_owned(c) else {
            return DecayOutcome::default();
        };
        let mut pcp = self.pcp_enter(self.pcp.slot(c), pcp);
        let out = self.decay_locked(&mut pcp);
        drop(pcp);
        self.debug_check("decay_pcp_high");
        out
    }

    /// What [`Zone::decay_pcp_high`] would do to CPU `cpu`'s lists now, without doing it
    /// (`drained` is the pages it would ask `free_pcppages_bulk` for; a high-order block
    /// drained counts all its pages, so the run may free slightly more). For a replay that
    /// runs a simulated vmstat worker only when the trace shows its drain (see
    /// `docs/kernel-versions/vmstat-decay.md`). Reports nothing moved for the 6.6-and-older
    /// rules, and nothing reached where [`Zone::decay_pcp_high`] would not reach.
    pub fn decay_pcp_high_preview(&self, cpu: CpuId) -> DecayOutcome {
        if !self.pcp.enabled() {
            return DecayOutcome::default();
        }
        let c = self.pcp.cpu_index(cpu);
        let Some(mut pcp) = self.lock_unless_owned(c) else {
            return DecayOutcome::default();
        };
        self.pcp.refresh_locked(&mut pcp);
        if !self.pcp.policy.decay {
            return DecayOutcome {
                reached: true,
                high_before: pcp.high,
                high_after: pcp.high,
                count_before: pcp.count,
                ..DecayOutcome::default()
            };
        }
        pcp.decay_preview(self.pcp.policy.scale)
    }

    /// `drain_zone_pages` (CONFIG_NUMA): CPU `cpu` gives back `min(count, batch)` pages in
    /// one `free_pcppages_bulk` call, as `refresh_cpu_vm_stats` does when a remote node's
    /// pageset has expired. Counted with the vmstat worker's other drains
    /// ([`PcpStats::drain_decay_pages`](crate::PcpStats::drain_decay_pages)). Returns the pages
    /// drained; lists an owner holds for good are not reached.
    pub fn drain_zone_pages(&self, cpu: CpuId) -> u32 {
        if !self.pcp.enabled() {
            return 0;
        }
        let c = self.pcp.cpu_index(cpu);
        let Some(pcp) = self.lock_unless_owned(c) else {
            return 0;
        };
        let mut pcp = self.pcp_enter(self.pcp.slot(c), pcp);
        let to_drain = pcp.count.min(pcp.batch);
        let before = pcp.count;
        if to_drain > 0 {
            self.bulk_free(&mut pcp, to_drain, 0, DrainReason::Decay);
        }
        let drained = (before - pcp.count).max(0) as u32;
        drop(pcp);
        self.debug_check("drain_zone_pages");
        drained
    }

    /// The periodic work the kernel's vmstat worker and kswapd do, for every CPU whose lists
    /// are not held by an owner: [`Zone::decay_pcp_high`] on each CPU in turn (high falls by
    /// an eighth per tick and the excess drains), and the end of a watermark boost (kswapd's
    /// `balance_pgdat` resets it; no reclaim is modelled). Call it about once per simulated
    /// second. Returns whether more decay is pending. (The kernel runs each CPU's worker on
    /// its own timer; a replay that follows those timers calls `decay_pcp_high` per CPU.)
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
            todo |= self.decay_pcp_high(CpuId(c as u32)).todo;
        }
        self.debug_check("tick");
        todo
    }
}
