//! The lag of the zone's `NR_FREE_PAGES` counter behind its free lists, for an embedder that
//! says which CPU runs each operation (the trace replay): the watermark checks
//! (`zone_watermark_fast`, `zone_watermark_ok`, hence `ZONE_BELOW_HIGH`) then read the
//! counter as the kernel's `zone_page_state` does ([`crate::buddy::StatDrift`]).

use super::Zone;
use crate::platform::Platform;
use crate::sync::Ordering;
use crate::types::CpuId;

impl<P: Platform> Zone<P> {
    /// Models (`on`) or stops modelling the per-CPU `vm_stat_diff` lag of `NR_FREE_PAGES`,
    /// from the exact count with every diff at 0 and the normal threshold
    /// (`calculate_normal_threshold`).
    pub fn set_vmstat_drift(&self, on: bool) {
        let t = self.normal_threshold();
        let mut z = self.lock_uncounted();
        let free = z.nr_free_pages;
        z.vmstat.start(on, free, t);
    }

    /// kswapd of the zone's node woke (`awake`) or went to sleep: `kswapd_try_to_sleep`
    /// sets every CPU's threshold to `calculate_pressure_threshold` while it is awake and
    /// back to `calculate_normal_threshold` before it sleeps (`set_pgdat_percpu_threshold`,
    /// which folds nothing).
    pub fn set_kswapd_awake(&self, awake: bool) {
        let t = if awake {
            // calculate_pressure_threshold: (low - min) / num_online_cpus, 1 to 125.
            let w = self.watermarks();
            let cpus = u64::from(self.cpus().max(1));
            (w.mark(1).saturating_sub(w.mark(0)) / cpus).clamp(1, 125) as i32
        } else {
            self.normal_threshold()
        };
        self.lock_uncounted().vmstat.threshold = t;
    }

    /// The zone's operations run on `cpu` from now on (`smp_processor_id`): their changes
    /// go to its diff.
    #[inline]
    pub fn set_stat_cpu(&self, cpu: CpuId) {
        // No lock: the next lock takes it into the lag (`Zone::lock_uncounted`).
        let c = self.pcp.cpu_index(cpu);
        self.shared.stat_cpu.store(c as u32, Ordering::Relaxed);
    }

    /// CPU `cpu`'s vmstat worker folds its diff into the counter (`refresh_cpu_vm_stats`,
    /// before `decay_pcp_high`; and `quiet_vmstat`); the zone's operations run on `cpu`
    /// from now on.
    pub fn fold_vmstat(&self, cpu: CpuId) {
        let c = self.pcp.cpu_index(cpu);
        self.shared.stat_cpu.store(c as u32, Ordering::Relaxed);
        self.lock_uncounted().vmstat.fold(c);
    }

    /// `zone_page_state(NR_FREE_PAGES)`: the counter while the lag is modelled, else the
    /// free pages.
    pub fn vmstat_free_pages(&self) -> u64 {
        let z = self.lock_uncounted();
        if z.vmstat.on {
            z.vmstat.read()
        } else {
            z.nr_free_pages
        }
    }

    fn normal_threshold(&self) -> i32 {
        let t =
            crate::pcp::stat_threshold(self.managed_pages(), self.cpus(), self.config().page_size);
        t as i32
    }
}
