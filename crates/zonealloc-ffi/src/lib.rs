//! # libzonealloc: zonealloc for C
//!
//! The C API of the zonealloc page allocator, built as a static library
//! (`libzonealloc_ffi.a`) and a shared one (`libzonealloc_ffi.so`), declared in
//! `include/zonealloc.h`, which cbindgen generates from this crate (the `header` test fails
//! when the checked-in header is stale; `ZONEALLOC_BLESS=1 cargo test -p zonealloc-ffi --test
//! header` rewrites it).
//!
//! Three handle types:
//! - `za_zone`: a zone of frame numbers (`za_zone_create` from a `za_zone_config`,
//!   `za_zone_alloc` / `za_zone_free` by pfn);
//! - `za_arena`: a `PageArena` over real memory (`za_arena_create` from a
//!   `za_arena_config`, `za_arena_alloc` / `za_arena_free` by pointer);
//! - `za_machine`: several NUMA nodes (`za_machine_create` from a memory map with node ids,
//!   a distance table and each CPU's node; `za_machine_alloc` by CPU, preferred node
//!   (`ZA_NODE_LOCAL` for the CPU's own), nodemask and `ZA_ALLOC_THISNODE`;
//!   `za_machine_free` to a CPU's pageset; per-node `numastat`, the vmstat worker's
//!   expiry).
//!
//! Zones and arenas have `drain`, `tick`, `stats`, `check`, and `/proc/buddyinfo` and `/proc/zoneinfo`
//! text written into a caller buffer.
//!
//! # Error handling
//! Every function returns a [`za_status`]; `za_strerror` names it. Nothing panics across the
//! boundary: each body runs under `catch_unwind` and a panic becomes `ZA_ERR_PANIC`, prints
//! nothing (the host's stderr is the host's), and leaves its message for
//! `za_last_panic_message` on the calling thread; panics of the host's own Rust code still go
//! to the host's panic hook. Bad input gets an error code and changes nothing: NULL pointers
//! (`ZA_ERR_NULL`), handles that are misaligned (`ZA_ERR_MISALIGNED`) or not a live handle of
//! the right type (`ZA_ERR_BAD_HANDLE`, from a tag in the handle: a best-effort check, since
//! reading a pointer that points nowhere cannot be made safe), arena pointers outside the
//! arena (`ZA_ERR_FOREIGN_POINTER`) or not at a page start (`ZA_ERR_MISALIGNED`), spans that
//! end too close to 2^64 (`ZA_ERR_SPAN_OVERFLOW`), and every typed error of the allocator
//! (double free, tail page, wrong order, ...).
//!
//! # Threads
//! Handles may be used from any number of threads at once, except `*_destroy`, which must be
//! the last call on a handle.

#![allow(non_camel_case_types)]

mod arena;
mod handle;
mod machine;
mod status;
mod text;
mod zone;

pub use arena::*;
pub use machine::*;
pub use status::*;
pub use zone::*;

use zonealloc::stats::ZoneStats;

use text::Inspect;

/// Counters of a zone or an arena, filled by `za_zone_stats` / `za_arena_stats`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct za_stats {
    /// Pages handed to the allocator (`managed_pages`).
    pub managed_pages: u64,
    /// Free pages in the buddy allocator (`NR_FREE_PAGES`).
    pub free_pages: u64,
    /// Pages on the per-CPU lists (free, but not in the buddy allocator).
    pub pcp_pages: u64,
    /// Successful allocations, all orders (blocks).
    pub allocs: u64,
    /// Frees, all orders (blocks).
    pub frees: u64,
    /// Requests that failed.
    pub alloc_failures: u64,
    /// Block splits (`expand`).
    pub splits: u64,
    /// Buddy merges.
    pub merges: u64,
    /// Allocations served from another migratetype's lists.
    pub fallbacks: u64,
    /// Write-after-free reports (arenas with `ZA_ARENA_POISON`; 0 otherwise).
    pub poison_reports: u64,
}

fn stats_of(zone: &impl Inspect) -> za_stats {
    let s: ZoneStats = zone.stats();
    za_stats {
        managed_pages: zone.managed_pages(),
        free_pages: zone.free_pages(),
        pcp_pages: zone.pcp_pages(),
        allocs: s.allocs.iter().sum(),
        frees: s.frees.iter().sum(),
        alloc_failures: s.alloc_failures,
        splits: s.splits,
        merges: s.merges,
        fallbacks: s.fallbacks,
        poison_reports: 0,
    }
}

#[cfg(test)]
mod tests;
