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
    Who::new(task, Some(32), Ctx::parse(b"d..2."))
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
    let w = Who::new(Task::CpuWorker, Some(32), Ctx::parse(b"d..3."));
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

/// One window, one attribution: on a 7.2 capture's shape, a `drain_all_pages` run by a task
/// on CPU 0 draining what CPU 1 freed, and CPU 1's vmstat worker draining its own lists.
/// The kernel's side books each drain on the CPU its trace line stamps (the executing one);
/// ours, the JSON's per-CPU figures and `--emit`'s lines book ours on the CPU that ran
/// them too; events outside the markers count on neither side.
#[test]
fn the_report_json_and_emit_book_a_drain_on_the_cpu_that_ran_it() {
    use crate::trace::replay::options::ReplayOptions;
    use crate::trace::replay::run as replay;
    let line = |task: &str, cpu: u32, flags: &str, ts: f64, ev: &str| {
        format!("{task:>16} [{cpu:03}] {flags} {ts:12.6}: {ev}\n")
    };
    let ev = |what: &str, pfn: u64, tail: &str| {
        format!("{what}: page=(____ptrval____) pfn={pfn:#x} {tail}")
    };
    let alloc = "order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE";
    let drain = "order=0 migratetype=1";
    let mut t = String::from("# tracer: nop\n");
    // Before the window: a drain the window must not count.
    t += &line(
        "cc1-50",
        0,
        "d..2.",
        1.0,
        &ev("mm_page_pcpu_drain", 0x70000, drain),
    );
    t += &line(
        "init-1",
        0,
        "...1.",
        1.5,
        "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t",
    );
    // CPU 1 allocates 4000 pages (refills raise its high) and frees them.
    for i in 0..4000u64 {
        t += &line(
            "dd-60",
            1,
            ".....",
            2.0,
            &ev("mm_page_alloc", 0x40000 + i, alloc),
        );
    }
    for i in 0..4000u64 {
        t += &line(
            "dd-60",
            1,
            ".....",
            2.1,
            &ev("mm_page_free", 0x40000 + i, "order=0"),
        );
    }
    // CPU 1's worker at 2.5 s, then a task on CPU 0 draining three of CPU 1's pages.
    t += &line(
        "kworker/1:0-32",
        1,
        "d..2.",
        2.5,
        &ev("mm_page_pcpu_drain", 0x40000, drain),
    );
    for i in 1..4u64 {
        t += &line(
            "cc1-50",
            0,
            "d..2.",
            3.0,
            &ev("mm_page_pcpu_drain", 0x40000 + i, drain),
        );
    }
    t += &line(
        "init-1",
        0,
        "...1.",
        4.0,
        "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t",
    );
    t += &line(
        "cc1-50",
        0,
        "d..2.",
        5.0,
        &ev("mm_page_pcpu_drain", 0x70001, drain),
    );
    let dir = tempfile::tempdir().unwrap();
    let (p, emit) = (dir.path().join("t.txt"), dir.path().join("emit.txt"));
    std::fs::write(&p, t).unwrap();
    let opts = ReplayOptions {
        samples: 10,
        strict: true,
        emit: Some(emit.clone()),
        proc: Some(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/proc/linux-7.2-p1-before"),
        ),
        ..ReplayOptions::default()
    };
    let run = replay::run(&p, &opts, &|_| {}).unwrap();
    let cpus = run.geo.cpus;
    let per_cpu = |g: &crate::trace::replay::tally::Grid| -> Vec<u64> {
        (0..cpus)
            .map(|c| (0..g.zones).map(|z| g.get(z, c).drains).sum())
            .collect()
    };
    // The kernel's: the window's four drains, where its lines stamp them.
    let kernel = per_cpu(&run.kernel.grid);
    assert_eq!((kernel[0], kernel[1]), (3, 1));
    let r = &run.replayers[0];
    let ours = per_cpu(&r.ours);
    // Ours: CPU 1's whole list drained by CPU 0, booked there; the worker's decay on CPU 1.
    assert!(ours[0] > 3, "{ours:?}");
    assert_eq!(r.counts.decay_marks, 1);
    assert!(r.counts.decay_runs >= 1);
    // The JSON's per-CPU drains are ours.
    let result = crate::trace::report::to_result(&run, &p, &opts);
    let json = serde_json::to_value(&result).unwrap();
    let drains = &json["config"]["counts"][0]["drains_per_cpu"];
    assert_eq!(drains, &serde_json::json!(ours));
    // --emit's lines, per CPU stamp: the same figures.
    let text = std::fs::read_to_string(&emit).unwrap();
    let emitted: Vec<u64> = (0..cpus)
        .map(|c| {
            let stamp = format!("[{c:03}]");
            text.lines()
                .filter(|l| l.contains("mm_page_pcpu_drain") && l.contains(&stamp))
                .count() as u64
        })
        .collect();
    assert_eq!(emitted, ours);
}
