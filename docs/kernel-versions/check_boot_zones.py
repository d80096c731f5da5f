#!/usr/bin/env python3
"""Recompute the boot-time zone values of /proc/zoneinfo from the kernel's formulas and
compare them with the captured snapshots (docs/kernel-versions.md, section 5).

Usage: python3 docs/kernel-versions/check_boot_zones.py [/work/shared/kernel]
Prints one line per checked value (computed vs observed) and exits 1 on any mismatch.

Checks every boot_snapshots/m<MiB>_c<CPUs>/ folder and the traced boot of each kernel folder
(<kernel>/snap/boot with <kernel>/info).

Inputs, all from the capture folder of one boot:
  snap/<s>/zoneinfo   present, final managed, observed values; the kernel family
                      (6.1-style `high:` only vs 6.7+ `high_min:`/`high_max:`/`promo`)
  info/sysctl_vm      min_free_kbytes (already raised by khugepaged), watermark_scale_factor,
                      lowmem_reserve_ratio
  info/ncpu           CPUs online when setup_per_zone_wmarks() ran (all of them: postcore)
  info/dmesg          the "Freeing ... memory" lines printed after init_per_zone_wmark_min()
                      and set_recommended_min_free_kbytes(): initrd, decrypted, initmem,
                      text/rodata gap, rodata/data gap (NOT "SMP alternatives": freed before)
  info/iomem, dmesg   "Kernel code" and "RAMDISK:" addresses: which zone got those frees
"""
import os
import re
import sys

PAGE_SHIFT = 12
SWAP_CLUSTER_MAX = 32
MIN_PERCPU_PAGELIST_HIGH_FRACTION = 8
ZONES = ["DMA", "DMA32", "Normal", "Movable", "Device"]
ZONE_MOVABLE = 3
# x86-64 zone boundaries (pfn): DMA < 16 MiB, DMA32 < 4 GiB
DMA_END_PFN = 0x1000
DMA32_END_PFN = 0x100000
# Frees that happen after the last setup_per_zone_wmarks() of boot (free_initmem(),
# mark_rodata_ro(), populate_rootfs()); "SMP alternatives" is freed before mm_core_init ends.
LATE_FREES_KERNEL = ("unused decrypted memory", "unused kernel image (initmem) memory",
                     "unused kernel image (text/rodata gap) memory",
                     "unused kernel image (rodata/data gap) memory")


def parse_zoneinfo(path):
    zones = {}
    cur = None
    cpu = None
    with open(path) as f:
        for line in f:
            m = re.match(r"Node (\d+), zone\s+(\S+)", line)
            if m:
                cur = {"pcp": {}}
                zones[m.group(2)] = cur
                cpu = None
                continue
            if cur is None:
                continue
            s = line.strip()
            m = re.match(r"^(pages free|min|low|high|promo|spanned|present|managed)\s+(\d+)$", s)
            if m and cpu is None:
                cur[m.group(1).replace("pages free", "free")] = int(m.group(2))
                continue
            m = re.match(r"protection: \((.*)\)", s)
            if m:
                cur["protection"] = [int(x) for x in m.group(1).split(",")]
                continue
            m = re.match(r"cpu: (\d+)", s)
            if m:
                cpu = int(m.group(1))
                cur["pcp"][cpu] = {}
                continue
            m = re.match(r"(count|high|batch|high_min|high_max):\s+(\d+)", s)
            if m and cpu is not None:
                cur["pcp"][cpu][m.group(1)] = int(m.group(2))
    return zones


def kernel_family(zones):
    """6.7+ prints high_min/high_max per pageset (and 6.1 lacks them). See section 6."""
    any_pcp = next(z["pcp"][c] for z in zones.values() for c in z["pcp"])
    return "7.2" if "high_min" in any_pcp else "6.1"


def zone_of_pfn(pfn):
    return "DMA" if pfn < DMA_END_PFN else ("DMA32" if pfn < DMA32_END_PFN else "Normal")


def late_frees(info):
    """Pages freed into each zone after the boot watermarks/PCP sizes were computed."""
    dmesg = open(os.path.join(info, "dmesg")).read()
    iomem = open(os.path.join(info, "iomem")).read()
    kcode = int(re.search(r"([0-9a-f]+)-[0-9a-f]+ : Kernel code", iomem).group(1), 16)
    rd = re.search(r"RAMDISK: \[mem (0x[0-9a-f]+)-", dmesg)
    out = {z: 0 for z in ZONES}
    for m in re.finditer(r"Freeing (.*?): (\d+)K", dmesg):
        what, kb = m.group(1), int(m.group(2))
        if what == "initrd memory":
            zone = zone_of_pfn(int(rd.group(1), 16) >> PAGE_SHIFT)
        elif what in LATE_FREES_KERNEL:
            zone = zone_of_pfn(kcode >> PAGE_SHIFT)
        else:
            continue
        out[zone] += kb >> (PAGE_SHIFT - 10)
    return out


def read_sysctl(info):
    d = {}
    for line in open(os.path.join(info, "sysctl_vm")):
        if ":" in line:
            k, v = line.split(":", 1)
            d[k.strip()] = v.split()
    return d


def rounddown_pow_of_two(n):
    return 1 << (n.bit_length() - 1)


def zone_batchsize(managed, fam):
    if fam == "6.1":  # 6.1 mm/page_alloc.c zone_batchsize(): ~0.1% or 1 MiB, /4
        batch = min(managed >> 10, (1 << 20) >> PAGE_SHIFT) // 4
        batch = max(batch, 1)
        batch = rounddown_pow_of_two(batch + batch // 2) - 1
        return max(1, batch)  # zone_set_pageset_high_and_batch(): max(1, zone_batchsize())
    # 6.7+ (6.12, 7.2) zone_batchsize(): ~0.025% or 256 KiB
    batch = min(managed >> 12, (256 << 10) >> PAGE_SHIFT)
    if batch <= 1:
        return 1
    return rounddown_pow_of_two(batch + batch // 2) - 1


def zone_highsize(low_wmark, managed, batch, ncpu, fraction):
    total = low_wmark if fraction == 0 else managed // fraction
    return max(total // ncpu, batch << 2)


def setup_wmarks(managed, min_free_kbytes, wsf, fam):
    """__setup_per_zone_wmarks(): managed = the counts at the moment it ran."""
    pages_min = min_free_kbytes >> (PAGE_SHIFT - 10)
    lowmem = sum(managed[z] for i, z in enumerate(ZONES)
                 if not (fam != "6.1" and i == ZONE_MOVABLE))
    wm = {}
    for i, z in enumerate(ZONES):
        tmp = pages_min * managed[z] // lowmem
        if fam != "6.1" and i == ZONE_MOVABLE:  # 6.x: movable capped like highmem
            wmin = min(max(managed[z] // 1024, SWAP_CLUSTER_MAX), 128)
        else:
            wmin = tmp
        step = max(tmp >> 2, managed[z] * wsf // 10000)  # mult_frac()
        wm[z] = {"min": wmin, "low": wmin + step, "high": wmin + 2 * step,
                 "promo": wmin + 3 * step}
    return wm


def lowmem_reserve(managed, ratios):
    """setup_per_zone_lowmem_reserve()."""
    prot = {}
    for i, z in enumerate(ZONES):
        row = [0] * len(ZONES)
        if i < len(ZONES) - 1:
            ratio = ratios[i]
            clear = ratio == 0 or managed[z] == 0
            acc = 0
            for j in range(i + 1, len(ZONES)):
                acc += managed[ZONES[j]]
                row[j] = 0 if clear else acc // ratio
        prot[z] = row
    return prot


class Checker:
    def __init__(self):
        self.bad = 0
        self.n = 0

    def eq(self, label, computed, observed):
        self.n += 1
        ok = computed == observed
        self.bad += not ok
        print(f"  {'ok ' if ok else 'BAD'} {label:<42} computed {computed!s:<28} observed {observed}")


def check_boot(root, kdir, bdir, ck):
    """bdir None: the traced boot of the kernel folder itself (snap/boot only, no hfN)."""
    base = os.path.join(root, kdir, "boot_snapshots", bdir) if bdir else os.path.join(root, kdir)
    info = os.path.join(base, "info")
    snaps = {s: parse_zoneinfo(os.path.join(base, "snap", s, "zoneinfo"))
             for s in ("boot", "hf8", "hf32", "hf0")
             if os.path.exists(os.path.join(base, "snap", s, "zoneinfo"))}
    fam = kernel_family(snaps["boot"])
    ncpu = int(open(os.path.join(info, "ncpu")).read().split()[0])
    sc = read_sysctl(info)
    mfk = int(sc["min_free_kbytes"][0])
    wsf = int(sc["watermark_scale_factor"][0])
    ratios = [int(x) for x in sc["lowmem_reserve_ratio"]]
    final = {z: snaps["boot"].get(z, {}).get("managed", 0) for z in ZONES}
    late = late_frees(info)
    early = {z: final[z] - late[z] for z in ZONES}
    print(f"== {kdir}/{bdir or 'traced boot'}: family {fam}, ncpu {ncpu}, min_free_kbytes {mfk}, "
          f"late frees {dict((z, p) for z, p in late.items() if p)}")

    # set_recommended_min_free_kbytes() (mm/khugepaged.c): 2 + MIGRATE_PCPTYPES^2 pageblocks
    # per populated zone up to ZONE_NORMAL, capped at 5% of nr_free_buffer_pages().
    nr_zones = sum(1 for z in ZONES[:3] if early[z])
    rec = 512 * nr_zones * (2 + 3 * 3)
    wm = setup_wmarks(early, mfk, wsf, fam)
    nfbp = sum(max(early[z] - wm[z]["high"], 0) for z in ZONES[:3])
    ck.eq("min_free_kbytes (khugepaged)", min(rec, nfbp // 20) << 2, mfk)
    # lowmem_reserve: 7.2 recomputes it in adjust_managed_page_count() (final managed);
    # 6.1 recomputes it whenever /proc/sys/vm/lowmem_reserve_ratio is read or written
    # (the capture read sysctl_vm), so both end at the final managed counts.
    prot = lowmem_reserve(final, ratios)
    obs = snaps["boot"]
    for z in ZONES:
        if z not in obs:
            continue
        keys = ["min", "low", "high"] + (["promo"] if fam != "6.1" else [])
        ck.eq(f"{z} watermarks {'/'.join(keys)}", [wm[z][k] for k in keys],
              [obs[z][k] for k in keys])
        ck.eq(f"{z} protection", prot[z], obs[z]["protection"])

    for snap, frac in (("boot", None), ("hf8", 8), ("hf32", 32), ("hf0", 0)):
        if snap not in snaps:
            continue
        # boot: zone_pcp_update() from setup_per_zone_wmarks() with the early managed;
        # hfN: percpu_pagelist_high_fraction_sysctl_handler() -> zone_pcp_update() with the
        # final managed (and the boot-time low watermark, never recomputed).
        managed = early if snap == "boot" else final
        f = 0 if frac is None else frac
        for z in ZONES:
            zi = snaps[snap].get(z)
            if not zi or not zi["pcp"]:
                continue
            batch = zone_batchsize(managed[z], fam)
            low = wm[z]["low"]
            if fam == "6.1":
                comp = {"batch": batch, "high": zone_highsize(low, managed[z], batch, ncpu, f)}
            elif f:
                h = zone_highsize(low, managed[z], batch, ncpu, f)
                comp = {"batch": batch, "high_min": h, "high_max": h}
            else:
                comp = {"batch": batch,
                        "high_min": zone_highsize(low, managed[z], batch, ncpu, 0),
                        "high_max": zone_highsize(low, managed[z], batch, ncpu,
                                                  MIN_PERCPU_PAGELIST_HIGH_FRACTION)}
            keys = sorted(comp)
            for cpu, p in sorted(zi["pcp"].items()):
                ck.eq(f"{snap} {z} cpu{cpu} {'/'.join(keys)}", [comp[k] for k in keys],
                      [p[k] for k in keys])


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/kernel"
    ck = Checker()
    for kdir in sorted(os.listdir(root)):
        bs = os.path.join(root, kdir, "boot_snapshots")
        if not os.path.isdir(bs):
            continue
        if os.path.exists(os.path.join(root, kdir, "snap", "boot", "zoneinfo")):
            check_boot(root, kdir, None, ck)
        for bdir in sorted(os.listdir(bs)):
            check_boot(root, kdir, bdir, ck)
    print(f"{ck.n - ck.bad}/{ck.n} values match")
    sys.exit(1 if ck.bad else 0)


if __name__ == "__main__":
    main()
