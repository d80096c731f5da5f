//! The vmstat workers in a replay: a worker's run in the trace is `decay_pcp_high` on its
//! CPU (`count - high`, in chunks of `batch`), another task's unexplained run a drain of the
//! whole list, and the workers' drains are booked on the CPU they run on.

use super::*;
use crate::trace::ingest::input;
use crate::trace::migratetype::Numbering;
use crate::trace::parse::{Ctx, Task};
use crate::trace::replay::geometry::Geometry;
use crate::trace::variant::Variant;

/// Two CPUs, one zone of 64 Ki frames, mainline rules, the workers on or off (`decay`);
/// CPU 1's lists filled by 1024 allocations and frees at 1 µs and 2 µs.
fn filled(decay: bool) -> Replayer {
    let sniff = input::Sniff::default();
    let g = Geometry::from_flags(
        None,
        Some(1 << 16),
        None,
        Some(2),
        &sniff,
        Numbering::Current,
    )
    .unwrap();
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
    r.decay = decay;
    for pfn in 0..1024 {
        let alloc = EventKind::Alloc {
            pfn,
            order: 0,
            migratetype: 1,
            gfp_flags: "GFP_HIGHUSER_MOVABLE",
        };
        r.feed(&at(1, 1000, alloc, Who::UNKNOWN), Inferred::None)
            .unwrap();
    }
    for pfn in 0..1024 {
        let free = EventKind::Free { pfn, order: 0 };
        r.feed(&at(1, 2000, free, Who::UNKNOWN), Inferred::None)
            .unwrap();
    }
    r
}

fn at(cpu: u32, ts_ns: u64, kind: EventKind<'static>, who: Who) -> Event<'static> {
    Event {
        cpu: Some(cpu),
        ts_ns: Some(ts_ns),
        page: PagePtr::Present,
        kind,
        who,
    }
}

fn drain_line(pfn: u64) -> EventKind<'static> {
    EventKind::PcpuDrain {
        pfn,
        order: 0,
        migratetype: 1,
    }
}

/// `kworker/1:0-32 [001] d..2.`, or another task in the same context.
fn who(task: Task) -> Who {
    Who {
        task,
        pid: Some(32),
        ctx: Ctx::parse(b"d..2."),
    }
}

#[test]
fn a_workers_drain_in_the_trace_is_decay_not_a_drain_of_the_whole_list() {
    let mut r = filled(true);
    let count = r.zones[0].pcp_info(CpuId(1)).count;
    let want = r.zones[0].decay_pcp_high_preview(CpuId(1));
    assert!(want.high_before > want.high_after, "{want:?}");
    assert!(count > 0);
    // The trace's worker run on CPU 1, a millisecond later: a few lines of one run.
    let before = r.ours.get(0, 1).drain_pages;
    for pfn in 0..3 {
        let line = at(1, 1_000_000, drain_line(pfn), who(Task::CpuWorker));
        r.feed(&line, Inferred::Drain { owner: 1 }).unwrap();
    }
    let drained = r.ours.get(0, 1).drain_pages - before;
    assert_eq!(drained as i32, want.drained.max(0));
    assert_eq!(
        r.zones[0].pcp_info(CpuId(1)).count,
        count - want.drained.max(0)
    );
    assert_eq!(r.counts.inferred_drains, 0);
    assert_eq!(r.vmstat.as_ref().map(|v| (v.marks, v.runs)), Some((1, 1)));
    assert!(r.vmstat.as_ref().is_some_and(|v| v.aligned()));
}

#[test]
fn another_tasks_unexplained_drain_empties_the_list() {
    for task in [Task::Other, Task::Kworker] {
        let mut r = filled(true);
        let count = r.zones[0].pcp_info(CpuId(1)).count;
        let line = at(1, 1_000_000, drain_line(0), who(task));
        r.feed(&line, Inferred::Drain { owner: 1 }).unwrap();
        assert_eq!(r.zones[0].pcp_info(CpuId(1)).count, 0, "{task:?}");
        assert_eq!(r.ours.get(0, 1).drain_pages, count as u64, "{task:?}");
        assert_eq!(r.counts.inferred_drains, 1);
    }
    // A worker's depth-3 drain is the free path's: explained, nothing to do.
    let mut r = filled(true);
    let count = r.zones[0].pcp_info(CpuId(1)).count;
    let mut w = who(Task::CpuWorker);
    w.ctx = Ctx::parse(b"d..3.");
    r.feed(&at(1, 1_000_000, drain_line(0), w), Inferred::None)
        .unwrap();
    assert_eq!(r.zones[0].pcp_info(CpuId(1)).count, count);
}

#[test]
fn without_decay_a_workers_drain_is_replayed_as_before() {
    // 6.1 and 6.6 have no decay_pcp_high: the switch is off and nothing decays.
    let mut r = filled(false);
    let line = at(1, 1_000_000, drain_line(0), who(Task::CpuWorker));
    r.feed(&line, Inferred::Drain { owner: 1 }).unwrap();
    assert!(r.vmstat.is_none());
    assert_eq!(r.zones[0].pcp_info(CpuId(1)).count, 0);
}
