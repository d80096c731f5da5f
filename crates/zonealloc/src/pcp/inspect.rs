//! Looking at the lists: per-CPU snapshots and counters, the `/proc/zoneinfo` pageset
//! block, and the P1..P3 invariant checks.

use core::fmt;

use super::slot::PcpInfo;
use super::{PcpStats, PerCpuPages};
use crate::meta::FrameState;
use crate::sync::{Ordering, SpinGuard};
use crate::types::{CpuId, Order, ORDER_SLOTS};
use crate::zone::Zone;

impl Zone {
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
        info.stats.frees = pcp.frees_by_order.iter().sum();
        info.stats.trylock_failures = slot.trylock_failures.load(Ordering::Relaxed);
        info
    }

    /// Locks a CPU's lists for inspection, unless an owner holds them.
    fn lock_for_inspection(&self, c: usize) -> Option<SpinGuard<'_, PerCpuPages>> {
        self.lock_unless_owned(c)
    }

    /// Pages sitting on all CPUs' lists, as of their last unlock (read without locking, as the
    /// kernel reads `pcp->count`). [`Zone::free_pages`] does not include them, exactly as
    /// `NR_FREE_PAGES` does not: from the buddy's point of view they are allocated.
    pub fn pcp_pages(&self) -> u64 {
        (0..self.pcp.cpus())
            .map(|c| self.pcp.slot(c).count_hint.load(Ordering::Relaxed) as u64)
            .sum()
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
                let want = FrameState::Pcp(Order::from_raw(order));
                let n = list.check(t, want, "P2", |idx| {
                    let pfn = t.pfn_of(idx);
                    if pfn & ((1u64 << order) - 1) != 0 {
                        return Err(fail("P2", Some(pfn), "PCP block not aligned to its order"));
                    }
                    Ok(())
                })?;
                pages += (n as i64) << order;
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
}
