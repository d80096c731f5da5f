//! The vmstat workers' timers: `round_jiffies_relative`, busy and idle CPUs, the shepherd,
//! and the phase from the trace's worker runs or given.

use super::*;
use crate::trace::parse::EventKind;

pub(super) const HZ: u32 = 250;
pub(super) const TICK: u64 = 4_000_000;
pub(super) const S: u64 = 1_000_000_000;

/// Feeds an event on `cpu` at `t`, doing its due runs with `todo` as their decay's
/// answer; the runs done.
pub(super) fn step(v: &mut Vmstat, cpu: u32, t: u64, todo: bool) -> Vec<Run> {
    let mut runs = Vec::new();
    v.due(cpu, t, &mut runs);
    for &r in &runs {
        v.ran(r, todo);
    }
    v.event(cpu, t);
    runs
}

/// CPU `cpu`'s runs of `v` while it is busy (an event every ms) for `ms` ms from `from`.
pub(super) fn busy(v: &mut Vmstat, cpu: u32, from: u64, ms: u64) -> Vec<u64> {
    let mut at = Vec::new();
    for k in 0..ms {
        let runs = step(v, cpu, from + k * 1_000_000, true);
        at.extend(runs.iter().filter(|r| r.cpu == cpu).map(|r| r.at_ns));
    }
    at
}

/// `cpus` workers whose CPU `cpu` had an event at 10 s and its worker's run in the trace at
/// `t`, done.
fn with_mark(cpus: u32, cpu: u32, t: u64) -> Vmstat {
    let mut v = Vmstat::new(cpus, HZ);
    step(&mut v, cpu, 10 * S, true);
    let run = v.mark(cpu, t).expect("not run yet");
    v.ran(run, true);
    v
}

#[test]
fn round_jiffies_relative_lands_on_the_cpus_skewed_second() {
    // From a run at a CPU's boundary: the next one a second later, `3 * cpu` early.
    for cpu in 0..4u32 {
        let j0 = 10 * 250 - 3 * i64::from(cpu);
        assert_eq!(round_rel(j0, cpu, HZ), j0 + 250);
    }
    // Late by less than a quarter second: rounded down, back onto the rhythm.
    assert_eq!(round_rel(2500 + 61, 0, HZ), 2750);
    // Late by a quarter or more: rounded up to the boundary after.
    assert_eq!(round_rel(2500 + 62, 0, HZ), 3000);
    // CPU 2 from the shepherd's second (CPU 0's): onto its own, 6 jiffies early.
    assert_eq!(round_rel(2500, 2, HZ), 2744);
    // HZ 1: a quarter second is no jiffy, every expiry rounds up.
    assert_eq!(round_rel(7, 0, 1), 9);
}

#[test]
fn a_busy_cpu_runs_its_worker_on_its_own_second() {
    let mut v = Vmstat::new(4, HZ);
    let mut ran = Vec::new();
    // CPU 3 busy (an event every ms) for five seconds from t = 10 s (the assumed phase).
    for ms in 0..5000u64 {
        ran.extend(step(&mut v, 3, 10 * S + ms * 1_000_000, false));
    }
    let mine: Vec<u64> = ran.iter().filter(|r| r.cpu == 3).map(|r| r.at_ns).collect();
    // At 9 jiffies (36 ms) before each second from the phase: 10.964, 11.964, ...
    let want: Vec<u64> = (1..=5).map(|k| 10 * S + k * S - 9 * TICK).collect();
    assert_eq!(mine, want);
    assert!(ran.iter().all(|r| r.cpu != 3 || !r.woken));
}

#[test]
fn an_idle_cpu_runs_at_expiry_or_at_its_next_event() {
    for defer in [false, true] {
        let mut v = Vmstat::new(2, HZ);
        v.set_defer_to_event(defer);
        step(&mut v, 1, 10 * S, false);
        // CPU 1 idle for 5 s; CPU 0 busy (an event every 10 ms).
        let mut ran = Vec::new();
        for k in 1..500u64 {
            ran.extend(step(&mut v, 0, 10 * S + k * 10_000_000, true));
        }
        let cpu1 = |ran: &[Run]| ran.iter().filter(|r| r.cpu == 1).count();
        // Decay has more to do (todo): at expiry, every second; deferred, none yet.
        assert_eq!(cpu1(&ran), if defer { 0 } else { 5 }, "defer {defer}");
        assert!(ran.iter().filter(|r| r.cpu == 1).all(|r| r.woken));
        // CPU 1 wakes: a deferred worker runs now, once, woken.
        let woke = step(&mut v, 1, 15 * S + 500_000, true);
        let at = woke.iter().filter(|r| r.cpu == 1).count();
        assert_eq!(at, usize::from(defer), "defer {defer}");
    }
}

#[test]
fn a_stopped_worker_is_requeued_by_the_shepherd_when_its_counters_move() {
    let mut v = Vmstat::new(2, HZ);
    step(&mut v, 1, 10 * S, false);
    // CPU 1's first run: nothing moved on it since (woken, no todo): it stops. CPU 0 is
    // awake (an event every ms) for the shepherd's runs.
    let mut ran = Vec::new();
    for k in 1..3500u64 {
        ran.extend(step(&mut v, 0, 10 * S + k * 1_000_000, false));
    }
    assert_eq!(ran.iter().filter(|r| r.cpu == 1).count(), 1);
    // An event on CPU 1 at 13.5 s: `need_update`; the shepherd (CPU 0's second, 14 s)
    // queues it with no delay, then it runs on its own second (3 jiffies early).
    step(&mut v, 1, 13 * S + S / 2, false);
    let mut ran = Vec::new();
    for k in 0..1990u64 {
        let t = 13 * S + S / 2 + 1_000_000 + k * 1_000_000;
        ran.extend(step(&mut v, 1, t, true));
    }
    let cpu1: Vec<u64> = ran.iter().filter(|r| r.cpu == 1).map(|r| r.at_ns).collect();
    assert_eq!(cpu1, vec![14 * S, 15 * S - 3 * TICK]);
}

#[test]
fn a_shepherd_that_expired_on_an_idle_machine_runs_at_the_wake_and_rearms_a_second_on() {
    let mut v = Vmstat::new(2, HZ);
    step(&mut v, 1, 10 * S, false);
    // CPU 1's worker stops (nothing moved); CPU 0 busy to 13.5 s, then every CPU idle.
    for k in 1..3500u64 {
        step(&mut v, 0, 10 * S + k * 1_000_000, false);
    }
    // CPU 1 wakes at 20.1 s and its counters move (a refill): the shepherd, expired at
    // 14 s while no CPU was awake, runs now and re-arms for 21 s; CPU 1's worker waits for
    // it (the old rule re-armed it for the next jiffy and ran the worker at 20.104 s).
    let mut ran = Vec::new();
    for k in 0..1000u64 {
        ran.extend(step(&mut v, 1, 20 * S + S / 10 + k * 1_000_000, true));
    }
    let cpu1: Vec<u64> = ran.iter().filter(|r| r.cpu == 1).map(|r| r.at_ns).collect();
    assert_eq!(cpu1.first(), Some(&(21 * S)), "{cpu1:?}");
}

#[test]
fn a_workers_run_in_the_trace_sets_the_phase_and_is_not_run_twice() {
    let mut v = Vmstat::new(4, HZ);
    step(&mut v, 2, 10 * S, true);
    // The trace shows CPU 2's worker at 10.5 s: CPU 2's second ends 1 tick before it.
    let run = v.mark(2, 10 * S + S / 2).expect("not run yet");
    v.ran(run, true);
    assert!(v.aligned());
    // Its next run: a second later, on the new phase.
    let mut ran = Vec::new();
    for ms in 1..1100u64 {
        ran.extend(step(&mut v, 2, 10 * S + S / 2 + ms * 1_000_000, true));
    }
    let cpu2: Vec<u64> = ran.iter().filter(|r| r.cpu == 2).map(|r| r.at_ns).collect();
    assert_eq!(cpu2, vec![11 * S + S / 2 - TICK]);
    // A mark in the same second as that run: the simulation ran it already.
    assert_eq!(v.mark(2, 11 * S + S / 2), None);
    assert_eq!(v.marks_ran_already, 1);
}

#[test]
fn a_mark_after_a_run_that_stopped_the_worker_is_the_shepherds_run() {
    // CPU 2's worker on its second (10.496 s), from the trace's run at 10.5 s.
    let mut v = with_mark(4, 2, 10 * S + S / 2);
    // CPU 2 idle, CPU 0 busy: CPU 2's run at 11.496 s, woken, has nothing to do and stops.
    let mut ran = Vec::new();
    for ms in 1..1200u64 {
        ran.extend(step(&mut v, 0, 10 * S + S / 2 + ms * 1_000_000, false));
    }
    let cpu2: Vec<Run> = ran.into_iter().filter(|r| r.cpu == 2).collect();
    assert_eq!(cpu2.len(), 1);
    assert_eq!(cpu2[0].at_ns, 11 * S + S / 2 - TICK);
    // The trace shows it again at 11.7 s, in the same second: a second run (the
    // shepherd's), done now; the old rule took it as the run done already.
    let run = v.mark(2, 11 * S + 700_000_000).expect("a second run");
    assert_eq!(run.at_ns, 11 * S + 700_000_000);
    assert_eq!(v.marks_ran_already, 0);
    v.ran(run, true);
    // It re-queues onto CPU 2's own second, which the shepherd's time does not move.
    let mut ran = Vec::new();
    for ms in 701..1900u64 {
        ran.extend(step(&mut v, 2, 11 * S + ms * 1_000_000, true));
    }
    let cpu2: Vec<u64> = ran.iter().filter(|r| r.cpu == 2).map(|r| r.at_ns).collect();
    assert_eq!(cpu2, vec![12 * S + S / 2 - TICK]);
}

#[test]
fn each_cpus_runs_in_the_trace_place_its_own_timer() {
    // 6.12-4g p_idle: CPU 1's worker drained first (565.042 s), CPU 0's at x.825 s.
    let mut v = with_mark(4, 1, 10 * S + 42_000_000);
    let mut ran = Vec::new();
    let busy = |v: &mut Vmstat, ran: &mut Vec<Run>, from: u64, to: u64| {
        for ms in from..to {
            ran.extend(step(v, 0, ms * 1_000_000, true));
        }
    };
    busy(&mut v, &mut ran, 10_043, 11_825);
    // On the shared phase CPU 0's worker ran at 11.050 s; the trace shows it at 11.825.
    if let Some(run) = v.mark(0, 11 * S + 825_000_000) {
        v.ran(run, true);
    }
    ran.clear();
    busy(&mut v, &mut ran, 11_826, 13_900);
    let cpu0: Vec<u64> = ran.iter().filter(|r| r.cpu == 0).map(|r| r.at_ns).collect();
    // A tick before x.825 each second after it, not at x.050 (the shared phase).
    assert_eq!(cpu0, vec![12_821_000_000, 13_821_000_000]);
    // CPU 1 keeps the phase its own run gave: a tick before x.042.
    let cpu1: Vec<u64> = ran.iter().filter(|r| r.cpu == 1).map(|r| r.at_ns).collect();
    assert_eq!(cpu1, vec![12_038_000_000, 13_038_000_000]);
}

#[test]
fn runs_before_the_window_place_their_cpus_timers_until_the_first_mark() {
    // 6.12-4g p_pressure: CPU 2's worker last ran at 768.783412 before the window, CPU 1's
    // at 743.853537; CPUs 0 and 3 show none. The window opens at 777.46 s.
    let mut v = Vmstat::new(4, HZ);
    v.set_runs_before(&[None, Some(743_853_537_000), Some(768_783_412_000), None]);
    assert!(v.aligned());
    let mut ran = Vec::new();
    for ms in 777_460..779_500u64 {
        ran.extend(step(&mut v, (ms % 4) as u32, ms * 1_000_000, true));
    }
    let of = |cpu: u32| -> Vec<u64> {
        let mine = ran.iter().filter(|r| r.cpu == cpu);
        mine.map(|r| r.at_ns).collect()
    };
    // CPU 2 a tick before x.783412 each second, CPU 1 a tick before x.853537.
    assert_eq!(of(2), vec![777_779_412_000, 778_779_412_000]);
    assert_eq!(of(1), vec![777_849_537_000, 778_849_537_000]);
    // CPUs 0 and 3 on the phase assumed at the first event, 0 and 9 jiffies early.
    assert_eq!(of(0), vec![778_460_000_000, 779_460_000_000]);
    assert_eq!(of(3), vec![778_424_000_000, 779_424_000_000]);
    // The window's first mark places every CPU's timer on its second, as before.
    v.mark(3, 779_600_000_000);
    assert_eq!(v.phase_ns, Some(v.work[3].phase_ns.unwrap()));
    assert!(v.work[1].phase_ns.is_none() && v.work[2].phase_ns.is_none());
    // A given phase wins; no run places nothing.
    let mut v = Vmstat::new(2, HZ);
    v.set_phase(500_000_000);
    v.set_runs_before(&[Some(10_123_000_000), None]);
    assert!(v.work.iter().all(|w| w.phase_ns.is_none()));
    let mut v = Vmstat::new(2, HZ);
    v.set_runs_before(&[None, None]);
    assert!(!v.aligned());
}

#[test]
fn times_at_the_end_of_u64_neither_panic_nor_run_every_event() {
    let mut v = Vmstat::new(2, HZ);
    let mut n = 0;
    for k in 0..1000u64 {
        n += step(&mut v, (k % 2) as u32, u64::MAX - 1000 + k, true).len();
    }
    assert!(n <= 4, "{n} runs in a microsecond");
    // A jump of centuries: each CPU's worker runs once, not once per second passed.
    let mut v = Vmstat::new(2, HZ);
    step(&mut v, 0, 0, true);
    assert!(step(&mut v, 0, u64::MAX / 2, true).len() <= 2);
}

#[test]
fn a_given_phase_places_every_cpus_second_and_a_mark_does_not_move_it() {
    let mut v = Vmstat::new(4, HZ);
    // A jiffies-second boundary at x.171788 (CPU 2's worker drained at 22.151788).
    v.set_phase(22_171_788_000);
    let mut ran = Vec::new();
    for ms in 0..2000u64 {
        ran.extend(step(&mut v, 2, 7 * S + 500_000_000 + ms * 1_000_000, true));
    }
    let cpu2: Vec<u64> = ran.iter().filter(|r| r.cpu == 2).map(|r| r.at_ns).collect();
    // CPU 2: 6 jiffies (24 ms) before each boundary: 8.147788, 9.147788.
    assert_eq!(cpu2, vec![8_147_788_000, 9_147_788_000]);
    assert!(v.aligned());
    // A run the trace shows in that second: the simulation's, already done; no realign.
    assert_eq!(v.mark(2, 9 * S + 600_000_000), None);
    assert_eq!(v.phase_ns, Some(171_788_000));
}

#[test]
fn a_busy_cpus_late_run_keeps_its_rhythm() {
    // 7.2-8g p_thp: `od` holds CPU 2; its worker runs a tick after x.760 when it can, later
    // when the kworker waits for the CPU (785.780, then 786.774). The run the simulation
    // did at the boundary is the one the trace shows late.
    let mut v = with_mark(4, 2, 10 * S + 764_000_000);
    let busy = |v: &mut Vmstat, from_ms: u64, to_ms: u64| -> Vec<u64> {
        let mut ran = Vec::new();
        for ms in from_ms..to_ms {
            ran.extend(step(v, 2, ms * 1_000_000, true));
        }
        ran.iter().filter(|r| r.cpu == 2).map(|r| r.at_ns).collect()
    };
    assert_eq!(busy(&mut v, 10_765, 11_780), vec![11_760_000_000]);
    // The kworker 20 ms late: the simulation's run of that second, done at x.760.
    assert_eq!(v.mark(2, 11 * S + 780_000_000), None);
    // The next runs on the old rhythm (`round_jiffies_relative` rounds the late run down),
    // not a tick before x.780, which put the kernel's next run (x.774) in the second of the
    // late one, taken as done: one decay fewer.
    assert_eq!(
        busy(&mut v, 11_781, 13_770),
        vec![12_760_000_000, 13_760_000_000]
    );
    assert_eq!(v.mark(2, 13 * S + 774_000_000), None);
    // CPU 2 shows nothing from 13.77 s: its timer expired at 14.76 while it was idle, and
    // the run at 15.06 is that one, when it woke (`Vmstat::came_late`): it runs, and the
    // phase stays on x.760 (it moved to the run before, 0.3 s later).
    assert!(v.mark(2, 15 * S + 60_000_000).is_some());
    assert_eq!(v.work[2].phase_ns, Some(784_000_000));
}

#[test]
fn a_traced_run_at_an_idle_cpus_wake_reads_the_event_before_its_own() {
    // 6.12-4g-6cpu p_pressure: CPU 3 (second near x.765) shows nothing from 678.145022 s
    // until `kworker/3:1` drains at 679.110108, at its wake: its timer expired at 678.765
    // while it slept. The replay feeds the run's own drain line (`Vmstat::event_of`) before
    // the mark: taken as the CPU's last event, the CPU was never idle, and the phase moved
    // to x.106 (the kernel's stays near x.765).
    let mut v = with_mark(4, 3, 10 * S + 768_000_000);
    let phase = v.work[3].phase_ns;
    busy(&mut v, 3, 10 * S + 769_000_000, 376);
    // The run held to its line (`Vmstat::hold_woken`): the line's event, then the mark.
    v.event(3, 12 * S + 110_000_000);
    assert!(v.mark(3, 12 * S + 110_000_000).is_some());
    assert_eq!(v.work[3].phase_ns, phase);
}

#[test]
fn a_stopped_workers_run_is_the_shepherds_off_the_cpus_second() {
    // 7.2-8g p_pressure: CPU 1 (second near x.780: runs at 1508.802 and 1509.784) idles
    // from 1540.16 s, its worker stopped; `kmem-phases` wakes it at 1572.766, and
    // `kworker/1:1` drains at 1573.022258, queued by the shepherd (`vmstat_shepherd`). Read
    // as the CPU's second, the phase moved to x.030 and stayed there (its next run at
    // 1585.861 came at a wake).
    let mut v = with_mark(4, 1, 10 * S + 784_000_000);
    let phase = v.work[1].phase_ns;
    // Nothing moved since the run: the next one, at the CPU's wake, stops the worker.
    let runs = step(&mut v, 1, 11 * S + 790_000_000, false);
    assert_eq!(runs.iter().filter(|r| r.cpu == 1).count(), 1);
    assert!(!v.work[1].pending);
    // A quarter second past the CPU's second and more (`late_on`: 1573.022258 read
    // 0.25004 s past x.780218).
    step(&mut v, 1, 13 * S + 60_000_000, true);
    assert!(v.mark(1, 13 * S + 60_000_000).is_some());
    assert_eq!(v.work[1].phase_ns, phase);
}

/// Two workers, late runs on or off, the phase given (`Some(0)`) or assumed, CPU 1's first
/// event at 10 s.
fn late_workers(late: bool, phase: Option<u64>) -> Vmstat {
    let mut v = Vmstat::new(2, HZ);
    v.set_late_runs(late);
    if let Some(p) = phase {
        v.set_phase(p);
    }
    step(&mut v, 1, 10 * S, true);
    v
}

/// CPU 1 busy, an event each millisecond `ms` after 10 s: the times of its worker's runs.
fn busy_runs(v: &mut Vmstat, ms: std::ops::Range<u64>) -> Vec<u64> {
    let mut ran = Vec::new();
    for ms in ms {
        ran.extend(step(v, 1, 10 * S + ms * 1_000_000, true));
    }
    ran.iter().filter(|r| r.cpu == 1).map(|r| r.at_ns).collect()
}

#[test]
fn a_busy_cpus_worker_waits_for_its_task_to_leave_the_cpu() {
    // 7.2-8g p_prodcons: CPU 1's worker expires at 253.766 s while `kmem-phases` unmaps,
    // freeing every millisecond or two; the kernel's frees drain at `high` 3344 until
    // 253.779 s, at 3281 (the decayed one) from 253.789 s. Run at the expiry, ours drained
    // 130 Unmovable pages the kernel kept. CPU 1 busy from 10.9 s, its worker expiring at
    // 10.988 s (3 ticks early), then a pause from 11.099 s.
    for late in [false, true] {
        let mut v = late_workers(late, None);
        let mut cpu1 = busy_runs(&mut v, 900..1100);
        cpu1.extend(busy_runs(&mut v, 1110..1111));
        // Waiting for the CPU, its work stays pending: the shepherd (at 11.0 s) does not
        // queue it again. It runs a tick after the task's last event before the pause.
        let want = if late {
            11 * S + 99_000_000 + TICK
        } else {
            11 * S - 3 * TICK
        };
        assert_eq!(cpu1, vec![want], "late runs {late}");
    }
}

#[test]
fn a_late_worker_runs_at_its_mark_or_before_its_next_second() {
    let expiry = 11 * S - 3 * TICK;
    for late in [false, true] {
        // The phase given: the mark below does not move it.
        let mut v = late_workers(late, Some(0));
        // Busy with no pause for half a second past the expiry (10.988 s): the late run
        // waits (a quarter second was the old bound).
        let cpu1 = busy_runs(&mut v, 900..1490);
        let want = if late { vec![] } else { vec![expiry] };
        assert_eq!(cpu1, want, "late runs {late}");
        // The trace shows the kworker's run at 11.5 s: the late one runs there; at the
        // expiry, it had run.
        assert_eq!(v.mark(1, 11 * S + S / 2).is_some(), late);
    }
    // Busy with no pause and no mark: the late run comes at the last tick before its next
    // second, and its re-queue rounds onto that second (11.988 s).
    let mut v = late_workers(true, Some(0));
    let cpu1 = busy_runs(&mut v, 900..2000);
    assert_eq!(cpu1, vec![expiry + (u64::from(HZ) - 1) * TICK]);
    assert_eq!(v.work[1].expires, 3247);
}

#[test]
fn a_run_ends_its_workers_late_wait() {
    // 6.12-4g p_pressure, CPU 1 (second near x.7776 for its timer): expired late at
    // 901.7776, then run at `kworker/1:1`'s drain at 901.808477 (a run held to the CPU's
    // wake), still flagged late: its limit from 901.7776 ran it again at 902.773649, a tick
    // before its new expiry, and the trace's run at 902.793369 decayed `high` once more.
    // CPU 1 busy from 10.9 s, its worker late from its expiry at 10.988 s; a run at 11.05 s
    // re-queues it onto 11.988 s, where it is late again, waiting for the task's pause.
    let mut v = late_workers(true, Some(0));
    assert!(busy_runs(&mut v, 900..1050).is_empty());
    assert!(v.work[1].late);
    let run = Run {
        cpu: 1,
        at_ns: 11 * S + 50_000_000,
        woken: false,
        paused: false,
    };
    v.ran(run, true);
    assert_eq!(busy_runs(&mut v, 1051..2000), Vec::<u64>::new());
}

#[test]
fn a_late_run_held_back_at_a_pause_is_not_due_again_until_the_cpu_moves() {
    let mut v = late_workers(true, Some(0));
    assert!(busy_runs(&mut v, 900..1100).is_empty());
    // CPU 0's event after CPU 1's pause: the run at the pause, which the replay holds back.
    let mut runs = Vec::new();
    v.due(0, 11 * S + 200_000_000, &mut runs);
    assert_eq!(runs.len(), 1);
    assert!(runs[0].paused);
    v.still_late(runs[0]);
    // Other CPUs' events do not ask again (the old rule did at each).
    assert!(!v.is_due(0, 11 * S + 300_000_000));
    // CPU 1's next event and pause do.
    v.event(1, 11 * S + 400_000_000);
    assert!(v.is_due(0, 11 * S + 500_000_000));
}

#[test]
fn a_woken_run_that_its_cpus_task_came_before_requeues() {
    // 7.2-4g-2node p_prodcons, CPU 1: idle, its worker's deferrable timer expires; `od`
    // allocates on it within a tick after. The kworker ran after `od` (the CPU woke for
    // it), folded its counters and re-queued itself: `vmstat_shepherd` does not queue it.
    for (after, own) in [(TICK / 2, true), (3 * TICK, false)] {
        let mut v = with_mark(2, 1, 10 * S + S / 2);
        // CPU 1 idle, CPU 0 busy: CPU 1's run at 11.496 s, woken, nothing to do.
        let mut ran = busy_cpu0(&mut v, 10_501, 11_497);
        assert_eq!(ran.len(), 1, "{ran:?}");
        assert!(ran[0].woken);
        let first = ran[0].at_ns;
        step(&mut v, 1, first + after, false);
        ran = busy_cpu0(&mut v, 11_497, 12_600);
        let at: Vec<u64> = ran.iter().map(|r| r.at_ns).collect();
        // Re-queued: on CPU 1's own second; stopped: the shepherd's, on CPU 0's second
        // (3 jiffies later).
        let want = first + S + if own { 0 } else { 3 * TICK };
        assert_eq!(at, vec![want], "after {after} ns");
    }
}

/// Feeds events on CPU 0 every ms over `[from, to)` ms; CPU 1's runs.
fn busy_cpu0(v: &mut Vmstat, from: u64, to: u64) -> Vec<Run> {
    let mut ran = Vec::new();
    for ms in from..to {
        ran.extend(step(v, 0, ms * 1_000_000, false));
    }
    ran.retain(|r| r.cpu == 1);
    ran
}

/// [`step`] for an event of `kind`: its due runs done (nothing to decay), then
/// [`Vmstat::event_of`].
fn step_of(v: &mut Vmstat, cpu: u32, t: u64, kind: &EventKind<'_>) -> Vec<Run> {
    let mut runs = Vec::new();
    v.due(cpu, t, &mut runs);
    for &r in &runs {
        v.ran(r, false);
    }
    v.event_of(cpu, t, kind);
    runs
}

#[test]
fn a_stopped_worker_stays_stopped_while_its_cpu_moves_only_pipe_pages() {
    // 7.2-4g-wq p_thp, CPU 1: `od-647` writes the layout's text into a pipe every 100 ms
    // from 182.62 to 194.66 s and no `vmstat_update` runs there; after a refill or a drain
    // the CPU's next run comes within 2.2 s.
    let pipe = |pfn| EventKind::Alloc {
        pfn,
        order: 0,
        migratetype: 0,
        gfp_flags: "GFP_HIGHUSER|__GFP_ACCOUNT",
    };
    let refill = EventKind::ZoneLocked {
        pfn: 0x9000,
        order: 0,
        migratetype: 0,
        percpu_refill: true,
    };
    let mut v = Vmstat::new(2, HZ);
    step(&mut v, 1, 10 * S, false);
    // CPU 1's first run stops it (woken, nothing to do); then, every 100 ms to 16.5 s, a
    // pipe page allocated on it and freed, and CPU 0 awake for the shepherd.
    let mut ran = Vec::new();
    for k in 1..=6500u64 {
        let t = 10 * S + k * 1_000_000;
        ran.extend(step(&mut v, 0, t, false));
        if k % 100 == 0 {
            let pfn = 0x8000 + k;
            ran.extend(step_of(&mut v, 1, t + 1000, &pipe(pfn)));
            let free = EventKind::Free { pfn, order: 0 };
            ran.extend(step_of(&mut v, 1, t + 2000, &free));
        }
    }
    assert_eq!(ran.iter().filter(|r| r.cpu == 1).count(), 1, "{ran:?}");
    // A refill moves `NR_FREE_PAGES`: the shepherd (CPU 0's second, 17 s) queues it.
    let mut ran = step_of(&mut v, 1, 16 * S + S / 2 + 1000, &refill);
    for k in 2..=600u64 {
        ran.extend(step(&mut v, 0, 16 * S + S / 2 + k * 1_000_000, false));
    }
    let cpu1: Vec<u64> = ran.iter().filter(|r| r.cpu == 1).map(|r| r.at_ns).collect();
    assert_eq!(cpu1, vec![17 * S]);
}
