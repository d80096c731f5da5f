//! The workers' timers placed from their runs ahead, and an alignment that keeps the
//! shepherd in time.

use super::super::tests::{step, HZ, S, TICK};
use super::super::Run;
use super::*;
use crate::trace::parse::{Ctx, PagePtr, Task, Who};

const MS: u64 = 1_000_000;

/// A drain on trace CPU `cpu` at `t` by `task` in the worker's context (`d..2.`).
fn drain(cpu: u32, t: u64, task: Task) -> Event<'static> {
    Event {
        cpu: Some(cpu),
        ts_ns: Some(t),
        page: PagePtr::Present,
        kind: EventKind::PcpuDrain {
            pfn: 0x1000,
            order: 0,
            migratetype: 1,
        },
        who: Who::new(task, Some(72), Ctx::parse(b"d..2.")),
    }
}

#[test]
fn only_each_cpus_first_worker_drain_is_its_run_ahead() {
    let mut a = RunsAhead::new(4);
    // Another task's drain in the same context (drain_all_pages), a free-path drain (depth
    // 3) and an allocation are no worker's run.
    a.feed(&drain(1, 5 * S, Task::Other));
    let mut deep = drain(1, 5 * S, Task::CpuWorker);
    deep.who = Who::new(Task::CpuWorker, Some(72), Ctx::parse(b"d..3."));
    a.feed(&deep);
    let mut alloc = drain(1, 5 * S, Task::CpuWorker);
    alloc.kind = EventKind::Alloc {
        pfn: 1,
        order: 0,
        migratetype: 1,
        gfp_flags: "GFP_KERNEL",
    };
    a.feed(&alloc);
    assert_eq!(a.runs().count(), 0);
    // CPU 2's worker twice, trace CPU 4 folding onto CPU 0: the first of each.
    a.feed(&drain(2, 7 * S, Task::CpuWorker));
    a.feed(&drain(2, 8 * S, Task::CpuWorker));
    a.feed(&drain(4, 9 * S, Task::CpuWorker));
    assert_eq!(a.runs().collect::<Vec<_>>(), vec![(0, 9 * S), (2, 7 * S)]);
}

#[test]
fn a_run_ahead_places_the_timers_from_the_first_event_and_waits_for_its_mark() {
    // 7.2-2g p_thp: the window starts at 546.152 s; CPU 0's worker drains at 551.795 s, the
    // trace's first worker run. CPUs 0 and 1 busy (an event every ms each) up to it.
    let first = 546 * S + 152 * MS;
    let run_at = 551 * S + 795 * MS;
    let busy = |v: &mut Vmstat| {
        let mut ran = Vec::new();
        let mut t = first;
        while t < run_at {
            ran.extend(step(v, 0, t, true));
            ran.extend(step(v, 1, t, true));
            t += MS;
        }
        ran
    };
    let on = |ran: &[Run], cpu: u32| -> Vec<u64> {
        ran.iter()
            .filter(|r| r.cpu == cpu)
            .map(|r| r.at_ns)
            .collect()
    };
    let mut ahead = RunsAhead::new(4);
    ahead.feed(&drain(0, run_at, Task::CpuWorker));
    let mut v = Vmstat::new(4, HZ);
    v.align_ahead(&ahead);
    assert!(v.aligned());
    let ran = busy(&mut v);
    // CPU 0: a tick before x.795 each second, 546.791 ... 550.791; the trace's run is its
    // mark's, not the expiry's a tick before it.
    let want: Vec<u64> = (546..=550).map(|s| s * S + 795 * MS - TICK).collect();
    assert_eq!(on(&ran, 0), want);
    let run = v
        .mark(0, run_at)
        .expect("the trace's run is not simulated before it");
    assert_eq!(run.at_ns, run_at);
    // CPU 1, with no run in the trace, on the same seconds: 3 jiffies before CPU 0's.
    let want: Vec<u64> = (546..=551).map(|s| s * S + 795 * MS - 4 * TICK).collect();
    assert_eq!(on(&ran, 1), want);
    // Without it (the old behaviour), the phase is the first event's: x.152 s, and CPU 0's
    // decay at 551.152 runs before the trace's.
    let mut old = Vmstat::new(4, HZ);
    let ran = busy(&mut old);
    assert_eq!(on(&ran, 0).last(), Some(&(551 * S + 152 * MS)));
    assert_eq!(on(&ran, 1).first(), Some(&(547 * S + 152 * MS - 3 * TICK)));
}

#[test]
fn a_run_ahead_that_is_never_marked_runs_once_its_time_has_passed() {
    // 6.12-8g p_thp: CPU 3's expiry a tick before its traced run at 654.927 s, its events
    // meanwhile; a drain the replay books elsewhere (no mark): the run comes after it.
    let run_at = 654 * S + 927 * MS;
    let mut ahead = RunsAhead::new(4);
    ahead.feed(&drain(3, run_at, Task::CpuWorker));
    let mut v = Vmstat::new(4, HZ);
    v.align_ahead(&ahead);
    let mut ran = Vec::new();
    let mut t = 654 * S + 500 * MS;
    while t <= run_at {
        ran.extend(step(&mut v, 3, t, true));
        t += MS / 2;
    }
    assert!(ran.iter().all(|r| r.cpu != 3), "{ran:?}");
    let late = step(&mut v, 3, run_at + MS, true);
    let cpu3: Vec<u64> = late
        .iter()
        .filter(|r| r.cpu == 3)
        .map(|r| r.at_ns)
        .collect();
    assert_eq!(cpu3, vec![run_at - TICK]);
}

#[test]
fn a_mark_moves_its_own_cpus_timer_not_one_placed_ahead() {
    let mut ahead = RunsAhead::new(2);
    ahead.feed(&drain(0, 12 * S + 400 * MS, Task::CpuWorker));
    let mut v = Vmstat::new(2, HZ);
    v.align_ahead(&ahead);
    step(&mut v, 1, 10 * S, true);
    // CPU 1's worker shows at 10.600 s: CPU 1's timer moves onto it; CPU 0's stays.
    if let Some(run) = v.mark(1, 10 * S + 600 * MS) {
        v.ran(run, true);
    }
    let mut ran = Vec::new();
    for ms in 601..2500u64 {
        ran.extend(step(&mut v, 0, 10 * S + ms * MS, true));
        ran.extend(step(&mut v, 1, 10 * S + ms * MS, true));
    }
    let on = |cpu: u32| -> Vec<u64> {
        ran.iter()
            .filter(|r| r.cpu == cpu)
            .map(|r| r.at_ns)
            .collect()
    };
    // CPU 0 on its own second from the first event (10.396 s, idle then: at its expiry);
    // the one of its run ahead (12.396) waits for it, then runs when it has passed unseen.
    assert_eq!(on(0), vec![10_396 * MS, 11_396 * MS, 12_396 * MS]);
    assert_eq!(on(1), vec![11_596 * MS]);
}

#[test]
fn a_given_phase_wins_over_the_runs_ahead() {
    let mut ahead = RunsAhead::new(2);
    ahead.feed(&drain(1, 20 * S + 500 * MS, Task::CpuWorker));
    let mut v = Vmstat::new(2, HZ);
    v.set_phase(30 * S + 100 * MS);
    v.align_ahead(&ahead);
    let mut ran = Vec::new();
    for ms in 0..1500u64 {
        ran.extend(step(&mut v, 1, 10 * S + ms * MS, true));
    }
    let cpu1: Vec<u64> = ran.iter().filter(|r| r.cpu == 1).map(|r| r.at_ns).collect();
    // CPU 1: 3 jiffies before each x.100 boundary.
    assert_eq!(
        cpu1,
        vec![10 * S + 100 * MS - 3 * TICK, 11 * S + 100 * MS - 3 * TICK]
    );
}

#[test]
fn an_alignment_mid_trace_keeps_the_shepherd_and_idle_workers_in_time() {
    // The phase assumed at the first event (546.152 s, CPU 1 idle after it), then a
    // worker's run of CPU 0 at 551.795 s realigns it. Before, the shepherd's expiry stayed a
    // jiffy count of the old phase: on the new one it lay 545 s back, and it queued the idle
    // CPUs' workers at once, stamped 6.79 s, which then ran again a second later.
    let first = 546 * S + 152 * MS;
    let mut v = Vmstat::new(2, HZ);
    step(&mut v, 1, first, false);
    let mut ran = Vec::new();
    let mut t = first + MS;
    while t < 551 * S + 795 * MS {
        ran.extend(step(&mut v, 0, t, false));
        t += MS;
    }
    if let Some(run) = v.mark(0, 551 * S + 795 * MS) {
        v.ran(run, false);
    }
    step(&mut v, 1, 551 * S + 796 * MS, false);
    let mut after = Vec::new();
    let mut t = 551 * S + 797 * MS;
    while t < 554 * S {
        after.extend(step(&mut v, 0, t, false));
        t += MS;
    }
    assert!(
        ran.iter().chain(&after).all(|r| r.at_ns >= first),
        "{after:?}"
    );
    // CPU 1, idle but for the event at 551.796 s: the shepherd queues its worker on CPU
    // 0's second on the new phase (552.791), not at once; having folded, it runs once more
    // on its own second (3 jiffies earlier) and stops.
    let cpu1: Vec<u64> = after
        .iter()
        .filter(|r| r.cpu == 1)
        .map(|r| r.at_ns)
        .collect();
    let second = 553 * S + 795 * MS - TICK;
    assert_eq!(cpu1, vec![552 * S + 795 * MS - TICK, second - 3 * TICK]);
}

#[test]
fn a_run_ahead_wins_over_a_run_before_and_the_runs_before_give_way_at_the_first_mark() {
    // CPU 0's worker runs ahead at 778.2 s; CPUs 0 and 1 ran before the window (CPU 0's
    // run is not its phase: the one ahead is), CPUs 2 and 3 did not.
    let mut v = Vmstat::new(4, HZ);
    let mut ahead = RunsAhead::new(4);
    ahead.feed(&drain(0, 778_200_000_000, Task::CpuWorker));
    v.align_ahead(&ahead);
    v.set_runs_before(&[Some(700_500_000_000), Some(743_853_537_000), None, None]);
    // CPU 0 on its run ahead's phase (x.196), not its run before's (x.496).
    assert_eq!(v.work[0].phase_ns, Some(196_000_000));
    assert!(!v.work[0].before && v.work[1].before);
    let mut ran = Vec::new();
    for ms in 777_460..778_200u64 {
        ran.extend(step(&mut v, 1 + (ms % 3) as u32, ms * 1_000_000, true));
    }
    let of = |ran: &[Run], cpu: u32| -> Vec<u64> {
        let mine = ran.iter().filter(|r| r.cpu == cpu);
        mine.map(|r| r.at_ns).collect()
    };
    // CPU 1 on its run before: a tick before x.853537, not on the shared phase of CPU 0's
    // run ahead (boundary x.196, CPU 1 3 jiffies early: x.184).
    assert_eq!(of(&ran, 1), vec![777_849_537_000]);
    // CPUs 2 and 3 on the shared phase: 6 and 9 jiffies before x.196.
    assert_eq!(of(&ran, 2), vec![778_172_000_000]);
    assert_eq!(of(&ran, 3), vec![778_160_000_000]);
    // CPU 0 waits for its run ahead, the window's first mark.
    assert!(of(&ran, 0).is_empty());
    let run = v.mark(0, 778_200_000_000).expect("not run yet");
    v.ran(run, true);
    // CPU 1's own phase gave way: its next run on the shared one, at x.184.
    ran.clear();
    for ms in 778_201..779_300u64 {
        ran.extend(step(&mut v, 1 + (ms % 3) as u32, ms * 1_000_000, true));
    }
    assert_eq!(of(&ran, 1), vec![779_184_000_000]);
    assert!(v.work.iter().all(|w| !w.before));
}

#[test]
fn a_cpus_phase_ahead_is_read_from_its_run_earliest_in_its_second() {
    // 6.12-4g-loads p_fork: CPU 0's worker drains at 50.835198 s, late behind the fork
    // parent, then at 51.829215, earlier in its second: the phase is the second one's (its
    // CPU's second a tick before it), the first run still the one the timer waits for.
    let mut ahead = RunsAhead::new(2);
    ahead.feed(&drain(0, 50_835_198_000, Task::CpuWorker));
    ahead.feed(&drain(0, 50_835_300_000, Task::CpuWorker));
    let mut free = drain(0, 51 * S, Task::Other);
    free.kind = EventKind::Free { pfn: 1, order: 0 };
    ahead.feed(&free);
    ahead.feed(&drain(0, 51_829_215_000, Task::CpuWorker));
    let mut v = Vmstat::new(2, HZ);
    v.align_ahead(&ahead);
    assert_eq!(v.work[0].phase_ns, Some(825_215_000));
    assert_eq!(v.phase_ns, Some(825_215_000));
    assert_eq!(v.work[0].ahead_ns, Some(50_835_198_000));
}

#[test]
fn the_shared_phase_is_read_from_a_cpu_whose_worker_ran_again() {
    // 7.2-4g-wq p_thp, whole file: CPU 0's only run ahead, 105.429918, came 84 us after
    // `vmstat_shepherd` (105.429834) queued it, off CPU 0's own runs (106.422354,
    // 107.442027, ...); CPU 3's worker ran again, on its own second. The shared phase is
    // read from CPU 3 (the first in time, CPU 0, read it from the shepherd's run).
    let mut ahead = RunsAhead::new(4);
    ahead.feed(&drain(0, 105_429_959_000, Task::CpuWorker));
    let mut free = drain(3, 106 * S, Task::Other);
    free.kind = EventKind::Free { pfn: 1, order: 0 };
    ahead.feed(&drain(3, 105_951_101_000, Task::CpuWorker));
    ahead.feed(&free);
    ahead.feed(&drain(3, 106_951_000_000, Task::CpuWorker));
    let mut v = Vmstat::new(4, HZ);
    v.align_ahead(&ahead);
    assert_ne!(v.work[0].phase_ns, v.work[3].phase_ns);
    assert_eq!(v.phase_ns, v.work[3].phase_ns);
    assert_eq!(v.work[0].ahead_ns, Some(105_429_959_000));
}

/// The text of a `kworker/cpu:1`'s drain at `ts` (depth 2: the worker's run), or another
/// task's allocation.
fn line(task: &str, cpu: u32, ts: &str, what: &str) -> String {
    let ctx = if what.starts_with("mm_page_pcpu_drain") {
        "d..2."
    } else {
        "....."
    };
    format!("{task:>16} [{cpu:03}] {ctx} {ts}: {what}\n")
}

const DRAIN: &str = "mm_page_pcpu_drain: page=0xffffea0000b98000 pfn=0x2e600 order=0 migratetype=1";
const ALLOC: &str = "mm_page_alloc: page=0xffffea0000b98000 pfn=0x2e600 order=0 migratetype=1 \
                     gfp_flags=GFP_KERNEL";

#[test]
fn a_cpu_without_a_run_in_the_window_takes_its_runs_past_it() {
    // 6.12-4g p_thp: the window (10 to 11.5 s here) shows CPU 1's worker only; past it
    // CPU 0's runs at x.804 to x.816, one late at x.558, and CPU 1's (not read: the
    // window's).
    let mut ahead = RunsAhead::new(2);
    ahead.feed(&drain(1, 10 * S + 600 * MS, Task::CpuWorker));
    let mut tail = String::from("KT_SNAPSHOT_AFTER_BEGIN p_thp\n");
    tail += &line("kworker/1:1-59", 1, "11.900000", DRAIN);
    tail += "kworker/0:2-402 [000] ..... 11.950000: workqueue_execute_start: work struct \
             00000000c6de8d02: function vmstat_update\n";
    let at = [
        "12.804000",
        "13.558000",
        "14.812000",
        "15.804000",
        "16.808000",
        "17.804000",
        "18.816000",
    ];
    for (k, ts) in at.iter().enumerate() {
        tail += &line("kworker/0:2-402", 0, ts, DRAIN);
        tail += &line("kworker/0:2-402", 0, ts, DRAIN);
        tail += &line(&format!("cc1-{k}"), 0, ts, ALLOC);
    }
    ahead.feed_after(tail.as_bytes());
    assert_eq!(
        ahead.runs().collect::<Vec<_>>(),
        vec![(0, 12 * S + 804 * MS), (1, 10 * S + 600 * MS)]
    );
    // Whether the runs are traced is the window's to say.
    assert!(!ahead.traced());
    // CPU 0's runs from the first event on keep to its second (x.800, a tick before its
    // runs at x.804), not to CPU 1's, whose shared phase it took before.
    let mut v = Vmstat::new(2, HZ);
    v.align_ahead(&ahead);
    let mut ran = Vec::new();
    for ms in 0..1500u64 {
        ran.extend(step(&mut v, 0, 10 * S + ms * MS, true));
    }
    let cpu0: Vec<u64> = ran.iter().filter(|r| r.cpu == 0).map(|r| r.at_ns).collect();
    assert_eq!(cpu0, vec![10 * S + 800 * MS]);
}
