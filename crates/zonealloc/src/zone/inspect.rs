//! Looking at the lists: per-CPU snapshots and counters, the `/proc/zoneinfo` pageset
//! block, and the P1..P3 invariant checks.

use super::Zone;
use crate::buddy::{CheckFacts, Watermarks};
use crate::check::CheckError;
use crate::meta::FrameState;
use crate::pcp::{
    PcpFlags, PcpInfo, PcpStats, PcpTuning, PerCpuPages, PCP_ORDER_SLOTS, THP_ORDER_SLOT,
};
use crate::platform::Platform;
use crate::stats::{FreeAreaSnapshot, ZoneStats};
use crate::sync::{Ordering, SpinGuard};
use crate::types::{CpuId, MigrateType, Order, Pfn, MIGRATE_TYPES, ORDER_SLOTS};
use core::fmt;

impl<P: Platform> Zone<P> {
    /// One CPU's lists (ids past the CPU count wrap). Waits for its lock; an owner-held CPU is
    /// reported from its last unlock count only. A zone without per-CPU slots
    /// ([`Zone::from_uninit`] over an empty slice, `cpus() == 0`) has no lists: it reports
    /// them empty, `PcpInfo { cpu, ..PcpInfo::default() }`.
    pub fn pcp_info(&self, cpu: CpuId) -> PcpInfo {
        let c = self.pcp.cpu_index(cpu);
        let Some(slot) = self.pcp.slot_at(c) else {
            return PcpInfo {
                cpu: cpu.0,
                ..PcpInfo::default()
            };
        };
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
        info.flags = pcp.flags.bits();
        for (p, l) in pcp.lists.iter().enumerate() {
            let order = self.pcp.policy.order_of(p).get();
            info.list_pages[p] = (l.iter(&self.table).count() as u32) << order;
        }
        info.stats = pcp.stats;
        info.stats.frees = pcp.frees_by_order.iter().sum();
        info.stats.alloc_hits = pcp.allocs.iter().sum::<u64>() - pcp.miss_allocs;
        info.stats.trylock_failures = slot.trylock_failures.load(Ordering::Relaxed);
        info
    }

    /// Whether CPU `cpu`'s list of order-`order` blocks of `mt` (a PCP type) holds one: what
    /// [`Zone::pcp_info`]'s `list_pages` tells, without walking every list. False for an
    /// owner-held CPU and a zone without per-CPU slots.
    pub fn pcp_list_holds(&self, cpu: CpuId, mt: MigrateType, order: Order) -> bool {
        let c = self.pcp.cpu_index(cpu);
        if self.pcp.slot_at(c).is_none() {
            return false;
        }
        let Some(pcp) = self.lock_for_inspection(c) else {
            return false;
        };
        let pindex = self.pcp.policy.pindex(mt, order);
        pcp.lists.get(pindex).is_some_and(|l| !l.is_empty())
    }

    /// Sets CPU `cpu`'s tuning state ([`PcpTuning`]): to start a zone where a kernel's was
    /// (`--proc`'s per-CPU `high`, or state a replay infers from a trace). Waits for the
    /// lists' lock; returns false, nothing set, when an owner holds them or the zone has no
    /// per-CPU slots (`cpus() == 0`).
    pub fn set_pcp_tuning(&self, cpu: CpuId, t: PcpTuning) -> bool {
        let c = self.pcp.cpu_index(cpu);
        if self.pcp.slot_at(c).is_none() {
            return false;
        }
        let Some(mut pcp) = self.lock_for_inspection(c) else {
            return false;
        };
        self.pcp.refresh_locked(&mut pcp);
        let scale = self.pcp.policy.scale;
        if let Some(h) = t.high {
            // Through set_high: the free hit path reads its copy (`free_fast_high`).
            pcp.set_high(h.max(0));
        }
        if let Some(a) = t.alloc_factor {
            pcp.alloc_factor = a.min(scale);
        }
        if let Some(f) = t.free_count {
            pcp.free_count = f.max(0);
        }
        if let Some(on) = t.prev_free_high_order {
            pcp.flags.set(PcpFlags::PREV_FREE_HIGH_ORDER, on);
        }
        true
    }

    /// CPU `cpu`'s tuning state as it stands, every field given: what
    /// [`Zone::set_pcp_tuning`] sets, read without walking the lists as [`Zone::pcp_info`]
    /// does. `None` where `set_pcp_tuning` sets nothing: an owner holds the lists, or the
    /// zone has no per-CPU slots.
    pub fn pcp_tuning(&self, cpu: CpuId) -> Option<PcpTuning> {
        let c = self.pcp.cpu_index(cpu);
        self.pcp.slot_at(c)?;
        let mut pcp = self.lock_for_inspection(c)?;
        self.pcp.refresh_locked(&mut pcp);
        Some(PcpTuning {
            high: Some(pcp.high),
            alloc_factor: Some(pcp.alloc_factor),
            free_count: Some(pcp.free_count),
            prev_free_high_order: Some(pcp.flags.contains(PcpFlags::PREV_FREE_HIGH_ORDER)),
        })
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
                for s in 0..PCP_ORDER_SLOTS {
                    let o = if s < THP_ORDER_SLOT {
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
        let threshold = crate::pcp::stat_threshold(managed, self.cpus(), self.config().page_size);
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
        use crate::check::check_fail as fail;
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
                let order = self.pcp.policy.order_of(p).get();
                let want = FrameState::Pcp(Order::from_raw(order));
                let n = list.check(t, want, "P2", |idx| {
                    let pfn = t.pfn_of(idx);
                    if pfn.0 & ((1u64 << order) - 1) != 0 {
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

impl<P: Platform> Zone<P> {
    /// Free pages in the buddy allocator (`NR_FREE_PAGES`; per-CPU lists not included).
    pub fn free_pages(&self) -> u64 {
        self.buddy.lock().nr_free_pages
    }

    /// Pages handed to the allocator (`managed_pages`).
    pub fn managed_pages(&self) -> u64 {
        self.buddy.lock().managed_pages
    }

    /// `present_pages`: RAM in the span, managed or reserved (at least the managed pages).
    pub fn present_pages(&self) -> u64 {
        let z = self.buddy.lock();
        z.present_pages.max(z.managed_pages)
    }

    /// `spanned_pages`: frames from the zone's start to its end, holes included.
    pub fn spanned_pages(&self) -> u64 {
        self.span.1 - self.span.0
    }

    /// `lowmem_reserve[]`, by zone type index ([`ZoneType::index`](crate::ZoneType::index)):
    /// the pages this zone keeps back from requests whose highest allowed zone is that type.
    pub fn lowmem_reserve(&self) -> [u64; crate::types::MAX_NR_ZONES] {
        self.buddy.lock().lowmem_reserve
    }

    /// Sets `lowmem_reserve[]` (by zone type index) as a kernel had it (`/proc/zoneinfo`'s
    /// `protection:`), in place of what `setup_per_zone_lowmem_reserve` computed: the
    /// watermark checks (`__zone_watermark_ok`) add `lowmem_reserve[highest_zoneidx]` of the
    /// request ([`AllocRequest::zone_limit`](crate::AllocRequest::zone_limit)).
    pub fn set_lowmem_reserve(&self, reserve: [u64; crate::types::MAX_NR_ZONES]) {
        self.apply_lowmem_reserve(reserve);
    }

    /// Writes the `protection:` line of `/proc/zoneinfo` (`zoneinfo_show_print`:
    /// `"\n        protection: (%ld"`, `", %ld"` per further zone, `")"`), over the zone types
    /// an x86-64 kernel has (DMA, DMA32, Normal, Movable, Device: no HighMem).
    pub fn write_protection<W: fmt::Write>(&self, w: &mut W) -> fmt::Result {
        let r = self.lowmem_reserve();
        w.write_str("\n        protection: (")?;
        let mut first = true;
        for t in crate::types::ZoneType::ALL {
            if t == crate::types::ZoneType::HighMem {
                continue;
            }
            if !first {
                w.write_str(", ")?;
            }
            first = false;
            write!(w, "{}", r[t.index()])?;
        }
        w.write_str(")")
    }

    /// Current watermarks.
    pub fn watermarks(&self) -> Watermarks {
        self.buddy.lock().wmark
    }

    /// Pages reserved for HighAtomic allocations (`nr_reserved_highatomic`).
    pub fn reserved_highatomic(&self) -> u64 {
        self.buddy.lock().nr_reserved_highatomic
    }

    /// A copy of the zone's counters; `allocs` and `frees` include those the per-CPU lists
    /// served.
    pub fn stats(&self) -> ZoneStats {
        let (a, f) = self.pcp_order_counts();
        let mut s = self.buddy.lock().stats;
        for o in 0..ORDER_SLOTS {
            s.allocs[o] += a[o];
            s.frees[o] += f[o];
        }
        s
    }

    /// The migratetype of the pageblock containing `pfn`, if the zone spans it.
    pub fn pageblock_migratetype(&self, pfn: Pfn) -> Option<MigrateType> {
        if !self.spans(pfn) {
            return None;
        }
        let idx = self.table.index_of(pfn)?;
        let _z = self.buddy.lock();
        Some(self.table.settled_block_type(idx))
    }

    /// Pageblocks by migratetype ([`MigrateType::index`]), one per pageblock of `start..end`
    /// read at its first frame in the range (`start` for the first), as
    /// [`Zone::pageblock_migratetype`] reads each, frames the zone does not span uncounted:
    /// one walk under one lock, where a loop over `pageblock_migratetype` locks per block.
    pub fn pageblocks_by_type(&self, start: Pfn, end: Pfn) -> [u64; MIGRATE_TYPES] {
        let mut n = [0; MIGRATE_TYPES];
        let step = 1u64 << self.cfg.pageblock_order;
        let _z = self.buddy.lock();
        let mut pfn = start.0 & !(step - 1);
        while pfn < end.0 {
            let at = Pfn(pfn.max(start.0));
            if let Some(idx) = self.table.index_of(at).filter(|_| self.spans(at)) {
                n[self.table.settled_block_type(idx).index()] += 1;
            }
            // A zone may end within a pageblock of the top of the pfn space.
            let Some(next) = pfn.checked_add(step) else {
                break;
            };
            pfn = next;
        }
        n
    }

    /// What the frame `pfn` currently is, if the zone spans it.
    pub fn frame_state(&self, pfn: Pfn) -> Option<FrameState> {
        if !self.spans(pfn) {
            return None;
        }
        Some(self.table.state(self.table.index_of(pfn)?))
    }

    /// Free blocks per order (`free_area[order].nr_free`), the numbers of `/proc/buddyinfo`.
    pub fn nr_free(&self) -> [u64; ORDER_SLOTS] {
        let z = self.buddy.lock();
        let mut out = [0; ORDER_SLOTS];
        for (o, a) in z.free_area.iter().enumerate() {
            out[o] = a.nr_free;
        }
        out
    }

    /// The free lists' block heads for one order and migratetype, head to tail. For tests
    /// and teaching; O(list length).
    pub fn free_list(&self, order: Order, mt: MigrateType, out: &mut [Pfn]) -> usize {
        let z = self.buddy.lock();
        let mut n = 0;
        if order.get() > self.cfg.max_order {
            return 0;
        }
        for idx in z.free_area[order.index()].lists[mt.index()].iter(&self.table) {
            if n == out.len() {
                break;
            }
            out[n] = self.table.pfn_of(idx);
            n += 1;
        }
        n
    }

    /// The free-area state for `/proc` text and fragmentation indices, taken under the lock.
    pub fn snapshot(&self, node: u32) -> FreeAreaSnapshot {
        let z = self.buddy.lock();
        let t = &self.table;
        let mut s = FreeAreaSnapshot {
            node,
            zone_name: self.zone_type.name(),
            max_order: self.cfg.max_order,
            pageblock_order: self.cfg.pageblock_order,
            nr_free: [0; ORDER_SLOTS],
            free_by_type: [[0; ORDER_SLOTS]; MIGRATE_TYPES],
            pageblocks_by_type: [0; MIGRATE_TYPES],
        };
        for o in 0..=self.cfg.max_order as usize {
            s.nr_free[o] = z.free_area[o].nr_free;
            for mt in 0..MIGRATE_TYPES {
                s.free_by_type[mt][o] =
                    z.free_area[o].lists[mt].iter(t).take(100_000).count() as u64;
            }
        }
        // pagetypeinfo_showblockcount_print: step from zone_start_pfn by pageblock_nr_pages.
        let step = 1u64 << self.cfg.pageblock_order;
        let mut pfn = self.span.0;
        while pfn < self.span.1 {
            if let Some(i) = t.index_of(Pfn(pfn)) {
                s.pageblocks_by_type[t.settled_block_type(i).index()] += 1;
            }
            // A zone may end within a pageblock of the top of the pfn space.
            let Some(next) = pfn.checked_add(step) else {
                break;
            };
            pfn = next;
        }
        s
    }

    /// With the `debug-invariants` feature, runs [`Zone::check`] and panics, naming `op`, on a
    /// violation (lists held by a live owner-only handle, P0, are not a violation); without
    /// it, nothing. Public operations call it as they return, once every lock is released.
    /// Meant for single-threaded tests: another thread mid-operation looks inconsistent.
    #[inline(always)]
    pub(crate) fn debug_check(&self, op: &'static str) {
        #[cfg(feature = "debug-invariants")]
        if let Err(e) = self.check() {
            if e.invariant != "P0" {
                panic!("zonealloc: invariant violated after {op}: {e}");
            }
        }
        #[cfg(not(feature = "debug-invariants"))]
        let _ = op;
    }

    /// Checks the invariants: Z1..Z9 of the buddy, P1..P3 of every CPU's lists, and G1,
    /// global conservation (free + per-CPU + allocated = managed, each frame in exactly one
    /// place). Locks every per-CPU list, then the zone; O(frames). Under owner-only locking,
    /// call it when no [`CpuHandle`](crate::CpuHandle) is alive.
    pub fn check(&self) -> Result<CheckFacts, CheckError> {
        let on_lists = self.check_pcps()?;
        let z = self.buddy.lock();
        let facts = z.check(&self.table)?;
        if facts.pcp_pages != on_lists {
            return Err(crate::check::check_fail(
                "G1",
                None,
                "frames marked as on a per-CPU list differ from the pages on the lists",
            ));
        }
        Ok(facts)
    }
}

#[cfg(feature = "std")]
impl<P: Platform> Zone<P> {
    /// Switches recording of the buddy-side tracepoints on or off ([`ZoneEvent`](crate::ZoneEvent)). Switching
    /// it off drops the events not yet taken. The zone lock this takes is not counted in
    /// [`ZoneStats::zone_lock_acquisitions`]: recording changes no statistic.
    pub fn record_events(&self, on: bool) {
        self.lock_uncounted().events.set_recording(on);
    }

    /// Moves the events recorded so far, oldest first, to the end of `out`. With none waiting
    /// (as each release of the zone lock publishes) it takes no lock; the lock it takes
    /// otherwise is not counted in [`ZoneStats::zone_lock_acquisitions`].
    pub fn take_events(&self, out: &mut std::vec::Vec<crate::tracepoint::ZoneEvent>) {
        if !self.shared.events_pending.load(Ordering::Relaxed) {
            return;
        }
        self.lock_uncounted().events.take_into(out);
    }
}
