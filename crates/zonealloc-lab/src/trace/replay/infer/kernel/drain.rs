//! Drains (`mm_page_pcpu_drain`): which CPU's lists a drained block was on, and whether the
//! free path explains the run it is in or the replay must drain those lists itself
//! ([`Inferred::Drain`]; the module docs of [`super`] say how).

use super::pfn_map::{self, Shown};
use super::{Inferred, KernelSide, Prev};
use crate::trace::parse::Event;

impl KernelSide {
    /// Accounts a drained block `pfn` in zone `zone`, traced on `cpu` at timestamp tick
    /// `tick`, the CPU's previous event `prev`: the block leaves its owner's lists and its
    /// refill run ([`KernelSide::bulk`]); a run no free explains, or a block another CPU
    /// owned, asks for a drain of the owner's lists once per run. Returns the CPU's new
    /// previous event and the inference.
    #[inline(always)]
    pub(super) fn on_drain(
        &mut self,
        ev: &Event<'_>,
        pfn: u64,
        zone: usize,
        cpu: u32,
        tick: u32,
        prev: Prev,
    ) -> (Prev, Inferred) {
        let c = cpu as usize;
        let mut inferred = Inferred::None;
        let f = self.pfns.get_mut(pfn);
        let facts = *f;
        f.set_shown(Shown::More);
        let refill_after = Self::refilled_after(facts, cpu, tick);
        if !refill_after {
            f.clear_refill_listed();
            // In the buddy now: a free of it again needs an allocation first (`freed_again`).
            f.set_last_free_cpu(None);
            if facts.refilled().is_some() {
                self.bulk(ev, zone, cpu, facts.refilled());
            }
        }
        let new_run = !matches!(prev, Prev::Drain { .. });
        if new_run {
            self.run_owners[c].clear();
        }
        // A worker's drain (a kworker of the CPU at preempt depth 2: `decay_pcp_high`,
        // `drain_pages_zone`) is no free's, whatever came before it: the free path
        // drains with the CPU pinned, depth 3 and up.
        let explained = match prev {
            Prev::Drain { explained } => explained,
            Prev::Free => !ev.who.is_worker_drain(),
            Prev::Other => false,
        };
        if new_run && !explained {
            self.unexplained_runs += 1;
        }
        // The free path drains only its own CPU's lists: a block another CPU put on
        // its lists was drained by `drain_all_pages` from here.
        let owner = match facts.last_free_cpu() {
            Some(o) if !refill_after => o,
            _ => cpu,
        };
        let remote = owner != cpu;
        self.remote_drained_blocks += u64::from(remote);
        self.last_drain = Some((owner, explained && !remote));
        if !explained || remote {
            self.unexplained_blocks += 1;
            if !self.run_owners[c].contains(&owner) {
                self.run_owners[c].push(owner);
                self.inferred_drains += 1;
                inferred = Inferred::Drain { owner };
            }
        }
        (Prev::Drain { explained }, inferred)
    }

    /// Whether a block drained on `cpu` at timestamp tick `tick` was refilled onto another
    /// CPU's lists after the drain, though the trace prints the refill first: the refill's
    /// facts stand (the block is on that CPU's lists), and the drain took it off the
    /// draining CPU's own.
    ///
    /// ftrace keeps one ring buffer per CPU and the trace reader (`__find_next_entry`, for
    /// `trace` and `trace_pipe`) merges them by timestamp, so events of equal timestamps on
    /// different CPUs come out in no true order. A refill by another CPU at the drain's own
    /// timestamp is read as after it: the drain (`free_pcppages_bulk`) gave the block back
    /// to the buddy, and that CPU's `rmqueue_bulk` took it from there. In 6.1-2g
    /// p2_procs_pipe (shipped trace), CPU 0 refills 0x152bb .. 0x15015 (lines 178297-178305,
    /// 11.710382) and CPU 2's free-path drain run at the same timestamp drains them in the
    /// reverse order (lines 179714-179722): the buddy's free lists are last in, first out.
    /// Read as CPU 0's, the run inferred a `drain_all_pages`, and the replay drained 2846
    /// pages there to the kernel's 2016. A free by another CPU at the drain's timestamp is
    /// not read so: a drain before it leaves the block in the buddy, and only an allocation
    /// takes it out to be freed.
    #[inline(always)]
    fn refilled_after(facts: pfn_map::PfnFacts, cpu: u32, tick: u32) -> bool {
        tick != 0
            && facts
                .refill_listed_at()
                .is_some_and(|(by, at)| by != cpu && at == tick)
    }
}
