//! The layouts against the shipped snapshots and small crafted ones.

use zonealloc::{FrameState, MigrateType, Order, Pfn, Zone, ZoneConfig, ZoneType};

use super::*;
use crate::procfs::parse_layout;
use crate::trace::replay::proc_setup;

fn snap(kernel: &str) -> ProcSnapshot {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/data/proc/{kernel}-p1-before"));
    ProcSnapshot::read_dir(&dir).unwrap()
}

/// A fresh replay zone for kernel zone `z` of `snap`, with `cpus` CPUs.
fn zone_for(snap: &ProcSnapshot, z: &ZoneSnapshot, cpus: u32) -> Zone {
    let kernel = proc_setup::kernel_of(snap);
    let mut base = ZoneConfig::default();
    kernel.apply(&mut base);
    let cfg = proc_setup::zone_config(&base, z, kernel).with_cpus(cpus);
    let end = z.start_pfn + z.spanned_pages;
    Zone::new(z.zone, Pfn(z.start_pfn), Pfn(end), cfg).unwrap()
}

#[test]
fn a_synthesised_start_has_the_snapshots_free_blocks_per_order_and_type_exactly() {
    for kernel in ["linux-6.1", "linux-7.2"] {
        let snap = snap(kernel);
        for z in &snap.zones {
            let zone = zone_for(&snap, z, 5);
            let (pb, max) = (zone.config().pageblock_order, zone.config().max_order);
            let t = targets(&snap, z, usize::from(max) + 1);
            let mut l = ZoneLayout::synthesise(z, &t, [0; 5], pb, max);
            l.place_absent();
            assert_eq!(
                (l.unplaced, l.synthesised),
                (0, true),
                "{kernel} {}",
                z.label()
            );
            assert_eq!(l.free_by_type(), t.0, "{kernel} {}", z.label());
            assert_eq!(l.managed(), z.managed_pages);
            l.apply(&zone).unwrap();
            zone.check().unwrap();
            let s = zone.snapshot(0);
            for mt in MigrateType::ALL {
                let ours = &s.free_by_type[mt.index()][..=usize::from(max)];
                assert_eq!(ours, &t.0[mt.index()][..], "{kernel} {} {mt:?}", z.label());
                assert_eq!(s.pageblocks_by_type[mt.index()], t.1[mt.index()], "{mt:?}");
            }
            assert_eq!(zone.managed_pages(), z.managed_pages);
            assert_eq!(Some(zone.free_pages()), z.buddy_free_pages());
        }
    }
}

#[test]
fn populate_starts_dma_as_the_kernel_had_it() {
    // DMA is `0 0 0 0 0 0 1 1 0 1 3` on both kernels, one Unmovable pageblock: before this
    // layout, the set-up handed the managed pages over from pfn 1 and allocated its pages in
    // use out of them, starting `2 1 1 1 1 1 2 2 3 3 1` with two Unmovable pageblocks.
    for kernel in ["linux-6.1", "linux-7.2"] {
        let snap = snap(kernel);
        let z = snap.zone(0, ZoneType::Dma).unwrap();
        let zone = zone_for(&snap, z, 5);
        let (_, facts) = proc_setup::populate(&zone, &snap, z, None).unwrap();
        assert_eq!(
            zone.nr_free()[..11],
            [0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 3],
            "{kernel}"
        );
        assert_eq!(facts.pageblocks.0, facts.pageblocks.1, "{kernel}");
        assert_eq!(facts.free_blocks.0, facts.free_blocks.1, "{kernel}");
        assert_eq!(facts.layout, "synthesised");
    }
}

/// The 6.1 snapshot's DMA (`0 0 0 0 0 0 1 1 0 1 3`; Unmovable order 6 and 7, Movable order 9
/// and three of 10; one Unmovable pageblock of 8) as a kernel's layout: pfn 0 reserved,
/// slab pages and user pages around the Unmovable blocks, two flagless pages, and 255 pages
/// reserved, so that 3840 are managed as zoneinfo says.
const DMA_LAYOUT: &str = "# zonealloc pfn layout 1: start_pfn count class; max_order 10\n\
    0 1 R\n1 24 M\n25 155 R\n180 6 M\n186 1 F\n187 1 M\n188 1 B\n189 1 F\n190 2 M\n\
    192 192 B\n384 28 S\n412 100 R\n512 3584 B\n4096 520192 R\nend 524288\n";

#[test]
fn a_kernel_layout_puts_the_free_blocks_at_its_pfns_and_types_pageblocks_by_pagetypeinfo() {
    let snap = snap("linux-6.1");
    let layout = parse_layout(DMA_LAYOUT).unwrap();
    snap.check_layout(&layout).unwrap();
    let z = snap.zone(0, ZoneType::Dma).unwrap();
    let t = targets(&snap, z, 11);
    let mut l = ZoneLayout::from_kernel(&layout, z, &t, 9, 10);
    // Pageblock 0 (slab and the order-6 and -7 blocks) is the Unmovable one.
    assert_eq!(l.blocks[0], MigrateType::Unmovable);
    assert!(l.blocks[1..].iter().all(|&b| b == MigrateType::Movable));
    // The extra order-0 block at 188 (read a moment apart from pagetypeinfo) is taken as
    // in use, without a flag.
    assert_eq!(l.free_by_type(), t.0);
    assert_eq!((l.trimmed, l.page(188)), (1, Page::Flagless));
    // One order-0 Unmovable page on CPU 1's lists: the lowest flagless page of the type.
    assert_eq!(l.choose_pcp(&[(1, vec![(0, 0, 1)])]), 0);
    assert_eq!(l.pcp, vec![(1, 186, 0)]);
    // More than there are flagless pages: the rest from pages in use of the type.
    let mut l2 = l.clone();
    assert_eq!(l2.choose_pcp(&[(0, vec![(0, 0, 3)])]), 0);
    assert_eq!(l2.pcp[1..], [(0, 188, 0), (0, 189, 0), (0, 1, 0)]);
    let zone = zone_for(&snap, z, 2);
    l.apply(&zone).unwrap();
    zone.check().unwrap();
    assert_eq!(
        zone.frame_state(Pfn(192)),
        Some(FrameState::Buddy(Order::new(6).unwrap()))
    );
    assert_eq!(
        zone.frame_state(Pfn(1024)),
        Some(FrameState::Buddy(Order::new(10).unwrap()))
    );
    assert_eq!(zone.frame_state(Pfn(0)), None);
    assert_eq!(
        zone.frame_state(Pfn(186)),
        Some(FrameState::Allocated(Order::ZERO, MigrateType::Unmovable))
    );
    assert_eq!(zone.managed_pages(), 3840);
    assert_eq!(zone.nr_free()[..11], [0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 3]);
}

/// A pageblock the trace names keeps the trace's type: without the hint, pageblock 0 (slab
/// around the Unmovable free blocks) is the one Unmovable pageblock pagetypeinfo counts; with
/// the trace naming pageblock 1 Unmovable, pageblock 1 is, and 0 stays Movable.
#[test]
fn a_pageblock_the_trace_names_takes_its_type_before_the_counts_are_matched() {
    let snap = snap("linux-6.1");
    let layout = parse_layout(DMA_LAYOUT).unwrap();
    let z = snap.zone(0, ZoneType::Dma).unwrap();
    let t = targets(&snap, z, 11);
    let mut hints = StartHints::default();
    hints.block_types.insert(1, MigrateType::Unmovable);
    let l = ZoneLayout::from_kernel_hinted(&layout, z, &t, 9, 10, &hints);
    assert_eq!(l.blocks[0], MigrateType::Movable);
    assert_eq!(l.blocks[1], MigrateType::Unmovable);
    assert!(l.blocks[2..].iter().all(|&b| b == MigrateType::Movable));
    // A Movable name keeps a pageblock out of the other types' pick.
    hints.block_types.clear();
    hints.block_types.insert(0, MigrateType::Movable);
    let l = ZoneLayout::from_kernel_hinted(&layout, z, &t, 9, 10, &hints);
    assert_eq!(l.blocks[0], MigrateType::Movable);
    assert_eq!(
        l.blocks
            .iter()
            .filter(|&&b| b == MigrateType::Unmovable)
            .count(),
        1
    );
}

/// A pageblock a refill rules Unmovable out for (`hints/not_listed.rs`) is not the one
/// pagetypeinfo's Unmovable pageblock goes to: pageblock 0, the slab around the Unmovable
/// free blocks, would be; the next most like it is.
#[test]
fn a_pageblock_a_refill_rules_a_type_out_for_is_not_given_that_type() {
    let snap = snap("linux-6.1");
    let layout = parse_layout(DMA_LAYOUT).unwrap();
    let z = snap.zone(0, ZoneType::Dma).unwrap();
    let t = targets(&snap, z, 11);
    let mut hints = StartHints::default();
    let l = ZoneLayout::from_kernel_hinted(&layout, z, &t, 9, 10, &hints);
    assert_eq!(l.blocks[0], MigrateType::Unmovable);
    hints
        .not_types
        .insert(0, 1 << MigrateType::Unmovable.index());
    let l = ZoneLayout::from_kernel_hinted(&layout, z, &t, 9, 10, &hints);
    assert_eq!(l.blocks[0], MigrateType::Movable);
    let unmovable = l.blocks.iter().filter(|&&b| b == MigrateType::Unmovable);
    assert_eq!(unmovable.count(), 1);
}

/// The blocks the trace shows on a list come first: the drained ones at the list's tail
/// (freed onto it first), the allocated ones at its head (freed last, the first allocated
/// last of all); a hint for another CPU, or for a page the layout has absent, is not taken.
#[test]
fn the_blocks_the_trace_shows_on_a_list_go_on_it_in_the_kernels_order() {
    let snap = snap("linux-6.1");
    let layout = parse_layout(DMA_LAYOUT).unwrap();
    let z = snap.zone(0, ZoneType::Dma).unwrap();
    let t = targets(&snap, z, 11);
    let hint = |cpu, pfn, drained| PcpHint {
        cpu,
        pfn,
        order: 0,
        mt: 0,
        drained,
    };
    let hints = StartHints {
        pcp: vec![
            hint(1, 190, false),
            hint(1, 189, true),
            hint(1, 25, true),
            hint(0, 187, true),
            hint(1, 191, false),
        ],
        ..StartHints::default()
    };
    let mut l = ZoneLayout::from_kernel_hinted(&layout, z, &t, 9, 10, &hints);
    assert_eq!(l.blocks[0], MigrateType::Unmovable);
    assert_eq!(l.choose_pcp(&[(1, vec![(0, 0, 4)])]), 0);
    // 189 drained, 186 the lowest flagless page of the type, then 191 and 190 (190 was
    // allocated first: it goes on last).
    assert_eq!(l.pcp, [(1, 189, 0), (1, 186, 0), (1, 191, 0), (1, 190, 0)]);
    let zone = zone_for(&snap, z, 2);
    l.apply(&zone).unwrap();
    zone.check().unwrap();
}

/// The blocks the text after the window shows on a list from the start
/// ([`StartHints::late`]) go between the window's: the drained ones behind those the window
/// drains (they outlasted its drains), the allocated ones ahead of those the window
/// allocates; the guessed rest between the two.
#[test]
fn the_blocks_shown_on_a_list_after_the_window_go_between_the_windows_own() {
    let snap = snap("linux-6.1");
    let layout = parse_layout(DMA_LAYOUT).unwrap();
    let z = snap.zone(0, ZoneType::Dma).unwrap();
    let t = targets(&snap, z, 11);
    let hint = |pfn, drained| PcpHint {
        cpu: 1,
        pfn,
        order: 0,
        mt: 0,
        drained,
    };
    let hints = StartHints {
        pcp: vec![hint(190, false), hint(189, true), hint(191, false)],
        late: vec![hint(180, false), hint(187, true), hint(181, false)],
        ..StartHints::default()
    };
    let mut l = ZoneLayout::from_kernel_hinted(&layout, z, &t, 9, 10, &hints);
    assert_eq!(l.choose_pcp(&[(1, vec![(0, 0, 7)])]), 0);
    // Tail to head: 189 (the window drains it), 187 (drained after it), 186 (the guess),
    // 181 and 180 (allocated after the window, 180 first), 191 and 190 (the window's).
    let pfns: Vec<u64> = l.pcp.iter().map(|b| b.1).collect();
    assert_eq!(pfns, [189, 187, 186, 181, 180, 191, 190]);
    let zone = zone_for(&snap, z, 2);
    l.apply(&zone).unwrap();
    zone.check().unwrap();
}

/// The free blocks the trace takes first are at their lists' heads, in the order taken: the
/// kernel took 3072's order-10 block, then 1024's, where the layout's pfn order would give
/// 1024 first.
#[test]
fn the_free_blocks_the_trace_takes_first_head_their_lists_in_its_order() {
    let snap = snap("linux-6.1");
    let layout = parse_layout(DMA_LAYOUT).unwrap();
    let z = snap.zone(0, ZoneType::Dma).unwrap();
    let t = targets(&snap, z, 11);
    let hints = StartHints {
        // 5000 lies in no free block of the zone: no rank.
        taken: vec![5000, 3072 + 5, 1024 + 1, 3072],
        ..StartHints::default()
    };
    let l = ZoneLayout::from_kernel_hinted(&layout, z, &t, 9, 10, &hints);
    let waves = l.free_waves();
    let pfns = |w: &[zonealloc::LayoutBlock]| w.iter().map(|b| b.pfn.0).collect::<Vec<_>>();
    assert_eq!(waves.len(), 3);
    assert_eq!((pfns(&waves[0]), pfns(&waves[1])), (vec![3072], vec![1024]));
    assert_eq!(pfns(&waves[2]), [192, 256, 512, 2048]);
    let zone = zone_for(&snap, z, 2);
    l.apply(&zone).unwrap();
    zone.check().unwrap();
    let ten = Order::new(10).unwrap();
    let req = || zonealloc::AllocRequest::new(MigrateType::Movable).on_cpu(zonealloc::CpuId(0));
    let got: Vec<u64> = (0..3)
        .map(|_| zone.alloc_with(ten, req()).unwrap().0)
        .collect();
    assert_eq!(got, [3072, 1024, 2048]);
}

#[test]
fn a_flagless_page_whose_buddy_is_free_is_taken_for_the_lists_first() {
    let snap = snap("linux-6.1");
    let z = snap.zone(0, ZoneType::Dma).unwrap();
    let mut l = ZoneLayout::empty(z, 9, 10, false);
    l.pages.fill(Page::Used);
    for pfn in [186, 189] {
        l.pages[(pfn - l.start) as usize] = Page::Flagless;
    }
    // 188 is free: 189 would have merged with it, so it is not in the buddy allocator.
    l.pages[(188 - l.start) as usize] = Page::Free;
    l.free.push(zonealloc::LayoutBlock {
        pfn: Pfn(188),
        order: Order::ZERO,
        list: MigrateType::Movable,
    });
    assert_eq!(l.choose_pcp(&[(1, vec![(0, 1, 2)])]), 0);
    assert_eq!(l.pcp, vec![(1, 189, 0), (1, 186, 0)]);
}

/// The set-up frees a list's block into its pageblock here, and `free_frozen_pages` puts it
/// on that pageblock type's list: on 6.18 (c2, 24 GiB), CPU 1's order-3 Movable blocks were
/// flagless ones of other types' pageblocks, landed on other lists, and CPU 1 refilled order
/// 3 at its first order-3 allocation where the kernel did not.
#[test]
fn a_list_takes_a_page_of_its_type_in_use_before_a_flagless_one_of_another_type() {
    let snap = snap("linux-6.1");
    let z = snap.zone(0, ZoneType::Dma).unwrap();
    let mut l = ZoneLayout::empty(z, 9, 10, false);
    l.pages.fill(Page::Used);
    l.blocks.fill(MigrateType::Movable);
    l.blocks[0] = MigrateType::Unmovable;
    assert_eq!(l.type_of(186), MigrateType::Unmovable);
    l.pages[(186 - l.start) as usize] = Page::Flagless;
    // One order-0 Movable block: the first page of a Movable pageblock, though in use.
    assert_eq!(l.choose_pcp(&[(1, vec![(0, 1, 1)])]), 0);
    assert_eq!(l.pcp, vec![(1, 512, 0)]);
    assert_eq!(l.type_of(512), MigrateType::Movable);
    // The flagless page is still there for a list of its own type.
    assert_eq!(l.choose_pcp(&[(0, vec![(0, 0, 1)])]), 0);
    assert_eq!(l.pcp[1], (0, 186, 0));
}

/// A block the trace shows served off one CPU's list (`rmqueue_pcplist`) was on that CPU's
/// list, and another CPU's list of the order and type, chosen first, does not take it:
/// 6.1-4g-2node p_crossnode's Node 1 Normal, where CPU 1's Movable list took the 13 pages
/// CPU 2 served at the window's start, and CPU 2 missed the kernel's refill at line 18671.
#[test]
fn a_block_the_trace_shows_on_one_cpus_list_is_not_taken_by_another_chosen_first() {
    let snap = snap("linux-6.1");
    let z = snap.zone(0, ZoneType::Dma).unwrap();
    let mut l = ZoneLayout::empty(z, 9, 10, false);
    l.pages.fill(Page::Used);
    let first = l.start;
    l.pcp_hints.push(PcpHint {
        cpu: 2,
        pfn: first + 1,
        order: 0,
        mt: MigrateType::Movable.index(),
        drained: false,
    });
    // CPU 1's two Movable blocks (the rest of its count) choose first, in pfn order.
    let lists = [(1, vec![(0, 1, 2)]), (2, vec![(0, 1, 1)])];
    assert_eq!(l.choose_pcp(&lists), 0);
    assert_eq!(
        l.pcp,
        vec![(1, first, 0), (1, first + 2, 0), (2, first + 1, 0)]
    );
}

#[test]
fn long_flagless_runs_beyond_the_managed_pages_are_holes() {
    // 6.1's DMA has 3840 managed pages of its 4095: a layout that reads all of them in use
    // (a kernel that prints holes as flagless) leaves the longest flagless run absent.
    let snap = snap("linux-6.1");
    let z = snap.zone(0, ZoneType::Dma).unwrap();
    let text = "# zonealloc pfn layout 1: x; max_order 10\n0 1 R\n1 9 F\n10 10 M\n\
                20 400 F\n420 3676 M\n4096 520192 R\nend 524288\n";
    let l = ZoneLayout::from_kernel(
        &parse_layout(text).unwrap(),
        z,
        &targets(&snap, z, 11),
        9,
        10,
    );
    assert_eq!(l.managed(), 3840);
    assert_eq!(l.page(20), Page::Hole);
    assert_eq!(l.page(20 + 254), Page::Hole);
    assert_eq!(l.page(20 + 255), Page::Flagless);
    assert_eq!(l.page(5), Page::Flagless);
}

#[test]
fn without_a_fitting_unit_the_pageblock_counts_still_hold() {
    // 7.2's DMA32 has 152 Unmovable pageblocks; a layout with every pfn free but one page
    // per pageblock still types 152 of them Unmovable, though their free blocks cannot fit.
    let snap = snap("linux-7.2");
    let z = snap.zone(0, ZoneType::Dma32).unwrap();
    let (start, end) = (
        z.start_pfn,
        (z.start_pfn + z.spanned_pages).div_ceil(512) * 512,
    );
    let mut text = String::from("# zonealloc pfn layout 1: x; max_order 10\n");
    text.push_str(&format!("0 {start} R\n"));
    for pfn in (start..end).step_by(512) {
        text.push_str(&format!("{pfn} 1 S\n{} 511 B\n", pfn + 1));
    }
    text.push_str(&format!("end {end}\n"));
    let layout = parse_layout(&text).unwrap();
    let t = targets(&snap, z, 11);
    let l = ZoneLayout::from_kernel(&layout, z, &t, 9, 10);
    let n = |mt: MigrateType| l.blocks.iter().filter(|&&b| b == mt).count() as u64;
    assert_eq!(
        n(MigrateType::Unmovable),
        t.1[MigrateType::Unmovable.index()]
    );
    assert_eq!(
        n(MigrateType::Reclaimable),
        t.1[MigrateType::Reclaimable.index()]
    );
}

#[test]
fn a_free_block_the_layout_lacks_is_made_from_pages_in_use_that_merge_with_nothing() {
    // The order-6 Unmovable block pagetypeinfo has is slab in this layout (it was allocated
    // between the two reads, say): the lowest 64 pages in use of the Unmovable pageblock
    // whose buddy is not a free order-6 block (192: 25..180 is reserved) become it.
    let snap = snap("linux-6.1");
    let z = snap.zone(0, ZoneType::Dma).unwrap();
    let text = DMA_LAYOUT.replace("192 192 B", "192 64 S\n256 128 B");
    let layout = parse_layout(&text).unwrap();
    let t = targets(&snap, z, 11);
    let l = ZoneLayout::from_kernel(&layout, z, &t, 9, 10);
    assert_eq!(l.free_by_type(), t.0);
    assert_eq!(
        (l.made_up, l.trimmed, l.page(192), l.page(191)),
        (1, 1, Page::Free, Page::Used)
    );
    let zone = zone_for(&snap, z, 2);
    l.apply(&zone).unwrap();
    zone.check().unwrap();
    assert_eq!(zone.nr_free()[..11], [0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 3]);
}

/// Free blocks beyond pagetypeinfo's count: those the window never takes go first, then those
/// it takes off a free list (`__rmqueue_smallest`: free at the start), the last taken first.
/// `DMA_LAYOUT` with page 186 free too has two order-0 Unmovable blocks, 186 and 188, where
/// the count (raised to one here) has one. Before, the highest, 188, was trimmed whatever
/// the trace said of it (7.2-3g-16cpu-wq p_compact: the block CPU 6's first refill took).
#[test]
fn free_blocks_over_the_count_that_the_window_takes_go_last() {
    let snap = snap("linux-6.1");
    let text = DMA_LAYOUT.replace("186 1 F\n", "186 1 B\n");
    let layout = parse_layout(&text).unwrap();
    let z = snap.zone(0, ZoneType::Dma).unwrap();
    let mut t = targets(&snap, z, 11);
    t.0[MigrateType::Unmovable.index()][0] = 1;
    let trim = |taken: Vec<u64>| {
        let hints = StartHints {
            taken_blocks: taken.iter().map(|&p| (p, 0)).collect(),
            taken,
            ..StartHints::default()
        };
        let l = ZoneLayout::from_kernel_hinted(&layout, z, &t, 9, 10, &hints);
        assert_eq!((l.trimmed, l.free_by_type()), (1, t.0.clone()));
        [186, 188].map(|p| l.page(p))
    };
    use Page::{Flagless, Free};
    // The window takes 188 (the highest): 186 goes.
    assert_eq!(trim(vec![188]), [Flagless, Free]);
    // It takes both, 188 first: 186, taken last, goes.
    assert_eq!(trim(vec![188, 186]), [Flagless, Free]);
    // It takes both, 186 first: 188 goes.
    assert_eq!(trim(vec![186, 188]), [Free, Flagless]);
}

/// `--whole-file` starts where the layout was read: its free blocks as read (the order-0
/// block at 188 that pagetypeinfo, read later, lacks stays free, nothing is made up), rolled
/// back over the trace's first events: the order-6 block at 192 the trace first frees was in
/// use, the order-1 block at 190 it first takes off a free list was free, and the page at
/// 187 it first allocates off CPU 1's list was on that list (flagless). Before, the layout
/// was matched to pagetypeinfo (188 trimmed) and the first events changed nothing.
#[test]
fn a_whole_file_start_is_the_layout_as_read_rolled_back_over_the_first_events() {
    let snap = snap("linux-6.1");
    let layout = parse_layout(DMA_LAYOUT).unwrap();
    let z = snap.zone(0, ZoneType::Dma).unwrap();
    let t = targets(&snap, z, 11);
    let hints = StartHints {
        as_read: true,
        freed: vec![(192, 6)],
        taken: vec![190],
        taken_blocks: vec![(190, 1)],
        pcp: vec![PcpHint {
            cpu: 1,
            pfn: 187,
            order: 0,
            mt: MigrateType::Movable.index(),
            drained: false,
        }],
        ..StartHints::default()
    };
    let l = ZoneLayout::from_kernel_hinted(&layout, z, &t, 9, 10, &hints);
    assert_eq!((l.trimmed, l.made_up), (0, 0));
    let pages = [187, 188, 190, 191, 192, 255, 256].map(|p| l.page(p));
    use Page::{Flagless, Free, Used};
    assert_eq!(pages, [Flagless, Free, Free, Free, Used, Used, Free]);
    let blocks: Vec<(u64, u8)> = l.free.iter().map(|b| (b.pfn.0, b.order.get())).collect();
    assert_eq!(blocks[..3], [(188, 0), (190, 1), (256, 7)]);
    let zone = zone_for(&snap, z, 2);
    l.apply(&zone).unwrap();
    zone.check().unwrap();
    assert_eq!(zone.nr_free()[..11], [1, 1, 0, 0, 0, 0, 0, 1, 0, 1, 3]);
}

/// 6.1's DMA as a crafted layout whose one Unmovable pageblock (0) is reserved but for its
/// first page, the other seven all in use, no free block: the Unmovable order-7 block
/// pagetypeinfo counts has no room in Unmovable pageblocks.
fn reserved_unmovable_layout(z: &ZoneSnapshot) -> ZoneLayout {
    let mut l = ZoneLayout::empty(z, 9, 10, false);
    l.pages.fill(Page::Used);
    l.pages[1..511].fill(Page::Absent);
    l.blocks.fill(MigrateType::Movable);
    l.blocks[0] = MigrateType::Unmovable;
    l
}

#[test]
fn a_free_block_without_room_in_its_types_pageblocks_retypes_one_as_a_fallback_would() {
    let snap = snap("linux-6.1");
    let z = snap.zone(0, ZoneType::Dma).unwrap();
    let mut want: [Vec<u64>; 5] = std::array::from_fn(|_| vec![0; 11]);
    want[MigrateType::Unmovable.index()][7] = 1;
    let mut l = reserved_unmovable_layout(z);
    l.make_up(&want, &Default::default());
    // Movable pageblock 1 (pfn 512) takes Unmovable and holds the block; pageblock 0 (the
    // fewest pages in use) takes Movable: one Unmovable pageblock, as pagetypeinfo counts.
    assert_eq!(l.free_by_type(), want);
    assert_eq!((l.made_up, l.retyped), (1, 2));
    assert_eq!(
        (l.free[0].pfn, l.blocks[0], l.blocks[1]),
        (Pfn(512), MigrateType::Movable, MigrateType::Unmovable)
    );
    let unmovable = |l: &ZoneLayout| {
        l.blocks
            .iter()
            .filter(|&&b| b == MigrateType::Unmovable)
            .count()
    };
    assert_eq!(unmovable(&l), 1);
    // A pageblock the trace names keeps its type: pageblock 1 (number 1 of the zone, whose
    // span starts at pfn 1) is named Movable, so pageblock 2 is retyped.
    let mut l = reserved_unmovable_layout(z);
    l.make_up(&want, &[1u64].into_iter().collect());
    assert_eq!(
        (l.free[0].pfn, l.blocks[1], l.blocks[2]),
        (Pfn(1024), MigrateType::Movable, MigrateType::Unmovable)
    );
    l.place_absent();
    let zone = zone_for(&snap, z, 2);
    l.apply(&zone).unwrap();
    zone.check().unwrap();
    let s = zone.snapshot(0);
    assert_eq!(s.free_by_type[MigrateType::Unmovable.index()][7], 1);
    assert_eq!(s.pageblocks_by_type[MigrateType::Unmovable.index()], 1);
    // An order-10 block spans two pageblocks; with one Unmovable pageblock to give in
    // return for two, none is made and the counts of pageblocks stand.
    let mut want10: [Vec<u64>; 5] = std::array::from_fn(|_| vec![0; 11]);
    want10[MigrateType::Unmovable.index()][10] = 1;
    let mut l = reserved_unmovable_layout(z);
    l.make_up(&want10, &Default::default());
    assert_eq!((l.made_up, l.retyped, unmovable(&l)), (0, 0, 1));
}
