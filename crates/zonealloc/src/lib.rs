// The crate README (its examples run as doctests) opens the crate docs; the essay follows.
#![doc = include_str!("../README.md")]
//!
//! ## How the buddy allocator works
//! Memory is managed in blocks of `2^order` frames, aligned to their size. Free blocks sit on
//! `free_area[order].free_list[migratetype]`. An allocation of order `n` takes the head of the
//! smallest non-empty list of order `>= n` of its migratetype and splits it, keeping the lower
//! half each time and putting the upper halves back (`expand`). A free looks at the block's
//! *buddy* (`pfn ^ (1 << order)`): while it is free and of the same order, the two merge and the
//! search climbs an order (`__free_one_page`). When the merged block's own buddy one order up is
//! free too, the block goes to the *tail* of its list so that it stays free long enough to
//! merge (`buddy_merge_likely`, seed change 003, knob [`ZoneConfig::tail_merge`]).
//!
//! Memory is grouped by mobility into pageblocks (2 MiB at 4 KiB pages). When a migratetype's
//! lists are empty, the allocator claims a whole pageblock of another type if enough of it is
//! free or compatible, or else steals a single block (`__rmqueue_claim`, `__rmqueue_steal`).
//! Watermarks keep a reserve that only privileged requests may touch.
//!
//! ## In a kernel (`no_std`, several CPUs)
//! Name a [`Platform`] (the calling CPU, the zone lock, optionally a clock; see
//! [`platform`] for the interrupt rule), give the zone its storage, hand it memory:
//! ```
//! use zonealloc::platform::{Platform, RawSpinLock, StaticStorage};
//! use zonealloc::{FrameMeta, MigrateType, Order, PcpSlot, Pfn, Zone, ZoneConfig, ZoneType};
//! # std::thread_local! { static CPU: std::cell::Cell<u32> = const { std::cell::Cell::new(0) }; }
//! # fn this_cpu() -> u32 { CPU.with(|c| c.get()) } // a kernel reads a per-CPU register
//!
//! struct Kernel;
//! impl Platform for Kernel {
//!     type RawMutex = RawSpinLock; // an IRQ-saving lock if interrupt handlers allocate
//!     fn current_cpu() -> u32 { this_cpu() }
//! }
//!
//! const FRAMES: u64 = 1 << 18; // 1 GiB of 4 KiB frames
//! static TABLE: StaticStorage<FrameMeta, { FRAMES as usize }> = StaticStorage::new(); // .bss
//! static PCPS: StaticStorage<PcpSlot, 4> = StaticStorage::new();
//! static ZONE: std::sync::OnceLock<Zone<Kernel>> = std::sync::OnceLock::new(); // spin::Once
//!
//! let zone = ZONE.get_or_init(|| {
//!     let (table, pcps) = (TABLE.take().unwrap(), PCPS.take().unwrap());
//!     let cfg = ZoneConfig::default();
//!     let zone = Zone::from_uninit(ZoneType::Normal, Pfn(0), Pfn(FRAMES), cfg, table, pcps);
//!     let zone = zone.unwrap();
//!     zone.add_free_range(Pfn(0), Pfn(FRAMES)).unwrap(); // RAM from the firmware map
//!     zone
//! });
//! # let cpus: Vec<_> = (0..4u32).map(|c| std::thread::spawn(move || {
//! #     CPU.with(|x| x.set(c));
//! // On every CPU:
//! let pfn = zone.alloc(Order::ZERO, MigrateType::Movable).unwrap();
//! zone.free(pfn, Order::ZERO).unwrap();
//! # })).collect();
//! # for t in cpus { t.join().unwrap(); }
//! # for c in 0..4 { assert!(zone.pcp_info(zonealloc::CpuId(c)).count > 0); } // 4 lists used
//! # zone.check().unwrap();
//! ```
//! (`kernel/` in the repository is a riscv64 kernel that does this under QEMU, with the
//! table carved out of RAM: [`Zone::from_uninit_carved`].)
//!
//! ## Glossary: zonealloc names and the Linux symbols they mirror
//! | zonealloc | Linux |
//! |---|---|
//! | [`Pfn`] | `unsigned long pfn` |
//! | [`Order`] | `unsigned int order`; `MAX_PAGE_ORDER` = [`ZoneConfig::max_order`] |
//! | [`MigrateType`] | `enum migratetype` (`CONFIG_CMA=n` numbering) |
//! | [`FrameMeta`] / [`FrameState`] | `struct page` (`PageBuddy`, `page_private`) |
//! | [`Zone`] | `struct zone`; its lock is `zone->lock` |
//! | [`Node`] | `pg_data_t` and its zonelist |
//! | `Machine` (module `numa`) | the nodes, `build_all_zonelists`, `mempolicy`, `numastat` |
//! | [`Zone::add_free_range`] | `memblock_free_all` → `__free_pages_core` |
//! | [`Zone::alloc_with`] | `__alloc_pages` → `get_page_from_freelist` → `rmqueue_buddy` |
//! | [`Zone::free`] | `__free_pages` → `free_one_page` → `__free_one_page` |
//! | [`AllocRequest`] | `gfp_t` (migratetype, zone, `__GFP_HIGH`, direct reclaim) |
//! | [`AllocFlags`] | `ALLOC_*` of `mm/internal.h` |
//! | [`Watermarks`] | `zone->_watermark[]`, `watermark_boost` |
//! | [`ZoneStats`] | `/proc/vmstat` counters |
//! | [`stats::write_buddyinfo`] | `/proc/buddyinfo` |
//! | [`stats::unusable_free_index`] | `extfrag/unusable_index` |
//! | [`ZoneEvent`] ([`Zone::record_events`]) | `mm_page_alloc_zone_locked`, `mm_page_pcpu_drain`, `mm_page_alloc_extfrag` tracepoints |
//! | `arena::PageArena::ptr_of` / `pfn_of` (feature `arena`) | `page_address` / `virt_to_pfn` |
//! | `arena::PAGE_POISON`, `PoisonReport` | `PAGE_POISON`, `check_poison_mem` |
//!
//! ## Real memory
//! With the `arena` feature (which needs `std`), `arena::PageArena` maps a region and serves
//! its pages from a zone over it: owning `arena::PageBlock` handles, raw pointers, and an
//! `allocator_api2` allocator, with huge pages, zeroing and page poisoning as options.
//!
//! ## Errors
//! Every operation that takes caller input validates it and returns a typed error that names
//! the offending frame; on error the allocator is unchanged and [`Zone::check`] still passes.

#![no_std]
// `sync` and `arena` are the only modules allowed `unsafe`.
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "std")]
extern crate std;

#[cfg(all(feature = "arena", not(loom)))]
#[allow(unsafe_code)]
pub mod arena;
mod buddy;
mod check;
pub mod config;
// Doc-only: `docs/DESIGN.md`, the walk through one allocation and one free, as rustdoc (through
// the `DESIGN.md` link beside Cargo.toml, so that a packaged crate carries it).
#[doc = include_str!("../DESIGN.md")]
pub mod design {}
pub mod error;
mod list;
pub mod memmap;
mod meta;
mod node;
#[cfg(not(loom))]
pub mod numa;
mod pcp;
pub mod platform;
mod request;
mod shared;
pub mod stats;
mod sync;
#[cfg(all(feature = "std", not(loom)))]
mod ticker;
pub mod tracepoint;
pub mod types;
mod zone;

pub use buddy::{CheckFacts, Watermarks};
pub use check::CheckError;
pub use config::{
    DrainMigratetype, DrainMode, FallbackRule, FreeHigh, FreeScaling, HighMode, HighatomicCap,
    HighatomicUnusable, KernelVersion, MobilityGrouping, PcpConfig, PcpLocking, SmpLocksFree,
    WatermarkConfig, ZoneConfig,
};
pub use error::{AllocError, ConfigError, DrainError, FreeError, HandleError, RangeError};
pub use memmap::{MemoryRegion, RegionKind};
pub use meta::{FrameMeta, FrameState};
pub use node::{BootFrees, Node};
#[cfg(not(loom))]
pub use numa::Machine;
pub use pcp::{zone_highsize, DecayOutcome, PcpInfo, PcpSlot, PcpStats, PcpTuning};
pub use platform::{DefaultPlatform, Platform};
pub use request::{AllocFlags, AllocRequest};
pub use stats::{FreeAreaSnapshot, ZoneStats};
#[cfg(all(feature = "std", not(loom)))]
pub use ticker::Ticker;
pub use tracepoint::ZoneEvent;
pub use types::{
    pcp_allowed_order, CpuId, MigrateType, Order, PageCount, Pfn, ZoneType, MAX_ORDER_LIMIT,
};
#[doc(hidden)]
pub use zone::PendingDrain;
pub use zone::{CpuHandle, LayoutBlock, Zone};
