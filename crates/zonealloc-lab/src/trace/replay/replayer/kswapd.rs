//! kswapd as the trace shows it: each `mm_vmscan_kswapd_wake` begins a `balance_pgdat` pass
//! (`kswapd` prints it just before the call), and the pass ends at the node's next wake or,
//! before a `mm_vmscan_kswapd_sleep`, where the run reads it ahead: a nap of `HZ/10` before
//! the sleep (`kswapd_try_to_sleep`; [`crate::trace::replay::kswapd_nap`]), else at the sleep.
//!
//! - `ZONE_RECLAIM_ACTIVE`: set on the node's zones while a pass reclaims
//!   (`set_reclaim_active`), cleared when `balance_pgdat` returns (`clear_reclaim_active`);
//!   frees then shrink the lists hard (`nr_pcp_high`).
//! - The watermark boost (`boost_watermark`, raised by a fallback that steals a pageblock):
//!   a pass notes each zone's boost when it begins (`zone_boosts[i]`) and takes that much off
//!   at its end (`zone->watermark_boost -= min(...)`); a boost raised during the pass stays
//!   for the next one. The replay never lowered a boost (`Zone::tick` does, but the replay
//!   runs each CPU's decay instead), so one fallback from a block smaller than a pageblock
//!   kept the watermarks a pageblock higher to the end of the replay; the kernel's snapshots
//!   after such phases say `boost 0`.

use super::Replayer;

impl Replayer {
    /// Node `nid`'s kswapd pass ended before this event: its nap before a sleep
    /// (`kswapd_try_to_sleep`) began (`trace::replay::kswapd_nap`).
    pub fn kswapd_napped(&mut self, nid: u32) {
        if self.geo.zones.iter().any(|z| z.node == nid) {
            self.kswapd(nid, false);
        }
    }

    /// A traced wake (`wake`) or sleep of node `nid`'s kswapd.
    pub(super) fn kswapd(&mut self, nid: u32, wake: bool) {
        self.counts.kswapd_wakes += u64::from(wake);
        for (i, (z, span)) in self.zones.iter().zip(&self.geo.zones).enumerate() {
            if span.node != nid {
                continue;
            }
            z.set_reclaim_active(wake);
            let Some(boost) = self.pass_boosts.get_mut(i) else {
                continue;
            };
            // The pass before this event, if any, ends here.
            if let Some(b) = boost.take() {
                z.end_boost_reclaim(b);
            }
            if wake {
                *boost = Some(z.watermarks().boost);
            }
        }
    }
}
