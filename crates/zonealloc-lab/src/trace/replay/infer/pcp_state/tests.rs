//! The list inference's tests.

use super::*;
use crate::trace::parse::{Event, PagePtr, Parser, Who};
use crate::trace::stats::HashMap;

mod contig;
mod fit;
mod past;
mod reference;
mod runs;
use reference::reference;

/// The lists `head`'s whole lines give (a partial last line is not an event).
fn infer(
    head: &[u8],
    cpus: u32,
    zones: &[std::ops::Range<u64>],
    pageblock_order: u8,
    thp_order: Option<u8>,
    numbering: Numbering,
) -> Head {
    let whole = &head[..memchr::memrchr(b'\n', head).map_or(0, |nl| nl + 1)];
    let mut c = Collector::new(cpus, zones, pageblock_order, thp_order, numbering);
    Parser::new().read_all(whole, |ev| c.feed(ev)).unwrap();
    let head = c.finish();
    // The walk finds what balancing every event at the end found.
    let mut p = Parser::new();
    let events: Vec<Event<'_>> = whole
        .split(|&b| b == b'\n')
        .filter_map(|l| p.feed(l))
        .collect();
    let want = reference(&events, cpus, zones, pageblock_order, thp_order, numbering);
    assert_eq!(head, want);
    head
}

/// The lists `head` gives on two CPUs, one zone of 4 GiB, pageblock and THP order 9, with
/// `set` set on the walk (not checked against [`reference`]).
fn collect(head: &str, set: impl FnOnce(&mut Collector)) -> ListDemand {
    let zone = 0..1u64 << 20;
    let mut c = Collector::new(
        2,
        std::slice::from_ref(&zone),
        9,
        Some(9),
        Numbering::Current,
    );
    set(&mut c);
    Parser::new()
        .read_all(head.as_bytes(), |ev| c.feed(ev))
        .unwrap();
    c.finish().zones.swap_remove(0)
}

/// [`infer`] on two CPUs, one zone of 4 GiB, pageblock and THP order 9.
fn infer_one_zone(head: &str) -> Head {
    let zone = 0..1 << 20;
    infer(
        head.as_bytes(),
        2,
        std::slice::from_ref(&zone),
        9,
        Some(9),
        Numbering::Current,
    )
}

fn line(cpu: u32, ts: u32, ev: &str) -> String {
    format!("            x-1     [{cpu:03}] .....    {ts}.000001: {ev}\n")
}

#[test]
fn allocations_served_before_a_refill_are_what_the_list_held() {
    let mut head = String::new();
    // CPU 0: two Unmovable order-0 allocations without a refill, a free of a page in a
    // Movable pageblock, then a refill and one more allocation (served by the refill).
    for pfn in [0x1000, 0x1001] {
        head += &line(0, 1, &format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=0 gfp_flags=GFP_KERNEL"));
    }
    head += &line(0, 2, "mm_page_alloc: page=(____ptrval____) pfn=0x2000 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE");
    head += &line(
        0,
        2,
        "mm_page_free: page=(____ptrval____) pfn=0x2000 order=0",
    );
    head += &line(0, 3, "mm_page_alloc_zone_locked: page=(____ptrval____) pfn=0x1100 order=0 migratetype=0 percpu_refill=1");
    head += &line(0, 3, "mm_page_alloc: page=(____ptrval____) pfn=0x1100 order=0 migratetype=0 gfp_flags=GFP_KERNEL");
    // CPU 1: an order-2 Reclaimable allocation, then a drain of an order-2 block.
    head += &line(1, 4, "mm_page_alloc: page=(____ptrval____) pfn=0x3000 order=2 migratetype=2 gfp_flags=GFP_KERNEL");
    head += &line(
        1,
        4,
        "mm_page_pcpu_drain: page=(____ptrval____) pfn=0x3004 order=2 migratetype=2",
    );
    head += "a partial last li";
    // Two zones: CPU 0's events lie in the first, CPU 1's in the second.
    let h = infer(
        head.as_bytes(),
        2,
        &[0..0x3000, 0x3000..1 << 20],
        9,
        Some(9),
        Numbering::Current,
    );
    let (d, high) = (&h.zones[0], &h.zones[1]);
    assert_eq!((d.events, high.events), (6, 2));
    // CPU 0: 2 Unmovable order-0 pages before the refill; the Movable allocation came
    // before the free that put a page back, so that list held one page.
    assert_eq!(d.blocks[0][0], [2, 1, 0]);
    assert!(d.exact[0][0][0] && !d.exact[0][0][1]);
    assert_eq!(high.blocks[1][2], [0, 0, 2]);
    assert_eq!(high.blocks[0], [[0; TYPES]; SLOTS]);
    assert_eq!(d.blocks[1], [[0; TYPES]; SLOTS]);
    // The rest of the count goes to the first order-0 list never shown empty: Movable.
    assert_eq!(d.fit(0, 10), vec![(0, 0, 2), (0, 1, 8)]);
    // Scaled into a small count.
    assert_eq!(high.fit(1, 4), vec![(2, 2, 1)]);
    assert_eq!(h.first_named.first(), Some(&(0x1000, 0)));
}

#[test]
fn a_first_refill_of_batch_times_a_power_of_two_shows_the_alloc_factor() {
    let alloc = |pfn: u64| {
        format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=0 gfp_flags=GFP_KERNEL")
    };
    let refill = |pfn: u64| {
        format!("mm_page_alloc_zone_locked: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=0 percpu_refill=1")
    };
    let mut head = String::new();
    // CPU 0: an allocation off its list, then a refill of 252 = 63 << 2 pages.
    head += &line(0, 1, &alloc(0x1000));
    head += &(0..252)
        .map(|i| line(0, 2, &refill(0x2000 + i)))
        .collect::<String>();
    head += &line(0, 2, &alloc(0x2000));
    // CPU 1: a free before its refill of 252: the factor was halved on the way, from 4.
    head += &line(
        1,
        3,
        "mm_page_free: page=(____ptrval____) pfn=0x3000 order=0",
    );
    head += &(0..252)
        .map(|i| line(1, 4, &refill(0x4000 + i)))
        .collect::<String>();
    head += &line(1, 4, &alloc(0x4000));
    // CPU 2: a refill `high` capped (100 pages), then a second of 126 pages.
    head += &(0..100)
        .map(|i| line(2, 5, &refill(0x5000 + i)))
        .collect::<String>();
    head += &line(2, 5, &alloc(0x5000));
    head += &(0..126)
        .map(|i| line(2, 6, &refill(0x6000 + i)))
        .collect::<String>();
    let h = infer(
        head.as_bytes(),
        3,
        // A second zone, which no event names (a one-range array reads as a mistake).
        &[0..1 << 20, 1 << 20..2 << 20],
        9,
        Some(9),
        Numbering::Current,
    );
    let d = &h.zones[0];
    assert_eq!(
        d.first_refill,
        vec![Some((252, 0)), Some((252, 1)), Some((100, 0))]
    );
    assert_eq!(d.alloc_factor(0, 63, 5), Some(2));
    // Above CONFIG_PCP_BATCH_SCALE_MAX it cannot be.
    assert_eq!(d.alloc_factor(0, 63, 1), None);
    assert_eq!(d.alloc_factor(1, 63, 5), Some(4));
    assert_eq!(d.alloc_factor(1, 63, 3), None);
    assert_eq!(d.alloc_factor(2, 63, 5), None);
}

#[test]
fn a_refill_never_lowers_what_the_list_served_before_it() {
    let mut head = String::new();
    // Pageblock 0x2000 is named Unmovable; CPU 0 frees one of its pages, allocates two
    // Unmovable pages (the list served one more than it was given), then frees two more
    // pages read onto that list, and refills it. The balance at the refill is +1, but the
    // list must have held one page at the start to serve the second allocation.
    head += &line(1, 1, "mm_page_alloc: page=(____ptrval____) pfn=0x2000 order=0 migratetype=0 gfp_flags=GFP_KERNEL");
    for pfn in [0x2001, 0x1000, 0x1001, 0x2002, 0x2003] {
        let ev = if pfn >= 0x2000 {
            format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0")
        } else {
            format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=0 gfp_flags=GFP_KERNEL")
        };
        head += &line(0, 2, &ev);
    }
    head += &line(0, 3, "mm_page_alloc_zone_locked: page=(____ptrval____) pfn=0x1100 order=0 migratetype=0 percpu_refill=1");
    let h = infer_one_zone(&head);
    let d = &h.zones[0];
    assert!(d.exact[0][0][0]);
    assert_eq!(d.blocks[0][0][0], 1);
}

/// A line on CPU 1 at 5 s: an order-0 refill, drain or (any other `what`) allocation of
/// `pfn` with migratetype `mt`.
fn ev(pfn: u32, mt: u32, what: &str) -> String {
    let ev = match what {
        "refill" => format!("mm_page_alloc_zone_locked: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype={mt} percpu_refill=1"),
        "drain" => format!("mm_page_pcpu_drain: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype={mt}"),
        _ => format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype={mt} gfp_flags=GFP_KERNEL"),
    };
    line(1, 5, &ev)
}

#[test]
fn a_drain_run_that_moves_on_to_a_higher_list_shows_the_one_before_empty() {
    let mut head = String::new();
    // One drain run on CPU 1: 2 Unmovable pages, 1 Movable, 1 Reclaimable. Unmovable
    // (pindex 0) and Movable (1) are empty where the run moves on to a higher pindex.
    head += &ev(0x1001, 0, "drain");
    head += &ev(0x1002, 0, "drain");
    head += &ev(0x2001, 1, "drain");
    head += &ev(0x3001, 2, "drain");
    // Three Unmovable allocations with no refill: the kernel's list got pages the head
    // reads onto other lists (say); its start stays the 2 it was shown to hold, not 5.
    for pfn in [0x1005, 0x1006, 0x1007] {
        head += &ev(pfn, 0, "alloc");
    }
    // A run from Reclaimable (pindex 2) down to Movable: perhaps a new call from pindex
    // 0, so Reclaimable is not shown empty; its start is the lowest balance, 2.
    head += &ev(0x3002, 2, "drain");
    head += &ev(0x2002, 1, "drain");
    let h = infer_one_zone(&head);
    let d = &h.zones[0];
    assert_eq!(d.exact[1][0], [true, true, false]);
    assert_eq!(d.blocks[1][0], [2, 1, 2]);
    // The rest of a count goes to the first order-0 list not shown empty: Reclaimable.
    assert_eq!(d.fit(1, 10), vec![(0, 0, 2), (0, 1, 1), (0, 2, 7)]);
    // Every order-0 list shown empty, none refilled: the rest goes to Movable's, not
    // dropped (the drains show each list empty at one point, not the count wrong).
    let mut all = d.clone();
    all.exact[1][0][2] = true;
    assert_eq!(all.fit(1, 10), vec![(0, 0, 2), (0, 1, 6), (0, 2, 2)]);
}

#[test]
fn a_drained_page_is_read_off_the_list_it_went_on_not_its_pageblocks_type_now() {
    let mut head = String::new();
    // CPU 1 refills its Movable list with two pages and hands out one.
    head += &ev(0x2000, 1, "refill");
    head += &ev(0x2001, 1, "refill");
    head += &ev(0x2000, 1, "alloc");
    // A fallback has since made 0x2001's pageblock Unmovable: from 6.10 its drain off
    // the Movable list prints 0 (`get_pfnblock_migratetype`). Then a Reclaimable page.
    head += &ev(0x2001, 0, "drain");
    head += &ev(0x3001, 2, "drain");
    let h = infer_one_zone(&head);
    let d = &h.zones[0];
    // The Unmovable list served nothing and was never shown empty (read by its printed
    // type, it held one page and was drained empty).
    assert!(!d.exact[1][0][0]);
    assert_eq!(d.blocks[1][0][0], 0);
    // The Movable list was empty at its refill, the Reclaimable one held a page.
    assert!(d.exact[1][0][1]);
    assert_eq!(d.blocks[1][0], [0, 0, 1]);
}

#[test]
fn a_free_of_a_pageblock_named_only_later_goes_onto_that_types_list() {
    let mut head = String::new();
    // CPU 0 frees a page of pageblock 0x2000 before any event names it, then two Unmovable
    // allocations, a refill; only then an allocation names the pageblock Unmovable. The
    // free went onto the Unmovable list: one block there at the start, not two.
    head += &line(
        0,
        1,
        "mm_page_free: page=(____ptrval____) pfn=0x2001 order=0",
    );
    for pfn in [0x1000, 0x1001] {
        head += &line(0, 2, &format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=0 gfp_flags=GFP_KERNEL"));
    }
    head += &line(0, 3, "mm_page_alloc_zone_locked: page=(____ptrval____) pfn=0x1100 order=0 migratetype=0 percpu_refill=1");
    // CPU 1: a free of pageblock 0x4000, never named (Movable), then two Movable
    // allocations: one block.
    head += &line(
        1,
        4,
        "mm_page_free: page=(____ptrval____) pfn=0x4001 order=0",
    );
    for pfn in [0x1200, 0x1201] {
        head += &line(1, 5, &format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE"));
    }
    head += &line(1, 6, "mm_page_alloc: page=(____ptrval____) pfn=0x2002 order=0 migratetype=0 gfp_flags=GFP_KERNEL");
    let h = infer_one_zone(&head);
    let d = &h.zones[0];
    assert!(d.exact[0][0][0]);
    assert_eq!(d.blocks[0][0], [1, 0, 0]);
    // CPU 1's last allocation takes the Unmovable list below zero too.
    assert_eq!(d.blocks[1][0], [1, 1, 0]);
}

#[test]
fn a_page_freed_again_was_taken_off_the_list_it_was_freed_onto() {
    let alloc = |pfn: u32, order: u8| {
        format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order={order} migratetype=0 gfp_flags=GFP_KERNEL")
    };
    let free = |pfn: u32| format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0");
    let mut head = String::new();
    // CPU 0 allocates an Unmovable page and frees it three times with nothing traced on it
    // between (`alloc_pages_bulk` took it twice), then allocates two more: its Unmovable
    // list served two pages beyond what the frees gave it, not none.
    head += &line(0, 1, &alloc(0x1000, 0));
    for _ in 0..3 {
        head += &line(0, 2, &free(0x1000));
    }
    head += &line(0, 3, &alloc(0x1001, 0));
    head += &line(0, 3, &alloc(0x1002, 0));
    // CPU 1 frees again a page CPU 0 freed: the take was off CPU 0's list (three below).
    head += &line(0, 4, &free(0x1003));
    head += &line(1, 5, &free(0x1003));
    head += &line(0, 6, &alloc(0x1004, 0));
    // A page an order-2 allocation handed out as a tail is no page freed again: CPU 1's
    // list held the three pages it allocates after.
    head += &line(1, 7, &free(0x1009));
    head += &line(1, 8, &alloc(0x1008, 2));
    head += &line(1, 9, &free(0x1009));
    for pfn in 0x100c..0x100f {
        head += &line(1, 10, &alloc(pfn, 0));
    }
    let h = infer_one_zone(&head);
    let d = &h.zones[0];
    assert_eq!(d.blocks[0][0], [3, 0, 0]);
    assert_eq!(d.blocks[1][2], [1, 0, 0]);
    assert_eq!(d.blocks[1][0], [0, 0, 0]);
}

/// 7.2-3g-16cpu-wq p_file: a page whose first event is a batch's free and which is freed
/// again with no allocation between lay on the list from the start, with `first-free-takes`
/// on (`KernelSide::appeared`): no event took it before the bulk take, so the list's other
/// pages served every event until then, and the list held it on top of what its balance
/// asks. CPU 0 allocates an Unmovable page, frees 0x1010 in a batch and again, then
/// allocates two more, frees 0x1040 singly and again in a batch (a page the pipe kept),
/// and allocates one more: two blocks without the rule, four with it. Single frees both
/// (CPU 1's 0x1030, a `vfree`'d stack's) lay nowhere: CPU 1's one block is its first
/// allocation's. Fails on the old code (two).
#[test]
fn a_page_first_freed_in_a_batch_and_again_lay_on_its_list_from_the_start() {
    let alloc = |pfn: u32| {
        format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=0 gfp_flags=GFP_KERNEL")
    };
    let free = |pfn: u32| format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0");
    let batched =
        |pfn: u32| format!("mm_page_free_batched: page=(____ptrval____) pfn={pfn:#x} order=0");
    let mut head = String::new();
    head += &line(0, 1, &alloc(0x1000));
    for _ in 0..2 {
        head += &line(0, 2, &free(0x1010));
        head += &line(0, 2, &batched(0x1010));
    }
    head += &line(0, 3, &alloc(0x1011));
    head += &line(0, 3, &alloc(0x1012));
    head += &line(1, 4, &alloc(0x1020));
    head += &line(1, 5, &free(0x1030));
    head += &line(1, 6, &free(0x1030));
    head += &line(1, 7, &alloc(0x1021));
    // CPU 0 frees 0x1040 singly (a page the pipe kept), then again in a batch, and
    // allocates one more.
    head += &line(0, 8, &free(0x1040));
    head += &line(0, 9, &free(0x1040));
    head += &line(0, 9, &batched(0x1040));
    head += &line(0, 10, &alloc(0x1013));
    let blocks = |on: bool| {
        let d = collect(&head, |c| c.set_appeared_takes(on));
        (d.blocks[0][0][0], d.blocks[1][0][0])
    };
    assert_eq!(blocks(false), (2, 1));
    assert_eq!(blocks(true), (4, 1));
}

/// One made-up event: `what` picks the kind, on CPU `cpu`, of page `pfn`.
fn made_up(what: u8, cpu: u32, pfn: u64, order: u8, mt: u8) -> Event<'static> {
    let kind = match what % 6 {
        0 => EventKind::Alloc {
            pfn,
            order,
            migratetype: mt,
            gfp_flags: "GFP_KERNEL",
        },
        1 => EventKind::Free { pfn, order },
        2 => EventKind::FreeBatched { pfn },
        3 | 4 => EventKind::ZoneLocked {
            pfn,
            order,
            migratetype: mt,
            percpu_refill: what % 6 == 3,
        },
        _ => EventKind::PcpuDrain {
            pfn,
            order,
            migratetype: mt,
        },
    };
    Event {
        cpu: Some(cpu),
        ts_ns: Some(0),
        page: if what >= 250 {
            PagePtr::Null
        } else {
            PagePtr::Present
        },
        kind,
        who: Who::UNKNOWN,
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Whatever the events, the walk that keeps its balances as it goes finds what balancing
    /// them all at the end finds: frees of pageblocks named later (or never), batched frees,
    /// drain runs, refills, several zones and CPUs, orders beyond the lists', migratetypes
    /// beyond the lists' and a failed allocation.
    #[test]
    fn the_walk_finds_what_balancing_at_the_end_finds(
        evs in proptest::collection::vec(
            (0u8..=255, 0u32..5, 0u64..96, 0u8..6, 0u8..5), 0..400),
        numbering in 0u8..2,
    ) {
        let numbering = if numbering == 0 { Numbering::Current } else { Numbering::Legacy };
        let events: Vec<Event<'static>> = evs
            .iter()
            .map(|&(what, cpu, pfn, order, mt)| made_up(what, cpu, pfn, order, mt))
            .collect();
        // Pageblocks of 4 pages; two zones and pages beyond both; 3 CPUs (CPU 3 is 0).
        let zones = [0..40, 40..80];
        let mut c = Collector::new(3, &zones, 2, Some(4), numbering);
        for ev in &events {
            c.feed(ev);
        }
        let want = reference(&events, 3, &zones, 2, Some(4), numbering);
        proptest::prop_assert_eq!(c.finish(), want);
    }
}

#[test]
fn an_allocation_of_a_block_another_cpus_refill_listed_is_that_cpus() {
    // 7.2-4g p_pressure, trace lines 15135-15140: CPU 0 refills two THPs, its task's
    // allocation of the first is stamped CPU 1 (it moved before the tracepoint), then CPU 1
    // refills its own empty order-9 list and allocates off it.
    let thp = |cpu: u32, pfn: u32, what: &str| {
        line(
            cpu,
            7,
            &match what {
                "refill" => format!("mm_page_alloc_zone_locked: page=(____ptrval____) pfn={pfn:#x} order=9 migratetype=1 percpu_refill=1"),
                _ => format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=9 migratetype=1 gfp_flags=GFP_TRANSHUGE_LIGHT"),
            },
        )
    };
    let mut head = String::new();
    head += &thp(0, 0x10000, "refill");
    head += &thp(0, 0x10200, "refill");
    head += &thp(1, 0x10000, "alloc");
    head += &thp(1, 0x10400, "refill");
    head += &thp(1, 0x10600, "refill");
    head += &thp(1, 0x10400, "alloc");
    let d = &infer_one_zone(&head).zones[0];
    // CPU 1's THP list was empty at the start (its refill shows it), not one block long;
    // CPU 0's served the allocation its refill put there.
    assert_eq!(d.blocks[1][4][1], 0);
    assert!(d.exact[1][4][1]);
    assert_eq!(d.blocks[0][4][1], 0);
    assert_eq!(d.fit(1, 512), vec![(0, 1, 512)]);
}

#[test]
fn a_drain_that_reaches_a_block_the_head_listed_shows_the_lists_start_gone() {
    let mut head = String::new();
    // CPU 1: a Movable allocation off its start blocks, a free of 0x2001 onto the list's
    // head, a drain of one more start block off the tail, then the drain reaches 0x2001:
    // the list held 2 start blocks, no more.
    head += &ev(0x1000, 1, "alloc");
    head += &line(
        1,
        5,
        "mm_page_free: page=(____ptrval____) pfn=0x2001 order=0",
    );
    head += &ev(0x1010, 1, "drain");
    head += &ev(0x2001, 1, "drain");
    // CPU 0 frees 0x3001; CPU 1 drains it (`drain_pages_zone` of a remote CPU): not
    // CPU 1's block, so it shows nothing of CPU 1's Unmovable list.
    head += &line(0, 6, "mm_page_alloc: page=(____ptrval____) pfn=0x3000 order=0 migratetype=0 gfp_flags=GFP_KERNEL");
    head += &line(
        0,
        6,
        "mm_page_free: page=(____ptrval____) pfn=0x3001 order=0",
    );
    head += &ev(0x3001, 0, "drain");
    let h = infer_one_zone(&head);
    let d = &h.zones[0];
    assert_eq!(d.blocks[1][0][1], 2);
    assert_eq!(d.exact[1][0], [false, true, false]);
    // The rest of a count goes to the first order-0 list not shown: Unmovable (at least 1,
    // the remote drain), where the balance alone put it all on Movable.
    assert_eq!(d.fit(1, 10), vec![(0, 0, 8), (0, 1, 2)]);
}

#[test]
fn the_drains_reading_of_a_list_stands_over_the_balances() {
    let mut d = ListDemand {
        blocks: vec![[[0; TYPES]; SLOTS]],
        exact: vec![[[false; TYPES]; SLOTS]],
        ..ListDemand::default()
    };
    // The balance: Unmovable exact at 27 (a refill), Movable exact at 5, Reclaimable at
    // least 11, order 1 Unmovable at least 4.
    d.blocks[0][0] = [27, 5, 11];
    d.exact[0][0] = [true, true, false];
    d.blocks[0][1][0] = 4;
    let mut shown = vec![[[None; TYPES]; SLOTS]];
    shown[0][0] = [Some(691), Some(3), Some(2)];
    shown::apply(&mut d, &shown);
    // 7.2 p2_procs_pipe CPU 1: the drain reaches a block of the head after 691 Unmovable
    // start blocks, where the balance read frees onto that list that went to another.
    assert_eq!(d.blocks[0][0], [691, 3, 2]);
    assert_eq!(d.exact[0][0], [true; TYPES]);
    // A list the drains do not read keeps the balance's bound.
    assert_eq!((d.blocks[0][1][0], d.exact[0][1][0]), (4, false));
}

#[test]
fn a_batched_free_longer_than_64_pages_counts_each_page_once() {
    // 6.1-4g-loads p_fork: `free_unref_page_list` prints all of a batch's `mm_page_free`
    // lines, then all its `mm_page_free_batched` lines (batches of up to 520 pages there).
    // CPU 0 allocates 70 Unmovable pages off its list, frees them in one batch, allocates
    // 75 more, then refills: its Unmovable list held 75 at the start. Read as frees, the
    // batched lines of the batch's first 6 pages put it at 70.
    let alloc = |pfn: u32| {
        format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=0 gfp_flags=GFP_KERNEL")
    };
    let mut head = String::new();
    for pfn in 0x1000..0x1000 + 70 {
        head += &line(0, 1, &alloc(pfn));
    }
    for pfn in 0x1000..0x1000 + 70 {
        head += &line(
            0,
            2,
            &format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0"),
        );
    }
    for pfn in 0x1000..0x1000 + 70 {
        head += &line(
            0,
            2,
            &format!("mm_page_free_batched: page=(____ptrval____) pfn={pfn:#x} order=0"),
        );
    }
    for pfn in 0x1100..0x1100 + 75 {
        head += &line(0, 3, &alloc(pfn));
    }
    head += &line(0, 4, "mm_page_alloc_zone_locked: page=(____ptrval____) pfn=0x1200 order=0 migratetype=0 percpu_refill=1");
    let d = &infer_one_zone(&head).zones[0];
    assert_eq!(d.blocks[0][0][0], 75);
    assert!(d.exact[0][0][0]);
}

#[test]
fn pages_a_bulk_allocation_took_off_a_lists_head_are_what_the_list_held() {
    let alloc = |pfn: u32| {
        format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=0 gfp_flags=GFP_KERNEL")
    };
    let free = |pfn: u32| format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0");
    let mut head = String::new();
    // CPU 0 allocates an Unmovable page (naming the pageblock), frees 0x1010, then four pages
    // (a stack's `vfree`), then allocates 0x1010: the four above it on the head were taken
    // untraced first (a fork's `vm_area_alloc_pages`), and two more allocations follow.
    head += &line(0, 1, &alloc(0x1000));
    head += &line(0, 2, &free(0x1010));
    for pfn in 0x1001..0x1005 {
        head += &line(0, 3, &free(pfn));
    }
    for pfn in [0x1010, 0x1020, 0x1021] {
        head += &line(0, 4, &alloc(pfn));
    }
    let lists = |on: bool| collect(&head, |c| c.set_bulk_takes_head(on)).blocks[0][0][0];
    // The list served 0x1000, 0x1020 and 0x1021 from its start.
    assert_eq!(lists(true), 3);
    // Off (7.2, whose `vfree` frees blocks), the four stay on the list: 0x1000 alone.
    assert_eq!(lists(false), 1);
}
