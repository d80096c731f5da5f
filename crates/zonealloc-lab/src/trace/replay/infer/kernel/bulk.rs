//! `alloc_pages_bulk`'s untraced allocations: the pages of a refill run that the trace's
//! allocations skip, or that are left when the list is refilled, were taken off the list
//! without `mm_page_alloc`.

use super::KernelSide;
use crate::trace::parse::{Event, EventKind};

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
                self.untraced_now.push((pfn, cpu, mt));
                self.untraced_early += 1;
            }
        }
        self.runs[list] = run;
    }
}
