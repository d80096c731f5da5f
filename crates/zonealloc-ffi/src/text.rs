//! Text views of a zone (`/proc/buddyinfo`, `/proc/zoneinfo`) and the helpers that copy
//! results into caller memory.

use core::ffi::c_char;
use std::fmt::Write as _;

use zonealloc::arena::ArenaZone;
use zonealloc::stats::ZoneStats;
use zonealloc::Watermarks;
use zonealloc::{stats, FreeAreaSnapshot, Pfn, Zone, ZoneType};

use crate::status::za_status::{self, *};

/// What the C API reads of a zone: a `za_zone`'s [`Zone`], or a `za_arena`'s read-only
/// [`ArenaZone`] (which offers no free, so the arena's blocks keep one owner).
pub(crate) trait Inspect {
    fn zone_type(&self) -> ZoneType;
    fn span(&self) -> (Pfn, Pfn);
    fn watermarks(&self) -> Watermarks;
    fn free_pages(&self) -> u64;
    fn managed_pages(&self) -> u64;
    fn pcp_pages(&self) -> u64;
    fn stats(&self) -> ZoneStats;
    fn snapshot(&self, node: u32) -> FreeAreaSnapshot;
    fn write_pagesets(&self, w: &mut String) -> std::fmt::Result;
    fn tick(&self) -> bool;
}

macro_rules! inspect {
    ($t:ty) => {
        impl Inspect for $t {
            fn zone_type(&self) -> ZoneType {
                <$t>::zone_type(self)
            }
            fn span(&self) -> (Pfn, Pfn) {
                <$t>::span(self)
            }
            fn watermarks(&self) -> Watermarks {
                <$t>::watermarks(self)
            }
            fn free_pages(&self) -> u64 {
                <$t>::free_pages(self)
            }
            fn managed_pages(&self) -> u64 {
                <$t>::managed_pages(self)
            }
            fn pcp_pages(&self) -> u64 {
                <$t>::pcp_pages(self)
            }
            fn stats(&self) -> ZoneStats {
                <$t>::stats(self)
            }
            fn snapshot(&self, node: u32) -> FreeAreaSnapshot {
                <$t>::snapshot(self, node)
            }
            fn write_pagesets(&self, w: &mut String) -> std::fmt::Result {
                <$t>::write_pagesets(self, w)
            }
            fn tick(&self) -> bool {
                <$t>::tick(self)
            }
        }
    };
}
inspect!(Zone);
inspect!(ArenaZone<'_>);

/// The zone's `/proc/buddyinfo` line.
pub(crate) fn buddyinfo(zone: &impl Inspect) -> String {
    let mut s = String::new();
    // Writing to a `String` cannot fail.
    let _ = stats::write_buddyinfo(&mut s, &[zone.snapshot(0)]);
    s
}

/// The `/proc/zoneinfo` lines zonealloc models (`zoneinfo_show_print`), as the lab prints
/// them: free pages, watermarks, span, managed pages, the pagesets block and the start pfn.
pub(crate) fn zoneinfo(z: &impl Inspect) -> String {
    let mut out = String::new();
    let (start, end) = z.span();
    let w = z.watermarks();
    // Writing to a `String` cannot fail.
    let _ = (|| -> std::fmt::Result {
        writeln!(out, "Node 0, zone {:>8}", z.zone_type().name())?;
        writeln!(out, "  pages free     {}", z.free_pages())?;
        writeln!(out, "        boost    {}", w.boost)?;
        writeln!(out, "        min      {}", w.min)?;
        writeln!(out, "        low      {}", w.low)?;
        writeln!(out, "        high     {}", w.high)?;
        writeln!(out, "        spanned  {}", end.get() - start.get())?;
        write!(out, "        managed  {}", z.managed_pages())?;
        z.write_pagesets(&mut out)?;
        writeln!(out, "\n  start_pfn:           {}", start.get())
    })();
    out
}

/// Copies `s` and a NUL into `buf` if `len` allows; stores the size needed in `*needed`.
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes; `needed` is NULL or writable.
pub(crate) unsafe fn copy_out(
    s: &str,
    buf: *mut c_char,
    len: usize,
    needed: *mut usize,
) -> Result<(), za_status> {
    let need = s.len() + 1;
    if !needed.is_null() {
        if !needed.is_aligned() {
            return Err(ZA_ERR_MISALIGNED);
        }
        // SAFETY: checked non-null and aligned; writable by the contract.
        unsafe { needed.write(need) };
    }
    if buf.is_null() {
        return Err(if len == 0 {
            ZA_ERR_BUFFER_TOO_SMALL
        } else {
            ZA_ERR_NULL
        });
    }
    if need > len {
        return Err(ZA_ERR_BUFFER_TOO_SMALL);
    }
    // SAFETY: `buf` is writable for `len >= need` bytes (contract and check above), and a
    // fresh `String` cannot overlap caller memory.
    unsafe {
        core::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), s.len());
        buf.add(s.len()).write(0);
    }
    Ok(())
}

/// Writes `value` to `out`.
///
/// # Safety
/// `out` is NULL or writable for a `T`.
pub(crate) unsafe fn write_out<T>(out: *mut T, value: T) -> Result<(), za_status> {
    if out.is_null() {
        return Err(ZA_ERR_NULL);
    }
    if !out.is_aligned() {
        return Err(ZA_ERR_MISALIGNED);
    }
    // SAFETY: checked non-null and aligned; writable by the contract.
    unsafe { out.write(value) };
    Ok(())
}

/// `Zone::tick`, with the pending flag stored in `*pending` if not NULL.
///
/// # Safety
/// `pending` is NULL or writable.
pub(crate) unsafe fn tick(zone: &impl Inspect, pending: *mut u32) -> Result<(), za_status> {
    if !pending.is_null() && !pending.is_aligned() {
        return Err(ZA_ERR_MISALIGNED);
    }
    let more = zone.tick();
    if !pending.is_null() {
        // SAFETY: checked non-null and aligned; writable by the contract.
        unsafe { pending.write(u32::from(more)) };
    }
    Ok(())
}
