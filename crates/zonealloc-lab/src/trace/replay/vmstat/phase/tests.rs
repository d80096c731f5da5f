//! A CPU's phase from its worker's runs in the trace: a late first run followed by an
//! on-time one, a woken CPU's run, a run ours did already.

use super::super::tests::{busy, step, HZ, S};
use super::*;

const MS: u64 = 1_000_000;

#[test]
fn an_on_time_run_after_a_late_first_run_is_the_next_seconds() {
    // 6.12-4g-loads p_fork: `kworker/0` drains at 50.835198 s, late (the fork parent held
    // the CPU), then at 51.829215, on time and earlier in its second. Read from the first,
    // the second fell before CPU 0's second and was taken as the run it had done already.
    // The same with the first run 16 ms later still.
    let cases = [false, true].map(|w| [(w, 50_835_198_000), (w, 50_851_198_000)]);
    for (wheel, first_at) in cases.into_iter().flatten() {
        let mut v = Vmstat::new(4, HZ);
        v.set_timer_wheel(wheel);
        step(&mut v, 0, 50 * S, false);
        let first = v.mark(0, first_at).expect("the first run");
        v.ran(first, true);
        // CPU 0 busy until just before the trace's next run: ours does not come first.
        assert_eq!(busy(&mut v, 0, 50_852 * MS, 975), Vec::<u64>::new());
        let second = v.mark(0, 51_829_215_000);
        assert_eq!(
            second.map(|r| r.at_ns),
            Some(51_829_215_000),
            "{wheel} {first_at}"
        );
        assert_eq!(v.marks_ran_already, 0);
    }
}

#[test]
fn a_woken_cpus_run_keeps_its_cpus_second() {
    // 6.12-4g-loads p_file: CPU 3's worker runs on its second (x.79); every CPU is idle
    // from 146.746 s until `kworker/3:1` drains at 147.517265, when CPU 3 wakes.
    for wheel in [false, true] {
        let mut v = Vmstat::new(4, HZ);
        v.set_timer_wheel(wheel);
        step(&mut v, 3, 130 * S, false);
        let run = v.mark(3, 131_792_907_000).expect("its run");
        v.ran(run, true);
        busy(&mut v, 3, 131_800 * MS, 14_946);
        // The wake: our timer expired while the CPU was idle, and runs first; the trace's
        // is that second's.
        let wake = 147_517_265_000;
        let mut runs = Vec::new();
        v.due(3, wake, &mut runs);
        for &r in &runs {
            v.ran(r, true);
        }
        assert!(v.mark(3, wake).is_none());
        v.event(3, wake);
        // The next run keeps to x.79 (plus the bucket's jiffies), not x.51; the trace's run
        // re-queued past 147.79 (`round_jiffies_relative`): the kernel's next is 148.789.
        let next = busy(&mut v, 3, wake + MS, 1500);
        let off = next[0] - 148 * S;
        assert!((780 * MS..820 * MS).contains(&off), "{wheel} {next:?}");
    }
}

#[test]
fn a_run_ours_did_already_requeues_from_the_traces_run() {
    // 6.12-4g p_thp: CPU 0's worker keeps to x.82 and, its CPU idle, runs when it wakes:
    // `kworker/0` drains at 334.989 and 336.080 s, then 338.354. The run at 336.080,
    // a quarter second past its second, re-queues past 336.82 to 337.82.
    for wheel in [false, true] {
        let mut v = Vmstat::new(4, HZ);
        v.set_timer_wheel(wheel);
        step(&mut v, 0, 330 * S, false);
        let first = v.mark(0, 330_823_455_000).expect("the first run");
        v.ran(first, true);
        // CPU 1 busy, CPU 0 idle: ours runs CPU 0's worker at its expiry each second.
        let cpu0 = |v: &mut Vmstat, from: u64, to: u64| {
            let mut at = Vec::new();
            for t in (from..to).step_by(10_000_000) {
                let runs = step(v, 1, t, true);
                at.extend(runs.iter().filter(|r| r.cpu == 0).map(|r| r.at_ns));
            }
            at
        };
        let before = cpu0(&mut v, 330_830 * MS, 336_070 * MS);
        assert!(
            before.last().is_some_and(|&t| t > 335_800 * MS),
            "{before:?}"
        );
        assert!(
            v.mark(0, 336_079_788_000).is_none(),
            "ours ran at {before:?}"
        );
        let after = cpu0(&mut v, 336_080 * MS, 338_000 * MS);
        assert_eq!(after.len(), 1, "{wheel} {after:?}");
        assert!(after[0] > 337_800 * MS, "{wheel} {after:?}");
        // 6.12-4g p_idle: a run 62.1 jiffies past its second may be 61 past (the phase is
        // read to within a tick): it rounds down, and CPU 0 runs the next second as ever.
        let w = v.work[0];
        let second = ns_of_at(w.phase_ns.or(v.phase_ns), HZ, w.expires);
        let before = cpu0(&mut v, 338_000 * MS, 339_060 * MS);
        let late = second + 248 * MS;
        assert!(v.mark(0, late).is_none(), "ours ran at {before:?}");
        let after = cpu0(&mut v, late + MS, 340_000 * MS);
        assert_eq!(after.len(), 1, "{wheel} {after:?}");
        assert!(after[0] < 339_900 * MS, "{wheel} {after:?}");
    }
}
