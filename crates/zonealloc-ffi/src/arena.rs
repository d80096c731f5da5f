//! `za_arena`: a `PageArena` over real memory, created from a `za_arena_config`, allocated
//! from and freed to by pointer.

use core::ffi::{c_char, c_void};

use zonealloc::arena::{ArenaConfig, HugePages, PageArena};

use crate::handle::{self, Handle};
use crate::status::za_status::{self, *};
use crate::status::{guard, migratetype_arg, order_arg};
use crate::{stats_of, text, za_stats};

/// Flag of `za_arena_config::flags`: fault every page in at creation (`MAP_POPULATE`).
pub const ZA_ARENA_POPULATE: u32 = 1;
/// Flag: zero every block on allocation.
pub const ZA_ARENA_ZERO: u32 = 2;
/// Flag: poison freed blocks and report writes after free on their next allocation.
pub const ZA_ARENA_POISON: u32 = 4;
/// Flag: ask for transparent huge pages (`madvise(MADV_HUGEPAGE)`).
pub const ZA_ARENA_THP: u32 = 8;
/// Flag: explicit huge pages (`MAP_HUGETLB`); needs `vm.nr_hugepages` reserved.
pub const ZA_ARENA_HUGETLB: u32 = 16;

const ALL_ARENA_FLAGS: u32 =
    ZA_ARENA_POPULATE | ZA_ARENA_ZERO | ZA_ARENA_POISON | ZA_ARENA_THP | ZA_ARENA_HUGETLB;

/// How to build an arena. Start from `za_arena_config_default`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct za_arena_config {
    /// Pages in the arena, rounded up to whole largest blocks (default 4096: 16 MiB).
    pub pages: u64,
    /// Page size in bytes: a power of two, at least the system's (default 4096).
    pub page_size: u64,
    /// `MAX_PAGE_ORDER` (default 10).
    pub max_order: u32,
    /// `pageblock_order` (default 9).
    pub pageblock_order: u32,
    /// CPUs with per-CPU page lists; 0 turns them off (default: the machine's CPU count).
    pub cpus: u32,
    /// `ZA_ARENA_*` flags (default 0).
    pub flags: u32,
}

/// An opaque arena handle: `za_arena_create` makes one, `za_arena_destroy` unmaps it.
///
/// The tag is the first field (`repr(C)`), so a handle of the other type is recognised by
/// reading the same offset. cbindgen skips the definition; the header declares the type
/// opaque (`after_includes` in cbindgen.toml).
///
/// cbindgen:ignore
#[repr(C)]
pub struct za_arena {
    tag: u64,
    pub(crate) arena: PageArena,
}

impl Handle for za_arena {
    const TAG: u64 = u64::from_le_bytes(*b"za_arena");
    fn tag_ptr(p: *const Self) -> *const u64 {
        // The tag is at offset 0 (`repr(C)`, first field): a cast, no read.
        p.cast()
    }
}

/// Fills `out` with the defaults: 4096 pages of 4 KiB, order 10, pageblock order 9, one
/// per-CPU list set per CPU, no flags.
///
/// # Safety
/// `out` is NULL or points to writable memory for a `za_arena_config`.
#[no_mangle]
pub unsafe extern "C" fn za_arena_config_default(out: *mut za_arena_config) -> za_status {
    guard(|| {
        let d = ArenaConfig::with_pages(4096);
        let c = za_arena_config {
            pages: d.pages,
            page_size: d.zone.page_size,
            max_order: u32::from(d.zone.max_order),
            pageblock_order: u32::from(d.zone.pageblock_order),
            cpus: d.zone.pcp.cpus,
            flags: 0,
        };
        // SAFETY: forwarded contract.
        unsafe { text::write_out(out, c) }
    })
}

fn arena_config(c: &za_arena_config) -> Result<ArenaConfig, za_status> {
    if c.flags & !ALL_ARENA_FLAGS != 0
        || c.flags & (ZA_ARENA_THP | ZA_ARENA_HUGETLB) == ZA_ARENA_THP | ZA_ARENA_HUGETLB
    {
        return Err(ZA_ERR_INVALID_ARGUMENT);
    }
    let small = |v: u32| u8::try_from(v).map_err(|_| ZA_ERR_CONFIG);
    let base = ArenaConfig::with_pages(c.pages);
    let zone = base
        .zone
        .with_max_order(small(c.max_order)?)
        .with_pageblock_order(small(c.pageblock_order)?)
        .with_page_size(c.page_size);
    let zone = if c.cpus == 0 {
        zone.without_pcp()
    } else {
        zone.with_cpus(c.cpus)
    };
    let huge = if c.flags & ZA_ARENA_HUGETLB != 0 {
        HugePages::Explicit
    } else if c.flags & ZA_ARENA_THP != 0 {
        HugePages::Transparent
    } else {
        HugePages::Off
    };
    Ok(ArenaConfig {
        zone,
        huge_pages: huge,
        populate: c.flags & ZA_ARENA_POPULATE != 0,
        zero_on_alloc: c.flags & ZA_ARENA_ZERO != 0,
        poison_on_free: c.flags & ZA_ARENA_POISON != 0,
        ..base
    })
}

/// Maps an arena as `config` describes and stores its handle in `*out` (left untouched on
/// error).
///
/// # Safety
/// `config` is NULL or points to a `za_arena_config`; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn za_arena_create(
    config: *const za_arena_config,
    out: *mut *mut za_arena,
) -> za_status {
    guard(|| {
        if config.is_null() || out.is_null() {
            return Err(ZA_ERR_NULL);
        }
        if !config.is_aligned() || !out.is_aligned() {
            return Err(ZA_ERR_MISALIGNED);
        }
        // SAFETY: checked non-null and aligned; readable by the contract, and every bit
        // pattern is a valid `za_arena_config` (integers only).
        let c = unsafe { config.read() };
        let arena = PageArena::new(arena_config(&c)?)?;
        let h = za_arena {
            tag: za_arena::TAG,
            arena,
        };
        // SAFETY: `out` is writable by the contract.
        unsafe { handle::publish(out, h) }
    })
}

/// Unmaps an arena. Blocks still allocated dangle afterwards.
///
/// # Safety
/// `arena` is NULL or a handle from `za_arena_create` not yet destroyed, used by no other
/// thread during or after this call.
#[no_mangle]
pub unsafe extern "C" fn za_arena_destroy(arena: *mut za_arena) -> za_status {
    // SAFETY: forwarded contract.
    guard(|| unsafe { handle::destroy(arena) })
}

/// Allocates `2^order` pages of `migratetype` and stores the block's address (aligned to its
/// size) in `*out`.
///
/// # Safety
/// `arena` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn za_arena_alloc(
    arena: *const za_arena,
    order: u32,
    migratetype: u32,
    out: *mut *mut c_void,
) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let a = unsafe { handle::live(arena)? };
        if out.is_null() {
            return Err(ZA_ERR_NULL);
        }
        if !out.is_aligned() {
            return Err(ZA_ERR_MISALIGNED);
        }
        let p = a
            .arena
            .alloc_raw(order_arg(order)?, migratetype_arg(migratetype)?)?;
        // SAFETY: checked non-null and aligned; writable by the contract.
        unsafe { out.write(p.as_ptr().cast()) };
        Ok(())
    })
}

/// Frees the block of `2^order` pages at `ptr`. NULL, pointers outside the arena, pointers
/// not at a page start, double frees, tail pages and wrong orders return their error code
/// and change nothing.
///
/// # Safety
/// `arena` is NULL or a live handle. If `ptr` is the head of an allocated block of `order`,
/// the caller owns that block and does not use it afterwards.
#[no_mangle]
pub unsafe extern "C" fn za_arena_free(
    arena: *const za_arena,
    ptr: *mut c_void,
    order: u32,
) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let a = unsafe { handle::live(arena)? };
        let order = order_arg(order)?;
        // SAFETY: `free_raw` checks everything but ownership, which the caller's contract
        // covers.
        Ok(unsafe { a.arena.free_raw(ptr.cast(), order) }?)
    })
}

/// Drains every CPU's per-CPU lists back to the buddy allocator.
///
/// # Safety
/// `arena` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn za_arena_drain(arena: *const za_arena) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        unsafe { handle::live(arena)? }.arena.zone().drain_all();
        Ok(())
    })
}

/// The periodic work, as `za_zone_tick`.
///
/// # Safety
/// `arena` is NULL or a live handle; `pending` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn za_arena_tick(arena: *const za_arena, pending: *mut u32) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let a = unsafe { handle::live(arena)? };
        // SAFETY: forwarded contract.
        unsafe { text::tick(&a.arena.zone(), pending) }
    })
}

/// Fills `*out` with the arena's counters, write-after-free reports included.
///
/// # Safety
/// `arena` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn za_arena_stats(arena: *const za_arena, out: *mut za_stats) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let a = unsafe { handle::live(arena)? };
        let mut s = stats_of(&a.arena.zone());
        s.poison_reports = a.arena.poison_reports_total();
        // SAFETY: forwarded contract.
        unsafe { text::write_out(out, s) }
    })
}

/// Checks every invariant of the arena's zone; `ZA_ERR_CHECK_FAILED` if one is broken.
///
/// # Safety
/// `arena` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn za_arena_check(arena: *const za_arena) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let a = unsafe { handle::live(arena)? };
        a.arena.check().map(|_| ()).map_err(|_| ZA_ERR_CHECK_FAILED)
    })
}

/// The arena zone's `/proc/buddyinfo` line, as `za_zone_buddyinfo`.
///
/// # Safety
/// As for `za_zone_buddyinfo`, with an arena handle.
#[no_mangle]
pub unsafe extern "C" fn za_arena_buddyinfo(
    arena: *const za_arena,
    buf: *mut c_char,
    len: usize,
    needed: *mut usize,
) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let a = unsafe { handle::live(arena)? };
        let s = text::buddyinfo(&a.arena.zone());
        // SAFETY: forwarded contract.
        unsafe { text::copy_out(&s, buf, len, needed) }
    })
}

/// The arena zone's `/proc/zoneinfo` block, as `za_zone_zoneinfo`.
///
/// # Safety
/// As for `za_zone_buddyinfo`, with an arena handle.
#[no_mangle]
pub unsafe extern "C" fn za_arena_zoneinfo(
    arena: *const za_arena,
    buf: *mut c_char,
    len: usize,
    needed: *mut usize,
) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let a = unsafe { handle::live(arena)? };
        let s = text::zoneinfo(&a.arena.zone());
        // SAFETY: forwarded contract.
        unsafe { text::copy_out(&s, buf, len, needed) }
    })
}
