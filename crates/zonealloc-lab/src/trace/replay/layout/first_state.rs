//! The layout at a trace's start from each pfn's FIRST event, the counterpart of the roll
//! forward (`roll.rs`) for a replay of the whole file, which starts before the snapshot's
//! reads: what a pfn was before the first event naming it is what that event undoes.
//!
//! - `mm_page_alloc` first: on the allocating CPU's list (an order the lists take: the
//!   allocation took it off the list, `rmqueue_pcplist`; another order comes from the buddy,
//!   after its `mm_page_alloc_zone_locked`, so it was free);
//! - `mm_page_alloc_zone_locked` or `mm_page_alloc_extfrag` first: free (taken off a free
//!   list; 6.15's extfrag names the page taken, older kernels' the block fallen back to);
//! - `mm_page_free` or `mm_page_free_batched` first: in use;
//! - `mm_page_pcpu_drain` first: on the draining CPU's list (a remote drain's page was on the
//!   owner's; the trace does not say whose).
//!
//! Not wired: the whole-file start is another module's (`start_count`, `first_events`).

use std::ops::Range;

use zonealloc::Order;

use super::roll::{After, Listed, Roll};
use crate::trace::migratetype::Numbering;
use crate::trace::parse::{Event, EventKind};

/// The walk over a trace from its start (module docs).
pub struct FirstStates {
    zones: Vec<Range<u64>>,
    cpus: u32,
    numbering: Numbering,
    thp_order: Option<u8>,
    states: Vec<Roll>,
    seq: u64,
}

impl FirstStates {
    /// Nothing fed yet: zones spanning `zones`, on `cpus` CPUs (trace CPU `c` is `c % cpus`).
    pub fn new(
        zones: &[Range<u64>],
        cpus: u32,
        numbering: Numbering,
        thp_order: Option<u8>,
    ) -> FirstStates {
        FirstStates {
            zones: zones.to_vec(),
            cpus: cpus.max(1),
            numbering,
            thp_order,
            states: vec![Roll::default(); zones.len()],
            seq: 0,
        }
    }

    /// Takes one event: the pfns it names that no earlier event named get the state before it.
    pub fn feed(&mut self, ev: &Event<'_>) {
        let pfn = ev.kind.pfn();
        let Some(z) = self.zones.iter().position(|r| r.contains(&pfn)) else {
            return;
        };
        self.seq += 1;
        let cpu = ev.cpu.unwrap_or(0) % self.cpus;
        let listed = |order: u8, mt: Option<u8>| {
            After::Listed(Listed {
                cpu,
                head: pfn,
                order,
                mt: mt.map(|m| usize::from(self.numbering.to_current(m))),
                refilled: false,
                seq: self.seq,
                ts: ev.ts_ns,
            })
        };
        let (order, before) = match ev.kind {
            EventKind::Alloc {
                order, migratetype, ..
            } if !ev.is_failed_alloc() => {
                let on_list = Order::new(order)
                    .is_some_and(|o| zonealloc::pcp_allowed_order(o, self.thp_order));
                match on_list {
                    true => (order, listed(order, Some(migratetype))),
                    false => (order, After::Free),
                }
            }
            EventKind::ZoneLocked { order, .. } => (order, After::Free),
            EventKind::Extfrag { .. } => (0, After::Free),
            EventKind::Free { order, .. } => (order, After::InUse),
            EventKind::FreeBatched { .. } => (0, After::InUse),
            EventKind::PcpuDrain {
                order, migratetype, ..
            } => (order, listed(order, Some(migratetype))),
            _ => return,
        };
        let end = pfn.saturating_add(1u64 << order.min(20));
        self.states[z].set_unset(pfn..end, before);
    }

    /// The states at the start per zone (as the `zones` given to [`FirstStates::new`]).
    pub fn finish(self) -> Vec<Roll> {
        self.states
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::parse::Parser;

    #[test]
    fn each_pfn_is_what_its_first_event_undoes() {
        let p = "page=(____ptrval____)";
        let line = |cpu: u32, ev: String| format!("   x-1   [{cpu:03}] .....   1.000000: {ev}\n");
        let mut t = String::new();
        t += &line(
            1,
            format!("mm_page_alloc: {p} pfn=0x10 order=0 migratetype=1 gfp_flags=GFP_USER"),
        );
        t += &line(1, format!("mm_page_free: {p} pfn=0x10 order=0"));
        t += &line(2, format!("mm_page_free: {p} pfn=0x20 order=2"));
        t += &line(
            0,
            format!(
                "mm_page_alloc_zone_locked: {p} pfn=0x30 order=0 migratetype=1 percpu_refill=1"
            ),
        );
        t += &line(
            3,
            format!("mm_page_pcpu_drain: {p} pfn=0x40 order=1 migratetype=0"),
        );
        t += &line(
            0,
            format!("mm_page_alloc: {p} pfn=0x100 order=4 migratetype=1 gfp_flags=GFP_USER"),
        );
        // A later event of a pfn already named changes nothing; its block's other pages are
        // named by it.
        t += &line(
            0,
            format!("mm_page_alloc: {p} pfn=0x20 order=3 migratetype=1 gfp_flags=GFP_USER"),
        );
        let zone = 0..0x1000;
        let mut w = FirstStates::new(std::slice::from_ref(&zone), 4, Numbering::Current, Some(9));
        Parser::new()
            .read_all(t.as_bytes(), |ev| w.feed(ev))
            .unwrap();
        let s = w.finish().pop().unwrap();
        assert!(matches!(s.get(0x10), Some(After::Listed(l)) if l.cpu == 1 && l.mt == Some(1)));
        assert_eq!(s.get(0x23), Some(After::InUse));
        assert!(matches!(s.get(0x24), Some(After::Listed(l)) if l.cpu == 0 && l.order == 3));
        assert_eq!(s.get(0x30), Some(After::Free));
        assert!(matches!(s.get(0x41), Some(After::Listed(l)) if l.cpu == 3 && l.order == 1));
        assert_eq!(s.get(0x10f), Some(After::Free));
        assert_eq!(s.get(0x110), None);
    }
}
