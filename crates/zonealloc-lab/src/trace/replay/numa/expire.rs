//! The vmstat worker's expiry drain of remote-node pagesets, in `refresh_cpu_vm_stats(true)`
//! under CONFIG_NUMA (`mm/vmstat.c`, 6.1 and 7.2 alike):
//! - folding the CPU's zone counters sets the pageset's `expire` to 3 where a counter of the
//!   zone moved since the last run ("3 seconds idle till flush"); here: pages moved between
//!   the CPU's pageset and the zone's buddy (refills and drains), as the core's
//!   `Machine::vmstat_tick` takes it;
//! - then, after `decay_pcp_high` (6.7 on): with `expire` and `count` not zero, a zone of the
//!   CPU's own node gets `expire = 0` ("We never drain zones local to this processor"); a
//!   remote one counts down, and at 0 `drain_zone_pages` gives back `min(count, batch)`
//!   pages. 7.2 counts a countdown step and a drain as a change (the worker re-queues).

use zonealloc::{CpuId, Zone};

/// Each CPU's `expire` per zone, and what the drains gave back.
pub struct Expiry {
    /// The worker's runs count `expire` down and drain ([`Expiry::step`]): for a trace
    /// without the inferences (our own). A kernel's trace shows the worker's expiry drains,
    /// which the replay then does where the trace does (`Replayer::expiry_drain`): the
    /// kernel's `expire` at the snapshot is not printed, so a countdown of ours would drain
    /// at other runs than the kernel's.
    pub modelled: bool,
    zones: usize,
    /// Per CPU and zone: the pages moved at the last fold.
    seen: Vec<u64>,
    /// Per CPU and zone: `pcp->expire`.
    expire: Vec<u8>,
    /// Per CPU: the worker runs the trace showed ([`Expiry::new_run`]).
    runs: Vec<u64>,
    /// Per CPU and zone: the run (+ 1) whose first line in the zone was seen.
    run_seen: Vec<u64>,
    /// `drain_zone_pages` calls that drained.
    pub drains: u64,
    /// Pages they drained.
    pub drained_pages: u64,
}

impl Expiry {
    /// Nothing moved yet, for `cpus` CPUs and `zones` zones.
    pub fn new(cpus: u32, zones: usize) -> Expiry {
        let n = cpus as usize * zones;
        Expiry {
            modelled: true,
            zones,
            seen: vec![0; n],
            expire: vec![0; n],
            runs: vec![0; cpus as usize],
            run_seen: vec![0; n],
            drains: 0,
            drained_pages: 0,
        }
    }

    fn index(&self, z: usize, cpu: u32) -> Option<usize> {
        let i = (cpu as usize).checked_mul(self.zones)?.checked_add(z)?;
        (z < self.zones && i < self.expire.len()).then_some(i)
    }

    /// A run of `cpu`'s worker begins in the trace (its first drain line).
    pub fn new_run(&mut self, cpu: u32) {
        if let Some(r) = self.runs.get_mut(cpu as usize) {
            *r += 1;
        }
    }

    /// Whether this is the first line in zone `z` of `cpu`'s current worker run (and notes
    /// that it was seen).
    pub fn first_in_run(&mut self, z: usize, cpu: u32) -> bool {
        let (Some(i), Some(&run)) = (self.index(z, cpu), self.runs.get(cpu as usize)) else {
            return false;
        };
        std::mem::replace(&mut self.run_seen[i], run + 1) != run + 1
    }

    /// The fold of zone `z`'s counters on `cpu` (before its `decay_pcp_high`).
    pub fn fold(&mut self, zone: &Zone, z: usize, cpu: u32) {
        let Some(i) = self.index(z, cpu) else { return };
        let now = moved(zone, cpu);
        if std::mem::replace(&mut self.seen[i], now) != now {
            self.expire[i] = 3;
        }
    }

    /// Zone `z`'s pageset on `cpu` drained for expiry where the trace shows it: its
    /// countdown is over, and restarts when pages move again.
    pub fn restart(&mut self, zone: &Zone, z: usize, cpu: u32) {
        if let Some(i) = self.index(z, cpu) {
            self.expire[i] = 0;
            self.seen[i] = moved(zone, cpu);
        }
    }

    /// The CONFIG_NUMA block for zone `z` on `cpu` (`local`: the zone is on the CPU's node),
    /// after its `decay_pcp_high`; whether 7.2 counts it as a change.
    pub fn step(&mut self, zone: &Zone, z: usize, cpu: u32, local: bool) -> bool {
        let Some(i) = self.index(z, cpu) else {
            return false;
        };
        let count = zone.pcp_info(CpuId(cpu)).count;
        if self.expire[i] == 0 || count <= 0 {
            return false;
        }
        if local {
            self.expire[i] = 0;
            return false;
        }
        self.expire[i] -= 1;
        if self.expire[i] > 0 {
            return true;
        }
        let n = zone.drain_zone_pages(CpuId(cpu));
        if n > 0 {
            self.drains += 1;
            self.drained_pages += u64::from(n);
        }
        true
    }
}

/// Pages moved between `cpu`'s pageset of `zone` and its buddy so far (the core's
/// `Machine::vmstat_tick` takes the same for a non-zero `vm_stat_diff`).
fn moved(zone: &Zone, cpu: u32) -> u64 {
    let s = zone.pcp_info(CpuId(cpu)).stats;
    s.refill_pages
        + s.drain_high_pages
        + s.drain_free_high_pages
        + s.drain_decay_pages
        + s.drain_local_pages
}

#[cfg(test)]
mod tests {
    use super::*;
    use zonealloc::{MigrateType, Order, Pfn, ZoneConfig, ZoneType};

    #[test]
    fn a_remote_pageset_drains_a_batch_on_the_third_run_and_a_local_one_never() {
        let cfg = ZoneConfig::default().with_cpus(1);
        let zone = Zone::new(ZoneType::Normal, Pfn(0), Pfn(1 << 12), cfg).unwrap();
        zone.add_free_range(Pfn(0), Pfn(1 << 12)).unwrap();
        let req = zonealloc::AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0));
        let p = zone.alloc_with(Order::ZERO, req).unwrap();
        zone.free_on(CpuId(0), p, Order::ZERO).unwrap();
        let info = zone.pcp_info(CpuId(0));
        let (count, batch) = (info.count, info.batch);
        assert!(count > 0);
        let mut local = Expiry::new(1, 1);
        let mut remote = Expiry::new(1, 1);
        for run in 1..=3 {
            local.fold(&zone, 0, 0);
            assert!(!local.step(&zone, 0, 0, true));
            remote.fold(&zone, 0, 0);
            assert!(remote.step(&zone, 0, 0, false));
            let left = zone.pcp_info(CpuId(0)).count;
            if run < 3 {
                assert_eq!(left, count, "run {run}");
            } else {
                assert_eq!(left, (count - batch).max(0), "run {run}");
            }
        }
        assert_eq!(remote.drains, 1);
        assert_eq!(remote.drained_pages, count.min(batch) as u64);
        // Out of range: nothing, no panic.
        assert!(!remote.step(&zone, 3, 9, false));
        assert!(!remote.first_in_run(3, 9));
        // A zone's first line in each worker run, once.
        remote.new_run(0);
        assert!(remote.first_in_run(0, 0));
        assert!(!remote.first_in_run(0, 0));
        remote.new_run(0);
        assert!(remote.first_in_run(0, 0));
    }
}
