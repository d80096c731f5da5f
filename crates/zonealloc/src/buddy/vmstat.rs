//! `NR_FREE_PAGES` as the kernel's watermark checks read it: `zone_page_state` reads the
//! zone's counter (`zone->vm_stat`), which a CPU's change reaches only once that CPU's
//! `vm_stat_diff` passes its `stat_threshold` (`__mod_zone_page_state`), or when the CPU's
//! vmstat worker folds it (`refresh_cpu_vm_stats`). The free lists hold the exact count; the
//! counter lags it by up to `threshold` pages per CPU. Off unless the embedder turns it on
//! ([`crate::Zone::set_vmstat_drift`]): it needs to say which CPU runs each operation.

/// CPUs whose diffs are kept; a change on a CPU above them reaches the counter at once.
pub(crate) const DRIFT_CPUS: usize = 64;

/// The zone's counter and each CPU's diff.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StatDrift {
    pub(crate) on: bool,
    /// The CPU the zone's operations run on now (`smp_processor_id`).
    pub(crate) cpu: usize,
    /// `stat_threshold` (the same for every CPU of a zone).
    pub(crate) threshold: i32,
    /// `zone->vm_stat[NR_FREE_PAGES]`.
    pub(crate) global: i64,
    diffs: [i16; DRIFT_CPUS],
}

impl StatDrift {
    pub(crate) const OFF: Self = StatDrift {
        on: false,
        cpu: 0,
        threshold: 0,
        global: 0,
        diffs: [0; DRIFT_CPUS],
    };

    /// Turns the lag on from `free` pages with every diff at 0, or off.
    pub(crate) fn start(&mut self, on: bool, free: u64, threshold: i32) {
        *self = StatDrift {
            on,
            cpu: self.cpu,
            threshold,
            global: free as i64,
            diffs: [0; DRIFT_CPUS],
        };
    }

    /// `__mod_zone_page_state(zone, NR_FREE_PAGES, nr)` on [`StatDrift::cpu`].
    #[inline]
    pub(crate) fn add(&mut self, nr: i64) {
        let Some(d) = self.diffs.get_mut(self.cpu) else {
            self.global += nr;
            return;
        };
        let x = nr + i64::from(*d);
        if x.abs() > i64::from(self.threshold) {
            self.global += x;
            *d = 0;
        } else {
            *d = x as i16;
        }
    }

    /// `refresh_cpu_vm_stats`' fold of CPU `cpu`'s diff (`this_cpu_xchg(..., 0)`).
    pub(crate) fn fold(&mut self, cpu: usize) {
        if let Some(d) = self.diffs.get_mut(cpu) {
            self.global += i64::from(*d);
            *d = 0;
        }
    }

    /// `zone_page_state`: the counter, at least 0.
    #[inline]
    pub(crate) fn read(&self) -> u64 {
        self.global.max(0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_reaches_the_counter_past_the_threshold_only() {
        let mut s = StatDrift::OFF;
        s.start(true, 1000, 24);
        s.cpu = 1;
        // CPU 1's drain at 803.698679 (6.12-4g p_pressure): an order-9 block folds at once,
        // then 213 pages fold 25 at a time and leave 13 behind.
        s.add(512);
        assert_eq!(s.read(), 1512);
        for _ in 0..213 {
            s.add(1);
        }
        assert_eq!(s.read(), 1512 + 200);
        s.fold(1);
        assert_eq!(s.read(), 1512 + 213);
        s.cpu = DRIFT_CPUS;
        s.add(-5);
        assert_eq!(s.read(), 1512 + 208);
    }
}
