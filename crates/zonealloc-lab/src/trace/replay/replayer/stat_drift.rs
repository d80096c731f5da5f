//! The lag of each zone's `NR_FREE_PAGES` counter behind its free lists, which the watermark
//! checks read (`zone_page_state`; [`zonealloc::Zone::set_vmstat_drift`]): each CPU's
//! changes stay in its `vm_stat_diff` until they pass `stat_threshold`
//! (`__mod_zone_page_state`) or its vmstat worker folds them (`refresh_cpu_vm_stats`, before
//! `decay_pcp_high`), and the threshold is kswapd's pressure threshold while it is awake
//! (`kswapd_try_to_sleep`). With the workers only (6.7 on): 6.1's are not scheduled here.
//!
//! 6.12-4g p_pressure: after CPU 1's drain at 803.698679 the kernel's counter was 76 below
//! its free pages (13 on CPU 1, 63 left on the idle CPU 0 by kswapd0's drains at 802.617
//! under its pressure threshold of 125), below the high mark, so `ZONE_BELOW_HIGH` stayed.

use zonealloc::CpuId;

use super::Replayer;

impl Replayer {
    /// Models the lag (`on`) from the zones' free pages now, every diff at 0.
    pub fn set_vmstat_drift(&mut self, on: bool) {
        self.stat_drift = on;
        self.stat_cpu = None;
        for z in &self.zones {
            z.set_vmstat_drift(on);
        }
    }

    /// The zones' operations run on `cpu` from now on.
    #[inline]
    pub(super) fn stat_cpu_is(&mut self, cpu: u32) {
        if self.stat_drift && self.stat_cpu != Some(cpu) {
            self.stat_cpu = Some(cpu);
            for z in &self.zones {
                z.set_stat_cpu(CpuId(cpu));
            }
        }
    }

    /// CPU `cpu`'s worker folds its diff in zone `z` (and runs there).
    pub(super) fn stat_fold(&mut self, z: usize, cpu: u32) {
        if self.stat_drift {
            self.zones[z].fold_vmstat(CpuId(cpu));
            // Only zone `z` follows the worker; the next event sets every zone again.
            self.stat_cpu = None;
        }
    }

    /// Node `nid`'s kswapd woke or went to sleep: its zones' thresholds.
    pub(super) fn stat_kswapd(&mut self, nid: u32, awake: bool) {
        if !self.stat_drift {
            return;
        }
        for (z, span) in self.zones.iter().zip(&self.geo.zones) {
            if span.node == nid {
                z.set_kswapd_awake(awake);
            }
        }
    }
}
