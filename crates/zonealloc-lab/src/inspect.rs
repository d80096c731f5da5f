//! `zonealloc buddyinfo|zoneinfo|pagetypeinfo`: the kernel's `/proc` views of a node after a
//! chosen workload.
//!
//! The node is built from a small embedded x86-64-like firmware (e820) memory map with the
//! usual holes and reservations, as `crates/zonealloc/examples/buddyinfo.rs` does; the
//! `mixed` workload is a deterministic (seeded LCG) mix of orders, migratetypes and zone
//! limits, grown to a steady size and then churned, so the free lists show fragmentation.

use std::fmt::Write as _;

use clap::ValueEnum;
use zonealloc::{stats, AllocRequest, MemoryRegion, Node, Order, Pfn, ZoneConfig, ZoneType};

use crate::mix;
use crate::rng::Mmix;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// A 2.25 GiB x86-64 machine as its firmware describes it: conventional memory with the
/// EBDA and BIOS ROM reserved, the kernel image at 16 MiB, ACPI tables below 2 GiB, the PCI
/// hole, and RAM remapped above 4 GiB. Reserved regions win where they overlap.
const E820: &[MemoryRegion] = &[
    MemoryRegion::usable(0, 0x9_fc00),
    MemoryRegion::reserved(0x9_fc00, 0x400),
    MemoryRegion::reserved(0xf_0000, 0x1_0000),
    MemoryRegion::usable(MIB, 2 * GIB - 3 * MIB),
    MemoryRegion::reserved(16 * MIB, 32 * MIB),
    MemoryRegion::reserved(2 * GIB - 2 * MIB, 2 * MIB),
    MemoryRegion::reserved(0xfec0_0000, 20 * MIB),
    MemoryRegion::usable(4 * GIB, 256 * MIB),
];

/// Operations of the mixed workload: growth, then churn at a steady allocated size.
const GROW_STEPS: u32 = 40_000;
const CHURN_STEPS: u32 = 80_000;

/// Which `/proc` file to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// `/proc/buddyinfo`.
    Buddyinfo,
    /// `/proc/zoneinfo` (free pages, watermarks, managed pages and the pagesets block).
    Zoneinfo,
    /// `/proc/pagetypeinfo`.
    Pagetypeinfo,
}

/// The workload run before printing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// A deterministic mix of orders 0..10, migratetypes and zone limits, grown then churned.
    Mixed,
    /// Nothing: the node as booted.
    None,
}

/// One request of the mix: mostly small Movable blocks, some Unmovable and Reclaimable ones,
/// a few huge-page-sized blocks, a few DMA32-limited and atomic requests.
fn draw_request(rng: &mut Mmix) -> Result<(Order, AllocRequest), String> {
    let order = mix::order(u64::from(rng.next_u32() % 1000));
    let mt = mix::migratetype(u64::from(rng.percent()));
    let req = match rng.percent() {
        0..=4 => AllocRequest::new(mt).zone_limit(ZoneType::Dma32),
        5..=7 => AllocRequest::atomic(mt),
        _ => AllocRequest::new(mt),
    };
    let order = Order::new(order).ok_or_else(|| format!("order {order} is not supported"))?;
    Ok((order, req))
}

/// Runs `steps` operations, allocating with probability `alloc_percent`, else freeing a
/// random live block. Allocation failures are part of the workload and are not errors.
fn churn(
    node: &Node,
    rng: &mut Mmix,
    live: &mut Vec<(Pfn, Order)>,
    steps: u32,
    alloc_percent: u32,
) -> Result<(), String> {
    for _ in 0..steps {
        if live.is_empty() || rng.percent() < alloc_percent {
            let (order, req) = draw_request(rng)?;
            if let Ok(pfn) = node.alloc_with(order, req) {
                live.push((pfn, order));
            }
        } else {
            let i = rng.next_u32() as usize % live.len();
            let (pfn, order) = live.swap_remove(i);
            node.free(pfn, order)
                .map_err(|e| format!("free of {pfn:?} order {order:?} failed: {e:?}"))?;
        }
    }
    Ok(())
}

/// Builds the node, runs `workload` seeded with `seed`, checks the allocator's invariants and
/// returns the text of `view`.
pub fn run(view: View, workload: Workload, seed: u64) -> Result<String, String> {
    let node = Node::from_memory_map(0, E820, ZoneConfig::default())
        .map_err(|e| format!("building the node: {e:?}"))?;
    if workload == Workload::Mixed {
        let mut rng = Mmix::new(seed);
        let mut live = Vec::new();
        churn(&node, &mut rng, &mut live, GROW_STEPS, 60)?;
        churn(&node, &mut rng, &mut live, CHURN_STEPS, 50)?;
    }
    node.check()
        .map_err(|e| format!("allocator invariant violated: {e}"))?;
    let mut out = String::new();
    let fmt_err = |e: std::fmt::Error| format!("formatting: {e}");
    let snapshots = node.snapshots().collect::<Vec<_>>();
    match view {
        View::Buddyinfo => stats::write_buddyinfo(&mut out, &snapshots).map_err(fmt_err)?,
        View::Pagetypeinfo => stats::write_pagetypeinfo(&mut out, &snapshots).map_err(fmt_err)?,
        View::Zoneinfo => write_zoneinfo(&mut out, &node).map_err(fmt_err)?,
    }
    Ok(out)
}

/// The `/proc/zoneinfo` block of each zone of `node`, in the kernel's layout
/// (`zoneinfo_show_print`): free pages, watermarks as the kernel prints them (boost
/// included: `min_wmark_pages` adds `watermark_boost`), span, present and managed pages,
/// `protection:`, the pagesets block and the start pfn. Fields zonealloc does not model are
/// printed as the kernel prints them for a zone without them (`cma 0`,
/// `node_unreclaimable: 0`), so `zonealloc_lab::procfs` reads the text back.
pub fn write_zoneinfo(out: &mut String, node: &Node) -> std::fmt::Result {
    // The kernel prints every zone type the node has a slot for, an empty one in short form
    // (x86-64: no HighMem).
    for t in ZoneType::ALL
        .into_iter()
        .filter(|&t| t != ZoneType::HighMem)
    {
        let Some(z) = node.zones().find(|z| z.zone_type() == t) else {
            writeln!(out, "Node 0, zone {:>8}", t.name())?;
            writeln!(out, "  pages free     0")?;
            for field in ["boost", "min", "low", "high", "promo", "spanned", "present"] {
                writeln!(out, "        {field:<8} 0")?;
            }
            writeln!(out, "        managed  0\n        cma      0")?;
            writeln!(out, "        protection: (0, 0, 0, 0, 0)")?;
            continue;
        };
        let (start, end) = z.span();
        let w = z.watermarks();
        writeln!(out, "Node 0, zone {:>8}", z.zone_type().name())?;
        writeln!(out, "  pages free     {}", z.free_pages())?;
        writeln!(out, "        boost    {}", w.boost)?;
        writeln!(out, "        min      {}", w.min + w.boost)?;
        writeln!(out, "        low      {}", w.low + w.boost)?;
        writeln!(out, "        high     {}", w.high + w.boost)?;
        writeln!(out, "        promo    {}", w.promo + w.boost)?;
        writeln!(out, "        spanned  {}", end.get() - start.get())?;
        writeln!(out, "        present  {}", z.present_pages())?;
        writeln!(out, "        managed  {}", z.managed_pages())?;
        write!(out, "        cma      0")?;
        z.write_protection(out)?;
        write!(out, "\n      nr_free_pages {}", z.free_pages())?;
        z.write_pagesets(out)?;
        writeln!(out, "\n  node_unreclaimable:  0")?;
        writeln!(out, "  start_pfn:           {}", start.get())?;
    }
    Ok(())
}
