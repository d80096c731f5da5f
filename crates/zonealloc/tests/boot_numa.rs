//! Boots per node: every capture in `data/kernel-own/` (or `$ZONEALLOC_OWN_CAPTURES`), one
//! node or several, predicted with [`Machine::boot_with`] from the kernel's own files and
//! compared zone by zone, node by node (one row = one zone of one node: spanned, present,
//! managed, watermarks, protection, each CPU's batch and high bounds).
//!
//! Inputs per capture, all the kernel's: `info/dmesg` ("Early memory node ranges": each
//! node's RAM after the e820 updates; `RAMDISK:`; the "Freeing ... memory: NK" lines),
//! `info/iomem` (where "Kernel code" lies, so which node and zone the image frees land in),
//! `info/uname` (the preset), `boot/nodes/node<N>/cpulist` and `distance` (the CPUs of each
//! node, the SLIT), and `boot/zoneinfo`'s present and managed pages (how many frames the
//! kernel reserved in each zone, placed below the frees at the top of the zone's RAM on its
//! node, as `boot_snapshots.rs` places them on one node).
//!
//! Rows matched: 3 of 3 on each one-node capture, 4 of 4 on `6.1-4g-2node` and on
//! `7.2-4g-2node`. What it shows on two nodes (2 GiB each, CPUs 0-1 and 2-3; 7.2): the kernel's
//! marks add up to one machine-wide `min_free_kbytes` (22527 pages of min over four zones:
//! `set_recommended_min_free_kbytes` counts the populated zones of both nodes, 4 * 512 * 11
//! pages), split by managed pages over both nodes, and each node's `high` is split over its
//! own two CPUs; nodes booted one by one would give node 0's DMA32 a min of 11180, not the
//! kernel's 11514.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use zonealloc::config::KernelVersion;
use zonealloc::numa::{Distances, NodeRegion, NumaConfig};
use zonealloc::{BootFrees, CpuId, Machine, MemoryRegion, Pfn, ZoneConfig, ZoneType};

mod boot_common;
use boot_common::{zone_ram_top, PAGE};

/// One zone of one node, as zoneinfo prints it.
#[derive(Clone, Debug, Default, PartialEq)]
struct Row {
    spanned: u64,
    present: u64,
    managed: u64,
    /// min, low, high, promo (0 where the file has none).
    marks: [u64; 4],
    protection: Vec<u64>,
    /// Per CPU: batch, high_min, high_max (6.1: high twice).
    pcp: Vec<[i64; 3]>,
}

fn hex_or_dec(s: &str) -> u64 {
    let s = s.trim();
    s.strip_prefix("0x")
        .map(|h| u64::from_str_radix(h, 16).unwrap())
        .unwrap_or_else(|| s.parse().unwrap())
}

/// `[mem 0xA-0xB]` as the bytes `A..B+1`.
fn mem(line: &str) -> Option<(u64, u64)> {
    let inner = line.split("[mem ").nth(1)?.split(']').next()?;
    let (a, b) = inner.split_once('-')?;
    Some((hex_or_dec(a), hex_or_dec(b) + 1))
}

/// zoneinfo's populated zones by (node, zone name).
fn zoneinfo(text: &str) -> BTreeMap<(u32, String), Row> {
    let mut rows: BTreeMap<(u32, String), Row> = BTreeMap::new();
    let mut key: Option<(u32, String)> = None;
    let mut cpu: Option<[i64; 3]> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Node ") {
            let (n, z) = rest.split_once(", zone").unwrap();
            key = Some((n.parse().unwrap(), z.trim().to_owned()));
            cpu = None;
            continue;
        }
        let Some(row) = key.as_ref().map(|k| rows.entry(k.clone()).or_default()) else {
            continue;
        };
        let t = line.trim();
        if t.starts_with("cpu: ") {
            cpu = Some([0; 3]);
            row.pcp.push([0; 3]);
            continue;
        }
        if let Some(p) = t.strip_prefix("protection: (") {
            row.protection = p.trim_end_matches(')').split(',').map(hex_or_dec).collect();
            continue;
        }
        let mut w = t.split_whitespace();
        let (k, v) = match (w.next(), w.next(), w.next()) {
            (Some(k), Some(v), None) => (k.trim_end_matches(':'), v),
            _ => continue,
        };
        let Ok(v) = v.parse::<i64>() else { continue };
        if let (Some(c), Some(last)) = (cpu.as_mut(), row.pcp.last_mut()) {
            match k {
                "batch" => c[0] = v,
                "high" => (c[1], c[2]) = (v, v),
                "high_min" => c[1] = v,
                "high_max" => c[2] = v,
                _ => {}
            }
            *last = *c;
            continue;
        }
        let v = v as u64;
        match k {
            "min" => row.marks[0] = v,
            "low" => row.marks[1] = v,
            "high" => row.marks[2] = v,
            "promo" => row.marks[3] = v,
            "spanned" => row.spanned = v,
            "present" => row.present = v,
            "managed" => row.managed = v,
            _ => {}
        }
    }
    rows.retain(|_, r| r.present > 0);
    rows
}

fn zone_type(name: &str) -> ZoneType {
    match name {
        "DMA" => ZoneType::Dma,
        "DMA32" => ZoneType::Dma32,
        "Normal" => ZoneType::Normal,
        other => panic!("zone {other}: no x86-64 boot populates it"),
    }
}

/// The x86-64 zone of a byte address.
fn zone_at(addr: u64) -> ZoneType {
    match addr {
        a if a < 16 << 20 => ZoneType::Dma,
        a if a < 4 << 30 => ZoneType::Dma32,
        _ => ZoneType::Normal,
    }
}

/// "0-1,4" as [0, 1, 4].
fn cpulist(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        out.extend(a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap());
    }
    out
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// One capture's machine as the kernel's files give it.
struct Capture {
    name: String,
    kernel: KernelVersion,
    /// Each node's RAM, bytes.
    ram: Vec<Vec<(u64, u64)>>,
    cpu_node: Vec<u32>,
    dist: Vec<u32>,
    /// Pages freed per (node, zone): SMP alternatives, and every later free.
    smp: BTreeMap<(u32, ZoneType), u64>,
    late: BTreeMap<(u32, ZoneType), u64>,
    zones: BTreeMap<(u32, String), Row>,
}

fn node_at(ram: &[Vec<(u64, u64)>], addr: u64) -> u32 {
    ram.iter()
        .position(|r| r.iter().any(|&(s, e)| s <= addr && addr < e))
        .expect("an address on no node") as u32
}

fn read_capture(name: String, dir: &Path) -> Capture {
    let release = read(&dir.join("info/uname"));
    let release = release.split_whitespace().nth(2).unwrap().to_owned();
    let kernel = match release.get(..4) {
        Some("6.1.") => KernelVersion::V6_1,
        Some("6.12") => KernelVersion::V6_12,
        Some("7.2.") => KernelVersion::V7_2,
        _ => panic!("{name}: no preset for {release}"),
    };
    let nodes_dir = dir.join("boot/nodes");
    let mut cpus: Vec<(u32, u32)> = Vec::new();
    let mut dist = Vec::new();
    let mut n = 0;
    while nodes_dir.join(format!("node{n}")).is_dir() {
        let d = nodes_dir.join(format!("node{n}"));
        cpus.extend(
            cpulist(&read(&d.join("cpulist")))
                .into_iter()
                .map(|c| (c, n)),
        );
        dist.extend(
            read(&d.join("distance"))
                .split_whitespace()
                .map(hex_or_dec)
                .map(|v| v as u32),
        );
        n += 1;
    }
    assert!(n > 0, "{name}: no boot/nodes/node0");
    cpus.sort_unstable();
    let cpu_node: Vec<u32> = cpus.iter().map(|&(_, node)| node).collect();
    let dmesg = read(&dir.join("info/dmesg"));
    // "Early memory node ranges", then one "  node   N: [mem A-B]" line per range.
    let mut ram = vec![Vec::new(); n as usize];
    let mut lines = dmesg
        .lines()
        .skip_while(|l| !l.contains("Early memory node ranges"));
    lines.next();
    for line in lines {
        let t = line.split("] ").nth(1).unwrap_or("").trim_start();
        let Some((id, range)) = t.strip_prefix("node ").and_then(|r| r.split_once(':')) else {
            break;
        };
        ram[id.trim().parse::<usize>().unwrap()].push(mem(range).unwrap());
    }
    let code = read(&dir.join("info/iomem"))
        .lines()
        .find(|l| l.ends_with(": Kernel code"))
        .map(|l| hex_or_dec(&format!("0x{}", l.trim().split('-').next().unwrap())))
        .expect("iomem: Kernel code");
    let image = (node_at(&ram, code), zone_at(code));
    let (mut smp, mut late) = (BTreeMap::new(), BTreeMap::new());
    let mut initrd = None;
    for line in dmesg.lines() {
        if line.contains("RAMDISK: [mem") {
            initrd = mem(line).map(|(s, _)| (node_at(&ram, s), zone_at(s)));
        }
        let Some((what, size)) = line
            .split("] Freeing ")
            .nth(1)
            .and_then(|r| r.split_once(" memory: "))
        else {
            continue;
        };
        let pages = hex_or_dec(size.trim_end_matches('K')) * 1024 / PAGE;
        let (at, into) = match what {
            "SMP alternatives" => (image, &mut smp),
            "initrd" => (initrd.expect("RAMDISK: before its free"), &mut late),
            _ => (image, &mut late),
        };
        *into.entry(at).or_insert(0) += pages;
    }
    Capture {
        name,
        kernel,
        ram,
        cpu_node,
        dist,
        smp,
        late,
        zones: zoneinfo(&read(&dir.join("boot/zoneinfo"))),
    }
}

/// The machine `c` predicts: per zone, its frees at the top of its RAM on its node and the
/// frames the kernel kept below them.
fn predict(c: &Capture) -> Machine {
    let mut regions: Vec<NodeRegion> = Vec::new();
    for (node, ram) in c.ram.iter().enumerate() {
        for &(s, e) in ram {
            let region = MemoryRegion::usable(s, e - s);
            regions.push(NodeRegion {
                node: node as u32,
                region,
            });
        }
    }
    let (mut smp, mut late) = (Vec::new(), Vec::new());
    for ((node, name), z) in &c.zones {
        let t = zone_type(name);
        let top = zone_ram_top(&c.ram[*node as usize], t);
        let l = c.late.get(&(*node, t)).copied().unwrap_or(0);
        let s = c.smp.get(&(*node, t)).copied().unwrap_or(0);
        if l > 0 {
            late.push((Pfn(top - l), Pfn(top)));
        }
        if s > 0 {
            smp.push((Pfn(top - l - s), Pfn(top - l)));
        }
        let kept = z.present - z.managed;
        let region = MemoryRegion::reserved((top - l - s - kept) * PAGE, kept * PAGE);
        regions.push(NodeRegion {
            node: *node,
            region,
        });
    }
    let n = c.ram.len();
    let dist = Distances::new(n, &c.dist).unwrap();
    let cfg = ZoneConfig::for_kernel(c.kernel);
    let frees = BootFrees {
        smp_alternatives: &smp,
        late: &late,
    };
    // No 6.1 reserve recompute here (boot_snapshots.rs has one): qemu-phases' /init reads
    // zoneinfo before anything under /proc/sys/vm, whose lowmem_reserve_ratio read would redo
    // 6.1's reserve over the managed pages after the late frees.
    Machine::boot_with(
        &regions,
        &frees,
        dist,
        &c.cpu_node,
        cfg,
        NumaConfig::for_kernel(c.kernel),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", c.name))
}

/// (rows compared, what missed).
fn check(c: &Capture) -> (usize, Vec<String>) {
    let m = predict(c);
    let promo = c.kernel != KernelVersion::V6_1;
    let mut misses = Vec::new();
    for ((node, name), want) in &c.zones {
        let z = m.node(*node).and_then(|x| x.zone(zone_type(name)));
        let Some(z) = z else {
            misses.push(format!("{} node {node} {name}: not predicted", c.name));
            continue;
        };
        let w = z.watermarks();
        let r = z.lowmem_reserve();
        let mut got = Row {
            spanned: z.spanned_pages(),
            present: z.present_pages(),
            managed: z.managed_pages(),
            marks: [w.min, w.low, w.high, if promo { w.promo } else { 0 }],
            protection: r[..want.protection.len()].to_vec(),
            pcp: (0..c.cpu_node.len() as u32)
                .map(|cpu| {
                    let i = z.pcp_info(CpuId(cpu));
                    [i.batch.into(), i.high_min.into(), i.high_max.into()]
                })
                .collect(),
        };
        if c.kernel == KernelVersion::V6_12 {
            // 6.12's zoneinfo prints only `pcp->high`, the tuned value: BOOT_PAGESET_HIGH (0)
            // until the CPU first frees or refills in the zone (`per_cpu_pages_init`), then
            // clamped to the range of that moment on each use (`nr_pcp_high`,
            // `nr_pcp_alloc`): a CPU that last used the zone early in boot still shows that
            // range's value (6.12-4g: CPU 0's DMA32 252 = batch << 2, `zone_highsize` before
            // the watermarks were set). So batch must match and high be 0 or at most high_max.
            for (g, w) in got.pcp.iter_mut().zip(&want.pcp) {
                let h = w[1];
                if g[0] == w[0] && (0..=g[2]).contains(&h) {
                    *g = *w;
                }
            }
        }
        if &got != want {
            misses.push(format!(
                "{} node {node} {name}: predicted {got:?}, kernel {want:?}",
                c.name
            ));
        }
    }
    (c.zones.len(), misses)
}

fn captures_root() -> Option<PathBuf> {
    let p = std::env::var_os("ZONEALLOC_OWN_CAPTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/kernel-own"));
    p.is_dir().then_some(p)
}

/// Every capture with a boot snapshot and its dmesg: the rows matched per capture, every
/// row that misses named.
#[test]
fn every_own_capture_boots_node_by_node() {
    let Some(root) = captures_root() else {
        eprintln!("skipped: no data/kernel-own (set ZONEALLOC_OWN_CAPTURES)");
        return;
    };
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("boot/zoneinfo").is_file() && p.join("info/dmesg").is_file())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no capture under {}", root.display());
    let mut misses = Vec::new();
    for d in dirs {
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        let c = read_capture(name.clone(), &d);
        let (rows, missed) = check(&c);
        eprintln!(
            "{name}: {} nodes, boot rows matched {} of {rows}",
            c.ram.len(),
            rows - missed.len()
        );
        misses.extend(missed);
    }
    assert!(misses.is_empty(), "{}", misses.join("\n"));
}
