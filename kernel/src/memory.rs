//! From the device tree's memory map to a zone: the span, the metadata table carved out of
//! RAM, and the free ranges (RAM less everything reserved, the table included).
//!
//! This is what Linux's early boot does with memblock: `memblock_alloc` places `struct page`
//! arrays (the memmap) in RAM found in the firmware map, and `memblock_free_all` then hands
//! every page that memblock did not reserve to the buddy allocator.

use zonealloc::{FrameMeta, PcpSlot, Pfn, Zone, ZoneConfig, ZoneType};

use crate::fdt::{MachineInfo, Range};

/// Bytes per frame: paging is off, physical address = pfn * PAGE_SIZE.
pub const PAGE_SIZE: u64 = 4096;

/// The zone and how it was laid out, for the boot report.
pub struct Layout {
    /// Frames the zone spans.
    pub span: (Pfn, Pfn),
    /// Where the metadata table sits (page-rounded bytes).
    pub table: Range,
    /// Entries of the table.
    pub table_entries: u64,
    /// Pages handed to the zone as free.
    pub free_pages: u64,
    /// Free ranges added.
    pub free_ranges: usize,
}

/// Reserved ranges sorted by start and merged, page-rounded outwards.
fn merged_reserved(info: &MachineInfo) -> ([Range; crate::fdt::MAX_RANGES], usize) {
    let mut r = info.reserved;
    let n = info.reserved_len;
    for x in &mut r[..n] {
        x.start = x.start / PAGE_SIZE * PAGE_SIZE;
        x.end = x.end.next_multiple_of(PAGE_SIZE);
    }
    r[..n].sort_unstable_by_key(|x| x.start);
    let mut m = 0;
    for i in 0..n {
        if m > 0 && r[i].start <= r[m - 1].end {
            r[m - 1].end = r[m - 1].end.max(r[i].end);
        } else {
            r[m] = r[i];
            m += 1;
        }
    }
    (r, m)
}

/// Calls `f` on each page-aligned piece of RAM that no reserved range covers.
fn for_each_free(
    info: &MachineInfo,
    mut f: impl FnMut(Range) -> Result<(), &'static str>,
) -> Result<(), &'static str> {
    let (res, n) = merged_reserved(info);
    for bank in &info.ram[..info.ram_len] {
        let mut cur = bank.start.next_multiple_of(PAGE_SIZE);
        let end = bank.end / PAGE_SIZE * PAGE_SIZE;
        for r in &res[..n] {
            if r.end <= cur || r.start >= end {
                continue;
            }
            if r.start > cur {
                f(Range {
                    start: cur,
                    end: r.start,
                })?;
            }
            cur = cur.max(r.end);
        }
        if cur < end {
            f(Range { start: cur, end })?;
        }
    }
    Ok(())
}

/// Builds the zone over all RAM: places the metadata table in the first free piece of RAM
/// large enough (`memblock_alloc`), reserves it, and frees the rest into the zone
/// (`memblock_free_all`).
pub fn build_zone(
    info: &mut MachineInfo,
    cfg: ZoneConfig,
    pcps: &'static [PcpSlot],
) -> Result<(Zone, Layout), &'static str> {
    let ram = &info.ram[..info.ram_len];
    let lo = ram.iter().map(|r| r.start).min().ok_or("no RAM")?;
    let hi = ram.iter().map(|r| r.end).max().ok_or("no RAM")?;
    let span = (Pfn(lo.div_ceil(PAGE_SIZE)), Pfn(hi / PAGE_SIZE));
    let entries = Zone::table_entries(span.0, span.1, &cfg);
    let bytes = (entries * core::mem::size_of::<FrameMeta>() as u64).next_multiple_of(PAGE_SIZE);

    let mut table = None;
    for_each_free(info, |r| {
        if table.is_none() && r.end - r.start >= bytes {
            table = Some(Range {
                start: r.start,
                end: r.start + bytes,
            });
        }
        Ok(())
    })?;
    let table = table.ok_or("no free RAM for the metadata table")?;
    info.reserve(table)?;

    let meta = table.start as *mut FrameMeta;
    for i in 0..entries as usize {
        // SAFETY: `table` lies in RAM that no reserved range covers (so neither the kernel
        // image, the firmware nor the device tree), it is page aligned (more than FrameMeta's
        // alignment) and `bytes` covers `entries` entries. Nothing else uses it: it is now
        // reserved, so it is never given to the zone as free.
        unsafe { meta.add(i).write(FrameMeta::new()) };
    }
    // SAFETY: the `entries` entries were just initialised; the memory stays reserved for the
    // life of the machine and is only ever accessed through this shared slice (FrameMeta's
    // fields are atomics).
    let slice: &'static [FrameMeta] =
        unsafe { core::slice::from_raw_parts(meta, entries as usize) };

    let zone = Zone::with_storage(ZoneType::Normal, span.0, span.1, cfg, slice, pcps)
        .map_err(|_| "Zone::with_storage refused the layout")?;
    let (mut free_pages, mut free_ranges) = (0, 0);
    for_each_free(info, |r| {
        free_pages += zone
            .add_free_range(Pfn(r.start / PAGE_SIZE), Pfn(r.end / PAGE_SIZE))
            .map_err(|_| "add_free_range refused a range")?;
        free_ranges += 1;
        Ok(())
    })?;
    Ok((
        zone,
        Layout {
            span,
            table,
            table_entries: entries,
            free_pages,
            free_ranges,
        },
    ))
}
