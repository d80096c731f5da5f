//! 7.2's free of a contiguous range in the lists' walk (`vfree` -> `free_pages_bulk` ->
//! `__free_contig_range`, read as the replay reads it: `replayer::contig_free`): a kworker's
//! order-0 frees of consecutive pfns, nothing else between them on its CPU, reach the CPU's
//! lists as the aligned blocks `free_prepared_contig_range` frees them as
//! (`__free_frozen_pages(page, order, FPI_PREPARED)`, then `free_frozen_page_commit` onto the
//! list of that order), not as order-0 pages.
//!
//! Read page by page, such a run put its pages on the order-0 list of their pageblock's type
//! and took none off the list of the block's order, so the walk read the order-0 list's start
//! too low and the higher order's too high. 7.2-4g-6cpu p_fork: `kworker/4:1` frees
//! 0x103488-0x10348b at 398.532974-977 (an exited fork's stack, lines 36712-36715) and
//! `kmem-phases` takes 0x103488 off Normal CPU 4's order-2 Unmovable list at 398.913566, no
//! refill before; 28 such blocks read as 112 order-0 frees put CPU 4's order-2 list at 28
//! blocks and its order-0 Unmovable list at 82 pages of its 298 (the pages the trace shows
//! freed onto it before the window and still there: 146), and ours ran dry at 398.195922
//! and refilled 63 pages the kernel never did.

use super::Rec;
use crate::trace::parse::Who;
use crate::trace::replay::replayer::{contig_blocks, extends_range, range_freer};

/// A run of order-0 frees held until it ends: its first pfn, its pages and the kworker.
#[derive(Clone, Copy, Debug)]
struct Run {
    first: u64,
    pages: u64,
    who: Who,
}

/// Per CPU, the run of a kworker's order-0 frees not yet applied.
#[derive(Clone)]
pub(super) struct Contig {
    /// The reading is on (the 7.2 preset with the inferences: `replayer::contig_free_on`).
    pub(super) on: bool,
    run: Vec<Option<Run>>,
}

impl Contig {
    /// Off, for `cpus` CPUs.
    pub(super) fn new(cpus: u32) -> Contig {
        Contig {
            on: false,
            run: vec![None; cpus.max(1) as usize],
        }
    }

    /// `rec` on `cpu` (below the CPU count) by `who`: whether it is held in the CPU's run
    /// (not applied now), and the run it ends, if any, whose frees ([`Ended::frees`]) reach
    /// the lists in order: the aligned blocks of a run of two or more, else the single free.
    /// A run that a
    /// `mm_page_free_batched` ends is a folio batch's, not a range's: its frees go one by one
    /// (the replay commits them at their batched lines).
    #[inline]
    pub(super) fn step(&mut self, cpu: u32, rec: Rec, who: Who) -> (bool, Option<Ended>) {
        // Most events: no run held on the CPU and no order-0 free to start one.
        let idle = |s: &Option<Run>| s.is_none() && !matches!(rec, Rec::Free(_, 0));
        match self.run.get(cpu as usize) {
            Some(slot) if self.on && !idle(slot) => self.step_run(cpu, rec, who),
            _ => (false, None),
        }
    }

    /// [`Contig::step`] where the CPU holds a run or `rec` is an order-0 free.
    #[inline(never)]
    fn step_run(&mut self, cpu: u32, rec: Rec, who: Who) -> (bool, Option<Ended>) {
        let slot = &mut self.run[cpu as usize];
        let range_free = matches!(rec, Rec::Free(_, 0)) && range_freer(who);
        if let (Rec::Free(pfn, 0), Some(r)) = (rec, slot.as_mut()) {
            if range_free && r.who == who && extends_range(r.first + r.pages - 1, pfn) {
                r.pages += 1;
                return (true, None);
            }
        }
        let ended = slot.take();
        if let (Rec::Free(first, _), true) = (rec, range_free) {
            *slot = Some(Run {
                first,
                pages: 1,
                who,
            });
        }
        let batched = matches!(rec, Rec::FreeBatched(..));
        (range_free, ended.map(|run| Ended { run, batched }))
    }

    /// Every run still held, per CPU: at the walk's end.
    pub(super) fn finish(&mut self) -> Vec<(u32, Vec<Rec>)> {
        (self.run.iter_mut().enumerate())
            .filter_map(|(cpu, r)| r.take().map(|r| (cpu as u32, r.frees(false))))
            .collect()
    }
}

/// A run [`Contig::step`] ended, and whether a `mm_page_free_batched` ended it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ended {
    run: Run,
    batched: bool,
}

impl Ended {
    /// The frees the run reaches the lists as ([`Run::frees`]).
    pub(super) fn frees(self) -> Vec<Rec> {
        self.run.frees(self.batched)
    }
}

impl Run {
    /// The frees the run reaches the lists as: one by one where it is one page or a folio
    /// batch's, else `free_prepared_contig_range`'s blocks.
    fn frees(self, one_by_one: bool) -> Vec<Rec> {
        if self.pages < 2 || one_by_one {
            return (0..self.pages)
                .map(|i| Rec::Free(self.first + i, 0))
                .collect();
        }
        (contig_blocks(self.first, self.pages).into_iter())
            .map(|(pfn, order)| Rec::Free(pfn, order))
            .collect()
    }
}
