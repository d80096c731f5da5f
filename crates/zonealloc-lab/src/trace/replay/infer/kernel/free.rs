//! A traced free (`mm_page_free`, `mm_page_free_batched`): the frame goes onto the freeing
//! CPU's lists, and a page a refill listed that no traced allocation took was allocated
//! untraced ([`Inferred::UntracedAlloc`]).

use super::pfn_map::Shown;
use super::{Inferred, KernelSide, Untraced};
use crate::trace::parse::{Event, EventKind};

impl KernelSide {
    /// Accounts a free of `pfn` traced on `cpu`: the frame is on `cpu`'s lists now; if a
    /// refill had listed it and no traced allocation took it, `alloc_pages_bulk` did, untraced
    /// (the page leaves its refill run, [`KernelSide::bulk`]); else, with `NAME_BLOCKS`, the
    /// free goes to the list of its pageblock's named type ([`super::BlockTypes::free_of_type`]).
    #[inline(always)]
    pub(super) fn on_free<const NAME_BLOCKS: bool>(
        &mut self,
        ev: &Event<'_>,
        pfn: u64,
        zone: usize,
        cpu: u32,
    ) -> Inferred {
        if self.bulk_takes_head {
            self.push_top(ev, pfn, zone, cpu);
        }
        let f = self.pfns.get_mut(pfn);
        let freed_on = f.last_free_cpu();
        let shown = f.shown();
        f.set_shown(match (shown, &ev.kind) {
            (Shown::Nothing, EventKind::Free { order: 0, .. }) => Shown::FreedFirst,
            (Shown::FreedFirst, EventKind::FreeBatched { .. }) => Shown::FreedFirstBatched,
            (Shown::FreedFirst, EventKind::Free { order: 0, .. }) if freed_on == Some(cpu) => {
                Shown::FreedAgain
            }
            _ => Shown::More,
        });
        f.set_last_free_cpu(Some(cpu));
        let refilled = f.take_refilled();
        if refilled.is_some() {
            self.bulk(ev, zone, cpu, refilled);
        }
        if let Some((by, migratetype)) = refilled {
            self.untraced_allocs += 1;
            Inferred::UntracedAlloc {
                cpu: by,
                migratetype,
                freed_again: false,
            }
        } else if !NAME_BLOCKS {
            Inferred::None
        } else if let Some(u) = self.freed_again(ev, pfn, freed_on) {
            self.untraced_allocs += 1;
            if shown == Shown::FreedFirstBatched {
                self.appeared(pfn, u);
            }
            u
        } else {
            if shown == Shown::FreedAgain && matches!(ev.kind, EventKind::FreeBatched { .. }) {
                // The free again of a page first freed singly is a batch's: the same take.
                if let Some(mt) = self.block_types.of(pfn).filter(|&t| t < 3) {
                    let u = Inferred::UntracedAlloc {
                        cpu,
                        migratetype: mt,
                        freed_again: true,
                    };
                    self.appeared(pfn, u);
                }
            }
            self.block_types.free_of_type(pfn)
        }
    }

    /// A page whose first event was a batch's free (`Shown::FreedFirstBatched`) is freed
    /// again, taken off the list that free put it on untraced in between
    /// ([`KernelSide::freed_again`]'s inference `u`): its first free was of a page the same
    /// kind of take had taken off that list, where it lay since before the trace. Replayed
    /// as one more take off that list, of a page that stays in use ([`Untraced::unbound`]):
    /// the kernel's list lost the page at that first take, which ours, reading the first
    /// free as one of a page in use since before the trace, never did. Off unless
    /// `--infer first-free-takes=on` ([`KernelSide::set_appeared_takes`]).
    ///
    /// Only where one of the two frees is on the batched path (`free_unref_folios`, which
    /// prints `mm_page_free_batched`): the first, as `release_pages` gives the unfilled
    /// pages back, or the free again, of a page the pipe kept (its single free as the pipe
    /// is written out, 0x27583 above; the free again's take is then read at its batch's
    /// line, on the first free's CPU). Taking the pages of a batch but not the kept one
    /// left our list one page short of the kernel's (7.2-6g-12cpu-wq p_fork, CPU 0: 55
    /// Unmovable pages drained at 25.844039 and 8 Movable, where the kernel drained 63
    /// Unmovable; the whole file's refills 0.83 -> 9.25% off). A vmalloc'd stack freed page
    /// by page (`vfree`, single frees by a kworker) was in use before the trace, and
    /// `vm_area_alloc_pages` of a later fork takes it off the list again before its next
    /// free. 6.12-8g p_pressure: `kworker/2:0`
    /// frees 0x10bb0c at 1736.790770 (its first line), `kworker/1:1` again at 1737.126545;
    /// read as a list's page, CPU 2's lists lost 12 pages and the whole file's refills went
    /// 0.00 -> 7.61% off.
    ///
    /// `copy_splice_read` (fs/splice.c, 6.5 on: `cat` of a `/proc` file through `splice`)
    /// fills the internal pipe's free slots with `alloc_pages_bulk(GFP_USER, ...)`, which
    /// takes the pages off the CPU's Unmovable list's head (`__rmqueue_pcplist`) without
    /// `mm_page_alloc`, and gives the pages `read_iter` did not fill back at once
    /// (`release_pages`: `mm_page_free`, then `mm_page_free_batched`); the filled ones go
    /// back as the pipe is written out. Its next call takes the same pages again, off the
    /// head, and gives them back: frees again. 7.2-3g-16cpu-wq p_file, CPU 3: `cat-1101`
    /// frees 15 pages no line before shows (0x48c3 ... 0x27586, class `F` in
    /// `before/layout`) at 89.246315-89.246342 and one more, 0x27583, at 89.246441, then the
    /// 16 again at 89.246461-89.246484 (trace lines 3845-3908). Read as frees of pages in
    /// use, CPU 3's list held 15 pages more than the kernel's from there: the start's count,
    /// pinned by the drain at 89.242110, reached 829 at zoneinfo's read, which printed 814,
    /// and the file-copy's frees at 91.4878 drained 15 frees early, 100 pages where the
    /// kernel's second drain took 116, and every doubling drain after it short.
    #[cold]
    #[inline(never)]
    fn appeared(&mut self, pfn: u64, u: Inferred) {
        let Inferred::UntracedAlloc {
            cpu, migratetype, ..
        } = u
        else {
            return;
        };
        if !self.appeared_takes {
            return;
        }
        self.untraced_now.push(Untraced {
            unbound: true,
            ..Untraced::new(pfn, cpu, migratetype)
        });
        self.appeared_taken += 1;
    }

    /// A page freed again (`mm_page_free`) with no allocation, refill or drain traced since
    /// its last free (on `freed_on`): something took it off that CPU's list of its
    /// pageblock's type untraced (`free_frozen_pages` lists a page by
    /// `get_pfnblock_migratetype`): `alloc_pages_bulk`, which takes the list's first pages, the
    /// last freed. The replay takes a page off that list before the free, as for a refilled
    /// page. 7.2-2g p_prodcons: `cat-342` frees 0x393c and 0x3837 (on CPU 1's list since
    /// 104.2019) and 15 refilled pages at 118.6008-118.6065, then the same 17 twice more by
    /// 118.6103 (lines 85167-85265) with no `mm_page_alloc` between; read as frees of pages in
    /// use since the snapshot, the 34 put CPU 1's list over its `high`, a drain of 63 the
    /// kernel did not do. The `mm_page_free_batched` that repeats a batched page's
    /// `mm_page_free` is no second free.
    #[inline]
    fn freed_again(&self, ev: &Event<'_>, pfn: u64, freed_on: Option<u32>) -> Option<Inferred> {
        let on = freed_on.filter(|_| matches!(ev.kind, EventKind::Free { order: 0, .. }))?;
        // Pages of HighAtomic (and isolated) pageblocks go to another list: not inferred.
        let migratetype = self.block_types.of(pfn).filter(|&t| t < 3)?;
        Some(Inferred::UntracedAlloc {
            cpu: on,
            migratetype,
            freed_again: true,
        })
    }
}
