//! A traced allocation (`mm_page_alloc`): the frame leaves every CPU's lists, and the CPU it
//! was taken off is the one whose refill listed it ([`KernelSide::alloc_cpu`]).

use super::pfn_map::Shown;
use super::{Inferred, KernelSide};
use crate::trace::parse::Event;

impl KernelSide {
    /// Accounts an allocation of `pfn` of `order` traced on `cpu`: counts the frame's
    /// allocation and takes it off the lists it was on (a failed allocation touches no
    /// frame), replays it on the CPU whose refill listed it ([`Inferred::AllocOn`]), and takes
    /// an order-0 page off that CPU's refill run ([`KernelSide::bulk`]).
    #[inline(always)]
    pub(super) fn on_alloc(
        &mut self,
        ev: &Event<'_>,
        pfn: u64,
        order: u8,
        zone: usize,
        cpu: u32,
    ) -> Inferred {
        let mut inferred = Inferred::None;
        let mut listed = false;
        let (refilled, on) = if ev.is_failed_alloc() {
            (self.pfns.get(pfn).refilled(), cpu)
        } else {
            let f = self.pfns.get_mut(pfn);
            let refilled = f.refilled();
            let on = Self::alloc_cpu(cpu, f.refill_listed());
            listed = f.refill_listed().is_none() && f.last_free_cpu() == Some(on);
            f.allocs += 1;
            f.set_shown(Shown::More);
            f.set_last_free_cpu(None);
            f.set_refilled(None);
            if order > 0 {
                self.hand_out_tails(pfn, order);
            }
            (refilled, on)
        };
        if on != cpu {
            self.allocs_on_refilling_cpu += 1;
            inferred = Inferred::AllocOn { cpu: on };
        }
        if order == 0 && self.bulk_takes_head && !ev.is_failed_alloc() {
            if let crate::trace::parse::EventKind::Alloc { migratetype, .. } = ev.kind {
                let from_run = refilled == Some((on, migratetype));
                self.under_tops(pfn, zone, on, migratetype, from_run, listed);
            }
        }
        // Only a page refilled by the allocating CPU can come from one of its runs.
        if order == 0 && refilled.is_some_and(|(by, _)| by == on) {
            self.bulk(ev, zone, on, refilled);
        }
        inferred
    }

    /// The frames after the first of a block of `order` a traced allocation at `pfn` handed
    /// out: in use now, on no CPU's lists, so a free of one of them at order 0 (the block
    /// split: `split_page`) is no free again ([`KernelSide::freed_again`]). 7.2's
    /// `vm_area_alloc_pages` takes a vmalloc'd stack as one order-2 block
    /// (`alloc_pages_noprof(large_gfp, large_order)`, then `split_page`) and `vfree` frees it
    /// page by page. 7.2-4g p_idle: `kworker/3:0` frees 0x10b648-0x10b64b on CPU 3 at
    /// 471.765848 (trace lines 61458-61461), `dash-765` allocates 0x10b648 at order 2 at
    /// 471.872716 (line 62260) and `kworker/2:1` frees the four on CPU 2 at 471.908297
    /// (lines 62603-62606): read as frees again, CPU 3's list lost three pages untraced.
    #[cold]
    #[inline(never)]
    fn hand_out_tails(&mut self, pfn: u64, order: u8) {
        for tail in pfn + 1..pfn + (1u64 << order.min(zonealloc::MAX_ORDER_LIMIT)) {
            let f = self.pfns.get_mut(tail);
            f.set_last_free_cpu(None);
            // Shown allocated: a first free of it at order 0 is no page from a list.
            f.set_shown(Shown::More);
        }
    }

    /// The CPU a traced allocation on `cpu` ran on, given the CPU whose refill put its page on
    /// its lists (`listed`, while the trace shows it still there): that CPU.
    ///
    /// `rmqueue_pcplist` takes the page off the list of the CPU it runs on
    /// (`pcp_spin_trylock`: `pcpu_task_pin` then `this_cpu_ptr`), and `pcp_spin_unlock`
    /// unpins the task (`preempt_enable`) before `prep_new_page` and the
    /// `trace_mm_page_alloc` at the end of `__alloc_frozen_pages_noprof`. A preemptible kernel
    /// can move the task in between, and the tracepoint stamps the CPU it moved to. 7.2's
    /// Debian kernel boots with "Dynamic Preempt: lazy": in 7.2-2g p_pressure, CPU 2 refills
    /// THPs 0x11000 and 0x11200 (trace line 5424, its task taking 0x11000), and the task's
    /// `mm_page_alloc` of 0x11000 is stamped CPU 1, 118 ms later (line 5751). The 6.1 and 6.12
    /// kernels boot "voluntary", which has no preemption point there; none of their captures
    /// show such an allocation (7.2's show 10, all THPs), so the rule needs no knob. A page
    /// only freed onto a CPU's lists is not moved: a free that found the lists' lock taken
    /// went to the buddy (`free_one_page`), untraced.
    #[inline(always)]
    fn alloc_cpu(cpu: u32, listed: Option<u32>) -> u32 {
        listed.unwrap_or(cpu)
    }
}
