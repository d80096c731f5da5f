//! [`Zone`]: one zone's buddy allocator behind its lock, its per-CPU lists in front of it, and
//! the public alloc/free API. Every `impl Zone` lives in this folder, so the lock choreography
//! reads in one place; the layers below it (`buddy`, `pcp`) take no lock and know no zone.
//!
//! # Locking
//! Lock order: `PcpSet::drain_mutex`, then a CPU's PCP lock, then the zone lock; never the
//! reverse.
//! - `zone->lock` is [`Zone::buddy`], taken through [`Zone::lock`]: the [`ZoneGuard`] derefs to
//!   `&mut BuddyZone` (so "caller holds `zone->lock`" is a type) and publishes the lock-free
//!   mirror (`shared`) as it is released.
//! - A CPU's lists are entered through a [`PcpGuard`](pcp::PcpGuard) (`Zone::pcp_enter`):
//!   it applies pending parameters and serves a pending owner drain on the way in, and on the
//!   way out publishes the count hint before the lock is released. The hit paths (`fast.rs`)
//!   run only when there is nothing to apply or serve, and publish the hint themselves.
//! - The frame table is shared and accessed with relaxed atomics (see `meta`).
//!
//! # Files, in the order of one allocation's walk
//! - `boot.rs`: construction, memory handed over at boot, watermark and pageset sizing.
//! - `walk.rs`: the allocation walk over a zonelist (`__alloc_frozen_pages`), shared with
//!   [`Node`](crate::Node).
//! - `fast.rs`: the PCP hit paths (order-0..=3 allocation, order-0 free); fused hit paths
//!   for more orders go here.
//! - `alloc.rs`: `try_alloc`, the PCP refill (`rmqueue_pcplist`, `rmqueue_bulk`) and the
//!   buddy fallback (`rmqueue_buddy`).
//! - `free.rs`: free validation, the PCP free and its drain, frees that bypass the lists.
//! - `drain.rs`: draining and the owner-drain protocol.
//! - `decay.rs`: the vmstat worker's periodic work: `decay_pcp_high`, `drain_zone_pages`,
//!   `tick`.
//! - `pcp.rs`: [`PcpGuard`](pcp::PcpGuard), the calling CPU, instrumentation switches.
//! - `vmstat.rs`: the lag of `NR_FREE_PAGES` behind the free lists, for an embedder that
//!   names the CPU of each operation.
//! - `handle.rs`: [`CpuHandle`], a thread's claim on one CPU's lists.
//! - `inspect.rs`: snapshots, counters, `/proc` text, tracepoint switches, `check`.
//! - `isolate.rs`: compaction's free scanner taking a free block (`__isolate_free_page`).
//! - `layout.rs`: a zone set up at a snapshot's page layout (pageblock types, pages in use,
//!   free blocks at their frames), beside boot's `add_free_range`.

// In the order of the walk above (each group on its own so that rustfmt keeps the order).
mod boot;

mod walk;

mod fast;

mod alloc;

mod free;

mod drain;

mod decay;

mod pcp;

// The lag of `NR_FREE_PAGES` behind the free lists (`vm_stat_diff`).
mod vmstat;

mod handle;

mod inspect;

// Compaction's free scanner: `__isolate_free_page`.
mod isolate;

mod layout;

#[doc(hidden)]
pub use free::PendingDrain;
pub use handle::CpuHandle;
pub use layout::LayoutBlock;
pub(crate) use walk::{alloc_walk, ZoneList};

use core::ops::{Deref, DerefMut};

use crate::buddy::BuddyZone;
use crate::config::ZoneConfig;
use crate::meta::FrameTable;
use crate::pcp::PcpSet;
use crate::platform::{DefaultPlatform, Platform};
use crate::shared::ZoneShared;
use crate::sync::{Lock, LockGuard, Ordering};
use crate::types::{Order, Pfn, ZoneType};

/// One memory zone: a span of frames (which may contain holes), its metadata table and its
/// buddy allocator. `Send + Sync`: every method takes `&self`.
///
/// `P` is the [`Platform`]: the calling CPU's id, the zone lock's type and the clock
/// ([`crate::platform`]); a plain `Zone` is `Zone<DefaultPlatform>`.
pub struct Zone<P: Platform = DefaultPlatform> {
    pub(crate) table: FrameTable,
    pub(crate) buddy: Lock<P::RawMutex, BuddyZone>,
    pub(crate) shared: ZoneShared,
    pub(crate) pcp: PcpSet,
    zone_type: ZoneType,
    cfg: ZoneConfig,
    span: (u64, u64),
    /// Frames `add_free_range` skips: the table of `from_uninit_carved` (empty: `(0, 0)`).
    reserved: (u64, u64),
    platform: core::marker::PhantomData<fn() -> P>,
}

impl<P: Platform> core::fmt::Debug for Zone<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Zone")
            .field("type", &self.zone_type)
            .field("span", &(Pfn(self.span.0)..Pfn(self.span.1)))
            .finish_non_exhaustive()
    }
}

impl<P: Platform> Zone<P> {
    /// Takes the zone lock, counting the acquisition. The guard publishes the lock-free
    /// mirror when dropped.
    #[inline]
    pub(crate) fn lock(&self) -> ZoneGuard<'_, P::RawMutex> {
        let mut g = self.lock_uncounted();
        g.stats.zone_lock_acquisitions += 1;
        g
    }

    /// Takes the zone lock without counting it: for the caller's bookkeeping (the recorded
    /// events, the vmstat lag), which is no work of the allocator's. The guard publishes as
    /// [`Zone::lock`]'s.
    #[inline]
    pub(crate) fn lock_uncounted(&self) -> ZoneGuard<'_, P::RawMutex> {
        let mut g = self.buddy.lock();
        if g.vmstat.on {
            // The CPU the embedder said runs the zone's operations now (`set_stat_cpu`).
            g.vmstat.cpu = self.shared.stat_cpu.load(Ordering::Relaxed) as usize;
        }
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
pub(crate) struct ZoneGuard<'a, R: lock_api::RawMutex> {
    g: LockGuard<'a, R, BuddyZone>,
    shared: &'a ZoneShared,
}

impl<R: lock_api::RawMutex> Deref for ZoneGuard<'_, R> {
    type Target = BuddyZone;
    #[inline]
    fn deref(&self) -> &BuddyZone {
        &self.g
    }
}

impl<R: lock_api::RawMutex> DerefMut for ZoneGuard<'_, R> {
    #[inline]
    fn deref_mut(&mut self) -> &mut BuddyZone {
        &mut self.g
    }
}

impl<R: lock_api::RawMutex> Drop for ZoneGuard<'_, R> {
    #[inline]
    fn drop(&mut self) {
        self.g.publish(self.shared);
    }
}

#[cfg(test)]
mod tests;
