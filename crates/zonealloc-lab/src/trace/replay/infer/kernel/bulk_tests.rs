//! `alloc_pages_bulk` read off the trace: a refill run no allocation of its task follows
//! ([`KernelSide::bulk_refill`]), a page freed again with no allocation between
//! ([`KernelSide::freed_again`]), and one whose first event was a batch's free
//! ([`KernelSide::appeared`]).

use super::refill_tests::refill;
use super::*;
use crate::trace::parse::{Ctx, PagePtr, Task, Who};

/// `kind` on CPU `cpu` by task `pid`, in task context or (`irq`) a softirq.
fn by(pid: u32, cpu: u32, irq: bool, kind: EventKind<'static>) -> Event<'static> {
    Event {
        cpu: Some(cpu),
        ts_ns: None,
        page: PagePtr::Present,
        who: Who::new(Task::Unknown, Some(pid), Ctx::new(false, irq, false, 0)),
        kind,
    }
}

fn free(pfn: u64) -> EventKind<'static> {
    EventKind::Free { pfn, order: 0 }
}

/// Feeds a refill of 0x10..0x13 on CPU 1 by task 7, then `after`: the pages found taken
/// untraced at each of those.
fn after_a_refill(after: &[Event<'static>]) -> Vec<Vec<Untraced>> {
    after_a_refill_in(false, after)
}

/// [`after_a_refill`], the refill made in task context or (`irq`) a softirq.
fn after_a_refill_in(irq: bool, after: &[Event<'static>]) -> Vec<Vec<Untraced>> {
    let mut k = KernelSide::new(1, 2);
    for pfn in 0x10..0x13 {
        k.add(&by(7, 1, irq, refill(pfn)), 0);
        assert!(k.untraced_now.is_empty());
    }
    after
        .iter()
        .map(|e| {
            k.add(e, 0);
            k.untraced_now.clone()
        })
        .collect()
}

/// 7.2-2g p_prodcons (lines 85104-85167): `cat-342` refills 63 pages on CPU 1 and its next
/// event there frees another page: `alloc_pages_bulk` took the run's first page (and what the
/// list held before, which the flag tells the replay). Its own allocation, or another task's
/// event (the refilling task moved before its tracepoint), says nothing; an interrupt's free
/// in between, or a block from the buddy, does not end the wait. Fails on the old code
/// (nothing inferred).
#[test]
fn a_refill_its_task_does_not_allocate_from_was_alloc_pages_bulks() {
    let bulk = vec![Untraced {
        bulk_refill: true,
        ..Untraced::new(0x10, 1, 0)
    }];
    let got = after_a_refill(&[by(9, 1, true, free(0x90)), by(7, 1, false, free(0x80))]);
    assert_eq!(got, vec![vec![], bulk.clone()]);
    let direct = EventKind::ZoneLocked {
        pfn: 0x400,
        order: 2,
        migratetype: 0,
        percpu_refill: false,
    };
    let got = after_a_refill(&[by(7, 1, false, direct), by(7, 1, false, free(0x80))]);
    assert_eq!(got, vec![vec![], bulk]);
    let alloc = EventKind::Alloc {
        pfn: 0x10,
        order: 0,
        migratetype: 0,
        gfp_flags: "GFP_KERNEL",
    };
    let traced = after_a_refill(&[by(7, 1, false, alloc), by(7, 1, false, free(0x80))]);
    assert_eq!(traced, vec![Vec::new(), Vec::new()]);
    let other = after_a_refill(&[by(8, 1, false, free(0x80)), by(7, 1, false, free(0x81))]);
    assert_eq!(other, vec![Vec::new(), Vec::new()]);
}

/// 6.12-4g-more p_sock (lines 59886-59951 of the window): `kmem-phases-370` refills 63
/// Unmovable pages on CPU 0 in softirq (`D.s6.`, 78.358847), allocates the first in the
/// softirq (`b.s3.`), then a Movable page in task context: the refill was the softirq's
/// allocation's, and the task's event says nothing of it. A hardirq's event in between
/// waits; a softirq event of the task's other than its allocation is a bulk take
/// (`alloc_pages_bulk` in softirq); a task event first (the softirq ended with no event of
/// its own) says nothing. Fails on the old code (the Movable allocation read as a bulk take
/// of the run's next page).
#[test]
fn a_refill_in_softirq_is_awaited_in_softirq() {
    let alloc = |pfn, migratetype| EventKind::Alloc {
        pfn,
        order: 0,
        migratetype,
        gfp_flags: "GFP_ATOMIC",
    };
    let hardirq = |kind| Event {
        who: Who::new(Task::Unknown, Some(7), Ctx::new(true, false, true, 1)),
        ..by(7, 1, false, kind)
    };
    let own = [
        hardirq(free(0x90)),
        by(7, 1, true, alloc(0x10, 0)),
        by(7, 1, false, alloc(0x200, 1)),
    ];
    assert_eq!(after_a_refill_in(true, &own), vec![Vec::new(); 3]);
    let bulk = vec![Untraced {
        bulk_refill: true,
        ..Untraced::new(0x10, 1, 0)
    }];
    let taken = after_a_refill_in(true, &[by(7, 1, true, free(0x80))]);
    assert_eq!(taken, vec![bulk]);
    let ended = [by(7, 1, false, alloc(0x200, 1)), by(7, 1, true, free(0x80))];
    assert_eq!(after_a_refill_in(true, &ended), vec![Vec::new(); 2]);
}

/// 7.2-2g p_prodcons (lines 85201-85202): `cat-342` frees 0x393c twice with no allocation
/// between: `alloc_pages_bulk` took it off the list of its pageblock's type on the CPU that
/// freed it. The `mm_page_free_batched` that repeats an `mm_page_free`, a free after a drain
/// (the page went to the buddy) and a page of a HighAtomic pageblock say nothing. Fails on
/// the old code (a free of the pageblock's type).
#[test]
fn a_page_freed_again_with_no_allocation_between_was_taken_untraced() {
    let mut k = KernelSide::new(1, 4);
    k.block_types.name(0x200, 1);
    k.block_types.name(0x400, 3);
    assert_eq!(
        k.add(&by(7, 2, false, free(0x200)), 0),
        Inferred::FreeOfType { migratetype: 1 }
    );
    let batched = by(7, 2, false, EventKind::FreeBatched { pfn: 0x200 });
    assert_eq!(k.add(&batched, 0), Inferred::FreeOfType { migratetype: 1 });
    let again = k.add(&by(7, 3, false, free(0x200)), 0);
    let untraced = Inferred::UntracedAlloc {
        cpu: 2,
        migratetype: 1,
        freed_again: true,
    };
    assert_eq!(again, untraced);
    let drain = EventKind::PcpuDrain {
        pfn: 0x200,
        order: 0,
        migratetype: 1,
    };
    k.add(&by(7, 3, false, drain), 0);
    let after_drain = k.add(&by(7, 3, false, free(0x200)), 0);
    assert_eq!(after_drain, Inferred::FreeOfType { migratetype: 1 });
    k.add(&by(7, 0, false, free(0x400)), 0);
    assert_eq!(
        k.add(&by(7, 0, false, free(0x400)), 0),
        Inferred::FreeOfType { migratetype: 3 }
    );
}

/// 7.2-4g p_idle (lines 61458-62606): `kworker/3:0` frees 0x10b648-0x10b64b on CPU 3, an
/// order-2 allocation hands out 0x10b648 (a vmalloc'd stack: `vm_area_alloc_pages`, then
/// `split_page`), and `kworker/2:1` frees the four on CPU 2: no page of the block is freed
/// again. Fails on the old code (the three after the first read as taken off CPU 3's list).
#[test]
fn a_page_a_higher_order_allocation_handed_out_is_not_freed_again() {
    let mut k = KernelSide::new(1, 4);
    k.block_types.name(0x200, 0);
    for pfn in 0x200..0x204 {
        k.add(&by(7, 3, false, free(pfn)), 0);
    }
    let block = EventKind::Alloc {
        pfn: 0x200,
        order: 2,
        migratetype: 0,
        gfp_flags: "GFP_NOWAIT",
    };
    k.add(&by(8, 3, false, block), 0);
    for pfn in 0x200..0x204 {
        let got = k.add(&by(9, 2, false, free(pfn)), 0);
        assert_eq!(got, Inferred::FreeOfType { migratetype: 0 }, "{pfn:#x}");
    }
}

/// 6.1-4g p_prodcons (line 32704): `dash-188` frees 0x10265e on CPU 1 and the next
/// Unmovable allocation there (106.072337) takes 0x1026fc, freed before it: a vmalloc'd
/// stack's `alloc_pages_bulk` took the pages above it off the list's head untraced (0x10265e
/// is next freed at 174.695018, with the stack). A page no free put on the list, a THP
/// folio's `mm_page_free_batched` (6.12-8g p_thp: 0x10d000 drained at order 9), or the same
/// events with the rule off (7.2), say nothing; a refill (the list was empty) takes the
/// rest. Fails on the old code (nothing inferred).
#[test]
fn an_allocation_under_freed_pages_finds_them_taken_untraced() {
    let alloc = |pfn| EventKind::Alloc {
        pfn,
        order: 0,
        migratetype: 0,
        gfp_flags: "GFP_KERNEL",
    };
    let run = |on: bool| {
        let mut k = KernelSide::new(1, 2);
        k.set_bulk_takes_head(on);
        k.block_types.name(0x200, 0);
        let mut got = Vec::new();
        let events = [free(0x200), free(0x201), free(0x202), alloc(0x200)];
        let thp = EventKind::FreeBatched { pfn: 0x210 };
        let more = [alloc(0x300), thp, free(0x203), refill(0x10)];
        for kind in events.into_iter().chain(more) {
            k.add(&by(7, 1, false, kind), 0);
            got.push(k.untraced_now.iter().map(|u| u.pfn).collect::<Vec<_>>());
        }
        got
    };
    let e = Vec::new;
    let taken = vec![
        e(),
        e(),
        e(),
        vec![0x202, 0x201],
        e(),
        e(),
        e(),
        vec![0x203],
    ];
    assert_eq!(run(true), taken);
    assert_eq!(run(false), vec![e(); 8]);
}

/// 6.12-8g p_thp (lines 35077-35206): `dash-515` refills 63 Unmovable pages on CPU 2 at
/// 654.239763, then 126 Movable ones, and allocates the Movable run's first page: the
/// Unmovable run was `alloc_pages_bulk`'s (a vmalloc'd stack), which took its first page.
/// Another task's refill says nothing. A free of the run's first page before the next run
/// (there: `kworker/1:1`'s at 654.286282) flags the page [`Untraced::freed`]: the replay takes
/// it then only if it still holds that free. Fails on the old code (the next run replaced the
/// awaited one: nothing inferred).
#[test]
fn a_refill_of_another_list_before_its_own_allocation_was_a_bulk_take() {
    let movable = |pfn| EventKind::ZoneLocked {
        pfn,
        order: 0,
        migratetype: 1,
        percpu_refill: true,
    };
    let bulk = vec![Untraced {
        bulk_refill: true,
        ..Untraced::new(0x10, 1, 0)
    }];
    let got = after_a_refill(&[
        by(7, 1, false, movable(0x40)),
        by(7, 1, false, movable(0x41)),
    ]);
    assert_eq!(got, vec![bulk, Vec::new()]);
    let other = after_a_refill(&[by(8, 1, false, movable(0x40))]);
    assert_eq!(other, vec![Vec::new()]);
    let freed = after_a_refill(&[by(9, 0, false, free(0x10)), by(7, 1, false, movable(0x40))]);
    let held = Untraced {
        bulk_refill: true,
        freed: true,
        ..Untraced::new(0x10, 1, 0)
    };
    assert_eq!(freed[1], vec![held]);
}

/// 7.2-3g-16cpu-wq p_file (lines 3845-3908): `cat-1101` frees on CPU 3, in one batch
/// (`release_pages`), pages no line before shows, then frees the same pages again with no
/// allocation between: `copy_splice_read`'s `alloc_pages_bulk` took them off CPU 3's
/// Unmovable list before each free, the first time too, where they lay from the start.
/// With `first-free-takes` on, the free again infers one more take off that list, bound to
/// no frame, and so does a single first free freed again in a batch (a page the pipe kept);
/// a third free, single frees both (a `vfree`'d stack's), a page an allocation showed
/// before, or the rule off infer none. Fails on the old code (no such take).
#[test]
fn a_page_first_freed_in_a_batch_then_freed_again_lay_on_the_list_from_the_start() {
    let batched = |pfn| by(7, 3, false, EventKind::FreeBatched { pfn });
    let unbound = Untraced {
        unbound: true,
        ..Untraced::new(0x200, 3, 0)
    };
    // The untraced takes each event found, with the rule on or off.
    let run = |on: bool, events: &[Event<'static>]| {
        let mut k = KernelSide::new(1, 4);
        k.set_appeared_takes(on);
        k.block_types.name(0x200, 0);
        let got: Vec<Vec<Untraced>> = events
            .iter()
            .map(|e| {
                k.add(e, 0);
                k.untraced_now.clone()
            })
            .collect();
        (got, k.appeared_taken)
    };
    let cycle = [
        by(7, 3, false, free(0x200)),
        batched(0x200),
        by(7, 3, false, free(0x200)),
        batched(0x200),
        by(7, 3, false, free(0x200)),
    ];
    let (got, taken) = run(true, &cycle);
    assert_eq!(got[2], vec![unbound]);
    assert!(got.iter().enumerate().all(|(i, u)| i == 2 || u.is_empty()));
    assert_eq!(taken, 1);
    assert_eq!(run(false, &cycle).1, 0);
    // A single free first (no `mm_page_free_batched`), then a single free again (a
    // `vfree`'d stack's, on that CPU or another): none.
    for cpu in [3, 2] {
        let single = [by(7, 3, false, free(0x200)), by(8, cpu, false, free(0x200))];
        assert_eq!(run(true, &single).1, 0, "CPU {cpu}");
    }
    // A single first free (the pipe's filled page, 0x27583 at 89.246441), freed again in a
    // batch on that CPU (89.246461, 89.246472): the take, at the batch's line.
    let kept = [
        by(7, 3, false, free(0x200)),
        by(7, 3, false, free(0x200)),
        batched(0x200),
    ];
    let (got, taken) = run(true, &kept);
    assert_eq!((got[2].clone(), taken), (vec![unbound], 1));
    // Shown allocated before its batch's free: none.
    let alloc = EventKind::Alloc {
        pfn: 0x200,
        order: 0,
        migratetype: 0,
        gfp_flags: "GFP_USER",
    };
    let shown = [
        by(7, 3, false, alloc),
        by(7, 3, false, free(0x200)),
        batched(0x200),
        by(7, 3, false, free(0x200)),
    ];
    assert_eq!(run(true, &shown).1, 0);
}
