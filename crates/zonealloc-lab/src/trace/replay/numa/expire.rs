//! The vmstat worker's expiry drain of remote-node pagesets, in `refresh_cpu_vm_stats(true)`
//! under CONFIG_NUMA (`mm/vmstat.c`, 6.1 and 7.2 alike):
//! - folding the CPU's zone counters sets the pageset's `expire` to 3 where a counter of the
//!   zone moved since the last run ("3 seconds idle till flush"); here: the CPU refilled or
//!   drained pages of the zone since the last run. A buddy operation moves `NR_FREE_PAGES`
//!   (`rmqueue_bulk`, `free_pcppages_bulk` -> `__free_one_page`); a page's allocation off the
//!   pageset or free onto it moves no zone counter (`free_unref_page_commit` and
//!   `rmqueue_pcplist` count `PGFREE`/`PGALLOC` events and the NUMA events, none of them in
//!   `vm_stat_diff`), so a CPU's frees of another node's pages do not restart the
//!   countdown. An LRU page's addition to or removal from its LRU does move the zone's LRU
//!   counters, but the trace does not say which pages were on an LRU, nor where the
//!   per-CPU LRU batches were flushed: not counted. Counting every allocation and free as a
//!   move restarted countdowns the kernel did not restart: 6.1-4g-2node p_prodcons drained
//!   23 times for expiry over its whole file where the trace shows 12, node 1's Normal
//!   pagesets of CPUs 0 and 1 3 times each where the kernel drained once (`awk-300`'s frees
//!   of node 1 pages on CPU 0 at 73.434502 restarted ours; the kernel's next drain there is
//!   at 128.797299, after `od-301`'s frees at 124.578111);
//! - then, after `decay_pcp_high` (6.7 on): with `expire` and `count` not zero, a zone of the
//!   CPU's own node gets `expire = 0` ("We never drain zones local to this processor"); a
//!   remote one counts down, and at 0 `drain_zone_pages` gives back `min(count, batch)`
//!   pages. 7.2 counts a countdown step and a drain as a change (the worker re-queues).
//!
//! # The countdown at the snapshot
//! The kernel's `expire` is not printed. A pageset of the CPU's own node, or a remote one
//! with no pages, starts at 0 (it never drains while empty, and the first page a CPU frees
//! there moves a counter, which sets it to 3). A remote pageset holding pages starts
//! *unknown* (1, 2 or 3, or 0 after a drain): it does not count down until it is known, which
//! is at the first fold that sees it move (3, as the kernel sets it), or at the first expiry
//! drain of it the trace shows, which the replay then does where the trace does (aligned:
//! the kernel's `expire` is 0 after it). Ours counts down at its own worker runs and drains
//! at 0, in every variant; a trace's expiry drain that ours has not matched by a drain of
//! its own since the last one is done where the trace does it ([`Expiry::traced`]). The
//! trace's are counted beside ours, per node.

use zonealloc::{CpuId, Zone};

/// Expiry drains of one node's zones: worker runs that drained, and pages (blocks of the
/// trace's lines, as order-0 pages).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpiryDrains {
    /// `drain_zone_pages` calls that drained (a run's lines in one zone, for the trace's).
    pub drains: u64,
    /// Pages they drained.
    pub pages: u64,
}

/// Each CPU's `expire` per zone, and what the drains gave back.
pub struct Expiry {
    zones: usize,
    /// Per zone: its node.
    zone_node: Vec<u32>,
    /// Per CPU and zone: the pages moved at the last fold.
    seen: Vec<u64>,
    /// Per CPU and zone: `pcp->expire`.
    expire: Vec<u8>,
    /// Per CPU and zone: whether `expire` is known (see the module documentation).
    known: Vec<bool>,
    /// Per CPU and zone: ours drained on its own since the trace's last expiry drain there
    /// (which the trace's next one then matches).
    own: Vec<bool>,
    /// Per CPU: the worker runs the trace showed ([`Expiry::new_run`]).
    runs: Vec<u64>,
    /// Per CPU and zone: the run (+ 1) whose first line in the zone was seen.
    run_seen: Vec<u64>,
    /// Per node: the expiry drains of its zones the replay did (its own and aligned ones).
    pub ours: Vec<ExpiryDrains>,
    /// Per node: those of the trace (a worker run's lines in a remote pageset).
    pub kernel: Vec<ExpiryDrains>,
    /// The trace's expiry drains the replay did where the trace did, to learn `expire`.
    pub aligned: u64,
    /// A countdown step is a change that keeps the worker running (6.12 and 7.2: "if
    /// (__this_cpu_dec_return(pcp->expire)) { changes++; continue; }"); 6.1's `continue`
    /// alone is not (`NumaConfig::expire_counts_pending`).
    pub counts_pending: bool,
}

impl Expiry {
    /// Nothing moved yet, for `cpus` CPUs and zones on the nodes `zone_node` (one per zone);
    /// every countdown known and at 0 until [`Expiry::start`].
    pub fn new(cpus: u32, zone_node: &[u32]) -> Expiry {
        let zones = zone_node.len();
        let n = cpus as usize * zones;
        let nodes = zone_node.iter().max().map_or(1, |&m| m as usize + 1);
        Expiry {
            zones,
            zone_node: zone_node.to_vec(),
            seen: vec![0; n],
            expire: vec![0; n],
            known: vec![true; n],
            own: vec![false; n],
            runs: vec![0; cpus as usize],
            run_seen: vec![0; n],
            ours: vec![ExpiryDrains::default(); nodes],
            kernel: vec![ExpiryDrains::default(); nodes],
            aligned: 0,
            counts_pending: true,
        }
    }

    fn index(&self, z: usize, cpu: u32) -> Option<usize> {
        let i = (cpu as usize).checked_mul(self.zones)?.checked_add(z)?;
        (z < self.zones && i < self.expire.len()).then_some(i)
    }

    /// The countdowns at the snapshot (`zones` set up as it was; `cpu_node` each CPU's
    /// node): 0 for a local or empty pageset, unknown for a remote one with pages, and what
    /// each moved so far taken as seen.
    pub fn start(&mut self, zones: &[Zone], cpu_node: impl Fn(u32) -> u32) {
        let cpus = self.runs.len() as u32;
        for cpu in 0..cpus {
            for (z, zone) in zones.iter().enumerate().take(self.zones) {
                let Some(i) = self.index(z, cpu) else {
                    continue;
                };
                let remote = self.zone_node[z] != cpu_node(cpu);
                self.seen[i] = moved(zone, cpu);
                self.expire[i] = 0;
                self.known[i] = !remote || zone.pcp_info(CpuId(cpu)).count <= 0;
            }
        }
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

    /// A line of a worker run of `cpu` in remote zone `z` in the trace, `pages` of it
    /// (`first`: the run's first line in the zone): counted as the kernel's. Whether the
    /// replay does this drain where the trace does (aligned): at a run's first line, unless
    /// ours drained that pageset on its own since the trace's last drain of it (this one
    /// is that one, earlier or later). So an unknown countdown is learnt, and one that ours
    /// runs late catches up: the kernel's worker runs where the trace shows nothing of what
    /// keeps it going (counters of untraced work), and ours runs only for traced events.
    pub fn traced(&mut self, z: usize, cpu: u32, pages: u64, first: bool) -> bool {
        let Some(i) = self.index(z, cpu) else {
            return false;
        };
        if let Some(k) = self.kernel.get_mut(self.zone_node[z] as usize) {
            k.drains += u64::from(first);
            k.pages += pages;
        }
        first && !std::mem::replace(&mut self.own[i], false)
    }

    /// The fold of zone `z`'s counters on `cpu` (before its `decay_pcp_high`).
    pub fn fold(&mut self, zone: &Zone, z: usize, cpu: u32) {
        let Some(i) = self.index(z, cpu) else { return };
        let now = moved(zone, cpu);
        if std::mem::replace(&mut self.seen[i], now) != now {
            self.expire[i] = 3;
            self.known[i] = true;
        }
    }

    /// Zone `z`'s pageset on `cpu` drained `pages` for expiry where the trace shows it: its
    /// countdown is over (known, at 0), and restarts when pages move again (not the drain's
    /// own: see [`Expiry::step`]).
    pub fn restart(&mut self, zone: &Zone, z: usize, cpu: u32, pages: u32) {
        if let Some(i) = self.index(z, cpu) {
            self.seen[i] = moved(zone, cpu);
            self.expire[i] = 0;
            self.known[i] = true;
            self.own[i] = false;
            self.aligned += 1;
            self.count_ours(z, pages);
        }
    }

    fn count_ours(&mut self, z: usize, pages: u32) {
        if let Some(o) = self.ours.get_mut(self.zone_node[z] as usize) {
            o.drains += u64::from(pages > 0);
            o.pages += u64::from(pages);
        }
    }

    /// The CONFIG_NUMA block for zone `z` on `cpu` (`local`: the zone is on the CPU's node),
    /// after its `decay_pcp_high`; whether it is a change that re-queues the worker (a drain;
    /// a countdown step too with [`Expiry::counts_pending`]). An unknown countdown does not
    /// run. The drain's own pages are taken as seen: they move `NR_FREE_PAGES`, but the
    /// CPU's diff is folded into the zone whenever it passes the stat threshold
    /// (`__mod_zone_page_state`), so whether one is left for the next fold to see is not
    /// known here; counted as moved, every drain re-armed the countdown, and 7.2's idle
    /// phase drained 12 times where the kernel drained 3 (drain events 13.25% off the
    /// kernel's, against 2.52% with the trace's drains and without re-arming).
    pub fn step(&mut self, zone: &Zone, z: usize, cpu: u32, local: bool) -> bool {
        let Some(i) = self.index(z, cpu) else {
            return false;
        };
        let count = zone.pcp_info(CpuId(cpu)).count;
        if self.expire[i] == 0 || count <= 0 || !self.known[i] {
            return false;
        }
        if local {
            self.expire[i] = 0;
            return false;
        }
        self.expire[i] -= 1;
        if self.expire[i] > 0 {
            return self.counts_pending;
        }
        let n = zone.drain_zone_pages(CpuId(cpu));
        self.count_ours(z, n);
        self.own[i] |= n > 0;
        self.seen[i] = moved(zone, cpu);
        // "if (count) { drain_zone_pages(); changes++; }" (6.1), or both (7.2).
        self.counts_pending || n > 0
    }

    /// The replay's expiry drains, all nodes.
    pub fn ours_total(&self) -> ExpiryDrains {
        total(&self.ours)
    }

    /// The trace's, all nodes.
    pub fn kernel_total(&self) -> ExpiryDrains {
        total(&self.kernel)
    }
}

fn total(v: &[ExpiryDrains]) -> ExpiryDrains {
    v.iter().fold(ExpiryDrains::default(), |a, b| ExpiryDrains {
        drains: a.drains + b.drains,
        pages: a.pages + b.pages,
    })
}

/// The buddy operations of `cpu`'s pageset of `zone` so far, in pages (its refills and
/// drains): a change since the last fold moved the zone's `NR_FREE_PAGES` (an allocation
/// off the pageset or a free onto it moves no zone counter; see the module documentation).
fn moved(zone: &Zone, cpu: u32) -> u64 {
    let s = zone.pcp_info(CpuId(cpu)).stats;
    s.refill_pages
        + s.drain_high_pages
        + s.drain_free_high_pages
        + s.drain_decay_pages
        + s.drain_local_pages
        + s.drain_remote_pages
}

#[cfg(test)]
mod tests;
