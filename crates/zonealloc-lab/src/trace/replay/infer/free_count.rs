//! Each CPU's `free_count` and `PCPF_PREV_FREE_HIGH_ORDER` at the window's start (6.7 on),
//! from the trace before the start marker. zoneinfo prints neither, yet both decide drains:
//! `nr_pcp_free` drains `clamp(free_count, batch, high - batch)` pages, and a free of order
//! 1..=3 is a `free_high` one (the whole list, up to `batch << CONFIG_PCP_BATCH_SCALE_MAX`)
//! only after another such free and once `free_count` reached `batch` (6.12) or `batch +
//! high_min / 2` (7.2). A replay that started them at 0 drained `batch` pages where the
//! kernel drained hundreds, and kept order-3 blocks the kernel's `free_high` drained.
//!
//! The walk follows the rules that move them, per zone and CPU (7.2's mm/page_alloc.c):
//! - `free_frozen_page_commit` (6.12 `free_unref_page_commit`): each free onto the lists
//!   adds its pages (`if (pcp->free_count < (batch << CONFIG_PCP_BATCH_SCALE_MAX))
//!   pcp->free_count += (1 << order)`), and sets the flag for orders 1..=3, clears it for
//!   any other order;
//! - `rmqueue_pcplist` halves it on every allocation from the lists (`pcp->free_count >>=
//!   1`): an `mm_page_alloc` of an order the lists serve, on that CPU, from that zone.
//!
//! A free is counted at its `mm_page_free` (`mm_page_free_batched` repeats it). Before the
//! trace's first event both are taken as 0: a dozen allocations make the count exact. Where
//! the text shows nothing of a CPU's lists in a zone ([`FreeState::seen`]), the window's first
//! drains may name `free_count` (`start_count/start_free.rs`).
//!
//! The same walk bounds `alloc_factor` from below ([`FreeState::alloc_floor`]), which zoneinfo
//! does not print either: `nr_pcp_alloc` refills an order-0 list with `min(batch <<
//! alloc_factor, max_nr_alloc)` pages and raises the factor when `batch << alloc_factor <=
//! max_nr_alloc` (below `CONFIG_PCP_BATCH_SCALE_MAX`), and `max_nr_alloc` is at least
//! `batch`: a refill of `n` pages leaves the factor at least `log2(n / batch) + 1` (at least
//! 1), and each free onto the lists halves it (`alloc_factor >>= 1`, both commits). The
//! set-up's factor, from the window's first refill (`ListDemand::alloc_factor`), reads a
//! refill `max_nr_alloc` capped as a smaller factor.

use super::free_factor::Rules;
use crate::trace::parse::{Event, EventKind};
use crate::trace::replay::geometry::Geometry;
use crate::trace::replay::replayer::Replayer;
use zonealloc::{CpuId, PcpTuning};

/// One zone's CPU: `free_count` and `PCPF_PREV_FREE_HIGH_ORDER`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FreeState {
    /// `pcp->free_count`.
    pub free_count: i32,
    /// `pcp->flags & PCPF_PREV_FREE_HIGH_ORDER`.
    pub prev_free_high_order: bool,
    /// The least `pcp->alloc_factor` the walk's refills and frees allow.
    pub alloc_floor: u8,
    /// Pages of the order-0 refill going on (`mm_page_alloc_zone_locked`, `percpu_refill=1`).
    refill: i32,
    /// The text showed an allocation or a free of the CPU's in the zone (else the window's
    /// first drains may name `free_count`: `start_count/start_free.rs`).
    pub seen: bool,
}

/// The walk over the text before the marker.
pub struct Walk<'g> {
    geo: &'g Geometry,
    rules: Rules,
    /// Per zone, per CPU.
    state: Vec<Vec<FreeState>>,
}

impl<'g> Walk<'g> {
    /// A walk over `geo`'s zones and CPUs, every count 0.
    pub fn new(geo: &'g Geometry, rules: Rules) -> Self {
        let cpus = geo.cpus.max(1) as usize;
        Walk {
            state: vec![vec![FreeState::default(); cpus]; geo.zones.len()],
            geo,
            rules,
        }
    }

    fn pcp_order(&self, order: u8) -> bool {
        order <= 3 || Some(order) == self.rules.thp_order
    }

    /// The next event.
    pub fn feed(&mut self, ev: &Event<'_>) {
        let Some(cpu) = ev.cpu else { return };
        let cpu = (cpu % self.state.first().map_or(1, Vec::len) as u32) as usize;
        let Some(z) = self.geo.zone_of(ev.kind.pfn()) else {
            return;
        };
        let refill = matches!(
            ev.kind,
            EventKind::ZoneLocked {
                order: 0,
                percpu_refill: true,
                ..
            }
        );
        if !refill {
            self.refilled(cpu);
        }
        match ev.kind {
            EventKind::Alloc { order, .. } if !ev.is_failed_alloc() && self.pcp_order(order) => {
                self.state[z][cpu].free_count >>= 1;
                self.state[z][cpu].seen = true;
            }
            EventKind::Free { order, .. } if self.pcp_order(order) => {
                let cap = self.rules.sizes[z].batch << self.rules.scale_max.unwrap_or(0).min(30);
                let s = &mut self.state[z][cpu];
                s.seen = true;
                s.prev_free_high_order = (1..=3).contains(&order);
                if s.free_count < cap {
                    s.free_count += 1 << order;
                }
                // free_frozen_page_commit (6.12 free_unref_page_commit): `alloc_factor >>= 1`.
                s.alloc_floor >>= 1;
            }
            _ if refill => self.state[z][cpu].refill += 1,
            _ => {}
        }
    }

    /// CPU `cpu`'s order-0 refills are over (its next event is another): each leaves
    /// `alloc_factor` at least `log2(n / batch) + 1` and at least 1 (`nr_pcp_alloc`; see the
    /// module's comment), never above `CONFIG_PCP_BATCH_SCALE_MAX`.
    fn refilled(&mut self, cpu: usize) {
        let max = self.rules.scale_max.unwrap_or(u8::MAX);
        for (z, zone) in self.state.iter_mut().enumerate() {
            let s = &mut zone[cpu];
            let n = std::mem::take(&mut s.refill);
            if n == 0 {
                continue;
            }
            let batch = self.rules.sizes[z].batch.max(1);
            let shift = (n / batch).max(1).ilog2() as u8;
            s.alloc_floor = s.alloc_floor.max((shift + 1).min(max));
        }
    }

    /// Per zone, per CPU: the state after the events fed.
    pub fn finish(mut self) -> Vec<Vec<FreeState>> {
        for cpu in 0..self.state.first().map_or(0, Vec::len) {
            self.refilled(cpu);
        }
        self.state
    }
}

/// The states after the complete lines of `text` (the trace before the marker).
#[cfg(test)]
pub fn walk_text(text: &[u8], geo: &Geometry, rules: Rules) -> Vec<Vec<FreeState>> {
    let mut walk = Walk::new(geo, rules);
    super::free_factor::each_event(text, |ev| walk.feed(ev));
    walk.finish()
}

/// Starts every replayer's zones with `states` (per zone, per CPU: a [`Walk`]'s fed the
/// trace before the marker).
pub fn set(states: &[Vec<FreeState>], replayers: &[Replayer]) {
    for r in replayers {
        for (zone, s) in r.zones.iter().zip(states) {
            for (cpu, s) in s.iter().enumerate() {
                // The set-up's factor where the window's first refill shows more.
                let set_up = zone.pcp_info(CpuId(cpu as u32)).alloc_factor;
                let t = PcpTuning {
                    free_count: Some(s.free_count),
                    prev_free_high_order: Some(s.prev_free_high_order),
                    alloc_factor: Some(set_up.max(s.alloc_floor)),
                    ..PcpTuning::default()
                };
                zone.set_pcp_tuning(CpuId(cpu as u32), t);
            }
        }
    }
}

#[cfg(test)]
#[path = "free_count/tests.rs"]
mod tests;
