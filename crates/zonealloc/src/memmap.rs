//! Firmware-style memory maps (e820, UEFI, device tree `memory` + `reserved-memory`): regions
//! of usable and reserved physical memory, turned into zones with holes.
//!
//! Reserved regions win over usable ones where they overlap, as memblock's `reserve` does.
//! Usable regions are trimmed inward to whole pages.

use crate::types::Pfn;

/// What a region of a memory map holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RegionKind {
    /// RAM the allocator may hand out (e820 type 1, `EfiConventionalMemory`).
    Usable,
    /// Anything else: firmware, ACPI tables, MMIO, a kernel image, a crash kernel.
    Reserved,
}

/// One region of a memory map, in bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct MemoryRegion {
    /// Physical start address in bytes.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// Usable or reserved.
    pub kind: RegionKind,
}

impl MemoryRegion {
    /// A usable region.
    pub const fn usable(start: u64, len: u64) -> Self {
        MemoryRegion {
            start,
            len,
            kind: RegionKind::Usable,
        }
    }

    /// A reserved region.
    pub const fn reserved(start: u64, len: u64) -> Self {
        MemoryRegion {
            start,
            len,
            kind: RegionKind::Reserved,
        }
    }

    fn end(&self) -> u64 {
        self.start.saturating_add(self.len)
    }
}

/// The usable frame ranges of a memory map: usable regions trimmed to whole pages, minus every
/// reserved region, calling `f(start, end)` for each maximal piece in ascending order of the
/// usable regions. A `page_size` of 0 has no frames (nothing is called).
pub fn usable_frames(regions: &[MemoryRegion], page_size: u64, mut f: impl FnMut(Pfn, Pfn)) {
    if page_size == 0 {
        return;
    }
    for u in regions.iter().filter(|r| r.kind == RegionKind::Usable) {
        let start = u.start.div_ceil(page_size);
        let end = u.end() / page_size;
        if start >= end {
            continue;
        }
        // Cut the reserved regions out of [start, end), frame-aligned outward.
        let mut cur = start;
        while cur < end {
            // The reserved region covering `cur`, or the first one starting after it.
            let mut next_cut: Option<(u64, u64)> = None;
            for r in regions.iter().filter(|r| r.kind == RegionKind::Reserved) {
                let rs = r.start / page_size;
                let re = r.end().div_ceil(page_size);
                if re <= cur || rs >= end {
                    continue;
                }
                let cand = (rs.max(cur), re);
                next_cut = match next_cut {
                    Some(c) if c.0 <= cand.0 => Some(c),
                    _ => Some(cand),
                };
            }
            match next_cut {
                Some((rs, re)) if rs <= cur => cur = re,
                Some((rs, re)) => {
                    f(Pfn(cur), Pfn(rs.min(end)));
                    cur = re;
                }
                None => {
                    f(Pfn(cur), Pfn(end));
                    cur = end;
                }
            }
        }
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn pieces(regions: &[MemoryRegion]) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        usable_frames(regions, 4096, |s, e| v.push((s.0, e.0)));
        v
    }

    #[test]
    fn regions_at_the_top_of_the_address_space_and_a_zero_page_size_do_not_panic() {
        let map = [
            MemoryRegion::usable(u64::MAX - 0x2fff, u64::MAX),
            MemoryRegion::reserved(u64::MAX - 0xfff, 0x2000),
        ];
        assert_eq!(pieces(&map), [((1 << 52) - 3, (1 << 52) - 1)]);
        let mut called = false;
        usable_frames(&map, 0, |_, _| called = true);
        assert!(!called);
    }

    #[test]
    fn reserved_regions_punch_holes_in_usable_ones() {
        let map = [
            MemoryRegion::usable(0, 0x9f000),            // 0..0x9f
            MemoryRegion::reserved(0x9f000, 0x61000),    // legacy hole
            MemoryRegion::usable(0x100000, 0x7ff00000),  // 1 MiB..2 GiB
            MemoryRegion::reserved(0x1000000, 0x200000), // kernel image at 16 MiB
        ];
        assert_eq!(
            pieces(&map),
            [(0, 0x9f), (0x100, 0x1000), (0x1200, 0x80000)]
        );
    }

    #[test]
    fn usable_regions_are_trimmed_to_whole_pages() {
        let map = [MemoryRegion::usable(100, 3 * 4096)];
        assert_eq!(pieces(&map), [(1, 3)]);
        assert!(pieces(&[MemoryRegion::usable(1, 4000)]).is_empty());
    }

    #[test]
    fn a_reserved_region_covering_everything_leaves_nothing() {
        let map = [
            MemoryRegion::usable(0x1000, 0x10000),
            MemoryRegion::reserved(0, 0x100000),
        ];
        assert!(pieces(&map).is_empty());
    }
}
