//! Every boot in `shared/kernel` (beside the checkout, or `$ZONEALLOC_SHARED`), read from its
//! own files, predicted with the kernel's preset and compared row by row (one row = one zone
//! of one boot: spanned, present, managed, watermarks, protection, and each CPU's batch and
//! high bounds at boot and after each `percpu_pagelist_high_fraction` write): the
//! `boot_snapshots/m<MiB>_c<CPUs>/` folders and each kernel folder's traced boot. Nothing is
//! copied from one boot into the prediction of another, so a boot dropped into those folders
//! (another memory size, CPU count or kernel build) is checked as it is.
//!
//! Inputs per boot, all the kernel's own: `info/dmesg` (the e820 map and its updates; the
//! "Freeing ... memory: NK" lines; `RAMDISK:`), `info/iomem` (where "Kernel code" lies, so
//! which zone the kernel-image frees land in), `info/ncpu`, `info/uname` (which preset), and
//! `snap/boot/zoneinfo`'s present and final managed pages per zone (which frames the kernel
//! reserved is not in the data, only how many). The frees are placed at the top of their
//! zone's RAM, the reserved frames below them; no value checked depends on where.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use zonealloc::config::KernelVersion;
use zonealloc::memmap::MemoryRegion;
use zonealloc::BootFrees;
use zonealloc::{CpuId, Node, Pfn, ZoneConfig, ZoneType};

mod boot_common;
use boot_common::{zone_ram_top, PAGE};

/// One zone of one zoneinfo file.
#[derive(Clone, Debug, Default, PartialEq)]
struct ZoneRow {
    spanned: u64,
    present: u64,
    managed: u64,
    /// min, low, high, promo (0 where the file has no `promo`).
    wmarks: [u64; 4],
    protection: Vec<u64>,
    /// Per CPU: batch, high_min, high_max (6.1: batch, high, high).
    pcp: Vec<[i64; 3]>,
}

fn num(s: &str) -> u64 {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => s.parse().unwrap(),
    }
}

/// The populated zones of a zoneinfo file, by name.
fn parse_zoneinfo(text: &str) -> BTreeMap<String, ZoneRow> {
    let mut zones = BTreeMap::new();
    let mut cur: Option<(String, ZoneRow)> = None;
    let mut cpu_vals: Option<BTreeMap<&str, i64>> = None;
    let flush_cpu = |row: &mut ZoneRow, vals: &mut Option<BTreeMap<&str, i64>>| {
        if let Some(v) = vals.take() {
            let high = v["high"];
            row.pcp.push([
                v["batch"],
                *v.get("high_min").unwrap_or(&high),
                *v.get("high_max").unwrap_or(&high),
            ]);
        }
    };
    for line in text.lines() {
        let s = line.trim();
        if let Some(rest) = line.strip_prefix("Node ") {
            if let Some((n, mut r)) = cur.take() {
                flush_cpu(&mut r, &mut cpu_vals);
                zones.insert(n, r);
            }
            let name = rest.split_whitespace().last().unwrap().to_owned();
            cur = Some((name, ZoneRow::default()));
            continue;
        }
        let Some((_, row)) = cur.as_mut() else {
            continue;
        };
        if s.starts_with("cpu: ") {
            flush_cpu(row, &mut cpu_vals);
            cpu_vals = Some(BTreeMap::new());
            continue;
        }
        if let Some(p) = s.strip_prefix("protection: (") {
            row.protection = p.trim_end_matches(')').split(',').map(num).collect();
            continue;
        }
        if let Some(v) = cpu_vals.as_mut() {
            if let Some((k, val)) = s.split_once(':') {
                if let Ok(n) = val.trim().parse::<i64>() {
                    let key = ["count", "high", "batch", "high_min", "high_max"]
                        .into_iter()
                        .find(|&x| x == k);
                    if let Some(key) = key {
                        v.insert(key, n);
                    }
                }
                continue;
            }
            flush_cpu(row, &mut cpu_vals);
        }
        let mut it = s.split_whitespace();
        let (k, v) = match (it.next(), it.next(), it.next()) {
            (Some("pages"), Some("free"), Some(_)) => continue,
            (Some(k), Some(v), None) => (k, v),
            _ => continue,
        };
        let Ok(v) = v.parse::<u64>() else { continue };
        match k {
            "min" => row.wmarks[0] = v,
            "low" => row.wmarks[1] = v,
            "high" => row.wmarks[2] = v,
            "promo" => row.wmarks[3] = v,
            "spanned" => row.spanned = v,
            "present" => row.present = v,
            "managed" => row.managed = v,
            _ => {}
        }
    }
    if let Some((name, mut row)) = cur {
        flush_cpu(&mut row, &mut cpu_vals);
        zones.insert(name, row);
    }
    zones.retain(|_, r| r.present > 0);
    zones
}

fn zone_type(name: &str) -> ZoneType {
    match name {
        "DMA" => ZoneType::Dma,
        "DMA32" => ZoneType::Dma32,
        "Normal" => ZoneType::Normal,
        other => panic!("zone {other}: no x86-64 boot builds it"),
    }
}

/// The x86-64 zone of a physical address.
fn zone_of(addr: u64) -> ZoneType {
    if addr < 16 << 20 {
        ZoneType::Dma
    } else if addr < 4 << 30 {
        ZoneType::Dma32
    } else {
        ZoneType::Normal
    }
}

/// `[mem 0xA-0xB]` (inclusive end) as `A..B+1`.
fn mem_range(line: &str) -> Option<(u64, u64)> {
    let r = line.split("[mem ").nth(1)?.split(']').next()?;
    let (a, b) = r.split_once('-')?;
    Some((num(a), num(b) + 1))
}

fn subtract(ram: &mut Vec<(u64, u64)>, (cs, ce): (u64, u64)) {
    let old = std::mem::take(ram);
    for (s, e) in old {
        if ce <= s || cs >= e {
            ram.push((s, e));
            continue;
        }
        if s < cs {
            ram.push((s, cs));
        }
        if ce < e {
            ram.push((ce, e));
        }
    }
}

/// What one boot's files say.
struct Boot {
    name: String,
    kernel: KernelVersion,
    cpus: u32,
    /// Usable RAM, bytes `start..end`, after the e820 updates and removals.
    ram: Vec<(u64, u64)>,
    /// Pages of "Freeing SMP alternatives memory" per zone.
    smp: BTreeMap<ZoneType, u64>,
    /// Pages of every other "Freeing ... memory" line per zone (initrd, kernel image).
    late: BTreeMap<ZoneType, u64>,
    /// zoneinfo per snapshot (`boot`, then `hf8`, `hf32`, `hf0` where present).
    snaps: Vec<(String, BTreeMap<String, ZoneRow>)>,
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn read_boot(name: String, dir: &Path) -> Boot {
    let info = dir.join("info");
    let uname = read(&info.join("uname"));
    let release = uname.split_whitespace().nth(2).unwrap();
    let kernel = if release.starts_with("6.1.") {
        KernelVersion::V6_1
    } else if release.starts_with("7.2.") {
        KernelVersion::V7_2
    } else {
        panic!("{name}: no preset for {release}")
    };
    let cpus = num(&read(&info.join("ncpu"))) as u32;
    let dmesg = read(&info.join("dmesg"));
    let iomem = read(&info.join("iomem"));
    let kernel_code = iomem
        .lines()
        .find(|l| l.ends_with(": Kernel code"))
        .map(|l| num(&format!("0x{}", l.trim().split('-').next().unwrap())))
        .expect("iomem: Kernel code");
    let mut ram = Vec::new();
    let mut cuts = Vec::new();
    let mut initrd = None;
    let mut smp = BTreeMap::new();
    let mut late = BTreeMap::new();
    for line in dmesg.lines() {
        let usable = line.ends_with(" usable") || line.ends_with(" System RAM");
        if line.contains("BIOS-e820: [mem") && usable {
            ram.push(mem_range(line).unwrap());
        } else if line.contains("e820: update [mem") && line.contains("==>") {
            let (_, to) = line.split_once("==>").unwrap();
            if !to.trim().ends_with("usable") && !to.trim().ends_with("System RAM") {
                cuts.push(mem_range(line).unwrap());
            }
        } else if line.contains("e820: remove [mem") {
            cuts.push(mem_range(line).unwrap());
        } else if line.contains("RAMDISK: [mem") {
            initrd = mem_range(line);
        } else if let Some(rest) = line.split("] Freeing ").nth(1) {
            let Some((what, size)) = rest.split_once(" memory: ") else {
                continue;
            };
            let pages = num(size.trim_end_matches('K')) * 1024 / PAGE;
            let (zone, into) = match what {
                "SMP alternatives" => (zone_of(kernel_code), &mut smp),
                "initrd" => (
                    zone_of(initrd.expect("RAMDISK: before its free").0),
                    &mut late,
                ),
                _ => (zone_of(kernel_code), &mut late),
            };
            *into.entry(zone).or_insert(0) += pages;
        }
    }
    for c in cuts {
        subtract(&mut ram, c);
    }
    let mut snaps = Vec::new();
    for s in ["boot", "hf8", "hf32", "hf0"] {
        let p = dir.join("snap").join(s).join("zoneinfo");
        if p.exists() {
            snaps.push((s.to_owned(), parse_zoneinfo(&read(&p))));
        }
    }
    Boot {
        name,
        kernel,
        cpus,
        ram,
        smp,
        late,
        snaps,
    }
}

/// The node the preset predicts for `b`, booted as the kernel boots.
fn predict(b: &Boot) -> Node {
    let boot = &b.snaps[0].1;
    let mut regions: Vec<MemoryRegion> = b
        .ram
        .iter()
        .map(|&(s, e)| MemoryRegion::usable(s, e - s))
        .collect();
    let (mut smp, mut late) = (Vec::new(), Vec::new());
    for (name, z) in boot {
        let t = zone_type(name);
        let top = zone_ram_top(&b.ram, t);
        let l = b.late.get(&t).copied().unwrap_or(0);
        let s = b.smp.get(&t).copied().unwrap_or(0);
        let reserved = z.present - z.managed;
        if l > 0 {
            late.push((Pfn(top - l), Pfn(top)));
        }
        if s > 0 {
            smp.push((Pfn(top - l - s), Pfn(top - l)));
        }
        let res_start = top - l - s - reserved;
        regions.push(MemoryRegion::reserved(res_start * PAGE, reserved * PAGE));
    }
    let cfg = ZoneConfig::for_kernel(b.kernel).with_cpus(b.cpus);
    let frees = BootFrees {
        smp_alternatives: &smp,
        late: &late,
    };
    let node = Node::boot_with(0, &regions, &frees, cfg).unwrap();
    if b.kernel == KernelVersion::V6_1 {
        // 6.1's lowmem_reserve_ratio handler recomputes on a read, and the capture read
        // /proc/sys/vm (info/sysctl_vm) before snap/boot (docs/kernel-versions.md §5.6).
        node.setup_lowmem_reserve();
    }
    node
}

fn row_of(node: &Node, t: ZoneType, cpus: u32, promo: bool) -> ZoneRow {
    let z = node.zone(t).unwrap();
    let w = z.watermarks();
    let r = z.lowmem_reserve();
    ZoneRow {
        spanned: z.spanned_pages(),
        present: z.present_pages(),
        managed: z.managed_pages(),
        wmarks: [w.min, w.low, w.high, if promo { w.promo } else { 0 }],
        protection: [
            ZoneType::Dma,
            ZoneType::Dma32,
            ZoneType::Normal,
            ZoneType::Movable,
            ZoneType::Device,
        ]
        .iter()
        .map(|t| r[t.index()])
        .collect(),
        pcp: (0..cpus)
            .map(|c| {
                let i = z.pcp_info(CpuId(c));
                [i.batch.into(), i.high_min.into(), i.high_max.into()]
            })
            .collect(),
    }
}

/// Per boot: (kernel, rows compared, rows matched, what missed).
fn check(b: &Boot) -> (KernelVersion, usize, usize, Vec<String>) {
    let node = predict(b);
    let promo = b.kernel != KernelVersion::V6_1;
    let boot = &b.snaps[0].1;
    let mut got: BTreeMap<&str, Vec<(String, ZoneRow)>> = BTreeMap::new();
    for (s, _) in &b.snaps {
        let f = match s.as_str() {
            "boot" => None,
            "hf8" => Some(8),
            "hf32" => Some(32),
            _ => Some(0),
        };
        if let Some(f) = f {
            node.set_high_fraction(f).unwrap();
        }
        for name in boot.keys() {
            let row = row_of(&node, zone_type(name), b.cpus, promo);
            got.entry(name).or_default().push((s.clone(), row));
        }
    }
    let mut misses = Vec::new();
    for (name, rows) in &got {
        let mut bad = Vec::new();
        for (s, row) in rows {
            let want = &b.snaps.iter().find(|(n, _)| n == s).unwrap().1[*name];
            // Only the boot snapshot's zone values are boot values; the fraction writes
            // change the per-CPU sizes alone.
            let same = if s == "boot" {
                row == want
            } else {
                row.pcp == want.pcp
            };
            if !same {
                bad.push(format!("{s}: predicted {row:?}, kernel {want:?}"));
            }
        }
        if !bad.is_empty() {
            misses.push(format!("{} {name}: {}", b.name, bad.join("; ")));
        }
    }
    (b.kernel, got.len(), got.len() - misses.len(), misses)
}

fn shared_kernel() -> Option<PathBuf> {
    match std::env::var_os("ZONEALLOC_SHARED") {
        Some(p) => Some(PathBuf::from(p).join("kernel")),
        None => {
            let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/kernel");
            p.is_dir().then_some(p)
        }
    }
}

/// Every boot under `root`: `<kernel>/boot_snapshots/*/` and `<kernel>/` (the traced boot).
fn boots(root: &Path) -> Vec<Boot> {
    let mut out = Vec::new();
    let mut kernels: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("info/dmesg").exists())
        .collect();
    kernels.sort();
    for k in kernels {
        let kname = k.file_name().unwrap().to_string_lossy().into_owned();
        out.push(read_boot(format!("{kname}/traced"), &k));
        let Ok(dirs) = std::fs::read_dir(k.join("boot_snapshots")) else {
            continue;
        };
        let mut dirs: Vec<_> = dirs.map(|e| e.unwrap().path()).collect();
        dirs.sort();
        for d in dirs {
            let n = d.file_name().unwrap().to_string_lossy().into_owned();
            out.push(read_boot(format!("{kname}/{n}"), &d));
        }
    }
    out
}

/// One boot snapshot by name, where the shared data is.
fn one(name: &str) {
    let Some(root) = shared_kernel() else {
        eprintln!("skipped: no shared/kernel beside the checkout (set ZONEALLOC_SHARED)");
        return;
    };
    let (kernel, dir) = name.split_once('/').unwrap();
    let b = read_boot(
        name.to_owned(),
        &root.join(kernel).join("boot_snapshots").join(dir),
    );
    let (_, rows, matched, misses) = check(&b);
    assert_eq!(matched, rows, "{}", misses.join("\n"));
}

#[test]
fn linux_6_1_m1024_c2_from_its_files() {
    one("linux-6.1/m1024_c2");
}

#[test]
fn linux_6_1_m2048_c4_from_its_files() {
    one("linux-6.1/m2048_c4");
}

#[test]
fn linux_6_1_m4096_c4_from_its_files() {
    one("linux-6.1/m4096_c4");
}

#[test]
fn linux_7_2_m1024_c2_from_its_files() {
    one("linux-7.2/m1024_c2");
}

#[test]
fn linux_7_2_m2048_c4_from_its_files() {
    one("linux-7.2/m2048_c4");
}

#[test]
fn linux_7_2_m4096_c4_from_its_files() {
    one("linux-7.2/m4096_c4");
}

/// Every boot found, the held-back ones included: prints the rows matched per kernel and
/// names each row that misses.
#[test]
fn every_boot_in_shared_matches() {
    let Some(root) = shared_kernel() else {
        eprintln!("skipped: no shared/kernel beside the checkout (set ZONEALLOC_SHARED)");
        return;
    };
    let mut per_kernel: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut all_misses = Vec::new();
    let found = boots(&root);
    assert!(!found.is_empty(), "no boot under {}", root.display());
    for b in &found {
        let (k, rows, matched, misses) = check(b);
        let e = per_kernel.entry(k.to_string()).or_default();
        e.0 += rows;
        e.1 += matched;
        all_misses.extend(misses);
    }
    for (k, (rows, matched)) in &per_kernel {
        eprintln!("boot rows matched, kernel {k}: {matched} of {rows}");
    }
    assert!(all_misses.is_empty(), "{}", all_misses.join("\n"));
}
