//! The batched free path (`commit_at_batched`, a kernel's trace with the inferences): a
//! traced `mm_page_free` is held back ([`Deferred`]) until its commit, its
//! `mm_page_free_batched` or the next other event on its CPU.

use std::io;

use super::frees::Deferred;
use super::Replayer;
use crate::trace::parse::{Event, EventKind, Who};
use crate::trace::replay::infer::kernel::Inferred;

impl Replayer {
    /// Before event `ev` on `cpu`: any other event on this CPU commits its deferred frees
    /// first (not a drain: the commits drain mid-batch); an allocation of a deferred frame,
    /// the free of it.
    #[inline(always)]
    pub(super) fn commit_before(&mut self, ev: &Event<'_>, cpu: u32) -> io::Result<()> {
        let batching = self.batching.get(cpu as usize).copied().unwrap_or(false);
        match ev.kind {
            // An interrupt's free between a batch's commits ([`super::held`]): it waits.
            EventKind::Free { .. } if batching && self.cut_into_batch(ev, cpu) => {}
            // A new free after a batch's commits: the batch is over.
            EventKind::Free { .. } if batching => self.flush_deferred(cpu)?,
            // A drain after a single free, or after an interrupt's (the lists were not held),
            // unless it goes on a drain the interrupt cut into ([`Replayer::drain_resumed`]).
            EventKind::PcpuDrain { pfn, .. } if !batching || self.batch_cut(cpu) => {
                if !batching || !self.drain_resumed(ev, cpu, pfn)? {
                    self.flush_deferred(cpu)?
                }
            }
            EventKind::Free { .. }
            | EventKind::FreeBatched { .. }
            | EventKind::PcpuDrain { .. } => {}
            EventKind::Alloc { pfn, .. } => {
                self.flush_deferred(cpu)?;
                if let Some(c) = self.frames.deferred_at(pfn) {
                    self.flush_deferred(c)?;
                }
            }
            _ => self.flush_deferred(cpu)?,
        }
        Ok(())
    }

    /// Before a vmstat worker's run on `cpu` at `at_ns` (the trace's `vmstat_update` line or
    /// the model's timer): the frees deferred there that the trace shows before the run are
    /// committed first, as any other event on the CPU commits them. A single free commits in
    /// the same call that printed its `mm_page_free` (`__free_frozen_pages` ->
    /// `free_frozen_page_commit`), before the kworker gets the CPU, so `decay_pcp_high`
    /// counts its page. 7.2-4g-wq p_prodcons: `dash-337`'s free of 0x10b864 at 54.127725
    /// (line 38145) and `<idle>-0`'s RCU frees from 54.173836 were still held at CPU 3's
    /// run at 54.931110; committed after it, above the `high` the run had just lowered, the
    /// first drained 63 pages that the kernel's run had drained with the rest.
    pub(super) fn commit_before_run(&mut self, cpu: u32, at_ns: u64) -> io::Result<()> {
        let Some(list) = self.deferred.get(cpu as usize) else {
            return Ok(());
        };
        let n = list
            .iter()
            .take_while(|d| d.ts_ns.is_none_or(|t| t <= at_ns))
            .count();
        if n == list.len() {
            return self.flush_deferred(cpu);
        }
        // A run between frees the replay has fed (a late worker's): only those before it.
        let before: Vec<Deferred> = self.deferred[cpu as usize].drain(..n).collect();
        self.commit_frees(cpu, &before)
    }

    /// A traced `mm_page_free` of `pfn` on `cpu` (`free_pages_prepare`), held back until its
    /// commit; an earlier free of the frame still deferred is committed first.
    #[inline(always)]
    pub(super) fn defer_free(
        &mut self,
        ev: &Event<'_>,
        cpu: u32,
        pfn: u64,
        order: u8,
        inferred: Inferred,
    ) -> io::Result<()> {
        self.zone_for(pfn)?;
        if let Some(at) = self.frames.deferred_at(pfn) {
            self.flush_deferred(at)?;
        }
        let held = self.lists_held_for(ev, cpu, pfn);
        self.deferred[cpu as usize].push(Deferred {
            ts_ns: ev.ts_ns,
            cpu: ev.cpu,
            page: ev.page,
            who: ev.who,
            pfn,
            order,
            inferred,
            held,
        });
        self.frames.set_deferred_at(pfn, Some(cpu));
        Ok(())
    }

    /// A traced `mm_page_free_batched` of `pfn` on `cpu`: the commit of the free its
    /// `mm_page_free` announced, which goes on the list now (`free_unref_folios`,
    /// `free_unref_page_list`), the single frees deferred before a batch's first commit
    /// committed first; without one, a free of its own.
    #[inline(always)]
    pub(super) fn commit_batched(
        &mut self,
        ev: &Event<'_>,
        cpu: u32,
        pfn: u64,
        inferred: Inferred,
    ) -> io::Result<()> {
        let list = &mut self.deferred[cpu as usize];
        let at = list.iter().position(|d| d.pfn == pfn);
        let (Some(i), Some(c)) = (at, self.frames.deferred_at(pfn)) else {
            if let Some(c) = self.frames.deferred_at(pfn) {
                self.flush_deferred(c)?;
            }
            self.zone_for(pfn)?;
            return self.free_traced(ev, cpu, pfn, 0, inferred);
        };
        debug_assert_eq!(c, cpu);
        // The batch's first commit: the frees before its pages were single ones,
        // committed at once, and so were an interrupt's among them (the walk's
        // `interrupts_within`: the task holds no lists while it prints its batch).
        let first = !self.batching[cpu as usize];
        let before: Vec<Deferred> = if first {
            let mut b: Vec<Deferred> = list.drain(..i).collect();
            if !in_interrupt(ev.who) && !list.is_empty() {
                b.extend(list.extract_if(1.., |d| in_interrupt(d.who)));
            }
            b
        } else {
            Vec::new()
        };
        let d = list.remove(if first { 0 } else { i });
        self.commit_frees(cpu, &before)?;
        if first {
            self.note_commit(ev, cpu);
        } else {
            self.commit_cut(ev, cpu, pfn)?;
        }
        self.frames.set_deferred_at(pfn, None);
        self.batching[cpu as usize] = true;
        self.counts.batched_duplicates += 1;
        let e = Event {
            cpu: ev.cpu,
            ts_ns: ev.ts_ns,
            page: d.page,
            who: ev.who,
            kind: EventKind::Free {
                pfn,
                order: d.order,
            },
        };
        self.free_traced(&e, cpu, pfn, d.order, d.inferred)
    }
}

/// The line is an interrupt's (softirq, hardirq or NMI).
pub(super) fn in_interrupt(who: Who) -> bool {
    who.ctx().softirq() || who.ctx().hardirq()
}
