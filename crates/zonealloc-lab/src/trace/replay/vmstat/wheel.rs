//! The timer wheel the workers' timers wait in (`kernel/time/timer.c`, the same in 6.1, 6.12
//! and 7.2): a timer does not fire at its expiry but at its bucket's, which
//! `calc_wheel_index` picks by the delta from the wheel's clock at queueing (level 0 below
//! 63 jiffies, each level up 8 times coarser) and `calc_index` rounds up, strictly: a
//! `round_jiffies_relative(HZ)` timer (level 1, buckets of 8 jiffies) fires at the first
//! multiple of 8 of the jiffies count after its expiry, 1 to 8 jiffies late.
//!
//! With HZ 250 a second is 250 jiffies, 2 more than a multiple of 8, so a worker that keeps
//! to its second fires 8, 6, 4, 2 (even CPUs) or 7, 5, 3, 1 (odd CPUs) jiffies after its
//! expiry in turn: 248, 248, 248 and 256 jiffies apart. 6.12-4g p_idle, CPU 0's worker
//! drains at 626.825477, 627.817266, 628.812698, 629.801215 and 630.825311 s: 248, 249, 247
//! and 256 jiffies apart.
//!
//! The captures that trace every run (`*-4g-wq`, `workqueue_execute_start`) show it: on
//! 6.12-4g-wq p_prodcons CPU 3's `vmstat_update` starts at 10.342776, 11.334800,
//! 12.359091, 13.350740 and 14.342716 s; replayed without those lines
//! (`--no-traced-workers --whole-file`), ours run at 10.342, 11.334, 12.358, 13.350 and
//! 14.342 on the wheel, at 11.334, 12.334, 13.334 and 14.334 without it (25 ms early at
//! 12.359). On the eight `*-4g-wq` rows so replayed the wheel takes the to-after sums
//! (refill/drain event %) 20.1/24.2 -> 14.0/21.1. It stays off by default: on the whole
//! table it takes the window sums 18.6/28.9 -> 32.7/34.8, mostly the `*-4g-loads` p_fork
//! windows (6.12: CPU 2 refills 220 blocks at 51.431 s where the kernel refills 63 at
//! 51.581).
//!
//! The buckets lie on the jiffies count, not on its seconds: the phase (a jiffies-second
//! boundary in trace time) is kept modulo the wheel's cycle, [`cycle_seconds`] seconds (4
//! at HZ 250), and names a second whose jiffies count is a multiple of 8 as well
//! ([`phase_of_run`]).

use super::{jiffy_at, Vmstat};

/// `LVL_CLK_SHIFT`: each level's buckets are 8 times as wide as the one below.
const CLK_SHIFT: u32 = 3;

/// `LVL_BITS`: 64 buckets per level.
const LVL_BITS: u32 = 6;

/// `LVL_START(n)`: the smallest delta that goes to level `n` (`n >= 1`).
fn lvl_start(n: u32) -> i64 {
    ((1i64 << LVL_BITS) - 1) << ((n - 1) * CLK_SHIFT)
}

/// The jiffy a timer expiring at jiffy `expires`, queued when the wheel's clock was at
/// `clk`, fires at (`calc_wheel_index` -> `calc_index`'s `bucket_expiry`). Jiffies count
/// from a phase whose jiffy 0 is a multiple of 8 in the kernel's count ([`phase_of_run`]);
/// a level above 1 (a delta of 504 jiffies or more, which these timers reach only at HZ
/// 1000) rounds on it as if it were a multiple of that level's width too, which the trace
/// cannot show.
pub fn fires(expires: i64, clk: i64, hz: u32) -> i64 {
    // `LVL_DEPTH`: 9 levels above HZ 100, else 8.
    let depth = if hz > 100 { 9 } else { 8 };
    let delta = expires - clk;
    if delta < 0 {
        // Already due: the wheel's current bucket.
        return clk;
    }
    let cutoff = lvl_start(depth);
    let (expires, lvl) = match (1..depth).find(|&n| delta < lvl_start(n)) {
        Some(n) => (expires, n - 1),
        // `WHEEL_TIMEOUT_MAX`: capped at the wheel's capacity.
        None if delta >= cutoff => (
            clk + cutoff - (1i64 << ((depth - 1) * CLK_SHIFT)),
            depth - 1,
        ),
        None => (expires, depth - 1),
    };
    // `calc_index`: rounded up, so that a timer never fires early.
    let shift = lvl * CLK_SHIFT;
    ((expires >> shift) + 1) << shift
}

/// [`fires`] on the wheel (`on`), else `expires`.
pub(super) fn fire_at(on: bool, expires: i64, clk: i64, hz: u32) -> i64 {
    if on {
        fires(expires, clk, hz)
    } else {
        expires
    }
}

/// The wheel's cycle against the seconds: the least number of seconds whose jiffies are a
/// multiple of 8 (`lcm(HZ, 8) / HZ`; 4 at HZ 250, 1 at HZ 1000).
pub fn cycle_seconds(hz: u32) -> u64 {
    let hz = u64::from(hz.max(1));
    8 / gcd(hz, 8)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The phase (a jiffies-second boundary whose jiffies count is a multiple of 8, modulo the
/// wheel's cycle) that CPU `cpu`'s worker run at `t` shows, read as early as the wheel
/// allows: the run's bucket (a multiple of 8) began in the tick before `t`, and CPU `cpu`'s
/// expiry (`3 * cpu` jiffies before a second) the fewest jiffies before it that a second's
/// remainder mod 8 permits: 2 for an even CPU, 1 for an odd one at HZ 250 (a second's
/// jiffies are even there). A run that came later in the cycle (the bucket's 4 to 8
/// jiffies) reads a later phase, which [`super::Vmstat`]'s alignment does not take over an
/// earlier one.
pub fn phase_of_run(cpu: u32, t: u64, hz: u32) -> u64 {
    let hz = hz.max(1);
    let tick = i128::from(super::tick_ns(hz));
    let g = i64::try_from(gcd(u64::from(hz), 8)).unwrap_or(1);
    let skew = 3 * i64::from(cpu);
    // The fewest jiffies from the expiry to a bucket: d ≡ 3 * cpu (mod gcd(HZ, 8)).
    let d = (skew - 1).rem_euclid(g) + 1;
    // The second's jiffies mod 8 (the bucket's are 0), and the seconds back to one whose
    // jiffies are a multiple of 8.
    let rem = (skew - d).rem_euclid(8);
    let back = (0..8i64)
        .find(|m| (m * i64::from(hz) - rem).rem_euclid(8) == 0)
        .unwrap_or(0);
    let second = i128::from(t) - tick - i128::from(d) * tick + i128::from(skew) * tick;
    let cycle = i128::from(cycle_seconds(hz)) * 1_000_000_000;
    (second - i128::from(back) * 1_000_000_000).rem_euclid(cycle) as u64
}

impl Vmstat {
    /// Whether the workers' and the shepherd's timers fire at their bucket on the timer
    /// wheel (`calc_wheel_index`, `calc_index`), 1 to 8 jiffies after their expiry, and
    /// the phase read from a run allows for it (`wheel::phase_of_run`); off, they fire at
    /// their expiry and a run shows its CPU's second a tick before it. Off by default
    /// (`--timer-wheel` turns it on in the replay). Before the first event and before
    /// [`Vmstat::set_phase`].
    pub fn set_timer_wheel(&mut self, on: bool) {
        self.wheel = on;
    }

    /// The jiffy a timer expiring at `expires`, queued at jiffy `clk`, fires at.
    pub(super) fn fire_of(&self, expires: i64, clk: i64) -> i64 {
        fire_at(self.wheel, expires, clk, self.hz)
    }

    /// Arms CPU slot `c`'s timer: expiring at `expires`, queued at jiffy `clk`.
    pub(super) fn arm(&mut self, c: usize, expires: i64, clk: i64) {
        let fires = self.fire_of(expires, clk);
        let w = &mut self.work[c];
        w.expires = expires;
        w.fires = fires;
    }

    /// Arms the shepherd's timer: expiring at `expires`, queued at jiffy `clk`.
    pub(super) fn arm_shepherd(&mut self, expires: i64, clk: i64) {
        self.shepherd = expires;
        self.shepherd_fires = self.fire_of(expires, clk);
    }

    /// What phases are taken modulo: the wheel's cycle ([`cycle_seconds`]), else a
    /// second.
    pub(super) fn period_ns(&self) -> u64 {
        if self.wheel {
            cycle_seconds(self.hz) * 1_000_000_000
        } else {
            1_000_000_000
        }
    }

    /// The phase CPU `cpu`'s worker run at `t` shows ([`phase_of_run`] on the wheel, else
    /// its second beginning a tick before `t`, `3 * cpu` jiffies after).
    pub(super) fn reading(&self, cpu: u32, t: u64) -> u64 {
        if self.wheel {
            phase_of_run(cpu, t, self.hz)
        } else {
            super::clock::phase_of_run(cpu, t, self.tick_ns())
        }
    }

    /// A worker's run in the trace at `t` after CPU slot `c`'s timer expired on the CPU's
    /// own phase but before the bucket it fires at: a worker never runs before its bucket,
    /// so the phase is wrong. Where the run's bucket lies an even number of jiffies from
    /// the CPU's second (at HZ 250), the second is right and the jiffies count mod 8 is
    /// not: the phase moved by whole seconds onto the run's bucket. `None` for any other
    /// run (an odd number: late by a jiffy or more, the phase stays as
    /// [`Vmstat::align_cpu`] keeps it).
    pub(super) fn regrid(&self, c: usize, t: u64) -> Option<u64> {
        let w = &self.work[c];
        let own = w.phase_ns?;
        let hz = i64::from(self.hz);
        if !self.wheel || !w.pending {
            return None;
        }
        // The run's bucket: the jiffy that began about a tick before it (as
        // [`phase_of_run`] reads a run).
        let j = jiffy_at(Some(own), self.hz, t + self.tick_ns() / 2) - 1;
        // Expired (on the CPU's second) and not yet fired: at most 8 jiffies on.
        if j < w.expires || j >= w.fires || j - w.expires > 8 {
            return None;
        }
        let cycle = i64::try_from(cycle_seconds(self.hz)).unwrap_or(1);
        // `m` seconds earlier, jiffy `j` is `j + m * HZ`.
        let m = (0..cycle).find(|m| (j + m * hz).rem_euclid(8) == 0)?;
        let period = self.period_ns();
        let back = u64::try_from(m).unwrap_or(0) * 1_000_000_000 % period;
        Some((own + period - back) % period)
    }
}

#[cfg(test)]
mod tests;
