//! The schedule against the runs the workers do.

use super::super::Run;
use super::*;
use crate::trace::parse::{lines, Parser};
use crate::trace::replay::infer::worker_runs::Step;

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

/// What the set-up reads ahead of a trace whose only lines are worker drains on each
/// `(cpu, time)` of `runs`.
fn ahead_of(cpus: u32, runs: &[(u32, u64)]) -> RunsAhead {
    let mut ahead = RunsAhead::new(cpus);
    let mut parser = Parser::new();
    for &(cpu, t) in runs {
        let (s, us) = (t / S, t % S / 1000);
        let text = format!(
            "  kworker/{cpu}:1-73 [{cpu:03}] d..2. {s}.{us:06}: mm_page_pcpu_drain: \
             page=(____ptrval____) pfn=0x1000 order=0 migratetype=1\n"
        );
        for line in lines(text.as_bytes()) {
            if let Some(ev) = parser.feed(line) {
                ahead.feed(&ev);
            }
        }
    }
    ahead
}

/// Each CPU's events from `first` to `end`: every 10 ms, but CPU 1's every 3 ms (busy: its
/// late runs wait for a pause) but for a pause of 6 ms in each 100 ms from x.x40 on, and
/// CPU 3's none from 3.0 to 4.5 s (idle).
fn events(cpus: u32, (first, end): (u64, u64)) -> Vec<(u64, u32)> {
    let mut evs = Vec::new();
    for cpu in 0..cpus {
        let mut t = first;
        while t <= end {
            let idle = cpu == 3 && (3 * S..4 * S + 500 * MS).contains(&t);
            if !idle {
                evs.push((t, cpu));
            }
            t += match cpu {
                1 if t % (100 * MS) >= 40 * MS && t % (100 * MS) < 43 * MS => 6 * MS,
                1 => 3 * MS,
                _ => 10 * MS,
            };
        }
    }
    evs.sort();
    evs
}

/// Drives `vm` as the replay does over `evs` (time order), the trace's runs `marks` among
/// them (`Vmstat::mark`): each CPU's runs' times.
fn drive(vm: &mut Vmstat, cpus: u32, evs: &[(u64, u32)], marks: &[(u32, u64)]) -> Vec<Vec<u64>> {
    let mut done = vec![Vec::new(); cpus as usize];
    let mut runs: Vec<Run> = Vec::new();
    let mut all: Vec<(u64, u32, bool)> = evs.iter().map(|&(t, c)| (t, c, false)).collect();
    all.extend(marks.iter().map(|&(c, t)| (t, c, true)));
    all.sort();
    for (t, cpu, mark) in all {
        vm.due(cpu, t, &mut runs);
        while !runs.is_empty() {
            for &r in &runs {
                vm.ran(r, true);
                done[r.cpu as usize].push(r.at_ns);
            }
            vm.due_again(cpu, t, &mut runs);
        }
        if mark {
            if let Some(r) = vm.mark(cpu, t) {
                vm.ran(r, true);
                done[cpu as usize].push(r.at_ns);
            }
        }
        vm.event(cpu, t);
    }
    done
}

/// The schedule's count of each CPU's runs is the workers' at every 7 ms of the stretch:
/// the phase at the first event, from a run ahead (its first run waits for it), given, on
/// the timer wheel; late runs at a busy CPU's pauses, or at their timers.
#[test]
fn the_schedule_counts_the_runs_the_workers_do() {
    let (first, end) = (S + 623 * MS, 12 * S);
    let marks = [(1, 9 * S + 300 * MS), (2, 3 * S + 950 * MS)];
    let cases = [
        (false, None, &[][..]),
        (false, None, &marks[..]),
        (true, None, &marks[..]),
        (false, Some(417 * MS), &[][..]),
        (true, Some(417 * MS), &[][..]),
    ];
    let evs = events(4, (first, end));
    let mut pauses = vec![Pauses::new(4 * MS); 4];
    for &(t, c) in &evs {
        pauses[c as usize].event(t, Step::Other);
    }
    for ((wheel, phase, marks), late) in cases.iter().flat_map(|c| [(c, false), (c, true)]) {
        let ahead = ahead_of(4, marks);
        let vm = Vmstat::placed(4, 250, (*wheel, *phase, late), &ahead, false);
        let schedule = vm.schedule(first);
        let done = drive(&mut vm.clone(), 4, &evs, marks);
        for cpu in 0..4u32 {
            let p = Some(&pauses[cpu as usize]);
            assert!(done[cpu as usize].len() >= 9, "{wheel} {phase:?} {cpu}");
            for t in (first..end).step_by(3 * MS as usize) {
                let did = done[cpu as usize].iter().filter(|&&r| r <= t).count();
                let case = format!("{wheel} {phase:?} {late} {marks:?} cpu {cpu} at {t}");
                assert_eq!(schedule.runs_through(cpu, t, p) as usize, did, "{case}");
            }
        }
        // Busy CPU 1's late runs come off their timers.
        let p = Some(&pauses[1]);
        let mut ts = (first..end).step_by(MS as usize);
        let off = ts.any(|t| schedule.runs_through(1, t, p) != schedule.runs_through(1, t, None));
        assert_eq!(off, late, "{wheel} {phase:?}");
    }
    // The trace's `vmstat_update` lines are the runs: none timed.
    let traced = Vmstat::placed(4, 250, (false, None, true), &ahead_of(4, &[]), true);
    assert_eq!(traced.schedule(first).runs_through(1, end, None), 0);
}

/// 7.2-4g-6cpu p_thp, CPU 1: the file starts at 127.623 s and the worker's runs fall at
/// x.81; four come before the free that drained at 131.043609 (one a second from the
/// file's start: three).
#[test]
fn a_cpus_runs_keep_to_its_own_second_from_the_files_start() {
    let ahead = ahead_of(6, &[(1, 144 * S + 819_174_000)]);
    let vm = Vmstat::placed(6, 250, (false, None, true), &ahead, false);
    let schedule = vm.schedule(127 * S + 623_012_000);
    assert_eq!(schedule.runs_through(1, 131 * S + 43_609_000, None), 4);
    assert_eq!(schedule.runs_through(1, 127 * S + 800_000_000, None), 0);
    // The trace's run at 144.819174 is that event: after the commits before it.
    let (before, through) = schedule.runs_around(1, 144 * S + 819_174_000, None);
    assert_eq!((before, through), (17, 18));
    // CPU 0, without a run ahead, keeps the shared phase (CPU 1's second, 3 jiffies on).
    assert_eq!(schedule.runs_through(0, 127 * S + 830_000_000, None), 1);
}
