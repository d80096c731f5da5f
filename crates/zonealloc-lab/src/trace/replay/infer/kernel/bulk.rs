//! `alloc_pages_bulk`'s untraced allocations: the pages of a refill run that the trace's
//! allocations skip, or that are left when the list is refilled, were taken off the list
//! without `mm_page_alloc`.

use super::{KernelSide, Untraced};
use crate::trace::parse::{Ctx, Event, EventKind};
use crate::trace::replay::infer::list_tops::taken_above;

/// A CPU's last order-0 refill run, awaiting the refilling task's next event
/// ([`KernelSide::bulk_refill`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Awaited {
    /// The zone and migratetype of the refilled list.
    pub zone: usize,
    pub mt: u8,
    /// The refilling task's pid (an interrupt's: the task it interrupted).
    pub pid: Option<u32>,
    /// The refill's context: [`irq_level`].
    pub level: u8,
    /// The run's first page, once listed.
    pub first: Option<u64>,
}

/// How deep in interrupts an event ran: 0 in a task (or a line without the latency column),
/// 1 in softirq, 2 in hardirq or NMI (a hardirq may interrupt a softirq, not the reverse).
pub(super) fn irq_level(ctx: Ctx) -> u8 {
    if ctx.hardirq() {
        2
    } else {
        u8::from(ctx.softirq())
    }
}

impl KernelSide {
    /// `alloc_pages_bulk` takes order-0 pages off a CPU's list without `mm_page_alloc`
    /// (`__alloc_pages_bulk` → `__rmqueue_pcplist`), refilling it when it runs empty. A refill
    /// appends its blocks to the list's tail (`rmqueue_bulk`) and only an empty list is refilled,
    /// so an allocation takes a refill run's pages in order unless a free put a page on top
    /// (frees add at the head): when the trace's allocation on that CPU takes the run's `k`-th
    /// page, the `k - 1` before it that no event took were allocated untraced, before it. At
    /// the list's next refill the list was empty: what is left of the run was too. Both are
    /// replayed then, not at the pages' frees, which come much later.
    ///
    /// An allocation, free or drain of a page, given the page's refill before the event
    /// (`refilled`): an order-0 allocation from a run takes the pages before it as untraced; a
    /// free or drain takes the page off its run.
    pub(super) fn bulk(
        &mut self,
        ev: &Event<'_>,
        zone: usize,
        cpu: u32,
        refilled: Option<(u32, u8)>,
    ) {
        match ev.kind {
            EventKind::Alloc {
                pfn,
                order: 0,
                migratetype,
                ..
            } => {
                if refilled.map(|(by, _)| by) != Some(cpu) {
                    return;
                }
                let list = self.list(zone, cpu, migratetype);
                if let Some(k) = self.runs[list].iter().position(|&p| p == pfn) {
                    self.take_untraced(list, k, cpu, migratetype);
                    self.runs[list].pop_front();
                }
            }
            EventKind::PcpuDrain { pfn, .. }
            | EventKind::Free { pfn, .. }
            | EventKind::FreeBatched { pfn } => {
                if let Some((by, mt)) = refilled {
                    let list = self.list(zone, by, mt);
                    let run = &mut self.runs[list];
                    if let Some(k) = run.iter().position(|&p| p == pfn) {
                        run.remove(k);
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether the refill run `cpu` made last was `alloc_pages_bulk`'s, at the refilling
    /// task's next event on `cpu` in the refill's own context (task, softirq or hardirq:
    /// [`Awaited::level`]): anything but its order-0 allocation of the run's migratetype. If
    /// so, the bulk allocation took the run's first page, which goes untraced now, flagged
    /// [`Untraced::bulk_refill`]: the kernel's list was empty before the refill.
    ///
    /// `__rmqueue_pcplist` refills only an empty list (`rmqueue_bulk` appends the batch) and
    /// then takes the list's first page. Called for an allocation (`rmqueue_pcplist`), the
    /// task's next event is its `mm_page_alloc` (at the end of `__alloc_frozen_pages_noprof`;
    /// interrupts may free pages in between: `replayer::held`). `alloc_pages_bulk_noprof`
    /// (7.2 and 6.12; `__alloc_pages_bulk` in 6.1) calls `__rmqueue_pcplist` in a loop and
    /// prints no `mm_page_alloc` for any page it takes: it took every page the list held,
    /// then the refill's first ones. 7.2-2g p_prodcons: `cat-342` refills 63 Unmovable pages
    /// on CPU 1 at 118.600304 (trace lines 85104-85166), then frees 0x3837, on that list
    /// since 104.201918, and the run's first 15 pages, none of them allocated in the trace.
    /// A task moved off the CPU before its tracepoint (`KernelSide::alloc_cpu`) shows no
    /// event of its own there: nothing is inferred. Nor from a block taken from the buddy
    /// (another refill, a fallback, a direct allocation): the wait goes on to the next event.
    ///
    /// A refill an interrupt made is that interrupt's: an allocation in softirq (network
    /// receive, `GFP_ATOMIC`) refills through the same `rmqueue_pcplist` and prints its
    /// `mm_page_alloc` in the softirq, stamped with the pid of the task it interrupted; that
    /// task's own events after the softirq are no proof of a bulk take. An event of a
    /// deeper interrupt waits; one of a shallower context (the interrupt returned with no
    /// event of its own after the refill) infers nothing. 6.12-4g-more p_sock: `kmem-phases-370`
    /// refills 63 Unmovable pages on CPU 0 in softirq at 78.358847 (`D.s6.`), allocates the
    /// first, 0x10a473, at 78.358917 (`b.s3.`), then in task context a Movable page at
    /// 78.361184 (`.....`), which read as a bulk take of 0x109f4f, allocated in the trace at
    /// 78.364211.
    #[cold]
    #[inline(never)]
    pub(super) fn bulk_refill(&mut self, ev: &Event<'_>, cpu: u32) {
        let block = matches!(
            ev.kind,
            EventKind::ZoneLocked { .. } | EventKind::Extfrag { .. }
        );
        let Some(w) = self.awaiting[cpu as usize] else {
            return;
        };
        let level = irq_level(ev.who.ctx());
        if block || level > w.level {
            return;
        }
        self.awaiting[cpu as usize] = None;
        let own_alloc = matches!(ev.kind, EventKind::Alloc { order: 0, migratetype, .. }
            if migratetype == w.mt);
        if level < w.level || own_alloc || w.pid.is_none() || ev.who.pid() != w.pid {
            return;
        }
        self.bulk_took_first(w, cpu);
    }

    /// A refill of another list (zone or migratetype) on `cpu`, `ev` its first page, before
    /// the awaited run's task had an event of its own there: if the refilling task made it in
    /// the awaited run's context, the awaited run was `alloc_pages_bulk`'s
    /// ([`KernelSide::bulk_refill`]), which took its first page untraced. A traced allocation
    /// prints its `mm_page_alloc` right after `rmqueue_pcplist`'s refill (`__rmqueue_pcplist`
    /// refills one list, of the request's zone and migratetype, and takes its first page),
    /// with no refill of another list between; `alloc_pages_bulk_noprof` prints nothing.
    /// 6.12-8g p_thp (lines 35077-35669): `dash-515` refills 63 Unmovable pages on CPU 2 at
    /// 654.239763 (a forked task's vmalloc'd stack, `vm_area_alloc_pages`), then 126 Movable
    /// ones at 654.291868 and allocates 0x10328a, the Movable run's first. The Unmovable run's
    /// first pages, 0x10acab-0x10acae, were freed together by `kworker/1:1` at 654.286282 in
    /// between: a free the replay may still hold (`Replayer::untraced_allocs`), whose
    /// untraced allocation it would replay only with the free, after the Movable refill
    /// (`alloc_factor` then gave the two refills each other's size). Taken so, the first page
    /// is flagged [`Untraced::freed`].
    #[cold]
    #[inline(never)]
    pub(super) fn bulk_refill_before(&mut self, ev: &Event<'_>, cpu: u32, zone: usize, mt: u8) {
        let Some(w) = self.awaiting[cpu as usize] else {
            return;
        };
        if (w.zone, w.mt) == (zone, mt)
            || irq_level(ev.who.ctx()) != w.level
            || w.pid.is_none()
            || ev.who.pid() != w.pid
        {
            return;
        }
        self.awaiting[cpu as usize] = None;
        let Some(first) = w.first else {
            return;
        };
        if self.runs[self.list(w.zone, cpu, w.mt)].front() == Some(&first) {
            self.bulk_took_first(w, cpu);
            return;
        }
        self.untraced_now.push(Untraced {
            bulk_refill: true,
            freed: true,
            ..Untraced::new(first, cpu, w.mt)
        });
        self.bulk_refills += 1;
    }

    /// The awaited run `w` was `alloc_pages_bulk`'s: its first page goes untraced now,
    /// flagged [`Untraced::bulk_refill`].
    fn bulk_took_first(&mut self, w: Awaited, cpu: u32) {
        let (zone, mt) = (w.zone, w.mt);
        let list = self.list(zone, cpu, mt);
        let at = self.untraced_now.len();
        self.take_untraced(list, 1, cpu, mt);
        if let Some(p) = self.untraced_now.get_mut(at) {
            p.bulk_refill = true;
            self.bulk_refills += 1;
        }
    }

    /// The first `n` pages of run `list`, taken off it: allocated untraced unless something
    /// else took them since.
    pub(super) fn take_untraced(&mut self, list: usize, n: usize, cpu: u32, mt: u8) {
        if n == 0 {
            return;
        }
        // Walked in place (a copy of the pages would cost an allocation per event).
        let mut run = std::mem::take(&mut self.runs[list]);
        for pfn in run.drain(..n) {
            let f = self.pfns.get_mut(pfn);
            if f.take_refilled().is_some() {
                f.set_last_free_cpu(None);
                self.untraced_now.push(Untraced::new(pfn, cpu, mt));
                self.untraced_early += 1;
            }
        }
        self.runs[list] = run;
    }

    /// A free of order-0 `pfn` on `cpu`: on top of its pageblock type's list there
    /// (`free_unref_page_commit`: `list_add`).
    pub(super) fn push_top(&mut self, ev: &Event<'_>, pfn: u64, zone: usize, cpu: u32) {
        // `mm_page_free` (`free_pages_prepare`) prints every freed page with its order,
        // before its `mm_page_free_batched` (which carries none: a THP folio's too) and in the
        // order the pages go onto the list.
        if !matches!(ev.kind, EventKind::Free { order: 0, .. }) {
            return;
        }
        let Some(mt) = self.block_types.of(pfn).filter(|&t| t < 3) else {
            return;
        };
        let list = self.list(zone, cpu, mt);
        let top = &mut self.tops[list];
        if top.len() >= 8192 {
            top.drain(..4096);
        }
        top.push(pfn);
    }

    /// A traced order-0 allocation of `pfn` on `cpu` of `migratetype`: it took the list's
    /// first page (`__rmqueue_pcplist`: `list_first_entry`), so the freed pages above it
    /// that are still there were taken untraced before it (`alloc_pages_bulk`).
    pub(super) fn under_tops(
        &mut self,
        pfn: u64,
        zone: usize,
        cpu: u32,
        migratetype: u8,
        from_run: bool,
        listed: bool,
    ) {
        let list = self.list(zone, cpu, migratetype);
        let mut top = std::mem::take(&mut self.tops[list]);
        let pfns = &self.pfns;
        let taken = taken_above(&mut top, pfn, listed, from_run, |e| {
            let f = pfns.get(e);
            f.last_free_cpu() == Some(cpu) && f.refill_listed().is_none()
        });
        for e in taken {
            self.pfns.get_mut(e).set_last_free_cpu(None);
            self.untraced_now.push(Untraced::new(e, cpu, migratetype));
            self.untraced_early += 1;
        }
        self.tops[list] = top;
    }
}
