//! The PCP hit paths in one function each: an allocation from a non-empty list and a free that
//! cannot trigger a drain, for every order the per-CPU lists hold (0..=3 and the THP order).
//! They do exactly what the full paths (`get_page_from_freelist` → `rmqueue_pcplist`,
//! `free_frozen_page_commit`) would do in those cases, and hand everything else (an empty
//! list, a list about to reach `high`, a free that may be a `free_high` one, a zone below its
//! high watermark or under reclaim, pending parameters or drain requests, and any input that
//! is not a plain valid free) to the full paths untouched: when a fast path returns "not
//! taken", it has changed nothing, so the full path sees the same state.
//!
//! Bad input is never reported here. A free that fails any check (the frame table's bounds,
//! the state of the frame) falls through to the full path, which re-validates and returns the
//! typed error.
//!
//! The one difference from the kernel: a busy lock seen here is tried once more by the full
//! path before it falls back to the buddy, where the kernel tries once. Only the second
//! failure is counted.
//!
//! # Shape
//! Each entry tests what it can before the lock, then dispatches once on the order: every arm
//! calls the same `#[inline(always)]` body with the order a literal, so that each PCP order
//! gets its own copy with its list index, counter slot, shifts and watermark word folded to
//! constants (the THP arm passes `pageblock_order`, a constant of the zone). The PCP lock is
//! taken in one place whether the caller holds the lists (an owner-only [`CpuHandle`]) or
//! not, so the copies are not doubled again.
//!
//! # Cost
//! `crates/zonealloc-icount` counts the pair in a program that calls each API from two places
//! and checks it against `budget.toml` on every `cargo test` (figures there). Each operation
//! pays the lock (a test-and-set and a release store) and one `attention` word (which also
//! answers for the zone flags: `Zone::set_zone_flag`) instead of the several reads the full
//! path makes, and the list and
//! counter updates the kernel makes; the allocation adds a precomputed watermark test, the
//! free one compare with `high` (`PerCpuPages::free_fast_high`), the double-free
//! compare-and-swap and, at orders 1..=3, one compare that rules `free_high` out
//! (`PerCpuPages::may_free_high`). The allocation touches the zone's mirror,
//! the CPU's slot and the frame's entry; the free the same (the entry carries its pageblock's
//! type) plus the entry of the list's previous head, whose `prev` link it sets.
//!
//! [`CpuHandle`]: crate::CpuHandle

use super::Zone;
use crate::meta::{FrameMeta, FrameState};
use crate::pcp::{PcpSlot, PerCpuPages, NR_LOWORDER_PCP_LISTS, THP_ORDER_SLOT};
use crate::platform::Platform;
use crate::sync::Ordering;
use crate::types::{MigrateType, Order, Pfn, ZoneType, MIGRATE_PCPTYPES};

/// `pageblock_order` with 4 KiB pages and 2 MiB huge pages (x86-64, arm64 with 4K pages):
/// the THP order the hit paths get a constant copy for.
const THP_ORDER_USUAL: Order = Order::of::<9>();

/// The list index (`order_to_pindex`) and the per-order counter slot of PCP order `order`
/// (0..=3, or the THP order above them). `mt` must be a PCP type.
#[inline(always)]
fn pcp_list_of(order: Order, mt: MigrateType) -> (usize, usize) {
    if order <= Order::COSTLY {
        (MIGRATE_PCPTYPES * order.index() + mt.index(), order.index())
    } else {
        let pi = NR_LOWORDER_PCP_LISTS + (mt == MigrateType::Movable) as usize;
        (pi, THP_ORDER_SLOT)
    }
}

impl<P: Platform> Zone<P> {
    /// A PCP-hit allocation from `slot` (locked here, or already held by its owner), or `None`
    /// to take the full path.
    #[inline(always)]
    pub(crate) fn pcp_alloc_fast(
        &self,
        order: Order,
        mt: MigrateType,
        highest_zone: ZoneType,
        slot: &PcpSlot,
        held: Option<&mut PerCpuPages>,
    ) -> Option<Pfn> {
        // Not a PCP type: full path. (Zone flags, mobility grouping off, which rewrites the
        // migratetype, and no per-CPU lists fail `PcpSlot::quiet` below: `Zone::pcp_enter`
        // keeps the lists' hit paths off while a zone flag is set.)
        if !mt.is_gfp_type() {
            return None;
        }
        let hz = highest_zone.index();
        // Owner-held lists or not: decided here once, so that each copy below knows.
        match held {
            Some(pcp) => self.pcp_alloc_orders(order, mt, hz, slot, Some(pcp)),
            None => self.pcp_alloc_orders(order, mt, hz, slot, None),
        }
    }

    /// The dispatch on the order: order 0, orders 1..=3 and the THP order get a copy each
    /// (see the module docs; the identical-looking arms are what makes the copies).
    #[allow(clippy::if_same_then_else)]
    #[inline(always)]
    fn pcp_alloc_orders(
        &self,
        order: Order,
        mt: MigrateType,
        hz: usize,
        slot: &PcpSlot,
        held: Option<&mut PerCpuPages>,
    ) -> Option<Pfn> {
        if order == Order::ZERO {
            self.pcp_alloc_order(Order::ZERO, mt, hz, slot, held)
        } else if order <= Order::COSTLY {
            self.pcp_alloc_order(order, mt, hz, slot, held)
        } else if order.get() == self.pcp.policy.thp_list_order {
            // pcp_allowed_order: above COSTLY only the THP order has lists. The usual one
            // (2 MiB of 4 KiB pages) gets its constant too.
            if order == THP_ORDER_USUAL {
                self.pcp_alloc_order(THP_ORDER_USUAL, mt, hz, slot, held)
            } else {
                self.pcp_alloc_thp_other(order, mt, hz, slot, held)
            }
        } else {
            None
        }
    }

    /// [`Zone::pcp_alloc_order`] for a THP order other than the usual one, out of line (see
    /// [`Zone::pcp_free_thp_other`]).
    #[inline(never)]
    fn pcp_alloc_thp_other(
        &self,
        order: Order,
        mt: MigrateType,
        hz: usize,
        slot: &PcpSlot,
        held: Option<&mut PerCpuPages>,
    ) -> Option<Pfn> {
        self.pcp_alloc_order(order, mt, hz, slot, held)
    }

    /// [`Zone::pcp_alloc_fast`] for one PCP order: get_page_from_freelist with
    /// ZONE_BELOW_HIGH clear (zone_watermark_fast at the high mark with ALLOC_WMARK_LOW's
    /// flags, no reserves), then `rmqueue_pcplist` → `__rmqueue_pcplist` on a non-empty list.
    #[inline(always)]
    fn pcp_alloc_order(
        &self,
        order: Order,
        mt: MigrateType,
        hz: usize,
        slot: &PcpSlot,
        held: Option<&mut PerCpuPages>,
    ) -> Option<Pfn> {
        let sh = &self.shared;
        let above_high = if order == Order::ZERO {
            sh.order0_above_high(hz)
        } else {
            sh.above_high_fast(order, hz)
        };
        if !above_high {
            return None;
        }
        let (pi, os) = pcp_list_of(order, mt);
        // The caller's lists, or this CPU's try-locked here (unlocked on return).
        let mut guard;
        let pcp: &mut PerCpuPages = match held {
            Some(pcp) => pcp,
            None => {
                guard = slot.lists.try_lock()?;
                &mut guard
            }
        };
        if !slot.quiet(pcp) {
            // New parameters, a drain request or a zone flag (`ZONE_BELOW_HIGH`,
            // `ZONE_RECLAIM_ACTIVE`, which change `nr_pcp_high`): `enter` first.
            return None;
        }
        let t = &self.table;
        let m = t.entries();
        let idx = pcp.lists[pi].pop_head_in(m)?;
        let pfn = Pfn(t.base() + idx as u64);
        let count = pcp.count - (1 << order.get());
        pcp.count = count;
        m[idx as usize].set_state(FrameState::Allocated(order, mt));
        pcp.free_count >>= 1; // an allocation halves the free streak
        slot.count_hint.store(count as u32, Ordering::Relaxed);
        // Last, so that the copies' tails differ and each stays straight-line (no jump to a
        // shared tail).
        pcp.allocs[os] += 1; // `PcpStats::alloc_hits` is their sum less `miss_allocs`
        Some(pfn)
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
        // validate_free, reduced to "the table covers the frame": the frames the table covers
        // outside the span are `Absent`, and only the aligned head of an allocated block of
        // `order` is `Allocated(order, _)`, so the claim below rejects every other frame and
        // the full path reports it.
        let m = self.table.entries();
        let off = pfn.0.wrapping_sub(self.table.base());
        if off >= m.len() as u64 {
            return false;
        }
        let (idx, e) = (off as u32, &m[off as usize]);
        // The pageblock type (every frame carries it), read before the lock as
        // `__free_frozen_pages` reads it.
        let Some(mt) = e.block_pcp_type() else {
            return false; // HighAtomic rides the Movable list, Isolate skips the lists
        };
        match held {
            Some(pcp) => self.pcp_free_orders(order, slot, Some(pcp), m, idx, e, mt),
            None => self.pcp_free_orders(order, slot, None, m, idx, e, mt),
        }
        .is_some()
    }

    /// The dispatch on the order, as for the allocation. An order the lists do not hold goes
    /// to the buddy (`free_one_page`): full path.
    #[allow(clippy::too_many_arguments, clippy::if_same_then_else)]
    #[inline(always)]
    fn pcp_free_orders(
        &self,
        order: Order,
        slot: &PcpSlot,
        held: Option<&mut PerCpuPages>,
        m: &[FrameMeta],
        idx: u32,
        e: &FrameMeta,
        mt: MigrateType,
    ) -> Option<()> {
        if order == Order::ZERO {
            self.pcp_free_order(Order::ZERO, slot, held, m, idx, e, mt)
        } else if order <= Order::COSTLY {
            self.pcp_free_order(order, slot, held, m, idx, e, mt)
        } else if order.get() == self.pcp.policy.thp_list_order {
            if order == THP_ORDER_USUAL {
                self.pcp_free_order(THP_ORDER_USUAL, slot, held, m, idx, e, mt)
            } else {
                self.pcp_free_thp_other(order, slot, held, (idx, mt))
            }
        } else {
            None
        }
    }

    /// [`Zone::pcp_free_order`] for a THP order other than the usual one, out of line: inlined
    /// beside the usual one, the two copies would share their lock and test it once more.
    #[inline(never)]
    fn pcp_free_thp_other(
        &self,
        order: Order,
        slot: &PcpSlot,
        held: Option<&mut PerCpuPages>,
        (idx, mt): (u32, MigrateType),
    ) -> Option<()> {
        let m = self.table.entries();
        self.pcp_free_order(order, slot, held, m, idx, &m[idx as usize], mt)
    }

    /// `free_frozen_page_commit` for one PCP order when the free is not a `free_high` one and
    /// the list stays below `high`; `None`, having changed nothing, otherwise.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn pcp_free_order(
        &self,
        order: Order,
        slot: &PcpSlot,
        held: Option<&mut PerCpuPages>,
        m: &[FrameMeta],
        idx: u32,
        e: &FrameMeta,
        mt: MigrateType,
    ) -> Option<()> {
        let (pi, os) = pcp_list_of(order, mt);
        let o = order;
        // The caller's lists, or this CPU's try-locked here (unlocked on return).
        let mut guard;
        let pcp: &mut PerCpuPages = match held {
            Some(pcp) => pcp,
            None => {
                guard = slot.lists.try_lock()?;
                &mut guard
            }
        };
        if !slot.quiet(pcp) {
            // New parameters, a drain request or a zone flag (`ZONE_BELOW_HIGH`,
            // `ZONE_RECLAIM_ACTIVE`, which change `nr_pcp_high`): `enter` first.
            return None;
        }
        // nr_pcp_high with ZONE_RECLAIM_ACTIVE and ZONE_BELOW_HIGH clear and no free_high
        // returns `high` unchanged when `high` is within its bounds and the list stays
        // below it: no drain. `free_fast_high` is `high` when within its bounds, else 0.
        debug_assert_eq!(
            pcp.free_fast_high,
            if (pcp.high_min..=pcp.high_max).contains(&pcp.high) {
                pcp.high
            } else {
                0
            },
            "free_fast_high out of step with high"
        );
        let count = pcp.count + (1 << order.get());
        if count >= pcp.free_fast_high {
            return None;
        }
        // note_free's free_high test, its count half (orders 1..=3): a free it may call
        // free_high makes nr_pcp_high drain, so the full path takes it.
        if pcp.may_free_high(o) {
            return None;
        }
        // The double-free check: `Allocated(order, _)` → `Pcp(order)` in one
        // compare-and-swap, so exactly one of two racing frees wins. Any other state is
        // bad input: the full path classifies it. (The block was most likely allocated as
        // its pageblock's type: the swap expects that first.)
        if !e.try_claim_allocated_as(o, mt, FrameState::Pcp(o)) {
            return None;
        }
        // The rest of put_head: a free halves the refill scale.
        pcp.alloc_factor >>= 1;
        pcp.lists[pi].push_head_entry(m, idx, e);
        pcp.count = count;
        pcp.note_free_fast(o);
        slot.count_hint.store(count as u32, Ordering::Relaxed);
        pcp.frees_by_order[os] += 1; // `PcpStats::frees` is their sum (last: as above)
        Some(())
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
             miss_allocs {} frees {:?} lists {:?}",
            p.count,
            p.high,
            p.flags,
            p.alloc_factor,
            p.free_count,
            stats,
            p.allocs,
            p.miss_allocs,
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
    fn a_zone_flag_turns_the_hit_paths_off_until_cleared() {
        // The hit paths do not read the zone flags: setting one must still stop them (its
        // bump of `attention` sends them to `enter`, which keeps them off while it is set).
        let z = zone(ZoneConfig::without_watermarks().with_cpus(2));
        let slot = z.pcp.slot(0);
        let mt = MigrateType::Movable;
        let req = AllocRequest::new(mt).on_cpu(CpuId(0));
        let p = z.alloc_with(Order::ZERO, req).unwrap(); // refills and enters
        z.free_on(CpuId(0), p, Order::ZERO).unwrap();
        let hit = |z: &Zone| {
            let a = z.pcp_alloc_fast(Order::ZERO, mt, ZoneType::Movable, slot, None);
            let f = a.map(|p| z.pcp_free_fast(p, Order::ZERO, slot, None));
            (a.is_some(), f)
        };
        assert_eq!(hit(&z), (true, Some(true)), "hit paths on before the flag");
        z.set_reclaim_active(true);
        for _ in 0..3 {
            assert_eq!(
                hit(&z),
                (false, None),
                "allocation hit path with the flag set"
            );
            let p = z.alloc_with(Order::ZERO, req).unwrap(); // full path: `enter`
            assert!(
                !z.pcp_free_fast(p, Order::ZERO, slot, None),
                "free hit path, flag set"
            );
            z.free_on(CpuId(0), p, Order::ZERO).unwrap();
        }
        z.set_reclaim_active(false);
        let p = z.alloc_with(Order::ZERO, req).unwrap(); // `enter` finds the flags clear
        z.free_on(CpuId(0), p, Order::ZERO).unwrap();
        assert_eq!(
            hit(&z),
            (true, Some(true)),
            "hit paths back on after the flag"
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
                    .pcp_alloc_fast(
                        Order::from_raw(order),
                        MigrateType::Movable,
                        ZoneType::Movable,
                        slot,
                        None,
                    )
                    .expect("alloc hit path taken");
                assert!(z.pcp_free_fast(pfn, o, slot, None), "free hit path taken");
            }
        }
    }
}
