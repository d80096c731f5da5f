//! The allocator at work on its embedded defaults: a node built from an x86-64-style firmware
//! memory map (with the legacy hole, a kernel image, ACPI tables, MMIO and a crash kernel
//! reserved), a short deterministic mixed workload, then the kernel's `/proc/buddyinfo`,
//! `/proc/pagetypeinfo` and `extfrag/unusable_index` text, the zone and per-CPU list counters
//! (with the `pagesets` block of `/proc/zoneinfo`) and the invariant check.
//!
//! Run: `cargo run --release -p zonealloc --example buddyinfo`. The output is the same on every
//! run: the workload draws from a fixed-seed linear congruential generator.

use std::fmt::Write as _;
use std::process::ExitCode;

use zonealloc::{
    stats, AllocRequest, MemoryRegion, MigrateType, Node, Order, Pfn, RegionKind, ZoneConfig,
    ZoneType,
};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// A 4 GiB x86-64 machine as its firmware (e820) describes it. Reserved regions win over
/// usable ones where they overlap, as memblock's do.
const E820: &[MemoryRegion] = &[
    // Conventional memory below 640 KiB, then the EBDA and the BIOS ROM.
    MemoryRegion::usable(0, 0x9_fc00),
    MemoryRegion::reserved(0x9_fc00, 0x400),
    MemoryRegion::reserved(0xf_0000, 0x1_0000),
    // 1 MiB .. 2 GiB - 2 MiB, with the kernel image at 16 MiB (CONFIG_PHYSICAL_START).
    MemoryRegion::usable(MIB, 2 * GIB - 3 * MIB),
    MemoryRegion::reserved(16 * MIB, 32 * MIB),
    // ACPI tables and NVS, then IOAPIC, LAPIC and firmware flash below 4 GiB.
    MemoryRegion::reserved(2 * GIB - 2 * MIB, 2 * MIB),
    MemoryRegion::reserved(0xfec0_0000, 20 * MIB),
    // RAM remapped above the PCI hole, with crashkernel=128M inside it.
    MemoryRegion::usable(4 * GIB, 2 * GIB),
    MemoryRegion::reserved(5 * GIB, 128 * MIB),
];

/// Workload length: a growth phase, then churn at a steady allocated size.
const GROW_STEPS: u32 = 100_000;
const CHURN_STEPS: u32 = 200_000;
const SEED: u64 = 0x5eed_2024;

/// Knuth's MMIX linear congruential generator: deterministic, no dependency.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as u32
    }

    /// A draw in `0..100`.
    fn percent(&mut self) -> u32 {
        self.next() % 100
    }
}

/// One request of the mix: mostly small Movable blocks, some kernel-style Unmovable and
/// Reclaimable ones, a few huge-page-sized blocks, a few DMA32-limited and atomic requests.
fn draw_request(rng: &mut Lcg) -> (Order, AllocRequest) {
    let order = match rng.next() % 1000 {
        0..=699 => 0,
        700..=779 => 1,
        780..=839 => 2,
        840..=899 => 3,
        900..=984 => 4,
        985..=994 => 9,
        _ => 10,
    };
    let mt = match rng.percent() {
        0..=69 => MigrateType::Movable,
        70..=89 => MigrateType::Unmovable,
        _ => MigrateType::Reclaimable,
    };
    let req = match rng.percent() {
        0..=4 => AllocRequest::new(mt).zone_limit(ZoneType::Dma32),
        5..=7 => AllocRequest::atomic(mt),
        _ => AllocRequest::new(mt),
    };
    (Order::new(order).expect("orders drawn are <= 10"), req)
}

#[derive(Default)]
struct Tally {
    allocs: u64,
    failures: u64,
    frees: u64,
}

/// Runs `steps` operations, allocating with probability `alloc_percent`, freeing a random live
/// block otherwise.
fn run(
    node: &Node,
    rng: &mut Lcg,
    live: &mut Vec<(Pfn, Order)>,
    tally: &mut Tally,
    steps: u32,
    alloc_percent: u32,
) -> Result<(), String> {
    for _ in 0..steps {
        if live.is_empty() || rng.percent() < alloc_percent {
            let (order, req) = draw_request(rng);
            match node.alloc_with(order, req) {
                Ok(pfn) => {
                    live.push((pfn, order));
                    tally.allocs += 1;
                }
                Err(_) => tally.failures += 1,
            }
        } else {
            let i = rng.next() as usize % live.len();
            let (pfn, order) = live.swap_remove(i);
            node.free(pfn, order)
                .map_err(|e| format!("free of {pfn:?} order {order:?} failed: {e:?}"))?;
            tally.frees += 1;
        }
    }
    Ok(())
}

/// Each zone's size, watermarks, counters and per-CPU lists.
fn zone_counters(out: &mut String, node: &Node) -> std::fmt::Result {
    writeln!(out, "\n== zone counters ==")?;
    for z in node.zones() {
        let s = z.stats();
        let w = z.watermarks();
        let p = z.pcp_stats();
        writeln!(out, "  {}:", z.zone_type().name())?;
        writeln!(
            out,
            "    {} managed pages, {} free in the buddy; watermarks min {} low {} high {} (boost {})",
            z.managed_pages(),
            z.free_pages(),
            w.min,
            w.low,
            w.high,
            w.boost,
        )?;
        writeln!(
            out,
            "    allocs {} frees {} failures {} splits {} merges {}",
            s.allocs.iter().sum::<u64>(),
            s.frees.iter().sum::<u64>(),
            s.alloc_failures,
            s.splits,
            s.merges,
        )?;
        writeln!(
            out,
            "    fallbacks {} claims {} steals {} tail placements {} zone lock acquisitions {}",
            s.fallbacks, s.claims, s.steals, s.tail_placements, s.zone_lock_acquisitions,
        )?;
        writeln!(
            out,
            "    per-CPU lists: {} hits {} misses ({} pages refilled), {} frees, \
             drained {} (high) {} (free_high)",
            p.alloc_hits,
            p.alloc_misses,
            p.refill_pages,
            p.frees,
            p.drain_high_pages,
            p.drain_free_high_pages,
        )?;
        z.write_pagesets(out)?;
        writeln!(out)?;
    }
    Ok(())
}

fn report(out: &mut String) -> Result<bool, Box<dyn std::error::Error>> {
    writeln!(out, "== firmware memory map (e820) ==")?;
    for r in E820 {
        let kind = match r.kind {
            RegionKind::Usable => "usable",
            RegionKind::Reserved => "reserved",
        };
        let last = r.start + r.len - 1;
        writeln!(out, "  [mem {:#018x}-{last:#018x}] {kind}", r.start)?;
    }

    let node = Node::from_memory_map(0, E820, ZoneConfig::default())
        .map_err(|e| format!("building the node: {e:?}"))?;

    writeln!(
        out,
        "\n== zones (x86-64 layout: DMA < 16 MiB <= DMA32 < 4 GiB <= Normal) =="
    )?;
    for z in node.zones() {
        let (start, end) = z.span();
        let page_size = z.config().page_size;
        let managed = z.managed_pages();
        writeln!(
            out,
            "  {:<7} pfns {:#x}..{:#x}: {managed} managed pages ({} MiB), \
             metadata {} KiB (Linux struct page: {} KiB)",
            z.zone_type().name(),
            start.get(),
            end.get(),
            managed * page_size / MIB,
            z.metadata_bytes() / 1024,
            (end.get() - start.get()) * 64 / 1024,
        )?;
    }

    let mut rng = Lcg(SEED);
    let mut live = Vec::new();
    let mut tally = Tally::default();
    run(&node, &mut rng, &mut live, &mut tally, GROW_STEPS, 60)?;
    run(&node, &mut rng, &mut live, &mut tally, CHURN_STEPS, 50)?;
    let live_pages: u64 = live.iter().map(|&(_, o)| o.pages()).sum();
    writeln!(out, "\n== workload (LCG seed {SEED:#x}) ==")?;
    writeln!(
        out,
        "  {} steps: {} allocations, {} failed, {} frees; {} blocks ({live_pages} pages) still allocated",
        GROW_STEPS + CHURN_STEPS,
        tally.allocs,
        tally.failures,
        tally.frees,
        live.len(),
    )?;

    let snapshots = node.snapshots().collect::<Vec<_>>();
    writeln!(out, "\n== /proc/buddyinfo ==")?;
    stats::write_buddyinfo(out, &snapshots)?;
    writeln!(out, "\n== /proc/pagetypeinfo ==")?;
    stats::write_pagetypeinfo(out, &snapshots)?;
    writeln!(
        out,
        "\n== /sys/kernel/debug/extfrag/unusable_index (unusable free space index per order) =="
    )?;
    stats::write_unusable_index(out, &snapshots)?;

    zone_counters(out, &node)?;

    writeln!(out, "\n== invariants ==")?;
    let check = node.check();
    match &check {
        Ok(f) => writeln!(
            out,
            "  node.check(): ok ({} pages free in the buddy, {} on per-CPU lists, {} allocated)",
            f.free_pages, f.pcp_pages, f.allocated_pages
        )?,
        Err(e) => writeln!(out, "  node.check(): FAILED: {e}")?,
    }
    Ok(check.is_ok())
}

fn main() -> ExitCode {
    let mut out = String::new();
    let result = report(&mut out);
    print!("{out}");
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
