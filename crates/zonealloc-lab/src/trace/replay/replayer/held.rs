//! Frees that find their CPU's lists held: an interrupt that cuts into a refill, a drain or
//! a batch's commits.
//!
//! `rmqueue_pcplist` holds the CPU's lists of a zone (`pcp_spin_trylock`: the task pinned and
//! the lists' spin lock, two preempt levels) from before its refill (`rmqueue_bulk`, printing
//! `mm_page_alloc_zone_locked ... percpu_refill=1`) until the page is off the list; the
//! allocation is printed (`mm_page_alloc`) after that. A softirq or hardirq that frees a page
//! of the same zone in between finds the lock taken, and `__free_frozen_pages` frees it to the
//! buddy (`free_one_page`): neither the list nor its `alloc_factor` sees the free.
//!
//! 7.2-8g p_thp, CPU 2: the refill of 504 pages at 755.240537 is followed by 13 frees at
//! `..s3.` (755.241894..755.242466) and then the allocation at 755.242525; the next refill is
//! 1008 pages (`alloc_factor` kept), and the freed pages (0x104a4b, 0x103bc5, ...) come back
//! only through a refill from the buddy at 761.5. Replayed onto the list, the 13 frees halved
//! `alloc_factor` to 0 and the replay refilled 63, 126, 252, 504, 1008, 2016: 441 pages more.
//!
//! A free's drain holds them the same way: `free_frozen_page_commit` (7.2;
//! `free_unref_page_commit` in 6.1 and 6.12) calls `free_pcppages_bulk` with the lists held
//! (`pcp_spin_trylock`), and that takes the zone lock with interrupts off
//! (`spin_lock_irqsave`; 7.2 `guard(spinlock_irqsave)`), so its `mm_page_pcpu_drain` lines
//! show `d` and one level more. An interrupt raised meanwhile comes in when the zone lock lets
//! interrupts on again, the lists still held: its frees, stamped with the draining task's
//! pid, go to the buddy until the task's next event. 7.2-4g-loads p_fork, CPU 3:
//! `kmem-phases-412`'s free of 0x10b67d drains 63 pages (`d..3.`, 51.372496-.372641), a
//! softirq frees 24 pages (`..s3.`, 51.372773-.372845) and the task allocates next; the
//! kernel's list did not grow by them (its next drain came 24 pages of frees later than
//! ours), and 21 of them came back only through refills. A worker's drain
//! (`pcp_spin_lock_nopin`) may hold another CPU's lists (`__drain_all_pages`), so only a
//! free's counts.
//!
//! The batched free path holds them too: `free_unref_page_list` (6.1) and `free_unref_folios`
//! (6.12, 7.2) take the lists with `pcp_spin_trylock` at a batch's first commit of a zone and
//! keep them, interrupts on, until the batch ends (6.1 lets go every `SWAP_CLUSTER_MAX` pages,
//! 7.2 when `free_frozen_page_commit` returns false), printing `mm_page_free_batched` before
//! each commit. An interrupt's free between two commits of one batch finds them held and goes
//! to the buddy (`free_unref_page` in 6.1 and 6.12, `__free_frozen_pages` in 7.2:
//! `pcp_spin_trylock` fails, `free_one_page`). The trace shows it: the interrupt's lines carry
//! the interrupted task's pid and at least its commit's preempt depth, and that task's next
//! event on the CPU is the batch's next commit ([`BatchHold`]).
//!
//! 6.1-4g-more p_memcg, CPU 2: `kmem-phases-603` commits a batch at depth 2 (`...2.`, last at
//! 265.081151), a softirq frees three order-2 pages at `..s3.` (265.081318-265.081341), and
//! the batch goes on (265.081394). The kernel drains no page for them; its next drain, at
//! 265.081581, is the batch's own (1008 pages, `free_factor` 4). Onto the list, the first
//! order-2 free with `free_factor` set drained the whole list (`free_high`: 620 pages), and
//! the window's drains were 2.77% off the kernel's.

use std::io;

use super::Replayer;
use crate::trace::parse::{Event, EventKind};
use crate::trace::replay::infer::pcp_state::went_to_buddy;

#[cfg(test)]
mod tests;

/// A CPU's batched commits and the interrupts that cut into them: the committing task, the
/// preempt depth of its last commit (`mm_page_free_batched`), and the frees interrupts
/// traced since, the last of the CPU's deferred frees. They found the lists held if the
/// task's next event is the batch's next commit ([`Replayer::commit_cut`]).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct BatchHold {
    pid: Option<u32>,
    depth: Option<u8>,
    cut: usize,
}

/// Preempt levels `pcp_spin_trylock` adds (`pcpu_task_pin` and the spin lock): an interrupt
/// that cut into the held lists shows at least these.
const HELD_DEPTH: u8 = 2;

/// A CPU's lists of one zone held across a traced section with interrupts off (the zone
/// lock's): by whom, and the preempt depth an interrupt that cuts in shows at least.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Held {
    zone: usize,
    pid: Option<u32>,
    depth: u8,
}

impl Replayer {
    /// Whether the traced free `ev` of frame `pfn` on `cpu` found the CPU's lists of its zone
    /// held by a refill or a drain it interrupted: stamped with the holder's pid, at least
    /// the depth it holds them at (see the module's comment).
    #[inline(always)]
    pub(super) fn lists_held_for(&self, ev: &Event<'_>, cpu: u32, pfn: u64) -> bool {
        let ctx = ev.who.ctx();
        if !(ctx.softirq() || ctx.hardirq()) {
            return false;
        }
        // One the list walk saw go to the buddy (`infer/pcp_state/irq_fate.rs`): its lists
        // were held by a section the trace does not print (a list take, a single free's
        // commit).
        if went_to_buddy(&self.held_frees, ev, cpu) {
            return true;
        }
        let Some(h) = self.held.get(cpu as usize).copied().flatten() else {
            return false;
        };
        let deep = ctx.preempt_depth().is_some_and(|d| d >= h.depth);
        deep && ev.who.pid() == h.pid && Some(h.zone) == self.geo.zone_of(pfn)
    }

    /// Follows which zone's lists a traced section holds on `cpu`: from a refill's
    /// `percpu_refill=1`, or a drain's `mm_page_pcpu_drain` outside an interrupt, to the
    /// CPU's next event outside an interrupt (the allocation, the task's next free, at the
    /// latest); frees in an interrupt keep it.
    #[inline(always)]
    pub(super) fn track_held(&mut self, ev: &Event<'_>, cpu: u32) {
        let ctx = ev.who.ctx();
        let interrupt = ctx.softirq() || ctx.hardirq();
        match ev.kind {
            EventKind::ZoneLocked {
                pfn,
                percpu_refill: true,
                ..
            } => self.hold(ev, cpu, pfn, Some(HELD_DEPTH)),
            // `free_pcppages_bulk` runs with the lists held and the zone lock's interrupts
            // off (`d`; 6.1, 6.12 `spin_lock_irqsave`, 7.2 `guard(spinlock_irqsave)`): the
            // lists stay held one level below the drain's lines. A free's drain
            // (`free_frozen_page_commit`, `free_unref_page_commit`) holds this CPU's lists
            // with `pcp_spin_trylock`; a worker's `pcp_spin_lock_nopin` (one level) may hold
            // another CPU's (`__drain_all_pages` -> `drain_pages_zone`), left out.
            EventKind::PcpuDrain { pfn, .. } if !interrupt => {
                let depth = ctx.preempt_depth().filter(|&d| d > HELD_DEPTH);
                self.hold(ev, cpu, pfn, depth.map(|d| d - 1));
            }
            EventKind::Free { .. } if interrupt => {}
            _ => {
                if let Some(h) = self.held.get_mut(cpu as usize) {
                    *h = None;
                }
            }
        }
    }

    /// `cpu`'s lists of `pfn`'s zone held by `ev`'s task, cut into at `depth` or deeper
    /// (none held without a depth).
    #[inline(always)]
    fn hold(&mut self, ev: &Event<'_>, cpu: u32, pfn: u64, depth: Option<u8>) {
        let held = depth.and_then(|depth| {
            let zone = self.geo.zone_of(pfn)?;
            Some(Held {
                zone,
                pid: ev.who.pid(),
                depth,
            })
        });
        if let Some(h) = self.held.get_mut(cpu as usize) {
            *h = held;
        }
    }
}

impl Replayer {
    /// Whether a traced free `ev` on `cpu`, while a batch commits there, is an interrupt's
    /// that cut into the batch (the interrupted task's pid, at least its commit's depth):
    /// the batch is not over, and the free waits with the batch's deferred frees for the
    /// task's next event ([`Replayer::commit_cut`]).
    pub(super) fn cut_into_batch(&mut self, ev: &Event<'_>, cpu: u32) -> bool {
        let ctx = ev.who.ctx();
        let Some(h) = self.batch_holds.get_mut(cpu as usize) else {
            return false;
        };
        let deep = match (ctx.preempt_depth(), h.depth) {
            (Some(d), Some(at)) => d >= at,
            _ => false,
        };
        let cut = (ctx.softirq() || ctx.hardirq()) && deep && ev.who.pid() == h.pid;
        if cut {
            h.cut += 1;
        }
        cut
    }

    /// Whether interrupts' frees wait in `cpu`'s deferred frees for the batch's next commit.
    pub(super) fn batch_cut(&self, cpu: u32) -> bool {
        self.batch_holds
            .get(cpu as usize)
            .is_some_and(|h| h.cut > 0)
    }

    /// A batch's commit `ev` of `pfn` on `cpu` (not its first): the interrupts' frees since
    /// the last commit found the lists held and went to the buddy before it, those of the
    /// commit's zone (another zone's lists have a lock of their own). Then `ev` is the last
    /// commit.
    pub(super) fn commit_cut(&mut self, ev: &Event<'_>, cpu: u32, pfn: u64) -> io::Result<()> {
        let c = cpu as usize;
        let h = std::mem::take(&mut self.batch_holds[c]);
        if h.cut == 0 {
            self.note_commit(ev, cpu);
            return Ok(());
        }
        self.commit_interrupts(cpu, h.cut, self.geo.zone_of(pfn))?;
        self.note_commit(ev, cpu);
        Ok(())
    }

    /// The last `cut` of `cpu`'s deferred frees, those of interrupts, found the lists held:
    /// those of `zone` go to the buddy now, the others (another zone's lists have a lock of
    /// their own) onto their lists.
    fn commit_interrupts(&mut self, cpu: u32, cut: usize, zone: Option<usize>) -> io::Result<()> {
        let list = &mut self.deferred[cpu as usize];
        let n = list
            .iter()
            .rev()
            .take(cut)
            .take_while(|d| d.who.ctx().softirq() || d.who.ctx().hardirq())
            .count();
        let mut cut: Vec<_> = list.drain(list.len() - n..).collect();
        for d in &mut cut {
            d.held = self.geo.zone_of(d.pfn) == zone;
        }
        self.commit_frees(cpu, &cut)
    }

    /// Whether the drain line `ev` of `pfn` on `cpu`, after interrupts' frees that cut into a
    /// batch, goes on a drain those frees cut into: 7.2's `free_frozen_page_commit` drains
    /// in `batch`-sized `free_pcppages_bulk` calls (`drain_in_batches`), each taking the zone
    /// lock with interrupts off (`guard(spinlock_irqsave)`) and letting them on at its end,
    /// the lists still held (`pcp_spin_unlock` comes after). An interrupt raised during a
    /// chunk comes in there, at the drain's depth; its frees find the lists held and go to
    /// the buddy, and the next chunk's lines follow. Then the interrupts' frees are
    /// committed now, to the buddy, and the batch's own frees wait for its next commits.
    /// (6.1 and 6.12 drain in one call: an interrupt comes in after the whole drain.)
    ///
    /// 7.2-4g-6cpu p_idle, CPU 1: `kmem-phases-941`'s batch commit at 282.393533 drains 2016
    /// pages, 819 (`d..3.`, 282.393545-.397611, 13 chunks of 63), then a softirq frees 17
    /// pages (`..s3.`, 282.397670-.397714), then 1197 (282.397726-.398920, 19 chunks), then
    /// the batch commits its other 27 frees (`...2.`, 282.398922). Read as a new drain, the
    /// line committed the 27 at once, and their commit lines committed them again: CPU 1's
    /// list held 27 pages more than the kernel's, and its worker at 284.805023 drained 349
    /// pages where the kernel's drained 322.
    pub(super) fn drain_resumed(&mut self, ev: &Event<'_>, cpu: u32, pfn: u64) -> io::Result<bool> {
        let ctx = ev.who.ctx();
        let Some(zone) = self.geo.zone_of(pfn) else {
            return Ok(false);
        };
        let chunked = self.zones[zone].config().pcp.drain_in_batches;
        let held = self.held.get(cpu as usize).copied().flatten();
        let resumed = held.is_some_and(|h| h.zone == zone && h.pid == ev.who.pid());
        if !chunked || !resumed || ctx.softirq() || ctx.hardirq() {
            return Ok(false);
        }
        let cut = std::mem::take(&mut self.batch_holds[cpu as usize].cut);
        self.commit_interrupts(cpu, cut, Some(zone))?;
        Ok(true)
    }

    /// `ev` on `cpu` was a batch's commit: the lists are held from it.
    pub(super) fn note_commit(&mut self, ev: &Event<'_>, cpu: u32) {
        if let Some(h) = self.batch_holds.get_mut(cpu as usize) {
            *h = BatchHold {
                pid: ev.who.pid(),
                depth: ev.who.ctx().preempt_depth(),
                cut: 0,
            };
        }
    }
}
