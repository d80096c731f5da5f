//! [`Zone`]: one zone's buddy allocator behind its lock, with the public alloc/free API.
//!
//! # Locking
//! `zone->lock` is [`Zone::buddy`]; every buddy operation runs with it held and takes
//! `&mut BuddyZone` from the guard, which publishes the lock-free mirror (`shared`) as it
//! is released. The frame table is shared and accessed with relaxed atomics (see `meta`).
//! Per-CPU lists have their own locks, always taken before the zone lock (see `pcp`).

mod alloc;
mod boot;
mod drain;
mod fast;
mod free;
mod handle;
mod inspect;
mod pcp;
mod walk;

pub use handle::CpuHandle;
pub(crate) use walk::{alloc_walk, ZoneList};

use core::ops::{Deref, DerefMut};

use crate::buddy::BuddyZone;
use crate::config::ZoneConfig;
use crate::meta::FrameTable;
use crate::pcp::PcpSet;
use crate::shared::ZoneShared;
use crate::sync::{SpinGuard, SpinLock};
use crate::types::{Order, Pfn, ZoneType};

/// One memory zone: a span of frames (which may contain holes), its metadata table and its
/// buddy allocator. `Send + Sync`: every method takes `&self`.
pub struct Zone {
    pub(crate) table: FrameTable,
    pub(crate) buddy: SpinLock<BuddyZone>,
    pub(crate) shared: ZoneShared,
    pub(crate) pcp: PcpSet,
    zone_type: ZoneType,
    cfg: ZoneConfig,
    span: (u64, u64),
}

impl core::fmt::Debug for Zone {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Zone")
            .field("type", &self.zone_type)
            .field("span", &(Pfn(self.span.0)..Pfn(self.span.1)))
            .finish_non_exhaustive()
    }
}

impl Zone {
    /// Takes the zone lock, counting the acquisition. The guard publishes the lock-free
    /// mirror when dropped.
    #[inline]
    pub(crate) fn lock(&self) -> ZoneGuard<'_> {
        let mut g = self.buddy.lock();
        g.stats.zone_lock_acquisitions += 1;
        ZoneGuard {
            g,
            shared: &self.shared,
        }
    }

    /// The zone type.
    pub fn zone_type(&self) -> ZoneType {
        self.zone_type
    }

    /// The configuration.
    pub fn config(&self) -> &ZoneConfig {
        &self.cfg
    }

    /// The span `[start, end)`.
    pub fn span(&self) -> (Pfn, Pfn) {
        (Pfn(self.span.0), Pfn(self.span.1))
    }

    /// Whether `pfn` is inside the span (`zone_spans_pfn`).
    #[inline]
    pub fn spans(&self, pfn: Pfn) -> bool {
        pfn.0 >= self.span.0 && pfn.0 < self.span.1
    }

    /// The largest order this zone hands out.
    pub fn max_order(&self) -> Order {
        Order::from_raw(self.cfg.max_order)
    }

    /// Bytes of per-frame metadata this zone uses (Linux: 64 per frame in `struct page`).
    pub fn metadata_bytes(&self) -> usize {
        self.table.len() as usize * FrameTable::bytes_per_frame()
    }
}

/// The zone lock's guard: derefs to the buddy state and publishes the lock-free mirror
/// (`ZoneShared`) when released.
pub(crate) struct ZoneGuard<'a> {
    g: SpinGuard<'a, BuddyZone>,
    shared: &'a ZoneShared,
}

impl Deref for ZoneGuard<'_> {
    type Target = BuddyZone;
    #[inline]
    fn deref(&self) -> &BuddyZone {
        &self.g
    }
}

impl DerefMut for ZoneGuard<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut BuddyZone {
        &mut self.g
    }
}

impl Drop for ZoneGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.g.publish(self.shared);
    }
}

#[cfg(test)]
mod tests;
