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

/// A tick under `hz` (0: one a second), in ns: the one definition the workers' timers, the
/// late-run deadlines and the start-count walk's pauses share.
pub fn tick_ns(hz: u32) -> u64 {
    1_000_000_000 / u64::from(hz.max(1))
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
/// (In `i64` where the product fits, as it does for any trace under a year of jiffies: the
/// replay asks at every event a timer may be due, and `i128` division is a library call.)
pub(super) fn ns_of_at(phase: Option<u64>, hz: u32, j: i64) -> u64 {
    let base = phase.unwrap_or(0);
    if let (Some(n), Ok(b)) = (j.checked_mul(SECOND_NS as i64), i64::try_from(base)) {
        let hz = i64::from(hz.max(1));
        let d = n.div_euclid(hz) + i64::from(n.rem_euclid(hz) != 0);
        if let Some(t) = b.checked_add(d) {
            return t.max(0) as u64;
        }
    }
    let hz = i128::from(hz.max(1));
    let n = i128::from(j) * SECOND_NS;
    let t = i128::from(base) + n.div_euclid(hz) + i128::from(n.rem_euclid(hz) != 0);
    t.clamp(0, i128::from(u64::MAX)) as u64
}

/// The jiffy at trace time `t` for a phase and HZ (floor; the phase `t` itself if none).
/// (In `i64` where it fits, as [`ns_of_at`].)
pub(super) fn jiffy_at(phase: Option<u64>, hz: u32, t: u64) -> i64 {
    let p = phase.unwrap_or(t);
    if let (Ok(t64), Ok(p64)) = (i64::try_from(t), i64::try_from(p)) {
        if let Some(d) = (t64 - p64).checked_mul(i64::from(hz.max(1))) {
            return d.div_euclid(SECOND_NS as i64);
        }
    }
    let d = (i128::from(t) - i128::from(p)) * i128::from(hz.max(1));
    d.div_euclid(SECOND_NS) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns_of_at_wide(phase: Option<u64>, hz: u32, j: i64) -> u64 {
        let hz = i128::from(hz.max(1));
        let n = i128::from(j) * SECOND_NS;
        let t =
            i128::from(phase.unwrap_or(0)) + n.div_euclid(hz) + i128::from(n.rem_euclid(hz) != 0);
        t.clamp(0, i128::from(u64::MAX)) as u64
    }

    fn jiffy_at_wide(phase: Option<u64>, hz: u32, t: u64) -> i64 {
        let d = (i128::from(t) - i128::from(phase.unwrap_or(t))) * i128::from(hz.max(1));
        d.div_euclid(SECOND_NS) as i64
    }

    /// The `i64` paths give what the `i128` arithmetic gives, at the ends of the ranges too.
    #[test]
    fn the_narrow_clock_arithmetic_is_the_wide_one() {
        let phases = [
            None,
            Some(0),
            Some(1),
            Some(816_000_000),
            Some(u64::MAX / 2),
            Some(u64::MAX),
        ];
        let jiffies = [
            0,
            1,
            -1,
            249,
            -250,
            1 << 20,
            i64::MAX / 1000,
            i64::MAX,
            i64::MIN,
        ];
        let times = [
            0,
            1,
            999_999_999,
            1_000_000_000,
            1 << 40,
            u64::MAX / 2,
            u64::MAX,
        ];
        for phase in phases {
            for hz in [0, 100, 250, 300, 1000] {
                for j in jiffies {
                    assert_eq!(
                        ns_of_at(phase, hz, j),
                        ns_of_at_wide(phase, hz, j),
                        "{phase:?} {hz} {j}"
                    );
                }
                for t in times {
                    assert_eq!(
                        jiffy_at(phase, hz, t),
                        jiffy_at_wide(phase, hz, t),
                        "{phase:?} {hz} {t}"
                    );
                }
            }
        }
    }
}
