//! From the device tree's memory map to a zone: the span, the metadata table carved out of
//! RAM (which the zone reserves), and the free ranges (RAM less everything reserved).
//!
//! This is what Linux's early boot does with memblock: `memblock_alloc` places `struct page`
//! arrays (the memmap) in RAM found in the firmware map, and `memblock_free_all` then hands
//! every page that memblock did not reserve to the buddy allocator.

use core::mem::MaybeUninit;

use zonealloc::{FrameMeta, PcpSlot, Pfn, Zone, ZoneConfig, ZoneType};

use crate::fdt::{MachineInfo, Range};
use crate::platform::Hart;

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

/// Calls `f` on each page-aligned piece of RAM (of node `node`'s banks, or of all) that no
/// reserved range covers.
fn for_each_free(
    info: &MachineInfo,
    node: Option<u32>,
    mut f: impl FnMut(Range) -> Result<(), &'static str>,
) -> Result<(), &'static str> {
    let (res, n) = merged_reserved(info);
    for (bank, _) in banks(info, node) {
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
/// large enough (`memblock_alloc`) and hands the zone that uninitialised memory with the
/// frames it occupies, which the zone then keeps out of its free lists; then every piece of
/// RAM the firmware map leaves free goes to the zone (`memblock_free_all`), the table's
/// frames included: the zone skips them.
pub fn build_zone(
    info: &MachineInfo,
    cfg: ZoneConfig,
    pcps: &'static mut [MaybeUninit<PcpSlot>],
) -> Result<(Zone<Hart>, Layout), &'static str> {
    build_zone_of(info, None, cfg, pcps)
}

/// The RAM banks of node `node` (all banks for `None`), with their node.
pub fn banks(info: &MachineInfo, node: Option<u32>) -> impl Iterator<Item = (&Range, u32)> + '_ {
    info.ram[..info.ram_len]
        .iter()
        .zip(info.ram_node)
        .filter(move |&(_, n)| node.is_none_or(|want| n == want))
}

/// [`build_zone`] over the RAM of node `node` only (all RAM for `None`): the table is
/// carved from the node's own memory, as Linux places a node's memmap on the node
/// (`memblock_alloc_node` in `alloc_node_mem_map`).
pub fn build_zone_of(
    info: &MachineInfo,
    node: Option<u32>,
    cfg: ZoneConfig,
    pcps: &'static mut [MaybeUninit<PcpSlot>],
) -> Result<(Zone<Hart>, Layout), &'static str> {
    let lo = banks(info, node)
        .map(|(r, _)| r.start)
        .min()
        .ok_or("no RAM")?;
    let hi = banks(info, node)
        .map(|(r, _)| r.end)
        .max()
        .ok_or("no RAM")?;
    let span = (Pfn(lo.div_ceil(PAGE_SIZE)), Pfn(hi / PAGE_SIZE));
    let entries = Zone::table_entries(span.0, span.1, &cfg);
    let bytes = (entries * core::mem::size_of::<FrameMeta>() as u64).next_multiple_of(PAGE_SIZE);

    let mut table = None;
    for_each_free(info, node, |r| {
        if table.is_none() && r.end - r.start >= bytes {
            table = Some(Range {
                start: r.start,
                end: r.start + bytes,
            });
        }
        Ok(())
    })?;
    let table = table.ok_or("no free RAM for the metadata table")?;
    // SAFETY: `table` lies in RAM that no reserved range covers (so neither the kernel image,
    // the firmware nor the device tree), is page aligned (more than FrameMeta's alignment)
    // and `bytes` covers `entries` entries. The zone takes it for the life of the machine and
    // keeps its frames out of the free lists, so nothing else ever uses this memory.
    let meta: &'static mut [MaybeUninit<FrameMeta>] = unsafe {
        core::slice::from_raw_parts_mut(
            table.start as *mut MaybeUninit<FrameMeta>,
            entries as usize,
        )
    };
    let table_frames = (Pfn(table.start / PAGE_SIZE), Pfn(table.end / PAGE_SIZE));

    let zone = Zone::<Hart>::from_uninit_carved(
        ZoneType::Normal,
        span.0,
        span.1,
        cfg,
        meta,
        Some(table_frames),
        pcps,
    )
    .map_err(|_| "Zone::from_uninit_carved refused the layout")?;
    let (mut free_pages, mut free_ranges) = (0, 0);
    for_each_free(info, node, |r| {
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
