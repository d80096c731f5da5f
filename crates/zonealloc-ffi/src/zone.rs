//! `za_zone`: a zone of frame numbers, created from a `za_zone_config` with its whole span
//! free, allocated from and freed to by pfn.

use zonealloc::config::WatermarkConfig;
use zonealloc::{ConfigError, Order, Pfn, Zone, ZoneConfig, ZoneType};

use crate::handle::{self, Handle};
use crate::status::za_status::{self, *};
use crate::status::{guard, migratetype_arg, order_arg};
use crate::{stats_of, text, za_stats};

/// Flag of `za_zone_config::flags`: compute watermarks from the zone size as the kernel does
/// (`min_free_kbytes`). Without it every free page can be allocated.
pub const ZA_ZONE_WATERMARKS: u32 = 1;

/// How to build a zone. Start from `za_zone_config_default`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct za_zone_config {
    /// First frame of the zone.
    pub start_pfn: u64,
    /// One past the last frame (the span is `start_pfn..end_pfn`, all of it free at creation).
    pub end_pfn: u64,
    /// Page size in bytes, a power of two, at least 512 (default 4096).
    pub page_size: u64,
    /// `MAX_PAGE_ORDER` (default 10, at most 20).
    pub max_order: u32,
    /// `pageblock_order` (default 9, at most `max_order`).
    pub pageblock_order: u32,
    /// CPUs with per-CPU page lists; 0 turns them off (default 1).
    pub cpus: u32,
    /// `ZA_ZONE_*` flags (default 0).
    pub flags: u32,
}

/// An opaque zone handle: `za_zone_create` makes one, `za_zone_destroy` frees it.
///
/// The tag is the first field (`repr(C)`), so a handle of the other type is recognised by
/// reading the same offset. cbindgen skips the definition; the header declares the type
/// opaque (`after_includes` in cbindgen.toml).
///
/// cbindgen:ignore
#[repr(C)]
pub struct za_zone {
    tag: u64,
    pub(crate) zone: Zone,
}

impl Handle for za_zone {
    const TAG: u64 = u64::from_le_bytes(*b"za_zone\0");
    fn tag_ptr(p: *const Self) -> *const u64 {
        // The tag is at offset 0 (`repr(C)`, first field): a cast, no read.
        p.cast()
    }
}

/// Fills `out` with the defaults: frames 0..65536 (256 MiB of 4 KiB pages), order 10,
/// pageblock order 9, one CPU, no watermarks.
///
/// # Safety
/// `out` is NULL or points to writable memory for a `za_zone_config`.
#[no_mangle]
pub unsafe extern "C" fn za_zone_config_default(out: *mut za_zone_config) -> za_status {
    guard(|| {
        if out.is_null() {
            return Err(ZA_ERR_NULL);
        }
        if !out.is_aligned() {
            return Err(ZA_ERR_MISALIGNED);
        }
        let d = ZoneConfig::default();
        // SAFETY: checked non-null and aligned; writable by the contract.
        unsafe {
            out.write(za_zone_config {
                start_pfn: 0,
                end_pfn: 1 << 16,
                page_size: d.page_size,
                max_order: u32::from(d.max_order),
                pageblock_order: u32::from(d.pageblock_order),
                cpus: 1,
                flags: 0,
            })
        };
        Ok(())
    })
}

fn zone_config(c: &za_zone_config) -> Result<ZoneConfig, za_status> {
    if c.flags & !ZA_ZONE_WATERMARKS != 0 {
        return Err(ZA_ERR_INVALID_ARGUMENT);
    }
    let small = |v: u32| u8::try_from(v).map_err(|_| ZA_ERR_CONFIG);
    let base = if c.flags & ZA_ZONE_WATERMARKS != 0 {
        ZoneConfig::new().with_watermarks(WatermarkConfig::AUTO)
    } else {
        ZoneConfig::without_watermarks()
    };
    let cfg = base
        .with_max_order(small(c.max_order)?)
        .with_pageblock_order(small(c.pageblock_order)?)
        .with_page_size(c.page_size);
    let cfg = if c.cpus == 0 {
        cfg.without_pcp()
    } else {
        cfg.with_cpus(c.cpus)
    };
    cfg.validate()?;
    Ok(cfg)
}

/// Creates a zone spanning `config->start_pfn..config->end_pfn`, every frame free, and stores
/// its handle in `*out` (left untouched on error).
///
/// # Safety
/// `config` is NULL or points to a `za_zone_config`; `out` is NULL or points to writable
/// memory for a pointer.
#[no_mangle]
pub unsafe extern "C" fn za_zone_create(
    config: *const za_zone_config,
    out: *mut *mut za_zone,
) -> za_status {
    guard(|| {
        if config.is_null() || out.is_null() {
            return Err(ZA_ERR_NULL);
        }
        if !config.is_aligned() || !out.is_aligned() {
            return Err(ZA_ERR_MISALIGNED);
        }
        // SAFETY: checked non-null and aligned; readable by the contract, and every bit
        // pattern is a valid `za_zone_config` (integers only).
        let c = unsafe { config.read() };
        let cfg = zone_config(&c)?;
        let (start, end) = (Pfn(c.start_pfn), Pfn(c.end_pfn));
        // The core refuses these spans too (`FrameTable::geometry`); named here so that C
        // gets its own code whichever `ConfigError` the core reports.
        if start < end && end.checked_align_up(Order::LIMIT).is_none() {
            return Err(ConfigError::SpanOverflow { start, end }.into());
        }
        let zone = Zone::new(ZoneType::Normal, start, end, cfg)?;
        zone.add_free_range(Pfn(c.start_pfn), Pfn(c.end_pfn))
            .map_err(|_| ZA_ERR_CONFIG)?;
        let h = za_zone {
            tag: za_zone::TAG,
            zone,
        };
        // SAFETY: `out` is writable by the contract.
        unsafe { handle::publish(out, h) }
    })
}

/// Destroys a zone. Blocks still allocated are forgotten with it.
///
/// # Safety
/// `zone` is NULL or a handle from `za_zone_create` not yet destroyed, used by no other thread
/// during or after this call.
#[no_mangle]
pub unsafe extern "C" fn za_zone_destroy(zone: *mut za_zone) -> za_status {
    // SAFETY: forwarded contract.
    guard(|| unsafe { handle::destroy(zone) })
}

/// Allocates a block of `2^order` frames of `migratetype` (0 unmovable, 1 movable,
/// 2 reclaimable) and stores its first frame in `*pfn_out`.
///
/// # Safety
/// `zone` is NULL or a live handle; `pfn_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn za_zone_alloc(
    zone: *const za_zone,
    order: u32,
    migratetype: u32,
    pfn_out: *mut u64,
) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let z = unsafe { handle::live(zone)? };
        if pfn_out.is_null() {
            return Err(ZA_ERR_NULL);
        }
        if !pfn_out.is_aligned() {
            return Err(ZA_ERR_MISALIGNED);
        }
        let pfn = z
            .zone
            .alloc(order_arg(order)?, migratetype_arg(migratetype)?)?;
        // SAFETY: checked non-null and aligned; writable by the contract.
        unsafe { pfn_out.write(pfn.get()) };
        Ok(())
    })
}

/// Frees the block of `2^order` frames at `pfn`. Double frees, tail frames, wrong orders,
/// misaligned frames and frames outside the zone return their error code and change nothing.
///
/// # Safety
/// `zone` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn za_zone_free(zone: *const za_zone, pfn: u64, order: u32) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let z = unsafe { handle::live(zone)? };
        Ok(z.zone.free(Pfn(pfn), order_arg(order)?)?)
    })
}

/// Drains every CPU's per-CPU lists back to the buddy allocator (`drain_all_pages`).
///
/// # Safety
/// `zone` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn za_zone_drain(zone: *const za_zone) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        unsafe { handle::live(zone)? }.zone.drain_all();
        Ok(())
    })
}

/// The periodic work (per-CPU `high` decay, watermark boost reset). `*pending` (if not NULL)
/// is set to 1 when more decay is pending, else 0.
///
/// # Safety
/// `zone` is NULL or a live handle; `pending` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn za_zone_tick(zone: *const za_zone, pending: *mut u32) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let z = unsafe { handle::live(zone)? };
        // SAFETY: forwarded contract.
        unsafe { crate::text::tick(&z.zone, pending) }
    })
}

/// Fills `*out` with the zone's counters.
///
/// # Safety
/// `zone` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn za_zone_stats(zone: *const za_zone, out: *mut za_stats) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let z = unsafe { handle::live(zone)? };
        // SAFETY: forwarded contract.
        unsafe { text::write_out(out, stats_of(&z.zone)) }
    })
}

/// Checks every invariant of the zone; `ZA_ERR_CHECK_FAILED` if one is broken.
///
/// # Safety
/// `zone` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn za_zone_check(zone: *const za_zone) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let z = unsafe { handle::live(zone)? };
        z.zone.check().map(|_| ()).map_err(|_| ZA_ERR_CHECK_FAILED)
    })
}

/// Writes the zone's `/proc/buddyinfo` line, NUL-terminated, into `buf` (`len` bytes). The
/// size needed, NUL included, is stored in `*needed` (if not NULL); when it exceeds `len`
/// the call returns `ZA_ERR_BUFFER_TOO_SMALL` and writes nothing (`buf` may then be NULL
/// with `len` 0, to ask for the size).
///
/// # Safety
/// `zone` is NULL or a live handle; `buf` is NULL or writable for `len` bytes; `needed` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn za_zone_buddyinfo(
    zone: *const za_zone,
    buf: *mut core::ffi::c_char,
    len: usize,
    needed: *mut usize,
) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let z = unsafe { handle::live(zone)? };
        let s = text::buddyinfo(&z.zone);
        // SAFETY: forwarded contract.
        unsafe { text::copy_out(&s, buf, len, needed) }
    })
}

/// Writes the zone's `/proc/zoneinfo` block (free pages, watermarks, span, managed pages,
/// pagesets) like `za_zone_buddyinfo`.
///
/// # Safety
/// As for `za_zone_buddyinfo`.
#[no_mangle]
pub unsafe extern "C" fn za_zone_zoneinfo(
    zone: *const za_zone,
    buf: *mut core::ffi::c_char,
    len: usize,
    needed: *mut usize,
) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let z = unsafe { handle::live(zone)? };
        let s = text::zoneinfo(&z.zone);
        // SAFETY: forwarded contract.
        unsafe { text::copy_out(&s, buf, len, needed) }
    })
}
