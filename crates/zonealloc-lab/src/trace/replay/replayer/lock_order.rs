//! A free's drain in the trace's order of zone-lock sections across CPUs (`lock_order`).
//!
//! A free whose commit finds its list full drains it with `free_pcppages_bulk`, which takes
//! the zone lock. 7.2's `free_frozen_page_commit` drains `to_free` in `batch`-sized calls,
//! each under its own zone-lock hold, with `pcp_spin_unlock` and `pcp_spin_trylock` between
//! two chunks; 6.1's and 6.12's `free_unref_page_commit` drain in one call. Either way the
//! drain waits for the zone lock while another CPU holds it, and another CPU's refill
//! (`rmqueue_bulk` under the zone lock, printing `mm_page_alloc_zone_locked ...
//! percpu_refill=1`) can take it between two chunks: that refill then takes what the buddy
//! holds before the next chunk's pages go back. The replay used to drain a free's whole
//! `to_free` at its commit, and a refill at its `mm_page_alloc` (after its `zone_locked`
//! lines), so where the kernel interleaved them the refill took pages the kernel's did not.
//!
//! 7.2-8g-8cpu p_prodcons: CPU 1's free at 71.246447 drains 63 pages (`d..3.`,
//! 71.246451-.246520), CPU 0's refill of 126 pages holds the zone lock (71.246522-.246626,
//! first page 0x177966; its `mm_page_alloc` at 71.246629), and CPU 1's second chunk of 60
//! pages starts at 71.246628. Drained whole at the free, ours put the second chunk's pages
//! at the head of the buddy's lists before CPU 0's refill, which took them.
//!
//! So with `lock_order` a free's commit leaves its drain pending ([`Zone::free_on_pending`])
//! and each chunk is applied at its first traced line: where the trace's drain lines on the
//! CPU (the task's own, not an interrupt's or a worker's) have shown more pages than the
//! chunks applied so far. A chunk due while another CPU's refill in the zone is open (its
//! `zone_locked` lines seen, its allocation not yet, the last of them at most
//! [`REFILL_WAIT_NS`] before the chunk's first line) waits for that allocation: the refill
//! held the zone lock before the chunk's first line. 7.2-2g p_prodcons shows the same on
//! one call's drain: CPU 0's refill holds the zone lock (110.673088-.673396) before CPU 1's
//! drain (110.673807), though CPU 1's commit came first (110.672217).
//!
//! Where the draining CPU moves on before the refill's `mm_page_alloc` line (7.2-2g: CPU 1
//! commits more frees at 110.674579, CPU 0 allocates at 110.675353), the drain is applied
//! then, the refill after it; with `--refill-ahead` the refill and its allocation's take
//! are made first ([`Replayer::refill_ahead`]). Off by default: on, it moves whole-file
//! figures away (a free on the refilling CPU before the line then drains where the
//! kernel's did not: the lists' state there was off before, hidden by the late refill).
//!
//! Where the kernel shows no more drain
//! lines (ours drains where the kernel did not, or more), what is left is applied at the
//! CPU's next event of any other kind (not an interrupt's free, which found the lists held),
//! before any other use of the CPU's lists (a free, an allocation, a worker's run), and at
//! the end of the input: nothing is lost or applied twice.
//!
//! [`Zone::free_on_pending`]: zonealloc::Zone::free_on_pending

use std::io;

use zonealloc::{AllocRequest, CpuId, Order, PendingDrain, Pfn};

use super::Replayer;
use crate::trace::parse::{Event, EventKind, PagePtr, Who};
use crate::trace::replay::infer::kernel::Inferred;

#[cfg(test)]
mod tests;

/// A CPU's drain decided at a free's commit and not applied in full yet. (`waits_on` is
/// read at a chunk's first line and kept while that refill is open.)
#[derive(Clone, Copy, Debug)]
pub(super) struct Pending {
    zone: usize,
    drain: PendingDrain,
    /// Pages the trace's drain lines on the CPU have shown since the commit.
    traced: u64,
    /// Pages our chunks drained so far.
    applied: u64,
    /// The CPU whose open refill a due chunk waits for.
    waits_on: Option<u32>,
}

/// A CPU's open refill: its zone, and the order and migratetype (the trace's numbering) of
/// its first `zone_locked` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Refill {
    pub(super) zone: usize,
    pub(super) order: u8,
    pub(super) migratetype: u8,
    /// The time of its last `zone_locked` line.
    pub(super) last_ns: Option<u64>,
    /// The refilling task.
    pid: Option<u32>,
}

/// The block an open refill's allocation took ahead of its `mm_page_alloc` line
/// ([`Replayer::refill_ahead`]), ours, for that line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Taken {
    zone: usize,
    order: u8,
    ours: u64,
    pid: Option<u32>,
}

/// A drain's chunk waits for another CPU's open refill only where its first line came at
/// most this long after the refill's last `zone_locked` line: it waited for the zone lock
/// the refill held. An older one is a refill whose allocation the trace does not show
/// (`alloc_pages_bulk`, replayed by the untraced takes' inference), or not yet: 6.12-3g-16cpu-wq
/// p_prodcons, `dash-340` refills CPU 7's list at 22.605873 and allocates nothing traced;
/// CPU 10's drain 16 ms later did not wait for it. A wait: 7.2-2g p_prodcons, CPU 1's
/// drain at 110.673807, 0.41 ms after CPU 0's refill ended (110.673396).
const REFILL_WAIT_NS: u64 = 1_000_000;

impl Refill {
    /// Whether a drain line at `ts_ns` waited for this refill's zone-lock hold.
    pub(super) fn recent(self, ts_ns: Option<u64>) -> bool {
        match (self.last_ns, ts_ns) {
            (Some(last), Some(ts)) => ts.saturating_sub(last) <= REFILL_WAIT_NS,
            _ => false,
        }
    }
}

/// Per-CPU state of the lock order ([`Replayer::lock_order`]).
#[derive(Clone, Debug, Default)]
pub(super) struct LockOrder {
    /// Per CPU: its pending drain.
    pending: Vec<Option<Pending>>,
    /// Per CPU: its open refill (`zone_locked ... percpu_refill=1` lines seen, its
    /// allocation not yet).
    pub(super) refilling: Vec<Option<Refill>>,
    /// Whether any CPU has a pending drain (the per-event test).
    any_pending: bool,
    /// Whether any CPU has a refill open.
    pub(super) any_refilling: bool,
    /// Chunks that waited for another CPU's refill.
    pub(super) waited: u64,
    /// Chunks applied at their traced line.
    pub(super) at_lines: u64,
    /// Pending drains applied in full at a later event of their CPU (no more lines).
    pub(super) flushed: u64,
    /// Refills made ahead of their allocation, for a drain applied before it.
    pub(super) ahead: u64,
    /// Per CPU: the block its refill's allocation took ahead.
    taken: Vec<Option<Taken>>,
    /// Whether any CPU has one.
    any_taken: bool,
    /// Blocks taken ahead that no allocation of the task claimed: freed back.
    pub(super) given_back: u64,
    /// Make a refill a chunk waits for ahead of its allocation where the drain's CPU moves
    /// on first ([`Replayer::refill_ahead`]; `--refill-ahead` sets it).
    pub(super) ahead_on: bool,
}

impl LockOrder {
    pub(super) fn new(cpus: u32) -> LockOrder {
        LockOrder {
            pending: vec![None; cpus as usize],
            refilling: vec![None; cpus as usize],
            taken: vec![None; cpus as usize],
            ..LockOrder::default()
        }
    }

    /// Whether a refill a chunk waits for is made ahead of its allocation where the drain's
    /// CPU moves on first ([`Replayer::refill_ahead`]).
    pub(super) fn set_ahead(&mut self, on: bool) {
        self.ahead_on = on;
    }

    /// Whether any CPU has a pending drain.
    #[inline(always)]
    pub(super) fn any_pending(&self) -> bool {
        self.any_pending
    }
}

/// A stamp for the zone events a chunk records: on `cpu`, at `ts_ns`.
fn stamp(cpu: u32, ts_ns: Option<u64>) -> Event<'static> {
    Event {
        cpu: Some(cpu),
        ts_ns,
        page: PagePtr::Present,
        who: Who::UNKNOWN,
        kind: EventKind::FreeBatched { pfn: 0 },
    }
}

impl Replayer {
    /// Frees our block `ours` of `ord` in zone `z` on `cpu` with the drain its commit decides
    /// on left pending (the caller applied the CPU's pending drain first: the kernel's
    /// commit drains before the next free on the CPU commits).
    pub(super) fn free_pending(
        &mut self,
        cpu: u32,
        z: usize,
        ours: u64,
        ord: zonealloc::Order,
    ) -> Result<(), zonealloc::FreeError> {
        let Some(drain) = self.zones[z].free_on_pending(CpuId(cpu), Pfn(ours), ord)? else {
            return Ok(());
        };
        if let Some(p) = self.lock.pending.get_mut(cpu as usize) {
            *p = Some(Pending {
                zone: z,
                drain,
                traced: 0,
                applied: 0,
                waits_on: None,
            });
            self.lock.any_pending = true;
        }
        Ok(())
    }

    /// Before event `ev` on `cpu` is replayed (after the commits it makes): a drain line of
    /// the CPU's own pending drain applies the chunks its lines are due (unless another CPU's
    /// refill went first); any other event of the CPU but an interrupt's free applies what is
    /// left.
    #[inline(never)]
    pub(super) fn lock_order_at(
        &mut self,
        ev: &Event<'_>,
        cpu: u32,
        inferred: Inferred,
    ) -> io::Result<()> {
        let c = cpu as usize;
        let Some(p) = self.lock.pending.get(c).copied().flatten() else {
            return Ok(());
        };
        let ctx = ev.who.ctx();
        let interrupt = ctx.softirq() || ctx.hardirq();
        match ev.kind {
            // The free's own drain: not a worker's, not one the kernel side found no free
            // for. An interrupt's lines are its own free's (an interrupt that cut into a
            // task's drain found the lists held: no drain). 7.2-4g-6cpu-wq p_prodcons: the
            // RCU softirq's free on CPU 1 drains at `d.s4.` (28.168604-.168692) after CPU
            // 0's refill (28.168146-.168513, allocation at 28.168693).
            EventKind::PcpuDrain { pfn, order, .. }
                if !ev.who.is_worker_drain()
                    && !matches!(inferred, Inferred::Drain { .. })
                    && self.geo.zone_of(pfn) == Some(p.zone) =>
            {
                if let Some(Some(p)) = self.lock.pending.get_mut(c) {
                    p.traced += 1u64 << order.min(63);
                }
                self.apply_due(cpu, ev.ts_ns)
            }
            // Found the lists held ([`super::held`]): the drain goes on.
            EventKind::Free { .. } if interrupt => Ok(()),
            _ => self.flush_pending(cpu, ev.ts_ns),
        }
    }

    /// Applies `cpu`'s chunks its traced lines are due, unless another CPU's refill in the
    /// zone is open (it took the zone lock first: the chunk waits for its allocation).
    fn apply_due(&mut self, cpu: u32, ts_ns: Option<u64>) -> io::Result<()> {
        let c = cpu as usize;
        while let Some(p) = self.lock.pending.get(c).copied().flatten() {
            if p.applied >= p.traced {
                return Ok(());
            }
            // A chunk that waits keeps waiting while the refill is open; whether it waits
            // is read at its first line.
            let open = |o: u32| {
                let r = self.lock.refilling.get(o as usize).copied().flatten();
                r.is_some_and(|r| r.zone == p.zone)
            };
            let still = p.waits_on.filter(|&o| open(o));
            let first = still.map(|o| o as usize).or_else(|| {
                self.lock.refilling.iter().enumerate().position(|(o, r)| {
                    o != c && r.is_some_and(|r| r.zone == p.zone && r.recent(ts_ns))
                })
            });
            if let Some(Some(p)) = self.lock.pending.get_mut(c) {
                p.waits_on = first.map(|o| o as u32);
            }
            if first.is_some() {
                if still.is_none() {
                    self.lock.waited += 1;
                }
                return Ok(());
            }
            self.lock.at_lines += 1;
            self.apply_chunk(cpu, ts_ns)?;
        }
        Ok(())
    }

    /// One chunk of `cpu`'s pending drain, its events counted on `cpu` at `ts_ns`.
    fn apply_chunk(&mut self, cpu: u32, ts_ns: Option<u64>) -> io::Result<()> {
        let c = cpu as usize;
        let Some(mut p) = self.lock.pending.get(c).copied().flatten() else {
            return Ok(());
        };
        let before = p.drain.pages_left();
        let done = self.zones[p.zone].drain_pending(&mut p.drain);
        p.applied += u64::try_from(before - p.drain.pages_left()).unwrap_or(0);
        self.lock.pending[c] = if done { None } else { Some(p) };
        if done {
            self.lock.any_pending = self.lock.pending.iter().any(Option::is_some);
        }
        self.flush_zone_events(&stamp(cpu, ts_ns), p.zone, cpu)
    }

    /// Applies all of `cpu`'s pending drain (`ts_ns`: when, for `--emit`). Where a chunk is
    /// due that waits for other CPUs' refills (its first line came after their `zone_locked`
    /// lines), those refills are made first, ahead of their allocations
    /// ([`Replayer::refill_ahead`]).
    pub(super) fn flush_pending(&mut self, cpu: u32, ts_ns: Option<u64>) -> io::Result<()> {
        let c = cpu as usize;
        let Some(p) = self.lock.pending.get(c).copied().flatten() else {
            return Ok(());
        };
        self.lock.flushed += 1;
        if let Some(o) = p.waits_on.filter(|_| self.lock.ahead_on) {
            if self.lock.refilling[o as usize].is_some_and(|r| r.zone == p.zone) {
                self.refill_ahead(o, ts_ns)?;
            }
        }
        while self.lock.pending.get(c).is_some_and(Option::is_some) {
            self.apply_chunk(cpu, ts_ns)?;
        }
        Ok(())
    }

    /// Applies every CPU's pending drain (before the end state is read).
    pub(super) fn flush_all_pending(&mut self) -> io::Result<()> {
        for cpu in 0..self.geo.cpus {
            self.flush_pending(cpu, None)?;
        }
        Ok(())
    }

    /// `cpu`'s open refill made now, before the allocation that makes it: 7.2-2g
    /// p_prodcons, CPU 0's refill holds the zone lock (95 lines, 110.673088-.673396), CPU
    /// 1's drain follows (110.673807-.674571; its free's commit came at 110.672217), and CPU
    /// 1 commits more frees (110.674579) before CPU 0's `mm_page_alloc` (110.675353). The
    /// drain has to be applied at CPU 1's commits, and the refill before it. The request is
    /// the line's order and migratetype (`rmqueue_bulk` prints the requested type), past
    /// the watermarks (the trace shows the zone served it). `rmqueue_pcplist` takes the
    /// allocation's block off the list as soon as the refill is on it, so the block is taken
    /// now too and kept for the task's `mm_page_alloc` line ([`Replayer::taken_ahead`]);
    /// left on the list, it made a free on the CPU before that line drain: 7.2-3g-16cpu
    /// p_pressure, CPU 5's THP refill of two order-9 blocks (288.802588-.802594) and its
    /// allocation at 288.805844, with `kworker/5:1`'s free at 288.804390 between.
    pub(super) fn refill_ahead(&mut self, cpu: u32, ts_ns: Option<u64>) -> io::Result<()> {
        let c = cpu as usize;
        let Some(r) = self.lock.refilling.get_mut(c).and_then(Option::take) else {
            return Ok(());
        };
        self.lock.any_refilling = self.lock.refilling.iter().any(Option::is_some);
        let (Some(mt), Some(order)) = (self.gfp_type(r.migratetype), Order::new(r.order)) else {
            return Ok(());
        };
        self.give_back(cpu, ts_ns)?;
        let req = AllocRequest::new(mt).on_cpu(CpuId(cpu)).no_watermarks();
        if let Ok(p) = self.zones[r.zone].alloc_with(order, req) {
            self.lock.ahead += 1;
            self.lock.taken[c] = Some(Taken {
                zone: r.zone,
                order: r.order,
                ours: p.0,
                pid: r.pid,
            });
            self.lock.any_taken = true;
        }
        self.flush_zone_events(&stamp(cpu, ts_ns), r.zone, cpu)
    }

    /// The block taken ahead for a traced allocation of `order` in zone `z` on `cpu` by
    /// `pid`, if its refill's allocation took one ([`Replayer::refill_ahead`]).
    #[inline(never)]
    pub(super) fn taken_ahead(
        &mut self,
        cpu: u32,
        z: usize,
        order: u8,
        pid: Option<u32>,
    ) -> Option<u64> {
        let c = cpu as usize;
        let t = self.lock.taken.get(c).copied().flatten()?;
        if t.zone != z || t.order != order || t.pid != pid {
            return None;
        }
        self.lock.taken[c] = None;
        self.lock.any_taken = self.lock.taken.iter().any(Option::is_some);
        Some(t.ours)
    }

    /// Whether any CPU holds a block taken ahead.
    #[inline(always)]
    pub(super) fn any_taken(&self) -> bool {
        self.lock.any_taken
    }

    /// Frees back the block taken ahead on `cpu` that no allocation claimed (the task's next
    /// event was not it): onto the list it came off.
    fn give_back(&mut self, cpu: u32, ts_ns: Option<u64>) -> io::Result<()> {
        let c = cpu as usize;
        let Some(t) = self.lock.taken.get_mut(c).and_then(Option::take) else {
            return Ok(());
        };
        self.lock.any_taken = self.lock.taken.iter().any(Option::is_some);
        self.lock.given_back += 1;
        let order = Order::new(t.order).unwrap_or(Order::ZERO);
        self.zones[t.zone]
            .free_on(CpuId(cpu), Pfn(t.ours), order)
            .map_err(|e| io::Error::other(format!("giving back {:#x}: {e}", t.ours)))?;
        self.flush_zone_events(&stamp(cpu, ts_ns), t.zone, cpu)
    }

    /// Gives back every block taken ahead (at the end of the input).
    pub(super) fn give_all_back(&mut self) -> io::Result<()> {
        for cpu in 0..self.geo.cpus {
            self.give_back(cpu, None)?;
        }
        Ok(())
    }

    /// After event `ev` on `cpu` was replayed: a refill's `zone_locked` line opens a refill on
    /// the CPU; its next other event (its allocation, which replays the refill), not an
    /// interrupt's free, closes it, and the chunks that waited for it are applied.
    #[inline(always)]
    pub(super) fn lock_order_after(&mut self, ev: &Event<'_>, cpu: u32) -> io::Result<()> {
        let c = cpu as usize;
        if self.lock.any_taken {
            let ctx = ev.who.ctx();
            let task = !(ctx.softirq() || ctx.hardirq());
            let owner = self.lock.taken[c].is_some_and(|t| t.pid == ev.who.pid());
            if task && owner {
                self.give_back(cpu, ev.ts_ns)?;
            }
        }
        match ev.kind {
            EventKind::ZoneLocked {
                pfn,
                order,
                migratetype,
                percpu_refill: true,
            } => {
                let Some(zone) = self.geo.zone_of(pfn) else {
                    return Ok(());
                };
                if let Some(r) = self.lock.refilling.get_mut(c) {
                    match r {
                        Some(r) if r.zone == zone => r.last_ns = ev.ts_ns,
                        // The first line of the refill names it.
                        _ => {
                            *r = Some(Refill {
                                zone,
                                order,
                                migratetype,
                                last_ns: ev.ts_ns,
                                pid: ev.who.pid(),
                            })
                        }
                    }
                    self.lock.any_refilling = true;
                }
                Ok(())
            }
            _ if !self.lock.any_refilling => Ok(()),
            EventKind::Free { .. } if ev.who.ctx().softirq() || ev.who.ctx().hardirq() => Ok(()),
            _ => {
                let Some(Refill { zone: z, .. }) =
                    self.lock.refilling.get_mut(c).and_then(Option::take)
                else {
                    return Ok(());
                };
                self.lock.any_refilling = self.lock.refilling.iter().any(Option::is_some);
                if !self.lock.any_pending {
                    return Ok(());
                }
                for other in 0..self.geo.cpus {
                    let waits = self.lock.pending[other as usize]
                        .is_some_and(|p| p.zone == z && p.applied < p.traced);
                    if waits {
                        self.apply_due(other, ev.ts_ns)?;
                    }
                }
                Ok(())
            }
        }
    }
}
