//! The vmstat workers in a replay: a worker's run in the trace is `decay_pcp_high` on its
//! CPU (`count - high`, in chunks of `batch`), another task's unexplained run a drain of the
//! whole list, and the workers' drains are booked on the CPU they run on.

use super::*;
use crate::trace::ingest::sniff;
use crate::trace::migratetype::Numbering;
use crate::trace::parse::{Ctx, Task};
use crate::trace::replay::geometry::Geometry;
use crate::trace::variant::Variant;

/// Two CPUs, one zone of 64 Ki frames, mainline rules, the workers on or off (`decay`);
/// CPU 1's lists filled by 1024 allocations and frees at 1 µs and 2 µs.
pub(super) fn filled(decay: bool) -> Replayer {
    filled_on_wheel(decay, false)
}

/// [`filled`], with the workers' timers on the timer wheel or not.
fn filled_on_wheel(decay: bool, wheel: bool) -> Replayer {
    let sniff = sniff::Sniff::default();
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
    r.set_timer_wheel(wheel);
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

pub(super) fn at(cpu: u32, ts_ns: u64, kind: EventKind<'static>, who: Who) -> Event<'static> {
    Event {
        cpu: Some(cpu),
        ts_ns: Some(ts_ns),
        page: PagePtr::Present,
        kind,
        who,
    }
}

pub(super) fn drain_line(pfn: u64) -> EventKind<'static> {
    EventKind::PcpuDrain {
        pfn,
        order: 0,
        migratetype: 1,
    }
}

/// `kworker/1:0-32 [001] d..2.`, or another task in the same context.
pub(super) fn who(task: Task) -> Who {
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

/// An ftrace text line of `task` on `cpu` with the latency column `flags`.
fn line(task: &str, cpu: u32, flags: &str, ts: f64, ev: &str) -> String {
    format!("{task:>16} [{cpu:03}] {flags} {ts:12.6}: {ev}\n")
}

/// A kmem event's text.
fn ev(what: &str, pfn: u64, tail: &str) -> String {
    format!("{what}: page=(____ptrval____) pfn={pfn:#x} {tail}")
}

const ALLOC: &str = "order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE";
const DRAIN: &str = "order=0 migratetype=1";

/// The shipped 7.2 p1 snapshot before its phase, for `--proc`.
fn p1_before() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/proc/linux-7.2-p1-before")
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
    let (alloc, drain) = (ALLOC, DRAIN);
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
        proc: Some(p1_before()),
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

/// A worker's run the trace shows only before the window places that CPU's timer: CPU 1's
/// worker drained at 1.25 s, before the start marker at 1.5 s, so its first run in the
/// window is a tick and 3 jiffies of skew off that second (2.246 s), before the window ends
/// at 2.45 s; on a second assumed at the window's first event (1.6 s) every CPU's worker
/// runs from 2.564 s on (CPU 3's, 9 jiffies early), and so on the given `--jiffies-phase`
/// of x.5 (CPU 1's at 2.488 s).
#[test]
fn a_workers_run_before_the_window_places_its_cpus_timer() {
    use crate::trace::replay::options::ReplayOptions;
    use crate::trace::replay::run as replay;
    let (alloc, drain) = (ALLOC, DRAIN);
    let mut t = String::from("# tracer: nop\n");
    t += &line(
        "dd-60",
        1,
        ".....",
        1.0,
        &ev("mm_page_alloc", 0x70000, alloc),
    );
    for i in 0..3u64 {
        let l = ev("mm_page_pcpu_drain", 0x70000 + i, drain);
        t += &line("kworker/1:0-32", 1, "d..2.", 1.25, &l);
    }
    let mark = "tracing_mark_write: KT_SNAPSHOT_BEFORE_END t";
    t += &line("init-1", 0, "...1.", 1.5, mark);
    // CPU 0 busy until 2.4 s, an event every 10 ms.
    for k in 0..=80u64 {
        let (pfn, ts) = (0x50000 + k, 1.6 + k as f64 * 0.01);
        t += &line("cc1-50", 0, ".....", ts, &ev("mm_page_alloc", pfn, alloc));
    }
    let mark = "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN t";
    t += &line("init-1", 0, "...1.", 2.45, mark);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.txt");
    std::fs::write(&p, t).unwrap();
    let runs = |phase: Option<u64>| -> (u64, bool) {
        let opts = ReplayOptions {
            samples: 10,
            jiffies_phase_ns: phase,
            proc: Some(p1_before()),
            ..ReplayOptions::default()
        };
        let run = replay::run(&p, &opts, &|_| {}).unwrap();
        let c = &run.replayers[0].counts;
        (c.decay_runs, c.decay_phase_from_trace)
    };
    assert_eq!(runs(None), (1, true));
    assert_eq!(runs(Some(1_500_000_000)), (0, true));
}

/// CPU 1's task allocates and frees a page every half millisecond from `from_ms` to `to_ms`.
pub(super) fn busy(r: &mut Replayer, from_ms: u64, to_ms: u64) {
    for ms in from_ms..to_ms {
        let pfn = 4096 + ms;
        let alloc = EventKind::Alloc {
            pfn,
            order: 0,
            migratetype: 1,
            gfp_flags: "GFP_HIGHUSER_MOVABLE",
        };
        let t = ms * 1_000_000;
        r.feed(&at(1, t, alloc, Who::UNKNOWN), Inferred::None)
            .unwrap();
        let free = EventKind::Free { pfn, order: 0 };
        r.feed(&at(1, t + 500_000, free, Who::UNKNOWN), Inferred::None)
            .unwrap();
    }
}

#[test]
fn a_busy_cpus_decay_waits_for_its_task_to_pause() {
    // CPU 1's worker expires at 0.988 s (the phase assumed at the first event, 1 µs) while
    // its task allocates and frees every half millisecond until 1.05 s: its `high` stays
    // until the task pauses, and decays a tick after the task's last event.
    let mut r = filled(true);
    let high = r.zones[0].pcp_info(CpuId(1)).high;
    busy(&mut r, 900, 1050);
    assert_eq!(r.zones[0].pcp_info(CpuId(1)).high, high);
    busy(&mut r, 1060, 1061);
    assert!(r.zones[0].pcp_info(CpuId(1)).high < high);
}

#[test]
fn without_late_workers_a_busy_cpus_decay_runs_at_its_expiry() {
    // As above, with `--no-late-workers`: the worker runs at its expiry (0.988 s), while the
    // task is still busy.
    let mut r = filled(true);
    r.set_late_workers(false);
    let high = r.zones[0].pcp_info(CpuId(1)).high;
    busy(&mut r, 900, 1000);
    assert!(r.zones[0].pcp_info(CpuId(1)).high < high);
}

#[test]
fn on_the_timer_wheel_a_busy_cpus_decay_runs_at_its_bucket() {
    // As above, with `--timer-wheel` too: CPU 1's timer expires at jiffy 247 (0.988 s) and
    // fires at its bucket, jiffy 248 (0.992 s; the phase, 1 µs, is taken for a multiple of
    // 8 jiffies).
    let mut r = filled_on_wheel(true, true);
    r.set_late_workers(false);
    let high = r.zones[0].pcp_info(CpuId(1)).high;
    busy(&mut r, 900, 992);
    assert_eq!(r.zones[0].pcp_info(CpuId(1)).high, high);
    busy(&mut r, 992, 993);
    assert!(r.zones[0].pcp_info(CpuId(1)).high < high);
}

#[test]
fn a_late_decay_that_would_drain_waits_for_the_workers_drain_in_the_trace() {
    // CPU 1 (1425 pages, `high` 1745, 1527 decayed) frees a page each millisecond from 0.9
    // s, pages CPU 0 allocated: at its pause at 1.05 s it holds more than the decayed
    // `high`, so the late run would drain, which the kernel's would show as its kworker's
    // drain. Without one it waits; at the worker's drain line it runs.
    let mut r = filled(true);
    let high = r.zones[0].pcp_info(CpuId(1)).high;
    let ev = |r: &mut Replayer, cpu: u32, t: u64, kind: EventKind<'static>| {
        r.feed(&at(cpu, t, kind, Who::UNKNOWN), Inferred::None)
            .unwrap();
    };
    for k in 0..200u64 {
        let alloc = EventKind::Alloc {
            pfn: 8192 + k,
            order: 0,
            migratetype: 1,
            gfp_flags: "GFP_HIGHUSER_MOVABLE",
        };
        ev(&mut r, 0, 3000, alloc);
    }
    for ms in 900..1050u64 {
        let free = EventKind::Free {
            pfn: 8192 + ms - 900,
            order: 0,
        };
        ev(&mut r, 1, ms * 1_000_000, free);
    }
    ev(
        &mut r,
        1,
        1_060_000_000,
        EventKind::Free {
            pfn: 8392 - 1,
            order: 0,
        },
    );
    let p = r.zones[0].decay_pcp_high_preview(CpuId(1));
    assert!(p.drained > 0, "{p:?}");
    assert_eq!(r.zones[0].pcp_info(CpuId(1)).high, high);
    let line = at(1, 1_070_000_000, drain_line(8192), who(Task::CpuWorker));
    r.feed(&line, Inferred::Drain { owner: 1 }).unwrap();
    assert_eq!(r.zones[0].pcp_info(CpuId(1)).high, p.high_after);
}

/// An unknown task's event on `cpu` at `t`.
pub(super) fn feed_at(r: &mut Replayer, cpu: u32, t: u64, kind: EventKind<'static>) {
    r.feed(&at(cpu, t, kind, Who::UNKNOWN), Inferred::None)
        .unwrap();
}

pub(super) fn movable(pfn: u64) -> EventKind<'static> {
    EventKind::Alloc {
        pfn,
        order: 0,
        migratetype: 1,
        gfp_flags: "GFP_HIGHUSER_MOVABLE",
    }
}

/// CPU 1 frees 151 pages CPU 0 allocated (8192 on), then sleeps from 0.36 s; its worker
/// expires at 0.988 s while CPU 0 runs, to 1.2 s. CPU 1's decay at its sleep, which drains.
pub(super) fn sleeps_over_its_expiry(r: &mut Replayer) -> zonealloc::DecayOutcome {
    for k in 0..200u64 {
        feed_at(r, 0, 3000, movable(8192 + k));
    }
    for ms in 200..351u64 {
        let free = EventKind::Free {
            pfn: 8192 + ms - 200,
            order: 0,
        };
        feed_at(r, 1, ms * 1_000_000, free);
    }
    let p = r.zones[0].decay_pcp_high_preview(CpuId(1));
    assert!(p.drained > 0, "{p:?}");
    for ms in (400..1200u64).step_by(10) {
        feed_at(r, 0, ms * 1_000_000, movable(20_000 + ms));
    }
    p
}

#[test]
fn an_idle_cpus_decay_that_would_drain_waits_for_its_cpu_to_wake() {
    // CPU 1 sleeps over its expiry ([`sleeps_over_its_expiry`]). Its decay would drain,
    // and the trace shows no drain of its kworker: the deferrable timer waits until CPU 1
    // wakes (1.25 s).
    for late in [true, false] {
        let mut r = filled(true);
        r.set_late_workers(late);
        let high = r.zones[0].pcp_info(CpuId(1)).high;
        sleeps_over_its_expiry(&mut r);
        let held = r.zones[0].pcp_info(CpuId(1)).high == high;
        assert_eq!(held, late, "late workers {late}");
        feed_at(&mut r, 1, 1_250_000_000, movable(30_000));
        // Woken for its task, which runs first: the kworker waits (`Vmstat::wake_late`)
        // until the trace's drain of it.
        let held = r.zones[0].pcp_info(CpuId(1)).high == high;
        assert_eq!(held, late, "late workers {late}");
        let line = at(1, 1_260_000_000, drain_line(8192), who(Task::CpuWorker));
        r.feed(&line, Inferred::Drain { owner: 1 }).unwrap();
        assert!(r.zones[0].pcp_info(CpuId(1)).high < high);
    }
}

#[test]
fn a_woken_cpus_decay_waits_for_the_task_it_woke_for_to_pause() {
    // CPU 1 sleeps over its expiry with more pages than its decayed `high`, and wakes at
    // 1.25 s for a task that allocates them below it by 1.2505 s and pauses till 1.27 s.
    // The kworker runs at the pause and drains nothing, as 7.2-4g-loads p_fork's CPU 2 did
    // (woken at 50.778959, `high` down in the pause at 50.8326); run at the wake, it
    // drained.
    let mut r = filled(true);
    let p = sleeps_over_its_expiry(&mut r);
    let drains = r.ours.get(0, 1).drain_pages;
    for k in 0..p.drained as u64 + 2 {
        feed_at(&mut r, 1, 1_250_000_000 + k * 1000, movable(8192 + k));
    }
    assert_eq!(r.ours.get(0, 1).drain_pages, drains, "no drain at the wake");
    let free = EventKind::Free {
        pfn: 8192,
        order: 0,
    };
    feed_at(&mut r, 1, 1_270_000_000, free);
    assert_eq!(r.zones[0].pcp_info(CpuId(1)).high, p.high_after);
    assert_eq!(r.ours.get(0, 1).drain_pages, drains);
}

#[test]
fn a_cpu_moving_only_pipe_pages_leaves_its_worker_stopped() {
    // CPU 1's lists filled ([`filled`]), then a page allocated and freed on it every 50 ms
    // for 40 s: its worker runs while decay has work, then stops where the pages are a
    // pipe's (`GFP_HIGHUSER|__GFP_ACCOUNT`: no vmstat counter moves, `need_update` stays
    // false), and runs every second where they are anon pages.
    let runs = |gfp_flags: &'static str| {
        let mut r = filled(true);
        take_and_give(&mut r, 800, gfp_flags);
        r.vmstat.as_ref().map_or(0, |v| v.runs)
    };
    let (pipe, anon) = (
        runs("GFP_HIGHUSER|__GFP_ACCOUNT"),
        runs("GFP_HIGHUSER_MOVABLE"),
    );
    assert!(pipe >= 2 && pipe + 20 < anon, "pipe {pipe}, anon {anon}");
}

/// CPU 1's task takes a page with `gfp_flags` and gives it back every 50 ms, `n - 1` times
/// from 50 ms on.
pub(super) fn take_and_give(r: &mut Replayer, n: u64, gfp_flags: &'static str) {
    for k in 1..n {
        let pfn = k % 512;
        let alloc = EventKind::Alloc {
            pfn,
            order: 0,
            migratetype: 1,
            gfp_flags,
        };
        feed_at(r, 1, k * 50_000_000, alloc);
        feed_at(
            r,
            1,
            k * 50_000_000 + 1000,
            EventKind::Free { pfn, order: 0 },
        );
    }
}

mod shepherd;
mod traced;
