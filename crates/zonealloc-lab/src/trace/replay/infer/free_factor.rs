//! Each CPU's `free_factor` at the window's start (kernels before 6.7: 5.15, 6.1, 6.6), from
//! the trace before the start marker. zoneinfo does not print it, yet it decides drains: a
//! free of order 1..=3 on a CPU whose `free_factor` is not 0 drains the CPU's whole list
//! (6.1 `free_unref_page_commit`: `free_high = pcp->free_factor && order && order <=
//! PAGE_ALLOC_COSTLY_ORDER`, then `nr_pcp_free` returns `pcp->count`). On 6.1-8g p_idle the
//! kernel's CPU 1 drained 63, 126, 252 and 504 pages before the marker with no allocation
//! after them (`free_factor` 4), and its first order-1 free in the window drained all 3214
//! pages of its lists; a replay that started at 0 kept them.
//!
//! The walk follows the two rules that move it, per zone and CPU:
//! - `rmqueue_pcplist` halves it on every allocation from the lists (`pcp->free_factor >>=
//!   1`): an `mm_page_alloc` of an order the lists serve, on that CPU, from that zone;
//! - `nr_pcp_free` raises it by one on a drain a free caused (a drain run right after a free
//!   of the CPU's, into the same zone), unless that drain was a `free_high` one: `if (batch <
//!   max_nr_free && pcp->free_factor < CONFIG_PCP_BATCH_SCALE_MAX) pcp->free_factor++`, with
//!   `batch` already shifted by the factor and `max_nr_free = high - batch`, where `high` is
//!   `nr_pcp_high`'s (`min(batch << 2, high)` while kswapd reclaims the zone's node).
//!
//! Drains no free caused (`drain_all_pages`, the vmstat worker's) leave it. Before the
//! trace's first event it is taken as 0: a few allocations make that exact.

use crate::trace::parse::{lines, Event, EventKind, Parser};
use crate::trace::replay::geometry::Geometry;
use crate::trace::replay::replayer::Replayer;
use zonealloc::{CpuId, FreeScaling, PcpTuning, ZoneConfig};

/// One zone's fixed sizes (6.1's `high` is one per zone, as zoneinfo prints it).
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// `pcp->batch`.
    pub batch: i32,
    /// `pcp->high`.
    pub high: i32,
}

/// The walk's rules: the zones' sizes and the kernel's constants.
#[derive(Clone, Debug)]
pub struct Rules {
    /// Per zone of the geometry.
    pub sizes: Vec<Sizes>,
    /// `CONFIG_PCP_BATCH_SCALE_MAX` (6.1's cap on the factor); `None`: uncapped (5.15, 6.6).
    pub scale_max: Option<u8>,
    /// The THP order the lists take besides orders 0..=3 (`pcp_allowed_order`).
    pub thp_order: Option<u8>,
}

/// What a CPU's last event was, as far as its next drain run cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Last {
    /// A free onto the lists of a zone, of an order.
    Free { zone: usize, order: u8 },
    /// A drain (the run goes on).
    Drain,
    /// Anything else.
    Other,
}

/// The walk over the text before the marker.
pub struct Walk<'g> {
    geo: &'g Geometry,
    rules: Rules,
    /// Per zone, per CPU.
    factor: Vec<Vec<u8>>,
    last: Vec<Last>,
    /// Nodes whose kswapd is awake (`ZONE_RECLAIM_ACTIVE` on their zones).
    reclaiming: Vec<u32>,
}

impl<'g> Walk<'g> {
    /// A walk over `geo`'s zones and CPUs, every factor 0.
    pub fn new(geo: &'g Geometry, rules: Rules) -> Self {
        let cpus = geo.cpus.max(1) as usize;
        Walk {
            factor: vec![vec![0; cpus]; geo.zones.len()],
            last: vec![Last::Other; cpus],
            reclaiming: Vec::new(),
            geo,
            rules,
        }
    }

    fn pcp_order(&self, order: u8) -> bool {
        order <= 3 || Some(order) == self.rules.thp_order
    }

    /// The next event.
    pub fn feed(&mut self, ev: &Event<'_>) {
        match ev.kind {
            EventKind::KswapdWake { nid, .. } => {
                if !self.reclaiming.contains(&nid) {
                    self.reclaiming.push(nid);
                }
                return;
            }
            EventKind::KswapdSleep { nid } => {
                self.reclaiming.retain(|&n| n != nid);
                return;
            }
            _ => {}
        }
        let Some(cpu) = ev.cpu else { return };
        let cpu = (cpu % self.last.len() as u32) as usize;
        let zone = self.geo.zone_of(ev.kind.pfn());
        let next = match (ev.kind.clone(), zone) {
            (EventKind::Alloc { order, .. }, Some(z)) if !ev.is_failed_alloc() => {
                if self.pcp_order(order) {
                    self.factor[z][cpu] >>= 1;
                }
                Last::Other
            }
            (EventKind::Free { order, .. }, Some(z)) if self.pcp_order(order) => {
                Last::Free { zone: z, order }
            }
            (EventKind::FreeBatched { .. }, Some(z)) => Last::Free { zone: z, order: 0 },
            (EventKind::PcpuDrain { .. }, Some(z)) => {
                if let Last::Free { zone, order } = self.last[cpu] {
                    if zone == z {
                        self.free_drain(z, cpu, order);
                    }
                }
                Last::Drain
            }
            _ => Last::Other,
        };
        self.last[cpu] = next;
    }

    /// A drain run that a free of `order` on `cpu` caused in zone `z`: `free_high`, or
    /// `nr_pcp_free`'s raise.
    fn free_drain(&mut self, z: usize, cpu: usize, order: u8) {
        let f = self.factor[z][cpu];
        if f > 0 && (1..=3).contains(&order) {
            return; // free_high: nr_pcp_free returns pcp->count, the factor as it was
        }
        let Sizes { batch, high } = self.rules.sizes[z];
        let node = self.geo.zones[z].node;
        let high = if self.reclaiming.contains(&node) {
            (batch << 2).min(high)
        } else {
            high
        };
        if high < batch {
            return; // "Check for PCP disabled or boot pageset": 1 page, no raise
        }
        let scaled = i64::from(batch) << f.min(30);
        let below_cap = self.rules.scale_max.is_none_or(|m| f < m);
        if scaled < i64::from(high - batch) && below_cap {
            self.factor[z][cpu] = f + 1;
        }
    }

    /// Per zone, per CPU: the factor after the events fed.
    pub fn finish(self) -> Vec<Vec<u8>> {
        self.factor
    }
}

/// The factors after the complete lines of `text` (the trace before the marker).
#[cfg(test)]
pub fn walk_text(text: &[u8], geo: &Geometry, rules: Rules) -> Vec<Vec<u8>> {
    let mut walk = Walk::new(geo, rules);
    each_event(text, |ev| walk.feed(ev));
    walk.finish()
}

/// Feeds `f` the events of the complete lines of `text`, in order.
pub(crate) fn each_event(text: &[u8], mut f: impl FnMut(&Event<'_>)) {
    let mut parser = Parser::new();
    for line in lines(text) {
        if let Some(ev) = parser.feed(line) {
            f(&ev);
        }
    }
}

/// The walk's rules for `replayers`' zones: the sizes read off the first replayer's zones
/// (CPU 0's: one per zone before 6.7; `batch` from 6.7 on), the constants off `base`.
pub fn rules_of(replayers: &[Replayer], base: &ZoneConfig) -> Option<Rules> {
    let first = replayers.first()?;
    let sizes = first
        .zones
        .iter()
        .map(|z| {
            let i = z.pcp_info(CpuId(0));
            Sizes {
                batch: i.batch,
                high: i.high,
            }
        })
        .collect();
    let capped = base.pcp.free_scaling != FreeScaling::FreeFactorUncapped;
    Some(Rules {
        sizes,
        scale_max: capped.then_some(base.pcp.batch_scale_max),
        thp_order: base.pcp.thp_order,
    })
}

/// Starts every replayer's zones with `factors` (per zone, per CPU: a [`Walk`]'s fed the
/// trace before the marker).
pub fn set(factors: &[Vec<u8>], replayers: &[Replayer]) {
    for r in replayers {
        for (zone, f) in r.zones.iter().zip(factors) {
            for (cpu, &f) in f.iter().enumerate() {
                let t = PcpTuning {
                    free_count: Some(i32::from(f)),
                    ..PcpTuning::default()
                };
                zone.set_pcp_tuning(CpuId(cpu as u32), t);
            }
        }
    }
}

#[cfg(test)]
#[path = "free_factor/tests.rs"]
mod tests;
