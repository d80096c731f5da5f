//! 7.2's free of a contiguous range (`vfree` -> `free_pages_bulk` -> `__free_contig_range`):
//! the pages go to the lists as aligned blocks, not one by one.
//!
//! `__free_contig_range_common` calls `free_pages_prepare(page, 0)` on each page of the
//! range, which traces `mm_page_free ... order=0` per page (consecutive pfns, one task on one
//! CPU, and no `mm_page_free_batched` after them), and then `free_prepared_contig_range` frees
//! the prepared run as aligned blocks of the largest order that fits (`order = min(__ffs(pfn),
//! ilog2(nr_pages), MAX_PAGE_ORDER)`) with `__free_frozen_pages(page, order, FPI_PREPARED)`:
//! a block of a PCP order goes on the CPU's list as one block of that order
//! (`free_frozen_page_commit`), a larger one to the buddy. The run is cut at a memory
//! section's edge (`memdesc_section`). 6.1 and 6.12 have no such path (their `vfree` frees
//! each page with `__free_page`).
//!
//! So in the replay, with [`Replayer::contig_free`] (the 7.2 preset with the inferences), a
//! CPU's deferred frees ([`super::frees::Deferred`]) committed as single frees are read in
//! runs: two or more order-0 frees of consecutive pfns by one kworker, nothing else between
//! them on that CPU. Only a kworker's: single frees of pages a refill listed in pfn order are
//! consecutive too (7.2-2g p_idle: `kmem-phases` frees 0xbac8-0xbacb at 1145.108286, line
//! 45048, and the kernel drains them as four order-0 pages at line 45223; read as runs, the
//! window's drain events went 0.49 -> 44.65% off), and the trace shows no other mark of
//! `__free_contig_range`. The runs the captures show are `vfree`s deferred to a worker:
//! `vfree` in interrupt context hands the area to `vfree_atomic` (`delayed_vfree_work`), as
//! for an exited task's stack (`thread_stack_free_rcu`, an RCU callback). Each block of order
//! above 0 is freed as one block when ours can be: our pages for the kernel's are live order-0
//! pages, contiguous and aligned to the block in one zone (or all are pages in use at the
//! snapshot, [`Replayer::free_traced`]'s pool: the kernel's pfns, or where ours typed their
//! pageblock otherwise than the trace, an aligned block of the pool's pages of the trace's
//! type). Otherwise the pages are freed one by one, as before. 7.2-4g-2node p_idle: `kworker/0:0` frees
//! 0x104708-0x10470b at 547.033383 (lines 12295-12298); the kernel drains them as one
//! order-2 block at 550.018896 (line 43596).

use std::io;

use zonealloc::{Order, Pfn};

use super::frees::Deferred;
use super::Replayer;
use crate::trace::parse::{Event, EventKind, PagePtr, Task, Who};
use crate::trace::replay::frames::Live;
use crate::trace::replay::infer::kernel::Inferred;
use crate::trace::replay::options::ReplayOptions;
use crate::trace::replay::preset::Kernel;

/// `MAX_PAGE_ORDER` on x86-64.
const MAX_PAGE_ORDER: u8 = 10;

/// Pages per memory section on x86-64 (`SECTION_SIZE_BITS` 27: 128 MiB).
pub(crate) const SECTION_PAGES: u64 = 1 << 15;

/// Whether a replay of `kernel`'s trace reads contiguous-range frees ([`Replayer::contig_free`]):
/// 7.2 only (6.1 and 6.12 have no `__free_contig_range`), with the inferences (`infer`: the
/// runs are read off the deferred frees), unless `--no-contig-free`.
pub(crate) fn contig_free_on(kernel: Kernel, infer: bool, opts: &ReplayOptions) -> bool {
    kernel == Kernel::V7_2 && infer && !opts.no_contig_free
}

/// The aligned blocks `free_prepared_contig_range` frees `nr_pages` pages from `pfn` as:
/// (first pfn, order), in order.
pub(crate) fn contig_blocks(mut pfn: u64, mut nr_pages: u64) -> Vec<(u64, u8)> {
    let mut out = Vec::new();
    while nr_pages > 0 {
        let aligned = if pfn == 0 {
            MAX_PAGE_ORDER
        } else {
            pfn.trailing_zeros().min(u32::from(MAX_PAGE_ORDER)) as u8
        };
        let order = aligned.min(nr_pages.ilog2() as u8);
        out.push((pfn, order));
        pfn += 1 << order;
        nr_pages -= 1 << order;
    }
    out
}

/// The lengths of the runs `list` (a CPU's deferred frees, in trace order) falls into: a run
/// is one free, or order-0 frees of consecutive pfns by one task within one memory section,
/// found in the same state of the CPU's lists ([`Deferred::held`]).
pub(super) fn runs(list: &[Deferred]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < list.len() {
        let mut n = 1;
        while i + n < list.len() && continues(&list[i + n - 1], &list[i + n]) {
            n += 1;
        }
        out.push(n);
        i += n;
    }
    out
}

/// Whether free `b` extends the contiguous run that ends with free `a`.
fn continues(a: &Deferred, b: &Deferred) -> bool {
    a.order == 0
        && b.order == 0
        && a.who == b.who
        && range_freer(a.who)
        && extends_range(a.pfn, b.pfn)
        && a.cpu == b.cpu
        && a.held == b.held
}

/// Whether an order-0 free by `who` can be a page of a contiguous range: a kworker's, in
/// task context. In softirq or hardirq (a kworker's RCU callbacks run in softirq) `vfree`
/// hands the area to `vfree_atomic`, whose `delayed_vfree_work` frees it later in task
/// context (7.2 `vfree`: `if (unlikely(in_interrupt()))`). 7.2-4g-loads p_fork:
/// `kworker/1:1` frees 0x10378a-0x10378b and 0x10b6ac-0x10b6ad in softirq (`.Bs1.`,
/// 50.852887-50.852925), and the kernel hands 0x10b6ad out at 50.952533 as an order-0 page
/// off CPU 1's list, no refill between. The one reading of the replay
/// ([`Replayer::commit_frees`]), the start-count walk and the lists' walk.
pub(crate) fn range_freer(who: Who) -> bool {
    let ctx = who.ctx();
    matches!(who.task(), Task::CpuWorker | Task::Kworker) && !(ctx.softirq() || ctx.hardirq())
}

/// Whether an order-0 free of `pfn` extends a range whose last page is `last`: the next pfn,
/// within one memory section (`__free_contig_range` frees a range section by section).
pub(crate) fn extends_range(last: u64, pfn: u64) -> bool {
    pfn == last.wrapping_add(1) && !pfn.is_multiple_of(SECTION_PAGES)
}

impl Replayer {
    /// Commits `list`, `cpu`'s deferred frees, in trace order: the contiguous runs of
    /// [`runs`] as `free_prepared_contig_range` frees them, the others one by one.
    pub(super) fn commit_frees(&mut self, cpu: u32, list: &[Deferred]) -> io::Result<()> {
        if !self.contig_free {
            for &d in list {
                self.frames.set_deferred_at(d.pfn, None);
                self.commit_deferred(cpu, d)?;
            }
            return Ok(());
        }
        let mut at = 0;
        for n in runs(list) {
            let run = &list[at..at + n];
            at += n;
            for d in run {
                self.frames.set_deferred_at(d.pfn, None);
            }
            if n < 2 {
                self.commit_deferred(cpu, run[0])?;
                continue;
            }
            let mut k = 0;
            for (_, order) in contig_blocks(run[0].pfn, n as u64) {
                let block = &run[k..k + (1 << order)];
                k += 1 << order;
                if order == 0 || !self.free_block(cpu, block, order)? {
                    for d in block {
                        self.commit_deferred(cpu, *d)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Frees `block` (the traced frees of one aligned block of `order`) as one block of ours,
    /// if our pages for it make one; whether it did.
    fn free_block(&mut self, cpu: u32, block: &[Deferred], order: u8) -> io::Result<bool> {
        let head = block[0];
        let lives: Vec<Option<Live>> = block.iter().map(|d| self.frames.live(d.pfn)).collect();
        if lives.iter().all(Option::is_some) {
            let first = lives[0].map_or(0, |l| l.ours);
            let fits = first.is_multiple_of(1 << order)
                && lives.iter().enumerate().all(|(i, l)| {
                    l.is_some_and(|l| {
                        l.order == 0
                            && l.freed == 0
                            && l.zone == lives[0].map_or(0, |f| f.zone)
                            && l.ours == first + i as u64
                    })
                });
            let Some(ord) = Order::new(order).filter(|_| fits) else {
                return Ok(false);
            };
            let z = usize::from(lives[0].map_or(0, |l| l.zone));
            if self.zones[z].join_allocated(Pfn(first), ord).is_err() {
                return Ok(false);
            }
            for d in block {
                self.frames.clear_live(d.pfn);
            }
            return self.free_joined(cpu, block, first, (z, ord)).map(|()| true);
        }
        // Pages in use at the snapshot: the pool's own block, as free_traced frees it.
        let untraced = block.iter().any(|d| {
            matches!(d.inferred, Inferred::UntracedAlloc { .. })
                || self.frames.is_live(d.pfn)
                || self.frames.failed(d.pfn)
                || self.in_live_block(d.pfn)
        });
        if untraced || !self.pool_holds(head.pfn, 1 << order) {
            return Ok(false);
        }
        let e = Event {
            cpu: head.cpu,
            ts_ns: head.ts_ns,
            page: head.page,
            who: head.who,
            kind: EventKind::Free {
                pfn: head.pfn,
                order,
            },
        };
        self.lists_held = head.held;
        let (before, snapshot) = (
            self.counts.frees_before_trace,
            self.counts.frees_from_snapshot,
        );
        let done = self.free_traced(&e, cpu, head.pfn, order, head.inferred);
        self.lists_held = false;
        done?;
        // Counted per traced free line: one per page, as the kernel's trace has them.
        let more = block.len() as u64 - 1;
        if self.counts.frees_before_trace > before {
            self.counts.frees_before_trace += more;
        }
        if self.counts.frees_from_snapshot > snapshot {
            self.counts.frees_from_snapshot += more;
        }
        Ok(true)
    }

    /// Frees our joined block at `first` of `ord` in zone `z` for the traced frees `block`:
    /// `--emit` writes a free of each page, as the kernel's trace does.
    fn free_joined(
        &mut self,
        cpu: u32,
        block: &[Deferred],
        first: u64,
        (z, ord): (usize, Order),
    ) -> io::Result<()> {
        for (i, d) in block.iter().enumerate() {
            let e = Event {
                cpu: d.cpu,
                ts_ns: d.ts_ns,
                page: d.page,
                who: d.who,
                kind: EventKind::Free {
                    pfn: d.pfn,
                    order: 0,
                },
            };
            self.emit_event(&e, (PagePtr::Present, first + i as u64), |pfn| {
                EventKind::Free { pfn, order: 0 }
            })?;
        }
        self.lists_held = block[0].held;
        let freed = self.put_ours(cpu, z, first, ord);
        self.lists_held = false;
        freed?;
        self.counts.frees += block.len() as u64;
        let last = block[block.len() - 1];
        let e = Event {
            cpu: last.cpu,
            ts_ns: last.ts_ns,
            page: last.page,
            who: last.who,
            kind: EventKind::Free {
                pfn: last.pfn,
                order: 0,
            },
        };
        self.flush_zone_events(&e, z, cpu)
    }

    /// Whether traced frame `pfn` lies inside (not at the head of) a live traced block.
    fn in_live_block(&self, pfn: u64) -> bool {
        (1..=self.zones[0].max_order().get()).any(|k| {
            let head = pfn & !((1u64 << k) - 1);
            head != pfn && self.frames.live(head).is_some_and(|l| l.order >= k)
        })
    }

    /// Whether the `/proc` pool of `pfn`'s zone holds the `pages` pages from `pfn` in use.
    fn pool_holds(&self, pfn: u64, pages: u64) -> bool {
        let Some(z) = self.geo.zone_of(pfn) else {
            return false;
        };
        self.pools.get(z).is_some_and(|p| p.holds(pfn, pages))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{alloc0, at};
    use super::*;
    use crate::trace::parse::{Ctx, Who};
    use crate::trace::variant::Variant;

    /// `free_prepared_contig_range`'s blocks: aligned, the largest that fits, in pfn order.
    #[test]
    fn a_range_frees_as_the_largest_aligned_blocks() {
        assert_eq!(contig_blocks(0x104708, 4), vec![(0x104708, 2)]);
        assert_eq!(contig_blocks(0x3, 7), vec![(0x3, 0), (0x4, 2), (0x8, 1)],);
        assert_eq!(contig_blocks(0, 2048), vec![(0, 10), (1024, 10)]);
        assert_eq!(contig_blocks(0x10, 0), vec![]);
    }

    /// Only 7.2 has the path; `--no-contig-free` and a replay without the inferences go page
    /// by page.
    #[test]
    fn only_the_7_2_preset_reads_contiguous_ranges() {
        let on = ReplayOptions::default();
        let off = ReplayOptions {
            no_contig_free: true,
            ..ReplayOptions::default()
        };
        assert!(contig_free_on(Kernel::V7_2, true, &on));
        assert!(!contig_free_on(Kernel::V7_2, true, &off));
        assert!(!contig_free_on(Kernel::V7_2, false, &on));
        for k in [Kernel::V6_1, Kernel::V6_12, Kernel::V6_6, Kernel::V5_15] {
            assert!(!contig_free_on(k, true, &on), "{k:?}");
        }
    }

    /// Pages on CPU 1's Unmovable lists of order 0 and 2 after `events` (order-0 allocations
    /// of 0x1000-0x1003, then their frees by a `task`, then `tail`), replayed with
    /// the rule `on` or off; and whether our pages for them were one aligned run.
    fn lists_after(on: bool, task: Task, tail: &[Event<'static>]) -> ((u32, u32), bool) {
        lists_after_by(on, Who::new(task, Some(51), Ctx::NONE), tail)
    }

    /// [`lists_after`] with the frees by `worker`.
    fn lists_after_by(on: bool, worker: Who, tail: &[Event<'static>]) -> ((u32, u32), bool) {
        let g = super::super::tests::four_cpus();
        let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
        r.commit_at_batched = true;
        r.contig_free = on;
        let mut events = Vec::new();
        for (i, pfn) in (0x1000..0x1004u64).enumerate() {
            events.push(at(1, Some(1_000 + i as u64), alloc0(pfn, 0, "GFP_KERNEL")));
        }
        for (i, pfn) in (0x1000..0x1004u64).enumerate() {
            let mut e = at(1, Some(2_000 + i as u64), EventKind::Free { pfn, order: 0 });
            e.who = worker;
            events.push(e);
        }
        events.extend_from_slice(tail);
        let mut run = None;
        for e in &events {
            if run.is_none() && matches!(e.kind, EventKind::Free { .. }) {
                let ours: Vec<u64> = (0x1000..0x1004u64)
                    .filter_map(|p| r.frames.live(p).map(|l| l.ours))
                    .collect();
                run = Some(
                    ours.len() == 4
                        && ours[0].is_multiple_of(4)
                        && ours.windows(2).all(|w| w[1] == w[0] + 1),
                );
            }
            r.feed(e, Inferred::None).unwrap();
        }
        r.finish().unwrap();
        let info = r.zones[0].pcp_info(zonealloc::CpuId(1));
        // pindex: MIGRATE_PCPTYPES * order + migratetype (Unmovable 0).
        (
            (info.list_pages[0], info.list_pages[6]),
            run.unwrap_or(false),
        )
    }

    /// 7.2-4g-2node p_idle: `kworker/0:0` frees 0x104708-0x10470b (lines 12295-12298), and
    /// the kernel drains them as one order-2 block (line 43596). Ours frees the four pages as
    /// that block with the rule, as four order-0 pages without it.
    #[test]
    fn a_kworkers_run_of_four_aligned_pages_goes_on_the_list_as_one_order_2_block() {
        let ((zero, two), run) = lists_after(true, Task::CpuWorker, &[]);
        assert!(run, "our pages for the run are not one aligned run");
        // The refill's other pages stay on the order-0 list either way.
        let ((zero_off, two_off), _) = lists_after(false, Task::CpuWorker, &[]);
        assert!(zero_off >= 4);
        assert_eq!((zero, two), (zero_off - 4, 4));
        assert_eq!(two_off, 0);
    }

    /// A batched free (`free_unref_folios`: `mm_page_free` for each, then
    /// `mm_page_free_batched` for each) is no contiguous range: four order-0 pages.
    #[test]
    fn a_batched_run_of_contiguous_pages_stays_order_0() {
        let batched: Vec<Event<'static>> = (0x1000..0x1004u64)
            .enumerate()
            .map(|(i, pfn)| at(1, Some(3_000 + i as u64), EventKind::FreeBatched { pfn }))
            .collect();
        let ((zero, two), run) = lists_after(true, Task::CpuWorker, &batched);
        assert!(run);
        let (off, _) = lists_after(false, Task::CpuWorker, &batched);
        assert_eq!((zero, two), off);
        assert_eq!(two, 0);
    }

    /// 7.2-2g p_idle: `kmem-phases` frees 0xbac8-0xbacb one by one (line 45048), and the
    /// kernel drains four order-0 pages (line 45223): a task's run is no range of ours.
    #[test]
    fn a_tasks_run_of_contiguous_pages_stays_order_0() {
        let ((zero, two), run) = lists_after(true, Task::Other, &[]);
        assert!(run);
        let (off, _) = lists_after(false, Task::Other, &[]);
        assert_eq!((zero, two), off);
        assert_eq!(two, 0);
    }

    /// 7.2-4g-loads p_fork: `kworker/1:1` frees 0x10b6ac-0x10b6ad in softirq (`.Bs1.`,
    /// 50.852925), and the kernel hands 0x10b6ad out as an order-0 page off CPU 1's list: a
    /// kworker's run in an interrupt is no range (`vfree` defers to `vfree_atomic` there).
    #[test]
    fn a_kworkers_run_in_softirq_stays_order_0() {
        let softirq = Who::new(Task::CpuWorker, Some(51), Ctx::parse(b".Bs1."));
        let ((zero, two), run) = lists_after_by(true, softirq, &[]);
        assert!(run);
        let (off, _) = lists_after(false, Task::CpuWorker, &[]);
        assert_eq!((zero, two), off);
        assert_eq!(two, 0);
    }

    /// 7.2-4g p_thp: `kworker/1:0` frees 0x110018-0x11001b (lines 10111-10114), pages in
    /// use at the snapshot, in a pageblock ours typed Movable; the trace names Unmovable, and
    /// `sh-614` takes 0x110018 at order 2 off CPU 1's list (line 12250). Ours frees an
    /// aligned block of the pool's Unmovable pages as one order-2 block (before: four
    /// order-0 pages, and a refill for the order-2 allocation).
    #[test]
    fn a_kworkers_run_of_pages_in_use_at_the_snapshot_goes_on_the_list_as_one_block() {
        use zonealloc::{MigrateType, Pfn};
        let sniff = crate::trace::ingest::sniff::Sniff::default();
        let g = crate::trace::replay::geometry::Geometry::from_flags(
            None,
            Some(1 << 16),
            Some(crate::trace::replay::geometry::Online::Touched),
            Some(4),
            &sniff,
            crate::trace::migratetype::Numbering::Current,
        )
        .unwrap();
        let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
        r.commit_at_batched = true;
        r.contig_free = true;
        // Block 0 by hand, as a snapshot's set-up: 0x18-0x1b in use in a Movable pageblock,
        // 0x200-0x203 in use in an Unmovable one, the rest free.
        let zone = &r.zones[0];
        zone.set_pageblock_type(Pfn(0), MigrateType::Movable)
            .unwrap();
        zone.set_pageblock_type(Pfn(0x200), MigrateType::Unmovable)
            .unwrap();
        for (a, b) in [(0x18, 0x1c), (0x200, 0x204)] {
            zone.add_allocated_range(Pfn(a), Pfn(b), Order::ZERO)
                .unwrap();
        }
        for (a, b) in [(0, 0x18), (0x1c, 0x200), (0x204, 0x400)] {
            zone.add_free_range(Pfn(a), Pfn(b)).unwrap();
        }
        r.online[0][0] |= 1;
        let pools = [
            vec![0x200, 0x201, 0x202, 0x203],
            vec![0x18, 0x19, 0x1a, 0x1b],
            vec![],
        ];
        r.pools.push(crate::trace::replay::proc_setup::Pool::new(
            pools,
            Some(0..1 << 16),
        ));
        let worker = Who::new(Task::CpuWorker, Some(26), Ctx::NONE);
        for (i, pfn) in (0x18..0x1cu64).enumerate() {
            let mut e = at(1, Some(1_000 + i as u64), EventKind::Free { pfn, order: 0 });
            e.who = worker;
            r.feed(&e, Inferred::FreeOfType { migratetype: 0 }).unwrap();
        }
        r.finish().unwrap();
        let info = r.zones[0].pcp_info(zonealloc::CpuId(1));
        // pindex: MIGRATE_PCPTYPES * order + migratetype (Unmovable 0).
        assert_eq!((info.list_pages[0], info.list_pages[6]), (0, 4));
    }
}
