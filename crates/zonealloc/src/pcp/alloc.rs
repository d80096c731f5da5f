//! The allocation side: `rmqueue_pcplist` (take the head of the CPU's list) and
//! `rmqueue_bulk` (refill it in a batch under one zone-lock hold, appending at the tail).

use super::slot::PcpAccess;
use super::PerCpuPages;
use crate::buddy::AllocFlags;
use crate::list::FrameList;
use crate::meta::FrameState;
use crate::shared::ZONE_BELOW_HIGH;
use crate::sync::now_ns;
use crate::types::{MigrateType, Order};
use crate::zone::Zone;

impl Zone {
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
            PcpAccess::Cpu(cpu) | PcpAccess::Owner(cpu) => {
                let cpu = *cpu;
                let slot = self.pcp.slot(cpu);
                let mut pcp = slot.try_lists()?;
                self.enter(slot, &mut pcp);
                let r = self.rmqueue_pcplist_locked(&mut pcp, order, mt, flags);
                self.leave(slot, &pcp);
                r
            }
        }
    }

    #[inline]
    pub(crate) fn rmqueue_pcplist_locked(
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
        pcp.take_head(t, pi, order, mt)
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
}
