//! Tracepoints: the buddy's side of the kernel's `kmem` page events, recorded on request.
//!
//! The kernel logs three events from under `zone->lock` (`include/trace/events/kmem.h`):
//! `mm_page_alloc_zone_locked` for every block `__rmqueue_smallest` takes, `mm_page_pcpu_drain`
//! for every block `free_pcppages_bulk` moves from a per-CPU list back to the buddy, and
//! `mm_page_alloc_extfrag` for every fallback to another migratetype's free list
//! (`__rmqueue_claim`, `__rmqueue_steal`). A [`Zone`] records the same events, at the same
//! points and in the same order, while [`Zone::record_events`] is on, and hands them out with
//! [`Zone::take_events`]. The other two page events, `mm_page_alloc` and `mm_page_free`,
//! mirror calls the caller makes ([`Zone::alloc_with`], [`Zone::free`]), so the caller logs
//! them itself; this keeps the per-CPU fast path free of any tracing test.
//!
//! [`Zone`]: crate::Zone
//! [`Zone::record_events`]: crate::Zone::record_events
//! [`Zone::take_events`]: crate::Zone::take_events
//! [`Zone::alloc_with`]: crate::Zone::alloc_with
//! [`Zone::free`]: crate::Zone::free
//!
//! Which CPU an event belongs to is the CPU the caller ran the operation on: a drain of
//! another CPU's lists is logged, as in the kernel, by the CPU doing the draining.
//!
//! # Cost
//! Off (the default), each of the three points pays one test of a flag the zone lock already
//! guards; the per-CPU hit paths pay nothing. On, each event is pushed onto a vector under the
//! zone lock. Recording needs the `std` feature.

use crate::types::{MigrateType, Order, Pfn};

/// One buddy-side page event, as the kernel's tracepoint of the same name would log it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneEvent {
    /// `mm_page_alloc_zone_locked`: `__rmqueue_smallest` took the block at `pfn`.
    AllocZoneLocked {
        /// First frame of the block.
        pfn: Pfn,
        /// Block order.
        order: Order,
        /// The free list's migratetype.
        migratetype: MigrateType,
        /// `pcp_allowed_order(order) && migratetype < MIGRATE_PCPTYPES`: the order is one the
        /// per-CPU lists take (not proof that a refill happened).
        percpu_refill: bool,
    },
    /// `mm_page_pcpu_drain`: `free_pcppages_bulk` gave the block at `pfn` back to the buddy.
    PcpuDrain {
        /// First frame of the block.
        pfn: Pfn,
        /// Block order.
        order: Order,
        /// The pageblock's migratetype at drain time.
        migratetype: MigrateType,
    },
    /// `mm_page_alloc_extfrag`: an allocation fell back to another migratetype's list.
    AllocExtfrag {
        /// First frame of the block handed out.
        pfn: Pfn,
        /// Requested order.
        alloc_order: Order,
        /// Order of the free block fallen back to.
        fallback_order: Order,
        /// Requested migratetype.
        alloc_migratetype: MigrateType,
        /// Migratetype of the list fallen back to.
        fallback_migratetype: MigrateType,
        /// The pageblock now has the requested migratetype (it was claimed).
        change_ownership: bool,
    },
}

impl ZoneEvent {
    /// The tracepoint's name.
    pub fn name(&self) -> &'static str {
        match self {
            ZoneEvent::AllocZoneLocked { .. } => "mm_page_alloc_zone_locked",
            ZoneEvent::PcpuDrain { .. } => "mm_page_pcpu_drain",
            ZoneEvent::AllocExtfrag { .. } => "mm_page_alloc_extfrag",
        }
    }

    /// The first frame of the event's block.
    pub fn pfn(&self) -> Pfn {
        match *self {
            ZoneEvent::AllocZoneLocked { pfn, .. }
            | ZoneEvent::PcpuDrain { pfn, .. }
            | ZoneEvent::AllocExtfrag { pfn, .. } => pfn,
        }
    }
}

/// The recording side, kept in the zone's locked state.
#[derive(Debug, Default)]
pub(crate) struct EventLog {
    #[cfg(feature = "std")]
    events: Option<std::vec::Vec<ZoneEvent>>,
    /// Events were logged or taken since the zone lock was last released: its release
    /// publishes whether any are waiting ([`EventLog::publish`]).
    #[cfg(feature = "std")]
    changed: bool,
}

impl EventLog {
    /// Logs the event `f` builds, if recording is on (built only then).
    #[inline]
    // Without `std` nothing is ever recorded, so the builder goes unused.
    #[cfg_attr(not(feature = "std"), expect(unused_variables))]
    pub(crate) fn log(&mut self, f: impl FnOnce() -> ZoneEvent) {
        #[cfg(feature = "std")]
        if let Some(v) = self.events.as_mut() {
            v.push(f());
            self.changed = true;
        }
    }

    /// Whether events are waiting to be taken, if that changed since the last call: what the
    /// zone lock's release publishes, so that [`Zone::take_events`](crate::Zone::take_events)
    /// takes the lock only when there is something to take.
    #[inline]
    pub(crate) fn publish(&mut self) -> Option<bool> {
        #[cfg(feature = "std")]
        if core::mem::take(&mut self.changed) {
            return Some(self.events.as_ref().is_some_and(|v| !v.is_empty()));
        }
        None
    }

    /// Switches recording on or off; off drops the events not yet taken.
    #[cfg(feature = "std")]
    pub(crate) fn set_recording(&mut self, on: bool) {
        let kept = self.events.take();
        if on {
            self.events = Some(kept.unwrap_or_default());
        }
        self.changed = true;
    }

    /// Moves the events recorded so far, oldest first, to the end of `out`.
    #[cfg(feature = "std")]
    pub(crate) fn take_into(&mut self, out: &mut std::vec::Vec<ZoneEvent>) {
        if let Some(v) = self.events.as_mut() {
            out.append(v);
            self.changed = true;
        }
    }
}
