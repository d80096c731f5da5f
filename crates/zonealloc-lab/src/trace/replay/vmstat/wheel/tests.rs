//! The timer wheel: buckets (`calc_wheel_index`, `calc_index`), the phase a run shows, and
//! the workers' runs on it: the 248/248/248/256-jiffy cycle, a run on another bucket of its
//! second.

use super::super::tests::{busy, step, HZ, S, TICK};
use super::super::Run;
use super::*;

const MS: u64 = 1_000_000;

#[test]
fn a_second_long_timer_fires_at_the_next_multiple_of_eight() {
    // Level 1 (63..504 jiffies): the first multiple of 8 after the expiry, strictly.
    assert_eq!(fires(1000, 750, 250), 1008);
    assert_eq!(fires(1001, 750, 250), 1008);
    assert_eq!(fires(1007, 750, 250), 1008);
    // Level 0: the jiffy after the expiry; already due: now.
    assert_eq!(fires(810, 750, 250), 811);
    assert_eq!(fires(740, 750, 250), 750);
    // Level 2 (504..4032): multiples of 64.
    assert_eq!(fires(1000, 0, 250), 1024);
    // Past the wheel's capacity: capped.
    assert!(fires(i64::MAX / 2, 0, 250) < i64::MAX / 2);
}

#[test]
fn the_cycle_is_the_seconds_of_a_multiple_of_eight_jiffies() {
    assert_eq!(cycle_seconds(250), 4);
    assert_eq!(cycle_seconds(1000), 1);
    assert_eq!(cycle_seconds(100), 2);
    assert_eq!(cycle_seconds(300), 2);
    assert_eq!(cycle_seconds(0), 8);
}

#[test]
fn a_runs_phase_is_its_earliest_expiry_on_a_multiple_of_eight() {
    // CPU 0 at 10.5 s: its bucket began at 10.496, its expiry 2 jiffies before (10.488,
    // a second whose jiffies are 6 mod 8); 3 seconds back, 7.488, they are 0 mod 8.
    assert_eq!(phase_of_run(0, 10_500 * MS, HZ), 3_488 * MS);
    // CPU 1: expiry 1 jiffy before the bucket (10.492), the second 3 jiffies after
    // (10.504, 2 mod 8): one second back.
    assert_eq!(phase_of_run(1, 10_500 * MS, HZ), 1_504 * MS);
    // Whatever the CPU, the phase's jiffy 0 is a second and a multiple of 8, the
    // run's bucket (a tick before it) a multiple of 8.
    for cpu in 0..8u32 {
        let p = phase_of_run(cpu, 10_500 * MS, HZ);
        let bucket = (10_496 * MS - p) / TICK;
        assert_eq!(bucket % 8, 0, "cpu {cpu}");
    }
}

#[test]
fn a_busy_cpus_worker_fires_248_248_248_256_jiffies_apart() {
    // HZ 250: a second is 2 jiffies more than 31 buckets of 8, so the worker fires 8, 6, 4
    // and 2 jiffies after its second in turn (6.12-4g p_idle CPU 0: 248, 249, 247, 256).
    let mut v = Vmstat::new(2, HZ);
    v.set_timer_wheel(true);
    let at = busy(&mut v, 0, 10 * S, 9000);
    let jiffies: Vec<u64> = at.iter().map(|t| (t - 10 * S) / TICK).collect();
    // The phase assumed at 10 s, its jiffy 0 a multiple of 8: 11 s is jiffy 250, its bucket 256.
    assert_eq!(jiffies, [256, 504, 752, 1008, 1256, 1504, 1752, 2008]);
    let gaps: Vec<u64> = jiffies.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(gaps, [248, 248, 256, 248, 248, 248, 256]);
    // Off: at each second.
    let mut v = Vmstat::new(2, HZ);
    v.set_timer_wheel(false);
    let at = busy(&mut v, 0, 10 * S, 9000);
    assert!(at.windows(2).all(|w| w[1] - w[0] == S), "{at:?}");
}

#[test]
fn a_run_on_another_bucket_of_its_second_moves_the_phase_by_whole_seconds() {
    // CPU 0's first run at 50.835198 s reads its expiry at 50.823198, two jiffies before a
    // bucket; the next second's expiry, 51.823198, is then a bucket's own jiffy, so ours
    // fires 8 jiffies later. The trace's run comes on the bucket 4 jiffies after it: the
    // second was right, the jiffies count mod 8 was not.
    let mut v = Vmstat::new(1, HZ);
    v.set_timer_wheel(true);
    step(&mut v, 0, 50 * S, false);
    let first = v.mark(0, 50_835_198_000).expect("the first run");
    v.ran(first, true);
    assert_eq!(busy(&mut v, 0, 50_836 * MS, 1000), Vec::<u64>::new());
    let run: Run = v.mark(0, 51_843_198_000).expect("the next second's run");
    v.ran(run, true);
    // On the run's bucket (a multiple of 8): 52.823198 is 2 jiffies before the next one.
    let next = busy(&mut v, 0, 51_844 * MS, 2100);
    assert_eq!(next, [52_831_198_000, 53_855_198_000]);
}
