//! Small arenas that Miri can run (`cargo +nightly miri test -p zonealloc --features arena
//! --lib arena::`): most over [`Backing::Heap`], one over `mmap` (Miri models anonymous
//! private mappings, though not `munmap` of part of one, so there the region keeps its
//! alignment padding until drop). The same paths at full size are in `tests/arena.rs`.

use std::vec::Vec;

use super::*;
use crate::config::PcpConfig;
use crate::config::ZoneConfig;

fn tiny(cfg: ArenaConfig) -> PageArena {
    tiny_over(cfg, Backing::Heap)
}

fn tiny_over(cfg: ArenaConfig, backing: Backing) -> PageArena {
    let zone = ZoneConfig {
        max_order: 3,
        pageblock_order: 2,
        pcp: PcpConfig {
            cpus: 2,
            batch: Some(2),
            high_min: Some(4),
            high_max: Some(8),
            thp_order: None,
            ..PcpConfig::default()
        },
        ..ZoneConfig::without_watermarks()
    };
    PageArena::new(cfg.zone(zone).backing(backing)).unwrap()
}

fn o(n: u8) -> Order {
    Order::new(n).unwrap()
}

#[test]
fn heap_backed_blocks_are_owned_once_and_come_back() {
    let a = tiny(ArenaConfig::with_pages(16));
    let mut live: Vec<PageBlock<'_>> = Vec::new();
    for i in 0..6u8 {
        let mut b = a.alloc(o(i % 2), MigrateType::Movable).unwrap();
        let pfn = b.pfn().get() as u8;
        b.as_mut_slice().fill(pfn);
        live.push(b);
    }
    for b in &live {
        assert!(b.as_slice().iter().all(|&x| x == b.pfn().get() as u8));
    }
    // Free on another thread than the allocating one.
    std::thread::scope(|s| {
        s.spawn(move || drop(live));
    });
    a.zone().drain_all();
    a.check().unwrap();
    assert_eq!(a.zone().free_pages(), a.pages());
}

#[test]
fn heap_backed_raw_frees_are_validated_and_poison_is_checked() {
    let a = tiny(
        ArenaConfig::with_pages(16)
            .poisoned_on_free()
            .zeroed_on_alloc(),
    );
    let p = a.alloc_raw(o(1), MigrateType::Movable).unwrap();
    // SAFETY: refused (asserted): not the block's head.
    let tail = unsafe { a.free_raw(p.as_ptr().wrapping_add(a.page_size()), o(0)) };
    assert!(matches!(
        tail,
        Err(ArenaFreeError::Free(FreeError::NotBlockHead { .. }))
    ));
    // SAFETY: refused (asserted): not at a page start.
    let mis = unsafe { a.free_raw(p.as_ptr().wrapping_add(1), o(1)) };
    assert!(matches!(mis, Err(ArenaFreeError::Misaligned { .. })));
    // SAFETY: the raw block is ours; its one correct free.
    unsafe { a.free_raw(p.as_ptr(), o(1)).unwrap() };
    // SAFETY: a deliberate write after free into memory the arena still owns.
    unsafe { p.as_ptr().add(3).write(1) };
    a.zone().drain_all();
    let all: Vec<_> = (0..2)
        .map(|_| a.alloc(o(3), MigrateType::Movable).unwrap())
        .collect();
    assert!(all.iter().all(|b| b.as_slice().iter().all(|&x| x == 0)));
    let r = a.take_poison_reports();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].first_offset, 3);
    drop(all);
    a.check().unwrap();
}

#[test]
fn heap_backed_allocator_serves_collections() {
    let a = tiny(ArenaConfig::with_pages(16));
    let mut v = allocator_api2::vec::Vec::new_in(&a);
    for i in 0..3000u32 {
        v.push(i);
    }
    assert_eq!(
        v.iter().map(|&x| u64::from(x)).sum::<u64>(),
        2999 * 3000 / 2
    );
    drop(v);
    a.zone().drain_all();
    assert_eq!(a.zone().free_pages(), a.pages());
}

#[test]
fn mmap_backed_region_is_aligned_served_and_unmapped() {
    let a = tiny_over(ArenaConfig::with_pages(16), Backing::Mmap);
    assert_eq!(a.base().as_ptr() as usize % a.block_bytes(o(3)), 0);
    let mut b = a.alloc(o(3), MigrateType::Movable).unwrap();
    b.as_mut_slice().fill(9);
    assert!(b.as_slice().iter().all(|&x| x == 9));
    drop(b);
    a.check().unwrap();
    drop(a); // Miri reports a leak or a bad munmap here if the region's ownership is wrong
}

/// The issue-13 two-owner program, with everything the read-only zone view still allows
/// (drains, ticks, the check) between the allocations: a live block's pages are never handed
/// out again, so its bytes survive every other allocation of the arena. The direct misuse
/// (`arena.zone().free(..)`, a per-CPU handle's `free`) no longer compiles: see the
/// `compile_fail` examples in `arena/view.rs`.
#[test]
fn the_zone_view_cannot_give_a_live_block_a_second_owner() {
    let a = tiny(ArenaConfig::with_pages(16));
    let mut held = a.alloc(o(0), MigrateType::Movable).unwrap();
    held.as_mut_slice().fill(0xa5);
    let view = a.zone();
    view.drain_all();
    for _ in 0..16 {
        view.tick();
    }
    view.check().unwrap();
    let mut others = Vec::new();
    while let Ok(mut b) = a.alloc(o(0), MigrateType::Movable) {
        assert_ne!(b.pfn(), held.pfn(), "a live block was handed out twice");
        b.as_mut_slice().fill(0x11);
        others.push(b);
        view.drain_all();
    }
    assert_eq!(others.len() as u64, a.pages() - 1);
    assert!(held.as_slice().iter().all(|&x| x == 0xa5));
    drop(others);
    drop(held);
    view.drain_all();
    a.check().unwrap();
    assert_eq!(view.free_pages(), a.pages());
}

#[test]
fn raw_blocks_can_come_from_one_cpu_and_go_back_to_another() {
    let a = tiny(ArenaConfig::with_pages(16));
    let p = a
        .alloc_raw_on(CpuId(0), o(0), MigrateType::Movable)
        .unwrap();
    // CPU 0 refilled its list and took one page off it; CPU 1's list is untouched.
    let (c0, c1) = (a.zone().pcp_info(CpuId(0)), a.zone().pcp_info(CpuId(1)));
    assert!(c0.count > 0, "{c0:?}");
    assert_eq!(c1.count, 0);
    // A pointer that is not a block head is refused on the per-CPU path too, changing nothing.
    // SAFETY: the call is refused before it could free anything.
    let bad = unsafe { a.free_raw_on(CpuId(1), p.as_ptr().wrapping_add(1), o(0)) };
    assert!(bad.is_err());
    // SAFETY: `p` came from `alloc_raw_on` and is not used after this call.
    unsafe { a.free_raw_on(CpuId(1), p.as_ptr(), o(0)) }.unwrap();
    assert_eq!(a.zone().pcp_info(CpuId(1)).count, 1);
    assert_eq!(a.zone().pcp_info(CpuId(0)).count, c0.count);
    a.check().unwrap();
}
