//! [`Machine::boot_with`] against [`Node::boot_with`] on one node, and the machine-wide boot
//! rules on two, worked by hand from `init_per_zone_wmark_min` and
//! `set_recommended_min_free_kbytes`.

use super::*;
use crate::config::{KernelVersion, SmpLocksFree, ZoneConfig};
use crate::node::BootFrees;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const PAGE: u64 = 4096;

fn pfn(bytes: u64) -> Pfn {
    Pfn(bytes / PAGE)
}

/// One zone's boot values: spanned, present, managed, min/low/high, reserve, and CPU 0's and
/// CPU 1's batch and high bounds.
type Row = (u64, u64, u64, [u64; 3], [u64; MAX_NR_ZONES], [i32; 6]);

/// Every zone's [`Row`].
fn rows(nodes: &[&Node]) -> std::vec::Vec<Row> {
    let mut out = std::vec::Vec::new();
    for x in nodes {
        for z in x.zones() {
            let w = z.watermarks();
            let (a, b) = (z.pcp_info(CpuId(0)), z.pcp_info(CpuId(1)));
            out.push((
                z.spanned_pages(),
                z.present_pages(),
                z.managed_pages(),
                [w.min, w.low, w.high],
                z.lowmem_reserve(),
                [
                    a.batch, a.high_min, a.high_max, b.batch, b.high_min, b.high_max,
                ],
            ));
        }
    }
    out
}

#[test]
fn a_one_node_machine_boots_as_node_boot_with_does() {
    // 1 MiB..1 GiB and 4 GiB..4.5 GiB, 2 MiB reserved; late frees in DMA32 and Normal,
    // the SMP alternatives in Normal; every kernel preset, SMP alternatives freed both ways.
    let regions = [
        MemoryRegion::usable(MIB, GIB - MIB),
        MemoryRegion::usable(4 * GIB, GIB / 2),
        MemoryRegion::reserved(64 * MIB, 2 * MIB),
    ];
    let late = [
        (pfn(100 * MIB), pfn(104 * MIB)),
        (pfn(4 * GIB + 100 * MIB), pfn(4 * GIB + 103 * MIB)),
    ];
    let smp = [(pfn(4 * GIB + 200 * MIB), pfn(4 * GIB + 201 * MIB))];
    let frees = BootFrees {
        smp_alternatives: &smp,
        late: &late,
    };
    for v in [
        KernelVersion::V6_1,
        KernelVersion::V6_12,
        KernelVersion::V7_2,
    ] {
        for when in [SmpLocksFree::ArchInitcall, SmpLocksFree::BeforeInitcalls] {
            let mut cfg = ZoneConfig::for_kernel(v).with_cpus(2);
            cfg.smp_locks_free = when;
            let node = Node::boot_with(0, &regions, &frees, cfg).unwrap();
            let tagged: std::vec::Vec<NodeRegion> = regions
                .iter()
                .map(|&region| NodeRegion { node: 0, region })
                .collect();
            let dist = Distances::new(1, &[10]).unwrap();
            let m = Machine::boot_with(&tagged, &frees, dist, &[0, 0], cfg, NumaConfig::default())
                .unwrap();
            assert_eq!(
                rows(&[m.node(0).unwrap()]),
                rows(&[&node]),
                "{v:?} {when:?}"
            );
        }
    }
}

#[test]
fn two_node_boot_splits_min_free_kbytes_over_the_machine_and_late_frees_move_no_mark() {
    // Node 0: 16 MiB..1 GiB (DMA32 only, 258048 pages); node 1: 3 GiB at 4 GiB (Normal,
    // 786432 pages, 4 MiB of it freed late). 7.2, 4 CPUs, two per node.
    let regions = [
        NodeRegion {
            node: 0,
            region: MemoryRegion::usable(16 * MIB, GIB - 16 * MIB),
        },
        NodeRegion {
            node: 1,
            region: MemoryRegion::usable(4 * GIB, 3 * GIB),
        },
    ];
    let late = [(pfn(6 * GIB), pfn(6 * GIB + 4 * MIB))];
    let frees = BootFrees {
        smp_alternatives: &[],
        late: &late,
    };
    let cfg = ZoneConfig::for_kernel(KernelVersion::V7_2);
    let dist = Distances::new(2, &[10, 20, 20, 10]).unwrap();
    let m = Machine::boot_with(
        &regions,
        &frees,
        dist,
        &[0, 0, 1, 1],
        cfg,
        NumaConfig::default(),
    )
    .unwrap();
    let z0 = m.node(0).unwrap().zone(ZoneType::Dma32).unwrap();
    let z1 = m.node(1).unwrap().zone(ZoneType::Normal).unwrap();
    assert_eq!((z0.managed_pages(), z1.managed_pages()), (258_048, 786_432));
    // init_per_zone_wmark_min, before the late free: lowmem 258048 + 785408 pages =
    // 4173824 kB, int_sqrt(16 * 4173824) = 8172 kB. hugepage_init: 512 pages * 2 populated
    // zones (both nodes) * (2 + 3 * 3) = 11264 pages = 45056 kB (under 5% of the free
    // buffer pages), which wins: pages_min = 11264, split by managed pages over 1043456.
    // (Each node booted alone would count one zone: 5632 pages each.)
    let lowmem = 258_048 + 785_408;
    assert_eq!(z0.watermarks().min, 11264 * 258_048 / lowmem);
    assert_eq!(z1.watermarks().min, 11264 * 785_408 / lowmem);
    // The late free added its 1024 pages to node 1 and moved no mark.
    let alone = Node::boot_with(
        1,
        &[MemoryRegion::usable(4 * GIB, 3 * GIB)],
        &frees,
        cfg.with_cpus(4),
    )
    .unwrap();
    assert_eq!(alone.zone(ZoneType::Normal).unwrap().watermarks().min, 5632);
    // Each node's CPUs split its zone's high: node 0's two CPUs, not all four.
    let own = z0.pcp_info(CpuId(0)).high_max;
    let four = Machine::boot_with(
        &regions,
        &frees,
        Distances::new(2, &[10, 20, 20, 10]).unwrap(),
        &[0, 0, 0, 1],
        cfg,
        NumaConfig::default(),
    )
    .unwrap();
    let shared = four.node(0).unwrap().zone(ZoneType::Dma32).unwrap();
    assert!(
        shared.pcp_info(CpuId(0)).high_max < own,
        "three CPUs share node 0"
    );
    m.check().unwrap();
}

#[test]
fn a_free_on_no_node_is_refused() {
    let regions = [NodeRegion {
        node: 0,
        region: MemoryRegion::usable(16 * MIB, 64 * MIB),
    }];
    let frees = BootFrees {
        smp_alternatives: &[],
        late: &[(pfn(GIB), pfn(GIB + MIB))],
    };
    let dist = Distances::new(1, &[10]).unwrap();
    let cfg = ZoneConfig::for_kernel(KernelVersion::V7_2);
    let got = Machine::boot_with(&regions, &frees, dist, &[0], cfg, NumaConfig::default());
    assert!(got.is_err());
}
