//! The PCP hit paths in one function each: an allocation from a non-empty list and a free that
//! cannot trigger a drain, for every order the per-CPU lists hold (0..=3 and the THP order). They do exactly what the full paths
//! (`get_page_from_freelist` → `rmqueue_pcplist`, `free_frozen_page_commit`) would do in
//! those cases, and hand everything else (an empty list, a list about to reach `high`, a zone
//! below its high watermark or under reclaim, pending parameters or drain requests, and any
//! input that is not a plain valid free) to the full paths untouched: when a fast path
//! returns "not taken", it has changed nothing, so the full path sees the same state.
//!
//! Bad input is never reported here. A free that fails any check (the frame table's bounds,
//! the state of the frame) falls through to the full path, which re-validates and returns the
//! typed error.
//!
//! The one difference from the kernel: a busy lock seen here is tried once more by the full
//! path before it falls back to the buddy, where the kernel tries once. Only the second
//! failure is counted.
//!
//! # Cost
//! About 50 instructions for an allocation and 70 for a free, 119 for a pair through a
//! [`CpuHandle`](crate::CpuHandle) (`crates/zonealloc-icount` checks the pair against a
//! budget on every `cargo test`). Each pays the lock (a compare-and-swap and a release store),
//! one byte of zone flags and one `attention` word instead of the several reads the full path
//! makes, and the list and counter updates the kernel makes; the allocation adds a
//! precomputed order-0 watermark test, the free the double-free compare-and-swap. The
//! allocation touches the zone's mirror, the CPU's slot and the frame's entry; the free the
//! same (the entry carries its pageblock's type) plus the entry of the list's previous head,
//! whose `prev` link it sets.

use super::Zone;
use crate::meta::{FrameMeta, FrameState};
use crate::pcp::{PcpFlags, PcpSlot, PerCpuPages, NR_LOWORDER_PCP_LISTS, THP_ORDER_SLOT};
use crate::platform::Platform;
use crate::shared::ZoneBits;
use crate::sync::Ordering;
use crate::types::{MigrateType, Order, Pfn, ZoneType, MIGRATE_PCPTYPES};

impl<P: Platform> Zone<P> {
    /// The list index (`order_to_pindex`) and the per-order counter slot of a PCP `order`, or
    /// `None` for an order the per-CPU lists do not hold (`pcp_allowed_order`). `mt` must be
    /// a PCP type.
    #[inline(always)]
    fn pcp_list_of(&self, order: u8, mt: MigrateType) -> Option<(usize, usize)> {
        if order <= Order::COSTLY.get() {
            Some((
                MIGRATE_PCPTYPES * order as usize + mt.index(),
                order as usize,
            ))
        } else if self.pcp.policy.thp_order == Some(order) {
            let pi = NR_LOWORDER_PCP_LISTS + (mt == MigrateType::Movable) as usize;
            Some((pi, THP_ORDER_SLOT))
        } else {
            None
        }
    }

    /// A PCP-hit allocation from `slot` (locked here, or already held by its owner), or `None`
    /// to take the full path.
    #[inline(always)]
    pub(crate) fn pcp_alloc_fast(
        &self,
        order: u8,
        mt: MigrateType,
        highest_zone: ZoneType,
        slot: &PcpSlot,
        held: Option<&mut PerCpuPages>,
    ) -> Option<Pfn> {
        let sh = &self.shared;
        // Zone flags, mobility grouping off (which rewrites the migratetype) or no per-CPU
        // lists: full path.
        if !mt.is_gfp_type() || sh.flags.load(Ordering::Relaxed) != 0 {
            return None;
        }
        // get_page_from_freelist with ZONE_BELOW_HIGH clear: zone_watermark_fast at the high
        // mark with ALLOC_WMARK_LOW's flags (no reserves).
        let hz = highest_zone.index();
        if order == 0 {
            // Order 0 gets its own copy of the pop, with the order a constant.
            if !sh.order0_above_high(hz) {
                return None;
            }
            return self.pcp_pop_at(slot, held, 0, mt.index(), 0, mt);
        }
        let (pi, os) = self.pcp_list_of(order, mt)?;
        if !sh.above_high_fast(Order::from_raw(order), hz) {
            return None;
        }
        self.pcp_pop_at(slot, held, order, pi, os, mt)
    }

    /// Locks `slot`'s lists (unless its owner holds them) and pops.
    #[inline(always)]
    fn pcp_pop_at(
        &self,
        slot: &PcpSlot,
        held: Option<&mut PerCpuPages>,
        order: u8,
        pi: usize,
        os: usize,
        mt: MigrateType,
    ) -> Option<Pfn> {
        match held {
            Some(pcp) => self.pcp_pop(slot, pcp, order, pi, os, mt),
            None => {
                let mut g = slot.lists.try_lock()?;
                self.pcp_pop(slot, &mut g, order, pi, os, mt)
            }
        }
    }

    /// `rmqueue_pcplist` → `__rmqueue_pcplist` on a locked, non-empty list `pi`; `os` is the
    /// order's counter slot.
    #[inline(always)]
    fn pcp_pop(
        &self,
        slot: &PcpSlot,
        pcp: &mut PerCpuPages,
        order: u8,
        pi: usize,
        os: usize,
        mt: MigrateType,
    ) -> Option<Pfn> {
        if !slot.quiet(pcp) {
            return None; // new parameters or a drain request: `enter` first
        }
        let t = &self.table;
        let m = t.entries();
        let idx = pcp.lists.get_mut(pi)?.pop_head_in(m)?;
        let count = pcp.count - (1 << order);
        pcp.count = count;
        m[idx as usize].set_state(FrameState::Allocated(Order::from_raw(order), mt));
        pcp.free_count >>= 1; // an allocation halves the free streak
        pcp.stats.alloc_hits += 1;
        if let Some(a) = pcp.allocs.get_mut(os) {
            *a += 1;
        }
        slot.count_hint.store(count as u32, Ordering::Relaxed);
        Some(Pfn(t.base() + idx as u64))
    }

    /// A free onto `slot`'s lists that cannot drain. Returns `false`, having changed nothing,
    /// when the full path must take it (including every kind of bad input, which the full
    /// path reports).
    #[inline(always)]
    pub(crate) fn pcp_free_fast(
        &self,
        pfn: Pfn,
        order: Order,
        slot: &PcpSlot,
        held: Option<&mut PerCpuPages>,
    ) -> bool {
        if self.shared.flags.load(Ordering::Relaxed) & ZoneBits::PCP_FREE_OFF.bits() != 0 {
            return false;
        }
        // validate_free, reduced to "the table covers the frame": the frames the table covers
        // outside the span are `Absent`, and only the aligned head of an allocated block of
        // `order` is `Allocated(order, _)`, so the claim below rejects every other frame and
        // the full path reports it.
        let t = &self.table;
        let m = t.entries();
        let off = pfn.0.wrapping_sub(t.base());
        if off >= m.len() as u64 {
            return false;
        }
        let idx = off as u32;
        let e = &m[off as usize];
        // The pageblock type (every frame carries it), read before the lock as
        // `__free_frozen_pages` reads it.
        let Some(mt) = e.block_pcp_type() else {
            return false; // HighAtomic rides the Movable list, Isolate skips the lists
        };
        let o = order.get();
        if o == 0 {
            return match held {
                Some(pcp) => self.pcp_push(slot, pcp, m, idx, e, mt),
                None => match slot.lists.try_lock() {
                    Some(mut g) => self.pcp_push(slot, &mut g, m, idx, e, mt),
                    None => false,
                },
            };
        }
        // An order the lists do not hold goes to the buddy (`free_one_page`): full path.
        let Some((pi, os)) = self.pcp_list_of(o, mt) else {
            return false;
        };
        match held {
            Some(pcp) => self.pcp_push_high(slot, pcp, m, idx, e, o, pi, os),
            None => match slot.lists.try_lock() {
                Some(mut g) => self.pcp_push_high(slot, &mut g, m, idx, e, o, pi, os),
                None => false,
            },
        }
    }

    /// `free_frozen_page_commit` for order 0 when the list stays below `high`.
    #[inline(always)]
    fn pcp_push(
        &self,
        slot: &PcpSlot,
        pcp: &mut PerCpuPages,
        m: &[FrameMeta],
        idx: u32,
        e: &FrameMeta,
        mt: MigrateType,
    ) -> bool {
        if !slot.quiet(pcp) {
            return false; // new parameters or a drain request: `enter` first
        }
        // nr_pcp_high would return `high` unchanged and the list stays below it: no drain.
        let (high, count) = (pcp.high, pcp.count + 1);
        if high < pcp.high_min || high > pcp.high_max || count >= high {
            return false;
        }
        // The double-free check: `Allocated(0, _)` → `Pcp(0)` in one compare-and-swap, so
        // exactly one of two racing frees wins. Any other state is bad input: the full path
        // classifies it.
        if !e.try_claim_allocated(Order::ZERO, FrameState::Pcp(Order::ZERO)) {
            return false;
        }
        // A free halves the refill scale; order_to_pindex(mt, 0) is `mt`.
        pcp.alloc_factor >>= 1;
        pcp.lists[mt.index()].push_head_entry(m, idx, e);
        pcp.count = count;
        pcp.frees_by_order[0] += 1; // `PcpStats::frees` is their sum
                                    // note_free for order 0: never free_high, and it ends a run of high-order frees.
        pcp.flags.remove(PcpFlags::PREV_FREE_HIGH_ORDER);
        if pcp.free_count < pcp.free_count_max {
            pcp.free_count += 1;
        }
        slot.count_hint.store(count as u32, Ordering::Relaxed);
        true
    }

    /// `free_frozen_page_commit` for a PCP order above 0 (list `pi`, counter slot `os`) when
    /// the free is not a `free_high` one and the list stays below `high`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn pcp_push_high(
        &self,
        slot: &PcpSlot,
        pcp: &mut PerCpuPages,
        m: &[FrameMeta],
        idx: u32,
        e: &FrameMeta,
        order: u8,
        pi: usize,
        os: usize,
    ) -> bool {
        if !slot.quiet(pcp) {
            return false; // new parameters or a drain request: `enter` first
        }
        // nr_pcp_high with ZONE_RECLAIM_ACTIVE and ZONE_BELOW_HIGH clear and no free_high
        // returns `high` unchanged when `high` is within its bounds and the list stays below
        // it: no drain.
        let (high, count) = (pcp.high, pcp.count + (1 << order));
        if high < pcp.high_min || high > pcp.high_max || count >= high {
            return false;
        }
        // note_free, run on the state the full path gives it (the block counted): if it
        // decides free_high (orders 1..=3), nr_pcp_high would drain, so undo and step aside.
        let (flags, free_count, old_count) = (pcp.flags, pcp.free_count, pcp.count);
        pcp.count = count;
        let policy = self.pcp.policy;
        if pcp.note_free(Order::from_raw(order), &policy)
            || !e.try_claim_allocated(
                Order::from_raw(order),
                FrameState::Pcp(Order::from_raw(order)),
            )
        {
            // free_high, or bad input for the full path to classify: put everything back.
            pcp.count = old_count;
            pcp.flags = flags;
            pcp.free_count = free_count;
            return false;
        }
        // The rest of put_head: a free halves the refill scale.
        pcp.alloc_factor >>= 1;
        pcp.lists[pi].push_head_entry(m, idx, e);
        if let Some(f) = pcp.frees_by_order.get_mut(os) {
            *f += 1; // `PcpStats::frees` is their sum
        }
        slot.count_hint.store(count as u32, Ordering::Relaxed);
        true
    }
}

/// The fused hit paths against the full paths: the same operations on two identical zones,
/// one through the public entry points (which take the hit paths), the other straight through
/// the full paths (`alloc_in_zone`, `free_with`), must give the same results, the same frame
/// states and the same per-CPU state, list order included, at every PCP order.
#[cfg(all(test, feature = "std", not(loom)))]
mod tests {
    use super::*;
    use crate::config::ZoneConfig;
    use crate::error::{AllocError, FreeError};
    use crate::meta::NIL;
    use crate::pcp::PcpAccess;
    use crate::request::AllocRequest;
    use crate::types::CpuId;
    use crate::PcpConfig;
    use std::vec::Vec;

    const FRAMES: u64 = 1 << 14;
    const ORDERS: [u8; 5] = [0, 1, 2, 3, 9];
    const MTS: [MigrateType; 3] = [
        MigrateType::Movable,
        MigrateType::Unmovable,
        MigrateType::Reclaimable,
    ];

    fn zone(cfg: ZoneConfig) -> Zone {
        let z = Zone::new(ZoneType::Normal, Pfn(0), Pfn(FRAMES), cfg).unwrap();
        z.add_free_range(Pfn(0), Pfn(FRAMES)).unwrap();
        z
    }

    /// Small lists, so that frees drain and allocations refill often: the hit paths must step
    /// aside exactly where the full paths would do more.
    fn small_lists() -> ZoneConfig {
        ZoneConfig {
            pcp: PcpConfig {
                batch: Some(4),
                high_min: Some(16),
                high_max: Some(1200),
                ..PcpConfig::new().with_cpus(2)
            },
            ..ZoneConfig::without_watermarks()
        }
    }

    /// Everything the per-CPU lists of `cpu` hold, as comparable values. A handle's slow path
    /// drains its own lists in place (counted as local) where the reference zone's drains
    /// them as another CPU's (remote): the sum is compared.
    fn pcp_state(z: &Zone, cpu: usize) -> std::string::String {
        let p = z.pcp.slot(cpu).lists.lock();
        let mut stats = p.stats;
        stats.drain_local_pages += core::mem::take(&mut stats.drain_remote_pages);
        let m = z.table.entries();
        let lists: Vec<Vec<u32>> = p
            .lists
            .iter()
            .map(|l| {
                let mut v = Vec::new();
                let mut i = l.first().unwrap_or(NIL);
                while i != NIL && v.len() <= FRAMES as usize {
                    v.push(i);
                    i = m[i as usize].next();
                }
                v
            })
            .collect();
        std::format!(
            "count {} high {} flags {:?} alloc_factor {} free_count {} stats {:?} allocs {:?} \
             frees {:?} lists {:?}",
            p.count,
            p.high,
            p.flags,
            p.alloc_factor,
            p.free_count,
            stats,
            p.allocs,
            p.frees_by_order,
            lists
        )
    }

    fn frame_states(z: &Zone) -> Vec<FrameState> {
        (0..FRAMES).map(|i| z.table.state(i as u32)).collect()
    }

    /// Runs a random mix of allocations and frees (good and bad) at every PCP order on both
    /// zones; `fast` does an operation through the entry points, the reference zone through
    /// the full paths.
    fn run_both(
        cfg: ZoneConfig,
        seed: u64,
        steps: usize,
        mut fast_alloc: impl FnMut(&Zone, Order, AllocRequest) -> Result<Pfn, AllocError>,
        mut fast_free: impl FnMut(&Zone, Pfn, Order) -> Result<(), FreeError>,
        fast: &Zone,
    ) {
        let full = zone(cfg);
        let mut live: Vec<(Pfn, Order)> = Vec::new();
        let mut x = seed;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for step in 0..steps {
            let r = rnd();
            if live.is_empty() || r % 100 < 55 {
                let order = Order::from_raw(ORDERS[(r >> 8) as usize % ORDERS.len()]);
                let mt = MTS[(r >> 16) as usize % MTS.len()];
                let req = AllocRequest::new(mt);
                let a = fast_alloc(fast, order, req);
                let b =
                    super::super::walk::alloc_in_zone(&full, order, req, &mut PcpAccess::Cpu(0));
                assert_eq!(a, b, "step {step}: alloc order {order:?} {mt:?}");
                if let Ok(p) = a {
                    live.push((p, order));
                }
            } else {
                let i = (r >> 8) as usize % live.len();
                let (pfn, order) = if r % 100 < 60 {
                    // Bad input now and then: a wrong order, a tail, a double free.
                    let (p, o) = live[i];
                    match (r >> 20) % 3 {
                        0 => (p, Order::from_raw(o.get() ^ 1)),
                        1 if o.get() > 0 => (Pfn(p.0 + 1), o),
                        _ => (p, o),
                    }
                } else {
                    live.swap_remove(i)
                };
                let a = fast_free(fast, pfn, order);
                let b = full.free_with(pfn, order, &mut PcpAccess::Cpu(0));
                assert_eq!(a, b, "step {step}: free {pfn:?} order {order:?}");
                if r % 100 < 60 && a.is_ok() {
                    live.retain(|&(p, _)| p != pfn);
                }
            }
            if step % 97 == 0 || step + 1 == steps {
                assert_eq!(pcp_state(fast, 0), pcp_state(&full, 0), "step {step}");
                assert_eq!(fast.nr_free(), full.nr_free(), "step {step}");
                assert_eq!(frame_states(fast), frame_states(&full), "step {step}");
            }
        }
        assert!(fast.check().is_ok() && full.check().is_ok());
        let s = fast.pcp_stats();
        assert!(s.alloc_hits > 0 && s.drain_high_pages > 0, "{s:?}");
    }

    #[test]
    fn zone_entry_points_match_the_full_paths_at_every_pcp_order() {
        // Every kernel preset too: their free, drain and `high` rules must leave the hit
        // paths exact (or make them step aside).
        let mut cfgs = std::vec![small_lists(), ZoneConfig::without_watermarks().with_cpus(2)];
        for v in crate::config::KernelVersion::ALL {
            for base in [small_lists(), ZoneConfig::without_watermarks().with_cpus(2)] {
                let mut cfg = base;
                v.apply(&mut cfg);
                cfgs.push(cfg);
            }
        }
        for cfg in cfgs {
            for seed in [1, 0x9e37_79b9_7f4a_7c15] {
                let z = zone(cfg);
                run_both(
                    cfg,
                    seed,
                    3000,
                    |z, o, req| z.alloc_with(o, req.on_cpu(CpuId(0))),
                    |z, p, o| z.free_on(CpuId(0), p, o),
                    &z,
                );
            }
        }
    }

    #[test]
    fn handle_matches_the_full_paths_at_every_pcp_order() {
        let cfg = small_lists();
        let z = zone(cfg);
        let h = core::cell::RefCell::new(z.cpu_handle(CpuId(0)).unwrap());
        run_both(
            cfg,
            7,
            3000,
            |_, o, req| h.borrow_mut().alloc_with(o, req),
            |_, p, o| h.borrow_mut().free(p, o),
            &z,
        );
    }

    #[test]
    fn high_order_hits_take_the_hit_paths() {
        // The equivalence above would also hold if the hit paths never ran: count the hits
        // that did not go through `enter` (every full-path operation does).
        // The zone of `crates/zonealloc-icount`, big enough for `high` to settle above two THP
        // blocks.
        let z = Zone::new(
            ZoneType::Normal,
            Pfn(0),
            Pfn(1 << 18),
            ZoneConfig::without_watermarks().with_cpus(2),
        )
        .unwrap();
        z.add_free_range(Pfn(0), Pfn(1 << 18)).unwrap();
        for order in [1u8, 2, 3, 9] {
            let o = Order::from_raw(order);
            let slot = z.pcp.slot(0);
            for _ in 0..100 {
                let req = AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0));
                let p = z.alloc_with(o, req).unwrap();
                z.free_on(CpuId(0), p, o).unwrap();
            }
            for _ in 0..10 {
                let pfn = z
                    .pcp_alloc_fast(order, MigrateType::Movable, ZoneType::Movable, slot, None)
                    .expect("alloc hit path taken");
                assert!(z.pcp_free_fast(pfn, o, slot, None), "free hit path taken");
            }
        }
    }
}
