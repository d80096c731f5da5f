//! The start-count walk and kswapd: `balance_pgdat` sets `ZONE_RECLAIM_ACTIVE` on its node's
//! zones (`set_reclaim_active`) and clears it before kswapd sleeps; meanwhile `nr_pcp_high`
//! returns at most `batch << 2`, so a list can hold far more than `high` the moment the pass
//! begins.
//!
//! The pass ends before the trace says so: `balance_pgdat` clears `ZONE_RECLAIM_ACTIVE` when
//! it returns, and `kswapd_try_to_sleep` naps `HZ/10` before it prints
//! `mm_vmscan_kswapd_sleep` ([`crate::trace::replay::kswapd_nap`], which the replay's own
//! reclaim follows). A free that drained nothing under the pass bounds the count below
//! `batch << 2`, or below the zone's `high` if the pass was over: which one is known at the
//! sleep ([`Walk::hold`]).

use super::{Free, Walk};

/// The bound a free that drained nothing gave under kswapd's pass ([`Walk::hold`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Held {
    node: u32,
    zone: usize,
    cpu: u32,
    /// When the free was committed.
    ts: Option<u64>,
    /// `c0 <` this, with the pass on (`nr_pcp_high`'s `batch << 2`) or over (`high`).
    on: i64,
    over: i64,
}

impl Walk {
    /// A traced wake (`wake`) or sleep of node `nid`'s kswapd. A wake with the node's pass off
    /// lowers each of its zones' `high`: every list of the node may now be above it, until a
    /// free that drains nothing shows otherwise (a drain then bounds the count from below
    /// only: `free_unref_page_commit` drains whenever `count >= high`, not only when a free
    /// crosses it). A node the geometry lacks is ignored.
    pub(super) fn kswapd(&mut self, nid: u32, wake: bool) {
        let Some(on) = self.reclaim.get_mut(nid as usize) else {
            return;
        };
        let fell = wake && !*on;
        *on = wake;
        if !fell {
            return;
        }
        for (i, c) in self.per.iter_mut().enumerate() {
            let Some(c) = c else { continue };
            let zone = i / self.cpus as usize;
            if self.geo.zones.get(zone).is_some_and(|z| z.node == nid) {
                c.high_fell = true;
            }
        }
    }

    /// A free that drained nothing while the trace had zone `zone`'s kswapd pass on: its
    /// bound (`c0 + delta < high`) is held until node's sleep shows whether the pass was
    /// still on. 6.1-4g-2node/p_pressure line 81962: CPU 3 frees a page of node 1's Normal
    /// at 997.709434, 44 ms before kswapd1's sleep (line 83927), and drains nothing with
    /// some 1700 pages on its lists: read under `batch << 2` (252) it bounded the count at
    /// the window's start to 1906, where zoneinfo's 3357 was right.
    pub(super) fn hold(&mut self, zone: usize, cpu: u32, f: &Free, open_hi: i64) {
        let node = self.geo.zones.get(zone).map_or(0, |z| z.node);
        let held = Held {
            node,
            zone,
            cpu,
            ts: f.ts,
            on: f.high_hi - 1 - f.delta,
            over: open_hi - 1 - f.delta,
        };
        if self.reclaim_on(zone) {
            self.held.push(held);
        } else {
            // The sleep came before the CPU's next event told that the free drained nothing.
            let slept = self.slept.get(node as usize).copied().flatten();
            self.settle(held, slept);
        }
    }

    /// Applies a held bound, the pass having ended before node's sleep at `sleep`.
    fn settle(&mut self, h: Held, sleep: Option<u64>) {
        let end = sleep.map(|t| t.saturating_sub(self.nap_ns));
        let over = matches!((h.ts, end), (Some(t), Some(e)) if t >= e);
        let hi = if over { h.over } else { h.on };
        self.bound(h.zone, h.cpu, i64::MIN, hi);
    }

    /// Node `nid`'s kswapd sleeps at `sleep` (`None`: the walk ends with its pass on): the
    /// bounds held for its zones apply, a free within the nap before the sleep as the
    /// pass's end left it (`clear_reclaim_active`), one before as the pass's.
    pub(super) fn release(&mut self, nid: u32, sleep: Option<u64>) {
        if sleep.is_some() {
            let n = nid as usize;
            if self.slept.len() <= n {
                self.slept.resize(n + 1, None);
            }
            self.slept[n] = sleep;
        }
        if !self.held.iter().any(|h| h.node == nid) {
            return;
        }
        let (mine, rest) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|h| h.node == nid);
        self.held = rest;
        for h in mine as Vec<Held> {
            self.settle(h, sleep);
        }
    }

    /// Whether kswapd's pass is on for the node of zone `zone`.
    pub(super) fn reclaim_on(&self, zone: usize) -> bool {
        let node = self.geo.zones.get(zone).map_or(0, |z| z.node as usize);
        self.reclaim.get(node).copied().unwrap_or(false)
    }
}
