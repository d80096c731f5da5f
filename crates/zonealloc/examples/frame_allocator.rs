//! An OS-style physical frame allocator over real memory: the arena plays the machine's RAM,
//! laid out by a firmware (e820-style) memory map with holes and reserved ranges, and four
//! "CPUs" (threads) allocate page tables, kernel stacks and huge buffers from it at once, as
//! a kernel's early memory manager does after `memblock_free_all`.
//!
//! Each thread stamps every page it gets with the page's frame number and checks the stamp
//! when it frees the page, so two owners of one frame would show; every frame handed out is
//! checked against the memory map (never inside a hole or a reserved range). At the end all
//! frames are back and the zone's invariants hold.
//!
//! Run: `cargo run --release -p zonealloc --features arena --example frame_allocator`.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};

use zonealloc::arena::{ArenaConfig, PageArena, PageBlock};
use zonealloc::{stats, MemoryRegion, MigrateType, Order, RegionKind};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// A 64 MiB machine as its firmware describes it; addresses are offsets into the arena.
const E820: &[MemoryRegion] = &[
    // Conventional memory below 640 KiB, then the EBDA and the BIOS ROM.
    MemoryRegion::usable(0, 639 * KIB),
    MemoryRegion::reserved(639 * KIB, KIB),
    MemoryRegion::reserved(960 * KIB, 64 * KIB),
    // 1 MiB .. 56 MiB, with the kernel image at 16 MiB and initrd at 40 MiB reserved.
    MemoryRegion::usable(MIB, 55 * MIB),
    MemoryRegion::reserved(16 * MIB, 6 * MIB),
    MemoryRegion::reserved(40 * MIB, 3 * MIB),
    // 56 .. 60 MiB: a hole (MMIO). Then RAM again, with ACPI tables at its end.
    MemoryRegion::usable(60 * MIB, 4 * MIB),
    MemoryRegion::reserved(63 * MIB + 512 * KIB, 512 * KIB),
];

const CPUS: usize = 4;
const STEPS: u32 = 40_000;

/// Whether byte offset `off` of the machine is usable RAM (not a hole, not reserved).
fn usable(off: u64) -> bool {
    let inside = |k: RegionKind| {
        E820.iter()
            .any(|r| r.kind == k && (r.start..r.start + r.len).contains(&off))
    };
    inside(RegionKind::Usable) && !inside(RegionKind::Reserved)
}

fn stamp(b: &mut PageBlock<'_>) {
    let ps = b.arena().page_size();
    let pfn = b.pfn().get();
    for (i, page) in b.as_mut_slice().chunks_exact_mut(ps).enumerate() {
        page[..8].copy_from_slice(&(pfn + i as u64).to_le_bytes());
    }
}

fn stamp_intact(b: &PageBlock<'_>) -> bool {
    let ps = b.arena().page_size();
    let pfn = b.pfn().get();
    b.as_slice()
        .chunks_exact(ps)
        .enumerate()
        .all(|(i, page)| page[..8] == (pfn + i as u64).to_le_bytes())
}

fn main() -> ExitCode {
    let cfg = ArenaConfig::with_pages(0);
    let cfg = cfg.zone(cfg.zone.with_cpus(CPUS as u32));
    let arena = match PageArena::with_memory_map(cfg, E820) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("frame_allocator: {e}");
            return ExitCode::FAILURE;
        }
    };
    let base = arena.base().as_ptr() as u64;
    println!(
        "machine: {} MiB of which {} pages usable, mapped at {:#x}",
        arena.size_bytes() as u64 / MIB,
        arena.zone().managed_pages(),
        base
    );

    let violations = AtomicU64::new(0);
    let allocated = AtomicU64::new(0);
    std::thread::scope(|s| {
        for cpu in 0..CPUS {
            let (arena, violations, allocated) = (&arena, &violations, &allocated);
            s.spawn(move || {
                let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ cpu as u64;
                let mut held: Vec<PageBlock<'_>> = Vec::new();
                for _ in 0..STEPS {
                    rng = rng
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    let draw = (rng >> 33) % 100;
                    // Page tables (order 0), kernel stacks (order 2), DMA buffers (order 4).
                    let (order, mt) = match draw {
                        0..=59 => (0, MigrateType::Unmovable),
                        60..=84 => (2, MigrateType::Unmovable),
                        _ => (4, MigrateType::Movable),
                    };
                    if held.len() < 400 && draw % 3 != 0 {
                        let order = Order::new(order).expect("small order");
                        if let Ok(mut b) = arena.alloc(order, mt) {
                            let off = b.as_ptr() as u64 - base;
                            let len = b.len() as u64;
                            if !(0..len).step_by(4096).all(|d| usable(off + d)) {
                                violations.fetch_add(1, Ordering::Relaxed);
                            }
                            stamp(&mut b);
                            held.push(b);
                            allocated.fetch_add(1, Ordering::Relaxed);
                        }
                    } else if !held.is_empty() {
                        let b = held.swap_remove((rng >> 20) as usize % held.len());
                        if !stamp_intact(&b) {
                            violations.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                for b in held {
                    if !stamp_intact(&b) {
                        violations.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });

    arena.zone().drain_all();
    let mut text = String::new();
    let _ = stats::write_buddyinfo(&mut text, &[arena.zone().snapshot(0)]);
    print!("{text}");
    let s = arena.zone().stats();
    println!(
        "{} blocks allocated by {CPUS} threads; splits {}, merges {}; free {} of {} pages",
        allocated.load(Ordering::Relaxed),
        s.splits,
        s.merges,
        arena.zone().free_pages(),
        arena.zone().managed_pages()
    );
    let bad = violations.load(Ordering::Relaxed);
    match arena.check() {
        Ok(_) if bad == 0 && arena.zone().free_pages() == arena.zone().managed_pages() => {
            println!("check: ok (no frame outside usable RAM, no frame with two owners)");
            ExitCode::SUCCESS
        }
        Ok(_) => {
            eprintln!("check: {bad} violations");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("check failed: {e}");
            ExitCode::FAILURE
        }
    }
}
