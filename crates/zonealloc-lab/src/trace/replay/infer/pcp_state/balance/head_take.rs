//! The walk's reading of `alloc_pages_bulk`'s takes off a list's head, where the replay reads
//! them (`KernelSide::under_tops`): before 6.15 `vfree` frees a vmalloc'd kernel stack page
//! by page onto the head of the freeing CPU's order-0 list (`free_unref_page_commit`:
//! `list_add`), and a fork's `vm_area_alloc_pages` takes the next stack off the head
//! (`alloc_pages_bulk_noprof` -> `__rmqueue_pcplist`: `list_first_entry`) with no
//! `mm_page_alloc`. A traced order-0 allocation takes the head too, so one that takes a page
//! below pages freed onto that list since shows them taken before it (a refill shows them
//! taken too; [`ZoneBalance::head_take`] says why the walk need not read it).
//!
//! Without this the walk took such a page off its list only at its next free (the stack's
//! `vfree`, seconds later and often past the window), while the replay takes it at the
//! allocation: the walk's balance stood that many pages high in between, and the list's start
//! came out short. 6.12-4g-loads p_fork: the replay takes 35 pages so off CPU 1's Unmovable list
//! from 47.722206 (`kmem-phases-369` frees 0x102abf and 0x1029a8-0x1029aa at 47.7217, trace
//! lines 56558-56564, then allocates 0x102abe) to the list's first refill at 48.230554; given
//! 22 start pages, ours ran dry at 47.821883, where the kernel's still held 0x1029af-0x102aa6
//! (refilled at 28.857763, allocated at 47.821883-48.230542), and refilled 63 pages the kernel
//! did not.

use super::{listed_of, Rec, ZoneBalance, TYPES};
use crate::trace::replay::infer::list_tops::taken_above;

/// Entries a list's head record keeps: past it, the older half goes (as
/// `KernelSide::push_top` keeps its own).
const TOPS_KEPT: usize = 8192;

impl ZoneBalance {
    /// An order-0 free of `pfn` on `cpu` onto its list of type `mt`: on the list's head.
    pub(super) fn push_top(&mut self, cpu: u32, pfn: u64, mt: usize) {
        if !self.bulk_takes_head || mt >= TYPES {
            return;
        }
        let top = &mut self.tops[cpu as usize * TYPES + mt];
        if top.len() >= TOPS_KEPT {
            top.drain(..TOPS_KEPT / 2);
        }
        top.push(pfn);
    }

    /// A traced order-0 allocation of `at` (`listed`: the walk's listing of it before) off
    /// `cpu`'s list of `mt`: the pages frees put on the list's head above it, still on it,
    /// were taken untraced before. As `KernelSide::under_tops`: an allocation of a page the
    /// walk does not know on that list, nor from its refill run, says nothing (ours may be
    /// out of step), and either way the record above it is gone.
    fn under_tops(&mut self, cpu: u32, mt: usize, (at, listed): (u64, Option<u32>)) {
        if mt >= TYPES || cpu as usize >= self.cpus.len() {
            return;
        }
        let listed = listed.map(listed_of);
        let freed_here = listed.is_some_and(|(by, _, refilled)| by == cpu && !refilled);
        let from_run = listed == Some((cpu, mt, true));
        let mut top = std::mem::take(&mut self.tops[cpu as usize * TYPES + mt]);
        let listed_map = &self.listed;
        let taken = taken_above(&mut top, at, freed_here, from_run, |e| {
            listed_map
                .get(e)
                .map(listed_of)
                .is_some_and(|(by, _, refilled)| by == cpu && !refilled)
        });
        for e in taken {
            if let Some((_, t, _)) = self.listed.remove(e).map(listed_of) {
                self.cpus[cpu as usize].take(Some(0), t, -1);
            }
        }
        self.tops[cpu as usize * TYPES + mt] = top;
    }

    /// The head takes event `rec` on `cpu` (below the CPU count) shows, before the walk
    /// counts the event: an order-0 allocation's. A refill shows the pages on the head's record
    /// taken too (`__rmqueue_pcplist` refills only an empty list), but needs no reading here:
    /// each allocation takes the record with it, so those pages were freed after the list's
    /// last allocation, and taking them only brings the balance back to where it stood before
    /// them, never below its lowest, which is what the refill fixes the list's start at.
    pub(super) fn head_take(&mut self, cpu: u32, rec: Rec) {
        if let (true, Rec::Alloc(pfn, 0, mt)) = (self.bulk_takes_head, rec) {
            let listed = self.listed.get(pfn);
            self.under_tops(cpu, mt, (pfn, listed));
        }
    }
}
