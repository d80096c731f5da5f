//! The start-count walk and kswapd: `balance_pgdat` sets `ZONE_RECLAIM_ACTIVE` on its node's
//! zones (`set_reclaim_active`) and clears it before kswapd sleeps; meanwhile `nr_pcp_high`
//! returns at most `batch << 2`, so a list can hold far more than `high` the moment the pass
//! begins.

use super::Walk;

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

    /// Whether kswapd's pass is on for the node of zone `zone`.
    pub(super) fn reclaim_on(&self, zone: usize) -> bool {
        let node = self.geo.zones.get(zone).map_or(0, |z| z.node as usize);
        self.reclaim.get(node).copied().unwrap_or(false)
    }
}
