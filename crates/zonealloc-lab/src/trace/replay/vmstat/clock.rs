//! Jiffies against trace time: the workers' timers as `round_jiffies_relative` places them,
//! and the phase a worker's run in the trace shows.

use super::SECOND_NS;

/// `round_jiffies_common(j0 + HZ, cpu, false)` for a `round_jiffies_relative(HZ)` called at
/// jiffy `j0` on CPU `cpu`, as an absolute jiffy (`kernel/time/timer.c`): `j` skewed by `3 *
/// cpu`, rounded down to a whole second when less than a quarter past it, else up, the skew
/// taken off again; the unrounded `j` if that is not after `j0`. Jiffies count from the
/// phase, a jiffies-second boundary, so their remainders are the kernel's.
pub fn round_rel(j0: i64, cpu: u32, hz: u32) -> i64 {
    let hz = i64::from(hz.max(1));
    let original = j0 + hz;
    let skew = 3 * i64::from(cpu);
    let j = original + skew;
    let rem = j.rem_euclid(hz);
    let rounded = if rem < hz / 4 { j - rem } else { j - rem + hz } - skew;
    if rounded > j0 {
        rounded
    } else {
        original
    }
}

/// The phase (a jiffies-second boundary, modulo a second) that CPU `cpu`'s worker run at `t`
/// shows: the CPU's boundary (`jiffies + 3 * cpu ≡ 0 mod HZ`) starts in the tick before `t`
/// at the latest; jiffies-second boundaries lie `3 * cpu` jiffies after it.
pub(super) fn phase_of_run(cpu: u32, t: u64, tick: u64) -> u64 {
    (t.saturating_sub(tick) + 3 * u64::from(cpu) * tick) % 1_000_000_000
}

/// Whether a run whose phase is `phase` came less than a quarter second after the boundary
/// of phase `own` (both modulo a second): late on that rhythm (`round_jiffies_common` rounds
/// down what is less than `HZ / 4` past a second).
pub(super) fn late_on(own: u64, phase: u64) -> bool {
    const S: u64 = SECOND_NS as u64;
    (phase % S + S - own % S) % S < S / 4
}

/// The first jiffy after `j` that is CPU `cpu`'s boundary (`(jiffy + 3 * cpu) % HZ == 0`).
pub(super) fn next_boundary(j: i64, cpu: u32, hz: u32) -> i64 {
    let hz = i64::from(hz.max(1));
    let rem = (j + 3 * i64::from(cpu)).rem_euclid(hz);
    j - rem + hz
}

/// The trace time jiffy `j` begins at, for a phase and HZ (saturating at the ends of `u64`).
pub(super) fn ns_of_at(phase: Option<u64>, hz: u32, j: i64) -> u64 {
    let hz = i128::from(hz.max(1));
    let n = i128::from(j) * SECOND_NS;
    let t = i128::from(phase.unwrap_or(0)) + n.div_euclid(hz) + i128::from(n.rem_euclid(hz) != 0);
    t.clamp(0, i128::from(u64::MAX)) as u64
}

/// The jiffy at trace time `t` for a phase and HZ (floor; the phase `t` itself if none).
pub(super) fn jiffy_at(phase: Option<u64>, hz: u32, t: u64) -> i64 {
    let d = (i128::from(t) - i128::from(phase.unwrap_or(t))) * i128::from(hz.max(1));
    d.div_euclid(SECOND_NS) as i64
}
