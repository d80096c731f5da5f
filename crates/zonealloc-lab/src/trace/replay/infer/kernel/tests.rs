//! The kernel side's drain, refill and frame inference on crafted event sequences.

use super::*;
use crate::trace::parse::{PagePtr, Who};

/// An event of `kind` on `cpu`, no timestamp or task (also the refill tests').
pub(super) fn ev(cpu: u32, kind: EventKind<'static>) -> Event<'static> {
    Event {
        cpu: Some(cpu),
        ts_ns: None,
        page: PagePtr::Present,
        who: Who::UNKNOWN,
        kind,
    }
}

#[test]
fn a_drain_after_a_free_is_explained_and_one_after_an_allocation_is_not() {
    let mut k = KernelSide::new(1, 2);
    let drain = |pfn| EventKind::PcpuDrain {
        pfn,
        order: 0,
        migratetype: 1,
    };
    // CPU 1 frees 0x10; CPU 0 frees 0x20 and its drain follows: explained.
    assert_eq!(
        k.add(
            &ev(
                1,
                EventKind::Free {
                    pfn: 0x10,
                    order: 0
                }
            ),
            0
        ),
        Inferred::None
    );
    k.add(
        &ev(
            0,
            EventKind::Free {
                pfn: 0x20,
                order: 0,
            },
        ),
        0,
    );
    assert_eq!(k.add(&ev(0, drain(0x20)), 0), Inferred::None);
    assert_eq!(k.add(&ev(0, drain(0x21)), 0), Inferred::None);
    // An allocation, then a drain run on CPU 0 that takes CPU 1's page and its own:
    // unexplained, one drain per owner.
    k.add(
        &ev(
            0,
            EventKind::Alloc {
                pfn: 0x30,
                order: 0,
                migratetype: 0,
                gfp_flags: "GFP_KERNEL",
            },
        ),
        0,
    );
    assert_eq!(k.add(&ev(0, drain(0x10)), 0), Inferred::Drain { owner: 1 });
    assert_eq!(k.add(&ev(0, drain(0x11)), 0), Inferred::Drain { owner: 0 });
    assert_eq!(k.add(&ev(0, drain(0x12)), 0), Inferred::None);
    assert_eq!(
        (k.unexplained_runs, k.unexplained_blocks, k.inferred_drains),
        (1, 3, 2)
    );
    assert_eq!(k.remote_drained_blocks, 1);
    let t = k.grid.get(0, 0);
    assert_eq!((t.drains, t.drain_pages), (5, 5));
}

#[test]
fn a_workers_depth_2_drain_after_a_free_is_not_the_frees() {
    use crate::trace::parse::{Ctx, Task};
    let mut k = KernelSide::new(1, 2);
    let free = EventKind::Free {
        pfn: 0x20,
        order: 0,
    };
    let drain = EventKind::PcpuDrain {
        pfn: 0x20,
        order: 0,
        migratetype: 1,
    };
    let at = |task, ctx: &[u8], kind| Event {
        who: Who::new(task, Some(32), Ctx::parse(ctx)),
        ..ev(1, kind)
    };
    // The kworker's own free path drains at depth 3: the free's.
    k.add(&at(Task::CpuWorker, b".....", free.clone()), 0);
    assert_eq!(
        k.add(&at(Task::CpuWorker, b"d..3.", drain.clone()), 0),
        Inferred::None
    );
    // Its vmstat work at depth 2 right after a free: not the free's.
    k.add(&at(Task::CpuWorker, b".....", free), 0);
    assert_eq!(
        k.add(&at(Task::CpuWorker, b"d..2.", drain), 0),
        Inferred::Drain { owner: 1 }
    );
    assert_eq!(k.last_drain, Some((1, false)));
    assert_eq!(k.unexplained_runs, 1);
}

#[test]
fn a_drain_of_another_cpus_page_is_a_remote_drain_even_after_a_free() {
    let mut k = KernelSide::new(1, 2);
    // CPU 1 refills a block onto its lists; CPU 0 frees, then drains CPU 1's block.
    k.add(
        &ev(
            1,
            EventKind::ZoneLocked {
                pfn: 0x40,
                order: 0,
                migratetype: 1,
                percpu_refill: true,
            },
        ),
        0,
    );
    k.add(
        &ev(
            0,
            EventKind::Free {
                pfn: 0x20,
                order: 0,
            },
        ),
        0,
    );
    let drain = EventKind::PcpuDrain {
        pfn: 0x40,
        order: 0,
        migratetype: 1,
    };
    assert_eq!(k.add(&ev(0, drain), 0), Inferred::Drain { owner: 1 });
    assert_eq!((k.unexplained_runs, k.remote_drained_blocks), (0, 1));
    assert_eq!(k.grid.get(0, 1).refills, 1);
}

#[test]
fn another_cpus_refill_at_the_drains_own_timestamp_came_after_the_drain() {
    // 6.1-2g p2_procs_pipe at 11.710382: CPU 0 refills blocks, CPU 2 frees and its
    // free-path drain prints them after, with the same timestamp.
    let at = |cpu, ts, kind| Event {
        ts_ns: Some(ts),
        ..ev(cpu, kind)
    };
    let refill = |pfn| EventKind::ZoneLocked {
        pfn,
        order: 0,
        migratetype: 0,
        percpu_refill: true,
    };
    let free = |pfn| EventKind::Free { pfn, order: 0 };
    let drain = |pfn| EventKind::PcpuDrain {
        pfn,
        order: 0,
        migratetype: 0,
    };
    let t = 11_710_382_000;
    let mut k = KernelSide::new(1, 3);
    k.add(&at(0, t - 1000, free(0x50)), 0);
    k.add(&at(0, t, refill(0x40)), 0);
    k.add(&at(0, t, refill(0x41)), 0);
    k.add(&at(0, t, free(0x51)), 0);
    k.add(&at(2, t, free(0x20)), 0);
    // The drain ran first: CPU 2's own list, no remote drain; the refill's facts stand.
    assert_eq!(k.add(&at(2, t, drain(0x41)), 0), Inferred::None);
    assert_eq!(k.last_drain, Some((2, true)));
    assert_eq!(k.pfns.get(0x41).refill_listed(), Some(0));
    // A free by CPU 0 at the same timestamp is no such evidence (the block left the
    // buddy only by an allocation), nor is a refill at an earlier one.
    assert_eq!(
        k.add(&at(2, t, drain(0x51)), 0),
        Inferred::Drain { owner: 0 }
    );
    assert_eq!(k.add(&at(2, t + 1000, drain(0x40)), 0), Inferred::None);
    assert_eq!(k.last_drain, Some((0, false)));
    assert_eq!(k.pfns.get(0x40).refill_listed(), None);
    assert_eq!((k.remote_drained_blocks, k.inferred_drains), (2, 1));
    // Without timestamps nothing is read as unordered.
    let mut k = KernelSide::new(1, 3);
    k.add(&ev(0, refill(0x40)), 0);
    k.add(&ev(2, free(0x20)), 0);
    assert_eq!(k.add(&ev(2, drain(0x40)), 0), Inferred::Drain { owner: 0 });
}

#[test]
fn pages_a_refill_run_lost_before_the_traced_allocation_were_allocated_untraced() {
    let mut k = KernelSide::new(1, 2);
    let refill = |pfn| EventKind::ZoneLocked {
        pfn,
        order: 0,
        migratetype: 0,
        percpu_refill: true,
    };
    let alloc = |pfn| EventKind::Alloc {
        pfn,
        order: 0,
        migratetype: 0,
        gfp_flags: "GFP_KERNEL",
    };
    for pfn in 0x10..0x14 {
        k.add(&ev(0, refill(pfn)), 0);
    }
    // The first traced allocation takes the run's third page: two went untraced.
    k.add(&ev(0, alloc(0x12)), 0);
    assert_eq!(
        k.untraced_now,
        vec![Untraced::new(0x10, 0, 0), Untraced::new(0x11, 0, 0)]
    );
    // Another CPU's event does not touch CPU 0's run.
    k.add(&ev(1, alloc(0x99)), 0);
    assert!(k.untraced_now.is_empty());
    // The next refill run: the list was empty, so 0x13 went untraced too.
    k.add(&ev(0, refill(0x20)), 0);
    assert_eq!(k.untraced_now, vec![Untraced::new(0x13, 0, 0)]);
    assert_eq!(k.untraced_early, 3);
    // Their frees infer nothing more.
    let free = EventKind::Free {
        pfn: 0x10,
        order: 0,
    };
    assert_eq!(
        k.add(&ev(1, free), 0),
        Inferred::FreeOfType { migratetype: 0 }
    );
    assert_eq!(k.untraced_allocs, 0);
}

/// Counting without the inferences (no pageblock types named) gives every figure the full
/// accounting gives, on a mix of refill runs, allocations from them, frees, batched frees
/// and drains on two CPUs; only the inference that needs the types is missing.
#[test]
fn counting_without_inferences_gives_the_same_figures() {
    let mut events = Vec::new();
    for round in 0..6u64 {
        let base = 0x100 + round * 0x20;
        let cpu = (round % 2) as u32;
        for pfn in base..base + 6 {
            events.push(ev(
                cpu,
                EventKind::ZoneLocked {
                    pfn,
                    order: 0,
                    migratetype: (round % 3) as u8,
                    percpu_refill: true,
                },
            ));
        }
        // The run's third page allocated (two untraced before it), a page of an older
        // run freed, a batched free, and a drain after an allocation (unexplained).
        events.push(ev(
            cpu,
            EventKind::Alloc {
                pfn: base + 2,
                order: 0,
                migratetype: (round % 3) as u8,
                gfp_flags: "GFP_KERNEL",
            },
        ));
        events.push(ev(
            1 - cpu,
            EventKind::Free {
                pfn: base.saturating_sub(0x1c),
                order: 0,
            },
        ));
        events.push(ev(cpu, EventKind::FreeBatched { pfn: base + 2 }));
        events.push(ev(
            cpu,
            EventKind::Alloc {
                pfn: 0x900 + round,
                order: 1,
                migratetype: 1,
                gfp_flags: "GFP_KERNEL",
            },
        ));
        events.push(ev(
            cpu,
            EventKind::PcpuDrain {
                pfn: base + 5,
                order: 0,
                migratetype: 1,
            },
        ));
        events.push(ev(
            cpu,
            EventKind::Free {
                pfn: 0x900 + round,
                order: 1,
            },
        ));
    }
    let (mut full, mut counts) = (KernelSide::new(1, 2), KernelSide::new(1, 2));
    let mut of_type = 0;
    for e in &events {
        let a = full.add(e, 0);
        let b = counts.add_counts(e, 0);
        of_type += u64::from(matches!(a, Inferred::FreeOfType { .. }));
        assert!(!matches!(b, Inferred::FreeOfType { .. }));
        assert_eq!(full.untraced_now, counts.untraced_now, "{e:?}");
    }
    let figures = |k: &KernelSide| {
        (
            k.grid.cells.clone(),
            k.events_per_cpu.clone(),
            (k.unexplained_runs, k.unexplained_blocks, k.inferred_drains),
            (k.remote_drained_blocks, k.untraced_allocs, k.untraced_early),
            k.most_reused(100),
        )
    };
    assert_eq!(figures(&full), figures(&counts));
    assert!(full.untraced_early > 0 && full.unexplained_runs > 0);
    assert!(of_type > 0, "the mix frees a page of a named pageblock");
}
