//! What the two boot tests (`boot.rs`, `boot_snapshots.rs`) share: the zone boundaries of an
//! x86-64 memory map.

use zonealloc::ZoneType;

/// Bytes per frame.
pub const PAGE: u64 = 4096;

/// The top of `zone`'s RAM (`ram`: byte ranges), in frames.
pub fn zone_ram_top(ram: &[(u64, u64)], zone: ZoneType) -> u64 {
    let (lo, hi) = match zone {
        ZoneType::Dma => (0, (16 << 20) / PAGE),
        ZoneType::Dma32 => ((16 << 20) / PAGE, (4 << 30) / PAGE),
        _ => ((4 << 30) / PAGE, u64::MAX),
    };
    ram.iter()
        .map(|&(s, e)| (s.div_ceil(PAGE).max(lo), (e / PAGE).min(hi)))
        .filter(|&(s, e)| s < e)
        .map(|(_, e)| e)
        .max()
        .unwrap()
}
