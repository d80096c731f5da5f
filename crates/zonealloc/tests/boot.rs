//! Zones built the way the kernel boots (issue 12, item 6): for each boot snapshot in
//! `../shared/kernel/linux-{6.1,7.2}/boot_snapshots/m<MiB>_c<CPUs>/`, the zones are built from
//! the boot's e820 map, with the late init-memory frees of its `info/dmesg` added after the
//! watermarks and PCP sizes were computed, and every boot-time value its `/proc/zoneinfo`
//! prints (watermarks, protection, batch, high / high_min / high_max, at
//! `percpu_pagelist_high_fraction` 0, 8, 32 and back to 0) is asserted exactly.
//!
//! The numbers are copied from those files (named above each case); the derivations are in
//! `docs/kernel-versions.md` §5. Which frames the kernel reserved (its image, memmap, ...) is
//! not in the data, only how many (present − managed): each zone reserves them at the top of
//! its RAM, and the late frees (every one lands in DMA32 in these boots) just above. No
//! value checked depends on where they are.

use zonealloc::config::KernelVersion;
use zonealloc::memmap::MemoryRegion;
use zonealloc::{BootFrees, CpuId, Node, Pfn, SmpLocksFree, ZoneConfig, ZoneType};

mod boot_common;
use boot_common::{zone_ram_top, PAGE};

struct ZoneCase {
    zone: ZoneType,
    spanned: u64,
    present: u64,
    managed: u64,
    /// Pages freed late (`free_reserved_area`): "Freeing initrd memory", "unused decrypted",
    /// "initmem", "text/rodata gap", "rodata/data gap".
    late: u64,
    /// Pages of "Freeing SMP alternatives memory" (6.1: 36K, before the initcalls; 7.2: 48K,
    /// at an arch_initcall, between the two watermark setups of boot).
    smp: u64,
    /// min, low, high, promo (promo: 7.2 only; 6.1 does not print it).
    wmarks: [u64; 4],
    /// `protection:` over DMA, DMA32, Normal, Movable, Device.
    protection: [u64; 5],
    /// batch, high_min, high_max (6.1: batch, high, high) of every CPU.
    boot: [i32; 3],
    hf8: [i32; 3],
    hf32: [i32; 3],
    hf0: [i32; 3],
}

struct Case {
    name: &'static str,
    kernel: KernelVersion,
    cpus: u32,
    /// The usable e820 ranges, bytes `start..end`, after `e820: update [mem
    /// 0x00000000-0x00000fff] usable ==> reserved` (and the removal of 0xa0000-0xfffff, which
    /// no usable range covers).
    ram: &'static [(u64, u64)],
    zones: &'static [ZoneCase],
}

const CASES: &[Case] = &[
    // linux-6.1/boot_snapshots/m1024_c2: info/ncpu, info/dmesg (BIOS-e820, "Freeing ...": SMP alternatives 36K; 1724K + 2036K + 2824K + 2040K + 1108K),
    // snap/{boot,hf8,hf32,hf0}/zoneinfo.
    Case {
        name: "linux-6.1/m1024_c2",
        kernel: KernelVersion::V6_1,
        cpus: 2,
        ram: &[(0x1000, 0x9fc00), (0x100000, 0x3ffdd000)],
        zones: &[
            ZoneCase {
                zone: ZoneType::Dma,
                spanned: 4095,
                present: 3998,
                managed: 3840,
                late: 0,
                smp: 0,
                wmarks: [177, 221, 265, 0],
                protection: [0, 945, 945, 945, 945],
                boot: [1, 110, 110],
                hf8: [1, 240, 240],
                hf32: [1, 60, 60],
                hf0: [1, 110, 110],
            },
            ZoneCase {
                zone: ZoneType::Dma32,
                spanned: 258013,
                present: 258013,
                managed: 242031,
                late: 2433,
                smp: 9,
                wmarks: [11086, 13857, 16628, 0],
                protection: [0, 0, 0, 0, 0],
                boot: [63, 6928, 6928],
                hf8: [63, 15126, 15126],
                hf32: [63, 3781, 3781],
                hf0: [63, 6928, 6928],
            },
        ],
    },
    // linux-6.1/boot_snapshots/m2048_c4: info/ncpu, info/dmesg (BIOS-e820, "Freeing ...": SMP alternatives 36K; 1724K + 2036K + 2824K + 2040K + 1108K),
    // snap/{boot,hf8,hf32,hf0}/zoneinfo.
    Case {
        name: "linux-6.1/m2048_c4",
        kernel: KernelVersion::V6_1,
        cpus: 4,
        ram: &[(0x1000, 0x9fc00), (0x100000, 0x7ffdd000)],
        zones: &[
            ZoneCase {
                zone: ZoneType::Dma,
                spanned: 4095,
                present: 3998,
                managed: 3840,
                late: 0,
                smp: 0,
                wmarks: [86, 107, 128, 0],
                protection: [0, 1951, 1951, 1951, 1951],
                boot: [1, 26, 26],
                hf8: [1, 120, 120],
                hf32: [1, 30, 30],
                hf0: [1, 26, 26],
            },
            ZoneCase {
                zone: ZoneType::Dma32,
                spanned: 520157,
                present: 520157,
                managed: 499571,
                late: 2433,
                smp: 9,
                wmarks: [11177, 13971, 16765, 0],
                protection: [0, 0, 0, 0, 0],
                boot: [63, 3492, 3492],
                hf8: [63, 15611, 15611],
                hf32: [63, 3902, 3902],
                hf0: [63, 3492, 3492],
            },
        ],
    },
    // linux-6.1/boot_snapshots/m4096_c4: info/ncpu, info/dmesg (BIOS-e820, "Freeing ...": SMP alternatives 36K; 1724K + 2036K + 2824K + 2040K + 1108K),
    // snap/{boot,hf8,hf32,hf0}/zoneinfo.
    Case {
        name: "linux-6.1/m4096_c4",
        kernel: KernelVersion::V6_1,
        cpus: 4,
        ram: &[
            (0x1000, 0x9fc00),
            (0x100000, 0xbffdd000),
            (0x100000000, 0x140000000),
        ],
        zones: &[
            ZoneCase {
                zone: ZoneType::Dma,
                spanned: 4095,
                present: 3998,
                managed: 3840,
                late: 0,
                smp: 0,
                wmarks: [64, 80, 96, 0],
                protection: [0, 2947, 3899, 3899, 3899],
                boot: [1, 20, 20],
                hf8: [1, 120, 120],
                hf32: [1, 30, 30],
                hf0: [1, 20, 20],
            },
            ZoneCase {
                zone: ZoneType::Dma32,
                spanned: 1044480,
                present: 782301,
                managed: 754599,
                late: 2433,
                smp: 9,
                wmarks: [12712, 15890, 19068, 0],
                protection: [0, 0, 952, 952, 952],
                boot: [63, 3972, 3972],
                hf8: [63, 23581, 23581],
                hf32: [63, 5895, 5895],
                hf0: [63, 3972, 3972],
            },
            ZoneCase {
                zone: ZoneType::Normal,
                spanned: 262144,
                present: 262144,
                managed: 243721,
                late: 0,
                smp: 0,
                wmarks: [4119, 5148, 6177, 0],
                protection: [0, 0, 0, 0, 0],
                boot: [63, 1287, 1287],
                hf8: [63, 7616, 7616],
                hf32: [63, 1904, 1904],
                hf0: [63, 1287, 1287],
            },
        ],
    },
    // linux-7.2/boot_snapshots/m1024_c2: info/ncpu, info/dmesg (BIOS-e820, "Freeing ...": SMP alternatives 48K; 1676K + 2028K + 4648K + 1236K + 628K),
    // snap/{boot,hf8,hf32,hf0}/zoneinfo.
    Case {
        name: "linux-7.2/m1024_c2",
        kernel: KernelVersion::V7_2,
        cpus: 2,
        ram: &[(0x1000, 0x9fc00), (0x100000, 0x3ffdd000)],
        zones: &[
            ZoneCase {
                zone: ZoneType::Dma,
                spanned: 4095,
                present: 3998,
                managed: 3840,
                late: 0,
                smp: 0,
                wmarks: [177, 221, 265, 309],
                protection: [0, 947, 947, 947, 947],
                boot: [1, 110, 240],
                hf8: [1, 240, 240],
                hf32: [1, 60, 60],
                hf0: [1, 110, 240],
            },
            ZoneCase {
                zone: ZoneType::Dma32,
                spanned: 258013,
                present: 258013,
                managed: 242674,
                late: 2554,
                smp: 12,
                wmarks: [11086, 13857, 16628, 19399],
                protection: [0, 0, 0, 0, 0],
                boot: [63, 6928, 15007],
                hf8: [63, 15167, 15167],
                hf32: [63, 3791, 3791],
                hf0: [63, 6928, 15167],
            },
        ],
    },
    // linux-7.2/boot_snapshots/m2048_c4: info/ncpu, info/dmesg (BIOS-e820, "Freeing ...": SMP alternatives 48K; 1676K + 2028K + 4648K + 1236K + 628K),
    // snap/{boot,hf8,hf32,hf0}/zoneinfo.
    Case {
        name: "linux-7.2/m2048_c4",
        kernel: KernelVersion::V7_2,
        cpus: 4,
        ram: &[(0x1000, 0x9fc00), (0x100000, 0x7ffdd000)],
        zones: &[
            ZoneCase {
                zone: ZoneType::Dma,
                spanned: 4095,
                present: 3998,
                managed: 3840,
                late: 0,
                smp: 0,
                wmarks: [86, 107, 128, 149],
                protection: [0, 1953, 1953, 1953, 1953],
                boot: [1, 26, 120],
                hf8: [1, 120, 120],
                hf32: [1, 30, 30],
                hf0: [1, 26, 120],
            },
            ZoneCase {
                zone: ZoneType::Dma32,
                spanned: 520157,
                present: 520157,
                managed: 500207,
                late: 2554,
                smp: 12,
                wmarks: [11177, 13971, 16765, 19559],
                protection: [0, 0, 0, 0, 0],
                boot: [63, 3492, 15551],
                hf8: [63, 15631, 15631],
                hf32: [63, 3907, 3907],
                hf0: [63, 3492, 15631],
            },
        ],
    },
    // linux-7.2/boot_snapshots/m4096_c4: info/ncpu, info/dmesg (BIOS-e820, "Freeing ...": SMP alternatives 48K; 1676K + 2028K + 4648K + 1236K + 628K),
    // snap/{boot,hf8,hf32,hf0}/zoneinfo.
    Case {
        name: "linux-7.2/m4096_c4",
        kernel: KernelVersion::V7_2,
        cpus: 4,
        ram: &[
            (0x1000, 0x9fc00),
            (0x100000, 0xbffdd000),
            (0x100000000, 0x140000000),
        ],
        zones: &[
            ZoneCase {
                zone: ZoneType::Dma,
                spanned: 4095,
                present: 3998,
                managed: 3840,
                late: 0,
                smp: 0,
                wmarks: [64, 80, 96, 112],
                protection: [0, 2950, 3902, 3902, 3902],
                boot: [1, 20, 120],
                hf8: [1, 120, 120],
                hf32: [1, 30, 30],
                hf0: [1, 20, 120],
            },
            ZoneCase {
                zone: ZoneType::Dma32,
                spanned: 1044480,
                present: 782301,
                managed: 755247,
                late: 2554,
                smp: 12,
                wmarks: [12714, 15892, 19070, 22248],
                protection: [0, 0, 951, 951, 951],
                boot: [63, 3973, 23521],
                hf8: [63, 23601, 23601],
                hf32: [63, 5900, 5900],
                hf0: [63, 3973, 23601],
            },
            ZoneCase {
                zone: ZoneType::Normal,
                spanned: 262144,
                present: 262144,
                managed: 243711,
                late: 0,
                smp: 0,
                wmarks: [4116, 5145, 6174, 7203],
                protection: [0, 0, 0, 0, 0],
                boot: [63, 1286, 7615],
                hf8: [63, 7615, 7615],
                hf32: [63, 1903, 1903],
                hf0: [63, 1286, 7615],
            },
        ],
    },
];

fn pcp_values(node: &Node, zone: ZoneType, cpus: u32) -> Vec<[i32; 3]> {
    let z = node.zone(zone).unwrap();
    (0..cpus)
        .map(|c| {
            let i = z.pcp_info(CpuId(c));
            [i.batch, i.high_min, i.high_max]
        })
        .collect()
}

/// The boot of `case` (the kernel's preset, `cfg_of` applied to it): its e820 map, each
/// zone's reserved frames at the top of its RAM, below the SMP-alternatives memory and the
/// late frees.
fn boot_case(case: &Case, cfg_of: impl Fn(ZoneConfig) -> ZoneConfig) -> Node {
    let mut regions: Vec<MemoryRegion> = case
        .ram
        .iter()
        .map(|&(s, e)| MemoryRegion::usable(s, e - s))
        .collect();
    let (mut late, mut smp) = (Vec::new(), Vec::new());
    for z in case.zones {
        let top = zone_ram_top(case.ram, z.zone);
        let reserved = z.present - z.managed;
        let late_start = top - z.late;
        let smp_start = late_start - z.smp;
        let res_start = smp_start - reserved;
        regions.push(MemoryRegion::reserved(res_start * PAGE, reserved * PAGE));
        if z.late > 0 {
            late.push((Pfn(late_start), Pfn(top)));
        }
        if z.smp > 0 {
            smp.push((Pfn(smp_start), Pfn(late_start)));
        }
    }
    let cfg = cfg_of(ZoneConfig::for_kernel(case.kernel).with_cpus(case.cpus));
    let frees = BootFrees {
        smp_alternatives: &smp,
        late: &late,
    };
    Node::boot_with(0, &regions, &frees, cfg).unwrap()
}

fn check(case: &Case) {
    let n = case.name;
    let node = boot_case(case, |c| c);
    if case.kernel == KernelVersion::V6_1 {
        // 6.1 keeps the reserve of boot (early managed) but recomputes it whenever
        // /proc/sys/vm/lowmem_reserve_ratio is read (lowmem_reserve_ratio_sysctl_handler does
        // not check `write`), and the capture read it (info/sysctl_vm) before snap/boot:
        // docs/kernel-versions.md §5.6.
        node.setup_lowmem_reserve();
    }
    assert_eq!(node.zones().count(), case.zones.len(), "{n}: zones");
    for zc in case.zones {
        let t = zc.zone;
        let z = node.zone(t).unwrap();
        assert_eq!(z.spanned_pages(), zc.spanned, "{n} {t:?} spanned");
        assert_eq!(z.present_pages(), zc.present, "{n} {t:?} present");
        assert_eq!(z.managed_pages(), zc.managed, "{n} {t:?} managed");
        let w = z.watermarks();
        assert_eq!(
            [w.min, w.low, w.high],
            zc.wmarks[..3],
            "{n} {t:?} min/low/high"
        );
        if case.kernel != KernelVersion::V6_1 {
            assert_eq!(w.promo, zc.wmarks[3], "{n} {t:?} promo");
        }
        let r = z.lowmem_reserve();
        let prot = [
            r[ZoneType::Dma.index()],
            r[ZoneType::Dma32.index()],
            r[ZoneType::Normal.index()],
            r[ZoneType::Movable.index()],
            r[ZoneType::Device.index()],
        ];
        assert_eq!(prot, zc.protection, "{n} {t:?} protection");
        let mut line = String::new();
        z.write_protection(&mut line).unwrap();
        let p = zc.protection;
        assert_eq!(
            line,
            format!(
                "\n        protection: ({}, {}, {}, {}, {})",
                p[0], p[1], p[2], p[3], p[4]
            )
        );
        for got in pcp_values(&node, t, case.cpus) {
            assert_eq!(got, zc.boot, "{n} {t:?} boot batch/high_min/high_max");
        }
        if case.kernel == KernelVersion::V6_1 {
            // 6.1's one fixed `high` is what zoneinfo prints.
            assert_eq!(z.pcp_info(CpuId(0)).high, zc.boot[1], "{n} {t:?} 6.1 high");
        }
    }
    // percpu_pagelist_high_fraction written 8, 32, then 0 (snap/hf8, hf32, hf0): sizes from
    // the final managed pages and the boot low watermark.
    for (f, pick) in [
        (8, (|z: &ZoneCase| z.hf8) as fn(&ZoneCase) -> [i32; 3]),
        (32, |z: &ZoneCase| z.hf32),
        (0, |z: &ZoneCase| z.hf0),
    ] {
        node.set_high_fraction(f).unwrap();
        for zc in case.zones {
            for got in pcp_values(&node, zc.zone, case.cpus) {
                assert_eq!(got, pick(zc), "{n} {:?} high_fraction {f}", zc.zone);
            }
        }
    }
}

#[test]
fn linux_6_1_m1024_c2() {
    check(&CASES[0]);
}

#[test]
fn linux_6_1_m2048_c4() {
    check(&CASES[1]);
}

#[test]
fn linux_6_1_m4096_c4() {
    check(&CASES[2]);
}

#[test]
fn linux_7_2_m1024_c2() {
    check(&CASES[3]);
}

#[test]
fn linux_7_2_m2048_c4() {
    check(&CASES[4]);
}

#[test]
fn linux_7_2_m4096_c4() {
    check(&CASES[5]);
}

/// Negative control (docs/kernel-versions.md §5.5): with the late frees added before the
/// watermarks are computed (the final managed count), the boot values are off.
#[test]
fn late_frees_counted_early_give_other_watermarks() {
    let case = &CASES[0];
    let regions: Vec<MemoryRegion> = case
        .ram
        .iter()
        .map(|&(s, e)| MemoryRegion::usable(s, e - s))
        .chain(case.zones.iter().map(|z| {
            let top = zone_ram_top(case.ram, z.zone);
            let reserved = z.present - z.managed;
            MemoryRegion::reserved((top - reserved) * PAGE, reserved * PAGE)
        }))
        .collect();
    let cfg = ZoneConfig::for_kernel(case.kernel).with_cpus(case.cpus);
    let node = Node::boot(0, &regions, &[], cfg).unwrap();
    let dma = node.zone(ZoneType::Dma).unwrap().watermarks();
    let dma32 = node.zone(ZoneType::Dma32).unwrap().watermarks();
    assert_eq!(dma.min, 175); // the kernel: 177
    assert_eq!(dma32.min, 11088); // the kernel: 11086
}

/// A 384 MiB machine laid out as QEMU lays out the shipped boots (the figures of the
/// kernel's own data are not there: no boot below 512 MiB is shipped), 2 CPUs.
fn small_case(kernel: KernelVersion) -> Case {
    let v61 = kernel == KernelVersion::V6_1;
    let zones: &'static [ZoneCase] = Box::leak(Box::new([
        ZoneCase {
            zone: ZoneType::Dma,
            spanned: 4095,
            present: 3998,
            managed: 3840,
            late: 0,
            smp: 0,
            wmarks: [0; 4],
            protection: [0; 5],
            boot: [0; 3],
            hf8: [0; 3],
            hf32: [0; 3],
            hf0: [0; 3],
        },
        ZoneCase {
            zone: ZoneType::Dma32,
            spanned: 94173,
            present: 94173,
            managed: 82173,
            late: if v61 { 2433 } else { 2554 },
            smp: if v61 { 9 } else { 12 },
            wmarks: [0; 4],
            protection: [0; 5],
            boot: [0; 3],
            hf8: [0; 3],
            hf32: [0; 3],
            hf0: [0; 3],
        },
    ]));
    Case {
        name: "384 MiB",
        kernel,
        cpus: 2,
        ram: &[(0x1000, 0x9fc00), (0x100000, 0x17fdd000)],
        zones,
    }
}

/// What the kernel's formulas give for `init_per_zone_wmark_min` alone over the early
/// managed pages `early` (`calculate_min_free_kbytes` with no high marks yet, then
/// `__setup_per_zone_wmarks`): min, low, high, promo per zone.
fn postcore_wmarks(early: &[u64]) -> Vec<[u64; 4]> {
    let l: u64 = early.iter().sum();
    let kb = l * 4 * 16;
    let mut r = (kb as f64).sqrt() as u64;
    while r * r > kb {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= kb {
        r += 1;
    }
    let pages_min = r.clamp(128, 262_144) / 4;
    early
        .iter()
        .map(|&e| {
            let min = pages_min * e / l;
            let step = (min >> 2).max(e * 10 / 10000);
            [min, min + step, min + 2 * step, min + 3 * step]
        })
        .collect()
}

/// hugepage_init below 512 MiB (`totalram_pages() < 512 MiB`: THP off, khugepaged never
/// starts): the watermarks are `init_per_zone_wmark_min`'s, from the square-root
/// `min_free_kbytes`, on both kernels. 6.1 counts the SMP-alternatives memory (freed in
/// start_kernel), 7.2 does not (freed by an arch_initcall after that setup, and no later
/// setup runs). With THP's raise forced (`thp_min_totalram_mib` 0: the old preset), the
/// marks are khugepaged's 11 pageblocks per zone instead.
#[test]
fn below_512_mib_thp_is_off_and_7_2_frees_smp_alternatives_after_the_watermarks() {
    for kernel in [KernelVersion::V6_1, KernelVersion::V7_2] {
        let case = small_case(kernel);
        let node = boot_case(&case, |c| c);
        let dma32 = &case.zones[1];
        let smp_early = if kernel == KernelVersion::V6_1 {
            dma32.smp
        } else {
            0
        };
        let early = [3840, dma32.managed - dma32.late - dma32.smp + smp_early];
        let want = postcore_wmarks(&early);
        for (i, t) in [ZoneType::Dma, ZoneType::Dma32].into_iter().enumerate() {
            let z = node.zone(t).unwrap();
            assert_eq!(z.managed_pages(), case.zones[i].managed, "{kernel} {t:?}");
            let w = z.watermarks();
            assert_eq!([w.min, w.low, w.high, w.promo], want[i], "{kernel} {t:?}");
            if kernel == KernelVersion::V7_2 {
                // zone_highsize(.., 8): high_max = early managed / 8 / CPUs.
                let hmax = z.pcp_info(CpuId(0)).high_max as u64;
                assert_eq!(
                    hmax,
                    (early[i] / 8 / 2).max(4 * 15),
                    "{kernel} {t:?} high_max"
                );
            }
        }
        // The old preset: khugepaged's raise at any size (45056 KiB for two zones).
        let raised = boot_case(&case, |c| c.with_thp_min_totalram_mib(0));
        let w = raised.zone(ZoneType::Dma32).unwrap().watermarks();
        assert!(
            w.min > 2 * want[1][0],
            "{kernel}: raise {} vs {}",
            w.min,
            want[1][0]
        );
    }
    // 7.2 with the SMP-alternatives memory freed before the initcalls (6.1's order): its
    // DMA32 high_max counts those 12 pages, one more than the kernel's rule gives here.
    let case = small_case(KernelVersion::V7_2);
    let early_smp = boot_case(&case, |c| {
        c.with_smp_locks_free(SmpLocksFree::BeforeInitcalls)
    });
    let got = node_high_max(&early_smp, ZoneType::Dma32);
    let kernel = node_high_max(&boot_case(&case, |c| c), ZoneType::Dma32);
    assert_eq!((got, kernel), (4976, 4975));
}

fn node_high_max(node: &Node, t: ZoneType) -> i32 {
    node.zone(t).unwrap().pcp_info(CpuId(0)).high_max
}
