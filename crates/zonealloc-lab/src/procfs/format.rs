//! The kernel format family a `/proc/zoneinfo` reveals, for replaying it as that kernel.
//!
//! Read from `zoneinfo_show_print` in `mm/vmstat.c` and checked against the two real formats
//! in `tests/data/proc/` (Debian 6.1 and 7.2).

use super::error::ProcError;
use super::zoneinfo::parse_zoneinfo;

/// The two layouts of the `pagesets` block, which is what a replay must set up differently.
///
/// The rule, applied by [`infer_format`]: a file whose pagesets print `high_min` and
/// `high_max` is [`HighMinMax`](ZoneinfoFormat::HighMinMax), one whose pagesets print only
/// `count`, `high` and `batch` is [`Pre6_7`](ZoneinfoFormat::Pre6_7). Linux 6.7 added PCP high
/// auto-tuning, but the two lines came later (6.12.117 prints neither; 7.2 both), so a
/// `Pre6_7` file may come from an auto-tuning kernel (the `promo` line tells 6.12 from 6.1);
/// the lines belong to the auto-tuning (`pcp->high` moves between `high_min` and `high_max`,
/// `decay_pcp_high` / `nr_pcp_high`) and re-aligned the block (`count:    %i`); before it
/// `high` was fixed by `zone_highsize`. The other fields that came and went are reported in
/// [`ZoneinfoFeatures`] but do not change the family:
///
/// | line | kernels | real data |
/// |---|---|---|
/// | `boost` | 5.0 on (watermark boosting) | 6.1 and 7.2 |
/// | `promo` | after 6.1 (`WMARK_PROMO` of NUMA memory tiering) | 7.2 only |
/// | `high_min`, `high_max` | after 6.12 (not in 6.12.117) | 7.2 only |
/// | `nr_free_pages_blocks` | 6.15 on (`defrag_mode`: free pages in whole pageblocks) | 7.2 only |
/// | `reserved_highatomic`, `free_highatomic` | after 6.18 (patch of October 2025) | 7.2 only |
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneinfoFormat {
    /// Linux before 6.7: a CPU's pageset prints `count`, `high`, `batch`.
    Pre6_7,
    /// Linux 6.7 and later: also `high_min` and `high_max`.
    HighMinMax,
}

impl ZoneinfoFormat {
    /// The kernel versions that print this format.
    pub const fn kernels(self) -> &'static str {
        match self {
            ZoneinfoFormat::Pre6_7 => "Linux before 6.7",
            ZoneinfoFormat::HighMinMax => "Linux 6.7 and later",
        }
    }
}

/// Which optional lines a zoneinfo file printed (see [`ZoneinfoFormat`] for the versions).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneinfoFeatures {
    /// `boost` (watermark boosting).
    pub boost: bool,
    /// `promo` (the promotion watermark).
    pub promo: bool,
    /// `high_min` / `high_max` in the pagesets.
    pub high_min_max: bool,
    /// `vm stats threshold` in the pagesets (`CONFIG_SMP`).
    pub stat_threshold: bool,
    /// `reserved_highatomic` / `free_highatomic` in the trailer.
    pub highatomic: bool,
}

/// The format family of a zoneinfo text: parses it and applies the rule documented on
/// [`ZoneinfoFormat`].
pub fn infer_format(zoneinfo: &str) -> Result<ZoneinfoFormat, ProcError> {
    parse_zoneinfo(zoneinfo).map(|z| z.format)
}
