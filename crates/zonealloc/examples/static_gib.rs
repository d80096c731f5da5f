//! A static 1 GiB configuration, as a kernel would declare it: the metadata table (262,144
//! entries of 12 bytes) and two per-CPU slots in statics. Built to measure where the table
//! lands in the image: `size target/release/examples/static_gib` (`.bss` when
//! `FrameMeta::new()` is all zeros, `.data` otherwise).

use zonealloc::{FrameMeta, PcpSlot, Pfn, Zone, ZoneConfig, ZoneType};

/// 1 GiB of 4 KiB frames.
const FRAMES: usize = 1 << 18;

static TABLE: [FrameMeta; FRAMES] = [const { FrameMeta::new() }; FRAMES];
static PCPS: [PcpSlot; 2] = [const { PcpSlot::new() }; 2];

fn main() {
    let end = Pfn(FRAMES as u64);
    let zone = Zone::with_storage(
        ZoneType::Normal,
        Pfn(0),
        end,
        ZoneConfig::default(),
        &TABLE,
        &PCPS,
    )
    .expect("zone");
    zone.add_free_range(Pfn(0), end).expect("free range");
    zone.check().expect("check");
    println!("{} pages managed", zone.managed_pages());
}
