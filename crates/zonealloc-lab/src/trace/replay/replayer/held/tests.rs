//! Frees that find their CPU's lists held by a batch's commits.

use super::super::tests::{alloc0, four_cpus};
use super::super::Replayer;
use crate::trace::parse::{Ctx, Event, EventKind, PagePtr, Task, Who};
use crate::trace::replay::infer::kernel::Inferred;
use crate::trace::variant::Variant;
use zonealloc::CpuId;

/// `kind` on CPU 0 by task 7, with the latency column `ctx`.
fn by7(ctx: Ctx, kind: EventKind<'static>) -> Event<'static> {
    Event {
        cpu: Some(0),
        ts_ns: None,
        page: PagePtr::Present,
        who: Who::new(Task::Unknown, Some(7), ctx),
        kind,
    }
}

/// A block from the buddy directly (`percpu_refill=0`): an event that ends a batch.
fn from_buddy() -> EventKind<'static> {
    EventKind::ZoneLocked {
        pfn: 100,
        order: 0,
        migratetype: 0,
        percpu_refill: false,
    }
}

/// A replay committing at `mm_page_free_batched` where task 7 has allocated 0..10 on CPU 0,
/// and CPU 0's list count then.
fn ten_allocated() -> (Replayer, i32) {
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &four_cpus(), None).unwrap();
    r.commit_at_batched = true;
    let task = Ctx::new(false, false, false, 0);
    for pfn in 0..10 {
        r.feed(&by7(task, alloc0(pfn, 0, "GFP_KERNEL")), Inferred::None)
            .unwrap();
    }
    let before = r.zones[0].pcp_info(CpuId(0)).count;
    (r, before)
}

/// CPU 0's list count after: task 7 allocates 0..10, prepares a batch of 0..5
/// (`mm_page_free`), commits 0 and 1 (`mm_page_free_batched`, depth 2), a softirq in it frees
/// 8 and 9 at `depth`, then `next`, then a block from the buddy (which commits what is
/// left); and the count before the batch.
fn batch_cut_by_softirq(depth: u8, next: &[EventKind<'static>]) -> (i32, i32) {
    let (mut r, before) = ten_allocated();
    let task = Ctx::new(false, false, false, 0);
    let locked = Ctx::new(false, false, false, 2);
    let feed = |r: &mut Replayer, ctx, kind| r.feed(&by7(ctx, kind), Inferred::None).unwrap();
    for pfn in 0..5 {
        feed(&mut r, task, EventKind::Free { pfn, order: 0 });
    }
    for pfn in 0..2 {
        feed(&mut r, locked, EventKind::FreeBatched { pfn });
    }
    let softirq = Ctx::new(false, true, false, depth);
    for pfn in 8..10 {
        feed(&mut r, softirq, EventKind::Free { pfn, order: 0 });
    }
    for kind in next {
        let kind = kind.clone();
        let ctx = if matches!(kind, EventKind::FreeBatched { .. }) {
            locked
        } else {
            task
        };
        feed(&mut r, ctx, kind);
    }
    feed(&mut r, task, from_buddy());
    (before, r.zones[0].pcp_info(CpuId(0)).count)
}

/// 6.1-4g-more p_memcg, CPU 2 (265.081151-265.081394): a softirq's frees (`..s3.`) between
/// two commits of `kmem-phases-603`'s batch (`...2.`) found the lists held
/// (`free_unref_page`'s failed `pcp_spin_trylock`, `free_one_page`): none goes on the list,
/// and the batch's commits go on. A softirq at depth 0 (the lists let go), or one the task's
/// next event shows after the batch (a new free), puts its pages on the list. Fails on the
/// old code (the softirq's frees ended the batch and went on the list).
#[test]
fn an_interrupt_free_between_a_batchs_commits_goes_to_the_buddy() {
    let commits = [
        EventKind::FreeBatched { pfn: 2 },
        EventKind::FreeBatched { pfn: 3 },
    ];
    let (before, held) = batch_cut_by_softirq(3, &commits);
    assert_eq!(
        held,
        before + 5,
        "the batch's five pages, not the softirq's"
    );
    let new_free = [EventKind::Free { pfn: 5, order: 0 }];
    let (_, free) = batch_cut_by_softirq(0, &new_free);
    assert_eq!(
        free,
        before + 8,
        "the batch's five, the softirq's two and 5"
    );
    let (_, over) = batch_cut_by_softirq(3, &new_free);
    assert_eq!(
        over,
        before + 8,
        "the batch over: the softirq's two on the list"
    );
}

/// CPU 0's list count before and after: task 7 allocates 0..10, frees 0 (`mm_page_free`),
/// whose commit drains (a `mm_page_pcpu_drain` line by `drainer` at `drain_depth`, interrupts
/// off), a softirq stamped with task 7 frees 8 and 9 (`..s3.`), then task 7 allocates 0.
fn softirq_after_drain(drainer: u32, drain_depth: u8, at_batched: bool) -> (i32, i32) {
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &four_cpus(), None).unwrap();
    r.commit_at_batched = at_batched;
    let feed = |r: &mut Replayer, pid, ctx, kind| {
        let mut ev = by7(ctx, kind);
        ev.who = Who::new(Task::Unknown, Some(pid), ctx);
        r.feed(&ev, Inferred::None).unwrap();
    };
    let task = Ctx::new(false, false, false, 0);
    for pfn in 0..10 {
        feed(&mut r, 7, task, alloc0(pfn, 0, "GFP_KERNEL"));
    }
    let before = r.zones[0].pcp_info(CpuId(0)).count;
    feed(&mut r, 7, task, EventKind::Free { pfn: 0, order: 0 });
    let drain = EventKind::PcpuDrain {
        pfn: 500,
        order: 0,
        migratetype: 0,
    };
    feed(
        &mut r,
        drainer,
        Ctx::new(true, false, false, drain_depth),
        drain,
    );
    for pfn in 8..10 {
        let free = EventKind::Free { pfn, order: 0 };
        feed(&mut r, 7, Ctx::new(false, true, false, 3), free);
    }
    feed(&mut r, 7, task, alloc0(0, 0, "GFP_KERNEL"));
    (before, r.zones[0].pcp_info(CpuId(0)).count)
}

/// 7.2-4g-loads p_fork, CPU 3 (trace lines 70350-70438): `kmem-phases-412`'s free of
/// 0x10b67d drains 63 pages (`d..3.`, 51.372496-.372641), a softirq stamped with its pid
/// frees 24 pages (`..s3.`, 51.372773-.372845), and the task allocates next. The interrupt
/// came in as the drain's zone lock let interrupts on again, the lists still held: the
/// softirq's `pcp_spin_trylock` failed and `free_one_page` took the pages (21 of them come
/// back through refills, none off a list). A worker's drain (`d..2.`, `pcp_spin_lock_nopin`,
/// maybe another CPU's lists) or a softirq stamped with another task holds nothing. Fails on
/// the old code (the softirq's pages went on the list).
#[test]
fn an_interrupt_free_after_a_frees_drain_goes_to_the_buddy() {
    for at_batched in [false, true] {
        let (before, held) = softirq_after_drain(7, 3, at_batched);
        assert_eq!(
            held, before,
            "the free's page went on, the allocation took it"
        );
        let (_, worker) = softirq_after_drain(7, 2, at_batched);
        assert_eq!(
            worker,
            before + 2,
            "a worker's drain: the softirq's two on the list"
        );
        let (_, other) = softirq_after_drain(8, 3, at_batched);
        assert_eq!(other, before + 2, "another task's drain: on the list");
    }
}

/// CPU 0's list count before, after the drain's second line and at the end, and the frees
/// of frames the replay did not hold: task 7 allocates 0..10, prepares a batch of 0..5,
/// commits 0 (`...2.`), whose commit drains a chunk (a `d..3.` line of task 7), a softirq
/// stamped with task 7 frees 8 and 9 (`..s3.`), the drain goes on (another `d..3.` line),
/// the batch commits 1..5, and a block from the buddy ends it.
fn softirq_inside_chunked_drain() -> (i32, i32, i32, u64) {
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &four_cpus(), None).unwrap();
    r.commit_at_batched = true;
    let feed = |r: &mut Replayer, ctx, kind| r.feed(&by7(ctx, kind), Inferred::None).unwrap();
    let task = Ctx::new(false, false, false, 0);
    let locked = Ctx::new(false, false, false, 2);
    let draining = Ctx::new(true, false, false, 3);
    for pfn in 0..10 {
        feed(&mut r, task, alloc0(pfn, 0, "GFP_KERNEL"));
    }
    let count = |r: &Replayer| r.zones[0].pcp_info(CpuId(0)).count;
    let before = count(&r);
    for pfn in 0..5 {
        feed(&mut r, task, EventKind::Free { pfn, order: 0 });
    }
    feed(&mut r, locked, EventKind::FreeBatched { pfn: 0 });
    let drain = |pfn| EventKind::PcpuDrain {
        pfn,
        order: 0,
        migratetype: 0,
    };
    feed(&mut r, draining, drain(500));
    for pfn in 8..10 {
        let free = EventKind::Free { pfn, order: 0 };
        feed(&mut r, Ctx::new(false, true, false, 3), free);
    }
    feed(&mut r, draining, drain(501));
    let mid = count(&r);
    for pfn in 1..5 {
        feed(&mut r, locked, EventKind::FreeBatched { pfn });
    }
    feed(&mut r, task, from_buddy());
    (before, mid, count(&r), r.counts.frees_before_trace)
}

/// 7.2-4g-6cpu p_idle, CPU 1: `kmem-phases-941`'s commit at 282.393533 drains 819 pages
/// (`d..3.`), a softirq frees 17 (`..s3.`, 282.397670-.397714), the drain goes on with 1197
/// (7.2's `free_frozen_page_commit` drains in `batch`-sized `free_pcppages_bulk` calls, each
/// letting interrupts on at its end, the lists still held), then the batch commits its other
/// 27 pages (282.398922). The softirq's pages go to the buddy, and the batch's go on the list
/// at their own commits, once each. Fails on the old code (the second drain line, read as a
/// new drain, committed the batch's pages at once, and their commit lines freed them again:
/// with a /proc snapshot, pages of the pool in use, 27 more on CPU 1's list).
#[test]
fn a_drain_that_goes_on_after_an_interrupt_keeps_its_batch() {
    let (before, mid, after, unknown) = softirq_inside_chunked_drain();
    assert_eq!(mid, before + 1, "only the commit that drained");
    assert_eq!(after, before + 5, "the batch's five pages");
    assert_eq!(unknown, 0, "no commit of a page freed already");
}

/// 7.2-6g-12cpu p_fork, CPU 7 (167.345774-167.347614): task 7 prints a batch of 0..3
/// (`free_unref_folios`, before it takes the lists), a softirq frees 8 and 9 (`..s4.`: the
/// lists free, each committed at once), then the batch's first commit: the softirq's two
/// are on the list with it. Fails on the old code (before + 1: held with the batch's, past
/// the drain its commits trigger).
#[test]
fn an_interrupts_frees_among_a_batchs_prints_are_on_the_list_at_its_first_commit() {
    let (mut r, before) = ten_allocated();
    let feed = |r: &mut Replayer, ctx, kind| r.feed(&by7(ctx, kind), Inferred::None).unwrap();
    for pfn in 0..3 {
        feed(
            &mut r,
            Ctx::new(false, false, false, 2),
            EventKind::Free { pfn, order: 0 },
        );
    }
    for pfn in 8..10 {
        feed(
            &mut r,
            Ctx::new(false, true, false, 4),
            EventKind::Free { pfn, order: 0 },
        );
    }
    let locked = Ctx::new(false, false, false, 4);
    feed(&mut r, locked, EventKind::FreeBatched { pfn: 0 });
    assert_eq!(r.zones[0].pcp_info(CpuId(0)).count, before + 3);
}
