//! The start-count walk's bounds of each CPU's `high`: one fixed value before 6.7
//! (`pageset_update`); from 6.7 tuned per CPU between `high_min` and `high_max`, which 7.2's
//! zoneinfo prints and 6.7 to 6.14's does not (the walk then sizes them as the kernel does,
//! `zone_set_pageset_high_and_batch` -> `zone_highsize`).

use crate::procfs::{PagesetSnapshot, ZoneSnapshot};

/// `high` as far as the walk knows it: between `lo` and `hi`.
#[derive(Clone, Copy, Debug)]
pub(super) struct High {
    pub(super) lo: i64,
    pub(super) hi: i64,
    pub(super) max: i64,
    /// What one refill may raise it by (0 for a fixed `high`).
    pub(super) grow: i64,
    pub(super) batch: i64,
}

/// What the walk needs of one zone to bound its CPUs' `high`.
pub(super) struct ZoneHigh<'a> {
    pub(super) zone: &'a ZoneSnapshot,
    /// The CPUs of the zone's node, over which `zone_highsize` splits the zone's share.
    pub(super) split: u32,
    /// Before 6.7: one `high` per zone.
    pub(super) fixed_high: bool,
    /// `CONFIG_PCP_BATCH_SCALE_MAX`.
    pub(super) scale_max: u8,
}

impl ZoneHigh<'_> {
    /// The bounds of `ps`'s `high`: the kernel's own, a fixed `high`, printed
    /// `high_min`/`high_max` (7.2), or those 6.7 to 6.14 set but do not print, sized as the
    /// kernel sizes them.
    pub(super) fn of(&self, ps: &PagesetSnapshot) -> High {
        let (fixed_high, scale_max) = (self.fixed_high, self.scale_max);
        let batch = i64::from(ps.batch.max(1));
        match (ps.high_min, ps.high_max) {
            (Some(lo), Some(hi)) if !fixed_high => {
                let (lo, hi) = (i64::from(lo), i64::from(hi.max(lo)));
                High {
                    lo,
                    hi: i64::from(ps.high).clamp(lo, hi),
                    max: hi,
                    grow: if lo == hi { 0 } else { batch << scale_max },
                    batch,
                }
            }
            // 6.7 to 6.14 tune `high` per CPU but print neither bound: the kernel's own
            // (zone_set_pageset_high_and_batch -> zone_highsize), around this CPU's own
            // printed `high`, not the zone's largest.
            _ if !fixed_high => {
                let (lo, max) = self.highsize(batch);
                High {
                    lo,
                    hi: i64::from(ps.high).clamp(lo, max),
                    max,
                    grow: if lo == max { 0 } else { batch << scale_max },
                    batch,
                }
            }
            _ => {
                let h = i64::from(self.zone.pagesets.iter().map(|p| p.high).max().unwrap_or(0));
                High {
                    lo: h,
                    hi: h,
                    max: h,
                    grow: 0,
                    batch,
                }
            }
        }
    }

    /// `high_min` at the default fraction (0) and `high_max` at
    /// `MIN_PERCPU_PAGELIST_HIGH_FRACTION` (8): `zone_highsize` splits the low watermark
    /// (`high_min`) and an eighth of the managed pages (`high_max`) across the CPUs of the
    /// zone's node.
    fn highsize(&self, batch: i64) -> (i64, i64) {
        let kz = self.zone;
        let low = kz
            .watermarks
            .low
            .saturating_sub(kz.watermarks.boost.unwrap_or(0));
        let size = |fraction| {
            i64::from(zonealloc::zone_highsize(
                kz.managed_pages,
                low,
                batch as u32,
                self.split,
                fraction,
            ))
        };
        let (lo, max) = (size(0), size(8));
        (lo, max.max(lo))
    }
}
