//! Test-only: crafted trace pieces the walks before the window ([`super::free_factor`],
//! [`super::free_count`]) are tested on: the shipped 6.1 snapshot's zones, with DMA32's
//! `batch` 63 and `high` 3492, and the event texts their lines carry.

use super::free_factor::{Rules, Sizes};
use crate::procfs::ProcSnapshot;
use crate::trace::migratetype::Numbering;
use crate::trace::replay::geometry::Geometry;
use crate::trace::replay::{self, proc_setup, ReplayOptions};
use std::path::{Path, PathBuf};

/// The shipped 6.1 before-snapshot (DMA32: `high` 3492, `batch` 63; CPU 1's count 771).
pub(super) fn snap_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/proc/linux-6.1-p1-before")
}

/// [`snap_dir`]'s zones.
pub(super) fn geo() -> Geometry {
    let snap = ProcSnapshot::read_dir(&snap_dir()).unwrap();
    proc_setup::geometry(&snap, None, Numbering::Current).unwrap()
}

/// The walks' sizes on [`geo`]'s zones (DMA32's in every zone), with 6.7+'s
/// `CONFIG_PCP_BATCH_SCALE_MAX` 5 and THP order 9.
pub(super) fn rules(geo: &Geometry) -> Rules {
    Rules {
        sizes: vec![
            Sizes {
                batch: 63,
                high: 3492
            };
            geo.zones.len()
        ],
        scale_max: Some(5),
        thp_order: Some(9),
    }
}

/// `mm_page_free`'s text for a block of `order` at `pfn`.
pub(super) fn free_text(pfn: u64, order: u8) -> String {
    format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order={order}")
}

/// `mm_page_alloc`'s text for a Movable user block of `order` at `pfn`.
pub(super) fn alloc_text(pfn: u64, order: u8) -> String {
    format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order={order} migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE")
}

/// CPU 1's count, in the zone of pfn 0x10000, after a replay of `trace` from the snapshot
/// in `snap` (`infer` as `--infer` sets it; `None`: the defaults).
pub(super) fn cpu1_count_after(trace: &str, snap: &Path, infer: Option<bool>) -> i32 {
    cpu1_after(trace, snap, infer).count
}

/// CPU 1's lists, in the zone of pfn 0x10000, after a replay as [`cpu1_count_after`]'s.
pub(super) fn cpu1_after(trace: &str, snap: &Path, infer: Option<bool>) -> zonealloc::PcpInfo {
    cpu1_after_with(
        trace,
        &ReplayOptions {
            samples: 10,
            infer,
            proc: Some(snap.to_path_buf()),
            ..ReplayOptions::default()
        },
    )
}

/// CPU 1's lists, in the zone of pfn 0x10000, after a replay of `trace` with `opts`.
pub(super) fn cpu1_after_with(trace: &str, opts: &ReplayOptions) -> zonealloc::PcpInfo {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.txt");
    std::fs::write(&p, trace).unwrap();
    let r = replay::run(&p, opts, &|_| {}).unwrap();
    let z = r.geo.zone_of(0x10000).unwrap();
    r.replayers[0].zones[z].pcp_info(zonealloc::CpuId(1))
}
