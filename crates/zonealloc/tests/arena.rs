//! PageArena over real memory: ownership (every page stamped with its pfn), poisoning,
//! zeroing, huge page options, the allocator API, every error path, and threads freeing each
//! other's blocks.

use std::sync::mpsc;

use allocator_api2::vec::Vec as AVec;
use zonealloc::arena::{
    ArenaConfig, ArenaError, ArenaFreeError, HugePages, PageArena, PageBlock, PAGE_POISON,
};
use zonealloc::{AllocError, ConfigError, FreeError, MigrateType, Order, ZoneConfig};

fn order(o: u8) -> Order {
    Order::new(o).unwrap()
}

/// A small arena: max order 5 (32-page blocks), 4 pageblock order, `cpus` CPUs.
fn small(pages: u64, cpus: u32) -> ArenaConfig {
    ArenaConfig::with_pages(pages).zone(
        ZoneConfig::without_watermarks()
            .with_cpus(cpus)
            .with_max_order(5)
            .with_pageblock_order(4),
    )
}

/// Writes the block's pfn into the first and last 8 bytes of each of its pages.
fn stamp(b: &mut PageBlock<'_>) {
    let ps = b.arena().page_size();
    let pfn = b.pfn().get();
    for (i, page) in b.as_mut_slice().chunks_exact_mut(ps).enumerate() {
        let v = (pfn + i as u64).to_le_bytes();
        page[..8].copy_from_slice(&v);
        page[ps - 8..].copy_from_slice(&v);
    }
}

/// Checks the stamps `stamp` wrote: a page with another pfn's stamp had two owners.
fn check_stamp(b: &PageBlock<'_>) {
    let ps = b.arena().page_size();
    let pfn = b.pfn().get();
    for (i, page) in b.as_slice().chunks_exact(ps).enumerate() {
        let want = pfn + i as u64;
        let head = u64::from_le_bytes(page[..8].try_into().unwrap());
        let tail = u64::from_le_bytes(page[ps - 8..].try_into().unwrap());
        assert_eq!(head, want, "page {want:#x} carries another owner's stamp");
        assert_eq!(tail, want, "page {want:#x} carries another owner's stamp");
    }
}

#[test]
fn region_is_rounded_to_largest_blocks_and_aligned_to_one() {
    let a = PageArena::new(small(40, 1)).unwrap();
    assert_eq!(a.pages(), 64, "40 pages round up to two 32-page blocks");
    assert_eq!(a.size_bytes(), 64 * a.page_size());
    assert_eq!(a.base().as_ptr() as usize % a.block_bytes(order(5)), 0);
    assert_eq!(a.zone().managed_pages(), 64);
    a.check().unwrap();
}

#[test]
fn pointers_and_pfns_convert_both_ways() {
    let a = PageArena::new(small(64, 1)).unwrap();
    let b = a.alloc(order(2), MigrateType::Movable).unwrap();
    assert_eq!(a.pfn_of(b.as_ptr()).unwrap(), b.pfn());
    assert_eq!(a.ptr_of(b.pfn()).unwrap().as_ptr(), b.as_ptr());
    assert_eq!(
        b.as_ptr() as usize % b.len(),
        0,
        "a block is aligned to its size"
    );
    let past_end = zonealloc::Pfn(a.pfn_of(a.base().as_ptr()).unwrap().get() + a.pages());
    assert_eq!(a.ptr_of(past_end), None);
}

#[test]
fn every_page_has_one_owner_until_the_arena_is_full_and_all_come_back() {
    let a = PageArena::new(small(256, 2)).unwrap();
    let mut live = Vec::new();
    let mut o = 0u8;
    loop {
        match a.alloc(order(o % 4), MigrateType::Movable) {
            Ok(mut b) => {
                stamp(&mut b);
                live.push(b);
            }
            Err(AllocError::OutOfMemory { .. }) if o % 4 > 0 => {}
            Err(AllocError::OutOfMemory { .. }) => break,
            Err(e) => panic!("unexpected {e}"),
        }
        o = o.wrapping_add(1);
    }
    let pages: u64 = live.iter().map(|b| b.order().pages()).sum();
    assert_eq!(
        pages,
        a.pages(),
        "order-0 requests fail only when every page is handed out"
    );
    a.check().unwrap();
    for b in live.iter() {
        check_stamp(b);
    }
    drop(live);
    a.zone().drain_all();
    a.check().unwrap();
    assert_eq!(a.zone().free_pages(), a.pages());
}

#[test]
fn threads_freeing_each_others_blocks_never_share_a_page() {
    let a = PageArena::new(small(1024, 2)).unwrap();
    let threads = 4;
    let rounds = 2000;
    std::thread::scope(|s| {
        let mut senders = Vec::new();
        let mut receivers = Vec::new();
        for _ in 0..threads {
            let (tx, rx) = mpsc::channel::<PageBlock<'_>>();
            senders.push(tx);
            receivers.push(rx);
        }
        for (t, rx) in receivers.into_iter().enumerate() {
            let next = senders[(t + 1) % threads].clone();
            let a = &a;
            s.spawn(move || {
                let mut x = t as u64 * 7 + 1;
                for _ in 0..rounds {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let o = order(((x >> 60) % 3) as u8);
                    if let Ok(mut b) = a.alloc(o, MigrateType::Movable) {
                        stamp(&mut b);
                        // Hand it to the next thread, which frees it.
                        let _ = next.send(b);
                    }
                    while let Ok(b) = rx.try_recv() {
                        check_stamp(&b);
                        drop(b);
                    }
                }
                drop(next);
                // Whatever arrives after this thread's loop is freed here, once every sender
                // is gone.
                for b in rx.iter() {
                    check_stamp(&b);
                }
            });
        }
        drop(senders);
    });
    a.zone().drain_all();
    a.check().unwrap();
    assert_eq!(a.zone().free_pages(), a.pages(), "every block came back");
}

#[test]
fn write_after_free_is_reported_with_its_page_offset_and_value() {
    // One CPU, so the freed page is the next one handed out (PCP lists are LIFO).
    let a = PageArena::new(small(64, 1).poisoned_on_free()).unwrap();
    let p = a.alloc_raw(order(0), MigrateType::Movable).unwrap();
    let pfn = a.pfn_of(p.as_ptr()).unwrap();
    // SAFETY: `p` is a raw block of order 0 that this test owns.
    unsafe { a.free_raw(p.as_ptr(), order(0)).unwrap() };
    // SAFETY: deliberately writes to a freed page (still mapped: the arena is alive) to
    // simulate a use after free.
    unsafe {
        let page = core::slice::from_raw_parts(p.as_ptr(), a.page_size());
        assert!(
            page.iter().all(|&b| b == PAGE_POISON),
            "freed page is poisoned"
        );
        p.as_ptr().add(100).write(0x11);
        p.as_ptr().add(101).write(0x22);
    }
    assert!(
        a.take_poison_reports().is_empty(),
        "reported on allocation, not before"
    );
    let again = a.alloc(order(0), MigrateType::Movable).unwrap();
    assert_eq!(again.pfn(), pfn, "LIFO reuse of the freed page");
    let reports = a.take_poison_reports();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].pfn, pfn);
    assert_eq!(reports[0].first_offset, 100);
    assert_eq!(reports[0].found, 0x11);
    assert_eq!(reports[0].corrupted_bytes, 2);
    assert_eq!(a.poison_reports_total(), 1);
    drop(again);
    a.check().unwrap();
}

#[test]
fn clean_reuse_of_poisoned_pages_reports_nothing() {
    let a = PageArena::new(small(64, 1).poisoned_on_free()).unwrap();
    for _ in 0..3 {
        let blocks: Vec<_> = (0..8)
            .map(|i| a.alloc(order(i % 3), MigrateType::Movable).unwrap())
            .collect();
        drop(blocks);
    }
    a.zone().drain_all();
    let all = a.alloc(order(5), MigrateType::Movable).unwrap();
    assert!(all.as_slice().contains(&PAGE_POISON));
    drop(all);
    assert_eq!(a.take_poison_reports(), vec![]);
}

#[test]
fn zeroing_options_clear_what_the_previous_owner_wrote() {
    for cfg in [
        small(64, 1).zeroed_on_alloc(),
        small(64, 1).poisoned_on_free(),
    ] {
        let zeroing = cfg.zero_on_alloc;
        let a = PageArena::new(cfg).unwrap();
        let mut b = a.alloc(order(1), MigrateType::Movable).unwrap();
        b.as_mut_slice().fill(0x5a);
        let pfn = b.pfn();
        drop(b);
        let b = if zeroing {
            a.alloc(order(1), MigrateType::Movable).unwrap()
        } else {
            a.alloc_zeroed(order(1), MigrateType::Movable).unwrap()
        };
        assert_eq!(b.pfn(), pfn, "same block back");
        assert!(b.as_slice().iter().all(|&x| x == 0));
    }
}

#[test]
fn raw_free_rejects_bad_pointers_and_changes_nothing() {
    let a = PageArena::new(small(64, 1).poisoned_on_free()).unwrap();
    let p = a.alloc_raw(order(2), MigrateType::Movable).unwrap();
    // SAFETY: this test owns the raw block at `p`.
    unsafe { p.as_ptr().write_bytes(0x33, a.block_bytes(order(2))) };
    let free_before = a.zone().free_pages();
    let pfn = a.pfn_of(p.as_ptr()).unwrap();
    let ps = a.page_size();
    let outside = [0u8; 16];
    let cases: Vec<(*mut u8, Order, ArenaFreeError)> = vec![
        (core::ptr::null_mut(), order(2), ArenaFreeError::Null),
        (
            outside.as_ptr() as *mut u8,
            order(0),
            ArenaFreeError::Foreign {
                addr: outside.as_ptr() as usize,
            },
        ),
        (
            a.base().as_ptr().wrapping_add(a.size_bytes()),
            order(0),
            ArenaFreeError::Foreign {
                addr: a.base().as_ptr() as usize + a.size_bytes(),
            },
        ),
        (
            p.as_ptr().wrapping_add(8),
            order(2),
            ArenaFreeError::Misaligned {
                addr: p.as_ptr() as usize + 8,
                page_size: ps,
            },
        ),
        (
            p.as_ptr().wrapping_add(ps),
            order(0),
            ArenaFreeError::Free(FreeError::NotBlockHead {
                pfn: pfn.add(1),
                head: pfn,
            }),
        ),
        (
            p.as_ptr(),
            order(1),
            ArenaFreeError::Free(FreeError::WrongOrder {
                pfn,
                given: order(1),
                allocated: order(2),
            }),
        ),
        (
            p.as_ptr(),
            order(9),
            ArenaFreeError::Free(FreeError::OrderTooLarge {
                pfn,
                order: order(9),
            }),
        ),
        (
            p.as_ptr().wrapping_add(ps),
            order(1),
            ArenaFreeError::Free(FreeError::Misaligned {
                pfn: pfn.add(1),
                order: order(1),
            }),
        ),
        (
            p.as_ptr().wrapping_add(4 * ps),
            order(0),
            ArenaFreeError::Free(FreeError::DoubleFree { pfn: pfn.add(4) }),
        ),
    ];
    for (ptr, o, want) in cases {
        // SAFETY: every call is refused (asserted), so nothing is freed.
        let got = unsafe { a.free_raw(ptr, o) };
        assert_eq!(got, Err(want), "free_raw({ptr:?}, {o})");
        assert!(!want.to_string().is_empty());
        a.check().unwrap();
        assert_eq!(a.zone().free_pages(), free_before);
        // SAFETY: the block is still ours; a refused free must not have poisoned it.
        let block = unsafe { core::slice::from_raw_parts(p.as_ptr(), a.block_bytes(order(2))) };
        assert!(
            block.iter().all(|&b| b == 0x33),
            "a refused free wrote to the block"
        );
    }
    // SAFETY: the raw block is ours; this is its one correct free.
    unsafe { a.free_raw(p.as_ptr(), order(2)).unwrap() };
    // SAFETY: refused (asserted): the block is already free.
    let twice = unsafe { a.free_raw(p.as_ptr(), order(2)) };
    assert_eq!(
        twice,
        Err(ArenaFreeError::Free(FreeError::DoubleFree { pfn }))
    );
    a.check().unwrap();
}

#[test]
fn allocation_errors_are_typed_and_change_nothing() {
    let a = PageArena::new(small(64, 1)).unwrap();
    assert_eq!(
        a.alloc(order(6), MigrateType::Movable).unwrap_err(),
        AllocError::OrderTooLarge {
            order: order(6),
            max: order(5)
        }
    );
    assert_eq!(
        a.alloc_raw(order(0), MigrateType::Isolate).unwrap_err(),
        AllocError::InvalidMigrateType(MigrateType::Isolate)
    );
    let x = a.alloc(order(5), MigrateType::Movable).unwrap();
    let y = a.alloc(order(5), MigrateType::Movable).unwrap();
    assert_eq!(
        a.alloc(order(0), MigrateType::Movable).unwrap_err(),
        AllocError::OutOfMemory {
            order: order(0),
            migratetype: MigrateType::Movable
        }
    );
    a.check().unwrap();
    drop((x, y));
    a.check().unwrap();
}

#[test]
fn into_raw_hands_a_block_to_the_raw_api() {
    let a = PageArena::new(small(64, 1)).unwrap();
    let b = a.alloc(order(3), MigrateType::Unmovable).unwrap();
    let p = b.into_raw();
    let free = a.zone().free_pages() + a.zone().pcp_pages();
    // SAFETY: `into_raw` made this test the owner of the block.
    unsafe { a.free_raw(p.as_ptr(), order(3)).unwrap() };
    assert_eq!(a.zone().free_pages() + a.zone().pcp_pages(), free + 8);
}

#[test]
fn creation_errors_are_typed() {
    assert_eq!(PageArena::new(small(0, 1)).unwrap_err(), ArenaError::Empty);
    let sys = small(64, 1);
    let tiny_pages = sys.zone(sys.zone.with_page_size(512));
    assert!(matches!(
        PageArena::new(tiny_pages).unwrap_err(),
        ArenaError::PageSizeBelowSystem { page_size: 512, .. }
    ));
    let bad = sys.zone(sys.zone.with_pageblock_order(7));
    assert_eq!(
        PageArena::new(bad).unwrap_err(),
        ArenaError::Config(ConfigError::PageblockOrderTooLarge {
            pageblock_order: 7,
            max_order: 5
        })
    );
    assert!(matches!(
        PageArena::new(small(u64::MAX / 2, 1)).unwrap_err(),
        ArenaError::TooLarge { .. }
    ));
}

#[test]
fn explicit_huge_pages_work_or_name_the_sysctl() {
    let cfg = ArenaConfig::with_pages(1024).huge_pages(HugePages::Explicit);
    let free_huge =
        std::fs::read_to_string("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(0);
    match PageArena::new(cfg) {
        Ok(a) => {
            let mut b = a.alloc(order(0), MigrateType::Movable).unwrap();
            b.as_mut_slice()[0] = 1;
            a.check().unwrap();
        }
        Err(e @ ArenaError::NoHugePages { .. }) => {
            assert!(
                free_huge < 3,
                "{e} although {free_huge} huge pages are free"
            );
            let msg = e.to_string();
            assert!(msg.contains("vm.nr_hugepages"), "{msg}");
            assert!(msg.contains("sysctl"), "{msg}");
        }
        Err(e) => panic!("unexpected {e}"),
    }
}

#[test]
fn transparent_huge_pages_and_populate_give_usable_zeroed_memory() {
    let thp = std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists();
    let cfg = ArenaConfig::with_pages(1024)
        .huge_pages(HugePages::Transparent)
        .populated();
    match PageArena::new(cfg) {
        Ok(a) => {
            assert_eq!(a.huge_pages(), HugePages::Transparent);
            let b = a.alloc(order(10), MigrateType::Movable).unwrap();
            assert!(
                b.as_slice().iter().all(|&x| x == 0),
                "fresh anonymous memory"
            );
            drop(b);
            a.check().unwrap();
        }
        Err(ArenaError::Madvise { .. }) if !thp => {}
        Err(e) => panic!("unexpected {e}"),
    }
}

#[test]
fn allocator_api2_collections_live_in_arena_pages() {
    let a = PageArena::new(small(256, 1)).unwrap();
    {
        let mut v: AVec<u64, &PageArena> = AVec::new_in(&a);
        for i in 0..10_000u64 {
            v.push(i * 3);
        }
        assert!(a.contains(v.as_ptr().cast()));
        assert_eq!(v.as_ptr() as usize % a.page_size(), 0);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64 * 3));
        let b = allocator_api2::boxed::Box::new_in([1u8; 5000], &a);
        assert!(a.contains(b.as_ptr()));
        let zst = allocator_api2::boxed::Box::new_in((), &a);
        drop(zst);
        a.check().unwrap();
    }
    a.zone().drain_all();
    assert_eq!(a.zone().free_pages(), a.pages(), "everything freed");
}

#[test]
fn allocator_refuses_layouts_above_the_largest_block() {
    let a = PageArena::new(small(256, 1)).unwrap();
    let mut v: AVec<u8, &PageArena> = AVec::new_in(&a);
    let max = a.block_bytes(order(5));
    assert!(v.try_reserve_exact(max).is_ok());
    let mut w: AVec<u8, &PageArena> = AVec::new_in(&a);
    assert!(w.try_reserve_exact(max + 1).is_err());
    let big_align = core::alloc::Layout::from_size_align(8, max * 2).unwrap();
    assert_eq!(a.order_for(big_align), None);
    let page_aligned = core::alloc::Layout::from_size_align(8, a.page_size() * 4).unwrap();
    assert_eq!(a.order_for(page_aligned), Some(order(2)));
    a.check().unwrap();
}

#[test]
fn memory_map_holes_and_reserved_ranges_are_never_handed_out() {
    use zonealloc::MemoryRegion;
    const MIB: u64 = 1 << 20;
    let map = [
        MemoryRegion::usable(0, 3 * MIB),
        MemoryRegion::reserved(MIB, 512 << 10),
        // 3..4 MiB is a hole.
        MemoryRegion::usable(4 * MIB, 2 * MIB),
    ];
    let a = PageArena::with_memory_map(small(0, 1), &map).unwrap();
    let ps = a.page_size() as u64;
    assert_eq!(a.pages(), 6 * MIB / ps);
    let usable = (3 * MIB - 512 * 1024 + 2 * MIB) / ps;
    assert_eq!(a.zone().managed_pages(), usable);
    let mut live = Vec::new();
    while let Ok(b) = a.alloc(order(0), MigrateType::Movable) {
        let off = b.as_ptr() as u64 - a.base().as_ptr() as u64;
        let reserved = (MIB..MIB + (512 << 10)).contains(&off);
        let hole = (3 * MIB..4 * MIB).contains(&off);
        assert!(!reserved && !hole, "page at offset {off:#x} is not usable");
        live.push(b);
    }
    assert_eq!(live.len() as u64, usable);
    let hole = a.base().as_ptr().wrapping_add(3 * MIB as usize);
    let pfn = a.pfn_of(hole).unwrap();
    // SAFETY: refused (asserted): the page is in a hole.
    let got = unsafe { a.free_raw(hole, order(0)) };
    assert_eq!(
        got,
        Err(ArenaFreeError::Free(FreeError::NotManaged { pfn }))
    );
    drop(live);
    a.check().unwrap();

    let overlapping = [
        MemoryRegion::usable(0, MIB),
        MemoryRegion::usable(MIB / 2, MIB),
    ];
    assert!(matches!(
        PageArena::with_memory_map(small(0, 1), &overlapping).unwrap_err(),
        ArenaError::Config(ConfigError::Range(_))
    ));
}

#[test]
fn arena_error_messages_name_their_cause() {
    let no_huge = ArenaError::NoHugePages {
        bytes: 6 << 20,
        huge_page_bytes: 2 << 20,
        nr_hugepages: Some(0),
        errno: libc_enomem(),
    };
    let msg = no_huge.to_string();
    assert!(msg.contains("sysctl -w vm.nr_hugepages=3"), "{msg}");
    assert!(msg.contains("vm.nr_hugepages is 0"), "{msg}");
    let unreadable = ArenaError::NoHugePages {
        bytes: 6 << 20,
        huge_page_bytes: 2 << 20,
        nr_hugepages: None,
        errno: libc_enomem(),
    };
    assert!(unreadable.to_string().contains("unreadable"));
    let map = ArenaError::Map {
        bytes: 4096,
        errno: libc_enomem(),
    };
    assert!(map.to_string().contains("4096 bytes"), "{map}");
    let madvise = ArenaError::Madvise {
        advice: "MADV_HUGEPAGE",
        errno: 22,
    };
    assert!(madvise.to_string().contains("MADV_HUGEPAGE"), "{madvise}");
    let free = ArenaFreeError::Misaligned {
        addr: 0x1001,
        page_size: 4096,
    };
    assert!(free.to_string().contains("0x1001"), "{free}");
    let inner = ArenaFreeError::from(FreeError::DoubleFree {
        pfn: zonealloc::Pfn(7),
    });
    assert_eq!(inner.to_string(), "double free of frame 0x7");
}

/// `ENOMEM` on Linux.
fn libc_enomem() -> i32 {
    12
}
