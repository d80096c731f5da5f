//! The replay's frees: a traced free (whole, partial or of a frame the trace never showed
//! allocated), the untraced allocation inferred for it, and the free of our own block.

use std::io;

use zonealloc::{AllocError, AllocRequest, CpuId, MigrateType, Order, PcpTuning, Pfn};

use super::Replayer;
use crate::trace::parse::{Event, EventKind, PagePtr, Who};
use crate::trace::replay::frames::Live;
use crate::trace::replay::infer::kernel::{Inferred, Untraced};

/// A traced `mm_page_free` not replayed yet. `free_pages_prepare` prints it, and the page
/// goes on the lists at the commit (`free_unref_page_commit` in 6.1,
/// `free_frozen_page_commit` in 7.2): at once on the single-page path, but on the batched
/// one (`free_unref_page_list`, `free_unref_folios`) only after every page of the batch was
/// prepared, each commit printing `mm_page_free_batched`. So a free is replayed at its
/// `mm_page_free_batched`, or at the next other event on its CPU (drains aside: the commits
/// drain mid-batch).
#[derive(Clone, Copy, Debug)]
pub(super) struct Deferred {
    pub(super) ts_ns: Option<u64>,
    pub(super) cpu: Option<u32>,
    pub(super) page: PagePtr,
    /// The freeing task ([`super::contig_free`] reads runs of one task).
    pub(super) who: Who,
    pub(super) pfn: u64,
    pub(super) order: u8,
    pub(super) inferred: Inferred,
    /// It found its CPU's lists held by a refill it interrupted ([`super::held`]).
    pub(super) held: bool,
}

impl Replayer {
    /// The untraced allocation [`Inferred::UntracedAlloc`] infers, on the CPU that refilled
    /// the page: our page for the free that follows.
    fn untraced_alloc(
        &mut self,
        ev: &Event<'_>,
        z: usize,
        inferred: Inferred,
    ) -> io::Result<Option<Live>> {
        let Inferred::UntracedAlloc {
            cpu,
            migratetype,
            freed_again,
        } = inferred
        else {
            return Ok(None);
        };
        let mt = self.gfp_type(migratetype).unwrap_or(MigrateType::Unmovable);
        let cpu = cpu % self.geo.cpus;
        // The kernel took a page its list held (`KernelSide::freed_again`): no refill. Ours
        // holding none of that type there is out of step, and a refill would put it further
        // out: the free is then one of a page in use, as before the inference.
        if freed_again && !self.zones[z].pcp_list_holds(CpuId(cpu), mt, Order::ZERO) {
            return Ok(None);
        }
        // The CPU's pending drain before its lists are used ([`super::lock_order`]).
        if self.lock.any_pending() {
            self.flush_pending(cpu, ev.ts_ns)?;
        }
        let got = self.bulk_take(z, cpu, mt);
        self.flush_zone_events(ev, z, cpu)?;
        if let Ok(p) = got {
            // Ours is a traced allocation: `--emit` writes it, on the refilling CPU.
            let on = Event {
                cpu: Some(cpu),
                ..ev.clone()
            };
            self.emit_event(&on, (PagePtr::Present, p.0), |pfn| EventKind::Alloc {
                pfn,
                order: 0,
                migratetype: mt.index() as u8,
                gfp_flags: "GFP_KERNEL",
            })?;
        }
        Ok(got.ok().map(|p| Live {
            ours: p.0,
            order: 0,
            zone: z as u8,
            freed: 0,
        }))
    }

    /// Allocations the trace shows were taken untraced from CPUs' lists
    /// (`KernelSide::untraced_now`: `alloc_pages_bulk`),
    /// replayed now on the CPU whose list held each; their later frees free our pages.
    pub fn untraced_allocs(&mut self, ev: &Event<'_>, pages: &[Untraced]) -> io::Result<()> {
        for &Untraced {
            pfn,
            cpu,
            migratetype,
            bulk_refill,
            freed,
            unbound,
        } in pages
        {
            let Some(z) = self.geo.zone_of(pfn) else {
                continue;
            };
            if unbound {
                self.unbound_take(ev, z, cpu, migratetype)?;
                continue;
            }
            // A page freed before the take was read: taken now only while we hold its free.
            if self.frames.is_live(pfn) || (freed && self.frames.deferred_at(pfn).is_none()) {
                continue;
            }
            if bulk_refill {
                self.empty_list(ev, z, cpu, migratetype)?;
            }
            let inferred = Inferred::UntracedAlloc {
                cpu,
                migratetype,
                freed_again: false,
            };
            if let Some(l) = self.untraced_alloc(ev, z, inferred)? {
                self.counts.untraced_allocs += 1;
                self.frames.set_live(pfn, l);
            }
        }
        Ok(())
    }

    /// A take of an order-0 page of `migratetype` (the trace's numbering) off CPU `cpu`'s
    /// list in zone `z` that stays in use, bound to no traced frame
    /// (`Untraced::unbound`): only while ours holds a page of that type there, as for a page
    /// freed again ([`Inferred::UntracedAlloc`]'s `freed_again`): a refill would put ours
    /// further out.
    fn unbound_take(
        &mut self,
        ev: &Event<'_>,
        z: usize,
        cpu: u32,
        migratetype: u8,
    ) -> io::Result<()> {
        let cpu = cpu % self.geo.cpus;
        let Some(mt) = self.gfp_type(migratetype) else {
            return Ok(());
        };
        if !self.zones[z].pcp_list_holds(CpuId(cpu), mt, Order::ZERO) {
            return Ok(());
        }
        // The CPU's pending drain before its lists are used, as for any untraced take.
        if self.lock.any_pending() {
            self.flush_pending(cpu, ev.ts_ns)?;
        }
        if self.bulk_take(z, cpu, mt).is_ok() {
            self.counts.untraced_allocs += 1;
        }
        self.flush_zone_events(ev, z, cpu)
    }

    /// One order-0 page of `mt` taken off CPU `cpu`'s list in zone `z` (refilled first if
    /// empty) as `alloc_pages_bulk` takes it: through `__rmqueue_pcplist`, not
    /// `rmqueue_pcplist`, so the CPU's `free_count` (6.7 on; `free_factor` before) is not
    /// halved as a traced allocation's halves it (`alloc_pages_bulk_noprof` in 6.12 and 7.2,
    /// `__alloc_pages_bulk` in 6.1). Halved at each take, it shrank the next free-path drain
    /// (`nr_pcp_free`) and the `high` it lowers by (`nr_pcp_high`), and could end the
    /// `free_high` streak (`free_count >= batch`).
    fn bulk_take(&self, z: usize, cpu: u32, mt: MigrateType) -> Result<Pfn, AllocError> {
        let zone = &self.zones[z];
        // Read without walking the lists (`pcp_info` counts them: 3% of a replay's
        // instructions at a thousand takes).
        let free_count = zone.pcp_tuning(CpuId(cpu)).and_then(|t| t.free_count);
        let got = zone.alloc_with(Order::ZERO, AllocRequest::new(mt).on_cpu(CpuId(cpu)));
        let kept = PcpTuning {
            free_count,
            ..PcpTuning::default()
        };
        zone.set_pcp_tuning(CpuId(cpu), kept);
        got
    }

    /// The list type (a GFP migratetype) the trace's `migratetype` names in its numbering,
    /// `None` for the types no allocation asks for (HighAtomic, CMA, Isolate).
    #[inline]
    pub(super) fn gfp_type(&self, migratetype: u8) -> Option<MigrateType> {
        MigrateType::from_index(usize::from(self.geo.numbering.to_current(migratetype)))
            .filter(|m| m.is_gfp_type())
    }

    /// Takes, untraced, every order-0 page CPU `cpu`'s list of `migratetype` (the trace's
    /// numbering) holds in zone `z`: the kernel's `alloc_pages_bulk` took its list's pages
    /// before the refill it made (`KernelSide::bulk_refill`), which only an empty list gets.
    /// They stay allocated: the trace does not say which of its pages ours are.
    fn empty_list(
        &mut self,
        ev: &Event<'_>,
        z: usize,
        cpu: u32,
        migratetype: u8,
    ) -> io::Result<()> {
        let cpu = cpu % self.geo.cpus;
        let Some(mt) = self.gfp_type(migratetype) else {
            return Ok(());
        };
        if self.lock.any_pending() {
            self.flush_pending(cpu, ev.ts_ns)?;
        }
        // Order 0's lists come first, one per migratetype (`order_to_pindex`).
        let held = self.zones[z].pcp_info(CpuId(cpu)).list_pages[mt.index()];
        for _ in 0..held {
            if self.bulk_take(z, cpu, mt).is_err() {
                break;
            }
            self.counts.untraced_allocs += 1;
        }
        self.flush_zone_events(ev, z, cpu)
    }

    /// A traced free of `order` pages at traced frame `pfn`.
    pub(super) fn free_traced(
        &mut self,
        ev: &Event<'_>,
        cpu: u32,
        pfn: u64,
        order: u8,
        inferred: Inferred,
    ) -> io::Result<()> {
        let pages = 1u64 << order.min(63);
        if let Some(l) = self.frames.live(pfn) {
            if order >= l.order && l.freed == 0 {
                self.counts.order_mismatches += u64::from(order > l.order);
                self.frames.clear_live(pfn);
                return self.free_ours(ev, cpu, l);
            }
            return self.partial(ev, cpu, pfn, pages);
        }
        // A page inside a live traced block: the head is `pfn` aligned down to the block.
        for k in 1..=self.zones[0].max_order().get() {
            let head = pfn & !((1u64 << k) - 1);
            if let Some(l) = self.frames.live(head) {
                if l.order >= k && pfn.saturating_add(pages) <= head + (1u64 << l.order) {
                    return self.partial(ev, cpu, head, pages);
                }
            }
        }
        if self.frames.set_failed(pfn, false) {
            self.counts.frees_of_failed += 1;
            return Ok(());
        }
        self.counts.frees_before_trace += 1;
        let Some(z) = self.geo.zone_of(pfn) else {
            return Ok(());
        };
        // `frees` counts traced frees of traced allocations; these are counted above.
        let frees = self.counts.frees;
        // A page some untraced allocation took off a CPU's lists ([`kernel`]).
        if order == 0 {
            if let Some(l) = self.untraced_alloc(ev, z, inferred)? {
                self.counts.untraced_allocs += 1;
                self.free_ours(ev, cpu, l)?;
                self.counts.frees = frees;
                return Ok(());
            }
        }
        // With a /proc snapshot, a page in use before the trace is one of the pool's.
        let Some(pool) = self.pools.get_mut(z) else {
            return Ok(());
        };
        // From pageblocks of the type the trace names for the kernel's page, so that the
        // free goes to the list the kernel's did (`free_frozen_pages` picks the list by the
        // pageblock's migratetype; a HighAtomic one frees to Movable).
        let mt = match inferred {
            Inferred::FreeOfType { migratetype }
            | Inferred::UntracedAlloc {
                migratetype,
                freed_again: true,
                ..
            } => Some(usize::from(self.geo.numbering.to_current(migratetype))),
            _ => None,
        };
        let pages = pool.take_at(pfn, pages, mt);
        if !pages.is_empty() {
            self.counts.frees_from_snapshot += 1;
        }
        // The kernel's own block (the layout's pfns), or pages of ours that make one aligned
        // block (`Pool::take_at`'s block of the type the trace names, or pages without a
        // layout that happen to): one free of its order, as the kernel's
        // (free_unref_page_commit reads the order: its list, and 6.1's free_high).
        let first = pages.first().copied().unwrap_or(pfn);
        if order > 0 && order < 64 && pages.iter().copied().eq(first..first + (1u64 << order)) {
            let joined = Order::new(order)
                .is_some_and(|o| self.zones[z].join_allocated(Pfn(first), o).is_ok());
            if joined {
                let l = Live {
                    ours: first,
                    order,
                    zone: z as u8,
                    freed: 0,
                };
                self.free_ours(ev, cpu, l)?;
                self.counts.frees = frees;
                return Ok(());
            }
        }
        for ours in pages {
            let l = Live {
                ours,
                order: 0,
                zone: z as u8,
                freed: 0,
            };
            self.free_ours(ev, cpu, l)?;
        }
        self.counts.frees = frees;
        Ok(())
    }

    fn partial(&mut self, ev: &Event<'_>, cpu: u32, head: u64, pages: u64) -> io::Result<()> {
        self.counts.partial_frees += 1;
        let Some(mut l) = self.frames.live(head) else {
            return Ok(());
        };
        l.freed += pages;
        if l.freed >= 1u64 << l.order {
            self.frames.clear_live(head);
            self.free_ours(ev, cpu, l)?;
        } else {
            self.frames.set_live(head, l);
        }
        Ok(())
    }

    pub(super) fn free_ours(&mut self, ev: &Event<'_>, cpu: u32, l: Live) -> io::Result<()> {
        let (ours, order) = (l.ours, l.order);
        self.emit_event(ev, (PagePtr::Present, ours), |pfn| EventKind::Free {
            pfn,
            order,
        })?;
        let ord = Order::new(order)
            .ok_or_else(|| io::Error::other(format!("order {order} out of range")))?;
        let z = usize::from(l.zone);
        self.put_ours(cpu, z, ours, ord)?;
        self.counts.frees += 1;
        self.flush_zone_events(ev, z, cpu)
    }

    /// Frees our block at `ours` of `ord` in zone `z` from `cpu` (to the buddy where the free
    /// found the CPU's lists held); the caller counts it and flushes the zone's events.
    pub(super) fn put_ours(&mut self, cpu: u32, z: usize, ours: u64, ord: Order) -> io::Result<()> {
        let freed = if self.lists_held {
            // `__free_frozen_pages`' trylock failed: `free_one_page`.
            self.zones[z].free_while_lists_held(Pfn(ours), ord)
        } else if self.lock_order {
            // The drain at its traced lines ([`super::lock_order`]), the CPU's pending one
            // applied first.
            if self.lock.any_pending() {
                self.flush_pending(cpu, None)?;
            }
            self.free_pending(cpu, z, ours, ord)
        } else {
            self.zones[z].free_on(CpuId(cpu), Pfn(ours), ord)
        };
        freed.map_err(|e| {
            io::Error::other(format!(
                "variant '{}': freeing our own block {ours:#x} order {} failed: {e}",
                self.variant.name,
                ord.get()
            ))
        })
    }

    /// Commits `cpu`'s deferred frees, in the order they were traced.
    pub(super) fn flush_deferred(&mut self, cpu: u32) -> io::Result<()> {
        let batching = self
            .batching
            .get_mut(cpu as usize)
            .is_some_and(std::mem::take);
        let Some(list) = self.deferred.get_mut(cpu as usize) else {
            return Ok(());
        };
        if list.is_empty() {
            return Ok(());
        }
        // Taken for the loop (a commit borrows the replayer) and put back empty, so the list
        // keeps its buffer: a batch's frees allocated a new one every flush before.
        let mut list = std::mem::take(list);
        if batching {
            // What a batch's commits left: no contiguous range's.
            for d in list.drain(..) {
                self.frames.set_deferred_at(d.pfn, None);
                self.commit_deferred(cpu, d)?;
            }
        } else {
            self.commit_frees(cpu, &list)?;
            list.clear();
        }
        self.deferred[cpu as usize] = list;
        Ok(())
    }

    /// Replays one deferred free, at its own time.
    pub(super) fn commit_deferred(&mut self, cpu: u32, d: Deferred) -> io::Result<()> {
        let e = Event {
            cpu: d.cpu,
            ts_ns: d.ts_ns,
            page: d.page,
            who: Who::UNKNOWN,
            kind: EventKind::Free {
                pfn: d.pfn,
                order: d.order,
            },
        };
        self.lists_held = d.held;
        let done = self.free_traced(&e, cpu, d.pfn, d.order, d.inferred);
        self.lists_held = false;
        done
    }
}
